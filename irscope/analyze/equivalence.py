"""Equivalence classes of each stage across snapshots: which compiles produced the same text, normalised
as `irscope diff` compares it (debug locations, absolute paths, SASS offsets left out). No Triton import.

    classes = stage_classes(snapshots)   # (("ttir", (0, 0, 0)), ("ttgir", (0, 0, 1)), ("ptx", (0, 1, 2)), ...)

Class numbers count from 0 in order of first appearance; None marks a snapshot without that stage (PTX
of an AMD compile).
"""
from __future__ import annotations

import hashlib
from typing import Sequence

from ..ir.normalize import normalize
from ..ir.stages import TEXT_STAGES
from ..store.snapshot import Snapshot


def stage_classes(snapshots: Sequence[Snapshot]) -> tuple[tuple[str, tuple[int | None, ...]], ...]:
    """For every text stage any snapshot has, in pipeline order, each snapshot's class of that stage."""
    out = []
    for stage in TEXT_STAGES:
        if not any(stage in s.stage_files for s in snapshots):
            continue
        seen: dict[str, int] = {}
        row: list[int | None] = []
        for snap in snapshots:
            if stage not in snap.stage_files:
                row.append(None)
                continue
            digest = hashlib.sha256(normalize(stage, snap.read(stage)).encode()).hexdigest()
            row.append(seen.setdefault(digest, len(seen)))
        out.append((stage, tuple(row)))
    return tuple(out)


def class_name(index: int | None) -> str:
    """A, B, ..., Z, AA, AB ...; '-' for a missing stage."""
    if index is None:
        return "-"
    name = ""
    index += 1
    while index:
        index, rest = divmod(index - 1, 26)
        name = chr(65 + rest) + name
    return name
