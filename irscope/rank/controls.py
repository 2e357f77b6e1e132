"""What ptxas tells each instruction of a cubin to wait: the control bits of its SASS.

Since Volta every 128-bit NVIDIA instruction carries its schedule in its top bits, set by ptxas: the clocks
its warp stalls before it issues the next instruction (bits 105-108), the yield hint, the scoreboards it
sets for a result of variable latency (a special function, a shared-memory or global load) or for a
register a pending store still reads, and the mask of scoreboards it waits on before it issues (bits
116-121). nvdisasm's listing leaves them out; the cubin
has them. Summed over a loop they are what one warp alone takes through it, when nothing it waits for on
a scoreboard is late: the chain of a program whose warps no other warps hide (rank model 14).

The cubin is a snapshot's file, untrusted input: read by offsets checked against its length, never
executed; anything malformed reads as nothing (None). (A cubin that does not match the sha256 its
snapshot records is refused before it gets here: Snapshot.read_bytes.)
"""
from __future__ import annotations

import re
import struct

_ADDR = re.compile(r"^\s*/\*([0-9a-f]+)\*/")
_NOP = re.compile(r"\bNOP\b")
_SECTION = re.compile(r"^\s*\.section\s+([^\s,]+)")
INSTRUCTION_BYTES = 16
EM_CUDA = 190  # the ELF machine of an NVIDIA cubin


def text_section(cubin: bytes, function: str) -> bytes | None:
    """The bytes of `.text.<function>` in a 64-bit little-endian ELF cubin, or None."""
    try:
        if cubin[:4] != b"\x7fELF" or cubin[4] != 2 or cubin[5] != 1:
            return None
        if struct.unpack_from("<H", cubin, 0x12)[0] != EM_CUDA:
            return None
        shoff, = struct.unpack_from("<Q", cubin, 0x28)
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", cubin, 0x3A)
        if shentsize < 64 or shstrndx >= shnum or shoff + shnum * shentsize > len(cubin):
            return None
        sections = [struct.unpack_from("<IIQQQQ", cubin, shoff + i * shentsize) for i in range(shnum)]
        names_at, names_size = sections[shstrndx][4], sections[shstrndx][5]
        if names_at + names_size > len(cubin):
            return None
        names = cubin[names_at:names_at + names_size]
        want = f".text.{function}".encode() + b"\0"  # (compared in place: no scan of an unterminated table)
        for name, _type, _flags, _addr, offset, size in sections:
            if names[name:name + len(want)] == want:
                return cubin[offset:offset + size] if offset + size <= len(cubin) else None
    except (struct.error, IndexError):
        return None
    return None


def controls(text: bytes) -> list[tuple[int, int]]:
    """(stall clocks, scoreboard wait mask) of each 16-byte instruction of a text section."""
    out = []
    for at in range(0, len(text) - INSTRUCTION_BYTES + 1, INSTRUCTION_BYTES):
        high, = struct.unpack_from("<Q", text, at + 8)
        out.append(((high >> 41) & 0xF, (high >> 52) & 0x3F))
    return out


def stall_cycles(sass: str, cubin: bytes, function: str, loop: tuple[int, int] | None) -> dict | None:
    """{"loop_stall_cycles", "other_stall_cycles", "loop_waits", "other_waits"}: over the listing's issued
    instructions (NOPs aside) of `function`'s own section, inside the lines `loop` spans (the main loop)
    and outside it, the clocks each stalls its warp (at least one: it issues) and how many wait on a
    scoreboard. None where the cubin does not read (not a CUDA ELF of 16-byte instructions, no such
    function, an address beyond its code) or the listing has no line of the function's section."""
    text = text_section(cubin, function)
    if not text:
        return None
    ctl = controls(text)
    out = {"loop_stall_cycles": 0, "other_stall_cycles": 0, "loop_waits": 0, "other_waits": 0}
    section = None
    for i, line in enumerate(sass.splitlines()):
        if s := _SECTION.match(line):
            section = s.group(1)
        m = _ADDR.match(line)
        if not m or _NOP.search(line) or section != f".text.{function}":
            continue
        at = int(m.group(1), 16)
        if at % INSTRUCTION_BYTES or at // INSTRUCTION_BYTES >= len(ctl):
            return None
        stall, wait = ctl[at // INSTRUCTION_BYTES]
        where = "loop" if loop and loop[0] <= i <= loop[1] else "other"
        out[f"{where}_stall_cycles"] += max(1, stall)
        out[f"{where}_waits"] += 1 if wait else 0
    # a listing without the function's section header read nothing: unknown, not a program of no work
    return out if out["loop_stall_cycles"] + out["other_stall_cycles"] else None
