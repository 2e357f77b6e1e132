"""Where a search stands in a text: the next matching line from a cursor, and which match a line is.
No Textual import; the lines come from `Document.find` (sorted, 0-based)."""
from __future__ import annotations

import bisect


def next_match(matches: list[int], cursor: int, forward: bool = True) -> int | None:
    """The next (previous) matching line after (before) `cursor`, wrapping around; None if none match."""
    if not matches:
        return None
    k = bisect.bisect_right(matches, cursor) if forward else bisect.bisect_left(matches, cursor) - 1
    return matches[k % len(matches)]


def match_index(matches: list[int], cursor: int) -> int | None:
    """1-based position of `cursor`'s line among the matches, if it is one."""
    k = bisect.bisect_left(matches, cursor)
    return k + 1 if k < len(matches) and matches[k] == cursor else None


def prefetch_order(top: int, page: int, length: int, pages: int) -> list[int]:
    """The lines to highlight ahead of a view showing `page` lines from `top`: the pages below, then above."""
    order = list(range(top + page, min(length, top + page * (1 + pages))))
    return order + list(range(top - 1, max(-1, top - page * pages - 1), -1))
