"""Navigator: moving through a text by what is in it, the same way in the reader and the pass timeline.

`/` finds (in the view's text, or, where the host says so, along the passes), `n`/`N` go to the next
and previous match, `:` goes to a line (or a step), `f`/`o` to the next function or loop ("landmarks").
The prompt is the `FindBar` it extends; the host binds the keys and calls these methods, and hears what
was asked through the past-tense messages below.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from textual.message import Message
from textual.widget import Widget

from ..model.stages import next_landmark
from .code_view import CodeView
from .find_bar import LINE_HINT, SEARCH_HINT, FindBar


class Navigator(FindBar):
    """Find, next/previous match, go to line, landmarks: over `view()` when given one, else for the host."""

    @dataclass
    class Searched(Message):
        """The user searched for `query`; `count` lines of the view matched (None: no view, the host searches)."""

        query: str
        count: int | None

    @dataclass
    class LineEntered(Message):
        """The user asked for `line` (as typed); a navigator with a view has already moved it there."""

        line: int

    @dataclass
    class Dismissed(Message):
        """The prompt was closed without a request (Escape, or not a number)."""

    def __init__(self, view: Callable[[], CodeView] | None = None, home: Callable[[], Widget] | None = None,
                 find_hint: str = SEARCH_HINT, line_hint: str = LINE_HINT, **kwargs):
        super().__init__(find_hint, line_hint, **kwargs)
        self._view = view  # the code view it searches and moves; None: the host does what is asked
        self._home = home or view  # where the focus goes back to once the prompt is answered or closed

    @property
    def view(self) -> CodeView | None:
        return self._view() if self._view is not None else None

    # -- asking -----------------------------------------------------------------------------------------

    def find(self, value: str | None = None) -> None:
        """Open the prompt for a search, holding `value` (by default the view's current search)."""
        view = self.view
        self.open("search", value if value is not None else view.query_text if view is not None else "")

    def go_to_line(self) -> None:
        self.open("line")

    def answered(self, mode: str, text: str) -> None:
        view = self.view
        if mode == "search":
            count = None
            if view is not None:
                count = view.search(text)
            self._go_home()
            if view is not None:
                if text and not count:
                    self.app.notify(f"'{text}' is not in {view.stage}", severity="warning", markup=False)
                elif count:
                    view.next_match(True)
            self.post_message(self.Searched(text, count))
            return
        try:
            line = int(text)
        except ValueError:
            self.app.notify(f"'{text}' is not a line number", severity="warning", markup=False)
            self.dismissed()
            return
        if view is not None:
            view.go_to(line - 1)
        self._go_home()
        self.post_message(self.LineEntered(line))

    def dismissed(self) -> None:
        self._go_home()
        self.post_message(self.Dismissed())

    def _go_home(self) -> None:
        if self._home is not None:
            self._home().focus()

    # -- moving -----------------------------------------------------------------------------------------

    def next_match(self, forward: bool) -> None:
        """The view's next (previous) line matching its search; with no search yet, ask for one."""
        view = self.view
        if view is None:
            return
        if not view.query_text:
            self.find()
        elif view.next_match(forward) is None:
            self.app.notify(f"'{view.query_text}' is not in {view.stage}", severity="warning", markup=False)

    def landmark(self, kind: str, lines: list[int], forward: bool) -> None:
        """The view's next (previous) `kind` ("function", "loop") among `lines`, wrapping around."""
        view = self.view
        if view is None:
            return
        if not lines:
            self.app.notify(f"no {kind}s found in {view.stage}", severity="warning", markup=False)
            return
        view.go_to(next_landmark(lines, view.cursor, forward))
