"""StepPane: the right side of the pass timeline, what one step did: its heading, then its diff (side by
side or unified) or the IR after it. Diffs and IRs are normalised and aligned in a worker and kept for
stepping back and forth."""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

from textual import work
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import Static

from ...passes import Step, Timeline
from ..model.document import DARK_THEME, LIGHT_THEME, Document
from ..model.steps import StepDiff, line_rows, matching_lines, pattern_rows, step_diff, step_ir
from .code_view import CodeView
from .pass_diff_view import PassDiffView
from .step_text import step_heading

KEEP_RENDERED = 48  # steps' diffs and IRs kept for stepping back and forth


class StepPane(Vertical):
    """One step shown as a diff (`view` "diff") or as the IR after it ("ir"), a line or pattern singled out."""

    @dataclass
    class StepRendered(Message):
        """A step's diff (or the IR after it) is ready to show (normalised and aligned in a worker)."""

        key: tuple
        diff: StepDiff | None
        ir: Document | None

    @dataclass
    class StepShown(Message):
        """The pane changed what it shows; `busy` says what it is still reading, if anything."""

        busy: str = ""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.view = "diff"  # or "ir": the IR after the step
        self.timeline: Timeline | None = None
        self.current: Step | None = None
        self._rendered: OrderedDict[tuple, StepPane.StepRendered] = OrderedDict()
        self._wanted: tuple = ()
        self._point: tuple[int, str, str] | None = None  # (step, "line" | "pattern", text) to single out

    def compose(self) -> ComposeResult:
        yield Static(id="step-title")
        yield PassDiffView(id="step-diff")
        yield CodeView(id="step-ir", classes="-hidden")

    @property
    def diff_view(self) -> PassDiffView:
        return self.query_one(PassDiffView)

    @property
    def ir_view(self) -> CodeView:
        return self.query_one("#step-ir", CodeView)

    @property
    def theme_name(self) -> str:
        return DARK_THEME if self.app.current_theme.dark else LIGHT_THEME

    def show(self, tl: Timeline, step: Step, point: tuple[str, str] | None = None) -> None:
        """Show what `step` did; `point` = ("line" | "pattern", text) singles out the rows about it."""
        self.timeline, self.current = tl, step
        self._point = (step.n, *point) if point else None
        self._title(None)
        self.request()

    def toggle_view(self) -> None:
        """The diff, or the IR after the step (the focus goes along if it was in the pane)."""
        self.view = "ir" if self.view == "diff" else "diff"
        if self.screen.focused in (self.diff_view, self.ir_view):
            (self.ir_view if self.view == "ir" else self.diff_view).focus()
        self.request()

    def request(self) -> None:
        if self.current is None or self.timeline is None:
            return
        key = (self.current.n, self.view, self.theme_name)
        self._wanted = key
        if key in self._rendered:
            self._rendered.move_to_end(key)
            self._apply(self._rendered[key])
            return
        self.post_message(self.StepShown("reading…"))
        self.render_step(key, self.timeline, self.current, self.view)

    @work(thread=True, exclusive=True, group="timeline-render")
    def render_step(self, key: tuple, tl: Timeline, step: Step, view: str) -> None:
        theme = key[2]
        if view == "diff":
            self.post_message(self.StepRendered(key, step_diff(tl, step, theme), None))
        else:
            self.post_message(self.StepRendered(key, None, step_ir(tl, step, theme)))

    def on_step_pane_step_rendered(self, event: StepRendered) -> None:
        event.stop()
        self._rendered[event.key] = event
        while len(self._rendered) > KEEP_RENDERED:
            self._rendered.popitem(last=False)
        if event.key == self._wanted:
            self._apply(event)

    def _apply(self, rendered: StepRendered) -> None:
        point = self._point if self._point and self.current and self._point[0] == self.current.n else None
        diff_view, ir_view = self.diff_view, self.ir_view
        showing_diff = rendered.diff is not None
        focus_moves = self.screen.focused in (diff_view, ir_view)
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
            self._title(d.note)
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
            self._title("the IR after the pass, as printed (Enter or P on a line: the pass that introduced it)")
            if focus_moves:
                ir_view.focus()
        self.post_message(self.StepShown())

    def _form(self) -> str:
        step, tl = self.current, self.timeline
        return tl.irs[step.after].form if tl is not None and step is not None and step.after is not None else "mlir"

    def _title(self, note: str | None) -> None:
        if self.current is not None and self.timeline is not None:
            self.query_one("#step-title", Static).update(step_heading(self.timeline, self.current, note or ""))
