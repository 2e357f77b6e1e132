"""CodeView: a read-only viewer for text of any length that renders only the lines on screen.

A Line API widget (Textual's `ScrollView`): `render_line` draws one screen row from the `Document`,
highlighting lazily, so a 100k-line stage costs what its visible lines cost. It has a cursor line,
line numbers, marked lines (the lines a source line became, or the source line an IR line came from)
and search matches.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from rich.segment import Segment
from rich.style import Style
from textual import events, work
from textual.binding import Binding
from textual.cache import LRUCache
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from ..model.document import Document
from ..model.matches import match_index, next_match, prefetch_order


class CodeView(ScrollView, can_focus=True):
    """Line-numbered, highlighted text with a cursor, marks and search matches."""

    BINDINGS = [
        Binding("up,k", "move(-1)", "Up", show=False),
        Binding("down,j", "move(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown,space", "page(1)", "Page down", show=False),
        Binding("home,g", "first", "Top", show=False),
        Binding("end,G", "last", "Bottom", show=False),
        Binding("left,h", "scroll_left", "Left", show=False),
        Binding("right,l", "scroll_right", "Right", show=False),
        Binding("enter", "choose", "Jump", show=True),
    ]

    COMPONENT_CLASSES = {"code-view--gutter", "code-view--cursor", "code-view--cursor-focus", "code-view--cursor-gutter",
                         "code-view--mark", "code-view--mark-gutter", "code-view--match"}

    DEFAULT_CSS = """
    CodeView { background: $surface; }
    CodeView > .code-view--gutter { color: $text-muted; }
    CodeView > .code-view--cursor { background: $boost; }
    CodeView > .code-view--cursor-focus { background: $accent 30%; }
    CodeView > .code-view--cursor-gutter { color: $text; text-style: bold; }
    CodeView > .code-view--mark { background: $warning 18%; }
    CodeView > .code-view--mark-gutter { color: $warning; text-style: bold; }
    CodeView > .code-view--match { background: $warning; color: $background; }
    """

    cursor: reactive[int] = reactive(0, always_update=True, init=False)

    @dataclass
    class CursorMoved(Message):
        """The cursor went to another line (by key, mouse or a jump)."""

        view: "CodeView"
        line: int

        @property
        def control(self) -> "CodeView":
            return self.view

    @dataclass
    class LineChosen(Message):
        """The reader pressed Enter (or double-clicked) on a line: jump to its counterpart."""

        view: "CodeView"
        line: int

        @property
        def control(self) -> "CodeView":
            return self.view

    def __init__(self, document: Document | None = None, **kwargs):
        super().__init__(**kwargs)
        self.document = document or Document("", "")
        self.painted: tuple | None = None
        self.stage = ""  # the stage (or "python") whose text is shown; set by whoever shows it
        self.marks: frozenset[int] = frozenset()
        self.query_text = ""
        self.matches: list[int] = []
        self._cache: LRUCache[tuple, Strip] = LRUCache(1024)
        self._styles: dict[str, Style] = {}
        self._prefetch_timer = None
        self._generation = 0

    # -- content ----------------------------------------------------------------------------------------

    def show(self, document: Document, cursor: int = 0) -> None:
        """Show another document (the cursor goes to `cursor`, the view scrolls to it)."""
        self.document = document
        self.marks = frozenset()
        self.matches = self.document.find(self.query_text) if self.query_text else []
        self._invalidate()
        self._update_size()
        self.set_reactive(CodeView.cursor, min(cursor, max(0, len(document) - 1)))
        self.scroll_to(0, max(0, cursor - self._page() // 2), animate=False, immediate=True)
        self.refresh()
        self._schedule_prefetch()

    def mark(self, lines: Iterable[int]) -> None:
        """Emphasise these lines (0-based); an empty iterable clears the marks."""
        marks = frozenset(lines)
        if marks != self.marks:
            self.marks = marks
            self.refresh()  # marks restyle cached lines; nothing is re-rendered

    def search(self, query: str) -> int:
        """Highlight `query` (smart case) and remember the matching lines; returns how many there are."""
        self.query_text = query
        self.matches = self.document.find(query) if query else []
        self._invalidate()
        self.refresh()
        return len(self.matches)

    def next_match(self, forward: bool = True) -> int | None:
        """Move the cursor to the next (or previous) matching line, wrapping around; None if none match."""
        line = next_match(self.matches, self.cursor, forward)
        if line is not None:
            self.go_to(line)
        return line

    def go_to(self, line: int, *, center: bool = True) -> None:
        """Put the cursor on `line` (0-based) and scroll it into view (centred if it was off screen)."""
        if not len(self.document):
            return
        line = max(0, min(line, len(self.document) - 1))
        top = int(self.scroll_offset.y)
        height = self._page()
        if center and not top <= line < top + height:
            self.scroll_to(y=max(0, line - height // 2), animate=False, immediate=True)
        self.cursor = line

    @property
    def match_index(self) -> int | None:
        """1-based position of the cursor's line among the matches, if it is one."""
        return match_index(self.matches, self.cursor)

    # -- cursor -----------------------------------------------------------------------------------------

    def watch_cursor(self, old: int, new: int) -> None:
        self._scroll_cursor_into_view()
        self.refresh()
        self.post_message(self.CursorMoved(self, new))

    def validate_cursor(self, value: int) -> int:
        return max(0, min(value, len(self.document) - 1)) if len(self.document) else 0

    def _scroll_cursor_into_view(self) -> None:
        top = int(self.scroll_offset.y)
        height = self._page()
        if self.cursor < top:
            self.scroll_to(y=self.cursor, animate=False, immediate=True)
        elif self.cursor >= top + height:
            self.scroll_to(y=self.cursor - height + 1, animate=False, immediate=True)

    def _page(self) -> int:
        return max(1, self.scrollable_content_region.height or self.size.height or 1)

    def action_move(self, delta: int) -> None:
        self.cursor = self.cursor + delta

    def action_page(self, direction: int) -> None:
        height = self._page()
        self.scroll_to(y=max(0, self.scroll_offset.y + direction * height), animate=False, immediate=True)
        self.cursor = self.cursor + direction * height

    def action_first(self) -> None:
        self.cursor = 0

    def action_last(self) -> None:
        self.cursor = len(self.document) - 1

    def action_choose(self) -> None:
        self.post_message(self.LineChosen(self, self.cursor))

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None:
            return
        line = int(self.scroll_offset.y) + offset.y
        if 0 <= line < len(self.document):
            self.cursor = line
            if event.chain == 2:
                self.action_choose()

    # -- rendering --------------------------------------------------------------------------------------

    PREFETCH_PAGES = 1

    def watch_scroll_y(self, old: float, new: float) -> None:
        super().watch_scroll_y(old, new)
        self._schedule_prefetch()

    def _schedule_prefetch(self) -> None:
        if self._prefetch_timer is not None:
            self._prefetch_timer.stop()
        self._prefetch_timer = self.set_timer(0.05, self._start_prefetch)

    def _start_prefetch(self) -> None:
        self._prefetch_timer = None
        page = self._page()
        top = int(self.scroll_offset.y)
        shown_to = int(self.scroll_offset.x) + (self.scrollable_content_region.width or self.size.width)
        self.prefetch(self.document, top, page, shown_to)

    @work(thread=True, exclusive=True, group="prefetch")
    def prefetch(self, document: Document, top: int, page: int, shown_to: int) -> None:
        """Highlight the pages around the visible one in the background, nearest first."""
        from textual.worker import get_current_worker
        worker = get_current_worker()
        for i in prefetch_order(top, page, len(document), self.PREFETCH_PAGES):
            if worker.is_cancelled or document is not self.document:
                return
            if not document.is_highlighted(i, shown_to):
                document.text(i, shown_to)

    def _invalidate(self) -> None:
        self._cache.clear()
        self._generation += 1

    def _gutter_width(self) -> int:
        return len(str(max(1, len(self.document)))) + 2

    def _update_size(self) -> None:
        self.virtual_size = Size(self._gutter_width() + self.document.width + 1, len(self.document))

    def on_mount(self) -> None:
        self._update_size()

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._styles = {}
        self._invalidate()

    def _style(self, name: str) -> Style:
        """A component class's style (or "base", the widget's own), computed once per style change."""
        style = self._styles.get(name)
        if style is None:
            style = self.rich_style if name == "base" else self.get_component_rich_style(f"code-view--{name}")
            self._styles[name] = style
        return style

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        self.painted = (self.document, scroll_y, self._generation)  # what is on screen (benchmarks wait on it)
        index = scroll_y + y
        width = self.scrollable_content_region.width or self.size.width
        base = self._style("base")
        if index >= len(self.document):
            if index == 0:
                return Strip([Segment(" (empty)", base + Style(dim=True))]).extend_cell_length(width, base)
            return Strip.blank(width, base)
        gutter_w = self._gutter_width()
        view_width = max(0, width - gutter_w)
        # The text part depends on the line, the horizontal scroll and the search, not on the cursor, the
        # marks or focus: moving the cursor or marking lines restyles cached strips instead of re-rendering.
        key = (index, scroll_x, view_width, self._generation)
        content = self._cache.get(key)
        if content is None:
            content = self._render_content(index, scroll_x, view_width)
            self._cache[key] = content
        is_cursor = index == self.cursor
        marked = index in self.marks
        line_style = base
        gutter_style = base + self._style("gutter")
        if marked:
            line_style = line_style + self._style("mark")
            gutter_style = gutter_style + self._style("mark-gutter")
        if is_cursor:
            line_style = line_style + self._style("cursor" if not self.has_focus else "cursor-focus")
            gutter_style = gutter_style + self._style("cursor-gutter")
        marker = "▌" if marked else " "
        gutter = Strip([Segment(marker, gutter_style), Segment(f"{index + 1:>{gutter_w - 2}} ", gutter_style)])
        return Strip.join([gutter, content.apply_style(line_style)])

    def _render_content(self, index: int, scroll_x: int, view_width: int) -> Strip:
        """Columns scroll_x..scroll_x+view_width of line `index`, highlighted, with search matches; no
        background (the line's style goes under it when it is drawn)."""
        shown_to = scroll_x + view_width
        text = self.document.text(index, shown_to)
        offset = 0
        if len(text) > shown_to:
            # Render only the part on screen: long IR lines carry hundreds of spans, and a line of
            # megabytes took seconds a keystroke whole. In ASCII a column is a character; elsewhere a
            # character takes at least one column, so the first `shown_to` characters hold the view.
            if text.plain.isascii():
                text, offset = text[scroll_x:shown_to], scroll_x
            else:
                text = text[:shown_to]
        elif self.query_text:
            text = text.copy()
        if self.query_text:
            match_style = self._style("match")
            for start, end in self.document.spans(index, self.query_text, offset, offset + len(text)):
                text.stylize(match_style, start - offset, end - offset)
        text.no_wrap = True
        text.end = ""
        segments = list(text.render(self.app.console))
        start = scroll_x - offset
        return Strip(segments).crop_extend(start, start + view_width, None)
