"""DiffView: two stages aligned row by row, side by side or as a unified diff, rendering visible rows only."""
from __future__ import annotations

import bisect
from typing import Sequence

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.binding import Binding
from textual.cache import LRUCache
from textual.geometry import Size
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from ...diff.align import Row, change_starts, unified
from ..model.document import Document

SIGNS = {"equal": " ", "delete": "-", "insert": "+", "replace": "~"}


class DiffView(ScrollView, can_focus=True):
    """Aligned rows of two documents; changed rows are tinted, `n`/`N` walk the changes."""

    BINDINGS = [
        Binding("up,k", "scroll_rows(-1)", "Up", show=False),
        Binding("down,j", "scroll_rows(1)", "Down", show=False),
        Binding("pageup", "scroll_rows(-20)", "Page up", show=False),
        Binding("pagedown,space", "scroll_rows(20)", "Page down", show=False),
        Binding("home,g", "scroll_home", "Top", show=False),
        Binding("end,G", "scroll_end", "Bottom", show=False),
        Binding("left,h", "scroll_left", "Left", show=False),
        Binding("right,l", "scroll_right", "Right", show=False),
    ]
    COMPONENT_CLASSES = {"diff-view--gutter", "diff-view--delete", "diff-view--insert", "diff-view--replace",
                         "diff-view--divider", "diff-view--current"}
    DEFAULT_CSS = """
    DiffView { background: $surface; }
    DiffView > .diff-view--gutter { color: $text-muted; }
    DiffView > .diff-view--delete { background: $error 25%; }
    DiffView > .diff-view--insert { background: $success 25%; }
    DiffView > .diff-view--replace { background: $warning 15%; }
    DiffView > .diff-view--divider { color: $panel; }
    DiffView > .diff-view--current { text-style: bold; color: $accent; }
    """

    mode: reactive[str] = reactive("side", init=False)  # "side" or "unified"

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.left = Document("", "")
        self.right = Document("", "")
        self.pairs: list[Row] = []
        self.rows: list[Row] = []
        self.changes: list[int] = []
        self._cache: LRUCache[tuple, Strip] = LRUCache(1024)
        self._styles: dict[str, Style] = {}
        self._generation = 0

    def show(self, left: Document, right: Document, rows: Sequence[Row]) -> None:
        self.left, self.right, self.pairs = left, right, list(rows)
        self._layout()
        self.scroll_to(0, 0, animate=False, immediate=True)

    def watch_mode(self) -> None:
        self._layout()

    def _layout(self) -> None:
        self.rows = self.pairs if self.mode == "side" else unified(self.pairs)
        self.changes = change_starts(self.rows)
        self._cache.clear()
        self._generation += 1
        widest = max(self.left.width, self.right.width)
        # Side by side, each half scrolls by the same amount: room for the widest line in a half.
        width = 2 * (widest + self._gutter() + 1) + 1 if self.mode == "side" else widest + 2 * self._gutter() + 2
        self.virtual_size = Size(width, len(self.rows))
        self.refresh()

    def _gutter(self) -> int:
        return len(str(max(len(self.left), len(self.right), 1))) + 1

    def next_change(self, forward: bool = True) -> int | None:
        """Scroll to the next (previous) run of changed rows; returns its 1-based number or None."""
        if not self.changes:
            return None
        top = int(self.scroll_offset.y) + 2
        if forward:
            k = bisect.bisect_right(self.changes, top)
            k = k % len(self.changes)
        else:
            k = bisect.bisect_left(self.changes, top) - 1
            k = k % len(self.changes)
        self.scroll_to(y=max(0, self.changes[k] - 2), animate=False, immediate=True)
        return k + 1

    def action_scroll_rows(self, delta: int) -> None:
        self.scroll_to(y=max(0, self.scroll_offset.y + delta), animate=False, immediate=True)

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        index = scroll_y + y
        width = self.scrollable_content_region.width or self.size.width
        key = (index, scroll_x, width, self._generation)
        strip = self._cache.get(key)
        if strip is None:
            strip = self._render_row(index, scroll_x, width)
            self._cache[key] = strip
        return strip

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._styles = {}
        self._cache.clear()
        self._generation += 1

    def _style(self, name: str) -> Style:
        style = self._styles.get(name)
        if style is None:
            style = self.rich_style if name == "base" else self.get_component_rich_style(f"diff-view--{name}")
            self._styles[name] = style
        return style

    def _render_row(self, index: int, scroll_x: int, width: int) -> Strip:
        base = self._style("base")
        if index >= len(self.rows):
            if index == 0:
                return Strip([Segment(" (no lines)", base + Style(dim=True))]).extend_cell_length(width, base)
            return Strip.blank(width, base)
        row = self.rows[index]
        tint = base if row.kind == "equal" else base + self._style(row.kind)
        gutter_style = tint + self._style("gutter")
        g = self._gutter()
        if self.mode == "unified":
            left_no = f"{row.left + 1:>{g}}" if row.left is not None else " " * g
            right_no = f"{row.right + 1:>{g}}" if row.right is not None else " " * g
            sign = "-" if row.kind == "delete" else "+" if row.kind == "insert" else " "
            gutter = Strip([Segment(f"{left_no}{right_no} {sign}", gutter_style)])
            doc, line = (self.left, row.left) if row.left is not None else (self.right, row.right)
            content = self._text(doc, line, tint, scroll_x, max(0, width - gutter.cell_length))
            return Strip.join([gutter, content])
        half = max(1, (width - 1) // 2)
        divider = Strip([Segment("│", base + self._style("divider"))])
        parts = []
        for doc, line in ((self.left, row.left), (self.right, row.right)):
            number = f"{line + 1:>{g}} " if line is not None else " " * (g + 1)
            side_tint = tint if line is not None else base
            gutter = Strip([Segment(number, gutter_style if line is not None else base)])
            body = self._text(doc, line, side_tint, scroll_x, max(0, half - g - 1))
            parts.append(Strip.join([gutter, body]))
        right_width = width - half - 1
        return Strip.join([parts[0], divider, parts[1].crop_extend(0, right_width, base)])

    def _text(self, doc: Document, line: int | None, tint: Style, scroll_x: int, width: int) -> Strip:
        if line is None or line >= len(doc):
            return Strip.blank(width, tint)
        text: Text = doc.text(line, scroll_x + width)
        segments = [Segment(s.text, tint + s.style if s.style else tint, s.control)
                    for s in text.render(self.app.console)]
        return Strip(segments).crop_extend(scroll_x, scroll_x + width, tint)
