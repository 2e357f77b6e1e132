"""SnapshotView: one snapshot's stages as tabs, the kernel's Python source beside them, and its numbers.

Moving the cursor on a Python line marks the lines it became in every stage; moving it on an IR line
marks the Python line it came from (and the other lines of that stage from the same Python line).
Enter jumps across: from Python to the next block of IR lines, from IR to its Python line.
"""
from __future__ import annotations

import gc
from dataclasses import dataclass
from pathlib import Path

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import Tab, Tabs

from ...ir.lines import SourceLoc, base_name, same_file
from ...ir.outline import outline
from ...ir.resources import Resources
from ...store.snapshot import Snapshot
from ..model.entries import DAMAGE
from .code_view import CodeView
from ..model.document import DARK_THEME, LIGHT_THEME, Document
from ..model.facts import Facts, facts_of
from .find_bar import FindBar
from .resource_panel import ResourcePanel
from ..model.stages import (ERROR, PREFERRED, PYTHON, STAGE_HELP, TAB_LABELS, WELCOME, StageData, StageProblem,
                            failure_text, hash_problem, located_file, map_stages, next_block, python_text,
                            read_stage, stage_text)
from .status_line import StatusLine
from ..model.steps import line_stage_problem, timeline_problem
from ..screens.timeline import TimelineScreen

class SnapshotView(Vertical):
    """The reader: stage tabs, the code, the Python source (split), the resource panel and a status line."""

    BINDINGS = [
        Binding("left_square_bracket", "stage(-1)", "Stage", key_display="["),
        Binding("right_square_bracket", "stage(1)", "Stage", key_display="]", show=False),
        Binding("slash", "find", "Search", key_display="/"),
        Binding("n", "next_match(True)", "Next", show=False),
        Binding("N", "next_match(False)", "Prev", show=False),
        Binding("colon,ctrl+g", "go_to_line", "Line", key_display=":"),
        Binding("f", "landmark('function', True)", "Func"),
        Binding("F", "landmark('function', False)", "Prev func", show=False),
        Binding("o", "landmark('loop', True)", "Loop"),
        Binding("O", "landmark('loop', False)", "Prev loop", show=False),
        Binding("v", "toggle_split", "Split"),
        Binding("r", "toggle_panel", "Panel", show=False),
        Binding("p", "passes", "Passes"),
        Binding("P", "pass_of_line", "Pass of line", show=False),
    ] + [Binding(str(k), f"stage_number({k})", f"stage {k}", show=False) for k in range(1, 10)]

    @dataclass
    class Analysed(Message):
        """A snapshot's counters, occupancy and launchability are ready (analysed in a worker)."""

        snapshot: Snapshot
        facts: Facts
        problem: str | None = None

    @dataclass
    class LinesMapped(Message):
        """The line maps of a snapshot's stages are ready (parsed in a worker)."""

        snapshot: Snapshot
        data: dict
        kernel_file: str | None
        problems: dict

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.snapshot: Snapshot | None = None
        self.facts: Facts | None = None
        self.stages: list[str] = []
        self.data: dict[str, StageData] = {}
        self.stage: str | None = None
        self.last_ir_stage: str = "ttgir"
        # The kernel file's name as the snapshot spells it: only matched against debug locations, never
        # opened (the Python tab reads source.py inside the snapshot, or `trusted`).
        self.source_file: str | None = None
        self.trusted: Path | None = None  # a kernel file the user named in this session (compile form)
        self.problems: dict[str, str] = {}  # stage -> why it cannot be shown
        self.source_line: int | None = None  # 1-based line of the kernel's Python file
        self.split = False
        self.panel = True
        self._first_open = True
        self._tabs: Tabs | None = None
        self._tabs_made = 0

    def compose(self) -> ComposeResult:
        yield Tabs(id="stage-tabs-0", classes="stage-tabs")
        with Horizontal(id="reader"):
            yield CodeView(id="side-view", classes="-hidden")
            yield CodeView(id="main-view")
            yield ResourcePanel(id="panel")
        yield StatusLine(id="status")
        yield FindBar(id="find-bar")

    def on_mount(self) -> None:
        self.main.show(Document(WELCOME, ""))
        self.query_one(ResourcePanel).show(None, None)

    @property
    def main(self) -> CodeView:
        return self.query_one("#main-view", CodeView)

    @property
    def side(self) -> CodeView:
        return self.query_one("#side-view", CodeView)

    @property
    def theme_name(self) -> str:
        return DARK_THEME if self.app.current_theme.dark else LIGHT_THEME

    # -- opening a snapshot -------------------------------------------------------------------------------

    def open(self, snapshot: Snapshot, facts: Facts | None = None, trusted: Path | None = None) -> None:
        """Show a snapshot: the same stage as before where it has one, line maps parsed in the background.

        `trusted` is the kernel file the user named for this snapshot in this session, if any: the only
        Python file outside the snapshot folder the reader may show.
        """
        self.snapshot = snapshot
        self.trusted = trusted
        self.problems = {}
        # Resources are in the snapshot's metadata; counters need the stages read, so they come later.
        try:
            self.facts = facts or Facts(resources=snapshot.resources)
        except DAMAGE as e:
            self.facts = Facts(resources=Resources())
            self._warn(f"{snapshot.path}: cannot read its resources: {e}")
        if facts is None:
            self.analyse(snapshot)
        if self._first_open:
            # Wide terminals start with the Python source beside the stage; the reader's `v` decides after.
            self._first_open = False
            self.split = self.app.size.width >= 150 and self._python_text(snapshot) is not None
        self.side.set_class(not self.split, "-hidden")  # (a damaged folder shown last hid it)
        self.data = {}
        self.source_line = None
        recorded = snapshot.meta.get("source_file")
        self.source_file = (recorded if isinstance(recorded, str) else None) or located_file(snapshot)
        self.stages = ([ERROR] if not snapshot.ok else []) + \
            ([PYTHON] if self._python_text(snapshot) is not None else []) + list(snapshot.text_stages)
        self.query_one(ResourcePanel).show(snapshot, self.facts)
        wanted = self.stage if self.stage in self.stages and snapshot.ok else \
            next((s for s in PREFERRED if s in self.stages), None)
        self._replace_tabs(wanted)
        if wanted is None:
            self.main.show(Document(failure_text(snapshot), ""))
            self._status()
            return
        self.show_stage(wanted)
        if self.split:
            self._show_side()
        # Parse after the first paint: the parse holds the GIL for a while on a 100k-line stage.
        self.call_after_refresh(self.map_lines, snapshot)

    def show_damaged(self, label: str, reason: str) -> None:
        """A folder that cannot be shown: one `✗ damaged` tab saying why, nothing of it read."""
        self.snapshot, self.facts, self.data, self.problems = None, None, {}, {}
        self.stages, self.stage, self.source_line = [], None, None
        self._replace_tabs(None, damaged=True)
        self.main.stage = ""
        self.main.show(Document(f"{label}: this folder cannot be shown\n\n{reason}\n\n"
                                "Recompile it (irscope compile), or choose another snapshot in the tree.", ""))
        self.side.set_class(True, "-hidden")
        self.query_one(ResourcePanel).show(None, None)
        status = self.query_one("#status", StatusLine)
        status.show(Text.assemble((" damaged ", "bold reverse red"), f"  {reason}"))

    def _replace_tabs(self, active: str | None, damaged: bool = False) -> None:
        # A new Tabs created with its active tab, rather than cleared and refilled: refilling activates the
        # first tab on its own, and that late activation would switch the stage under the reader.
        self._tabs_made += 1
        shown = [Tab("✗ damaged", id="tab-damaged")] if damaged else \
            [Tab(f"{i + 1} {TAB_LABELS.get(stage, stage)}", id=f"tab-{stage}")
             for i, stage in enumerate(self.stages)]
        chosen = "tab-damaged" if damaged else f"tab-{active}" if active else None
        tabs = Tabs(*shown, active=chosen, id=f"stage-tabs-{self._tabs_made}", classes="stage-tabs")
        old = self.tabs
        self.mount(tabs, before=old)
        old.remove()
        self._tabs = tabs

    @property
    def tabs(self) -> Tabs:
        return self._tabs if self._tabs is not None else self.query_one(".stage-tabs", Tabs)

    def _python_text(self, snapshot: Snapshot) -> str | None:
        return python_text(snapshot, self.trusted if snapshot is self.snapshot else None)

    def _document(self, stage: str) -> StageData:
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
                        self._stage_problem(stage, changed)
                except StageProblem as e:
                    self._stage_problem(stage, e.message)
                    text = f"✗ cannot show {stage}: {e.message}"
                    data = self.data[stage] = StageData(Document(text, "", theme=self.theme_name))
                    return data
            data = self.data[stage] = StageData(Document(text, stage, theme=self.theme_name))
        return data

    def _stage_problem(self, stage: str, message: str) -> None:
        """A damaged stage (a missing file, a hash mismatch): a warning naming it, once per snapshot."""
        if stage not in self.problems:
            self.problems[stage] = message
            self._warn(message)

    def _warn(self, message: str) -> None:
        self.app.notify(message, title="damaged snapshot", severity="warning", timeout=10)

    @work(thread=True, exclusive=True, group="analysis")
    def analyse(self, snapshot: Snapshot) -> None:
        try:
            self.post_message(self.Analysed(snapshot, facts_of(snapshot)))
        except DAMAGE as e:  # a damaged stage met by the analysis: keep the metadata's numbers, say why
            message = getattr(e, "message", None) or f"{type(e).__name__}: {e}"
            self.post_message(self.Analysed(snapshot, Facts(resources=Resources()), message))

    def on_snapshot_view_analysed(self, event: Analysed) -> None:
        if event.snapshot is self.snapshot:
            if event.problem is not None:
                self._warn(f"cannot analyse {event.snapshot.label}: {event.problem}")
                return
            self.facts = event.facts
            self.query_one(ResourcePanel).show(event.snapshot, event.facts)

    @work(thread=True, exclusive=True, group="line-maps")
    def map_lines(self, snapshot: Snapshot) -> None:
        """Read every stage, parse its debug locations and find its functions and loops."""
        mine = self.snapshot is snapshot
        out, kfile, problems = map_stages(snapshot, self.trusted if mine else None,
                                          self.source_file if mine else None, self.theme_name,
                                          dict(self.data) if mine else {})
        self.post_message(self.LinesMapped(snapshot, out, kfile, problems))

    def on_snapshot_view_lines_mapped(self, event: LinesMapped) -> None:
        if event.snapshot is not self.snapshot:
            return
        for stage, message in event.problems.items():
            self._stage_problem(stage, message)
        for stage, data in event.data.items():
            current = self.data.get(stage)
            if current is not None:
                current.map, current.landmarks = data.map, data.landmarks
            else:
                self.data[stage] = data
        self.source_file = event.kernel_file or self.source_file
        self._remark()
        self._status()
        # The snapshot's documents, line maps and the widgets are long-lived: move them out of the cyclic
        # garbage collector's reach, so that its full collections (50 ms and more with a big stage open)
        # stop landing in the middle of a keystroke. Refcounting still frees them when they go.
        gc.freeze()

    # -- stages -----------------------------------------------------------------------------------------

    def show_stage(self, stage: str, line: int | None = None) -> None:
        if stage not in self.stages:
            return
        if stage != PYTHON:
            self.last_ir_stage = stage
        previous = self.stage
        self.stage = stage
        tabs = self.tabs
        if tabs.is_mounted and tabs.active != f"tab-{stage}" and tabs.query(f"#tab-{stage}"):
            tabs.active = f"tab-{stage}"
        data = self._document(stage)
        cursor = line if line is not None else self._first_mark(stage)
        if previous != stage or self.main.document is not data.document:
            self.main.show(data.document, cursor or 0)
        elif cursor is not None:
            self.main.go_to(cursor)
        self.main.stage = stage
        self._remark()
        self._status()
        if self.split and stage == PYTHON:
            self.action_toggle_split()

    def on_tabs_tab_activated(self, event: Tabs.TabActivated) -> None:
        event.stop()
        if event.tabs is not self.tabs or event.tab is None or event.tab.id is None:
            return
        stage = event.tab.id.removeprefix("tab-")
        if stage != self.stage:
            self.show_stage(stage)

    def action_stage(self, delta: int) -> None:
        if self.stages and self.stage in self.stages:
            self.show_stage(self.stages[(self.stages.index(self.stage) + delta) % len(self.stages)])

    def action_stage_number(self, number: int) -> None:
        if 0 < number <= len(self.stages):
            self.show_stage(self.stages[number - 1])

    # -- split and panel --------------------------------------------------------------------------------

    def action_toggle_split(self) -> None:
        if PYTHON not in self.stages:
            self.app.notify("this snapshot keeps no Python source", severity="warning")
            return
        self.split = not self.split
        self.side.set_class(not self.split, "-hidden")
        if self.split:
            if self.stage == PYTHON:
                self.show_stage(self.last_ir_stage if self.last_ir_stage in self.stages else self.stages[-1])
            self._show_side()
        self._status()

    def _show_side(self) -> None:
        data = self._document(PYTHON)
        self.side.stage = PYTHON
        self.side.show(data.document, (self.source_line or 1) - 1)
        self._remark()

    def action_toggle_panel(self) -> None:
        panel = self.query_one(ResourcePanel)
        self.panel = not panel.display  # narrow screens hide it by default (CSS), so ask what is shown
        panel.set_class(not self.panel, "-hidden")
        panel.set_class(self.panel, "-shown")

    # -- mapping between source and IR -----------------------------------------------------------------

    def on_code_view_cursor_moved(self, event: CodeView.CursorMoved) -> None:
        event.stop()
        stage = event.view.stage or None
        if stage == PYTHON:
            self.source_line = event.line + 1
        elif stage is not None and event.view is self.main:
            loc = self._loc(stage, event.line)
            self.source_line = loc.line if loc is not None else None
            if loc is not None and self.split and self.side.cursor != loc.line - 1:
                self.side.go_to(loc.line - 1)
        self._remark()
        self._status()

    def on_code_view_line_chosen(self, event: CodeView.LineChosen) -> None:
        event.stop()
        stage = event.view.stage or None
        if stage == PYTHON:
            self.source_line = event.line + 1
            target = self.stage if event.view is self.side and self.stage != PYTHON else self.last_ir_stage
            lines = self._lines_for(target)
            if not lines:
                self.app.notify(f"line {self.source_line} left no trace in {target}", severity="warning")
                return
            here = self.main.cursor if self.stage == target else -1
            nxt = next_block(lines, here)
            if self.stage != target:
                self.show_stage(target, nxt)
            else:
                self.main.go_to(nxt)
            self.main.focus()
            return
        loc = self._loc(stage, event.line) if stage else None
        if loc is None:
            self.app.notify("this line has no source location", severity="warning")
            return
        if self.split:
            self.side.go_to(loc.line - 1)
            self.side.focus()
        elif PYTHON in self.stages:
            self.show_stage(PYTHON, loc.line - 1)
            self.main.focus()

    def _loc(self, stage: str, line: int) -> SourceLoc | None:
        data = self.data.get(stage)
        if data is None or data.map is None or self.source_file is None:
            return None
        return data.map.source_of(line, self.source_file)

    def _lines_for(self, stage: str) -> list[int]:
        data = self.data.get(stage)
        if self.source_line is None or data is None or data.map is None or self.source_file is None:
            return []
        return data.map.lines_for(self.source_line, self.source_file)

    def _first_mark(self, stage: str) -> int | None:
        if stage == PYTHON:
            return self.source_line - 1 if self.source_line else None
        lines = self._lines_for(stage)
        return lines[0] if lines else None

    def _remark(self) -> None:
        if self.stage is None:
            return
        py_marks = [self.source_line - 1] if self.source_line else []
        self.main.mark(py_marks if self.stage == PYTHON else self._lines_for(self.stage))
        if self.split:
            self.side.mark(py_marks)

    # -- search, lines, landmarks -------------------------------------------------------------------------

    def action_find(self) -> None:
        self.query_one(FindBar).open("search", self.main.query_text)

    def action_go_to_line(self) -> None:
        self.query_one(FindBar).open("line")

    def on_find_bar_search_submitted(self, event: FindBar.SearchSubmitted) -> None:
        event.stop()
        count = self.main.search(event.query)
        self.main.focus()
        if event.query and not count:
            self.app.notify(f"'{event.query}' is not in {self.stage}", severity="warning")
        elif count:
            self.main.next_match(True)
        self._status()

    def on_find_bar_line_requested(self, event: FindBar.LineRequested) -> None:
        event.stop()
        self.main.go_to(event.line - 1)
        self.main.focus()

    def on_find_bar_closed(self, event: FindBar.Closed) -> None:
        event.stop()
        self.main.focus()

    def action_next_match(self, forward: bool) -> None:
        if not self.main.query_text:
            self.action_find()
            return
        if self.main.next_match(forward) is None:
            self.app.notify(f"'{self.main.query_text}' is not in {self.stage}", severity="warning")
        self._status()

    def action_landmark(self, kind: str, forward: bool) -> None:
        if self.stage is None:
            return
        data = self._document(self.stage)
        if data.landmarks is None:
            data.landmarks = outline(self.stage, "\n".join(data.document.lines))
        lines = [m.line for m in data.landmarks if m.kind == kind]
        here = self.main.cursor
        candidates = [ln for ln in lines if ln > here] if forward else [ln for ln in lines if ln < here][::-1]
        if not candidates:
            if not lines:
                self.app.notify(f"no {kind}s found in {self.stage}", severity="warning")
                return
            candidates = lines if forward else lines[::-1]  # wrap around
        self.main.go_to(candidates[0])

    # -- the pass timeline ------------------------------------------------------------------------------

    def action_passes(self) -> None:
        """The pass timeline, opened at the passes of the stage being read."""
        self._open_timeline(for_line=False)

    def action_pass_of_line(self) -> None:
        """The pass timeline, at the pass that introduced the IR line under the cursor."""
        self._open_timeline(for_line=True)

    def _open_timeline(self, for_line: bool) -> None:
        if self.snapshot is None:
            self.app.notify("open a snapshot first (Enter in the tree)", severity="warning")
            return
        problem = timeline_problem(self.snapshot)
        if problem is not None:
            self.app.notify(f"{problem.message}\n{problem.hint}", severity="warning", timeout=10)
            return
        line = None
        if for_line:
            reason = line_stage_problem(self.stage or "this tab")
            if reason is None and not len(self.main.document):
                reason = f"{self.stage} is empty"
            if reason is not None:
                self.app.notify(reason, severity="warning")
                return
            line = self.main.document.lines[self.main.cursor]
        self.app.push_screen(TimelineScreen(self.snapshot, stage=self.stage, line=line))

    # -- status -----------------------------------------------------------------------------------------

    def _status(self) -> None:
        status = self.query_one("#status", StatusLine)
        if self.snapshot is None or self.stage is None:
            status.show(Text())
            return
        text = Text()
        text.append(f" {self.stage} ", style="bold reverse")
        text.append(f" {self.main.cursor + 1}/{len(self.main.document)}")
        if self.stage in STAGE_HELP:
            text.append(f"  {STAGE_HELP[self.stage]}", style="dim")
        if self.stage in self.problems:
            text.append(f"  ✗ damaged: {self.problems[self.stage]}", style="bold red")
        if self.main.query_text:
            k = self.main.match_index
            where = f"{k}/{len(self.main.matches)}" if k else f"{len(self.main.matches)} lines"
            text.append(f"  /{self.main.query_text}: {where}", style="yellow")
        if self.stage != PYTHON and self.data.get(self.stage) and self.data[self.stage].map is not None:
            full = self.data[self.stage].map.source_of(self.main.cursor)  # type: ignore[union-attr]
            if full is None:
                text.append("  no source location", style="dim")
            elif self.source_file and not same_file(full.file, self.source_file):
                text.append(f"  via {base_name(full.file)}:{full.line}", style="dim")
        if self.source_line is not None:
            name = base_name(self.source_file or "source")
            text.append(f"  {name}:{self.source_line}", style="bold")
            counts = []
            for stage in self.stages:
                if stage != PYTHON:
                    n = len(self._lines_for(stage))
                    counts.append(f"{stage} {n}")
            if counts:
                text.append("  → " + " · ".join(counts), style="dim")
        elif self.stage != PYTHON and self.data.get(self.stage) and self.data[self.stage].map is None:
            text.append("  reading debug locations…", style="dim")
        status.show(text)
