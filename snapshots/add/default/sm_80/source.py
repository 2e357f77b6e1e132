"""Vector add: `c = a + b`, the kernel the talk takes "four ways down to the metal"."""
import triton
import triton.language as tl

from irscope.spec import Config, KernelSpec, Tensor
from irscope.workload import Workload, cdiv, empty, randn


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


def _build(size, gen, device):
    n = size["n"]
    return {"x": randn(gen, (n,), "fp32", device), "y": randn(gen, (n,), "fp32", device),
            "out": empty((n,), "fp32", device)}


def _launch(x, size, p):
    n = size["n"]
    return [p.call((cdiv(n, p["BLOCK_SIZE"]),), x["x"], x["y"], x["out"], n)]


def _reference(x, size):
    return {"out": x["x"] + x["y"]}


def _torch_add(x, size):
    import torch
    return lambda: torch.add(x["x"], x["y"], out=x["out"])


WORKLOAD = Workload(
    sizes={"small": {"n": 8192}, "ragged": {"n": 5001}, "bench": {"n": 1 << 27}},
    build=_build,
    outputs=("out",),
    launch=_launch,
    reference=_reference,
    flops=lambda s: s["n"],
    bytes=lambda s: 3 * 4 * s["n"],
    baselines={"torch add": _torch_add},
)

SPEC = KernelSpec(
    name="add",
    fn=add_kernel,
    description="element-wise c = a + b over fp32 vectors",
    args={"x_ptr": Tensor("fp32"), "y_ptr": Tensor("fp32"), "out_ptr": Tensor("fp32"), "n_elements": 1 << 24},
    configs=(
        Config("default", {"BLOCK_SIZE": 1024}, num_warps=4, note="the tutorial's block: 8 fp32 per thread"),
        Config("b4096", {"BLOCK_SIZE": 4096}, num_warps=8, note="bigger blocks, more bytes in flight per program"),
    ),
    workload=WORKLOAD,
)
