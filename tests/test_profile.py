"""`irscope run --profile`: reading Proton's output, the runs.json record it makes, and how `irscope show`
and `irscope report` display it. Proton needs a GPU; these run on the CPU, on Proton files as Proton
writes them (tests/data/proton/, see PROFILE below) and on the record `irscope run --profile` makes of one.
The browser's view of a recorded profile is in tests/test_report.py (its roofline test)."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from irscope.errors import SnapshotError
from irscope.gpu import profile
from irscope.gpu.bench import Ceilings
from irscope.store import results
from irscope.store.snapshot import load_snapshot
from tests.conftest import DATA, GOLDENS

PROTON = DATA / "proton"
# A real Proton file: Triton 3.6.0's Proton on the H200 (docs/gpu-runs/2026-12-01-proton/), written by
# `irscope run matmul.fp32 --config m16n16k16.w4.s2 --profile`: the scope irscope entered 15 times around
# the 16-wide tile's launch, and the L2 flush (torch's fill kernel) outside it, under ROOT.
PROFILE = PROTON / "matmul_fp32-m16n16k16_w4_s2-bench-jit.hatchet"
SCOPE = "matmul.fp32/m16n16k16.w4.s2/bench/jit"
ITERATIONS = 15  # what that run recorded (`iterations` in its runs.json)
KERNEL_NS = 193_529_825  # the file's matmul_fp32_kernel `time (ns)`: 15 launches
FLOPS, BYTES = 2 * 4096 ** 3, 4 * 3 * 4096 * 4096
# The ceilings that run measured (its runs.json's gpu record), rounded.
CEILINGS = Ceilings(copy_gbps=4219.8, matmul_tflops=664.9, device="NVIDIA H200", driver="580.159.04",
                    capability="9.0")


def _summary(path=PROFILE, scope=SCOPE, iterations=ITERATIONS):
    return profile.summarise(profile.read_profile(path), scope, iterations, expected={"flops": FLOPS, "bytes": BYTES},
                             ceilings=CEILINGS, file=str(path), proton="3.6.0")


# -- reading Proton's file ------------------------------------------------------------------------------

def test_the_kernel_time_is_the_kernel_records_under_the_scope_per_iteration():
    p = _summary()
    assert [k.name for k in p.kernels] == ["matmul_fp32_kernel"]  # the L2 flush outside the scope is not counted
    assert p.kernels[0].calls == ITERATIONS and p.kernels[0].total_ms == pytest.approx(KERNEL_NS / 1e6)
    assert p.ms == pytest.approx(KERNEL_NS / 1e6 / ITERATIONS)  # 12.90 ms (do_bench said 12.92)


def test_rates_come_from_the_scope_metrics_per_iteration_and_their_fractions_from_the_ceilings():
    p = _summary()
    assert p.metrics_summed is True  # Proton 3.6 summed the 15 entries' flops and bytes
    assert p.flops == pytest.approx(FLOPS) and p.bytes == pytest.approx(BYTES)
    assert p.tflops == pytest.approx(FLOPS / (KERNEL_NS / ITERATIONS * 1e-9) / 1e12)  # 10.65
    assert p.gbps == pytest.approx(BYTES / (KERNEL_NS / ITERATIONS * 1e-9) / 1e9)
    assert p.copy_fraction == pytest.approx(p.gbps / 4219.8)
    assert p.matmul_fraction == pytest.approx(p.tflops / 664.9)
    assert p.device["num_sms"] == 132 and p.device["arch"] == "90"


def test_a_workload_of_three_kernels_is_timed_per_kernel_and_summed():
    # blur.row on the H200 (the second run): gray, row and column kernels under one scope, 200 iterations.
    path = PROTON / "blur_row-default-bench-jit.hatchet"
    p = profile.summarise(profile.read_profile(path), "blur.row/default/bench/jit", 200,
                          expected={"flops": 137_281_536.0, "bytes": 89_653_248.0})
    times = {k.name: k for k in p.kernels}
    assert sorted(times) == ["blur_col_kernel", "blur_row_kernel", "gray_kernel"]
    assert all(k.calls == 200 for k in p.kernels)
    assert times["gray_kernel"].mean_ms == pytest.approx(2_740_546 / 200 / 1e6)
    assert p.ms == pytest.approx(sum(k.total_ms for k in p.kernels) / 200) and p.ms == pytest.approx(0.036, abs=1e-3)
    assert p.bytes == pytest.approx(89_653_248.0) and p.metrics_summed is True


def test_a_scope_holding_one_entrys_metrics_is_not_divided(tmp_path):
    data = json.loads(PROFILE.read_text())
    (scope,) = [c for c in data[0]["children"] if c["frame"]["name"] == SCOPE]
    scope["metrics"] = {"flops": float(FLOPS), "bytes": float(BYTES)}  # a Proton that keeps, not sums
    path = tmp_path / "kept.hatchet"
    path.write_text(json.dumps(data))
    p = _summary(path)
    assert p.metrics_summed is False and p.flops == pytest.approx(FLOPS)


def test_a_profile_without_the_scope_says_which_scope_is_missing():
    with pytest.raises(profile.ProfileFormatError, match="no scope 'softmax/default/bench/jit'"):
        _summary(scope="softmax/default/bench/jit")


@pytest.mark.parametrize("text, message", [
    ("not json", "is not JSON"),
    ('{"frame": {}}', "is not a hatchet list"),
    ('[{"frame": {"name": 3}}]', "lacks frame.name"),
    ('[{"frame": {"name": "ROOT"}, "metrics": {"time (ns)": true}}]', "is not a number"),
    ('[{"frame": {"name": "ROOT"}, "children": {}}]', "malformed metrics or children"),
    ('[{"frame": {"name": "ROOT"}}, ["not", "devices"]]', "must map device types"),
    ("[" * 100_000 + "]" * 100_000, "nests deeper"),
])
def test_a_damaged_or_hostile_profile_is_refused_in_one_line(text, message):
    with pytest.raises(profile.ProfileFormatError, match=message):
        profile.parse_profile(text)


def test_a_profile_too_big_or_not_text_is_refused_before_it_is_parsed(tmp_path):
    big = tmp_path / "big.hatchet"
    with big.open("wb") as f:  # sparse: no 64 MiB written
        f.truncate(profile.MAX_FILE_BYTES + 1)
    with pytest.raises(profile.ProfileFormatError, match="more than the"):
        profile.read_profile(big)
    packed = tmp_path / "x.hatchet_msgpack"
    packed.write_bytes(b"\x92\x83\xa5frame\xff\xfe")
    with pytest.raises(profile.ProfileFormatError, match="not UTF-8"):
        profile.read_profile(packed)


def test_deep_frames_are_refused_without_exhausting_recursion():
    node = {"frame": {"name": "leaf"}, "metrics": {}, "children": []}
    for i in range(profile.MAX_DEPTH + 5):
        node = {"frame": {"name": f"f{i}"}, "metrics": {}, "children": [node]}
    with pytest.raises(profile.ProfileFormatError, match=f"deeper than {profile.MAX_DEPTH}"):
        profile.parse_profile(json.dumps([node, {}]))


def test_iterations_aim_at_a_fixed_kernel_time():
    assert profile.iterations_for(2.0) == 100
    assert profile.iterations_for(100.0) == profile.MIN_ITERATIONS
    assert profile.iterations_for(0.001) == profile.MAX_ITERATIONS
    assert profile.iterations_for(None) == 20


# -- the record in runs.json ----------------------------------------------------------------------------

@pytest.fixture
def snap_with_profile(tmp_path):
    """add's committed golden with a run as `irscope run --profile` records it (irscope/cli/run.py)."""
    folder = tmp_path / "add"
    shutil.copytree(GOLDENS / "add" / "default" / "sm_90a", folder)
    p = _summary()
    record = {"source": "jit", "ok": True, "size_name": "bench",
              "gpu": {"device": "NVIDIA H200", "target": "sm_90a", "copy_gbps": 4220.0, "matmul_tflops": 670.0},
              "bench": {"kernel": {"name": "kernel", "ms": 12.9156, "tflops": FLOPS / 12.9156e-3 / 1e12,
                                   "gbps": BYTES / 12.9156e-3 / 1e9},
                        "flops": FLOPS, "bytes": BYTES, "copy_fraction": 0.0037, "matmul_fraction": 0.016,
                        "speedups": {"torch matmul": 0.21}},
              "profile": p.as_dict()}
    results.append(folder, results.RUNS_FILE, record)
    return folder, p


def test_a_profile_record_round_trips_through_runs_json(snap_with_profile):
    folder, p = snap_with_profile
    (back,) = results.runs(load_snapshot(folder))
    assert back["profile"] == json.loads(json.dumps(p.as_dict()))
    assert back["profile"]["kernels"][0] == {"name": "matmul_fp32_kernel", "calls": 15, "total_ms": KERNEL_NS / 1e6,
                                             "mean_ms": KERNEL_NS / 1e6 / 15}


def test_a_damaged_profile_record_names_its_field(snap_with_profile):
    folder, _ = snap_with_profile
    records = json.loads((folder / "runs.json").read_text())
    records[0]["profile"]["kernels"][0]["calls"] = "three"
    (folder / "runs.json").write_text(json.dumps(records))
    with pytest.raises(SnapshotError, match=r"field '\[0\]\.profile\.kernels\[0\]\.calls' must be an integer"):
        results.runs(load_snapshot(folder))


def test_show_lists_proton_figures_beside_do_bench(cli, snap_with_profile):
    folder, p = snap_with_profile
    code, out, err = cli("show", folder)
    assert code == 0, err
    line = next(ln for ln in out.splitlines() if "· proton " in ln)
    assert "12.916 ms" in line and f"proton 12.902 ms, {p.tflops:.1f} TFLOP/s" in line
    assert "0.4% of copy, 1.6% of matmul" in line  # small fractions keep a decimal


def test_report_tabulates_the_profile_and_marks_it_on_the_roofline(snap_with_profile, tmp_path):
    from irscope.report import build_report, write_report  # Pygments: here, not at import (the GPU machine's test)
    folder, p = snap_with_profile
    html = write_report(tmp_path / "r.html", build_report([load_snapshot(folder)])).read_text()
    assert "Proton profiles (irscope run --profile)" in html
    assert "matmul_fp32_kernel x15 (12.9020 ms)" in html and ">12.9020<" in html and ">12.9156<" in html and ">0.4%<" in html
    assert html.count('class="pt proton"') == 1 and html.count('<circle class="pt"') == 1


def test_a_hostile_profile_record_is_shown_as_text(snap_with_profile, tmp_path):
    from irscope.report import build_report, write_report
    folder, _ = snap_with_profile
    records = json.loads((folder / "runs.json").read_text())
    evil = "<img src=x onerror=alert(1)></script><script>alert(2)</script>"
    records[0]["profile"]["scope"] = evil
    records[0]["profile"]["kernels"][0]["name"] = evil
    (folder / "runs.json").write_text(json.dumps(records))
    html = write_report(tmp_path / "h.html", build_report([load_snapshot(folder)])).read_text()
    assert "<img src=x" not in html and "alert(2)</script>" not in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html


def test_a_comparison_draws_every_snapshots_runs_on_one_roofline(snap_with_profile, tmp_path):
    from irscope.report import build_report, write_report
    folder, p = snap_with_profile
    other = tmp_path / "softmax"
    shutil.copytree(GOLDENS / "softmax" / "default" / "sm_90a", other)
    record = json.loads((folder / "runs.json").read_text())[0]
    record["bench"]["kernel"]["ms"] = 3.182  # the 128-wide tile's do_bench time, as a second snapshot's run
    results.append(other, results.RUNS_FILE, {k: v for k, v in record.items() if k not in ("recorded", "profile")})
    html = write_report(tmp_path / "c.html", build_report(compare=[load_snapshot(folder),
                                                                   load_snapshot(other)])).read_text()
    assert html.count('class="plot roofline"') == 1  # only the comparison's: no snapshot sections asked for
    assert ">add</text>" in html and ">softmax</text>" in html  # each point named by its column


# -- the command ----------------------------------------------------------------------------------------

def test_profile_without_a_gpu_stops_with_exit_5_and_a_hint(cli):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a CUDA GPU is present: this checks the message on machines without one")
    code, out, err = cli("run", "add", "--profile")
    assert code == 5 and out == ""
    assert "no CUDA GPU here for Proton to profile" in err and "hint: run --profile on a machine" in err


def test_profile_with_the_interpreter_is_a_usage_error(cli):
    code, _, err = cli("run", "add", "--profile", "--interpret")
    assert code == 2 and "Proton" in err and "drop --interpret" in err


def test_config_is_repeatable_and_each_config_runs(cli):
    # The device script names matmul.fp32's two tiles this way; add's two configs are the cheap stand-in.
    code, out, err = cli("run", "add", "--interpret", "--config", "default", "--config", "b4096", "--size", "small")
    assert code == 0, err
    assert "add  config default  size small" in out and "add  config b4096  size small" in out
    assert "2 passed, 0 failed" in out


def test_profile_files_are_named_without_dots_and_never_twice(tmp_path):
    taken: set[str] = set()
    first = profile.file_stem(tmp_path, "matmul.fp32", "m16n16k16.w4.s2", "bench", "jit", taken)
    again = profile.file_stem(tmp_path, "matmul.fp32", "m16n16k16.w4.s2", "bench", "jit", taken)
    assert first.name == "matmul_fp32-m16n16k16_w4_s2-bench-jit" and "." not in first.name
    assert again.name == first.name + "-2" and first.parent == tmp_path.resolve()


def test_a_profile_file_already_in_the_folder_is_neither_overwritten_nor_read_back(tmp_path):
    old = tmp_path / "add-default-bench-jit.hatchet"
    old.write_text("an earlier run's profile")
    (tmp_path / "add-default-bench-jit-2").write_text("a user's file")
    stem = profile.file_stem(tmp_path, "add", "default", "bench", "jit", set())
    assert stem.name == "add-default-bench-jit-3"
    assert old.read_text() == "an earlier run's profile"


@pytest.mark.gpu
def test_profile_on_a_gpu_records_protons_kernel_time_beside_do_bench(cli, tmp_path):
    code, out, err = cli("run", "add", "--profile", "--profile-dir", tmp_path / "proton", "--repeats", "2",
                         "--json", tmp_path / "r.json")
    assert code == 0, out + err
    record = json.loads((tmp_path / "r.json").read_text())[0]
    prof = record["profile"]
    assert [k["name"] for k in prof["kernels"]] == ["add_kernel"]
    assert prof["kernels"][0]["calls"] == prof["iterations"]
    # The same launches timed two ways: CUPTI's kernel time is within a factor of two of do_bench's.
    assert 0.5 < prof["ms"] / record["bench"]["kernel"]["ms"] < 2.0
    assert prof["gbps"] > 0 and prof["copy_fraction"] > 0.3
    assert Path(prof["file"]).is_file() and profile.read_profile(Path(prof["file"])).scope(prof["scope"])


def test_two_runs_profiling_into_one_folder_take_two_names(tmp_path):
    """Each run's `taken` set is its own: two processes both saw the name free and Proton wrote one file
    for both, each reading back the other's. The name is now claimed in the folder itself."""
    first = profile.file_stem(tmp_path, "add", "default", "bench", "jit", set())
    second = profile.file_stem(tmp_path, "add", "default", "bench", "jit", set())  # another process's set
    assert first != second and (tmp_path / f"{first.name}.hatchet").is_file()
    assert second.name == first.name + "-2"
