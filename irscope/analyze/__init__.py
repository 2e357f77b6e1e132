"""Counters and resources per snapshot, read from the stages' text (no Triton import).

    analysis = analyze(load_snapshot("irscope-snapshots/matmul/default/sm_90a"))
    analysis.counters["ptx.wgmma"], analysis.resources.shared, analysis.launch.launchable

Every counter key is documented in `catalog.CATALOG` and docs/analyzers.md. Each stage is read in one
regex pass; results are cached per stage in the snapshot folder (`.irscope-analysis.json`), keyed by the
stage file's sha256, so asking again costs a JSON read.
"""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass

from ..errors import SnapshotError, UsageError
from ..ir.resources import Resources
from ..ir.stages import STAGES
from ..store.folder import replace_file
from ..store.schema import BOOL, COUNT, INT, MAX_JSON_BYTES, STR, fits, inside, list_of, loads, map_of, obj, opt
from ..store.snapshot import Snapshot, keeps_caches
from . import amdgcn, catalog, ptx, sass, ttgir
from .limits import Launch, Occupancy, launch as _launch, occupancy as _occupancy
from .ttgir import Allocation, Layout

__all__ = ["Analysis", "Allocation", "Launch", "Layout", "Occupancy", "ANALYZED_STAGES", "analyze", "analyze_stage",
           "count_ops"]

ANALYZED_STAGES = ("ttgir", "ptx", "sass", "amdgcn")
ANALYZER_VERSION = 3  # bump when a counter changes meaning: cached analyses are then recomputed
CACHE_FILE = ".irscope-analysis.json"


@dataclass(frozen=True)
class StageFacts:
    """What one stage's text says: flat counters, plus TTGIR's layouts and allocations."""

    counters: dict[str, int]
    layouts: tuple[Layout, ...] = ()
    allocations: tuple[Allocation, ...] = ()


@dataclass(frozen=True)
class Analysis:
    """Counters, resources, occupancy and launchability of one snapshot."""

    label: str
    path: str
    kernel: str
    variant: str
    target: str
    status: str  # "ok" or "failed"
    stages: tuple[str, ...]  # the stages counters were read from
    counters: dict[str, int]  # flat, dotted keys: ptx.wgmma, sass.HGMMA, amdgcn.v_mfma, ttgir.layout.nvidia_mma
    layouts: tuple[Layout, ...]
    allocations: tuple[Allocation, ...]
    resources: Resources
    occupancy: Occupancy | None
    launch: Launch

    @property
    def groups(self) -> tuple[tuple[str, tuple[str, ...]], ...]:
        """(group title, counter keys) in display order: `TTGIR · layouts`, `PTX · matrix`, ..."""
        return catalog.grouped(self.counters)

    def get(self, key: str) -> int | None:
        """A counter's value: 0 when its stage was read and the thing is absent, None when the stage was not."""
        if key in self.counters:
            return self.counters[key]
        return 0 if key.split(".")[0] in self.stages else None

    @property
    def zero_keys(self) -> tuple[str, ...]:
        """Fixed-name counters of the stages analysed here that this snapshot has none of."""
        return tuple(k for k in catalog.fixed_keys([s for s in self.stages if s in ANALYZED_STAGES])
                     if k not in self.counters)

    def as_dict(self) -> dict:
        """The JSON form (`irscope stats --json`); keys documented in docs/analyzers.md."""
        return {
            "path": self.path, "label": self.label, "kernel": self.kernel, "variant": self.variant,
            "target": self.target, "status": self.status, "stages": list(self.stages),
            # Every fixed-name counter of an analysed stage is present, 0 when absent: a stable schema.
            "counters": dict(sorted({**dict.fromkeys(self.zero_keys, 0), **self.counters}.items(),
                                    key=lambda kv: catalog.sort_key(kv[0]))),
            "resources": self.resources.as_dict(),
            "occupancy": self.occupancy.as_dict() if self.occupancy else None,
            "launch": self.launch.as_dict(),
            "layouts": [_layout_dict(lay) for lay in self.layouts],
            "allocations": [_allocation_dict(a) for a in self.allocations],
        }


def count_ops(stage: str, text: str) -> dict[str, int]:
    """Counters of one stage's text (`ptx`, `sass`, `amdgcn`, `ttgir`); {} for stages with no counters."""
    return analyze_stage(stage, text).counters


def analyze_stage(stage: str, text: str) -> StageFacts:
    if stage == "ttgir":
        facts = ttgir.analyze(text)
        return StageFacts(facts.counters, facts.layouts, facts.allocations)
    if stage == "ptx":
        return StageFacts(ptx.count(text))
    if stage == "sass":
        return StageFacts(sass.count(text))
    if stage == "amdgcn":
        return StageFacts(amdgcn.count(text))
    if stage in STAGES:
        return StageFacts({})
    raise UsageError(f"unknown stage '{stage}'", f"stages with counters: {', '.join(ANALYZED_STAGES)}")


def analyze(snapshot: Snapshot, *, cache: bool = True) -> Analysis:
    """Counters of every analysed stage the snapshot holds, its resources, occupancy and launchability."""
    store = _Cache(snapshot) if cache else None
    counters: dict[str, int] = {}
    layouts: tuple[Layout, ...] = ()
    allocations: tuple[Allocation, ...] = ()
    stages = []
    for stage in ANALYZED_STAGES:
        if stage not in snapshot.stage_files:
            continue
        facts = store.get(stage) if store else None
        if facts is None:
            facts = analyze_stage(stage, snapshot.read(stage))
            if store:
                store.put(stage, facts)
        stages.append(stage)
        counters.update(facts.counters)
        if stage == "ttgir":
            layouts, allocations = facts.layouts, facts.allocations
    if store:
        store.save()
    res = launch_resources(snapshot)
    target = snapshot.target
    return Analysis(
        label=snapshot.label, path=str(snapshot.path), kernel=snapshot.kernel, variant=snapshot.variant,
        target=snapshot.target_name, status="ok" if snapshot.ok else "failed", stages=tuple(stages),
        counters=dict(sorted(counters.items(), key=lambda kv: catalog.sort_key(kv[0]))), layouts=layouts,
        allocations=allocations, resources=res,
        occupancy=_occupancy(res, target) if snapshot.ok else None,
        launch=_launch(res, target, ok=snapshot.ok, error=snapshot.error),
    )


def launch_resources(snapshot: Snapshot) -> Resources:
    """The snapshot's resources, with shared memory as the launch asks for it.

    Triton requests its shared memory / LDS dynamically at launch (`shared` in its metadata). The harness
    and the store already count it in `Resources.shared` (on AMD, added to the listing's static LDS);
    this fills it in where a snapshot's resources lack it.
    """
    res = snapshot.resources
    tmeta = _triton_metadata(snapshot)
    dynamic = tmeta.get("shared")
    changes = {}
    if isinstance(dynamic, int) and (res.shared or 0) < dynamic:
        changes["shared"] = dynamic
    if res.num_warps is None and isinstance(tmeta.get("num_warps"), int):
        changes["num_warps"] = tmeta["num_warps"]
    if res.tensor_memory is None and tmeta.get("tmem_size"):
        changes["tensor_memory"] = tmeta["tmem_size"]
    return dataclasses.replace(res, **changes) if changes else res


def _triton_metadata(snapshot: Snapshot) -> dict:
    if snapshot.meta.get("triton_metadata"):
        return snapshot.meta["triton_metadata"]
    path = snapshot.path / f"{snapshot.fn_name}.json"
    try:
        if path.stat().st_size > MAX_JSON_BYTES:
            return {}  # no compile writes one this large: read as none (the loader refused links out)
        data = loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _allocation_dict(a: Allocation) -> dict:
    # dataclasses.asdict deep-copies field by field: too slow for the thousands a huge TTGIR can hold.
    return {"name": a.name, "shape": list(a.shape), "dtype": a.dtype, "bytes": a.bytes, "buffers": a.buffers,
            "space": a.space, "encoding": a.encoding, "barrier": a.barrier}


def _layout_dict(layout: Layout) -> dict:
    return {"kind": layout.kind, "alias": layout.alias, "params": dict(layout.params), "text": layout.text}


# What a cache entry must hold to be used: it lies in the snapshot's folder, so it is as untrusted as the
# folder (an entry of another shape is analysed again, never a crash). Counters it claims are as good as the
# hashes irscope.json records, which whoever wrote the folder could have written too.
_CACHED = obj(("counters", "layouts", "allocations"), counters=map_of(INT),
              layouts=list_of(obj(("kind", "params", "alias", "text"), kind=STR, alias=STR, text=STR,
                                  params=list_of(list_of(STR)))),
              allocations=list_of(obj(("name", "shape", "dtype", "bytes", "buffers", "space"), name=STR,
                                      shape=list_of(COUNT), dtype=STR, bytes=COUNT, buffers=COUNT, space=STR,
                                      encoding=opt(STR), barrier=opt(BOOL))))


class _Cache:
    """Per-stage facts kept in the snapshot folder, valid while the stage file is the one analysed.

    Only irscope's own folders are written to, never a golden root (committed snapshots stay clean) or a
    Triton cache entry; a folder that cannot be written is simply not cached.
    """

    def __init__(self, snapshot: Snapshot):
        self.snapshot = snapshot
        self.path = snapshot.path / CACHE_FILE
        self.writable = keeps_caches(snapshot)
        self.entries: dict = {}
        self.dirty = False
        if self.writable and (self.path.exists() or self.path.is_symlink()):
            # As untrusted as the folder: a link out, a FIFO or an oversized file is no cache (inside()
            # refuses them before a byte is read), nor is a document of another shape.
            try:
                data = loads(inside(snapshot.path, self.path, CACHE_FILE, MAX_JSON_BYTES).read_text())
            except (OSError, ValueError, SnapshotError):
                data = None
            stages = data.get("stages") if isinstance(data, dict) and data.get("version") == ANALYZER_VERSION else None
            if isinstance(stages, dict):
                self.entries = {k: v for k, v in stages.items() if isinstance(v, dict)}

    def _fingerprint(self, stage: str) -> dict | None:
        recorded = self.snapshot.meta.get("stages", {}).get(stage, {})
        if not recorded.get("sha256"):
            return None
        try:
            st = self.snapshot.stage_files[stage].stat()
        except OSError:
            return None
        return {"sha256": recorded["sha256"], "size": st.st_size, "mtime_ns": st.st_mtime_ns}

    def get(self, stage: str) -> StageFacts | None:
        if not self.writable:
            return None
        entry = self.entries.get(stage)
        fp = self._fingerprint(stage)
        if not entry or fp is None or entry.get("fingerprint") != fp:
            return None
        if not fits(entry, _CACHED):
            return None  # not irscope's: analysed again
        try:
            return StageFacts(entry["counters"], tuple(Layout(lay["kind"], tuple(map(tuple, lay["params"])),
                                                              lay["alias"], lay["text"]) for lay in entry["layouts"]),
                              tuple(Allocation(**{**a, "shape": tuple(a["shape"])}) for a in entry["allocations"]))
        except (KeyError, TypeError):
            return None

    def put(self, stage: str, facts: StageFacts) -> None:
        fp = self._fingerprint(stage)
        if not self.writable or fp is None:
            return
        self.entries[stage] = {
            "fingerprint": fp, "counters": facts.counters,
            "layouts": [{"kind": lay.kind, "params": [list(p) for p in lay.params], "alias": lay.alias,
                         "text": lay.text} for lay in facts.layouts],
            "allocations": [_allocation_dict(a) for a in facts.allocations],
        }
        self.dirty = True

    def save(self) -> None:
        if not self.dirty:
            return
        try:
            replace_file(self.snapshot.path, CACHE_FILE,
                         json.dumps({"version": ANALYZER_VERSION, "stages": self.entries}).encode())
        except OSError:
            pass  # a folder that cannot be written is simply not cached
