"""KernelInput: the compile dialog's kernel field, whose Tab accepts the name suggested as you type."""
from __future__ import annotations

from textual.binding import Binding
from textual.suggester import SuggestionReady
from textual.widgets import Input


class KernelInput(Input):
    """An Input where Tab takes the suggestion shown after the cursor (as → does), else moves on."""

    BINDINGS = [Binding("tab", "complete", "Complete", show=False)]

    # The suggestion its suggester made, and for which value: kept from Textual's public SuggestionReady
    # message (the Input keeps its own copy in a private attribute).
    _offered: tuple[str, str] = ("", "")

    def on_suggestion_ready(self, event: SuggestionReady) -> None:
        self._offered = (event.value, event.suggestion)

    def action_complete(self) -> None:
        value, suggestion = self._offered
        # → (cursor_right) accepts the suggestion only at the end of the text, and only the current value's
        if self.cursor_at_end and value == self.value and len(suggestion) > len(self.value):
            self.action_cursor_right()
        else:
            self.screen.focus_next()
