"""`irscope snapshot check|update`: golden snapshots from the command line (what the pytest plugin does)."""
from __future__ import annotations

import tempfile
from pathlib import Path

from .options import add_compile_options, options_from_args


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
        a.add_argument("--jobs", "-j", type=int, metavar="N", help="compiles at once (default: one per core)")
        a.add_argument("--on-version-mismatch", choices=("skip", "fail"), default="skip",
                       help="goldens made under another Triton version: skip them (default) or fail")
        add_compile_options(a)
        a.set_defaults(run=run)


def run(args, ui) -> int:
    from ..errors import ComparisonFailed, SnapshotError
    from ..golden import GoldenRoot, describe
    from ..pipeline import Point, compile_points
    from ..render import ProgressLine
    from ..store import load_snapshot
    from ..targets import parse_targets

    root = GoldenRoot(Path(args.goldens))
    if args.kernels:
        options = options_from_args(args)
        points = [Point(k, t.name, options) for k in args.kernels for t in parse_targets(args.target)]
    else:
        if not root.path.is_dir():
            raise SnapshotError(f"no golden folder '{root.path}'",
                                "create goldens with: irscope snapshot update KERNEL --target all")
        points = [root.point_of(g) for g in root.goldens()]
        if not points:
            raise SnapshotError(f"'{root.path}' holds no goldens", "irscope snapshot update KERNEL --target all")
    progress = ProgressLine(ui.err)
    with tempfile.TemporaryDirectory(prefix="irscope-snapshot-") as tmp:
        try:
            outcomes = compile_points(points, Path(tmp), workers=args.jobs,
                                      on_progress=lambda p: progress.update(f"[{p.done}/{p.total}] compiling"))
        finally:
            progress.close()
        s = ui.style
        bad = 0
        versions = set()
        for point, o in zip(points, outcomes):
            if not o.ok:
                bad += 1
                ui.print(f"{s(o.label, 'bold')}  {s(o.status, 'red')}: {(o.error or {}).get('message', '').strip()[:200]}")
                continue
            fresh = load_snapshot(o.path)
            result = root.compare(fresh)
            if args.action == "update" and result.status in ("missing", "mismatch", "version-mismatch"):
                result = root.write(fresh, None, point.kernel)
            if result.status == "version-mismatch":
                versions.add((result.golden_version, result.fresh_version))
                if args.on_version_mismatch == "skip":
                    ui.print(f"{s(o.label, 'bold')}  {s('skipped', 'yellow')}")
                    continue
            color = "green" if result.ok else "red"
            ui.print(f"{s(o.label, 'bold')}  {s(result.status, color)}")
            if not result.ok:
                bad += 1
                hint = f"irscope snapshot update {point.kernel} --target {point.target} --goldens {root.path}"
                ui.print("  " + describe(result, update_hint=hint).replace("\n", "\n  "))
        for golden, here in sorted(versions):
            ui.print(f"goldens made with Triton {golden}; this is Triton {here}")
    if bad:
        raise ComparisonFailed(f"{bad} of {len(points)} snapshots do not match their goldens",
                               "read the diffs above; if the changes are intended: irscope snapshot update")
    return 0
