"""A captured launch as a problem to rank at: its grid, its work and its least DRAM traffic.

A kernel with an irscope workload is planned at a size by its own `build` and `launch` (spec/problem.py).
A kernel captured from a real program (`irscope capture`, docs/capture.md) has no workload, but each of
its launches recorded what the model needs: the grid it ran on, its scalar arguments and the shape and
strides of each tensor. So a program's own launch of an autotuned kernel, one launch per config its
autotuner tried, is a space to rank at exactly the size the program ran:

- the main loop's trip count is evaluated from the TTGIR with the launch's scalar arguments (trips.py);
- the work of the launch is the grid's programs times one program's (its straight-line work plus that
  many iterations);
- the least DRAM traffic is what its tensors span (each once; an in-place op's aliased tensor once), or
  what its programs load and store when that is less (a kernel that touches part of a larger buffer).

Reading a launch file runs nothing (store/launches.py checks it as JSON).
"""
from __future__ import annotations

import math
from typing import Any, Mapping

from ..errors import UsageError
from ..spec.problem import Problem
from .facts import Facts, Work, nested_loops, top_loops
from .trips import loop_counts

# bytes per element of the dtype names a launch file records (Triton's: fp16, bf16, fp8e4nv, i32...)
_WIDTHS = {"fp64": 8, "i64": 8, "u64": 8, "fp32": 4, "i32": 4, "u32": 4, "tf32": 4, "fp16": 2, "bf16": 2,
           "i16": 2, "u16": 2}


def element_bytes(dtype: str) -> int:
    """Bytes per element of a launch file's dtype name (fp8 variants, i8, u8, i1: one)."""
    return _WIDTHS.get(dtype, 1 if dtype.startswith(("fp8", "i8", "u8", "i1", "u1")) else 4)


def scalar_args(launch: Mapping[str, Any]) -> dict[str, int]:
    """The launch's integer arguments by name, and each descriptor's shape and strides as the TTGIR names
    them (`desc.shape.0`, `desc.stride.1`); stand-in values (`value_known: false`) are left out."""
    out: dict[str, int] = {}
    for a in launch["args"]:
        if a.get("value_known") is False:
            continue
        if a["kind"] in ("int", "bool") and isinstance(a.get("value"), (int, bool)):
            out[a["name"]] = int(a["value"])
        elif a["kind"] == "descriptor":
            for i, n in enumerate(a.get("shape") or ()):
                out[f"{a['name']}.shape.{i}"] = int(n)
            for i, n in enumerate(a.get("strides") or ()):
                out[f"{a['name']}.stride.{i}"] = int(n)
    return out


def tensor_bytes(launch: Mapping[str, Any]) -> float | None:
    """The bytes the launch's tensors hold, each counted once (an aliased one with the tensor it aliases,
    at the larger of the two): a tensor's elements, or what its strides span when that is less (a
    broadcast view, stride 0); None when a tensor's shape was not recorded (a capture by an older
    irscope) or the launch has no tensor."""
    spans: dict[str, float] = {}
    for a in launch["args"]:
        if a["kind"] not in ("tensor", "descriptor"):
            continue
        shape, strides = a.get("shape"), a.get("strides")
        if shape is None or strides is None:
            return None
        if any(int(n) == 0 for n in shape):
            held = 0.0
        else:
            numel = math.prod(int(n) for n in shape)
            held = float(min(numel, 1 + sum((int(n) - 1) * abs(int(s)) for n, s in zip(shape, strides))))
        key = a.get("alias") or a["name"]
        spans[key] = max(spans.get(key, 0.0), held * element_bytes(a.get("dtype") or "fp32"))
    return sum(spans.values()) if spans else None


def check_launch(launch: Mapping[str, Any], source: str) -> None:
    """SnapshotError unless the launch's grid and tensor shapes are ones a GPU launch can have (a launch
    file is untrusted: a grid of 10^12 programs or a negative shape would be priced, not refused)."""
    from ..errors import SnapshotError

    def damaged(what: str):
        return SnapshotError(f"{source} is damaged: launch {launch['id']}: {what}",
                             "capture the program again with irscope capture")
    grid = launch.get("grid")
    if grid is not None and not (1 <= len(grid) <= 3 and all(1 <= int(g) < 1 << 31 for g in grid)):
        raise damaged(f"grid {grid} is not 1-3 dimensions of 1 to 2^31-1 programs")
    for a in launch["args"]:
        shape, strides = a.get("shape"), a.get("strides")
        if a["kind"] not in ("tensor", "descriptor") or shape is None:
            continue
        if strides is None or len(shape) != len(strides) or any(not 0 <= int(n) < 1 << 48 for n in shape) or \
                any(abs(int(x)) >= 1 << 48 for x in strides):
            raise damaged(f"argument '{a['name']}' has shape {shape} and strides {strides}")


def size_name(launch: Mapping[str, Any]) -> str:
    """A launch's size in words: its integer arguments (`M=4096,N=4096,K=4096`) but its tensors' strides
    (`stride_am`, `x_stride`: the shapes imply them; a convolution's own `stride` stays), else its tensors'
    shapes."""
    ints = [f"{a['name']}={a['value']}" for a in launch["args"]
            if a["kind"] == "int" and a.get("value_known") is not False and isinstance(a.get("value"), int)
            and (a["name"].lower() == "stride" or "stride" not in a["name"].lower())]
    if ints:
        return ",".join(ints)
    shapes = [f"{a['name']}[{'x'.join(str(n) for n in a['shape'])}]" for a in launch["args"]
              if a["kind"] in ("tensor", "descriptor") and a.get("shape") is not None]
    return ",".join(shapes) or "as captured"


def launch_problem(launch: Mapping[str, Any], kernel: str, facts: Facts, ttgir: str) -> Problem:
    """The problem `launch` poses to the config compiled from it (`facts`, its TTGIR `ttgir`)."""
    check_launch(launch, "the launch file")
    grid = launch.get("grid")
    if not grid:
        raise UsageError(f"launch {launch['id']} has no grid (it was compiled outside the JIT, e.g. by "
                         "PyTorch Inductor), so irscope cannot plan its programs",
                         "rank launches captured through the JIT: @triton.jit kernels launched by the program")
    programs = 1
    for g in grid:
        programs *= max(1, int(g))
    spanned = tensor_bytes(launch)
    loop = _work(facts.loop)
    work = _work(facts.straight)  # with every loop but the main one once (facts.py)
    # A loop that multiplies runs the trips its bounds give (what a workload's flops give). One that only
    # moves data is sized, as a workload's is, by the least traffic: what its tensors span, or what its
    # programs move over the trips its bounds give when that is less (a kernel that touches part of a
    # buffer); without recorded shapes, by its bounds alone.
    trips, runs = _trips(launch, facts, ttgir, grid, strict=bool(loop.dot_flops) or spanned is None) \
        if facts.loop else (None, None)
    if runs is not None:
        loop = runs  # the main loop's iteration as it runs, loops inside it counted as they run
    if trips is not None:
        work.add(loop, trips)
    moved = programs * float(work.load_bytes + work.store_bytes)
    least = moved if spanned is None else min(spanned, moved) if moved and (trips is not None or not facts.loop) \
        else spanned
    return Problem(kernel, size_name(launch), scalar_args(launch), tuple(int(g) for g in grid),
                   flops=programs * float(work.dot_flops), min_bytes=least,
                   trips=trips if loop.dot_flops else None,
                   loop=runs.as_dict() if runs is not None and loop.dot_flops else None)


def _trips(launch: Mapping[str, Any], facts: Facts, ttgir: str, grid,
           strict: bool = True) -> tuple[float | None, Work | None]:
    """The main loop's trip count as the model takes it: the loop's own, plus the other top-level loops'
    iterations beyond the one the model counts them for, in units of a main-loop iteration (by matrix flops
    when the main loop multiplies, else by bytes), so that a program's work is what it runs. (A FlashAttention
    kernel's masked loop runs 0 times unless causal: counted once, it would add an iteration.)

    Where a loop holds loops of its own (a persistent kernel's K loop inside its loop over tiles), the
    TTGIR's work holds each inner loop once an outer iteration; the inner loops' real counts replace that.
    When the main loop is such a loop, its iteration becomes its heaviest inner loop's (the K step), with
    the rest of its work (the tile's epilogue) spread over those: (trips, that iteration's work); else
    (trips, None) and the facts' own iteration stands."""
    def uncountable(what: str) -> UsageError:
        return UsageError(f"cannot count {what}: its bounds are not integer arithmetic of the launch's scalar "
                          "arguments and program ids",
                          "rank it through a workload instead (a KernelSpec with workload=Workload(...), "
                          "docs/kernel-spec.md)")

    loops, main = top_loops(ttgir)
    inner = nested_loops(ttgir)
    counts, inner_counts = loop_counts(ttgir, scalar_args(launch), grid)
    if main is None or len(counts) != len(loops) or counts[main] is None:
        if not strict:
            return None, None
        raise uncountable(f"the main loop's iterations of {launch['id']}")

    def size(w: Work) -> float:
        return float(w.dot_flops) if loops[main].dot_flops else float(w.load_bytes + w.store_bytes)

    unknown = [f"loop {i + 1} (of {len(loops)})" for i, (w, n) in enumerate(zip(loops, counts))
               if n is None and w.dot_flops]
    unknown += [f"loop {j + 1} inside loop {i + 1}" for i, (ws, ns) in enumerate(zip(inner, inner_counts))
                if counts[i] is not None for j, (w, n) in enumerate(zip(ws, ns)) if n is None and w.dot_flops]
    if unknown:  # a loop that multiplies and runs an unknown number of times
        if not strict:
            return None, None
        raise uncountable(f"the iterations of {launch['id']}'s {unknown[0]}, which multiplies")

    def runs(i: int) -> Work:
        """What a program runs of top-level loop i: its own work each of its iterations, and each loop
        inside it as many times as that loop runs (once an outer iteration where unknown: it moves data)."""
        out = Work()
        out.add(loops[i], counts[i])
        for w, n in zip(inner[i], inner_counts[i]):
            out.add(w, (n if n is not None else counts[i]) - counts[i])
        return out

    trips, iteration = counts[main], None
    # An inner loop that holds the main loop's work (its products: at least half of them) is the step the
    # program repeats: the main loop's iteration becomes its. A lighter one (a few loads an iteration)
    # leaves the main loop's iterations as they are, with its real count folded into each.
    steps = [(size(w), n) for w, n in zip(inner[main], inner_counts[main])
             if n and size(w) and size(w) >= 0.5 * size(loops[main])]
    if steps:
        trips = max(steps)[1]
    if inner[main] and trips:
        iteration = Work()
        iteration.add(runs(main), 1.0 / trips)
        for flag in ("async_loads", "sync_loads", "warp_reductions"):  # what it issues, not how much
            setattr(iteration, flag, getattr(loops[main], flag))
    unit = size(iteration if iteration is not None else loops[main])
    extra = sum(size(runs(i)) - size(w) for i, (w, n) in enumerate(zip(loops, counts)) if i != main and n is not None)
    return max(0.0, trips + (extra / unit if unit else 0.0)), iteration


# The model prices each byte a data-moving loop reads once (model.iterations): a kernel whose loops read
# several times what its launch needs is one whose time the model does not see.
REREADS_WARN = 4.0


def rereads(ttgir: str, problem: Problem) -> float | None:
    """How many times over a data-moving kernel's loops read the bytes its launch needs at least: what its
    programs load as the loops' bounds run them (a stencil's taps, `for dy in range(0, 2 * RADIUS + 1)`),
    over the problem's min_bytes. None where the main loop multiplies (its iterations come from the flops,
    which count them right), where a bound needs an argument's value (a workload's launch gives none here),
    or without a loop. The model charges each byte once, as one iteration of such a loop: far above 1, its
    times are far too short and its order is not to be trusted (docs/rank.md, "A kernel no model was
    designed on: the fused blur")."""
    loops, main = top_loops(ttgir)
    if main is None or loops[main].dot_flops or not problem.min_bytes:
        return None
    counts, inner_counts = loop_counts(ttgir, {}, problem.grid)
    if len(counts) != len(loops) or counts[main] is None or any(n is None for n in inner_counts[main]):
        return None
    loaded = loops[main].load_bytes * counts[main]
    for w, n in zip(nested_loops(ttgir)[main], inner_counts[main]):
        loaded += w.load_bytes * (n - counts[main])  # the main loop's own work holds each inner loop once
    return math.prod(max(1, int(g)) for g in problem.grid) * loaded / problem.min_bytes


def _work(d: Mapping[str, Any]) -> Work:
    return Work(**{k: (dict(v) if isinstance(v, dict) else v) for k, v in d.items()}) if d else Work()
