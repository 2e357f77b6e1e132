"""SASS from `nvdisasm -g` or `-gi`: `//## File "path", line N [inlined at "path", line M]` comments."""
from __future__ import annotations

import re

from .locs import SourceLoc

_SASS_FILE = re.compile(r'^\s*//##\s*File\s+"([^"]*)",\s*line\s+(\d+)(.*)$')
_SASS_INLINED = re.compile(r'inlined at\s+"([^"]*)",\s*line\s+(\d+)')


def sass_locs(lines: list[str]) -> list[SourceLoc | None]:
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
