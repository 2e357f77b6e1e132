"""Compile kernels into snapshot folders: the harness in child processes, the store for the writing.

`compile_points` is what `irscope compile` (and later sweeps and the TUI) call: it checks every request
up front, compiles each (kernel, options, target) point in a child process, and writes one snapshot
folder per point, a failed compile included.
"""
from __future__ import annotations

import dataclasses
import os
import re
import time
import enum
import shutil
import stat
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from ..errors import IrscopeError, SnapshotError, UsageError
from ..spec.kernel import CompileOptions, variant_name
from ..store.folder import check_writable, process_running, snapshot_dir, write_folder
from ..store.writer import snapshot_files
from ..targets import Target, get_target
from .executors import LocalPool
from .workers import JobResult, JobStatus, Progress, exit_if_orphaned

DEFAULT_TIMEOUT = 300.0


@dataclass(frozen=True)
class Point:
    """One compile: a kernel (by reference: `matmul` or `file.py:fn`), its options, one target."""

    kernel: str
    target: str
    options: CompileOptions = field(default_factory=CompileOptions)
    # A Triton release other than this process's ("3.6.0"): compiled by that version's environment
    # (envs.py) in a process of its own (remote.py), into the variant folder `<variant>.triton-3.6.0`.
    triton: str = ""


class CompileStatus(enum.StrEnum):
    """How one compile point ended (irscope.json's `status` holds the first two)."""

    OK = "ok"
    FAILED = "failed"  # the compiler rejected it; the stages that compiled are kept
    CRASHED = "crashed"  # the compiling process died (an LLVM abort); no folder
    TIMEOUT = "timeout"  # killed past --timeout; no folder
    INTERRUPTED = "interrupted"  # Ctrl-C stopped it before it finished (sweeps report these)
    # It failed or crashed on a target the config's `not_for` names, or on instructions the target lacks
    # (wgmma, setmaxnreg below Hopper): what the spec said, not a fault; a failed compile keeps its folder.
    NOT_FOR_TARGET = "not-for-target"


@dataclass(frozen=True)
class Outcome:
    """What became of one point: where its snapshot is and how the compile went."""

    point: Point
    status: CompileStatus
    path: Path | None = None
    variant: str = ""
    error: dict | None = None  # {"stage", "type", "message"}
    seconds: float = 0.0
    cpu_seconds: float = 0.0
    label: str = ""  # kernel/variant/target
    where: str = "local"  # the Dask worker that compiled it, or "local"

    @property
    def ok(self) -> bool:
        return self.status == CompileStatus.OK


class CompileInterrupted(KeyboardInterrupt):
    """Ctrl-C during `compile_points`: still a KeyboardInterrupt, carrying what had finished by then
    (`outcomes[i]` for `points[i]`, None where the compile was still running or had not started)."""

    def __init__(self, outcomes: list["Outcome | None"]):
        super().__init__()
        self.outcomes = outcomes


def check_points(points: Sequence[Point]) -> list[Point]:
    """Load every kernel and specialise every point now, so that a typo fails before any compile starts.

    A point for another Triton release is specialised by that release, in its environment, when it compiles
    (compile_elsewhere: an error there names the release): this Triton's options, descriptor rules and
    tools are not that release's, and checking against them refused points the other release takes."""
    from .. import harness
    from .envs import is_running
    here = [p for p in points if not p.triton or is_running(p.triton)]
    for target in {get_target(p.target) for p in here}:
        harness.check_tools(target)
    for p in points:
        spec = load_kernel(p.kernel)
        if p in here:
            harness.specialise(spec, get_target(p.target), p.options)
    return list(points)


def folder_for(point: Point, out: Path) -> Path:
    from .envs import variant_for
    spec = load_kernel(point.kernel)
    return snapshot_dir(out, spec.name, variant_for(variant_name(spec, point.options), point.triton),
                        get_target(point.target).name)


def compile_points(points: Sequence[Point], out: Path, *, workers: int | None = None,
                   timeout: float | None = DEFAULT_TIMEOUT, allow_goldens: bool = False,
                   on_progress: Callable[[Progress], None] | None = None,
                   start_method: str | None = None, layouts: bool = False,
                   executor=None) -> list[Outcome]:
    """Compile every point in child processes and write its snapshot folder under `out`.

    `layouts` also records each snapshot's linear layouts (layouts.json, a child process each: about a
    second a snapshot, so sweeps and tests leave it to `irscope layouts`, which computes it when missing).

    `start_method` ("forkserver", "spawn") is for callers with threads of their own, such as the TUI,
    where forking a multi-threaded process is unsafe; the default forks. `executor` (harness.executors) runs
    the compiles elsewhere, e.g. on a Dask cluster: there a compile returns its files and they are written here.
    """
    from .envs import ensure_env, is_running
    out = Path(out)
    check_points(points)
    # A compile elsewhere imports a FILE.py kernel from the worker's disk: the key planned here tells a worker
    # whose copy differs (another checkout, a file edited meanwhile), as a sweep's rows do (sweep/run.py).
    planned = [_planned_key(p) for p in points] if executor is not None and executor.remote else None
    if executor is not None and points:  # a cluster starts in the background while the folders are checked
        getattr(executor, "start", lambda: None)()
    if executor is not None and executor.remote and any(p.triton and not is_running(p.triton) for p in points):
        raise UsageError("--triton with --scheduler/--cluster: a Dask worker compiles with its own Triton only",
                         "install that Triton on the workers (and here), or compile that release locally")
    for version in dict.fromkeys(p.triton for p in points if p.triton and not is_running(p.triton)):
        ensure_env(version)  # the CLI makes missing ones first, with progress (cli/envs.py)
    folders = [folder_for(p, out) for p in points]
    for folder in folders:
        check_writable(folder, allow_goldens)
    executor = executor or LocalPool(workers, start_method)
    remote = executor.remote
    logs = log_folder()  # what a compiler that aborts wrote first
    # A remote compile's log is on its worker (see _on_worker): its job names none here.
    jobs = [(p, str(out), "" if remote else str(logs / f"{i}.log")) for i, p in enumerate(points)]
    labels = [folder.relative_to(out).as_posix() for folder in folders]
    index = {id(job): i for i, job in enumerate(jobs)}
    finished: dict[int, JobResult] = {}

    def deliver(r):  # a remote compile's files, written here as a local child writes them
        return _write_delivered(r, folders[index[id(r.job)]]) if remote else r

    def progress(p: Progress) -> None:
        if p.last is not None:
            finished[index[id(p.last.job)]] = p.last
        if on_progress:
            on_progress(p)

    try:
        results = executor.run(jobs, _compile_files_job if remote else _compile_job, timeout=timeout,
                               on_progress=progress, on_result=deliver, around=_on_worker)
        outcomes = [_declared_not_for(_outcome(r, label)) for r, label in zip(results, labels)]
        if planned is not None:
            outcomes = [_as_planned(o, key) for o, key in zip(outcomes, planned)]
    except KeyboardInterrupt:
        raise CompileInterrupted([_finished_outcome(finished.get(i), labels[i]) for i in range(len(jobs))]) from None
    finally:
        shutil.rmtree(logs, ignore_errors=True)
    if layouts:
        _add_layouts(outcomes, workers, start_method)
    return outcomes


LOG_PREFIX = "irscope-logs-"
STALE_S = 3600  # a gone process's log folder is removed once nothing was added to it for this long


def _host() -> str:
    """This host's name in a log folder's: anything but letters and digits as _, so the name splits on dashes."""
    import socket
    return re.sub(r"[^A-Za-z0-9]", "_", socket.gethostname())[:40] or "host"


def log_prefix() -> str:
    """This process's log folders' prefix: irscope-logs-HOST-PID-."""
    return f"{LOG_PREFIX}{_host()}-{os.getpid()}-"


def log_folder() -> Path:
    """A new folder for the compile children's last words, named for this host and process, after removing
    those of this host's irscope processes that are gone: one killed before its `finally` ran (SIGKILL, the
    kernel's OOM killer) leaves its folder behind, and nothing else would remove it."""
    sweep_logs()
    return Path(tempfile.mkdtemp(prefix=log_prefix()))


def sweep_logs(where: str | None = None, now: float | None = None) -> int:
    """Remove the log folders under `where` (the temporary folder) of this host's processes no longer running,
    that this user owns and nothing was added to for STALE_S (a temporary folder shared by machines or
    containers whose process numbers mean other processes: the host's name and the age both guard); how many.
    Anything else there stays: named so but not a folder (a link is not followed), another host's or user's,
    a running process's, or recent. Not on Windows, where a process's number is not checked this way."""
    if os.name == "nt":
        return 0
    root = Path(where or tempfile.gettempdir())
    host = _host()
    try:
        found = [p for p in root.iterdir() if p.name.startswith(f"{LOG_PREFIX}{host}-")]
    except OSError:
        return 0
    now = time.time() if now is None else now
    removed = 0
    for folder in found:
        pid, dash, _ = folder.name[len(LOG_PREFIX) + len(host) + 1:].partition("-")
        if not (dash and pid.isdigit()) or process_running(int(pid)):
            continue
        try:
            st = folder.lstat()
        except OSError:
            continue
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or now - st.st_mtime < STALE_S:
            continue
        shutil.rmtree(folder, ignore_errors=True)
        removed += not folder.exists()
    return removed


def _planned_key(point: Point) -> str:
    from .. import harness
    return harness.plan(load_kernel(point.kernel), get_target(point.target), point.options)[0]


def _as_planned(o: Outcome, key: str) -> Outcome:
    """`o`, or a crash when the snapshot a worker sent was compiled from another kernel file, environment or
    Triton than the key planned here (its folder removed: it is not this point's compile)."""
    if o.path is None:
        return o
    from ..store.snapshot import load_snapshot
    try:
        recorded = load_snapshot(o.path).meta.get("content_key")
    except SnapshotError:
        recorded = None
    if recorded == key:
        return o
    shutil.rmtree(o.path, ignore_errors=True)
    on = f" on {o.where}" if o.where not in (None, "local") else ""
    message = (f"compiled{on} from another kernel file, environment or Triton than planned here (content key "
               f"{str(recorded)[:12]}, not {key[:12]}): not used")
    return dataclasses.replace(o, status=CompileStatus.CRASHED, path=None,
                               error={"stage": "?", "type": CompileStatus.CRASHED.value, "message": message})


def _declared_not_for(o: Outcome) -> Outcome:
    """A failed or crashed compile that the config's `not_for` foresaw, or one that asked for instructions
    the target lacks: NOT_FOR_TARGET, the spec's reason first and the compiler's words after."""
    if o.status not in (CompileStatus.FAILED, CompileStatus.CRASHED) or (o.error or {}).get("not_cached"):
        return o  # a machine's fault (ptxas killed, a tool missing) says nothing about the target
    message = (o.error or {}).get("message") or ""
    try:
        reason = load_kernel(o.point.kernel).config(o.point.options.config).not_for.get(o.point.target)
    except IrscopeError:
        reason = None
    declared = bool(reason)
    if not reason:
        op = foreign_op(message, get_target(o.point.target))
        if op:
            other = "an AMD" if get_target(o.point.target).vendor == "nvidia" else "an NVIDIA"
            reason = f"uses {op}, {other} operation, which has no lowering for {o.point.target}"
    if not reason and "not a kernel for" not in message:
        return o
    if reason:
        last = message.strip().splitlines()[-1].strip() if message.strip() else str(o.status)
        message = f"not for {o.point.target}: {reason} (the compiler: {last.removeprefix(ABORTED)[:300]})"
    return dataclasses.replace(o, status=CompileStatus.NOT_FOR_TARGET,
                               error={**(o.error or {}), "message": message, "declared": declared})


# The dialects of one vendor's operations, which the other vendor's pipeline has not registered or cannot
# lower (a Gluon kernel's explicit `cdna3.buffer_load` compiled for sm_90a, a Hopper `mbarrier` for gfx942).
_FOREIGN_DIALECTS = {"nvidia": ("amdg", "amdgpu", "rocdl", "tritonamdgpu"),
                     "amd": ("ttng", "nvgpu", "nvvm", "nvws", "triton_nvidia_gpu")}
_OP_IN_ERROR = re.compile(r"operation '(\w+)\.([\w.]+)' that was explicitly marked illegal"
                          r"|\b(\w+)\.([\w.]+) created with unregistered dialect")


def foreign_op(message: str, target: Target) -> str | None:
    """The other vendor's operation a compile failed or aborted on (`amdg.buffer_load`), if that is why."""
    for m in _OP_IN_ERROR.finditer(message):
        dialect, op = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
        if dialect in _FOREIGN_DIALECTS.get(target.vendor, ()):
            return f"{dialect}.{op}"
    return None


def _add_layouts(outcomes: list[Outcome], workers: int | None, start_method: str | None) -> None:
    """layouts.json for every snapshot with a TTGIR, each converted in a child of its own (the layout
    bindings can abort: a crash costs that file's Triton bases, never the snapshot)."""
    from ..store import load_snapshot
    from .layouts import compute_for_snapshots
    snaps = [load_snapshot(o.path) for o in outcomes if o.path is not None]
    compute_for_snapshots(snaps, workers=workers, start_method=start_method)


def _finished_outcome(r: JobResult | None, label: str) -> Outcome | None:
    """What an interrupted run had finished: a worker that Ctrl-C itself killed did not finish."""
    if r is None or (r.status == "crashed" and "SIGINT" in r.message):
        return None
    if r.status == "error" and isinstance(r.value, UsageError):
        return None
    return _outcome(r, label)


def _compile_job(job: tuple[Point, str, str]) -> Outcome:
    point, out, log = job
    from .envs import is_running
    if point.triton and not is_running(point.triton):
        return compile_elsewhere(point, Path(out), log_path=Path(log))
    return compile_one(point, Path(out), capture_fds=True, log_path=Path(log))


def _compile_files_job(job: tuple[Point, str, str]) -> tuple[Outcome, dict]:
    """On a remote worker: compile, and send the snapshot's files back instead of writing them there."""
    from .. import harness
    from ..spec import library
    point, started = job[0], time.perf_counter()
    spec, target = library.load_kernel(point.kernel), get_target(point.target)
    result = harness.compile_kernel(spec, target, point.options, capture_fds=True, log_path=Path(job[2]))
    if result.not_cached:
        return _not_cached(point, result, started), {}
    status = CompileStatus.OK if result.ok else CompileStatus.FAILED
    files = dict(snapshot_files(result))
    # The tools this child ran and waited for (ptxas, the disassembler): the child's own CPU comes back in
    # its JobResult; a local compile's tools count in the client's own children time instead.
    t = os.times()
    return Outcome(point, status, None, result.variant, result.error, time.perf_counter() - started,
                   t.children_user + t.children_system), files


def _not_cached(point: Point, result, started: float) -> Outcome:
    """A failure that is not the kernel's own (compiler.environmental_failure): reported as crashed, with
    no folder, as a crash is, so that the next run compiles the point again instead of serving it."""
    error = {**(result.error or {}), "type": CompileStatus.CRASHED.value,
             "message": f"{result.not_cached} (not cached: compiled again next run)", "not_cached": result.not_cached}
    return Outcome(point, CompileStatus.CRASHED, None, result.variant, error, time.perf_counter() - started)


def _write_delivered(r, folder: Path):
    if r.status != JobStatus.OK or r.value[0].status == CompileStatus.CRASHED:  # crashed: no folder
        return r
    outcome, files = r.value
    write_folder(folder, files)
    return dataclasses.replace(r, value=dataclasses.replace(outcome, path=folder))


# What this worker process has warmed up already (_warm_for): "target:NAME", "kernel:NAME:TARGET".
_warm: set[str] = set()


def _on_worker(job: tuple[Point, str, str], run: Callable) -> JobResult:
    """Around a compile on a remote worker: warm Triton up there before forking (once per worker process
    and target), and give the compiler's last words a log on the worker's own disk, read there when the
    compile crashed."""
    target = get_target(job[0].target)
    _warm_for(job[0], target)
    sweep_logs()
    with tempfile.TemporaryDirectory(prefix=log_prefix()) as tmp:
        log = Path(tmp) / "compile.log"
        r = run((job[0], job[1], str(log)))
        if r.status == JobStatus.CRASHED:
            r = dataclasses.replace(r, message=crash_reason(log, target) or r.message)
    return r


def _warm_for(point: Point, target: Target) -> None:
    """In the worker process, once: what the client does before it forks its compile children (warm_up,
    and check_points' specialising), so that every child forked here inherits it instead of redoing it.
    A child whose parent had specialised the kernel used half the CPU (0.07 s instead of 0.14 s for `add`),
    and importing `add` in each child cost about 60 ms. A user's FILE.py kernel is not loaded here (a
    long-lived worker would keep the file's first version): the built-in `add` is specialised for the
    target instead, which warms what is not the kernel's own."""
    from .. import harness
    if f"target:{target.name}" not in _warm:
        harness.warm_up([target])
        _warm.add(f"target:{target.name}")
    ref = point.kernel
    builtin = ":" not in ref and not ref.endswith(".py") and "/" not in ref
    kernel, options = (ref, point.options) if builtin else ("add", None)
    if f"kernel:{kernel}:{target.name}" in _warm:
        return
    _warm.add(f"kernel:{kernel}:{target.name}")
    try:
        harness.specialise(load_kernel(kernel), target, options or CompileOptions())
    except Exception:  # noqa: BLE001 - warming only: the compile child reports a kernel that does not load
        pass


def compile_elsewhere(point: Point, out: Path, *, log_path: Path | None = None) -> Outcome:
    """Compile one point under another Triton release: that version's interpreter runs remote.py, which
    does what compile_one does and writes the same folder (this worker waits for it; killing this
    worker at the timeout kills it too)."""
    import shutil
    import tempfile
    from .envs import child_environment, ensure_env, normalise_version, variant_for
    from .remote import options_to_json, run_remote

    env, _ = ensure_env(point.triton)
    workdir = Path(tempfile.mkdtemp(prefix="irscope-remote-"))
    job = {"kernel": point.kernel, "target": point.target, "options": options_to_json(point.options),
           "out": str(out), "suffix": variant_for("", point.triton), "log": str(log_path) if log_path else ""}
    try:
        r = run_remote(env.python, child_environment(env), job, timeout=None, workdir=workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    if r["status"] == "usage":
        raise UsageError(f"under Triton {normalise_version(point.triton)}: {r['message']}", r.get("hint") or None)
    if r["status"] in ("crashed", "timeout"):
        error = {"stage": "?", "type": r["status"], "message": f"Triton {env.version}: {r['message']}"}
        if r.get("not_cached"):  # the machine's fault (a ptxas killed from outside), as _not_cached marks it
            error["not_cached"] = r["not_cached"]
        return Outcome(point, CompileStatus(r["status"]), None, "", error, r.get("seconds", 0.0))
    return Outcome(point, CompileStatus(r["status"]), Path(r["path"]), r["variant"], r.get("error"), r["seconds"],
                   r.get("cpu_seconds", 0.0), r["label"])


def compile_one(point: Point, out: Path, *, capture_fds: bool = False, log_path: Path | None = None) -> Outcome:
    """Compile one point in this process and write its folder (the body of every child)."""
    from .. import harness
    started = time.perf_counter()
    spec = load_kernel(point.kernel)
    target = get_target(point.target)
    result = harness.compile_kernel(spec, target, point.options, capture_fds=capture_fds, log_path=log_path)
    folder = snapshot_dir(out, spec.name, result.variant, target.name)
    if result.not_cached:
        return dataclasses.replace(_not_cached(point, result, started), label=folder.relative_to(out).as_posix())
    files = snapshot_files(result)
    exit_if_orphaned()  # where PR_SET_PDEATHSIG is missing: a killed parent gets no folder written after it
    write_folder(folder, files)
    return Outcome(point, CompileStatus.OK if result.ok else CompileStatus.FAILED, folder, result.variant, result.error,
                   time.perf_counter() - started, label=folder.relative_to(out).as_posix())


def _outcome(r: JobResult, label: str) -> Outcome:
    point, where = r.job[0], getattr(r, "where", "local")
    if r.status == "ok":
        o: Outcome = r.value
        cpu = r.cpu_seconds + (o.cpu_seconds if where != "local" else 0.0)  # a worker's compile: with its tools
        return Outcome(o.point, o.status, o.path, o.variant, o.error, r.seconds, cpu, label, where)
    if r.status == "error" and isinstance(r.value, UsageError):
        raise r.value
    message = r.message
    if r.status == JobStatus.CRASHED and len(r.job) > 2 and r.job[2]:  # a remote job names no log: its worker read it
        message = crash_reason(Path(r.job[2]), get_target(point.target)) or message
    error = {"stage": "?", "type": r.status, "message": message}
    variant = label.split("/")[1] if label.count("/") == 2 else ""
    return Outcome(point, CompileStatus.CRASHED if r.status == JobStatus.ERROR else CompileStatus(r.status), None, variant, error, r.seconds,
                   r.cpu_seconds, label, where)


def load_kernel(ref: str):
    """A point's kernel: a captured launch (`LAUNCHES.json:ID`, irscope.harness.launches) or any other
    reference irscope.spec.library knows."""
    from ..spec import launches, library
    if launches.split_ref(ref):
        from .launches import load_launch_kernel
        return load_launch_kernel(ref)[0]
    return library.load_kernel(ref)


def target_of(point: Point) -> Target:
    return get_target(point.target)


# LLVM intrinsics that only some NVIDIA generations have: an abort on one of them means the kernel asks
# for instructions the target lacks (a Gluon kernel written for Hopper, compiled for sm_80).
_ARCH_INTRINSICS = {"wgmma": "Hopper's warpgroup MMA (wgmma)", "setmaxnreg": "Hopper's setmaxnreg (warp specialisation)",
                    "tcgen05": "Blackwell's tcgen05", "cp.async.bulk": "TMA bulk copies"}


ABORTED = "the compiler aborted: "


def crash_reason(log: Path, target: Target) -> str | None:
    """What a compiler process that died wrote last (LLVM's `LLVM ERROR: ...`), as one line; None if
    it left nothing. Intrinsics the target lacks are named as such."""
    try:
        text = log.read_text(errors="replace")
    except OSError:
        return None
    lines = [ln.strip() for ln in text.splitlines() if "LLVM ERROR" in ln or "error:" in ln]
    if not lines:
        return None
    first = lines[0]
    for key, what in _ARCH_INTRINSICS.items():
        if f"llvm.nvvm.{key}" in first:
            return f"uses {what}, which {target.name} does not have: not a kernel for {target.name} ({first[:160]})"
    return f"{ABORTED}{_cut(first, 300)}"


def _cut(text: str, n: int) -> str:
    """At most n characters, cut at a word, with an ellipsis when cut."""
    if len(text) <= n:
        return text
    return text[:n].rsplit(" ", 1)[0] + " ..."
