"""Compare two snapshots: counter and resource deltas, and a unified diff of one stage.

By default stage text is normalised first (`irscope.ir.normalize`: debug locations, absolute paths, SASS
offsets), and the result says what that removed; `raw=True` compares the files as they are.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..analyze import Analysis, analyze
from ..errors import SnapshotError
from ..ir.normalize import normalize
from ..ir.stages import TEXT_STAGES
from ..store.snapshot import Snapshot
from ..targets import TARGETS
from .delta import Delta
from .unified import unified_diff

# What normalisation removes, by stage, so a diff can say so (label, pattern counted in the raw text).
_LOC_MLIR = ("debug locations", re.compile(r"\bloc\("))
_LOC_ASM = ("debug locations", re.compile(r"^\s*\.(?:loc|file)\b", re.M))
_NOISE = {
    "source": [_LOC_MLIR], "glir": [_LOC_MLIR], "ttir": [_LOC_MLIR], "ttgir": [_LOC_MLIR],
    "llir": [("debug metadata", re.compile(r"!dbg\b|^!\d+ = !DI", re.M))],
    "ptx": [_LOC_ASM], "amdgcn": [_LOC_ASM],
    "sass": [("source-line comments", re.compile(r"//## File")), ("instruction offsets", re.compile(r"/\*[0-9a-f]{4,}\*/"))],
}
_PATHS = ("absolute paths", re.compile(r"(?<![\w.])/(?:[\w.+-]+/)+[\w.+-]+"))

# Resources counted in another unit on each vendor (irscope.ir.resources.Resources): fields, unit by vendor
_SPILL_UNITS = (("spill_stores", "spill_loads"), {"nvidia": "bytes", "amd": "VGPRs"})
RESOURCE_FIELDS = ("registers", "spill_stores", "spill_loads", "stack", "local", "shared", "sgprs", "agprs", "scratch",
                   "tensor_memory", "num_warps")


@dataclass(frozen=True)
class SnapshotDiff:
    """What differs between snapshot A and snapshot B."""

    a: Analysis
    b: Analysis
    stage: str | None  # the stage diffed (None: no common text stage differs)
    raw: bool
    counters: tuple[Delta, ...]  # counters whose values differ
    resources: tuple[Delta, ...]  # resources, occupancy and launchability that differ
    differing_stages: tuple[str, ...]  # common text stages whose (normalised) text differs, in pipeline order
    only_in_a: tuple[str, ...]
    only_in_b: tuple[str, ...]
    unified: tuple[str, ...]  # the unified diff of `stage`, one line per item
    normalisation: tuple[str, ...]  # what normalising removed from `stage`, e.g. "debug locations: 412 in A, 398 in B"
    equal: bool  # the compared text is the same (the stage asked for, else every text stage and the outcome)
    outcome: tuple[str, str] | None = None  # how each compile ended, when that differs: ("ok", "failed at source: ...")


def diff_snapshots(a: Snapshot, b: Snapshot, stage: str | None = None, raw: bool = False,
                   context: int = 3, trust_hashes: bool = True, lines: bool = True) -> SnapshotDiff:
    """Deltas of counters and resources, and a unified diff of `stage` (default: the first text stage
    that differs, in pipeline order). `trust_hashes` skips reading stages whose recorded sha256 agree;
    goldens pass False, so a hand-edited or damaged file is still compared by its content. `lines=False`
    (`diff --stat`) leaves the unified diff out, which on a stage of millions of lines takes most of the time."""
    if stage is not None:
        for snap in (a, b):
            if stage not in snap.stage_files:
                raise SnapshotError(f"{snap.label} has no stage '{stage}'",
                                    f"its stages: {', '.join(snap.text_stages) or 'none'}")
        if stage in ("cubin", "hsaco"):
            raise SnapshotError(f"stage '{stage}' is a binary", "diff its disassembly instead: --stage sass")
    common = [s for s in TEXT_STAGES if s in a.stage_files and s in b.stage_files]
    texts: dict[str, tuple[str, str]] = {}

    def text(s: str) -> tuple[str, str]:
        if s not in texts:
            ta, tb = a.read(s), b.read(s)
            if not raw and ta != tb:
                ta, tb = normalize(s, ta), normalize(s, tb)
            texts[s] = (ta, tb)
        return texts[s]

    differing = tuple(s for s in common if not (trust_hashes and _same_file(a, b, s)) and text(s)[0] != text(s)[1])
    only_a = tuple(s for s in a.text_stages if s not in b.stage_files)
    only_b = tuple(s for s in b.text_stages if s not in a.stage_files)
    chosen = stage if stage is not None else (differing[0] if differing else None)
    unified: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    if chosen is not None:
        ta, tb = text(chosen)
        if lines and ta != tb:
            unified = tuple(unified_diff(ta.splitlines(), tb.splitlines(), f"A/{chosen} ({a.label})",
                                         f"B/{chosen} ({b.label})", context))
        if not raw:
            notes = _normalisation_notes(chosen, a.read(chosen), b.read(chosen), ta == tb)
    ends = (_ending(a), _ending(b))
    outcome = (outcome_of(a), outcome_of(b)) if ends[0] != ends[1] else None
    # Two compiles that failed differently have the same (few) stages: their outcome tells them apart.
    # the text, as `differing` compares it: a stage whose lines are alike but not its final newline differs
    equal = (text(stage)[0] == text(stage)[1]) if stage is not None else (not differing and not only_a and not only_b and not outcome)
    aa, ab = analyze(a), analyze(b)
    return SnapshotDiff(aa, ab, chosen, raw, counter_deltas(aa, ab), resource_deltas(aa, ab), differing, only_a,
                        only_b, unified, notes, equal, outcome)


def _ending(snap: Snapshot) -> tuple:
    """How a compile ended, to compare: ok (whatever else irscope.json holds, a missing status included), or
    the status, stage and whole message of its error."""
    if snap.ok:
        return ("ok",)
    error = snap.error if isinstance(snap.error, dict) else {}
    return (snap.meta.get("status"), error.get("stage"), error.get("message"))


def outcome_of(snap: Snapshot) -> str:
    """How a snapshot's compile ended: "ok", or "STATUS at STAGE: the error" (Triton's message ends with
    the error, after the source lines it quotes: its last line, cut at 160 characters)."""
    if snap.ok:
        return "ok"
    error = snap.error if isinstance(snap.error, dict) else {}
    last = ([ln.strip() for ln in str(error.get("message") or "").splitlines() if ln.strip()] or [""])[-1]
    last = last if len(last) <= 160 else last[:159] + "…"
    return f"{snap.meta.get('status') or 'failed'} at {error.get('stage') or '?'}" + (f": {last}" if last else "")


def counter_deltas(a: Analysis, b: Analysis) -> tuple[Delta, ...]:
    from ..analyze.catalog import sort_key
    keys = sorted(set(a.counters) | set(b.counters), key=sort_key)
    return tuple(Delta(k, a.get(k), b.get(k)) for k in keys if a.get(k) != b.get(k))


def resource_deltas(a: Analysis, b: Analysis) -> tuple[Delta, ...]:
    out = []
    vendors = [t.vendor if (t := TARGETS.get(x.target)) else None for x in (a, b)]
    for name in RESOURCE_FIELDS:
        va, vb = getattr(a.resources, name), getattr(b.resources, name)
        if name in _SPILL_UNITS[0] and None not in vendors and vendors[0] != vendors[1]:
            # NVIDIA's spills are bytes, AMD's spilled VGPRs: across vendors, a row a unit (as occupancy's),
            # never 2,032 bytes -> 0 VGPRs read as -2,032
            for vendor, v in zip(vendors, (va, vb)):
                if v is not None:
                    key = f"{name} ({_SPILL_UNITS[1][vendor]})"
                    out.append(Delta(key, v, None) if vendor == vendors[0] else Delta(key, None, v))
            continue
        if va != vb:
            out.append(Delta(name, va, vb))
    # NVIDIA's blocks/SM and AMD's waves/SIMD are two figures, never one that changed: a unit each
    units = list(dict.fromkeys(o.unit for o in (a.occupancy, b.occupancy) if o is not None))
    for unit in units:
        oa, ob = (o.value if o is not None and o.unit == unit else None for o in (a.occupancy, b.occupancy))
        if oa != ob:
            out.append(Delta(f"occupancy ({unit})", oa, ob))
    if a.launch.launchable != b.launch.launchable:
        out.append(Delta("launchable", a.launch.launchable, b.launch.launchable))
    return tuple(out)


def _same_file(a: Snapshot, b: Snapshot, stage: str) -> bool:
    """Identical bytes by the recorded sha256, without reading either file."""
    sa = a.meta.get("stages", {}).get(stage, {}).get("sha256")
    sb = b.meta.get("stages", {}).get(stage, {}).get("sha256")
    return bool(sa) and sa == sb


def _normalisation_notes(stage: str, raw_a: str, raw_b: str, equal_after: bool) -> tuple[str, ...]:
    notes = []
    for label, rx in _NOISE.get(stage, []) + [_PATHS]:
        # counted, not listed: findall on a hostile 200 MB stage of 50M `loc(` held 50M strings (4 GB)
        na, nb = (sum(1 for _ in rx.finditer(raw)) for raw in (raw_a, raw_b))
        if na or nb:
            notes.append(f"{label}: {na:,} in A, {nb:,} in B")
    if equal_after and raw_a != raw_b:
        notes.append("the raw files differ only in what normalisation removes")
    return tuple(notes)
