"""Microbenchmarks that measure the H200 figures irscope rank's model 2 takes from the machine instead of a
datasheet, on kernels of their own (none of the evaluation's spaces): what an SM pays per program it
starts, what the matrix instructions reach per tile shape, and the L2-to-SM feed.

    python3 benchmarks/rank_calibrate.py OUT.json        # on the GPU machine, through Triton's JIT
"""
from __future__ import annotations

import json
import sys
import time

import torch
import triton
import triton.language as tl


@triton.jit
def _start_only(out_ptr):
    # A program that does nothing but exist (one store, so that it is not empty): the cost of starting it.
    tl.store(out_ptr + tl.program_id(0), 1)


@triton.jit
def _mma_loop(a_ptr, b_ptr, c_ptr, ITERS: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a = tl.load(a_ptr + rm[:, None] * BK + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * BN + rn[None, :])
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for _ in range(ITERS):
        acc = tl.dot(a, b, acc)  # chained through the accumulator: nothing to hoist
    tl.store(c_ptr + tl.program_id(0) * BM * BN + rm[:, None] * BN + rn[None, :], acc)


@triton.jit
def _l2_read(x_ptr, out_ptr, span, ITERS: tl.constexpr, BLOCK: tl.constexpr):
    # Every program re-reads the same few MB (L2-resident) in BLOCK-element tiles.
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    base = (tl.program_id(0) * BLOCK) % span
    for i in range(ITERS):
        acc += tl.load(x_ptr + (base + i * BLOCK) % span + offs)
    tl.store(out_ptr + tl.program_id(0) * BLOCK + offs, acc)


def bench(fn) -> float:
    return float(triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median"))


def main(out: str) -> int:
    dev = torch.cuda.current_device()
    props = torch.cuda.get_device_properties(dev)
    sms = props.multi_processor_count
    res = {"gpu": torch.cuda.get_device_name(), "sms": sms, "triton": triton.__version__, "torch": torch.__version__,
           "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    # 1. Starting programs: 2^20 programs of each warp count.
    n = 1 << 20
    out_t = torch.empty(n, dtype=torch.int32, device="cuda")
    starts = {}
    for w in (1, 4, 8, 32):
        ms = bench(lambda: _start_only[(n,)](out_t, num_warps=w))
        starts[w] = {"ms": ms, "ns_per_program_per_sm": ms * 1e6 * sms / n}
    res["program_start"] = starts
    json.dump(res, open(out, "w"), indent=1)
    # 2. Matrix instructions: a compute-bound loop of dots per tile shape and warp count, fp16 in, fp32 out.
    res["mma"] = mma = []
    shapes = [(2, 64, 64), (2, 64, 128), (4, 64, 16), (4, 64, 32), (4, 64, 64), (4, 64, 128), (4, 64, 256),
              (8, 128, 64), (8, 128, 128), (8, 128, 256)]
    for warps, bm, bn in shapes:
        bk, iters = 64, 256
        if True:
            a = torch.randn(bm * bk, device="cuda", dtype=torch.float16)
            b = torch.randn(bk * bn, device="cuda", dtype=torch.float16)
            progs = sms * 4
            c = torch.empty(progs * bm * bn, device="cuda", dtype=torch.float32)
            try:
                k = _mma_loop.warmup(a, b, c, iters, bm, bn, bk, grid=(progs,), num_warps=warps, num_stages=1)
                kind = "wgmma" if "wgmma" in k.asm["ptx"] else ("mma.sync" if "mma.sync" in k.asm["ptx"] else "fma")
                ms = bench(lambda: _mma_loop[(progs,)](a, b, c, iters, bm, bn, bk, num_warps=warps, num_stages=1))
                flops = 2 * bm * bn * bk * iters * progs
                mma.append({"warps": warps, "bm": bm, "bn": bn, "bk": bk, "instruction": kind, "ms": ms,
                            "tflops": flops / ms / 1e9, "regs": getattr(k, "n_regs", None)})
            except Exception as e:  # noqa: BLE001
                mma.append({"warps": warps, "bm": bm, "bn": bn, "error": f"{type(e).__name__}: {str(e)[:200]}"})
            json.dump(res, open(out, "w"), indent=1)
    # 3. L2 feed: 8 MB re-read by every program.
    span = 2 * 1024 * 1024
    x = torch.randn(span, device="cuda", dtype=torch.float32)
    l2 = []
    for w, block in ((4, 1024), (8, 2048), (8, 4096)):
        progs, iters = sms * 8, 512
        o = torch.empty(progs * block, device="cuda", dtype=torch.float32)
        ms = bench(lambda: _l2_read[(progs,)](x, o, span, iters, block, num_warps=w))
        l2.append({"warps": w, "block": block, "ms": ms, "gbs": progs * iters * block * 4 / ms / 1e6})
    res["l2"] = l2
    json.dump(res, open(out, "w"), indent=1)
    print(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
