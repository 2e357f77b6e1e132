"""Text views of a layout in the format of Triton's own layout printer (`LinearLayout.get_distributed_view`,
`get_shared_view`, Gluon's `format_tensor_view` / `format_hardware_view`), computed from the bases.

Tensor view: one cell per element, `T<thread>:<register>` for each owner (`|` between the owners of a
broadcast element), thread = warp * lanes + lane. Hardware view: per warp, one row per register and one
column per lane, each cell the element `(i,j)` it holds. Shared layouts: each element's offset as
`(row:col)` of the buffer seen as rows of the tile's width, and per offset the element it holds.
Only 1-D and 2-D shapes have a tensor view (Triton prints higher ranks as nested lists; irscope does not).
"""
from __future__ import annotations

from typing import Iterator

from .gf2 import LinearLayout


def _rows(ll: LinearLayout) -> tuple[int, int]:
    if len(ll.shape) == 1:
        return 1, ll.shape[0]
    if len(ll.shape) != 2:
        raise ValueError(f"a {len(ll.shape)}-D layout has no grid view")
    return ll.shape[0], ll.shape[1]


def _element(ll: LinearLayout, i: int, j: int):
    return (j,) if len(ll.shape) == 1 else (i, j)


def tensor_view(ll: LinearLayout) -> str:
    """Triton's tensor view: the tile, one cell per element."""
    rows, cols = _rows(ll)
    if ll.is_shared:
        cells = [[_offset_cell(ll, _element(ll, i, j), cols) for j in range(cols)] for i in range(rows)]
        sep = ","
    else:
        owners = [[[f"T{w * ll.size('lane') + l}:{r}" for w, l, r in ll.owners.get(_element(ll, i, j), [])]
                   for j in range(cols)] for i in range(rows)]
        width = max((len(o) for row in owners for cell in row for o in cell), default=0)
        cells = [["|".join(o.rjust(width) for o in cell) for cell in row] for row in owners]
        sep = ", "
    cw = max((len(c) for row in cells for c in row), default=0)
    lines = []
    for i, row in enumerate(cells):
        lead = "[[" if i == 0 else "[ "
        tail = "]]" if i == rows - 1 else "]"
        lines.append(lead + sep.join(c.rjust(cw) for c in row) + tail)
    return "\n".join(lines) + "\n"


def _offset_cell(ll: LinearLayout, element, cols: int) -> str:
    off = ll.offsets.get(tuple(element))
    return "(?:?)" if off is None else f"({off // cols}:{off % cols})"


def tensor_view_lines(ll: LinearLayout) -> int:
    return _rows(ll)[0]


def hardware_view(ll: LinearLayout) -> str:
    """Triton's hardware view: per warp, a row per register and a column per lane (distributed), or
    per offset the element it holds (shared)."""
    return "".join(line + "\n" for line in hardware_lines(ll))


def hardware_view_lines(ll: LinearLayout) -> int:
    """How many lines the hardware view has (without drawing it)."""
    if ll.is_shared:
        return 1 + ll.size("offset")
    return ll.size("warp") * (1 + ll.size("register"))


def hardware_lines(ll: LinearLayout) -> Iterator[str]:
    """The hardware view a line at a time, each computed when asked for: a reader that shows the first
    lines of a large layout pays for those alone."""
    fmt = lambda e: "(" + ",".join(map(str, e)) + ")"
    if ll.is_shared:
        yield "Block: 0:"
        for o in range(ll.size("offset")):
            yield f"Offset: {o} -> {fmt(ll.apply(offset=o))}"
        return
    for w in range(ll.size("warp")):
        yield f"Warp{w}:"
        for r in range(ll.size("register")):
            yield ", ".join(fmt(ll.apply(warp=w, lane=l, register=r)) for l in range(ll.size("lane")))

