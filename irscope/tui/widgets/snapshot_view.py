"""SnapshotView: one snapshot's stages as tabs, the kernel's Python source beside them, and its numbers.

Moving the cursor on a Python line marks the lines it became in every stage; moving it on an IR line
marks the Python line it came from (and the other lines of that stage from the same Python line).
Enter jumps across: from Python to the next block of IR lines, from IR to its Python line.

What is known about the open snapshot is a `Reading` (model/reading.py, no Textual); the numbers are
the `ResourcePanel`'s, the moves by content the `Navigator`'s, the tabs `StageTabs`.
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
from textual.widgets import Tabs

from ...store.snapshot import Snapshot
from ..model.document import DARK_THEME, LIGHT_THEME, Document
from ..model.facts import Facts
from ..model.reading import Cursor, Reading, status_text
from ..model.stages import PREFERRED, PYTHON, WELCOME, failure_text, map_stages, nothing_found, python_text
from ..model.steps import timeline_ask
from ..screens.timeline import TimelineScreen
from .code_view import CodeView
from .navigator import Navigator
from .resource_panel import ResourcePanel
from .source_link import SourceLink
from .stage_tabs import StageTabs
from .status_line import StatusLine


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
    class LinesMapped(Message):
        """The line maps of a snapshot's stages are ready (parsed in a worker)."""

        snapshot: Snapshot
        data: dict
        kernel_file: str | None
        problems: dict

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.reading = Reading()
        self.stage: str | None = None
        self.last_ir_stage: str = "ttgir"
        self.link = SourceLink(self)
        self.panel = True
        self._first_open = True
        self._tabs: Tabs | None = None
        self._tabs_made = 0

    def compose(self) -> ComposeResult:
        yield StageTabs(id="stage-tabs-0", classes="stage-tabs")
        with Horizontal(id="reader"):
            yield CodeView(id="side-view", classes="-hidden")
            yield CodeView(id="main-view")
            yield ResourcePanel(id="panel")
        yield StatusLine(id="status")
        yield Navigator(view=lambda: self.main, id="find-bar")

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
    def navigator(self) -> Navigator:
        return self.query_one(Navigator)

    @property
    def tabs(self) -> Tabs:
        return self._tabs if self._tabs is not None else self.query_one(".stage-tabs", Tabs)

    @property
    def theme_name(self) -> str:
        return DARK_THEME if self.app.current_theme.dark else LIGHT_THEME

    # The open snapshot's state, as the tests and the app read it.
    snapshot = property(lambda self: self.reading.snapshot)
    facts = property(lambda self: self.query_one(ResourcePanel).facts)
    stages = property(lambda self: self.reading.stages)
    data = property(lambda self: self.reading.data)
    problems = property(lambda self: self.reading.problems)
    source_file = property(lambda self: self.reading.source_file)
    source_line = property(lambda self: self.reading.source_line)

    # -- opening a snapshot -------------------------------------------------------------------------------

    def open(self, snapshot: Snapshot, facts: Facts | None = None, trusted: Path | None = None) -> None:
        """Show a snapshot: the same stage as before where it has one, line maps parsed in the background.

        `trusted` is the kernel file the user named for this snapshot in this session, if any: the only
        Python file outside the snapshot folder the reader may show.
        """
        panel = self.query_one(ResourcePanel)
        panel.open(snapshot, facts)
        if self._first_open:
            # Wide terminals start with the Python source beside the stage; the reader's `v` decides after.
            self._first_open = False
            self.link.split = self.app.size.width >= 150 and python_text(snapshot, trusted) is not None
        self.side.set_class(True, "-hidden")  # until a stage is shown: then it holds this snapshot's Python
        self.reading = Reading.of(snapshot, trusted, lambda: self.theme_name, self._warn)
        panel.show(snapshot, panel.facts)
        wanted = self.stage if self.stage in self.stages and snapshot.ok else \
            next((s for s in PREFERRED if s in self.stages), None)
        self._replace_tabs(wanted)
        if wanted is None:
            self.main.show(Document(failure_text(snapshot), ""))
            self._status()
            return
        self.show_stage(wanted)
        # Parse after the first paint: the parse holds the GIL for a while on a 100k-line stage.
        self.call_after_refresh(self.map_lines, snapshot)

    def show_nothing_found(self, roots: list[Path], out: Path) -> None:
        """No snapshot in any root: say how to compile one instead of pointing at the empty tree."""
        if self.snapshot is None:
            self.main.show(Document(nothing_found(roots, out), ""))

    def show_damaged(self, label: str, reason: str) -> None:
        """A folder that cannot be shown: one `✗ damaged` tab saying why, nothing of it read."""
        self.reading, self.stage = Reading(), None
        self._replace_tabs(None, damaged=True)
        self.main.stage = ""
        self.main.show(Document(f"{label}: this folder cannot be shown\n\n{reason}\n\n"
                                "Recompile it (irscope compile), or choose another snapshot in the tree.", ""))
        self.side.set_class(True, "-hidden")
        self.query_one(ResourcePanel).show(None, None)
        status = self.query_one("#status", StatusLine)
        status.show(Text.assemble((" damaged ", "bold reverse red"), f"  {reason}"))

    def _replace_tabs(self, active: str | None, damaged: bool = False) -> None:
        self._tabs_made += 1
        tabs = StageTabs.of(self.stages, active, self._tabs_made, damaged)
        old = self.tabs
        self.mount(tabs, before=old)
        old.remove()
        self._tabs = tabs

    def _warn(self, message: str) -> None:
        self.app.notify(message, title="damaged snapshot", severity="warning", timeout=10, markup=False)

    @work(thread=True, exclusive=True, group="line-maps")
    def map_lines(self, snapshot: Snapshot) -> None:
        """Read every stage, parse its debug locations and find its functions and loops."""
        mine = self.snapshot is snapshot
        out, kfile, problems = map_stages(snapshot, self.reading.trusted if mine else None,
                                          self.source_file if mine else None, self.theme_name,
                                          dict(self.data) if mine else {})
        self.post_message(self.LinesMapped(snapshot, out, kfile, problems))

    def on_snapshot_view_lines_mapped(self, event: LinesMapped) -> None:
        if event.snapshot is not self.snapshot:
            return
        self.reading.mapped(event.data, event.kernel_file, event.problems)
        self.link.remark()
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
        self.tabs.choose(stage)
        data = self.reading.document(stage)
        cursor = line if line is not None else self.reading.first_mark(stage)
        if previous != stage or self.main.document is not data.document:
            self.main.show(data.document, cursor or 0)
        elif cursor is not None:
            self.main.go_to(cursor)
        self.main.stage = stage
        self.link.place()
        self.link.remark()
        self._status()

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

    # -- split, panel, source and IR (the link's) --------------------------------------------------------

    @property
    def split(self) -> bool:
        return self.link.split

    def action_toggle_split(self) -> None:
        self.link.toggle_split()
        self._status()

    def action_toggle_panel(self) -> None:
        self.panel = self.query_one(ResourcePanel).toggle()

    def on_code_view_cursor_moved(self, event: CodeView.CursorMoved) -> None:
        event.stop()
        self.link.cursor_moved(event.view, event.line)
        self._status()

    def on_code_view_line_chosen(self, event: CodeView.LineChosen) -> None:
        event.stop()
        self.link.line_chosen(event.view, event.line)

    # -- search, lines, landmarks (the navigator's) -------------------------------------------------------

    def action_find(self) -> None:
        self.navigator.find()

    def action_go_to_line(self) -> None:
        self.navigator.go_to_line()

    def action_next_match(self, forward: bool) -> None:
        self.navigator.next_match(forward)
        self._status()

    def action_landmark(self, kind: str, forward: bool) -> None:
        if self.stage is not None:
            self.navigator.landmark(kind, self.reading.landmark_lines(self.stage, kind), forward)

    def on_navigator_searched(self, event: Navigator.Searched) -> None:
        event.stop()
        self._status()

    # -- the pass timeline ------------------------------------------------------------------------------

    def action_passes(self) -> None:
        """The pass timeline, opened at the passes of the stage being read."""
        self._open_timeline(for_line=False)

    def action_pass_of_line(self) -> None:
        """The pass timeline, at the pass that introduced the IR line under the cursor."""
        self._open_timeline(for_line=True)

    def _open_timeline(self, for_line: bool) -> None:
        main = self.main
        ask = timeline_ask(self.snapshot, self.stage, main.document.lines, main.cursor, for_line)
        if ask.problem is not None:
            self.app.notify(ask.problem, severity="warning", timeout=ask.timeout, markup=False)
            return
        self.app.push_screen(TimelineScreen(self.snapshot, stage=self.stage, line=ask.line))

    # -- status -----------------------------------------------------------------------------------------

    def _status(self) -> None:
        main = self.main
        cursor = Cursor(main.cursor, len(main.document), main.query_text, main.match_index, len(main.matches))
        self.query_one("#status", StatusLine).show(status_text(self.reading, self.stage, cursor))
