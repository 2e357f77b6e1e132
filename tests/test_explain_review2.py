"""`irscope explain` regressions of the second review: the switches a remark prints, typed after the user's own
flags, compile what the what-if compiled; advice is given only for what a what-if was planned to fix; the
reasons name what limits a width. Every test reads real compiles (one output folder serves the module).
"""
from __future__ import annotations

import io
import json
import shlex
from pathlib import Path

import pytest

from irscope.explain import explain
from irscope.spec.kernel import CompileOptions


@pytest.fixture(scope="module")
def out(tmp_path_factory):
    return tmp_path_factory.mktemp("explain-review2")


def _cli(*argv):
    from irscope.cli import main
    buf, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out=buf, err=err)
    return code, buf.getvalue(), err.getvalue()


def _key(folder) -> str:
    return json.loads((folder / "irscope.json").read_text())["content_key"]


def test_the_alignment_switch_typed_after_a_per_argument_divisibility_compiles_what_the_what_if_did(out, tmp_path):
    """With `--divisibility x_ptr=1` on the command line the fix read 'would be 16 B per thread with
    --divisibility 16', but its what-if had dropped x_ptr=1 while a user typing the switch keeps it (a
    per-argument divisibility outranks the global one): the printed command changed nothing."""
    base = ["--arg", "n_elements=1000", "--divisibility", "x_ptr=1"]
    code, text, err = _cli("explain", "add", "--target", "sm_80", *base, "--budget", "1", "--json", "--out", str(out))
    assert code == 0, err
    (whatif,) = json.loads(text)["whatifs"]
    assert whatif["status"] == "ok", whatif
    typed = tmp_path / "typed"
    code, _, err = _cli("compile", "add", "--target", "sm_80", *base, *shlex.split(whatif["change"]), "--out", str(typed))
    assert code == 0, err
    (folder,) = [p.parent for p in typed.rglob("irscope.json")]
    assert _key(folder) == _key(Path(whatif["snapshot"])), (whatif["change"], folder, whatif["snapshot"])
