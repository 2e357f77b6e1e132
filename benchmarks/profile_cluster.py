"""Where a sweep on a kept Dask cluster spends the CPU the local pool does not, and whether its workers wait.

    python benchmarks/profile_cluster.py [--file benchmarks/sweep-100.yaml] [--workers 2] [--reps 2]

Runs the sweep (`--force`) in this process as its client, `--reps` times on the local pool (`--jobs N`)
and on a `dask scheduler` with N `dask worker --nthreads 1` started beforehand (bench_cluster's settings)
alternately, after one sweep of each that is not counted (this process's first-run costs, the workers'
warm-up), and prints one JSON line per run:

- `client_self_cpu_s` / `client_children_cpu_s`: this process (planning, the Dask client, receiving and
  writing every snapshot, analysing) and the compile children it forked (the local pool only);
- per cluster process (psutil): the scheduler, each nanny, each worker's own CPU (Dask's threads, the
  task, forking) and the CPU of the compile children it reaped;
- `dask_cpu_s`: Dask's own CPU, all that less the local pool's client (`dask_cpu_pct_of_local`: of the
  local run's whole CPU);
- per worker: how long it ran compiles (`run_jobs`), the gaps between them, and when it finished its last
  one, so that a worker waiting for work shows as a gap or as an early end (`end_imbalance_s`).

Set DASK_DISTRIBUTED__... variables to try other settings (they apply to the scheduler and workers).
"""
from __future__ import annotations

import argparse
import io
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_cluster  # noqa: E402

for key, value in os.environ.items():
    if key.startswith("DASK_DISTRIBUTED__"):
        bench_cluster.DASK_ENV[key] = value


def _stamp_run_jobs() -> None:
    """On a worker: record (start, end) of every run_jobs call of irscope's tasks."""
    import time as _time
    import irscope.harness.cluster as c
    if not hasattr(c, "_stamped"):
        c._stamped, original = [], c.run_jobs

        def run_jobs(*a, **k):
            started = _time.time()
            try:
                return original(*a, **k)
            finally:
                c._stamped.append((started, _time.time()))
        c.run_jobs = run_jobs
    c._stamped.clear()


def _stamps() -> list:
    import irscope.harness.cluster as c
    return list(c._stamped)


def _process_cpu(cluster) -> dict:
    import psutil
    out = {}
    for root in cluster.procs:
        try:
            procs = [psutil.Process(root.pid)] + psutil.Process(root.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            continue
        for p in procs:
            try:
                cmd = " ".join(p.cmdline())
                t = p.cpu_times()
            except psutil.NoSuchProcess:
                continue
            kind = "scheduler" if "dask_scheduler" in cmd else "nanny" if "dask_worker" in cmd else \
                "worker" if "spawn_main" in cmd else "other"
            out[p.pid] = (kind, t.user + t.system, t.children_user + t.children_system)
    return out


def _sweep(file: Path, out: Path, *extra: str) -> dict:
    from irscope.cli import main as cli
    t0, started = os.times(), time.time()
    code = cli(["sweep", str(file), "--out", str(out), "--json", "--force", *extra], out=io.StringIO(), err=io.StringIO())
    t1, ended = os.times(), time.time()
    if code != 0:
        sys.exit(f"irscope sweep {' '.join(extra)} failed ({code})")
    return {"wall_s": round(ended - started, 2), "started": started, "ended": ended,
            "client_self_cpu_s": round(t1.user + t1.system - t0.user - t0.system, 2),
            "client_children_cpu_s": round(t1.children_user + t1.children_system - t0.children_user - t0.children_system, 2)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--file", type=Path, default=Path(bench_cluster.ROOT) / "benchmarks" / "sweep-100.yaml")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--most", type=int, help="try another most-jobs-a-task (cluster.MOST_PER_TASK) in this client")
    args = ap.parse_args()
    if args.most:
        import irscope.harness.cluster as c
        c.chunks.__defaults__ = (args.most,)
    import distributed
    n = args.workers
    with tempfile.TemporaryDirectory(prefix="irscope-profile-cluster-") as tmp:
        _sweep(args.file, Path(tmp) / "local", "--jobs", str(n))  # this process's first-run costs, not counted
        (Path(tmp) / "w").mkdir()
        cluster = bench_cluster.Prestarted(n, Path(tmp) / "w")
        try:
            with distributed.Client(cluster.address, set_as_default=False) as client:
                _sweep(args.file, Path(tmp) / "sched", "--scheduler", cluster.address)  # the workers warm up
                for rep in range(args.reps):  # local and kept alternately, so that a drifting load hits both
                    local = _sweep(args.file, Path(tmp) / "local", "--jobs", str(n))
                    print(json.dumps({"run": "local", "rep": rep, "workers": n,
                                      **{k: v for k, v in local.items() if k not in ("started", "ended")},
                                      "load": round(os.getloadavg()[0], 2)}), flush=True)
                    client.run(_stamp_run_jobs)
                    before = _process_cpu(cluster)
                    r = _sweep(args.file, Path(tmp) / "sched", "--scheduler", cluster.address)
                    after = _process_cpu(cluster)
                    stamps = client.run(_stamps)
                    by_kind: dict[str, list[float]] = {}
                    for pid, (kind, cpu, children) in after.items():
                        b = before.get(pid, (kind, 0.0, 0.0))
                        by_kind.setdefault(f"{kind}_cpu_s", []).append(round(cpu - b[1], 2))
                        if children - b[2] > 0.005:
                            by_kind.setdefault(f"{kind}_children_cpu_s", []).append(round(children - b[2], 2))
                    workers = {}
                    for address, spans in stamps.items():
                        spans.sort()
                        gaps = [spans[i + 1][0] - spans[i][1] for i in range(len(spans) - 1)]
                        workers[address] = {"jobs": len(spans), "busy_s": round(sum(e - s for s, e in spans), 2),
                                            "gaps_s": round(sum(gaps), 2),
                                            "longest_gap_ms": round(1e3 * max(gaps, default=0.0)),
                                            "first_start_s": round(spans[0][0] - r["started"], 2),
                                            "last_end_s": round(spans[-1][1] - r["started"], 2)}
                    ends = [w["last_end_s"] for w in workers.values()]
                    # Dask's own CPU: the client's beyond the local pool's client (which forks the children
                    # a worker forks here), the scheduler, the nannies and the workers' own processes.
                    dask_cpu = r["client_self_cpu_s"] - local["client_self_cpu_s"] + sum(
                        sum(by_kind.get(f"{k}_cpu_s", [])) for k in ("scheduler", "nanny", "worker", "other"))
                    local_cpu = local["client_self_cpu_s"] + local["client_children_cpu_s"]
                    print(json.dumps({"run": "kept", "rep": rep, "workers": n,
                                      **{k: v for k, v in r.items() if k not in ("started", "ended")},
                                      **by_kind, "dask_cpu_s": round(dask_cpu, 2),
                                      "dask_cpu_pct_of_local": round(100 * dask_cpu / local_cpu, 1),
                                      "end_imbalance_s": round(max(ends) - min(ends), 2),
                                      "client_tail_s": round(r["wall_s"] - max(ends), 2), "per_worker": workers,
                                      "load": round(os.getloadavg()[0], 2)}), flush=True)
        finally:
            cluster.close()


if __name__ == "__main__":
    main()
