"""A linear layout over GF(2), from its bases: the same object Triton's LinearLayout is, in pure Python.

Each input dimension (register, lane, warp, block for a tensor in registers; offset, block for shared
memory) has one basis vector per input bit, with one entry per output dimension (dim0, dim1, ...).
The output for an input is the XOR of the basis vectors of its set bits; a zero vector means that bit
broadcasts (several hardware positions hold the same element).
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from functools import cached_property
from typing import Mapping

DISTRIBUTED_DIMS = ("register", "lane", "warp", "block")
SHARED_DIMS = ("offset", "block")

Element = tuple[int, ...]


@dataclass(frozen=True)
class LinearLayout:
    """in-dim -> list of basis vectors; `shape` is the size of each out-dim (dim0, dim1, ...)."""

    bases: Mapping[str, tuple[tuple[int, ...], ...]]
    shape: tuple[int, ...]

    @classmethod
    def of(cls, bases: Mapping[str, list], shape) -> "LinearLayout":
        return cls({d: tuple(tuple(int(x) for x in v) for v in vs) for d, vs in bases.items()},
                   tuple(int(s) for s in shape))

    def size(self, dim: str) -> int:
        """How many values the in-dim takes (2 ** its bit count; 1 when absent)."""
        return 1 << len(self.bases.get(dim, ()))

    @property
    def is_shared(self) -> bool:
        return "offset" in self.bases

    def apply(self, **index: int) -> Element:
        """The element at the given in-dim values (missing in-dims are 0; bits past an in-dim's size
        are ignored, as in Triton)."""
        out = [0] * len(self.shape)
        for dim, vecs in self.bases.items():
            x = index.get(dim, 0)
            for bit, v in enumerate(vecs):
                if x >> bit & 1:
                    out = [a ^ b for a, b in zip(out, v)]
        return tuple(out)

    def elements(self, *dims: str) -> list[Element]:
        """The element of every position of the in-dims `dims` (the first one fastest, the others 0),
        one XOR a position: the list doubles with each input bit."""
        out: list[Element] = [(0,) * len(self.shape)]
        for dim in dims:
            for v in self.bases.get(dim, ()):
                out += [tuple(a ^ b for a, b in zip(e, v)) for e in out]
        return out

    @cached_property
    def owners(self) -> dict[Element, list[tuple[int, int, int]]]:
        """element -> every (warp, lane, register) that holds it, in that order (block 0)."""
        cells: dict[Element, list[tuple[int, int, int]]] = {}
        positions = itertools.product(range(self.size("warp")), range(self.size("lane")), range(self.size("register")))
        for pos, e in zip(positions, self.elements("register", "lane", "warp")):
            cells.setdefault(e, []).append(pos)
        return cells

    @cached_property
    def offsets(self) -> dict[Element, int]:
        """Shared layouts: element -> its first offset (in elements) in the buffer."""
        out: dict[Element, int] = {}
        for off, e in enumerate(self.elements("offset")):
            out.setdefault(e, off)
        return out

    @property
    def injective(self) -> bool:
        if self.is_shared:
            return len(self.offsets) == self.size("offset")
        n = self.size("warp") * self.size("lane") * self.size("register")
        return len(self.owners) == n
