"""`irscope layouts SNAPSHOT [--layout NAME] [--shape MxN] [--json] [--compute]` and
`irscope layouts --compare SNAPSHOT...`: a snapshot's encodings as linear layouts, their maps, the cost
of its convert_layout ops and the bank conflicts of its shared-memory accesses (docs/layouts.md)."""
from __future__ import annotations

import itertools
import json

VIEW_LINES = 600  # per view on the terminal, without --all
VIEW_BITS = 16  # the element grid enumerates every position: drawn up to 2**16 of them (a 256x256 tile) unless --all


def add_parser(sub) -> None:
    p = sub.add_parser("layouts", help="every TTGIR encoding as a linear layout: bases, thread map, costs")
    p.add_argument("snapshots", metavar="SNAPSHOT", nargs="+", help="a snapshot folder (several with --compare)")
    p.add_argument("--layout", "-l", metavar="NAME", help="one encoding: blocked1, #mma, its number, or part of its text")
    p.add_argument("--shape", metavar="MxN", help="the shape to show it at (when it is used at several)")
    p.add_argument("--view", choices=("tensor", "hardware", "both"),
                   help="with --layout: the element grid (tensor), the per-thread view (hardware), or both "
                        "(the default)")
    p.add_argument("--all", action="store_true",
                   help=f"with --layout: every line of each view (by default a view stops after {VIEW_LINES} "
                        "lines; --json gives the bases in full)")
    p.add_argument("--json", action="store_true", help="print the layouts (and costs) as JSON")
    p.add_argument("--compute", action="store_true",
                   help="compute layouts.json now (needs Triton), e.g. for snapshots compiled before irscope had it")
    p.add_argument("--compare", action="store_true", help="the encodings of several snapshots side by side")
    p.set_defaults(run=run)


def _shape(text: str | None):
    from ..errors import UsageError
    if text is None:
        return None
    try:
        dims = tuple(int(x) for x in text.lower().split("x"))
    except ValueError:
        raise UsageError(f"--shape {text!r} is not a shape", "write it as MxN, e.g. --shape 128x64") from None
    if not dims or any(d < 1 for d in dims):
        raise UsageError(f"--shape {text!r} is not a shape", "write it as MxN, e.g. --shape 128x64")
    return dims


def _load(path: str, compute: bool, ui):
    from ..errors import EnvironmentProblem, SnapshotError, error_summary
    from ..layouts.report import load_layouts
    from ..store.snapshot import load_snapshot
    snap = load_snapshot(path)
    if "ttgir" not in snap.stage_files:
        if not snap.ok:  # (compiling it again fails again: what failed is the news)
            err = snap.error or {}
            said = error_summary(err)[:300] if err.get("message") else ""
            raise SnapshotError(f"{snap.label} did not compile (at {err.get('stage', '?')}"
                                + (f": {said}" if said else "") + "): it has no TTGIR to read layouts from",
                                f"irscope show {snap.path} for the log")
        raise SnapshotError(f"{snap.label} has no TTGIR stage", "layouts are read from the ttgir; compile it again")
    ls = None if compute else load_layouts(snap)
    if ls is None:
        from ..harness.layouts import compute_for_snapshots, triton_present
        if not triton_present():
            raise EnvironmentProblem(f"{snap.label} has no layouts.json and Triton is not installed here",
                                     "run `irscope layouts SNAPSHOT --compute` where Triton is, or recompile")
        ui.err.write(f"irscope: computing the layouts of {snap.label} (layouts.json)\n")
        ls = compute_for_snapshots([snap])[0]
    return snap, ls


def run(args, ui) -> int:
    from ..errors import UsageError
    if args.compare:
        if len(args.snapshots) < 2:
            raise UsageError("--compare needs two snapshots or more", "e.g. irscope layouts --compare A B C")
        given = [flag for flag, on in (("--layout", args.layout is not None), ("--shape", args.shape is not None),
                                       ("--view", args.view is not None), ("--all", args.all)) if on]
        if given:  # the comparison is of every encoding at once: one of them is looked at one snapshot at a time
            raise UsageError(f"--compare puts the encodings side by side and takes no {given[0]}",
                             f"look at one snapshot's: irscope layouts SNAPSHOT {given[0]} ...")
        return _compare(args, ui)
    if len(args.snapshots) > 1:
        raise UsageError("give one snapshot", "to put several side by side, add --compare")
    snap, ls = _load(args.snapshots[0], args.compute, ui)
    shape = _shape(args.shape)
    if args.layout is None and shape is not None:
        raise UsageError("--shape needs --layout", "e.g. irscope layouts SNAP --layout blocked --shape 128x64")
    if args.layout is None and (args.view is not None or args.all):
        flag = "--view" if args.view is not None else "--all"
        raise UsageError(f"{flag} needs --layout: the overview has no views",
                         f"e.g. irscope layouts SNAP --layout blocked {flag}{' ' + args.view if args.view else ''}")
    if args.layout is None:
        return _overview(snap, ls, args, ui)
    return _one(snap, ls, ls.find(args.layout), shape, args, ui)


def _dims(shape) -> str:
    return "x".join(map(str, shape))


def _bases_lines(ll) -> list[str]:
    return [f"  {dim:<8} {[list(v) for v in vecs]}" for dim, vecs in ll.bases.items()]


def _overview(snap, ls, args, ui) -> int:
    from ..layouts.report import access_reports, convert_reports
    from ..render.terminal import table
    text = snap.read("ttgir")
    cvts, accs = convert_reports(text, ls), access_reports(text, ls)
    if args.json:
        ui.print(json.dumps({"snapshot": snap.label, **ls.to_json(),
                             "converts": [_cvt_json(c) for c in cvts], "accesses": [_acc_json(a) for a in accs]},
                            indent=1))
        return 0
    s = ui.style
    ui.print(f"{s(snap.label, 'bold')}  layouts computed by {ls.computed_by or '?'}")
    if ls.note:
        ui.print(f"  note: {ls.note}")
    rows, notes = [], {}  # a layout's reason for being unavailable is a footnote: a long one made every row wide
    for i, e in enumerate(ls.encodings):
        for sl in e.layouts:
            ll = sl.layout
            what = (f"reg {ll.size('register')} lane {ll.size('lane')} warp {ll.size('warp')}" if ll and not ll.is_shared
                    else f"offsets {ll.size('offset')}" if ll else
                    s(f"not available [{notes.setdefault(sl.note, len(notes) + 1)}]", "yellow"))
            rows.append([str(i), e.name if len(e.name) < 48 else e.name[:45] + "...", e.kind, _dims(sl.shape), what,
                         sl.by])
    ui.print(table(["#", "encoding", "kind", "shape", "per layout", "by"], rows, right=[0], style=s))
    for note, n in notes.items():
        ui.print(s(f"  [{n}] {note}", "yellow"))
    if cvts:
        ui.print("")
        ui.print(s("convert_layout", "bold"))
        for c in cvts:
            verdict = c.cost.summary() if c.cost else "no cost: a side has no layout"
            ui.print(f"  line {c.op.line}  {_dims(c.op.shape)}  {c.op.src_name} -> {c.op.dst_name}: {verdict}")
    if accs:
        ui.print("")
        ui.print(s("shared-memory accesses", "bold"))
        for a in accs:
            x = a.access
            bc = a.conflicts.summary() if a.conflicts else "no count: a side has no layout"
            ui.print(f"  line {x.line}  {x.op} ({x.direction})  {x.tensor_name} {_dims(x.tensor_shape)} <-> "
                     f"{x.shared_name} {_dims(x.alloc_shape)}: {bc}")
    return 0


def _cvt_json(c) -> dict:
    d = {"line": c.op.line, "shape": list(c.op.shape), "src": c.op.src_name, "dst": c.op.dst_name}
    if c.cost:
        d.update(movement=str(c.cost.movement), moved=list(c.cost.moved), registers=c.cost.registers,
                 scratch_bytes=c.cost.scratch_bytes, note=c.cost.note)
    return d


def _acc_json(a) -> dict:
    x = a.access
    d = {"line": x.line, "op": x.op, "direction": x.direction, "tensor": x.tensor_name,
         "tensor_shape": list(x.tensor_shape), "shared": x.shared_name, "alloc_shape": list(x.alloc_shape),
         "elem_bits": x.elem_bits}
    if a.conflicts:
        d.update(conflicts=a.conflicts.conflicts, vector_elems=a.conflicts.vector_elems,
                 lanes_per_wavefront=a.conflicts.lanes_per_wavefront)
    return d


def _one(snap, ls, enc, shape, args, ui) -> int:
    from ..layouts.cost import swizzle_summary
    from ..layouts.report import access_reports, convert_reports
    from ..layouts.views import hardware_lines, hardware_view_lines, tensor_view, tensor_view_lines
    sl = enc.at(shape)
    text = snap.read("ttgir")
    accs = [a for a in access_reports(text, ls) if a.access.shared == enc.attr or a.access.tensor == enc.attr]
    cvts = [c for c in convert_reports(text, ls) if enc.attr in (c.op.src, c.op.dst)]
    if args.json:
        ui.print(json.dumps({"snapshot": snap.label, **enc.to_json(), "shown_shape": list(sl.shape),
                             "converts": [_cvt_json(c) for c in cvts], "accesses": [_acc_json(a) for a in accs]},
                            indent=1))
        return 0
    s = ui.style
    ui.print(f"{s(enc.name, 'bold')}  {enc.kind} ({enc.space}) at {_dims(sl.shape)}"
             + (f", computed by {sl.by}" if sl.by else ""))
    if enc.name != enc.attr:
        ui.print(f"  {enc.attr}")
    ll = sl.layout
    if ll is None:
        ui.print(s(f"  not available: {sl.note}", "yellow"))
        return 0
    if sl.note:
        ui.print(f"  note: {sl.note}")
    ui.print("bases:")
    for line in _bases_lines(ll):
        ui.print(line)
    if ll.is_shared:
        ui.print(f"swizzle: {swizzle_summary(enc.attr, enc.kind)}")
    else:
        ui.print(f"{ll.size('register')} registers x {ll.size('lane')} lanes x {ll.size('warp')} warps"
                 + ("" if ll.injective else "; some elements are held by several threads (broadcast)"))
    view = args.view or "both"
    if view in ("tensor", "both"):
        ui.print("")
        positions = sum(len(v) for v in ll.bases.values())
        if len(ll.shape) > 2:
            ui.print(s(f"no element grid: irscope draws 1-D and 2-D layouts, this one is {len(ll.shape)}-D "
                       "(--view hardware shows the per-thread view)", "dim"))
        elif positions > VIEW_BITS and not args.all:
            ui.print(s(f"no element grid: it enumerates all 2**{positions} positions (more than 2**{VIEW_BITS}); "
                       "--all draws it anyway", "dim"))
        else:
            ui.print(s("offset of each element (row:col of the buffer)" if ll.is_shared
                       else "element -> thread:register (thread = warp * lanes + lane)", "bold"))
            _capped(ui, tensor_view(ll).rstrip("\n").split("\n"), tensor_view_lines(ll), args.all, "element grid")
    if view in ("hardware", "both"):
        ui.print("")
        ui.print(s("offset -> element" if ll.is_shared else "per thread: one row per register, one column per lane",
                   "bold"))
        _capped(ui, hardware_lines(ll), hardware_view_lines(ll), args.all, "per-thread view")
    for c in cvts:
        ui.print("")
        ui.print(f"convert_layout at line {c.op.line}: {c.op.src_name} -> {c.op.dst_name}: "
                 + (c.cost.summary() if c.cost else "no cost: a side has no layout"))
    for a in accs:
        x = a.access
        ui.print(f"line {x.line}: {x.op} ({x.direction}) {x.tensor_name} {_dims(x.tensor_shape)} <-> {x.shared_name}: "
                 + (a.conflicts.summary() if a.conflicts else "no count: a side has no layout"))
    return 0


def _capped(ui, lines, total: int, show_all: bool, what: str) -> None:
    """Print a view's lines, the first VIEW_LINES of them unless `show_all` (lines are drawn as printed)."""
    for line in itertools.islice(lines, None if show_all else VIEW_LINES):
        ui.print(line)
    if not show_all and total > VIEW_LINES:
        ui.print(ui.style(f"… {total - VIEW_LINES:,} more lines of the {what} (--all shows them; --json gives "
                          "the bases)", "dim"))


def compare_labels(snaps) -> list[str]:
    """The shortest label that tells each snapshot from the others: its target, else kernel/target, else
    variant/target, else kernel/variant/target, else its folder."""
    for parts in (("target_name",), ("kernel", "target_name"), ("variant", "target_name"),
                  ("kernel", "variant", "target_name")):
        labels = ["/".join(str(getattr(sn, p) or "?") for p in parts) for sn in snaps]
        if len(set(labels)) == len(labels):
            return labels
    return [str(sn.path) for sn in snaps]


def _compare(args, ui) -> int:
    from ..layouts.compare import compare_layouts
    from ..render.terminal import table
    loaded = [_load(p, args.compute, ui) for p in args.snapshots]
    rows = compare_layouts([ls for _, ls in loaded])
    labels = compare_labels([snap for snap, _ in loaded])
    if args.json:
        ui.print(json.dumps({"snapshots": [snap.label for snap, _ in loaded], "encodings": [
            {"attr": r.attr, "kind": r.kind, "names": list(r.names),
             "shapes": [[list(x) for x in sh] for sh in r.shapes], "only": labels[r.only] if r.only is not None else None}
            for r in rows]}, indent=1))
        return 0
    s = ui.style
    body = []
    for r in rows:
        cells = [", ".join(_dims(x) for x in sh) if n else "-" for n, sh in zip(r.names, r.shapes)]
        only = s(f"only {labels[r.only]}", "yellow") if r.only is not None else ""
        short = r.attr if len(r.attr) <= 56 else r.attr[:53] + "..."
        body.append([r.kind, short, *cells, only])
    ui.print(table(["kind", "encoding", *labels, ""], body, style=s))
    return 0
