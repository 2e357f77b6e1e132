"""Tiled, grouped matmul: C = A @ B with fp32 accumulation, and a menu of configs like an autotune list.

fp16 and bf16 inputs run on tensor cores (`matmul_kernel`); fp32 with input_precision="ieee" (true fp32
FMAs, no TF32) has its own kernel, the plain tiled one of the talk's 16- vs 128-wide comparison.
"""
import triton
import triton.language as tl

from irscope.spec import Config, KernelSpec, Tensor
from irscope.workload import DEFAULT_TOLERANCES, Tolerance, Workload, cdiv, empty, randn


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


@triton.jit
def matmul_tma_kernel(a_ptr, b_ptr, c_ptr, M, N, K, NUM_SMS,
                      BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    # Persistent: NUM_SMS programs walk the output tiles in the grouped order of matmul_kernel. A, B and C
    # are row-major and go through tensor descriptors: on Hopper and Blackwell the tiles move by TMA
    # (cp.async.bulk.tensor) instead of per-thread cp.async; elsewhere Triton lowers them to plain loads.
    # The descriptors' bounds do the masking: rows and columns past M, N, K read as zero, stores clip.
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BLOCK_M, BLOCK_K])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[K, N], strides=[N, 1], block_shape=[BLOCK_K, BLOCK_N])
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[N, 1], block_shape=[BLOCK_M, BLOCK_N])
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    k_tiles = tl.cdiv(K, BLOCK_K)
    group_size = GROUP_M * tiles_n
    for tile in tl.range(tl.program_id(0), tiles_m * tiles_n, NUM_SMS, flatten=True):
        first_m = (tile // group_size) * GROUP_M
        rows_in_group = min(tiles_m - first_m, GROUP_M)
        pid_m = first_m + (tile % group_size) % rows_in_group
        pid_n = (tile % group_size) // rows_in_group
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k in range(0, k_tiles):
            a = a_desc.load([pid_m * BLOCK_M, k * BLOCK_K])
            b = b_desc.load([k * BLOCK_K, pid_n * BLOCK_N])
            acc = tl.dot(a, b, acc)
        c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], acc.to(c_ptr.dtype.element_ty))


@triton.jit
def matmul_fp32_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                       stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                       BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    # One program per output tile, in row-major order; every edge is masked.
    pid = tl.program_id(axis=0)
    tiles_n = tl.cdiv(N, BLOCK_N)
    rows = (pid // tiles_n) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = (pid % tiles_n) * BLOCK_N + tl.arange(0, BLOCK_N)
    ks = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        a = tl.load(a_ptr + rows[:, None] * stride_am + (k0 + ks)[None, :] * stride_ak,
                    mask=(rows[:, None] < M) & ((k0 + ks)[None, :] < K), other=0.0)
        b = tl.load(b_ptr + (k0 + ks)[:, None] * stride_bk + cols[None, :] * stride_bn,
                    mask=((k0 + ks)[:, None] < K) & (cols[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc, input_precision="ieee")
    tl.store(c_ptr + rows[:, None] * stride_cm + cols[None, :] * stride_cn, acc,
             mask=(rows[:, None] < M) & (cols[None, :] < N))


def _cfg(m, n, k, warps, stages, group=8, note=""):
    return Config(f"m{m}n{n}k{k}.w{warps}.s{stages}", {"BLOCK_M": m, "BLOCK_N": n, "BLOCK_K": k, "GROUP_M": group},
                  num_warps=warps, num_stages=stages, note=note)


def _build(dtype):
    def build(size, gen, device):
        m, n, k = size["M"], size["N"], size["K"]
        return {"a": randn(gen, (m, k), dtype, device), "b": randn(gen, (k, n), dtype, device),
                "c": empty((m, n), dtype, device)}
    return build


def _launch(x, size, p):
    a, b, c = x["a"], x["b"], x["c"]
    m, n, k = size["M"], size["N"], size["K"]
    grid = (cdiv(m, p["BLOCK_M"]) * cdiv(n, p["BLOCK_N"]),)
    return [p.call(grid, a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                   c.stride(0), c.stride(1))]


def _reference(x, size):
    return {"c": x["a"].float() @ x["b"].float()}


def _torch_matmul(x, size):
    import torch
    return lambda: torch.matmul(x["a"], x["b"], out=x["c"])


def _sms(device) -> int:
    """Programs of the persistent kernel: one per SM on a GPU; a few in the interpreter."""
    import torch
    if getattr(device, "type", "cpu") == "cuda":
        return torch.cuda.get_device_properties(device).multi_processor_count
    return 4


def _launch_tma(x, size, p):
    a, b, c = x["a"], x["b"], x["c"]
    m, n, k = size["M"], size["N"], size["K"]
    if k % 8 or n % 8:
        raise ValueError(f"matmul.tma needs K and N divisible by 8 (16-byte rows for TMA); got K={k}, N={n}")
    tiles = cdiv(m, p["BLOCK_M"]) * cdiv(n, p["BLOCK_N"])
    sms = _sms(a.device)
    return [p.call((min(sms, tiles),), a, b, c, m, n, k, sms)]


def _square(n):
    return {"M": n, "N": n, "K": n}


def _workload(dtype, tma=False):
    item = {"fp32": 4, "fp16": 2, "bf16": 2}[dtype]
    # fp32 results differ from torch's only in summation order: ~1e-7 relative per term, sqrt(K) terms.
    tolerances = {**DEFAULT_TOLERANCES, "fp32": Tolerance(1e-3, 1e-4)}
    return Workload(
        sizes={"small": {"M": 128, "N": 256, "K": 128},
               # TMA rows are multiples of 16 bytes (K, N % 8); the persistent kernel's ragged size spans
               # 3 x 3 tiles, more than the interpreter's 4 programs: each walks several
               "ragged": {"M": 300, "N": 520, "K": 72} if tma else {"M": 100, "N": 200, "K": 70},
               "bench": _square(4096), "8192": _square(8192), "2048": _square(2048)},
        build=_build(dtype),
        outputs=("c",),
        launch=_launch_tma if tma else _launch,
        reference=_reference,
        flops=lambda s: 2 * s["M"] * s["N"] * s["K"],
        bytes=lambda s: item * (s["M"] * s["K"] + s["K"] * s["N"] + s["M"] * s["N"]),
        tolerances=tolerances,
        baselines={"torch matmul": _torch_matmul},
        note="" if dtype != "fp32" else "torch's fp32 matmul does not use TF32 unless allowed: the same ieee math",
    )


def _args(dtype):
    return {"a_ptr": Tensor(dtype), "b_ptr": Tensor(dtype), "c_ptr": Tensor(dtype), "M": 4096, "N": 4096,
            "K": 4096, "stride_am": 4096, "stride_ak": 1, "stride_bk": 4096, "stride_bn": 1, "stride_cm": 4096,
            "stride_cn": 1}


def _tma_args():
    return {"a_ptr": Tensor("fp16"), "b_ptr": Tensor("fp16"), "c_ptr": Tensor("fp16"), "M": 4096, "N": 4096,
            "K": 4096, "NUM_SMS": 132}  # an H100's or H200's SMs


TMA_CONFIGS = (
    Config("default", {"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "GROUP_M": 8}, num_warps=8, num_stages=3,
           note="the grouped kernel's default tile, persistent, its tiles moved by TMA on Hopper and Blackwell",
           not_for={"sm_120a": "needs 160 KiB of shared memory; a block gets 99 KiB there"}),
    _cfg(128, 128, 64, 4, 3, note="one warpgroup, a quarter of the shared memory: fits every target"),
)


# Tensor-core menu (fp16, bf16): Triton's tutorial autotune list, largest tiles first.
TC_CONFIGS = (
    Config("default", {"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "GROUP_M": 8}, num_warps=8, num_stages=3,
           note="Triton tutorial's first fp16 config: two warpgroups, wgmma m64n256 on Hopper",
           not_for={t: "its A and B buffers need 96 KiB of LDS; a workgroup gets 64 KiB there"
                    for t in ("gfx90a", "gfx942")}),
    _cfg(64, 256, 32, 4, 4),
    _cfg(128, 128, 32, 4, 4),
    _cfg(128, 64, 32, 4, 4),
    _cfg(64, 128, 32, 4, 4),
    _cfg(64, 32, 32, 2, 5, note="two warps: below a warpgroup, so no wgmma on Hopper"),
)


def _fp32_cfg(m, n, k, warps, stages, note):
    return Config(f"m{m}n{n}k{k}.w{warps}.s{stages}", {"BLOCK_M": m, "BLOCK_N": n, "BLOCK_K": k},
                  num_warps=warps, num_stages=stages, note=note)


SPECS = [
    KernelSpec(name="matmul", fn=matmul_kernel,
               description="tiled, grouped fp16 matmul with fp32 accumulation (C = A @ B)",
               args=_args("fp16"), configs=TC_CONFIGS, workload=_workload("fp16")),
    KernelSpec(name="matmul.bf16", fn=matmul_kernel,
               description="tiled, grouped bf16 matmul with fp32 accumulation (C = A @ B)",
               args=_args("bf16"), configs=(TC_CONFIGS[0], TC_CONFIGS[2], TC_CONFIGS[5]), workload=_workload("bf16")),
    KernelSpec(name="matmul.tma", fn=matmul_tma_kernel,
               description="persistent fp16 matmul through TMA tensor descriptors (C = A @ B, K and N % 8 == 0)",
               args=_tma_args(), configs=TMA_CONFIGS, workload=_workload("fp16", tma=True)),
    KernelSpec(name="matmul.fp32", fn=matmul_fp32_kernel,
               description="fp32 tiled matmul with input_precision='ieee' (no TF32): the talk's 16- vs 128-wide tile",
               args=_args("fp32"),
               configs=(
                   _fp32_cfg(128, 128, 32, 8, 3, note="the talk's large tile: each loaded value feeds 128 products"),
                   _fp32_cfg(16, 16, 16, 4, 2, note="the talk's small tile: 8x less reuse, pinned to the memory roof"),
               ),
               workload=_workload("fp32")),
]
