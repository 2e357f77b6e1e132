"""`irscope stats SNAPSHOT... [--json|--csv]`: counters, resources, occupancy and launchability.

Also home of the side-by-side counter table that `compare` and `sweep` print.
"""
from __future__ import annotations

import csv
import fnmatch
import io
import json
from typing import Sequence

from ..render import human_bytes, table


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
    from ..store import is_snapshot_dir, load_snapshot, scan_snapshots

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


def split_patterns(text: str | None) -> list[str]:
    return [p.strip() for p in (text or "").split(",") if p.strip()]


def matches(key: str, patterns: Sequence[str]) -> bool:
    return not patterns or any(fnmatch.fnmatchcase(key, p) for p in patterns)


# -- tables ---------------------------------------------------------------------------------------------

RESOURCE_ROWS = ("registers", "spills", "shared/LDS", "stack", "agprs", "sgprs", "scratch", "tensor memory", "warps",
                 "occupancy", "launchable")


def resource_cells(a, *, detailed: bool = False) -> dict[str, str]:
    """Row name -> cell for the resource rows of a table ('-' where the target has no such thing)."""
    r = a.resources
    amd = "amdgcn" in a.stages or (a.target.startswith("gfx"))
    cells = {"registers": "-" if r.registers is None else f"{r.registers}" + (" vgpr" if amd else ""),
             "spills": _spills(r, amd), "shared/LDS": human_bytes(r.shared)}
    if amd:
        cells.update({"agprs": _num(r.agprs), "sgprs": _num(r.sgprs), "scratch": human_bytes(r.scratch)})
    else:
        cells["stack"] = human_bytes(r.stack)
        if r.tensor_memory:
            cells["tensor memory"] = f"{r.tensor_memory} cols"
    cells["warps"] = _num(r.num_warps)
    occ = a.occupancy
    if occ is None:
        cells["occupancy"] = "-"
    elif detailed:
        cells["occupancy"] = occ.describe()
    elif occ.unit == "waves/SIMD":
        cells["occupancy"] = f"{occ.value} waves/SIMD ({occ.limiter})"
    else:
        cells["occupancy"] = f"{occ.value} blk/SM {occ.fraction:.0%} ({occ.limiter})"
    cells["launchable"] = "yes" if a.launch.launchable else "NO"
    return cells


def short_labels(analyses) -> list[str]:
    """Column headers: the parts of kernel/variant/target that differ between the snapshots."""
    parts = [a.label.split("/") for a in analyses]
    if len(parts) < 2 or len({len(p) for p in parts}) != 1:
        return [a.label for a in analyses]
    keep = [i for i in range(len(parts[0])) if len({p[i] for p in parts}) > 1]
    labels = ["/".join(p[i] for i in keep) for p in parts]
    return labels if keep and len(set(labels)) == len(labels) else [a.label for a in analyses]


def _spills(r, amd: bool) -> str:
    if amd:
        return "-" if r.spill_stores is None else f"{r.spill_stores} vgprs"
    if r.spill_stores is None and r.spill_loads is None:
        return "-"
    return f"{human_bytes(r.spill_stores)} st / {human_bytes(r.spill_loads)} ld"


def _num(v) -> str:
    return "-" if v is None else f"{v:,}"


def side_by_side(analyses, headers: Sequence[str], ui, *, patterns: Sequence[str] = (), flips: bool = False,
                 changed_only: bool = False) -> str:
    """Counters (rows, grouped) by snapshot (columns), then resources and launch problems.

    With `flips`, a cell that differs from its left neighbour is highlighted (marked `*` without colour).
    """
    from ..analyze.catalog import grouped

    s = ui.style
    keys = {k for a in analyses for k in a.counters if matches(k, patterns)}
    rows: list[list[str]] = []
    for group, group_keys in grouped(keys):
        body = []
        for key in group_keys:
            values = [a.get(key) for a in analyses]
            if changed_only and len({v for v in values}) <= 1:
                continue
            body.append([f"  {key}"] + _cells([("-" if v is None else f"{v:,}") for v in values], s, flips))
        if body:
            rows.append([s(group, "bold")] + [""] * len(analyses))
            rows.extend(body)
    res_rows = [resource_cells(a) for a in analyses]
    names = [n for n in RESOURCE_ROWS if any(n in r for r in res_rows)]
    rows.append([s("resources", "bold")] + [""] * len(analyses))
    for name in names:
        values = [r.get(name, "-") for r in res_rows]
        if changed_only and len(set(values)) <= 1:
            continue
        rows.append([f"  {name}"] + _cells(values, s, flips))
    out = table(["counter"] + list(headers), rows, right=tuple(range(1, len(analyses) + 1)), style=s)
    problems = [f"{h}: {'; '.join(a.launch.reasons)}" for h, a in zip(headers, analyses) if not a.launch.launchable]
    if problems:
        out += "\n\n" + s("cannot launch", "red", "bold") + "\n" + "\n".join(f"  {p}" for p in problems)
    return out


def _cells(values: list[str], s, flips: bool) -> list[str]:
    if not flips:
        return values
    out = []
    for i, v in enumerate(values):
        if i and v != values[i - 1]:
            out.append(s(v, "yellow", "bold") if s.color else f"*{v}")
        else:
            out.append(v)
    return out


def single_report(a, ui, patterns: Sequence[str] = ()) -> str:
    """One snapshot: grouped counters, layouts, allocations, resources."""
    s = ui.style
    status = s("ok", "green") if a.status == "ok" else s("FAILED", "red", "bold")
    lines = [f"{s(a.label, 'bold')}  {status}  (counters from {', '.join(a.stages) or 'no stage'})"]
    rows = []
    for group, keys in a.groups:
        keys = [k for k in keys if matches(k, patterns)]
        if not keys:
            continue
        rows.append([s(group, "bold"), ""])
        rows += [[f"  {k}", f"{a.counters[k]:,}"] for k in keys]
    if rows:
        lines.append(table(["counter", "value"], rows, right=(1,), style=s))
    if a.layouts and not patterns:
        lines.append("")
        lines.append(s("layouts", "bold"))
        for lay in a.layouts:
            name = f"#{lay.alias}" if lay.alias else ""
            lines.append(f"  {name:10} {lay.describe()}")
    if a.allocations and not patterns:
        lines.append("")
        lines.append(s("buffers", "bold"))
        arows = [[al.name, al.space, "x".join(map(str, al.shape)) + "x" + al.dtype, str(al.buffers),
                  human_bytes(al.bytes), "mbarriers" if al.barrier else al.encoding] for al in a.allocations]
        lines.append(_indent(table(["name", "memory", "shape", "buffers", "bytes", "note"], arows, right=(3, 4),
                                   style=s)))
    lines.append("")
    lines.append(s("resources", "bold"))
    lines.append(_indent(table(["", ""], list(resource_cells(a, detailed=True).items())).split("\n", 1)[-1]))
    if not a.launch.launchable:
        lines.append(s("  cannot launch: ", "red", "bold") + "; ".join(a.launch.reasons))
    elif not a.launch.checked:
        lines.append("  " + "; ".join(a.launch.reasons))
    return "\n".join(lines)


def _indent(text: str, n: int = 2) -> str:
    return "\n".join(" " * n + line for line in text.splitlines())


# -- CSV ------------------------------------------------------------------------------------------------

CSV_FIXED = ("path", "label", "kernel", "variant", "target", "status", "launchable", "launch_reasons", "occupancy",
             "occupancy_unit", "occupancy_limiter")
RESOURCE_COLUMNS = ("num_warps", "registers", "spill_stores", "spill_loads", "stack", "local", "shared", "sgprs",
                    "agprs", "scratch", "tensor_memory")


def csv_header(analyses, patterns: Sequence[str] = ()) -> list[str]:
    from ..analyze.catalog import sort_key
    keys = sorted({k for a in analyses for k in a.counters if matches(k, patterns)}, key=sort_key)
    return list(CSV_FIXED) + [f"res.{n}" for n in RESOURCE_COLUMNS] + keys


def csv_row(a, header: Sequence[str]) -> dict:
    occ = a.occupancy
    row = {"path": a.path, "label": a.label, "kernel": a.kernel, "variant": a.variant, "target": a.target,
           "status": a.status, "launchable": int(a.launch.launchable), "launch_reasons": "; ".join(a.launch.reasons),
           "occupancy": occ.value if occ else "", "occupancy_unit": occ.unit if occ else "",
           "occupancy_limiter": occ.limiter if occ else ""}
    for n in RESOURCE_COLUMNS:
        v = getattr(a.resources, n)
        row[f"res.{n}"] = "" if v is None else v
    for k in header:
        if k not in row:
            v = a.get(k)
            row[k] = "" if v is None else v
    return row


def to_csv(analyses, patterns: Sequence[str] = ()) -> str:
    header = csv_header(analyses, patterns)
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=header, lineterminator="\n")
    w.writeheader()
    for a in analyses:
        w.writerow(csv_row(a, header))
    return buf.getvalue()
