"""The size, time and peak memory of `irscope report`, with and without the compression of embedded values,
side by side in one run (docs/report.md, "Many snapshots").

    python benchmarks/report_size.py snapshots/matmul snapshots/attention
"""
from __future__ import annotations

import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHILD = """
import sys
from irscope.report import page
page.GZIP_FROM = int(sys.argv[1])
from irscope.cli import main
sys.exit(main(["report", *sys.argv[3:], "-o", sys.argv[2]]))
"""


def measure(limit: int, out: Path, inputs: list[str]) -> tuple[float, float, float]:
    """(MiB written, seconds, peak MiB of the child) of one report."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", CHILD, str(limit), str(out), *inputs], check=True,
                   stdout=subprocess.DEVNULL)
    took = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    # ru_maxrss of the children is the largest of any one child: a later, smaller child leaves it as it was
    return out.stat().st_size / 2**20, took, max(peak, before) / 1024


def main(inputs: list[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        # the compressed run first: the children's peak is a maximum, so the smaller run must come first
        for name, limit in (("compressed (default)", None), ("not compressed", 10**15)):
            from irscope.report.page import GZIP_FROM
            mib, took, peak = measure(limit or GZIP_FROM, Path(tmp) / "r.html", inputs)
            print(f"{name:22} {mib:7.1f} MiB  {took:6.1f} s  peak {peak:6.0f} MiB")


if __name__ == "__main__":
    main(sys.argv[1:] or ["snapshots/matmul", "snapshots/attention"])
