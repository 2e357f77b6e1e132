"""SourceLink: the reader's tie between the kernel's Python source and the IR it became.

The side pane (`v`) holds the Python source beside the stage. Moving the cursor on a Python line marks
the lines it became; moving it on an IR line marks (and, split, shows) the Python line it came from.
Enter jumps across: from Python to the next block of IR lines, from IR to its Python line. The lines
come from the reader's `Reading` (model/reading.py); this class only moves the two code views.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..model.stages import PYTHON, next_block
from .code_view import CodeView

if TYPE_CHECKING:
    from .snapshot_view import SnapshotView


class SourceLink:
    """The split (Python beside the stage), the marks in both views and the jumps between them."""

    def __init__(self, reader: SnapshotView):
        self.reader = reader
        # The reader's choice (`v`), kept while the python tab is read: the pane comes back with the stage.
        self.split = False

    @property
    def shown(self) -> bool:
        """Whether the side pane is on screen: split, with Python to show, beside a stage that is not it."""
        r = self.reader
        return self.split and PYTHON in r.stages and r.stage not in (None, PYTHON)

    def toggle_split(self) -> None:
        r = self.reader
        if PYTHON not in r.stages:
            r.app.notify("this snapshot keeps no Python source", severity="warning", markup=False)
            return
        if r.stage == PYTHON:  # the pane is never beside the python tab: `v` there asks for it, beside a stage
            self.split = True
            r.show_stage(r.last_ir_stage if r.last_ir_stage in r.stages else r.stages[-1])
            return
        self.split = not self.split
        self.place()

    def place(self) -> None:
        """Show or hide the side pane for the stage now read (the python tab needs no Python beside it)."""
        r = self.reader
        hidden = r.side.has_class("-hidden")
        r.side.set_class(not self.shown, "-hidden")
        if self.shown and hidden:
            self.show_side()

    def show_side(self) -> None:
        r = self.reader
        r.side.stage = PYTHON
        r.side.show(r.reading.document(PYTHON).document, (r.reading.source_line or 1) - 1)
        self.remark()

    def remark(self) -> None:
        r = self.reader
        if r.stage is None:
            return
        r.main.mark(r.reading.marks(r.stage))
        if self.shown:
            r.side.mark(r.reading.marks(PYTHON))

    def cursor_moved(self, view: CodeView, line: int) -> None:
        r, reading = self.reader, self.reader.reading
        stage = view.stage or None
        if stage == PYTHON:
            reading.source_line = line + 1
        elif stage is not None and view is r.main:
            loc = reading.loc(stage, line)
            reading.source_line = loc.line if loc is not None else None
            if loc is not None and self.shown and r.side.cursor != loc.line - 1:
                r.side.go_to(loc.line - 1)
        self.remark()

    def line_chosen(self, view: CodeView, line: int) -> None:
        r, reading = self.reader, self.reader.reading
        stage = view.stage or None
        if stage == PYTHON:
            reading.source_line = line + 1
            target = r.stage if view is r.side and r.stage != PYTHON else r.last_ir_stage
            lines = reading.lines_for(target)
            if not lines:
                r.app.notify(f"line {reading.source_line} left no trace in {target}", severity="warning", markup=False)
                return
            nxt = next_block(lines, r.main.cursor if r.stage == target else -1)
            if r.stage != target:
                r.show_stage(target, nxt)
            else:
                r.main.go_to(nxt)
            r.main.focus()
            return
        loc = reading.loc(stage, line) if stage else None
        if loc is None:
            r.app.notify("this line has no source location", severity="warning", markup=False)
            return
        if self.shown:
            r.side.go_to(loc.line - 1)
            r.side.focus()
        elif PYTHON in r.stages:
            r.show_stage(PYTHON, loc.line - 1)
            r.main.focus()
