"""Triton environments that are not what irscope expects: a release too old, a cache that cannot be
written, a damaged marker, a folder made by hand, a Triton that does not import or is another release,
a `triton/` folder in the current directory, and upgrade-check's points that cannot be compared.

The environments here are real virtual environments (made in milliseconds, without pip) holding the
running release's own Triton and pyyaml through symlinks, so no test downloads anything; a test that
needs a genuinely different release uses tests/test_versions.py's 3.6.0 and is marked slow.
"""
from __future__ import annotations

import io
import json
import os
import venv
from pathlib import Path

import pytest

from irscope.cli import main
from irscope.harness import envs
from tests.conftest import sigint_as_in_a_terminal

RUNNING = envs.running_version()
NAMED = "3.8.0" if RUNNING != "3.8.0" else "3.7.1"  # an env name that is not the running release


def run_cli(*argv):
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def one_error(err: str) -> tuple[str, str]:
    lines = err.strip().splitlines()
    assert len(lines) == 2 and lines[0].startswith("irscope: error: ") and lines[1].startswith("irscope: hint: "), err
    return lines[0], lines[1]


def make_env(cache: Path, version: str, *, triton_from: Path | None, marker: str | None = "{}",
             skip: str = "") -> Path:
    """A virtual environment at the place of `version`'s, whose site-packages hold `triton_from` (a
    triton package folder, linked file by file, `skip` left out) and this machine's pyyaml."""
    import shutil

    import yaml
    path = cache / "envs" / f"triton-{version}"
    venv.EnvBuilder(with_pip=False, symlinks=True).create(path)
    site = next(path.glob("lib/python*/site-packages"))
    os.symlink(Path(yaml.__file__).parent, site / "yaml")
    if triton_from is not None:
        shutil.copytree(triton_from, site / "triton", copy_function=os.symlink,
                        ignore=lambda _d, names: [n for n in names if n == skip or n == "__pycache__"])
    if marker is not None:
        (path / envs.MARKER).write_text(marker)
    return path


def running_triton() -> Path:
    import triton
    return Path(triton.__file__).parent


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("IRSCOPE_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


# -- releases irscope cannot compile with -----------------------------------------------------------

@pytest.mark.parametrize("argv", [("envs", "add", "3.0.0"), ("compile", "add", "--triton", "3.4.0"),
                                  ("upgrade-check", "--from", "3.0.0", "--to", "3.9.0", "add")])
def test_a_release_older_than_the_minimum_is_refused_before_anything_is_installed(cache, argv):
    code, out, err = run_cli(*argv)
    assert code == 2
    error, hint = one_error(err)
    assert f"older than {envs.MINIMUM}, the oldest release irscope compiles with" in error
    assert "docs/versions.md" in hint
    assert not cache.exists()


# -- the cache folder -------------------------------------------------------------------------------

@pytest.mark.parametrize("where", ["file", "proc"])
def test_an_unusable_cache_is_one_error_naming_it(tmp_path, monkeypatch, where):
    if where == "file":
        root = tmp_path / "afile"
        root.write_text("not a folder")
    else:
        root = Path("/proc/irscope")
    monkeypatch.setenv("IRSCOPE_CACHE", str(root))
    for argv in (("envs", "add", NAMED), ("compile", "add", "--triton", NAMED, "-o", str(tmp_path / "out"))):
        code, out, err = run_cli(*argv)
        assert code == 5, err
        error, hint = one_error(err.split("creating its environment (once)\n")[-1])
        assert f"cannot use the environment cache {root}/envs" in error and "IRSCOPE_CACHE" in hint


# -- damaged, broken, mismatched environments --------------------------------------------------------

@pytest.mark.parametrize("marker", ['{"size_bytes": "big"}', "[1]", "{not json"])
def test_a_damaged_marker_is_a_broken_environment_not_an_internal_error(cache, tmp_path, marker):
    make_env(cache, NAMED, triton_from=running_triton(), marker=marker)
    code, out, err = run_cli("envs", "list", "--color", "never")
    assert code == 0 and f"broken: its marker {envs.MARKER} is damaged" in out
    code, out, err = run_cli("compile", "add", "--triton", NAMED, "-o", str(tmp_path / "out"))
    assert code == 5
    error, hint = one_error(err)
    assert f"the Triton {NAMED} environment is broken" in error
    assert hint == f"irscope: hint: irscope envs remove {NAMED} && irscope envs add {NAMED}"


def test_an_environment_whose_triton_does_not_import_is_broken_not_the_users_kernel(cache, tmp_path):
    # Triton with its compiled part gone (triton/_C/libtriton.so, here the whole _C folder): `import triton` fails.
    make_env(cache, NAMED, triton_from=running_triton(), skip="_C")
    kernel = tmp_path / "k.py"
    kernel.write_text("import triton\n\n@triton.jit\ndef k(x):\n    pass\n")
    code, out, err = run_cli("compile", f"{kernel}:k", "--arg", "x=*fp32", "--triton", NAMED, "-o",
                             str(tmp_path / "out"))
    assert code == 5, err
    error, hint = one_error(err)
    assert f"the Triton {NAMED} environment is broken" in error and "cannot import triton" in error
    assert "k.py" not in error
    assert hint == f"irscope: hint: irscope envs remove {NAMED} && irscope envs add {NAMED}"


def test_an_environment_running_another_release_is_refused_naming_both(cache, tmp_path):
    make_env(cache, NAMED, triton_from=running_triton())  # named NAMED, holds the running release
    code, out, err = run_cli("compile", "add", "--triton", NAMED, "-o", str(tmp_path / "out"))
    assert code == 5
    error, _ = one_error(err)
    assert f"Triton {NAMED} environment" in error and f"runs Triton {RUNNING}, not {NAMED}" in error
    assert not (tmp_path / "out" / "add" / f"default.triton-{NAMED}").exists()


def test_the_child_itself_refuses_a_triton_other_than_the_one_asked_for(cache, tmp_path):
    """The parent checks once a process; the compile process checks again before each job."""
    from irscope.harness.remote import run_remote
    path = make_env(cache, NAMED, triton_from=running_triton())
    env = envs.TritonEnv(NAMED, path, path / "bin" / "python")
    r = run_remote(env.python, envs.child_environment(env), {"mode": "plan", "points": []}, timeout=120,
                   workdir=tmp_path)
    assert r["status"] == "usage" and f"runs Triton {RUNNING}, not {NAMED}" in r["message"], r


def test_the_child_imports_neither_the_current_folder_nor_pythonpath(cache, tmp_path, monkeypatch):
    """A `triton/` folder where irscope runs, or on PYTHONPATH, is not the env's Triton."""
    from irscope.harness.remote import check_triton
    path = make_env(cache, NAMED, triton_from=running_triton())
    shadow = tmp_path / "here" / "triton"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("__version__ = 'shadow'\n")
    monkeypatch.chdir(shadow.parent)
    monkeypatch.setenv("PYTHONPATH", str(shadow.parent))
    env = envs.TritonEnv(NAMED, path, path / "bin" / "python")
    r = check_triton(env.python, envs.child_environment(env))
    assert r == {"status": "ok", "triton": RUNNING}


def test_an_installed_irscope_does_not_hand_its_own_triton_to_the_child(cache, tmp_path):
    """irscope installed in a site-packages beside the running Triton (a normal pip install): the child
    must still import the env's Triton, not the one next to irscope. It used to put the folder that holds
    irscope, so the whole site-packages, on the child's PYTHONPATH."""
    import shutil
    import subprocess
    import sys

    import irscope
    site = tmp_path / "site-packages"
    shutil.copytree(Path(irscope.__file__).parent, site / "irscope",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (site / "triton").mkdir()
    (site / "triton" / "__init__.py").write_text("__version__ = 'the-parents'\n")
    path = make_env(cache, NAMED, triton_from=running_triton())
    script = ("import sys, json; sys.path.insert(0, sys.argv[1])\n"
              "import irscope.harness.envs as e, irscope.harness.remote as r\n"
              "assert e.__file__.startswith(sys.argv[1]), e.__file__\n"
              "env = e.TritonEnv(sys.argv[2], __import__('pathlib').Path(sys.argv[3]), "
              "__import__('pathlib').Path(sys.argv[3]) / 'bin' / 'python')\n"
              "print(json.dumps(r.check_triton(env.python, e.child_environment(env))))\n")
    proc = subprocess.run([sys.executable, "-c", script, str(site), NAMED, str(path)], capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": ""})
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"status": "ok", "triton": RUNNING}


# -- folders irscope did not make -------------------------------------------------------------------

def test_a_folder_made_by_hand_is_never_deleted(cache):
    path = cache / "envs" / f"triton-{NAMED}"
    path.mkdir(parents=True)
    (path / "notes.txt").write_text("mine")
    code, out, err = run_cli("envs", "add", NAMED)
    assert code == 5
    error, hint = one_error(err)
    assert "was not made by irscope" in error and f"envs add {NAMED}" in hint
    assert (path / "notes.txt").read_text() == "mine"
    code, out, err = run_cli("envs", "remove", NAMED)
    assert code == 2 and "was not made by irscope" in err
    assert (path / "notes.txt").read_text() == "mine"


def test_a_hand_made_environment_of_another_release_is_left_alone_with_the_reason(cache):
    path = make_env(cache, NAMED, triton_from=running_triton(), marker=None)
    code, out, err = run_cli("envs", "add", NAMED)
    assert code == 5
    error, _ = one_error(err)
    assert "was not made by irscope" in error and f"runs Triton {RUNNING}, not {NAMED}" in error
    assert (path / "bin").exists() and not (path / envs.MARKER).exists()


# -- removing ---------------------------------------------------------------------------------------

def test_remove_waits_for_no_install_it_would_break(cache):
    import fcntl
    make_env(cache, NAMED, triton_from=None)
    with open(cache / "envs" / f"triton-{NAMED}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # what create_env holds while pip runs
        code, out, err = run_cli("envs", "remove", NAMED)
    assert code == 2 and "installing Triton" in one_error(err)[0]
    assert (cache / "envs" / f"triton-{NAMED}").exists()
    code, out, err = run_cli("envs", "remove", NAMED)
    assert code == 0 and not (cache / "envs" / f"triton-{NAMED}").exists()


def test_removing_the_running_release_says_it_is_the_running_one(cache):
    code, out, err = run_cli("envs", "remove", RUNNING)
    assert code == 2 and f"Triton {RUNNING} is the running Triton" in one_error(err)[0]


# -- upgrade-check's inputs and verdicts ------------------------------------------------------------

def test_upgrade_check_refuses_an_unwritable_out_before_installing_anything(cache):
    code, out, err = run_cli("upgrade-check", "--from", NAMED, "--to", RUNNING, "add", "-o", "/proc/x")
    assert code == 2 and "output folder '/proc/x'" in one_error(err)[0]
    assert not cache.exists()


def test_upgrade_check_takes_one_sweep_file_at_a_time(cache, tmp_path):
    sweep = tmp_path / "x.yaml"
    sweep.write_text("kernel: add\n")
    code, out, err = run_cli("upgrade-check", "--from", NAMED, "--to", RUNNING, str(sweep), str(sweep))
    assert code == 2 and "one sweep file at a time" in one_error(err)[0]


def _row(status: str, reason: str = "", analysis=None):
    from types import SimpleNamespace
    return SimpleNamespace(status=status, reason=reason, analysis=analysis, label="k/default/sm_90a", path=None)


@pytest.mark.parametrize("old,new,kind,code", [
    ("failed", "ok", "improvement", 0),  # the kernel's own compile error under --from: fixed under --to
    ("crashed", "ok", "not compared", 3),  # a crash says nothing about the kernel
    ("timeout", "ok", "not compared", 3),
    ("crashed", "crashed", "not compared", 3),
    ("failed", "failed", "not compared", 3),
    ("ok", "crashed", "regression", 1),
    ("not-for-target", "failed", None, 0),  # what the spec foresaw under both: nothing to compare
])
def test_upgrade_check_exits_non_zero_when_a_point_could_not_be_compared(old, new, kind, code):
    from irscope.cli.upgrade import compare_rows, exit_status, render
    from irscope.cli import UI
    analysis = object() if "ok" in (old, new) else None
    report = compare_rows(_row(old, "boom", analysis if old == "ok" else None),
                          _row(new, "boom", analysis if new == "ok" else None))
    assert [str(f.kind) for f in report.findings] == ([kind] if kind else [])
    assert exit_status([report]) == code
    text = render("3.6.0", "3.9.0", [report], UI(io.StringIO(), io.StringIO(), "never"))
    assert ("1 point could not be compared" in text) == (kind == "not compared"), text
    assert "1 regressions" not in text and "1 changes" not in text


def _analysis(target: str, registers: int, shared: int, limiter: str, occupancy: int, spills: int = 0):
    from irscope.analyze import Analysis
    from irscope.analyze.limits import Launch, Occupancy
    from irscope.ir.resources import Resources
    unit = "waves/SIMD" if target.startswith("gfx") else "blocks/SM"
    return Analysis("k", "", "k", "default", target, "ok", (), {}, (), (),
                    Resources(num_warps=4, registers=registers, shared=shared, spill_stores=spills, spill_loads=0),
                    Occupancy(unit, occupancy, occupancy, 8, limiter, {}), Launch(True))


@pytest.mark.parametrize("target,limiter,blamed", [
    ("gfx942", "lds", "shared"), ("gfx942", "vgprs", "registers"),
    ("sm_90a", "shared memory", "shared"), ("sm_90a", "registers", "registers"),
])
def test_upgrade_check_blames_only_the_resource_that_limits_occupancy(target, limiter, blamed):
    from irscope.cli.upgrade import compare_analyses
    a = _analysis(target, 64, 16384, limiter, 8)
    b = _analysis(target, 96, 32768, limiter, 4)  # both grow; occupancy drops because of one of them
    kinds = {f.category: str(f.kind) for f in compare_analyses(a, b) if f.category in ("registers", "shared")}
    assert kinds[blamed] == "regression"
    assert kinds[({"registers", "shared"} - {blamed}).pop()] == "change"


@pytest.mark.parametrize("target,unit", [("gfx942", "VGPRs"), ("sm_90a", "B")])
def test_upgrade_check_spills_say_their_unit(target, unit):
    from irscope.cli.upgrade import compare_analyses
    a, b = _analysis(target, 64, 0, "warps", 8, spills=4), _analysis(target, 64, 0, "warps", 8, spills=12)
    [f] = [f for f in compare_analyses(a, b) if f.category == "spills"]
    assert f.text == f"spills 4 → 12 {unit}"


def test_an_adopted_environment_records_its_size_not_zero(cache):
    """A folder made by hand that runs the release asked for is adopted; its size was recorded as 0 B."""
    path = make_env(cache, NAMED, triton_from=running_triton(), marker=None)
    init = next(path.glob("lib/python*/site-packages")) / "triton" / "__init__.py"
    source = (running_triton() / "__init__.py").read_text()
    assert f"__version__ = '{RUNNING}'" in source
    init.unlink()  # a link to the running Triton's own file: never written through
    init.write_text(source.replace(f"__version__ = '{RUNNING}'", f"__version__ = '{NAMED}'"))
    code, out, err = run_cli("envs", "add", NAMED)
    assert code == 0, err
    env = envs.find_env(NAMED)
    assert env is not None and not env.problem
    own = sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink() and f.name != envs.MARKER)
    assert own > 0 and env.size_bytes == own, (env.size_bytes, own)


def test_ctrl_c_while_the_virtual_environment_is_made_leaves_no_folder(cache, tmp_path):
    """Ctrl-C during `python -m venv` (before pip) left the half-made folder behind; only pip's step cleaned up."""
    import signal
    import subprocess
    import sys
    import time
    path = cache / "envs" / f"triton-{NAMED}"
    env = dict(os.environ, IRSCOPE_CACHE=str(cache), PIP_INDEX_URL="http://127.0.0.1:9/simple", PIP_NO_INDEX="1")
    proc = subprocess.Popen([sys.executable, "-m", "irscope", "envs", "add", NAMED], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=sigint_as_in_a_terminal)
    deadline = time.monotonic() + 60
    while not (path / "pyvenv.cfg").exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert proc.poll() is None and (path / "pyvenv.cfg").exists(), "the venv step was not seen running"
    os.killpg(proc.pid, signal.SIGINT)  # as a terminal's Ctrl-C reaches the whole foreground group
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert not path.exists(), sorted(p.name for p in path.iterdir())
