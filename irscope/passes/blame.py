"""Which pass did it: the steps after which a pattern starts or stops matching the IR, and the step
that introduced a given line."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

from ..errors import UsageError
from .timeline import Step, Timeline

_OP_NAME = re.compile(r"[A-Za-z_][\w$]*(?:\.[\w$]+)+")


def compile_pattern(pattern: str) -> re.Pattern:
    """An op name (`ttg.async_copy_global_to_local`) matches that whole name; anything else is a regex."""
    if _OP_NAME.fullmatch(pattern):
        return re.compile(r"(?<![\w$.])" + re.escape(pattern) + r"(?![\w$.])")
    try:
        return re.compile(pattern)
    except (re.error, OverflowError, RecursionError) as e:  # x{99999999999}: too large a repeat to compile
        raise UsageError(f"bad pattern '{pattern}': {e}",
                         "give an op name (ttg.local_load) or a Python regular expression (e.g. 'cp\\.async\\w*')")


@dataclass(frozen=True)
class Event:
    """A pattern starting (`appears`) or stopping (`disappears`) to match after a step."""

    kind: str
    step: Step
    count: int  # matching lines after the step


@dataclass(frozen=True)
class Blame:
    pattern: str
    at_start: int  # matching lines in the IR before the first pass
    events: tuple[Event, ...]

    @property
    def first(self) -> Event | None:
        return next((e for e in self.events if e.kind == "appears"), None)

    @property
    def gone(self) -> Event | None:
        """Where it disappears after its first appearance (or after the start, when it was there)."""
        first = self.first
        after = first.step.n if first and not self.at_start else -1
        return next((e for e in self.events if e.kind == "disappears" and e.step.n > after), None)


def find_pattern(tl: Timeline, pattern: str, *, raw: bool = False) -> Blame:
    """Every step after which `pattern` starts or stops matching the IR (normalised unless `raw`)."""
    regex = compile_pattern(pattern)
    counts: dict[int, int] = {}

    def count(ir: int | None) -> int:
        if ir is None:
            return 0
        if ir not in counts:
            counts[ir] = sum(1 for ln in tl.comparable(ir, raw).split("\n") if regex.search(ln))
        return counts[ir]

    at_start = count(tl.initial)
    events = []
    present = at_start > 0
    for step in tl.steps:
        if step.after is None:
            continue
        n = count(step.after)
        if n and not present:
            events.append(Event("appears", step, n))
        elif present and not n:
            events.append(Event("disappears", step, 0))
        present = n > 0
    return Blame(pattern, at_start, tuple(events))


def matching_hunks(diff: Sequence[str], pattern: str) -> tuple[list[str], int]:
    """The hunks of a unified diff whose added or removed lines match `pattern`, and how many others."""
    regex = compile_pattern(pattern)
    hunks: list[list[str]] = []
    for ln in diff[2:]:
        if ln.startswith("@@") or not hunks:
            hunks.append([])
        hunks[-1].append(ln)
    keep = [h for h in hunks if any(ln[:1] in "+-" and regex.search(ln[1:]) for ln in h[1:])]
    return diff[:2] + [ln for h in keep for ln in h], len(hunks) - len(keep)


def line_origin(tl: Timeline, step: Step, line: str, *, raw: bool = False) -> Step | None:
    """The step that introduced `line` (as found in the IR after `step`): the earliest step after
    which it is present without a break up to `step`. None when it was there from the start."""
    wanted = line.strip()

    def has(ir: int | None) -> bool:
        return ir is not None and any(ln.strip() == wanted for ln in tl.comparable(ir, raw).split("\n"))

    origin = None
    for s in reversed(tl.steps[:step.n + 1]):
        if s.after is None or s.form != step.form:
            continue
        if not has(s.after):
            break
        origin = s
        before = tl.previous_ir(s)
        if before is not None and not has(before):
            return s
    return None if origin is None or has(tl.initial) and origin.n == 0 else origin
