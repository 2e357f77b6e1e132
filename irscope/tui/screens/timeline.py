"""TimelineScreen: a snapshot's pass timeline. The steps in pipeline order on the left; on the right the
chosen step's diff (side by side or unified) or the IR after it; the pass where a pattern first appears
(`/`) and the pass that introduced a line (`P`, or Enter on a line of the IR)."""
from __future__ import annotations

from collections import OrderedDict
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
from ...passes import Blame, Step, Timeline, find_pattern, load_timeline
from ...store.snapshot import Snapshot
from ..model.entries import DAMAGE
from ..widgets.code_view import CodeView
from ..model.document import DARK_THEME, LIGHT_THEME, Document
from ..widgets.find_bar import FindBar
from ..widgets.key_footer import KeyFooter
from ..widgets.pass_diff_view import PassDiffView
from ..widgets.status_line import StatusLine
from ..widgets.step_list import StepList
from ..widgets.step_text import blame_note, step_heading, timeline_title
from ..model.steps import (Origin, StepDiff, first_of_stage, is_changing, line_rows, matching_lines, origin_of,
                           pattern_rows, stage_step, step_diff, step_ir)

KEEP_RENDERED = 48  # steps' diffs and IRs kept for stepping back and forth


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

    @dataclass
    class StepRendered(Message):
        """A step's diff (or the IR after it) is ready to show (normalised and aligned in a worker)."""

        key: tuple
        diff: StepDiff | None
        ir: Document | None

    @dataclass
    class PatternFound(Message):
        """Where a pattern appears and disappears along the timeline, or why it could not be searched."""

        pattern: str
        blame: Blame | None
        error: IrscopeError | None

    @dataclass
    class OriginFound(Message):
        """The step that introduced a line (or why none did)."""

        origin: Origin

    def __init__(self, snapshot: Snapshot, stage: str | None = None, line: str | None = None):
        super().__init__()
        self.snapshot = snapshot
        self.stage = stage  # the reader's stage: the timeline opens at its passes
        self.line = line  # a line of that stage whose pass to find, if the reader asked for one
        self.timeline: Timeline | None = None
        self.current: Step | None = None
        self.view = "diff"  # or "ir": the IR after the step
        self.pattern = ""
        self.note = Text()  # the last search's or jump's answer, on the line above the status
        self._rendered: OrderedDict[tuple, StepRendered] = OrderedDict()
        self._wanted: tuple = ()
        self._point: tuple[int, str, str] | None = None  # (step, "line" | "pattern", text) to single out

    def compose(self) -> ComposeResult:
        with Vertical(id="timeline"):
            yield Static(id="timeline-title")
            with Horizontal(id="timeline-body"):
                yield StepList(id="step-list")
                with Vertical(id="step-pane"):
                    yield Static(id="step-title")
                    yield PassDiffView(id="step-diff")
                    yield CodeView(id="step-ir", classes="-hidden")
            yield StatusLine(id="timeline-note", classes="-hidden")
            yield StatusLine(id="timeline-status")
            yield FindBar(id="timeline-find")
        yield KeyFooter()

    @property
    def step_list(self) -> StepList:
        return self.query_one(StepList)

    @property
    def diff_view(self) -> PassDiffView:
        return self.query_one(PassDiffView)

    @property
    def ir_view(self) -> CodeView:
        return self.query_one("#step-ir", CodeView)

    @property
    def theme_name(self) -> str:
        return DARK_THEME if self.app.current_theme.dark else LIGHT_THEME

    # -- loading ----------------------------------------------------------------------------------------

    def on_mount(self) -> None:
        self.diff_view.mode = "unified"  # as `irscope passes --diff` prints it; `u` for side by side
        self.set_class(self.app.size.width < 100, "-narrow")
        self.query_one("#timeline-title", Static).update(Text(f" reading the pass timeline of {self.snapshot.label}…"))
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
            self.query_one("#timeline-title", Static).update(Text(f" {event.error.message}", style="bold red"))
            self._say(Text(event.error.hint or "", style="yellow"))
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
                self.app.notify(reason, severity="warning", timeout=8)
                self._say(Text(reason, style="yellow"))
        if anchor is not None:
            self.show_step(anchor)
            self._say(Text("finding the pass that introduced the line…", style="dim"))
            self.find_origin(tl, anchor, self.line or "")
        else:
            self.show_step(first_of_stage(tl, self.stage) or tl.steps[0])

    def _title(self) -> None:
        assert self.timeline is not None
        listed = len(self.step_list.shown) if self.step_list.changed_only else None
        self.query_one("#timeline-title", Static).update(timeline_title(self.timeline, self.snapshot.label, listed))

    # -- showing a step ---------------------------------------------------------------------------------

    def show_step(self, step: Step, point: tuple[str, str] | None = None) -> None:
        """Show what `step` did; `point` = ("line" | "pattern", text) singles out the rows about it."""
        if self.step_list.changed_only and not is_changing(step):
            self.step_list.set_changed_only(False)
            self._title()
        self.current = step
        self._point = (step.n, *point) if point else None
        self.step_list.select(step.n, quiet=True)
        self._step_title(None)
        self._request_step()

    def _request_step(self) -> None:
        if self.current is None or self.timeline is None:
            return
        key = (self.current.n, self.view, self.theme_name)
        self._wanted = key
        if key in self._rendered:
            self._rendered.move_to_end(key)
            self._apply(self._rendered[key])
            return
        self._status("reading…")
        self.render_step(key, self.timeline, self.current, self.view)

    @work(thread=True, exclusive=True, group="timeline-render")
    def render_step(self, key: tuple, tl: Timeline, step: Step, view: str) -> None:
        theme = key[2]
        if view == "diff":
            self.post_message(self.StepRendered(key, step_diff(tl, step, theme), None))
        else:
            self.post_message(self.StepRendered(key, None, step_ir(tl, step, theme)))

    def on_timeline_screen_step_rendered(self, event: StepRendered) -> None:
        self._rendered[event.key] = event
        while len(self._rendered) > KEEP_RENDERED:
            self._rendered.popitem(last=False)
        if event.key == self._wanted:
            self._apply(event)

    def _apply(self, rendered: StepRendered) -> None:
        point = self._point if self._point and self.current and self._point[0] == self.current.n else None
        diff_view, ir_view = self.diff_view, self.ir_view
        showing_diff = rendered.diff is not None
        focus_moves = self.focused in (diff_view, ir_view)
        diff_view.set_class(not showing_diff, "-hidden")
        ir_view.set_class(showing_diff, "-hidden")
        if rendered.diff is not None:
            d = rendered.diff
            diff_view.show(d.left, d.right, d.rows)
            rows = []
            if point is not None:
                find = line_rows if point[1] == "line" else pattern_rows
                rows = find(diff_view.rows, d.right, point[2])
            if rows:
                diff_view.point_at(rows[0])
            else:
                diff_view.first_change()
            self._step_title(d.note)
            if focus_moves:
                diff_view.focus()
        elif rendered.ir is not None:
            doc = rendered.ir
            line = min(ir_view.cursor, max(0, len(doc) - 1))  # the same line number as the last step's
            marks = matching_lines(doc.lines, self._form(), point[1], point[2]) if point is not None else []
            line = marks[0] if marks else line
            ir_view.stage = doc.stage
            ir_view.show(doc, line)
            ir_view.call_after_refresh(ir_view.go_to, line)  # once unhidden, it has a height to centre in
            ir_view.mark(marks)
            self._step_title("the IR after the pass, as printed (Enter or P on a line: the pass that introduced it)")
            if focus_moves:
                ir_view.focus()
        self._status()

    def _form(self) -> str:
        step, tl = self.current, self.timeline
        return tl.irs[step.after].form if tl is not None and step is not None and step.after is not None else "mlir"

    def _step_title(self, note: str | None) -> None:
        if self.current is not None and self.timeline is not None:
            self.query_one("#step-title", Static).update(step_heading(self.timeline, self.current, note or ""))

    def _status(self, busy: str = "") -> None:
        text = Text()
        text.append(" passes ", style="bold reverse")
        if self.current is not None:
            shown = self.step_list.shown
            k = next((i for i, s in enumerate(shown) if s.n == self.current.n), None)
            text.append(f" step {self.current.n}")
            text.append(f" ({k + 1 if k is not None else '-'}/{len(shown)} listed)", style="dim")
            if self.view == "diff":
                mode = "side by side" if self.diff_view.mode == "side" else "unified"
                text.append(f"  diff ({mode}, normalised): {len(self.diff_view.changes)} runs of changes", style="dim")
            else:
                text.append(f"  the IR after it, as printed: line {self.ir_view.cursor + 1}/{len(self.ir_view.document)}",
                            style="dim")
        if busy:
            text.append(f"  {busy}", style="dim")
        self.query_one("#timeline-status", StatusLine).show(text)

    def _say(self, note: Text) -> None:
        """The answer to the last search or jump, on its own line above the status."""
        self.note = note
        line = self.query_one("#timeline-note", StatusLine)
        line.set_class(not note.plain, "-hidden")
        line.show(Text(" ") + note)

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
            self.app.notify(f"no pass {'after' if delta > 0 else 'before'} #{self.current.n} changes the IR")
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
        self.view = "ir" if self.view == "diff" else "diff"
        if self.focused in (self.diff_view, self.ir_view):
            (self.ir_view if self.view == "ir" else self.diff_view).focus()
        self._request_step()

    def action_toggle_mode(self) -> None:
        view = self.diff_view
        view.mode = "unified" if view.mode == "side" else "side"
        if self.view != "diff":
            self.action_toggle_view()
        self._status()

    def action_hunk(self, forward: bool) -> None:
        if self.view != "diff":
            self.app.notify("n and N walk the diff's changes: press i for the diff")
            return
        if self.diff_view.next_change(forward) is None:
            self.app.notify("this pass changed nothing")

    def on_code_view_cursor_moved(self, event: CodeView.CursorMoved) -> None:
        event.stop()
        self._status()

    # -- searching: where a pattern first appears, which pass introduced a line ---------------------------

    def action_find(self) -> None:
        bar = self.query_one(FindBar)
        bar.open("search", self.pattern)
        bar.placeholder = "op name (ttg.async_copy_global_to_local) or regex: the pass where it first appears"

    def action_go_to_step(self) -> None:
        bar = self.query_one(FindBar)
        bar.open("line")
        bar.placeholder = "go to step number"

    def on_find_bar_search_submitted(self, event: FindBar.SearchSubmitted) -> None:
        event.stop()
        self.step_list.focus()
        if not event.query or self.timeline is None:
            return
        self.pattern = event.query
        self._say(Text(f"looking for {event.query} after every pass…", style="dim"))
        self.find(self.timeline, event.query)

    @work(thread=True, exclusive=True, group="timeline-find")
    def find(self, tl: Timeline, pattern: str) -> None:
        try:
            self.post_message(self.PatternFound(pattern, find_pattern(tl, pattern), None))
        except IrscopeError as e:
            self.post_message(self.PatternFound(pattern, None, e))

    def on_timeline_screen_pattern_found(self, event: PatternFound) -> None:
        if event.pattern != self.pattern:
            return
        if event.blame is None:
            assert event.error is not None
            self._say(Text(event.error.message, style="red"))
            self.app.notify(f"{event.error.message}\n{event.error.hint or ''}", severity="warning")
            return
        blame = event.blame
        self._say(blame_note(blame, len(self.timeline.steps) if self.timeline else 0))
        found = blame.first or blame.gone
        if found is not None:
            self.show_step(found.step, ("pattern", event.pattern))
        elif not blame.at_start:
            self.app.notify(self.note.plain, severity="warning")

    def on_find_bar_line_requested(self, event: FindBar.LineRequested) -> None:
        event.stop()
        self.step_list.focus()
        if self.timeline is None:
            return
        if 0 <= event.line < len(self.timeline.steps):
            self.show_step(self.timeline.steps[event.line])
        else:
            self.app.notify(f"no step {event.line}: steps are numbered 0 to {len(self.timeline.steps) - 1}",
                            severity="warning")

    def on_find_bar_closed(self, event: FindBar.Closed) -> None:
        event.stop()
        self.step_list.focus()

    def action_origin(self) -> None:
        if self.view != "ir":
            self.app.notify("P finds the pass that introduced a line of the IR: press i for the IR after this pass, "
                            "put the cursor on a line, then P (or Enter)")
            return
        self._origin_of_cursor()

    def on_code_view_line_chosen(self, event: CodeView.LineChosen) -> None:
        event.stop()
        self._origin_of_cursor()

    def _origin_of_cursor(self) -> None:
        doc, tl, step = self.ir_view.document, self.timeline, self.current
        if tl is None or step is None or not len(doc):
            return
        self._say(Text("finding the pass that introduced the line…", style="dim"))
        self.find_origin(tl, step, doc.lines[self.ir_view.cursor])

    @work(thread=True, exclusive=True, group="timeline-origin")
    def find_origin(self, tl: Timeline, anchor: Step, line: str) -> None:
        self.post_message(self.OriginFound(origin_of(tl, anchor, line)))

    def on_timeline_screen_origin_found(self, event: OriginFound) -> None:
        origin = event.origin
        if origin.step is None:
            self._say(Text(origin.message, style="yellow"))
            self.app.notify(origin.message, severity="warning")
            return
        self._say(Text(f"{origin.message}: {origin.line.strip()}", style="yellow"))
        self.show_step(origin.step, ("line", origin.line))
