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


# -- a compile process that is not irscope's ----------------------------------------------------------

def _fake_python(cache, script: str):
    """The env of NAMED, with a marker, whose bin/python is a shell script (argv: -I -c BOOT PKG JOB RESULT)."""
    path = make_env(cache, NAMED, triton_from=None)
    python = path / "bin" / "python"
    python.unlink()
    python.write_text("#!/bin/sh\n" + script + "\n")
    python.chmod(0o755)
    return path


@pytest.mark.parametrize("script,why", [
    (r"printf '\377\376 not text\n' >&2; exit 3", "exited with status 3"),
    ("echo '[1]' > \"$6\"", "wrote a result irscope cannot read"),
    ("echo '{\"status\": 7}' > \"$6\"", "wrote a result irscope cannot read"),
])
def test_a_compile_process_that_prints_junk_or_writes_no_result_is_a_broken_env(cache, tmp_path, script, why):
    # Bytes that are no UTF-8 on its stderr, or a result.json that is no object, were internal errors
    # (UnicodeDecodeError, AttributeError: exit 70).
    _fake_python(cache, script)
    code, out, err = run_cli("compile", "add", "--triton", NAMED, "-o", str(tmp_path / "out"))
    assert code == 5, err
    error, hint = one_error(err)
    assert f"the Triton {NAMED} environment is broken" in error and why in error
    assert hint == f"irscope: hint: irscope envs remove {NAMED} && irscope envs add {NAMED}"


def test_a_compile_result_missing_its_folder_is_a_crash_not_an_internal_error(cache, tmp_path):
    # It passes the check (status ok, the right release) and then answers the compile without a path:
    # that was KeyError: 'path' reported as the kernel's error.
    _fake_python(cache, f"echo '{{\"status\": \"ok\", \"triton\": \"{NAMED}\"}}' > \"$6\"")
    code, out, err = run_cli("compile", "add", "--triton", NAMED, "-o", str(tmp_path / "out"))
    assert code == 3, err
    assert "the compiler process wrote a result irscope cannot read" in out
    assert "KeyError" not in out + err


def test_a_compile_process_output_is_read_from_its_end_only(cache, tmp_path):
    """200 MB on stdout and stderr before dying: only the last line is kept, not the whole output."""
    import resource
    _fake_python(cache, "head -c 100000000 /dev/zero; head -c 100000000 /dev/zero >&2; printf '\\nlast words\\n' >&2; exit 9")
    from irscope.harness.remote import run_remote
    env = envs.TritonEnv(NAMED, cache / "envs" / f"triton-{NAMED}", cache / "envs" / f"triton-{NAMED}" / "bin" / "python")
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    r = run_remote(env.python, envs.child_environment(env), {"mode": "check"}, timeout=120, workdir=tmp_path)
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert r["status"] == "crashed" and r["message"] == "the compiler process exited with status 9: last words"
    assert grown_mb < 50, f"reading the output grew this process by {grown_mb:.0f} MB"


# -- links in the cache -------------------------------------------------------------------------------

def test_an_env_folder_that_is_a_link_is_left_alone_not_an_internal_error(cache, tmp_path):
    # `envs remove` of a link (to an env of the user's elsewhere) was OSError: Cannot call rmtree on a
    # symbolic link (exit 70); `envs add` of a link to a half-made install deleted nothing but said
    # "cannot use the environment cache".
    elsewhere = make_env(tmp_path / "mine", NAMED, triton_from=None)
    (elsewhere / "keep").write_text("mine")
    (cache / "envs").mkdir(parents=True)
    link = cache / "envs" / f"triton-{NAMED}"
    link.symlink_to(elsewhere)
    code, out, err = run_cli("envs", "remove", NAMED)
    assert code == 2, err
    error, hint = one_error(err)
    assert f"it is a link to {elsewhere}" in error and f"rm {link}" in hint
    assert link.is_symlink() and (elsewhere / "keep").read_text() == "mine"
    (elsewhere / envs.MARKER).unlink()
    (elsewhere / envs.STARTED).write_text("1\n")  # an install irscope started there, elsewhere
    code, out, err = run_cli("envs", "add", NAMED)
    assert code == 5, err
    error, _ = one_error(err)
    assert f"it is a link to {elsewhere}" in error and "not made by irscope" in error
    assert link.is_symlink() and (elsewhere / "keep").read_text() == "mine" and (elsewhere / "bin").exists()


def test_a_lock_file_that_is_a_link_is_neither_followed_nor_truncated(cache, tmp_path):
    precious = tmp_path / "precious.txt"
    precious.write_text("mine")
    (cache / "envs").mkdir(parents=True)
    (cache / "envs" / f"triton-{NAMED}.lock").symlink_to(precious)
    code, out, err = run_cli("envs", "add", NAMED)
    assert code == 5, err
    error, hint = one_error(err)
    assert "lock file" in error and "is a link" in error
    assert precious.read_text() == "mine"  # open(lock, "w") used to empty it


# -- upgrade-check's verdicts -------------------------------------------------------------------------

def _analysis(counters: dict, target: str = "sm_90a"):
    from irscope.analyze import Analysis
    from irscope.analyze.limits import Launch, Occupancy
    from irscope.ir.resources import Resources
    return Analysis("k", "", "k", "default", target, "ok", (), dict(counters), (), (),
                    Resources(num_warps=4, registers=128, shared=65536, spill_stores=0, spill_loads=0),
                    Occupancy("blocks/SM", 2, 8, 64, "registers", {}), Launch(True))


CP_ASYNC = {"ttgir.async_copy": 6, "ptx.cp.async": 36, "sass.LDGSTS": 36}
TMA_LOADS = {"ttgir.tma_load": 6, "ptx.cp.async.bulk.tensor": 6, "ptx.cp.async.bulk.tensor.load": 6,
             "sass.UTMALDG": 6}
TMA_STORES = {"ttgir.tma_store": 2, "ptx.cp.async.bulk.tensor": 2, "ptx.cp.async.bulk.tensor.store": 2,
              "sass.UTMASTG": 2}


def _pipelining(old: dict, new: dict) -> dict[str, str]:
    from irscope.cli.upgrade import compare_analyses
    return {f.text.split()[0]: str(f.kind) for f in compare_analyses(_analysis(old), _analysis(new))
            if f.category == "pipelining"}


def test_upgrade_check_calls_cp_async_replaced_by_tma_a_change_not_a_regression():
    # Each of cp.async's counters lost was a regression (exit 1) although the loads are still
    # asynchronous, only through TMA.
    kinds = _pipelining(CP_ASYNC, TMA_LOADS)
    assert kinds == {"ttgir.async_copy": "change", "ttgir.tma_load": "change", "ptx.cp.async": "change",
                     "ptx.cp.async.bulk.tensor.load": "change", "sass.LDGSTS": "change", "sass.UTMALDG": "change"}


def test_upgrade_check_still_calls_losing_every_async_load_a_regression_even_beside_tma_stores():
    kinds = _pipelining({**CP_ASYNC, **TMA_STORES}, TMA_STORES)
    assert kinds == {"ttgir.async_copy": "regression", "ptx.cp.async": "regression", "sass.LDGSTS": "regression"}
    assert _pipelining({}, TMA_LOADS)["ttgir.tma_load"] == "improvement"
    # (TMA was not judged at all in TTGIR: the key looked for, ttgir.async_tma_copy_global_to_local, is no counter)
    assert _pipelining(TMA_LOADS, {})["ttgir.tma_load"] == "regression"


# -- the package index --------------------------------------------------------------------------------

def test_a_package_index_that_never_answers_is_one_error_not_an_internal_error(cache, monkeypatch):
    # `irscope envs available` against an index that accepts connections and says nothing was
    # TimeoutExpired, an internal error (exit 70), after 120 s.
    import socket
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    for name in ("PIP_EXTRA_INDEX_URL", "PIP_FIND_LINKS"):
        monkeypatch.setenv(name, "")
    monkeypatch.setenv("PIP_CONFIG_FILE", "/dev/null")
    monkeypatch.setenv("PIP_INDEX_URL", f"http://127.0.0.1:{server.getsockname()[1]}/simple")
    monkeypatch.setattr(envs, "INDEX_TIMEOUT", 3.0)
    try:
        code, out, err = run_cli("envs", "available")
    finally:
        server.close()
    assert code == 5, err
    error, hint = one_error(err)
    assert "no answer from the package index in 3 s" in error and "pip" in hint


def test_a_second_install_of_the_same_release_says_that_it_waits(cache):
    # It used to wait in silence for as long as the other's pip took (minutes, on a slow network).
    import fcntl
    import threading
    import time
    (cache / "envs").mkdir(parents=True)
    said, errors = [], []

    def second():
        try:
            envs.create_env(NAMED, said.append)
        except Exception as e:  # noqa: BLE001 - the env made below runs another release: refused, as it should
            errors.append(e)

    with open(cache / "envs" / f"triton-{NAMED}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # the first install, as create_env holds it while pip runs
        thread = threading.Thread(target=second)
        thread.start()
        deadline = time.monotonic() + 20
        while not said and time.monotonic() < deadline:
            time.sleep(0.05)
        make_env(cache, NAMED, triton_from=running_triton())  # what the first install leaves
    thread.join(60)
    assert said[:1] == [f"waiting for another irscope that is installing Triton {NAMED}"]
    assert len(errors) == 1 and "environment is broken" in str(errors[0])  # it found the first's, not pip


def test_upgrade_check_compares_a_point_named_twice_once():
    # `upgrade-check add add --target sm_90a,sm_90a` compiled, listed and counted add four times.
    from irscope.cli import build_parser
    from irscope.cli.upgrade import _points
    args = build_parser().parse_args(["upgrade-check", "--from", "3.6.0", "--to", "3.9.0", "add", "softmax", "add",
                                      "--target", "sm_90a,gfx942,sm_90a"])
    pairs = _points(args, "3.6.0", "3.9.0")
    assert [(old.kernel, old.target) for old, _ in pairs] == [("add", "sm_90a"), ("add", "gfx942"),
                                                              ("softmax", "sm_90a"), ("softmax", "gfx942")]
    assert all((old.triton, new.triton) == ("3.6.0", "3.9.0") for old, new in pairs)


@pytest.mark.parametrize("command", ["compile", "sweep", "compare", "explain"])
def test_an_empty_triton_option_is_refused_not_read_as_the_running_release(cache, tmp_path, command):
    # `--triton "$RELEASE"` with the variable unset compiled under the running release without a word.
    sweep = tmp_path / "s.yaml"
    sweep.write_text("kernels: [add]\ntargets: [sm_90a]\n")
    what = str(sweep) if command == "sweep" else "add"
    code, out, err = run_cli(command, what, "--triton", "", "-o", str(tmp_path / "out"))
    assert code == 2, err
    error, _ = one_error(err)
    assert "--triton needs a version" in error
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").rglob("irscope.json"))
