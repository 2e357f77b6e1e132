"""A held-out kernel for model 19 (docs/rank.md, "Model 19"): rotary position embedding in the interleaved
(GPT-J) form over fp16 queries laid out (batch, sequence, heads, head_dim), written and ranked before any of
its configs ran on a GPU.

Each pair of a head's features (x[2i], x[2i + 1]) is turned by the angle of its position and pair:
(x0 cos - x1 sin, x0 sin + x1 cos), the cos and sin tables (sequence, head_dim / 2) in fp32. This is the op of
`apply_rotary(..., interleaved=True)` in attention libraries. A program owns BLOCK_R rows (one token's head
each) and BLOCK_P of a row's pairs, and reads the even and the odd features apart: two loads whose lanes step
2 elements along the row, which the compiler cannot make vectors of, and the stores the same. The table's
row is the token's, `(row // heads) % sequence`: a division the compile facts cannot follow. It is not one
of irscope's built-in kernels: `irscope rank benchmarks/rank/rope.yaml` loads it from this file, as a
user's kernel is loaded.
"""
import triton
import triton.language as tl

from irscope.spec import Config, KernelSpec, Tensor
from irscope.workload import Workload, cdiv, empty, randn

HEAD_DIM = 128


@triton.jit
def rope_kernel(x_ptr, cos_ptr, sin_ptr, y_ptr, rows, seq, heads, HEAD_DIM: tl.constexpr, BLOCK_R: tl.constexpr,
                BLOCK_P: tl.constexpr):
    r = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    p = tl.program_id(1) * BLOCK_P + tl.arange(0, BLOCK_P)
    ok = (r < rows)[:, None] & (p < HEAD_DIM // 2)[None, :]
    pos = (r // heads) % seq
    angle = pos[:, None] * (HEAD_DIM // 2) + p[None, :]
    c = tl.load(cos_ptr + angle, mask=ok, other=0.0)
    s = tl.load(sin_ptr + angle, mask=ok, other=0.0)
    even = r[:, None] * HEAD_DIM + 2 * p[None, :]
    x0 = tl.load(x_ptr + even, mask=ok, other=0.0).to(tl.float32)
    x1 = tl.load(x_ptr + even + 1, mask=ok, other=0.0).to(tl.float32)
    tl.store(y_ptr + even, (x0 * c - x1 * s).to(tl.float16), mask=ok)
    tl.store(y_ptr + even + 1, (x0 * s + x1 * c).to(tl.float16), mask=ok)


SIZES = {"small": {"batch": 2, "seq": 5, "heads": 3}, "bench": {"batch": 4, "seq": 4096, "heads": 32},
         "short": {"batch": 1, "seq": 2048, "heads": 16}}


def _build(size, gen, device):
    b, n, h = size["batch"], size["seq"], size["heads"]
    return {"x": randn(gen, (b, n, h, HEAD_DIM), "fp16", device),
            "cos": randn(gen, (n, HEAD_DIM // 2), "fp32", device), "sin": randn(gen, (n, HEAD_DIM // 2), "fp32", device),
            "y": empty((b, n, h, HEAD_DIM), "fp16", device)}


def _launch(x, size, p):
    b, n, h = size["batch"], size["seq"], size["heads"]
    rows = b * n * h
    return [p.call((cdiv(rows, p["BLOCK_R"]), cdiv(HEAD_DIM // 2, p["BLOCK_P"])), x["x"], x["cos"], x["sin"], x["y"],
                   rows, n, h)]


def _reference(x, size):
    q = x["x"].double()
    c = x["cos"].double()[None, :, None, :]
    s = x["sin"].double()[None, :, None, :]
    x0, x1 = q[..., 0::2], q[..., 1::2]
    y = q.clone()
    y[..., 0::2] = x0 * c - x1 * s
    y[..., 1::2] = x0 * s + x1 * c
    return {"y": y}


WORKLOAD = Workload(sizes=SIZES, build=_build, outputs=("y",), launch=_launch, reference=_reference,
                    flops=lambda s: 3 * s["batch"] * s["seq"] * s["heads"] * HEAD_DIM,
                    bytes=lambda s: s["batch"] * s["seq"] * s["heads"] * HEAD_DIM * (2 + 2) +
                    s["seq"] * HEAD_DIM * 4)

SPECS = [KernelSpec(name="rope", fn=rope_kernel,
                    description="interleaved (GPT-J) rotary embedding over fp16 (batch, sequence, heads, 128): "
                                "BLOCK_R rows of BLOCK_P pairs, the even and odd features read apart",
                    args={"x_ptr": Tensor("fp16"), "cos_ptr": Tensor("fp32"), "sin_ptr": Tensor("fp32"),
                          "y_ptr": Tensor("fp16"), "rows": 524288, "seq": 4096, "heads": 32},
                    constexprs={"HEAD_DIM": HEAD_DIM},
                    configs=(Config("default", {"BLOCK_R": 16, "BLOCK_P": 64}, num_warps=4),),
                    workload=WORKLOAD)]
