"""The cost of going through Dask: one cold sweep on the local pool and on a LocalCluster of as many worker
processes, side by side in one run, then both re-run warm (every point from the cache), and a projection
to more workers from the measured per-point costs.

    python benchmarks/bench_cluster.py [--file benchmarks/sweep-100.yaml] [--workers 2] [--project 32]

Each measurement is `irscope sweep` as a user runs it (a fresh `python -m irscope` process, start-up and,
for the cluster, starting the LocalCluster included), `--force` for the cold runs. Needs the `cluster`
extra. Prints one JSON line per measurement and one with the projection; docs/benchmarks.md records them.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
ENV.pop("PYTHONDONTWRITEBYTECODE", None)


def _load() -> float:
    return os.getloadavg()[0]


def _sweep(file: Path, out: Path, *extra: str) -> dict:
    load = _load()
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "irscope", "sweep", str(file), "--out", str(out), "--json", *extra],
                          env=ENV, capture_output=True, text=True)
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        sys.exit(f"irscope sweep {' '.join(extra)} failed ({proc.returncode}):\n{proc.stderr}")
    data = json.loads(proc.stdout)
    points = data["points"]
    return {"wall_s": round(wall, 2), "points": len(points), "compiled": data["summary"]["compiled"],
            "recorded_compile_s": round(data["summary"]["recorded_ms"]["total"] / 1e3, 2),
            "where": data["summary"]["where"], "load_before": round(load, 2), "load_after": round(_load(), 2)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--file", type=Path, default=ROOT / "benchmarks" / "sweep-100.yaml")
    ap.add_argument("--workers", type=int, default=2, help="local pool jobs = LocalCluster worker processes")
    ap.add_argument("--project", type=int, default=32, help="workers to project the cluster time to")
    args = ap.parse_args()
    subprocess.run([sys.executable, "-m", "irscope", "--version"], env=ENV, capture_output=True)  # byte-compile
    n = args.workers
    with tempfile.TemporaryDirectory(prefix="irscope-bench-cluster-") as tmp:
        local_out, dask_out = Path(tmp) / "local", Path(tmp) / "dask"
        runs = {
            "local_cold": _sweep(args.file, local_out, "--jobs", str(n), "--force"),
            "dask_cold": _sweep(args.file, dask_out, "--cluster", f"local:{n}", "--force"),
            "local_warm": _sweep(args.file, local_out, "--jobs", str(n)),
            "dask_warm": _sweep(args.file, dask_out, "--cluster", f"local:{n}"),
        }
    for name, r in runs.items():
        print(json.dumps({"measurement": name, "workers": n, "file": args.file.name, **r}))
    lc, dc, lw, dw = (runs[k] for k in ("local_cold", "dask_cold", "local_warm", "dask_warm"))
    points = lc["points"]
    # What a warm run costs is the client's own serial work (start-up, planning, analysing every point); the
    # dask warm run adds starting (or joining) the cluster and checking the workers' versions.
    client_serial = lw["wall_s"]
    cluster_setup = max(0.0, dw["wall_s"] - lw["wall_s"])
    # One compile on one worker thread: the cold local run spread over n processes, less the serial part.
    per_point = (lc["wall_s"] - client_serial) * n / points
    # What Dask adds per point beyond that (scheduling, the files sent back and written here).
    dask_per_point = (dc["wall_s"] - lc["wall_s"] - cluster_setup) * n / points
    k = args.project
    projected = client_serial + cluster_setup + math.ceil(points / k) * (per_point + max(0.0, dask_per_point))
    print(json.dumps({"measurement": "projection", "points": points,
                      "overhead_pct": round(100 * (dc["wall_s"] - lc["wall_s"]) / lc["wall_s"], 1),
                      "client_serial_s": round(client_serial, 2), "cluster_setup_s": round(cluster_setup, 2),
                      "per_point_s": round(per_point, 2), "dask_per_point_s": round(dask_per_point, 3),
                      f"projected_{k}_workers_s": round(projected, 1),
                      f"projected_{k}_workers_speedup": round(lc["wall_s"] / projected, 1)}))


if __name__ == "__main__":
    main()
