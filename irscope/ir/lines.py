"""Which Python source line each line of a stage came from, read from the debug locations Triton keeps.

- TTIR and TTGIR (and Triton's `source` stage): MLIR locations, `loc("file":L:C)`, `loc(#locN)` aliases,
  `"name"(...)` name locations and `callsite(callee at caller)` for inlined calls. A region's opening
  line (`scf.for ... {`) takes the location written after its closing brace.
- LLIR: `!dbg !N` attachments resolved through `!DILocation` (with `inlinedAt:`), scopes and `!DIFile`.
- PTX and AMDGCN: `.file` tables and `.loc` directives, with `inlined_at` (PTX) or the `@[ file:L:C ]`
  comment (AMDGCN). Inside a multi-line inline asm block LLVM numbers the lines of the asm string as if
  they were source lines (`.loc 1 14 9`, `.loc 1 15 9`, ... under a statement on line 13), so the block
  keeps the location it opened under.
- SASS from `nvdisasm -g` or `-gi`: `//## File "path", line N [inlined at "path", line M]` comments.

`line_map(stage, text)` gives a `LineMap`: one `SourceLoc` (or None) per line of the text. It is plain
text processing: no Triton, no Textual.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Iterator, Sequence


@dataclass(frozen=True)
class SourceLoc:
    """A place in a source file; `inlined_at` is where the enclosing function was inlined, if it was."""

    file: str
    line: int
    column: int = 0
    inlined_at: SourceLoc | None = None

    def frames(self) -> Iterator[SourceLoc]:
        """This location, then each call site it was inlined into, innermost first."""
        loc: SourceLoc | None = self
        while loc is not None:
            yield loc
            loc = loc.inlined_at

    @property
    def outermost(self) -> SourceLoc:
        *_, last = self.frames()
        return last

    def __str__(self) -> str:
        text = f"{base_name(self.file)}:{self.line}"
        if self.inlined_at is not None:
            text += f" (inlined at {self.inlined_at})"
        return text


def base_name(path: str) -> str:
    return path.replace("\\", "/").rsplit("/", 1)[-1]


def same_file(a: str, b: str) -> bool:
    """Whether two spellings name the same file: equal, or one is a trailing part of the other's path."""
    if a == b:
        return True
    pa, pb = a.replace("\\", "/").split("/"), b.replace("\\", "/").split("/")
    pa, pb = [p for p in pa if p not in ("", ".")], [p for p in pb if p not in ("", ".")]
    if not pa or not pb:
        return False
    short, long = (pa, pb) if len(pa) <= len(pb) else (pb, pa)
    return long[-len(short):] == short


@dataclass
class LineMap:
    """The source location of every line of one stage's text (None where a line has none)."""

    stage: str
    locs: Sequence[SourceLoc | None]
    _index: dict = field(default_factory=dict, repr=False)

    def __len__(self) -> int:
        return len(self.locs)

    def source_of(self, index: int, file: str | None = None) -> SourceLoc | None:
        """The location of line `index` (0-based); with `file`, the innermost frame that is in that file."""
        if not 0 <= index < len(self.locs) or self.locs[index] is None:
            return None
        loc = self.locs[index]
        if file is None:
            return loc
        return next((f for f in loc.frames() if same_file(f.file, file)), None)

    def lines_for(self, line: int, file: str) -> list[int]:
        """The lines (0-based, in order) that came from `line` of `file`, directly or through inlining."""
        return self._index_for(file).get(line, [])

    def source_lines(self, file: str) -> dict[int, list[int]]:
        """Every source line of `file` that appears in this stage, with the stage lines it became."""
        return self._index_for(file)

    def _index_for(self, file: str) -> dict[int, list[int]]:
        if file not in self._index:
            index: dict[int, list[int]] = {}
            match: dict[str, bool] = {}
            for i, loc in enumerate(self.locs):
                if loc is None:
                    continue
                seen = set()
                for f in loc.frames():
                    ok = match.get(f.file)
                    if ok is None:
                        ok = match[f.file] = same_file(f.file, file)
                    if ok and f.line not in seen:
                        seen.add(f.line)
                        index.setdefault(f.line, []).append(i)
            self._index[file] = index
        return self._index[file]

    def files(self) -> Counter:
        """How many lines come from each file, counting the outermost frame (the kernel's own file)."""
        return Counter(loc.outermost.file for loc in self.locs if loc is not None)


def kernel_file(maps: Sequence[LineMap]) -> str | None:
    """The file the kernel was written in: the one most lines' outermost frames point to."""
    counts: Counter = Counter()
    for m in maps:
        counts.update(m.files())
    if not counts:
        return None
    # Prefer a full path over a bare name for the same file (LLIR keeps both parts, comments only names).
    best = counts.most_common(1)[0][0]
    longer = [f for f in counts if same_file(f, best) and len(f) > len(best)]
    return max(longer, key=len) if longer else best


def line_map(stage: str, text: str) -> LineMap:
    """Parse the debug locations of a stage (Triton's stage names; `python` maps each line to itself)."""
    lines = text.splitlines()
    parser = _PARSERS.get(stage)
    if parser is None:
        return LineMap(stage, [None] * len(lines))
    return LineMap(stage, parser(lines))


# -- MLIR -----------------------------------------------------------------------------------------------

_MLIR_DEF = re.compile(r"^#(loc\d*)\s*=\s*loc\((.*)\)\s*$")
_LOC_START = re.compile(r"\bloc\(")


def _mlir(lines: list[str]) -> list[SourceLoc | None]:
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


# -- LLVM IR --------------------------------------------------------------------------------------------

_LL_META = re.compile(r"^!(\d+)\s*=\s*(?:distinct\s+)?!(\w+)\((.*)\)\s*$")
_LL_FIELD = re.compile(r'(\w+):\s*(!\d+|"(?:[^"\\]|\\.)*"|[^,]+)')
_LL_DBG = re.compile(r"!dbg\s+!(\d+)")


def _llir(lines: list[str]) -> list[SourceLoc | None]:
    meta: dict[str, tuple[str, str]] = {}
    for line in lines:
        if line.startswith("!"):
            m = _LL_META.match(line)
            if m:
                meta[m.group(1)] = (m.group(2), m.group(3))
    fields: dict[str, dict[str, str]] = {}

    def get(ref: str) -> tuple[str, dict[str, str]] | None:
        entry = meta.get(ref)
        if entry is None:
            return None
        if ref not in fields:
            fields[ref] = {k: v.strip() for k, v in _LL_FIELD.findall(entry[1])}
        return entry[0], fields[ref]

    files: dict[str, str | None] = {}

    def file_of(ref: str, depth: int = 0) -> str | None:
        if ref in files:
            return files[ref]
        files[ref] = None
        got = get(ref)
        result = None
        if got is not None and depth < 50:
            kind, f = got
            if kind == "DIFile":
                name = f.get("filename", '""')[1:-1]
                directory = f.get("directory", '""')[1:-1]
                result = name if name.startswith("/") or not directory else f"{directory}/{name}"
            elif "file" in f:
                result = file_of(f["file"][1:], depth + 1)
            elif "scope" in f:
                result = file_of(f["scope"][1:], depth + 1)
        files[ref] = result
        return result

    locs: dict[str, SourceLoc | None] = {}

    def loc_of(ref: str, depth: int = 0) -> SourceLoc | None:
        if ref in locs:
            return locs[ref]
        locs[ref] = None
        got = get(ref)
        result = None
        if got is not None and depth < 50:
            kind, f = got
            if kind == "DILocation":
                file = file_of(f.get("scope", "!")[1:])
                line = int(f.get("line", "0"))
                if file and line:
                    caller = loc_of(f["inlinedAt"][1:], depth + 1) if "inlinedAt" in f else None
                    result = SourceLoc(file, line, int(f.get("column", "0")), caller)
            elif kind == "DISubprogram":
                file = file_of(ref)
                line = int(f.get("line", "0"))
                if file and line:
                    result = SourceLoc(file, line, 0)
        locs[ref] = result
        return result

    out: list[SourceLoc | None] = []
    for line in lines:
        loc = None
        if not line.startswith("!"):
            m = _LL_DBG.search(line)
            if m:
                loc = loc_of(m.group(1))
        out.append(loc)
    return out


# -- PTX and AMDGCN ---------------------------------------------------------------------------------------

_FILE_DIR = re.compile(r'^\s*\.file\s+(\d+)\s+"((?:[^"\\]|\\.)*)"(?:\s+"((?:[^"\\]|\\.)*)")?')
_LOC = re.compile(r"^\s*\.loc\s+(\d+)\s+(\d+)\s+(\d+)(.*)$")
_PTX_INLINED = re.compile(r"inlined_at\s+(\d+)\s+(\d+)\s+(\d+)")
_AMD_COMMENT_LOC = re.compile(r"([\w.+-]+):(\d+):(\d+)")


def _is_code(stripped: str) -> bool:
    """An instruction or directive line (not blank, not a comment, not a label)."""
    if not stripped or stripped.startswith(("//", ";", "#")):
        return False
    head = stripped.split("//", 1)[0].split(";", 1)[0].rstrip()
    return bool(head) and not head.endswith(":")


def _asm(lines: list[str], vendor: str) -> list[SourceLoc | None]:
    files: dict[str, str] = {}
    for line in lines:
        if ".file" in line:
            m = _FILE_DIR.match(line)
            if m:
                name = m.group(3)
                files[m.group(1)] = f"{m.group(2)}/{name}" if name is not None else m.group(2)
    by_base: dict[str, str] = {base_name(p): p for p in files.values()}
    begin, end = ("// begin inline asm", "// end inline asm") if vendor == "ptx" else (";;#ASMSTART", ";;#ASMEND")
    out: list[SourceLoc | None] = []
    current: SourceLoc | None = None
    in_asm = False
    for line in lines:
        stripped = line.strip()
        if stripped.startswith(".loc"):
            m = _LOC.match(line)
            if m and not in_asm:
                current = _asm_loc(m, files, by_base, vendor)
            out.append(current)
            continue
        if stripped.startswith(begin):
            in_asm = True
        elif stripped.startswith(end):
            in_asm = False
        elif _ends_function(stripped, vendor):
            current = None
        out.append(current if _is_code(stripped) and not stripped.startswith(".file") else None)
    return out


def _ends_function(stripped: str, vendor: str) -> bool:
    if vendor == "ptx":
        return stripped == "}" or stripped.startswith((".entry", ".visible", ".func", ".section"))
    return stripped.startswith((".Lfunc_end", ".section", ".end_amdgpu_metadata", ".amdgpu_metadata"))


def _asm_loc(m: re.Match, files: dict[str, str], by_base: dict[str, str], vendor: str) -> SourceLoc | None:
    file_no, line, col, rest = m.group(1), int(m.group(2)), int(m.group(3)), m.group(4)
    if line == 0 or file_no not in files:  # line 0: compiler-made code with no source line
        return None
    caller = None
    if vendor == "ptx":
        inl = _PTX_INLINED.search(rest)
        if inl and inl.group(1) in files:
            caller = SourceLoc(files[inl.group(1)], int(inl.group(2)), int(inl.group(3)))
    else:
        at = rest.find("@[")
        if at >= 0:
            frames = _AMD_COMMENT_LOC.findall(rest[at:])
            for name, cl, cc in reversed(frames):
                caller = SourceLoc(by_base.get(name, name), int(cl), int(cc), caller)
    return SourceLoc(files[file_no], line, col, caller)


def _ptx(lines: list[str]) -> list[SourceLoc | None]:
    return _asm(lines, "ptx")


def _amdgcn(lines: list[str]) -> list[SourceLoc | None]:
    return _asm(lines, "amdgcn")


# -- SASS -----------------------------------------------------------------------------------------------

_SASS_FILE = re.compile(r'^\s*//##\s*File\s+"([^"]*)",\s*line\s+(\d+)(.*)$')
_SASS_INLINED = re.compile(r'inlined at\s+"([^"]*)",\s*line\s+(\d+)')


def _sass(lines: list[str]) -> list[SourceLoc | None]:
    out: list[SourceLoc | None] = []
    current: SourceLoc | None = None
    for line in lines:
        stripped = line.strip()
        if stripped.startswith("//##"):
            m = _SASS_FILE.match(line)
            if m:
                caller = None
                for f, ln in reversed(_SASS_INLINED.findall(m.group(3))):
                    caller = SourceLoc(f, int(ln), 0, caller)
                current = SourceLoc(m.group(1), int(m.group(2)), 0, caller)
            out.append(current)
            continue
        if stripped.startswith(("//----", ".section")):
            current = None
        out.append(current if stripped.startswith("/*") else None)
    return out


_PARSERS = {"source": _mlir, "glir": _mlir, "ttir": _mlir, "ttgir": _mlir, "llir": _llir, "ptx": _ptx, "amdgcn": _amdgcn,
            "sass": _sass}
