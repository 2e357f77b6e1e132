"""Sweep points: the cartesian products a sweep file describes, checked against each kernel."""
from __future__ import annotations

import difflib
import itertools
from dataclasses import dataclass
from typing import Any

from ..errors import IrscopeError, UsageError
from ..spec import CompileOptions
from .file import RESERVED_AXES, KernelEntry, Sweep, options_for


@dataclass(frozen=True)
class SweepPoint:
    """One compile of a sweep: kernel, target and options, plus the grid values that chose it."""

    kernel: str
    target: str
    options: CompileOptions
    axes: tuple[tuple[str, Any], ...] = ()  # the grid values that chose it, in the file's order
    where: str = ""  # "FILE:LINE" of the entry it came from, for errors found later

    def pipeline_point(self):
        from ..pipeline import Point
        return Point(self.kernel, self.target, self.options)


def expand(sweep: Sweep) -> list[SweepPoint]:
    """Every point of the sweep (kernels x targets x grid), without repeats, checked against each kernel."""
    from .. import library
    points: list[SweepPoint] = []
    seen = set()
    for entry in sweep.kernels:
        where = f"{sweep.path}:{entry.line}"
        try:
            spec = library.load_kernel(entry.ref)
        except IrscopeError as e:
            raise UsageError(f"{where}: {e.message}", e.hint) from None
        _check_names(spec, entry, str(sweep.path))
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
                    point = SweepPoint(entry.ref, target, options.with_(config=config), axes, where)
                    key = (point.kernel, point.target, point.options)
                    if key not in seen:
                        seen.add(key)
                        points.append(point)
    return points


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
                             "config, option.NAME")
