"""`irscope compile --triton X`: the first one in a fresh cache (it makes the environment) and the next ones.

    python benchmarks/bench_versions.py [--version 3.6.0] [--repeat 3] [--kernel add] [--target sm_90a]

Each run is a fresh `irscope compile` process with IRSCOPE_CACHE pointing at a new temporary folder, so
the first compile creates the virtual environment (venv + `pip install triton==X pyyaml`: pip's own
wheel cache may already hold the wheel, which is what a second CI run with a kept pip cache sees); the
next --repeat compiles reuse it. For scale, the same compile under the running Triton is timed too.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def timed(args: list[str], env: dict) -> float:
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "irscope", *args], env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"failed: irscope {' '.join(args)}\n{proc.stderr}")
    return time.perf_counter() - started


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--version", default="3.6.0")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--kernel", default="add")
    ap.add_argument("--target", default="sm_90a")
    a = ap.parse_args()
    cache = Path(tempfile.mkdtemp(prefix="irscope-bench-cache-"))
    out = Path(tempfile.mkdtemp(prefix="irscope-bench-out-"))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "IRSCOPE_CACHE": str(cache)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    try:
        base = ["compile", a.kernel, "--target", a.target, "--out", str(out)]
        first = timed(base + ["--triton", a.version], env)
        size = sum(f.stat().st_size for f in cache.rglob("*") if f.is_file() and not f.is_symlink())
        again = [timed(base + ["--triton", a.version], env) for _ in range(a.repeat)]
        running = [timed(base, env) for _ in range(a.repeat)]
    finally:
        shutil.rmtree(cache, ignore_errors=True)
        shutil.rmtree(out, ignore_errors=True)
    print(f"irscope compile {a.kernel} --target {a.target} --triton {a.version}")
    print(f"  first, fresh cache (creates the environment, {size / 2**20:.0f} MiB): {first:6.1f} s")
    print(f"  next ones (median of {a.repeat}):                         {statistics.median(again):6.1f} s"
          f"  (all: {', '.join(f'{t:.1f}' for t in again)})")
    print(f"  the running Triton, no --triton (median of {a.repeat}):      {statistics.median(running):6.1f} s")


if __name__ == "__main__":
    main()
