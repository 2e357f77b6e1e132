"""The functions and loops of a stage's text, so a reader can jump between them.

Loops are found the way each format shows them: `scf.for`/`scf.while` in TTIR and TTGIR, `for`/`while`
in Python, LLVM's `Loop Header` comments in PTX and AMDGCN, and a backward branch (a label that a later
branch in the same function targets) in LLIR and SASS. Plain text processing; no Triton, no Textual.
"""
from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Landmark:
    """A line worth jumping to: the start of a function or of a loop."""

    line: int  # 0-based
    kind: str  # "function" or "loop"
    name: str


_PY_DEF = re.compile(r"^\s*(?:async\s+)?def\s+(\w+)")
_PY_LOOP = re.compile(r"^\s*(for|while)\b")
_MLIR_FUNC = re.compile(r"^\s*(?:tt|llvm|func)\.func\b.*?@([\w$.]+)")
_MLIR_LOOP = re.compile(r"\b(scf\.for|scf\.while|scf\.parallel)\b")
_LL_DEFINE = re.compile(r"^define\b.*?@([\w$.\"]+)\(")
_LL_LABEL = re.compile(r"^([\w.$-]+):")
_LL_BRANCH = re.compile(r"label\s+%([\w.$-]+)")
_PTX_FUNC = re.compile(r"^\s*(?:\.visible\s+|\.extern\s+|\.weak\s+)*\.(?:entry|func)\s+(?:\([^)]*\)\s*)?([\w$]+)")
_ASM_LOOP_HEADER = re.compile(r"^([\w.$]+):.*Loop Header")
_AMD_FUNC_TYPE = re.compile(r"^\s*\.type\s+([\w.$]+),\s*@function")
_SASS_LABEL = re.compile(r"^(\.L_x_\d+):")
_SASS_BRANCH = re.compile(r"\b(?:BRA|BRX|JMP)\b[^`]*`\((\.L_x_\d+)\)")
_PY_LINES = re.compile(r"\r\n|\r|\n")
_SASS_FUNC = re.compile(r"^\s*\.type\s+([\w$.]+),@function")


def outline(stage: str, text: str) -> list[Landmark]:
    """Functions and loops of a stage (`python` for the kernel's source), in line order."""
    # Python's lines end at newlines only: str.splitlines also breaks at a form feed, which PEP 8 allows in
    # a source file, and would put every landmark after it one line late
    lines = _PY_LINES.split(text) if stage == "python" else text.splitlines()
    finder = _FINDERS.get(stage)
    return sorted(finder(lines), key=lambda m: m.line) if finder else []


def _python(lines: list[str]) -> list[Landmark]:
    out = []
    for i, line in enumerate(lines):
        m = _PY_DEF.match(line)
        if m:
            out.append(Landmark(i, "function", m.group(1)))
        elif _PY_LOOP.match(line):
            out.append(Landmark(i, "loop", line.strip().split()[0]))
    return out


def _mlir(lines: list[str]) -> list[Landmark]:
    out = []
    for i, line in enumerate(lines):
        if "func" in line:
            m = _MLIR_FUNC.match(line)
            if m:
                out.append(Landmark(i, "function", m.group(1)))
                continue
        if "scf." in line:
            m = _MLIR_LOOP.search(line)
            if m:
                out.append(Landmark(i, "loop", m.group(1)))
    return out


def _llir(lines: list[str]) -> list[Landmark]:
    out = []
    labels: dict[str, int] = {}
    loops: set[int] = set()
    for i, line in enumerate(lines):
        if line.startswith("define"):
            m = _LL_DEFINE.match(line)
            labels = {}
            if m:
                out.append(Landmark(i, "function", m.group(1).strip('"')))
            continue
        m = _LL_LABEL.match(line)
        if m:
            labels[m.group(1)] = i
            continue
        if "br " in line:
            for target in _LL_BRANCH.findall(line):
                if target in labels:
                    loops.add(labels[target])
    out.extend(Landmark(i, "loop", lines[i].split(":", 1)[0]) for i in sorted(loops))
    return out


def _ptx(lines: list[str]) -> list[Landmark]:
    out = []
    for i, line in enumerate(lines):
        if ".entry" in line or ".func" in line:
            m = _PTX_FUNC.match(line)
            if m:
                out.append(Landmark(i, "function", m.group(1)))
                continue
        if "Loop Header" in line:
            m = _ASM_LOOP_HEADER.match(line)
            if m:
                out.append(Landmark(i, "loop", m.group(1)))
    return out


def _amdgcn(lines: list[str]) -> list[Landmark]:
    out = []
    functions: set[str] = set()
    for i, line in enumerate(lines):
        if ".type" in line:
            m = _AMD_FUNC_TYPE.match(line)
            if m:
                functions.add(m.group(1))
                continue
        if line and not line[0].isspace() and ":" in line:
            name = line.split(":", 1)[0]
            if name in functions:
                out.append(Landmark(i, "function", name))
                continue
        if "Loop Header" in line:
            m = _ASM_LOOP_HEADER.match(line)
            if m:
                out.append(Landmark(i, "loop", m.group(1)))
    return out


def _sass(lines: list[str]) -> list[Landmark]:
    out = []
    functions: set[str] = set()
    labels: dict[str, int] = {}
    loops: set[int] = set()
    last_code = -1
    for i, line in enumerate(lines):
        stripped = line.strip()
        if stripped.startswith(".type"):
            m = _SASS_FUNC.match(line)
            if m:
                functions.add(m.group(1))
            continue
        if line and not line[0].isspace() and line.endswith(":"):
            name = line[:-1]
            if name in functions:
                out.append(Landmark(i, "function", name))
                labels = {}
            m = _SASS_LABEL.match(line)
            if m:
                labels[m.group(1)] = i
            continue
        if stripped.startswith("/*"):
            m = _SASS_BRANCH.search(line)
            # A branch to the label just above it is the end-of-kernel trap (`BRA .L_x_2` after EXIT), not a loop.
            if m and m.group(1) in labels and labels[m.group(1)] < last_code:
                loops.add(labels[m.group(1)])
            last_code = i
    out.extend(Landmark(i, "loop", lines[i][:-1]) for i in sorted(loops))
    return out


_FINDERS = {"python": _python, "source": _mlir, "glir": _mlir, "ttir": _mlir, "ttgir": _mlir, "llir": _llir, "ptx": _ptx,
            "amdgcn": _amdgcn, "sass": _sass}
