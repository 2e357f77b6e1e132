"""Run jobs in child processes, a few at a time, so that a compile that crashes the interpreter (an LLVM
abort) or hangs is that job's failure and not everyone's.

Children are forked where the platform allows it: the parent has already imported Triton and the
kernels, so a child starts compiling at once instead of paying the imports again.
"""
from __future__ import annotations

import enum
import faulthandler
import multiprocessing as mp
import os
import signal
import sys
import time
import traceback
from contextlib import contextmanager
from dataclasses import dataclass
from multiprocessing.connection import wait
from typing import Any, Callable, Generic, Sequence, TypeVar

J = TypeVar("J")
R = TypeVar("R")


class JobStatus(enum.StrEnum):
    """How a job ended."""

    OK = "ok"  # it returned its value
    ERROR = "error"  # it raised (the exception is the value)
    CRASHED = "crashed"  # its process died
    TIMEOUT = "timeout"  # it ran past the time limit and was killed


@dataclass(frozen=True)
class JobResult(Generic[J, R]):
    """How one job ended: "ok" with its value, or "error", "crashed", "timeout" with a message."""

    job: J
    status: JobStatus
    value: R | None = None
    message: str = ""
    seconds: float = 0.0
    cpu_seconds: float = 0.0  # user+system time of the child process


@dataclass(frozen=True)
class Progress:
    done: int
    total: int
    running: tuple[Any, ...]
    last: JobResult | None = None


def _context(start_method: str | None = None):
    """Fork where it is safe and cheap; a threaded caller (the TUI) asks for "forkserver" or "spawn"."""
    methods = mp.get_all_start_methods()
    if start_method is not None and start_method in methods:
        return mp.get_context(start_method)
    return mp.get_context("fork" if "fork" in methods and sys.platform != "darwin" else "spawn")


# The pid of the process that started this worker (its parent, or the forkserver); None outside workers.
_parent: int | None = None


def _die_with_parent(expected_parent: int | None) -> None:
    """Make this worker die when its parent does, so a killed `irscope` leaves nothing compiling and
    writing behind it: the kernel's PR_SET_PDEATHSIG on Linux, and everywhere a check before writing
    (`exit_if_orphaned`)."""
    global _parent
    if sys.platform.startswith("linux"):
        try:
            import ctypes
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG = 1
        except (OSError, AttributeError):
            pass
    _parent = os.getppid()
    if expected_parent is not None and _parent != expected_parent:
        # The parent died between the fork and the prctl: the death signal will never come.
        os._exit(1)


def orphaned() -> bool:
    """True in a worker whose parent has gone (it was reparented); False outside workers."""
    return _parent is not None and os.getppid() != _parent


def exit_if_orphaned() -> None:
    """End this worker now if its parent is gone: nobody waits for its result, and what it would
    write next could land after the user saw the run end."""
    if orphaned():
        os._exit(1)


def _child(conn, work: Callable, job: Any, parent: int | None = None) -> None:
    _die_with_parent(parent)
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        # Ctrl-C reaches the whole process group: a child just dies, and the parent, which gets the
        # KeyboardInterrupt, reports the interruption. A parent that ignores SIGINT (started with
        # nohup or in the background) keeps its children ignoring it too.
        signal.signal(signal.SIGINT, signal.SIG_DFL)
    # Forked with SIGINT blocked (_sigint_held): one that came since is delivered now, to the default.
    _unblock_sigint()
    faulthandler.disable()  # a crash is reported by the parent from the exit status, not as a stack dump
    try:
        value = work(job)
        t = os.times()
        exit_if_orphaned()
        conn.send((JobStatus.OK, value, "", t.user + t.system))
    except BaseException as e:  # noqa: BLE001 - everything a job raises is reported to the parent
        t = os.times()
        try:
            conn.send((JobStatus.ERROR, e, "".join(traceback.format_exception_only(type(e), e)).strip(),
                       t.user + t.system))
        except Exception:  # the exception itself may not pickle
            conn.send((JobStatus.ERROR, None, f"{type(e).__name__}: {e}", t.user + t.system))
    finally:
        conn.close()


@contextmanager
def _sigint_held():
    """SIGINT blocked in this thread while a worker is started: the child inherits the mask, so a Ctrl-C
    in the instant between its fork and its _child setting SIGINT's default stays pending until then,
    instead of raising KeyboardInterrupt in a copy of the parent's stack (multiprocessing's bootstrap
    printed a traceback, the job ran on or was called crashed, and the child could act on the parent's
    objects). The parent gets its own KeyboardInterrupt when the block ends."""
    held = hasattr(signal, "pthread_sigmask")
    if held:
        old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        if held and signal.SIGINT not in old:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def _unblock_sigint() -> None:
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def run_jobs(jobs: Sequence[J], work: Callable[[J], R], *, workers: int | None = None, timeout: float | None = None,
             on_progress: Callable[[Progress], None] | None = None,
             start_method: str | None = None) -> list[JobResult[J, R]]:
    """Run `work(job)` for every job in its own child process, at most `workers` at once.

    Results come back in the order of `jobs`. A job that raises is "error" (its exception is the
    value); one whose process dies is "crashed"; one that runs past `timeout` seconds is killed and
    "timeout". Ctrl-C stops every child and raises KeyboardInterrupt.
    """
    ctx = _context(start_method)
    # A forked or spawned worker's parent is this process; a forkserver's worker is the server's child.
    parent_pid = os.getpid() if ctx.get_start_method() in ("fork", "spawn") else None
    workers = max(1, workers or os.cpu_count() or 1)
    results: list[JobResult | None] = [None] * len(jobs)
    pending = list(range(len(jobs)))
    running: dict[int, tuple[Any, Any, float]] = {}  # index -> (process, parent end of the pipe, start)
    done = 0

    def finish(i: int, result: JobResult) -> None:
        nonlocal done
        proc, conn, _ = running.pop(i)
        conn.close()
        proc.join(timeout=5)
        if proc.is_alive():
            proc.kill()
            proc.join()
        results[i] = result
        done += 1
        if on_progress:
            on_progress(Progress(done, len(jobs), tuple(jobs[k] for k in running), result))

    try:
        while pending or running:
            while pending and len(running) < workers:
                i = pending.pop(0)
                parent, child = ctx.Pipe(duplex=False)
                proc = ctx.Process(target=_child, args=(child, work, jobs[i], parent_pid), daemon=True)
                with _sigint_held():
                    proc.start()
                    child.close()
                    running[i] = (proc, parent, time.monotonic())  # before a held Ctrl-C: it is stopped too
                if on_progress:
                    on_progress(Progress(done, len(jobs), tuple(jobs[k] for k in running)))
            now = time.monotonic()
            next_deadline = min((start + timeout for _, _, start in running.values()), default=None) \
                if timeout else None
            wait_for = max(0.0, next_deadline - now) if next_deadline is not None else None
            ready = wait([conn for _, conn, _ in running.values()] + [p.sentinel for p, _, _ in running.values()],
                         timeout=wait_for)
            for i, (proc, conn, start) in list(running.items()):
                elapsed = time.monotonic() - start
                if conn in ready or conn.poll():
                    try:
                        status, value, message, cpu = conn.recv()
                    except (EOFError, OSError):
                        finish(i, _crashed(jobs[i], proc, elapsed))
                        continue
                    finish(i, JobResult(jobs[i], status, value, message, elapsed, cpu))
                elif proc.sentinel in ready and not proc.is_alive():
                    finish(i, _crashed(jobs[i], proc, elapsed))
                elif timeout and elapsed > timeout:
                    proc.kill()
                    finish(i, JobResult(jobs[i], JobStatus.TIMEOUT, None, f"killed after {timeout:g} s", elapsed))
    except BaseException:
        for proc, conn, _ in running.values():
            proc.kill()
        for proc, _, _ in running.values():
            proc.join()
        raise
    return [r for r in results if r is not None]


def _crashed(job: Any, proc, elapsed: float) -> JobResult:
    proc.join(timeout=5)
    code = proc.exitcode
    if code is not None and code < 0:
        try:
            what = f"was killed by signal {signal.Signals(-code).name}"
        except ValueError:
            what = f"was killed by signal {-code}"
    else:
        what = f"exited with status {code}"
    return JobResult(job, JobStatus.CRASHED, None, f"the compiler process {what}", elapsed)
