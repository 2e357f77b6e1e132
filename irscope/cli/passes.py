"""`irscope passes SNAPSHOT`: the IR after every compiler pass — what each pass changed, which pass
introduced a pattern (--first), one pass's diff (--diff), and two targets' pipelines side by side
(--pipeline A B). The snapshot must have been compiled with `irscope compile --passes`."""
from __future__ import annotations

import itertools
import json
import tempfile
from pathlib import Path

from ..render.terminal import plural, table
from .options import add_compile_options, options_from_args

FORM_NAMES = {"mlir": "MLIR", "llvm": "LLVM IR", "mir": "machine IR"}
DIFF_LINES = 400  # of one diff on the terminal, without --all


def add_parser(sub) -> None:
    p = sub.add_parser("passes", help="the IR after every compiler pass: what each changed, which introduced X",
                       description="List a snapshot's compiler passes in order with what each changed, find the "
                                   "pass that introduced a pattern, or compare two targets' pass pipelines. "
                                   "Needs a snapshot compiled with `irscope compile --passes`.")
    p.add_argument("snapshot", nargs="?", metavar="SNAPSHOT",
                   help="a snapshot folder compiled with --passes (with --pipeline: the KERNEL to compile, "
                        "default matmul)")
    what = p.add_mutually_exclusive_group()
    what.add_argument("--first", metavar="PATTERN",
                      help="the pass where PATTERN first appears and where it disappears, with that pass's diff; "
                           "an op name (ttg.async_copy_global_to_local) matches whole names, anything else is a "
                           "regular expression. Exits 1 when PATTERN never matches, as grep does")
    what.add_argument("--diff", type=int, metavar="N", help="the diff of step N")
    what.add_argument("--pipeline", nargs=2, metavar=("A", "B"),
                      help="compare the pass pipelines of two targets (compiling KERNEL for both) or two snapshots")
    p.add_argument("--raw", action="store_true", help="diff and search the IR as printed, debug locations included "
                                                      "(default: normalised as irscope.ir.normalize does)")
    p.add_argument("--stage", metavar="STAGE", help="list only the passes of one stage: ttir, ttgir, llir, ptx...")
    p.add_argument("--changed", action="store_true", help="list only the passes that changed the IR")
    p.add_argument("--context", type=int, default=3, metavar="N", help="lines of context in diffs (default 3)")
    p.add_argument("--json", action="store_true", help="print the steps (or what --first, --diff or --pipeline "
                                                       "found) as JSON")
    p.add_argument("--all", action="store_true", help=f"print a diff in full (by default it stops after "
                                                      f"{DIFF_LINES} lines; --json gives it in full)")
    p.add_argument("--out", "-o", metavar="DIR", help="with --pipeline: keep the compiled snapshots here")
    add_compile_options(p)
    p.set_defaults(run=run)


def run(args, ui) -> int:
    from ..errors import UsageError
    from ..passes import load_timeline
    from ..store.snapshot import load_snapshot

    for flag, given in (("--stage", args.stage), ("--changed", args.changed)):
        other = "--first" if args.first is not None else "--diff" if args.diff is not None else \
            "--pipeline" if args.pipeline else None  # (--pipeline left them out without a word)
        if given and other:
            raise UsageError(f"{flag} filters the list of passes; {other} does not list them",
                             f"drop {flag}" + (" (--first searches every stage)" if other == "--first" else ""))
    if args.pipeline:
        return _pipeline(args, ui)
    if not args.snapshot:
        raise UsageError("give a snapshot folder", "irscope passes SNAPSHOT, or irscope passes --pipeline A B")
    if args.context < 0:
        raise UsageError(f"--context {args.context} is negative", "give the lines of context as 0 or more")
    tl = load_timeline(load_snapshot(args.snapshot))
    if args.stage and args.stage not in {st.stage for st in tl.steps}:
        have = ", ".join(dict.fromkeys(st.stage for st in tl.steps)) or "none"
        raise UsageError(f"no pass of {tl.label} runs at stage '{args.stage}'", f"its timeline's stages: {have}")
    if args.first is not None:
        return _first(tl, args, ui)
    if args.diff is not None:
        if not 0 <= args.diff < len(tl.steps):  # (no step at all: "numbered 0 to -1" told nothing)
            raise UsageError(f"no step {args.diff} in {tl.label}", f"steps are numbered 0 to {len(tl.steps) - 1}"
                             if tl.steps else "no pass ran: the compile stopped before its first pass (irscope "
                                              f"show {args.snapshot} has its error)")
        if args.json:
            ui.print(json.dumps({"snapshot": tl.label, **_step_json(tl, tl.steps[args.diff], args)}, indent=1))
            return 0
        _print_diff(tl, tl.steps[args.diff], args, ui)
        return 0
    _list(tl, args, ui)
    return 0


def describe(step) -> str:
    """What a step did, in a few words."""
    status = step.status
    if status == "changed":
        text = f"+{step.added} -{step.removed}" + (" in the loop" if step.scope.startswith("loop") else "")
    elif status == "unknown":
        if step.failed:
            text = "failed"
        elif step.after is None:
            text = "compile stopped"
        elif step.scope.startswith("loop"):
            text = "loop only"
        else:
            text = f"first {FORM_NAMES.get(step.form, step.form)}"
    else:
        text = status
    if step.since is not None and status != "unknown":
        text += f" (with loop passes #{step.since}-{step.n - 1})"
    if step.failed and status != "unknown":  # (its IR after is the dump of the failure: it read as a pass that ran)
        text += " · the pass failed"
    return text


def op_changes(tl, step, limit: int = 3) -> str:
    """The op count changes of a step: ops it introduced or removed entirely first, then the largest."""
    before = tl.previous_ir(step)
    old = tl.irs[before].ops if before is not None else {}
    new = tl.irs[step.after].ops if step.after is not None else {}

    def rank(kv):
        name, delta = kv
        return (not (name not in old or name not in new), -abs(delta), name)

    items = sorted(step.ops.items(), key=rank)
    text = ", ".join(f"{v:+d} {k}" for k, v in items[:limit])
    return text + (f", … ({len(items) - limit} more)" if len(items) > limit else "")


def _list(tl, args, ui) -> None:
    s = ui.style
    steps = [st for st in tl.steps if (not args.stage or st.stage == args.stage)
             and (not args.changed or st.status in ("changed", "debug info only"))]
    if args.json:
        ui.print(json.dumps([{**_as_dict(st), "label": st.label, "status": st.status} for st in steps], indent=1))
        return
    if not tl.steps:
        ui.print(f"{s(tl.label, 'bold')}: no pass ran (the compile stopped before its first pass: irscope show it)")
        return
    counts = ", ".join(f"{k} {v}" for k, v in tl.stage_counts().items())
    changed = sum(1 for st in tl.steps if st.status == "changed")
    what = "Triton's MLIR passes" if tl.level == "mlir" else "MLIR and LLVM passes"
    ui.print(f"{s(tl.label, 'bold')}: {len(tl.steps)} steps of {what} ({counts}); {changed} changed the IR")
    ui.print(s("  the IR after each pass; lines and op counts without debug locations", "dim"))
    rows = []
    for st in steps:
        name = ("  ↳ " if st.within else "") + st.label + (f" (+{len(st.nested)} nested)" if st.nested else "")
        info = tl.irs[st.after] if st.after is not None and tl.irs[st.after].style != "loop" else None
        change = describe(st)
        if st.status in ("no change", "debug info only"):
            change = s(change, "dim")
        elif st.status == "changed":
            change = f"{s(f'+{st.added}', 'green')} {s(f'-{st.removed}', 'red')}" + change[len(f"+{st.added} -{st.removed}"):]
        rows.append([st.n, s(st.stage, "dim"), name, "" if info is None else info.lines, change, op_changes(tl, st)])
    ui.print(_indent(table(["#", "stage", "pass", "lines", "change", "ops"], rows, right=(0, 3), style=s)))


def _step_json(tl, step, args, pattern: str | None = None) -> dict:
    """A step and its diff (the hunks that match `pattern`, when given), for --json."""
    from ..passes import matching_hunks
    before = tl.previous_ir(step)
    d = {"step": {**_as_dict(step), "label": step.label, "status": step.status}}
    if before is not None and step.after is not None and tl.irs[before].form != tl.irs[step.after].form:
        d.update(diff=[], note=f"the IR changes form here ({tl.irs[before].form} -> {tl.irs[step.after].form})")
        return d
    diff = tl.diff(step, raw=args.raw, context=args.context)
    if pattern is not None:
        diff, hidden = matching_hunks(diff, pattern) if diff else (diff, 0)
        d["hunks_without_pattern"] = hidden
    d["diff"] = diff
    return d


def _as_dict(step) -> dict:
    from dataclasses import asdict
    d = asdict(step)
    d["ops"] = dict(step.ops)
    return d


def _print_diff(tl, step, args, ui, *, pattern: str | None = None) -> None:
    from ..passes import matching_hunks
    s = ui.style
    ops = op_changes(tl, step, limit=4)
    ui.print(s(f"#{step.n} {step.stage} {step.label}", "bold") + f"  ({describe(step)}{'; ' + ops if ops else ''})")
    if step.scope:
        ui.print(s(f"  scope {step.scope}" + (f" · options {step.options}" if step.options else ""), "dim"))
    before = tl.previous_ir(step)
    if before is not None and step.after is not None and tl.irs[before].form != tl.irs[step.after].form:
        ui.print(f"  the IR changes form here ({FORM_NAMES[tl.irs[before].form]} -> "
                 f"{FORM_NAMES[tl.irs[step.after].form]}): no diff")
        return
    diff = tl.diff(step, raw=args.raw, context=args.context)
    if not diff:
        ui.print("  no change" if step.status != "unknown" else f"  {describe(step)}: nothing to compare with")
        return
    hidden = 0
    if pattern is not None:
        diff, hidden = matching_hunks(diff, pattern)
    for line in itertools.islice(diff, None if args.all else DIFF_LINES):
        color = {"+": "green", "-": "red", "@": "cyan"}.get(line[:1]) if not line.startswith(("+++", "---")) else "bold"
        ui.print(s(line, color) if color else line)
    if not args.all and len(diff) > DIFF_LINES:
        ui.print(s(f"… {len(diff) - DIFF_LINES:,} more lines of this diff (--all prints them; --json gives them)",
                   "dim"))
    if hidden:
        ui.print(s(f"({hidden} more hunks without the pattern: irscope passes {args.snapshot} --diff {step.n})", "dim"))


def _first(tl, args, ui) -> int:
    from ..passes import find_pattern
    s = ui.style
    blame = find_pattern(tl, args.first, raw=args.raw)
    first, gone = blame.first, blame.gone
    never = first is None and not blame.at_start
    if args.json:
        event = lambda e: None if e is None else {"kind": e.kind, "step": e.step.n, "stage": e.step.stage,
                                                   "pass": e.step.label, "lines": e.count}
        shown = first or gone
        ui.print(json.dumps({"snapshot": tl.label, "pattern": args.first, "raw": args.raw,
                             "at_start": blame.at_start, "first": event(first), "gone": event(gone),
                             "events": [event(e) for e in blame.events],
                             **(_step_json(tl, shown.step, args, pattern=args.first) if shown else {})}, indent=1))
        return 1 if never else 0
    where = "as printed" if args.raw else "normalised"
    ui.print(f"{s(args.first, 'bold')} in {tl.label} ({where} IR):")
    if blame.at_start:
        ui.print(f"  present from the start: {plural(blame.at_start, 'line')} of the IR before the first pass")
    if never:
        ui.print(f"  never appears in the {plural(len(tl.steps), 'step')}")
        return 1
    if first is not None:
        ui.print(f"  first appears  #{first.step.n} {first.step.stage} {s(first.step.label, 'bold')} "
                 f"({plural(first.count, 'line')} after it)")
    if gone is not None:
        ui.print(f"  disappears     #{gone.step.n} {gone.step.stage} {s(gone.step.label, 'bold')}")
    else:
        ui.print("  still there after the last pass")
    others = [e for e in blame.events if e not in (first, gone)]
    if others:
        ui.print("  also " + ", ".join(f"{e.kind} #{e.step.n} {e.step.label}" for e in others))
    shown = first or gone
    if shown is None:  # there from the start and never gone: no pass brought it or took it away
        ui.print(s("  no pass changed whether it matches: no diff to show", "dim"))
        return 0
    ui.print()
    _print_diff(tl, shown.step, args, ui, pattern=args.first)
    return 0


def _pipeline(args, ui) -> int:
    from ..errors import UsageError
    from ..passes import align_pipelines, load_timeline, only_in, pipeline_steps
    from ..store.snapshot import load_snapshot

    a, b = args.pipeline
    paths = [Path(x) for x in (a, b)]
    # A folder, or a word with a slash, names a snapshot: a mistyped folder was
    # "unknown target 'snaps/sm_90a'" with a list of targets for a hint
    snaps = [p.is_dir() or "/" in x for p, x in zip(paths, (a, b))]
    if any(snaps) and not all(snaps):
        raise UsageError(f"--pipeline compares two snapshots or two targets, not one of each ({a}, {b})",
                         "irscope passes --pipeline sm_90a sm_100a [KERNEL], or --pipeline SNAP_A SNAP_B")
    if all(snaps):
        if args.snapshot:
            raise UsageError("--pipeline with two snapshots takes no KERNEL", "drop the KERNEL argument")
        tls = [load_timeline(load_snapshot(p)) for p in paths]
        names = [tl.label for tl in tls]
    else:
        tls = _compile_both(args, ui, a, b)
        names = [a, b]
    rows = align_pipelines(*tls)
    if args.json:
        step = lambda st: None if st is None else {"n": st.n, "stage": st.stage, "pass": st.name,
                                                    "within": st.within or None}
        only = lambda side: [{"stage": r.stage, "pass": r.name, "after": a.name if a else None}
                             for r, a in only_in(rows, side)]
        ui.print(json.dumps({"a": names[0], "b": names[1], "rows": [
            {"side": r.side, "stage": r.stage, "pass": r.name, "a": step(r.a), "b": step(r.b)} for r in rows],
            "only_a": only("a"), "only_b": only("b")}, indent=1))
        return 0
    s = ui.style
    na, nb = (len(pipeline_steps(tl)) for tl in tls)
    ui.print(f"pass pipelines: {s(names[0], 'bold')} ({na} passes) and {s(names[1], 'bold')} ({nb} passes)")
    table_rows = []
    for row in rows:
        mark = {"both": " ", "a": "<", "b": ">"}[row.side]
        left = _pipeline_name(row.a)
        right = _pipeline_name(row.b)
        if row.side == "both":
            left, right = s(left, "dim"), s(right, "dim")
        table_rows.append([mark, s(row.stage, "dim"), left, right])
    ui.print(_indent(table(["", "stage", names[0], names[1]], table_rows, style=s)))
    for side, name in (("a", names[0]), ("b", names[1])):
        only = only_in(rows, side)
        ui.print()
        if not only:
            ui.print(f"every pass {name} runs, the other runs too")
            continue
        ui.print(f"only {s(name, 'bold')} runs ({len(only)}):")
        for row, anchor in only:
            step = row.a or row.b
            after = f"after {anchor.name}" if anchor else "at the start"
            inside = f"inside {step.within}, " if step.within else ""
            ui.print(f"  {row.stage:6} {row.name:48} {s(inside + after, 'dim')}")
    return 0


def _pipeline_name(step) -> str:
    if step is None:
        return ""
    return ("↳ " if step.within else "") + step.name


def _compile_both(args, ui, a: str, b: str):
    from ..errors import CompileError
    from ..passes import load_timeline
    from ..harness.batch import Point, compile_points
    from ..render.terminal import ProgressLine
    from ..store.snapshot import load_snapshot
    from ..targets import get_target

    targets = [get_target(t).name for t in (a, b)]
    kernel = args.snapshot or "matmul"
    options = options_from_args(args).with_(passes="mlir")
    progress = ProgressLine(ui.err)

    def compile_into(out: Path):
        try:
            outcomes = compile_points([Point(kernel, t, options) for t in targets], out,
                                      on_progress=lambda p: progress.update(f"compiling {kernel} for {a} and {b} "
                                                                            f"[{p.done}/{p.total}]"))
        finally:
            progress.close()
        bad = [o for o in outcomes if not o.ok]
        if bad:
            raise CompileError(f"{bad[0].label} failed to compile: {(bad[0].error or {}).get('message', bad[0].status)}",
                               "irscope compile it on its own to see the log")
        return [load_timeline(load_snapshot(o.path)) for o in outcomes]

    if args.out:
        return compile_into(Path(args.out))
    with tempfile.TemporaryDirectory(prefix="irscope-pipeline-") as tmp:
        return compile_into(Path(tmp))  # the comparison needs only the indexes, already read


def _indent(text: str, n: int = 2) -> str:
    return "\n".join(" " * n + line for line in text.splitlines())
