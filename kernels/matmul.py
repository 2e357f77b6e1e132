"""Tiled, grouped matmul: C = A @ B with fp32 accumulation, and a menu of configs like an autotune list."""
import triton
import triton.language as tl

from irscope.spec import Config, KernelSpec, Tensor


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                  stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    # Programs walk the output in groups of GROUP_M rows of tiles, so neighbours reuse B in L2.
    pid = tl.program_id(axis=0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    group_size = GROUP_M * tiles_n
    first_m = (pid // group_size) * GROUP_M
    rows_in_group = min(tiles_m - first_m, GROUP_M)
    pid_m = first_m + (pid % group_size) % rows_in_group
    pid_n = (pid % group_size) // rows_in_group

    offs_m = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_n = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - k * BLOCK_K
        a = tl.load(a_ptrs, mask=offs_k[None, :] < k_left, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < k_left, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk

    c = acc.to(c_ptr.dtype.element_ty)
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ptrs = c_ptr + rows[:, None] * stride_cm + cols[None, :] * stride_cn
    tl.store(c_ptrs, c, mask=(rows[:, None] < M) & (cols[None, :] < N))


def _cfg(m, n, k, warps, stages, group=8, note=""):
    return Config(f"m{m}n{n}k{k}.w{warps}.s{stages}", {"BLOCK_M": m, "BLOCK_N": n, "BLOCK_K": k, "GROUP_M": group},
                  num_warps=warps, num_stages=stages, note=note)


SPEC = KernelSpec(
    name="matmul",
    fn=matmul_kernel,
    description="tiled, grouped fp16 matmul with fp32 accumulation (C = A @ B)",
    args={"a_ptr": Tensor("fp16"), "b_ptr": Tensor("fp16"), "c_ptr": Tensor("fp16"), "M": 4096, "N": 4096, "K": 4096,
          "stride_am": 4096, "stride_ak": 1, "stride_bk": 4096, "stride_bn": 1, "stride_cm": 4096, "stride_cn": 1},
    configs=(
        Config("default", {"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "GROUP_M": 8}, num_warps=8, num_stages=3,
               note="Triton tutorial's first fp16 config"),
        _cfg(64, 256, 32, 4, 4),
        _cfg(128, 128, 32, 4, 4),
        _cfg(128, 64, 32, 4, 4),
        _cfg(64, 128, 32, 4, 4),
        _cfg(128, 32, 32, 4, 4),
        _cfg(64, 32, 32, 2, 5, note="two warps: below a warpgroup, so no wgmma on Hopper"),
        _cfg(32, 64, 32, 2, 5),
    ),
)
