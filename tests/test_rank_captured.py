"""irscope rank of a captured launch file: the main loop's trip count read from the TTGIR with a launch's
arguments, the problem a launch poses (equal to the workload's for the built-in kernels), and the CLI on a
real capture of an autotuned kernel (docs/rank.md, "A kernel your program launches")."""
from __future__ import annotations

import importlib.util
import io
import json
from pathlib import Path

import pytest

from irscope.cli import main
from irscope.rank import chip_for, estimate, facts_of
from irscope.rank.captured import launch_problem, tensor_bytes
from irscope.rank.facts import Facts, _scan, top_loops
from irscope.rank.trips import loop_trips
from irscope.spec import library
from irscope.spec.problem import problem_at
from irscope.store.snapshot import load_snapshot

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "snapshots"
PROGRAMS = Path(__file__).parent / "capture_programs"
H200 = chip_for("sm_90a", "h200")


def _irscope(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def _ttgir(kernel: str, target: str = "sm_90a") -> str:
    return load_snapshot(GOLDEN / kernel / "default" / target).read("ttgir")


def test_the_matmul_loop_runs_k_over_block_k_times_read_from_its_bounds():
    text = _ttgir("matmul")
    block_k = facts_of(load_snapshot(GOLDEN / "matmul" / "default" / "sm_90a")).constexprs["BLOCK_K"]
    for k in (4096, 1000, 64):
        assert loop_trips(text, {"M": 512, "N": 512, "K": k}, (16, 1, 1)) == [-(-k // block_k)]
    assert loop_trips(text, {"M": 512, "N": 512}, (16, 1, 1)) == [None]  # K unknown: no guess


def test_a_causal_loop_that_ends_at_the_programs_own_row_block_is_averaged_over_the_grid():
    text = _ttgir("attention_ws.causal")
    f = facts_of(load_snapshot(GOLDEN / "attention_ws.causal" / "default" / "sm_90a"))
    n_ctx, block_m = 4096, f.constexprs["BLOCK_M"]
    args = {"N_CTX": n_ctx, "ZH": 32} | {f"{d}_desc.shape.{i}": s for d in "qkvo" for i, s in
                                         enumerate((32, n_ctx, 128))}
    grid = (n_ctx // block_m, 32, 1)
    full, diagonal = loop_trips(text, args, grid)[:2]  # the default partition's; the workers' follow
    # program m runs its full blocks below the diagonal: the mean over m of m * BLOCK_M / BLOCK_N
    block_n = f.constexprs["BLOCK_N"]
    assert full == pytest.approx(sum(m * block_m / block_n for m in range(grid[0])) / grid[0], rel=0.1)
    assert diagonal == pytest.approx(block_m / block_n, abs=1)


def test_a_grid_past_the_sample_is_sampled_along_every_axis():
    """A causal loop ends at the program's row block (pid.x): a grid of 64 x 4096 programs sampled by a
    stride through the linear index would see one column of it."""
    text = """tt.func public @k(%n: i32 loc("n"(#loc))) {
    %pid = tt.get_program_id x : i32
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    scf.for %i = %c0 to %pid step %c1 : i32 {
      tt.store %q, %a : tensor<128x!tt.ptr<f32>, #blocked>
    }
    tt.return
  }"""
    assert loop_trips(text, {}, (64, 4096, 1)) == [pytest.approx(31.5)]  # the mean of 0..63
    assert loop_trips(text, {}, (10, 1, 1)) == [pytest.approx(4.5)]


def test_a_loop_in_a_branch_counts_only_where_the_branch_is_taken_and_a_partitions_through_its_arguments():
    text = """tt.func public @k(%n: i32 loc("n"(#loc)), %m: i32 loc("m"(#loc))) {
    %pid = tt.get_program_id x : i32
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %small = arith.cmpi slt, %pid, %m : i32
    scf.if %small {
      scf.for %i = %c0 to %n step %c1 : i32 {
        tt.store %q, %a : tensor<128x!tt.ptr<f32>, #blocked>
      }
    } else {
      scf.for %i = %c0 to %m step %c1 : i32 {
        tt.store %q, %a : tensor<128x!tt.ptr<f32>, #blocked>
      }
    }
    ttg.warp_specialize(%n)
    default {
      ttg.warp_yield
    }
    partition0(%arg1: i32) num_warps(4) {
      %c0 = arith.constant 0 : i32
      %c2 = arith.constant 2 : i32
      scf.for %j = %c0 to %arg1 step %c2 : i32 {
        tt.store %q, %a : tensor<128x!tt.ptr<f32>, #blocked>
      }
      ttg.warp_return
    }
    partition1(%arg1: i32, %arg2: i32) num_warps(1) {
      scf.for %j = %c0 to %arg2 step %c1 : i32 {
        tt.store %q, %a : tensor<128x!tt.ptr<f32>, #blocked>
      }
      ttg.warp_return
    }
    scf.for %i = %c0 to %m step %c2 : i32 {
      tt.store %q, %a : tensor<128x!tt.ptr<f32>, #blocked>
    }
    tt.return
  }"""
    then, other, partition, unbound, after = loop_trips(text, {"n": 100, "m": 3}, (10, 1, 1))
    assert then == pytest.approx(3 * 100 / 10) and other == pytest.approx(7 * 3 / 10)
    # a partition sees the operand bound to its argument (%arg1 is %n); an argument the op does not bind, and
    # its names once the partition ends (its %c2 was 2, the kernel's is not defined), are unknown
    assert partition == 50 and unbound is None and after is None


def test_a_warp_specialized_kernel_poses_the_problem_its_workload_does_through_its_partitions_loops():
    """attention_ws's consumers loop in the default region and in a partition, whose bounds arrive as the
    partition's arguments: read through them, a launch poses the workload's problem at each size whose
    N_CTX is a multiple of the key block (at a ragged one the launch counts the masked block's products,
    which the kernel runs, and the workload only the useful ones)."""
    snap = load_snapshot(GOLDEN / "attention_ws" / "default" / "sm_90a")
    f, spec = facts_of(snap), library.load_kernel("attention_ws")
    assert f.warp_specialized
    for size in ("n1024", "n4096"):
        p = problem_at(spec, size, f.constexprs, sms=H200.sms)
        q = launch_problem(_launch_of(p.call), "attention_ws", f, snap.read("ttgir"))
        assert q.grid == p.grid and q.flops == p.flops and q.min_bytes == p.min_bytes
        assert estimate(f, q, H200).ms == pytest.approx(estimate(f, p, H200).ms, rel=1e-12)
    p = problem_at(spec, "ragged", f.constexprs, sms=H200.sms)
    assert launch_problem(_launch_of(p.call), "attention_ws", f, snap.read("ttgir")).flops > p.flops


def test_a_loop_that_multiplies_with_bounds_it_cannot_read_is_refused_not_guessed():
    from irscope.errors import UsageError
    snap = load_snapshot(GOLDEN / "attention_ws" / "default" / "sm_90a")
    f, spec = facts_of(snap), library.load_kernel("attention_ws")
    launch = _launch_of(problem_at(spec, None, f.constexprs, sms=H200.sms).call)
    # the kernel's N_CTX is what every loop's bounds come from: a launch without it cannot be counted
    launch["args"] = [a for a in launch["args"] if a.get("name") != "N_CTX"]
    with pytest.raises(UsageError, match="cannot count"):
        launch_problem(launch, "attention_ws", f, snap.read("ttgir"))


@pytest.mark.parametrize("change,words", [
    (lambda x: x.update(grid=[0, 1, 1]), "grid"), (lambda x: x.update(grid=[10 ** 12, 1, 1]), "grid"),
    (lambda x: x.update(grid=[2, 2, 2, 2]), "grid"),
    (lambda x: x["args"][0].update(shape=[-4, 8]), "shape"), (lambda x: x["args"][0].update(shape=[10 ** 400]), "shape"),
])
def test_a_hostile_launch_is_refused_as_damaged(change, words):
    from irscope.errors import SnapshotError
    from irscope.rank.captured import check_launch
    launch = {"id": "k/w4", "grid": [4, 1, 1], "args": [
        {"name": "x", "kind": "tensor", "dtype": "fp16", "shape": [64, 32], "strides": [32, 1]}]}
    check_launch(launch, "l.json")
    change(launch)
    with pytest.raises(SnapshotError, match=words):
        check_launch(launch, "l.json")


def test_an_else_region_does_not_end_the_loop_that_holds_it():
    text = """tt.func public @k(%n: i32) {
    scf.for %i = %c0 to %n step %c1 : i32 {
      %a = tt.load %p : tensor<128x!tt.ptr<f32>, #blocked>
      scf.if %c {
        %b = arith.addf %a, %a : tensor<128xf32, #blocked>
      } else {
        %b = arith.mulf %a, %a : tensor<128xf32, #blocked>
      }
      tt.store %q, %a : tensor<128x!tt.ptr<f32>, #blocked>
    }
    tt.return
  }"""
    loop, straight, loops, *_ = _scan(text)
    assert loops == 1 and loop.load_bytes == 512 and loop.store_bytes == 512 and straight.store_bytes == 0
    assert loop_trips(text, {"n": 10}, (1,)) == [None]  # %c0, %c1 are not defined in this fragment


def test_a_tma_copy_counts_its_tiles_bytes_not_its_barriers():
    loops, main = top_loops(_ttgir("matmul.tma"))
    f = facts_of(load_snapshot(GOLDEN / "matmul.tma" / "default" / "sm_90a"))
    m, n, k = (f.constexprs[x] for x in ("BLOCK_M", "BLOCK_N", "BLOCK_K"))
    assert loops[main].load_bytes == 2 * (m * k + k * n)  # an fp16 A and B tile an iteration


def _launch_of(call) -> dict:
    spec = importlib.util.spec_from_file_location("rank_captured", ROOT / "benchmarks" / "rank_captured.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.launch_of(call)


@pytest.mark.parametrize("kernel,sizes", [("matmul", ["bench", "M=1024,N=2048,K=512"]),
                                          ("attention", ["n4096.d128", "n1024.d128"]),
                                          ("add", ["bench", "n=16777216"]), ("softmax", ["bench"])])
def test_a_launch_of_a_builtin_kernel_poses_the_problem_its_workload_does(kernel, sizes):
    """The launch `irscope capture` would record for the workload's own call (grid, scalars, tensors'
    shapes) gives the prediction the workload gives: benchmarks/rank_captured.py checks the same over every
    config and size of the H200 evaluation (docs/rank/captured.json)."""
    snap = load_snapshot(GOLDEN / kernel / "default" / "sm_90a")
    f, spec = facts_of(snap), library.load_kernel(kernel)
    for size in sizes:
        p = problem_at(spec, size, f.constexprs, sms=H200.sms)
        q = launch_problem(_launch_of(p.call), kernel, f, snap.read("ttgir"))
        assert q.grid == p.grid and q.min_bytes == p.min_bytes
        assert estimate(f, q, H200).ms == pytest.approx(estimate(f, p, H200).ms, rel=1e-12)


def test_an_in_place_tensor_counts_once_and_a_missing_shape_is_unknown():
    x = {"name": "x", "kind": "tensor", "dtype": "fp16", "shape": [64, 32], "strides": [64, 1]}
    y = {"name": "y", "kind": "tensor", "dtype": "fp16", "shape": [64, 32], "strides": [32, 1], "alias": "x"}
    assert tensor_bytes({"args": [x]}) == 64 * 32 * 2  # a column slice: its elements, not the rows it spans
    broadcast = {"name": "b", "kind": "tensor", "dtype": "fp16", "shape": [64, 32], "strides": [0, 1]}
    assert tensor_bytes({"args": [broadcast]}) == 32 * 2  # one row read by all 64
    assert tensor_bytes({"args": [x, y]}) == tensor_bytes({"args": [x]})
    assert tensor_bytes({"args": [x, {"name": "z", "kind": "tensor", "dtype": "fp32"}]}) is None
    assert tensor_bytes({"args": [{"name": "n", "kind": "int", "value": 3}]}) is None  # no tensor: unknown


@pytest.fixture(scope="module")
def loop_capture(tmp_path_factory):
    out = tmp_path_factory.mktemp("captured")
    code, _, err = _irscope("capture", "--target", "sm_90a", "--out", str(out), "--", "python",
                            str(PROGRAMS / "autotuned_loop.py"), "4096x8192")
    assert code == 0, err
    return out


@pytest.mark.slow
def test_rank_of_a_capture_ranks_each_config_the_autotuner_tried_at_the_programs_size(loop_capture):
    out = loop_capture
    code, stdout, err = _irscope("rank", str(out / "launches.json"), "--gpu", "h200", "--out", str(out), "--json")
    assert code == 0, err
    report = json.loads(stdout)
    (entry,) = report["sizes"]
    assert report["kernel"] == "row_sums" and report["target"] == "sm_90a"  # the target it was captured for
    assert entry["problem"]["grid"] == [4096, 1, 1] and entry["problem"]["size"]["n_cols"] == 8192
    assert entry["problem"]["min_bytes"] == pytest.approx(4096 * 8192 * 4, rel=1e-3)  # x once (and out)
    blocks = sorted(r["facts"]["constexprs"]["BLOCK"] for r in entry["ranking"])
    assert blocks == [256, 1024, 4096]
    code, table, _ = _irscope("rank", str(out / "launches.json"), "--gpu", "h200", "--out", str(out))
    assert code == 0 and "w2.s3.BLOCK=256" in table and "row_sums on H200" in table


@pytest.mark.slow
@pytest.mark.parametrize("argv,words", [
    (["--size", "bench"], "ranked at the size the program launched it with"),
    (["--measured"], "cannot run a captured launch"),
    (["--kernel", "nope"], "has no kernel 'nope'"),
])
def test_rank_of_a_capture_refuses_what_it_cannot_do_in_one_line(loop_capture, argv, words):
    out = loop_capture
    code, _, err = _irscope("rank", str(out / "launches.json"), "--out", str(out), *argv)
    assert code == 2 and words in err and "Traceback" not in err
    assert err.startswith("irscope: error:") and "irscope: hint:" in err


def test_the_third_party_autotuner_evaluation_rescores_from_the_committed_rankings_and_timings():
    """docs/rank.md's table for FLA, Liger-Kernel and FlagGems on the H200: the committed `irscope rank --json`
    of each capture against its library's own autotuner's timings, scored again here without a GPU."""
    spec = importlib.util.spec_from_file_location("rank_autotune_eval", ROOT / "benchmarks" / "rank_autotune_eval.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    committed = json.loads((ROOT / "docs" / "rank" / "autotune.json").read_text())
    for _, stem in module.ROWS:
        fresh = module.score(stem)
        assert fresh["evaluation"] == committed[stem]["evaluation"]
        assert fresh["gpu_run_to_run_spearman"] >= 0.99
    liger = committed["liger-mlp"]["evaluation"]
    assert liger["unlaunchable_predicted"] == liger["unlaunchable_agreed"] == 8  # refused by the GPU too
    # FLA's B=8 misses Spearman; FlagGems at 8192 x 8192 x 2048 (model 12's held-out ranking) its top 5
    assert [committed[s]["evaluation"]["spearman"] >= 0.8 for _, s in module.ROWS] == [False] + [True] * 8
    assert [committed[s]["evaluation"]["top5_slowdown"] <= 0.03 for _, s in module.ROWS] == \
        [True] * 5 + [False] + [True] * 3
    # model 11's estimates of the same facts put that size's best in the top 5 (docs/rank.md, model 12)
    eleven = module.score("flaggems-mm-M8192-N8192-K2048", 11)["evaluation"]
    assert eleven["best_in_top5"] and round(committed["flaggems-mm-M8192-N8192-K2048"]["evaluation"]
                                            ["top5_slowdown"], 3) == 0.046


def test_flaggems_ranked_again_by_model_15_rescores_as_committed():
    """FlagGems' matmul captured again at its six sizes and ranked by model 15 (docs/rank/autotune/model15/,
    the same configs and facts as the committed rankings, plus the facts added since), scored against
    the same autotuner timings: model 15's estimates, made again from the facts, meet both goals at all
    six sizes, as model 14's of the same facts do; at 8,192^2 x 2,048 model 15 pushes the GPU's best out
    of its top 5 (1.0% off), where model 14 keeps it. The committed rankings lack the repetitions, so
    model 15 does not rescore them (their own estimates are scored instead)."""
    spec = importlib.util.spec_from_file_location("rank_autotune_eval", ROOT / "benchmarks" / "rank_autotune_eval.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    committed = json.loads((ROOT / "docs" / "rank" / "autotune-model15.json").read_text())
    folder = ROOT / "docs" / "rank" / "autotune" / "model15"
    stems = [s for _, s in module.ROWS if s.startswith("flaggems")]
    assert sorted(committed) == sorted(stems) and len(stems) == 6
    for stem in stems:
        ranking = json.loads((folder / f"ranking-{stem}.json").read_text())
        assert ranking["model"] == ranking["model_run"] == 15 and module.recomputable(ranking, 15)
        fresh, fourteen = module.score(stem, 15, folder), module.score(stem, 14, folder)
        assert fresh["model"] == 15 and fresh["evaluation"] == committed[stem]["evaluation"]
        for e in (fresh["evaluation"], fourteen["evaluation"]):
            assert e["spearman"] >= 0.8 and e["top5_slowdown"] <= 0.03
        assert fourteen["evaluation"]["best_in_top5"]
        assert fresh["evaluation"]["best_in_top5"] == (stem != "flaggems-mm-M8192-N8192-K2048")
        old = json.loads((module.DATA / f"ranking-{stem}.json").read_text())
        assert not module.recomputable(old, 15) and module.recomputable(old, 14)
        assert "model" not in module.score(stem, 15)  # scored on the ranking's own estimates


def test_flaggems_ranked_by_model_16_meets_both_goals_as_model_15_does():
    """FlagGems' matmul captured again at its six sizes and ranked by model 16 (docs/rank/autotune/model16/,
    after model 16 was frozen; its design never looked at these timings): both goals at all six sizes, as
    model 15's estimates of the same facts (which rescore as docs/rank/autotune/model15/ does); its
    Spearman a little lower at four. Its main loop is a K loop (not ragged): model 16 prices its waves.
    Rankings made before model 16 lack `ragged_loop`, so model 16 does not rescore them."""
    spec = importlib.util.spec_from_file_location("rank_autotune_eval", ROOT / "benchmarks" / "rank_autotune_eval.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    committed = json.loads((ROOT / "docs" / "rank" / "autotune-model16.json").read_text())
    folder, before = (ROOT / "docs" / "rank" / "autotune" / f"model{m}" for m in (16, 15))
    stems = [s for _, s in module.ROWS if s.startswith("flaggems")]
    assert sorted(committed) == sorted(stems) and len(stems) == 6
    lower = 0
    for stem in stems:
        ranking = json.loads((folder / f"ranking-{stem}.json").read_text())
        assert ranking["model"] == ranking["model_run"] == 16 and module.recomputable(ranking, 16)
        assert {r["facts"]["ragged_loop"] for r in ranking["sizes"][0]["ranking"]} == {0}
        fresh, fifteen = module.score(stem, 16, folder), module.score(stem, 15, folder)
        assert fresh["evaluation"] == committed[stem]["evaluation"]
        assert fifteen["evaluation"] == module.score(stem, 15, before)["evaluation"]
        for e in (fresh["evaluation"], fifteen["evaluation"]):
            assert e["spearman"] >= 0.8 and e["top5_slowdown"] <= 0.03
        lower += fresh["evaluation"]["spearman"] < fifteen["evaluation"]["spearman"]
        assert not module.recomputable(json.loads((before / f"ranking-{stem}.json").read_text()), 16)
    assert lower == 4


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("fla") is None, reason="needs fla-core (pip install -e '.[test]')")
def test_a_library_kernel_captured_from_its_own_wrapper_ranks_as_committed(tmp_path):
    """FLA's chunk_fwd_kernel_h, 48 autotune configs, captured through FLA's chunk_fwd_h under `--as sm_90a`
    and ranked: the predictions docs/rank.md's table scores, made again from nothing but the capture."""
    code, stdout, err = _irscope("capture", "--as", "sm_90a", "--no-compile", "--out", str(tmp_path), "--",
                                 "python", str(PROGRAMS / "autotuned_lib.py"))
    assert code == 0, err
    # (ranked by model 11, the default then)
    code, stdout, err = _irscope("rank", str(tmp_path / "launches.json"), "--gpu", "h200", "--out", str(tmp_path),
                                 "--json", "--model", "11")
    assert code == 0, err
    fresh = json.loads(stdout)["sizes"][0]["ranking"]
    committed = json.loads((ROOT / "docs/rank/autotune/ranking-fla-B8-T4096.json").read_text())["sizes"][0]["ranking"]

    def by_config(ranking):
        return {(json.dumps(r["facts"]["constexprs"], sort_keys=True), r["facts"]["num_warps"],
                 r["facts"]["num_stages"]): r["estimate"]["ms"] for r in ranking}
    assert len(fresh) == 48
    want, got = by_config(committed), by_config(fresh)
    assert got.keys() == want.keys()
    assert all(got[k] == pytest.approx(want[k], rel=1e-9) for k in want)


@pytest.mark.slow
def test_a_capture_without_tensor_shapes_still_ranks_and_says_what_it_assumed(loop_capture):
    out = loop_capture
    data = json.loads((out / "launches.json").read_text())
    for launch in data["launches"]:
        for a in launch["args"]:
            a.pop("shape", None), a.pop("strides", None)
    (out / "older.json").write_text(json.dumps(data))
    code, stdout, err = _irscope("rank", str(out / "older.json"), "--out", str(out), "--json")
    assert code == 0, err
    assert "records no tensor shapes" in err and "capture the program again" in err
    (entry,) = json.loads(stdout)["sizes"]
    assert entry["problem"]["min_bytes"] == pytest.approx(4096 * 8192 * 4, rel=1e-3)  # loaded once: the same here


@pytest.mark.slow
def test_a_hostile_launch_file_is_refused_before_its_source_runs(loop_capture, tmp_path):
    data = json.loads((loop_capture / "launches.json").read_text())
    marker = tmp_path / "ran"
    for kernel in data["kernels"].values():  # what compiling would run: it must not get that far
        kernel["module_source"] = f"open({str(marker)!r}, 'w').close()\n" + (kernel.get("module_source") or "")
    data["launches"][0]["grid"] = [10 ** 12, 1, 1]
    (tmp_path / "hostile.json").write_text(json.dumps(data))
    code, _, err = _irscope("rank", str(tmp_path / "hostile.json"), "--out", str(tmp_path))
    assert code == 4 and "is damaged" in err and "grid" in err and "Traceback" not in err
    assert not marker.exists()


@pytest.mark.slow
@pytest.mark.parametrize("value", [10 ** 30, -2 ** 63 - 1, "abc", 1.5, True])
def test_an_int_argument_no_launch_can_pass_is_a_damaged_launch_file(loop_capture, tmp_path, value):
    # 10**30 reached Triton's specialiser: an internal error (exit 70); "abc" was a warning and a ranking
    data = json.loads((loop_capture / "launches.json").read_text())
    arg = next(a for a in data["launches"][0]["args"] if a["kind"] == "int")
    arg["value"] = value
    (tmp_path / "hostile.json").write_text(json.dumps(data))
    code, _, err = _irscope("rank", str(tmp_path / "hostile.json"), "--out", str(tmp_path))
    assert code == 4 and f"('{arg['name']}') is int" in err and "is damaged" in err and "Traceback" not in err


def test_another_json_file_is_not_a_launch_file_rather_than_a_damaged_one(tmp_path):
    (tmp_path / "ranking.json").write_text(json.dumps({"space": "add", "sizes": []}))  # rank's own --json
    code, _, err = _irscope("rank", str(tmp_path / "ranking.json"), "--out", str(tmp_path))
    assert code == 4 and "is not a launch file" in err and "damaged" not in err and "Traceback" not in err


@pytest.mark.slow
def test_an_autotuned_warp_specialized_kernel_captured_for_blackwell_ranks_with_its_partitions_loops(tmp_path):
    """tests/capture_programs/autotuned_ws.py: `tl.range(warp_specialize=True)` has Triton split the K loop
    into a loading and a matrix partition (sm_100a), each loop bounded by a partition argument. Captured and
    ranked: every config, the K loop's trips read through the partitions (K / BLOCK_K), the loading
    partition's tiles counted in the main loop every iteration, and the warps the config asked for."""
    code, _, err = _irscope("capture", "--target", "sm_100a", "--out", str(tmp_path), "--", "python",
                            str(PROGRAMS / "autotuned_ws.py"), "4096x2048x2048")
    assert code == 0, err
    code, stdout, err = _irscope("rank", str(tmp_path / "launches.json"), "--gpu", "b200", "--out", str(tmp_path),
                                 "--json")
    assert code == 0, err
    (entry,) = json.loads(stdout)["sizes"]
    assert entry["problem"]["trips"] == 2048 / 64 and entry["problem"]["grid"][:2] in ([32, 32], [32, 16])
    ranking = entry["ranking"]
    assert len(ranking) == 4 and all(r["estimate"]["ms"] for r in ranking)
    for r in ranking:
        f = r["facts"]
        assert f["warp_specialized"] and f["loops"] == 2
        bn = f["constexprs"]["BLOCK_N"]
        assert f["loop"]["load_bytes"] == (128 + bn) * 64 * 2 and f["loop"]["dot_flops"] == 2 * 128 * bn * 64
    code, stdout, _ = _irscope("rank", str(tmp_path / "launches.json"), "--gpu", "b200", "--out", str(tmp_path))
    assert code == 0 and "w4.s2.BLOCK_K=64.BLOCK_M=128.BLOCK_N=128" in stdout and "w8." not in stdout


@pytest.mark.slow
def test_a_persistent_kernels_loop_inside_its_loop_over_tiles_counts_as_it_runs(tmp_path):
    """tests/capture_programs/persistent_matmul.py: a program an SM loops over tiles, and inside over K.
    The TTGIR holds the K loop once an outer iteration; its bounds (independent of the tile) give how
    often it runs, so the launch's flops are the matmul's (as for the same kernel with the loops fused by
    tl.range(flatten=True)), the main loop's iteration is the K step with the tile's epilogue spread over
    it, and the pipeline's depth is read from the K loop's waits."""
    ranked = {}
    for mode in ("nested", "flatten"):
        out = tmp_path / mode
        code, _, err = _irscope("capture", "--target", "sm_90a", "--out", str(out), "--", "python",
                                str(PROGRAMS / "persistent_matmul.py"), mode)
        assert code == 0, err
        code, stdout, err = _irscope("rank", str(out / "launches.json"), "--gpu", "h200", "--out", str(out), "--json")
        assert code == 0, err
        (entry,) = json.loads(stdout)["sizes"]
        ranked[mode] = entry
    for mode, entry in ranked.items():
        assert entry["problem"]["flops"] == 2 * 4096 * 4096 * 2048, mode
    for r in ranked["nested"]["ranking"]:
        f, problem = r["facts"], r["problem"]
        tiles = 4096 * 4096 / (128 * f["constexprs"]["BLOCK_N"])
        assert problem["flops"] == 2 * 4096 * 4096 * 2048
        assert problem["trips"] == pytest.approx(tiles / 132 * 2048 / 64)  # K steps a program runs
        assert problem["loop"]["dot_flops"] == f["loop"]["dot_flops"]  # one K step's products
        assert f["prefetch"] == 2 and f["loops"] == 1  # 3 stages: copies two iterations ahead
        assert r["estimate"]["ms"] is not None


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("flag_gems") is None or importlib.util.find_spec("sqlalchemy") is None,
                    reason="FlagGems is not installed: pip install --no-deps flag-gems==5.0.2 sqlalchemy==2.0.48")
def test_flaggems_matmul_captured_through_flag_gems_mm_ranks_as_committed_before_its_timing(tmp_path):
    """FlagGems' Hopper matmul, its 162 configs, captured through flag_gems.mm under `--as sm_90a` at 4096^3
    and ranked: the predictions committed before the H200 timed it (docs/rank.md), made again from nothing
    but the capture."""
    code, _, err = _irscope("capture", "--as", "sm_90a", "--no-compile", "--out", str(tmp_path), "--", "python",
                            str(PROGRAMS / "flaggems_mm.py"), "4096x4096x4096")
    assert code == 0, err
    # (ranked by model 11, the default then)
    code, stdout, err = _irscope("rank", str(tmp_path / "launches.json"), "--gpu", "h200", "--out", str(tmp_path),
                                 "--json", "--model", "11")
    assert code == 0, err
    fresh = json.loads(stdout)["sizes"][0]["ranking"]
    committed = json.loads((ROOT / "docs/rank/autotune/ranking-flaggems-mm-M4096-N4096-K4096.json").read_text())

    def by_config(ranking):
        return {(json.dumps(r["facts"]["constexprs"], sort_keys=True), r["facts"]["num_warps"],
                 r["facts"]["num_stages"]): r["estimate"]["ms"] for r in ranking}
    want, got = by_config(committed["sizes"][0]["ranking"]), by_config(fresh)
    assert len(got) == 162 and got.keys() == want.keys()
    assert all(got[k] == pytest.approx(want[k], rel=1e-9) for k in want)


def _ws_kernel(loops: str) -> str:
    return """tt.func public @k(%K: i32 loc("K"(#loc)), %K2: i32 loc("K2"(#loc))) {
""" + loops + """
    tt.return
  }"""


_WS_OP = """    ttg.warp_specialize({bound})
    default {{
      ttg.warp_yield
    }}
    partition0(%arg1: i32) num_warps(1) {{
      %c0 = arith.constant 0 : i32
      %c1 = arith.constant 1 : i32
      scf.for %i = %c0 to %arg1 step %c1 : i32 {{
        %d = ttng.tc_gen5_mma %a, %b, %acc : !ttg.memdesc<128x{k}xf16, #shared, #smem> * !ttg.memdesc<{k}x128xf16, #shared, #smem> -> tensor<128x128xf32, #blocked>
      }} {{tt.num_stages = 3 : i32, tt.warp_specialize}}
      ttg.warp_return
    }}
    partition1(%arg1: i32) num_warps(1) {{
      %c0 = arith.constant 0 : i32
      %c1 = arith.constant 1 : i32
      scf.for %i = %c0 to %arg1 step %c1 : i32 {{
        %x = ttg.async_copy_global_to_local %p, %buf : tensor<128x{k}x!tt.ptr<f16>, #blocked> -> <128x{k}xf16, #shared, #smem, mutable>
        %y = ttg.async_copy_global_to_local %q, %buf2 : tensor<{k}x128x!tt.ptr<f16>, #blocked> -> <{k}x128xf16, #shared, #smem, mutable>
      }} {{tt.warp_specialize, tt.num_stages = 3 : i32}}
      ttg.warp_return
    }}"""


def test_an_automatically_split_loop_runs_its_partitions_loads_in_its_own_iterations_and_no_other_ops():
    """Triton's automatic warp specialisation closes each partition's loop with its attributes, among them
    tt.warp_specialize (in any place): the loading partition's tiles are the main loop's every iteration.
    A second split loop (its own warp_specialize op) stays a loop of its own."""
    text = _ws_kernel(_WS_OP.format(bound="%K", k=64) + "\n" + _WS_OP.format(bound="%K2", k=16))
    loops, main = top_loops(text)
    assert main == 0 and len(loops) == 4
    assert loops[0].dot_flops == 2 * 128 * 128 * 64 and loops[0].load_bytes == 2 * 128 * 64 * 2
    assert loops[1].load_bytes == 0 and loops[1].dot_flops == 0  # merged into the main loop
    assert loops[2].dot_flops == 2 * 128 * 128 * 16 and loops[3].load_bytes == 2 * 128 * 16 * 2  # not merged
    assert loop_trips(text, {"K": 64, "K2": 4}, (1, 1, 1)) == [64, 64, 4, 4]


def test_a_partition_sees_only_its_arguments_and_a_nested_op_binds_its_own():
    text = """tt.func public @k(%n: i32 loc("n"(#loc)), %m: i32 loc("m"(#loc))) {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    ttg.warp_specialize(%n, %m)
    default {
      ttg.warp_specialize(%m)
      default {
        ttg.warp_yield
      }
      partition0(%arg9: i32) num_warps(1) {
        %c0_1 = arith.constant 0 : i32
        %c1_1 = arith.constant 1 : i32
        scf.for %j = %c0_1 to %arg9 step %c1_1 : i32 {
          tt.store %q, %a : tensor<128x!tt.ptr<f32>, #blocked>
        }
        ttg.warp_return
      }
      ttg.warp_yield
    }
    partition0(%arg1: i32, %arg2: i32) num_warps(4) {
      %c0_2 = arith.constant 0 : i32
      %c1_2 = arith.constant 1 : i32
      scf.for %j = %c0_2 to %arg1 step %c1_2 : i32 {
        tt.store %q, %a : tensor<128x!tt.ptr<f32>, #blocked>
      }
      scf.for %j = %c0 to %n step %c1 : i32 {
        tt.store %q, %a : tensor<128x!tt.ptr<f32>, #blocked>
      }
      ttg.warp_return
    }
    tt.return
  }"""
    # the inner op's partition binds %m (3); the outer op's partition binds %n (100), not the inner op's
    # operands; a partition that names the kernel's %n, %c0 or %c1 directly sees nothing (isolated)
    assert loop_trips(text, {"n": 100, "m": 3}, (1, 1, 1)) == [3, 100, None]


def test_a_loop_inside_a_loop_that_runs_no_time_runs_no_time_and_one_it_cannot_count_is_refused():
    from irscope.errors import UsageError
    from irscope.rank.trips import loop_counts
    text = """tt.func public @k(%n: i32 loc("n"(#loc)), %m: i32 loc("m"(#loc))) {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    scf.for %t = %c0 to %n step %c1 : i32 {
      %e = arith.addi %t, %m : i32
      scf.for %k = %c0 to %e step %c1 : i32 {
        %d = tt.dot %a, %b, %acc : tensor<64x32xf16, #dot0> * tensor<32x64xf16, #dot1> -> tensor<64x64xf32, #mma>
      }
    }
    tt.return
  }"""
    assert loop_counts(text, {"n": 0, "m": 8}, (1, 1, 1)) == ([0.0], [[0.0]])  # the outer loop runs no time
    assert loop_counts(text, {"n": 5, "m": 8}, (1, 1, 1)) == ([5.0], [[None]])  # bounds on the outer variable
    facts = Facts(label="k/w4/sm_90a", target="sm_90a", launchable=True, launch_reasons=(), num_warps=4,
                  num_stages=1, registers=64, spill_bytes=0, shared_bytes=0, blocks_per_sm=1,
                  occupancy_limiter="", instruction="mma", dot_dtype="fp16", loop=_scan(text)[0].as_dict(), loops=1)
    launch = {"id": "k/w4", "grid": [4, 1, 1], "args": [{"name": "n", "kind": "int", "value": 5},
                                                         {"name": "m", "kind": "int", "value": 8}]}
    with pytest.raises(UsageError, match="loop 1 inside loop 1, which multiplies"):
        launch_problem(launch, "k", facts, text)


def test_a_light_loop_inside_the_main_loop_keeps_the_main_loops_iterations_and_counts_as_it_runs():
    """An inner loop that holds none of the products (a few loads each iteration) does not become the step:
    the main loop keeps its K / BK iterations, each with the inner loop's loads as often as they run."""
    text = """tt.func public @k(%K: i32 loc("K"(#loc)), %G: i32 loc("G"(#loc))) {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %c64 = arith.constant 64 : i32
    %n = arith.divsi %K, %c64 : i32
    scf.for %k = %c0 to %n step %c1 : i32 {
      %a = tt.load %pa : tensor<128x64x!tt.ptr<f16>, #blocked>
      scf.for %g = %c0 to %G step %c1 : i32 {
        %s = tt.load %ps : tensor<128x!tt.ptr<f32>, #blocked1>
      }
      %d = tt.dot %a, %b, %acc : tensor<128x64xf16, #dot0> * tensor<64x128xf16, #dot1> -> tensor<128x128xf32, #mma>
    }
    tt.return
  }"""
    facts = Facts(label="k/w4/sm_90a", target="sm_90a", launchable=True, launch_reasons=(), num_warps=4,
                  num_stages=1, registers=64, spill_bytes=0, shared_bytes=0, blocks_per_sm=1,
                  occupancy_limiter="", instruction="mma", dot_dtype="fp16", loop=_scan(text)[0].as_dict(), loops=1)
    launch = {"id": "k/w4", "grid": [8, 1, 1], "args": [{"name": "K", "kind": "int", "value": 4096},
                                                         {"name": "G", "kind": "int", "value": 4}]}
    p = launch_problem(launch, "k", facts, text)
    assert p.trips == 64 and p.flops == 8 * 64 * 2 * 128 * 128 * 64
    assert p.loop["load_bytes"] == 128 * 64 * 2 + 4 * 128 * 4 and p.loop["dot_flops"] == 2 * 128 * 128 * 64


@pytest.mark.slow
def test_a_launch_file_missing_a_value_compiling_needs_says_to_capture_again(loop_capture, tmp_path):
    data = json.loads((loop_capture / "launches.json").read_text())
    for launch in data["launches"]:
        launch["args"] = [a for a in launch["args"] if a.get("name") != "n_cols"]
    (tmp_path / "partial.json").write_text(json.dumps(data))
    code, _, err = _irscope("rank", str(tmp_path / "partial.json"), "--out", str(tmp_path))
    assert code == 2 and "needs a typical value for argument 'n_cols'" in err
    assert "capture the program again" in err and "Traceback" not in err and len(err.strip().splitlines()) == 2


def test_a_partitions_loop_under_a_kernels_branch_reads_the_condition_where_it_was_written():
    text = """tt.func public @k(%n: i32 loc("n"(#loc)), %m: i32 loc("m"(#loc))) {
    %pid = tt.get_program_id x : i32
    %small = arith.cmpi slt, %pid, %m : i32
    scf.if %small {
      ttg.warp_specialize(%n)
      default {
        ttg.warp_yield
      }
      partition0(%arg1: i32) num_warps(4) {
        %c0 = arith.constant 0 : i32
        %c1 = arith.constant 1 : i32
        %small = arith.constant true
        scf.for %j = %c0 to %arg1 step %c1 : i32 {
          tt.store %q, %a : tensor<128x!tt.ptr<f32>, #blocked>
        }
        ttg.warp_return
      }
    }
    tt.return
  }"""
    # programs 0-2 of 10 take the branch (%pid < 3, the kernel's %small, not the partition's own name)
    assert loop_trips(text, {"n": 100, "m": 3}, (10, 1, 1)) == [pytest.approx(3 * 100 / 10)]


def test_fla_ranked_by_model_21_scores_as_model_16_and_at_least_as_well_as_model_15():
    """FLA's chunk_fwd_kernel_h captured again at its two sizes and ranked by model 21 (docs/rank/autotune/model21/):
    it reads no stream of records, so models 16-21 give the same estimates; against FLA's own autotuner's
    timings, Spearman 0.673 and 0.820 (model 15: 0.622 and 0.826), the best in the top 5 at both sizes."""
    spec = importlib.util.spec_from_file_location("rank_autotune_eval", ROOT / "benchmarks" / "rank_autotune_eval.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    folder = ROOT / "docs" / "rank" / "autotune" / "model21"
    for stem, spearman in (("fla-B8-T4096", 0.6725), ("fla-B1-T16384", 0.82)):
        ranking = json.loads((folder / f"ranking-{stem}.json").read_text())
        assert ranking["model"] == ranking["model_run"] == 21 and module.recomputable(ranking, 21)
        assert not any(r["facts"]["records"] for r in ranking["sizes"][0]["ranking"])
        scores = {m: module.score(stem, m, folder)["evaluation"] for m in (15, 16, 21)}
        assert scores[21] == scores[16] and scores[21]["spearman"] == spearman
        assert scores[21]["best_in_top5"] and scores[15]["best_in_top5"]
        assert scores[21]["top1_slowdown"] <= scores[15]["top1_slowdown"]


def test_the_third_party_rows_ranked_by_model_21_meet_the_goals_where_model_15_does_and_at_liger():
    """FlagGems' matmul at its six sizes (tests/capture_programs/flaggems_mm.py) and Liger's fused SwiGLU GEMM
    (tests/capture_programs/liger_mlp.py) captured again and ranked by model 21 (docs/rank/autotune/model21/),
    beside FLA's two rows: no stream of records in any, so model 21 estimates as model 16 does. Against each
    library's own autotuner on the H200, model 21 meets both goals at FlagGems' six sizes, as model 15 does
    (its best of five up to 2.7% behind where model 15's is at the best), and at Liger's row, where model
    15's Spearman is 0.764: docs/rank.md, "Model 21 the default"."""
    spec = importlib.util.spec_from_file_location("rank_autotune_eval", ROOT / "benchmarks" / "rank_autotune_eval.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    folder = ROOT / "docs" / "rank" / "autotune" / "model21"
    stems = sorted(p.stem[len("ranking-"):] for p in folder.glob("ranking-*.json"))
    assert len(stems) == 9 and sum(s.startswith("flaggems-mm-") for s in stems) == 6 and "liger-mlp" in stems
    goals = {15: 0, 21: 0, "21 worst": 0, 22: 0}
    for stem in stems:
        ranking = json.loads((folder / f"ranking-{stem}.json").read_text())
        assert ranking["model"] == ranking["model_run"] == 21 and module.recomputable(ranking, 21)
        assert not any(r["facts"]["records"] for r in ranking["sizes"][0]["ranking"])
        scores = {m: module.score(stem, m, folder)["evaluation"] for m in (15, 16, 21)}
        assert scores[21] == scores[16], stem
        for m in (15, 21):
            goals[m] += scores[m]["spearman"] >= 0.8 and scores[m]["top5_slowdown"] <= 0.03
        # model 22 (configs predicted to the same time ordered: docs/rank.md, "Ties, and model 22"), against
        # model 21 with its ties at their worst order
        e22 = module.score(stem, 22, folder)["evaluation"]
        goals[22] += e22["spearman"] >= 0.8 and e22["top5_slowdown_worst"] <= 0.03
        goals["21 worst"] += scores[21]["spearman"] >= 0.8 and scores[21]["top5_slowdown_worst"] <= 0.03
        if stem.startswith("flaggems-mm-"):
            assert scores[21]["spearman"] >= 0.949 and scores[21]["top5_slowdown"] <= 0.0272, stem
    liger = {m: module.score("liger-mlp", m, folder)["evaluation"] for m in (15, 21)}
    assert (liger[15]["spearman"], liger[21]["spearman"]) == (0.7638, 0.8081)
    assert liger[21]["best_in_top5"] and liger[15]["best_in_top5"]
    assert goals == {15: 7, 21: 8, "21 worst": 8, 22: 8}  # FLA at B=8 T=4096 misses under all (0.622, 0.673)
    # Liger's one tie, a GROUP_SIZE_M pair, is the same in everything the model reads: model 22 leaves it
    assert module.score("liger-mlp", 22, folder)["evaluation"]["ties_top1"] == 2
