"""`irscope diff A B [--stage S] [--raw]`: counter and resource deltas, then a unified diff of one stage.

Exit status like diff(1): 0 when the compared text is the same, 1 when it differs.
"""
from __future__ import annotations

import json

from ..errors import ExitCode
from ..render.terminal import table

from ..ir.stages import TEXT_STAGES as DIFF_STAGES


def add_parser(sub) -> None:
    p = sub.add_parser("diff", help="what changed between two snapshots: counters, resources, and a stage's text",
                       description="Counter and resource deltas between snapshots A and B, then a unified diff of one "
                                   "stage (default: the first stage that differs, in pipeline order). Debug "
                                   "locations, absolute paths and SASS offsets are ignored unless --raw. Exit status "
                                   "0 when equal, 1 when different (with --json too).")
    p.add_argument("a", metavar="A", help="a snapshot folder")
    p.add_argument("b", metavar="B", help="another snapshot folder")
    p.add_argument("--stage", "-s", choices=DIFF_STAGES, metavar="STAGE",
                   help=f"the stage to diff: {', '.join(DIFF_STAGES)} (default: the first that differs)")
    p.add_argument("--raw", action="store_true", help="compare the files as they are, debug locations and all")
    p.add_argument("--context", "-U", type=int, default=3, metavar="N", help="lines of context (default: 3)")
    p.add_argument("--stat", action="store_true", help="deltas only, no unified diff")
    p.add_argument("--json", action="store_true",
                   help="the deltas, the differing stages and the diff's lines as one JSON object (docs/cli.md)")
    p.set_defaults(run=run)


def run(args, ui) -> int:
    from ..diff.snapshots import diff_snapshots
    from ..errors import SnapshotError
    from ..store.snapshot import load_snapshot

    if args.context < 0:
        from ..errors import UsageError
        raise UsageError(f"--context {args.context} is negative", "give the lines of context as 0 or more: -U 3")
    a, b = load_snapshot(args.a), load_snapshot(args.b)
    for snap in (a, b):
        # The diff trusts equal recorded hashes without reading the files: check first that they hold.
        damaged = snap.damaged_stages()
        if damaged:
            raise SnapshotError(f"{snap.path}: stage file {snap.stage_files[damaged[0]].name} does not match the "
                                "sha256 irscope.json records", "the file changed after the compile; compile it again with "
                                "`irscope compile` (a sweep or `irscope rank` recompiles its damaged points itself)")
    d = diff_snapshots(a, b, stage=args.stage, raw=args.raw, context=max(0, args.context), lines=not args.stat)
    code = int(ExitCode.OK if d.equal else ExitCode.FAILED)
    notes = _notes(a, b)
    if args.json:
        ui.print(json.dumps({**diff_as_dict(d, with_lines=not args.stat), "notes": notes}, indent=1))
        return code
    s = ui.style
    ui.print(f"{s('A', 'bold')} {d.a.label}  ({d.a.path})")
    ui.print(f"{s('B', 'bold')} {d.b.label}  ({d.b.path})")
    for note in notes:
        ui.print(f"note: {note}")
    if d.counters:
        rows = [[k.key, _fmt(k.a), _fmt(k.b), _change(k, s)] for k in d.counters]
        ui.print()
        ui.print(table(["counter", "A", "B", "change"], rows, right=(1, 2, 3), style=s))
    if d.resources:
        rows = [[k.key, _fmt(k.a), _fmt(k.b), _change(k, s)] for k in d.resources]
        ui.print()
        ui.print(table(["resource", "A", "B", "change"], rows, right=(1, 2, 3), style=s))
    ui.print()
    if d.only_in_a or d.only_in_b:
        ui.print(f"stages only in A: {', '.join(d.only_in_a) or '-'}; only in B: {', '.join(d.only_in_b) or '-'}")
    if d.differing_stages:
        ui.print(f"stages that differ: {', '.join(d.differing_stages)}")
    elif not (d.only_in_a or d.only_in_b):
        ui.print("every common stage is the same" + ("" if d.raw else " (after normalisation)")
                 + (", but the compiles ended differently (the notes above)" if d.outcome else ""))
    if d.stage is not None and not args.stat:
        mode = "raw" if d.raw else "normalised (--raw shows everything)"
        same = d.stage not in d.differing_stages
        ui.print(f"stage {s(d.stage, 'bold')}, {mode}" + (": identical" if same else "" if d.unified else
                                                          ": the same lines; the files differ only in line ends (a final newline)"))
        if d.normalisation:
            ui.print("  ignored: " + "; ".join(d.normalisation))
        if d.unified:
            ui.print()
            for line in d.unified:
                ui.print(_colour_line(line, s))
    return code


def diff_as_dict(d, *, with_lines: bool = True) -> dict:
    """The JSON form of a SnapshotDiff (`irscope diff --json`); keys documented in docs/cli.md."""
    def side(x) -> dict:
        return {"path": x.path, "label": x.label, "kernel": x.kernel, "variant": x.variant, "target": x.target,
                "status": x.status}

    def deltas(items) -> list[dict]:
        return [{"key": k.key, "a": k.a, "b": k.b, "change": k.change} for k in items]

    return {"equal": d.equal, "raw": d.raw, "a": side(d.a), "b": side(d.b),
            "counters": deltas(d.counters), "resources": deltas(d.resources),
            "differing_stages": list(d.differing_stages), "only_in_a": list(d.only_in_a),
            "only_in_b": list(d.only_in_b), "stage": d.stage, "normalisation": list(d.normalisation),
            "outcome": {"a": d.outcome[0], "b": d.outcome[1]} if d.outcome else None,
            "unified": list(d.unified) if with_lines else None}


def _fmt(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    return f"{v:,}" if isinstance(v, int) else str(v)


def _change(delta, s) -> str:
    c = delta.change
    if c is None:
        return ""
    text = f"{c:+,}"
    return s(text, "green" if c < 0 else "red") if c else text


def _colour_line(line: str, s) -> str:
    if line.startswith(("+++", "---")):
        return s(line, "bold")
    if line.startswith("@@"):
        return s(line, "cyan")
    if line.startswith("+"):
        return s(line, "green")
    if line.startswith("-"):
        return s(line, "red")
    return line


def _notes(a, b) -> list[str]:
    """What the tables would not say: a side that did not compile (its counters are all `-`), and two
    different kernel functions set side by side."""
    notes = []
    from ..diff.snapshots import outcome_of
    for name, snap in (("A", a), ("B", b)):
        if not snap.ok:
            notes.append(f"{name} did not compile ({outcome_of(snap)})")
    fa, fb = (snap.meta.get("function") for snap in (a, b))
    if isinstance(fa, str) and isinstance(fb, str) and fa != fb:
        notes.append(f"A is {fa}, B is {fb}: two different kernel functions")
    return notes
