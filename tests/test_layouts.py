"""Layouts: the maps irscope computes from the bases Triton gives, checked against hand-derived
expectations on the built-in matmul (compiled once for sm_80, sm_90a and gfx942); irscope's own
conversion against Triton's; the convert and bank-conflict rules; layouts.json through the store."""
import json
import re
import shutil

import pytest

from irscope.cli import main
from irscope.errors import SnapshotError
from irscope.layouts import fallback
from irscope.layouts.cost import Movement, bank_conflicts, classify
from irscope.layouts.gf2 import LinearLayout
from irscope.layouts.report import access_reports, convert_reports, load_layouts
from irscope.layouts.views import hardware_view, tensor_view
from irscope.store import load_snapshot

TARGETS = ("sm_80", "sm_90a", "gfx942")


@pytest.fixture(scope="module")
def snaps(tmp_path_factory):
    from irscope.harness.batch import Point, compile_points
    out = tmp_path_factory.mktemp("layouts")
    outcomes = compile_points([Point("matmul", t) for t in TARGETS], out, layouts=True)
    assert all(o.ok for o in outcomes)
    return {o.point.target: load_snapshot(o.path) for o in outcomes}


def layout(snaps, target, name, shape=None):
    enc = load_layouts(snaps[target]).find(name)
    sl = enc.at(shape)
    assert sl.layout is not None, sl.note
    return sl.layout


def test_compile_stores_layouts_json_with_triton_bases(snaps):
    for t, snap in snaps.items():
        ls = load_layouts(snap)
        assert ls.computed_by.startswith("triton"), (t, ls.note)
        kinds = {e.kind for e in ls.encodings}
        assert {"blocked", "slice"} <= kinds
    assert "nvidia_mma" in {e.kind for e in load_layouts(snaps["sm_80"]).encodings}
    assert "amd_mfma" in {e.kind for e in load_layouts(snaps["gfx942"]).encodings}


def test_blocked_layout_maps_threads_to_elements_as_derived_by_hand(snaps):
    # #blocked1 on sm_90a: sizePerThread [1, 8], threadsPerWarp [4, 8], warpsPerCTA [8, 1], order [1, 0].
    ll = layout(snaps, "sm_90a", "blocked1", (128, 64))
    assert ll.apply(warp=0, lane=0, register=1) == (0, 1)  # 8 contiguous columns per thread
    assert ll.apply(warp=0, lane=1, register=0) == (0, 8)  # 8 lanes along a row of 64
    assert ll.apply(warp=0, lane=8, register=0) == (1, 0)  # then 4 rows per warp
    assert ll.apply(warp=1, lane=15, register=15) == (37, 63)  # the tile repeats every 32 rows in registers
    for w in range(8):
        assert ll.owners[(4 * w, 0)] == [(w, 0, 0)]  # each warp owns 4 rows
    assert ll.injective


def test_mma_v2_accumulator_is_the_mma_sync_fragment(snaps):
    # sm_80 #mma: mma.sync m16n8, warpsPerCTA [2, 4]: lane l holds row l/4 (+8 for c2, c3), columns 2(l%4)+{0,1}.
    ll = layout(snaps, "sm_80", "mma", (128, 256))
    assert ll.apply(lane=5, register=0) == (1, 2)
    assert ll.apply(lane=5, register=3) == (9, 3)
    for w in range(8):
        assert ll.apply(warp=w, lane=0, register=0) == (16 * (w // 4), 8 * (w % 4))


def test_mma_v3_accumulator_is_the_wgmma_fragment(snaps):
    # sm_90a #mma: wgmma 16x256 per warp, warpsPerCTA [8, 1]; registers walk c0,c1 (+1 col), c2,c3 (+8 rows),
    # then 8 columns further.
    ll = layout(snaps, "sm_90a", "mma", (128, 256))
    assert ll.apply(lane=6, register=7) == (9, 13)
    assert ll.size("register") == 128
    for w in range(8):
        assert ll.apply(warp=w, lane=0, register=0) == (16 * w, 0)


def test_dot_operand_a_broadcasts_over_the_warps_along_n(snaps):
    # sm_80 A operand (opIdx 0, kWidth 2) of mma.sync m16n8k16: a0 = (g, 2t..2t+1), a1 = (g+8, ..), a2 = (g, 2t+8..).
    ll = layout(snaps, "sm_80", "#ttg.dot_op<{opIdx = 0, parent = #mma, kWidth = 2}>", (128, 16))
    assert [ll.apply(lane=6, register=r) for r in range(5)] == [(1, 4), (1, 5), (9, 4), (9, 5), (1, 12)]
    for w in range(8):
        assert ll.apply(warp=w, lane=0, register=0) == (16 * (w // 4), 0)
    assert [o[0] for o in ll.owners[(0, 0)]] == [0, 1, 2, 3]  # the four warps along N hold the same A rows
    assert not ll.injective


def test_amd_mfma_transposed_accumulator(snaps):
    # gfx942 #mma: mfma 32x32x8, isTransposed: row = lane % 32, col = 8(i/4) + 4(lane/32) + i%4 for register i < 16.
    ll = layout(snaps, "gfx942", "mma", (128, 256))
    assert ll.size("lane") == 64
    assert ll.apply(lane=33, register=5) == (1, 13)
    for w in range(8):
        assert ll.apply(warp=w, lane=0, register=0) == (32 * (w // 4), 32 * (w % 4))


def test_swizzled_shared_offsets_xor_the_row_into_the_column(snaps):
    # sm_80 #shared: vec 8, perPhase 1, maxPhase 8, order [1, 0]: col = c ^ ((row % 8) * 8), 64 columns a row.
    ll = layout(snaps, "sm_80", "shared", (128, 64))
    assert ll.apply(offset=64) == (1, 8)
    assert ll.apply(offset=130) == (2, 18)
    assert ll.apply(offset=8 * 64) == (8, 0)  # the phase wraps after 8 rows
    assert ll.offsets[(2, 18)] == 130
    assert ll == fallback.convert(load_layouts(snaps["sm_80"]).find("shared").attr, (128, 64))


@pytest.mark.parametrize("vec,per_phase,max_phase,shape", [(4, 1, 16, (64, 256)), (8, 2, 4, (128, 64)),
                                                          (1, 1, 8, (32, 32)), (4, 4, 2, (64, 16))])
def test_amd_rotating_shared_rotates_the_phase_per_block_of_rows(vec, per_phase, max_phase, shape):
    # Triton 3.9's bindings cannot read #ttg.amd_rotating_shared (the B operand of every gfx942/gfx950
    # matmul), so its layout, its bank conflicts and the accesses through it were "not available". Checked
    # element by element against the rule written out per element: the column group is XORed with the
    # phase, and the phase with the block of maxPhase*perPhase rows it lies in.
    attr = (f"#ttg.amd_rotating_shared<{{vec = {vec}, perPhase = {per_phase}, maxPhase = {max_phase}, "
            f"order = [1, 0]}}>")
    ll = fallback.convert(attr, shape)
    rows, cols = shape
    for row in range(rows):
        phase = (row // per_phase) % max_phase
        block = (row // per_phase // max_phase) % max_phase
        for col in range(cols):
            group = (col // vec) ^ ((phase ^ block) % (cols // vec))
            assert ll.offsets[(row, col)] == row * cols + group * vec + col % vec
    plain = fallback.convert(attr.replace("amd_rotating_shared", "swizzled_shared"), shape)
    assert (ll == plain) == (rows <= per_phase * max_phase)  # they differ once a second block of rows starts


def test_the_gfx942_matmuls_rotating_b_operand_has_a_layout_and_a_conflict_count(snaps):
    enc = load_layouts(snaps["gfx942"]).find("shared1")
    assert enc.kind == "amd_rotating_shared"
    sl = enc.at((64, 256))
    assert sl.layout is not None and sl.by == "irscope", sl.note
    reports = access_reports(snaps["gfx942"].read("ttgir"), load_layouts(snaps["gfx942"]))
    through = [r for r in reports if r.access.shared_name == "#shared1"]
    assert through and all(r.conflicts is not None for r in through)


def test_nvmma_128b_swizzle_equals_swizzled_8_1_8(snaps):
    nv = layout(snaps, "sm_90a", "shared", (128, 64))
    assert nv.bases == fallback.swizzled("#ttg.swizzled_shared<{vec = 8, perPhase = 1, maxPhase = 8, order = [1, 0]}>",
                                         (128, 64)).bases


def test_irscope_conversion_agrees_with_triton_where_it_has_one(snaps):
    checked = 0
    for t, snap in snaps.items():
        for enc in load_layouts(snap).encodings:
            for sl in enc.layouts:
                if sl.by != "triton":
                    continue
                try:
                    ours = fallback.convert(enc.attr, sl.shape)
                except fallback.Unsupported:
                    continue
                assert ours == sl.layout, (t, enc.name, sl.shape)
                checked += 1
    assert checked >= 30


def test_views_print_like_tritons_layout_printer():
    gl = pytest.importorskip("triton.experimental.gluon.language")
    blk = gl.BlockedLayout([1, 2], [4, 8], [2, 1], [1, 0])
    ll = fallback.blocked("#ttg.blocked<{sizePerThread = [1, 2], threadsPerWarp = [4, 8], warpsPerCTA = [2, 1], "
                          "order = [1, 0]}>", (8, 8))
    assert tensor_view(ll) == blk.format_tensor_view([8, 8])
    assert hardware_view(ll) == blk.format_hardware_view([8, 8])
    sh = gl.SwizzledSharedLayout(2, 1, 4, [1, 0])
    sll = fallback.swizzled("#ttg.swizzled_shared<{vec = 2, perPhase = 1, maxPhase = 4, order = [1, 0]}>", (4, 8))
    assert tensor_view(sll) == sh.format_tensor_view([4, 8])
    assert hardware_view(sll) == sh.format_hardware_view([4, 8])


def test_convert_rule_tells_registers_shuffles_and_shared_memory_apart(snaps):
    lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]]
    base = LinearLayout.of({"register": [[0, 1], [8, 0]], "lane": lane, "warp": [[16, 0], [0, 8]], "block": []}, (32, 16))
    regs_swapped = LinearLayout.of({"register": [[8, 0], [0, 1]], "lane": lane, "warp": [[16, 0], [0, 8]],
                                    "block": []}, (32, 16))
    lane_reg_swapped = LinearLayout.of({"register": [[0, 2], [8, 0]], "lane": [[0, 1]] + lane[1:],
                                        "warp": [[16, 0], [0, 8]], "block": []}, (32, 16))
    warp_lane_swapped = LinearLayout.of({"register": [[0, 1], [8, 0]], "lane": [[16, 0]] + lane[1:],
                                         "warp": [[0, 2], [0, 8]], "block": []}, (32, 16))
    assert classify(base, base).movement == Movement.REGISTERS
    assert classify(base, regs_swapped).movement == Movement.REGISTERS
    assert classify(base, lane_reg_swapped).movement == Movement.SHUFFLE
    assert classify(base, warp_lane_swapped).movement == Movement.SHARED
    # The matmul epilogue: the accumulator to the store layout goes through shared memory (Triton agrees).
    cvts = convert_reports(snaps["sm_80"].read("ttgir"), load_layouts(snaps["sm_80"]))
    assert cvts and all(c.cost.movement == Movement.SHARED for c in cvts)


def test_bank_conflicts_of_a_column_per_warp_on_an_unswizzled_tile():
    # [1,1]x[32,1]x[8,1]: lane i reads row i, 8 contiguous f16 (16 B); 128-byte rows put 8 lanes in the same banks.
    dist = fallback.blocked("#ttg.blocked<{sizePerThread = [1, 1], threadsPerWarp = [32, 1], warpsPerCTA = [8, 1], "
                            "order = [1, 0]}>", (128, 64))
    plain = fallback.swizzled("#ttg.swizzled_shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [1, 0]}>", (128, 64))
    swz = fallback.swizzled("#ttg.swizzled_shared<{vec = 8, perPhase = 1, maxPhase = 8, order = [1, 0]}>", (128, 64))
    assert bank_conflicts(dist, plain, 16).conflicts == 7
    assert bank_conflicts(dist, swz, 16).conflicts == 0


def test_shared_accesses_of_the_matmul_are_conflict_free(snaps):
    reports = access_reports(snaps["sm_80"].read("ttgir"), load_layouts(snaps["sm_80"]))
    reads = [r for r in reports if r.access.direction == "read"]
    assert reads and all(r.conflicts is not None and r.conflicts.conflicts == 0 for r in reports)


def test_cli_prints_bases_grid_and_per_thread_view(snaps, capsys):
    assert main(["layouts", str(snaps["sm_90a"].path), "--layout", "blocked1", "--shape", "128x64"]) == 0
    out = capsys.readouterr().out
    assert "register [[0, 1], [0, 2], [0, 4], [32, 0], [64, 0]]" in out
    assert "[[   T0:0,    T0:1," in out  # element (0, 0) is thread 0's register 0
    assert "Warp7:" in out


def test_cli_json_and_compare_mark_target_only_encodings(snaps, capsys):
    assert main(["layouts", str(snaps["sm_80"].path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["converts"][0]["movement"] == "shared"
    assert main(["layouts", "--compare", "--json", *(str(snaps[t].path) for t in TARGETS)]) == 0
    rows = json.loads(capsys.readouterr().out)["encodings"]
    only = {r["kind"]: r["only"] for r in rows if r["only"]}
    assert only["amd_mfma"] == "gfx942" and only["nvmma_shared"] == "sm_90a"
    for flag in (["--view", "tensor"], ["--all"], ["--layout", "blocked"]):  # they were ignored in silence
        assert main(["layouts", "--compare", *flag, *(str(snaps[t].path) for t in TARGETS)]) == 2
        assert f"--compare puts the encodings side by side and takes no {flag[0]}" in capsys.readouterr().err


def test_compute_writes_layouts_for_a_snapshot_without_them(snaps, tmp_path, capsys):
    copy = tmp_path / "old"
    shutil.copytree(snaps["sm_90a"].path, copy)
    (copy / "layouts.json").unlink()
    assert main(["layouts", str(copy)]) == 0  # Triton is here: computed on the way
    assert (copy / "layouts.json").is_file()
    assert load_layouts(load_snapshot(copy)) == load_layouts(snaps["sm_90a"])


def test_damaged_layouts_json_is_refused(snaps, tmp_path, capsys):
    copy = tmp_path / "bad"
    shutil.copytree(snaps["sm_90a"].path, copy)
    data = json.loads((copy / "layouts.json").read_text())
    data["encodings"][0]["layouts"][0]["bases"]["register"][0] = [1 << 30, 0]
    (copy / "layouts.json").write_text(json.dumps(data))
    with pytest.raises(SnapshotError, match="does not fit shape"):
        load_layouts(load_snapshot(copy))
    assert main(["layouts", str(copy)]) == 4
    assert "irscope: error:" in capsys.readouterr().err


def test_triton_that_cannot_parse_the_module_gives_irscopes_own_conversion():
    from irscope.harness.layouts import layouts_of
    text = ("#blocked = #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [8, 1], "
            "order = [1, 0]}>\nmodule {\n  %0 = not.an.op : tensor<128x64xf16, #blocked>\n}\n")
    (ls,) = layouts_of([text])
    assert ls.computed_by == "irscope" and ls.note
    assert ls.find("blocked").at((128, 64)).layout.apply(warp=1, lane=15, register=15) == (37, 63)


ABORTING_TTGIR = """\
#blocked = #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>
#linear = #ttg.linear<{register = [[0, 1], [0, 2], [0, 4], [0, 128]], lane = [[0, 8], [0, 16], [0, 32], [1, 0], \
[2, 0]], warp = [[4, 0], [8, 0]], block = []}>
module attributes {"ttg.num-ctas" = 1 : i32, "ttg.num-warps" = 4 : i32, ttg.target = "cuda:90", \
"ttg.threads-per-warp" = 32 : i32} {
  tt.func public @k() attributes {noinline = false} {
    %0 = arith.constant dense<0.0> : tensor<16x64xf32, #blocked>
    %1 = arith.constant dense<0.0> : tensor<16x64xf32, #linear>
    tt.return
  }
}
"""


def test_a_module_that_aborts_triton_costs_only_tritons_bases():
    # A linear layout with a basis (128) past its tensor's 64 columns: Triton's parser aborts (LLVM ERROR:
    # Invalid basis), in the child; the caller gets irscope's own conversion and a note saying so.
    from irscope.harness.layouts import layouts_of
    (ls,) = layouts_of([ABORTING_TTGIR], timeout=60)
    assert ls.computed_by == "irscope" and "SIGABRT" in ls.note
    blocked = ls.find("blocked").at((16, 64))
    assert blocked.by == "irscope" and blocked.layout.apply(warp=1, lane=8, register=0) == (5, 0)
    assert ls.find("linear").at((16, 64)).status == "not-available"


def test_layouts_of_a_golden_or_a_triton_cache_entry_are_shown_but_never_written_into_it(tmp_path):
    """`irscope layouts` wrote layouts.json into a committed golden folder (and into Triton cache entries);
    its conversion's temporary .ttgir files stay in a folder it removes, even when a child aborts."""
    import io
    import os
    from pathlib import Path
    goldens = Path(__file__).resolve().parent.parent / "snapshots"
    root = tmp_path / "snapshots"
    shutil.copytree(goldens / "add" / "default" / "sm_80", root / "add" / "default" / "sm_80")
    shutil.copy(goldens / ".irscope-goldens", root / ".irscope-goldens")
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    old = os.environ.get("TMPDIR")
    os.environ["TMPDIR"] = str(scratch)
    try:
        import tempfile
        tempfile.tempdir = None  # read TMPDIR again
        out, err = io.StringIO(), io.StringIO()
        code = main(["layouts", str(root / "add" / "default" / "sm_80")], out=out, err=err)
    finally:
        if old is None:
            os.environ.pop("TMPDIR")
        else:
            os.environ["TMPDIR"] = old
        tempfile.tempdir = None
    assert code == 0 and "#blocked" in out.getvalue(), err.getvalue()
    assert not (root / "add" / "default" / "sm_80" / "layouts.json").exists()
    assert list(scratch.iterdir()) == []


PADDED_TTGIR = """\
#blocked = #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 8], warpsPerCTA = [8, 1], order = [1, 0]}>
#shared = #ttg.padded_shared<[512:+8] {offset = [[0, 1], [0, 2], [0, 4], [0, 8], [0, 16], [0, 32], [64, 0], [32, 0], \
[16, 0], [1, 0], [2, 0], [4, 0], [8, 0]], block = []}>
#smem = #ttg.shared_memory
module attributes {"ttg.num-ctas" = 1 : i32, "ttg.num-warps" = 8 : i32, ttg.target = "hip:gfx950", \
"ttg.threads-per-warp" = 64 : i32} {
  tt.func public @k() attributes {noinline = false} {
    %0 = arith.constant dense<0.0> : tensor<128x64xf16, #blocked>
    %a = ttg.local_alloc : () -> !ttg.memdesc<2x128x64xf16, #shared, #smem, mutable>
    %1 = arith.constant dense<0.0> : tensor<64x64xf16, #blocked>
    tt.return
  }
}
"""


def test_padded_shared_is_refused_before_triton_aborts_and_takes_the_offset_bases_triton_parses():
    """gfx950's matmul: to_linear_layout on a padded_shared encoding aborts ('padded shared encoding has no
    linear layout'), which cost every layout of the snapshot. Now it is refused before the call and its
    offset bases are the ones Triton's parser reads into Gluon's PaddedSharedLayout."""
    from irscope.harness import layouts as H
    (ls,) = H.layouts_of([PADDED_TTGIR])
    assert ls.computed_by.startswith("triton") and not ls.note
    assert all(sl.by == "triton" for sl in ls.find("blocked").layouts)
    shared = ls.find("shared").at((128, 64))
    assert shared.by == "irscope" and "padded_shared" in shared.note and "8 elements after every 512" in shared.note
    gl_layouts, _, _ = H._gluon_layouts(PADDED_TTGIR, {ls.find("shared").attr})  # parsing alone does not abort
    triton_bases = gl_layouts[ls.find("shared").attr].offset_bases
    assert [list(v) for v in shared.layout.bases["offset"]] == triton_bases


def test_an_unknown_abort_costs_only_the_layout_triton_died_on(monkeypatch):
    """A child that dies converting one layout is started again without it, and the note names it."""
    from irscope.harness import layouts as H
    monkeypatch.setattr(H, "_refuse", lambda u, shape: None)  # let padded_shared reach Triton, which aborts
    (ls,) = H.layouts_of([PADDED_TTGIR])
    assert "#shared at 128x64" in ls.note and "SIGABRT" in ls.note
    assert all(sl.by == "triton" for sl in ls.find("blocked").layouts)
    shared = ls.find("shared").at((128, 64))
    assert shared.by == "irscope" and "SIGABRT" in shared.note


def test_padding_moves_offsets_when_counting_bank_conflicts():
    from irscope.layouts.fallback import convert, padding_of
    attr = PADDED_TTGIR.splitlines()[1].split(" = ", 1)[1] + PADDED_TTGIR.splitlines()[2]
    shared = convert(attr, (128, 64))
    # A column of the tile, one row per lane: without padding every row's first element is in bank 0.
    column = LinearLayout.of({"register": [], "lane": [[1 << i, 0] for i in range(5)], "warp": [], "block": []}, (32, 64))
    assert bank_conflicts(column, shared, 16).conflicts > 0
    assert bank_conflicts(column, shared, 16, padding=padding_of(attr)).conflicts < \
        bank_conflicts(column, shared, 16).conflicts


def test_the_writer_records_no_layout_the_reader_would_refuse(tmp_path):
    """A tensor<1048576x1048576> wrote a 40-bit layout that every read refused, with a hint (--compute)
    that wrote it again. Writer and reader share one limit (2**20 positions)."""
    from types import SimpleNamespace
    from irscope.harness.layouts import layouts_of
    from irscope.store.layouts import read_layouts, write_layouts
    text = ABORTING_TTGIR.replace("%1 = arith.constant dense<0.0> : tensor<16x64xf32, #linear>",
                                  "%1 = arith.constant dense<0.0> : tensor<1048576x1048576xf32, #blocked>")
    (ls,) = layouts_of([text])
    big = ls.find("blocked").at((1048576, 1048576))
    assert big.layout is None and "more than irscope records" in big.note
    write_layouts(tmp_path, ls.to_json())
    assert read_layouts(SimpleNamespace(path=tmp_path))["encodings"]


def _layouts_file(tmp_path, change):
    from types import SimpleNamespace
    sl = {"shape": [64, 64], "status": "ok", "by": "triton",
          "bases": {"register": [[0, 1]], "lane": [[0, 2], [0, 4], [0, 8], [0, 16], [0, 32]],
                    "warp": [[1, 0], [2, 0]], "block": []}}
    data = {"format": 1, "encodings": [{"name": "#b", "attr": "#ttg.blocked<{}>", "kind": "blocked",
                                        "space": "distributed", "layouts": [sl]}]}
    change(data, sl)
    (tmp_path / "layouts.json").write_text(json.dumps(data))
    return SimpleNamespace(path=tmp_path)


@pytest.mark.parametrize("change, why", [
    (lambda d, sl: d.update(format=2), "format 2; this irscope reads format 1"),
    (lambda d, sl: sl.pop("bases"), '"ok" but has no bases'),
    (lambda d, sl: sl["bases"].pop("warp"), "not register, lane, warp, block"),
    (lambda d, sl: sl.update(shape=[48, 64]), "not a power of two"),
    (lambda d, sl: (sl.update(shape=[2048, 1024]),
                    sl["bases"].update(register=[[0, 1]] * 16)), "more than 2**20 elements"),
    (lambda d, sl: sl["bases"].update(register=[[0, 1]] * 14), "input bits (at most 20"),
])
def test_layouts_json_that_no_writer_makes_is_refused(tmp_path, change, why):
    from irscope.store.layouts import read_layouts
    with pytest.raises(SnapshotError, match=re.escape(why)):
        read_layouts(_layouts_file(tmp_path, change))


def test_layouts_json_as_a_directory_is_refused_by_reader_and_writer(tmp_path):
    from types import SimpleNamespace
    from irscope.store.layouts import read_layouts, write_layouts
    (tmp_path / "layouts.json").mkdir()
    with pytest.raises(SnapshotError, match="is a directory"):
        read_layouts(SimpleNamespace(path=tmp_path))
    with pytest.raises(SnapshotError, match="is a directory"):
        write_layouts(tmp_path, {"format": 1, "encodings": []})


@pytest.mark.parametrize("old, new, why", [
    ("threadsPerWarp = [4, 8]", "threadsPerWarp = [4, 4]", "multiplies to 16, not the warp size (32)"),
    ("order = [1, 0]", "order = [1, 1]", "order = [1, 1] is not a permutation"),
    ("warpsPerCTA = [4, 1]", "warpsPerCTA = [8, 1]", "multiplies to 8, not the module's warps (4)"),
])
def test_irscope_conversion_refuses_encodings_tritons_parser_rejects(old, new, why):
    """Where Triton's parser rejected the module, irscope's own conversion showed threadsPerWarp [4, 4] as
    'lane 16' and order [1, 1] as fine."""
    from irscope.harness.layouts import fallback_layouts
    ls = fallback_layouts(ABORTING_TTGIR.replace(old, new, 1), "Triton's parser rejected it")
    sl = ls.find("blocked").at((16, 64))
    assert sl.layout is None and why in sl.note and sl.note.startswith("Triton's parser rejected it; invalid encoding")
    assert fallback_layouts(ABORTING_TTGIR, "x").find("blocked").at((16, 64)).layout is not None


def test_large_views_stop_with_a_count_and_all_shows_them(snaps, capsys):
    """`--layout shared --shape 64x256` printed 16,475 lines."""
    path = str(snaps["sm_80"].path)
    assert main(["layouts", path, "--layout", "shared", "--shape", "64x256"]) == 0
    out = capsys.readouterr().out
    assert len(out.splitlines()) < 1300 and "… 15,785 more lines of the per-thread view (--all" in out
    assert main(["layouts", path, "--layout", "shared", "--shape", "64x256", "--view", "hardware", "--all"]) == 0
    out = capsys.readouterr().out
    assert "Offset: 16383 ->" in out and "more lines" not in out


def test_view_without_layout_is_a_usage_error(snaps, capsys):
    assert main(["layouts", str(snaps["sm_80"].path), "--view", "tensor"]) == 2
    assert "--view needs --layout" in capsys.readouterr().err


def test_compare_labels_tell_snapshots_of_one_target_apart():
    from types import SimpleNamespace
    from irscope.cli.layouts import compare_labels
    snap = lambda k, v, t: SimpleNamespace(kernel=k, variant=v, target_name=t, label=f"{k}/{v}/{t}", path=f"/{k}/{v}/{t}")
    assert compare_labels([snap("m", "a", "sm_80"), snap("m", "a", "sm_90a")]) == ["sm_80", "sm_90a"]
    assert compare_labels([snap("m", "a", "sm_80"), snap("m", "b", "sm_80"), snap("m", "a", "gfx942")]) == \
        ["a/sm_80", "b/sm_80", "a/gfx942"]
    assert compare_labels([snap("m", "a", "sm_80"), snap("n", "a", "sm_80")]) == ["m/sm_80", "n/sm_80"]
    assert compare_labels([snap("m", "a", "sm_80"), snap("n", "a", "sm_80"), snap("m", "b", "sm_80"),
                           snap("n", "b", "sm_80")]) == ["m/a/sm_80", "n/a/sm_80", "m/b/sm_80", "n/b/sm_80"]


def test_a_one_element_shared_buffer_is_laid_out_not_reported_unavailable(tmp_path):
    """An mbarrier's buffer (memdesc<1xi64>): Triton's conversion refuses it ("offset_bases must not be
    empty"), and every Gluon/TMA kernel's layouts listed it as not available."""
    from types import SimpleNamespace
    from irscope.harness.layouts import layouts_of
    from irscope.store.layouts import read_layouts, write_layouts
    from pathlib import Path
    snaps = Path(__file__).resolve().parent.parent / "snapshots"
    text = (snaps / "attention_ws" / "default" / "sm_90a" / "attention_ws_kernel.ttgir").read_text()
    assert "memdesc<1xi64" in text
    (ls,) = layouts_of([text], timeout=120)
    ones = [(e, sl) for e in ls.encodings for sl in e.layouts if sl.shape == (1,)]
    assert ones and all(sl.layout is not None and sl.layout.bases == {"offset": (), "block": ()} for _, sl in ones)
    assert all("mbarrier" in sl.note for _, sl in ones)
    write_layouts(tmp_path, ls.to_json())
    assert read_layouts(SimpleNamespace(path=tmp_path))["encodings"]


def test_the_overview_gives_an_unavailable_layouts_reason_once_below_the_table(snaps, tmp_path, capsys):
    # The reason sat in the "per layout" column: one long reason made every row of the table that wide
    # (about 250 columns on gfx942). It is now a numbered note under the table, each reason once.
    copy = tmp_path / "snap"
    shutil.copytree(snaps["sm_80"].path, copy)
    data = json.loads((copy / "layouts.json").read_text())
    reason = "Triton gives nothing for it: " + "a long reason " * 12
    for enc in data["encodings"][:2]:
        enc["layouts"] = [{"shape": sl["shape"], "status": "not-available", "note": reason} for sl in enc["layouts"]]
    (copy / "layouts.json").write_text(json.dumps(data))
    assert main(["layouts", str(copy), "--color", "never"]) == 0
    out = capsys.readouterr().out
    rows = [ln for ln in out.splitlines() if "not available [1]" in ln]
    assert len(rows) >= 2 and all(reason.strip() not in ln for ln in rows)
    assert max(len(ln) for ln in out.splitlines() if re.match(r"\s*\d+\s+#", ln)) < 120
    assert [ln.strip() for ln in out.splitlines() if ln.strip().startswith("[")] == [f"[1] {reason.strip()}"]
