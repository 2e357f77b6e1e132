"""What a stream of records costs when a kernel reads a few fields of each: a calibration on a kernel of our own
(never the evaluation's or a held-out kernel's), for what models 15-20 got wrong on 3-D Gaussian splatting's
covariance (docs/rank.md, "Model 20's held-out check"): every config priced at the DRAM bound, where the H100
took 186-466 us in an order that followed the records each thread loads at once.

Each program takes BLOCK records RECORD fp32 words apart, reads FIELDS consecutive words of each (lane i's at
i x RECORD + OFFSET), and writes their sum, one word a record. Per (RECORD, FIELDS, BLOCK, num_warps): the
time over N records, the registers and the programs an SM holds (from the compiled kernel), the records an
SM has in flight at once (programs x BLOCK), the sectors of 32 bytes the fields touch, and the bandwidth
that implies.

    python3 benchmarks/rank_aos.py OUT.json            # on the GPU machine (about 3 minutes)
    python3 benchmarks/rank_aos.py --summary OUT.json  # here
    python3 benchmarks/rank_aos.py --fit OUT.json --dram-gbs GBS  # model 21's three figures from its rows

`--fit` is how model 21's figures are made (`fit`): the seconds a run of sectors and a sector cost the
whole chip, and how many records in flight an SM double that, from OUT.json's rows and the DRAM bandwidth
the chip's calibration measured (its stores, a word a record, are priced there, as the model prices them).
"""
from __future__ import annotations

import json
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gpu_runs import header, keep, parser, run_or_summary  # noqa: E402

N = 4_000_000
RECORDS = (8, 16, 32, 59, 64)  # words a record; 59: an odd size, whose fields start anywhere in a sector
FIELDS = (1, 2, 4, 8)
PER_THREAD = (1, 2, 4, 8)  # records a thread loads at once: BLOCK = 32 x num_warps x this
WARPS = (1, 4)
OFFSET = 51  # the first field read, in words (mod RECORD)


def kernel():
    import triton
    import triton.language as tl

    @triton.jit
    def record_fields(x_ptr, out_ptr, n, RECORD: tl.constexpr, OFFSET: tl.constexpr, FIELDS: tl.constexpr,
                      BLOCK: tl.constexpr):
        i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        ok = i < n
        g = x_ptr + i * RECORD + OFFSET
        acc = tl.load(g, mask=ok, other=0.0)
        for f in tl.static_range(1, FIELDS):
            acc += tl.load(g + f, mask=ok, other=0.0)
        tl.store(out_ptr + i, acc, mask=ok)

    return record_fields


def sectors_a_record(record: int, offset: int, fields: int, n: int = 4096) -> float:
    """The 32-byte sectors the fields of a record touch, averaged over records (their starts move by
    4 x record bytes)."""
    total = 0
    for r in range(n):
        start = (r * record + offset) * 4
        total += (start + 4 * fields - 1) // 32 - start // 32 + 1
    return total / n


def run(out: Path) -> dict:
    import torch
    import triton

    from irscope.harness.runtime import do_bench

    fn = kernel()
    props = torch.cuda.get_device_properties(0)
    sms = props.multi_processor_count
    doc = header(sms=sms, n=N, offset=OFFSET)
    y = torch.empty(N, device="cuda", dtype=torch.float32)
    for record in RECORDS:
        x = torch.randn(N * record + 64, device="cuda", dtype=torch.float32)
        for fields in FIELDS:
            offset = OFFSET % record if OFFSET % record + fields <= record else record - fields
            for warps in WARPS:
                for per in PER_THREAD:
                    block = 32 * warps * per
                    grid = (triton.cdiv(N, block),)
                    compiled = fn[grid](x, y, N, RECORD=record, OFFSET=offset, FIELDS=fields, BLOCK=block,
                                        num_warps=warps)
                    torch.cuda.synchronize()
                    got = y[:1000].double()
                    want = sum(x[torch.arange(1000, device="cuda") * record + offset + f].double() for f in range(fields))
                    err = float((got - want).abs().max())
                    ms = do_bench(lambda: fn[grid](x, y, N, RECORD=record, OFFSET=offset, FIELDS=fields, BLOCK=block,  # noqa: B023
                                                   num_warps=warps))
                    regs = compiled.n_regs
                    by_regs = 65536 // max(1, math.ceil(regs * 32 * warps / 256) * 256) if regs else 64
                    programs = max(0, min(32, 64 // warps, by_regs))
                    sectors = sectors_a_record(record, offset, fields)
                    row = {"record": record, "fields": fields, "offset": offset, "num_warps": warps, "per_thread": per,
                           "block": block, "ms": ms, "max_abs_error": err, "registers": regs,
                           "spills": compiled.n_spills, "programs_an_sm": programs,
                           "records_in_flight_an_sm": programs * block, "sectors_a_record": sectors,
                           "sector_gbs": N * (sectors * 32 + 4) / (ms * 1e-3) / 1e9,
                           "useful_gbs": N * (fields * 4 + 4) / (ms * 1e-3) / 1e9}
                    keep(doc, row, out)
        del x
    return doc


def fit(doc: dict, dram_gbs: float, rounds: int = 8) -> dict:
    """Model 21's figures from a run's rows (irscope/rank/model.py `_record_seconds`):

    - `record_run_ps`, `record_sector_ps`: least squares of the time of the rows of one record a thread at 4
      warps (16-64-word records, 1-8 fields: 16 rows), less their stores at `dram_gbs`, over N x (runs x a
      + sectors x b) x the flight's slowdown (records.layout_of's sectors and runs of a record);
    - `record_flight`: the records in flight an SM past 1,024 that add their whole time again, the slope
      through the origin of the 59-word records' 32 rows' time over that cost, less one, against the
      records in flight past 1,024.

    Each uses the other's figure: alternated `rounds` times from no slowdown (it settles in a few)."""
    import numpy as np

    from irscope.rank.records import layout_of

    n = doc["n"]

    def parts(r: dict) -> tuple[float, float, float]:
        sectors, runs = layout_of(r["record"] * 4, [(r["offset"] * 4, (r["offset"] + r["fields"]) * 4)])
        return runs, sectors, r["ms"] * 1e-3 - n * 4 / (dram_gbs * 1e9)

    ones = [r for r in doc["rows"] if r["per_thread"] == 1 and r["num_warps"] == 4 and r["record"] >= 16]
    wide = [r for r in doc["rows"] if r["record"] == 59]
    if len(ones) < 2 or not wide:
        raise SystemExit("rank_aos: --fit needs the rows of one record a thread at 4 warps and the 59-word rows: "
                         "a run of this script's whole grid")
    if any(t <= 0 for *_, t in map(parts, ones + wide)):
        raise SystemExit(f"rank_aos: some rows took less than their stores at {dram_gbs} GB/s: is --dram-gbs this chip's?")
    flight = math.inf
    for _ in range(rounds):
        a = np.array([[n * runs * 1e-12, n * sectors * 1e-12] for runs, sectors, _ in map(parts, ones)])
        slow = np.array([1 + max(0, r["records_in_flight_an_sm"] - 1024) / flight for r in ones])
        y = np.array([t for *_, t in map(parts, ones)])
        (run_ps, sector_ps), *_ = np.linalg.lstsq(a * slow[:, None], y, rcond=None)
        past = np.array([r["records_in_flight_an_sm"] - 1024 for r in wide], dtype=float)
        extra = np.array([t / (n * (runs * run_ps + sectors * sector_ps) * 1e-12) - 1 for runs, sectors, t in map(parts, wide)])
        if past @ extra <= 0:
            raise SystemExit("rank_aos: the 59-word rows do not slow with the records in flight: no flight figure")
        flight = float(past @ past / (past @ extra))
    fitted = a * slow[:, None] @ np.array([run_ps, sector_ps])
    return {"gpu": doc["versions"]["gpu"], "dram_gbs": dram_gbs, "rows": len(ones), "flight_rows": len(wide),
            "record_run_ps": round(float(run_ps), 2), "record_sector_ps": round(float(sector_ps), 2),
            "record_flight": round(flight), "worst_error": round(float(np.abs(fitted / y - 1).max()), 3)}


def summary(path: Path) -> None:
    doc = json.loads(path.read_text())
    print(f"{doc['versions']['gpu']}: {doc['n']} records, each reading FIELDS words of RECORD")
    print("record fields warps per_thread regs programs/SM in-flight/SM      us  sectors  sector GB/s")
    for r in doc["rows"]:
        print(f"{r['record']:6d} {r['fields']:6d} {r['num_warps']:5d} {r['per_thread']:10d} {r['registers']:4d}"
              f" {r['programs_an_sm']:11d} {r['records_in_flight_an_sm']:12d} {r['ms'] * 1e3:7.1f} "
              f"{r['sectors_a_record']:8.3f} {r['sector_gbs']:11.0f}")


def main() -> int:
    ap = parser(__doc__.split("\n\n")[0])
    ap.add_argument("--fit", metavar="OUT.json", help="print model 21's figures from this run's rows")
    ap.add_argument("--dram-gbs", type=float, help="with --fit: the DRAM bandwidth the chip's calibration measured")
    args = ap.parse_args()
    if args.fit:
        if not args.dram_gbs:
            ap.error("--fit needs --dram-gbs (the chip's: irscope/rank/chips.py, model 4's dram_gbs)")
        print(json.dumps(fit(json.loads(Path(args.fit).read_text()), args.dram_gbs)))
        return 0
    return run_or_summary(ap, args, run, summary)


if __name__ == "__main__":
    sys.exit(main())
