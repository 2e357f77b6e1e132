"""A snapshot's stages as the reader sees them: which tabs, their text, and the work done off-screen
(debug locations, outlines, search indexes) for all of them at once. No Textual import.
"""
from __future__ import annotations

import hashlib
import itertools
import os
import re
from dataclasses import dataclass
from pathlib import Path

from ...ir.lines import LineMap, kernel_file, line_map
from ...ir.outline import Landmark, outline
from ...store.schema import MAX_FILE_BYTES
from ...store.snapshot import PYTHON_FILE, Snapshot
from .entries import DAMAGE, inside
from .document import Document

PYTHON = "python"
ERROR = "error"  # a failed compile's message, shown as the first tab
TAB_LABELS = {PYTHON: "python", "source": "source (TTIR₀)", ERROR: "✗ error"}
STAGE_HELP = {"source": "Triton's `source` stage: the TTIR its frontend produced, before any pass ran"}
WELCOME = """Choose a snapshot in the tree on the left (arrows, then Enter), or type in the filter box above it.

Then:  [ ]  change stage     /  search     :  go to a line     Enter  jump between Python and IR
       v    Python beside     d  compare    c  compile          ?      every key
"""


def nothing_found(roots: list[Path], out: Path) -> str:
    """The reader's text when the tree is empty: how to get a first snapshot (WELCOME would point at
    a tree with nothing in it)."""
    where = (f"in {', '.join(str(r) for r in roots)}" if roots else
             "(no ROOT given, and no $IRSCOPE_OUT or ./irscope-snapshots folder)")
    shell = "irscope compile matmul --target sm_90a" + (f" -o {roots[0]}" if roots else "")
    return (f"No snapshots found {where}.\n\n"
            f"Press c to compile one: it is written to {out} and opens here.\n\n"
            f"Or compile from a shell, then start irscope tui again:\n\n    {shell}\n")


# The reader shows a stage's first MAX_LINES lines (ten times the 100,000-line LLIR of the speed benchmark): a line costs
# some 60 bytes of bookkeeping beyond its text, so a 20 MB stage of empty lines took 1.2 GB and 28 s, and
# one of the 512 MiB the store allows would take tens of GB.
MAX_LINES = 1_000_000
# Where a line ends, as the views split a text: str.splitlines for IR, newlines only for Python.
_BREAKS = re.compile("\r\n|[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
_NEWLINES = re.compile("\n")


def cut(text: str, stage: str) -> str:
    """`text` up to its MAX_LINES-th line, and a last line saying how much is not shown."""
    if len(text) <= MAX_LINES:  # too short to hold that many lines
        return text
    breaks = (_NEWLINES if stage == PYTHON else _BREAKS).finditer(text)
    last = next(itertools.islice(breaks, MAX_LINES - 1, None), None)
    if last is None or last.end() == len(text):
        return text
    return (text[:last.end()] + f"✗ … the rest of {stage} ({len(text) - last.end():,} characters) is not shown: "
            f"the reader shows the first {MAX_LINES:,} lines of a stage\n")


PREFERRED = (ERROR, "ttgir", "ttir", "llir", "ptx", "amdgcn", "sass", "source", PYTHON)


@dataclass
class StageData:
    """What the view knows about one stage: its document, line map and landmarks (filled in lazily)."""

    document: Document
    map: LineMap | None = None
    landmarks: list[Landmark] | None = None


def python_text(snapshot: Snapshot, trusted: Path | None = None) -> str | None:
    """The kernel's Python source: the snapshot's own source.py, else `trusted`.

    Never a path the snapshot records (irscope.json's `source_file`, the files its debug locations
    name): a snapshot folder is untrusted input, and following those would show any file on the machine.
    `trusted` is a kernel file the user named in this session (the compile form), and nothing else.
    """
    own = snapshot.path / PYTHON_FILE
    try:
        if own.is_file() and inside(snapshot.path, own) and own.stat().st_size <= MAX_FILE_BYTES:
            return cut(own.read_text(errors="replace"), PYTHON)
        if trusted is not None and Path(trusted).is_file() and Path(trusted).stat().st_size <= MAX_FILE_BYTES:
            return cut(Path(trusted).read_text(errors="replace"), PYTHON)
    except DAMAGE:
        return None
    return None


class StageProblem(Exception):
    """A stage that cannot be shown: its file is missing, unreadable, leads outside, or fails its hash."""

    def __init__(self, stage: str, message: str):
        super().__init__(message)
        self.stage, self.message = stage, message


def read_stage(snapshot: Snapshot, stage: str) -> str:
    """A stage's text, read only from inside the snapshot folder; StageProblem says why not."""
    path = snapshot.stage_files.get(stage)
    if path is not None and not inside(snapshot.path, path):
        raise StageProblem(stage, f"{Path(path).name} leads outside the snapshot folder; not reading it")
    try:
        return cut(snapshot.read(stage), stage)
    except DAMAGE as e:  # the store's SnapshotError (a missing file, a sha256 mismatch), or worse
        message = getattr(e, "message", None) or f"cannot read {stage}: {e}"
        # Paths relative to the snapshot (the reader knows which one is open), so the file's name comes
        # early enough in the message to be seen on the status line.
        message = message.replace(f"{snapshot.path}{os.sep}", "").replace(str(snapshot.path), "the snapshot")
        name = Path(path).name if path is not None else None
        raise StageProblem(stage, message if name is None or name in message else f"{name}: {message}") from None


def hash_problem(snapshot: Snapshot, stage: str) -> str | None:
    """Why a stage's file is not the one the compile wrote (its sha256 differs from irscope.json's), or None.

    The TUI's own check, so that a changed file is flagged whether or not the store verifies hashes
    itself; the text is still shown (it is read from inside the folder), under a warning.
    """
    info = (snapshot.meta.get("stages") or {}).get(stage)
    want = info.get("sha256") if isinstance(info, dict) else None
    path = snapshot.stage_files.get(stage)
    if not isinstance(want, str) or path is None:
        return None
    try:
        got = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError as e:
        return f"cannot read {Path(path).name}: {e.strerror}"
    if got != want:
        return f"{Path(path).name} does not match the sha256 in irscope.json: changed after the compile?"
    return None


def stage_text(snapshot: Snapshot, stage: str, trusted: Path | None = None) -> str:
    if stage == PYTHON:
        return python_text(snapshot, trusted) or ""
    if stage == ERROR:
        return failure_text(snapshot)
    try:
        return read_stage(snapshot, stage)
    except StageProblem as e:
        return f"✗ cannot show {stage}: {e.message}"


def map_stages(snapshot: Snapshot, trusted: Path | None, source_file: str | None, theme: str,
               existing: dict[str, StageData]) -> tuple[dict[str, StageData], str | None, dict[str, str]]:
    """Every stage read, its debug locations parsed and indexed, its landmarks found (a worker's job).

    Returns the stages' data, the kernel file's name as the locations spell it (only a name to match
    locations by: nothing here opens it), and the problems met reading stages (stage -> message).
    """
    out: dict[str, StageData] = {}
    problems: dict[str, str] = {}
    for stage in [PYTHON] + list(snapshot.text_stages):
        if stage == PYTHON:
            text = python_text(snapshot, trusted)
            if text is None:
                continue
        else:
            try:
                text = read_stage(snapshot, stage)
            except StageProblem as e:
                problems[stage] = e.message
                continue
            changed = hash_problem(snapshot, stage)
            if changed is not None:
                problems[stage] = changed
        known = existing.get(stage)
        document = known.document if known else Document(text, stage, theme=theme)
        try:
            lmap = None if stage == PYTHON else line_map(stage, text)
            marks = outline(stage, text)
        except DAMAGE as e:  # garbage bytes in a stage: show the text without locations, say why
            problems[stage] = f"{stage}: cannot parse its debug locations ({type(e).__name__})"
            lmap, marks = None, []
        out[stage] = StageData(document, lmap, marks)
    kfile = kernel_file([d.map for d in out.values() if d.map is not None]) or source_file
    for data in out.values():  # the slow parts of a first cursor move or search, done here instead
        if data.map is not None and kfile:
            data.map.source_lines(kfile)
        data.document.prepare_search()
    return out, kfile, problems


def located_file(snapshot: Snapshot) -> str | None:
    """The kernel's file as TTIR's first location names it (Triton cache entries keep no source.py)."""
    for stage in ("ttir", "source"):
        path = snapshot.stage_files.get(stage)
        if path is not None and inside(snapshot.path, path):
            try:
                with open(path, errors="replace") as f:
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
    err = snapshot.error if isinstance(snapshot.error, dict) else {}
    kept = ", ".join(snapshot.text_stages) or "none"
    return (f"{snapshot.label}: the compile failed ({snapshot.meta.get('status', '?')})\n\n"
            f"stage:  {err.get('stage', '?')}\n"
            f"error:  {err.get('type', '?')}\n"
            f"stages kept: {kept}\n\n{err.get('message', '')}")


def next_landmark(lines: list[int], here: int, forward: bool) -> int:
    """The first of `lines` after `here` (before it, going back), wrapping around; `lines` is not empty."""
    candidates = [ln for ln in lines if ln > here] if forward else [ln for ln in lines if ln < here][::-1]
    return candidates[0] if candidates else (lines if forward else lines[::-1])[0]
