"""How many times a program runs its main loop, read from the TTGIR with a launch's argument values.

A workload says how much work a launch does, and the model divides (docs/rank.md). A captured launch
(`irscope capture`) has no workload: it has the kernel's scalar arguments and its grid. The main loop's
bounds are scalar SSA values computed in the straight-line code before it (`arith.addi %K, %c63_i32`,
`arith.divsi`, `tt.get_program_id`), so they are evaluated here, per program where they depend on the
program's id (a causal attention's loop ends at its own row block), and averaged over the grid. A
warp_specialize partition's loops are read through its arguments, each the op's operand in its place.

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
_IF = re.compile(r"^(?:%[\w.$-]+(?::\d+)? = )?scf\.if (%[\w.$-]+)")
# A warp_specialize op and its partitions: regions isolated from above, whose block arguments are the op's
# operands, in order (`ttg.warp_specialize(%a, %n) ... partition0(%arg9: ..., %arg10: i32) num_warps(4) {`)
_WARP_SPECIALIZE = re.compile(r"^(?:%[\w.$-]+(?::\d+)? = )?ttg\.warp_specialize\(([^)]*)\)")
_PARTITION = re.compile(r"^partition\d+\((.*)\) num_warps\(\d+\) \{$")
_NAME = re.compile(r"%[\w.$-]+")
_NEXT_REGION = re.compile(r"^(default|partition\d+\()")  # another region of the same warp_specialize op


def _guards(stack: list[list]) -> list[tuple[str, bool, int]]:
    """The scf.if branches a loop sits in: (condition, in its then-branch, partitions open around the if)."""
    out, depth = [], 0
    for kind, condition, then in stack:
        if kind == "partition":
            depth += 1
        elif kind == "if":
            out.append((condition, then, depth))
    return out


def _peek(lines: list[str], index: int) -> str:
    """The next line after `index` with something on it, stripped."""
    for line in lines[index + 1:]:
        if line.strip():
            return line.strip()
    return ""


LIMIT = 1 << 63  # a value past this is not a loop bound a GPU runs: unknown
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
    """The scalar straight-line code of a kernel, as (name, op, operands text) steps, and its top-level loops
    (those not inside another loop: facts.top_loops' list), each with where in the steps its bounds are read
    and the scf.if branches it sits in."""

    def __init__(self, text: str):
        self.args: dict[str, str] = {}  # SSA name of each scalar argument -> the parameter's name
        self.steps: list[tuple[str, str, str]] = []
        # per top-level loop: (lb, ub, step, steps before it, [(if condition, in its then-branch, partitions
        # open around the if)...])
        self.loops: list[tuple] = []
        # per top-level loop, the loops directly inside it, the same way (their bounds read from the steps
        # in the outer loop's body too: a bound that depends on its induction variable is unknown)
        self.nested: list[list[tuple]] = []
        self.order: list[tuple[int, int | None]] = []  # (top-level loop, nested loop or None), in text order
        stack: list[list] = []  # per open region: [kind, condition, then-branch?]
        captured: list[list[str]] = []  # the operands of each warp_specialize op whose regions are open
        in_func = False
        lines = text.splitlines()
        for index, line in enumerate(lines):
            s = line.strip()
            if not in_func:
                if s.startswith("tt.func public"):  # the kernel (a noinline helper is private)
                    in_func = True
                    for m in _ARG.finditer(s[s.index("(") + 1:]):
                        self.args[m.group(1)] = m.group(3) or m.group(1)[1:]
                    stack.append(["func", None, True])
                continue
            if not s:
                continue
            if s.startswith("}"):
                if s.endswith("{"):  # `} else {`: the same op's other region
                    if stack and stack[-1][0] == "if":
                        stack[-1][2] = False
                    continue
                if stack and stack.pop()[0] == "partition":
                    self.steps.append(("", "scope.end", ""))  # its names (sibling partitions reuse them) go
                if stack and stack[-1][0] == "ws" and not _NEXT_REGION.match(_peek(lines, index)):
                    stack.pop()  # the op's last region has ended
                    captured.pop()
                if not stack:
                    break  # the function's end
                continue
            kinds = [k for k, _, _ in stack]
            f = _FOR.match(s)
            depth = kinds.count("for")
            if depth == 1 and f:
                guards = _guards(stack)
                self.nested[-1].append((f.group(1), f.group(2), f.group(3), len(self.steps), guards))
                self.order.append((len(self.loops) - 1, len(self.nested[-1]) - 1))
            elif depth == 1 and (m := _DEF.match(s)) and "tensor<" not in s and "memdesc" not in s:
                self.steps.append((m.group(1), m.group(2), m.group(3)))
            if depth == 0:
                if f:
                    guards = _guards(stack)
                    self.loops.append((f.group(1), f.group(2), f.group(3), len(self.steps), guards))
                    self.nested.append([])
                    self.order.append((len(self.loops) - 1, None))
                elif (m := _WARP_SPECIALIZE.match(s)):
                    captured.append(_NAME.findall(m.group(1)))
                    stack.append(["ws", None, True])  # its regions follow; it ends at the last one's end
                elif (m := _DEF.match(s)) and "tensor<" not in s and "memdesc" not in s:
                    self.steps.append((m.group(1), m.group(2), m.group(3)))
            if s.endswith("{"):
                if f:
                    stack.append(["for", None, True])
                elif (m := _IF.match(s)):
                    stack.append(["if", m.group(1), True])
                elif "for" not in kinds and (m := _PARTITION.match(s)):
                    # A partition sees the kernel's values only through its arguments: each bound to the
                    # warp_specialize operand in its place (a partition with more arguments than the op
                    # has operands binds the rest to nothing: unknown).
                    params = re.findall(r"(%[\w.$-]+):", m.group(1))
                    operands = captured[-1] if captured else []
                    self.steps.append(("", "scope.begin", ",".join(
                        f"{p}={operands[i] if i < len(operands) else ''}" for i, p in enumerate(params))))
                    stack.append(["partition", None, True])
                else:
                    stack.append(["other", None, True])

    def counts(self, env: dict[str, int | None], pid: Sequence[int],
               grid: Sequence[int]) -> dict[tuple[int, int | None], int | None]:
        """Every top-level loop's trip count for one program (0 in a branch not taken; None if unknown), and
        each loop directly inside one's count for one iteration of it, keyed as self.order is."""
        values = dict(env)
        out: dict[tuple[int, int | None], int | None] = {}
        scopes: list[dict] = []  # the values outside each partition the steps are in
        at = 0
        for key in self.order:
            top, inner = key
            lb, ub, step, position, guards = self.loops[top] if inner is None else self.nested[top][inner]
            while at < position:  # the steps before the loop: its bounds as they are where it starts
                name, op, rest = self.steps[at]
                if op == "scope.begin":  # a partition sees only its arguments: the operands bound to them
                    scopes.append(values)
                    values = {p: scopes[-1].get(o) if o else None
                              for p, o in (pair.split("=") for pair in rest.split(",") if pair)}
                elif op == "scope.end":
                    values = scopes.pop()
                else:
                    values[name] = _value(op, rest, values, pid, grid)
                at += 1
            lo, hi, st = values.get(lb), values.get(ub), values.get(step)
            # each condition in the scope it was written in (a partition's names, or the kernel's around it)
            taken = [(scopes + [values])[depth].get(c) if depth <= len(scopes) else None for c, _, depth in guards]
            if any(t is None for t in taken):
                out[key] = None
            elif any(bool(t) != then for t, (_, then, _) in zip(taken, guards)):
                out[key] = 0  # its branch is not the one this program takes
            else:
                out[key] = None if lo is None or hi is None or not st or st < 0 else max(0, _ceil_div(hi - lo, st))
        return out


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
        if op == "arith.shli" and not 0 <= got[1] < 64:
            return None
        try:
            v = _BINARY[op](got[0], got[1])
        except (ZeroDivisionError, ValueError, OverflowError):
            return None
        return v if -LIMIT <= v <= LIMIT else None
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
    launch's programs; None for a loop whose bounds, or the scf.if conditions around it, are not plain
    integer arithmetic of `args` (the scalar arguments by parameter name) and the program ids."""
    return loop_counts(ttgir, args, grid)[0]


def loop_counts(ttgir: str, args: Mapping[str, int],
                grid: Sequence[int]) -> tuple[list[float | None], list[list[float | None]]]:
    """loop_trips' counts, and per top-level loop the iterations a program runs of each loop directly
    inside it (facts.nested_loops' order): over all of the outer loop's iterations, averaged over the
    launch's programs; None where either count is unknown."""
    prog = _Program(ttgir)
    if not prog.loops:
        return [], []
    env = {ssa: (int(args[name]) if name in args and isinstance(args[name], (int, bool))
                 and -LIMIT <= int(args[name]) <= LIMIT else None)
           for ssa, name in prog.args.items()}
    grid3 = [max(1, int(g)) for g in (list(grid) + [1, 1, 1])[:3]]
    def totals(counts: dict) -> list:
        # a nested loop's iterations in one program: its count (the same every outer iteration: its bounds
        # do not depend on the outer loop's variables, or they are unknown) times the outer loop's
        out = [counts[(i, None)] for i in range(len(prog.loops))]
        for i, inner in enumerate(prog.nested):
            for j in range(len(inner)):
                n = counts[(i, j)]
                out.append(0 if out[i] == 0 else None if n is None or out[i] is None else n * out[i])
        return out

    def split(flat: list) -> tuple[list, list[list]]:
        top, rest = flat[:len(prog.loops)], iter(flat[len(prog.loops):])
        return top, [[next(rest) for _ in inner] for inner in prog.nested]

    if not any(op == "tt.get_program_id" for _, op, _ in prog.steps):  # every program's the same
        return split([None if n is None else float(n) for n in totals(prog.counts(env, (0, 0, 0), grid3))])
    # Past SAMPLE programs, evenly spaced ids along each axis (a stride through the linear index could
    # land on one column of the grid).
    picks = []
    room = SAMPLE
    for g in grid3:
        k = min(g, max(1, room))
        picks.append(sorted({(2 * i + 1) * g // (2 * k) for i in range(k)}))
        room //= len(picks[-1])
    sums: list[float | None] = [0.0] * (len(prog.loops) + sum(len(inner) for inner in prog.nested))
    seen = 0
    for x in picks[0]:
        for y in picks[1]:
            for z in picks[2]:
                for i, n in enumerate(totals(prog.counts(env, (x, y, z), grid3))):
                    sums[i] = None if n is None or sums[i] is None else sums[i] + n
                seen += 1
    return split([None if t is None else t / seen for t in sums])
