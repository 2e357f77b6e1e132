"""`irscope run` and `irscope verify` against hostile input: bad arguments refused before any GPU work (and
before the lack of a GPU is said), runs.json written by several runs at once, runs.json that cannot be
written or read, TRITON_INTERPRET in the environment. Real snapshots (the committed goldens, copied), real
processes; the parts that need a GPU carry the `gpu` marker."""
from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from irscope.errors import SnapshotError
from irscope.gpu import session
from irscope.spec import library
from irscope.store import results
from irscope.store.snapshot import load_snapshot
from irscope.targets import get_target
from tests.conftest import GOLDENS, ROOT

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


def test_a_run_of_a_golden_is_reported_but_not_written_into_the_golden_root(tmp_path):
    # `irscope run --snapshot snapshots/add/default/sm_90a` appended runs.json to the committed golden: a
    # change in the repository that only an update may make. The golden root (its marker) is left as it was.
    from irscope.store.snapshot import GOLDEN_MARKER
    root = tmp_path / "snapshots"
    shutil.copytree(GOLDEN_ADD, root / "add" / "default" / "sm_90a")
    (root / GOLDEN_MARKER).write_text("goldens\n")
    snap = load_snapshot(root / "add" / "default" / "sm_90a")
    before = sorted(p.name for p in snap.path.iterdir())
    for name in (results.RUNS_FILE, results.VERIFY_FILE):
        assert session.record(snap, name, {"source": "snapshot", "ok": True}) is None
    assert sorted(p.name for p in snap.path.iterdir()) == before
    assert "add/default/sm_90a is a golden snapshot" in session.not_recorded_because(snap)
    outside = tmp_path / "mine" / "add" / "default" / "sm_90a"
    shutil.copytree(snap.path, outside)  # the same snapshot copied out of the root is recorded as before
    assert session.not_recorded_because(load_snapshot(outside)) == ""
    assert session.record(load_snapshot(outside), results.RUNS_FILE, {"source": "snapshot", "ok": True}) is not None


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


def test_a_run_recorded_after_a_recompile_replaced_its_binary_is_filed_under_the_binary_it_ran(add_snap):
    """A run planned on one cubin, recorded after a recompile put another cubin in the folder: the record went
    into runs.json, taken for the new binary's. It is filed as runs.<the binary's sha256[:12]>.json, as the
    recompile files the earlier binary's records."""
    from irscope.harness.batch import Point, compile_points
    from irscope.spec.kernel import CompileOptions
    planned = load_snapshot(add_snap)
    old_sha = planned.meta["stages"]["cubin"]["sha256"]
    done = compile_points([Point("add", "sm_90a", CompileOptions(num_warps=8, name="default"))], add_snap.parents[2])
    assert done[0].ok and done[0].path == add_snap
    assert load_snapshot(add_snap).meta["stages"]["cubin"]["sha256"] != old_sha
    session.record(planned, results.RUNS_FILE, {"source": "snapshot", "ok": True, "size_name": "then"})
    assert not (add_snap / results.RUNS_FILE).exists()
    kept = json.loads((add_snap / f"runs.{old_sha[:12]}.json").read_text())
    assert [r["size_name"] for r in kept] == ["then"]
    session.record(load_snapshot(add_snap), results.RUNS_FILE, {"source": "snapshot", "ok": True, "size_name": "now"})
    assert [r["size_name"] for r in results.runs(load_snapshot(add_snap))] == ["now"]


def test_a_snapshot_for_another_gpu_is_refused_when_planned_not_run_and_recorded_as_a_failure(add_snap, tmp_path):
    """An sm_90a cubin on an A100 (sm_80) cannot load: it was launched anyway, failed, and went into runs.json
    as the kernel's FAIL."""
    with pytest.raises(SnapshotError, match="compiled for sm_90a, and this GPU is sm_80") as e:
        session.plan_jobs([str(add_snap)], [], [], None, ["small"], 0, tmp_path / "unused", get_target("sm_80"))
    assert "--target sm_80" in e.value.hint and not (add_snap / results.RUNS_FILE).exists()
    job, = session.plan_jobs([str(add_snap)], [], [], None, ["small"], 0, tmp_path / "unused", get_target("sm_90a"))
    assert job.source == "snapshot"


# -- bad input before the GPU's work (here: before "no CUDA GPU") ------------------------------------------

def test_a_snapshot_runs_size_is_checked_before_whether_a_gpu_is_here(cli, add_snap):
    code, out, err = cli("run", "--snapshot", add_snap, "--size", "garbage")
    assert code == 2 and "no size preset 'garbage'" in err and "CUDA" not in err, err
    code, out, err = cli("run", "--snapshot", add_snap, "--size", "n=0")
    assert code == 2 and "must be positive" in err, err


def test_config_with_only_snapshots_is_refused_not_ignored(cli, add_snap):
    code, out, err = cli("run", "--snapshot", add_snap, "--config", "b4096")
    assert code == 2 and "--config picks configs of the KERNELs you name" in err and "drop --config" in err, err


def test_a_seed_torch_cannot_take_is_a_usage_error_not_a_failed_kernel(cli):
    code, out, err = cli("run", "add", "--interpret", "--size", "small", "--seed", str(1 << 64))
    assert code == 2 and "argument --seed" in err and "FAIL" not in out, out + err
    code, out, err = cli("run", "add", "--interpret", "--size", "small", "--seed", "x")
    assert code == 2 and "takes an integer, not 'x'" in err


@pytest.mark.parametrize("argv, message", [
    (["nosuch"], "unknown kernel 'nosuch'"),
    (["add", "--config", "nope"], "has no config 'nope'"),
    (["add", "--size", "garbage"], "no size preset 'garbage'"),
    (["add", "--json", "nowhere/r.json"], "folder 'nowhere' does not exist"),
])
def test_verify_refuses_bad_input_before_the_gpu(cli, argv, message):
    code, out, err = cli("verify", *argv)
    assert code == 2 and message in err and "CUDA" not in err, err


def test_profile_dir_without_profile_is_refused(cli):
    code, out, err = cli("run", "add", "--interpret", "--profile-dir", "p")
    assert code == 2 and "--profile is not given" in err and not Path("p").exists(), err


def test_a_profile_dir_that_is_a_file_is_refused_before_any_run(cli, tmp_path):
    (tmp_path / "notadir").write_text("mine")
    code, out, err = cli("run", "add", "--profile", "--profile-dir", tmp_path / "notadir" / "sub")
    assert code == 2 and "is a file, not a folder" in err, err
    assert (tmp_path / "notadir").read_text() == "mine"


def _irscope(*argv, **env) -> subprocess.CompletedProcess:
    # A fresh process: TRITON_INTERPRET decides what @triton.jit makes of the kernels it imports.
    return subprocess.run([sys.executable, "-m", "irscope", *argv], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT), **env})


@pytest.mark.parametrize("command", ["run", "verify"])
def test_triton_interpret_in_the_environment_is_refused_on_the_gpu_path(command):
    """Under TRITON_INTERPRET the JIT is the interpreter: `run` would time it as the GPU's and record that."""
    proc = _irscope(command, "add", TRITON_INTERPRET="true")
    assert proc.returncode == 5, proc.stderr
    assert "TRITON_INTERPRET=true is set" in proc.stderr and "unset TRITON_INTERPRET" in proc.stderr
    assert "Traceback" not in proc.stderr


# -- on a GPU ------------------------------------------------------------------------------------------------

@pytest.mark.gpu
def test_a_run_whose_record_cannot_be_written_keeps_going_and_writes_its_json(cli, add_snap, tmp_path):
    (add_snap / results.RUNS_FILE).mkdir()
    code, out, err = cli("run", "add", "--check", "--size", "small", "--size", "ragged", "--out", tmp_path / "out",
                         "--json", tmp_path / "r.json")
    assert code == 4 and "cannot record the result" in err, out + err
    assert out.count("not recorded") == 2 and out.count("PASS") == 2
    assert len(json.loads((tmp_path / "r.json").read_text())) == 2
