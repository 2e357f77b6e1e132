"""Tables of counters and resources for terminals and CSV: one snapshot's report, several side by side
(`stats`, `compare`, `sweep`), and the CSV columns scripts rely on."""
from __future__ import annotations

import csv
import fnmatch
import io
from typing import Sequence

from .terminal import human_bytes, table


def split_patterns(text: str | None) -> list[str]:
    return [p.strip() for p in (text or "").split(",") if p.strip()]


def matches(key: str, patterns: Sequence[str]) -> bool:
    return not patterns or any(fnmatch.fnmatchcase(key, p) for p in patterns)


def unmatched(patterns: Sequence[str], keys) -> list[str]:
    """The patterns that match none of `keys` (a typo, or a counter these compiles do not have)."""
    keys = list(keys)
    return [p for p in patterns if not any(fnmatch.fnmatchcase(k, p) for k in keys)]


def names_resources(pattern: str) -> bool:
    """Whether an --only pattern asks for a resource row (`resources.*`, `res.registers`, `registers`):
    those rows are always shown, and --only picks counters only."""
    head = pattern.split(".", 1)[0].lower()
    return head in ("resources", "resource", "res") or any(
        fnmatch.fnmatchcase(name, pattern) for name in (*RESOURCE_ROWS, *RESOURCE_COLUMNS))


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
    # Fixed-name counters of the analysed stages are columns even where every value is 0 (a stable schema).
    keys = sorted({k for a in analyses for k in (*a.counters, *a.zero_keys) if matches(k, patterns)}, key=sort_key)
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


# A cell a spreadsheet would take for a formula (`=HYPERLINK(...)` as a kernel name in an untrusted snapshot's
# irscope.json): written with a leading apostrophe, as OWASP's CSV-injection advice has it; numbers stay numbers.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value):
    return "'" + value if isinstance(value, str) and value.startswith(_FORMULA_START) else value


def csv_text(header: Sequence[str], rows, *, extrasaction: str = "raise") -> str:
    """The CSV irscope writes (stats, compare, sweep): a header line, one line a row, no cell a formula."""
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(header), lineterminator="\n", extrasaction=extrasaction)
    w.writeheader()
    for row in rows:
        w.writerow({k: csv_cell(v) for k, v in row.items()})
    return buf.getvalue()


def to_csv(analyses, patterns: Sequence[str] = ()) -> str:
    header = csv_header(analyses, patterns)
    return csv_text(header, (csv_row(a, header) for a in analyses))
