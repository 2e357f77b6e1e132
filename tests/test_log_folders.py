"""The compile children's log folders (irscope-logs-PID-...): removed when the compile ends, and those of an
irscope process killed before it could remove its own (SIGKILL) removed by the next compile."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from irscope.harness.batch import LOG_PREFIX, log_folder, sweep_logs


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def test_the_folders_of_gone_processes_are_swept_and_nothing_else(tmp_path):
    dead = _dead_pid()
    gone = tmp_path / f"{LOG_PREFIX}{dead}-abc123"
    (gone / "sub").mkdir(parents=True)
    (gone / "sub" / "0.log").write_text("last words")
    mine = tmp_path / f"{LOG_PREFIX}{os.getpid()}-xyz"  # a running process's (this one)
    mine.mkdir()
    old_style = tmp_path / f"{LOG_PREFIX}k3j2h1"  # no pid in the name (irscope before 2026-12-06)
    old_style.mkdir()
    a_file = tmp_path / f"{LOG_PREFIX}{dead}-file"  # named so, but not a folder
    a_file.write_text("not a folder")
    link = tmp_path / f"{LOG_PREFIX}{dead}-link"  # a link to a folder elsewhere: never followed
    target = tmp_path / "kept"
    target.mkdir()
    (target / "x").write_text("x")
    link.symlink_to(target)
    other = tmp_path / "irscope-logs"  # not a log folder's name
    other.mkdir()
    assert sweep_logs(str(tmp_path)) == 1
    assert not gone.exists()
    assert mine.is_dir() and old_style.is_dir() and a_file.is_file() and other.is_dir()
    assert link.is_symlink() and (target / "x").is_file()


def test_a_new_log_folder_is_named_for_this_process_and_sweeps_first(tmp_path, monkeypatch):
    import tempfile
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    gone = tmp_path / f"{LOG_PREFIX}{_dead_pid()}-q"
    gone.mkdir()
    made = log_folder()
    assert made.parent == tmp_path and made.name.startswith(f"{LOG_PREFIX}{os.getpid()}-")
    assert not gone.exists()


@pytest.mark.slow
def test_a_compile_killed_outright_leaves_its_logs_to_the_next_one(tmp_path):
    """`irscope compile` killed with SIGKILL mid-compile cannot remove its log folder; the next compile does."""
    env = {**os.environ, "TMPDIR": str(tmp_path / "tmp")}
    (tmp_path / "tmp").mkdir()
    argv = [sys.executable, "-m", "irscope", "compile", "add", "--target", "sm_90a", "--out"]
    killed = subprocess.Popen(argv + [str(tmp_path / "a")], env=env, cwd=tmp_path, start_new_session=True,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    folders: list[Path] = []
    while time.monotonic() < deadline and not folders and killed.poll() is None:
        folders = [p for p in (tmp_path / "tmp").iterdir() if p.name.startswith(f"{LOG_PREFIX}{killed.pid}-")]
        time.sleep(0.005)
    os.killpg(killed.pid, signal.SIGKILL)
    killed.wait()
    assert folders and folders[0].is_dir(), "the compile ended before its log folder was seen"
    done = subprocess.run(argv + [str(tmp_path / "b")], env=env, cwd=tmp_path, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    assert not folders[0].exists()
    assert not [p for p in (tmp_path / "tmp").iterdir() if p.name.startswith(LOG_PREFIX)]  # its own went too
