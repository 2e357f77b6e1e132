"""`irscope rank LAUNCHES.json`: rank the configs a program's own autotuner tried, at the size it ran.

`irscope capture` records one launch per autotune config (its binder, heuristics and grid lambda ran as
they do on a GPU: docs/capture.md). Those launches, compiled for the target, are the space; each
launch's grid, scalar arguments and tensor shapes are the problem (irscope.rank.captured). Launches of
the kernel at other sizes or with other argument types are ranked apart, one table each.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..errors import UsageError

# all_kwargs() keys of a triton.Config that are launch options, not the kernel's constexprs
OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg", "num_buffers_warp_spec", "num_consumer_groups",
           "reg_dec_producer", "reg_inc_consumer", "ir_override", "minRegAutoWS", "maxRegAutoWS",
           "pingpongAutoWS")


def is_capture(space: str) -> bool:
    """Whether `space` names a launch file (`irscope capture`'s launches.json), not a sweep or a kernel."""
    from ..store.launches import is_launch_file
    return is_launch_file(Path(space))


@dataclass(frozen=True)
class CapturedSpace:
    """The launches of one captured kernel, as points to compile for one target."""

    name: str  # the kernel's folder name
    target: str
    points: list  # SweepPoints, kernel = "LAUNCHES.json:ID"
    launches: dict  # "LAUNCHES.json:ID" -> the launch record
    tuned: set  # the constexprs its autotune configs set (for --emit-configs)
    skipped: list  # (launch id, why) of its launches that are not ranked


def captured_space(args, target: str | None) -> CapturedSpace:
    """The captured kernel `args.kernel` picks (the file's only kernel by default), for `target`."""
    from ..harness.launches import launch_points
    from ..store.launches import read_launches
    from ..sweep import SweepPoint
    from ..targets import get_target
    path = Path(args.space).resolve()
    data = read_launches(path)
    captured_for = (data.get("captured_for") or {}).get("name")
    if target is None:
        if not captured_for:
            raise UsageError("which target? the launch file does not say what it was captured for",
                             "pass --target, e.g. --target sm_90a")
        target = get_target(captured_for).name
    names = {}  # folder name -> kernel id
    for launch in data["launches"]:
        names.setdefault(data["kernels"][launch["kernel"]]["name"], launch["kernel"])
    if not names:
        raise UsageError(f"{args.space} holds no launch to rank", "capture a program that launches a kernel")
    counts = {n: sum(1 for x in data["launches"] if x["kernel"] == k) for n, k in names.items()}
    listing = ", ".join(f"{n} ({c} launch{'es' if c > 1 else ''})" for n, c in sorted(counts.items()))
    if args.kernel:
        by_function = [n for n, k in names.items() if data["kernels"][k]["function"] == args.kernel]
        if args.kernel not in names and len(by_function) > 1:
            raise UsageError(f"{args.space} holds {len(by_function)} kernels named '{args.kernel}'",
                             f"pass one of their folder names: {', '.join(sorted(by_function))}")
        name = args.kernel if args.kernel in names else (by_function[0] if by_function else None)
        if name is None:
            raise UsageError(f"{args.space} has no kernel '{args.kernel}'", f"it holds: {listing}")
    elif len(names) == 1:
        name = next(iter(names))
    else:
        raise UsageError(f"{args.space} holds {len(names)} kernels; rank one at a time",
                         f"pass --kernel NAME; it holds: {listing}")
    kernel_id = names[name]
    ids = {x["id"] for x in data["launches"] if x["kernel"] == kernel_id}
    ungridded = sorted(i for i in ids if not next(x for x in data["launches"] if x["id"] == i).get("grid"))
    if ungridded and len(ungridded) == len(ids):
        raise UsageError(f"the launches of {name} have no grid (compiled outside the JIT, e.g. by PyTorch "
                         "Inductor), so irscope cannot plan their programs",
                         "rank a kernel the program launched through the JIT (@triton.jit)")
    from ..rank.captured import check_launch
    for x in data["launches"]:  # before any of the kernel's source runs (compiling a launch runs it)
        if x["id"] in ids:
            check_launch(x, args.space)
    points, skipped = launch_points(path, [get_target(target)], only=ids - set(ungridded))
    skipped = [(i, "it has no grid (compiled outside the JIT)") for i in ungridded] + \
        [(launch_id, why) for launch_id, _, why in skipped]
    if not points:
        first = skipped[0][1] if skipped else "no launch to compile"
        hint = (f"rank for the target it was captured for ({captured_for})" if captured_for and target != captured_for
                else "the launch file lacks what compiling needs, or its program's source: capture the program "
                     "again (irscope capture)")
        raise UsageError(f"none of the {len(ids)} launches of {name} can be compiled for {target}: {first}", hint)
    launches = {f"{path}:{x['id']}": x for x in data["launches"] if x["id"] in ids}
    autotune = data["kernels"][kernel_id].get("autotune") or {}
    tuned = {k for c in autotune.get("configs") or () for k in c if k not in OPTIONS}
    return CapturedSpace(name, target, [SweepPoint(p.kernel, p.target, p.options) for p in points], launches,
                         tuned, skipped)


def size_key(launch: dict) -> tuple:
    """What makes two launches the same problem: every argument but the constexprs (the config's)."""
    key = []
    for a in launch["args"]:
        if a["kind"] == "constexpr":
            continue
        key.append((a["name"], a["kind"], a.get("dtype"), a.get("value") if a["kind"] != "tensor" else None,
                    tuple(a.get("shape") or ()), tuple(a.get("strides") or ())))
    return tuple(key)
