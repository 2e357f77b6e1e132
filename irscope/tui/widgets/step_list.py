"""StepList: a pass timeline's steps in pipeline order, one line each, optionally only the changing ones."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from textual.binding import Binding
from textual.message import Message
from textual.widgets import OptionList
from textual.widgets.option_list import Option, OptionDoesNotExist

from ...passes import Step
from .step_text import step_row
from ..model.steps import change_text, is_changing


class StepList(OptionList):
    """`#  stage  pass  +added -removed` per step; a rule between stages; `no change` dimmed."""

    BINDINGS = [
        Binding("k", "cursor_up", "Up", show=False),
        Binding("j", "cursor_down", "Down", show=False),
        Binding("g", "first", "First", show=False),
        Binding("G", "last", "Last", show=False),
    ]

    @dataclass
    class StepHighlighted(Message):
        """The cursor went to another step (by key, mouse, or `select`)."""

        step: Step

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.steps: list[Step] = []
        self._by_n: dict[int, Step] = {}
        self.changed_only = False
        self._width = 0

    @property
    def shown(self) -> list[Step]:
        return [s for s in self.steps if not self.changed_only or is_changing(s)]

    @property
    def current(self) -> Step | None:
        option = self.highlighted_option
        return self._by_n[int(option.id)] if option is not None and option.id is not None else None

    def set_steps(self, steps: Sequence[Step]) -> None:
        self.steps = list(steps)
        self._by_n = {s.n: s for s in self.steps}
        self._rebuild(None)

    def set_changed_only(self, on: bool) -> None:
        """Hide (or show again) the steps that changed nothing; the cursor stays on the nearest step."""
        keep = self.current
        self.changed_only = on
        self._rebuild(keep)

    def _rebuild(self, keep: Step | None) -> None:
        width = self._row_width()
        self._width = width
        options: list[Option | None] = []
        shown = self.shown
        change_width = min(15, max((len(change_text(s)) for s in self.steps), default=0))
        for k, step in enumerate(shown):
            options.append(Option(step_row(step, width, change_width), id=str(step.n)))
            if k + 1 < len(shown) and shown[k + 1].stage != step.stage:
                options.append(None)  # a rule between stages
        with self.prevent(OptionList.OptionHighlighted):
            self.set_options(options)
        if keep is not None and shown:
            self.select(self.nearest(keep.n), quiet=True)

    def _row_width(self) -> int:
        # Room for the vertical scrollbar whether or not it is there yet (it appears after the first layout).
        return max(12, (self.size.width or 58) - self.styles.scrollbar_size_vertical - 1)

    def on_resize(self) -> None:
        if self.steps and self._row_width() != self._width:
            self._rebuild(self.current)

    def nearest(self, n: int) -> int:
        """The shown step at or after step `n` (else the last shown before it)."""
        shown = self.shown
        return next((s.n for s in shown if s.n >= n), shown[-1].n if shown else n)

    def select(self, n: int, *, quiet: bool = False) -> None:
        """Put the cursor on step `n` (shown or not: the nearest shown one); `quiet` sends no message."""
        n = self.nearest(n)
        try:
            index = self.get_option_index(str(n))
        except OptionDoesNotExist:  # nothing shown
            return
        if quiet:
            with self.prevent(OptionList.OptionHighlighted):
                self.highlighted = index
        else:
            self.highlighted = index
        self.scroll_to_highlight()

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        event.stop()
        if event.option.id is not None:
            self.post_message(self.StepHighlighted(self._by_n[int(event.option.id)]))
