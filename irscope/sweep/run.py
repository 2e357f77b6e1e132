"""Running points: plan each one's content key, compile the stale ones in parallel (crash-isolated), and
gather every point's analysis into one result."""
from __future__ import annotations

import dataclasses
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from ..errors import IrscopeError, SnapshotError, UsageError
from ..harness.batch import CompileStatus
from ..store.schema import loads
from ..spec.kernel import variant_name
from .points import SweepPoint


@dataclass(frozen=True)
class SweepRow:
    """What became of one point: compiled now or found fresh, its snapshot and its analysis."""

    point: SweepPoint
    status: CompileStatus
    cached: bool
    path: Path | None
    label: str
    content_key: str
    analysis: Any = None  # irscope.analyze.Analysis when a snapshot exists
    times_ms: dict = field(default_factory=dict)
    error: dict | None = None
    where: str | None = None  # the Dask worker that compiled it, "local", or None when it came from the cache

    @property
    def launchable(self) -> bool:
        return bool(self.analysis and self.analysis.launch.launchable)

    @property
    def reason(self) -> str:
        """Why the point did not compile, in one short line ("" when it did)."""
        if self.status == "ok":
            return ""
        if self.status == "interrupted":
            return "interrupted before it finished"
        from ..errors import error_summary
        err = self.error or {}
        text = error_summary(err) if err else self.status
        if self.status == "failed" and err.get("stage"):
            text = f"at {err['stage']}: {text}"
        return text if len(text) <= 120 else text[:117] + "..."

    @property
    def triton_ms(self) -> float:
        """Time in Triton's own passes: the frontend and every lowering up to PTX / AMDGCN."""
        return sum(v for k, v in self.times_ms.items() if k in ("frontend", "ttir", "ttgir", "llir", "ptx", "amdgcn"))

    @property
    def assembler_ms(self) -> float:
        """ptxas (cubin) or the AMD assembler and linker (hsaco)."""
        return sum(v for k, v in self.times_ms.items() if k in ("cubin", "hsaco"))

    @property
    def disassembly_ms(self) -> float:
        return self.times_ms.get("sass", 0.0)


@dataclass(frozen=True)
class TargetSummary:
    target: str
    points: int
    ok: int
    failed: int  # compile failures, crashes and timeouts
    unlaunchable: int  # compiled, but over a per-block limit
    reasons: tuple[str, ...]  # the distinct kinds of launch problem, e.g. "shared memory"


@dataclass(frozen=True)
class SweepResult:
    rows: tuple[SweepRow, ...]
    compiled: int  # points compiled by this run
    cached: int  # points found fresh
    wall_seconds: float
    cpu_seconds: float  # this process and its children (compiles, ptxas, disassembly), this run
    out: Path
    interrupted: int = 0  # points that Ctrl-C stopped before they finished (rows with status "interrupted")
    # CPU of the compiles run on Dask workers (each compile process and the tools it ran), which
    # cpu_seconds, measured here, cannot see; 0.0 for a local run. The workers' own Dask processes are
    # not in it.
    worker_cpu_seconds: float = 0.0
    not_started: int = 0  # of the interrupted points, those that had not started compiling

    def summary(self) -> tuple[TargetSummary, ...]:
        out = []
        for target in dict.fromkeys(r.point.target for r in self.rows):
            rows = [r for r in self.rows if r.point.target == target and r.status != "interrupted"]
            ok = [r for r in rows if r.status == "ok"]
            bad = [r for r in ok if not r.launchable]
            kinds = sorted({_reason_kind(reason) for r in bad for reason in r.analysis.launch.reasons})
            out.append(TargetSummary(target, len(rows), len(ok), len(rows) - len(ok), len(bad), tuple(kinds)))
        return tuple(out)

    @property
    def recorded_ms(self) -> dict[str, float]:
        """Compile time recorded in the snapshots of every point (what the sweep costs cold), by part; the
        total is Triton's compile (its passes and ptxas) plus irscope's disassembly of the cubin."""
        return {"triton": sum(r.triton_ms for r in self.rows), "assembler": sum(r.assembler_ms for r in self.rows),
                "disassembly": sum(r.disassembly_ms for r in self.rows),
                "total": sum(r.times_ms.get("total", 0.0) + r.disassembly_ms for r in self.rows)}


def _reason_kind(reason: str) -> str:
    for kind in ("shared memory", "LDS", "threads", "registers", "tensor memory", "did not compile"):
        if kind in reason:
            return kind
    return reason


class SweepInterrupted(KeyboardInterrupt):
    """Ctrl-C during `run_points`: still a KeyboardInterrupt, carrying the result of what had finished
    (the points still compiling are rows with status "interrupted")."""

    def __init__(self, result: "SweepResult"):
        super().__init__()
        self.result = result


@dataclass(frozen=True)
class SweepProgress:
    phase: str  # "planning" or "compiling"
    done: int
    total: int
    running: tuple[str, ...] = ()  # labels of the compiles in flight
    failed: int = 0  # compiles that finished but did not succeed
    by_worker: tuple[tuple[str, int], ...] = ()  # (worker address or "local", compiles finished there)


@dataclass(frozen=True)
class PlannedPoint:
    """A point with its content key and folder, and whether that folder already holds this compile."""

    point: SweepPoint
    key: str
    folder: Path
    fresh: bool


def plan_points(points: Sequence[SweepPoint], out: Path, *, force: bool = False,
                on_progress: Callable[["SweepProgress"], None] | None = None,
                on_stale: Callable[[], None] | None = None) -> list[PlannedPoint]:
    """The content key of every point (harness.plan: no compile) and whether its snapshot is fresh;
    `on_stale()` is called once, at the first point that is not."""
    from .. import harness
    from ..harness.batch import load_kernel
    from ..store.snapshot import META_FILE
    from ..store.folder import snapshot_dir
    from ..targets import get_target

    from ..harness.envs import is_running, variant_for
    from ..harness.remote import plan_keys

    # Points for another Triton release get their keys from that release (one process per release).
    foreign: dict[str, list[int]] = {}
    for i, p in enumerate(points):
        if p.triton and not is_running(p.triton):
            foreign.setdefault(p.triton, []).append(i)
    remote_keys = {i: k for v, idx in foreign.items()
                   for i, k in zip(idx, plan_keys(v, [(points[i].kernel, points[i].target, points[i].options)
                                                     for i in idx]))}
    planned = []
    for i, p in enumerate(points):
        try:
            spec = load_kernel(p.kernel)  # a library kernel, or a captured launch (`LAUNCHES.json:ID`)
            target = get_target(p.target)
            key = harness.plan(spec, target, p.options)[0] if i not in remote_keys else (remote_keys[i] or "")
        except IrscopeError as e:
            where = f"{p.where}: " if p.where else ""
            raise type(e)(f"{where}{e.message}", e.hint) from None
        folder = snapshot_dir(Path(out), spec.name, variant_for(variant_name(spec, p.options), p.triton),
                              target.name)
        fresh = not force and _recorded_key(folder / META_FILE) == key
        planned.append(PlannedPoint(p, key, folder, fresh))
        if not fresh and on_stale is not None:
            on_stale, stale_seen = None, on_stale
            stale_seen()
        if on_progress and (i + 1) % 25 == 0:
            on_progress(SweepProgress("planning", i + 1, len(points)))
    _check_one_compile_a_folder(planned, Path(out))
    return planned


def _check_one_compile_a_folder(planned: Sequence[PlannedPoint], out: Path) -> None:
    """Two points whose compiles differ must not share a folder: the run compiles a folder once, so one
    point's row showed the other's compile (two FILE.py kernels of one name, `a/k.py:kern` and `b/k.py:kern`)."""
    first: dict[Path, PlannedPoint] = {}
    for pp in planned:
        other = first.setdefault(pp.folder, pp)
        if other.key != pp.key:
            label = pp.folder.relative_to(out).as_posix()
            where = f"{other.point.where}: " if other.point.where else ""
            raise UsageError(f"{where}{_describe(other.point)} and {_describe(pp.point)} would both be written to "
                             f"{label}, yet they compile differently",
                             "a folder is named by the kernel's name and its options: give one kernel another name "
                             "(KernelSpec(name=...) in its file), or compile them into different output folders (a "
                             "sweep file's `out:`, or --out)")


def _describe(p: SweepPoint) -> str:
    axes = ", ".join(f"{n}={v!r}" for n, v in p.axes)
    return p.kernel + (f" ({axes})" if axes else "")


def serve_fresh(planned: list[PlannedPoint], out: Path) -> dict[int, "SweepRow"]:
    """The rows of the fresh points, read from their folders; a fresh folder that is damaged, or holds a
    failure that was the machine's (compiler.environmental_failure), is marked stale in `planned` instead."""
    rows: dict[int, SweepRow] = {}
    for i, pp in enumerate(planned):
        if pp.fresh:
            try:
                rows[i] = _row(pp, None, Path(out))
            except SnapshotError:
                planned[i] = dataclasses.replace(pp, fresh=False)
    return rows


def run_points(points: Sequence[SweepPoint], out: Path, *, workers: int | None = None, timeout: float | None = 300.0,
               force: bool = False, on_progress: Callable[[SweepProgress], None] | None = None,
               executor=None) -> SweepResult:
    """Compile the points whose snapshot is missing or stale (in parallel, crash-isolated), and analyse all.

    `executor` (harness.executors: the local pool by default, or a Dask cluster) runs the compiles; the
    cache stays here, so only stale points are sent, and every snapshot is written here."""
    from .. import harness
    from ..harness.batch import CompileInterrupted, compile_points
    from ..store.folder import check_writable
    from ..targets import get_target

    out = Path(out)
    started, cpu0 = time.perf_counter(), _cpu()
    # A Dask cluster is started (or joined) at the first point that needs compiling, in the background
    # while the rest is planned; a sweep whose every point is fresh never touches it.
    planned = plan_points(points, out, force=force, on_progress=on_progress,
                          on_stale=getattr(executor, "start", None))
    # A fresh folder whose files were damaged since (a truncated stage, an edited irscope.json) is
    # compiled again like a stale one: a cache never serves a damaged entry, and `irscope rank` has no
    # --force to get past one.
    fresh_rows = serve_fresh(planned, out)
    stale = list({pp.folder: pp for pp in planned if not pp.fresh}.values())  # a folder is compiled once
    outcomes: dict[Path, Any] = {}
    if stale:
        for pp in stale:
            check_writable(pp.folder, False)
        harness.warm_up(sorted({get_target(pp.point.target) for pp in stale}, key=lambda t: t.name))

        # The progress line names each point by its folder (kernel/variant/target): a sweep's points
        # differ in their variant, so `matmul sm_90a` alone would not say which one is compiling.
        labels = {pp.point.pipeline_point(): pp.folder.relative_to(out).as_posix() for pp in stale}

        folders = {pp.point.pipeline_point(): pp.folder for pp in stale}
        # A cluster's running points are sampled from the scheduler twice a second: a point may have run
        # unseen, so "not started" is said for a local run only.
        remote = bool(getattr(executor, "remote", False))
        seen_running: set = set()  # the folders of every point seen compiling (or finished)

        def progress(pr) -> None:
            seen_running.update(folders.get(pt) for pt, *_ in pr.running)
            if pr.last is not None:
                seen_running.add(folders.get(pr.last.job[0]))
            if on_progress:
                on_progress(SweepProgress("compiling", pr.done, pr.total,
                                          tuple(labels.get(pt) or _point_label(pt) for pt, *_ in pr.running),
                                          getattr(pr, "failed", 0), getattr(pr, "by_worker", ())))

        try:
            results = compile_points([pp.point.pipeline_point() for pp in stale], out, workers=workers,
                                     timeout=timeout, on_progress=progress, executor=executor)
        except CompileInterrupted as e:
            done = {pp.folder: o for pp, o in zip(stale, e.outcomes) if o is not None}
            stopped = {pp.folder for pp in stale} - set(done)
            rows = [_interrupted_row(pp, out) if pp.folder in stopped else _row(pp, done.get(pp.folder), out)
                    for pp in planned]
            raise SweepInterrupted(SweepResult(tuple(rows), len(done), len(planned) - len(stale),
                                               time.perf_counter() - started, _cpu() - cpu0, out,
                                               interrupted=len(stopped), worker_cpu_seconds=_worker_cpu(done.values()),
                                               not_started=0 if remote else len(stopped - seen_running))) from None
        outcomes = {pp.folder: o for pp, o in zip(stale, results)}
    rows = [fresh_rows[i] if i in fresh_rows else _row(pp, outcomes.get(pp.folder), out)
            for i, pp in enumerate(planned)]
    return SweepResult(tuple(rows), len(stale), len(planned) - len(stale), time.perf_counter() - started,
                       _cpu() - cpu0, out, worker_cpu_seconds=_worker_cpu(outcomes.values()))


def _worker_cpu(outcomes) -> float:
    return sum(o.cpu_seconds for o in outcomes if o is not None and o.where not in (None, "local"))


def _interrupted_row(pp: PlannedPoint, out: Path) -> SweepRow:
    return SweepRow(pp.point, CompileStatus.INTERRUPTED, False, None, pp.folder.relative_to(out).as_posix(), pp.key)


def _row(pp: PlannedPoint, outcome, out: Path) -> SweepRow:
    from ..analyze import analyze
    from ..harness.compiler import environmental_failure
    from ..store.snapshot import load_snapshot

    p, key, folder, fresh = pp.point, pp.key, pp.folder, pp.fresh
    label = folder.relative_to(out).as_posix()
    where = outcome.where if outcome is not None else None
    if outcome is not None and outcome.path is None:  # crashed or timed out: no folder was written
        return SweepRow(p, outcome.status, False, None, label, key, error=outcome.error, where=where)
    snap = load_snapshot(folder)
    # A cached folder serves only if its stage files are intact: the text stages are checked as analyze
    # reads them, the binaries (which rank's facts read: the cubin's control bits) here.
    if outcome is None and (bad := snap.damaged_stages(("cubin", "hsaco"))):
        raise SnapshotError(f"{label}: stage {', '.join(bad)} damaged", "compiled again")
    # A failure cached before irscope knew it was the machine's (ptxas killed by a signal, a tool missing)
    # is not the compiler's answer about this kernel: compiled again, as a crash is.
    if outcome is None and not snap.ok and environmental_failure(snap.error):
        raise SnapshotError(f"{label}: {environmental_failure(snap.error)}", "compiled again")
    # A compile elsewhere (a Dask worker whose FILE.py differs from this machine's) is not the compile the
    # key was planned for: its row would show another kernel's counters under this point's key.
    recorded = snap.meta.get("content_key")
    if outcome is not None and key and isinstance(recorded, str) and recorded != key:
        on = f" on {where}" if where not in (None, "local") else ""
        return SweepRow(p, CompileStatus.CRASHED, False, None, label, key, where=where, error={
            "type": CompileStatus.CRASHED.value, "message": f"compiled{on} from another kernel file, environment or "
            f"Triton than planned here (content key {recorded[:12]}, not {key[:12]}): not used"})
    status = CompileStatus.OK if snap.ok else CompileStatus.FAILED
    return SweepRow(p, status, fresh, folder, label, key, analyze(snap), dict(snap.meta.get("times_ms") or {}),
                    snap.error, where)


def _recorded_key(meta_file: Path) -> str | None:
    """The content key a cached folder's irscope.json records; None (stale) for anything else. The folder is
    untrusted: an irscope.json that is a FIFO held planning forever, a link read outside the folder."""
    from ..store.schema import MAX_JSON_BYTES, inside
    try:
        return loads(inside(meta_file.parent, meta_file, meta_file.name, MAX_JSON_BYTES).read_text()).get("content_key")
    except (OSError, ValueError, AttributeError, SnapshotError):
        return None


def _cpu() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _point_label(point) -> str:
    name = point.kernel.rpartition(":")[2] or Path(point.kernel).stem
    return f"{name} {point.target}"
