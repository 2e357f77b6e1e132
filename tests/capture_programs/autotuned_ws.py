"""An autotuned, warp-specialised matmul for Blackwell, for `irscope rank LAUNCHES.json`
(tests/test_rank_captured.py): `tl.range(..., warp_specialize=True)` has Triton split the K loop into a
loading partition and a matrix partition, whose loops get their bounds as the partitions' arguments. Host
tensor descriptors, their blocks set by a pre_hook per config (as Triton's tutorial 09 does). Four configs."""
import sys

import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor


def _blocks(nargs):
    nargs["a_desc"].block_shape = [nargs["BLOCK_M"], nargs["BLOCK_K"]]
    nargs["b_desc"].block_shape = [nargs["BLOCK_N"], nargs["BLOCK_K"]]


@triton.autotune(configs=[triton.Config({"BLOCK_M": 128, "BLOCK_N": bn, "BLOCK_K": 64}, num_warps=4, num_stages=s,
                                        pre_hook=_blocks) for bn in (64, 128) for s in (2, 4)], key=["M", "N", "K"])
@triton.jit
def mm_ws(a_desc, b_desc, c_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    acc = tl.zeros((BLOCK_M, BLOCK_N), tl.float32)
    for k in tl.range(0, tl.cdiv(K, BLOCK_K), warp_specialize=True):
        a = a_desc.load([pid_m * BLOCK_M, k * BLOCK_K])
        b = b_desc.load([pid_n * BLOCK_N, k * BLOCK_K])
        acc = tl.dot(a, b.T, acc)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    tl.store(c_ptr + offs_m[:, None] * N + offs_n[None, :], acc.to(tl.float16),
             mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


if __name__ == "__main__":
    m, n, k = (int(v) for v in (sys.argv[1:] or ["4096x4096x4096"])[0].split("x"))
    a = torch.randn(m, k, dtype=torch.float16)
    b = torch.randn(n, k, dtype=torch.float16)
    c = torch.empty(m, n, dtype=torch.float16)
    a_desc = TensorDescriptor.from_tensor(a, [128, 64])  # blocks per config: _blocks
    b_desc = TensorDescriptor.from_tensor(b, [128, 64])
    mm_ws[lambda meta: (triton.cdiv(m, meta["BLOCK_M"]), triton.cdiv(n, meta["BLOCK_N"]))](a_desc, b_desc, c, m, n, k)
    print("matmul", m, "x", n, "x", k)
