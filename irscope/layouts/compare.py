"""The encodings of the same kernel on several targets side by side: which target uses which encoding,
and which encodings only one target uses."""
from __future__ import annotations

from dataclasses import dataclass

from .model import LayoutSet


@dataclass(frozen=True)
class CompareRow:
    attr: str  # the encoding's text with aliases expanded (the key)
    kind: str
    names: tuple[str, ...]  # per target: its name there, "" where the target does not use it
    shapes: tuple[tuple[tuple[int, ...], ...], ...]  # per target: the shapes it is used at

    @property
    def only(self) -> int | None:
        """The index of the one target that uses it, or None."""
        used = [i for i, n in enumerate(self.names) if n]
        return used[0] if len(used) == 1 else None


def compare_layouts(sets: list[LayoutSet]) -> list[CompareRow]:
    """One row per distinct encoding over all sets, in order of first appearance."""
    order: dict[str, str] = {}
    for ls in sets:
        for e in ls.encodings:
            order.setdefault(e.attr, e.kind)
    rows = []
    for attr, kind in order.items():
        names, shapes = [], []
        for ls in sets:
            e = ls.by_attr(attr)
            names.append(e.name if e else "")
            shapes.append(tuple(s.shape for s in e.layouts) if e else ())
        rows.append(CompareRow(attr, kind, tuple(names), tuple(shapes)))
    return rows
