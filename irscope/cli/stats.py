"""`irscope stats SNAPSHOT... [--json|--csv]`: counters, resources, occupancy and launchability.

The tables themselves (also printed by `compare` and `sweep`) are irscope.render.tables.
"""
from __future__ import annotations

import json
from typing import Sequence

from ..render.tables import matches, names_resources, short_labels, side_by_side, single_report, split_patterns, to_csv


def add_parser(sub) -> None:
    p = sub.add_parser("stats", help="count instructions, layouts and resources of snapshots (no GPU needed)",
                       description="Counters read from each snapshot's stages (TTGIR layouts and buffers; PTX, SASS "
                                   "and AMDGCN instructions), its resources, an occupancy estimate, and whether it "
                                   "can launch on its target. Keys are documented in docs/analyzers.md.")
    p.add_argument("snapshots", nargs="+", metavar="SNAPSHOT",
                   help="snapshot folders, or folders holding snapshots (every one under them is read)")
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="one JSON object per snapshot, in a list")
    fmt.add_argument("--csv", action="store_true", help="one CSV row per snapshot, one column per counter")
    p.add_argument("--only", metavar="PATTERNS", help="show only counters matching these globs: 'ptx.wgmma*,sass.*'")
    p.set_defaults(run=run)


def run(args, ui) -> int:
    from ..analyze import analyze

    from ..errors import SnapshotError

    analyses = []
    for snap, walked in load_all(args.snapshots, ui):
        try:
            analyses.append(analyze(snap))
        except SnapshotError as e:
            if not walked:
                raise
            _warn_skipped(ui, snap.path, e)  # one damaged stage among many snapshots is not fatal
    if not analyses:
        raise SnapshotError("no readable snapshots in " + ", ".join(args.snapshots),
                            "every one found is damaged (see the warnings above); recompile them")
    patterns = split_patterns(args.only)
    if patterns and not any(matches(k, patterns) for a in analyses for k in (*a.counters, *a.zero_keys)):
        from ..errors import UsageError
        some = sorted({k.split(".")[0] + ".*" for a in analyses for k in a.counters})
        if all(names_resources(p) for p in patterns):
            raise UsageError(f"--only '{args.only}' names resources, not counters",
                             "the resource rows (registers, spills, shared memory, occupancy...) are always shown: "
                             "leave out --only to see them; --only picks counters (" + ", ".join(some[:6]) + ")")
        raise UsageError(f"no counter matches --only '{args.only}'",
                         f"counters are named STAGE.NAME ({', '.join(some[:6])}); irscope stats SNAPSHOT lists them")
    if args.json:
        rows = [a.as_dict() for a in analyses]
        if patterns:
            for row in rows:
                row["counters"] = {k: v for k, v in row["counters"].items() if matches(k, patterns)}
        ui.print(json.dumps(rows, indent=1))
    elif args.csv:
        ui.out.write(to_csv(analyses, patterns))
    elif len(analyses) == 1:
        ui.print(single_report(analyses[0], ui, patterns))
    else:
        ui.print(side_by_side(analyses, short_labels(analyses), ui, patterns=patterns))
    return 0


def load_all(paths: Sequence[str], ui=None) -> list:
    """(snapshot, found by walking a folder) for the paths as given; a folder that is not a snapshot stands
    for every snapshot under it. A damaged snapshot named on the command line raises; one found under a
    folder is skipped with a warning on stderr, so one bad folder does not hide the others."""
    from pathlib import Path

    from ..errors import SnapshotError
    from ..store.snapshot import is_snapshot_dir, load_snapshot, scan_snapshots

    snaps = []
    for p in paths:
        path = Path(p)
        if path.is_dir() and not is_snapshot_dir(path):
            found = scan_snapshots(path)
            for where, error in found.damaged:
                _warn_skipped(ui, where, error)
            if not found.snapshots:
                what = "no readable snapshots" if found.damaged else "no snapshots"
                raise SnapshotError(f"{what} under '{path}'", "irscope compile writes them; give their folder")
            snaps.extend((s, True) for s in found.snapshots)
        else:
            snaps.append((load_snapshot(path), False))
    return snaps


def _warn_skipped(ui, path, error) -> None:
    if ui is not None:
        ui.err.write(f"irscope: warning: skipped {path}: {error.message}\n")
