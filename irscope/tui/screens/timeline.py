"""TimelineScreen: a snapshot's pass timeline. The steps in pipeline order on the left; on the right the
chosen step's diff (side by side or unified) or the IR after it (`StepPane`); the pass where a pattern
first appears (`/`) and the pass that introduced a line (`P`, or Enter on a line of the IR), searched and
said by the `PassFinder`; the prompt is the reader's `Navigator`."""
from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Static

from ...errors import IrscopeError, SnapshotError
from ...passes import Step, Timeline, load_timeline
from ...store.snapshot import Snapshot
from ...render.controls import visible_controls
from ..model.controls import visible_text
from ..model.entries import DAMAGE
from ..model.steps import first_of_stage, is_changing, stage_step
from ..widgets.code_view import CodeView
from ..widgets.key_footer import KeyFooter
from ..widgets.navigator import Navigator
from ..widgets.pass_diff_view import PassDiffView
from ..widgets.pass_finder import PassFinder
from ..widgets.status_line import StatusLine
from ..widgets.step_list import StepList
from ..widgets.step_pane import StepPane
from ..widgets.step_text import timeline_status, timeline_title

FIND_HINT = "op name (ttg.async_copy_global_to_local) or regex: the pass where it first appears"


class TimelineScreen(Screen):
    """Step through the passes of one compile and see what each one did."""

    BINDINGS = [
        Binding("escape,q", "app.pop_screen", "Back"),
        Binding("right_square_bracket", "step(1)", "Next change", key_display="]"),
        Binding("left_square_bracket", "step(-1)", "Prev change", key_display="[", show=False),
        Binding("c", "toggle_changed", "Changed only"),
        Binding("i", "toggle_view", "IR/diff"),
        Binding("u", "toggle_mode", "Unified/side"),
        Binding("n", "hunk(True)", "Next hunk"),
        Binding("N", "hunk(False)", "Prev hunk", show=False),
        Binding("slash", "find", "First appears", key_display="/"),
        Binding("P", "origin", "Introduced by"),
        Binding("colon", "go_to_step", "Step", key_display=":", show=False),
    ]

    @dataclass
    class TimelineLoaded(Message):
        """The timeline was read (index and decompressed IRs), or could not be."""

        snapshot: Snapshot
        timeline: Timeline | None
        error: IrscopeError | None

    def __init__(self, snapshot: Snapshot, stage: str | None = None, line: str | None = None):
        super().__init__()
        self.snapshot = snapshot
        self.stage = stage  # the reader's stage: the timeline opens at its passes
        self.line = line  # a line of that stage whose pass to find, if the reader asked for one
        self.timeline: Timeline | None = None
        self.current: Step | None = None

    def compose(self) -> ComposeResult:
        with Vertical(id="timeline"):
            yield Static(id="timeline-title")
            with Horizontal(id="timeline-body"):
                yield StepList(id="step-list")
                yield StepPane(id="step-pane")
            yield PassFinder(id="timeline-note", classes="-hidden")
            yield StatusLine(id="timeline-status")
            yield Navigator(home=lambda: self.step_list, find_hint=FIND_HINT, line_hint="go to step number",
                            id="timeline-find")
        yield KeyFooter()

    @property
    def step_list(self) -> StepList:
        return self.query_one(StepList)

    @property
    def pane(self) -> StepPane:
        return self.query_one(StepPane)

    @property
    def finder(self) -> PassFinder:
        return self.query_one(PassFinder)

    @property
    def diff_view(self) -> PassDiffView:
        return self.pane.diff_view

    @property
    def ir_view(self) -> CodeView:
        return self.pane.ir_view

    @property
    def view(self) -> str:
        return self.pane.view

    @property
    def note(self) -> Text:
        return self.finder.note

    # -- loading ----------------------------------------------------------------------------------------

    def on_mount(self) -> None:
        self.diff_view.mode = "unified"  # as `irscope passes --diff` prints it; `u` for side by side
        self.set_class(self.app.size.width < 100, "-narrow")
        # (the label is the snapshot's: an escape sequence in its kernel name reached the terminal from here)
        self.query_one("#timeline-title", Static).update(
            Text(visible_controls(f" reading the pass timeline of {self.snapshot.label}…")))
        self.step_list.focus()
        self.load(self.snapshot)

    @work(thread=True, exclusive=True, group="timeline-load")
    def load(self, snapshot: Snapshot) -> None:
        try:
            tl = load_timeline(snapshot)
            if tl.irs:
                tl.comparable(tl.initial if tl.initial is not None else 0)  # decompress before the first step
        except IrscopeError as e:
            self.post_message(self.TimelineLoaded(snapshot, None, e))
            return
        except DAMAGE as e:  # a damaged passes/ folder: said on the screen, not a crash
            self.post_message(self.TimelineLoaded(snapshot, None, SnapshotError(
                f"{snapshot.path}'s pass timeline is damaged: {type(e).__name__}: {e}",
                "recompile it with irscope compile --passes")))
            return
        self.post_message(self.TimelineLoaded(snapshot, tl, None))

    def on_timeline_screen_timeline_loaded(self, event: TimelineLoaded) -> None:
        if event.timeline is None:
            assert event.error is not None
            self.query_one("#timeline-title", Static).update(visible_text(Text(f" {event.error.message}", style="bold red")))
            self.finder.say(visible_text(Text(event.error.hint or "", style="yellow")))
            return
        tl = self.timeline = event.timeline
        self._title()
        self.step_list.set_steps(tl.steps)
        if not tl.steps:
            self.query_one("#step-title", Static).update(Text(" no pass ran: the compile stopped before its first"))
            return
        anchor = None
        if self.line is not None and self.stage is not None:
            anchor, reason = stage_step(tl, self.stage)
            if anchor is None:
                self.app.notify(reason, severity="warning", timeout=8, markup=False)
                self.finder.say(Text(reason, style="yellow"))
        if anchor is not None:
            self.show_step(anchor)
            self.finder.find_origin(tl, anchor, self.line or "")
        else:
            self.show_step(first_of_stage(tl, self.stage) or tl.steps[0])

    def _title(self) -> None:
        assert self.timeline is not None
        listed = len(self.step_list.shown) if self.step_list.changed_only else None
        self.query_one("#timeline-title", Static).update(timeline_title(self.timeline, self.snapshot.label, listed))

    # -- showing a step ---------------------------------------------------------------------------------

    def show_step(self, step: Step, point: tuple[str, str] | None = None) -> None:
        """Show what `step` did; `point` = ("line" | "pattern", text) singles out the rows about it."""
        if self.timeline is None:
            return
        if self.step_list.changed_only and not is_changing(step):
            self.step_list.set_changed_only(False)
            self._title()
        self.current = step
        self.step_list.select(step.n, quiet=True)
        self.pane.show(self.timeline, step, point)

    def on_step_pane_step_shown(self, event: StepPane.StepShown) -> None:
        event.stop()
        self._status(event.busy)

    def on_pass_finder_step_found(self, event: PassFinder.StepFound) -> None:
        event.stop()
        self.show_step(event.step, event.point)

    def _status(self, busy: str = "") -> None:
        shown = self.step_list.shown
        k = next((i for i, s in enumerate(shown) if s.n == self.current.n), None) if self.current else None
        diff, ir = self.diff_view, self.ir_view
        self.query_one("#timeline-status", StatusLine).show(timeline_status(
            self.current, k, len(shown), self.view, diff.mode, len(diff.changes), ir.cursor, len(ir.document), busy))

    # -- moving -----------------------------------------------------------------------------------------

    def on_step_list_step_highlighted(self, event: StepList.StepHighlighted) -> None:
        event.stop()
        if self.current is None or event.step.n != self.current.n:
            self.show_step(event.step)

    def action_step(self, delta: int) -> None:
        """The next (previous) step that changed the IR."""
        if self.timeline is None or self.current is None:
            return
        steps = self.timeline.steps
        order = steps[self.current.n + 1:] if delta > 0 else steps[:self.current.n][::-1]
        nxt = next((s for s in order if is_changing(s)), None)
        if nxt is None:
            self.app.notify(f"no pass {'after' if delta > 0 else 'before'} #{self.current.n} changes the IR",
                            markup=False)
            return
        self.show_step(nxt)

    def action_toggle_changed(self) -> None:
        if self.timeline is None:
            return
        self.step_list.set_changed_only(not self.step_list.changed_only)
        self._title()
        now = self.step_list.current
        if now is not None and (self.current is None or now.n != self.current.n):
            self.show_step(now)
        else:
            self._status()

    def action_toggle_view(self) -> None:
        self.pane.toggle_view()

    def action_toggle_mode(self) -> None:
        view = self.diff_view
        view.mode = "unified" if view.mode == "side" else "side"
        if self.view != "diff":
            self.action_toggle_view()
        self._status()

    def action_hunk(self, forward: bool) -> None:
        if self.view != "diff":
            self.app.notify("n and N walk the diff's changes: press i for the diff", markup=False)
            return
        if self.diff_view.next_change(forward) is None:
            self.app.notify("this pass changed nothing", markup=False)

    def on_code_view_cursor_moved(self, event: CodeView.CursorMoved) -> None:
        event.stop()
        self._status()

    # -- searching (the navigator asks, the finder searches) ------------------------------------------------

    def action_find(self) -> None:
        self.query_one(Navigator).find(self.finder.pattern)

    def action_go_to_step(self) -> None:
        self.query_one(Navigator).go_to_line()

    def on_navigator_searched(self, event: Navigator.Searched) -> None:
        event.stop()
        if event.query and self.timeline is not None:
            self.finder.find(self.timeline, event.query)

    def on_navigator_line_entered(self, event: Navigator.LineEntered) -> None:
        event.stop()
        if self.timeline is None:
            return
        if 0 <= event.line < len(self.timeline.steps):
            self.show_step(self.timeline.steps[event.line])
        else:
            self.app.notify(f"no step {event.line}: steps are numbered 0 to {len(self.timeline.steps) - 1}",
                            severity="warning", markup=False)

    def on_navigator_dismissed(self, event: Navigator.Dismissed) -> None:
        event.stop()

    def action_origin(self) -> None:
        if self.view != "ir":
            self.app.notify("P finds the pass that introduced a line of the IR: press i for the IR after this pass, "
                            "put the cursor on a line, then P (or Enter)", markup=False)
            return
        self._origin_of_cursor()

    def on_code_view_line_chosen(self, event: CodeView.LineChosen) -> None:
        event.stop()
        self._origin_of_cursor()

    def _origin_of_cursor(self) -> None:
        doc, tl, step = self.ir_view.document, self.timeline, self.current
        if tl is None or step is None or not len(doc):
            return
        self.finder.find_origin(tl, step, doc.lines[self.ir_view.cursor])
