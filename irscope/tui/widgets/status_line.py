"""StatusLine: one line of text that repaints without asking for a new layout (Static.update does)."""
from __future__ import annotations

from rich.text import Text
from textual.widget import Widget

from ..model.controls import visible_text


class StatusLine(Widget):
    """The reader's status: stage, line, source location, search and mapping counts."""

    DEFAULT_CSS = "StatusLine { height: 1; width: 1fr; }"

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self._text = Text()

    def show(self, text: Text) -> None:
        # It quotes the snapshot (a file its debug locations name, a damaged stage's message): an escape
        # sequence in a location's file name reached the terminal from here.
        text = visible_text(text)
        if text != self._text:
            self._text = text
            self.refresh()  # height is fixed: no layout needed

    def render(self) -> Text:
        return self._text
