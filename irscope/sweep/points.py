"""Sweep points: the cartesian products a sweep file describes, checked against each kernel."""
from __future__ import annotations

import difflib
import itertools
from dataclasses import dataclass
from typing import Any

from ..errors import IrscopeError, UsageError
from ..spec.kernel import (CompileOptions, check_arg_value, check_backend_option, check_constexpr_value, check_warps,
                           parse_value)
from .file import RESERVED_AXES, KernelEntry, Sweep, options_for


@dataclass(frozen=True)
class SweepPoint:
    """One compile of a sweep: kernel, target and options, plus the grid values that chose it."""

    kernel: str
    target: str
    options: CompileOptions
    axes: tuple[tuple[str, Any], ...] = ()  # the grid values that chose it, in the file's order
    where: str = ""  # "FILE:LINE" of the entry it came from, for errors found later
    triton: str = ""  # another Triton release to compile under (harness/envs.py); "" is this process's

    def pipeline_point(self):
        from ..harness.batch import Point
        return Point(self.kernel, self.target, self.options, self.triton)


class TooManyPoints(Exception):
    """The sweep gives more points than the limit `expand` was given; `bound` is how many its grids give at
    most (repeats not yet removed), which `expand` counts without making them."""

    def __init__(self, bound: int):
        super().__init__(bound)
        self.bound = bound


def expand(sweep: Sweep, limit: int | None = None) -> list[SweepPoint]:
    """Every point of the sweep (kernels x targets x grid), without repeats, checked against each kernel.

    With `limit`, a sweep of more points raises TooManyPoints as soon as it makes the one past the limit: a
    typo in a grid (a 10^9-point product) is refused before it fills the memory."""
    from ..spec import library
    points: list[SweepPoint] = []
    seen = set()
    entries = []
    for entry in sweep.kernels:
        where = f"{sweep.path}:{entry.line}"
        try:
            spec = library.load_kernel(entry.ref)
        except IrscopeError as e:
            raise UsageError(f"{where}: {e.message}", e.hint) from None
        _check_names(spec, entry, str(sweep.path))
        _check_values(spec, entry, sweep)
        entries.append((entry, spec, where))
    bound = sum(_grid_bound(grid, entry, spec, sweep) for entry, spec, _ in entries for grid in entry.grids)
    # The grids' product is the count held to the limit (docs/sweep.md), before any point is made: a grid
    # whose values repeat (`BLOCK: [64, 64, ...]`) makes few points from a product of 10^8 combinations,
    # and making them all ran for minutes before the few passed the limit.
    if limit is not None and bound > limit:
        raise TooManyPoints(bound)
    for entry, spec, where in entries:
        for grid in entry.grids:
            names = [n for n, _ in grid]
            for combo in itertools.product(*[vals for _, vals in grid]):
                axes = tuple(zip(names, combo))
                try:
                    options = options_for(dict(entry.fixed) | dict(axes), entry.config, sweep.line_info)
                except UsageError as e:
                    raise UsageError(f"{where}: {e.message}", e.hint) from None
                # `config: all` is the kernel's whole menu (an autotuned kernel's: its autotune space).
                configs = [c.name for c in spec.configs] if options.config == "all" else [options.config]
                for config, target in itertools.product(configs, sweep.targets):
                    # each config of `all` is a value of its own: the config axis says which (a column of the
                    # table, a field of --json and the CSV), first, as the menu's choice is
                    chosen = ((("config", config),) + tuple(a for a in axes if a[0] != "config")
                              if options.config == "all" else axes)
                    point = SweepPoint(entry.ref, target, options.with_(config=config), chosen, where)
                    key = (point.kernel, point.target, point.options)
                    if key not in seen:
                        seen.add(key)
                        points.append(point)
                        if limit is not None and len(points) > limit:
                            raise TooManyPoints(bound)
    if not points:
        raise UsageError(f"{sweep.path}:1: the sweep has no points to compile",
                         "give `kernels:`, `targets:` and a `grid:` whose axes each have values (docs/sweep.md)")
    return points


def _grid_bound(grid, entry: KernelEntry, spec, sweep: Sweep) -> int:
    """The most points one grid of an entry gives: its product, times the kernel's menu where a config is
    `all`, times the targets."""
    n = len(sweep.targets)
    for _, values in grid:
        n *= len(values)
    configs = [v for name, values in grid if name == "config" for v in values] + [entry.config]
    if "all" in configs or dict(entry.fixed).get("config") == "all":
        n *= max(1, len(spec.configs))
    return n


def _check_values(spec, entry: KernelEntry, sweep: Sweep) -> None:
    """Check every value of the entry on its own, so that a bad one is reported at its own line rather
    than at the entry's when a point that combines it fails to specialise later."""
    from .. import harness
    from ..targets import get_target

    targets = [get_target(t) for t in sweep.targets]
    fields = {}
    params = {p.name: p for p in getattr(spec.fn, "params", ())}
    try:
        defaults = {**spec.constexprs, **spec.config(None if entry.config == "all" else entry.config).constexprs}
    except UsageError as e:
        raise UsageError(f"{sweep.path}:{entry.config_line or entry.line}: {e.message}", e.hint) from None
    values = list(entry.fixed) + [(n, v) for grid in entry.grids for n, vals in grid for v in vals]
    for name, value in dict.fromkeys((n, (type(v), v)) for n, v in values):
        value = value[1]
        given = f"`{name}: {value}`"
        try:
            if name == "num_warps":
                for t in targets:
                    check_warps(value, "num_warps", warp_size=t.warp_size, max_threads=t.max_threads_per_block,
                                target=t.name)
            elif name == "config":
                if str(value) != "all":  # all: every config of the menu
                    spec.config(str(value))
            elif name.startswith("arg."):
                arg = name[4:]
                parsed = parse_value(value) if isinstance(value, str) else value
                if isinstance(parsed, int) and not isinstance(parsed, bool) and not -2**63 <= parsed < 2**64:
                    # else refused later by Triton's specialisation, at the entry's line, in --arg's words
                    raise UsageError(f"{given}: {arg} is past 64 bits, more than a launch can pass",
                                     "give an integer a kernel argument can hold (at most 2**64 - 1)")
                check_arg_value(spec, arg, parsed, getattr(params.get(arg), "annotation_type", "") or "", given)
            elif name.startswith("option."):
                for t in targets:
                    if t.name not in fields:
                        fields[t.name] = harness.target_option_fields(t)
                    check_backend_option(name[7:], value, fields[t.name], t.name, given)
            elif name not in RESERVED_AXES:
                check_constexpr_value(spec, name, value, defaults.get(name), given)
        except UsageError as e:
            raise UsageError(f"{sweep.path}:{entry.line_of(name, value)}: {e.message}", e.hint) from None


def _check_names(spec, entry: KernelEntry, path: str) -> None:
    """Every option name is one the kernel has (or a reserved one); the error points at the name's line."""
    lines = dict(entry.axis_lines)
    params = list(getattr(spec.fn, "params", ()))
    constexprs = [p.name for p in params if p.is_constexpr]
    args = [p.name for p in params if not p.is_constexpr]
    names = [n for n, _ in entry.fixed] + [n for grid in entry.grids for n, _ in grid]
    for name in names:
        if name in RESERVED_AXES or name.startswith("option."):
            continue
        known, bare = (args, name[4:]) if name.startswith("arg.") else (constexprs, name)
        if bare not in known:
            close = difflib.get_close_matches(bare, known, n=1)
            what = "argument" if name.startswith("arg.") else "constexpr"
            raise UsageError(f"{path}:{lines.get(name, entry.line)}: {spec.fn_name} has no {what} `{bare}`",
                             (f"did you mean `{close[0]}`? " if close else "") +
                             f"{what}s: {', '.join(known) or '(none)'}; or num_warps, num_stages, divisibility, "
                             "config, option.NAME" + (", arg.NAME (an argument)" if what == "constexpr" else ""))
