"""What one warp's scalar global load costs the L1, by how far apart its lanes' addresses are: a calibration of
kernels of our own (never the evaluation's), for the rule models 17 and 18 price an access by (docs/rank.md,
"Model 18's held-out check": the sectors a warp instruction touches, 4 a wavefront), against the lines it
touches and against model 19's: the passes of the L1's 32 banks its lanes' words need.

Each program is one warp that reads, many times over, 32 addresses `STRIDE` elements apart (lane i at
i x STRIDE), shifted by 17 elements from one load to the next so that every start in a line is seen, from a
buffer small enough to stay in L1. Eight loads an iteration keep the issue below the L1's rate. The
result, per (element bytes, lane stride): the clocks an SM spends per warp load, at the SM clock given.

    python3 benchmarks/rank_l1.py OUT.json [--clock-ghz 1.98]     # on the GPU machine
    python3 benchmarks/rank_l1.py --summary OUT.json              # here: against the sector and line rules
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gpu_runs import header, keep, parser, run_or_summary  # noqa: E402

STRIDES_BYTES = (2, 4, 8, 12, 16, 32, 64, 128, 196, 256)  # 12 and 196 (3 and 49 words): every bank, many lines
# lanes holding distinct addresses (the rest repeat them, as a slice of a 2-D layout's rows does: the conv1d's
# weights, 16, 8 or 4 lanes a row), measured at the strides such slices have
DISTINCT = (32, 16, 8, 4)
DISTINCT_STRIDES = (8, 16, 32, 64, 128)
LOADS_AN_ITERATION = 8
SHIFT = 17  # elements between one load's start and the next's: every offset in a line comes round


def kernel():
    import triton
    import triton.language as tl

    @triton.jit
    def strided_loads(x_ptr, out_ptr, iters, STRIDE: tl.constexpr, SHIFT: tl.constexpr, LOADS: tl.constexpr,
                      DISTINCT: tl.constexpr):
        lane = tl.arange(0, 32) % DISTINCT
        acc = tl.zeros((32,), dtype=tl.float32)
        for i in range(iters):
            base = (i % 16) * (LOADS * SHIFT)
            for j in tl.static_range(LOADS):
                acc += tl.load(x_ptr + lane * STRIDE + base + j * SHIFT).to(tl.float32)
        tl.store(out_ptr + tl.program_id(0) * 32 + tl.arange(0, 32), acc)

    return strided_loads


def run(out: Path, clock_ghz: float) -> dict:
    import torch
    import triton

    from irscope.harness.runtime import do_bench

    fn = kernel()
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    programs, iters = sms * 16, 2048  # 16 one-warp programs an SM
    doc = header(clock_ghz=clock_ghz, sms=sms, programs=programs, iters=iters, loads_an_iteration=LOADS_AN_ITERATION)
    cases = [(e, s, 32) for e in (2, 4) for s in STRIDES_BYTES]
    cases += [(e, s, d) for e in (2, 4) for s in DISTINCT_STRIDES for d in DISTINCT if d != 32]
    for elem, stride_bytes, distinct in cases:
        if stride_bytes % elem:
            continue
        dtype = {2: torch.float16, 4: torch.float32}[elem]
        stride = stride_bytes // elem
        span = 32 * stride + 16 * LOADS_AN_ITERATION * SHIFT + 64
        x = torch.randn(span, device="cuda").to(dtype)
        y = torch.empty(programs * 32, device="cuda", dtype=torch.float32)
        launch = lambda: fn[(programs,)](x, y, iters, STRIDE=stride, SHIFT=SHIFT,  # noqa: E731
                                        LOADS=LOADS_AN_ITERATION, DISTINCT=distinct,
                                        num_warps=1)
        launch()
        torch.cuda.synchronize()
        ms = do_bench(launch)
        loads_per_sm = programs * iters * LOADS_AN_ITERATION / sms
        row = {"element_bytes": elem, "stride_bytes": stride_bytes, "distinct_lanes": distinct, "ms": ms,
               "clocks_a_load": ms * 1e-3 * clock_ghz * 1e9 / loads_per_sm}
        keep(doc, row, out)
    return doc


def summary(path: Path) -> None:
    from irscope.rank.facts import _banks_a_row, _lines_a_row, _wavefronts_a_row
    doc = json.loads(path.read_text())
    print(f"{doc['versions']['gpu']}, at {doc['clock_ghz']} GHz: clocks an SM spends per warp load")
    print("elem  lane stride  distinct lanes  measured  sectors/4 (models 17-18)  lines  banks (model 19)")
    for r in doc["rows"]:
        elem, stride, distinct = r["element_bytes"], r["stride_bytes"], r.get("distinct_lanes", 32)
        rules = [f(distinct, stride, elem, elem) for f in (_wavefronts_a_row, _lines_a_row, _banks_a_row)]
        print(f"{elem:4d}  {stride:11d}  {distinct:14d}  {r['clocks_a_load']:8.2f}  {rules[0]:24.2f}  {rules[1]:5.2f}"
              f"  {rules[2]:15.2f}")


def main() -> int:
    ap = parser(__doc__.split("\n\n")[0])
    ap.add_argument("--clock-ghz", type=float, default=1.98)
    args = ap.parse_args()
    return run_or_summary(ap, args, lambda out: run(out, args.clock_ghz), summary)


if __name__ == "__main__":
    sys.exit(main())
