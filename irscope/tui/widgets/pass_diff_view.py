"""PassDiffView: DiffView with one row singled out (the line a search or a jump was about)."""
from __future__ import annotations

from rich.segment import Segment
from textual.strip import Strip

from .diff_view import DiffView


class PassDiffView(DiffView):
    """A step's diff; `point_at` scrolls to a row and shows it in the accent colour."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.pointed: int | None = None  # index into `rows`

    def show(self, left, right, rows) -> None:
        self.pointed = None
        super().show(left, right, rows)

    def watch_mode(self) -> None:
        # The row indexes change between side by side and unified: keep pointing at the same line.
        old = self.rows[self.pointed] if self.pointed is not None and self.pointed < len(self.rows) else None
        super().watch_mode()
        if old is not None:
            rows = [k for k, r in enumerate(self.rows) if old.right is not None and r.right == old.right] or \
                [k for k, r in enumerate(self.rows) if old.left is not None and r.left == old.left]
            self.pointed = rows[0] if rows else None
            self.point_at(self.pointed)

    def point_at(self, row: int | None) -> None:
        """Single out `row` (None: none) and scroll it into view, a few rows below the top."""
        self.pointed = row
        self._cache.clear()
        self._generation += 1
        if row is not None:
            self._scroll_to_row(row)
        self.refresh()

    def first_change(self) -> int | None:
        """Scroll to the first run of changes (the top when there is none); its row index."""
        row = self.changes[0] if self.changes else None
        self._scroll_to_row(row or 0)
        return row

    def _scroll_to_row(self, row: int) -> None:
        # Again after the next refresh: rows just shown (or a view just unhidden) have no room to scroll
        # into until the layout has caught up with the new virtual size.
        y = max(0, row - 3)
        self.scroll_to(y=y, animate=False, immediate=True)
        self.call_after_refresh(self.scroll_to, y=y, animate=False, immediate=True)

    def _render_row(self, index: int, scroll_x: int, width: int) -> Strip:
        strip = super()._render_row(index, scroll_x, width)
        if index == self.pointed:
            # Over the syntax colours (a post style), so the row reads as one colour.
            strip = Strip(Segment.apply_style(list(strip), post_style=self._style("current")), strip.cell_length)
        return strip
