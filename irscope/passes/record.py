"""Build the pass timeline from Triton's dump stream (irscope.passes.dump reads it) and store it
compactly: each distinct IR once, as line numbers into a table of distinct lines (`passes/index.json`,
`lines.xz`, `irs.xz`). What each step changed is counted here, once, so listing reads only the index.
No Triton import: the harness feeds the recorder the captured stream.

The IR after MLIR pass N is the dump before pass N+1, and after the last pass of a stage the module
the stage returns. LLVM dumps are after-dumps; function dumps are spliced into the last module, so
those steps hold whole modules; a loop pass prints only its loop, kept as printed (the next whole
function's step says it includes those loop passes). The stream is read line by line: 150 MB of
LLVM dumps are never held in memory.
"""
from __future__ import annotations

import array
import hashlib
import json
import lzma
import re
import sys
import time
from collections import Counter, OrderedDict
from dataclasses import dataclass
from typing import BinaryIO, Iterable, Iterator

from ..store.snapshot import PASSES_DIR
from .dump import Dump, read_dumps
from .text import comparable_lines, normalize_line, op_of
from .timeline import FORMAT, INDEX_FILE, IRS_FILE, LINES_FILE

_DEFINE = re.compile(r"^define .*?@(?P<name>\"[^\"]+\"|[\w.$-]+)\(")
_MIR_FUNC = re.compile(r"^# Machine code for function (?P<name>[^:]+):")


@dataclass
class _Open:
    """An MLIR pass whose after-IR has not been seen yet (LLVM's dumps may come first: its slot in
    the timeline is kept)."""

    step: dict
    before: int
    nests: bool  # runs a nested pipeline: function-scoped dumps until the next top-level pass are its own
    slot: int


class PassRecorder:
    """Reads captured dump streams and builds the timeline (`capture()` gives the result)."""

    def __init__(self, level: str = "mlir"):
        self.level = level
        self.dump_bytes = 0  # how much Triton printed
        self.read_seconds = 0.0
        self._line_ids: dict[str, int] = {}
        self._lines: list[str] = []
        self._ir_ids: dict[bytes, int] = {}
        self._ir_offsets: list[tuple[int, int]] = []
        self._ir_info: list[dict] = []
        self._flat = array.array("I")
        self.steps: list[dict] = []
        self._stage = "ttir"
        self._open: _Open | None = None
        self._initial: int | None = None
        self._expected: list[tuple[str, bool]] = []  # the pass manager's own passes (name, on functions)
        self._position = 0
        self._top = ""  # the last pass of that pipeline seen
        self._llvm_module: list[str] | None = None  # the reconstructed LLVM module, as lines
        self._llvm_ir: int | None = None
        self._loop_ir: int | None = None  # the last loop dump since the last whole-function dump
        self._loop_since: int | None = None  # the first loop step since then
        self._mir: OrderedDict[str, list[str]] = OrderedDict()
        self._mir_ir: int | None = None
        self._counters: OrderedDict[tuple[int, bool], Counter] = OrderedDict()
        self._norm_ids: dict[str, int] = {}
        self._norm: dict[str, dict[int, int | None]] = {}  # form -> line -> its normalised line (or None)
        self._ops: dict[str, dict[int, str | None]] = {}  # form -> line -> the op it holds

    # -- reading -------------------------------------------------------------------------------

    def read(self, stream: BinaryIO) -> str:
        """Consume a captured stderr stream; returns what in it was not a dump (warnings, errors)."""
        started = time.perf_counter()
        log: list[str] = []
        for dump in read_dumps(self._decoded(stream), log):
            self._take(dump)
        self._close_open(None)
        self.read_seconds += time.perf_counter() - started
        return "\n".join(log) + ("\n" if log else "")

    def _decoded(self, stream: Iterable[bytes]) -> Iterator[str]:
        for raw in stream:
            self.dump_bytes += len(raw)
            yield raw.decode("utf-8", errors="replace")

    def _take(self, d: Dump) -> None:
        if d.kind == "stage":
            self._close_open(None)
            self._stage = d.head["stage"]
        elif d.kind == "pipeline":
            self._expected = [(name, anchor not in ("any", "builtin.module")) for name, anchor in d.head["passes"]]
            self._position = 0
        elif d.kind == "final":
            self._close_open(self._intern(_trim(d.lines), "mlir"))
        elif d.kind == "mlir":
            self._take_mlir(d)
        elif d.kind == "mlir-internal":
            self._take_internal(d)
        elif d.kind in ("llvm", "llvm-invalid", "legacy"):
            self._take_llvm(d)
        elif d.kind == "mir":
            self._take_mir(d)

    def _take_mlir(self, d: Dump) -> None:
        h = d.head
        name = h["arg"] if not h["arg"].startswith("unknown<") else h["cls"].split("::")[-1]
        on_function = h["op"] != "builtin.module"
        if h["when"] == "After":
            if self._open is not None and h["cls"].strip() == self._open.step["pass"]:
                if h["failed"]:
                    self._open.step["failed"] = True
                self._close_open(self._intern(_trim(d.lines), "mlir"))
            return
        within = self._nesting(name, on_function)
        if within is None:  # a function-level run inside the open pass (the inliner's canonicalize)
            self._open.step.setdefault("nested", []).append(f"{name} on {h['sym'] or h['op']}")
            return
        ir = self._intern(_trim(d.lines), "mlir")
        if self._initial is None:
            self._initial = ir
        self._close_open(ir)
        step = {"name": name, "pass": h["cls"].strip(), "options": (h["opts"] or "")[1:-1].strip(),
                "stage": self._stage, "form": "mlir", "scope": h["op"] + (f" {h['sym']}" if h["sym"] else "")}
        if within:
            step["within"] = within
        self._open = _Open(step, ir, "pipeline=" in (h["opts"] or ""), self._reserve())
        if not within:
            self._top = name

    def _nesting(self, name: str, on_function: bool) -> str | None:
        """'' for a pass of the pass manager's own pipeline, the enclosing pass's name for one run
        inside another pass, None for a function-level run to fold into the open pass."""
        if self._expected:
            if self._position < len(self._expected) and self._expected[self._position] == (name, on_function):
                self._position += 1
                return ""
            if on_function and self._position and self._expected[self._position - 1] == (name, True) \
                    and self._open is not None and self._open.step["name"] == name:
                return ""  # an op-anchored pass runs once per function
            if self._open is None:
                return ""
            return None if on_function else self._top
        # no pipeline string (an older Triton): passes that declare a nested pipeline own the
        # function-level runs that follow them
        if self._open is not None and self._open.nests and on_function:
            return None
        return ""

    def _take_internal(self, d: Dump) -> None:
        """A pass's own intermediate dump (the pipeliner's LowerLoops, ExpandLoops): a step of its own."""
        if self._open is None:
            return
        label = re.sub(r"^.*IR Dump After:?\s*", "", d.head["text"]).strip() or d.head["text"]
        ir = self._intern(_trim(d.lines), "mlir", style="internal")
        self._add({**self._open.step, "part": label}, self._open.before, ir, slot=self._open.slot)
        self._open.slot = self._reserve()
        self._open.before = ir
        self._open.step["after_parts"] = True

    def _close_open(self, after: int | None) -> None:
        if self._open is None:
            return
        o, self._open = self._open, None
        step = o.step
        if step.pop("after_parts", False):
            step["part"] = "finish"
        self._add(step, o.before, after, slot=o.slot)

    def _take_llvm(self, d: Dump) -> None:
        h = d.head
        if d.kind == "legacy":
            name, cls, scope = h["arg"], h["desc"], ""
        else:
            name = cls = h["cls"]
            scope = h["scope"]
        body = _trim(d.lines)
        kind = "invalidated" if d.kind == "llvm-invalid" else _llvm_kind(body, scope)
        detail = scope[len("loop "):] if scope.startswith("loop ") else scope
        step = {"name": name, "pass": cls, "stage": self._stage, "form": "llvm",
                "scope": kind + (f" {detail}" if detail and kind != "module" else "")}
        if kind in ("loop", "invalidated"):
            # A loop pass prints only the loop's blocks: kept as printed, compared with the loop as
            # the previous loop pass printed it; the next whole-function dump catches up.
            ir = self._intern(body, "llvm", style="loop") if kind == "loop" else self._loop_ir
            if self._loop_since is None:
                self._loop_since = len(self.steps)
            self._add(step, self._loop_ir, ir)
            self._loop_ir = ir
            return
        if kind == "module" or self._llvm_module is None:
            self._llvm_module = body
        else:
            self._llvm_module = _splice_functions(self._llvm_module, body)
        before, self._llvm_ir = self._llvm_ir, self._intern(self._llvm_module, "llvm")
        if self._loop_since is not None:
            step["since"] = self._loop_since
            self._loop_since = self._loop_ir = None
        self._add(step, before, self._llvm_ir)

    def _take_mir(self, d: Dump) -> None:
        body = _trim(d.lines)
        name = next((m.group("name") for m in map(_MIR_FUNC.match, body) if m), "?")
        self._mir[name] = body
        before = self._mir_ir
        self._mir_ir = self._intern([ln for fn in self._mir.values() for ln in fn + [""]][:-1], "mir")
        self._add({"name": d.head["arg"], "pass": d.head["desc"], "stage": self._stage, "form": "mir",
                   "scope": f"function {name}"}, before, self._mir_ir)

    # -- storing -------------------------------------------------------------------------------

    def _intern(self, lines: list[str], form: str, style: str = "main") -> int:
        ids = array.array("I", (self._line_id(ln) for ln in lines))
        key = hashlib.blake2b(ids.tobytes(), digest_size=16).digest() + form.encode() + style.encode()
        found = self._ir_ids.get(key)
        if found is not None:
            return found
        index = len(self._ir_offsets)
        self._ir_ids[key] = index
        self._ir_offsets.append((len(self._flat), len(ids)))
        self._flat.extend(ids)
        norm = self._norm.setdefault(form, {})
        ops = self._ops.setdefault(form, {})
        for i in ids:
            if i not in norm:
                line = self._lines[i]
                n = normalize_line(form, line)
                norm[i] = self._norm_ids.setdefault(n, len(self._norm_ids)) if n else None
                ops[i] = op_of(form, line)
        counter = Counter(norm[i] for i in ids if norm[i] is not None)
        self._remember((index, False), counter)
        self._ir_info.append({"form": form, "style": style, "lines": sum(counter.values()),
                              "ops": dict(sorted(Counter(ops[i] for i in ids if ops[i]).items()))})
        return index

    def _line_id(self, line: str) -> int:
        found = self._line_ids.get(line)
        if found is None:
            found = self._line_ids[line] = len(self._lines)
            self._lines.append(line)
        return found

    def _text(self, ir: int) -> str:
        start, n = self._ir_offsets[ir]
        return "\n".join(self._lines[i] for i in self._flat[start:start + n])

    def _remember(self, key: tuple[int, bool], counter: Counter) -> None:
        self._counters[key] = counter
        self._counters.move_to_end(key)
        while len(self._counters) > 6:
            self._counters.popitem(last=False)

    def _counter(self, ir: int, canonical: bool) -> Counter:
        key = (ir, canonical)
        if key not in self._counters:
            form = self._ir_info[ir]["form"]
            if canonical:
                self._remember(key, Counter(comparable_lines(form, self._text(ir), canonical=True)))
            else:
                start, n = self._ir_offsets[ir]
                norm = self._norm[form]
                self._remember(key, Counter(norm[i] for i in self._flat[start:start + n] if norm[i] is not None))
        return self._counters[key]

    def _reserve(self) -> int:
        self.steps.append({})
        return len(self.steps) - 1

    def _add(self, step: dict, before: int | None, after: int | None, slot: int | None = None) -> None:
        step = {"n": len(self.steps) if slot is None else slot, **step, "before": before, "after": after}
        if before is not None and after is not None:
            step["changed"] = before != after
            b, a = self._ir_info[before], self._ir_info[after]
            if step["changed"] and b["form"] == a["form"]:
                canonical = b["style"] != a["style"]
                old, new = self._counter(before, canonical), self._counter(after, canonical)
                step["added"] = sum((new - old).values())
                step["removed"] = sum((old - new).values())
            else:
                step["added"] = step["removed"] = 0
            delta = Counter(a["ops"])
            delta.subtract(b["ops"])
            step["ops"] = {k: v for k, v in sorted(delta.items()) if v}
        if slot is None:
            self.steps.append(step)
        else:
            self.steps[slot] = step

    def capture(self) -> "PassCapture":
        return PassCapture(self.level, self.steps, self._initial, self._ir_info, self._ir_offsets, self._flat,
                           self._lines, self.dump_bytes, self.read_seconds)


def _trim(lines: list[str]) -> list[str]:
    start, end = 0, len(lines)
    while start < end and not lines[start].strip():
        start += 1
    while end > start and not lines[end - 1].strip():
        end -= 1
    return lines[start:end]


def _llvm_kind(body: list[str], scope: str) -> str:
    first = next((ln for ln in body if ln.strip()), "")
    if scope.startswith("loop") or first.startswith(("; Preheader:", "; Loop:")):
        return "loop"
    if scope == "[module]" or first.startswith(("; ModuleID", "source_filename", "target ")):
        return "module"
    if scope.startswith("("):
        return "cgscc"
    return "function"


def _function_spans(module: list[str]) -> dict[str, tuple[int, int]]:
    """name -> [start, end) of each function definition, its `; Function Attrs` comment included."""
    spans = {}
    i = 0
    while i < len(module):
        m = _DEFINE.match(module[i])
        if m:
            start = i - 1 if i and module[i - 1].startswith("; Function Attrs") else i
            end = i
            while end < len(module) and module[end] != "}":
                end += 1
            spans[m.group("name")] = (start, end + 1)
            i = end + 1
        else:
            i += 1
    return spans


def _splice_functions(module: list[str], body: list[str]) -> list[str]:
    """Replace the functions a function (or call-graph) dump printed in the module."""
    out = list(module)
    for name, (start, end) in _function_spans(body).items():
        spans = _function_spans(out)
        if name in spans:
            s, e = spans[name]
            out[s:e] = body[start:end]
        else:
            out += [""] + body[start:end]
    return out


@dataclass
class PassCapture:
    """The pass timeline of one compile, ready to be written as `passes/` in a snapshot folder."""

    level: str
    steps: list[dict]
    initial: int | None
    irs: list[dict]
    offsets: list[tuple[int, int]]
    flat: array.array
    lines: list[str]
    dump_bytes: int = 0
    read_seconds: float = 0.0

    def summary(self) -> dict:
        return {"level": self.level, "steps": len(self.steps), "changed": sum(1 for s in self.steps if s.get("changed")),
                "distinct_irs": len(self.irs), "dump_bytes": self.dump_bytes, "read_s": round(self.read_seconds, 3)}

    def files(self) -> dict[str, bytes]:
        """The files of `passes/`: the index (JSON), the distinct lines and the IRs as line numbers (xz)."""
        flat = array.array("I", self.flat)
        if sys.byteorder != "little":
            flat.byteswap()
        irs = [{**info, "offset": off, "count": n} for info, (off, n) in zip(self.irs, self.offsets)]
        index = {"format": FORMAT, "level": self.level, "initial": self.initial, "steps": self.steps, "irs": irs,
                 "semantics": "each step's `after` is the IR after that pass (or pass part); `before` the IR it "
                              "started from; both index `irs`"}
        return {f"{PASSES_DIR}/{INDEX_FILE}": json.dumps(index, separators=(",", ":")).encode(),
                f"{PASSES_DIR}/{LINES_FILE}": lzma.compress("\n".join(self.lines).encode(), preset=1),
                f"{PASSES_DIR}/{IRS_FILE}": lzma.compress(flat.tobytes(), preset=1)}
