"""A small program for tests/test_capture.py: views at odd offsets, a stride of 1, a None argument, a
tl.dtype constexpr and an autotuned kernel. `fail` as the first argument makes it raise at the end;
`check` makes it assert its results (with --execute the interpreter computes them)."""
import sys

import torch
import triton
import triton.language as tl


@triton.jit
def add(x_ptr, y_ptr, out_ptr, n, scale, bias_ptr, BLOCK: tl.constexpr, DT: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    v = tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m)
    if bias_ptr is not None:
        v += tl.load(bias_ptr + offs, mask=m)
    tl.store(out_ptr + offs, (v * scale).to(DT), mask=m)


@triton.autotune(configs=[triton.Config({"BLOCK": 64}, num_warps=2), triton.Config({"BLOCK": 128}, num_warps=4)],
                 key=["n"])
@triton.jit
def scale_rows(x_ptr, out_ptr, n, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    v = tl.load(x_ptr + row * stride * n + offs, mask=offs < n)
    tl.store(out_ptr + row * stride * n + offs, v * 2, mask=offs < n)


if __name__ == "__main__":
    x, y, o = torch.randn(4096), torch.randn(4096), torch.zeros(4096)
    for _ in range(3):
        add[(16,)](x, y, o, 4096, 0.5, None, BLOCK=256, DT=tl.float32)
    if "check" in sys.argv:
        assert torch.allclose(o, (x + y) * 0.5)
    add[(16,)](x[1:], y, o, 4095, 0.5, y, BLOCK=256, DT=tl.float32)  # a view at an odd offset; n not /16
    m = torch.randn(8, 100)
    r = torch.zeros_like(m)
    scale_rows[(8,)](m, r, 100, 1)  # stride 1: specialised into the kernel
    if "check" in sys.argv:
        assert torch.allclose(r, m * 2)
    print("small program done")
    if "fail" in sys.argv:
        raise RuntimeError("the program's own failure")
