"""Sweep speed: a cold parallel sweep against the same points compiled one after another in one process,
and an unchanged 100-point sweep run again (every point from the cache).

    python benchmarks/bench_sweep.py cold  [--jobs 2] [--file benchmarks/sweep-cold.yaml]
    python benchmarks/bench_sweep.py rerun [--file benchmarks/sweep-100.yaml] [--repeat 5]

Both time `irscope sweep` as a user runs it (a fresh `python -m irscope` process, startup included). The
sequential baseline is one fresh process that compiles and writes every point in turn with
`irscope.harness.batch.compile_one`, so it pays Triton's one-time set-up once, as a plain loop would.
Results go to stdout as one JSON line per measurement; docs/benchmarks.md records them.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
# Time irscope as an installed package runs: with its modules byte-compiled (.pyc), which
# PYTHONDONTWRITEBYTECODE=1 would prevent, making every run compile them from source again.
ENV.pop("PYTHONDONTWRITEBYTECODE", None)

SEQUENTIAL = """
import sys, time
from pathlib import Path
from irscope.sweep import expand, load_sweep
from irscope.pipeline import compile_one
points = expand(load_sweep(sys.argv[1]))
out = Path(sys.argv[2])
bad = [o for o in (compile_one(p.pipeline_point(), out) for p in points) if not o.ok]
sys.exit(1 if bad else 0)
"""


def _irscope(*args: str, quiet: bool = True) -> float:
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "irscope", *args], env=ENV, capture_output=quiet, text=True)
    elapsed = time.perf_counter() - started
    if proc.returncode != 0:
        sys.exit(f"irscope {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr if quiet else ''}")
    return elapsed


def cold(file: Path, jobs: int) -> None:
    _irscope("--version")  # byte-compile irscope once, outside the timings
    with tempfile.TemporaryDirectory(prefix="irscope-bench-") as tmp:
        seq_out, par_out = Path(tmp) / "sequential", Path(tmp) / "parallel"
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", SEQUENTIAL, str(file), str(seq_out)], env=ENV, check=True)
        sequential = time.perf_counter() - started
        parallel = _irscope("sweep", str(file), "--out", str(par_out), "--jobs", str(jobs), "--force")
        points = sum(1 for _ in par_out.rglob("irscope.json"))
    print(json.dumps({"benchmark": "cold sweep", "file": str(file), "points": points, "jobs": jobs,
                      "sequential_s": round(sequential, 2), "parallel_s": round(parallel, 2),
                      "speedup": round(sequential / parallel, 2), "goal": ">= 1.7 on 2 cores"}))


def rerun(file: Path, repeat: int, out: Path | None) -> None:
    tmp = None
    if out is None:
        tmp = tempfile.mkdtemp(prefix="irscope-bench-")
        out = Path(tmp)
    _irscope("--version")
    try:
        first = _irscope("sweep", str(file), "--out", str(out))  # compiles whatever is not fresh yet
        times = [_irscope("sweep", str(file), "--out", str(out)) for _ in range(repeat)]
        points = sum(1 for _ in out.rglob("irscope.json"))
        print(json.dumps({"benchmark": "unchanged sweep re-run", "file": str(file), "points": points,
                          "first_run_s": round(first, 2), "rerun_median_s": round(statistics.median(times), 3),
                          "rerun_max_s": round(max(times), 3), "goal": "< 2 s for 100 points"}))
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="what", required=True)
    c = sub.add_parser("cold")
    c.add_argument("--file", type=Path, default=ROOT / "benchmarks" / "sweep-cold.yaml")
    c.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    r = sub.add_parser("rerun")
    r.add_argument("--file", type=Path, default=ROOT / "benchmarks" / "sweep-100.yaml")
    r.add_argument("--repeat", type=int, default=5)
    r.add_argument("--out", type=Path, help="keep the snapshots here (default: a temporary folder)")
    args = p.parse_args()
    if args.what == "cold":
        cold(args.file, args.jobs)
    else:
        rerun(args.file, args.repeat, args.out)


if __name__ == "__main__":
    main()
