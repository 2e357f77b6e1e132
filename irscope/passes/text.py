"""IR text of each form the pass timeline holds — mlir (TTIR, TTGIR, the LLVM dialect), llvm (LLVM IR),
mir (machine IR): normalising it line by line, counting its operations, and a canonical form for
comparing dumps printed with and without aliases and value names. No Triton import."""
from __future__ import annotations

import re
from collections import Counter

from ..ir.normalize import normalize, normalize_llir, normalize_mlir

_MIR_DEBUG = re.compile(r",? debug-location !\d+|; [\w.+-]+:\d+:\d+$|^\d+B\t")  # and slot indexes
_MLIR_OP = re.compile(r"^\s*(?:%[\w$.#:-]+(?:\s*,\s*%[\w$.#:-]+)*\s*=\s*)?\"?(?P<op>[a-z_][\w$]*(?:\.[\w$]+)+)\"?"
                      r"(?=[\s(<{:]|$)")
_LL_INSTR = re.compile(r"^\s+(?:%[\w.$\"-]+ = )?(?P<op>[a-z][\w.]*)(?P<rest>.*)$")
_LL_CALLEE = re.compile(r"@(?P<name>[\w.$-]+)\(")
_LL_ASM = re.compile(r"\basm (?:\w+ )*\"(?P<asm>[^\"]*)\"")
_MIR_SLOT = re.compile(r"^\d+B\t")
_MIR_INSTR = re.compile(r"^\s+(?:[%$][^=]*= )?(?P<rest>\S.*)$")
_MIR_OP = re.compile(r"[A-Z][A-Za-z0-9_]*")
_MIR_FLAGS = {"nuw", "nsw", "exact", "disjoint", "nneg", "contract", "afn", "reassoc", "nnan", "ninf", "nsz",
              "arcp", "frame-setup", "frame-destroy", "killed", "dead", "implicit", "implicit-def"}
_ALIAS_DEF = re.compile(r"^(?P<name>#[\w$.-]+) = (?P<value>.*)$")
_SSA = re.compile(r"%[\w$.-]+")


def normalize_form(form: str, text: str) -> str:
    """irscope.ir.normalize for the stage this form of IR belongs to (MIR: debug locations dropped too)."""
    lines = (normalize_line(form, ln) for ln in text.split("\n"))
    return "\n".join(ln for ln in lines if ln is not None)


def normalize_line(form: str, line: str) -> str | None:
    """One line of an IR, normalised as irscope.ir.normalize normalises its stage; None when the line is
    only debug information (a `#loc` alias, a debug metadata node). Those rules all work within a
    line (for MLIR, LLVM IR and MIR), so each distinct line is normalised once and shared."""
    if not line.strip():
        return ""
    if form == "mlir":
        if "loc" in line:
            line = normalize_mlir(line)
    elif form == "llvm":
        if "!" in line or "source_filename" in line:
            line = normalize_llir(line)
    elif form == "mir":
        line = _MIR_DEBUG.sub("", line)
    if "/" in line:
        line = normalize("", line)  # absolute paths become file names
    line = line.rstrip()
    return line if line.strip() else None


def comparable_lines(form: str, text: str, *, canonical: bool = False) -> list[str]:
    """The non-blank lines of an IR without debug information, for counting what a pass changed.

    `canonical` also expands MLIR attribute aliases (`#blocked`) and renames SSA values in order of
    appearance, so that a dump printed without aliases and names (the pipeliner's internal dumps)
    compares line by line with Triton's usual dumps.
    """
    text = normalize_form(form, text)
    if canonical and form == "mlir":
        text = canonical_mlir(text)
    return [ln for ln in text.split("\n") if ln.strip()]


def canonical_mlir(text: str) -> str:
    aliases = {}
    kept = []
    for ln in text.split("\n"):
        m = _ALIAS_DEF.match(ln)
        if m:
            aliases[m.group("name")] = m.group("value")
        else:
            kept.append(ln)
    text = "\n".join(kept)
    if aliases:
        names = sorted(aliases, key=len, reverse=True)
        pattern = re.compile("(?:" + "|".join(re.escape(n) for n in names) + r")(?![\w$.-])")
        for _ in range(4):  # aliases may refer to aliases
            text, n = pattern.subn(lambda m: aliases[m.group(0)], text)
            if not n:
                break
    names: dict[str, str] = {}
    return _SSA.sub(lambda m: names.setdefault(m.group(0), f"%v{len(names)}"), text)


def count_ops(form: str, text: str) -> Counter:
    """Operations by name: MLIR ops (`ttg.local_load`), LLVM opcodes, calls by callee and inline
    assembly by mnemonic (`asm cp.async.cg.shared.global`), machine opcodes."""
    return Counter(op for op in (op_of(form, ln) for ln in text.split("\n")) if op)


def op_of(form: str, line: str) -> str | None:
    """The operation a line of IR holds, if it holds one."""
    if form == "mlir":
        m = _MLIR_OP.match(line)
        return m.group("op") if m else None
    if form == "mir" and line[:1].isdigit():
        line = _MIR_SLOT.sub("", line)
    if not line.startswith((" ", "\t")):
        return None
    if form == "llvm":
        m = _LL_INSTR.match(line)
        if not m:
            return None
        op, rest = m.group("op"), m.group("rest")
        if op in ("call", "tail", "musttail", "notail"):
            asm = _LL_ASM.search(rest)
            if asm:
                words = [w for w in asm.group("asm").split() if not w.startswith(("@", "{"))]
                return "asm " + (words[0].rstrip(";") if words else "")
            callee = _LL_CALLEE.search(rest)
            return "call " + callee.group("name") if callee else "call"
        return op
    if form == "mir":
        m = _MIR_INSTR.match(line)
        for word in m.group("rest").split()[:4] if m else ():
            if _MIR_OP.fullmatch(word):
                return word
            if word not in _MIR_FLAGS:
                return None
    return None
