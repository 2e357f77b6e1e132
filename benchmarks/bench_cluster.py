"""The cost of going through Dask: one cold sweep on the local pool, on a LocalCluster of as many worker
processes, and on a scheduler with as many workers started beforehand, side by side in one run; then all
three re-run warm (every point from the cache), and a projection to more workers from the measured
per-point costs.

    python benchmarks/bench_cluster.py [--file benchmarks/sweep-100.yaml] [--workers 2] [--project 32]

Each measurement is `irscope sweep` as a user runs it (a fresh `python -m irscope` process, its start-up
included), `--force` for the cold runs:

- local_cold / local_warm: `--jobs N`, the local pool;
- dask_cold / dask_warm: `--cluster local:N`, starting the LocalCluster is inside the timed run;
- sched_cold / sched_again / sched_warm: `--scheduler tcp://...` to a `dask scheduler` and N `dask worker
  --nthreads 1` processes started before the timed runs (`prestart_s` is how long they took to come up), as
  on a real cluster, with the settings docs/cluster.md recommends; sched_cold is those workers' first sweep
  (they import Triton and warm up in it), sched_again the same sweep again on them.

`cpu_s` is the CPU time of the whole process tree of a run (the client, the LocalCluster's workers and
its forkserver, every compile child; this process reaps the run's orphans so that they count), which a
loaded machine changes less than the wall time; `client_cpu_s` and `cluster_cpu_s` split it between the sweep's process tree and the started-beforehand scheduler and workers;
`others_cpu_s` is what the rest of the machine ran meanwhile and `steal_s` what the hypervisor took (on a
shared machine either slows the wall time, not the CPU). Needs the `cluster` extra. Prints one JSON line
per measurement as it ends and one with the projection; docs/benchmarks.md records them.
benchmarks/device_cluster.sh runs it on the 16-core GPU machine.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
ENV.pop("PYTHONDONTWRITEBYTECODE", None)
# The settings irscope gives its LocalCluster (irscope/harness/cluster.py), for the started-beforehand one.
DASK_ENV = {"DASK_DISTRIBUTED__SCHEDULER__WORKER_SATURATION": "1.1", "DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED": "False",
            "DASK_DISTRIBUTED__ADMIN__TICK__INTERVAL": "1s", "DASK_DISTRIBUTED__WORKER__MEMORY__MONITOR_INTERVAL": "1s",
            "DASK_DISTRIBUTED__ADMIN__SYSTEM_MONITOR__INTERVAL": "2s"}


def _load() -> float:
    return os.getloadavg()[0]


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _busy() -> tuple[float, float]:
    """CPU-seconds the whole machine has been busy (every process, not only this benchmark's), and the
    seconds the hypervisor gave its CPUs to others (steal)."""
    try:
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except (OSError, ValueError):
        return 0.0, 0.0
    # user nice system idle iowait irq softirq steal (guest time is counted in user already)
    tick = os.sysconf("SC_CLK_TCK")
    return (fields[0] + fields[1] + fields[2] + fields[5] + fields[6]) / tick, fields[7] / tick


# Processes of this benchmark that outlive one run (the started-beforehand scheduler and workers).
KEEP: set[int] = set()


def _adopt_orphans() -> None:
    """Make this process the reaper of its descendants' orphans (Linux): `--cluster local:N` forks its
    workers from a forkserver, which exits a moment after the sweep's process does; without this it would
    be reparented to init, and its CPU (the workers' and their compile children's) never counted here."""
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        pass


def _reap_orphans() -> None:
    """Wait for the run's orphans (its forkserver, multiprocessing's resource tracker), so their CPU counts."""
    import psutil
    for p in psutil.Process().children():
        if p.pid not in KEEP:
            try:
                os.waitpid(p.pid, 0)
            except ChildProcessError:
                pass


def _sweep(file: Path, out: Path, *extra: str, cpu_elsewhere=lambda: 0.0) -> dict:
    load, cpu, elsewhere, busy = _load(), _cpu(), cpu_elsewhere(), _busy()
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "irscope", "sweep", str(file), "--out", str(out), "--json", *extra],
                          env=ENV, capture_output=True, text=True)
    wall = time.perf_counter() - started
    _reap_orphans()
    if proc.returncode != 0:
        sys.exit(f"irscope sweep {' '.join(extra)} failed ({proc.returncode}):\n{proc.stderr}")
    data = json.loads(proc.stdout)
    points = data["points"]
    client, cluster = _cpu() - cpu, cpu_elsewhere() - elsewhere
    # others_cpu_s: what the rest of the machine ran meanwhile (other users' work; on a shared machine the
    # kernel gives each session its share of the cores, so this slows the wall time of a run, not its CPU).
    busy_now = _busy()
    others = max(0.0, busy_now[0] - busy[0] - client - cluster) if busy[0] else None
    steal = round(busy_now[1] - busy[1], 2)
    # cpu_s: the whole tree; client_cpu_s: the sweep's process and its children (a LocalCluster's workers
    # and every local compile among them); cluster_cpu_s: a started-beforehand scheduler and its workers.
    return {"wall_s": round(wall, 2), "cpu_s": round(client + cluster, 2), "client_cpu_s": round(client, 2),
            "cluster_cpu_s": round(cluster, 2), "others_cpu_s": None if others is None else round(others, 2),
            "steal_s": steal,
            "points": len(points),
            "compiled": data["summary"]["compiled"],
            "recorded_compile_s": round(data["summary"]["recorded_ms"]["total"] / 1e3, 2),
            "where": data["summary"]["where"], "load_before": round(load, 2), "load_after": round(_load(), 2)}


class Prestarted:
    """`dask scheduler` and n `dask worker` processes, started and seen joined before any timed run."""

    def __init__(self, n: int, workdir: Path):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        self.address = f"tcp://127.0.0.1:{port}"
        env = {**ENV, **DASK_ENV}
        started = time.perf_counter()
        quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "cwd": workdir, "env": env}
        self.procs = [subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
                                        "--port", str(port), "--no-dashboard"], **quiet)]
        self.procs += [subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker", self.address,
                                         "--nthreads", "1", "--nworkers", "1", "--no-dashboard"], **quiet)
                       for _ in range(n)]
        KEEP.update(p.pid for p in self.procs)
        import distributed
        with distributed.Client(self.address, timeout=60) as client:
            client.wait_for_workers(n, timeout=120)
        self.seconds = time.perf_counter() - started

    def cpu(self) -> float:
        """CPU time of the scheduler and the workers so far, the compiles they have reaped included."""
        import psutil
        total = 0.0
        for root in self.procs:
            try:
                procs = [psutil.Process(root.pid)]
                procs += procs[0].children(recursive=True)
            except psutil.NoSuchProcess:
                continue
            for p in procs:
                try:
                    t = p.cpu_times()
                except psutil.NoSuchProcess:
                    continue
                total += t.user + t.system + t.children_user + t.children_system
        return total

    def close(self) -> None:
        for p in reversed(self.procs):
            p.terminate()
        for p in self.procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--file", type=Path, default=ROOT / "benchmarks" / "sweep-100.yaml")
    ap.add_argument("--workers", type=int, default=2, help="local pool jobs = worker processes (one thread each)")
    ap.add_argument("--project", type=int, default=32, help="workers to project the cluster time to")
    ap.add_argument("--pairs", type=int, default=2,
                    help="then this many more (local_cold, sched_again) pairs back to back, so that a load that "
                         "drifts over minutes falls on both halves of a pair alike")
    args = ap.parse_args()
    _adopt_orphans()
    subprocess.run([sys.executable, "-m", "irscope", "--version"], env=ENV, capture_output=True)  # byte-compile
    n = args.workers

    def report(name: str, r: dict) -> dict:  # each line as its measurement ends: a run cut short keeps them
        print(json.dumps({"measurement": name, "workers": n, "file": args.file.name, **r}), flush=True)
        return r

    def pair(i: int, a: dict, b: dict) -> tuple:
        print(json.dumps({"measurement": "pair", "index": i, "local_wall_s": a["wall_s"], "sched_wall_s": b["wall_s"],
                          "overhead_pct": round(100 * (b["wall_s"] - a["wall_s"]) / a["wall_s"], 1),
                          "local_cpu_s": a["cpu_s"], "sched_cpu_s": b["cpu_s"], "sched_cluster_cpu_s": b["cluster_cpu_s"],
                          "cpu_overhead_pct": round(100 * (b["cpu_s"] - a["cpu_s"]) / a["cpu_s"], 1),
                          "others_cpu_s": [a["others_cpu_s"], b["others_cpu_s"]],
                          "loads": [a["load_before"], a["load_after"], b["load_after"]]}), flush=True)
        return a, b

    with tempfile.TemporaryDirectory(prefix="irscope-bench-cluster-") as tmp:
        local_out, dask_out, sched_out = Path(tmp) / "local", Path(tmp) / "dask", Path(tmp) / "sched"
        runs = {"local_cold": report("local_cold", _sweep(args.file, local_out, "--jobs", str(n), "--force")),
                "dask_cold": report("dask_cold", _sweep(args.file, dask_out, "--cluster", f"local:{n}", "--force"))}
        load = _load()
        (Path(tmp) / "workers").mkdir()
        cluster = Prestarted(n, Path(tmp) / "workers")
        print(json.dumps({"measurement": "prestart", "workers": n, "prestart_s": round(cluster.seconds, 2),
                          "load_before": round(load, 2)}), flush=True)
        sched = ("--scheduler", cluster.address)
        try:
            runs["sched_cold"] = report("sched_cold", _sweep(args.file, sched_out, *sched, "--force",
                                                             cpu_elsewhere=cluster.cpu))
            # The same workers a second time: what a sweep costs on a cluster that is kept running.
            runs["sched_again"] = report("sched_again", _sweep(args.file, sched_out, *sched, "--force",
                                                               cpu_elsewhere=cluster.cpu))
            runs["local_warm"] = report("local_warm", _sweep(args.file, local_out, "--jobs", str(n)))
            runs["dask_warm"] = report("dask_warm", _sweep(args.file, dask_out, "--cluster", f"local:{n}"))
            runs["sched_warm"] = report("sched_warm", _sweep(args.file, sched_out, *sched, cpu_elsewhere=cluster.cpu))
            pairs = [pair(i, _sweep(args.file, local_out, "--jobs", str(n), "--force"),
                          _sweep(args.file, sched_out, *sched, "--force", cpu_elsewhere=cluster.cpu))
                     for i in range(args.pairs)]
        finally:
            cluster.close()
        shutil.rmtree(Path(tmp) / "workers", ignore_errors=True)
    lc, dc, sc, sa, lw = (runs[k] for k in ("local_cold", "dask_cold", "sched_cold", "sched_again", "local_warm"))
    points = lc["points"]
    # The kept cluster against the local pool: the medians of every such run (the first ones and the
    # pairs), so that one run the load slowed moves the projection less.
    local_s = statistics.median([lc["wall_s"]] + [a["wall_s"] for a, _ in pairs])
    kept_s = statistics.median([sa["wall_s"]] + [b["wall_s"] for _, b in pairs])
    local_cpu = statistics.median([lc["cpu_s"]] + [a["cpu_s"] for a, _ in pairs])
    kept_cpu = statistics.median([sa["cpu_s"]] + [b["cpu_s"] for _, b in pairs])
    # A warm run is the client's own serial work: start-up, planning, loading and analysing every snapshot.
    client_serial = lw["wall_s"]
    # One compile on one worker thread: the cold local run spread over n processes, less the serial part.
    per_point = (local_s - client_serial) * n / points
    # What Dask adds per point beyond that, on workers that were already running and warm (scheduling,
    # the files sent back and written here).
    dask_per_point = (kept_s - local_s) * n / points
    k = args.project
    projected = client_serial + math.ceil(points / k) * (per_point + max(0.0, dask_per_point))

    def pct(a: float, b: float) -> float:
        return round(100 * (a - b) / b, 1)

    print(json.dumps({"measurement": "projection", "points": points,
                      "overhead_local_cluster_pct": pct(dc["wall_s"], lc["wall_s"]),
                      "overhead_prestarted_pct": pct(sc["wall_s"], lc["wall_s"]),
                      "overhead_prestarted_again_pct": pct(sa["wall_s"], lc["wall_s"]),
                      "cpu_overhead_local_cluster_pct": pct(dc["cpu_s"], lc["cpu_s"]),
                      "cpu_overhead_prestarted_pct": pct(sc["cpu_s"], lc["cpu_s"]),
                      "cpu_overhead_prestarted_again_pct": pct(sa["cpu_s"], lc["cpu_s"]),
                      "median_local_cold_s": round(local_s, 2), "median_kept_s": round(kept_s, 2),
                      "overhead_kept_median_pct": pct(kept_s, local_s), "cpu_overhead_kept_median_pct": pct(kept_cpu, local_cpu),
                      "local_cluster_start_s": round(max(0.0, dc["wall_s"] - sa["wall_s"]), 2),
                      "client_serial_s": round(client_serial, 2), "per_point_s": round(per_point, 3),
                      "dask_per_point_s": round(dask_per_point, 3),
                      f"projected_{k}_workers_s": round(projected, 1),
                      f"projected_{k}_workers_speedup": round(lc["wall_s"] / projected, 1)}))


if __name__ == "__main__":
    main()
