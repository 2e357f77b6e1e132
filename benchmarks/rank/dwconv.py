"""A held-out kernel for model 19 (docs/rank.md, "Model 19"): a depthwise 7 x 7 convolution over fp16 images
laid out channels-last (batch, height, width, channels), ConvNeXt's token mixer, written and ranked before any
of its configs ran on a GPU.

A program owns BLOCK_W neighbouring pixels of one image row and BLOCK_C channels. It sums the 49 taps of each
channel's own 7 x 7 filter over a zero-padded window, in two loops whose bounds are constants, then adds the
bias. Its activations are read as rows of channels (contiguous, vectors of 8 fp16 where the channels allow);
its filters are (channels, 49) in fp32, so one tap of BLOCK_C channels is read 49 elements (196 bytes) apart:
the access model 19 reads from the pointer and models 17-18 took as contiguous. It is not one of irscope's
built-in kernels: `irscope rank benchmarks/rank/dwconv.yaml` loads it from this file, as a user's kernel is
loaded.
"""
import triton
import triton.language as tl

from irscope.spec import Config, KernelSpec, Tensor
from irscope.workload import Workload, cdiv, empty, randn

K = 7  # the filter's side


@triton.jit
def dwconv_kernel(x_ptr, w_ptr, b_ptr, y_ptr, H, W, C, K: tl.constexpr, BLOCK_W: tl.constexpr,
                  BLOCK_C: tl.constexpr):
    row = tl.program_id(1)  # batch * H + y
    n = row // H
    y = row % H
    xs = tl.program_id(0) * BLOCK_W + tl.arange(0, BLOCK_W)
    cs = tl.program_id(2) * BLOCK_C + tl.arange(0, BLOCK_C)
    inside = cs < C
    acc = tl.zeros((BLOCK_W, BLOCK_C), dtype=tl.float32)
    for ky in range(0, K):
        yy = y + ky - K // 2
        for kx in range(0, K):
            xx = xs + kx - K // 2
            yv = yy + tl.zeros((BLOCK_W,), dtype=tl.int32)  # (the row's bound, as a tensor: a mask is one)
            ok = (xx >= 0) & (xx < W) & (yv >= 0) & (yv < H)
            v = tl.load(x_ptr + ((n * H + yy) * W + xx)[:, None] * C + cs[None, :],
                        mask=ok[:, None] & inside[None, :], other=0.0)
            w = tl.load(w_ptr + cs * (K * K) + ky * K + kx, mask=inside, other=0.0)
            acc += v.to(tl.float32) * w[None, :]
    acc += tl.load(b_ptr + cs, mask=inside, other=0.0)[None, :]
    tl.store(y_ptr + (row * W + xs)[:, None] * C + cs[None, :], acc.to(tl.float16),
             mask=(xs < W)[:, None] & inside[None, :])


SIZES = {"small": {"batch": 1, "H": 9, "W": 10, "C": 24}, "bench": {"batch": 32, "H": 28, "W": 28, "C": 192},
         "short": {"batch": 8, "H": 56, "W": 56, "C": 96}}


def _build(size, gen, device):
    b, h, w, c = size["batch"], size["H"], size["W"], size["C"]
    return {"x": randn(gen, (b, h, w, c), "fp16", device), "w": randn(gen, (c, K * K), "fp32", device, scale=0.2),
            "b": randn(gen, (c,), "fp32", device, scale=0.1), "y": empty((b, h, w, c), "fp16", device)}


def _launch(x, size, p):
    b, h, w, c = size["batch"], size["H"], size["W"], size["C"]
    return [p.call((cdiv(w, p["BLOCK_W"]), b * h, cdiv(c, p["BLOCK_C"])), x["x"], x["w"], x["b"], x["y"], h, w, c)]


def _reference(x, size):
    import torch.nn.functional as F
    c = size["C"]
    img = x["x"].double().permute(0, 3, 1, 2)  # (batch, channels, height, width)
    out = F.conv2d(img, x["w"].double().reshape(c, 1, K, K), x["b"].double(), padding=K // 2, groups=c)
    return {"y": out.permute(0, 2, 3, 1)}


WORKLOAD = Workload(sizes=SIZES, build=_build, outputs=("y",), launch=_launch, reference=_reference,
                    flops=lambda s: 2 * s["batch"] * s["H"] * s["W"] * s["C"] * K * K,
                    bytes=lambda s: s["batch"] * s["H"] * s["W"] * s["C"] * (2 + 2) + s["C"] * (K * K + 1) * 4)

SPECS = [KernelSpec(name="dwconv", fn=dwconv_kernel,
                    description="depthwise 7x7 conv over fp16 channels-last images (ConvNeXt's): BLOCK_W pixels "
                                "of a row x BLOCK_C channels, the (C, 49) fp32 filters read 49 apart",
                    args={"x_ptr": Tensor("fp16"), "w_ptr": Tensor("fp32"), "b_ptr": Tensor("fp32"),
                          "y_ptr": Tensor("fp16"), "H": 28, "W": 28, "C": 192},
                    constexprs={"K": K},
                    configs=(Config("default", {"BLOCK_W": 8, "BLOCK_C": 64}, num_warps=4),),
                    workload=WORKLOAD)]
