"""FindBar: the one-line prompt over the status line, asking for a search text (`/`) or a number (`:`).

It only asks; what the answer means is its subclass's business (widgets/navigator.py: `Navigator`).
"""
from __future__ import annotations

from textual.binding import Binding
from textual.widgets import Input

SEARCH_HINT = "search (smart case), Enter to find"
LINE_HINT = "go to line number"


class FindBar(Input):
    """An input that asks for a search text or a line number and hands the answer to `answered`."""

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

    def __init__(self, find_hint: str = SEARCH_HINT, line_hint: str = LINE_HINT, **kwargs):
        super().__init__(**kwargs)
        self.mode = "search"
        self.hints = {"search": find_hint, "line": line_hint}
        self.can_focus = False  # closed: out of the focus chain (it keeps its size and its place, so that
        # `open` can focus it at once: keys typed right after `/` or `:` must land here)

    def open(self, mode: str, value: str = "") -> None:
        self.mode = mode
        self.placeholder = self.hints[mode]
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
        self.dismissed()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self._shut()
        self.answered(self.mode, event.value.strip())

    def answered(self, mode: str, text: str) -> None:
        """The user pressed Enter on `text` in `mode` ("search" or "line")."""

    def dismissed(self) -> None:
        """The user closed the bar without an answer."""
