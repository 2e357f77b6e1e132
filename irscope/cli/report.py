"""`irscope report SNAPSHOT... | --compare A B ... | --sweep RESULT.json -o report.html`: one HTML file.

Snapshots named by folder (a folder holding many, such as a sweep's output, adds each). With two or more
snapshots and no --compare, they are compared too.
"""
from __future__ import annotations

from pathlib import Path


def add_parser(sub) -> None:
    p = sub.add_parser("report", help="one self-contained HTML file of snapshots, comparisons, sweeps and GPU runs",
                       description="Write one HTML file (no server, no network: open it from disk, keep it as a CI "
                                   "artifact): per snapshot its summary, resources, counters and every stage "
                                   "highlighted beside the Python source (click a Python line to see its IR lines); "
                                   "with two or more snapshots their counters side by side and the normalised diff "
                                   "of each stage; per sweep result (irscope sweep --json) plots and a sortable table.")
    p.add_argument("snapshots", nargs="*", metavar="SNAPSHOT", help="snapshot folders (or folders holding snapshots)")
    p.add_argument("--compare", nargs="+", metavar="SNAPSHOT", default=[],
                   help="snapshots to compare side by side, in this order (default: the SNAPSHOTs, when two or more)")
    p.add_argument("--sweep", action="append", default=[], metavar="RESULT.json",
                   help="a sweep's result as `irscope sweep FILE --json` writes it (repeatable)")
    p.add_argument("--title", help="the page's title")
    p.add_argument("-o", "--output", default="report.html", metavar="FILE", help="where to write (default: report.html)")
    p.set_defaults(run=run)


def _load(paths, what: str):
    from pathlib import Path

    from ..errors import UsageError
    from ..store.snapshot import find_snapshots, is_snapshot_dir, load_snapshot
    out = []
    for p in paths:
        path = Path(p)
        if not path.is_dir():
            raise UsageError(f"{what} {p} is not a folder", "name a snapshot folder, e.g. snapshots/add/default/sm_90a")
        if is_snapshot_dir(path):
            out.append(load_snapshot(path))
        else:
            found = find_snapshots(path)
            if not found:
                raise UsageError(f"no snapshot in {p}", "compile one first: irscope compile KERNEL -t TARGET")
            out.extend(found)
    return out


def run(args, ui) -> int:
    from ..errors import UsageError
    from ..render.terminal import ProgressLine, human_bytes
    from ..report import build_report, read_sweep, write_report

    if not (args.snapshots or args.compare or args.sweep):
        raise UsageError("nothing to report", "name snapshots, --compare A B, or --sweep RESULT.json")
    if Path(args.output).is_dir():  # checked before the report is built, which can take a while
        raise UsageError(f"-o {args.output} is a folder", f"give the file to write, e.g. -o "
                         f"{Path(args.output) / 'report.html'}")
    above = next((q for q in Path(args.output).parents if q.exists() and not q.is_dir()), None)
    if above is not None:  # also before building: mkdir's "File exists" named neither the file nor the fix
        raise UsageError(f"-o {args.output}: '{above}' is a file, not a folder", "give -o a path whose folders are "
                         "folders (or move that file aside)")
    _check_replaceable(Path(args.output))
    snaps = _load(args.snapshots, "snapshot")
    compare = _load(args.compare, "--compare") if args.compare else (snaps if len(snaps) >= 2 else [])
    if args.compare and len(compare) < 2:
        raise UsageError("--compare needs two or more snapshots", "name another snapshot after --compare")
    sweeps = [(s, read_sweep(s)) for s in args.sweep]
    progress = ProgressLine(ui.err)
    try:
        html = build_report(snaps, compare=compare, sweeps=sweeps, title=args.title, on_progress=progress.update)
    finally:
        progress.close()
    try:
        path = write_report(args.output, html)
    except OSError as e:
        raise UsageError(f"cannot write the report to {args.output}: {e.strerror or e}",
                         "give -o a file in a folder you can write") from None
    ui.print(f"wrote {path} ({human_bytes(len(html.encode()))}): open it in a browser, e.g. file://{path.resolve()}")
    return 0


def _check_replaceable(path: Path) -> None:
    """-o replaces an HTML file (an earlier report), never another file: a tab-completed `-o kernel.py`
    would have turned the user's source into a report."""
    if not path.is_file() or path.stat().st_size == 0:
        return
    try:
        with open(path, "rb") as f:
            head = f.read(256).lstrip().lower()
    except OSError:
        return  # writing it fails with its own message
    if not (head.startswith(b"<!doctype html") or head.startswith(b"<html")):
        from ..errors import UsageError
        raise UsageError(f"-o {path} exists and is not an HTML file: irscope replaces only an earlier report",
                         "give -o a new name (report.html), or delete the file first")
