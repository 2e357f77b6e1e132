"""layouts.json read back: each encoding of a snapshot's TTGIR, at each shape it is used at, as a
LinearLayout (or why there is none). The file's format is in docs/snapshot-format.md; the store checks it.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass

from ..errors import UsageError
from ..store.layouts import FORMAT  # one number for the writer and the reader
from .gf2 import LinearLayout


class LayoutStatus(enum.StrEnum):
    OK = "ok"
    NOT_AVAILABLE = "not-available"  # no conversion for this encoding here (the note says why)


@dataclass(frozen=True)
class ShapedLayout:
    """One encoding at one shape."""

    shape: tuple[int, ...]
    status: LayoutStatus
    by: str = ""  # "triton" (its bindings) or "irscope" (irscope's own conversion)
    note: str = ""
    layout: LinearLayout | None = None

    def to_json(self) -> dict:
        d: dict = {"shape": list(self.shape), "status": str(self.status)}
        if self.by:
            d["by"] = self.by
        if self.note:
            d["note"] = self.note
        if self.layout is not None:
            d["bases"] = {k: [list(v) for v in vs] for k, vs in self.layout.bases.items()}
            d["out_dims"] = [f"dim{i}" for i in range(len(self.layout.shape))]
        return d

    @classmethod
    def from_json(cls, d: dict) -> "ShapedLayout":
        shape = tuple(d["shape"])
        layout = LinearLayout.of(d["bases"], shape) if d.get("bases") is not None else None
        return cls(shape, LayoutStatus(d["status"]), d.get("by", ""), d.get("note", ""), layout)


@dataclass(frozen=True)
class Encoding:
    """An encoding attribute of the module and its layouts, one per shape it is used at."""

    name: str  # as the TTGIR names it: `#blocked1`, or inline text
    attr: str  # the attribute with its aliases expanded, as Triton prints types
    kind: str  # blocked, slice, nvidia_mma, dot_op, amd_mfma, linear, nvmma_shared, swizzled_shared, ...
    space: str  # distributed, shared, tensor_memory
    layouts: tuple[ShapedLayout, ...]
    lines: tuple[int, ...] = ()  # TTGIR lines that use it

    def at(self, shape: tuple[int, ...] | None = None) -> ShapedLayout:
        """The layout at `shape`, or the first (largest tiles come first in use order) when None."""
        if shape is None:
            return self.layouts[0]
        for sl in self.layouts:
            if sl.shape == tuple(shape):
                return sl
        have = ", ".join("x".join(map(str, s.shape)) for s in self.layouts)
        raise UsageError(f"{self.name} is not used at shape {'x'.join(map(str, shape))}", f"its shapes: {have}")

    def to_json(self) -> dict:
        return {"name": self.name, "attr": self.attr, "kind": self.kind, "space": self.space,
                "lines": list(self.lines), "layouts": [s.to_json() for s in self.layouts]}

    @classmethod
    def from_json(cls, d: dict) -> "Encoding":
        return cls(d["name"], d["attr"], d["kind"], d["space"], tuple(ShapedLayout.from_json(s) for s in d["layouts"]),
                   tuple(d.get("lines", ())))


@dataclass(frozen=True)
class LayoutSet:
    """Everything layouts.json holds for one snapshot."""

    encodings: tuple[Encoding, ...]
    computed_by: str = ""  # "triton 3.9.0" or "irscope" (no Triton bindings for layouts)
    note: str = ""  # why some or all layouts are missing (a crashed conversion, an old Triton)

    def find(self, name: str) -> Encoding:
        """By name (`blocked1`, `#blocked1`), by position (`3`), or by a unique part of the name or text."""
        want = name if name.startswith("#") else f"#{name}"
        for e in self.encodings:
            if e.name == want or e.name == name:
                return e
        if name.isdigit() and 0 <= int(name) < len(self.encodings):
            return self.encodings[int(name)]
        hits = [e for e in self.encodings if name in e.name] or [e for e in self.encodings if name in e.attr]
        if len(hits) == 1:
            return hits[0]
        names = ", ".join(e.name for e in self.encodings if e.name.count("<") == 0) or "none"
        what = "matches several encodings" if hits else "names no encoding"
        raise UsageError(f"'{name}' {what} of this snapshot", f"encodings: {names} (or a number: irscope layouts SNAPSHOT)")

    def by_attr(self, attr: str) -> Encoding | None:
        return next((e for e in self.encodings if e.attr == attr), None)

    def layout(self, attr: str, shape: tuple[int, ...]) -> LinearLayout | None:
        enc = self.by_attr(attr)
        if enc is None:
            return None
        sl = next((s for s in enc.layouts if s.shape == tuple(shape)), None)
        return sl.layout if sl is not None else None

    def to_json(self) -> dict:
        return {"format": FORMAT, "computed_by": self.computed_by, "note": self.note,
                "encodings": [e.to_json() for e in self.encodings]}

    @classmethod
    def from_json(cls, d: dict) -> "LayoutSet":
        return cls(tuple(Encoding.from_json(e) for e in d.get("encodings", ())), d.get("computed_by", ""),
                   d.get("note", ""))
