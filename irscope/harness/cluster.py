"""The Dask executor: the same jobs as the local pool, as tasks on the workers of a Dask cluster.

Every job still gets a child process of its own on the worker (`run_jobs`, one job at a time), so a crash
or a hang past the timeout kills that child, not the worker. When there are many more jobs than worker
threads, one task carries a few jobs (`chunks`), each still in its own child, with its own result. A worker
killed mid-run loses nothing: the scheduler runs its tasks again elsewhere, and a task whose workers keep
dying ends "crashed" with the reason.

Nothing touches the cluster until `start()` (or the first `run` with jobs): a sweep whose every point is
cached never starts or joins one. `start()` connects in a background thread, checks every worker's
versions and warms the workers up, while the caller goes on planning. Needs the `cluster` extra
(dask[distributed]); imported only when asked for.
"""
from __future__ import annotations

import os
import secrets
import threading
import time
from typing import Any, Callable, Sequence

from ..errors import EnvironmentProblem, UsageError
from .executors import (CONNECT_TIMEOUT, INSTALL_HINT, Placed, RunProgress, _Tally, allow_children, local_versions,
                        version_mismatch, version_probe)
from .workers import JobResult, JobStatus, run_jobs

# At most this many jobs in one task: enough to spread Dask's per-task cost (scheduling, a message each
# way) over a few compiles, few enough that the last tasks still balance across the workers (`chunks`).
MOST_PER_TASK = 4
# The protocols a Dask scheduler listens on (distributed.comm); http:// is its dashboard, not the scheduler.
SCHEMES = ("tcp", "tls", "ws", "wss", "ucx", "inproc")


def _distributed():
    try:
        import distributed
    except ImportError:
        raise EnvironmentProblem("running on a Dask cluster needs the distributed package, which is not installed",
                                 INSTALL_HINT) from None
    return distributed


def _require_distributed() -> None:
    """The install hint at once, without importing distributed (about a second) before it is needed."""
    import importlib.util
    if importlib.util.find_spec("distributed") is None:
        _distributed()


class DaskCluster:
    """Jobs as Dask tasks: `connect(address)` to a running scheduler, or `local(n)` worker processes here.

    Both return at once; the connection (or the LocalCluster) is made by `start()`, in the background, or
    when first needed (`run` with jobs, `client`, `workers()`)."""

    remote = True
    # How long a run waits with no worker in the cluster (none yet, all died, or were stopped) before it gives
    # up with an error: long enough for a nanny to restart a killed worker, or a worker to be started again;
    # --worker-wait sets it (an adaptive or batch cluster may take minutes to start its first worker).
    no_worker_grace = 30.0
    # --worker-wait: when set, both how long the start waits for a first worker (else the connect timeout)
    # and the grace above.
    worker_wait: float | None = None

    def __init__(self, name: str, connect: Callable[[], tuple[Any, Any]], timeout: float):
        self.name, self.versions = name, local_versions()
        self._connect, self._timeout = connect, timeout
        self._client = self._cluster = None
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None
        self._connected = threading.Event()  # set once the connection (or the LocalCluster) is made, or failed
        self.started_s = 0.0  # how long starting (or joining) the cluster took, once it has
        import logging  # _client quiets Dask's client log while irscope uses it; closing gives it back
        self._client_log_level = logging.getLogger(_CLIENT_LOG).level

    @classmethod
    def connect(cls, address: str, *, timeout: float = CONNECT_TIMEOUT) -> "DaskCluster":
        scheme, sep, rest = address.partition("://")
        if not sep or not rest or scheme not in SCHEMES:
            what = f"'{scheme}://' is not a Dask protocol" if sep else "is not an address"
            raise UsageError(f"--scheduler {address!r}: {what}",
                             f"give the scheduler's address as `dask scheduler` prints it, e.g. --scheduler "
                             f"tcp://HOST:8786 (protocols: {', '.join(SCHEMES)})")
        _require_distributed()
        return cls(address, lambda: (_client(address, timeout), None), timeout)

    @classmethod
    def local(cls, n: int, *, timeout: float = 60.0) -> "DaskCluster":
        _require_distributed()
        return cls(f"local:{n}", lambda: _local_cluster(n), timeout)

    @property
    def started(self) -> bool:
        return self._thread is not None

    def start(self) -> None:
        """Connect (or start the LocalCluster), check the workers and warm them up, in a background thread."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._start, name=f"irscope-dask-{self.name}", daemon=True)
            self._thread.start()

    def _start(self) -> None:
        started = time.perf_counter()
        try:
            try:
                self._client, self._cluster = self._connect()
            finally:
                self._connected.set()
            self.check_workers(self._timeout if self.worker_wait is None else self.worker_wait)
            # Triton's key hashed and the compiler imported on every worker now, not in its first task.
            self._client.run(_warm_worker, self.versions, on_error="return")
        except BaseException as e:  # noqa: BLE001 - raised again in the thread that waits (ready)
            self._error = e
            self._shut()
        self.started_s = time.perf_counter() - started

    def ready(self) -> None:
        """Wait for `start()`; its failure (an unreachable scheduler, a worker's other version) is raised here."""
        self.start()
        # Dask bounds the TCP connect by its timeout, not the handshake: a server that accepts and never
        # answers (a web server on that port) held Client() forever. A LocalCluster is ours, starting its
        # workers on this machine however loaded: waited for as long as it takes.
        if self.name.startswith("local:"):
            self._connected.wait()
        elif not self._connected.wait(self._timeout + 10):
            raise EnvironmentProblem(f"the Dask scheduler at {self.name} did not answer within "
                                     f"{self._timeout + 10:g} s", "check that the address is a Dask scheduler's "
                                     "(`dask scheduler` prints it), not another server's port")
        self._thread.join()
        if self._error is not None:
            raise self._error

    @property
    def client(self):
        self.ready()
        return self._client

    def check_workers(self, timeout: float = CONNECT_TIMEOUT) -> None:
        """Every worker runs the irscope, Triton and Python of this client, or a one-line error naming it."""
        client = self._client
        try:
            # (a floor: distributed takes a timeout of 0, `--worker-wait 0`, for no limit at all, and waited forever)
            client.wait_for_workers(1, timeout=max(timeout, 0.01))
        except (OSError, TimeoutError):
            raise EnvironmentProblem(f"no Dask worker joined the scheduler {self.name} within {timeout:g} s",
                                     f"start workers with `dask worker {self.name}` (irscope installed on each); "
                                     "--worker-wait SECONDS waits longer for a cluster that starts them "
                                     "slowly") from None
        answers = client.run(version_probe(), on_error="return")
        for where, v in sorted(answers.items()):
            if isinstance(v, BaseException):
                raise EnvironmentProblem(f"worker {where} could not report its versions: {_first_line(v)}",
                                         "install irscope (and Triton) on every worker") from None
        problem = version_mismatch(self.versions, answers)
        if problem:
            raise EnvironmentProblem(problem, "install the same irscope and Triton on every worker as on this "
                                              "machine and start it with the same TRITON_*/AMDGCN_* variables, or "
                                              "stop that worker")

    def workers(self) -> list[str]:
        return sorted(self.client.scheduler_info().get("workers", {}))

    def threads(self) -> int:
        """Worker threads in the cluster now: how many tasks run at once."""
        return sum(self.client.nthreads().values()) or 1

    def run(self, jobs: Sequence, work: Callable, *, timeout: float | None = None,
            on_progress: Callable[[RunProgress], None] | None = None,
            on_result: Callable[[Placed], Placed] | None = None,
            around: Callable[[Any, Callable], JobResult] | None = None) -> list[Placed]:
        if not jobs:
            return []
        distributed = _distributed()
        client = self.client
        token = secrets.token_hex(4)
        groups = chunks(len(jobs), self.threads())
        # A task's key names its first job: irscope-<run>-<index>.
        futures = [client.submit(_task, [jobs[i] for i in group], work, timeout, around, self.versions,
                                 key=f"irscope-{token}-{group[0]}", pure=False) for group in groups]
        index = {f.key: group for f, group in zip(futures, groups)}
        results: list[Placed | None] = [None] * len(jobs)
        tally = _Tally(len(jobs))
        self._asked, self._held = 0.0, []
        if on_progress:
            on_progress(tally.progress(self._running(index, jobs)))
        watch = _WorkerWatch(client, self.name, self.no_worker_grace if self.worker_wait is None else self.worker_wait)
        try:
            # with_results: each result is fetched by the client's event loop as its task ends, not by a
            # round trip from this thread afterwards.
            for future, value in _completed(distributed.as_completed(futures, loop=client.loop, with_results=True,
                                                                     raise_errors=False), watch):
                group = index[future.key]
                _check_scheduler(future, value, self.name)
                for i, placed in zip(group, self._results(future, value, [jobs[i] for i in group])):
                    placed = on_result(placed) if on_result else placed
                    results[i] = placed
                    tally.finished(placed)
                    if on_progress:
                        on_progress(tally.progress(self._running(index, jobs, results), placed))
        except BaseException:
            # Ctrl-C (or anything else): nothing more is started; what runs now finishes on its worker (or
            # hits the timeout there) and its result is dropped.
            if client.status == "running":  # (a client that lost its scheduler has nobody to tell)
                client.cancel([f for f in futures if any(results[i] is None for i in index[f.key])], force=True)
            raise
        return [r for r in results if r is not None]

    def _running(self, index: dict, jobs: Sequence, results=None) -> tuple:
        """The jobs the workers are running now (or hold): one round trip to the scheduler, asked at most
        twice a second; in between, the last answer less what has finished."""
        if time.monotonic() - self._asked >= 0.5:
            self._asked = time.monotonic()
            try:
                processing = self._client.processing()
            except Exception:  # noqa: BLE001 - progress is best effort; a lost scheduler shows in the results
                processing = {}
            self._held = [i for ks in processing.values() for k in ks if k in index for i in index[k]]
        return tuple(jobs[i] for i in self._held if results is None or results[i] is None)

    @staticmethod
    def _results(future, value, jobs: list) -> list[Placed]:
        if future.status == "finished":
            rs, where = value
            return [Placed(job, r.status, r.value, r.message, r.seconds, r.cpu_seconds, where)
                    for job, r in zip(jobs, rs)]
        # A task Dask gave up on: its workers died (KilledWorker), it was cancelled, or worse.
        e = value[1] if isinstance(value, tuple) and len(value) == 3 else value
        what = "the Dask workers running it died" if type(e).__name__ == "KilledWorker" else "the Dask task failed"
        message = f"{what}: {type(e).__name__}: {_first_line(e)}"
        return [Placed(job, JobStatus.CRASHED, None, message, 0.0, 0.0, "cluster") for job in jobs]

    def close(self) -> None:
        if self._thread is not None and self._connected.is_set():  # else stuck connecting: left to exit
            self._thread.join()
            self._shut()

    def _shut(self) -> None:
        import logging
        client, cluster, self._client, self._cluster = self._client, self._cluster, None, None
        try:
            if client is not None:
                client.close()
        finally:
            try:
                if cluster is not None:
                    cluster.close()
            finally:
                logging.getLogger(_CLIENT_LOG).setLevel(self._client_log_level)


class _WorkerWatch:
    """Asks the scheduler, at most once a second, whether it has any worker; once it has had none for
    `grace` seconds, `check()` raises: a scheduler whose workers all died would keep the tasks forever."""

    def __init__(self, client, name: str, grace: float):
        self.client, self.name, self.grace = client, name, grace
        self.asked = self.last_seen = time.monotonic()

    def check(self) -> None:
        now = time.monotonic()
        if now - self.asked < 1.0:
            return
        self.asked = now
        try:
            workers = len(self.client.nthreads())
        except Exception:  # noqa: BLE001 - a scheduler that does not answer has no worker for us either
            workers = 0
        if workers:
            self.last_seen = now
        elif now - self.last_seen >= self.grace:
            again = "run it again: only the points that did not finish are compiled"
            raise EnvironmentProblem(
                f"no Dask worker left on {self.name} (none for {now - self.last_seen:.0f} s); the points that "
                "finished are written and cached",
                f"the LocalCluster's workers died (out of memory?): {again}, or without --cluster"
                if self.name.startswith("local:") else
                f"start workers with `dask worker {self.name}` (irscope installed on each) and {again}; "
                f"--worker-wait SECONDS waits longer for a cluster that starts its workers slowly")


def _check_scheduler(future, value, name: str) -> None:
    """A task Dask cancelled because the client lost its scheduler is no compile's failure: the run ends with
    one line (exit 5), as when no worker is left, instead of every unfinished point reading `crashed`."""
    e = value[1] if isinstance(value, tuple) and len(value) == 3 else value
    if future.status == "cancelled" and getattr(e, "reason", None) == "scheduler-connection-lost":
        raise EnvironmentProblem(f"lost the connection to the Dask scheduler at {name} during the run; the points "
                                 "that finished are written and cached",
                                 "check that the scheduler is still running (`dask scheduler`) and reachable, then "
                                 "run again: only the points that did not finish are compiled")


def _completed(results, watch: _WorkerWatch):
    """`as_completed`'s (future, value) pairs, checking between them that the cluster still has a worker."""
    condition = getattr(results, "thread_condition", None)  # notified by Dask as each task ends
    while True:
        while not results.has_ready():
            if results.is_empty():
                return
            watch.check()
            if condition is not None:
                with condition:
                    condition.wait(timeout=0.1)
            else:
                time.sleep(0.05)
        yield next(results)


def chunks(n: int, threads: int, most: int = MOST_PER_TASK) -> list[range]:
    """Jobs 0..n-1 as consecutive groups, one task each: shrinking as the jobs run out (each group is at
    most a quarter of what is left per thread), so the last tasks are single jobs that balance across the
    workers; one job a task whenever there are fewer than 8 jobs per thread."""
    out, i = [], 0
    while i < n:
        size = max(1, min(most, (n - i) // (4 * max(1, threads))))
        out.append(range(i, i + size))
        i += size
    return out


_CLIENT_LOG = "distributed.client"


def _client(address: str, timeout: float):
    distributed = _distributed()
    # Dask's client logs a lost scheduler as tracebacks on stderr (its reconnect, cancelled as it closes);
    # irscope says it in one line (_check_scheduler). Until the cluster closes (DaskCluster._shut).
    import logging
    logging.getLogger(_CLIENT_LOG).setLevel(logging.CRITICAL)
    try:
        return distributed.Client(address, timeout=timeout, set_as_default=False)
    except (OSError, TimeoutError, ValueError) as e:  # refused, timed out, or not a scheduler's address
        raise EnvironmentProblem(f"cannot reach the Dask scheduler at {address}: {_first_line(e)}",
                                 f"start one there with `dask scheduler` and workers with `dask worker {address}`"
                                 ", or check the host, the port and the firewall") from None


def _local_cluster(n: int):
    distributed = _distributed()
    import dask
    # One thread a worker: each job is one compile, and it forks one child. The scheduler keeps the tasks
    # and hands a worker one more than it has threads (`worker-saturation` 1.1, Dask's default: ceil(1.1 x
    # 1) = 2), so a worker never waits a round trip between two compiles, and never runs dry while another
    # holds a queue: with every task handed out at once ("inf"), one of 2 workers sat idle 0.5-1.4 s a
    # 100-point sweep, waiting for Dask's work stealing (docs/benchmarks.md). The workers'
    # statistical profiler (a thread sampling every 10 ms) is off: the compiles run in child processes it
    # cannot see, and on a small machine its wake-ups compete with them. So do the event loops' tick
    # monitor (every 20 ms), the memory monitor (100 ms) and the system monitor (500 ms): together about
    # 12% of a core for an idle LocalCluster of 2 workers, 2% at 1 s, 1 s and 2 s (docs/benchmarks.md).
    # Dask starts its workers with MALLOC_TRIM_THRESHOLD_=65536 (to give memory back); the workers keep
    # glibc's default, as a local compile has.
    environ = {k: v for k, v in dask.config.get("distributed.nanny.pre-spawn-environ", {}).items()
               if k != "MALLOC_TRIM_THRESHOLD_"}
    _fork_workers_from_server(distributed)
    with dask.config.set({"distributed.scheduler.worker-saturation": 1.1,
                          "distributed.worker.profile.enabled": False,
                          "distributed.admin.tick.interval": "1s",
                          "distributed.worker.memory.monitor-interval": "1s",
                          "distributed.admin.system-monitor.interval": "2s",
                          "distributed.nanny.pre-spawn-environ": environ,
                          "distributed.worker.preload": [*dask.config.get("distributed.worker.preload", []),
                                                         IGNORE_CTRL_C]}):
        # No dashboard, and the scheduler's HTTP server (its health and metrics routes, served whether or
        # not the dashboard is) on a free port: on 8787, Dask's default, another cluster's dashboard makes
        # it warn "Port 8787 is already in use" under irscope's output.
        cluster = distributed.LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None,
                                           scheduler_kwargs={"dashboard": False, "dashboard_address": ":0"},
                                           silence_logs=40)
    try:
        return distributed.Client(cluster, set_as_default=False), cluster
    except BaseException:
        cluster.close()
        raise


# Run by each LocalCluster worker process as it starts (Dask's `distributed.worker.preload` takes a
# script's text): Ctrl-C in a terminal sends SIGINT to its whole foreground process group, which holds
# the workers too, and each worker died of a KeyboardInterrupt mid-task while its nanny and comms printed
# six tracebacks (about 98 lines) under the table. The client alone handles Ctrl-C (it cancels the tasks
# and closes the cluster, which stops the workers), as a remote cluster's workers never see it either;
# their compile children inherit the ignored SIGINT (workers._child keeps it).
IGNORE_CTRL_C = "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"


# What the forkserver imports before it forks any worker: Dask's worker, then irscope's compiler with
# Triton and its cache key (preload.py).
FORKSERVER_PRELOAD = ("distributed", "irscope.harness.preload")


def _fork_workers_from_server(distributed) -> None:
    """The LocalCluster's worker processes are forked from one forkserver that imported Dask, irscope and
    Triton and hashed Triton's key once, instead of each being spawned as a fresh Python that imports and
    hashes them all itself (about 1.6 CPU-s a worker, docs/benchmarks.md). A forkserver is a process of
    its own, started fresh and single-threaded: forking it is safe, unlike forking this client, which
    runs Dask's event-loop thread (and this start-up thread) beside the caller's planning.

    Set for the rest of this process, not only while the cluster starts: a nanny reads the method again
    whenever it restarts a worker that died. Python starts one forkserver per process, on first use, with
    the preload of that moment; a later LocalCluster forks from the same one."""
    import dask
    dask.config.set({"distributed.worker.multiprocessing-method": "forkserver"})
    # Dask's own context sets its preload (its packages) on first use; ours replaces it before the
    # server starts, and names Dask's worker first.
    distributed.utils.get_mp_context().set_forkserver_preload(list(FORKSERVER_PRELOAD))


# What a worker process has done already, kept for its lifetime: the versions it was checked against
# (and the answer), so that a task checks once per process instead of once per job.
_checked: dict[tuple, str | None] = {}


def _worker_problem(where: str, expected: dict) -> str | None:
    key = tuple(sorted((k, str(v)) for k, v in expected.items()))
    if key not in _checked:
        _checked[key] = version_mismatch(expected, {where: local_versions()})
    return _checked[key]


def _warm_worker(expected: dict, dask_worker=None) -> None:
    """On every worker at the start (Client.run, which passes `dask_worker`): check its versions, hash
    Triton's key (about 0.5 s) and import the compiler, so that the children it forks inherit both instead
    of each paying for them."""
    with _guard:  # (another client's task on this worker may be forking a compile meanwhile)
        if _worker_problem(dask_worker.address, expected) is None:
            from . import compiler  # noqa: F401 - imported for the children to inherit
            from .specialise import warm_up
            warm_up()


# Held by a task's thread whenever it runs irscope code on the worker (the version check, the warm-up:
# imports, Triton's specialisation), and taken around every fork of this process (os.register_at_fork):
# so a compile child is never forked while another worker thread is inside an import or Triton's code.
# A child forked then inherits that import's module lock (or a C++ mutex) held by a thread it does not
# have, and waits on it until the timeout: with `dask worker --nthreads 2`, the first two tasks of a new
# or restarted worker process both warm up, and the first to finish forked while the other imported.
# The compiles themselves run outside it, so the threads still compile in parallel.
_guard = threading.RLock()


def _new_guard_in_child() -> None:
    global _guard
    _guard = threading.RLock()


os.register_at_fork(before=lambda: _guard.acquire(), after_in_parent=lambda: _guard.release(),
                    after_in_child=_new_guard_in_child)


def _task(jobs: list, work, timeout, around, expected: dict) -> tuple[list[JobResult], str]:
    """Some jobs on a worker, one after another, each in a child process of its own (run_jobs), after
    checking this worker's versions (once per worker process)."""
    from distributed import get_worker
    with _guard:
        where = get_worker().address
        problem = _worker_problem(where, expected)
        if problem:
            return [JobResult(job, JobStatus.ERROR, None, problem) for job in jobs], where
        allow_children()

        def run(j) -> JobResult:
            _guard.release()  # the compile, in its child: another thread may warm up meanwhile
            try:
                return run_jobs([j], work, workers=1, timeout=timeout)[0]
            finally:
                _guard.acquire()

        return [around(job, run) if around is not None else run(job) for job in jobs], where


def _first_line(e: BaseException) -> str:
    text = str(e).strip() or type(e).__name__
    return text.splitlines()[0]
