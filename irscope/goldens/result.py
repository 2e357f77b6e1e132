"""How a fresh compile compared with its golden: the result, the comparison, and its readable report."""
from __future__ import annotations

import enum
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from ..diff.delta import Delta
from ..store.snapshot import Snapshot
from .source import SourceDrift

# Stages compared, in pipeline order (root.OMITTED says why `source` and `llir` are not).
COMPARED = ("glir", "ttir", "ttgir", "ptx", "amdgcn", "sass")
DIFF_LINES = 80  # a report shows at most this many lines of the first differing stage
LEGEND = "legend: '-' lines are the golden, '+' lines the fresh compile"


class GoldenStatus(enum.StrEnum):
    """How a fresh compile compared with its golden."""

    MATCH = "match"
    MISMATCH = "mismatch"
    MISSING = "missing"  # no golden for it yet
    VERSION_MISMATCH = "version-mismatch"  # the golden was made under another Triton
    WRITTEN = "written"  # --irscope-update / snapshot update wrote it
    SOURCE_REFRESHED = "source-refreshed"  # it matched; update rewrote its stale source.py alone (source.py)


@dataclass(frozen=True)
class GoldenResult:
    """How one fresh snapshot compared with its golden."""

    label: str  # kernel/variant/target
    status: GoldenStatus
    golden_path: Path | None = None
    fresh_path: Path | None = None
    golden_version: str = ""
    fresh_version: str = ""
    deltas: tuple[Delta, ...] = ()  # a: the golden's value, b: the fresh compile's
    stage: str | None = None  # the first stage whose normalised text differs
    diff: tuple[str, ...] = ()  # its unified diff, trimmed to the changed hunks
    diff_total: int = 0  # lines in the whole diff
    # A MATCH whose source.py is not the kernel file the fresh compile read (a warning, not a failure), or
    # the SOURCE_REFRESHED golden's drift before its refresh
    source: SourceDrift | None = None
    damaged: tuple[str, ...] = ()  # the golden's stages whose files are not what irscope wrote (not compared)
    # An update that rewrote a damaged golden.json: what was wrong with it (its test is unknown then, null,
    # unless a test wrote it)
    record_mended: str | None = None

    @property
    def ok(self) -> bool:
        return self.status in (GoldenStatus.MATCH, GoldenStatus.WRITTEN, GoldenStatus.SOURCE_REFRESHED)

    @property
    def source_stale(self) -> bool:
        """It matches, but its source.py is not the Python its IR came from (update refreshes it)."""
        return self.status == GoldenStatus.MATCH and self.source is not None

    def as_dict(self) -> dict:
        return {"label": self.label, "status": self.status,
                "golden": str(self.golden_path) if self.golden_path else None,
                "fresh": str(self.fresh_path) if self.fresh_path else None,
                "golden_triton": self.golden_version or None, "fresh_triton": self.fresh_version or None,
                "deltas": [{"name": d.key, "golden": d.a, "fresh": d.b} for d in self.deltas],
                "stage": self.stage, "diff": list(self.diff), "diff_lines": self.diff_total,
                "source_stale": self.source_stale, "source": self.source.as_dict() if self.source else None,
                "damaged": list(self.damaged), "record_mended": self.record_mended}


def triton_release(snap: Snapshot) -> str:
    return (snap.meta.get("versions") or {}).get("triton", "?")


def compare(golden: Snapshot, fresh: Snapshot) -> GoldenResult:
    """Counters, resources and normalised text stages of two snapshots; the first differing stage's diff."""
    from ..diff.snapshots import diff_snapshots

    gv, fv = triton_release(golden), triton_release(fresh)
    if gv != fv:
        return GoldenResult(fresh.label, GoldenStatus.VERSION_MISMATCH, golden.path, fresh.path, gv, fv)
    damaged = golden.damaged_stages()
    if damaged:  # edited by hand or broken in transit: not comparable, and `update` must be able to rewrite it
        return GoldenResult(fresh.label, GoldenStatus.MISMATCH, golden.path, fresh.path, gv, fv,
                            damaged=tuple(damaged))
    d = diff_snapshots(golden, fresh, context=2, trust_hashes=False)
    differing = [s for s in d.differing_stages if s in COMPARED]
    missing = [s for s in COMPARED if (s in golden.stage_files) != (s in fresh.stage_files)]
    if differing and d.stage != differing[0]:
        d = diff_snapshots(golden, fresh, stage=differing[0], context=2, trust_hashes=False)
    deltas = d.counters + d.resources
    deltas += tuple(Delta(f"stage {s}", s in golden.stage_files, s in fresh.stage_files) for s in missing)
    lines = list(d.unified) if differing else []
    if len(lines) >= 2 and lines[0].startswith("---") and lines[1].startswith("+++"):
        # say which side is which: the diff's A/B headers leave the reader guessing
        stage = differing[0]
        lines[:2] = [f"--- golden: {golden.stage_files[stage]}", f"+++ fresh: {fresh.stage_files[stage]}"]
    status = GoldenStatus.MATCH if not deltas and not differing else GoldenStatus.MISMATCH
    return GoldenResult(fresh.label, status, golden.path, fresh.path, gv, fv, deltas,
                        differing[0] if differing else None, trim(lines), len(lines))


def trim(lines: Sequence[str], limit: int = DIFF_LINES) -> tuple[str, ...]:
    """A unified diff cut to its first `limit` lines, keeping whole hunks where it can."""
    lines = list(lines)
    if len(lines) <= limit:
        return tuple(lines)
    cut = limit
    for i in range(limit, 0, -1):  # end at a hunk boundary if one is near
        if lines[i].startswith("@@") and i > limit // 2:
            cut = i
            break
    return tuple(lines[:cut]) + (f"... {len(lines) - cut} more lines of diff",)


def describe(result: GoldenResult, *, update_hint: str) -> str:
    """The readable report of a failed comparison: which snapshot, what moved, the first differing stage."""
    if result.status == "missing":
        return (f"no golden snapshot for {result.label} (expected {result.golden_path})\n"
                f"create it with: {update_hint}")
    if result.status == "version-mismatch":
        return (f"golden {result.label} was made with Triton {result.golden_version}; "
                f"this is Triton {result.fresh_version}")
    out = [f"{result.label} differs from its golden ({result.golden_path})"]
    if result.damaged:
        out.append("golden files that are not what irscope wrote (their sha256 differs from irscope.json: edited "
                   "by hand or broken in transit), so not compared:")
        out.append("  " + ", ".join(result.damaged))
    if result.deltas:
        width = max(len(d.key) for d in result.deltas)
        out.append("counters and resources that moved:")
        out += [f"  {d.key:<{width}}  {d.a} -> {d.b}" for d in result.deltas]
    if result.stage:
        out.append(f"first differing stage: {result.stage} (normalised; {result.diff_total} diff lines)")
        out.append(LEGEND)
        out += list(result.diff)
    out.append(f"fresh snapshot: {result.fresh_path}" if result.fresh_path else
               "fresh snapshot: not kept (add --keep DIR to keep it)")
    out.append(f"if the change is intended: {update_hint}")
    return "\n".join(out)
