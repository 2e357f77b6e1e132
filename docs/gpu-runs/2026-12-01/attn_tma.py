"""Experiment: flash attention forward with TMA (in-kernel tensor descriptors) vs SDPA cuDNN on the H200.

    python3 docs/gpu-runs/2026-12-01/attn_tma.py            # on the GPU machine (Triton 3.6, torch 2.11)
    python docs/gpu-runs/2026-12-01/attn_tma.py --compile [--ws]   # here: device-less compile for sm_90a, counts

The same online-softmax kernel as kernels/attention.py, except that Q, K and V tiles come through
`tl.make_tensor_descriptor` over (Z*H, N_CTX, HEAD_DIM) views, so that Hopper loads them with
cp.async.bulk.tensor (TMA) into shared memory instead of cp.async from every thread, and O is stored
through a descriptor too. Bounds come from the descriptor's shape: rows past N_CTX read as zero.
"""
import math
import sys

import triton
import triton.language as tl


@triton.jit
def _blocks(acc, l_i, m_i, q, k_desc, v_desc, bh, offs_m, lo, hi, N_CTX, qk_scale,
            BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr, MASKED: tl.constexpr, IS_CAUSAL: tl.constexpr,
            WS: tl.constexpr):
    offs_n = tl.arange(0, BLOCK_N)
    for start_n in tl.range(lo, hi, BLOCK_N, warp_specialize=WS):
        k = k_desc.load([bh, start_n, 0]).reshape(BLOCK_N, HEAD_DIM)
        qk = tl.dot(q, tl.trans(k))
        if MASKED:
            cols = start_n + offs_n
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
        v = v_desc.load([bh, start_n, 0]).reshape(BLOCK_N, HEAD_DIM)
        acc = acc * alpha[:, None]
        acc = tl.dot(p.to(v.dtype), v, acc)
        m_i = m_new
    return acc, l_i, m_i


@triton.jit
def attn_tma_kernel(Q, K, V, Out, sm_scale, BH, N_CTX,
                    HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, IS_CAUSAL: tl.constexpr,
                    WS: tl.constexpr = False):
    start_m = tl.program_id(0)
    bh = tl.program_id(1)
    q_desc = tl.make_tensor_descriptor(Q, shape=[BH, N_CTX, HEAD_DIM], strides=[N_CTX * HEAD_DIM, HEAD_DIM, 1],
                                       block_shape=[1, BLOCK_M, HEAD_DIM])
    k_desc = tl.make_tensor_descriptor(K, shape=[BH, N_CTX, HEAD_DIM], strides=[N_CTX * HEAD_DIM, HEAD_DIM, 1],
                                       block_shape=[1, BLOCK_N, HEAD_DIM])
    v_desc = tl.make_tensor_descriptor(V, shape=[BH, N_CTX, HEAD_DIM], strides=[N_CTX * HEAD_DIM, HEAD_DIM, 1],
                                       block_shape=[1, BLOCK_N, HEAD_DIM])
    o_desc = tl.make_tensor_descriptor(Out, shape=[BH, N_CTX, HEAD_DIM], strides=[N_CTX * HEAD_DIM, HEAD_DIM, 1],
                                       block_shape=[1, BLOCK_M, HEAD_DIM])
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    q = q_desc.load([bh, start_m * BLOCK_M, 0]).reshape(BLOCK_M, HEAD_DIM)
    m_i = tl.full([BLOCK_M], -float("inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale * 1.4426950408889634
    if IS_CAUSAL:
        unmasked_hi = start_m * BLOCK_M
        masked_hi = tl.minimum((start_m + 1) * BLOCK_M, N_CTX)
    else:
        unmasked_hi = (N_CTX // BLOCK_N) * BLOCK_N
        masked_hi = N_CTX
    acc, l_i, m_i = _blocks(acc, l_i, m_i, q, k_desc, v_desc, bh, offs_m, 0, unmasked_hi, N_CTX, qk_scale,
                            BLOCK_N, HEAD_DIM, False, IS_CAUSAL, WS)
    acc, l_i, m_i = _blocks(acc, l_i, m_i, q, k_desc, v_desc, bh, offs_m, unmasked_hi, masked_hi, N_CTX, qk_scale,
                            BLOCK_N, HEAD_DIM, True, IS_CAUSAL, False)
    acc = acc / l_i[:, None]
    o_desc.store([bh, start_m * BLOCK_M, 0], acc.to(Out.dtype.element_ty).reshape(1, BLOCK_M, HEAD_DIM))


def compile_here():
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    sig = {"Q": "*fp16", "K": "*fp16", "V": "*fp16", "Out": "*fp16", "sm_scale": "fp32", "BH": "i32", "N_CTX": "i32",
           "HEAD_DIM": "constexpr", "BLOCK_M": "constexpr", "BLOCK_N": "constexpr", "IS_CAUSAL": "constexpr",
           "WS": "constexpr"}
    consts = {"HEAD_DIM": 128, "BLOCK_M": 128, "BLOCK_N": 128, "IS_CAUSAL": False, "WS": "--ws" in sys.argv}
    attrs = {(i,): [["tt.divisibility", 16]] for i in (0, 1, 2, 3, 5, 6)}
    k = triton.compile(ASTSource(attn_tma_kernel, sig, consts, attrs), target=GPUTarget("cuda", 90, 32),
                       options={"num_warps": 8, "num_stages": 3})
    ttgir, ptx = k.asm["ttgir"], k.asm["ptx"]
    print("warp_specialize ops", ttgir.count("ttg.warp_specialize"), "setmaxnreg", ptx.count("setmaxnreg"))
    for op in ("async_tma_copy_global_to_local", "async_copy_global_to_local", "warp_group_dot", "async_tma_copy_local_to_global"):
        print(op, ttgir.count(op))
    print("cp.async.bulk.tensor", ptx.count("cp.async.bulk.tensor"), "wgmma", ptx.count("wgmma.mma_async"),
          "shared", k.metadata.shared, "regs/spills", getattr(k, "n_regs", None), getattr(k, "n_spills", None),
          "global_scratch", k.metadata.global_scratch_size)


def run_gpu():
    import json
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from triton.testing import do_bench

    triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8, device="cuda"))
    print("torch", torch.__version__, "triton", triton.__version__, torch.cuda.get_device_name(), flush=True)
    results = []
    # (BLOCK_M, BLOCK_N, num_warps, num_stages, warp_specialize): the configs of the 2026-12-01 run.
    # warp_specialize=True compiles to the same code for sm_90a (`--compile --ws`: 0 ttg.warp_specialize
    # ops, 0 setmaxnreg): Triton applies it on Blackwell only, so it is not in the menu.
    configs = [(128, 64, 8, 3, False), (128, 128, 8, 2, False), (128, 128, 8, 3, False), (128, 64, 8, 4, False)]
    for causal in (False, True):
        for n in (4096, 8192):
            z, h, d = 4, 32, 128
            gen = torch.Generator(device="cuda").manual_seed(n + causal)
            q, k, v = (torch.randn((z, h, n, d), generator=gen, device="cuda", dtype=torch.float16) for _ in range(3))
            ref = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=causal).half() \
                if n <= 4096 else None
            flops = 4 * z * h * n * n * d * (0.5 if causal else 1.0)
            cands = {}
            for (bm, bn, w, s, ws) in configs:
                if causal and bn > bm:
                    continue
                out = torch.full_like(q, float("nan"))

                def launch(out=out, bm=bm, bn=bn, w=w, s=s, ws=ws):
                    attn_tma_kernel[(triton.cdiv(n, bm), z * h)](q, k, v, out, 1.0 / math.sqrt(d), z * h, n,
                                                                  HEAD_DIM=d, BLOCK_M=bm, BLOCK_N=bn,
                                                                  IS_CAUSAL=causal, WS=ws, num_warps=w, num_stages=s)
                try:
                    launch()
                    torch.cuda.synchronize()
                except Exception as e:  # noqa: BLE001
                    print(f"  m{bm}n{bn}.w{w}.s{s}{'.ws' if ws else ''}: {type(e).__name__}: {str(e)[:200]}", flush=True)
                    continue
                if ref is not None:
                    err = (out.float() - ref.float()).abs().max().item()
                    ok = err < 2e-2 and not out.isnan().any().item()
                else:
                    ok = not out.isnan().any().item()
                    err = None
                print(f"  n{n} causal={causal} m{bm}n{bn}.w{w}.s{s}{'.ws' if ws else ''}: max err {err} ok={ok}", flush=True)
                if ok:
                    cands[f"tma m{bm}n{bn}.w{w}.s{s}{'.ws' if ws else ''}"] = launch

            def sdpa(backend):
                def f():
                    with sdpa_kernel(backend):
                        return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                return f
            cands["sdpa cudnn"] = sdpa(SDPBackend.CUDNN_ATTENTION)
            cands["sdpa flash"] = sdpa(SDPBackend.FLASH_ATTENTION)
            times = {name: [] for name in cands}
            for _ in range(3):  # interleaved repeats: the card's power state hits all alike
                for name, f in cands.items():
                    times[name].append(do_bench(f, warmup=50, rep=300))
            med = {name: sorted(t)[1] for name, t in times.items()}
            for name, ms in med.items():
                print(f"n{n} d{d} causal={causal} {name:24} {ms:.3f} ms {flops / ms / 1e9:7.1f} TFLOP/s "
                      f"{med['sdpa cudnn'] / ms:.3f}x cudnn", flush=True)
            results.append({"n": n, "d": d, "causal": causal, "ms": med, "times": times})
    import os
    out = os.environ.get("OUT", ".")
    with open(os.path.join(out, "attn_tma.json"), "w") as fh:
        json.dump(results, fh, indent=1)


if __name__ == "__main__":
    compile_here() if "--compile" in sys.argv else run_gpu()
