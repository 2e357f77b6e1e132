"""Experiment: fp16 matmul with TMA tensor descriptors (grouped and persistent) vs cuBLAS on the H200.

    python3 docs/gpu-runs/2026-12-01/matmul_tma.py            # on the GPU machine (Triton 3.6, torch 2.11)
    python docs/gpu-runs/2026-12-01/matmul_tma.py --compile   # here: device-less compile for sm_90a, counts

kernels/matmul.py's grouped kernel loads A and B tiles with cp.async from every thread; these load them
through `tl.make_tensor_descriptor` (cp.async.bulk.tensor, TMA) and store C through one too. The
persistent one launches one program per SM that walks the output tiles in the same grouped order.
"""
import sys

import triton
import triton.language as tl


@triton.jit
def _tile(tile, tiles_m, tiles_n, GROUP_M: tl.constexpr):
    group_size = GROUP_M * tiles_n
    first_m = (tile // group_size) * GROUP_M
    rows_in_group = min(tiles_m - first_m, GROUP_M)
    return first_m + (tile % group_size) % rows_in_group, (tile % group_size) // rows_in_group


@triton.jit
def matmul_tma_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                      BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BLOCK_M, BLOCK_K])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[K, N], strides=[N, 1], block_shape=[BLOCK_K, BLOCK_N])
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[N, 1], block_shape=[BLOCK_M, BLOCK_N])
    pid_m, pid_n = _tile(tl.program_id(0), tl.cdiv(M, BLOCK_M), tl.cdiv(N, BLOCK_N), GROUP_M)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = a_desc.load([pid_m * BLOCK_M, k * BLOCK_K])
        b = b_desc.load([k * BLOCK_K, pid_n * BLOCK_N])
        acc = tl.dot(a, b, acc)
    c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], acc.to(tl.float16))


@triton.jit
def matmul_tma_persistent_kernel(a_ptr, b_ptr, c_ptr, M, N, K, NUM_SMS: tl.constexpr,
                                 BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                                 GROUP_M: tl.constexpr):
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BLOCK_M, BLOCK_K])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[K, N], strides=[N, 1], block_shape=[BLOCK_K, BLOCK_N])
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[N, 1], block_shape=[BLOCK_M, BLOCK_N])
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    k_tiles = tl.cdiv(K, BLOCK_K)
    for tile in tl.range(tl.program_id(0), tiles_m * tiles_n, NUM_SMS, flatten=True):
        pid_m, pid_n = _tile(tile, tiles_m, tiles_n, GROUP_M)
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k in range(0, k_tiles):
            a = a_desc.load([pid_m * BLOCK_M, k * BLOCK_K])
            b = b_desc.load([k * BLOCK_K, pid_n * BLOCK_N])
            acc = tl.dot(a, b, acc)
        c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], acc.to(tl.float16))


CONFIGS = [(128, 256, 64, 8, 3), (128, 256, 64, 8, 4), (256, 128, 64, 8, 3), (128, 128, 64, 8, 4)]


def compile_here():
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32",
           "BLOCK_M": "constexpr", "BLOCK_N": "constexpr", "BLOCK_K": "constexpr", "GROUP_M": "constexpr"}
    attrs = {(i,): [["tt.divisibility", 16]] for i in range(6)}
    for kernel, extra in ((matmul_tma_kernel, {}), (matmul_tma_persistent_kernel, {"NUM_SMS": 132})):
        s = dict(sig)
        if extra:
            s = {**{k: v for k, v in sig.items() if k in ("a_ptr", "b_ptr", "c_ptr", "M", "N", "K")},
                 "NUM_SMS": "constexpr", **{k: v for k, v in sig.items() if k.isupper() and k not in "MNK"}}
        consts = {"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "GROUP_M": 8, **extra}
        k = triton.compile(ASTSource(kernel, s, consts, attrs), target=GPUTarget("cuda", 90, 32),
                           options={"num_warps": 8, "num_stages": 3})
        ptx = k.asm["ptx"]
        print(kernel.__name__, "cp.async.bulk.tensor", ptx.count("cp.async.bulk.tensor"), "cp.async.ca/cg",
              ptx.count("cp.async.cg") + ptx.count("cp.async.ca"), "wgmma", ptx.count("wgmma.mma_async"),
              "shared", k.metadata.shared, "scratch", k.metadata.global_scratch_size)


def run_gpu():
    import json
    import os
    import torch
    from triton.testing import do_bench

    triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8, device="cuda"))
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    print("torch", torch.__version__, "triton", triton.__version__, torch.cuda.get_device_name(), sms, "SMs",
          flush=True)
    results = []
    for size in (4096, 8192):
        m = n = k = size
        gen = torch.Generator(device="cuda").manual_seed(size)
        a = torch.randn((m, k), generator=gen, device="cuda", dtype=torch.float16)
        b = torch.randn((k, n), generator=gen, device="cuda", dtype=torch.float16)
        ref = torch.matmul(a, b)
        cands = {}
        for (bm, bn, bk, w, s) in CONFIGS:
            for persistent in (False, True):
                c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.float16)
                if persistent:
                    grid = (min(sms, triton.cdiv(m, bm) * triton.cdiv(n, bn)),)

                    def launch(c=c, bm=bm, bn=bn, bk=bk, w=w, s=s, grid=grid):
                        matmul_tma_persistent_kernel[grid](a, b, c, m, n, k, NUM_SMS=sms, BLOCK_M=bm, BLOCK_N=bn,
                                                           BLOCK_K=bk, GROUP_M=8, num_warps=w, num_stages=s)
                else:
                    grid = (triton.cdiv(m, bm) * triton.cdiv(n, bn),)

                    def launch(c=c, bm=bm, bn=bn, bk=bk, w=w, s=s, grid=grid):
                        matmul_tma_kernel[grid](a, b, c, m, n, k, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8,
                                                num_warps=w, num_stages=s)
                name = f"{'persistent' if persistent else 'grouped'} m{bm}n{bn}k{bk}.w{w}.s{s}"
                try:
                    launch()
                    torch.cuda.synchronize()
                except Exception as e:  # noqa: BLE001
                    print(f"  {size} {name}: {type(e).__name__}: {str(e)[:160]}", flush=True)
                    continue
                err = ((c.float() - ref.float()).abs().max() / ref.float().abs().max()).item()
                ok = err < 1e-2 and not c.isnan().any().item()
                print(f"  {size} {name}: rel err {err:.2e} ok={ok}", flush=True)
                if ok:
                    cands[name] = launch
        sys.path.insert(0, os.getcwd())  # the repository root: kernels/ and irscope/
        from kernels.matmul import matmul_kernel
        c0 = torch.empty((m, n), device="cuda", dtype=torch.float16)
        cands["kernels/matmul.py default (cp.async)"] = lambda: matmul_kernel[(triton.cdiv(m, 128) * triton.cdiv(n, 256),)](
            a, b, c0, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c0.stride(0), c0.stride(1),
            BLOCK_M=128, BLOCK_N=256, BLOCK_K=64, GROUP_M=8, num_warps=8, num_stages=3)
        cands["cublas"] = lambda: torch.matmul(a, b)
        times = {name: [] for name in cands}
        for _ in range(5):
            for name, f in cands.items():
                times[name].append(do_bench(f, warmup=50, rep=300))
        med = {name: sorted(t)[2] for name, t in times.items()}
        flops = 2 * m * n * k
        for name, ms in sorted(med.items(), key=lambda kv: kv[1]):
            print(f"{size}^3 {name:34} {ms:.3f} ms {flops / ms / 1e9:6.1f} TFLOP/s {med['cublas'] / ms:.3f}x cuBLAS",
                  flush=True)
        results.append({"size": size, "ms": med, "times": times})
    with open(os.path.join(os.environ.get("OUT", "."), "matmul_tma.json"), "w") as fh:
        json.dump(results, fh, indent=1)


if __name__ == "__main__":
    compile_here() if "--compile" in sys.argv else run_gpu()
