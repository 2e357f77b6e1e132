"""A workload's launch at a size, without running it: how many programs, how much work (irscope rank).

The workload's own `build` and `launch` run on torch's "meta" device, where tensors have shapes and
dtypes and no memory, so a 4096^3 matmul or a 2^27-element add is planned in microseconds.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from ..errors import EnvironmentProblem, UsageError
from .workload import MODELLED_SMS, KernelCall, Workload, params_of


@dataclass(frozen=True)
class Problem:
    """One kernel's launch at one size: its grid and the work the whole launch does."""

    kernel: str
    size_name: str
    size: Mapping[str, int]
    grid: tuple[int, ...]
    flops: float  # the workload's useful flops
    min_bytes: float  # the least DRAM traffic the work needs
    call: Any = None  # the KernelCall (meta tensors), to check a snapshot's assumptions against
    # The main loop's trip count a program runs, when it is known from the launch itself (a captured
    # launch: irscope.rank.captured); None: the model derives it from the work (model.iterations).
    trips: float | None = None
    # The main loop's work an iteration, when the launch knows it better than the TTGIR's text does (a
    # captured launch whose main loop holds loops of its own: each counted as it runs); None: the facts'.
    loop: Mapping[str, Any] | None = None

    @property
    def programs(self) -> int:
        n = 1
        for g in self.grid:
            n *= max(1, int(g))
        return n

    def as_dict(self) -> dict:
        return {"kernel": self.kernel, "size_name": self.size_name, "size": dict(self.size), "grid": list(self.grid),
                "programs": self.programs, "flops": self.flops, "min_bytes": self.min_bytes,
                **({"trips": self.trips} if self.trips is not None else {}),
                **({"loop": dict(self.loop)} if self.loop is not None else {})}


def require_torch() -> None:
    """Raise EnvironmentProblem unless torch can be imported: a workload's `build` makes torch tensors, so
    planning its launch needs torch (a check the CLI makes before it compiles anything)."""
    import importlib.util
    try:
        found = importlib.util.find_spec("torch") is not None
    except (ImportError, ValueError):  # a torch in sys.modules that is None or has no spec
        found = False
    if not found:
        raise EnvironmentProblem("irscope rank needs torch to plan a workload's launch at a size (its build and "
                                 "launch run on torch's meta device), and torch is not installed",
                                 "install it: pip install 'irscope[test]' (or pip install torch)")


def problem_at(spec, size_text: str | None, constexprs: Mapping[str, Any] | None = None, *,
               sms: int = 1) -> Problem:
    """Plan `spec`'s launch at `size_text` (a preset or K=V,...) with `constexprs` over its default config;
    `sms` is what `sm_count()` answers for persistent grids."""
    require_torch()
    import torch

    workload = spec.workload
    if not isinstance(workload, Workload):
        raise UsageError(f"kernel '{spec.name}' has no workload, so irscope cannot size its launch",
                         "give its KernelSpec a workload=Workload(...) (docs/kernel-spec.md)")
    name, size = workload.parse_size(size_text, workload.bench_size if workload.bench_size in workload.sizes
                                     else next(iter(workload.sizes)))
    params = params_of(spec, workload, None, constexprs)  # with the other kernels its workload launches
    token = MODELLED_SMS.set(sms)
    try:
        x = workload.build(size, torch.Generator(), "meta")
        launched = workload.launch(x, size, params)
        calls = [c for c in launched if c.kernel == spec.name]
    except (RuntimeError, TypeError, ValueError, OverflowError) as e:
        # torch's sizes are 64-bit: a dimension past them, or a tensor of more than 2^63 bytes, cannot be made
        # even on the meta device. Anything else is the workload's own failure, and is raised as it is.
        if "overflow" not in str(e).lower():
            raise
        what = name if "=" in name else f"{name} ({','.join(f'{k}={v}' for k, v in size.items())})"
        raise UsageError(f"size {what} is too large for torch to plan the workload's tensors: "
                         f"{str(e).splitlines()[0].strip()}",
                         "give smaller dimensions (torch's sizes are 64-bit, in elements and in bytes)") from None
    finally:
        MODELLED_SMS.reset(token)
    if not calls:
        raise UsageError(f"the workload of '{spec.name}' does not launch it", "check the workload's launch")
    call: KernelCall = calls[0]
    least = float(workload.bytes(size))
    if len({c.kernel for c in launched}) > 1:
        # The workload's bytes are those of every kernel it launches (blur.gray, blur.row and blur.col): this
        # kernel's own least traffic is each tensor its launch takes, read or written once
        least = float(_tensor_bytes(call.args))
    return Problem(spec.name, name, size, tuple(call.grid), float(workload.flops(size)), least, call)


def _tensor_bytes(args) -> int:
    """The bytes of the distinct tensors among a launch's arguments (meta tensors know theirs)."""
    seen: dict[int, int] = {}
    for a in args:
        if hasattr(a, "element_size") and hasattr(a, "numel"):
            seen[id(a)] = int(a.numel()) * int(a.element_size())
    return sum(seen.values())

