"""Kernels that are wrong on purpose, each with a correct workload: `irscope run` must fail them."""
import triton
import triton.language as tl

from irscope.spec import Config, KernelSpec, Tensor
from irscope.workload import Workload, cdiv, empty, randn


@triton.jit
def add_off_by_one(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # Wrong: reads y one element late, so every sum is off.
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    y = tl.load(y_ptr + offs + 1, mask=offs + 1 < n, other=0.0)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + y, mask=mask)


@triton.jit
def add_no_tail(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # Right arithmetic, but the launch below leaves the last partial block unwritten.
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


def _build(size, gen, device):
    n = size["n"]
    return {"x": randn(gen, (n,), "fp32", device), "y": randn(gen, (n,), "fp32", device),
            "out": empty((n,), "fp32", device)}


def _launch(x, size, p):
    return [p.call((cdiv(size["n"], p["BLOCK"]),), x["x"], x["y"], x["out"], size["n"])]


def _launch_floor(x, size, p):
    return [p.call((size["n"] // p["BLOCK"],), x["x"], x["y"], x["out"], size["n"])]  # wrong: floor, not cdiv


def _reference(x, size):
    return {"out": x["x"] + x["y"]}


_SIZES = {"small": {"n": 256}, "ragged": {"n": 300}}
_ARGS = {"x_ptr": Tensor("fp32"), "y_ptr": Tensor("fp32"), "out_ptr": Tensor("fp32"), "n": 4096}

OFF_BY_ONE = KernelSpec(name="add_off_by_one", fn=add_off_by_one, args=_ARGS,
                        configs=(Config("default", {"BLOCK": 128}, num_warps=4),),
                        workload=Workload(sizes=_SIZES, build=_build, outputs=("out",), launch=_launch,
                                          reference=_reference))
NO_TAIL = KernelSpec(name="add_no_tail", fn=add_no_tail, args=_ARGS,
                     configs=(Config("default", {"BLOCK": 128}, num_warps=4),),
                     workload=Workload(sizes=_SIZES, build=_build, outputs=("out",), launch=_launch_floor,
                                       reference=_reference))
