"""What-if compiles: for each decision, the alternative options that would flip it, planned within a
budget and compiled in parallel from the same content-keyed cache as `irscope sweep`.

Every what-if names the switch as the user would type it (`--num-warps 2`, `--divisibility 1`,
`--arg K=4097`, `AMDGCN_USE_BUFFER_OPS=0`), so a remark can say what would change the decision.
"""
from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from ..spec.kernel import CompileOptions, Tensor
from .decisions import largest_stages
from .facts import Decision, Facts, is_gluon
from .gluon import gluon_stages


@dataclass(frozen=True)
class WhatIf:
    """One alternative compile: the switch (as typed), the options and target it gives, and why it is asked."""

    topic: str  # the decision it is planned for
    change: str  # "--num-warps 2", "--divisibility 1", "AMDGCN_USE_BUFFER_OPS=0"
    target: str
    options: CompileOptions
    reason: str  # what it should show: "below a warpgroup: does wgmma drop to mma.sync?"
    env: tuple[tuple[str, str], ...] = ()  # environment the compile needs (not part of the content key)
    fixes: bool = False  # meant to turn a missed decision into a passed one (planned before the probes)


@dataclass(frozen=True)
class WhatIfResult:
    """What became of one what-if: its snapshot folder (or the failure) and its analysis."""

    whatif: WhatIf
    status: str  # ok, failed, crashed, timeout
    folder: Path | None
    label: str
    cached: bool
    analysis: Any = None
    error: dict | None = field(default=None, compare=False)


def plan_whatifs(facts: Facts, decisions: Sequence[Decision], options: CompileOptions,
                 budget: int) -> tuple[list[WhatIf], list[WhatIf]]:
    """(what-ifs to compile, the ones left over the budget), most telling first, without duplicates.

    A Gluon kernel writes its MMA, buffers and buffer ops by hand: num_warps below a warpgroup only breaks
    its layouts, num_stages and AMDGCN_USE_BUFFER_OPS change nothing and another target does not rewrite its
    MMA, so none of those is planned for it (its decisions' reasons say so); its buffer count is a constexpr
    of its own, the what-if for shared memory that does not fit."""
    t = facts.snapshot.target
    gluon = is_gluon(facts.snapshot)
    target = facts.snapshot.target_name
    topics = {d.topic: d for d in decisions}
    base = options.with_(passes="", name=None)
    wanted: list[WhatIf] = []
    nw = facts.num_warps or 4
    arch = int(t.arch) if t is not None and t.vendor == "nvidia" and str(t.arch).isdigit() else 0

    # (an FMA dot, fp32 with input_precision='ieee', uses no tensor core at any num_warps or on any target)
    mma = "matrix" in topics and not topics["matrix"].value.startswith("FMA")
    if mma and t is not None and t.vendor == "nvidia" and not gluon:
        if arch in (90, 100, 103) and nw >= 4:
            if topics["matrix"].value.startswith(("wgmma", "tcgen05")):
                wanted.append(WhatIf("matrix", "--num-warps 2", target, base.with_(num_warps=2),
                                     "below a warpgroup (4 warps): does the warp-group MMA drop to mma.sync?"))
        elif arch in (90, 100, 103):
            wanted.append(WhatIf("matrix", "--num-warps 4", target, base.with_(num_warps=4),
                                 "one full warpgroup: enough for the warp-group MMA?", fixes=True))
    loads = [g for g in facts.groups if g.kind == "load"]
    pointers = list(dict.fromkeys(a for g in facts.groups for a in g.arguments))
    # An integer bounding a mask with a value of its own (n_elements=1000) is as aligned as that value, whatever
    # --divisibility says: the fix takes the next multiple of 16 for it, or the what-if changed nothing.
    unaligned = [(name, value) for name in _mask_integers(facts, facts.groups)
                 if isinstance(value := facts.arg_values.get(name), int) and not isinstance(value, bool)
                 and value % 16]
    aligned_pointers = all(facts.divisibility.get(a, 1) >= 16 for a in pointers)
    if pointers and aligned_pointers and not unaligned:
        change, probe = _divisibility(base, 1)
        wanted.append(WhatIf("vectors", change, target, probe,
                             "no pointer or integer known to be 16-aligned: vector widths and async copies"))
    elif pointers:
        fix, change, why = base, [], []
        if not aligned_pointers:
            flags, fix = _divisibility(base, 16)
            change.append(flags)
            why.append("every pointer and integer 16-aligned, as torch's allocator gives")
        if unaligned:
            rounded = {name: value + 16 - value % 16 for name, value in unaligned}
            fix = fix.with_(args=tuple(a for a in fix.args if a[0] not in rounded) + tuple(rounded.items()))
            change += [f"--arg {name}={value}" for name, value in rounded.items()]
            why.append(f"{', '.join(rounded)} rounded up to a multiple of 16")
        wanted.append(WhatIf("vectors", " ".join(change), target, fix, "; ".join(why), fixes=True))
    for name in _mask_integers(facts, loads)[:1]:
        value = facts.arg_values.get(name)
        if isinstance(value, int) and not isinstance(value, bool) and value % 16 == 0:
            args = tuple(a for a in base.args if a[0] != name) + ((name, value + 1),)
            topic = "pipelining" if "pipelining" in topics else "vectors"
            wanted.append(WhatIf(topic, f"--arg {name}={value + 1}", target, base.with_(args=args),
                                 f"{name} not a multiple of 16: the loads' masks lose their alignment"))
    pipelining = topics.get("pipelining")
    if pipelining is not None and pipelining.good is False and (facts.num_stages or 0) < 2 and t is not None \
            and not gluon:
        stages = 2 if t.vendor == "amd" else 3  # (the usual depth of each backend's autotune configs)
        wanted.append(WhatIf("pipelining", f"--num-stages {stages}", target, base.with_(num_stages=stages),
                             f"num_stages={facts.num_stages}: the pipeliner needs two stages or more", fixes=True))
    shared = topics.get("shared")
    if shared is not None and t is not None and not shared.good:
        best = largest_stages(facts, t)
        own = gluon_stages(facts, t) if gluon else None
        if own is not None:
            name, value = own
            constexprs = tuple(c for c in base.constexprs if c[0] != name) + ((name, value),)
            wanted.append(WhatIf("shared", f"--constexpr {name}={value}", target, base.with_(constexprs=constexprs),
                                 f"the kernel's own buffer count ({name}): the largest estimated to fit", fixes=True))
        elif best and best != facts.num_stages:
            wanted.append(WhatIf("shared", f"--num-stages {best}", target, base.with_(num_stages=best),
                                 "the largest num_stages estimated to fit", fixes=True))
    regs = topics.get("registers")
    if regs is not None and regs.good is False:
        fewer = tuple(kv for kv in base.backend_options if kv[0] != "maxnreg")
        if fewer != base.backend_options:
            wanted.append(WhatIf("registers", "without --option maxnreg", target, base.with_(backend_options=fewer),
                                 "no register cap", fixes=True))
        elif facts.backend_options.get("maxnreg") and t is not None and t.vendor == "nvidia":
            # the kernel's config caps them: leaving --option out changes nothing, an --option outranks the config
            wanted.append(WhatIf("registers", "--option maxnreg=255", target,
                                 base.with_(backend_options=fewer + (("maxnreg", 255),)),
                                 "the config's register cap raised to 255, the most a thread has", fixes=True))
        if nw < 8:
            wanted.append(WhatIf("registers", f"--num-warps {nw * 2}", target, base.with_(num_warps=nw * 2),
                                 "twice the warps: each thread holds half the tile", fixes=True))
    bops = topics.get("buffer_ops")
    if bops is not None and bops.good and not gluon:
        variant = facts.snapshot.variant or "default"
        wanted.append(WhatIf("buffer_ops", "AMDGCN_USE_BUFFER_OPS=0", target,
                             base.with_(name=f"{variant}.no-buffer-ops"),
                             "Triton's switch for buffer ops off (as for tensors of 2 GB or more)",
                             (("AMDGCN_USE_BUFFER_OPS", "0"),)))
    if mma and arch in (80, 86, 89) and not gluon:
        wanted.append(WhatIf("matrix", "--target sm_90a", "sm_90a", base, "the same options on Hopper"))
    wanted.sort(key=lambda w: not w.fixes)  # fixes of missed decisions first, then the probes, each in order
    unique, seen = [], set()
    for w in wanted:
        key = (w.target, w.options, w.env)
        if key not in seen:
            seen.add(key)
            unique.append(w)
    return unique[:max(0, budget)], unique[max(0, budget):]


def _divisibility(base: CompileOptions, d: int) -> tuple[str, CompileOptions]:
    """(the switch, the options) that assume divisibility `d` for every pointer and integer, as the switch typed
    after the base's own flags gives them: a per-argument `--divisibility NAME=D` of the base outranks a global
    `--divisibility D`, so each that differs is given again by name (`--divisibility 16` alone kept x_ptr=1)."""
    named = {n: v for n, v in base.divisibility if n is not None}
    again = [n for n, v in named.items() if v != d]
    given = [v for n, v in base.divisibility if n is None]
    added, flags = [], []
    if (given[-1] if given else 16) != d or not again:  # (none given: 16, as the JIT infers for a pointer)
        added.append((None, d))
        flags.append(f"--divisibility {d}")
    if again:
        added += [(n, d) for n in again]
        flags.append(f"--divisibility {','.join(again)}={d}")
    return " ".join(flags), base.with_(divisibility=base.divisibility + tuple(added))


def _mask_integers(facts: Facts, loads) -> list[str]:
    """Integer arguments that bound the loop's load masks (K in `offs_k < K - k * BLOCK_K`)."""
    names = []
    for g in loads:
        for name in g.mask_arguments:
            if name not in names and not isinstance(facts.arg_values.get(name), (Tensor, str)):
                names.append(name)
    return names


def run_whatifs(kernel: str, whatifs: Sequence[WhatIf], out: Path, *, workers: int | None = None,
                timeout: float | None = 300.0, on_progress: Callable | None = None,
                triton: str = "") -> list[WhatIfResult]:
    """Compile the what-ifs whose snapshot is missing or stale (in parallel), in the given order."""
    from ..sweep import SweepPoint, run_points

    whatifs = [dataclasses.replace(w, options=_without_no_op(kernel, w.target, w.options)) for w in whatifs]
    results: dict[int, WhatIfResult] = {}
    batches: dict[tuple, list[int]] = {}
    for i, w in enumerate(whatifs):
        batches.setdefault(w.env, []).append(i)
    for env, indices in batches.items():
        points = [SweepPoint(kernel, whatifs[i].target, whatifs[i].options, (("change", whatifs[i].change),),
                             triton=triton) for i in indices]
        saved = {k: os.environ.get(k) for k, _ in env}
        os.environ.update(dict(env))  # compiles run in forked children, which inherit it
        try:
            swept = run_points(points, out, workers=workers, timeout=timeout, on_progress=on_progress)
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        for i, row in zip(indices, swept.rows):
            results[i] = WhatIfResult(whatifs[i], row.status, row.path, row.label, row.cached, row.analysis, row.error)
    return [results[i] for i in range(len(whatifs))]


def _without_no_op(kernel: str, target: str, options: CompileOptions) -> CompileOptions:
    """The options less every override that leaves the compile (its content key) unchanged, so that a
    what-if equal to the config (`--num-warps 4` on a 4-warp config) reuses the config's own folder, as
    `irscope compare` does."""
    from .. import harness
    from ..spec import library
    from ..targets import get_target

    if options.name:
        return options
    try:
        spec, tgt = library.load_kernel(kernel), get_target(target)
        key = harness.plan(spec, tgt, options)[0]
    except Exception:  # noqa: BLE001 - run_points reports it, with its context
        return options

    def same(candidate: CompileOptions) -> bool:
        try:
            return harness.plan(spec, tgt, candidate)[0] == key
        except Exception:  # noqa: BLE001 - an override the kernel needs: keep it
            return False

    for name in ("num_warps", "num_stages"):
        if getattr(options, name) is not None and same(options.with_(**{name: None})):
            options = options.with_(**{name: None})
    for name in ("divisibility", "args", "backend_options", "constexprs"):
        for item in getattr(options, name):
            fewer = tuple(x for x in getattr(options, name) if x != item)
            if same(options.with_(**{name: fewer})):
                options = options.with_(**{name: fewer})
    return options
