"""A held-out kernel for model 18 (docs/rank.md, "Model 18"): a causal depthwise conv1d with SiLU over bf16
activations laid out (batch, length, channels), written and ranked before any of its configs ran on a GPU.

It is the short convolution of Mamba-style blocks (the `causal_conv1d` op: a 4-tap filter per channel along the
sequence, a bias, then SiLU). Each program owns a BLOCK_L x BLOCK_C tile of the output and sums WIDTH shifted
reads of its rows, one a tap, in a loop whose bound is a constant, as the FIR and the blur do. Unlike them, the
taps shift along the slow dim (rows of channels), so the loads stay aligned and can be vectors of 8 bf16; the
weights are (channels, WIDTH), read strided; and the result goes through an exponential (SiLU). It is not one of
irscope's built-in kernels: `irscope rank benchmarks/rank/conv1d.yaml` loads it from this file, as a user's
kernel is loaded.
"""
import triton
import triton.language as tl

from irscope.spec import Config, KernelSpec, Tensor
from irscope.workload import Workload, cdiv, empty, randn

WIDTH = 4  # the taps of the short convolution


@triton.jit
def conv1d_kernel(x_ptr, w_ptr, b_ptr, y_ptr, L, C, WIDTH: tl.constexpr, BLOCK_L: tl.constexpr,
                  BLOCK_C: tl.constexpr):
    batch = tl.program_id(2)
    ls = tl.program_id(1) * BLOCK_L + tl.arange(0, BLOCK_L)
    cs = tl.program_id(0) * BLOCK_C + tl.arange(0, BLOCK_C)
    inside = cs < C
    x = x_ptr + batch * L * C
    bias = tl.load(b_ptr + cs, mask=inside, other=0.0).to(tl.float32)
    acc = tl.zeros((BLOCK_L, BLOCK_C), dtype=tl.float32) + bias[None, :]
    for k in range(0, WIDTH):
        at = ls - (WIDTH - 1) + k  # causal: this row and the WIDTH - 1 before it
        ok = (at >= 0) & (at < L)
        v = tl.load(x + at[:, None] * C + cs[None, :], mask=ok[:, None] & inside[None, :], other=0.0)
        w = tl.load(w_ptr + cs * WIDTH + k, mask=inside, other=0.0)
        acc += v.to(tl.float32) * w.to(tl.float32)[None, :]
    y = acc * tl.sigmoid(acc)
    tl.store(y_ptr + batch * L * C + ls[:, None] * C + cs[None, :], y.to(tl.bfloat16),
             mask=(ls < L)[:, None] & inside[None, :])


SIZES = {"small": {"batch": 2, "L": 40, "C": 48}, "bench": {"batch": 4, "L": 4096, "C": 2048},
         "short": {"batch": 2, "L": 2048, "C": 1536}}


def _build(size, gen, device):
    b, n, c = size["batch"], size["L"], size["C"]
    return {"x": randn(gen, (b, n, c), "bf16", device), "w": randn(gen, (c, WIDTH), "bf16", device, scale=0.5),
            "b": randn(gen, (c,), "bf16", device, scale=0.1), "y": empty((b, n, c), "bf16", device)}


def _launch(x, size, p):
    b, n, c = size["batch"], size["L"], size["C"]
    return [p.call((cdiv(c, p["BLOCK_C"]), cdiv(n, p["BLOCK_L"]), b), x["x"], x["w"], x["b"], x["y"], n, c)]


def _reference(x, size):
    import torch.nn.functional as F
    c = size["C"]
    sig = x["x"].double().transpose(1, 2)  # (batch, channels, length)
    out = F.conv1d(F.pad(sig, (WIDTH - 1, 0)), x["w"].double()[:, None, :], x["b"].double(), groups=c)
    return {"y": F.silu(out).transpose(1, 2)}


WORKLOAD = Workload(sizes=SIZES, build=_build, outputs=("y",), launch=_launch, reference=_reference,
                    flops=lambda s: 2 * s["batch"] * s["L"] * s["C"] * WIDTH,
                    bytes=lambda s: s["batch"] * s["L"] * s["C"] * (2 + 2))

SPECS = [KernelSpec(name="conv1d", fn=conv1d_kernel,
                    description="causal depthwise conv1d + SiLU over bf16 (batch, length, channels): a BLOCK_L x "
                                "BLOCK_C tile, one shifted read of its rows a tap",
                    args={"x_ptr": Tensor("bf16"), "w_ptr": Tensor("bf16"), "b_ptr": Tensor("bf16"),
                          "y_ptr": Tensor("bf16"), "L": 4096, "C": 2048},
                    constexprs={"WIDTH": WIDTH},
                    configs=(Config("default", {"BLOCK_L": 16, "BLOCK_C": 128}, num_warps=4),),
                    workload=WORKLOAD)]
