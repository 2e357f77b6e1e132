"""The Dask executor: the same jobs as the local pool, as tasks on the workers of a Dask cluster.

Every task runs `run_jobs` for its one job on the worker, so the compile gets a child process of its own
there (a crash or a hang past the timeout kills that child, not the worker). A worker killed mid-run loses
nothing: the scheduler runs its tasks again elsewhere, and a task whose workers keep dying ends "crashed"
with the reason. Needs the `cluster` extra (dask[distributed]); imported only when asked for.
"""
from __future__ import annotations

import secrets
import time
from typing import Any, Callable, Sequence

from ..errors import EnvironmentProblem, UsageError
from .executors import (CONNECT_TIMEOUT, INSTALL_HINT, Placed, RunProgress, _Tally, allow_children, local_versions,
                        version_mismatch, version_probe)
from .workers import JobResult, JobStatus, run_jobs


def _distributed():
    try:
        import distributed
    except ImportError:
        raise EnvironmentProblem("running on a Dask cluster needs the distributed package, which is not installed",
                                 INSTALL_HINT) from None
    return distributed


class DaskCluster:
    """Jobs as Dask tasks: `connect(address)` to a running scheduler, or `local(n)` worker processes here."""

    remote = True

    def __init__(self, client, cluster=None, name: str = ""):
        self.client, self.cluster, self.name = client, cluster, name
        self.versions = local_versions()

    @classmethod
    def connect(cls, address: str, *, timeout: float = CONNECT_TIMEOUT) -> "DaskCluster":
        distributed = _distributed()
        if "://" not in address:
            raise UsageError(f"--scheduler {address!r} is not an address", "e.g. --scheduler tcp://HOST:8786")
        try:
            client = distributed.Client(address, timeout=timeout, set_as_default=False)
        except (OSError, TimeoutError, ValueError) as e:  # refused, timed out, or not a scheduler's address
            raise EnvironmentProblem(f"cannot reach the Dask scheduler at {address}: {_first_line(e)}",
                                     f"start one there with `dask scheduler` and workers with `dask worker {address}`"
                                     ", or check the host, the port and the firewall") from None
        return cls._checked(client, None, address, timeout)

    @classmethod
    def local(cls, n: int, *, timeout: float = 60.0) -> "DaskCluster":
        distributed = _distributed()
        import dask
        # One thread a worker: each task is one compile, and it forks one child. The scheduler hands every
        # task to a worker at once instead of one a thread at a time (`worker-saturation`), so a worker never
        # waits a round trip between two compiles; a killed worker's queue is still run elsewhere.
        # Dask starts its workers with MALLOC_TRIM_THRESHOLD_=65536 (to give memory back); the workers keep
        # glibc's default, as a local compile has. (Suspected of slowing LLVM down; not shown to: see
        # docs/benchmarks.md, the Dask runs' compiles are slower with or without it.)
        environ = {k: v for k, v in dask.config.get("distributed.nanny.pre-spawn-environ", {}).items()
                   if k != "MALLOC_TRIM_THRESHOLD_"}
        with dask.config.set({"distributed.scheduler.worker-saturation": "inf",
                              "distributed.nanny.pre-spawn-environ": environ}):
            cluster = distributed.LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None,
                                               silence_logs=40)
        client = distributed.Client(cluster, set_as_default=False)
        return cls._checked(client, cluster, f"local:{n}", timeout)

    @classmethod
    def _checked(cls, client, cluster, name: str, timeout: float) -> "DaskCluster":
        self = cls(client, cluster, name)
        try:
            self.check_workers(timeout)
        except BaseException:
            self.close()
            raise
        return self

    def check_workers(self, timeout: float = CONNECT_TIMEOUT) -> None:
        """Every worker runs the irscope, Triton and Python of this client, or a one-line error naming it."""
        try:
            self.client.wait_for_workers(1, timeout=timeout)
        except (OSError, TimeoutError):
            raise EnvironmentProblem(f"no Dask worker joined the scheduler {self.name} within {timeout:g} s",
                                     f"start workers with `dask worker {self.name}` (irscope installed on each)") from None
        answers = self.client.run(version_probe(), on_error="return")
        for where, v in sorted(answers.items()):
            if isinstance(v, BaseException):
                raise EnvironmentProblem(f"worker {where} could not report its versions: {_first_line(v)}",
                                         "install irscope (and Triton) on every worker") from None
        problem = version_mismatch(self.versions, answers)
        if problem:
            raise EnvironmentProblem(problem, "install the same irscope and Triton on every worker as on this "
                                              "machine, or stop that worker")

    def workers(self) -> list[str]:
        return sorted(self.client.scheduler_info().get("workers", {}))

    def run(self, jobs: Sequence, work: Callable, *, timeout: float | None = None,
            on_progress: Callable[[RunProgress], None] | None = None,
            on_result: Callable[[Placed], Placed] | None = None,
            around: Callable[[Any, Callable], JobResult] | None = None) -> list[Placed]:
        distributed = _distributed()
        token = secrets.token_hex(4)
        futures = [self.client.submit(_task, job, work, timeout, around, self.versions, key=f"irscope-{token}-{i}",
                                      pure=False) for i, job in enumerate(jobs)]
        index = {f.key: i for i, f in enumerate(futures)}
        results: list[Placed | None] = [None] * len(jobs)
        tally = _Tally(len(jobs))
        self._asked, self._held = 0.0, []
        if on_progress:
            on_progress(tally.progress(self._running(index, jobs)))
        try:
            for future in distributed.as_completed(futures, loop=self.client.loop):
                i = index[future.key]
                placed = self._result(future, jobs[i])
                placed = on_result(placed) if on_result else placed
                results[i] = placed
                tally.finished(placed)
                if on_progress:
                    on_progress(tally.progress(self._running(index, jobs, results), placed))
        except BaseException:
            # Ctrl-C (or anything else): nothing more is started; what runs now finishes on its worker (or
            # hits the timeout there) and its result is dropped.
            self.client.cancel([f for f, r in zip(futures, results) if r is None], force=True)
            raise
        return [r for r in results if r is not None]

    def _running(self, index: dict, jobs: Sequence, results=None) -> tuple:
        """The jobs the workers are running now (or hold): one round trip to the scheduler, asked at most
        twice a second; in between, the last answer less what has finished."""
        if time.monotonic() - self._asked >= 0.5:
            self._asked = time.monotonic()
            try:
                processing = self.client.processing()
            except Exception:  # noqa: BLE001 - progress is best effort; a lost scheduler shows in the results
                processing = {}
            self._held = [index[k] for ks in processing.values() for k in ks if k in index]
        return tuple(jobs[i] for i in self._held if results is None or results[i] is None)

    @staticmethod
    def _result(future, job) -> Placed:
        try:
            r, where = future.result()
        except Exception as e:  # noqa: BLE001 - a task Dask gave up on: its workers died (KilledWorker) or worse
            what = "the Dask workers running it died" if type(e).__name__ == "KilledWorker" else "the Dask task failed"
            return Placed(job, JobStatus.CRASHED, None, f"{what}: {type(e).__name__}: {_first_line(e)}", 0.0, 0.0,
                          "cluster")
        return Placed(job, r.status, r.value, r.message, r.seconds, r.cpu_seconds, where)

    def close(self) -> None:
        try:
            self.client.close()
        finally:
            if self.cluster is not None:
                self.cluster.close()


def _task(job, work, timeout, around, expected: dict) -> tuple[JobResult, str]:
    """One job on a worker, in a child process of its own (run_jobs), after checking this worker's versions."""
    from distributed import get_worker
    where = get_worker().address
    problem = version_mismatch(expected, {where: local_versions()})
    if problem:
        return JobResult(job, JobStatus.ERROR, None, problem), where
    allow_children()

    def run(j) -> JobResult:
        return run_jobs([j], work, workers=1, timeout=timeout)[0]

    return (around(job, run) if around is not None else run(job)), where


def _first_line(e: BaseException) -> str:
    text = str(e).strip() or type(e).__name__
    return text.splitlines()[0]
