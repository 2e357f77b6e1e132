"""`irscope snapshot check|update`: golden snapshots from the command line (what the pytest plugin does).

Without KERNEL, every golden is recompiled from the kernel its golden.json names; `GoldenRoot.kernel_of`
refuses any that is not a built-in kernel or a .py file inside the project, before anything is imported,
and the files that will be imported are listed on stderr first.
"""
from __future__ import annotations

import dataclasses
import json
import shlex
import tempfile
from pathlib import Path

from .options import add_compile_options, options_from_args, positive_int


def add_parser(sub) -> None:
    p = sub.add_parser("snapshot", help="check fresh compiles against golden snapshots, or update the goldens",
                       description="Without KERNEL: every golden under --goldens is recompiled with the options "
                                   "it records. With KERNEL: those points are compiled and compared.")
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    for name, help_text in (("check", "compile and compare with the goldens (exit 1 on any difference)"),
                            ("update", "compile and write the goldens that changed or are missing")):
        a = actions.add_parser(name, help=help_text)
        a.add_argument("kernels", nargs="*", metavar="KERNEL", help="kernels to compile (default: every golden)")
        a.add_argument("--target", "-t", default="sm_90a", help="targets for KERNEL (default sm_90a; or all)")
        a.add_argument("--goldens", default="snapshots", metavar="DIR", help="the golden root (default: snapshots)")
        a.add_argument("--jobs", "-j", type=positive_int, metavar="N", help="compiles at once (default: one per core)")
        a.add_argument("--on-version-mismatch", choices=("skip", "fail"), default="skip",
                       help="goldens made under another Triton version: skip them (default) or fail")
        a.add_argument("--keep", metavar="DIR",
                       help="compile the fresh snapshots into DIR and keep them (default: a temporary folder, "
                            "deleted when the command ends)")
        a.add_argument("--json", action="store_true", help="print the result of every golden as JSON")
        if name == "check":
            a.add_argument("--on-stale-source", choices=("warn", "fail"), default="warn",
                           help="a golden whose IR matches but whose source.py is not its kernel file's text: "
                                "warn (default) or fail")
        add_compile_options(a)
        a.set_defaults(run=run)


# Summary order; statuses not listed here (none today) come after, alphabetically.
SUMMARY_ORDER = ("match", "mismatch", "missing", "written", "source-refreshed", "skipped", "version-mismatch",
                 "failed", "crashed", "timeout")
OK_STATUSES = ("match", "written", "source-refreshed", "skipped")


def run(args, ui) -> int:
    from ..errors import ComparisonFailed, SnapshotError
    from ..goldens.result import describe
    from ..goldens.root import GOLDEN_FILE, GoldenRoot
    from ..harness.batch import Point, compile_points
    from ..render.terminal import ProgressLine
    from ..store.snapshot import load_snapshot
    from ..targets import parse_targets

    root = GoldenRoot(Path(args.goldens))
    if root.path.exists() and not root.path.is_dir():  # before anything compiles: check called it "missing"
        root.refuse_a_file()
    # every golden recompiled from what it records (a golden of a kernel without a KernelSpec has no other way)
    refresh = shlex.join(["irscope", "snapshot", "update", "--goldens", str(root.path)])
    if args.kernels:
        options = options_from_args(args)
        points = [Point(k, t.name, options) for k in args.kernels for t in parse_targets(args.target)]
        shown = list(dict.fromkeys(args.kernels))
    else:
        if not root.path.is_dir():
            raise SnapshotError(f"no golden folder '{root.path}'",
                                "create goldens with: irscope snapshot update KERNEL --target all")
        goldens = root.goldens()
        if not goldens:
            raise SnapshotError(f"'{root.path}' holds no goldens", "irscope snapshot update KERNEL --target all")
        goldens = one_per_point(goldens)
        # every golden's kernel is checked before any is imported: one refused golden stops the run; update
        # recompiles a golden whose golden.json is damaged from the kernel its irscope.json names, if it can
        recover = args.action == "update"
        sources = [root.kernel_of(g, recover=recover) for g in goldens]
        points = [root.point_of(g, recover=recover) for g in goldens]
        shown = list(dict.fromkeys(k.shown for k in sources))
    ui.err.write(f"irscope: kernels to import: {', '.join(shown)}\n")
    progress = ProgressLine(ui.err)
    s = ui.style
    rows: list[dict] = []
    versions = set()
    with _fresh_root(args.keep, root.path) as tmp:
        try:
            outcomes = compile_points(points, Path(tmp), workers=args.jobs,
                                      on_progress=lambda p: progress.update(f"[{p.done}/{p.total}] compiling"))
        finally:
            progress.close()
        for point, o in zip(points, outcomes):
            if not o.ok:
                message = (o.error or {}).get("message", "").strip()
                rows.append({"label": o.label, "status": o.status, "kernel": point.kernel, "target": point.target,
                             "error": message})
                if not args.json:
                    ui.print(f"{s(o.label, 'bold')}  {s(o.status, 'red')}: {message[:200]}")
                continue
            fresh = load_snapshot(o.path)
            # update knows no test: the one golden.json records is kept (a damaged one's is lost: null)
            result = root.update(fresh, None, point.kernel) if args.action == "update" else root.compare(fresh)
            if result.record_mended:
                ui.err.write(f"irscope: note: {result.golden_path / GOLDEN_FILE} was damaged and is rewritten; "
                             f"the test that wrote the golden is unknown now (null), so pytest reports it unused "
                             f"only once pytest --irscope-update rewrites it\n")
            row = {**result.as_dict(), "kernel": point.kernel, "target": point.target}
            if not args.keep:  # the fresh snapshot lives in a folder deleted when the command ends
                row["fresh"] = None
                result = dataclasses.replace(result, fresh_path=None)
            rows.append(row)
            if result.status == "version-mismatch":
                versions.add((result.golden_version, result.fresh_version))
                if args.on_version_mismatch == "skip":
                    row["status"] = "skipped"
                    if not args.json:
                        ui.print(f"{s(o.label, 'bold')}  {s('skipped', 'yellow')}")
                    continue
            if args.json:
                continue
            color = "green" if result.ok else "red"
            if result.status == "source-refreshed":
                ui.print(f"{s(o.label, 'bold')}  {s('source refreshed', 'green')}  (source.py is now "
                         f"{result.source.kernel_file}, {result.source.lines}; IR unchanged, no other file rewritten)")
            elif result.source_stale:
                ui.print(f"{s(o.label, 'bold')}  {s(result.status, color)}  "
                         f"{s('warning: ' + result.source.warning, 'yellow')}")
            else:
                ui.print(f"{s(o.label, 'bold')}  {s(result.status, color)}")
            if not result.ok:
                hint = update_command(args, root.path, point) if args.kernels else refresh
                ui.print("  " + describe(result, update_hint=hint).replace("\n", "\n  "))
    counts = summary_counts(rows)
    bad = sum(n for status, n in counts.items() if status not in OK_STATUSES)
    stale = sum(1 for row in rows if row.get("source_stale"))
    strict = getattr(args, "on_stale_source", "warn") == "fail"
    if args.json:
        ui.print(json.dumps({"goldens": str(root.path), "action": args.action, "results": rows,
                             "summary": counts, "source_stale": stale, "ok": not bad and not (stale and strict)},
                            indent=1))
    else:
        for golden, here in sorted(versions):
            ui.print(f"goldens made with Triton {golden}; this is Triton {here}")
        line = summary_line(counts)
        ui.print(s(line, "red" if bad else "green"))
        if stale:
            ui.print(s(f"warning: {stale} matching golden(s) keep a stale source.py (not the kernel file their "
                       f"IR is compiled from); refresh it with: {refresh}", "red" if strict else "yellow"))
    if bad:
        raise ComparisonFailed(f"{bad} of {len(points)} snapshots do not match their goldens",
                               "read the diffs above; if the changes are intended: "
                               + (update_command(args, root.path) if args.kernels else refresh))
    if stale and strict:
        raise ComparisonFailed(f"{stale} of {len(points)} goldens keep a stale source.py (--on-stale-source fail)",
                               f"their IR matches; refresh source.py alone with: {refresh}")
    return 0


def update_command(args, goldens: Path, point=None) -> str:
    """The `snapshot update` that rewrites what this `snapshot check KERNEL...` compared (one point's golden,
    with `point`): the kernels as typed, with every compile option given, so it compiles the same variants."""
    kernels = [point.kernel] if point is not None else list(args.kernels)
    argv = ["irscope", "snapshot", "update", *kernels, "--target", point.target if point else args.target,
            "--goldens", str(goldens)]
    if args.config is not None:
        argv += ["--config", args.config]
    for flag, value in (("--num-warps", args.num_warps), ("--num-stages", args.num_stages)):
        if value is not None:
            argv += [flag, str(value)]
    for flag, values in (("--divisibility", args.divisibility), ("--constexpr", args.constexpr),
                         ("--arg", args.arg), ("--option", args.option)):
        for value in values:
            argv += [flag, value]
    if args.large_tensors:
        argv.append("--large-tensors")
    if not args.line_info:
        argv.append("--no-line-info")
    return shlex.join(argv)


def one_per_point(goldens: list) -> list:
    """One golden per compile point: a point's goldens of other Triton releases (`<target>@triton-X`,
    beside `<target>`) are compiled once, through the plain folder, and compared with the running
    release's golden; a versioned golden without a plain sibling stands for its point."""
    from ..goldens.root import VERSION_MARK
    plain = {g.path for g in goldens if VERSION_MARK not in g.path.name}
    return [g for g in goldens if VERSION_MARK not in g.path.name
            or g.path.with_name(g.path.name.split(VERSION_MARK)[0]) not in plain]


def _fresh_root(keep: str | None, goldens: Path):
    if keep is None:
        return tempfile.TemporaryDirectory(prefix="irscope-snapshot-")
    from contextlib import nullcontext
    from ..store.folder import check_writable
    from ..errors import UsageError
    path = Path(keep)
    hint = "give --keep a folder you can write (or leave --keep out: a temporary folder is used)"
    for part in [path, *path.parents]:  # (the first that exists: a file there, or above, is no folder)
        if part.exists():
            if not part.is_dir():
                raise UsageError(f"--keep '{keep}'" + (" is" if part == path else f": '{part}' is") +
                                 " a file, not a folder", hint)
            break
    check_writable(path.resolve(), False)
    # a golden root not yet marked (its first update) is still the goldens: a fresh compile written there
    # would be taken for the golden it is compared with, and pass
    if path.resolve() == goldens.resolve() or goldens.resolve() in path.resolve().parents:
        raise UsageError(f"--keep '{keep}' is the golden root '{goldens}' or a folder inside it",
                         "keep the fresh compiles in another folder: --keep fresh/")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UsageError(f"cannot make the --keep folder '{keep}': {e.strerror or e}", hint) from None
    return nullcontext(str(path))


def summary_counts(rows: list[dict]) -> dict[str, int]:
    """How many goldens ended in each status: match, mismatch and missing always, the others when seen."""
    counts = {"match": 0, "mismatch": 0, "missing": 0}
    for row in rows:
        counts[row["status"]] = counts.get(row["status"], 0) + 1
    order = {status: i for i, status in enumerate(SUMMARY_ORDER)}
    return dict(sorted(counts.items(), key=lambda kv: (order.get(kv[0], len(order)), kv[0])))


def summary_line(counts: dict[str, int]) -> str:
    total = sum(counts.values())
    return f"{total} golden(s): " + ", ".join(f"{n} {status}" for status, n in counts.items())
