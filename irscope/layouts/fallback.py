"""irscope's own conversion of the common encodings to linear layouts, for where Triton's bindings are
missing or crashed: blocked, slice (of blocked or linear), linear, and 2-D swizzled_shared. It follows
Triton's rules (BlockedEncodingAttr::toLinearLayout and combineCtaCgaWithShape: a tile built fastest
dim first, repeated over the shape by more registers in `order`, bases beyond the shape zeroed for
lanes and warps and dropped for registers); tests compare it with Triton's bindings.
"""
from __future__ import annotations

import re

from .gf2 import LinearLayout
from .text import kind_of


class Unsupported(ValueError):
    """irscope has no conversion of its own for this encoding or shape."""


def _ints(attr: str, field: str) -> list[int]:
    m = re.search(rf"\b{field}\s*=\s*\[([\d,\s]*)\]", attr)
    if not m:
        raise Unsupported(f"no {field} in {attr[:60]}")
    return [int(x) for x in m.group(1).split(",") if x.strip()]


def _int(attr: str, field: str) -> int:
    m = re.search(rf"\b{field}\s*=\s*(\d+)", attr)
    if not m:
        raise Unsupported(f"no {field} in {attr[:60]}")
    return int(m.group(1))


def _pow2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def convert(attr: str, shape: tuple[int, ...]) -> LinearLayout:
    """The linear layout of `attr` (expanded text) at `shape`; Unsupported where irscope has none."""
    if not all(_pow2(s) for s in shape):
        raise Unsupported(f"shape {'x'.join(map(str, shape))} is not a power of two in every dim")
    kind = kind_of(attr)
    if kind == "blocked":
        return blocked(attr, shape)
    if kind == "linear":
        return linear(attr, shape)
    if kind == "slice":
        return slice_of(attr, shape)
    if kind == "swizzled_shared":
        return swizzled(attr, shape)
    raise Unsupported(f"irscope converts blocked, slice, linear and swizzled_shared itself, not {kind}")


def _identity(size: int, dim: int, rank: int, start: int) -> list[list[int]]:
    out = []
    for bit in range(size.bit_length() - 1):
        v = [0] * rank
        v[dim] = start << bit
        out.append(v)
    return out


def blocked(attr: str, shape: tuple[int, ...]) -> LinearLayout:
    spt, tpw, wpc, order = (_ints(attr, f) for f in ("sizePerThread", "threadsPerWarp", "warpsPerCTA", "order"))
    rank = len(order)
    if len(shape) != rank or any(len(x) != rank for x in (spt, tpw, wpc)):
        raise Unsupported(f"a rank-{rank} blocked layout at a {len(shape)}-D shape")
    if "CGALayout" in attr or "CTAsPerCGA" in attr and _ints(attr, "CTAsPerCGA") != [1] * rank:
        raise Unsupported("blocked layouts over several CTAs")
    bases: dict[str, list[list[int]]] = {"register": [], "lane": [], "warp": [], "block": []}
    reach = [1] * rank  # how far each dim's tile reaches so far
    for name, sizes in (("register", spt), ("lane", tpw), ("warp", wpc)):
        for d in order:
            bases[name] += _identity(sizes[d], d, rank, reach[d])
            reach[d] *= sizes[d]
    # The tile smaller than the shape: repeat it with more registers, fastest dim first.
    for d in order:
        while reach[d] < shape[d]:
            v = [0] * rank
            v[d] = reach[d]
            bases["register"].append(v)
            reach[d] *= 2
    return _clip(bases, shape)


def _clip(bases: dict[str, list[list[int]]], shape) -> LinearLayout:
    """Bases beyond the shape: a register's is dropped, a lane's or warp's becomes 0 (a broadcast)."""
    out: dict[str, list[list[int]]] = {}
    for name, vecs in bases.items():
        kept = []
        for v in vecs:
            w = [x if x < s else 0 for x, s in zip(v, shape)]
            if name == "register" and any(v) and not any(w):
                continue
            kept.append(w)
        out[name] = kept
    return LinearLayout.of(out, shape)


def linear(attr: str, shape: tuple[int, ...]) -> LinearLayout:
    bases = {}
    for name in ("register", "lane", "warp", "block"):
        m = re.search(rf"\b{name}\s*=\s*(\[(?:\[[\d,\s]*\],?\s*)*\])", attr)
        if not m:
            raise Unsupported(f"no {name} bases in {attr[:60]}")
        bases[name] = [[int(x) for x in v.split(",") if x.strip()] for v in re.findall(r"\[([\d,\s]*)\]", m.group(1)[1:-1])]
    ll = LinearLayout.of(bases, shape)
    if any(x >= s for vs in ll.bases.values() for v in vs for x, s in zip(v, shape)):
        raise Unsupported("a linear layout used at a smaller shape than its bases")
    if max((x for vs in ll.bases.values() for v in vs for x in v), default=0) * 2 < max(shape):
        raise Unsupported("a linear layout used at a larger shape than its bases")
    return ll


def _split_parent(attr: str) -> tuple[int, str]:
    m = re.match(r"#ttg\.slice<\{dim\s*=\s*(\d+),\s*parent\s*=\s*(.*)\}>$", attr)
    if not m:
        raise Unsupported(f"cannot read the slice {attr[:60]}")
    return int(m.group(1)), m.group(2)


def slice_of(attr: str, shape: tuple[int, ...]) -> LinearLayout:
    """A slice is its parent at the shape with the sliced dim of size 1, that dim then dropped."""
    dim, parent = _split_parent(attr)
    pshape = tuple(shape[:dim]) + (1,) + tuple(shape[dim:])
    p = convert(parent, pshape)
    return LinearLayout.of({k: [v[:dim] + v[dim + 1:] for v in vs] for k, vs in p.bases.items()}, shape)


def swizzled(attr: str, shape: tuple[int, ...]) -> LinearLayout:
    """#ttg.swizzled_shared on a 2-D tile: offset -> (row, col) with col = c XOR ((row/perPhase % maxPhase) * vec),
    rows and columns taken along `order` (its first entry is the contiguous dim)."""
    vec, per_phase, max_phase = _int(attr, "vec"), _int(attr, "perPhase"), _int(attr, "maxPhase")
    order = _ints(attr, "order")
    if len(shape) != 2 or len(order) != 2:
        raise Unsupported("irscope converts 2-D swizzled_shared layouts only")
    fast, slow = order
    cols, rows = shape[fast], shape[slow]
    bases = []
    for bit in range(cols.bit_length() - 1):
        v = [0, 0]
        v[fast] = 1 << bit
        bases.append(v)
    for bit in range(rows.bit_length() - 1):
        r = 1 << bit
        v = [0, 0]
        v[slow] = r
        v[fast] = (((r // per_phase) % max_phase) * vec) % cols
        bases.append(v)
    return LinearLayout.of({"offset": bases, "block": []}, shape)
