"""Unified diffs built on the anchored aligner (align.py): the one line-diff engine of irscope.

`irscope diff`, the goldens and the pass timeline print these; the TUI's compare screen shows the aligner's
rows side by side. The output has the form and hunk rules of `difflib.unified_diff(..., lineterm="")`
(`---`/`+++` headers, `@@ -a,b +c,d @@` hunks, `context` lines around each change, hunks whose context
would overlap merged), so tools that read unified diffs read these. What may differ is which lines are
paired: the aligner cuts at lines unique to both sides (patience diff's anchors) and never treats frequent
lines as junk, where difflib's autojunk heuristic, on text past 200 lines, stops matching any line that
makes up over 1% of it (in PTX and SASS: `bar.sync 0;`, `}`, `NOP`, register moves) and then reports
whole blocks as changed. Up to 10,000 lines a side each diff takes whichever pairing marks fewer lines,
difflib's on a tie, so it never gets longer than difflib's and reads the same wherever the aligner cannot
do better; past that the aligner alone, ~10x faster than difflib on 20k-line stages.
"""
from __future__ import annotations

import difflib
from typing import Iterator, Sequence

from .align import Row, align

CHECKED_LINES = 10_000  # up to this many lines a side, difflib's diff is computed too, and the shorter kept
EXACT_PAIRS = 250_000  # a stretch between anchors up to this many line pairs is matched without autojunk
Opcode = tuple[str, int, int, int, int]  # (tag, i1, i2, j1, j2) as difflib.SequenceMatcher.get_opcodes gives


def opcodes(rows: Sequence[Row], a_len: int | None = None, b_len: int | None = None) -> list[Opcode]:
    """The alignment as difflib-style opcodes: runs of equal lines, and between them one delete, insert or
    replace (a run of changed rows, whatever pairing the side-by-side view gave them)."""
    out: list[Opcode] = []
    i = j = 0
    k = 0
    while k < len(rows):
        equal = rows[k].kind == "equal"
        i1, j1 = i, j
        while k < len(rows) and (rows[k].kind == "equal") == equal:
            row = rows[k]
            i += row.left is not None
            j += row.right is not None
            k += 1
        if equal:
            out.append(("equal", i1, i, j1, j))
        else:
            out.append(("replace" if i > i1 and j > j1 else "delete" if i > i1 else "insert", i1, i, j1, j))
    return out


def diff_opcodes(a: Sequence, b: Sequence, autojunk: bool = True) -> list[Opcode]:
    """Opcodes pairing the items of `a` and `b` (any hashable items: lines, or (stage, pass) keys).

    Up to CHECKED_LINES a side: the aligner's pairing where it marks fewer lines than difflib's matcher
    (autojunk on, as `difflib.unified_diff` has it, unless told otherwise), else difflib's. So a diff of
    any real stage never grows past what difflib printed, and on a tie reads exactly as before. Past that
    size difflib takes seconds (docs/benchmarks.md) and the aligner's pairing is used alone."""
    ours = opcodes(align(a, b, junk_above=EXACT_PAIRS))
    if max(len(a), len(b)) > CHECKED_LINES:
        return ours
    theirs = difflib.SequenceMatcher(None, a, b, autojunk=autojunk).get_opcodes()
    return ours if changed_lines(ours) < changed_lines(theirs) else theirs


def changed_lines(codes: Sequence[Opcode]) -> int:
    """Lines a diff marks `-` or `+`."""
    return sum((i2 - i1) + (j2 - j1) for tag, i1, i2, j1, j2 in codes if tag != "equal")


def grouped(codes: Sequence[Opcode], context: int = 3) -> Iterator[list[Opcode]]:
    """Hunks: the changes with up to `context` equal lines around each, as difflib groups them."""
    codes = list(codes) or [("equal", 0, 1, 0, 1)]
    if codes[0][0] == "equal":
        tag, i1, i2, j1, j2 = codes[0]
        codes[0] = tag, max(i1, i2 - context), i2, max(j1, j2 - context), j2
    if codes[-1][0] == "equal":
        tag, i1, i2, j1, j2 = codes[-1]
        codes[-1] = tag, i1, min(i2, i1 + context), j1, min(j2, j1 + context)
    group: list[Opcode] = []
    for tag, i1, i2, j1, j2 in codes:
        if tag == "equal" and i2 - i1 > 2 * context:  # a gap wide enough to end one hunk and start another
            group.append((tag, i1, min(i2, i1 + context), j1, min(j2, j1 + context)))
            yield group
            group = []
            i1, j1 = max(i1, i2 - context), max(j1, j2 - context)
        group.append((tag, i1, i2, j1, j2))
    if group and not (len(group) == 1 and group[0][0] == "equal"):
        yield group


def unified_diff(a: Sequence[str], b: Sequence[str], fromfile: str = "", tofile: str = "",
                 context: int = 3) -> list[str]:
    """The unified diff of two lists of lines (no line ends), one output line per item; [] when equal."""
    out: list[str] = []
    for group in grouped(diff_opcodes(a, b), context):
        if not out:
            out += [f"--- {fromfile}", f"+++ {tofile}"]
        first, last = group[0], group[-1]
        out.append(f"@@ -{_range(first[1], last[2])} +{_range(first[3], last[4])} @@")
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                out += [" " + line for line in a[i1:i2]]
                continue
            out += ["-" + line for line in a[i1:i2]]
            out += ["+" + line for line in b[j1:j2]]
    return out


def _range(start: int, stop: int) -> str:
    """A hunk's line range, 1-based, as unified diffs write it (`7` for one line, `6,0` for none after 6)."""
    length = stop - start
    if length == 1:
        return f"{start + 1}"
    return f"{start + 1 if length else start},{length}"
