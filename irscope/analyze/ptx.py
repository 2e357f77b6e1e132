"""Counters read from PTX: matrix instructions, asynchronous and bulk copies, loads and stores by width,
barriers. One regex pass collects every instruction's opcode; counters are derived from the opcodes."""
from __future__ import annotations

import re
from collections import Counter

# An instruction line: optional predicate (`@%p1`, `@!complete`), then the dotted opcode. Labels
# (`waitLoop:`), directives (`.reg`), comments and braces never match. Patterns start at a newline rather
# than `^`: the regex engine then jumps from line to line instead of trying every character.
_INSTR = re.compile(r"\n[ \t]*(?:@!?%?\w+[ \t]+)?([a-z][a-z0-9_]*(?:(?:\.|::)[a-z0-9_]+)*)(?=[ \t;\n])")
# The copy size of cp.async is its third operand: 4, 8 or 16 bytes. (Instructions only: not a comment's text.)
_CP_ASYNC = re.compile(r"\n[ \t]*(?:@!?%?\w+[ \t]+)?cp\.async\.(ca|cg)\.shared(?:::\w+)?\.global(?:\.[\w:]+)*[ \t]*"
                       r"\[[^\]]*\][ \t]*,[ \t]*\[[^\]]*\][ \t]*,[ \t]*(0x[0-9a-fA-F]+|\d+)")
_SHAPE = re.compile(r"^m\d+n\d+k\d+$")
_VECTOR = re.compile(r"^v(\d+)$")
_SCALAR = re.compile(r"^[bsuf](\d+)$")
_SPACES = ("global", "shared", "local", "const", "param")


def count(text: str) -> dict[str, int]:
    """PTX counters (see docs/analyzers.md for every key)."""
    opcodes = Counter(_INSTR.findall("\n" + text + "\n"))
    out: Counter[str] = Counter()
    out["ptx.instructions"] = sum(opcodes.values())
    for op, n in opcodes.items():
        _classify(op, n, out)
    if out["ptx.cp.async"]:
        for mode, size in _CP_ASYNC.findall("\n" + text):
            out[f"ptx.cp.async.{int(size, 0)}B"] += 1
    return {k: v for k, v in out.items() if v}


def _classify(op: str, n: int, out: Counter) -> None:
    parts = op.split(".")
    head = parts[0]
    sub = parts[1] if len(parts) > 1 else ""
    if head == "wgmma":
        if sub == "mma_async":
            out["ptx.wgmma"] += n
            shape = next((p for p in parts if _SHAPE.match(p)), None)
            if shape:
                out[f"ptx.wgmma.{shape}"] += n
    elif head == "mma":
        key = "ptx.mma.sync" if sub == "sync" else f"ptx.mma.{sub.split('::')[0]}"
        out[key] += n
        shape = next((p for p in parts if _SHAPE.match(p)), None)
        if shape:
            out[f"{key}.{shape}"] += n
    elif head == "cp":
        _copy(op, parts, n, out)
    elif head == "tcgen05":
        out["ptx.tcgen05"] += n
        out[f"ptx.tcgen05.{sub.split('::')[0]}"] += n
    elif head in ("ldmatrix", "stmatrix"):
        out[f"ptx.{head}"] += n
    elif head in ("ld", "st"):
        # The state space can follow memory-order qualifiers: ld.volatile.global, st.release.gpu.global.
        space = next((p.split("::")[0] for p in parts[1:] if p.split("::")[0] in _SPACES), "generic")
        if space == "param":
            return
        key = f"ptx.{head}.{space}"
        out[key] += n
        width = _width(parts)
        if width:
            out[f"{key}.{width}B"] += n
    elif head in ("atom", "red"):
        out[f"ptx.{head}"] += n
    elif head in ("bar", "barrier"):
        out["ptx.bar.warp" if sub == "warp" else "ptx.bar"] += n
    elif head == "mbarrier":
        out["ptx.mbarrier"] += n
        out[f"ptx.mbarrier.{sub}"] += n
    elif head == "setmaxnreg":
        out["ptx.setmaxnreg"] += n
        out[f"ptx.setmaxnreg.{sub}"] += n
    elif head == "fence":
        out["ptx.fence"] += n
        if sub == "proxy" and len(parts) > 2:
            out[f"ptx.fence.proxy.{parts[2].split('::')[0]}"] += n
    elif head == "tensormap":
        out["ptx.tensormap"] += n


def _copy(op: str, parts: list[str], n: int, out: Counter) -> None:
    if op.startswith("cp.async.bulk.tensor"):
        out["ptx.cp.async.bulk.tensor"] += n
        # cp.async.bulk.tensor.2d.shared::cta.global...: destination first, so shared-before-global loads.
        spaces = [p.split("::")[0] for p in parts if p.split("::")[0] in ("shared", "global")]
        out["ptx.cp.async.bulk.tensor.load" if spaces[:1] == ["shared"] else "ptx.cp.async.bulk.tensor.store"] += n
    elif op.startswith("cp.reduce.async.bulk"):
        out["ptx.cp.reduce.async.bulk"] += n
    elif op.startswith("cp.async.bulk"):
        if len(parts) > 3 and parts[3] in ("commit_group", "wait_group"):
            out[f"ptx.cp.async.bulk.{parts[3]}"] += n
        elif len(parts) > 3 and parts[3].startswith("prefetch"):
            out["ptx.cp.async.bulk.prefetch"] += n
        else:
            out["ptx.cp.async.bulk"] += n
    elif op.startswith("cp.async.") and len(parts) > 2:
        mode = parts[2]
        if mode in ("ca", "cg"):
            out["ptx.cp.async"] += n
            out[f"ptx.cp.async.{mode}"] += n
        elif mode in ("commit_group", "wait_group", "wait_all"):
            out[f"ptx.cp.async.{mode}"] += n


def _width(parts: list[str]) -> int:
    """Bytes one thread moves: `ld.global.v4.b32` -> 16, `ld.v2.b64` (generic) -> 16."""
    vec = 1
    bits = 0
    for p in parts[1:]:
        m = _VECTOR.match(p)
        if m:
            vec = int(m.group(1))
            continue
        m = _SCALAR.match(p)
        if m:
            bits = int(m.group(1))
    return vec * bits // 8
