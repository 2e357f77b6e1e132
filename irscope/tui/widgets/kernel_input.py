"""KernelInput: the compile dialog's kernel field, whose Tab accepts the name suggested as you type."""
from __future__ import annotations

from textual.binding import Binding
from textual.widgets import Input


class KernelInput(Input):
    """An Input where Tab takes the suggestion shown after the cursor (as → does), else moves on."""

    BINDINGS = [Binding("tab", "complete", "Complete", show=False)]

    def action_complete(self) -> None:
        # Textual keeps the suggestion private; → (cursor_right) accepts it only at the end of the text.
        suggestion = getattr(self, "_suggestion", "")
        if self.cursor_at_end and len(suggestion) > len(self.value):
            self.action_cursor_right()
        else:
            self.screen.focus_next()
