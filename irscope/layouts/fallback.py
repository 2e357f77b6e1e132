"""irscope's own conversion of the common encodings to linear layouts, for where Triton's bindings are
missing or crashed: blocked, slice (of blocked or linear), linear, 2-D swizzled_shared and
amd_rotating_shared (Triton 3.9's bindings cannot read the latter at all), and the offset
bases padded_shared spells out (Triton has no linear layout for it). It follows
Triton's rules (BlockedEncodingAttr::toLinearLayout and combineCtaCgaWithShape: a tile built fastest
dim first, repeated over the shape by more registers in `order`, bases beyond the shape zeroed for
lanes and warps and dropped for registers); tests compare it with Triton's bindings.

Triton's parser refuses an encoding that breaks its rules (threadsPerWarp not multiplying to the warp
size, an order that is not a permutation); where it did not run, irscope checks the same rules, so that
a module Triton rejects gets no layouts that look fine.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

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


@dataclass(frozen=True)
class ModuleContext:
    """What the module's attributes say every distributed encoding must fill (None: not written)."""

    threads_per_warp: int | None = None
    num_warps: int | None = None


def module_context(ttgir: str) -> ModuleContext:
    def attr(name: str) -> int | None:
        m = re.search(rf'"ttg\.{name}"\s*=\s*(\d+)\s*:\s*i32', ttgir)
        return int(m.group(1)) if m else None
    # Warp-specialised partitions run on warp counts of their own: their layouts need not fill num-warps.
    specialised = "ttg.warp_specialize" in ttgir
    return ModuleContext(attr("threads-per-warp"), None if specialised else attr("num-warps"))


KINDS = "blocked, slice, linear, padded_shared, swizzled_shared and amd_rotating_shared"


def convert(attr: str, shape: tuple[int, ...], context: ModuleContext | None = None) -> LinearLayout:
    """The linear layout of `attr` (expanded text) at `shape`; Unsupported where irscope has none, or
    where the encoding breaks a rule Triton's parser checks."""
    return convert_noted(attr, shape, context)[0]


def convert_noted(attr: str, shape: tuple[int, ...],
                  context: ModuleContext | None = None) -> tuple[LinearLayout, str]:
    """`convert`, and what a reader must know about the result ("" for nothing)."""
    if not all(_pow2(s) for s in shape):
        raise Unsupported(f"shape {'x'.join(map(str, shape))} is not a power of two in every dim")
    context = context or ModuleContext()
    kind = kind_of(attr)
    if kind == "blocked":
        return blocked(attr, shape, context), ""
    if kind == "linear":
        return linear(attr, shape, context), ""
    if kind == "slice":
        return slice_of(attr, shape, context), ""
    if kind == "swizzled_shared":
        return swizzled(attr, shape), ""
    if kind == "amd_rotating_shared":
        return swizzled(attr, shape, rotating=True), ""
    if kind == "padded_shared":
        return padded(attr, shape), (f"the offset bases the attribute spells out; offsets are before padding "
                                     f"({padding_text(attr)})")
    raise Unsupported(f"irscope has no conversion of its own for {kind} (it has one for {KINDS})")


def _permutation(order: list[int], rank: int, what: str) -> None:
    if sorted(order) != list(range(rank)):
        raise Unsupported(f"invalid encoding: {what} order = {order} is not a permutation of 0..{rank - 1}")


def _fills(sizes: list[int], want: int | None, field: str) -> None:
    if not all(_pow2(x) for x in sizes):
        raise Unsupported(f"invalid encoding: {field} = {sizes} has an entry that is not a power of two")
    n = 1
    for x in sizes:
        n *= x
    if want is not None and n != want:
        name = "the warp size" if field == "threadsPerWarp" else "the module's warps"
        raise Unsupported(f"invalid encoding: {field} = {sizes} multiplies to {n}, not {name} ({want})")


def _identity(size: int, dim: int, rank: int, start: int) -> list[list[int]]:
    out = []
    for bit in range(size.bit_length() - 1):
        v = [0] * rank
        v[dim] = start << bit
        out.append(v)
    return out


def blocked(attr: str, shape: tuple[int, ...], context: ModuleContext | None = None) -> LinearLayout:
    context = context or ModuleContext()
    spt, tpw, wpc, order = (_ints(attr, f) for f in ("sizePerThread", "threadsPerWarp", "warpsPerCTA", "order"))
    rank = len(order)
    if any(len(x) != rank for x in (spt, tpw, wpc)):
        raise Unsupported(f"invalid encoding: a blocked layout whose fields have different ranks "
                          f"(sizePerThread {spt}, threadsPerWarp {tpw}, warpsPerCTA {wpc}, order {order})")
    _permutation(order, rank, "blocked")
    _fills(spt, None, "sizePerThread")
    _fills(tpw, context.threads_per_warp, "threadsPerWarp")
    _fills(wpc, context.num_warps, "warpsPerCTA")
    if len(shape) != rank:
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


def linear(attr: str, shape: tuple[int, ...], context: ModuleContext | None = None) -> LinearLayout:
    context = context or ModuleContext()
    bases = {}
    for name in ("register", "lane", "warp", "block"):
        m = re.search(rf"\b{name}\s*=\s*(\[(?:\[[\d,\s]*\],?\s*)*\])", attr)
        if not m:
            raise Unsupported(f"no {name} bases in {attr[:60]}")
        bases[name] = [[int(x) for x in v.split(",") if x.strip()] for v in re.findall(r"\[([\d,\s]*)\]", m.group(1)[1:-1])]
    if any(len(v) != len(shape) for vs in bases.values() for v in vs):
        raise Unsupported(f"a linear layout whose bases are not {len(shape)}-D, used at a {len(shape)}-D shape")
    for name, want in (("lane", context.threads_per_warp), ("warp", context.num_warps)):
        if want is not None and 1 << len(bases[name]) != want:
            raise Unsupported(f"invalid encoding: {len(bases[name])} {name} bases give {1 << len(bases[name])} "
                              f"{name}s, not the module's {want}")
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


def slice_of(attr: str, shape: tuple[int, ...], context: ModuleContext | None = None) -> LinearLayout:
    """A slice is its parent at the shape with the sliced dim of size 1, that dim then dropped."""
    dim, parent = _split_parent(attr)
    if dim > len(shape):
        raise Unsupported(f"invalid encoding: a slice of dim {dim} used at a {len(shape)}-D shape")
    pshape = tuple(shape[:dim]) + (1,) + tuple(shape[dim:])
    p = convert(parent, pshape, context)
    return LinearLayout.of({k: [v[:dim] + v[dim + 1:] for v in vs] for k, vs in p.bases.items()}, shape)


def swizzled(attr: str, shape: tuple[int, ...], rotating: bool = False) -> LinearLayout:
    """#ttg.swizzled_shared on a 2-D tile: offset -> (row, col) with col = c XOR ((row/perPhase % maxPhase) * vec),
    rows and columns taken along `order` (its first entry is the contiguous dim). With `rotating`, AMD's
    #ttg.amd_rotating_shared (Triton's sharedToLinearLayoutAMDRotating): the phase is XORed with the
    block of rows it lies in, (row/perPhase/maxPhase) % maxPhase, so each block of maxPhase*perPhase rows
    uses the phases in another order."""
    kind = "amd_rotating_shared" if rotating else "swizzled_shared"
    vec, per_phase, max_phase = _int(attr, "vec"), _int(attr, "perPhase"), _int(attr, "maxPhase")
    order = _ints(attr, "order")
    _permutation(order, len(order), kind)
    for name, x in (("vec", vec), ("perPhase", per_phase), ("maxPhase", max_phase)):
        if not _pow2(x):
            raise Unsupported(f"invalid encoding: {kind} {name} = {x} is not a power of two")
    if len(shape) != 2 or len(order) != 2:
        raise Unsupported(f"irscope converts 2-D {kind} layouts only")
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
        phase = (r // per_phase) % max_phase
        if rotating:
            phase ^= (r // per_phase // max_phase) % max_phase
        v[fast] = (phase * vec) % cols
        bases.append(v)
    return LinearLayout.of({"offset": bases, "block": []}, shape)


_PADDING = re.compile(r"#ttg\.padded_shared<\[([\d:+,\s]*)\]")


def padding_of(attr: str) -> tuple[tuple[int, int], ...]:
    """padded_shared's (interval, padding) pairs: `[512:+8]` -> ((512, 8),); () for any other encoding."""
    m = _PADDING.match(attr)
    if not m:
        return ()
    pairs = tuple((int(a), int(b)) for a, b in re.findall(r"(\d+)\s*:\s*\+\s*(\d+)", m.group(1)))
    if not pairs or not all(_pow2(a) and _pow2(b) for a, b in pairs):
        raise Unsupported(f"invalid encoding: padded_shared intervals and paddings {m.group(1)} "
                          "are not powers of two")
    return pairs


def padding_text(attr: str) -> str:
    return ", ".join(f"{p} elements after every {i}" for i, p in padding_of(attr))


def padded(attr: str, shape: tuple[int, ...]) -> LinearLayout:
    """#ttg.padded_shared: its `offset` and `block` bases as written (the map from an offset before
    padding to the element; Triton's PaddedSharedEncodingAttr keeps them as its linear component)."""
    padding_of(attr)
    bases = {}
    for name in ("offset", "block"):
        m = re.search(rf"\b{name}\s*=\s*(\[(?:\[[\d,\s]*\],?\s*)*\])", attr)
        if not m:
            raise Unsupported(f"no {name} bases in {attr[:60]}")
        bases[name] = [[int(x) for x in v.split(",") if x.strip()]
                       for v in re.findall(r"\[([\d,\s]*)\]", m.group(1)[1:-1])]
    if any(len(v) != len(shape) or any(x >= s for x, s in zip(v, shape)) for v in bases["offset"]):
        raise Unsupported(f"its offset bases do not fit shape {'x'.join(map(str, shape))}")
    ll = LinearLayout.of(bases, shape)
    n = 1
    for s in shape:
        n *= s
    if ll.size("offset") != n or not ll.injective:
        raise Unsupported(f"its offset bases do not cover shape {'x'.join(map(str, shape))} once")
    return ll
