"""How far apart in memory a global access's neighbouring elements are, along each dim of its tensor, read from
the TTGIR's pointer arithmetic (model 19, docs/rank.md).

A layout says which elements a lane holds; where they sit in memory is the pointer's business. Models 17 and 18
took a tensor's fastest dim as contiguous in memory. The conv1d's weights (`w_ptr + cs * WIDTH + k`) are 4
elements apart along it: their lanes touch 4 times the lines. So each pointer is followed back through the
ops that build it (`tt.make_range`, `tt.splat`, `tt.expand_dims`, `tt.broadcast`, layout conversions and
integer casts, `arith.addi`/`subi`, `arith.muli` and `shli` by a constant, `tt.addptr`, a loop's carried
pointer to its first value) to a linear form: per dim of the tensor, how many elements one step along that
dim moves the address.

A step a constant says is a number; one scaled by a runtime value (`offs_m[:, None] * stride_am`) is unknown
(None); an op outside these (a select, a division, a constant that is not one value, an `scf.if`'s or a
region argument's value) makes the whole form unknown. `%` by a runtime value keeps its left side's steps
(`(pid * B + arange) % M` wraps once in M); `%` by a constant makes them unknown (`arange % 4` repeats). A
loop's carried value takes its first value's steps where every `scf.yield` of the loop gives it back with the
same steps (a pointer advanced by a scalar, `a_ptrs += BLOCK_K * stride_ak`), and is unknown where one does not.
Nothing is run: the TTGIR is read as text, and a value past 2^40 is unknown (a damaged module's constants
must not grow without bound).
"""
from __future__ import annotations

import re

_DEF = re.compile(r"^(%[\w.$-]+) = ([a-z_]+\.[a-z_0-9]+) (.*?)(?: loc\(.*)?$")
_FOR = re.compile(r"^(?:%[\w.$-]+(?::\d+)? = )?scf\.for (%[\w.$-]+) = .*?(?:iter_args\((.*?)\))?(?: ->.*)?\{?$")
_FUNC_ARG = re.compile(r"(%[\w.$-]+): ([^ ,{)]+)")
_NAME = re.compile(r"%[\w.$#-]+")
_DENSE_INT = re.compile(r"^dense<(-?\d{1,18})> : ")  # (longer digits: not a value a kernel offsets by)
_SCALAR_INT = re.compile(r"^(-?\d{1,18}) : i\d+")
_AXIS = re.compile(r"\{axis = (\d{1,3}) : i32\}")
_SCALAR_TYPE = re.compile(r"^(?:i\d+|index|f\d+|bf16|!tt\.ptr<[^>]*>)$")
_RESULT = re.compile(r"^(%[\w.$-]+)(?::\d+)? = ")
_BLOCK_ARG = re.compile(r"(%[\w.$-]+)(?::| =) ")  # a region's arguments: `^bb0(%arg5: ...)`, `(%arg3 = %0)`
LIMIT = 1 << 40

PASS = frozenset({"tt.broadcast", "ttg.convert_layout", "arith.extsi", "arith.extui", "arith.trunci",
                  "arith.index_cast", "arith.index_castui"})
REM = frozenset({"arith.remsi", "arith.remui"})

Form = tuple  # (steps: dict[dim, int | None], value: int | None), or None where unknown


def _result_kind(rest: str) -> str | None:
    """"tensor" or "scalar" as the op's printed result type says; None where it does not say plainly."""
    if " : " not in rest:
        return None
    result = rest.rsplit(" : ", 1)[-1].split("->")[-1].strip()
    if "tensor<" in result:
        return "tensor"
    return "scalar" if _SCALAR_TYPE.match(result.split(" ")[0].rstrip(",")) else None


def _bounded(form: Form) -> Form:
    """`form`, or unknown where a step or its value has outgrown LIMIT."""
    if form is None:
        return None
    steps, value = form
    if value is not None and abs(value) > LIMIT:
        value = None
    if any(v is not None and abs(v) > LIMIT for v in steps.values()):
        return None
    return steps, value


def _form(op: str, rest: str, env: dict[str, Form]) -> Form:
    """The linear form of the value `op` defines from its operands' (`env`)."""
    return _bounded(_form_of(op, rest, env))


def _form_of(op: str, rest: str, env: dict[str, Form]) -> Form:
    operands = _NAME.findall(rest.split(" : ", 1)[0])
    sub = [env.get(o) for o in operands]
    kind = _result_kind(rest)
    if op == "arith.constant":
        m = _DENSE_INT.match(rest) or _SCALAR_INT.match(rest)
        if m is None and kind != "scalar":
            return None  # (dense<[0, 64, 128]>: a value a lane, not one for all)
        return ({}, int(m.group(1)) if m else None)
    if op == "tt.make_range":
        return ({0: 1}, None)
    if op == "tt.splat":
        return ({}, sub[0][1]) if sub and sub[0] is not None else ({}, None)
    if kind is None:
        return None  # (a type the reader cannot see: an scf.if's results)
    if kind == "scalar":
        # a scalar: the same in every lane (its value kept through a cast)
        return ({}, sub[0][1] if op in PASS and sub and sub[0] is not None else None)
    if not sub or any(f is None for f in sub):
        return None  # (a tensor op without operands is a damaged module's)
    if op == "tt.expand_dims":
        if not (m := _AXIS.search(rest)):
            return None
        axis = int(m.group(1))
        return ({d + (d >= axis): v for d, v in sub[0][0].items()}, sub[0][1])
    if op in PASS:
        return sub[0]
    if op in REM and len(sub) == 2:
        # by a runtime value (a size): it wraps once, far off; by a constant it repeats within the tile
        return sub[0] if not sub[1][0] and sub[1][1] is None else None
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


def _steps(form: Form) -> dict | None:
    return None if form is None else {d: v for d, v in form[0].items() if v != 0}


def access_steps(text: str) -> dict[int, tuple[int | None, ...] | None]:
    """Per tt.load / tt.store line of a TTGIR (by its index in `text`): the elements its address moves for a
    step along each dim of its tensor (0 for a dim it does not vary along, None where a runtime value scales
    it), or None where the pointer is not understood."""
    # A carried value found to change its steps in a yield is read again as unknown, and so on: each pass
    # can only add to `moving`, so the passes end (one or two on a real kernel)
    moving: set[tuple[int, int]] = set()
    for _ in range(8):
        out, more = _read(text, moving)
        if not more:
            return out
        moving |= more
    return {index: None for index in out}  # (a damaged module's loops that never settle)


def _read(text: str, moving: set[tuple[int, int]]) -> tuple[dict, set[tuple[int, int]]]:
    """One pass in text order: a value's form from its operands' as they stand when it is defined (MLIR
    reuses a name in sibling regions, two loops' bodies: the latest definition is the one in scope). The
    carried values in `moving` ((the loop's line, the value's place)) are unknown; returns the steps and the
    carried values a yield gives other steps than they began with."""
    env: dict[str, Form] = {}
    out: dict[int, tuple[int | None, ...] | None] = {}
    regions: list[tuple[int, list[Form]] | None] = []  # the open regions: a loop's (line, first forms), or None
    more: set[tuple[int, int]] = set()
    for index, line in enumerate(text.splitlines()):
        s = line.strip()
        if s.startswith("}"):
            if regions:
                regions.pop()
            if s.endswith("{"):
                regions.append(None)  # (`} else {`)
            continue
        if s.startswith("scf.yield") and regions and regions[-1] is not None:
            loop, first = regions[-1]
            given = _NAME.findall(s.split(" : ", 1)[0])
            for place, (name, start) in enumerate(zip(given, first)):
                if start is not None and _steps(env.get(name)) != _steps(start) and (loop, place) not in moving:
                    more.add((loop, place))
            continue
        if s.startswith("tt.func"):
            env.clear()  # (a function sees nothing of another's)
            env.update((n, None if kind.startswith("tensor") else ({}, None)) for n, kind in _FUNC_ARG.findall(s))
            regions = [None] if s.endswith("{") else []
            continue
        if " scf.for " in f" {s}" and (m := _FOR.match(s)):
            if r := _RESULT.match(s):
                env[r.group(1)] = None  # (its results: not followed)
            env[m.group(1)] = ({}, None)
            first = []
            for pair in (m.group(2) or "").split(","):
                if " = " in pair:
                    arg, init = (p.strip() for p in pair.split(" = ", 1))
                    # a carried value: its first, unless a yield gives it other steps
                    env[arg] = None if (index, len(first)) in moving else env.get(init)
                    first.append(env[arg])
            if s.endswith("{"):
                regions.append((index, first))
            continue
        if s.endswith("{"):
            regions.append(None)
        if m := _RESULT.match(s):
            env[m.group(1)] = None  # (whatever it is, an earlier value of its name is not it)
        elif s.startswith(("^", "scf.while", "partition", "default")) or " scf.while " in f" {s}":
            for name in _BLOCK_ARG.findall(s.split("{", 1)[0]):
                env[name] = None  # a region's arguments: not followed
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
    return out, more
