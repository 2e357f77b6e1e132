"""A snapshot's stages as the reader sees them: which tabs, their text, and the work done off-screen
(debug locations, outlines, search indexes) for all of them at once. No Textual import.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import IrscopeError
from ..lines import LineMap, kernel_file, line_map
from ..outline import Landmark, outline
from ..store import Snapshot
from .document import Document

PYTHON = "python"
ERROR = "error"  # a failed compile's message, shown as the first tab
TAB_LABELS = {PYTHON: "python", "source": "source (TTIR₀)", ERROR: "✗ error"}
STAGE_HELP = {"source": "Triton's `source` stage: the TTIR its frontend produced, before any pass ran"}
WELCOME = """Choose a snapshot in the tree on the left (arrows, then Enter), or type in the filter box above it.

Then:  [ ]  change stage     /  search     :  go to a line     Enter  jump between Python and IR
       v    Python beside     d  compare    c  compile          ?      every key
"""
PREFERRED = (ERROR, "ttgir", "ttir", "llir", "ptx", "amdgcn", "sass", "source", PYTHON)


@dataclass
class StageData:
    """What the view knows about one stage: its document, line map and landmarks (filled in lazily)."""

    document: Document
    map: LineMap | None = None
    landmarks: list[Landmark] | None = None


def python_text(snapshot: Snapshot, source_file: str | None) -> str | None:
    """The kernel's Python source: the snapshot's copy, else the file its debug locations name."""
    text = snapshot.python_source()
    if text is None and source_file and Path(source_file).is_file():
        text = Path(source_file).read_text(errors="replace")
    return text


def stage_text(snapshot: Snapshot, stage: str, source_file: str | None) -> str:
    if stage == PYTHON:
        return python_text(snapshot, source_file) or ""
    if stage == ERROR:
        return failure_text(snapshot)
    try:
        return snapshot.read(stage)
    except IrscopeError as e:
        return f"cannot read {stage}: {e.message}"


def map_stages(snapshot: Snapshot, source_file: str | None, theme: str,
               existing: dict[str, StageData]) -> tuple[dict[str, StageData], str | None]:
    """Every stage read, its debug locations parsed and indexed, its landmarks found (a worker's job)."""
    out: dict[str, StageData] = {}
    for stage in [PYTHON] + list(snapshot.text_stages):
        if stage == PYTHON:
            text = python_text(snapshot, source_file)
            if text is None:
                continue
        else:
            try:
                text = snapshot.read(stage)
            except IrscopeError:
                continue
        known = existing.get(stage)
        document = known.document if known else Document(text, stage, theme=theme)
        out[stage] = StageData(document, None if stage == PYTHON else line_map(stage, text), outline(stage, text))
    kfile = kernel_file([d.map for d in out.values() if d.map is not None]) or source_file
    for data in out.values():  # the slow parts of a first cursor move or search, done here instead
        if data.map is not None and kfile:
            data.map.source_lines(kfile)
        data.document.prepare_search()
    return out, kfile


def located_file(snapshot: Snapshot) -> str | None:
    """The kernel's file as TTIR's first location names it (Triton cache entries keep no source.py)."""
    for stage in ("ttir", "source"):
        if stage in snapshot.stage_files:
            try:
                with open(snapshot.stage_files[stage], errors="replace") as f:
                    head = f.read(4096)
            except OSError:
                continue
            m = re.search(r'loc\("([^"]+\.py)":\d+:\d+\)', head)
            if m:
                return m.group(1)
    return None


def next_block(lines: list[int], here: int) -> int:
    """The first line of the next run of consecutive lines after `here` (wrapping to the first run)."""
    present = set(lines)
    starts = [ln for ln in lines if ln - 1 not in present]
    return next((ln for ln in starts if ln > here), starts[0])


def failure_text(snapshot: Snapshot) -> str:
    err = snapshot.error or {}
    kept = ", ".join(snapshot.text_stages) or "none"
    return (f"{snapshot.label}: the compile failed ({snapshot.meta.get('status', '?')})\n\n"
            f"stage:  {err.get('stage', '?')}\n"
            f"error:  {err.get('type', '?')}\n"
            f"stages kept: {kept}\n\n{err.get('message', '')}")
