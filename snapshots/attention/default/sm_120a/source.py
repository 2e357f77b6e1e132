"""Flash attention, forward: O = softmax(Q K^T * scale) V without ever writing the N x N scores.

Each program owns BLOCK_M query rows of one (batch, head) and walks the keys BLOCK_N at a time, keeping
a running row maximum `m_i` and row sum `l_i` (the online softmax): when a new block raises the
maximum, what was accumulated so far is rescaled by exp2(m_old - m_new). Scores are scaled by
log2(e) once so the exponentials are exp2, one instruction on GPUs.

The key loop is split in two: blocks that need no mask (all keys below the diagonal when causal, all
whole blocks otherwise) run without one, and only the blocks on the diagonal or past the end of the
sequence pay for masking. This is the kernel where Hopper (wgmma, warpgroups) and Blackwell (tcgen05,
tensor memory) codegen differ most. Q, K, V and O are contiguous (Z, H, N_CTX, HEAD_DIM) tensors.
"""
import math

import triton
import triton.language as tl

from irscope.spec import Config, KernelSpec, Tensor
from irscope.spec.attention import attention_workload

LOG2E = 1.4426950408889634


@triton.jit
def _attn_blocks(acc, l_i, m_i, q, k_base, v_base, offs_m, offs_n, offs_d, lo, hi, N_CTX, qk_scale, stride_m,
                 BLOCK_N: tl.constexpr, MASKED: tl.constexpr, IS_CAUSAL: tl.constexpr):
    for start_n in tl.range(lo, hi, BLOCK_N):
        cols = start_n + offs_n
        kv_offs = cols[:, None] * stride_m + offs_d[None, :]
        if MASKED:
            k = tl.load(k_base + kv_offs, mask=(cols < N_CTX)[:, None], other=0.0)
        else:
            k = tl.load(k_base + kv_offs)
        qk = tl.dot(q, tl.trans(k))
        if MASKED:
            keep = cols[None, :] < N_CTX
            if IS_CAUSAL:
                keep = keep & (offs_m[:, None] >= cols[None, :])
            qk = qk * qk_scale + tl.where(keep, 0.0, -1.0e6)
            m_new = tl.maximum(m_i, tl.max(qk, 1))
            qk = qk - m_new[:, None]
        else:
            m_new = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
            qk = qk * qk_scale - m_new[:, None]
        p = tl.math.exp2(qk)
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        if MASKED:
            v = tl.load(v_base + kv_offs, mask=(cols < N_CTX)[:, None], other=0.0)
        else:
            v = tl.load(v_base + kv_offs)
        acc = acc * alpha[:, None]
        acc = tl.dot(p.to(v.dtype), v, acc)
        m_i = m_new
    return acc, l_i, m_i


@triton.jit
def attention_fwd_kernel(Q, K, V, Out, sm_scale, stride_bh, stride_m, N_CTX,
                         HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                         IS_CAUSAL: tl.constexpr):
    tl.static_assert(BLOCK_M % BLOCK_N == 0, "the causal split needs BLOCK_N to divide BLOCK_M")
    start_m = tl.program_id(0)
    base = tl.program_id(1).to(tl.int64) * stride_bh
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    q_offs = offs_m[:, None] * stride_m + offs_d[None, :]
    row_ok = (offs_m < N_CTX)[:, None]
    q = tl.load(Q + base + q_offs, mask=row_ok, other=0.0)

    m_i = tl.full([BLOCK_M], -float("inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale * 1.4426950408889634  # log2(e): exp(x) = exp2(x * log2(e))

    if IS_CAUSAL:
        # Keys before this block's first row are visible to every row: no mask. The diagonal block is.
        unmasked_hi = start_m * BLOCK_M
        masked_hi = tl.minimum((start_m + 1) * BLOCK_M, N_CTX)
    else:
        unmasked_hi = (N_CTX // BLOCK_N) * BLOCK_N
        masked_hi = N_CTX
    acc, l_i, m_i = _attn_blocks(acc, l_i, m_i, q, K + base, V + base, offs_m, offs_n, offs_d, 0, unmasked_hi,
                                 N_CTX, qk_scale, stride_m, BLOCK_N, False, IS_CAUSAL)
    acc, l_i, m_i = _attn_blocks(acc, l_i, m_i, q, K + base, V + base, offs_m, offs_n, offs_d, unmasked_hi,
                                 masked_hi, N_CTX, qk_scale, stride_m, BLOCK_N, True, IS_CAUSAL)
    acc = acc / l_i[:, None]
    tl.store(Out + base + q_offs, acc.to(Out.dtype.element_ty), mask=row_ok)


def _launch(x, size, p):
    q, k, v, o = x["q"], x["k"], x["v"], x["o"]
    n, d = size["n"], size["d"]
    grid = (triton.cdiv(n, p["BLOCK_M"]), size["z"] * size["h"])
    return [p.call(grid, q, k, v, o, 1.0 / math.sqrt(d), q.stride(1), q.stride(2), n, HEAD_DIM=d)]


def _sizes():
    sizes = {"small": {"z": 1, "h": 2, "n": 256, "d": 64}, "ragged": {"z": 1, "h": 2, "n": 97, "d": 64},
             "ragged.d128": {"z": 1, "h": 1, "n": 75, "d": 128}, "bench": {"z": 4, "h": 32, "n": 4096, "d": 128}}
    for n in (1024, 2048, 4096, 8192):
        for d in (64, 128):
            sizes[f"n{n}.d{d}"] = {"z": 4, "h": 32, "n": n, "d": d}
    return sizes


def _args(dtype):
    return {"Q": Tensor(dtype), "K": Tensor(dtype), "V": Tensor(dtype), "Out": Tensor(dtype),
            "sm_scale": 1.0 / math.sqrt(128), "stride_bh": 4096 * 128, "stride_m": 128, "N_CTX": 4096}


def _cfg(m, n, warps, stages, note="", not_for=None):
    return Config(f"m{m}n{n}.w{warps}.s{stages}", {"BLOCK_M": m, "BLOCK_N": n}, num_warps=warps, num_stages=stages,
                  note=note, not_for=not_for or {})


_LDS = "a workgroup gets 64 KiB of LDS there"
DEFAULT = Config("default", {"BLOCK_M": 128, "BLOCK_N": 64}, num_warps=8, num_stages=3,
                 note="two warpgroups of 64 query rows each on Hopper; K and V triple-buffered",
                 not_for={t: f"its K and V buffers need 80 KiB; {_LDS} (m128n64.w4.s3 fits)"
                          for t in ("gfx90a", "gfx942")})
WIDE = _cfg(128, 128, 8, 3, note="wider key blocks: fewer rescales, twice the shared memory",
            not_for={"sm_120a": "needs 160 KiB of shared memory; a block gets 99 KiB there",
                     "gfx90a": f"needs 160 KiB; {_LDS}", "gfx942": f"needs 160 KiB; {_LDS}",
                     "gfx950": "needs 230 KiB of LDS; a workgroup gets 160 KiB there"})
ONE_WARPGROUP = _cfg(128, 64, 4, 3, note="one warpgroup for 128 rows: more registers per thread")
SMALL = _cfg(64, 64, 4, 2, note="small tiles for small shared memories (consumer Blackwell, AMD LDS)")

# The fp16 non-causal spec carries the whole menu; the causal one all but the widest tile (its diagonal
# blocks are masked, so wide key blocks waste more); bf16 takes the same instructions and buffer sizes
# as fp16, so its specs carry the default and the small tile that fits every target.
MENUS = {("fp16", False): (DEFAULT, WIDE, ONE_WARPGROUP, SMALL), ("fp16", True): (DEFAULT, ONE_WARPGROUP, SMALL),
         ("bf16", False): (DEFAULT, SMALL), ("bf16", True): (DEFAULT, SMALL)}

SPECS = []
for _dtype in ("fp16", "bf16"):
    for _causal in (False, True):
        _name = "attention" + ("" if _dtype == "fp16" else ".bf16") + (".causal" if _causal else "")
        SPECS.append(KernelSpec(
            name=_name, fn=attention_fwd_kernel,
            description=f"flash attention forward, {_dtype}, {'causal' if _causal else 'non-causal'}",
            args=_args(_dtype), constexprs={"HEAD_DIM": 128, "IS_CAUSAL": _causal}, configs=MENUS[(_dtype, _causal)],
            workload=attention_workload(sizes=_sizes(), dtype=_dtype, causal=_causal, launch=_launch,
                                        check_sizes=("small", "ragged", "ragged.d128"))))
