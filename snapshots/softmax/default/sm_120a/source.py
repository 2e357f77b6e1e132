"""Fused row softmax: each row is read once, reduced on chip (max, exp, sum) and written once.

Two schedules of the same computation: one program per row (the grid is the number of rows), and a
persistent grid (a few programs per SM, each striding over rows, the loop software-pipelined).
Input rows may be fp32, fp16 or bf16; the arithmetic is fp32 and the output has the input's dtype.
"""
import triton
import triton.language as tl

from irscope.spec import Config, KernelSpec, Tensor
from irscope.workload import Workload, empty, next_power_of_2, randn, sm_count


@triton.jit
def softmax_kernel(out_ptr, in_ptr, in_row_stride, out_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(in_ptr + row * in_row_stride + cols, mask=mask, other=-float("inf")).to(tl.float32)
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    y = num / tl.sum(num, axis=0)
    tl.store(out_ptr + row * out_row_stride + cols, y.to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def softmax_persistent_kernel(out_ptr, in_ptr, in_row_stride, out_row_stride, n_rows, n_cols,
                              BLOCK_SIZE: tl.constexpr, NUM_STAGES: tl.constexpr):
    # Fewer programs than rows: each walks rows pid, pid + P, pid + 2P, ... and the loads of the
    # next row are issued while this one is reduced (NUM_STAGES deep).
    first = tl.program_id(0)
    step = tl.num_programs(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    for row in tl.range(first, n_rows, step, num_stages=NUM_STAGES):
        row64 = tl.cast(row, tl.int64)  # (the interpreter hands the loop a Python int)
        x = tl.load(in_ptr + row64 * in_row_stride + cols, mask=mask, other=-float("inf")).to(tl.float32)
        x = x - tl.max(x, axis=0)
        num = tl.exp(x)
        y = num / tl.sum(num, axis=0)
        tl.store(out_ptr + row64 * out_row_stride + cols, y.to(out_ptr.dtype.element_ty), mask=mask)


# Programs per SM of the persistent grid: enough to hide latency, few enough to stay resident.
PROGRAMS_PER_SM = 4


def _build(dtype):
    def build(size, gen, device):
        rows, cols = size["rows"], size["cols"]
        return {"x": randn(gen, (rows, cols), dtype, device, scale=4.0), "y": empty((rows, cols), dtype, device)}
    return build


def _launch_rows(x, size, p):
    rows, cols = size["rows"], size["cols"]
    return [p.call((rows,), x["y"], x["x"], x["x"].stride(0), x["y"].stride(0), cols,
                   BLOCK_SIZE=next_power_of_2(cols))]


def _launch_persistent(x, size, p):
    rows, cols = size["rows"], size["cols"]
    programs = min(rows, sm_count(x["x"].device) * PROGRAMS_PER_SM)
    return [p.call((programs,), x["y"], x["x"], x["x"].stride(0), x["y"].stride(0), rows, cols,
                   BLOCK_SIZE=next_power_of_2(cols))]


def _reference(x, size):
    import torch
    return {"y": torch.softmax(x["x"].float(), dim=1)}


def _torch_softmax(x, size):
    import torch
    return lambda: torch.softmax(x["x"], dim=1)


def _workload(dtype, launch, note=""):
    item = {"fp32": 4, "fp16": 2, "bf16": 2}[dtype]
    return Workload(
        # small: 16 rows of 256; ragged: row length and count that fit no block or program count.
        sizes={"small": {"rows": 16, "cols": 256}, "ragged": {"rows": 13, "cols": 781},
               "bench": {"rows": 8192, "cols": 8192}, "wide": {"rows": 4096, "cols": 32768}},
        build=_build(dtype),
        outputs=("y",),
        launch=launch,
        reference=_reference,
        flops=lambda s: 4 * s["rows"] * s["cols"],  # max, subtract, exp, sum (plus a divide) per element
        bytes=lambda s: 2 * item * s["rows"] * s["cols"],
        baselines={"torch softmax": _torch_softmax},
        note=note,
    )


def _args(dtype, persistent=False):
    args = {"out_ptr": Tensor(dtype), "in_ptr": Tensor(dtype), "in_row_stride": 8192, "out_row_stride": 8192}
    if persistent:
        args["n_rows"] = 8192
    args["n_cols"] = 8192
    return args


# One program per row holds the whole row in registers: 8192 fp32 over 8 warps is 32 per thread.
ROW_CONFIGS = (
    Config("default", num_warps=8, note="the tutorial's choice for long rows"),
    Config("w4", num_warps=4, note="fewer threads, more registers per thread"),
    Config("w16", num_warps=16, note="more threads per row: fewer registers per thread"),
)
HALF_CONFIGS = ROW_CONFIGS[:2]  # 16-bit rows are half the bytes: the 16-warp point adds nothing new

SPECS = [
    KernelSpec(name="softmax", fn=softmax_kernel, description="fused row softmax, fp32, one program per row",
               args=_args("fp32"), constexprs={"BLOCK_SIZE": 8192}, configs=ROW_CONFIGS,
               workload=_workload("fp32", _launch_rows)),
    KernelSpec(name="softmax.fp16", fn=softmax_kernel,
               description="fused row softmax, fp16 in and out, fp32 arithmetic, one program per row",
               args=_args("fp16"), constexprs={"BLOCK_SIZE": 8192}, configs=HALF_CONFIGS,
               workload=_workload("fp16", _launch_rows)),
    KernelSpec(name="softmax.bf16", fn=softmax_kernel,
               description="fused row softmax, bf16 in and out, fp32 arithmetic, one program per row",
               args=_args("bf16"), constexprs={"BLOCK_SIZE": 8192}, configs=HALF_CONFIGS,
               workload=_workload("bf16", _launch_rows)),
    KernelSpec(name="softmax.persistent", fn=softmax_persistent_kernel,
               description="fused row softmax, fp32, persistent grid (programs stride over rows)",
               args=_args("fp32", persistent=True), constexprs={"BLOCK_SIZE": 8192, "NUM_STAGES": 2},
               configs=(
                   Config("default", num_warps=8, note="two rows in flight per program"),
                   Config("s1", {"NUM_STAGES": 1}, num_warps=8, note="no pipelining: a row at a time"),
               ),
               workload=_workload("fp32", _launch_persistent)),
]
