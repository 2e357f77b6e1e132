"""What `irscope compile --passes` costs: compile time and snapshot size with and without the pass
timeline, on one kernel and target (docs/passes.md records the numbers).

    PYTHONPATH=. python benchmarks/passes_overhead.py [--kernel matmul] [--target sm_90a] [--repeat 5] [--all]

Each compile runs in this process with stdout/stderr redirected the way compile children do, after one
warm-up compile, so the numbers are the compile's own (no process start, no imports).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

from irscope import harness
from irscope.spec import library
from irscope.store.writer import snapshot_files
from irscope.spec.kernel import CompileOptions
from irscope.targets import get_target


def measure(spec, target, level: str, repeat: int) -> dict:
    walls, cpus, result = [], [], None
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), os.times()
        result = harness.compile_kernel(spec, target, CompileOptions(passes=level), capture_fds=True)
        c1 = os.times()
        walls.append(time.perf_counter() - t0)
        cpus.append((c1.user - c0.user) + (c1.system - c0.system))
        assert result.ok, result.error
    files = snapshot_files(result)
    passes = {k: len(v) for k, v in files.items() if k.startswith("passes/")}
    summary = result.passes.summary() if result.passes else {}
    return {"level": level or "off", "wall_s": statistics.median(walls), "cpu_s": statistics.median(cpus),
            "passes_bytes": sum(passes.values()), "dump_bytes": summary.get("dump_bytes", 0),
            "read_s": summary.get("read_s", 0.0), "steps": summary.get("steps", 0),
            "distinct_irs": summary.get("distinct_irs", 0)}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--kernel", default="matmul")
    p.add_argument("--target", default="sm_90a")
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--all", action="store_true", help="also measure --passes all (LLVM's passes; slow)")
    args = p.parse_args(argv)
    spec, target = library.load_kernel(args.kernel), get_target(args.target)
    harness.compile_kernel(spec, target, CompileOptions(), capture_fds=True)  # warm up
    rows = [measure(spec, target, level, args.repeat) for level in ("", "mlir") + (("all",) if args.all else ())]
    base = rows[0]["wall_s"]
    sys.stdout.write(f"{args.kernel} on {args.target}, median of {args.repeat}\n")
    sys.stdout.write(f"{'passes':7} {'wall s':>7} {'cpu s':>7} {'x':>5} {'steps':>6} {'IRs':>5} "
                     f"{'dumps MB':>9} {'parse s':>8} {'stored KB':>10}\n")
    for r in rows:
        sys.stdout.write(f"{r['level']:7} {r['wall_s']:7.2f} {r['cpu_s']:7.2f} {r['wall_s'] / base:5.1f} "
                         f"{r['steps']:6} {r['distinct_irs']:5} {r['dump_bytes'] / 1e6:9.1f} {r['read_s']:8.2f} "
                         f"{r['passes_bytes'] / 1024:10.0f}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
