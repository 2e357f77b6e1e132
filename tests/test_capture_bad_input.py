"""`irscope capture` given what it cannot capture: a program that never uses torch, a run that launches
nothing, a program that is not Python, a program killed by a signal. Each keeps the last capture's
launches.json, says so in one line, and exits with the program's code (or 2 before anything runs)."""
from __future__ import annotations

import os
import shutil
import signal
import sys
from pathlib import Path

import pytest

# A real capture's launch file (Liger-Kernel on an H200): "the last capture" the runs below must not lose.
GOOD = Path(__file__).resolve().parent.parent / "docs" / "examples" / "capture" / "liger-h200-launches.json"


@pytest.fixture
def last_capture(tmp_path) -> Path:
    (tmp_path / "snaps").mkdir()
    last = tmp_path / "snaps" / "launches.json"
    shutil.copyfile(GOOD, last)
    return last


def _lines(err: str, kind: str) -> list[str]:
    return [ln for ln in err.splitlines() if ln.startswith(f"irscope: {kind}: ")]


@pytest.fixture
def without_torch(tmp_path, monkeypatch) -> None:
    """The captured program's Python cannot import torch, as in an environment without it (a
    sitecustomize in the child's PYTHONPATH blocks it; Triton itself copes, irscope must too)."""
    (tmp_path / "blocker").mkdir()
    (tmp_path / "blocker" / "sitecustomize.py").write_text("import sys\nsys.modules['torch'] = None\n")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "blocker"))


def test_a_program_that_never_uses_torch_is_captured_without_torch(cli, tmp_path, capfd, without_torch):
    # irscope's fake driver imported torch at start-up: a traceback from capture_boot, a hint blaming
    # os._exit, and exit 2.
    (tmp_path / "hello.py").write_text("print('hello')\n")
    code, out, err = cli("capture", "--out", "snaps", "--", "python", "hello.py")
    child = capfd.readouterr()
    assert code == 0, err + child.err
    assert child.out == "hello\n" and "Traceback" not in child.err
    assert "0 specialisations of 0 kernels" in err and out == ""  # nothing before: an empty capture is written
    assert (tmp_path / "snaps" / "launches.json").is_file()


def test_emulating_a_gpu_without_torch_is_one_error_that_names_it_and_keeps_the_last_capture(
        cli, last_capture, capfd, without_torch):
    # torch is there for irscope but not for the program's Python: the child finds out, runs nothing, says so.
    before = last_capture.read_bytes()
    code, out, err = cli("capture", "--as", "sm_90a", "--out", "snaps", "--", "python", "-c", "print('ran')")
    child = capfd.readouterr()
    assert code == 5, err + child.err
    [error], [hint] = _lines(err, "error"), _lines(err, "hint")
    assert "needs the module 'torch'" in error and "pip install torch" in hint
    assert "ran" not in child.out and "Traceback" not in child.err
    assert last_capture.read_bytes() == before
    assert [p.name for p in last_capture.parent.iterdir()] == ["launches.json"]


def test_a_run_that_launches_nothing_keeps_the_last_launch_file_and_exits_with_the_programs_code(
        cli, last_capture):
    before = last_capture.read_bytes()
    code, out, err = cli("capture", "--no-compile", "--out", "snaps", "--", "python", "-c", "import sys; sys.exit(7)")
    assert code == 7, err
    assert last_capture.read_bytes() == before
    [warning] = _lines(err, "warning")
    assert "launched no Triton kernel (it exited with code 7)" in warning and "is kept" in warning
    assert not _lines(err, "error") and "captured" not in err
    assert [p.name for p in last_capture.parent.iterdir()] == ["launches.json"]  # no child files left


@pytest.mark.parametrize("program, says", [
    (["ls"], "'ls' is not a Python program: {ls} is a binary file"),
    (["bash", "-c", "echo ran"], "'bash' is not a Python program: {bash} is a binary file"),
    (["python", "{ls}"], "'{ls}' is not a Python program: it is a binary file"),
    (["./job.sh"], "'./job.sh' is not a Python program: its #! line runs /bin/sh"),
    (["job"], "'job' is not a Python program: the #! line of {bin}/job runs /bin/sh"),  # found on PATH
])
def test_a_program_that_is_not_python_is_a_usage_error_and_keeps_the_last_launch_file(
        cli, tmp_path, last_capture, capfd, monkeypatch, program, says):
    # They ran as Python scripts ("SyntaxError: null bytes") and emptied the last launch file.
    if not (shutil.which("ls") and shutil.which("bash")):
        pytest.skip("needs ls and bash on PATH")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for script in (tmp_path / "job.sh", bin_dir / "job"):
        script.write_text("#!/bin/sh\necho ran\n")
        script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    names = {"ls": shutil.which("ls"), "bash": shutil.which("bash"), "bin": str(bin_dir)}
    before = last_capture.read_bytes()
    code, out, err = cli("capture", "--out", "snaps", "--", *[a.format(**names) for a in program])
    assert code == 2, err
    [error], [hint] = _lines(err, "error"), _lines(err, "hint")
    assert says.format(**names) in error and "Traceback" not in err
    assert "runs Python programs: -- python prog.py" in hint and "-- -m module" in hint
    assert last_capture.read_bytes() == before
    assert "ran" not in capfd.readouterr().out  # refused before anything ran


def test_a_python_script_without_py_is_run_by_its_shebang_or_by_python(cli, tmp_path, capfd, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "tool").write_text("#!/usr/bin/env python3\nprint('tool ran')\n")
    (bin_dir / "tool").chmod(0o755)
    (tmp_path / "plain").write_text("print('plain ran')\n")  # no #! line: text, which python runs
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    for program, printed in ((["tool"], "tool ran"), (["python", "plain"], "plain ran")):
        code, out, err = cli("capture", "--no-compile", "--out", "snaps", "--", *program)
        assert code == 0, err
        assert capfd.readouterr().out.strip() == printed


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_a_program_killed_by_a_signal_keeps_the_last_launch_file_and_exits_as_a_shell_says(cli, last_capture):
    before = last_capture.read_bytes()
    code, out, err = cli("capture", "--out", "snaps", "--", "python", "-c",
                         "import os, signal; os.kill(os.getpid(), signal.SIGKILL)")
    assert code == 128 + signal.SIGKILL, err
    [warning] = _lines(err, "warning")
    assert "killed by SIGKILL" in warning and "is kept" in warning and not _lines(err, "error")
    assert last_capture.read_bytes() == before


@pytest.mark.parametrize("script", [
    "#!/bin/sh\n'''exec' /a venv/with spaces/bin/python \"$0\" \"$@\"\n' '''\nprint('ran')\n",  # pip's launcher
    "#!/usr/bin/env pypy3\nprint('ran')\n",
    "#!/usr/bin/env -S uv run --script\nprint('ran')\n",  # PEP 723
    "print('ran')\n",
])
def test_python_programs_with_any_python_launcher_line_are_run(tmp_path, script):
    """The first check refused every #! line without 'python' in it, and even `python prog.py`, where
    python ignores that line."""
    from irscope.harness.capture_boot import program_problem
    prog = tmp_path / "prog"
    prog.write_text(script)
    prog.chmod(0o755)
    assert program_problem([str(prog)]) is None
    assert program_problem(["python", str(prog)]) is None
    shell = tmp_path / "job.sh"
    shell.write_text("#!/bin/sh\necho ran\n")
    assert "its #! line runs /bin/sh" in program_problem([str(shell)])
    assert program_problem(["python", str(shell)]) is None  # python runs it as Python, as it would
