"""What starting `--cluster local:N` inside a sweep costs, this tree against another, back to back.

    git archive 61b8fe3 | tar -x -C /tmp/old        # the tree to compare with, e.g. before a change
    python benchmarks/bench_cluster_start.py --other /tmp/old [--rounds 2] [--workers 2] [--starts 2]

First, `--starts` times for each tree alternately, it only starts `DaskCluster.local(N)` (in a fresh
process, with that tree's irscope) and reads the CPU of every process it made (psutil: the workers, a
forkserver, multiprocessing's resource tracker) once the workers are checked and warmed, with the
client's own CPU meanwhile and for importing `distributed`. Then each round runs the same cold sweep (`--force`) three times, one after another: the local pool (`--jobs
N`, this tree), `--cluster local:N` with this tree, and `--cluster local:N` with the other tree, each as
bench_cluster.py measures a run (a fresh `python -m irscope` process; `cpu_s` the whole process tree, the
run's orphans such as a forkserver included; `others_cpu_s` the rest of the machine meanwhile). Prints one
JSON line per run and one per round.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_cluster as bench  # noqa: E402


def _with_tree(tree: Path) -> dict:
    return {**bench.ENV, "PYTHONPATH": str(tree) + os.pathsep + os.environ.get("PYTHONPATH", "")}


def start_only(n: int) -> dict:
    """In this process: start DaskCluster.local(n), wait until its workers are checked and warmed, and
    read the CPU of every process it started."""
    import time
    import psutil
    cpu = time.process_time()
    import distributed  # noqa: F401
    from irscope.harness.cluster import DaskCluster
    imported = time.process_time() - cpu
    started, cpu = time.perf_counter(), time.process_time()
    cluster = DaskCluster.local(n)
    cluster.ready()
    wall, client = time.perf_counter() - started, time.process_time() - cpu
    procs = []
    for p in psutil.Process().children(recursive=True):
        try:
            t, line = p.cpu_times(), " ".join(p.cmdline())
        except psutil.NoSuchProcess:
            continue
        kind = ("resource_tracker" if "resource_tracker" in line else
                "forkserver" if p.ppid() == os.getpid() and "forkserver" in line else "worker")
        procs.append((kind, round(t.user + t.system, 2)))
    cluster.close()
    return {"start_wall_s": round(wall, 2), "import_distributed_cpu_s": round(imported, 2),
            "client_cpu_s": round(client, 2), "processes": sorted(procs),
            "started_cpu_s": round(sum(c for _, c in procs), 2), "load": round(os.getloadavg()[0], 2)}


def main() -> None:
    if sys.argv[1:2] == ["--start-only"]:
        print(json.dumps(start_only(int(sys.argv[2]))))
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--other", type=Path, required=True, help="another irscope tree (its root folder)")
    ap.add_argument("--file", type=Path, default=bench.ROOT / "benchmarks" / "sweep-100.yaml")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--starts", type=int, default=2, help="start-only measurements per tree")
    args = ap.parse_args()
    bench._adopt_orphans()
    this, other = _with_tree(bench.ROOT), _with_tree(args.other.resolve())
    for env in (this, other):  # byte-compile both trees first
        subprocess.run([sys.executable, "-m", "irscope", "--version"], env=env, capture_output=True)
    for i in range(args.starts):
        for name, env in (("this", this), ("other", other)):
            proc = subprocess.run([sys.executable, __file__, "--start-only", str(args.workers)], env=env,
                                  capture_output=True, text=True)
            if proc.returncode != 0:
                sys.exit(f"starting the cluster ({name}) failed:\n{proc.stderr}")
            print(json.dumps({"measurement": f"start_{name}", "round": i, **json.loads(proc.stdout)}), flush=True)
    n = str(args.workers)
    with tempfile.TemporaryDirectory(prefix="irscope-bench-start-") as tmp:
        for i in range(args.rounds):
            runs = {}
            for name, env, extra in (("local", this, ("--jobs", n)), ("this", this, ("--cluster", f"local:{n}")),
                                     ("other", other, ("--cluster", f"local:{n}"))):
                bench.ENV = env
                runs[name] = r = bench._sweep(args.file, Path(tmp) / name, *extra, "--force")
                print(json.dumps({"measurement": name, "round": i, **r}), flush=True)
            lw, lc = runs["local"]["wall_s"], runs["local"]["cpu_s"]
            print(json.dumps({"measurement": "round", "round": i,
                              **{f"{k}_wall_pct": round(100 * (runs[k]["wall_s"] - lw) / lw, 1) for k in ("this", "other")},
                              **{f"{k}_cpu_pct": round(100 * (runs[k]["cpu_s"] - lc) / lc, 1) for k in ("this", "other")},
                              "others_cpu_s": [runs[k]["others_cpu_s"] for k in ("local", "this", "other")]}), flush=True)


if __name__ == "__main__":
    main()
