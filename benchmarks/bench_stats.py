"""`irscope stats` on a snapshot whose text stages are 100k lines or more.

    python benchmarks/bench_stats.py [--lines 100000] [--repeat 5] [--snapshot DIR]

Takes a real compiled snapshot (compiles matmul for sm_90a if none is given), writes a copy whose
ttgir, llir, ptx and sass are each repeated until they pass --lines lines (real IR, just more of it;
irscope.json's line counts and sha256 are updated), then times `irscope stats` on it in a fresh process:
once cold (no cached analysis) and --repeat times warm (the per-stage analysis cached in the folder).
"""
from __future__ import annotations

import argparse
import hashlib
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
CACHE = ".irscope-analysis.json"


def inflate(src: Path, dest: Path, lines: int) -> dict[str, int]:
    shutil.copytree(src, dest)
    meta = json.loads((dest / "irscope.json").read_text())
    sizes = {}
    for stage, info in meta["stages"].items():
        if info.get("lines") is None or stage in ("source", "ttir"):
            continue
        path = dest / info["file"]
        text = path.read_text()
        reps = max(1, -(-lines // max(1, text.count("\n"))))
        big = text * reps
        path.write_text(big)
        info.update(lines=big.count("\n"), bytes=len(big.encode()), sha256=hashlib.sha256(big.encode()).hexdigest())
        sizes[stage] = info["lines"]
    (dest / "irscope.json").write_text(json.dumps(meta, indent=1))
    (dest / CACHE).unlink(missing_ok=True)
    return sizes


def _stats(folder: Path) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "irscope", "stats", str(folder)], env=ENV, check=True,
                   stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--lines", type=int, default=100_000)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--snapshot", type=Path, help="a compiled snapshot folder to inflate (default: compile matmul)")
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="irscope-bench-") as tmp:
        src = args.snapshot
        if src is None:
            subprocess.run([sys.executable, "-m", "irscope", "compile", "matmul", "--target", "sm_90a", "--out",
                            f"{tmp}/src"], env=ENV, check=True, stdout=subprocess.DEVNULL)
            src = Path(tmp) / "src" / "matmul" / "default" / "sm_90a"
        big = Path(tmp) / "big"
        sizes = inflate(src, big, args.lines)
        subprocess.run([sys.executable, "-m", "irscope", "--version"], env=ENV, check=True, stdout=subprocess.DEVNULL)
        cold = _stats(big)
        warm = [_stats(big) for _ in range(args.repeat)]
        (big / CACHE).unlink()
        cold_again = [_stats_cold(big) for _ in range(max(1, args.repeat // 2))]
    print(json.dumps({"benchmark": "irscope stats", "stage_lines": sizes, "cold_s": round(cold, 3),
                      "cold_median_s": round(statistics.median([cold, *cold_again]), 3),
                      "warm_median_s": round(statistics.median(warm), 3), "goal": "< 1 s"}))


def _stats_cold(folder: Path) -> float:
    (folder / CACHE).unlink(missing_ok=True)
    return _stats(folder)


if __name__ == "__main__":
    main()
