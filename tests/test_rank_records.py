"""Model 21's streams of records (irscope/rank/records.py): the loads of one record found from the pointer
reader's sums, the DRAM sectors and runs a record takes, and what model 21 charges for them."""
from __future__ import annotations

import math
from pathlib import Path

import pytest

from irscope.rank import chip_for, estimate, facts_of
from irscope.rank.model import _record_seconds
from irscope.rank.records import SPARSE, layout_of, record_streams
from irscope.spec import library
from irscope.spec.problem import problem_at
from irscope.store.snapshot import load_snapshot

ROOT = Path(__file__).resolve().parent.parent
H200 = chip_for("sm_90a", "h200")


def _compile(cli, tmp_path, kernel: str, out: str, *flags: str):
    code, _, err = cli("compile", kernel, "--target", "sm_90a", *flags, "--out", out)
    assert code == 0, err
    (path,) = [p.parent for p in (tmp_path / out).rglob("irscope.json")]
    return load_snapshot(path)


def test_a_record_takes_the_sectors_its_fields_touch_and_the_runs_they_make():
    # 8 adjacent words of 59-word records: 1 or 2 sectors as the record's start falls, one run
    assert layout_of(236, [(204, 236)]) == (1.875, 1.0)
    # x, y, z and word 8 of 80-byte records: 2 sectors, and neighbours' sectors adjoin (a run of 4 every 2)
    assert layout_of(80, [(0, 12), (32, 36)]) == (2.0, 0.5)
    # a contiguous row is no stream of records: a run for the whole window
    sectors, runs = layout_of(4, [(0, 4)])
    assert sectors == 4 * 256 / 32 / 256 and runs < SPARSE


def test_streams_of_records_from_real_compiles(tmp_path, cli):
    """The gscov's 8 loads (words 51-58 of 59) are one stream; the LiDAR kernel's 4 (words 0-2 and 8 of 20),
    fields that are not adjacent, another. The rotary embedding's rows are not a stream: its second program
    id moves the address within a row (other programs read the rest); the depthwise conv's filters are read
    in its loops."""
    gscov = _compile(cli, tmp_path, f"{ROOT / 'benchmarks' / 'rank' / 'gscov.py'}:gscov", "g",
                     "--constexpr", "BLOCK=128", "--num-warps", "4")
    assert record_streams(gscov.read("ttgir")) == [
        {"records": 128, "stride": 236, "used": 32, "sectors": 1.875, "runs": 1.0, "loads": 8, "pids": ["x"]}]
    lidar = _compile(cli, tmp_path, f"{ROOT / 'benchmarks' / 'rank' / 'lidar.py'}:lidar", "l",
                     "--constexpr", "BLOCK=256", "--num-warps", "2")
    assert record_streams(lidar.read("ttgir")) == [
        {"records": 256, "stride": 80, "used": 16, "sectors": 2.0, "runs": 0.5, "loads": 4, "pids": ["x"]}]
    rope = _compile(cli, tmp_path, f"{ROOT / 'benchmarks' / 'rank' / 'rope.py'}:rope", "r",
                    "--constexpr", "BLOCK_R=16", "--constexpr", "BLOCK_P=16", "--num-warps", "4")
    dwconv = _compile(cli, tmp_path, f"{ROOT / 'benchmarks' / 'rank' / 'dwconv.py'}:dwconv", "d",
                      "--constexpr", "BLOCK_W=8", "--constexpr", "BLOCK_C=64", "--num-warps", "2")
    assert record_streams(rope.read("ttgir")) == [] == record_streams(dwconv.read("ttgir"))

    # model 21 charges the gscov's stream its runs and sectors, slowed by the 2,048 records 16 programs an
    # SM hold; the bytes it uses come out of the least bytes, which the rest still takes at the DRAM's rate
    f = facts_of(gscov)
    assert f.records and f.newest_model() == 22 and f.blocks_per_sm == 16  # (model 22 reads no new fact)
    spec = library.load_kernel(f"{ROOT / 'benchmarks' / 'rank' / 'gscov.py'}:gscov")
    p = problem_at(spec, "bench", f.constexprs, sms=H200.sms)
    m = H200.calibration(21)
    used, seconds = _record_seconds(f, p, m)
    records = 128 * math.ceil(4_000_000 / 128)
    assert used == records * 32
    assert seconds == pytest.approx(records * (10.1 + 1.875 * 9.4) * 1e-12 * (1 + (2048 - 1024) / 25000))
    twenty, twentyone = estimate(f, p, H200, 20), estimate(f, p, H200, 21)
    assert twentyone.bound == "memory" and twentyone.ms > 2 * twenty.ms
    assert twentyone.reason.startswith("memory: records 236 bytes apart, 32 bytes used of 1.88 sectors in 1 run of "
                                       "DRAM each, 2,048 in flight an SM (+4%), 16 programs/SM")
    assert twentyone.ms * 1e-3 >= seconds


def test_model_21_is_model_20_where_no_stream_of_records_is_read():
    for kernel in ("add", "softmax", "matmul"):
        f = facts_of(load_snapshot(ROOT / "snapshots" / kernel / "default" / "sm_90a"))
        assert f.records == []
        p = problem_at(library.load_kernel(kernel), "bench", f.constexprs, sms=H200.sms)
        assert estimate(f, p, H200, 21) == estimate(f, p, H200, 20)


def _base(load: str = "    %x = tt.load %g : tensor<32x!tt.ptr<f32>, #b> loc(#l)\n", pid: str = "%pid") -> str:
    return f"""\
#b = #ttg.blocked<{{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [1], order = [0]}}>
module {{
  tt.func public @k(%p: !tt.ptr<f32>, %n: i32) {{
    %pid = tt.get_program_id x : i32 loc(#l)
    %q = arith.divsi %pid, %n : i32 loc(#l)
    %c32 = arith.constant 32 : i32 loc(#l)
    %base = arith.muli {pid}, %c32 : i32 loc(#l)
    %r = tt.make_range {{end = 32 : i32, start = 0 : i32}} : tensor<32xi32, #b> loc(#l)
    %bs = tt.splat %base : i32 -> tensor<32xi32, #b> loc(#l)
    %i = arith.addi %bs, %r : tensor<32xi32, #b> loc(#l)
    %c59 = arith.constant dense<59> : tensor<32xi32, #b> loc(#l)
    %o = arith.muli %i, %c59 : tensor<32xi32, #b> loc(#l)
    %ps = tt.splat %p : !tt.ptr<f32> -> tensor<32x!tt.ptr<f32>, #b> loc(#l)
    %g = tt.addptr %ps, %o : tensor<32x!tt.ptr<f32>, #b>, tensor<32xi32, #b> loc(#l)
{load}    tt.return loc(#l)
  }} loc(#l)
}} loc(#l)
"""


def test_a_load_inside_a_loop_is_no_stream():
    looped = "    scf.for %k = %c0 to %n step %c1  : i32 {\n" \
             "      %y = tt.load %g : tensor<32x!tt.ptr<f32>, #b> loc(#l)\n    } loc(#l)\n"
    text = _base("    %x = tt.load %g : tensor<32x!tt.ptr<f32>, #b> loc(#l)\n" + looped)
    (stream,) = record_streams(text)
    assert stream["loads"] == 1 and stream["stride"] == 236 and stream["pids"] == ["x"]
    assert record_streams(text.replace("    %x = tt.load %g : tensor<32x!tt.ptr<f32>, #b> loc(#l)\n", "")) == []


def test_what_the_review_found_reads_as_no_stream_or_never_raises():
    """A review of model 21 (a helper, reading only) found loads it took as a stream of records wrongly, and
    snapshots that crashed the reader. Each now gives no stream, the right one, or nothing, without raising."""
    assert record_streams(_base())[0]["pids"] == ["x"]
    # a program id the reader cannot follow (`pid // n`): whose records a program reads is unknown
    assert record_streams(_base(pid="%q")) == []
    # an scf.while's body runs many times, as a loop's
    looped = "    scf.while (%a = %n) : (i32) -> () {\n      scf.condition(%t) %a : i32\n    } do {\n" \
             "    ^bb0(%a: i32):\n      %y = tt.load %g : tensor<32x!tt.ptr<f32>, #b> loc(#l)\n      scf.yield %a : i32\n" \
             "    } loc(#l)\n"
    assert record_streams(_base(looped)) == []
    # the type is read from the op's type, not from an attribute that looks like one; no shape of 0 or of
    # thousands of digits is taken
    for load in ('    %x = tt.load %g {k = "tensor<1xx!tt.ptr<f32>>"} : tensor<32x!tt.ptr<f32>, #b> loc(#l)\n',
                 "    %x = tt.load %g : tensor<0x!tt.ptr<f32>, #b> loc(#l)\n",
                 f"    %x = tt.load %g : tensor<{'9' * 5000}x!tt.ptr<f32>, #b> loc(#l)\n"):
        record_streams(_base(load))
    # a pointer moved by a scalar addptr (the program's first record) is followed
    moved = _base().replace("    %ps = tt.splat %p :", "    %pp = tt.addptr %p, %base : !tt.ptr<f32>, i32 loc(#l)\n"
                                                       "    %ps = tt.splat %pp :")
    assert record_streams(moved)[0]["pids"] == ["x"]
