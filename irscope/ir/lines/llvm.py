"""LLVM IR: `!dbg !N` attachments resolved through `!DILocation` (with `inlinedAt:`), scopes and `!DIFile`."""
from __future__ import annotations

import re

from .locs import SourceLoc

_LL_META = re.compile(r"^!(\d+)\s*=\s*(?:distinct\s+)?!(\w+)\((.*)\)\s*$")
_LL_FIELD = re.compile(r'(\w+):\s*(!\d+|"(?:[^"\\]|\\.)*"|[^,]+)')
_LL_DBG = re.compile(r"!dbg\s+!(\d+)")


def llvm_locs(lines: list[str]) -> list[SourceLoc | None]:
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
