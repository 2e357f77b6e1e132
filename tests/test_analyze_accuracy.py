"""The analyzers' numbers against independent readings of the same compile: the PTX itself read line by
line, and the CUDA occupancy calculator's rules (cuda_occupancy.h) worked by hand. Each test names the
number it protects; a counter that drifts from what the stage says fails here."""
import dataclasses
import json
import re
import textwrap
from pathlib import Path

import pytest

from irscope.analyze import analyze, count_ops
from irscope.analyze.limits import launch, occupancy
from irscope.analyze.vectors import access_groups
from irscope.ir.resources import Resources
from irscope.targets import get_target

KERNELS = textwrap.dedent('''
    """Kernels whose instructions the built-in kernels never reach."""
    import triton
    import triton.language as tl

    from irscope.spec import Config, KernelSpec, Tensor


    @triton.jit
    def volatile_copy(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        x = tl.load(x_ptr + offs, mask=m, volatile=True)
        tl.store(y_ptr + offs, x * 2, mask=m)


    @triton.jit
    def fp8_dot(a_ptr, b_ptr, c_ptr, K, BLOCK: tl.constexpr):
        r = tl.arange(0, BLOCK)
        acc = tl.zeros((BLOCK, BLOCK), dtype=tl.float32)
        for k in range(0, K, BLOCK):
            a = tl.load(a_ptr + r[:, None] * K + (k + r)[None, :])
            b = tl.load(b_ptr + (k + r)[:, None] * BLOCK + r[None, :])
            acc = tl.dot(a, b, acc)
        tl.store(c_ptr + r[:, None] * BLOCK + r[None, :], acc)


    FP8_DOT = KernelSpec(
        name="fp8_dot", fn=fp8_dot,
        args={"a_ptr": Tensor("fp8e4nv"), "b_ptr": Tensor("fp8e4nv"), "c_ptr": Tensor("fp32"), "K": 1024},
        configs=(Config("default", {"BLOCK": 64}, num_warps=4, num_stages=2),),
    )


    @triton.jit
    def int8_dot(a_ptr, b_ptr, c_ptr, BLOCK: tl.constexpr):
        r = tl.arange(0, BLOCK)
        a = tl.load(a_ptr + r[:, None] * BLOCK + r[None, :])
        b = tl.load(b_ptr + r[:, None] * BLOCK + r[None, :])
        tl.store(c_ptr + r[:, None] * BLOCK + r[None, :], tl.dot(a, b, out_dtype=tl.int32))


    INT8_DOT = KernelSpec(
        name="int8_dot", fn=int8_dot, args={"a_ptr": Tensor("i8"), "b_ptr": Tensor("i8"), "c_ptr": Tensor("i32")},
        configs=(Config("default", {"BLOCK": 8}, num_warps=1),),  # too small for MFMA: packed dot products
    )


    @triton.jit
    def two_loads(x_ptr, y_ptr, o_ptr, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(o_ptr + offs, tl.load(x_ptr + offs) + tl.load(y_ptr + offs))


    TWO_LOADS = KernelSpec(
        name="two_loads", fn=two_loads, args={"x_ptr": Tensor("fp16"), "y_ptr": Tensor("fp16"), "o_ptr": Tensor("fp16")},
        configs=(Config("default", {"BLOCK": 1024}, num_warps=4),),
    )


    VOLATILE_COPY = KernelSpec(
        name="volatile_copy", fn=volatile_copy,
        args={"x_ptr": Tensor("fp32"), "y_ptr": Tensor("fp32"), "n": 4096},
        configs=(Config("default", {"BLOCK": 1024}, num_warps=4),),
    )
''')


@pytest.fixture(scope="module")
def kernels(tmp_path_factory):
    path = tmp_path_factory.mktemp("accuracy") / "accuracy_kernels.py"
    path.write_text(KERNELS)
    return path


def _ptx_lines(text: str, pattern: str) -> int:
    """Instructions of the PTX that match `pattern` (after an optional predicate), comments dropped."""
    lines = (re.sub(r"//.*", "", ln) for ln in text.splitlines())
    return sum(1 for ln in lines if re.match(r"\s*(?:@!?%?\w+\s+)?" + pattern, ln))


def test_volatile_global_loads_count_as_global_loads_not_generic(compile_cache, kernels):
    snap = compile_cache(f"{kernels}:volatile_copy", "sm_90a")
    ptx = snap.read("ptx")
    volatile = _ptx_lines(ptx, r"ld\.volatile\.global\.v4\.b32")
    assert volatile > 0  # what tl.load(..., volatile=True) becomes
    c = analyze(snap, cache=False).counters
    assert c["ptx.ld.global"] == _ptx_lines(ptx, r"ld(?:\.\w+)*\.global") == volatile
    assert c["ptx.ld.global.16B"] == volatile
    assert "ptx.ld.generic" not in c
    loads = [g for g in access_groups(snap.read("ttgir"), ptx, "ptx") if g.kind == "load"]
    assert [(g.via, g.width, g.arguments) for g in loads] == [("ld.global", 16, ("x_ptr",))]


@pytest.mark.parametrize("target, stage", [("sm_90a", "ptx"), ("gfx942", "amdgcn")])
def test_two_loads_on_one_line_are_two_groups_each_with_its_own_width(compile_cache, kernels, target, stage):
    """`tl.load(x) + tl.load(y)` with x only 2-byte aligned: one group named after x held y's 16 B (8 B on AMD)
    loads as its widest, so explain passed x's 2-byte loads. The column tells the two apart."""
    snap = compile_cache(f"{kernels}:two_loads", target, divisibility=(("x_ptr", 1),))
    loads = {g.arguments: g for g in access_groups(snap.read("ttgir"), snap.read(stage), stage) if g.kind == "load"}
    assert set(loads) == {("x_ptr",), ("y_ptr",)}
    x, y = loads[("x_ptr",)], loads[("y_ptr",)]
    assert x.line == y.line and x.column < y.column
    assert x.width == 2 and y.width == (16 if stage == "ptx" else 8)
    assert x.subject != y.subject and f"line {x.line}:{x.column}" in x.subject
    [store] = [g for g in access_groups(snap.read("ttgir"), snap.read(stage), stage) if g.kind == "store"]
    assert store.column == 0 and store.subject.endswith(f"line {store.line}")  # alone on its line


def test_state_space_after_memory_order_qualifiers_and_generic_widths():
    c = count_ops("ptx", "\n\tld.relaxed.gpu.global.b32 %r1, [%rd1];\n\tst.release.gpu.global.b32 [%rd1], %r1;\n"
                         "\tld.v2.b64 {%rd1, %rd2}, [%rd3];\n\tld.param.b64 %rd1, [k_param_0];\n")
    assert (c["ptx.ld.global.4B"], c["ptx.st.global.4B"], c["ptx.ld.generic.16B"]) == (1, 1, 1)
    assert "ptx.ld.param" not in c and c["ptx.instructions"] == 4


# -- occupancy: the CUDA occupancy calculator's arithmetic (cuda_occupancy.h), worked by hand ------------------

def test_registers_bound_warps_per_sub_partition_not_per_sm():
    """200 registers x 32 lanes = 6,400 per warp; a sub-partition's 16,384 hold 2 such warps, the SM's four
    hold 8: 4 blocks of 2 warps (not 65,536 // 6,400 = 10 warps, 5 blocks)."""
    occ = occupancy(Resources(num_warps=2, registers=200), get_target("sm_90a"))
    assert occ.limits["registers"] == 4 and occ.value == 4 and occ.warps == 8 and occ.limiter == "registers"
    # With a multiple of 4 warps per block both readings agree: 168 registers, 4 warps -> 12 warps, 3 blocks.
    assert occupancy(Resources(num_warps=4, registers=168), get_target("sm_80")).limits["registers"] == 3


def test_shared_memory_is_allocated_in_128_byte_units_plus_the_reserved_kilobyte():
    """45,600 B + 1,024 reserved = 46,624 B, allocated as 46,720: 233,472 B of an H100 SM hold 4 blocks, not 5."""
    occ = occupancy(Resources(num_warps=4, registers=32, shared=45600), get_target("sm_90a"))
    assert occ.limits["shared memory"] == 4 and occ.value == 4 and occ.limiter == "shared memory"
    assert occupancy(Resources(num_warps=4, shared=147456), get_target("sm_90a")).limits["shared memory"] == 1
    assert launch(Resources(num_warps=4, shared=227 * 1024), get_target("sm_90a")).launchable


DRIVER = Path(__file__).resolve().parent.parent / "docs" / "gpu-runs" / "2026-12-05-occupancy-h200.json"


def test_occupancy_and_launchability_are_what_the_h200s_driver_answered():
    """benchmarks/gpu_occupancy.py asked the H200's CUDA driver (cuOccupancyMaxActiveBlocksPerMultiprocessor,
    cuFuncSetAttribute, cuFuncGetAttribute) about 376 cubins of the rank spaces, and about one cubin at
    every dynamic shared size in 32-byte steps. irscope's rules, recomputed here, must still give its answers."""
    doc = json.loads(DRIVER.read_text())
    target = get_target(doc["target"])
    assert doc["device"]["reserved_shared_per_block"] == 1024 and doc["device"]["sms"] == 132
    assert (target.shared_per_block, target.shared_per_sm) == (doc["device"]["max_shared_per_block_optin"],
                                                               doc["device"]["shared_per_sm"])
    assert target.regs_per_sm == doc["device"]["registers_per_sm"]
    assert target.max_warps_per_sm * target.warp_size == doc["device"]["max_threads_per_sm"]
    assert len(doc["rows"]) == 376
    for row in doc["rows"]:
        res = Resources(num_warps=row["warps"], registers=row["irscope"]["registers"], shared=row["shared"])
        assert row["irscope"]["registers"] == row["driver"]["registers"], row["config"]
        assert occupancy(res, target).value == row["driver"]["blocks_per_sm"], row["config"]
        assert launch(res, target).launchable == row["driver"]["accepts_shared"], row["config"]
        assert (row["irscope"]["stack"] or 0) + (row["irscope"]["local"] or 0) == row["driver"]["local"]
    assert {r["driver"]["blocks_per_sm"] for r in doc["rows"]} >= {0, 1, 2, 3}  # shared memory and registers bind
    sweep = doc["rule_sweep"]
    steps = sweep["driver_steps"]
    res = Resources(num_warps=sweep["warps"], registers=sweep["registers"])
    checked = 0
    for i, (start, blocks) in enumerate(steps):
        end = steps[i + 1][0] if i + 1 < len(steps) else sweep["last"] + sweep["step"]
        for shared in range(start, end, sweep["step"]):
            assert occupancy(dataclasses.replace(res, shared=shared), target).value == blocks, shared
            checked += 1
    assert checked == sweep["points"] == 7265 and [b for _, b in steps] == list(range(32, 0, -1))


def test_blackwell_consumer_fp8_mma_is_counted_by_shape(compile_cache, kernels):
    snap = compile_cache(f"{kernels}:fp8_dot", "sm_120a")
    sass = snap.read("sass")
    qmma = len(re.findall(r"\bQMMA\.16832\.", sass))
    assert qmma > 0  # sm_120's fp8 tensor-core instruction
    c = analyze(snap, cache=False).counters
    assert c["sass.QMMA"] == c["sass.QMMA.16832"] == qmma
    assert c["ptx.mma.sync"] == c["ptx.mma.sync.m16n8k32"] == _ptx_lines(snap.read("ptx"), r"mma\.sync\.\S*m16n8k32")


def test_amd_dot_product_instructions_are_counted(compile_cache, kernels):
    snap = compile_cache(f"{kernels}:int8_dot", "gfx942")
    dots = len(re.findall(r"^\s+v_dot\d", snap.read("amdgcn"), re.M))
    assert dots > 0  # v_dot4c_i32_i8
    assert analyze(snap, cache=False).counters["amdgcn.v_dot"] == dots


def test_cp_async_sizes_come_from_instructions_not_comments():
    text = ("\n\t// cp.async.cg.shared.global [ %r1 + 0 ], [ %rd1 + 0 ], 0x10, 0x10;\n"
            "\t@%p1 cp.async.ca.shared.global [ %r2 + 0 ], [ %rd2 + 0 ], 0x4, 0x4;\n")
    c = count_ops("ptx", text)
    assert c["ptx.cp.async"] == c["ptx.cp.async.4B"] == 1 and "ptx.cp.async.16B" not in c
