"""Vector width of each group of global loads and stores: how many bytes one thread moves per instruction,
per source line, and the pointer arguments each group reads or writes.

A group is the global-memory instructions one source expression became (`tl.load(a_ptrs)` on line 37; two
loads on one line, `tl.load(x) + tl.load(y)`, are two groups, told apart by their column): their
widths come from the final code (PTX `ld.global.v4.b32`, `cp.async ... 16`; AMDGCN `buffer_load_dwordx4`,
`global_store_dwordx2`), matched to the line through the `.loc` debug locations; the pointer arguments come
from TTGIR, by following the load's pointer operand back through its SSA definitions (addptr, splat,
broadcast, loop-carried values) to the kernel's parameters. Plain text processing: no Triton import.

    groups = access_groups(snap.read("ttgir"), snap.read("ptx"), "ptx")
    groups[0].line, groups[0].kind, groups[0].via, groups[0].width, groups[0].arguments
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, replace

from ..ir.lines import line_map
from . import amdgcn as _amdgcn
from .ptx import _width as _ptx_width

# TTGIR ops that move global memory, and whether they load or store.
_TTGIR_ACCESS = {"tt.load": "load", "ttg.async_copy_global_to_local": "load", "amdg.buffer_load": "load",
                 "amdg.buffer_load_to_local": "load", "tt.store": "store", "amdg.buffer_store": "store",
                 "tt.descriptor_load": "load", "tt.descriptor_store": "store",
                 "ttng.async_tma_copy_global_to_local": "load", "ttng.async_tma_copy_local_to_global": "store"}
_TTGIR_OP = re.compile(r"^\s*(?:(%[\w.$#-]+)(?::\d+)?\s*=\s*)?(" +
                       "|".join(re.escape(op) for op in sorted(_TTGIR_ACCESS, key=len, reverse=True)) +
                       r")\s+([^\n]*)$")
_DEF = re.compile(r"^\s*(%[\w.$-]+)(?::\d+)?\s*=\s*(.*)$")
_VALUE = re.compile(r"%[\w.$-]+")
_ITER_ARG = re.compile(r"(%[\w.$-]+)\s*=\s*(%[\w.$-]+)")
_FUNC_PTR = re.compile(r"(%[\w.$-]+): !tt\.ptr<[^>]*>")
_FUNC_ARG = re.compile(r"(%[\w.$-]+): ")
_LOC_NAME = re.compile(r'loc\("([^"]+)"')
# PTX global accesses: ld.global / st.global (with .nc, .v2, .v4, cache hints), cp.async to shared.
# (Memory-order qualifiers may come first: ld.volatile.global, st.release.gpu.global.)
_PTX_LDST = re.compile(r"^\s*(?:@!?%?\w+\s+)?((?:ld|st)(?:\.(?:volatile|weak|relaxed|acquire|release|mmio|cta|cluster"
                       r"|gpu|sys))*\.global[\w.:]*)")
_PTX_CP = re.compile(r"^\s*(?:@!?%?\w+\s+)?cp\.async\.(?:ca|cg)\.shared[\w.:]*\s*\[[^\]]*\]\s*,\s*\[[^\]]*\]\s*,"
                     r"\s*(0x[0-9a-fA-F]+|\d+)")
_PTX_TMA = re.compile(r"^\s*(?:@!?%?\w+\s+)?cp\.async\.bulk\.tensor\.\w+\.(shared|global)")
_AMD_INSTR = re.compile(r"^\s+([a-z][a-z0-9_]*)(?=[ \t]|$)")


@dataclass(frozen=True)
class AccessGroup:
    """The global loads (or stores) of one source line: their instructions by width, and their pointers."""

    line: int  # source line (the kernel's file); 0 when the stage has no line information
    kind: str  # "load" or "store"
    via: str  # how they move: ld.global, st.global, cp.async, tma, buffer_load, global_store, ...
    widths: tuple[tuple[int, int], ...]  # (bytes per thread, instructions), widest first
    arguments: tuple[str, ...] = ()  # pointer parameters the TTGIR op's pointer comes from
    op: str = ""  # the TTGIR op: tt.load, ttg.async_copy_global_to_local, amdg.buffer_load ...
    contiguity: int = 0  # the op's `contiguity` attribute (elements), where TTGIR states it
    mask_arguments: tuple[str, ...] = ()  # integer parameters the op's mask is computed from (K, M...)
    in_loop: bool = False  # some op of the group sits inside an scf.for (after pipelining: the loop's body)
    column: int = 0  # the source column, where another group of the same kind shares the line; else 0

    @property
    def width(self) -> int:
        """The widest access of the group, in bytes per thread."""
        return self.widths[0][0] if self.widths else 0

    @property
    def subject(self) -> str:
        what = "/".join(self.arguments) or "?"
        where = f"{self.line}:{self.column}" if self.column else f"{self.line}"
        return f"{self.kind} of {what} at line {where}" if self.line else f"{self.kind} of {what}"


def access_groups(ttgir: str, asm: str, stage: str) -> tuple[AccessGroup, ...]:
    """Groups of global accesses by source expression (line and column); `stage` names the assembly: `ptx` or
    `amdgcn`."""
    ops = _ttgir_accesses(ttgir) if ttgir else {}
    first = {}  # (line, kind) -> the first op of that line: where the assembly's column matches no op's
    for (line, column, kind), op in sorted(ops.items()):
        first.setdefault((line, kind), op)
    found = _ptx_accesses(asm) if stage == "ptx" else _amdgcn_accesses(asm)
    out = []
    for (line, column, kind, via), widths in sorted(found.items()):
        op, args, contiguity, masks, looped = ops.get((line, column, kind)) or first.get((line, kind)) or \
            ("", (), 0, (), False)
        out.append(AccessGroup(line, kind, via, tuple(sorted(widths.items(), reverse=True)), args, op, contiguity,
                               masks, looped, column))
    # TMA descriptors move tiles without per-thread instructions the .loc lines can tie to one line.
    for (line, column, kind), (op, args, contiguity, masks, looped) in sorted(ops.items()):
        if "tma" in op or "descriptor" in op:
            same = [i for i, g in enumerate(out) if g.line == line and g.kind == kind]
            if same:
                out[same[0]] = replace(out[same[0]], arguments=args, op=op, in_loop=looped)
            else:
                out.append(AccessGroup(line, kind, "tma", (), args, op, contiguity, masks, looped, column))
    # A column tells apart groups that share a line and kind; a group alone on its line is named by its line.
    shared = Counter((g.line, g.kind) for g in out)
    return tuple(g if shared[g.line, g.kind] > 1 else replace(g, column=0) for g in out)


def _ptx_accesses(text: str) -> dict[tuple[int, int, str, str], Counter]:
    lines = text.splitlines()
    locs = line_map("ptx", text)
    out: dict[tuple[int, str, str], Counter] = {}
    for i, ln in enumerate(lines):
        if "global" not in ln:
            continue
        m = _PTX_CP.match(ln)
        if m:
            key, width = ("load", "cp.async"), int(m.group(1), 0)
        elif (m := _PTX_LDST.match(ln)) is not None:
            op = m.group(1)
            key, width = ("load" if op.startswith("ld") else "store", op.split(".")[0] + ".global"), \
                _ptx_width(op.split("."))
        elif (m := _PTX_TMA.match(ln)) is not None:
            key, width = ("load" if m.group(1) == "shared" else "store", "tma"), 0
        else:
            continue
        out.setdefault(_line(locs, i) + key, Counter())[width] += 1
    return out


def _amdgcn_accesses(text: str) -> dict[tuple[int, int, str, str], Counter]:
    lines = text.splitlines()
    locs = line_map("amdgcn", text)
    out: dict[tuple[int, str, str], Counter] = {}
    for i, ln in enumerate(lines):
        m = _AMD_INSTR.match(ln)
        if not m:
            continue
        family = _amdgcn._family(m.group(1))
        if family not in ("amdgcn.buffer_load", "amdgcn.buffer_store", "amdgcn.global_load", "amdgcn.global_store",
                          "amdgcn.global_load_lds"):
            continue
        via = family.split(".", 1)[1]
        if via == "buffer_load" and ln.split(";")[0].rstrip().endswith(" lds"):
            via = "buffer_load_lds"  # gfx950's async copy straight into LDS (`... offen lds`), not into registers
        kind = "store" if "store" in via else "load"
        out.setdefault((*_line(locs, i), kind, via), Counter())[_amdgcn._width(m.group(1))] += 1
    return out


def _line(locs, index: int) -> tuple[int, int]:
    """The innermost source line and column: the `tl.load` itself, also when a helper holding it was inlined."""
    loc = locs.source_of(index)
    return (loc.line, loc.column) if loc is not None else (0, 0)


def _ttgir_accesses(text: str) -> dict[tuple[int, int, str], tuple[str, tuple[str, ...], int, tuple[str, ...], bool]]:
    """(source line, column, load/store) -> (TTGIR op, pointer parameters, contiguity, mask's integer
    parameters, in a loop) of the first op there."""
    lines = text.splitlines()
    locs = line_map("ttgir", text)
    defs: dict[str, list[str]] = {}
    params: dict[str, str] = {}
    integers: dict[str, str] = {}
    for ln in lines:
        if "tt.func" in ln and "(" in ln:
            params.update(_params(ln, pointers=True))
            integers.update(_params(ln, pointers=False))
        if "ttng.tensormap_create" in ln:  # fills the descriptor (its first operand) from the base pointer
            found = _VALUE.findall(ln.split("ttng.tensormap_create", 1)[1].split(" : ")[0])
            if len(found) > 1:
                defs.setdefault(found[0], []).append(found[1])
        m = _DEF.match(ln)
        if m:
            defs.setdefault(m.group(1), []).extend(_VALUE.findall(m.group(2).split(" loc(")[0]))
        if "iter_args(" in ln:  # a loop-carried value starts as its init
            body = ln[ln.index("iter_args(") + len("iter_args("):]
            for carried, init in _ITER_ARG.findall(body.split(")")[0] if ")" in body else body):
                defs.setdefault(carried, []).append(init)
    out: dict[tuple[int, int, str], tuple[str, tuple[str, ...], int, tuple[str, ...], bool]] = {}
    loops: list[int] = []  # indentation of the scf.for bodies the scan is in
    for i, ln in enumerate(lines):
        indent = len(ln) - len(ln.lstrip())
        while loops and ln.strip().startswith("}") and indent <= loops[-1]:
            loops.pop()
        if " scf.for " in ln and ln.rstrip().endswith("{"):
            loops.append(indent)
        m = _TTGIR_OP.match(ln)
        if not m:
            continue
        op, rest = m.group(2), m.group(3)
        operands = _VALUE.findall(rest.split(" : ")[0])
        if not operands:
            continue
        if op in ("amdg.buffer_store", "tt.store"):  # the value stored comes after the pointer, or before it
            operands = operands[1:] if op == "amdg.buffer_store" else operands[:1] + operands[2:]
        mask = _mask_operand(op, rest, operands)
        key = (*_line(locs, i), _TTGIR_ACCESS[op])
        contiguity = re.search(r"contiguity = (\d+)", rest)
        if key not in out:
            masks = _pointers(mask, defs, integers) if mask else ()
            out[key] = (op, _pointers(operands[0], defs, params), int(contiguity.group(1)) if contiguity else 0,
                        masks, bool(loops))
        elif loops and not out[key][4]:
            out[key] = out[key][:4] + (True,)
    return out


def _mask_operand(op: str, rest: str, operands: list[str]) -> str | None:
    m = re.search(r"\bmask (%[\w.$-]+)", rest)
    if m:
        return m.group(1)
    if op.startswith("amdg.buffer"):  # %base[%offsets], %mask
        return operands[2] if len(operands) > 2 else None
    if op in ("tt.load", "tt.store"):
        return operands[1] if len(operands) > 1 else None
    return None


def _params(func_line: str, *, pointers: bool) -> dict[str, str]:
    """SSA name -> parameter name for every pointer (or every integer) parameter of a `tt.func` line."""
    out = {}
    starts = [(m.start(), m.group(1)) for m in _FUNC_ARG.finditer(func_line)]
    for n, (start, ssa) in enumerate(starts):
        end = starts[n + 1][0] if n + 1 < len(starts) else len(func_line)
        chunk = func_line[start:end]
        if bool(_FUNC_PTR.match(chunk)) != pointers or (not pointers and not re.match(r"%[\w.$-]+: i\d+", chunk)):
            continue
        named = _LOC_NAME.search(chunk)
        out[ssa] = named.group(1) if named else ssa.lstrip("%")
    return out


def _pointers(value: str, defs: dict[str, list[str]], params: dict[str, str], limit: int = 4000) -> tuple[str, ...]:
    """The pointer parameters `value` is computed from (a breadth-first walk of its definitions)."""
    seen, todo, found = {value}, [value], []
    while todo and len(seen) < limit:
        v = todo.pop(0)
        base = v.split("#")[0]
        if base in params:
            if params[base] not in found:
                found.append(params[base])
            continue
        for operand in defs.get(base, ()):
            if operand not in seen:
                seen.add(operand)
                todo.append(operand)
    return tuple(found)
