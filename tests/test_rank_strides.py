"""Model 19's pointer steps (irscope/rank/strides.py): how far apart in memory an access's neighbouring elements
are, read from the TTGIR's pointer arithmetic, on text written here and on real compiles."""
from __future__ import annotations

from pathlib import Path

from irscope.rank import facts_of
from irscope.rank.facts import _access, _banks_a_row, _lines_a_row, _wavefronts_a_row
from irscope.rank.strides import access_steps
from irscope.store.snapshot import load_snapshot

ROOT = Path(__file__).resolve().parent.parent

# A module cut to what the reader follows: a 2-D tile whose rows are a runtime stride apart, a 1-D load four
# elements apart, two loops that reuse each other's value names (MLIR does, in sibling regions), a pointer a
# loop carries, and offsets it cannot read (a select).
TEXT = """\
#blocked = #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [2, 16], warpsPerCTA = [4, 1], order = [1, 0]}>
#blocked1 = #ttg.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
module attributes {"ttg.num-warps" = 4 : i32} {
  tt.func public @k(%x_ptr: !tt.ptr<bf16> {tt.divisibility = 16 : i32} loc("x_ptr"(#loc)), %C: i32 loc("C"(#loc)), %n: i32) attributes {noinline = false} {
    %c4 = arith.constant dense<4> : tensor<128xi32, #blocked1> loc(#loc1)
    %c3_i32 = arith.constant 3 : i32 loc(#loc1)
    %r = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32, #ttg.slice<{dim = 1, parent = #blocked}>> loc(#loc2)
    %c = tt.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32, #ttg.slice<{dim = 0, parent = #blocked}>> loc(#loc2)
    %w = tt.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32, #blocked1> loc(#loc2)
    %re = tt.expand_dims %r {axis = 1 : i32} : tensor<16xi32, #ttg.slice<{dim = 1, parent = #blocked}>> -> tensor<16x1xi32, #blocked> loc(#loc3)
    %cs = tt.splat %C : i32 -> tensor<16x1xi32, #blocked> loc(#loc3)
    %rows = arith.muli %re, %cs : tensor<16x1xi32, #blocked> loc(#loc3)
    %rb = tt.broadcast %rows : tensor<16x1xi32, #blocked> -> tensor<16x128xi32, #blocked> loc(#loc3)
    %ce = tt.expand_dims %c {axis = 0 : i32} : tensor<128xi32, #ttg.slice<{dim = 0, parent = #blocked}>> -> tensor<1x128xi32, #blocked> loc(#loc3)
    %cb = tt.broadcast %ce : tensor<1x128xi32, #blocked> -> tensor<16x128xi32, #blocked> loc(#loc3)
    %off = arith.addi %rb, %cb : tensor<16x128xi32, #blocked> loc(#loc3)
    %p = tt.splat %x_ptr : !tt.ptr<bf16> -> tensor<16x128x!tt.ptr<bf16>, #blocked> loc(#loc4)
    %tile = tt.addptr %p, %off : tensor<16x128x!tt.ptr<bf16>, #blocked>, tensor<16x128xi32, #blocked> loc(#loc4)
    %ws = arith.muli %w, %c4 : tensor<128xi32, #blocked1> loc(#loc5)
    %q = tt.splat %x_ptr : !tt.ptr<bf16> -> tensor<128x!tt.ptr<bf16>, #blocked1> loc(#loc5)
    %wp = tt.addptr %q, %ws : tensor<128x!tt.ptr<bf16>, #blocked1>, tensor<128xi32, #blocked1> loc(#loc5)
    %a = scf.for %k = %c0 to %n step %c1 iter_args(%acc = %cst, %cur = %wp) -> (tensor<128xf32, #blocked1>, tensor<128x!tt.ptr<bf16>, #blocked1>)  : i32 {
      %t = tt.load %tile : tensor<16x128x!tt.ptr<bf16>, #blocked> loc(#loc6)
      %v = tt.load %cur : tensor<128x!tt.ptr<bf16>, #blocked1> loc(#loc7)
      %s = arith.shli %w, %c3_i32 : tensor<128xi32, #blocked1> loc(#loc8)
      scf.yield %acc, %cur : tensor<128xf32, #blocked1>, tensor<128x!tt.ptr<bf16>, #blocked1> loc(#loc9)
    } loc(#loc10)
    %b = scf.for %k = %c0 to %n step %c1 iter_args(%acc = %cst) -> (tensor<128xf32, #blocked1>)  : i32 {
      %s = arith.select %m, %w, %ws : tensor<128xi1, #blocked1>, tensor<128xi32, #blocked1> loc(#loc8)
      %sp = tt.addptr %q, %s : tensor<128x!tt.ptr<bf16>, #blocked1>, tensor<128xi32, #blocked1> loc(#loc8)
      %u = tt.load %sp : tensor<128x!tt.ptr<bf16>, #blocked1> loc(#loc7)
      %s8 = arith.shli %w, %c3_i32 : tensor<128xi32, #blocked1> loc(#loc8)
      %sp8 = tt.addptr %q, %s8 : tensor<128x!tt.ptr<bf16>, #blocked1>, tensor<128xi32, #blocked1> loc(#loc8)
      tt.store %sp8, %u : tensor<128x!tt.ptr<bf16>, #blocked1> loc(#loc11)
      scf.yield %acc : tensor<128xf32, #blocked1> loc(#loc9)
    } loc(#loc10)
    tt.return loc(#loc12)
  } loc(#loc)
} loc(#loc)
"""


def _by_name(text: str) -> dict[str, tuple | None]:
    lines = text.splitlines()
    return {lines[i].split("tt.load ")[-1].split("tt.store ")[-1].split(" ")[0].rstrip(","): s
            for i, s in access_steps(text).items()}


def test_pointer_steps_follow_the_offsets_the_compiler_builds():
    steps = _by_name(TEXT)
    assert steps["%tile"] == (None, 1)  # rows a runtime C apart, columns contiguous
    assert steps["%cur"] == (4,)  # a loop's carried pointer: its first value, 4 elements a lane
    assert steps["%sp"] is None  # a select: not understood, so no step at all (never a guess)
    assert steps["%sp8"] == (8,)  # `<< 3`, in the second loop, where `%s` is no longer the first loop's


def test_a_carried_pointer_keeps_its_first_steps_only_where_every_yield_keeps_them():
    """A pointer advanced by a scalar (`cur + n`) keeps its steps; one the loop yields with its offsets doubled
    (`cur + arange`: 4 then 5 elements a lane, then 6...) has no single step, so it reads as unknown, and
    so does a pointer carried through it in a nested loop."""
    advanced = TEXT.replace(
        "      scf.yield %acc, %cur :",
        "      %ns = tt.splat %n : i32 -> tensor<128xi32, #blocked1> loc(#loc9)\n"
        "      %nx = tt.addptr %cur, %ns : tensor<128x!tt.ptr<bf16>, #blocked1>, tensor<128xi32, #blocked1> loc(#loc9)\n"
        "      scf.yield %acc, %nx :")
    assert _by_name(advanced)["%cur"] == (4,)
    moved = TEXT.replace(
        "      scf.yield %acc, %cur :",
        "      %nx = tt.addptr %cur, %w : tensor<128x!tt.ptr<bf16>, #blocked1>, tensor<128xi32, #blocked1> loc(#loc9)\n"
        "      scf.if %m {\n"
        "        scf.yield\n"
        "      } else {\n"
        "        scf.yield\n"
        "      } loc(#loc9)\n"
        "      scf.yield %acc, %nx :")
    steps = _by_name(moved)
    assert steps["%cur"] is None and steps["%tile"] == (None, 1) and steps["%sp8"] == (8,)
    inner = moved.replace(
        "      %v = tt.load %cur :",
        "      %in = scf.for %j = %c0 to %n step %c1 iter_args(%deep = %cur) -> (tensor<128x!tt.ptr<bf16>, #blocked1>)  : i32 {\n"
        "        %dv = tt.load %deep : tensor<128x!tt.ptr<bf16>, #blocked1> loc(#loc7)\n"
        "        scf.yield %deep : tensor<128x!tt.ptr<bf16>, #blocked1> loc(#loc9)\n"
        "      } loc(#loc10)\n"
        "      %v = tt.load %cur :")
    assert _by_name(inner)["%deep"] is None and _by_name(inner.replace("%nx :", "%cur :"))["%deep"] == (4,)


def test_a_damaged_or_strange_module_reads_as_unknown_and_never_raises():
    lines = TEXT.splitlines()
    for cut in range(0, len(lines), 3):
        mutated = "\n".join(lines[:cut] + lines[cut + 1:])
        access_steps(mutated)
        access_steps(mutated.replace("arith.constant dense<4>", "arith.constant dense<x>"))
        access_steps(mutated.replace("{axis = 1 : i32}", "{axis = 99 : i32}"))
        access_steps(mutated.replace("%c3_i32 = arith.constant 3", "%c3_i32 = arith.constant 4000"))


def test_lanes_far_apart_take_a_pass_of_the_banks_for_each_word_one_bank_gives():
    """16 lanes 64 bytes apart want 8 words from each of two banks: 8 passes, where sectors (4 a wavefront)
    said 4 and lines say 8.5 (a start anywhere). Contiguous fp16 lanes take one pass wherever they start,
    where lines say 1.5; 4-byte lanes 128 bytes apart all want bank 0: 32. 16-byte vectors: 4 passes."""
    assert _wavefronts_a_row(16, 64, 2, 2) == 4 and _lines_a_row(16, 64, 2, 2) == 8.5 and _banks_a_row(16, 64, 2, 2) == 8
    assert _lines_a_row(32, 4, 4, 128) == 1 == _wavefronts_a_row(32, 4, 4, 128) == _banks_a_row(32, 4, 4, 128)
    assert _banks_a_row(32, 2, 2, 2) == 1 < _lines_a_row(32, 2, 2, 2)
    assert _banks_a_row(32, 128, 4, 4) == 32 and _banks_a_row(32, 16, 16, 16) == 4


def test_model_20_counts_the_lines_a_row_looks_up_where_the_banks_do_not_bind():
    """benchmarks/rank_l1.py on an H100 (docs/rank/l1-h100.json): 32 lanes 196 bytes (49 words) apart want
    one word from each bank, yet took 10 clocks a load: 32 lines looked up, L1_LINES_CLK a clock. Where the
    banks bind (128 bytes apart: every lane in bank 0), the lookups change nothing."""
    import json
    from irscope.rank.facts import L1_LINES_CLK
    assert _banks_a_row(32, 196, 4, 4) == 1
    assert abs(_banks_a_row(32, 196, 4, 4, lines_a_clock=L1_LINES_CLK) - 32 / L1_LINES_CLK) < 1e-9
    assert _banks_a_row(32, 128, 4, 4, lines_a_clock=L1_LINES_CLK) == 32 == _banks_a_row(32, 128, 4, 4)
    doc = json.loads((ROOT / "docs" / "rank" / "l1-h100.json").read_text())
    row = next(r for r in doc["rows"] if (r["element_bytes"], r["stride_bytes"], r["distinct_lanes"]) == (4, 196, 32))
    assert abs(row["clocks_a_load"] / (32 / L1_LINES_CLK) - 1) < 0.1
    # the H200 (docs/rank/l1-h200.json, the same SM) gives the same clocks, row by row, within 2%
    h200 = json.loads((ROOT / "docs" / "rank" / "l1-h200.json").read_text())
    assert "H200" in h200["versions"]["gpu"] and len(h200["rows"]) == len(doc["rows"]) == 49
    for a, b in zip(doc["rows"], h200["rows"]):
        assert (a["element_bytes"], a["stride_bytes"], a["distinct_lanes"]) == \
            (b["element_bytes"], b["stride_bytes"], b["distinct_lanes"])
        assert abs(b["clocks_a_load"] / a["clocks_a_load"] - 1) < 0.02
    layouts = {"#b": ([1], [32], [4], [0])}
    line = "%v = tt.load %p : tensor<128x!tt.ptr<bf16>, #b> loc(#loc)"
    contiguous = _access(line, layouts, 4, 2, (1,), rule="banks")
    apart = _access(line, layouts, 4, 2, (4,), rule="banks")
    same = _access(line, layouts, 4, 2, (0,), rule="banks")
    assert apart[1] == contiguous[1] == same[1] == 4  # one instruction a warp whatever the step
    assert same[0] == contiguous[0] == 4 < apart[0]  # 64 contiguous bytes: one pass, as one address


def test_the_conv1d_weights_read_four_elements_apart_from_a_real_compile(tmp_path, cli):
    """The held-out conv1d (benchmarks/rank/conv1d.py) reads `w_ptr + cs * WIDTH + k`. At 8 warps, BLOCK_L 16
    and BLOCK_C 128 the weights sit in a slice of the tile's layout: 16 lanes a row, 8 channels each, so
    lanes are 8 x 4 x 2 = 64 bytes apart, not 16 as models 17-18 took them. The H200 took 150 us there
    against 55 for the best config (docs/rank/heldout-conv1d)."""
    conv1d = ROOT / "benchmarks" / "rank" / "conv1d.py"
    code, out, err = cli("compile", f"{conv1d}:conv1d", "--target", "sm_90a", "--constexpr", "BLOCK_L=16",
                         "--constexpr", "BLOCK_C=128", "--num-warps", "8", "--out", "s")
    assert code == 0, err
    (path,) = [p.parent for p in (tmp_path / "s").rglob("irscope.json")]
    snap = load_snapshot(path)
    ttgir = snap.read("ttgir")
    lines = ttgir.splitlines()
    steps = {(lines[i].split(" = tt.load")[0].strip().split("_")[0] if "tt.load" in lines[i] else "store"): s
             for i, s in access_steps(ttgir).items()}
    assert steps == {"%bias": (1,), "%v": (None, 1), "%w": (4,), "store": (None, 1)}
    f = facts_of(snap)
    assert f.strided
    # the weights' loads: 8 scalar loads a thread, on each of 8 warps, 8 lines each
    assert f.loop["l1_wavefronts_strided"] > 2.5 * f.loop["l1_wavefronts_own"]


def test_a_pointer_through_a_division_is_unknown_and_pairs_step_two_from_a_real_compile(tmp_path, cli):
    """The held-out rotary embedding (benchmarks/rank/rope.py) reads its even and odd features 2 elements
    apart along the row (`r * HEAD_DIM + 2 * p`), and its cos and sin tables at `(r // heads) % seq`: a
    division, which the reader does not follow. Its steps: (rows a constant 128 apart, 2) for the features
    and their stores; unknown (None) for the tables, which models 19-20 then count as model 18 does."""
    rope = ROOT / "benchmarks" / "rank" / "rope.py"
    code, out, err = cli("compile", f"{rope}:rope", "--target", "sm_90a", "--constexpr", "BLOCK_R=16",
                         "--constexpr", "BLOCK_P=32", "--num-warps", "4", "--out", "s")
    assert code == 0, err
    (path,) = [p.parent for p in (tmp_path / "s").rglob("irscope.json")]
    ttgir = load_snapshot(path).read("ttgir")
    lines = ttgir.splitlines()
    got = sorted((("f32" if "!tt.ptr<f32>" in lines[i] else "f16") + ("-store" if "tt.store" in lines[i] else ""),
                  s) for i, s in access_steps(ttgir).items())
    assert got == [("f16", (128, 2)), ("f16", (128, 2)), ("f16-store", (128, 2)), ("f16-store", (128, 2)),
                   ("f32", None), ("f32", None)]


def _module(body: str, args: str = "%x_ptr: !tt.ptr<f32>, %n: i32") -> str:
    return ("#b = #ttg.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>\n"
            f"module {{\n  tt.func public @k({args}) {{\n"
            "    %r = tt.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32, #b>\n"
            "    %p = tt.splat %x_ptr : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>, #b>\n"
            f"{body}"
            "    %q = tt.addptr %p, %o : tensor<128x!tt.ptr<f32>, #b>, tensor<128xi32, #b>\n"
            "    %v = tt.load %q : tensor<128x!tt.ptr<f32>, #b>\n  }\n}\n")


def _load_steps(text: str):
    (steps,) = [s for i, s in access_steps(text).items() if "tt.load" in text.splitlines()[i]]
    return steps


def test_offsets_the_reader_cannot_vouch_for_are_unknown_not_guessed():
    """A review found these read as confident steps: a constant that is a value a lane, an scf.if's result
    (its type printed apart), `%` by a constant (it repeats within the tile), and a tensor argument of one
    function named like a scalar of another. Each is unknown now; `%` by a runtime size still wraps once."""
    t = "tensor<128xi32, #b>"
    assert _load_steps(_module(f"    %o = arith.constant dense<[0, 64, 128]> : {t}\n")) is None
    assert _load_steps(_module(f"    %o = scf.if %c -> ({t}) {{\n")) is None
    assert _load_steps(_module(f"    %c = arith.constant dense<4> : {t}\n    %o = arith.remsi %r, %c : {t}\n")) is None
    assert _load_steps(_module(f"    %m = tt.splat %n : i32 -> {t}\n    %o = arith.remsi %r, %m : {t}\n")) == (1,)
    two = _module(f"    %o = arith.addi %r, %r : {t}\n") + _module("", args="%x_ptr: !tt.ptr<f32>, %o: " + t)
    assert [s for _, s in sorted(access_steps(two).items())] == [(2,), None]


def test_a_damaged_module_cannot_grow_a_value_without_bound_or_crash_on_long_digits():
    """A review found that squaring a constant line after line (26 lines: 43 s) grew a Python integer without
    bound, and that a literal of more than 4,300 digits raised ValueError. Values past 2^40 are unknown and
    long literals are not read as values."""
    import time
    t = "tensor<128xi32, #b>"
    chain = f"    %c0 = arith.constant dense<3> : {t}\n" + "".join(
        f"    %c{i + 1} = arith.muli %c{i}, %c{i} : {t}\n" for i in range(60))
    started = time.perf_counter()
    assert _load_steps(_module(chain + f"    %o = arith.muli %r, %c60 : {t}\n")) == (None,)  # a step unknown
    assert time.perf_counter() - started < 5
    assert _load_steps(_module(f"    %c = arith.constant dense<{'9' * 5000}> : {t}\n"
                               f"    %o = arith.muli %r, %c : {t}\n")) is None
    assert _load_steps(_module(f"    %o = tt.expand_dims %r {{axis = {'9' * 5000} : i32}} : {t} -> {t}\n")) is None


def test_facts_stored_before_a_model_say_so_and_are_not_rescored_by_it(tmp_path, cli):
    """Facts collected now hold every fact the newest model reads; facts stored by an older irscope lack
    model 19's or 20's L1 count, and `estimate` would run an older count under the newer number. So
    `Facts.newest_model` names the newest model they hold, and the scripts that rescore stored facts
    (rank_autotune_eval's `recomputable`, rank_eval's `predictions`) refuse a later one."""
    import importlib.util
    import json

    import pytest

    from irscope.rank.facts import Facts
    from irscope.rank.model import MODELS

    code, out, err = cli("compile", f"{ROOT / 'benchmarks' / 'rank' / 'conv1d.py'}:conv1d", "--target", "sm_90a",
                         "--constexpr", "BLOCK_L=16", "--constexpr", "BLOCK_C=128", "--num-warps", "8", "--out", "s")
    assert code == 0, err
    (path,) = [p.parent for p in (tmp_path / "s").rglob("irscope.json")]
    fresh = facts_of(load_snapshot(path))
    assert fresh.newest_model() == MODELS[-1]

    def without(f: Facts, *keys: str) -> Facts:
        d = f.as_dict()
        for region in ("loop", "straight"):
            d[region] = {k: v for k, v in d[region].items() if k not in keys}
        return Facts.from_dict(d)

    assert Facts.from_dict({**fresh.as_dict(), "records": None}).newest_model() == 20
    assert without(fresh, "l1_passes").newest_model() == 19
    assert without(fresh, "l1_passes", "l1_wavefronts_strided").newest_model() == 18
    assert without(fresh, "l1_passes", "l1_wavefronts_strided", "l1_wavefronts_own").newest_model() == 17

    spec = importlib.util.spec_from_file_location("rank_autotune_eval", ROOT / "benchmarks" / "rank_autotune_eval.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    problem = {"kernel": "conv1d", "size_name": "x", "size": {}, "grid": [1], "flops": 1, "min_bytes": 1}
    ranking = {"sizes": [{"ranking": [{"facts": without(fresh, "l1_passes").as_dict(), "problem": problem}]}]}
    assert module.recomputable(ranking, 19) and not module.recomputable(ranking, 20)

    spec = importlib.util.spec_from_file_location("rank_eval", ROOT / "benchmarks" / "rank_eval.py")
    rank_eval = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(rank_eval)
    doc = {"target": "sm_90a", "gpu": "h200", "spaces": {"conv1d": {"sizes": ["x"], "configs": [
        {"facts": without(fresh, "l1_passes").as_dict(), "problems": {"x": problem}}]}}}
    assert rank_eval.predictions(doc, 19)["conv1d"]["x"][fresh.label] is not None
    with pytest.raises(SystemExit, match="stored before model 20"):
        rank_eval.predictions(doc, 20)


def test_the_record_calibration_shows_lines_not_bytes_and_records_in_flight():
    """benchmarks/rank_aos.py on the H200 (docs/rank/aos-h200.json, docs/rank.md "What records cost"): a record
    costs the DRAM lines it touches (one word of each 59-word record runs at about 47 billion lines a second,
    where its bytes alone would take a fifth of the time at the DRAM's rate), a line's further sectors
    little, and more records in flight on an SM take longer."""
    import importlib.util
    import json

    spec = importlib.util.spec_from_file_location("rank_aos", ROOT / "benchmarks" / "rank_aos.py")
    rank_aos = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(rank_aos)
    sectors_a_record = rank_aos.sectors_a_record
    doc = json.loads((ROOT / "docs" / "rank" / "aos-h200.json").read_text())
    assert "H200" in doc["versions"]["gpu"] and len(doc["rows"]) == 160
    assert all(r["max_abs_error"] < 1e-4 for r in doc["rows"])
    rows = {(r["record"], r["fields"], r["num_warps"], r["per_thread"]): r for r in doc["rows"]}
    one = rows[(59, 1, 1, 1)]
    assert 40e9 < doc["n"] / (one["ms"] * 1e-3) < 55e9  # lines a second
    assert sectors_a_record(59, 51, 8) == 1.875 == rows[(59, 8, 1, 1)]["sectors_a_record"]
    eight = rows[(59, 8, 1, 1)]["ms"]
    assert eight < 1.3 * one["ms"]  # 0.875 more sectors a record: under a third more time
    by_flight: dict[int, list[float]] = {}
    for (record, fields, _, _), r in rows.items():
        if (record, fields) == (59, 8):
            by_flight.setdefault(r["records_in_flight_an_sm"], []).append(r["ms"])
    means = [sum(v) / len(v) for _, v in sorted(by_flight.items())]
    assert means == sorted(means) and means[-1] > 1.8 * means[0]
