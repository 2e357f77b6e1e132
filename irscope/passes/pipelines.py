"""Two pass pipelines side by side: the passes both run, and those only one runs, and where."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ..diff.unified import diff_opcodes
from .timeline import Step, Timeline

@dataclass(frozen=True)
class Row:
    """One line of an alignment: a pass both pipelines run, or one only `a` or only `b` runs."""

    side: str  # both, a, b
    a: Step | None
    b: Step | None

    @property
    def stage(self) -> str:
        return (self.a or self.b).stage

    @property
    def name(self) -> str:
        return (self.a or self.b).name


def pipeline_steps(tl: Timeline) -> list[Step]:
    """One step per pass run, in order (a pass's intermediate parts folded into it)."""
    return [s for s in tl.steps if s.top_level]


def align_pipelines(a: Timeline, b: Timeline) -> list[Row]:
    """Align two pass sequences by (stage, pass name): which passes only one pipeline runs, and where."""
    sa, sb = pipeline_steps(a), pipeline_steps(b)
    ka = [(s.stage, s.name) for s in sa]
    kb = [(s.stage, s.name) for s in sb]
    rows: list[Row] = []
    for tag, i1, i2, j1, j2 in diff_opcodes(ka, kb, autojunk=False):
        if tag == "equal":
            rows += [Row("both", sa[i], sb[j]) for i, j in zip(range(i1, i2), range(j1, j2))]
        else:
            rows += [Row("a", sa[i], None) for i in range(i1, i2)]
            rows += [Row("b", None, sb[j]) for j in range(j1, j2)]
    return rows


def only_in(rows: Sequence[Row], side: str) -> list[tuple[Row, Row | None]]:
    """The passes only one side runs, each with the last pass both run before it (where it sits)."""
    out = []
    last_common = None
    for row in rows:
        if row.side == "both":
            last_common = row
        elif row.side == side:
            out.append((row, last_common))
    return out
