"""Review of the releases-side-by-side area: version spellings, hostile environments and compile
processes, and upgrade-check's verdicts. The environments are tests/test_envs_hostile.py's: real
virtual environments holding the running release's Triton through symlinks, made without pip.
"""
from __future__ import annotations

import pytest

from irscope.harness import envs
from tests.test_envs_hostile import NAMED, make_env, one_error, run_cli, running_triton


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("IRSCOPE_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


# -- version spellings -------------------------------------------------------------------------------

@pytest.mark.parametrize("typed,meant", [("03.6.0", "3.6.0"), ("3.06", "3.6.0"), ("3.6rc1", "3.6.0rc1"),
                                         ("3.6.0rc01", "3.6.0rc1"), ("3.6.post1", "3.6.0.post1"),
                                         ("triton==3.6", "3.6.0")])
def test_a_version_is_read_as_pip_reads_it(typed, meant):
    # 03.6.0 used to make a second env, triton-03.6.0, that pip filled with 3.6.0 (700 MB) and irscope
    # then called broken ("runs Triton 3.6.0, not 03.6.0"); 3.6rc1 became 3.6rc1.0, which pip has not.
    assert envs.normalise_version(typed) == meant


def test_a_version_with_leading_zeros_names_the_same_environment(cache):
    path = make_env(cache, NAMED, triton_from=None)
    major, rest = NAMED.split(".", 1)
    code, out, err = run_cli("envs", "remove", f"0{major}.{rest}")
    assert code == 0, err
    assert not path.exists()


def test_a_folder_not_named_as_irscope_names_it_is_not_listed_twice(cache):
    make_env(cache, NAMED, triton_from=None)
    make_env(cache, "0" + NAMED, triton_from=None)  # what the bug above left behind
    code, out, err = run_cli("envs", "list", "--color", "never")
    assert code == 0, err
    assert [ln.split()[0] for ln in out.splitlines()[2:]] == [NAMED]
