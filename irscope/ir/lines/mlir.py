"""MLIR (TTIR, TTGIR and Triton's `source` stage): `loc("file":L:C)`, `#locN` aliases, name locations and
`callsite(callee at caller)` for inlined calls. A region's opening line (`scf.for ... {`) takes the
location written after its closing brace."""
from __future__ import annotations

import re

from .locs import SourceLoc

_MLIR_DEF = re.compile(r"^#(loc\d*)\s*=\s*loc\((.*)\)\s*$")
_LOC_START = re.compile(r"\bloc\(")


def mlir_locs(lines: list[str]) -> list[SourceLoc | None]:
    defs: dict[str, str] = {}
    for line in lines:
        if line.startswith("#loc"):
            m = _MLIR_DEF.match(line)
            if m:
                defs[m.group(1)] = m.group(2)
    resolver = _MlirResolver(defs)
    out: list[SourceLoc | None] = []
    openers: list[int] = []
    for i, line in enumerate(lines):
        loc = None
        if not line.startswith("#"):
            body = _trailing_loc(line)
            if body is not None:
                loc = resolver.parse(body)
        out.append(loc)
        stripped = line.strip()
        if stripped.startswith("}") and openers:
            opener = openers.pop()
            if out[opener] is None and loc is not None:
                out[opener] = loc
        if stripped.endswith("{"):
            openers.append(i)
    return out


def _trailing_loc(line: str) -> str | None:
    """The body of the last top-level `loc(...)` on a line: the operation's own location."""
    start = None
    for m in _LOC_START.finditer(line):
        start = m.end()
    if start is None:
        return None
    depth, in_str = 1, False
    for j in range(start, len(line)):
        c = line[j]
        if in_str:
            if c == "\\":
                continue
            if c == '"':
                in_str = False
        elif c == '"':
            in_str = True
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return line[start:j]
    return None


class _MlirResolver:
    """Parses MLIR location bodies, following `#locN` aliases (memoised, cycle-safe)."""

    _FILE = re.compile(r'"((?:[^"\\]|\\.)*)":(\d+):(\d+)')
    _NAMED = re.compile(r'^"(?:[^"\\]|\\.)*"\((.*)\)$', re.S)

    def __init__(self, defs: dict[str, str]):
        self.defs = defs
        self.memo: dict[str, SourceLoc | None] = {}

    def alias(self, name: str) -> SourceLoc | None:
        if name not in self.memo:
            self.memo[name] = None  # a cycle resolves to nothing
            body = self.defs.get(name)
            self.memo[name] = self.parse(body) if body is not None else None
        return self.memo[name]

    def parse(self, body: str) -> SourceLoc | None:
        body = body.strip()
        if body.startswith("#loc"):
            return self.alias(body[1:])
        if body.startswith("callsite("):
            inner = body[len("callsite("):-1] if body.endswith(")") else body[len("callsite("):]
            callee, caller = _split_at(inner)
            a, b = self.parse(callee), self.parse(caller)
            if a is None:
                return b
            return _with_caller(a, b)
        if body.startswith("fused"):
            start = body.find("[")
            for part in _split_top(body[start + 1:body.rfind("]")]):
                loc = self.parse(part)
                if loc is not None:
                    return loc
            return None
        m = self._FILE.match(body)
        if m:
            return SourceLoc(m.group(1), int(m.group(2)), int(m.group(3)))
        m = self._NAMED.match(body)
        if m:
            return self.parse(m.group(1))
        return None  # unknown, or a bare name


def _with_caller(loc: SourceLoc, caller: SourceLoc | None) -> SourceLoc:
    if loc.inlined_at is None:
        return SourceLoc(loc.file, loc.line, loc.column, caller)
    return SourceLoc(loc.file, loc.line, loc.column, _with_caller(loc.inlined_at, caller))


def _split_top(text: str) -> list[str]:
    parts, depth, start, in_str = [], 0, 0, False
    for i, c in enumerate(text):
        if in_str:
            in_str = c != '"'
        elif c == '"':
            in_str = True
        elif c in "([<":
            depth += 1
        elif c in ")]>":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def _split_at(text: str) -> tuple[str, str]:
    depth, in_str = 0, False
    for i, c in enumerate(text):
        if in_str:
            in_str = c != '"'
        elif c == '"':
            in_str = True
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif depth == 0 and text.startswith(" at ", i):
            return text[:i], text[i + 4:]
    return text, ""
