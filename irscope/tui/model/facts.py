"""What the side panel and the compare screen's delta table show about a snapshot.

`facts_of(snapshot)` is the one place where the TUI learns numbers about a snapshot: the analysis of
`irscope.analyze` (counters, resources with launch shared memory, occupancy, launchability). No Textual
import.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from ...render.terminal import human_bytes
from ...ir.resources import Resources
from ...store.snapshot import Snapshot


@dataclass(frozen=True)
class Facts:
    """Counters (name -> value) and resources of one snapshot, plus what is known about launching it."""

    resources: Resources
    counters: Mapping[str, int] = field(default_factory=dict)
    occupancy: str | None = None  # e.g. "2 blocks/SM (limited by shared memory)"
    launchable: bool | None = None
    reasons: tuple[str, ...] = ()  # why it cannot launch


def facts_of(snapshot: Snapshot) -> Facts:
    """The numbers to show for a snapshot."""
    from ...analyze import analyze

    analysis = analyze(snapshot)
    occupancy = analysis.occupancy.describe() if analysis.occupancy else None
    return Facts(analysis.resources, dict(analysis.counters), occupancy, analysis.launch.launchable,
                 tuple(analysis.launch.reasons))


# Resource fields in the order the panel lists them, with how to print each.
RESOURCE_ROWS = (
    ("num_warps", "warps", str),
    ("registers", "registers", str),
    ("sgprs", "sgprs", str),
    ("agprs", "agprs", str),
    ("shared", "shared", human_bytes),
    ("spill_stores", "spill stores", str),
    ("spill_loads", "spill loads", str),
    ("stack", "stack", human_bytes),
    ("local", "local", human_bytes),
    ("scratch", "scratch", human_bytes),
    ("barriers", "barriers", str),
    ("tensor_memory", "tmem cols", str),
    ("occupancy", "waves/SIMD", str),
)


def resource_rows(resources: Resources) -> list[tuple[str, str]]:
    """(label, value) for every resource the snapshot knows."""
    out = []
    for name, label, fmt in RESOURCE_ROWS:
        value = getattr(resources, name)
        if value is not None:
            out.append((label, fmt(value)))
    return out


BYTES = {"shared", "stack", "local", "scratch"}


@dataclass(frozen=True)
class Delta:
    name: str
    a: int | None
    b: int | None
    is_bytes: bool = False

    def show(self, value: int | None) -> str:
        if value is None:
            return "-"
        if self.is_bytes:
            return human_bytes(value)
        return f"{value:,}" if isinstance(value, int) else str(value)

    @property
    def change_text(self) -> str:
        change = self.change
        if not change:
            return ""
        return ("+" if change > 0 else "-") + self.show(abs(change)) if self.is_bytes else f"{change:+,}"

    @property
    def change(self) -> int | None:
        return None if self.a is None or self.b is None else self.b - self.a


def deltas(a: Facts, b: Facts) -> list[Delta]:
    """Every resource and counter either side knows, A against B (resources first, then counters)."""
    out = []
    for name, label, _ in RESOURCE_ROWS:
        va, vb = getattr(a.resources, name), getattr(b.resources, name)
        if va is not None or vb is not None:
            out.append(Delta(label, va, vb, name in BYTES))
    for name in list(a.counters) + [n for n in b.counters if n not in a.counters]:
        out.append(Delta(name, a.counters.get(name), b.counters.get(name)))
    return out
