"""DeltaSummary: the compare screen's resources and counters that differ, laid out in whole items.

An item (`registers 220→239 (+19)`) is never broken across lines or cut off. Folded, the summary takes
at most `FOLDED` lines and its last line ends with how many items are left out and the key that shows
them (`… 12 more (e: all)`); unfolded, it shows every item.
"""
from __future__ import annotations

from rich.text import Text
from textual.widget import Widget

SEPARATOR = " · "


def fill(items: list[Text], width: int) -> list[list[int]]:
    """Whole items (their indexes) line by line, as many on a line as fit in `width` cells."""
    lines: list[list[int]] = []
    used = 0
    for i, item in enumerate(items):
        if lines and used + len(SEPARATOR) + item.cell_len <= width:
            lines[-1].append(i)
            used += len(SEPARATOR) + item.cell_len
        else:  # a new line (an item wider than the line gets one of its own, cut at the edge)
            lines.append([i])
            used = item.cell_len
    return lines


def fold(items: list[Text], width: int, most: int | None, key: str) -> tuple[list[Text], int]:
    """The lines to show and how many items they leave out: all of them when they fit in `most` lines
    (or `most` is None), else `most` lines whose last one ends with `… N more (KEY: all)`."""
    width = max(width, 1)
    layout = fill(items, width)
    if most is None or len(layout) <= most:
        return [_join(items, line) for line in layout], 0
    shown = layout[:most - 1]
    start = shown[-1][-1] + 1 if shown else 0
    note_room = len(f"… {len(items)} more ({key}: all)")
    last: list[int] = []
    used = 0
    for i in range(start, len(items)):
        extra = items[i].cell_len + (len(SEPARATOR) if last else 0)
        if used + extra + len(SEPARATOR) + note_room > width:
            break
        last.append(i)
        used += extra
    hidden = len(items) - start - len(last)
    note = Text(f"… {hidden} more ", style="bold")
    note.append(f"({key}: all)", style="dim")
    tail = _join(items, last)
    if last:
        tail.append(SEPARATOR, style="dim")
    tail.append_text(note)
    return [_join(items, line) for line in shown] + [tail], hidden


def _join(items: list[Text], indexes: list[int]) -> Text:
    return Text(SEPARATOR, style="dim").join(items[i] for i in indexes)


class DeltaSummary(Widget):
    """What differs between A and B: folded to a few lines, or all of it (`toggle`)."""

    FOLDED = 4
    DEFAULT_CSS = "DeltaSummary { height: auto; }"

    def __init__(self, key: str, **kwargs):
        super().__init__(**kwargs)
        self.key = key
        self.items: list[Text] = []
        self.empty = Text()
        self.expanded = False
        self.folded = self.FOLDED  # lines shown folded (fewer on a short screen: `fold_to`)
        self.hidden = 0  # items left out as last laid out

    def show(self, items: list[Text], empty: Text) -> None:
        """The items, or `empty` when there are none."""
        self.items, self.empty = items, empty
        self.refresh(layout=True)

    def toggle(self) -> None:
        self.expanded = not self.expanded
        self.refresh(layout=True)

    def fold_to(self, lines: int) -> None:
        """Show at most `lines` lines while folded."""
        if lines != self.folded:
            self.folded = max(1, lines)
            self.refresh(layout=True)

    def lines(self, width: int) -> list[Text]:
        if not self.items:
            return [self.empty]
        lines, self.hidden = fold(self.items, width, None if self.expanded else self.folded, self.key)
        if self.expanded and len(lines) > self.folded:
            note = Text(f"({self.key}: fewer)", style="dim")
            if lines[-1].cell_len + len(SEPARATOR) + note.cell_len <= width:
                lines[-1].append(SEPARATOR, style="dim")
                lines[-1].append_text(note)
            else:
                lines.append(note)
        return lines

    def get_content_height(self, container, viewport, width: int) -> int:
        return len(self.lines(width))

    def render(self) -> Text:
        text = Text("\n").join(self.lines(self.content_size.width))
        text.no_wrap, text.overflow = True, "ellipsis"
        return text
