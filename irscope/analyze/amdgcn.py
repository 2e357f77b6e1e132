"""Counters read from AMDGCN assembly: matrix instructions, global/buffer memory and LDS traffic by
width, waits and barriers. Mnemonics of both ISA spellings count alike (gfx9 `ds_read_b64` and gfx11+
`ds_load_b64`)."""
from __future__ import annotations

import re
from collections import Counter

# Instructions are indented mnemonics; directives start with a dot, labels sit at column 0.
# (Led by a newline, not `^`, so the regex engine jumps from line to line.)
_INSTR = re.compile(r"\n[ \t]+([a-z][a-z0-9_]*)(?=[ \t\n])")
# Loads that write straight into LDS (gfx950's async copies): `buffer_load_dwordx4 v0, s[8:11], 0 offen lds`.
_TO_LDS = re.compile(r"^[ \t]+(?:buffer|global)_load_\w+[^\n;]*[ \t]lds[ \t]*$", re.M)
_TOKEN_BYTES = {"dwordx4": 16, "dwordx3": 12, "dwordx2": 8, "dword": 4, "b128": 16, "b96": 12, "b64": 8, "b32": 4,
                "b16": 2, "u16": 2, "i16": 2, "d16": 2, "short": 2, "ushort": 2, "sshort": 2, "b8": 1, "u8": 1,
                "i8": 1, "byte": 1, "ubyte": 1, "sbyte": 1}


_ALU = ("v_pk_fma", "v_pk_add", "v_pk_mul", "v_fma", "v_dot", "v_add", "v_mul", "v_exp", "v_rcp", "v_cvt")


def count(text: str) -> dict[str, int]:
    """AMDGCN counters (see docs/analyzers.md)."""
    found = Counter(_INSTR.findall("\n" + text + "\n"))
    out: Counter[str] = Counter()
    for op, n in found.items():
        out["amdgcn.instructions"] += n
        key = _family(op)
        if key is None:
            continue
        out[key] += n
        if key in ("amdgcn.v_mfma", "amdgcn.v_smfmac", "amdgcn.v_wmma", "amdgcn.v_swmmac"):
            out[f"{key}.{op[len(key) - len('amdgcn.') + 1:]}"] += n  # v_mfma_f32_32x32x8_f16 -> f32_32x32x8_f16
        elif key not in ("amdgcn.s_waitcnt", "amdgcn.s_barrier", "amdgcn.atomic") and key[len("amdgcn."):] not in _ALU:
            width = _width(op)
            if width:
                out[f"{key}.{width}B"] += n
    if out["amdgcn.buffer_load"] or out["amdgcn.global_load"]:
        out["amdgcn.load_to_lds"] = len(_TO_LDS.findall(text)) + out["amdgcn.global_load_lds"]
    return {k: v for k, v in out.items() if v}


def _family(op: str) -> str | None:
    for prefix in ("v_mfma", "v_smfmac", "v_wmma", "v_swmmac"):
        if op.startswith(prefix + "_"):
            return f"amdgcn.{prefix}"
    if op.startswith(("ds_read", "ds_load")):
        return "amdgcn.ds_read"
    if op.startswith(("ds_write", "ds_store")):
        return "amdgcn.ds_write"
    if op.startswith(("global_load_lds", "global_load_async_to_lds")):
        return "amdgcn.global_load_lds"
    for prefix in ("global_load", "global_store", "buffer_load", "buffer_store", "scratch_load", "scratch_store",
                   "flat_load", "flat_store"):
        if op.startswith(prefix):
            return f"amdgcn.{prefix}"
    if "_atomic_" in op and op.startswith(("global_", "buffer_", "flat_")):
        return "amdgcn.atomic"
    for prefix in _ALU:  # the arithmetic mix (longest prefix first: v_pk_fma before v_fma)
        if (op.startswith(prefix + "_") or (prefix == "v_fma" and op.startswith("v_fmac_"))
                or (prefix == "v_dot" and op[len(prefix):len(prefix) + 1].isdigit())):  # v_dot2_f32_f16, v_dot4c_i32_i8
            return f"amdgcn.{prefix}"
    if op.startswith("s_waitcnt"):
        return "amdgcn.s_waitcnt"
    if op.startswith("s_barrier"):
        return "amdgcn.s_barrier"
    return None


def _width(op: str) -> int:
    """Bytes per lane: `buffer_load_dwordx4` -> 16, `ds_read2st64_b64` -> 16 (two 8-byte reads)."""
    tokens = op.split("_")
    pair = any(t.startswith(("read2", "write2", "load2", "store2")) or t == "2addr" for t in tokens)
    for t in tokens[2:]:
        if t in _TOKEN_BYTES:
            return _TOKEN_BYTES[t] * (2 if pair else 1)
    return 0
