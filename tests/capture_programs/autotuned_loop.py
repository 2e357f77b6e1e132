"""An autotuned kernel with a loop, for `irscope rank LAUNCHES.json` (tests/test_rank_captured.py): row sums of
a ROWS x COLS matrix, a program per row walking its columns BLOCK at a time, three configs. Under
`irscope capture` (record mode) the autotuner "benchmarks" each config once, so each is recorded with its
grid, its arguments and its tensors' shapes."""
import sys

import torch
import triton
import triton.language as tl


@triton.autotune(configs=[triton.Config({"BLOCK": 256}, num_warps=2), triton.Config({"BLOCK": 1024}, num_warps=4),
                          triton.Config({"BLOCK": 4096}, num_warps=8)], key=["n_cols"])
@triton.jit
def row_sums(x_ptr, out_ptr, n_cols, row_stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros([BLOCK], tl.float32)
    for start in range(0, n_cols, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + row * row_stride + offs, mask=offs < n_cols, other=0.0)
    tl.store(out_ptr + row, tl.sum(acc))


if __name__ == "__main__":
    rows, cols = (int(v) for v in (sys.argv[1:] or ["4096x8192"])[0].split("x"))
    x = torch.randn(rows, cols)
    out = torch.empty(rows)
    row_sums[(rows,)](x, out, cols, x.stride(0))
    print("row sums", rows, "x", cols)
