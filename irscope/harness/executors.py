"""Where jobs run: this machine's pool of child processes, or the workers of a Dask cluster.

One interface: `Executor.run(jobs, work, timeout=, on_progress=, on_result=)` returns a `Placed` result
per job, in the order of `jobs`, whichever executor ran them. Both isolate every job in a process of its
own: on a Dask worker the task itself calls `run_jobs` for its one job, so a compiler crash or a hang past
the timeout kills that child, never the worker.
"""
from __future__ import annotations

import multiprocessing as mp
import os
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from ..errors import EnvironmentProblem, UsageError
from .workers import JobResult, JobStatus, run_jobs

LOCAL = "local"
CONNECT_TIMEOUT = 10.0
INSTALL_HINT = "install the extra: pip install 'irscope[cluster]' (dask[distributed])"


@dataclass(frozen=True)
class Placed(JobResult):
    """A job's result and where it ran: a worker's address, or "local"."""

    where: str = LOCAL


@dataclass(frozen=True)
class RunProgress:
    """Progress of a run; `running`, `done`, `total` and `last` mean what they mean in workers.Progress."""

    done: int
    total: int
    running: tuple[Any, ...]
    last: Placed | None = None
    failed: int = 0  # finished, but not "ok"
    by_worker: tuple[tuple[str, int], ...] = ()  # (where, jobs finished there), in order of first result


class _Tally:
    def __init__(self, total: int):
        self.total, self.done, self.failed, self.by_worker = total, 0, 0, {}

    def finished(self, r: Placed) -> None:
        self.done += 1
        # A compile the compiler rejected is a job that returned; its value says it failed.
        self.failed += r.status != JobStatus.OK or str(getattr(r.value, "status", "ok")) != "ok"
        self.by_worker[r.where] = self.by_worker.get(r.where, 0) + 1

    def progress(self, running, last=None) -> RunProgress:
        return RunProgress(self.done, self.total, tuple(running), last, self.failed, tuple(self.by_worker.items()))


class LocalPool:
    """Today's pool: child processes of this one, `workers` at a time (workers.run_jobs)."""

    remote = False
    name = LOCAL

    def __init__(self, workers: int | None = None, start_method: str | None = None):
        self.workers, self.start_method = workers, start_method

    def run(self, jobs: Sequence, work: Callable, *, timeout: float | None = None,
            on_progress: Callable[[RunProgress], None] | None = None,
            on_result: Callable[[Placed], Placed] | None = None,
            around: Callable[[Any, Callable], JobResult] | None = None) -> list[Placed]:
        # `around(job, run)` wraps a job on a remote worker (warm-up, its log there); here the caller did that.
        tally = _Tally(len(jobs))
        index = {id(job): i for i, job in enumerate(jobs)}
        placed: dict[int, Placed] = {}

        def progress(p) -> None:
            last = None
            if p.last is not None:
                last = _placed(p.last, p.last.job, LOCAL)
                last = on_result(last) if on_result else last
                placed[index[id(p.last.job)]] = last
                tally.finished(last)
            if on_progress:
                on_progress(tally.progress(p.running, last))

        results = run_jobs(jobs, work, workers=self.workers, timeout=timeout, on_progress=progress,
                           start_method=self.start_method)
        return [placed.get(i) or _placed(r, jobs[i], LOCAL) for i, r in enumerate(results)]

    def close(self) -> None:
        pass


def _placed(r: JobResult, job: Any, where: str) -> Placed:
    return Placed(job, r.status, r.value, r.message, r.seconds, r.cpu_seconds, where)


def open_executor(*, workers: int | None = None, scheduler: str | None = None, cluster: str | None = None,
                  start_method: str | None = None):
    """The executor the options ask for: a Dask scheduler's address, `local:N`, or the local pool."""
    if scheduler and cluster:
        raise UsageError("--scheduler and --cluster both given", "pass one: an address, or local:N to try it out")
    if scheduler or cluster:
        from .cluster import DaskCluster
        if cluster:
            return DaskCluster.local(parse_cluster(cluster))
        return DaskCluster.connect(scheduler)
    return LocalPool(workers, start_method)


WORKERS_A_CORE = 4  # a worker runs one compile at a time: more than a few a core only queue and eat memory


def parse_cluster(text: str) -> int:
    """`local:N` -> N. N is ASCII digits (str.isdigit() also takes '²' and '٢'), at most WORKERS_A_CORE a core."""
    kind, _, n = text.partition(":")
    if kind != "local" or not (n.isascii() and n.isdigit()) or int(n) < 1:
        raise UsageError(f"--cluster {text!r}: expected local:N (N worker processes on this machine)",
                         "e.g. --cluster local:2; for real machines pass --scheduler tcp://HOST:8786")
    cores = os.cpu_count() or 1
    if int(n) > WORKERS_A_CORE * cores:
        raise UsageError(f"--cluster {text!r}: {int(n):,} worker processes on a machine of {cores} "
                         f"core{'s' if cores != 1 else ''}",
                         f"at most {WORKERS_A_CORE * cores} here (a worker compiles one kernel at a time); "
                         "for more machines pass --scheduler tcp://HOST:8786")
    return int(n)


# The version probe runs on every worker before any task is sent. It is compiled from source into a module
# nobody can import, so that it travels by value: a worker whose `irscope` differs (or lacks irscope.harness)
# can still answer it and be named, instead of failing to unpickle a reference into irscope.
PROBE = '''
def probe():
    import platform
    try:
        import irscope
        ir = getattr(irscope, "__version__", "unknown")
    except Exception as e:
        ir = "missing (" + type(e).__name__ + ")"
    try:
        import triton
        tr = triton.__version__
    except Exception as e:
        tr = "missing (" + type(e).__name__ + ")"
    import os
    env = {k: v for k, v in os.environ.items() if k.startswith(("TRITON_", "AMDGCN_", "DISABLE_", "NVPTX_", "ROCM_",
                                                                 "HIP_"))}
    return {"irscope": ir, "triton": tr, "python": platform.python_version(), "environment": env}
'''


def version_probe() -> Callable[[], dict]:
    ns: dict = {"__name__": "irscope_version_probe"}
    exec(compile(PROBE, "<irscope version probe>", "exec"), ns)  # noqa: S102 - our own constant source
    return ns["probe"]


def local_versions() -> dict:
    return version_probe()()


def version_mismatch(mine: dict, theirs: dict[str, dict]) -> str | None:
    """The first worker whose irscope, Triton or Python (major.minor: pickles cross it) differs, or whose
    environment changes what Triton emits (AMDGCN_USE_BUFFER_OPS=0...), in words."""
    for where, v in sorted(theirs.items()):
        for key in ("irscope", "triton", "python"):
            a, b = str(mine.get(key)), str(v.get(key))
            if key == "python":
                a, b = ".".join(a.split(".")[:2]), ".".join(b.split(".")[:2])
            if a != b:
                return f"worker {where} has {key} {v.get(key)}, this client has {key} {mine.get(key)}"
        # The content key holds this client's code-generating variables, but a worker compiles with its own:
        # a worker without the client's AMDGCN_USE_BUFFER_OPS=0 returned buffer loads under the client's key.
        here, there = _codegen(mine.get("environment")), _codegen(v.get("environment"))
        for name in sorted(set(here) | set(there)):
            if here.get(name) != there.get(name):
                def said(env):
                    return f"{name}={env[name]}" if name in env else f"{name} unset"
                return f"worker {where} compiles with {said(there)}, this client with {said(here)} (a variable " \
                       "that changes what Triton emits)"
    return None


def _codegen(env) -> dict:
    """The variables of `env` that change a compile (specialise.codegen_environment's rule)."""
    from .specialise import _CODEGEN_ENV_PREFIXES, _NOT_CODEGEN
    out = {k: str(v) for k, v in (env if isinstance(env, dict) else {}).items()
           if k.startswith(_CODEGEN_ENV_PREFIXES) and k not in _NOT_CODEGEN and not k.startswith("TRITON_DUMP")}
    if out.get("TRITON_DEFAULT_FP_FUSION") == "1":
        del out["TRITON_DEFAULT_FP_FUSION"]
    return out


def allow_children() -> None:
    """Dask starts its worker processes as daemons, and multiprocessing refuses to start children from a
    daemon; a compile needs its child (crash and hang isolation), and `run_jobs` kills its children itself,
    and PR_SET_PDEATHSIG takes them down with a killed worker."""
    proc = mp.current_process()
    if getattr(proc, "_config", {}).get("daemon"):
        proc._config["daemon"] = False
