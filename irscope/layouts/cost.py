"""What layouts cost: how a `convert_layout` moves data (Triton's rule, from the two linear layouts) and
the bank conflicts of a shared-memory access (the count Triton's get_shared_bank_conflicts gives).

Convert rule (lib/Analysis/Utility.cpp): compose dst^-1 with src, a map from source hardware position
(register, lane, warp, block) to destination position. Peel off block, warp, lane while the map is the
identity on that dim and nothing else touches it. If only registers are left, the data stays in each
thread; if lanes and registers are left, a warp shuffles it; anything more goes through shared memory.
Triton's shuffle test has a second condition (fewer than two mixed transpositions) that is not
reproduced here, so a "shuffle" verdict can in rare cases be shared memory in the compiled code.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass

from .gf2 import LinearLayout

HW = ("register", "lane", "warp", "block")


class Movement(enum.StrEnum):
    REGISTERS = "registers"  # within each thread: registers renamed or permuted
    SHUFFLE = "shuffle"  # between lanes of a warp (shfl.sync / ds_bpermute)
    SHARED = "shared"  # through shared memory (store, barrier, load)


@dataclass(frozen=True)
class ConvertCost:
    movement: Movement
    moved: tuple[str, ...]  # the hardware dims the data moves along (what the peeling left)
    registers: int  # registers per thread on the source side
    scratch_bytes: int  # shared memory: at most one tile of the element type; else 0
    note: str

    def summary(self) -> str:
        what = {Movement.REGISTERS: "within a thread (no data movement between threads)",
                Movement.SHUFFLE: "between lanes (warp shuffles)",
                Movement.SHARED: "through shared memory"}[self.movement]
        return f"{what}; {self.note}"


def _solve(dst: LinearLayout, element: tuple[int, ...]) -> dict[str, int] | None:
    """A hardware position of `dst` holding `element` (linear: built from basis bits, preferring
    registers, then lanes, then warps, with free bits 0); None if `dst` never holds it."""
    cols = [(d, i, v) for d in HW for i, v in enumerate(dst.bases.get(d, ()))]
    offsets = [sum(s.bit_length() - 1 for s in dst.shape[:k]) for k in range(len(dst.shape))]

    def pack(vec) -> int:
        return sum(x << offsets[k] for k, x in enumerate(vec))

    pivots: dict[int, tuple[int, int]] = {}  # leading bit -> (packed vector, combination of columns)
    for j, (_, _, v) in enumerate(cols):
        x, combo = pack(v), 1 << j
        while x:
            top = x.bit_length() - 1
            if top not in pivots:
                pivots[top] = (x, combo)
                break
            px, pc = pivots[top]
            x, combo = x ^ px, combo ^ pc
    target, combo = pack(element), 0
    while target:
        top = target.bit_length() - 1
        if top not in pivots:
            return None
        px, pc = pivots[top]
        target, combo = target ^ px, combo ^ pc
    pos = {d: 0 for d in HW}
    for j, (d, i, _) in enumerate(cols):
        if combo >> j & 1:
            pos[d] |= 1 << i
    return pos


def composed(src: LinearLayout, dst: LinearLayout) -> dict[str, list[dict[str, int]]] | None:
    """dst^-1 . src as bases: for each source in-dim bit, the destination position it lands on."""
    out: dict[str, list[dict[str, int]]] = {}
    for d in HW:
        out[d] = []
        for v in src.bases.get(d, ()):
            pos = _solve(dst, tuple(v))
            if pos is None:
                return None
            out[d].append(pos)
    return out


def _trivial_over(comp: dict[str, list[dict[str, int]]], dim: str) -> bool:
    for i, pos in enumerate(comp.get(dim, ())):
        if pos != {d: (1 << i if d == dim else 0) for d in HW}:
            return False
    return all(pos[dim] == 0 for d, vs in comp.items() if d != dim for pos in vs)


def classify(src: LinearLayout, dst: LinearLayout, elem_bits: int = 32) -> ConvertCost:
    regs = src.size("register")
    comp = composed(src, dst)
    if comp is None:
        return ConvertCost(Movement.SHARED, HW, regs, _tile_bytes(src, elem_bits),
                           "the destination does not hold every source element (shapes differ)")
    left = list(HW)
    for d in ("block", "warp", "lane"):
        if _trivial_over(comp, d):
            left.remove(d)
        else:
            break
    moved = set(left)
    if moved <= {"register"}:
        return ConvertCost(Movement.REGISTERS, tuple(left), regs, 0, f"{regs} registers per thread are renamed")
    if moved == {"register", "lane"}:
        return ConvertCost(Movement.SHUFFLE, tuple(left), regs, 0,
                           f"about {regs} shuffles per thread (one per register), no shared memory")
    scratch = _tile_bytes(src, elem_bits)
    return ConvertCost(Movement.SHARED, tuple(left), regs, scratch,
                       f"{regs} stores and {dst.size('register')} loads per thread, a barrier between, "
                       f"scratch up to {scratch} bytes (one tile; Triton may use less)"
                       + (" across CTAs" if "block" in left else ""))


def _tile_bytes(ll: LinearLayout, elem_bits: int) -> int:
    n = 1
    for s in ll.shape:
        n *= s
    return n * max(elem_bits, 8) // 8


@dataclass(frozen=True)
class BankConflicts:
    conflicts: int  # extra wavefronts per access instruction, the worst over register groups (0 = none)
    vector_elems: int  # elements per lane per access
    lanes_per_wavefront: int
    wavefronts: int  # per warp-wide access, counting the conflicts

    def summary(self) -> str:
        return (f"{self.conflicts} extra wavefront{'' if self.conflicts == 1 else 's'} per access "
                f"({self.vector_elems}-element vectors, "
                f"{self.lanes_per_wavefront} lanes a wavefront)")


def _rank(vecs) -> int:
    """The dimension of the span of integers seen as GF(2) vectors."""
    pivots: dict[int, int] = {}
    for x in vecs:
        while x:
            top = x.bit_length() - 1
            if top not in pivots:
                pivots[top] = x
                break
            x ^= pivots[top]
    return len(pivots)


def _vectorisation(regs: list[int], others: list[int], max_elems: int) -> int:
    """Triton's largestVectorisation: the most elements v (a power of two, at most `max_elems`) such that,
    with the registers reordered, v registers are at offsets 1, 2, 4, ... and no other register, lane
    or warp moves an offset within such a vector. `regs` and `others` are the offsets each basis reaches."""
    v = max_elems
    while v > 1:
        bits = v.bit_length() - 1
        if all(1 << i in regs for i in range(bits)):
            rest = list(regs)
            for i in range(bits):
                rest.remove(1 << i)
            if all(o & (v - 1) == 0 for o in rest + others):
                return v
        v //= 2
    return 1


def bank_conflicts(dist: LinearLayout, shared: LinearLayout, elem_bits: int, banks: int = 32,
                   padding: tuple[tuple[int, int], ...] = ()) -> BankConflicts | None:
    """Triton's count (bankConflictsMemDesc) for ld/st.shared of `dist`'s registers into `shared`: 4-byte
    banks, 128 bytes a wavefront. The tensor may be a sub-tile of the buffer (a subslice): its elements
    are taken at the buffer's origin. `padding` (padded_shared's (interval, padding) pairs, which Triton
    has no linear layout for) moves an offset o to o + sum((o // interval) * padding), as Triton's
    lowering does, and the words of each wavefront are counted instead. None when an element of `dist`
    is not in the buffer."""
    offsets = shared.offsets

    def offset_of(e) -> int | None:
        return offsets.get(tuple(e))

    regs = [offset_of(v) for v in dist.bases.get("register", ()) if any(v)]  # broadcast registers dropped
    lanes = [offset_of(v) for v in dist.bases.get("lane", ())]
    others = lanes + [offset_of(v) for d in ("warp", "block") for v in dist.bases.get(d, ())]
    if offset_of((0,) * len(dist.shape)) is None or None in regs or None in others:
        return None
    vec = _vectorisation(regs, others, max(1, 128 // elem_bits))
    bytes_per_lane = max(1, vec * elem_bits // 8)
    # A wavefront is 128 bytes: lanes past it (the last lane bits) go to the next one.
    wave_bits = min(len(lanes), (banks * 4 // max(4, bytes_per_lane)).bit_length() - 1)
    per_wave = 1 << wave_bits
    if padding:
        return _counted(dist, offsets, elem_bits, banks, padding, vec, per_wave)
    # Lanes conflict when their offsets differ only above one bank row (vec x bank elements): the
    # extra wavefronts are 2 ** dim(span(lanes) & span(offsets above it)) - 1 (bankConflicts).
    row = max(1, banks * 32 // (vec * elem_bits)) * vec
    low = row - 1
    wave = lanes[:wave_bits]
    conflicts = (1 << (_rank(wave) - _rank(o & low for o in wave))) - 1
    return BankConflicts(conflicts, vec, per_wave, (dist.size("lane") // per_wave) * (1 + conflicts))


def _counted(dist, offsets, elem_bits, banks, padding, vec, per_wave) -> BankConflicts | None:
    """Padded buffers: the most distinct 4-byte words in one bank a wavefront, minus one."""
    lanes = dist.size("lane")

    def off(r: int, l: int) -> int | None:
        o = offsets.get(dist.apply(register=r, lane=l))
        return None if o is None else o + sum((o // interval) * pad for interval, pad in padding)

    worst, waves = 0, 0
    for r0 in range(0, dist.size("register"), vec):
        group = 0
        for g0 in range(0, lanes, per_wave):
            words: dict[int, set[int]] = {}
            for lane in range(g0, g0 + per_wave):
                o = off(r0, lane)
                if o is None:
                    return None
                for bit in range(0, max(32, vec * elem_bits), 32):
                    word = (o * elem_bits + bit) // 32
                    words.setdefault(word % banks, set()).add(word)
            extra = max(len(s) for s in words.values()) - 1
            worst = max(worst, extra)
            group += 1 + extra
        waves = max(waves, group)
    return BankConflicts(worst, vec, per_wave, waves)


def swizzle_summary(attr: str, kind: str) -> str:
    """The swizzle of a shared encoding, in words."""
    import re
    nums = dict(re.findall(r"(\w+)\s*=\s*(\d+)", attr))
    if kind == "swizzled_shared":
        if nums.get("maxPhase") == "1":
            return "no swizzle (maxPhase 1)"
        return (f"XOR swizzle: column ^= ((row / {nums.get('perPhase')}) % {nums.get('maxPhase')}) * "
                f"{nums.get('vec')}")
    if kind == "nvmma_shared":
        w = nums.get("swizzlingByteWidth", "0")
        return "no swizzle" if w == "0" else (f"{w}-byte swizzle: 16-byte chunks of each {w}-byte row XORed "
                                              f"with the row index mod {int(w) // 16}")
    if kind == "amd_rotating_shared":
        return "rotating swizzle (AMD): the phase also rotates per block of rows"
    return kind
