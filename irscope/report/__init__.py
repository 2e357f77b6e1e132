"""`irscope report`: one self-contained HTML file of snapshots, comparisons, sweeps and GPU runs.

Everything the page needs is inside it (styles, a small script, the data as JSON that is parsed only when
a pane opens), so it can be mailed, kept as a CI artifact and opened from a file:// URL. No Triton, no
Textual: it reads what the store, ir, analyze and diff layers give.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Sequence

from ..store.output import write_output
from ..store.snapshot import Snapshot
from .compare import add_comparison
from .page import Page
from .snapshot import add_snapshot
from .sweep import add_sweep, read_sweep

__all__ = ["build_report", "write_report", "read_sweep"]


def build_report(snapshots: Sequence[Snapshot] = (), *, compare: Sequence[Snapshot] = (),
                 comparisons: Sequence[Sequence[Snapshot]] = (), sweeps: Sequence[tuple[str, dict]] = (),
                 title: str | None = None,
                 on_progress: Callable[[str], None] | None = None) -> str:
    """The page's HTML: a section per snapshot, a comparison of `compare` (two or more) and of each of
    `comparisons`, then one section per sweep (its source's name, its parsed JSON)."""
    page = Page(title or _title(snapshots, compare or (comparisons[0] if len(comparisons) == 1 else ()), sweeps))
    for snap in snapshots:
        add_snapshot(page, snap, on_progress)
    for group in ([compare] if compare else []) + list(comparisons):
        if len(group) >= 2:
            add_comparison(page, group, on_progress)
    for source, data in sweeps:
        add_sweep(page, data, source)
    return page.html()


def write_report(path: Path | str, html: str) -> Path:
    """Write atomically: a reader never opens half a report (store.output.write_output)."""
    return write_output(path, html, make_folder=True)


def _title(snapshots, compare, sweeps) -> str:
    if compare:
        return "irscope: " + " vs ".join(s.label for s in compare[:4]) + (" ..." if len(compare) > 4 else "")
    if len(snapshots) == 1:
        return f"irscope: {snapshots[0].label}"
    if sweeps and not snapshots:
        return "irscope: sweep " + ", ".join(Path(s).name for s, _ in sweeps)
    return f"irscope report: {len(snapshots)} snapshot(s)"
