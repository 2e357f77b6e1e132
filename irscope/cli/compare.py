"""`irscope compare KERNEL --target ... --num-warps 2,4,8 ...`: compile every point of the axes given and
print the counters side by side, highlighting what flips between neighbouring points."""
from __future__ import annotations

import argparse
import itertools
import json
from pathlib import Path

from ..render.terminal import plural
from .envs import add_triton_option
from .options import add_compile_options, positive_int, positive_seconds
from .sweep import add_cluster_options, open_executor, warn_unmatched


def add_parser(sub) -> None:
    p = sub.add_parser("compare", help="compile a kernel across targets and options and show the counters side by side",
                       description="Every comma-separated option is an axis; every combination is compiled\n"
                                   "(in parallel, cached by content like `sweep`) and the counters are printed side\n"
                                   "by side, the last axis varying fastest. Cells that differ from their left\n"
                                   "neighbour are highlighted, and a list of what flips (appears, disappears)\n"
                                   "between neighbours follows. --config, --constexpr, --arg and --option take\n"
                                   "comma-separated values too (--constexpr BLOCK_K=32,64).",
                       epilog="examples:\n"
                              "  irscope compare matmul --target sm_90a --num-warps 2,4,8   # wgmma or mma.sync?\n"
                              "  irscope compare matmul --target sm_90a --num-warps 4,8 --group   # same TTGIR?\n"
                              "  irscope compare matmul --target sm_80 --divisibility 1,4,8,16   # cp.async width\n"
                              "  irscope compare matmul --num-stages 2,3,4 --only 'ttgir.shared.*'\n"
                              "  irscope compare matmul --target all --only '*mma*,*mfma*,*wmma*'\n"
                              "  irscope compare matmul --target sm_90a --triton 3.6.0,3.9.0   # what the upgrade changes",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("kernels", nargs="+", metavar="KERNEL", help="built-in kernel or FILE.py:FUNCTION")
    p.add_argument("--target", "-t", default="sm_90a", help="targets: sm_90a,gfx942 or all (default: sm_90a)")
    p.add_argument("--num-warps", metavar="N,N", help="num_warps values, e.g. 2,4,8")
    p.add_argument("--num-stages", metavar="N,N", help="num_stages values, e.g. 2,3,4")
    p.add_argument("--divisibility", action="append", default=[], metavar="D,D",
                   help="assumed pointer/integer divisibility values, e.g. 1,16 (or x_ptr=4,x_ptr=16; "
                        "a_ptr,b_ptr,c_ptr=16,8,4 moves the three together)")
    add_compile_options(p, single_values=False)
    add_triton_option(p)
    p.add_argument("--only", metavar="GLOBS", help="show only counters matching these globs: 'ptx.*mma*,sass.H*'")
    p.add_argument("--changed", action="store_true", help="show only rows whose value is not the same everywhere")
    p.add_argument("--group", action="store_true",
                   help="also show, per stage, which points compiled to the same text (normalised as `diff` does)")
    p.add_argument("--out", "-o", metavar="DIR", help="snapshot root (default: $IRSCOPE_OUT or ./irscope-snapshots)")
    p.add_argument("--jobs", "-j", type=positive_int, metavar="N", help="compiles at once (default: one per CPU core)")
    p.add_argument("--timeout", type=positive_seconds, default=300.0, metavar="SECONDS", help="per compile (default: 300)")
    add_cluster_options(p)
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="the points and their analyses as JSON")
    fmt.add_argument("--csv", action="store_true", help="one CSV row per point")
    p.set_defaults(run=run)


def axes_from_args(args) -> list[tuple[str, list]]:
    """(axis name, values) in the order they vary, the last fastest."""
    from ..errors import UsageError
    from ..spec.kernel import parse_assignment, parse_int_list, parse_value
    from ..targets import parse_targets

    axes: list[tuple[str, list]] = [("target", [t.name for t in parse_targets(args.target)])]
    if args.config:
        configs = [c.strip() for c in args.config.split(",") if c.strip()]
        if not configs:
            raise UsageError(f"no config in --config '{args.config}'", "give config names, comma-separated: "
                             "--config NAME,NAME (irscope kernels KERNEL lists them), or all")
        if configs == ["all"]:  # the kernels' whole menus (an autotuned kernel's: its autotune space)
            from ..spec.library import config_choices
            configs = list(dict.fromkeys(c for k in args.kernels for c in config_choices(k, "all")))
        axes.append(("config", configs))
    if args.num_warps:
        axes.append(("num_warps", parse_int_list(args.num_warps, "--num-warps")))
    if args.num_stages:
        axes.append(("num_stages", parse_int_list(args.num_stages, "--num-stages")))
    divs = []
    for item in args.divisibility:
        names, sep, values = item.rpartition("=")
        if sep and "," in names:  # a_ptr,b_ptr,c_ptr=16,8,4: the three arguments together, at each value
            divs += [f"{names}={v.strip()}" for v in values.split(",") if v.strip()]
        else:
            divs += [d.strip() for d in item.split(",") if d.strip()]
    if args.divisibility and not divs:
        raise UsageError(f"no value in --divisibility '{','.join(args.divisibility)}'",
                         "give powers of two, comma-separated: --divisibility 1,16 (or x_ptr=4,x_ptr=16)")
    if divs:
        axes.append(("divisibility", divs))
    for flag, items, prefix in (("constexpr", args.constexpr, ""), ("argument", args.arg, "arg."),
                                ("option", args.option, "option.")):
        for item in items:
            name, sep, values = item.partition("=")
            parse_assignment(item.split(",")[0], flag)  # the usual NAME=VALUE checks and messages
            vals = [parse_value(v) for v in values.split(",") if v.strip()]
            if not vals:
                raise UsageError(f"malformed --{flag} '{item}'", f"write NAME=VALUE or NAME=V1,V2 for an axis")
            if prefix == "arg.":
                vals = [str(v) if not isinstance(v, (int, float, bool)) else v for v in vals]
            axis = prefix + name.strip()
            given = next((values for n, values in axes if n == axis), None)
            if given is not None:  # --constexpr B=1 --constexpr B=2: one axis of both, not two that overwrite
                given.extend(vals)
            else:
                axes.append((axis, vals))
    if getattr(args, "triton", None) is not None:  # last, so that each version's column sits beside the other's
        from .envs import triton_versions  # (--triton "" is no release: refused, not the running one)
        axes.append(("triton", triton_versions(args)))
    # a value given twice (--num-warps 4,4) is one point, not two identical columns; 1 and true stay two
    return [(name, list({(type(v), v): v for v in values}.values())) for name, values in axes]


def points_from_args(args):
    """(points, axes, shared): `shared` holds the points whose asked values the kernel already has, so that
    they reuse the folder of the compile without them."""
    from ..sweep import SweepPoint, options_for

    axes = axes_from_args(args)
    names = [n for n, _ in axes]
    points, shared = [], []
    for kernel in args.kernels:
        for combo in itertools.product(*[vals for _, vals in axes]):
            values = dict(zip(names, combo))
            target = values.pop("target")
            triton = values.pop("triton", "")
            asked = options_for(values, None, args.line_info)
            options = without_no_op_overrides(kernel, target, asked)
            shown = tuple((n, v) for n, v in zip(names, combo))
            points.append(SweepPoint(kernel, target, options, shown, triton=triton))
            if options != asked:
                shared.append(points[-1])
    return points, axes, shared


def without_no_op_overrides(kernel: str, target: str, options):
    """The options less every override that does not change the compile (its content key).

    `--num-warps 4,8` on a config that already has num_warps=8 would otherwise write `default.w8`, a
    twin of `default` with the same content key; dropped, that point reuses the config's own folder.
    The same holds for a constexpr, argument, backend option or divisibility equal to what the config
    and the spec give. The point keeps its asked values for the table's columns (SweepPoint.axes).
    """
    from .. import harness
    from ..spec import library
    from ..errors import IrscopeError
    from ..targets import get_target

    try:
        spec = library.load_kernel(kernel)
        tgt = get_target(target)
        key = harness.plan(spec, tgt, options)[0]
    except IrscopeError:
        return options  # run_points reports it, with the point's context

    def same_compile(candidate) -> bool:
        try:
            return harness.plan(spec, tgt, candidate)[0] == key
        except Exception:  # noqa: BLE001 - e.g. an argument a spec-less kernel needs: keep the override
            return False

    for name in ("num_warps", "num_stages"):
        if getattr(options, name) is not None and same_compile(options.with_(**{name: None})):
            options = options.with_(**{name: None})
    for name in ("divisibility", "constexprs", "backend_options", "args"):
        for item in getattr(options, name):
            fewer = tuple(x for x in getattr(options, name) if x != item)
            if same_compile(options.with_(**{name: fewer})):
                options = options.with_(**{name: fewer})
    return options


def column_labels(points, axes, many_kernels: bool) -> list[str]:
    varying = [n for n, vals in axes if len(vals) > 1]
    short = {"target": "", "num_warps": "w", "num_stages": "s", "divisibility": "div", "config": "",
             "triton": "triton "}
    labels = []
    for p in points:
        values = dict(p.axes)
        parts = [Path(p.kernel.rpartition(":")[2] or p.kernel).name] if many_kernels else []
        for n in varying:
            prefix = short.get(n, f"{n}=")
            parts.append(f"{prefix}{values[n]}")
        labels.append(" ".join(parts) or p.target)
    return labels


def run(args, ui) -> int:
    from ..errors import CompileError
    from ..store.roots import default_out, ensure_root
    from ..render.terminal import ProgressLine
    from ..sweep import run_points
    from ..render.tables import side_by_side, split_patterns

    from .envs import prepare
    points, axes, shared = points_from_args(args)
    prepare(dict(axes).get("triton", []), ui)
    out = ensure_root(Path(args.out) if args.out else default_out())
    progress = ProgressLine(ui.err)

    def on_progress(p) -> None:
        if p.phase == "compiling":
            progress.update(f"[{p.done}/{p.total}] compiling {', '.join(p.running)}".rstrip())

    executor = open_executor(args, args.jobs)
    try:
        result = run_points(points, out, workers=args.jobs, timeout=args.timeout, on_progress=on_progress,
                            executor=executor)
    finally:
        progress.close()
        executor.close()
    rows = [r for r in result.rows if r.analysis is not None]
    labels = column_labels([r.point for r in rows], axes, len(args.kernels) > 1)
    analyses = [r.analysis for r in rows]
    patterns = split_patterns(args.only)
    groups = stage_groups(rows) if getattr(args, "group", False) else None
    # A point that crashed, timed out or was interrupted has no folder, so no analysis and no column: it is
    # still a point of the answer (its JSON entry says its status and why; the table names it below).
    missing = [r for r in result.rows if r.analysis is None]
    if args.json:
        column = {id(r): i for i, r in enumerate(rows)}
        ui.print(json.dumps([{"axes": dict(r.point.axes), "cached": r.cached, **r.analysis.as_dict(),
                              **({"stage_classes": {stage: _class(row[column[id(r)]]) for stage, row in groups}}
                                 if groups is not None else {})} if r.analysis is not None else
                             {"axes": dict(r.point.axes), "cached": r.cached, "label": r.label,
                              "status": str(r.status), "reason": r.reason}
                             for r in result.rows], indent=1))
    elif args.csv:
        ui.out.write(points_csv(rows, patterns))
    elif analyses:
        ui.print(side_by_side(analyses, labels, ui, patterns=patterns, flips=True, changed_only=args.changed))
        warn_unmatched(ui, "--only", patterns, rows)
        flips = flip_lines(analyses, labels, patterns)
        if flips:
            ui.print()
            ui.print(ui.style("what flips between neighbours", "bold"))
            for line in flips:
                ui.print(f"  {line}")
        if groups is not None:
            ui.print()
            ui.print(ui.style("equivalence classes per stage (normalised as `irscope diff` compares)", "bold"))
            for line in group_lines(groups, labels):
                ui.print(f"  {line}")
        for r in missing:
            ui.print(f"{r.label}: no column ({r.status}: {r.reason})")
        fresh = sum(r.cached for r in result.rows)
        ui.print(f"\n{plural(len(result.rows), 'point')} ({result.compiled} compiled, {fresh} from the cache) under {out}")
        for label, r in zip(labels, rows):
            if r.point in shared:
                ui.print(f"{label} changes nothing: the same compile (content key) as {r.label}, "
                         "whose folder it shares")
    broken = [r for r in result.rows if r.status != "ok"]
    if broken:
        first = broken[0]  # its reason: what went wrong (Triton's last line), not "at 14:32:" that opens it
        raise CompileError(f"{len(broken)} of {len(result.rows)} points did not compile; first: {first.label}: "
                           f"{first.reason or first.status}", "their columns show what did compile; "
                           "`irscope show` the snapshot folder for the log")
    return 0


def points_csv(rows, patterns=()) -> str:
    """`irscope stats --csv`'s columns, after one `axis.NAME` column per asked axis but the target (which
    has its own column): a point that shares its config's folder still shows the value it was asked for."""
    from ..render.tables import csv_header, csv_row, csv_text

    axes = list(dict.fromkeys(n for r in rows for n, _ in r.point.axes if n != "target"))
    stats_header = csv_header([r.analysis for r in rows], patterns)
    return csv_text([f"axis.{n}" for n in axes] + stats_header,
                    ({**{f"axis.{n}": v for n, v in r.point.axes if n != "target"}, **csv_row(r.analysis, stats_header)}
                     for r in rows))


def flip_lines(analyses, labels, patterns=(), limit: int = 12) -> list[str]:
    """For each pair of neighbours: counters that appear or vanish, matrix-layout versions that change, and
    launchability that changes."""
    from ..analyze.catalog import sort_key
    from ..render.tables import matches

    out = []
    for i in range(1, len(analyses)):
        a, b = analyses[i - 1], analyses[i]
        changes = []
        for key in sorted(set(a.counters) | set(b.counters), key=sort_key):
            if not matches(key, patterns):
                continue
            va, vb = a.get(key), b.get(key)
            if va is None or vb is None:
                continue
            if (va == 0) != (vb == 0) or (key.endswith(".version") and va != vb):
                changes.append(f"{key} {va:,} → {vb:,}")
        if a.launch.launchable != b.launch.launchable:
            changes.append("launchable " + ("yes → NO" if a.launch.launchable else "NO → yes"))
        if changes:
            more = f" (+{len(changes) - limit} more)" if len(changes) > limit else ""
            out.append(f"{labels[i - 1]} → {labels[i]}: " + ", ".join(changes[:limit]) + more)
    return out


def stage_groups(rows):
    """Each text stage's equivalence classes across the rows' snapshots (analyze.equivalence)."""
    from ..analyze.equivalence import stage_classes
    from ..store import load_snapshot

    return stage_classes([load_snapshot(r.path) for r in rows])


def _class(index):
    from ..analyze.equivalence import class_name
    return class_name(index)


def group_lines(groups, labels) -> list[str]:
    """`ttgir  2 classes: A = w4 w8 · B = w2`; one class reads `same in all N`."""
    width = max((len(stage) for stage, _ in groups), default=0)
    out = []
    for stage, row in groups:
        present = [c for c in row if c is not None]
        classes = sorted(set(present))
        missing = [labels[i] for i, c in enumerate(row) if c is None]
        if len(classes) == 1 and not missing:
            text = f"same in all {len(row)}"
        else:
            text = f"{len(classes)} class{'es' if len(classes) != 1 else ''}: " + " · ".join(
                f"{_class(c)} = " + " ".join(labels[i] for i, x in enumerate(row) if x == c) for c in classes)
            if missing:
                text += f" · none in {' '.join(missing)}"
        out.append(f"{stage:<{width}}  {text}")
    return out
