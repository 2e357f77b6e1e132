"""PTX and AMDGCN assembly: `.file` tables and `.loc` directives, with `inlined_at` (PTX) or the
`@[ file:L:C ]` comment (AMDGCN). Both come out of LLVM's AsmPrinter, so one parser reads both. Inside a
multi-line inline asm block LLVM numbers the lines of the asm string as if they were source lines
(`.loc 1 14 9`, `.loc 1 15 9`, ... under a statement on line 13), so the block keeps the location it
opened under."""
from __future__ import annotations

import re

from .locs import SourceLoc, base_name

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


def ptx_locs(lines: list[str]) -> list[SourceLoc | None]:
    return _asm(lines, "ptx")


def amdgcn_locs(lines: list[str]) -> list[SourceLoc | None]:
    return _asm(lines, "amdgcn")
