"""`irscope report SNAPSHOT... | --compare A B ... | --sweep RESULT.json -o report.html`: one HTML file.

Snapshots named by folder (a folder holding many, such as a sweep's output, adds each). With two or more
snapshots of a kernel and no --compare, that kernel's snapshots are compared too.
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
    p.add_argument("-o", "--output", default="report.html", metavar="FILE",
                   help="where to write (default: report.html; - for stdout); an existing FILE is replaced only "
                        "when it is a report irscope wrote")
    p.set_defaults(run=run)


def _load(paths, ui) -> list:
    """The snapshots named, in order. A path that is missing or no snapshot, or a damaged snapshot named
    itself, is a SnapshotError (exit 4); a damaged one found under a folder is skipped with a warning, as
    `irscope stats FOLDER` does, so one bad point does not cost the report of the others."""
    from ..analyze import analyze
    from ..errors import SnapshotError
    from .stats import _warn_skipped, load_all
    out = []
    for snap, walked in load_all(paths, ui):
        if walked:
            try:  # what fails later while the page is built (a stage that does not match its sha256)
                analyze(snap)
            except SnapshotError as e:
                _warn_skipped(ui, snap.path, e)
                continue
        out.append(snap)
    if paths and not out:
        raise SnapshotError("no readable snapshots in " + ", ".join(map(str, paths)),
                            "every one found is damaged (see the warnings above); recompile them")
    return out


# Past this many snapshots in one comparison, the page takes minutes and grows by a diff per neighbour.
MANY = 8
# Past this size a browser takes seconds to open the page (a 43 MiB one: about one, docs/report.md).
BIG = 64 << 20


def _by_kernel(snaps) -> list[list]:
    """The snapshots grouped by kernel, in the order given, those of one target next to each other: each
    neighbouring pair is diffed, and a sweep's folder walked in path order alternated gfx942 and sm_90a, so
    that every diff was one of two compiles for unrelated targets rather than of two configs on one."""
    groups: dict[str, list] = {}
    for s in snaps:
        groups.setdefault(s.kernel, []).append(s)
    order = {t: i for i, t in enumerate(dict.fromkeys(s.target_name for s in snaps))}
    return [sorted(g, key=lambda s: order[s.target_name]) for g in groups.values()]


def run(args, ui) -> int:
    from ..errors import UsageError
    from ..render.terminal import ProgressLine, human_bytes
    from ..report import build_report, read_sweep, write_report

    if not (args.snapshots or args.compare or args.sweep):
        raise UsageError("nothing to report", "name snapshots, --compare A B, or --sweep RESULT.json")
    to_stdout = args.output == "-"  # `-o -`: the page on stdout (`... -o - | gzip > r.html.gz`), no file named -
    if not to_stdout:
        _check_output(Path(args.output))
    snaps = _load(args.snapshots, ui)
    if args.compare:
        compare = _load(args.compare, ui)
        if len(compare) < 2:
            raise UsageError("--compare needs two or more snapshots", "name another snapshot after --compare")
        groups = [compare]
    else:  # implied: each kernel's snapshots side by side (a 27-column table across kernels tells little)
        groups = [g for g in _by_kernel(snaps) if len(g) >= 2]
    big = max((len(g) for g in groups), default=0)
    if big > MANY:
        ui.warn(f"comparing {big} snapshots side by side, with a stage diff for each neighbouring pair of one "
                "kernel: the report takes a while and can be tens of MiB; name the ones to compare with "
                "--compare A B (or report fewer)")
    sweeps = [(s, read_sweep(s)) for s in args.sweep]
    progress = ProgressLine(ui.err)
    try:
        html = build_report(snaps, compare=compare if args.compare else (),
                            comparisons=() if args.compare else groups, sweeps=sweeps, title=args.title,
                            on_progress=progress.update)
    finally:
        progress.close()
    if to_stdout:
        ui.out.write(html)
        return 0
    try:
        path = write_report(args.output, html)
    except OSError as e:
        raise UsageError(f"cannot write the report to {args.output}: {e.strerror or e}",
                         "give -o a file in a folder you can write") from None
    size = len(html.encode())
    ui.print(f"wrote {path} ({human_bytes(size)}): open it in a browser, e.g. file://{path.resolve()}")
    if size > BIG:
        ui.warn(f"{path} is {human_bytes(size)}: a browser takes a while to open it; report fewer snapshots, or "
                "compare the ones that matter with --compare A B")
    return 0


def _check_output(path: Path) -> None:
    """Refuse a bad -o before the report is built, which can take a while."""
    from ..errors import UsageError
    if path.is_dir():
        raise UsageError(f"-o {path} is a folder", f"give the file to write, e.g. -o {path / 'report.html'}")
    if path.exists() and not path.is_file():  # a FIFO, socket or device (/dev/null, as root) was replaced by a file
        raise UsageError(f"-o {path} exists and is not a regular file: irscope replaces only a report it wrote",
                         "give -o a file name, or -o - to write the page to stdout (-o - | CMD)")
    above = next((q for q in path.parents if q.exists() and not q.is_dir()), None)
    if above is not None:  # mkdir's "File exists" named neither the file nor the fix
        raise UsageError(f"-o {path}: '{above}' is a file, not a folder", "give -o a path whose folders are "
                         "folders (or move that file aside)")
    _check_replaceable(path)


def _check_replaceable(path: Path) -> None:
    """-o replaces an earlier report, never another file: a tab-completed `-o kernel.py`, or `-o notes.html`
    naming a page the user wrote, would have been lost. A report names irscope as its generator in its head
    (irscope.report.page.is_report, which also knows the reports written before that marker)."""
    from ..errors import UsageError
    from ..report.page import HEAD_BYTES, is_report
    if not path.is_file() or path.stat().st_size == 0:
        return
    try:
        with open(path, "rb") as f:
            head = f.read(HEAD_BYTES)
    except OSError:
        return  # writing it fails with its own message
    if is_report(head):
        return
    start = head[:256].lstrip().lower()
    what = "an HTML file irscope did not write" if start.startswith((b"<!doctype html", b"<html")) else \
        "not an HTML file"
    raise UsageError(f"-o {path} exists and is {what}: irscope replaces only a report it wrote",
                     "give -o a new name (report.html), or move or delete the file first")
