"""What explain reads a snapshot's decisions from (`Facts`), and what it reads (`Decision`).

No Triton import: snapshots copied from elsewhere are explained the same way.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..analyze import Analysis
from ..analyze.vectors import AccessGroup, access_groups
from ..store.snapshot import Snapshot


@dataclass(frozen=True)
class Decision:
    """One choice the compiler made, as the snapshot shows it."""

    topic: str  # one of TOPICS
    subject: str  # what it is about: "tt.dot", "main loop", "load of a_ptr at line 36", "kernel"
    value: str  # what was decided: "wgmma m64n256k16", "3 buffers, cp.async 16 B", "16 B per thread"
    good: bool | None  # the fast path was taken (None: a fact, neither taken nor missed)
    evidence: tuple[tuple[str, int], ...] = ()  # the counters (or resources) that show it
    why: str = ""  # what decides it, in this compile
    stage: str = ""  # the stage the evidence is read from
    by_hand: bool = False  # the kernel's source made it (Gluon), not a pass of Triton's pipeline

    @property
    def key(self) -> str:
        return f"{self.topic}:{self.subject}"


@dataclass(frozen=True)
class Facts:
    """What the decisions are read from: the snapshot, its analysis and its load/store groups."""

    snapshot: Snapshot
    analysis: Analysis
    groups: tuple[AccessGroup, ...]
    divisibility: dict  # argument name -> the divisibility the compile assumed
    arg_values: dict  # argument name -> typical launch value
    pointer_range: dict  # argument name -> tt.pointer_range (AMD buffer ops)
    num_warps: int | None
    num_stages: int | None
    backend_options: dict


def gather(snapshot: Snapshot, analysis: Analysis) -> Facts:
    asm = "ptx" if "ptx" in snapshot.stage_files else "amdgcn" if "amdgcn" in snapshot.stage_files else ""
    ttgir = snapshot.read("ttgir") if "ttgir" in snapshot.stage_files else ""
    groups = access_groups(ttgir, snapshot.read(asm), asm) if asm else ()
    spec = snapshot.meta.get("specialisation") or []
    # A Triton cache entry or kernel dump records no specialisation: the kernel's signature in TTGIR says
    # what the compile assumed (reading "divisible by 1" there blamed 16-aligned pointers for narrow loads)
    div = {**signature_divisibility(ttgir),
           **{e["name"]: e.get("divisibility", 1) for e in spec if e.get("kind") in ("tensor", "scalar")}}
    values = {e["name"]: e.get("value") for e in spec if e.get("kind") in ("tensor", "scalar", "constant")}
    ranges = {e["name"]: (e.get("attrs") or {}).get("tt.pointer_range") for e in spec if e.get("kind") == "tensor"}
    copts = snapshot.meta.get("compile_options") or {}
    bopts = snapshot.meta.get("backend_options") or {}
    extra = {k: v for k, v in copts.items() if k not in ("num_warps", "num_stages", "constexprs")}
    if bopts.get("maxnreg"):  # Triton's parsed options: what the compile ran with, set by a config or --option
        extra.setdefault("maxnreg", bopts["maxnreg"])
    return Facts(snapshot, analysis, groups, div, values, {k: v for k, v in ranges.items() if v},
                 copts.get("num_warps") or analysis.resources.num_warps,
                 copts.get("num_stages") or bopts.get("num_stages"), extra)


_SIG_ARG = re.compile(r"(%[\w.$-]+): ")
_SIG_DIV = re.compile(r"tt\.divisibility = (\d+)")
_SIG_NAME = re.compile(r'loc\("([^"]+)"')


def signature_divisibility(ttgir: str) -> dict[str, int]:
    """Parameter name -> the `tt.divisibility` of the kernel's (first public) `tt.func` in TTGIR, 1 where it
    states none, for the pointer and integer parameters."""
    line = next((ln for ln in ttgir.splitlines() if "tt.func public" in ln and "(" in ln), "")
    starts = [(m.start(), m.group(1)) for m in _SIG_ARG.finditer(line, line.find("("))]
    out = {}
    for n, (start, ssa) in enumerate(starts):
        chunk = line[start:starts[n + 1][0] if n + 1 < len(starts) else len(line)]
        if not re.match(r"%[\w.$-]+: (?:!tt\.ptr<|i\d+\b)", chunk):
            continue
        name, div = _SIG_NAME.search(chunk), _SIG_DIV.search(chunk)
        out[name.group(1) if name else ssa.lstrip("%")] = int(div.group(1)) if div else 1
    return out


def is_gluon(snapshot: Snapshot) -> bool:
    """A Gluon kernel's compile has no TTIR: it is written in Triton's GPU dialect (docs/gluon.md)."""
    return "ttir" not in snapshot.stage_files and "ttgir" in snapshot.stage_files


def pick(counters: dict, prefix: str) -> tuple[tuple[str, int], ...]:
    return tuple((k, v) for k, v in counters.items() if k == prefix or k.startswith(prefix + "."))


def shapes(counters: dict, prefix: str) -> str:
    shapes = [k[len(prefix) + 1:] for k in counters if k.startswith(prefix + ".") and not k.endswith("B")]
    return " ".join(shapes)


def per_stage_bytes(f: Facts) -> tuple[int, int]:
    """(bytes one more pipeline stage costs, buffers now): the multi-buffered tiles' size per buffer."""
    allocs = [x for x in f.analysis.allocations if x.space == "shared" and not x.barrier and x.buffers > 1]
    return sum(x.bytes // x.buffers for x in allocs), max((x.buffers for x in allocs), default=0)
