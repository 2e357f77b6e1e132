"""Reading a snapshot's pass timeline: the IR after every compiler pass, what each pass changed, which
pass introduced a pattern, and how two targets' pipelines differ.

`irscope compile --passes` writes the timeline (irscope.passdump parses Triton's dumps); this module
reads it back. Listing uses only `passes/index.json`; the IR texts are decompressed on first use.
No Triton, no Textual.
"""
from __future__ import annotations

import array
import difflib
import json
import lzma
import re
import sys
from collections import Counter
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Iterator, Mapping, Sequence

from .errors import SnapshotError, UsageError
from .normalize import normalize, normalize_llir, normalize_mlir
from .store import PASSES_DIR

INDEX_FILE = "index.json"
LINES_FILE = "lines.xz"
IRS_FILE = "irs.xz"

# -- text of one IR form: mlir (TTIR, TTGIR, LLVM dialect), llvm (LLVM IR), mir (machine IR) -------------

_MIR_DEBUG = re.compile(r",? debug-location !\d+|; [\w.+-]+:\d+:\d+$|^\d+B\t")  # and slot indexes
_MLIR_OP = re.compile(r"^\s*(?:%[\w$.#:-]+(?:\s*,\s*%[\w$.#:-]+)*\s*=\s*)?\"?(?P<op>[a-z_][\w$]*(?:\.[\w$]+)+)\"?"
                      r"(?=[\s(<{:]|$)")
_LL_INSTR = re.compile(r"^\s+(?:%[\w.$\"-]+ = )?(?P<op>[a-z][\w.]*)(?P<rest>.*)$")
_LL_CALLEE = re.compile(r"@(?P<name>[\w.$-]+)\(")
_LL_ASM = re.compile(r"\basm (?:\w+ )*\"(?P<asm>[^\"]*)\"")
_MIR_SLOT = re.compile(r"^\d+B\t")
_MIR_INSTR = re.compile(r"^\s+(?:[%$][^=]*= )?(?P<rest>\S.*)$")
_MIR_OP = re.compile(r"[A-Z][A-Za-z0-9_]*")
_MIR_FLAGS = {"nuw", "nsw", "exact", "disjoint", "nneg", "contract", "afn", "reassoc", "nnan", "ninf", "nsz",
              "arcp", "frame-setup", "frame-destroy", "killed", "dead", "implicit", "implicit-def"}
_ALIAS_DEF = re.compile(r"^(?P<name>#[\w$.-]+) = (?P<value>.*)$")
_SSA = re.compile(r"%[\w$.-]+")


def normalize_form(form: str, text: str) -> str:
    """irscope.normalize for the stage this form of IR belongs to (MIR: debug locations dropped too)."""
    lines = (normalize_line(form, ln) for ln in text.split("\n"))
    return "\n".join(ln for ln in lines if ln is not None)


def normalize_line(form: str, line: str) -> str | None:
    """One line of an IR, normalised as irscope.normalize normalises its stage; None when the line is
    only debug information (a `#loc` alias, a debug metadata node). Those rules all work within a
    line (for MLIR, LLVM IR and MIR), so each distinct line is normalised once and shared."""
    if not line.strip():
        return ""
    if form == "mlir":
        if "loc" in line:
            line = normalize_mlir(line)
    elif form == "llvm":
        if "!" in line or "source_filename" in line:
            line = normalize_llir(line)
    elif form == "mir":
        line = _MIR_DEBUG.sub("", line)
    if "/" in line:
        line = normalize("", line)  # absolute paths become file names
    line = line.rstrip()
    return line if line.strip() else None


def comparable_lines(form: str, text: str, *, canonical: bool = False) -> list[str]:
    """The non-blank lines of an IR without debug information, for counting what a pass changed.

    `canonical` also expands MLIR attribute aliases (`#blocked`) and renames SSA values in order of
    appearance, so that a dump printed without aliases and names (the pipeliner's internal dumps)
    compares line by line with Triton's usual dumps.
    """
    text = normalize_form(form, text)
    if canonical and form == "mlir":
        text = _canonical_mlir(text)
    return [ln for ln in text.split("\n") if ln.strip()]


def _canonical_mlir(text: str) -> str:
    aliases = {}
    kept = []
    for ln in text.split("\n"):
        m = _ALIAS_DEF.match(ln)
        if m:
            aliases[m.group("name")] = m.group("value")
        else:
            kept.append(ln)
    text = "\n".join(kept)
    if aliases:
        names = sorted(aliases, key=len, reverse=True)
        pattern = re.compile("(?:" + "|".join(re.escape(n) for n in names) + r")(?![\w$.-])")
        for _ in range(4):  # aliases may refer to aliases
            text, n = pattern.subn(lambda m: aliases[m.group(0)], text)
            if not n:
                break
    names: dict[str, str] = {}
    return _SSA.sub(lambda m: names.setdefault(m.group(0), f"%v{len(names)}"), text)


def count_ops(form: str, text: str) -> Counter:
    """Operations by name: MLIR ops (`ttg.local_load`), LLVM opcodes, calls by callee and inline
    assembly by mnemonic (`asm cp.async.cg.shared.global`), machine opcodes."""
    return Counter(op for op in (op_of(form, ln) for ln in text.split("\n")) if op)


def op_of(form: str, line: str) -> str | None:
    """The operation a line of IR holds, if it holds one."""
    if form == "mlir":
        m = _MLIR_OP.match(line)
        return m.group("op") if m else None
    if form == "mir" and line[:1].isdigit():
        line = _MIR_SLOT.sub("", line)
    if not line.startswith((" ", "\t")):
        return None
    if form == "llvm":
        m = _LL_INSTR.match(line)
        if not m:
            return None
        op, rest = m.group("op"), m.group("rest")
        if op in ("call", "tail", "musttail", "notail"):
            asm = _LL_ASM.search(rest)
            if asm:
                words = [w for w in asm.group("asm").split() if not w.startswith(("@", "{"))]
                return "asm " + (words[0].rstrip(";") if words else "")
            callee = _LL_CALLEE.search(rest)
            return "call " + callee.group("name") if callee else "call"
        return op
    if form == "mir":
        m = _MIR_INSTR.match(line)
        for word in m.group("rest").split()[:4] if m else ():
            if _MIR_OP.fullmatch(word):
                return word
            if word not in _MIR_FLAGS:
                return None
    return None


# -- the timeline -----------------------------------------------------------------------------------------

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
    def status(self) -> str:
        """changed, no change, debug info only (only locations or metadata moved), or unknown."""
        if self.changed is None:
            return "unknown"
        if not self.changed:
            return "no change"
        return "changed" if self.added or self.removed or self.ops else "debug info only"

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
        self.irs = [IRInfo(i["form"], i.get("style", "main"), i["lines"], i.get("ops", {}), i["offset"], i["count"])
                    for i in index["irs"]]
        self.steps = [_step(s) for s in index["steps"]]
        self._comparable: dict[tuple[int, bool], str] = {}
        self._normalized: dict[str, dict[int, str | None]] = {}

    def __len__(self) -> int:
        return len(self.steps)

    @cached_property
    def _lines(self) -> list[str]:
        return _read_xz(self.folder / LINES_FILE).decode().split("\n")

    @cached_property
    def _flat(self) -> array.array:
        flat = array.array("I")
        flat.frombytes(_read_xz(self.folder / IRS_FILE))
        if sys.byteorder != "little":
            flat.byteswap()
        return flat

    def text(self, ir: int) -> str:
        """The IR as the compiler printed it."""
        info = self.irs[ir]
        lines = self._lines
        return "\n".join(lines[i] for i in self._flat[info.offset:info.offset + info.count]) + "\n"

    def comparable(self, ir: int, raw: bool = False) -> str:
        """The IR normalised (irscope.normalize for its stage), or as printed when `raw`."""
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
            old, new = _canonical_mlir(old), _canonical_mlir(new)
        return list(difflib.unified_diff(old.splitlines(), new.splitlines(), f"before {step.label}",
                                         f"after {step.label}", lineterm="", n=context))

    def stage_counts(self) -> dict[str, int]:
        return dict(Counter(s.stage for s in self.steps if s.top_level))


def _step(d: dict) -> Step:
    return Step(n=d["n"], name=d["name"], pass_class=d.get("pass", ""), stage=d.get("stage", ""),
                form=d.get("form", "mlir"), scope=d.get("scope", ""), options=d.get("options", ""),
                part=d.get("part", ""), nested=tuple(d.get("nested", ())), within=d.get("within", ""), before=d.get("before"),
                after=d.get("after"), changed=d.get("changed"), added=d.get("added", 0),
                removed=d.get("removed", 0), ops=d.get("ops", {}), failed=d.get("failed", False),
                since=d.get("since"))


def _read_xz(path: Path) -> bytes:
    try:
        return lzma.decompress(path.read_bytes())
    except (OSError, lzma.LZMAError) as e:
        raise SnapshotError(f"{path} is damaged: {e}", "recompile the snapshot with irscope compile --passes") from None


def load_timeline(snap) -> Timeline:
    """The pass timeline of a snapshot (irscope.store.Snapshot); SnapshotError if it has none."""
    folder = Path(snap.extra.get("passes") or Path(snap.path) / PASSES_DIR)
    index_path = folder / INDEX_FILE
    if not index_path.is_file():
        kernel = snap.kernel if snap.origin == "irscope" else "KERNEL"
        raise SnapshotError(f"{snap.label} has no pass timeline",
                            f"recompile with --passes: irscope compile {kernel} --target {snap.target_name} --passes")
    try:
        index = json.loads(index_path.read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise SnapshotError(f"{index_path} is damaged: {e}", "recompile with irscope compile --passes") from None
    return Timeline(folder, index, snap.label)


# -- blame: where a pattern appears and disappears ----------------------------------------------------------

_OP_NAME = re.compile(r"[A-Za-z_][\w$]*(?:\.[\w$]+)+")


def compile_pattern(pattern: str) -> re.Pattern:
    """An op name (`ttg.async_copy_global_to_local`) matches that whole name; anything else is a regex."""
    if _OP_NAME.fullmatch(pattern):
        return re.compile(r"(?<![\w$.])" + re.escape(pattern) + r"(?![\w$.])")
    try:
        return re.compile(pattern)
    except re.error as e:
        raise UsageError(f"bad pattern '{pattern}': {e}",
                         "give an op name (ttg.local_load) or a Python regular expression (e.g. 'cp\\.async\\w*')")


@dataclass(frozen=True)
class Event:
    """A pattern starting (`appears`) or stopping (`disappears`) to match after a step."""

    kind: str
    step: Step
    count: int  # matching lines after the step


@dataclass(frozen=True)
class Blame:
    pattern: str
    at_start: int  # matching lines in the IR before the first pass
    events: tuple[Event, ...]

    @property
    def first(self) -> Event | None:
        return next((e for e in self.events if e.kind == "appears"), None)

    @property
    def gone(self) -> Event | None:
        """Where it disappears after its first appearance (or after the start, when it was there)."""
        first = self.first
        after = first.step.n if first and not self.at_start else -1
        return next((e for e in self.events if e.kind == "disappears" and e.step.n > after), None)


def find_pattern(tl: Timeline, pattern: str, *, raw: bool = False) -> Blame:
    """Every step after which `pattern` starts or stops matching the IR (normalised unless `raw`)."""
    regex = compile_pattern(pattern)
    counts: dict[int, int] = {}

    def count(ir: int | None) -> int:
        if ir is None:
            return 0
        if ir not in counts:
            counts[ir] = sum(1 for ln in tl.comparable(ir, raw).split("\n") if regex.search(ln))
        return counts[ir]

    at_start = count(tl.initial)
    events = []
    present = at_start > 0
    for step in tl.steps:
        if step.after is None:
            continue
        n = count(step.after)
        if n and not present:
            events.append(Event("appears", step, n))
        elif present and not n:
            events.append(Event("disappears", step, 0))
        present = n > 0
    return Blame(pattern, at_start, tuple(events))


def matching_hunks(diff: Sequence[str], pattern: str) -> tuple[list[str], int]:
    """The hunks of a unified diff whose added or removed lines match `pattern`, and how many others."""
    regex = compile_pattern(pattern)
    hunks: list[list[str]] = []
    for ln in diff[2:]:
        if ln.startswith("@@") or not hunks:
            hunks.append([])
        hunks[-1].append(ln)
    keep = [h for h in hunks if any(ln[:1] in "+-" and regex.search(ln[1:]) for ln in h[1:])]
    return diff[:2] + [ln for h in keep for ln in h], len(hunks) - len(keep)


def line_origin(tl: Timeline, step: Step, line: str, *, raw: bool = False) -> Step | None:
    """The step that introduced `line` (as found in the IR after `step`): the earliest step after
    which it is present without a break up to `step`. None when it was there from the start."""
    wanted = line.strip()

    def has(ir: int | None) -> bool:
        return ir is not None and any(ln.strip() == wanted for ln in tl.comparable(ir, raw).split("\n"))

    origin = None
    for s in reversed(tl.steps[:step.n + 1]):
        if s.after is None or s.form != step.form:
            continue
        if not has(s.after):
            break
        origin = s
        before = tl.previous_ir(s)
        if before is not None and not has(before):
            return s
    return None if origin is None or has(tl.initial) and origin.n == 0 else origin


# -- two targets' pipelines ---------------------------------------------------------------------------------

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
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, ka, kb, autojunk=False).get_opcodes():
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


def iter_changed(tl: Timeline) -> Iterator[Step]:
    return (s for s in tl.steps if s.status == "changed")
