"""A persistent matmul, autotuned, for `irscope rank LAUNCHES.json` (tests/test_rank_captured.py): one
program an SM loops over output tiles, and for each over K, a loop inside a loop (or, with `flatten`,
Triton's tl.range(flatten=True) fuses the two). Two configs; M=N=4096, K=2048 on a grid of 132."""
import sys

import torch
import triton
import triton.language as tl


@triton.autotune(configs=[triton.Config({"BLOCK_M": 128, "BLOCK_N": bn, "BLOCK_K": 64}, num_warps=4, num_stages=3)
                          for bn in (64, 128)], key=["M", "N", "K"])
@triton.jit
def mm_persistent(a_ptr, b_ptr, c_ptr, M, N, K, NUM_SMS: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                  BLOCK_K: tl.constexpr, FLATTEN: tl.constexpr):
    start = tl.program_id(0)
    num_m = tl.cdiv(M, BLOCK_M)
    num_n = tl.cdiv(N, BLOCK_N)
    k_tiles = tl.cdiv(K, BLOCK_K)
    for tile in tl.range(start, num_m * num_n, NUM_SMS, flatten=FLATTEN):
        pid_m = tile // num_n
        pid_n = tile % num_n
        offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        offs_k = tl.arange(0, BLOCK_K)
        acc = tl.zeros((BLOCK_M, BLOCK_N), tl.float32)
        for ki in range(k_tiles):
            a = tl.load(a_ptr + offs_m[:, None] * K + (ki * BLOCK_K + offs_k)[None, :])
            b = tl.load(b_ptr + (ki * BLOCK_K + offs_k)[:, None] * N + offs_n[None, :])
            acc = tl.dot(a, b, acc)
        tl.store(c_ptr + offs_m[:, None] * N + offs_n[None, :], acc.to(tl.float16))


if __name__ == "__main__":
    m, n, k = 4096, 4096, 2048
    flatten = len(sys.argv) > 1 and sys.argv[1] == "flatten"
    a = torch.randn(m, k, dtype=torch.float16)
    b = torch.randn(k, n, dtype=torch.float16)
    c = torch.empty(m, n, dtype=torch.float16)
    mm_persistent[(132,)](a, b, c, m, n, k, NUM_SMS=132, FLATTEN=flatten)
    print("persistent matmul", m, n, k, "flattened" if flatten else "nested")
