"""A snapshot's layouts put together for reading: layouts.json through the store, and the TTGIR's
convert_layout ops and shared-memory accesses with what they cost. No Triton."""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import SnapshotError
from ..store.layouts import read_layouts
from .cost import BankConflicts, ConvertCost, bank_conflicts, classify
from .fallback import Unsupported, padding_of
from .gf2 import LinearLayout
from .model import LayoutSet
from .text import ConvertOp, SharedAccess, converts, shared_accesses


def load_layouts(snapshot) -> LayoutSet | None:
    """The snapshot's layouts.json, read and checked; None when it has none."""
    data = read_layouts(snapshot)
    if data is None:
        return None
    try:
        return LayoutSet.from_json(data)
    except (KeyError, ValueError, TypeError) as e:
        raise SnapshotError(f"{snapshot.path}/layouts.json is damaged: {e}",
                            "recompute it: irscope layouts SNAPSHOT --compute") from None


@dataclass(frozen=True)
class ConvertReport:
    op: ConvertOp
    src: LinearLayout | None
    dst: LinearLayout | None
    cost: ConvertCost | None  # None when a side has no layout (see layouts.json's notes)


@dataclass(frozen=True)
class AccessReport:
    access: SharedAccess
    conflicts: BankConflicts | None  # None when a side has no layout


def convert_reports(ttgir: str, layouts: LayoutSet) -> list[ConvertReport]:
    out = []
    for op in converts(ttgir):
        src, dst = layouts.layout(op.src, op.shape), layouts.layout(op.dst, op.shape)
        cost = classify(src, dst, op.elem_bits) if src is not None and dst is not None else None
        out.append(ConvertReport(op, src, dst, cost))
    return out


def access_reports(ttgir: str, layouts: LayoutSet) -> list[AccessReport]:
    out = []
    for a in shared_accesses(ttgir):
        dist, shared = layouts.layout(a.tensor, a.tensor_shape), layouts.layout(a.shared, a.alloc_shape)
        bc = None
        if dist is not None and shared is not None and len(dist.shape) == len(shared.shape) \
                and all(x <= y for x, y in zip(dist.shape, shared.shape)):
            try:
                padding = padding_of(a.shared)
            except Unsupported:  # not powers of two: irscope's conversion refused it, so `shared` is Triton's
                padding = None
            if padding is not None:
                bc = bank_conflicts(dist, shared, a.elem_bits, padding=padding)
        out.append(AccessReport(a, bc))
    return out
