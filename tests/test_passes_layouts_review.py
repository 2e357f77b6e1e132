"""Regressions found reviewing `irscope passes` and `irscope layouts` (2026-12-04): each test failed
before its fix. Layout numbers are checked against Triton's own functions, run in a child process
(several of Triton's layout bindings abort the interpreter on input they do not expect)."""
import json
import subprocess
import sys
import textwrap

import pytest

from irscope.layouts import fallback
from irscope.layouts.cost import bank_conflicts


def _blocked(spt, tpw, wpc, order=(1, 0)):
    return (f"#ttg.blocked<{{sizePerThread = {list(spt)}, threadsPerWarp = {list(tpw)}, warpsPerCTA = {list(wpc)}, "
            f"order = {list(order)}}}>")


def _swizzled(vec, per_phase, max_phase, order=(1, 0)):
    return f"#ttg.swizzled_shared<{{vec = {vec}, perPhase = {per_phase}, maxPhase = {max_phase}, order = {list(order)}}}>"


# (blocked, swizzled, shape, element bits): pairs where irscope's count differed from Triton's, because it
# took the vector width from lane 0 alone (a swizzle that moves offsets within a vector for other lanes
# allows no such vector) and never reordered registers into a vector as Triton does.
CASES = [
    (((1, 1), (32, 1), (4, 1)), (1, 1, 8), (64, 64), 16),
    (((1, 8), (4, 8), (4, 1)), (4, 2, 4), (64, 64), 16),
    (((4, 4), (8, 4), (2, 2)), (1, 1, 8), (64, 64), 32),
    (((4, 4), (8, 4), (2, 2)), (1, 1, 8), (32, 128), 16),
    (((1, 1), (32, 1), (4, 1)), (8, 1, 8), (64, 32), 8),
    (((1, 8), (4, 8), (4, 1)), (1, 1, 8), (32, 128), 8),
]

_TRITON = textwrap.dedent("""
    import json, sys
    from triton._C.libtriton import gluon_ir, ir
    import triton.experimental.gluon.language as gl
    ctx = ir.context(); ir.load_dialects(ctx)
    b = gluon_ir.GluonOpBuilder(ctx)
    m = b.create_module()  # the count needs a module with a target, as a Gluon kernel has
    m.set_attr("ttg.target", b.get_string_attr("cuda:90"))
    m.set_attr("ttg.num-warps", b.get_int32_attr(4))
    m.set_attr("ttg.num-ctas", b.get_int32_attr(1))
    m.set_attr("ttg.threads-per-warp", b.get_int32_attr(32))
    fn = b.get_or_insert_function(m, "f", b.get_function_ty([], []), "public", False)
    m.push_back(fn)
    b.set_insertion_point_to_start(fn.add_entry_block())
    out = []
    for (spt, tpw, wpc), (vec, pp, mp), shape, bits in json.load(sys.stdin):
        d = gl.BlockedLayout(spt, tpw, wpc, [1, 0])
        s = gl.SwizzledSharedLayout(vec, pp, mp, [1, 0])
        out.append(b.get_shared_bank_conflicts(d._to_ir(b), s._to_ir(b), shape, bits))
    print(json.dumps(out))
""")


def test_bank_conflicts_are_tritons_count_where_a_swizzle_breaks_lane_0s_vector():
    pytest.importorskip("triton.experimental.gluon.language")
    run = subprocess.run([sys.executable, "-c", _TRITON], input=json.dumps(CASES), capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    expected = json.loads(run.stdout.strip().splitlines()[-1])
    ours = []
    for (spt, tpw, wpc), (vec, pp, mp), shape, bits in CASES:
        dist = fallback.blocked(_blocked(spt, tpw, wpc), shape)
        shared = fallback.swizzled(_swizzled(vec, pp, mp), shape)
        ours.append(bank_conflicts(dist, shared, bits).conflicts)
    assert ours == expected


def test_a_swizzle_within_the_vector_leaves_one_element_vectors():
    # Lane i holds row i; vec=1 swizzling XORs the row into the lowest column bits, so lane 1's registers
    # 0 and 1 sit at offsets 65 and 64: no 2-element vector, although lane 0's are at 0, 1, 2, ...
    dist = fallback.blocked(_blocked((1, 1), (32, 1), (4, 1)), (64, 64))
    shared = fallback.swizzled(_swizzled(1, 1, 8), (64, 64))
    bc = bank_conflicts(dist, shared, 16)
    assert bc.vector_elems == 1 and bc.lanes_per_wavefront == 32
    # By hand, Triton's rule: a 128-byte bank row is 64 f16; the lanes' offsets are 64*i + (i % 8) and
    # they differ within one row of banks for the lanes 1, 2, 4 only: rows 8 and 16 conflict, 2**2 - 1.
    assert bc.conflicts == 3


def test_a_shape_triton_would_abort_on_is_explained_once():
    pytest.importorskip("triton._C.libtriton")
    from irscope.harness.layouts import compute_layouts
    ttgir = ('#b = #ttg.blocked<{sizePerThread = [1, 1], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>\n'
             'module attributes {"ttg.num-ctas" = 1 : i32, "ttg.num-warps" = 4 : i32, ttg.target = "cuda:80", '
             '"ttg.threads-per-warp" = 32 : i32} {\n  tt.func public @k() {\n'
             '    %c = arith.constant dense<0.0> : tensor<3x5xf32, #b>\n    tt.return\n  }\n}\n')
    sl = compute_layouts(ttgir).encodings[0].layouts[0]
    assert sl.layout is None and sl.note.count("not a power of two") == 1, sl.note
