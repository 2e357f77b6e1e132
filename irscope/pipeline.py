"""Compile kernels into snapshot folders: the harness in child processes, the store for the writing.

`compile_points` is what `irscope compile` (and later sweeps and the TUI) call: it checks every request
up front, compiles each (kernel, options, target) point in a child process, and writes one snapshot
folder per point, a failed compile included.
"""
from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from .errors import UsageError
from .spec import CompileOptions, variant_name
from .store import FORMAT, LOG_DIR, META_FILE, PYTHON_FILE, check_writable, snapshot_dir, write_folder
from .targets import Target, get_target
from .workers import JobResult, Progress, exit_if_orphaned, run_jobs

DEFAULT_OUT = "irscope-snapshots"
DEFAULT_TIMEOUT = 300.0


def default_out() -> Path:
    """Where snapshots go unless --out says otherwise: $IRSCOPE_OUT, else ./irscope-snapshots."""
    return Path(os.environ.get("IRSCOPE_OUT") or DEFAULT_OUT)


@dataclass(frozen=True)
class Point:
    """One compile: a kernel (by reference: `matmul` or `file.py:fn`), its options, one target."""

    kernel: str
    target: str
    options: CompileOptions = field(default_factory=CompileOptions)


@dataclass(frozen=True)
class Outcome:
    """What became of one point: where its snapshot is and how the compile went."""

    point: Point
    status: str  # "ok", "failed" (compiler error, stages kept), "crashed", "timeout"
    path: Path | None = None
    variant: str = ""
    error: dict | None = None  # {"stage", "type", "message"}
    seconds: float = 0.0
    cpu_seconds: float = 0.0
    label: str = ""  # kernel/variant/target

    @property
    def ok(self) -> bool:
        return self.status == "ok"


class CompileInterrupted(KeyboardInterrupt):
    """Ctrl-C during `compile_points`: still a KeyboardInterrupt, carrying what had finished by then
    (`outcomes[i]` for `points[i]`, None where the compile was still running or had not started)."""

    def __init__(self, outcomes: list["Outcome | None"]):
        super().__init__()
        self.outcomes = outcomes


def check_points(points: Sequence[Point]) -> list[Point]:
    """Load every kernel and specialise every point now, so that a typo fails before any compile starts."""
    from . import harness, library
    for target in {get_target(p.target) for p in points}:
        harness.check_tools(target)
    for p in points:
        harness.specialise(library.load_kernel(p.kernel), get_target(p.target), p.options)
    return list(points)


def folder_for(point: Point, out: Path) -> Path:
    from . import library
    spec = library.load_kernel(point.kernel)
    return snapshot_dir(out, spec.name, variant_name(spec, point.options), get_target(point.target).name)


def compile_points(points: Sequence[Point], out: Path, *, workers: int | None = None,
                   timeout: float | None = DEFAULT_TIMEOUT, allow_goldens: bool = False,
                   on_progress: Callable[[Progress], None] | None = None,
                   start_method: str | None = None) -> list[Outcome]:
    """Compile every point in child processes and write its snapshot folder under `out`.

    `start_method` ("forkserver", "spawn") is for callers with threads of their own, such as the TUI,
    where forking a multi-threaded process is unsafe; the default forks.
    """
    out = Path(out)
    check_points(points)
    folders = [folder_for(p, out) for p in points]
    for folder in folders:
        check_writable(folder, allow_goldens)
    jobs = [(p, str(out)) for p in points]
    labels = [folder.relative_to(out).as_posix() for folder in folders]
    index = {id(job): i for i, job in enumerate(jobs)}
    finished: dict[int, JobResult] = {}

    def progress(p: Progress) -> None:
        if p.last is not None:
            finished[index[id(p.last.job)]] = p.last
        if on_progress:
            on_progress(p)

    try:
        results = run_jobs(jobs, _compile_job, workers=workers, timeout=timeout, on_progress=progress,
                           start_method=start_method)
    except KeyboardInterrupt:
        raise CompileInterrupted([_finished_outcome(finished.get(i), labels[i]) for i in range(len(jobs))]) from None
    return [_outcome(r, label) for r, label in zip(results, labels)]


def _finished_outcome(r: JobResult | None, label: str) -> Outcome | None:
    """What an interrupted run had finished: a worker that Ctrl-C itself killed did not finish."""
    if r is None or (r.status == "crashed" and "SIGINT" in r.message):
        return None
    if r.status == "error" and isinstance(r.value, UsageError):
        return None
    return _outcome(r, label)


def _compile_job(job: tuple[Point, str]) -> Outcome:
    point, out = job
    return compile_one(point, Path(out), capture_fds=True)


def compile_one(point: Point, out: Path, *, capture_fds: bool = False) -> Outcome:
    """Compile one point in this process and write its folder (the body of every child)."""
    from . import harness, library
    started = time.perf_counter()
    spec = library.load_kernel(point.kernel)
    target = get_target(point.target)
    result = harness.compile_kernel(spec, target, point.options, capture_fds=capture_fds)
    folder = snapshot_dir(out, spec.name, result.variant, target.name)
    files = snapshot_files(result)
    exit_if_orphaned()  # where PR_SET_PDEATHSIG is missing: a killed parent gets no folder written after it
    write_folder(folder, files)
    return Outcome(point, "ok" if result.ok else "failed", folder, result.variant, result.error,
                   time.perf_counter() - started, label=folder.relative_to(out).as_posix())


def _outcome(r: JobResult, label: str) -> Outcome:
    point = r.job[0]
    if r.status == "ok":
        o: Outcome = r.value
        return Outcome(o.point, o.status, o.path, o.variant, o.error, r.seconds, r.cpu_seconds, label)
    if r.status == "error" and isinstance(r.value, UsageError):
        raise r.value
    error = {"stage": "?", "type": r.status, "message": r.message}
    variant = label.split("/")[1] if label.count("/") == 2 else ""
    return Outcome(point, "crashed" if r.status == "error" else r.status, None, variant, error, r.seconds,
                   r.cpu_seconds, label)


def snapshot_meta(result) -> dict:
    """irscope.json for a CompileResult (documented in docs/snapshot-format.md)."""
    spec, opts = result.spec, result.options
    stages = {}
    for stage, data in result.stages.items():
        raw = data.encode() if isinstance(data, str) else data
        stages[stage] = {"file": f"{spec.fn_name}.{stage}", "bytes": len(raw),
                         "lines": raw.count(b"\n") if isinstance(data, str) else None,
                         "sha256": hashlib.sha256(raw).hexdigest()}
    return {
        "format": FORMAT,
        "kernel": spec.name,
        "function": spec.fn_name,
        "variant": result.variant,
        "description": spec.description,
        "source_file": _display_path(spec.path),
        "target": {**result.target.as_dict(), "vendor": result.target.vendor},
        "status": "ok" if result.ok else "failed",
        "error": result.error,
        "request": _request(opts),
        "compile_options": result.compile_options,
        "backend_options": result.backend_options,
        "specialisation": result.specialisation,
        "resources": result.resources.as_dict(),
        "times_ms": {k: round(v, 3) for k, v in result.times_ms.items()},
        "versions": result.versions,
        "content_key": result.content_key,
        "stages": stages,
        **({"passes": result.passes.summary()} if result.passes is not None else {}),
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


def _request(opts: CompileOptions) -> dict:
    out: dict = {"config": opts.config, "line_info": opts.line_info}
    for name in ("num_warps", "num_stages", "name"):
        if getattr(opts, name) is not None:
            out[name] = getattr(opts, name)
    for name in ("constexprs", "backend_options", "args"):
        if getattr(opts, name):
            out[name] = {k: str(v) if not isinstance(v, (int, float, bool)) else v for k, v in getattr(opts, name)}
    if opts.divisibility:
        out["divisibility"] = [[n, d] for n, d in opts.divisibility]
    if opts.passes:
        out["passes"] = opts.passes
    return out


def _display_path(path: str) -> str:
    try:
        return str(Path(path).resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return path


def snapshot_files(result) -> dict[str, bytes | str]:
    """Every file of a snapshot folder, by name; irscope.json last, written only once the rest are."""
    fn = result.spec.fn_name
    files: dict[str, bytes | str] = {f"{fn}.{stage}": data for stage, data in result.stages.items()}
    files[PYTHON_FILE] = result.python_source
    if result.triton_metadata:
        files[f"{fn}.json"] = json.dumps(result.triton_metadata, indent=1, sort_keys=True, default=str)
    for name, text in result.logs.items():
        files[f"{LOG_DIR}/{name}.log"] = text
    if result.passes is not None:
        files.update(result.passes.files())
    files[META_FILE] = json.dumps(snapshot_meta(result), indent=1, default=str) + "\n"
    return files


def target_of(point: Point) -> Target:
    return get_target(point.target)
