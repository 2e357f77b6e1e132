"""The compile children's log folders (irscope-logs-HOST-PID-...): removed when the compile ends, and those of
an irscope process of this host killed before it could remove its own (SIGKILL) removed by a later compile,
once nothing was added to them for an hour."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from irscope.harness.batch import LOG_PREFIX, STALE_S, log_folder, log_prefix, sweep_logs


def _later() -> float:
    """"Now", an hour and a minute on (taken when a test runs, not when the file is collected: a full run
    reaches this file many minutes after collecting it)."""
    return time.time() + STALE_S + 60


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def test_the_folders_of_gone_processes_are_swept_and_nothing_else(tmp_path):
    dead = _dead_pid()
    me = log_prefix()
    host = me[len(LOG_PREFIX):].split("-")[0]
    gone = tmp_path / f"{LOG_PREFIX}{host}-{dead}-abc123"
    (gone / "sub").mkdir(parents=True)
    (gone / "sub" / "0.log").write_text("last words")
    mine = tmp_path / f"{me}xyz"  # a running process's (this one)
    mine.mkdir()
    elsewhere = tmp_path / f"{LOG_PREFIX}otherhost-{dead}-abc"  # another machine's, sharing the folder
    elsewhere.mkdir()
    old_style = tmp_path / f"{LOG_PREFIX}k3j2h1"  # no host or pid in the name (irscope before 2026-12-06)
    old_style.mkdir()
    a_file = tmp_path / f"{LOG_PREFIX}{host}-{dead}-file"  # named so, but not a folder
    a_file.write_text("not a folder")
    link = tmp_path / f"{LOG_PREFIX}{host}-{dead}-link"  # a link to a folder elsewhere: never followed
    target = tmp_path / "kept"
    target.mkdir()
    (target / "x").write_text("x")
    link.symlink_to(target)
    other = tmp_path / "irscope-logs"  # not a log folder's name
    other.mkdir()
    assert sweep_logs(str(tmp_path)) == 0  # all recent: a gone process's folder waits an hour
    assert sweep_logs(str(tmp_path), now=_later()) == 1
    assert not gone.exists()
    assert mine.is_dir() and elsewhere.is_dir() and old_style.is_dir() and a_file.is_file() and other.is_dir()
    assert link.is_symlink() and (target / "x").is_file()


def test_a_new_log_folder_is_named_for_this_host_and_process_and_sweeps_first(tmp_path, monkeypatch):
    import tempfile
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    gone = tmp_path / f"{log_prefix().rsplit('-', 2)[0]}-{_dead_pid()}-q"
    gone.mkdir()
    os.utime(gone, (time.time() - 2 * STALE_S,) * 2)
    made = log_folder()
    assert made.parent == tmp_path and made.name.startswith(log_prefix()) and str(os.getpid()) in made.name
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
        folders = [p for p in (tmp_path / "tmp").iterdir()
                   if p.name.startswith(LOG_PREFIX) and f"-{killed.pid}-" in p.name]
        time.sleep(0.005)
    os.killpg(killed.pid, signal.SIGKILL)
    killed.wait()
    assert folders and folders[0].is_dir(), "the compile ended before its log folder was seen"
    old = time.time() - STALE_S - 60  # (as if an hour had passed since: a recent one is kept)
    os.utime(folders[0], (old, old))
    done = subprocess.run(argv + [str(tmp_path / "b")], env=env, cwd=tmp_path, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    assert not folders[0].exists()
    assert not [p for p in (tmp_path / "tmp").iterdir() if p.name.startswith(LOG_PREFIX)]  # its own went too
