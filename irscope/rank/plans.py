"""Whether a workload's launch at a size fits the space compiled for it: checks rank makes around its compiles.

A space's snapshots were compiled for one specialisation each (docs/specialisation.md); a size whose launch
breaks it would be ranked on code that does not run there. Two breaks are caught here, each as early as it
can be known:

- before compiling: a constexpr the workload's launch sets from the size (softmax's BLOCK_SIZE follows the
  row length) to another value than the space compiles: it is read from the sweep's options alone;
- after compiling: an integer argument outside the type the compile gave it (an n_elements of 2^32 for a
  space that took it as i32): Triton picks that type from the typical value and the annotation, so it is
  read from each snapshot's record rather than re-derived here.
"""
from __future__ import annotations

import re
from typing import Iterable, Sequence

from ..errors import IrscopeError, UsageError
from ..gpu.replay import SpecialisationMismatch, full_args
from ..spec.kernel import CompileOptions, resolve
from ..spec.problem import problem_at


def check_launched_constexprs(spec, options: Iterable[CompileOptions], sizes: Sequence[str | None], *,
                              sms: int) -> None:
    """Raise UsageError when the workload, launched at one of `sizes`, sets a constexpr to another value than
    one of `options` compiles it with (or when a size is too large to plan at all)."""
    params = list(getattr(spec.fn, "params", ()))
    names = [p.name for p in params]
    constexpr_names = [p.name for p in params if p.is_constexpr]
    seen = set()
    for opts in options:
        try:
            constexprs = resolve(spec, opts, names, constexpr_names).constexprs
        except IrscopeError:  # a point that cannot be resolved fails its compile, which says why
            continue
        key = repr(sorted(constexprs.items()))
        if key in seen:  # num_warps, num_stages and arguments do not change the launch's constexprs
            continue
        seen.add(key)
        for size in sizes:
            problem = problem_at(spec, size, constexprs, sms=sms)
            launched = problem.call.constexprs
            for name, want in constexprs.items():
                if name in launched and str(launched[name]) != str(want):
                    got = launched[name]
                    raise UsageError(
                        f"size {problem.size_name}: the workload launches {spec.name} with {name}={got} at this "
                        f"size, but the space compiles it with {name}={want}",
                        f"rank at a size whose launch keeps {name}={want}, or compile the space for this one: "
                        f"`{name}: {got}` under a sweep file's `set:` (docs/sweep.md)")


def check_int_args(snapshot, fn, call) -> None:
    """Raise SpecialisationMismatch for an integer argument of `call` outside the type `snapshot` compiled it
    as: the kernel would compute with a wrapped value."""
    values = dict(zip(fn.arg_names, full_args(fn, call)))
    for e in snapshot.meta.get("specialisation") or ():
        m = re.fullmatch(r"([iu])(8|16|32|64)", str(e.get("type", "")))
        value = values.get(e.get("name"))
        if e.get("kind") != "scalar" or m is None or not isinstance(value, int) or isinstance(value, bool):
            continue
        bits = int(m[2])
        low, high = (-(1 << bits - 1), (1 << bits - 1) - 1) if m[1] == "i" else (0, (1 << bits) - 1)
        if not low <= value <= high:
            raise SpecialisationMismatch(
                f"{snapshot.label} takes {e['name']} as {e['type']} ({low:,} to {high:,}), but this launch has "
                f"{e['name']}={value}", arg=e["name"], value=value)
