"""Reading: one snapshot as the reader has it open, without Textual: its stages, their texts and line
maps as far as read, what is damaged in them, and the Python line the cursor is on.

The mapping between source and IR lives here (`loc`, `lines_for`, `marks`); the status line's text
is `status_text`. The reader (widgets/snapshot_view.py) holds one `Reading` a snapshot.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from rich.text import Text

from ...ir.lines import SourceLoc, base_name, same_file
from ...ir.outline import outline
from ...store.snapshot import Snapshot
from .document import Document
from .stages import (ERROR, PYTHON, STAGE_HELP, StageData, StageProblem, hash_problem, located_file,
                     python_text, read_stage, stage_text)


@dataclass
class Reading:
    """What is known about the open snapshot; `warn` hears of each damaged stage once."""

    snapshot: Snapshot | None = None
    trusted: Path | None = None  # a kernel file the user named in this session (compile form)
    theme: Callable[[], str] = lambda: ""  # asked at each read: the theme can change while reading
    stages: list[str] = field(default_factory=list)
    # The kernel file's name as the snapshot spells it: only matched against debug locations, never
    # opened (the Python tab reads source.py inside the snapshot, or `trusted`).
    source_file: str | None = None
    data: dict[str, StageData] = field(default_factory=dict)
    problems: dict[str, str] = field(default_factory=dict)  # stage -> why it cannot be shown
    source_line: int | None = None  # 1-based line of the kernel's Python file
    located: bool = False  # the background parse of debug locations has ended (a stage may still have none)
    warn: Callable[[str], None] = lambda message: None

    @classmethod
    def of(cls, snapshot: Snapshot, trusted: Path | None, theme: Callable[[], str], warn: Callable[[str], None]) -> Reading:
        recorded = snapshot.meta.get("source_file")
        source_file = (recorded if isinstance(recorded, str) else None) or located_file(snapshot)
        stages = ([ERROR] if not snapshot.ok else []) + \
            ([PYTHON] if python_text(snapshot, trusted) is not None else []) + list(snapshot.text_stages)
        return cls(snapshot, trusted, theme, stages, source_file, warn=warn)

    # -- texts ------------------------------------------------------------------------------------------

    def document(self, stage: str) -> StageData:
        """A stage's text, read on first use; a damaged one says why in its place (and warns)."""
        data = self.data.get(stage)
        if data is None:
            assert self.snapshot is not None
            if stage in (PYTHON, ERROR):
                text = stage_text(self.snapshot, stage, self.trusted)
            else:
                try:
                    text = read_stage(self.snapshot, stage)
                    changed = hash_problem(self.snapshot, stage)
                    if changed is not None:  # shown, under a warning
                        self.problem(stage, changed)
                except StageProblem as e:
                    self.problem(stage, e.message)
                    text = f"✗ cannot show {stage}: {e.message}"
                    data = self.data[stage] = StageData(Document(text, "", theme=self.theme()))
                    return data
            data = self.data[stage] = StageData(Document(text, stage, theme=self.theme()))
        return data

    def problem(self, stage: str, message: str) -> None:
        """A damaged stage (a missing file, a hash mismatch): a warning naming it, once per snapshot."""
        if stage not in self.problems:
            self.problems[stage] = message
            self.warn(message)

    def mapped(self, data: dict[str, StageData], kernel_file: str | None, problems: dict[str, str]) -> None:
        """The line maps and landmarks parsed in the background, merged into what is already read."""
        self.located = True
        for stage, message in problems.items():
            self.problem(stage, message)
        for stage, got in data.items():
            current = self.data.get(stage)
            if current is not None:
                current.map, current.landmarks = got.map, got.landmarks
            else:
                self.data[stage] = got
        self.source_file = kernel_file or self.source_file

    def landmark_lines(self, stage: str, kind: str) -> list[int]:
        """The lines of a stage's functions or loops (`kind`), found now if the background has not yet."""
        data = self.document(stage)
        if data.landmarks is None:
            data.landmarks = outline(stage, "\n".join(data.document.lines))
        return [m.line for m in data.landmarks if m.kind == kind]

    # -- source and IR ----------------------------------------------------------------------------------

    def loc(self, stage: str, line: int) -> SourceLoc | None:
        """The kernel file's line that `line` of `stage` came from."""
        data = self.data.get(stage)
        if data is None or data.map is None or self.source_file is None:
            return None
        return data.map.source_of(line, self.source_file)

    def lines_for(self, stage: str) -> list[int]:
        """The lines of `stage` that came from the Python line the cursor is on."""
        data = self.data.get(stage)
        if self.source_line is None or data is None or data.map is None or self.source_file is None:
            return []
        return data.map.lines_for(self.source_line, self.source_file)

    def first_mark(self, stage: str) -> int | None:
        if stage == PYTHON:
            return self.source_line - 1 if self.source_line else None
        lines = self.lines_for(stage)
        return lines[0] if lines else None

    def marks(self, stage: str) -> list[int]:
        """The lines to mark in `stage`: the Python line, or the IR lines that came from it."""
        if stage == PYTHON:
            return [self.source_line - 1] if self.source_line else []
        return self.lines_for(stage)


@dataclass(frozen=True)
class Cursor:
    """Where the reader's code view is: its line, its length, its search and which match is current."""

    line: int
    length: int
    query: str = ""
    match_index: int | None = None
    matches: int = 0


def status_text(reading: Reading, stage: str | None, cursor: Cursor) -> Text:
    """The reader's status line: stage, line, damage, search, source location and mapping counts."""
    if reading.snapshot is None or stage is None:
        return Text()
    text = Text()
    text.append(f" {stage} ", style="bold reverse")
    text.append(f" {cursor.line + 1}/{cursor.length}")
    if stage in STAGE_HELP:
        text.append(f"  {STAGE_HELP[stage]}", style="dim")
    if stage in reading.problems:
        text.append(f"  ✗ damaged: {reading.problems[stage]}", style="bold red")
    if cursor.query:
        k = cursor.match_index
        where = f"{k}/{cursor.matches}" if k else f"{cursor.matches} lines"
        text.append(f"  /{cursor.query}: {where}", style="yellow")
    data = reading.data.get(stage)
    if stage != PYTHON and data and data.map is not None:
        full = data.map.source_of(cursor.line)
        if full is None:
            text.append("  no source location", style="dim")
        elif reading.source_file and not same_file(full.file, reading.source_file):
            text.append(f"  via {base_name(full.file)}:{full.line}", style="dim")
    if reading.source_line is not None:
        name = base_name(reading.source_file or "source")
        text.append(f"  {name}:{reading.source_line}", style="bold")
        counts = [f"{s} {len(reading.lines_for(s))}" for s in reading.stages if s not in (PYTHON, ERROR)]
        if counts:
            text.append("  → " + " · ".join(counts), style="dim")
    elif stage not in (PYTHON, ERROR) and data and data.map is None and not reading.located:
        # (the error tab, a stage that cannot be read or parsed: no locations will ever come)
        text.append("  reading debug locations…", style="dim")
    return text
