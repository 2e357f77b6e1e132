"""The axes along which two snapshots of a kernel differ, and the sibling that differs in only one.

Comparing sm_90a with gfx942, or num_warps 4 with 8, means picking the snapshot that is the same in
every other respect. No Textual import.
"""
from __future__ import annotations

import json
from typing import Sequence

from ...store.snapshot import Snapshot
from ...targets import TARGETS

# Axis name -> the key the compare screen binds to it.
AXES = {"target": "t", "num_warps": "w", "num_stages": "s", "alignment": "a", "constexprs": "k"}


def axes_of(snap: Snapshot) -> dict[str, str]:
    """The value of every axis for a snapshot, as comparable strings."""
    meta = snap.meta
    co = meta.get("compile_options") or {}
    request = meta.get("request") or {}
    alignment = [(a.get("name"), a.get("divisibility")) for a in meta.get("specialisation") or []
                 if a.get("kind") != "constexpr" and a.get("divisibility") is not None]
    if not alignment and request.get("divisibility"):
        alignment = request["divisibility"]
    return {
        "target": snap.target_name,
        "num_warps": str(co.get("num_warps")),
        "num_stages": str(co.get("num_stages")),
        "alignment": json.dumps(alignment),
        "constexprs": json.dumps(sorted((co.get("constexprs") or {}).items()), default=str),
        "options": json.dumps(sorted((request.get("backend_options") or {}).items()), default=str),
    }


def describe(snap: Snapshot, axis: str) -> str:
    """A short human form of one axis's value: `sm_90a`, `8`, `div 16`, `BLOCK_M=128 ...`."""
    value = axes_of(snap)[axis]
    if axis == "alignment":
        divs = {d for _, d in json.loads(value)}
        return "div " + "/".join(str(d) for d in sorted(divs)) if divs else "div ?"
    if axis == "constexprs":
        return " ".join(f"{k}={v}" for k, v in json.loads(value) if k.isupper()) or "-"
    return value


def _order(axis: str, value: str):
    if axis == "target":
        names = list(TARGETS)
        return (names.index(value) if value in names else len(names), value)
    try:
        return (0, int(value))
    except ValueError:
        return (1, value)


def siblings(snapshots: Sequence[Snapshot], base: Snapshot, axis: str) -> list[Snapshot]:
    """Snapshots of the same kernel that differ from `base` in `axis` only, in the axis's natural order."""
    mine = axes_of(base)
    out = []
    for s in snapshots:
        if s.kernel != base.kernel or s.path == base.path:
            continue
        theirs = axes_of(s)
        if theirs[axis] == mine[axis]:
            continue
        if axis == "target" and base.origin == "irscope":
            # Defaults such as num_stages differ per target; the variant name says what was asked for.
            same = s.variant == base.variant
        else:
            same = all(theirs[k] == mine[k] for k in mine if k != axis)
        if same:
            out.append(s)
    return sorted(out, key=lambda s: _order(axis, axes_of(s)[axis]))


def next_sibling(snapshots: Sequence[Snapshot], base: Snapshot, axis: str,
                 current: Snapshot | None = None) -> Snapshot | None:
    """The sibling after `current` along `axis` (cycling), or the first one."""
    found = siblings(snapshots, base, axis)
    if not found:
        return None
    paths = [s.path for s in found]
    if current is not None and current.path in paths:
        return found[(paths.index(current.path) + 1) % len(found)]
    return found[0]


def differing_axes(a: Snapshot, b: Snapshot) -> list[str]:
    """The axes on which two snapshots differ."""
    xa, xb = axes_of(a), axes_of(b)
    return [k for k in xa if xa[k] != xb[k]]


def partner(snapshots: Sequence[Snapshot], current: Snapshot,
            marked: Snapshot | None = None) -> tuple[Snapshot, Snapshot] | None:
    """(A, B) to compare: the marked snapshot against the current one, else the current one against its
    first sibling along the axes in order (target first). None when there is nothing to compare with."""
    if marked is not None and marked.path != current.path:
        return marked, current
    for axis in AXES:
        sibling = next_sibling(snapshots, current, axis)
        if sibling is not None:
            return current, sibling
    return None
