"""How many times a program runs its main loop, read from the TTGIR with a launch's argument values.

A workload says how much work a launch does, and the model divides (docs/rank.md). A captured launch
(`irscope capture`) has no workload: it has the kernel's scalar arguments and its grid. The main loop's
bounds are scalar SSA values computed in the straight-line code before it (`arith.addi %K, %c63_i32`,
`arith.divsi`, `tt.get_program_id`), so they are evaluated here, per program where they depend on the
program's id (a causal attention's loop ends at its own row block), and averaged over the grid.

Only integer arithmetic the compiler emits for such bounds is understood; anything else makes the count
unknown (None), never a guess. Nothing is run: the TTGIR is read as text.
"""
from __future__ import annotations

import re
from typing import Mapping, Sequence

# Programs whose loop bounds are evaluated when they depend on the program id: an even sample of the grid
# beyond this (the average is what the model takes).
SAMPLE = 4096

_DEF = re.compile(r"^(%[\w.$-]+) = ([a-z_]+\.[a-z_0-9]+) (.*?)(?: loc\(.*)?$")
_FOR = re.compile(r"^(?:%[\w.$-]+(?::\d+)? = )?scf\.for %[\w.$-]+ = (%[\w.$-]+) to (%[\w.$-]+) step (%[\w.$-]+)")
_ARG = re.compile(r"(%[\w.$-]+): (i\d+|index)\b(?: \{[^}]*\})?(?: loc\(\"([^\"]+)\")?")
_INT_TYPE = re.compile(r"^(?:i\d+|index)$")
_AXES = {"x": 0, "y": 1, "z": 2}


def _trunc_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _ceil_div(a: int, b: int) -> int:
    return -((-a) // b)


_BINARY = {
    "arith.addi": lambda a, b: a + b, "arith.subi": lambda a, b: a - b, "arith.muli": lambda a, b: a * b,
    "arith.divsi": _trunc_div, "arith.divui": lambda a, b: a // b, "arith.remsi": lambda a, b: a - b * _trunc_div(a, b),
    "arith.remui": lambda a, b: a % b, "arith.ceildivsi": _ceil_div, "arith.ceildivui": _ceil_div,
    "arith.floordivsi": lambda a, b: a // b, "arith.minsi": min, "arith.maxsi": max, "arith.minui": min,
    "arith.maxui": max, "arith.andi": lambda a, b: a & b, "arith.ori": lambda a, b: a | b,
    "arith.xori": lambda a, b: a ^ b, "arith.shli": lambda a, b: a << b, "arith.shrsi": lambda a, b: a >> b,
    "arith.shrui": lambda a, b: a >> b,
}
_CMP = {"eq": lambda a, b: a == b, "ne": lambda a, b: a != b, "slt": lambda a, b: a < b,
        "sle": lambda a, b: a <= b, "sgt": lambda a, b: a > b, "sge": lambda a, b: a >= b,
        "ult": lambda a, b: a < b, "ule": lambda a, b: a <= b, "ugt": lambda a, b: a > b,
        "uge": lambda a, b: a >= b}
_CASTS = ("arith.extsi", "arith.extui", "arith.trunci", "arith.index_cast", "arith.index_castui")


class _Program:
    """The scalar straight-line code of a kernel up to its loops, as (name, op, operands text) steps."""

    def __init__(self, text: str):
        self.args: dict[str, str] = {}  # SSA name of each scalar argument -> the parameter's name
        self.steps: list[tuple[str, str, str]] = []
        self.loops: list[tuple[str, str, str]] = []  # top-level scf.for bounds: (lb, ub, step) names
        depth_in_for = 0  # scf.for regions the current line is in
        stack: list[bool] = []  # per open region: is it an scf.for's
        in_func = False
        for line in text.splitlines():
            s = line.strip()
            if s.startswith("tt.func"):
                in_func = True
                head = s[s.index("(") + 1:]
                for m in _ARG.finditer(head):
                    if _INT_TYPE.match(m.group(2).strip()):
                        self.args[m.group(1)] = m.group(3) or m.group(1)[1:]
                stack.append(False)  # the function's body
                continue
            if not in_func or not s:
                continue
            if s.startswith("}"):
                if s.endswith("{"):
                    continue  # `} else {`
                if stack and stack.pop():
                    depth_in_for -= 1
                if not stack:
                    break  # the function's end
                continue
            opens = s.endswith("{")
            f = _FOR.match(s)
            if depth_in_for == 0:
                if f:
                    self.loops.append((f.group(1), f.group(2), f.group(3)))
                elif (m := _DEF.match(s)) and "tensor<" not in s and "memdesc" not in s:
                    self.steps.append((m.group(1), m.group(2), m.group(3)))
            if opens:
                is_for = f is not None
                stack.append(is_for)
                depth_in_for += is_for
        if not in_func:
            self.args = {}

    def run(self, env: dict[str, int | None], pid: Sequence[int], grid: Sequence[int]) -> dict:
        """Every step's value (None where unknown), from the arguments' values in `env`."""
        values = dict(env)
        for name, op, rest in self.steps:
            values[name] = _value(op, rest, values, pid, grid)
        return values


def _operands(rest: str) -> list[str]:
    return re.findall(r"%[\w.$-]+", rest.split(" : ")[0])


def _value(op: str, rest: str, values: dict, pid: Sequence[int], grid: Sequence[int]):
    if op == "arith.constant":
        text = rest.split(" : ")[0].strip()
        if text in ("true", "false"):
            return int(text == "true")
        return int(text) if re.fullmatch(r"-?\d+", text) else None
    if op in ("tt.get_program_id", "tt.get_num_programs"):
        axis = _AXES.get(rest.split()[0]) if rest else None
        if axis is None:
            return None
        return pid[axis] if op == "tt.get_program_id" else grid[axis]
    names = _operands(rest)
    got = [values.get(n) for n in names]
    if any(v is None for v in got):
        return None
    if op in _BINARY and len(got) == 2:
        try:
            return _BINARY[op](got[0], got[1])
        except (ZeroDivisionError, ValueError):
            return None
    if op in _CASTS and len(got) == 1:
        return got[0]
    if op == "arith.cmpi" and len(got) == 2:
        pred = rest.split(",")[0].strip()
        return int(_CMP[pred](got[0], got[1])) if pred in _CMP else None
    if op == "arith.select" and len(got) == 3:
        return got[1] if got[0] else got[2]
    return None


def loop_trips(ttgir: str, args: Mapping[str, int], grid: Sequence[int]) -> list[float | None]:
    """Each top-level loop's trip count (text order, as facts.top_loops lists them), averaged over the
    launch's programs; None for a loop whose bounds are not plain integer arithmetic of `args` (the
    scalar arguments by parameter name) and the program ids."""
    prog = _Program(ttgir)
    if not prog.loops:
        return []
    env = {ssa: (int(args[name]) if name in args and isinstance(args[name], (int, bool)) else None)
           for ssa, name in prog.args.items()}
    grid3 = [max(1, int(g)) for g in (list(grid) + [1, 1, 1])[:3]]

    def trips(pid: Sequence[int]) -> list[int | None]:
        v = prog.run(env, pid, grid3)
        out: list[int | None] = []
        for lb, ub, step in prog.loops:
            lo, hi, st = v.get(lb), v.get(ub), v.get(step)
            out.append(None if lo is None or hi is None or not st or st < 0 else max(0, _ceil_div(hi - lo, st)))
        return out

    if not any(op == "tt.get_program_id" for _, op, _ in prog.steps):
        return [None if n is None else float(n) for n in trips((0, 0, 0))]  # the same for every program
    total = grid3[0] * grid3[1] * grid3[2]
    stride = max(1, total // SAMPLE)  # an even sample of a large grid: the average is what counts
    sums: list[float | None] = [0.0] * len(prog.loops)
    seen = 0
    for linear in range(0, total, stride):
        pid = (linear % grid3[0], linear // grid3[0] % grid3[1], linear // (grid3[0] * grid3[1]))
        for i, n in enumerate(trips(pid)):
            sums[i] = None if n is None or sums[i] is None else sums[i] + n
        seen += 1
    return [None if t is None else t / seen for t in sums]
