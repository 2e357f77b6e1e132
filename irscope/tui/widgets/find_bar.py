"""FindBar: the one-line prompt for searching a stage (`/`) and going to a line (`:`)."""
from __future__ import annotations

from dataclasses import dataclass

from textual.binding import Binding
from textual.message import Message
from textual.widgets import Input


class FindBar(Input):
    """An input that asks for a search text or a line number, and says which it was given."""

    # On a layer of its own over the bottom row (the status line): opening and closing it changes no
    # widget's size, so it costs no second layout pass and the code view above keeps its lines.
    # The container it is in declares `layers: base find`.
    DEFAULT_CSS = """
    FindBar, FindBar:focus {
        layer: find; dock: bottom; border: none; height: 1; padding: 0 1; background: $boost;
        visibility: hidden;
    }
    """
    BINDINGS = [Binding("escape", "close", "Close", show=True)]

    @dataclass
    class SearchSubmitted(Message):
        """The reader asked to search for `query`."""

        query: str

    @dataclass
    class LineRequested(Message):
        """The reader asked to go to `line` (1-based, as typed)."""

        line: int

    @dataclass
    class Closed(Message):
        """The bar was closed without a request."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.mode = "search"
        self.can_focus = False  # closed: out of the focus chain (it keeps its size and its place, so that
        # `open` can focus it at once: keys typed right after `/` or `:` must land here)

    def open(self, mode: str, value: str = "") -> None:
        self.mode = mode
        self.placeholder = "search (smart case), Enter to find" if mode == "search" else "go to line number"
        self.value = value
        self.add_class("-open")
        self.styles.visibility = "visible"  # an inline style holds at once (a class waits for the next
        # style update), and a hidden widget cannot take focus
        self.can_focus = True
        self.app.set_focus(self)  # now, not after a refresh as Widget.focus does

    def _shut(self) -> None:
        self.remove_class("-open")
        self.styles.visibility = "hidden"
        self.can_focus = False

    def action_close(self) -> None:
        self._shut()
        self.post_message(self.Closed())

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        text = event.value.strip()
        self._shut()
        if self.mode == "search":
            self.post_message(self.SearchSubmitted(text))
            return
        try:
            self.post_message(self.LineRequested(int(text)))
        except ValueError:
            self.app.notify(f"'{text}' is not a line number", severity="warning")
            self.post_message(self.Closed())
