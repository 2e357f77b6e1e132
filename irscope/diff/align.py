"""Line alignment of two texts for the side-by-side and unified views of the compare screen.

Large inputs are cut at anchors first (lines that occur once in each side, kept in order: patience
diff's idea), so difflib only ever sees the short stretches between anchors. Two 20k-line stages align
in well under a second; difflib alone can take seconds on the repetitive text of IR. No Textual import.
"""
from __future__ import annotations

import bisect
import difflib
from collections import Counter
from dataclasses import dataclass
from typing import Sequence

SMALL = 1500  # stretches up to this many lines on a side go straight to difflib
HOPELESS = 4_000_000  # beyond this many line pairs without an anchor, call the stretch one replacement


@dataclass(frozen=True)
class Row:
    """One row of an alignment: a line of A, of B, or of both (0-based indexes)."""

    kind: str  # "equal", "delete" (only in A), "insert" (only in B), "replace" (changed line pair)
    left: int | None
    right: int | None


def align(a: Sequence[str], b: Sequence[str], *, junk_above: int | None = None) -> list[Row]:
    """Rows pairing the lines of `a` and `b`, in order, as a side-by-side view shows them.

    `junk_above` (line pairs): a stretch between anchors larger than this is matched with difflib's
    autojunk on, which ignores lines making up over 1% of it. On repetitive text without anchors (PTX of
    two targets) that turns seconds into milliseconds; the unified-diff engine sets it, the side-by-side
    view does not."""
    rows: list[Row] = []
    _align(a, b, 0, len(a), 0, len(b), rows, junk_above)
    return rows


def _align(a, b, a0: int, a1: int, b0: int, b1: int, rows: list[Row], junk_above: int | None = None) -> None:
    # Common head and tail cost nothing to pair.
    while a0 < a1 and b0 < b1 and a[a0] == b[b0]:
        rows.append(Row("equal", a0, b0))
        a0, b0 = a0 + 1, b0 + 1
    tail = []
    while a1 > a0 and b1 > b0 and a[a1 - 1] == b[b1 - 1]:
        a1, b1 = a1 - 1, b1 - 1
        tail.append(Row("equal", a1, b1))
    if a1 - a0 <= SMALL and b1 - b0 <= SMALL:
        _difflib(a, b, a0, a1, b0, b1, rows, junk_above)
    else:
        anchors = _anchors(a, b, a0, a1, b0, b1)
        if anchors:
            pa, pb = a0, b0
            for i, j in anchors:
                _align(a, b, pa, i, pb, j, rows, junk_above)
                rows.append(Row("equal", i, j))
                pa, pb = i + 1, j + 1
            _align(a, b, pa, a1, pb, b1, rows, junk_above)
        elif (a1 - a0) * (b1 - b0) <= HOPELESS:
            _difflib(a, b, a0, a1, b0, b1, rows, junk_above)
        else:
            _replace(a0, a1, b0, b1, rows)
    rows.extend(reversed(tail))


def _difflib(a, b, a0, a1, b0, b1, rows: list[Row], junk_above: int | None = None) -> None:
    junk = junk_above is not None and (a1 - a0) * (b1 - b0) > junk_above
    matcher = difflib.SequenceMatcher(None, a[a0:a1], b[b0:b1], autojunk=junk)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            rows.extend(Row("equal", a0 + i1 + k, b0 + j1 + k) for k in range(i2 - i1))
        else:
            _replace(a0 + i1, a0 + i2, b0 + j1, b0 + j2, rows)


def _replace(a0, a1, b0, b1, rows: list[Row]) -> None:
    paired = min(a1 - a0, b1 - b0)
    rows.extend(Row("replace", a0 + k, b0 + k) for k in range(paired))
    rows.extend(Row("delete", a0 + k, None) for k in range(paired, a1 - a0))
    rows.extend(Row("insert", None, b0 + k) for k in range(paired, b1 - b0))


def _anchors(a, b, a0, a1, b0, b1) -> list[tuple[int, int]]:
    """Lines unique on both sides, in the longest order-preserving chain (patience sorting)."""
    ca = Counter(a[a0:a1])
    cb = Counter(b[b0:b1])
    where_b = {b[j]: j for j in range(b0, b1) if cb[b[j]] == 1 and ca.get(b[j]) == 1}
    pairs = [(i, where_b[a[i]]) for i in range(a0, a1) if a[i] in where_b]
    if not pairs:
        return []
    # Longest increasing subsequence of the B positions.
    tops: list[int] = []
    top_index: list[int] = []
    back: list[int] = [-1] * len(pairs)
    for k, (_, j) in enumerate(pairs):
        pos = bisect.bisect_left(tops, j)
        if pos == len(tops):
            tops.append(j)
            top_index.append(k)
        else:
            tops[pos] = j
            top_index[pos] = k
        back[k] = top_index[pos - 1] if pos else -1
    chain, k = [], top_index[-1]
    while k >= 0:
        chain.append(pairs[k])
        k = back[k]
    return chain[::-1]


def unified(rows: Sequence[Row]) -> list[Row]:
    """The same alignment as a unified diff shows it: a changed pair becomes its deletion, then its insertion."""
    out: list[Row] = []
    pending_insert: list[Row] = []
    for row in rows:
        if row.kind == "replace":
            out.append(Row("delete", row.left, None))
            pending_insert.append(Row("insert", None, row.right))
            continue
        if pending_insert and row.kind != "delete":
            out.extend(pending_insert)
            pending_insert = []
        out.append(row)
    out.extend(pending_insert)
    return out


def change_starts(rows: Sequence[Row]) -> list[int]:
    """Indexes of the rows where a run of changes begins (for jumping to the next or previous change)."""
    starts, inside = [], False
    for k, row in enumerate(rows):
        changed = row.kind != "equal"
        if changed and not inside:
            starts.append(k)
        inside = changed
    return starts


@dataclass(frozen=True)
class Summary:
    equal: int
    deleted: int
    inserted: int
    changed: int


def summarise(rows: Sequence[Row]) -> Summary:
    kinds = Counter(r.kind for r in rows)
    return Summary(kinds["equal"], kinds["delete"], kinds["insert"], kinds["replace"])
