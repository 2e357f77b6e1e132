"""Triton's per-pass dump stream, as the harness captures it from the compiler's stderr, split into dumps.

What Triton writes there (measured on Triton 3.9; docs/passes.md has the details):

- `MLIR_ENABLE_DUMP=1` without `MLIR_DUMP_PATH`: every `pm.enable_debug()` pass manager (make_ttir,
  make_ttgir, make_llir) prints the whole module *before* each pass (`// -----// IR Dump Before
  Class: argument{options} ('op' operation) //----- //`), and *after* a pass only when it fails
  (newer Triton prints after each pass too; both are read). Passes run inside another pass (the
  inliner's canonicalize on each function, Blackwell's warp-specialization pipeline) print too.
  The software pipeliner prints `SoftwarePipeliner internal IR Dump After: LowerLoops` between.
- `LLVM_IR_ENABLE_DUMP=1`: LLVM's print-after-all, for the optimisation pipeline (`; *** IR Dump
  After Pass on scope ***`: the module, one function, or only a loop's blocks) and then, because
  the option stays set, for code generation (`*** IR Dump After Name (arg) ***` and, for machine
  code, `# *** IR Dump After ... ***:`).
- irscope's own markers, which the harness writes to the same stream: where each stage starts,
  each pass manager's pipeline string (which passes it runs itself), and the module each MLIR
  stage ends with (the IR after its last pass).

No Triton import.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterable, Iterator

MARK = "//@@irscope"

_MLIR_HEAD = re.compile(r"^// -----// IR Dump (?P<when>Before|After) (?P<cls>.+?)(?P<failed> Failed)?: "
                        r"(?P<arg>unknown<.*?>|[^{ ]+)(?P<opts>\{.*\})? \('(?P<op>[^']+)' operation"
                        r"(?:: (?P<sym>[^)]*))?\) //----- //\s*$")
_MLIR_OTHER = re.compile(r"^// -----// (?P<text>.*?)\s*(?://----- //)?\s*$")
_LLVM_HEAD = re.compile(r"^; \*\*\* IR Dump After (?P<cls>\S+) on (?P<scope>.*?) \*\*\*(?P<rest>.*)$")
_LLVM_INVALID = re.compile(r"^; \*\*\* IR Pass (?P<cls>\S+) on (?P<scope>.*?) invalidated \*\*\*")
_LEGACY_HEAD = re.compile(r"^(?P<mir># )?\*\*\* IR Dump After (?P<desc>.*) \((?P<arg>[\w.-]+)\) \*\*\*:?\s*$")
_NOISE = re.compile(r"^(?:Running (?:pass|analysis)|Invalidating (?:analysis|all non-preserved)|Clearing all analysis"
                    r"|Skipping pass)")
_MARKER = re.compile(r"^//@@irscope (?P<what>stage|final|end|pipeline) ?(?P<stage>\w*)@@(?P<rest>.*)$")


def stage_marker(stage: str) -> bytes:
    """What the harness writes to the dump stream when a stage starts."""
    return f"\n{MARK} stage {stage}@@\n".encode()


def pipeline_marker(pipeline: str) -> bytes:
    """What the harness writes before a pass manager runs: its textual pipeline (one line)."""
    return f"\n{MARK} pipeline@@ {' '.join(pipeline.split())}\n".encode()


def parse_pipeline(text: str) -> list[tuple[str, str]]:
    """`any(inline{...},llvm.func(canonicalize-llvm-ir),cse)` -> [('inline', 'any'),
    ('canonicalize-llvm-ir', 'llvm.func'), ('cse', 'any')]: the passes a pass manager runs itself, in
    order, each with the op it is anchored on."""
    passes: list[tuple[str, str]] = []
    anchors: list[str] = []
    braces = 0
    word = ""
    for ch in text:
        if braces:
            braces += {"{": 1, "}": -1}.get(ch, 0)
            continue
        if ch == "{":
            braces = 1
        elif ch == "(":
            anchors.append(word.strip())
            word = ""
        elif ch in ",)":
            if word.strip():
                passes.append((word.strip(), anchors[-1] if anchors else "any"))
            word = ""
            if ch == ")" and anchors:
                anchors.pop()
        else:
            word += ch
    if word.strip():
        passes.append((word.strip(), anchors[-1] if anchors else "any"))
    return passes


def final_marker(stage: str, module_text: str) -> bytes:
    """What the harness writes when an MLIR stage ends: the module its last pass left."""
    return f"\n{MARK} final {stage}@@\n{module_text.rstrip()}\n{MARK} end@@\n".encode()


@dataclass
class Dump:
    """One block of the stream: a header (or marker) and the lines up to the next one."""

    kind: str  # mlir, mlir-internal, llvm, llvm-invalid, legacy, mir, final, stage
    head: dict
    lines: list[str] = field(default_factory=list)


def read_dumps(lines: Iterable[str], log: list[str]) -> Iterator[Dump]:
    """Split a stream of stderr lines into dumps; lines that belong to no dump go to `log`."""
    current: Dump | None = None
    in_final = False
    for raw in lines:
        line = raw.rstrip("\n")
        if line.startswith(MARK):
            m = _MARKER.match(line)
            if m:
                if current is not None:
                    yield current
                    current = None
                what = m.group("what")
                in_final = what == "final"
                if what == "stage":
                    yield Dump("stage", {"stage": m.group("stage")})
                elif what == "pipeline":
                    yield Dump("pipeline", {"passes": parse_pipeline(m.group("rest"))})
                elif what == "final":
                    current = Dump("final", {"stage": m.group("stage")})
                continue
        if in_final:
            current.lines.append(line)
            continue
        dump = _classify(line)
        if dump is not None:
            if current is not None:
                yield current
            current = dump
        elif _NOISE.match(line):
            continue
        elif current is not None:
            current.lines.append(line)
        elif line.strip():
            log.append(line)
    if current is not None:
        yield current


def _classify(line: str) -> Dump | None:
    if line.startswith("// -----// "):
        m = _MLIR_HEAD.match(line)
        if m:
            return Dump("mlir", m.groupdict())
        m = _MLIR_OTHER.match(line)
        return Dump("mlir-internal", {"text": m.group("text") if m else line[11:]})
    if "*** IR " not in line[:20]:
        return None
    m = _LLVM_HEAD.match(line)
    if m:
        return Dump("llvm", m.groupdict())
    m = _LLVM_INVALID.match(line)
    if m:
        return Dump("llvm-invalid", m.groupdict())
    m = _LEGACY_HEAD.match(line)
    if m:
        return Dump("mir" if m.group("mir") else "legacy", m.groupdict())
    return None
