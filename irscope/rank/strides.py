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

import functools
import re

_DEF = re.compile(r"^(%[\w.$-]+) = ([a-z_]+\.[a-z_0-9]+) (.*?)(?: loc\(.*)?$")
_FOR = re.compile(r"^(?:%[\w.$-]+(?::\d+)? = )?scf\.for (%[\w.$-]+) = .*?(?:iter_args\((.*?)\))?(?: ->.*)?\{?$")
_FUNC_ARG = re.compile(r"(%[\w.$-]+): ([^ ,{)]+)")
_NAME = re.compile(r"%[\w.$#-]+")
_DENSE_INT = re.compile(r"^dense<(-?\d{1,18})> : ")  # (longer digits: not a value a kernel offsets by)
_SCALAR_INT = re.compile(r"^(-?\d{1,18}) : i\d+")
_AXIS = re.compile(r"\{axis = (\d{1,3}) : i32\}")
_SCALAR_TYPE = re.compile(r"^(?:i\d+|index|f\d+|bf16|!tt\.ptr<[^>]*>)$")
_START = re.compile(r"start = (-?\d{1,18}) : i32")
_PID_AXIS = re.compile(r"^([xyz])\b")
_RESULT = re.compile(r"^(%[\w.$-]+)(?::\d+)? = ")
_BLOCK_ARG = re.compile(r"(%[\w.$-]+)(?::| =) ")  # a region's arguments: `^bb0(%arg5: ...)`, `(%arg3 = %0)`
ELEMENT_BYTES = {"f16": 2, "bf16": 2, "f32": 4, "f64": 8, "i1": 1, "i8": 1, "i16": 2, "i32": 4, "i64": 8,
                 "f8E4M3FN": 1, "f8E5M2": 1, "f8E4M3FNUZ": 1, "f8E5M2FNUZ": 1, "tf32": 4}  # bytes an element
LIMIT = 1 << 40
TERMS = 16  # runtime scalars a sum may hold (a damaged module's chains must not grow without bound)
LINE = 20_000  # characters an op's line may have for the reader to read it (longer: its values unknown)

PASS = frozenset({"tt.broadcast", "ttg.convert_layout", "arith.extsi", "arith.extui", "arith.trunci",
                  "arith.index_cast", "arith.index_castui"})
REM = frozenset({"arith.remsi", "arith.remui"})

Form = tuple  # (steps: dict[dim, int | None], linear part: Lin | None), or None where unknown
# The value at element 0, as a sum: (a constant, ((name, coefficient), ...)) over the runtime scalars it is
# made of (a function's scalar arguments, a program id, a loop's counter, a scalar op the reader does not
# follow, each by its name): two loads of one record differ only in the constant (`g + 51`, `g + 52`).
Lin = tuple


def _const(lin: Lin | None) -> int | None:
    return lin[0] if lin is not None and not lin[1] else None


def _leaf(name: str) -> Lin:
    return (0, ((name, 1),))


def _plus(a: Lin | None, b: Lin | None, sign: int = 1) -> Lin | None:
    if a is None or b is None:
        return None
    terms = dict(a[1])
    for n, k in b[1]:
        terms[n] = terms.get(n, 0) + sign * k
    return a[0] + sign * b[0], tuple(sorted((n, k) for n, k in terms.items() if k))


def _times(a: Lin | None, k: int | None) -> Lin | None:
    if a is None or k is None:
        return None
    return a[0] * k, tuple((n, c * k) for n, c in a[1] if c * k)


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
    steps, lin = form
    if lin is not None and (abs(lin[0]) > LIMIT or len(lin[1]) > TERMS or any(abs(k) > LIMIT for _, k in lin[1])):
        lin = None
    if any(v is not None and abs(v) > LIMIT for v in steps.values()):
        return None
    return steps, lin


def _form(op: str, rest: str, env: dict[str, Form], name: str = "") -> Form:
    """The linear form of the value `op` defines (named `name`) from its operands' (`env`)."""
    return _bounded(_form_of(op, rest, env, name))


def _form_of(op: str, rest: str, env: dict[str, Form], name: str) -> Form:
    operands = _NAME.findall(rest.split(" : ", 1)[0])
    sub = [env.get(o) for o in operands]
    kind = _result_kind(rest)
    if op == "arith.constant":
        m = _DENSE_INT.match(rest) or _SCALAR_INT.match(rest)
        if m is None and kind != "scalar":
            return None  # (dense<[0, 64, 128]>: a value a lane, not one for all)
        return ({}, (int(m.group(1)), ()) if m else None)
    if op == "tt.make_range":
        m = _START.search(rest)
        return ({0: 1}, (int(m.group(1)), ()) if m else None)
    if op == "tt.splat":
        return ({}, sub[0][1]) if sub and sub[0] is not None else ({}, None)
    if op == "tt.get_program_id":
        m = _PID_AXIS.search(rest)
        return ({}, _leaf(f"pid:{m.group(1)}") if m else None)
    if kind is None:
        return None  # (a type the reader cannot see: an scf.if's results)
    if kind == "scalar":
        # a scalar: the same in every lane; a sum the reader follows, or a runtime value of its own
        if sub and all(f is not None for f in sub):
            lins = [f[1] for f in sub]
            if op in PASS:
                return {}, lins[0]
            if op in ("arith.addi", "arith.subi", "tt.addptr") and len(lins) == 2:
                return {}, _plus(lins[0], lins[1], -1 if op == "arith.subi" else 1)
            if op == "arith.muli" and len(lins) == 2 and (_const(lins[0]) is not None or _const(lins[1]) is not None):
                k = _const(lins[1]) if _const(lins[1]) is not None else _const(lins[0])
                return {}, _times(lins[0] if _const(lins[1]) is not None else lins[1], k)
        # a value of its own; one made from a program id (`pid // n`, `pid * stride`) says so in its name
        follows = any(f is None or f[1] is None or any(n.startswith("pid") for n, _ in f[1][1]) for f in sub)
        return {}, _leaf(("pid?" if follows else "") + name) if name else None
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
        return (sub[0][0], None) if not sub[1][0] and _const(sub[1][1]) is None else None
    if op in ("arith.addi", "tt.addptr", "arith.subi") and len(sub) == 2:
        sign = -1 if op == "arith.subi" else 1
        (a, la), (b, lb) = sub
        steps = dict(a)
        for d, v in b.items():
            steps[d] = None if v is None or steps.get(d, 0) is None else steps.get(d, 0) + sign * v
        return steps, _plus(la, lb, sign)
    if op in ("arith.muli", "arith.shli") and len(sub) == 2:
        (a, la), (b, lb) = sub
        vb = _const(lb)
        if op == "arith.shli":
            if b:
                return None
            vb = 1 << vb if vb is not None and 0 <= vb < 32 else None
            lb = (vb, ()) if vb is not None else None
        if a and b:
            return None  # a product of two varying values is not linear
        steps, k = (a, vb) if a else (b, _const(la))
        lin = _times(la, vb) if vb is not None else (_times(lb, _const(la)) if _const(la) is not None else None)
        return {d: (v * k if v is not None and k is not None else None) for d, v in steps.items()}, lin
    return None


def _steps(form: Form) -> dict | None:
    return None if form is None else {d: v for d, v in form[0].items() if v != 0}


def access_steps(text: str) -> dict[int, tuple[int | None, ...] | None]:
    """Per tt.load / tt.store line of a TTGIR (by its index in `text`): the elements its address moves for a
    step along each dim of its tensor (0 for a dim it does not vary along, None where a runtime value scales
    it), or None where the pointer is not understood."""
    return {index: None if form is None else form[0] for index, form in access_forms(text).items()}


@functools.lru_cache(maxsize=4)
def access_forms(text: str) -> dict[int, tuple[tuple[int | None, ...], Lin | None] | None]:
    """access_steps' steps, each with its address at element 0 as a sum (Lin: a constant and the runtime
    scalars it is made of, in elements; None where the reader cannot say): loads whose sums differ only in
    the constant read one record's fields. (Cached for the facts' two readers of one module: do not change
    what it returns.)"""
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
            env.update((n, None if kind.startswith("tensor") else ({}, _leaf(f"{n}@{index}")))
                       for n, kind in _FUNC_ARG.findall(s[:LINE]))
            regions = [None] if s.endswith("{") else []
            continue
        if " scf.for " in f" {s}" and len(s) <= LINE and (m := _FOR.match(s)):
            if r := _RESULT.match(s):
                env[r.group(1)] = None  # (its results: not followed)
            env[m.group(1)] = ({}, _leaf(f"{m.group(1)}@{index}"))  # (its counter: a runtime value)
            first = []
            for pair in (m.group(2) or "").split(","):
                if " = " in pair:
                    arg, init = (p.strip() for p in pair.split(" = ", 1))
                    # a carried value: its first, unless a yield gives it other steps
                    start = env.get(init)
                    first.append(start)
                    # its value moves from one iteration to the next: a runtime value of its own
                    env[arg] = None if (index, len(first) - 1) in moving or start is None else \
                        (start[0], _leaf(f"{arg}@{index}"))
            if s.endswith("{"):
                regions.append((index, first))
            continue
        if s.endswith("{"):
            regions.append(None)
        if m := _RESULT.match(s):
            env[m.group(1)] = None  # (whatever it is, an earlier value of its name is not it)
        if s.startswith(("^", "scf.while", "partition", "default")) or " scf.while " in f" {s}" or \
                " scf.for " in f" {s}":  # (a loop's line too long to read: its counter and carried values)
            for name in _BLOCK_ARG.findall(s.split("{", 1)[0]):
                env[name] = None  # a region's arguments: not followed
        if len(s) <= LINE and (m := _DEF.match(s)):
            # (a value's own name, made unique: MLIR reuses names in sibling regions)
            env[m.group(1)] = _form(m.group(2), m.group(3), env, f"{m.group(1)}@{index}")
        m = re.match(r"^(?:%[\w.$-]+ = )?(tt\.load|tt\.store) (%[\w.$-]+)", s)
        if not m:
            continue
        shape = re.search(r"tensor<([0-9x]+)x!tt\.ptr<", s)
        if not shape:
            out[index] = None
            continue
        rank = len(shape.group(1).split("x"))
        form = env.get(m.group(2))
        out[index] = None if form is None else (tuple(form[0].get(d, 0) for d in range(rank)), form[1])
    return out, more
