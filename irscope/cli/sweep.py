"""`irscope sweep FILE.yaml`: compile a grid of points in parallel (cached by content) and tabulate them."""
from __future__ import annotations

import json
from pathlib import Path

from ..render.terminal import ProgressLine, human_bytes, table
from .options import positive_int

# Counters shown in the table by default, when some point has them (the CSV and JSON have every counter).
HEADLINE = ("ttgir.shared.buffers", "ptx.wgmma", "ptx.mma.sync", "ptx.tcgen05.mma", "ptx.cp.async",
            "ptx.cp.async.bulk.tensor", "amdgcn.v_mfma", "amdgcn.v_wmma", "sass.STL")


def add_parser(sub) -> None:
    p = sub.add_parser("sweep", help="compile every point of a YAML grid in parallel, cached, and tabulate them",
                       description="Compile kernels x targets x an option grid (docs/sweep.md) on every core, each "
                                   "compile in its own process. Points whose snapshot is fresh (same content key) "
                                   "are not compiled again. Prints counters, resources, launchability and compile "
                                   "times per point, then a summary.")
    p.add_argument("file", metavar="FILE.yaml", help="the sweep file")
    p.add_argument("--out", "-o", metavar="DIR",
                   help="snapshot root (default: the file's `out:`, else $IRSCOPE_OUT or ./irscope-snapshots)")
    p.add_argument("--jobs", "-j", type=positive_int, metavar="N",
                   help="compiles at once (default: the file's `jobs:`, else one per CPU core)")
    p.add_argument("--force", action="store_true", help="compile every point, fresh or not")
    p.add_argument("--max-points", type=positive_int, metavar="N",
                   help="allow up to N points (default: the file's `max_points:`, else 2,000)")
    add_cluster_options(p)
    p.add_argument("--list", action="store_true", help="list the points and whether each is fresh; compile nothing")
    p.add_argument("--columns", metavar="GLOBS", help="counters to show as columns, e.g. 'ptx.wgmma,ptx.cp.async*'")
    from .envs import add_triton_option
    add_triton_option(p)
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="points, analyses and summary as JSON")
    fmt.add_argument("--csv", action="store_true", help="one CSV row per point with every counter")
    p.set_defaults(run=run)


def add_cluster_options(p) -> None:
    """--scheduler / --cluster: compile on a Dask cluster (docs/cluster.md) instead of this machine's cores."""
    where = p.add_mutually_exclusive_group()
    where.add_argument("--scheduler", metavar="ADDRESS",
                       help="run the compiles as tasks on the Dask cluster of this scheduler, e.g. tcp://HOST:8786 "
                            "(needs irscope[cluster])")
    where.add_argument("--cluster", metavar="local:N",
                       help="start a Dask LocalCluster of N worker processes here and compile on it (to try it out)")
    p.add_argument("--worker-wait", metavar="SECONDS", type=str, default=None,
                   help="with --scheduler or --cluster: how long the run waits while the cluster has no worker "
                        "(none yet, as an adaptive or batch cluster starts them, or all gone) before it stops "
                        "with an error (default: 30)")


def open_executor(args, jobs=None):
    from ..errors import UsageError
    from ..harness.executors import open_executor as _open
    scheduler, cluster = getattr(args, "scheduler", None), getattr(args, "cluster", None)
    if scheduler is not None and not scheduler.strip():
        raise UsageError("--scheduler was given an empty address", "e.g. --scheduler tcp://HOST:8786, or leave it out "
                         "to compile on this machine")
    if (scheduler or cluster) and getattr(args, "jobs", None) is not None:
        raise UsageError(f"--jobs with {'--scheduler' if scheduler else '--cluster'}: a cluster runs one compile per "
                         "worker thread", "leave --jobs out; set the compiles at once with `dask worker --nthreads N` "
                         "(or N in --cluster local:N)")
    wait = getattr(args, "worker_wait", None)
    if wait is not None and not (scheduler or cluster):
        raise UsageError("--worker-wait without --scheduler or --cluster: only a cluster waits for workers",
                         "add --scheduler ADDRESS (or --cluster local:N), or leave --worker-wait out")
    executor = _open(workers=jobs, scheduler=scheduler, cluster=cluster)
    if wait is not None:
        executor.worker_wait = _seconds("--worker-wait", wait)
    return executor


def _seconds(option: str, text: str) -> float:
    import math
    from ..errors import UsageError
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise UsageError(f"{option} {text!r}: not a number of seconds", f"e.g. {option} 600 (ten minutes)")
    return value


def progress_text(p) -> str:
    """[done/total] with failures, what is compiling, and, on a cluster, how many finished on each worker."""
    running = ", ".join(p.running[:3]) + (" ..." if len(p.running) > 3 else "")
    text = f"[{p.done}/{p.total}" + (f", {p.failed} failed" if p.failed else "") + "]"
    workers = [(w, n) for w, n in p.by_worker if w != "local"]
    if workers:
        text += f" {len(p.running)} running; " + " ".join(f"{_short_worker(w)}:{n}" for w, n in workers)
    return f"{text} compiling {running}".rstrip()


# What one point costs to compile, in CPU-seconds: the built-in `add` about 0.5, a matmul 1-2 (measured
# on an idle 2-core machine, docs/benchmarks.md); a sweep's own kernels may cost more.
POINT_CPU_S = (0.5, 2.0)


def expand_within(sweep, max_points: int | None = None, releases: int = 1, *, flag: bool = True):
    """The sweep's points, refused (before they are all made, and before planning them: planning 14,000 took
    30 s) when there are more than its limit. `releases`: each point compiles under that many Triton
    releases, and counts as many times; `flag`: the command takes --max-points."""
    from ..errors import UsageError
    from ..sweep import TooManyPoints, expand
    limit = max_points or sweep.max_points
    try:
        return expand(sweep, limit=limit // releases)
    except TooManyPoints as e:
        n = e.bound * releases
        lo, hi = (n * c for c in POINT_CPU_S)
        raise UsageError(f"{sweep.path}: up to {n:,} points, more than the limit of {limit:,} (about {_dur(lo)} "
                         f"to {_dur(hi)} of CPU to compile, at {POINT_CPU_S[0]:g}-{POINT_CPU_S[1]:g} CPU-s a "
                         f"point)",
                         f"narrow the grid, or raise the limit: `max_points: {n}` in the file"
                         + (f" or --max-points {n}" if flag else "")) from None


def estimate_line(n: int, jobs: int | None, args) -> str:
    """Before the compiles: how many, and roughly how long (the per-point cost is a range, not a measurement
    of this sweep)."""
    import os
    lo, hi = (n * c for c in POINT_CPU_S)
    text = f"compiling {_plural(n, 'point')}: about {_dur(lo)} to {_dur(hi)} of CPU"
    if not (getattr(args, "scheduler", None) or getattr(args, "cluster", None)):
        cores = jobs or os.cpu_count() or 1
        text += f", {_dur(lo / cores)} to {_dur(hi / cores)} on {_plural(cores, 'core')}"
    return text + f" (at {POINT_CPU_S[0]:g}-{POINT_CPU_S[1]:g} CPU-s a point)"


def _short_worker(address: str) -> str:
    return address.split("://", 1)[-1]


def run(args, ui) -> int:
    from ..store.roots import default_out, ensure_root
    from ..sweep import SweepInterrupted, load_sweep, run_points

    sweep = load_sweep(args.file)
    from .envs import prepare, triton_versions
    versions = triton_versions(args)
    _check_cluster_releases(args, versions)
    points = expand_within(sweep, args.max_points, max(1, len(versions)))
    if versions:  # every point once per release
        import dataclasses
        prepare(versions, ui)
        # the release is an axis, the last (as in compare): a row of the table, the CSV and the JSON says
        # which release compiled it (two releases' rows were otherwise alike)
        points = [dataclasses.replace(p, triton=v, axes=p.axes + (("triton", v),)) for v in versions for p in points]
    out = Path(args.out) if args.out else (sweep.out or default_out())
    jobs = args.jobs if args.jobs is not None else sweep.jobs
    if args.list:
        if args.csv:  # (the CSV is the results' table: a list of what would compile has no such columns)
            from ..errors import UsageError
            raise UsageError("--list has no CSV form", "use --list --json for a machine-readable list")
        return _list(points, out, ui, as_json=args.json)
    ensure_root(out)
    progress = ProgressLine(ui.err)

    estimated = []

    def on_progress(p) -> None:
        if p.phase == "planning":
            progress.update(f"checking the cache: {p.done}/{p.total}")
        else:
            if not estimated and progress.enabled:  # once, on a terminal, before the first compile ends
                estimated.append(p.total)
                progress.close()
                ui.err.write(estimate_line(p.total, jobs, args) + "\n")
            progress.update(progress_text(p))

    from ..render.tables import split_patterns
    patterns = split_patterns(args.columns) or list(sweep.columns)
    executor = open_executor(args, jobs)  # a cluster is started or joined only if some point needs compiling
    try:
        result = run_points(points, out, workers=jobs, timeout=sweep.timeout, force=args.force,
                            on_progress=on_progress, executor=executor)
    except SweepInterrupted as e:
        # Ctrl-C: what finished is compiled and on disk; show it, then let main report the interrupt (130).
        progress.close()
        _report(sweep, e.result, ui, args, patterns)
        raise KeyboardInterrupt from None
    finally:
        progress.close()
        executor.close()
    _report(sweep, result, ui, args, patterns)
    broken = [r for r in result.rows if r.status != "ok"]
    if broken:
        from ..errors import CompileError
        first = broken[0]
        raise CompileError(f"{len(broken)} of {len(result.rows)} points did not compile; first: {first.label}: "
                           f"{first.status}: {first.reason}", _broken_hint(broken, table=not (args.json or args.csv),
                                                                          out=result.out))
    return 0


def _check_cluster_releases(args, versions) -> None:
    """Another release with a cluster is refused before its environment is made, the points planned and the
    cluster started: a worker compiles with its own Triton only (harness.batch refused it only then)."""
    from ..errors import UsageError
    from ..harness.envs import is_running
    other = [v for v in versions if not is_running(v)]
    where = "--scheduler" if getattr(args, "scheduler", None) else "--cluster" if getattr(args, "cluster", None) else ""
    if other and where:
        raise UsageError(f"--triton {','.join(other)} with {where}: a Dask worker compiles with its own Triton only",
                         f"compile that release on this machine (leave {where} out): a cluster compiles with the "
                         "Triton its workers run, which is this irscope's")


def _write(ui, text: str) -> None:
    ui.out.write(text)
    ui.out.flush()


def _report(sweep, result, ui, args, patterns) -> None:
    """The table (or JSON, CSV) on stdout; a stdout that cannot be written (a full disk, /dev/full) is one
    error line: the snapshots are already written, so a run again only reports them."""
    from ..errors import EnvironmentProblem, OutputUnwritable
    try:
        _report_to(sweep, result, ui, args, patterns)
    except OutputUnwritable as e:
        raise EnvironmentProblem(e.message.replace("cannot write to stdout", "cannot write the results to stdout"),
                                 f"the snapshots are under {result.out}; run the sweep again with stdout going "
                                 "somewhere writable (nothing is compiled again)") from None


def _report_to(sweep, result, ui, args, patterns) -> None:
    if args.json:
        ui.print(json.dumps(to_json(sweep, result), indent=1))
    elif args.csv:
        ui.out.write(to_csv(result))
    else:
        finished = [r for r in result.rows if r.status != "interrupted"]
        if finished:
            ui.print(render_table(result, ui, patterns, finished))
            ui.print()
            warn_unmatched(ui, "--columns", patterns, finished)
        failures = render_failures(finished, ui)
        if failures:
            ui.print(failures)
            ui.print()
        ui.print(render_summary(result, ui))


def warn_unmatched(ui, option: str, patterns, rows) -> None:
    from ..render.tables import names_resources, unmatched
    keys = {k for r in rows if r.analysis for k in r.analysis.counters}
    for pattern in unmatched(patterns, keys) if keys else ():
        if names_resources(pattern):
            ui.warn(f"{option} '{pattern}' names a resource, not a counter: the resource rows (registers, spills, "
                    f"shared memory, occupancy...) are always shown, and {option} picks counters only")
            continue
        ui.warn(f"{option} '{pattern}' matches no counter of these compiles "
                f"(irscope stats SNAPSHOT lists every counter; globs like 'ptx.*mma*' match several)")


def _broken_hint(broken, *, table: bool = True, out=None) -> str:
    """What to look at next; only a point that failed in the compiler has a folder to show. `table`: the
    reasons were printed under the table (not with --json or --csv, whose rows carry them)."""
    if any("No space left on device" in str((r.error or {}).get("message", "")) for r in broken):
        # (a compile alone, as the hint below says, fills the same disk)
        return f"the disk under {out} is full: free some space (or give --out another disk) and run again; " \
               "only the points that did not compile are compiled"
    with_folder = next((r for r in broken if r.path is not None), None)
    if with_folder is not None:
        where = "the reasons are under the table" if table else "each point's row says why"
        return f"{where}; `irscope show {with_folder.path}` for the full log"
    statuses = {r.status for r in broken}
    if statuses == {"timeout"}:
        return "a timed-out point leaves no folder: raise `timeout:` in the sweep file, or compile it alone " \
               "with `irscope compile`"
    return "a crashed or timed-out point leaves no folder: compile it alone with `irscope compile ... --jobs 1` " \
           "to see the compiler's output"


def render_failures(rows, ui) -> str:
    """One line per point that did not compile, with its reason: the table has no room for it."""
    s = ui.style
    bad = [r for r in rows if r.status != "ok"]
    width = max((len(r.status) for r in bad), default=0)
    return "\n".join(f"{s(r.status.ljust(width), 'red', 'bold')}  {r.label}: {r.reason}" for r in bad)


def _list(points, out: Path, ui, as_json: bool = False) -> int:
    from ..sweep import plan_points
    from ..sweep.run import serve_fresh

    planned = plan_points(points, out)
    serve_fresh(planned, out)  # what the run would compile again (a damaged folder) is not fresh here either
    if as_json:
        _write(ui, json.dumps({"out": str(out), "points": [
            {"kernel": pp.point.kernel, "target": pp.point.target, "axes": dict(pp.point.axes),
             "label": pp.folder.relative_to(out).as_posix(), "content_key": pp.key, "fresh": pp.fresh}
            for pp in planned]}, indent=1) + "\n")
        return 0
    rows = [[pp.folder.relative_to(out).as_posix(), "fresh" if pp.fresh else "to compile"] for pp in planned]
    ui.print(table(["point", "cache"], rows, style=ui.style))
    ui.print(f"\n{_plural(len(rows), 'point')}, {sum(pp.fresh for pp in planned)} fresh, under {out}")
    return 0


def _varying_axes(rows) -> list[str]:
    names = list(dict.fromkeys(n for r in rows for n, _ in r.point.axes))
    return [n for n in names if len({dict(r.point.axes).get(n) for r in rows}) > 1] or names


def _columns(rows, patterns) -> list[str]:
    from ..analyze.catalog import sort_key
    from ..render.tables import matches
    keys = {k for r in rows if r.analysis for k in r.analysis.counters}
    if patterns:
        return sorted((k for k in keys if matches(k, patterns)), key=sort_key)
    return [k for k in HEADLINE if any(r.analysis and r.analysis.counters.get(k) for r in rows)]


def render_table(result, ui, patterns=(), rows=None) -> str:
    s = ui.style
    every = result.rows  # the columns are the sweep's, even when only the finished rows are shown
    rows = every if rows is None else rows
    axes = _varying_axes(every)
    kernels = len({r.point.kernel for r in every}) > 1
    targets = len({r.point.target for r in every}) > 1
    counters = _columns(rows, patterns)
    head = (["kernel"] if kernels else []) + (["target"] if targets else []) + axes + \
        ["status", "shared", "regs", "spills", "occupancy", "launch"] + [_short(k) for k in counters] + \
        ["triton s", "ptxas s"]
    body = []
    for r in rows:
        a = r.analysis
        cells = ([r.label.split("/")[0]] if kernels else []) + ([r.point.target] if targets else [])
        cells += [str(dict(r.point.axes).get(n, "")) for n in axes]
        status = r.status + (" (cached)" if r.cached else "")
        cells.append(s(status, "green") if r.status == "ok" else s(status, "red", "bold"))
        if a is not None and r.status == "ok":
            res = a.resources
            spills = res.spill_stores or 0
            occ = a.occupancy.value if a.occupancy else "-"
            cells += [human_bytes(res.shared), "-" if res.registers is None else str(res.registers),
                      str(spills) if spills else "0", str(occ),
                      "ok" if a.launch.launchable else s("NO", "red", "bold")]
            cells += [_num(a.get(k)) for k in counters]
        else:
            cells += ["-"] * (5 + len(counters))
        cells += [f"{r.triton_ms / 1e3:.1f}" if r.times_ms else "-", f"{r.assembler_ms / 1e3:.1f}" if r.times_ms else "-"]
        body.append(cells)
    first_num = len(head) - len(counters) - 2 - 5
    right = tuple(range(first_num, len(head)))
    return table(head, body, right=right, style=s)


def _short(key: str) -> str:
    return key.split(".", 1)[1] if "." in key else key


def _num(v) -> str:
    return "-" if v is None else f"{v:,}"


def render_summary(result, ui) -> str:
    s = ui.style
    n = len(result.rows)
    failed = sum(r.status not in ("ok", "interrupted") for r in result.rows)
    lines = [f"{_plural(n, 'point')}: {result.compiled} compiled now, {result.cached} from the cache"
             + (f", {s(str(failed) + ' failed', 'red', 'bold')}" if failed else "")
             + (f", {s(str(result.interrupted) + ' interrupted', 'yellow', 'bold')} (not compiled"
                + (f"; {result.not_started} not started" if result.not_started else "") + ")"
                if result.interrupted else "")
             + f"; this run took {_dur(result.wall_seconds)} wall after start-up, {_dur(result.cpu_seconds)} CPU"
             + (f" here and {_dur(result.worker_cpu_seconds)} in the compiles on the Dask workers"
                if result.worker_cpu_seconds else "")]
    for t in result.summary():
        msg = f"  {t.target}: {_plural(t.points, 'point')}, {t.ok} ok"
        if t.failed:
            msg += f", {t.failed} failed"
        if t.unlaunchable:
            msg += ", " + s(f"{t.unlaunchable} cannot launch", "red", "bold") + f" ({', '.join(t.reasons)})"
        elif t.ok:
            msg += ", all launchable" if not t.failed else ", the rest launchable"
        lines.append(msg)
    rec = result.recorded_ms
    if rec["total"]:
        lines.append(f"compile time recorded for these points: {_dur(rec['total'] / 1e3)} "
                     f"(Triton passes {_dur(rec['triton'] / 1e3)}, ptxas/assembler {_dur(rec['assembler'] / 1e3)}, "
                     f"disassembly {_dur(rec['disassembly'] / 1e3)})")
    lines.append(f"snapshots under {result.out}")
    return "\n".join(lines)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def _dur(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f} s"
    m, sec = divmod(int(round(seconds)), 60)
    return f"{m} min {sec:02d} s" if m < 60 else f"{m // 60} h {m % 60:02d} min"


# -- machine-readable -----------------------------------------------------------------------------------

def _point_dict(r) -> dict:
    return {"kernel": r.point.kernel, "target": r.point.target, "axes": dict(r.point.axes), "label": r.label,
            "status": r.status, "cached": r.cached, "path": str(r.path) if r.path else None,
            "content_key": r.content_key, "error": r.error, "where": r.where,
            "times_ms": {"triton": round(r.triton_ms, 3), "assembler": round(r.assembler_ms, 3),
                         "disassembly": round(r.disassembly_ms, 3), **r.times_ms},
            "analysis": r.analysis.as_dict() if r.analysis else None}


def to_json(sweep, result) -> dict:
    return {
        "sweep": {"file": str(sweep.path), "name": sweep.name, "out": str(result.out)},
        "points": [_point_dict(r) for r in result.rows],
        "summary": {"points": len(result.rows), "compiled": result.compiled, "cached": result.cached,
                    "interrupted": result.interrupted, "not_started": result.not_started,
                    "wall_seconds": round(result.wall_seconds, 3), "cpu_seconds": round(result.cpu_seconds, 3),
                    "worker_cpu_seconds": round(result.worker_cpu_seconds, 3),
                    "recorded_ms": {k: round(v, 3) for k, v in result.recorded_ms.items()},
                    "where": _counts(r.where for r in result.rows if r.where),
                    "targets": [t.__dict__ | {"reasons": list(t.reasons)} for t in result.summary()]},
    }


def _counts(values) -> dict[str, int]:
    out: dict[str, int] = {}
    for v in values:
        out[v] = out.get(v, 0) + 1
    return out


def to_csv(result) -> str:
    """One row a point. Cells go through csv_text: an axis value or a label from a user's kernel file such as
    '=HYPERLINK(...)' is text, never a formula a spreadsheet runs."""
    from ..render.tables import csv_header, csv_row, csv_text
    analyses = [r.analysis for r in result.rows if r.analysis]
    axes = list(dict.fromkeys(n for r in result.rows for n, _ in r.point.axes))
    stats_header = csv_header(analyses) if analyses else []
    header = ["kernel", "target", "point", "status", "cached", "content_key"] + [f"axis.{a}" for a in axes] + \
        ["time.triton_ms", "time.assembler_ms", "time.disassembly_ms", "time.total_ms"] + \
        [h for h in stats_header if h not in ("kernel", "target", "status")]

    def row_of(r) -> dict:
        row = {"kernel": r.label.split("/")[0], "target": r.point.target, "point": r.label, "status": r.status,
               "cached": int(r.cached), "content_key": r.content_key,
               "time.triton_ms": round(r.triton_ms, 1), "time.assembler_ms": round(r.assembler_ms, 1),
               "time.disassembly_ms": round(r.disassembly_ms, 1),
               "time.total_ms": round(r.times_ms.get("total", 0.0), 1)}
        row.update({f"axis.{n}": v for n, v in r.point.axes})
        if r.analysis:
            stats = csv_row(r.analysis, stats_header)
            row.update({k: v for k, v in stats.items() if k not in ("kernel", "target", "status")})
        return row
    return csv_text(header, (row_of(r) for r in result.rows), extrasaction="ignore")
