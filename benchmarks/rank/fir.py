"""A held-out kernel for model 17 (docs/rank.md, "Model 17"): a 25-tap FIR filter along the rows of a batch of
fp16 signals, written and ranked before any of its configs ran on a GPU.

Each program owns a BLOCK_R x BLOCK_N tile of the output and sums 25 shifted reads of its rows, one a tap, in
a loop whose bound is a constant (`for k in range(0, 2 * RADIUS + 1)`): a stencil like the fused blur, which
model 17 was designed on, but along one dim, in fp16 (two-byte elements: twice the lanes to a sector), with
its taps' weights in fp32 and a tile that is a few rows of a long signal. It is not one of irscope's built-in
kernels: `irscope rank benchmarks/rank/fir.yaml` loads it from this file, as a user's kernel is loaded.
"""
import triton
import triton.language as tl

from irscope.spec import Config, KernelSpec, Tensor
from irscope.workload import Workload, cdiv, empty, rand

RADIUS = 12  # 25 taps


@triton.jit
def fir_kernel(x_ptr, w_ptr, y_ptr, n, RADIUS: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(1) * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_R, BLOCK_N), dtype=tl.float32)
    for k in range(0, 2 * RADIUS + 1):
        at = cols + (k - RADIUS)
        inside = (at >= 0) & (at < n)
        v = tl.load(x_ptr + rows[:, None] * n + at[None, :], mask=inside[None, :], other=0.0)
        acc += tl.load(w_ptr + k) * v.to(tl.float32)
    tl.store(y_ptr + rows[:, None] * n + cols[None, :], acc.to(tl.float16), mask=(cols < n)[None, :])


def _weights(device):
    import torch
    t = torch.arange(-RADIUS, RADIUS + 1, dtype=torch.float64)
    w = torch.sinc(t / 4) * torch.hann_window(2 * RADIUS + 1, periodic=False, dtype=torch.float64)  # a low-pass
    return (w / w.sum()).to(device=device, dtype=torch.float32)


SIZES = {"small": {"rows": 4, "n": 1000}, "bench": {"rows": 1024, "n": 16384}, "short": {"rows": 64, "n": 32768}}


def _build(size, gen, device):
    r, n = size["rows"], size["n"]
    return {"x": rand(gen, (r, n), "fp16", device), "w": _weights(device), "y": empty((r, n), "fp16", device)}


def _launch(x, size, p):
    r, n = size["rows"], size["n"]
    return [p.call((cdiv(n, p["BLOCK_N"]), cdiv(r, p["BLOCK_R"])), x["x"], x["w"], x["y"], n)]


def _reference(x, size):
    import torch.nn.functional as F
    sig = x["x"].double()[:, None, :]
    return {"y": F.conv1d(sig, x["w"].double().view(1, 1, -1), padding=RADIUS)[:, 0, :]}


TAPS = 2 * RADIUS + 1
WORKLOAD = Workload(sizes=SIZES, build=_build, outputs=("y",), launch=_launch, reference=_reference,
                    flops=lambda s: 2 * s["rows"] * s["n"] * TAPS, bytes=lambda s: s["rows"] * s["n"] * (2 + 2))

SPECS = [KernelSpec(name="fir", fn=fir_kernel,
                    description="25-tap FIR filter along fp16 rows: a BLOCK_R x BLOCK_N tile, one shifted read a tap",
                    args={"x_ptr": Tensor("fp16"), "w_ptr": Tensor("fp32"), "y_ptr": Tensor("fp16"), "n": 16384},
                    constexprs={"RADIUS": RADIUS},
                    configs=(Config("default", {"BLOCK_R": 4, "BLOCK_N": 256}, num_warps=4),),
                    workload=WORKLOAD)]
