"""`irscope run` and `irscope verify` against hostile input: runs.json written by several runs at once,
runs.json that cannot be written or read. Real snapshots (the committed goldens, copied), real
processes; no GPU needed."""
from __future__ import annotations

import json
import multiprocessing
import shutil
from pathlib import Path

import pytest

from irscope.errors import SnapshotError
from irscope.gpu import session
from irscope.spec import library
from irscope.store import results
from irscope.store.snapshot import load_snapshot
from irscope.targets import get_target
from tests.conftest import GOLDENS

GOLDEN_ADD = GOLDENS / "add" / "default" / "sm_90a"


@pytest.fixture
def add_snap(tmp_path) -> Path:
    """A copy of add's committed golden for sm_90a, under a root laid out as `--out` lays it."""
    folder = tmp_path / "out" / "add" / "default" / "sm_90a"
    shutil.copytree(GOLDEN_ADD, folder)
    (folder / results.RUNS_FILE).unlink(missing_ok=True)
    (folder / results.VERIFY_FILE).unlink(missing_ok=True)
    return folder


# -- runs.json: written by several runs at once, or not writable -------------------------------------------

def _append_records(folder: str, worker: int, count: int) -> None:
    snap = load_snapshot(folder)
    for i in range(count):
        session.record(snap, results.RUNS_FILE, {"source": "jit", "ok": True, "size_name": f"{worker}-{i}"})


def test_runs_of_one_snapshot_at_the_same_time_lose_no_record(add_snap):
    # Each record is read-modify-rename: unlocked, 4 writers kept about 1 record in 6 (9 of 60 seen).
    workers, count = 4, 15
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_append_records, args=(str(add_snap), w, count)) for w in range(workers)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert all(p.exitcode == 0 for p in procs)
    names = sorted(r["size_name"] for r in results.runs(load_snapshot(add_snap)))
    assert names == sorted(f"{w}-{i}" for w in range(workers) for i in range(count))
    assert not list(add_snap.glob(".runs.json.tmp-*")) and not list(add_snap.glob("*.lock"))


def test_a_runs_json_that_cannot_be_written_is_a_snapshot_error_not_an_oserror(add_snap):
    (add_snap / results.RUNS_FILE).mkdir()  # root writes through permissions: a folder in its place refuses
    with pytest.raises(SnapshotError, match="cannot record the result in .*runs.json") as e:
        session.record(load_snapshot(add_snap), results.RUNS_FILE, {"source": "jit", "ok": True})
    assert "writable" in e.value.hint
    assert (add_snap / results.RUNS_FILE).is_dir() and not list(add_snap.glob(".runs.json.tmp-*"))


@pytest.mark.parametrize("damage", ["outside", "wrong type"])
def test_a_runs_json_no_result_can_be_appended_to_is_refused_when_the_runs_are_planned(add_snap, tmp_path, damage):
    """Planning reads each snapshot's runs.json: a damaged or hostile one stops the command before the GPU's
    work, not after it (it was the first record's append that found it, and lost the run)."""
    runs = add_snap / results.RUNS_FILE
    if damage == "outside":
        secret = tmp_path / "secret.json"
        secret.write_text("[]")
        runs.symlink_to(secret)
    else:
        runs.write_text(json.dumps([{"recorded": 5}]))
    match = "points outside the snapshot folder" if damage == "outside" else r"field '\[0\]\.recorded'"
    with pytest.raises(SnapshotError, match=match):  # a --snapshot run
        session.plan_jobs([str(add_snap)], [], [], None, ["small"], 0, tmp_path / "unused", None)
    spec = library.load_kernel("add")
    with pytest.raises(SnapshotError, match=match):  # a JIT run recorded in the snapshot under --out
        session.plan_jobs([], ["add"], [spec], [None], ["small"], 0, tmp_path / "out", get_target("sm_90a"))
    assert damage != "outside" or secret.read_text() == "[]"


def test_a_verify_json_no_verdict_can_be_appended_to_is_found_before_the_compiles(add_snap):
    (add_snap / results.VERIFY_FILE).write_text("{not json")
    with pytest.raises(SnapshotError, match="verify.json is damaged"):
        session.readable_records(load_snapshot(add_snap), results.VERIFY_FILE)
    session.readable_records(None, results.VERIFY_FILE)  # no snapshot to record in: nothing to read
