"""Which part of the tutorial matmul makes its narrow tiles lag at short K (docs/rank.md, "The matmul's
parts at short K")? On the GPU machine, through Triton's JIT: kernels/matmul.py's `matmul_kernel` written
once more with each of its parts behind a constexpr switch, timed with each part taken out in turn.

    python3 benchmarks/rank_matmul_parts.py OUT.json [--sizes 8192,8192,512 ...] [--passes 2]
    python benchmarks/rank_matmul_parts.py OUT.json --summary   # anywhere: each tile against 128x256, per variant

The parts: GROUP (programs walk the output in groups of 8 rows of tiles; off: row-major), MASK_K (both
loads masked along K every iteration; off: unmasked), MOD (the row and column offsets taken modulo M and
N; off: not), MASK_C (the output's store masked at M and N; off: unmasked). `full` has them all, as
kernels/matmul.py does (checked against it: the same time within the run's spread is expected, and its
own row, `reference`, is timed beside it); `bare` has none. Every variant's output is checked against
torch's matmul before it is timed. The sizes divide every tile, so the switches change no result.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))

# (num_warps, num_stages, BLOCK_M, BLOCK_N, BLOCK_K): the tiles the matmul space's short-K rows rank high
TILES = [(8, 3, 128, 256, 64), (8, 4, 128, 256, 32), (4, 3, 128, 128, 64), (8, 3, 128, 128, 64),
         (8, 4, 128, 128, 32), (4, 4, 128, 128, 32), (4, 4, 64, 128, 64), (4, 4, 64, 256, 32),
         (8, 3, 256, 128, 64), (4, 4, 128, 64, 64)]
SIZES = [(8192, 8192, 512), (4096, 4096, 1024), (4096, 4096, 512), (8192, 8192, 2048)]
ALL = {"GROUP": True, "MASK_K": True, "MOD": True, "MASK_C": True}
VARIANTS = {"full": ALL, "bare": {k: False for k in ALL},
            **{f"no_{k.lower()}": {**ALL, k: False} for k in ALL}}


def _kernel():
    import triton
    import triton.language as tl

    @triton.jit
    def parts(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
              BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
              GROUP: tl.constexpr, MASK_K: tl.constexpr, MOD: tl.constexpr, MASK_C: tl.constexpr):
        pid = tl.program_id(axis=0)
        tiles_m = tl.cdiv(M, BLOCK_M)
        tiles_n = tl.cdiv(N, BLOCK_N)
        if GROUP:
            group_size = GROUP_M * tiles_n
            first_m = (pid // group_size) * GROUP_M
            rows_in_group = min(tiles_m - first_m, GROUP_M)
            pid_m = first_m + (pid % group_size) % rows_in_group
            pid_n = (pid % group_size) // rows_in_group
        else:
            pid_m = pid // tiles_n
            pid_n = pid % tiles_n
        if MOD:
            offs_m = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
            offs_n = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
        else:
            offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
            offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        offs_k = tl.arange(0, BLOCK_K)
        a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
        b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k in range(0, tl.cdiv(K, BLOCK_K)):
            if MASK_K:
                k_left = K - k * BLOCK_K
                a = tl.load(a_ptrs, mask=offs_k[None, :] < k_left, other=0.0)
                b = tl.load(b_ptrs, mask=offs_k[:, None] < k_left, other=0.0)
            else:
                a = tl.load(a_ptrs)
                b = tl.load(b_ptrs)
            acc = tl.dot(a, b, acc)
            a_ptrs += BLOCK_K * stride_ak
            b_ptrs += BLOCK_K * stride_bk
        c = acc.to(c_ptr.dtype.element_ty)
        rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        c_ptrs = c_ptr + rows[:, None] * stride_cm + cols[None, :] * stride_cn
        if MASK_C:
            tl.store(c_ptrs, c, mask=(rows[:, None] < M) & (cols[None, :] < N))
        else:
            tl.store(c_ptrs, c)

    return parts


def _reference():
    sys.path.insert(0, os.path.dirname(HERE))
    from kernels.matmul import matmul_kernel  # the space's own kernel, as the evaluation compiled it
    return matmul_kernel


def summary(doc: dict) -> dict:
    """{"MxNxK": {"wW sS BMxBNxBK": {variant: time / the best 128x256 tile's time in that variant}}}: how far
    each tile runs behind the wide tile, with each part of the kernel and without it (medians over passes)."""
    import statistics

    times: dict = {}
    for r in doc["rows"]:
        if "times_ms" in r:
            size = f"{r['M']}x{r['N']}x{r['K']}"
            tile = f"w{r['warps']} s{r['stages']} {r['bm']}x{r['bn']}x{r['bk']}"
            times.setdefault(size, {}).setdefault(tile, {})[r["variant"]] = statistics.median(r["times_ms"])
    out: dict = {}
    for size, tiles in times.items():
        variants = sorted({v for t in tiles.values() for v in t})
        wide = {v: min(t[v] for name, t in tiles.items() if "128x256x" in name and v in t) for v in variants}
        out[size] = {name: {v: round(t[v] / wide[v], 3) for v in variants if v in t} for name, t in tiles.items()}
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--sizes", nargs="*", default=None, help="M,N,K ...")
    ap.add_argument("--passes", type=int, default=2)
    ap.add_argument("--summary", action="store_true", help="print OUT.json's summary (no GPU needed)")
    args = ap.parse_args()
    if args.summary:
        with open(args.out) as f:
            print(json.dumps(summary(json.load(f)), indent=1))
        return 0
    import torch
    import triton

    sizes = [tuple(int(x) for x in s.split(",")) for s in args.sizes] if args.sizes else SIZES
    parts = _kernel()
    try:
        reference = _reference()
    except Exception as e:  # irscope's spec imports need its dependencies; the variants do not
        print(f"no reference row: {type(e).__name__}: {e}", file=sys.stderr)
        reference = None
    doc = {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "command": " ".join(["benchmarks/rank_matmul_parts.py", *sys.argv[1:]]),
           "versions": {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
                        "triton": triton.__version__, "python": sys.version.split()[0]},
           "variants": VARIANTS, "rows": []}
    names = list(VARIANTS) + (["reference"] if reference is not None else [])
    for M, N, K in sizes:
        torch.manual_seed(0)
        a = torch.randn(M, K, device="cuda", dtype=torch.float16)
        b = torch.randn(K, N, device="cuda", dtype=torch.float16)
        want = torch.matmul(a, b)
        c = torch.empty(M, N, device="cuda", dtype=torch.float16)
        jobs = [(t, v) for t in TILES for v in names]
        times: dict = {}
        for p in range(args.passes):
            random.Random(p).shuffle(jobs)
            for (w, s, bm, bn, bk), v in jobs:
                grid = (triton.cdiv(M, bm) * triton.cdiv(N, bn),)
                common = (a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0),
                          c.stride(1))
                if v == "reference":
                    def run():
                        reference[grid](*common, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8, num_warps=w,
                                        num_stages=s)
                else:
                    def run():
                        parts[grid](*common, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8, num_warps=w,
                                    num_stages=s, **VARIANTS[v])
                key = (w, s, bm, bn, bk, v)
                if isinstance(times.get(key), str):
                    continue  # failed in the first pass
                try:
                    if p == 0:
                        c.fill_(float("nan"))
                        run()
                        torch.cuda.synchronize()
                        err = ((c.float() - want.float()).abs().max() / want.float().abs().max()).item()
                        if not err < 1e-2:
                            raise RuntimeError(f"wrong result: max error {err:.3g} of the largest value")
                    ms = float(triton.testing.do_bench(run, warmup=25, rep=100, return_mode="median"))
                    times.setdefault(key, []).append(ms)
                except Exception as e:
                    times[key] = f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
        for (w, s, bm, bn, bk, v), t in times.items():
            row = {"M": M, "N": N, "K": K, "warps": w, "stages": s, "bm": bm, "bn": bn, "bk": bk, "variant": v}
            row.update({"error": t} if isinstance(t, str) else {"times_ms": t})
            doc["rows"].append(row)
        with open(args.out, "w") as f:
            json.dump(doc, f, indent=1)
        print(f"{M}x{N}x{K}: {len(times)} timed", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
