"""Counters read from SASS (nvdisasm's listing of the cubin): what ptxas finally emitted."""
from __future__ import annotations

import re
from collections import Counter

# `/*0a40*/  @!P0 HGMMA.64x256x16.F32 R24, ...`: offset, optional predicate, opcode and its modifiers.
# (Led by a newline, not `^`, so the regex engine jumps from line to line.)
_INSTR = re.compile(r"\n[ \t]*/\*[0-9a-f]{4,}\*/[ \t]+(?:@!?U?P[T0-9][ \t]+)?([A-Z][A-Z0-9_]*)((?:\.[A-Za-z0-9_]+)*)")
_WIDTHS = {"8": 1, "U8": 1, "S8": 1, "16": 2, "U16": 2, "S16": 2, "32": 4, "64": 8, "128": 16}
_MEMORY = ("LDG", "STG", "LDS", "STS", "LDGSTS", "LDL", "STL")
# The arithmetic mix: how much of the work is fp32, packed half-precision, integer or special-function.
_ALU = ("FFMA", "FADD", "FMUL", "HFMA2", "HADD2", "HMUL2", "IMAD", "IADD3", "LOP3", "SHF", "MUFU", "FMNMX", "F2F", "I2F", "F2I")
_NAMED = ("LDSM", "STSM", "BAR", "SYNCS", "WARPGROUP", "USETMAXREG", "ELECT", "MEMBAR", "DEPBAR", "ATOMG", "RED",
          "ATOMS", "REDG")


def count(text: str) -> dict[str, int]:
    """SASS counters (see docs/analyzers.md)."""
    found = Counter(_INSTR.findall("\n" + text))
    out: Counter[str] = Counter()
    out["sass.instructions"] = sum(found.values())
    for (op, mods), n in found.items():
        mod = mods[1:].split(".") if mods else []
        if op.endswith("MMA"):  # HMMA, HGMMA, IMMA, QGMMA, UTCHMMA, UTCQMMA, ...
            out[f"sass.{op}"] += n
            if mod and op in ("HMMA", "HGMMA", "IMMA", "QGMMA", "IGMMA", "BGMMA", "DMMA", "QMMA", "OMMA"):
                out[f"sass.{op}.{mod[0]}"] += n
        if op.startswith("UTC"):
            out["sass.UTC"] += n
            if not op.endswith("MMA"):
                out[f"sass.{op}"] += n
        elif op.startswith(("UTMA", "UBLK")):
            out[f"sass.{op}"] += n
        elif op in _MEMORY:
            out[f"sass.{op}"] += n
            if op not in ("LDL", "STL"):
                width = _width(mod)
                out[f"sass.{op}.{width}B"] += n
        elif op in _NAMED or op in _ALU:
            out[f"sass.{op}"] += n
    return {k: v for k, v in out.items() if v}


def _width(mods: list[str]) -> int:
    """Bytes per thread: the last width modifier (`LDG.E.128` -> 16); 32-bit when there is none."""
    width = 4
    for m in mods:
        if m in _WIDTHS:
            width = _WIDTHS[m]
    return width
