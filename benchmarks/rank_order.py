"""How much a matmul's launch order costs: kernels/matmul.py's `matmul_kernel` (irscope's own, never an
evaluation space's config list) at GROUP_M 1-64 for a few tiles and sizes, on the GPU. No model of irscope
prices GROUP_M (docs/rank.md, "Configs predicted alike"): this measures what a model of the launch order's
reuse in L2 would have to explain, beside the DRAM traffic each order implies if every wave's programs
read their A and B panels once and nothing is left in L2 from the wave before.

    python3 benchmarks/rank_order.py OUT.json            # on the GPU machine (about 2 minutes)
    python3 benchmarks/rank_order.py --summary OUT.json  # here
"""
from __future__ import annotations

import json
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gpu_runs import header, keep, parser, run_or_summary  # noqa: E402

SIZES = [(8192, 8192, 4096), (16384, 16384, 1024), (4096, 16384, 4096)]
TILES = [(128, 256, 64, 8, 3), (128, 128, 64, 8, 3), (64, 128, 64, 4, 4)]  # BM, BN, BK, warps, stages
GROUPS = (1, 2, 4, 8, 16, 32, 64)


def tile_of(pid: int, tiles_m: int, tiles_n: int, group: int) -> tuple[int, int]:
    """(pid_m, pid_n) as matmul_kernel computes them."""
    group_size = group * tiles_n
    first_m = (pid // group_size) * group
    rows = min(tiles_m - first_m, group)
    return first_m + (pid % group_size) % rows, (pid % group_size) // rows


def wave_bytes(m: int, n: int, k: int, bm: int, bn: int, group: int, per_wave: int, elt: int = 2) -> int:
    """DRAM bytes if each wave reads its distinct A row panels and B column panels once (K deep) and keeps
    nothing from the wave before."""
    tiles_m, tiles_n = math.ceil(m / bm), math.ceil(n / bn)
    programs = tiles_m * tiles_n
    total = 0
    for start in range(0, programs, per_wave):
        seen = [tile_of(p, tiles_m, tiles_n, group) for p in range(start, min(programs, start + per_wave))]
        total += len({a for a, _ in seen}) * bm * k * elt + len({b for _, b in seen}) * bn * k * elt
    return total


def run(out: Path) -> dict:
    import torch
    import triton

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from irscope.harness.runtime import do_bench
    from kernels.matmul import matmul_kernel

    sms = torch.cuda.get_device_properties(0).multi_processor_count
    doc = header(sms=sms)
    for m, n, k in SIZES:
        torch.manual_seed(0)
        a = torch.randn(m, k, device="cuda", dtype=torch.float16)
        b = torch.randn(k, n, device="cuda", dtype=torch.float16)
        c = torch.empty(m, n, device="cuda", dtype=torch.float16)
        want = None
        for bm, bn, bk, warps, stages in TILES:
            grid = (triton.cdiv(m, bm) * triton.cdiv(n, bn),)
            for group in GROUPS:
                def launch():
                    return matmul_kernel[grid](a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                                               c.stride(0), c.stride(1), BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk,
                                               GROUP_M=group, num_warps=warps, num_stages=stages)
                compiled = launch()
                torch.cuda.synchronize()
                if want is None:
                    want = (a[:256].float() @ b.float()[:, :256])
                err = float((c[:256, :256].float() - want).abs().max())
                ms = do_bench(launch)
                regs, shared = compiled.n_regs, compiled.metadata.shared
                by_regs = 65536 // max(1, math.ceil(regs * 32 * warps / 256) * 256)
                by_smem = (228 * 1024) // max(1, shared + 1024) if shared else 32
                per_sm = max(1, min(by_regs, by_smem, 64 // warps, 32))
                row = {"m": m, "n": n, "k": k, "bm": bm, "bn": bn, "bk": bk, "warps": warps, "stages": stages,
                       "group": group, "ms": ms, "max_abs_error": err, "registers": regs, "shared": shared,
                       "programs_an_sm": per_sm, "tflops": 2 * m * n * k / (ms * 1e-3) / 1e12,
                       "wave_dram_bytes": wave_bytes(m, n, k, bm, bn, group, sms * per_sm)}
                keep(doc, row, out)
    return doc


def summary(path: Path) -> None:
    doc = json.loads(path.read_text())
    print(f"{doc['versions']['gpu']}: matmul_kernel by GROUP_M (time against the best group of the same tile)")
    rows = doc["rows"]
    for key in sorted({(r["m"], r["n"], r["k"], r["bm"], r["bn"], r["bk"]) for r in rows}):
        mine = [r for r in rows if (r["m"], r["n"], r["k"], r["bm"], r["bn"], r["bk"]) == key]
        best = min(r["ms"] for r in mine)
        cells = "  ".join(f"G{r['group']}: {r['ms'] / best:.2f} ({r['wave_dram_bytes'] / 1e9:.1f} GB)" for r in mine)
        print(f"{key[0]}x{key[1]}x{key[2]} {key[3]}x{key[4]}x{key[5]}: best {best * 1e3:.0f} us; {cells}")


def main() -> int:
    ap = parser(__doc__.split("\n\n")[0])
    return run_or_summary(ap, ap.parse_args(), run, summary)


if __name__ == "__main__":
    sys.exit(main())
