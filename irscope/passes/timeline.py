"""A snapshot's pass timeline read back from `passes/`: the steps (one per pass, or per part of a pass
that dumps its own intermediate IR), what each changed, and the IR after each, decompressed on first use."""
from __future__ import annotations

import array
import enum
import lzma
import re
import shlex
import sys
from collections import Counter
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Mapping

from ..diff.unified import unified_diff
from ..errors import SnapshotError
from ..store.schema import MAX_FILE_BYTES, BOOL, COUNT, INT, STR, list_of, map_of, obj, one_of, opt, read_json
from ..store.snapshot import PASSES_DIR
from .text import canonical_mlir, normalize_line

FORMAT = 1  # of passes/index.json
INDEX_FILE = "index.json"
LINES_FILE = "lines.xz"
IRS_FILE = "irs.xz"

class StepStatus(enum.StrEnum):
    """What a pass did to the IR."""

    CHANGED = "changed"
    NO_CHANGE = "no change"
    DEBUG_ONLY = "debug info only"  # only debug locations moved
    UNKNOWN = "unknown"  # the IR before or after it was not recorded


@dataclass(frozen=True)
class Step:
    """One pass (or one part of a pass that dumps its own intermediate IR) and what it did."""

    n: int
    name: str  # the pass's pipeline name (tritongpu-pipeline, canonicalize) or LLVM's (InstCombinePass, sroa)
    pass_class: str
    stage: str  # the Triton stage that runs it: ttir, ttgir, llir, ptx, amdgcn
    form: str  # mlir, llvm or mir
    scope: str = ""
    options: str = ""
    part: str = ""  # LowerLoops, ExpandLoops, finish: a pass's own intermediate dumps
    nested: tuple[str, ...] = ()  # function-level runs it made (the inliner's canonicalize on each function)
    within: str = ""  # the pass that ran this one inside itself (tritongpu-automatic-warp-specialization)
    before: int | None = None  # index of the IR it started from
    after: int | None = None  # index of the IR it left
    changed: bool | None = None  # None: unknown (first dump of a form, or the compile stopped)
    added: int = 0  # lines, debug information left out
    removed: int = 0
    ops: Mapping[str, int] = field(default_factory=dict)  # op count changes
    failed: bool = False
    since: int | None = None  # a function dump after loop passes: its change includes steps since..n-1

    @property
    def label(self) -> str:
        return f"{self.name} › {self.part}" if self.part else self.name

    @property
    def status(self) -> StepStatus:
        """changed, no change, debug info only (only locations or metadata moved), or unknown."""
        if self.changed is None:
            return StepStatus.UNKNOWN
        if not self.changed:
            return StepStatus.NO_CHANGE
        return StepStatus.CHANGED if self.added or self.removed or self.ops else StepStatus.DEBUG_ONLY

    @property
    def top_level(self) -> bool:
        """False for the intermediate parts of a pass except the last (one row per pass)."""
        return self.part in ("", "finish")


@dataclass(frozen=True)
class IRInfo:
    form: str
    style: str  # main; internal (printed without aliases and value names); loop (only a loop's blocks)
    lines: int  # non-blank lines without debug information
    ops: Mapping[str, int]
    offset: int
    count: int


class Timeline:
    """A snapshot's pass timeline, read from its `passes/` folder."""

    def __init__(self, folder: Path, index: dict, label: str = ""):
        self.folder = folder
        self.label = label
        self.level: str = index.get("level", "mlir")
        self.initial: int | None = index.get("initial")
        self.irs = [IRInfo(i["form"], _get(i, "style", "main"), i["lines"], _get(i, "ops", {}), i["offset"],
                           i["count"]) for i in index["irs"]]
        self.steps = [_step(s) for s in index["steps"]]
        self._comparable: dict[tuple[int, bool], str] = {}
        self._normalized: dict[str, dict[int, str | None]] = {}

    def __len__(self) -> int:
        return len(self.steps)

    @cached_property
    def _lines(self) -> list[str]:
        return _read_xz(self.folder / LINES_FILE).decode("utf-8", errors="replace").split("\n")

    @cached_property
    def _flat(self) -> array.array:
        flat = array.array("I")
        data = _read_xz(self.folder / IRS_FILE)
        flat.frombytes(data[:len(data) - len(data) % flat.itemsize])
        if sys.byteorder != "little":
            flat.byteswap()
        # Every IR's line numbers lie in the files: checked once, so reading one never raises IndexError.
        lines = len(self._lines)
        if any(i.offset + i.count > len(flat) for i in self.irs) or (flat and max(flat) >= lines):
            raise SnapshotError(f"{self.folder / IRS_FILE} is damaged: it names lines its other files do not hold",
                                "recompile the snapshot with irscope compile --passes")
        return flat

    def text(self, ir: int) -> str:
        """The IR as the compiler printed it."""
        info = self.irs[ir]
        lines = self._lines
        return "\n".join(lines[i] for i in self._flat[info.offset:info.offset + info.count]) + "\n"

    def comparable(self, ir: int, raw: bool = False) -> str:
        """The IR normalised (irscope.ir.normalize for its stage), or as printed when `raw`."""
        key = (ir, raw)
        if key not in self._comparable:
            info = self.irs[ir]
            ids = self._flat[info.offset:info.offset + info.count]
            if raw:
                text = "\n".join(self._lines[i] for i in ids)
            else:
                norm = self._normalized.setdefault(info.form, {})
                lines = self._lines
                for i in ids:
                    if i not in norm:
                        norm[i] = normalize_line(info.form, lines[i])
                text = "\n".join(n for n in (norm[i] for i in ids) if n is not None)
            self._comparable[key] = text + "\n"
        return self._comparable[key]

    def previous_ir(self, step: Step) -> int | None:
        """The IR a step is measured against: its own before, else (first of a form) the last IR seen."""
        if step.before is not None:
            return step.before
        for s in reversed(self.steps[:step.n]):
            if s.after is not None:
                return s.after
        return self.initial

    def diff(self, step: Step, *, raw: bool = False, context: int = 3) -> list[str]:
        """The unified diff of what `step` did (normalised unless `raw`); [] when it changed nothing."""
        before = self.previous_ir(step)
        if before is None or step.after is None or before == step.after:
            return []
        old, new = self.comparable(before, raw), self.comparable(step.after, raw)
        if self.irs[before].style != self.irs[step.after].style and not raw:
            old, new = canonical_mlir(old), canonical_mlir(new)
        return unified_diff(old.splitlines(), new.splitlines(), f"before {step.label}", f"after {step.label}", context)

    def stage_counts(self) -> dict[str, int]:
        return dict(Counter(s.stage for s in self.steps if s.top_level))


def _get(d: dict, key: str, default):
    """`d[key]`, or `default` when it is missing or null (the schema allows null for every optional field, and a
    null scope, nested or ops was an internal error in every reader)."""
    value = d.get(key)
    return default if value is None else value


def _step(d: dict) -> Step:
    return Step(n=d["n"], name=d["name"], pass_class=_get(d, "pass", ""), stage=_get(d, "stage", ""),
                form=_get(d, "form", "mlir"), scope=_get(d, "scope", ""), options=_get(d, "options", ""),
                part=_get(d, "part", ""), nested=tuple(_get(d, "nested", ())), within=_get(d, "within", ""),
                before=d.get("before"), after=d.get("after"), changed=d.get("changed"), added=_get(d, "added", 0),
                removed=_get(d, "removed", 0), ops=_get(d, "ops", {}), failed=_get(d, "failed", False),
                since=d.get("since"))


def _read_xz(path: Path) -> bytes:
    """An xz file of the timeline, decompressed to at most MAX_FILE_BYTES: a small file that expands to
    gigabytes (an xz bomb in an untrusted folder) is refused, not decompressed. (The snapshot's loader
    refused links out of its passes/ folder.)"""
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            raise SnapshotError(f"{path} is larger than irscope reads from a snapshot",
                                "no compile writes a timeline this large; this folder is damaged or hostile")
        data = path.read_bytes()
        unpack = lzma.LZMADecompressor(format=lzma.FORMAT_XZ)
        out = unpack.decompress(data, max_length=MAX_FILE_BYTES + 1)
    except (OSError, lzma.LZMAError) as e:
        raise SnapshotError(f"{path} is damaged: {e}", "recompile the snapshot with irscope compile --passes") from None
    if len(out) > MAX_FILE_BYTES:
        raise SnapshotError(f"{path} expands to more than {MAX_FILE_BYTES >> 20} MiB, more than irscope reads from a "
                            "snapshot", "no compile writes a timeline this large; this folder is damaged or hostile")
    if not unpack.eof:
        raise SnapshotError(f"{path} is damaged: it ends before its xz stream does",
                            "recompile the snapshot with irscope compile --passes")
    return out


# The forms the recorder writes: a reader looks each up (FORM_NAMES, normalize_line), and a hostile 'evil' was
# an internal KeyError where a diff crossed from one form to another
FORM = one_of("mlir", "llvm", "mir")
_STEP = obj(("n", "name"), n=COUNT, name=STR, before=opt(COUNT), after=opt(COUNT), since=opt(COUNT),
            changed=opt(BOOL), added=opt(COUNT), removed=opt(COUNT), ops=opt(map_of(INT)), failed=opt(BOOL),
            nested=opt(list_of(STR)), form=opt(FORM), **{k: opt(STR) for k in ("pass", "stage", "scope", "options",
                                                                               "part", "within")})
_IR = obj(("form", "lines", "offset", "count"), form=FORM, style=opt(STR), lines=COUNT, ops=opt(map_of(INT)),
          offset=COUNT, count=COUNT)
INDEX_SCHEMA = obj(("steps", "irs"), format=opt(INT), level=opt(STR), initial=opt(COUNT), steps=list_of(_STEP),
                   irs=list_of(_IR))
"""passes/index.json: what every reader of a timeline may rely on (indices are checked against the files)."""


def recompile_command(snap) -> str:
    """The `irscope compile ... --passes` that compiles `snap` again, from what its irscope.json records (the
    kernel, its file, the options asked for, the folder it is in), its words shell-quoted: a snapshot's
    fields are untrusted."""
    meta = snap.meta
    kernel, function, file = (meta.get(k) for k in ("kernel", "function", "source_file"))
    function = function if isinstance(function, str) and function else kernel
    if snap.origin != "irscope" or not isinstance(kernel, str) or not kernel:
        ref = "KERNEL"
    elif not isinstance(file, str) or not file:
        ref = f"FILE.py:{function}"
    elif Path(file).stem == kernel.split(".")[0] and Path(file).parent.name == "kernels":
        ref = kernel  # a built-in (kernels/<name>.py; matmul.bf16 is matmul.py's)
    else:
        ref = f"{file}:{function}"  # a kernel of the user's file, its path relative to where the compile ran
    words = ["irscope", "compile", ref, "--target", snap.target_name or "TARGET"]
    request = meta.get("request") if isinstance(meta.get("request"), dict) else {}

    def add(flag: str, value) -> None:
        words.extend([flag, str(value).lower() if isinstance(value, bool) else str(value)])

    for key, flag in (("config", "--config"), ("num_warps", "--num-warps"), ("num_stages", "--num-stages"),
                      ("name", "--name")):
        if request.get(key) is not None:
            add(flag, request[key])
    for key, flag in (("constexprs", "--constexpr"), ("args", "--arg"), ("backend_options", "--option")):
        if isinstance(request.get(key), dict):
            for k, v in request[key].items():
                add(flag, f"{k}={str(v).lower() if isinstance(v, bool) else v}")
    for pair in request.get("divisibility") or ():
        if isinstance(pair, list) and len(pair) == 2:
            add("--divisibility", pair[1] if pair[0] is None else f"{pair[0]}={pair[1]}")
    if request.get("large_tensors") is True:
        words.append("--large-tensors")
    if request.get("line_info") is False:
        words.append("--no-line-info")
    release = re.search(r"\.triton-(\d+\.\d+\.\d+(?:[.+-]?[A-Za-z0-9]+)*)$", snap.variant or "")
    if release:  # compiled by another Triton release than the one running (irscope.harness.envs.variant_for)
        words.extend(["--triton", release.group(1)])
    path = Path(snap.path)
    if path.parent.name == snap.variant and path.parent.parent.name == kernel and len(path.parts) > 3:
        words.extend(["--out", str(path.parent.parent.parent)])  # <root>/<kernel>/<variant>/<target>
    words.append("--passes")
    return " ".join(shlex.quote(w) for w in words)


def load_timeline(snap) -> Timeline:
    """The pass timeline of a snapshot (irscope.store.snapshot.Snapshot); SnapshotError if it has none."""
    folder = Path(snap.extra.get("passes") or Path(snap.path) / PASSES_DIR)
    index_path = folder / INDEX_FILE
    if not index_path.is_file():
        raise SnapshotError(f"{snap.label} has no pass timeline", f"recompile with --passes: {recompile_command(snap)}")
    index = read_json(index_path, INDEX_SCHEMA, Path(snap.path), f"{PASSES_DIR}/{INDEX_FILE}")
    if index.get("format", FORMAT) > FORMAT:
        raise SnapshotError(f"{index_path} is a timeline of format {index['format']}; this irscope reads format "
                            f"{FORMAT}", "read it with the irscope that wrote it")
    irs = len(index["irs"])
    for ref in [index.get("initial")] + [s.get(k) for s in index["steps"] for k in ("before", "after")]:
        if ref is not None and ref >= irs:
            raise SnapshotError(f"{index_path} is damaged: a step names IR {ref} of {irs}",
                                "recompile with irscope compile --passes")
    for i, step in enumerate(index["steps"]):  # a step's number is what --diff takes and diffs count back from
        if step["n"] != i or (step.get("since") is not None and step["since"] >= i):
            raise SnapshotError(f"{index_path} is damaged: step {i} is numbered {step['n']}"
                                + ("" if step["n"] != i else f", since step {step['since']}"),
                                "recompile with irscope compile --passes")
    return Timeline(folder, index, snap.label)
