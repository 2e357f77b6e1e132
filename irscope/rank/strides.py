"""How far apart in memory a global access's neighbouring elements are, along each dim of its tensor, read from
the TTGIR's pointer arithmetic (model 19, docs/rank.md).

A layout says which elements a lane holds; where they sit in memory is the pointer's business. Models 17 and 18
took a tensor's fastest dim as contiguous in memory. The conv1d's weights (`w_ptr + cs * WIDTH + k`) are 4
elements apart along it: their lanes touch 4 times the lines. So each pointer is followed back through the
ops that build it (`tt.make_range`, `tt.splat`, `tt.expand_dims`, `tt.broadcast`, `arith.addi`/`subi`,
`arith.muli` by a constant, `tt.addptr`, a loop's carried pointer to its first value) to a linear form: per
dim of the tensor, how many elements one step along that dim moves the address.

A step a constant says is a number; one scaled by a runtime value (`offs_m[:, None] * stride_am`) is unknown
(None); an op outside these (a select, a division) makes the whole form unknown, never a guess. `%` keeps
its left side's steps (`(pid * B + arange) % M` wraps once in M). Nothing is run: the TTGIR is read as text.
"""
from __future__ import annotations

import re

_DEF = re.compile(r"^(%[\w.$-]+) = ([a-z_]+\.[a-z_0-9]+) (.*?)(?: loc\(.*)?$")
_FOR = re.compile(r"^(?:%[\w.$-]+(?::\d+)? = )?scf\.for (%[\w.$-]+) = .*?(?:iter_args\((.*?)\))?(?: ->.*)?\{?$")
_FUNC_ARG = re.compile(r"(%[\w.$-]+): ([^ ,{)]+)")
_NAME = re.compile(r"%[\w.$#-]+")
_DENSE_INT = re.compile(r"^dense<(-?\d+)> : ")
_SCALAR_INT = re.compile(r"^(-?\d+) : i\d+")
_AXIS = re.compile(r"\{axis = (\d+) : i32\}")

PASS = frozenset({"tt.broadcast", "ttg.convert_layout", "arith.extsi", "arith.extui", "arith.trunci",
                  "arith.index_cast", "arith.index_castui", "arith.remsi", "arith.remui"})

Form = tuple  # (steps: dict[dim, int | None], value: int | None), or None where unknown


def _result_is_tensor(rest: str) -> bool:
    types = rest.rsplit(" : ", 1)[-1] if " : " in rest else ""
    return "tensor<" in types.split("->")[-1]


def _form(op: str, rest: str, env: dict[str, Form]) -> Form:
    """The linear form of the value `op` defines from its operands' (`env`)."""
    operands = _NAME.findall(rest.split(" : ", 1)[0])
    sub = [env.get(o) for o in operands]
    if op == "arith.constant":
        m = _DENSE_INT.match(rest) or _SCALAR_INT.match(rest)
        return ({}, int(m.group(1)) if m else None)
    if op == "tt.make_range":
        return ({0: 1}, None)
    if op == "tt.splat":
        return ({}, sub[0][1]) if sub and sub[0] is not None else ({}, None)
    if not _result_is_tensor(rest):
        # a scalar: the same in every lane (its value kept through a cast)
        return ({}, sub[0][1] if op in PASS and sub and sub[0] is not None else None)
    if not sub or any(f is None for f in sub):
        return None  # (a tensor op without operands is a damaged module's)
    if op == "tt.expand_dims":
        axis = int(m.group(1)) if (m := _AXIS.search(rest)) else 0
        return ({d + (d >= axis): v for d, v in sub[0][0].items()}, sub[0][1])
    if op in PASS and sub:
        return sub[0]
    if op in ("arith.addi", "tt.addptr", "arith.subi") and len(sub) == 2:
        sign = -1 if op == "arith.subi" else 1
        (a, va), (b, vb) = sub
        steps = dict(a)
        for d, v in b.items():
            steps[d] = None if v is None or steps.get(d, 0) is None else steps.get(d, 0) + sign * v
        return steps, (va + sign * vb if va is not None and vb is not None else None)
    if op in ("arith.muli", "arith.shli") and len(sub) == 2:
        (a, va), (b, vb) = sub
        if op == "arith.shli":
            if b:
                return None
            vb = 1 << vb if vb is not None and 0 <= vb < 32 else None
        if a and b:
            return None  # a product of two varying values is not linear
        steps, k = (a, vb) if a else (b, va)
        value = va * vb if va is not None and vb is not None else None
        return {d: (v * k if v is not None and k is not None else None) for d, v in steps.items()}, value
    return None


def access_steps(text: str) -> dict[int, tuple[int | None, ...] | None]:
    """Per tt.load / tt.store line of a TTGIR (by its index in `text`): the elements its address moves for a
    step along each dim of its tensor (0 for a dim it does not vary along, None where a runtime value scales
    it), or None where the pointer is not understood."""
    # One pass in text order: a value's form from its operands' as they stand when it is defined (MLIR
    # reuses a name in sibling regions, two loops' bodies: the latest definition is the one in scope).
    env: dict[str, Form] = {}
    out: dict[int, tuple[int | None, ...] | None] = {}
    for index, line in enumerate(text.splitlines()):
        s = line.strip()
        if s.startswith("tt.func"):
            env.update((n, ({}, None)) for n, kind in _FUNC_ARG.findall(s) if not kind.startswith("tensor"))
            continue
        if " scf.for " in f" {s}" and (m := _FOR.match(s)):
            env[m.group(1)] = ({}, None)
            for pair in (m.group(2) or "").split(","):
                if " = " in pair:
                    arg, init = (p.strip() for p in pair.split(" = ", 1))
                    env[arg] = env.get(init)  # a carried value: its first
            continue
        if m := _DEF.match(s):
            env[m.group(1)] = _form(m.group(2), m.group(3), env)
        m = re.match(r"^(?:%[\w.$-]+ = )?(tt\.load|tt\.store) (%[\w.$-]+)", s)
        if not m:
            continue
        shape = re.search(r"tensor<([0-9x]+)x!tt\.ptr<", s)
        if not shape:
            out[index] = None
            continue
        rank = len(shape.group(1).split("x"))
        form = env.get(m.group(2))
        out[index] = None if form is None else tuple(form[0].get(d, 0) for d in range(rank))
    return out
