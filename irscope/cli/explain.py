"""`irscope explain KERNEL|FILE.py:NAME|SNAPSHOT`: what the compiler decided for a kernel, and what would
change it, as remarks (passed / missed / analysis) with the pass, the evidence and the snapshot folder."""
from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from .options import add_compile_options, options_from_args, positive_int, positive_seconds

TOPIC_TITLES = {"matrix": "matrix instruction", "pipelining": "software pipelining", "vectors": "global vector width",
                "shared": "shared memory / LDS", "registers": "registers and spills", "tma": "TMA",
                "buffer_ops": "AMD buffer ops", "warp_specialize": "warp specialisation"}
KIND_STYLE = {"passed": ("green",), "missed": ("red", "bold"), "analysis": ("cyan",)}


def add_parser(sub) -> None:
    p = sub.add_parser("explain", help="what the compiler decided for a kernel, and which switch would change it",
                       description="Read the compiler's decisions from a compile (matrix instruction, software\n"
                                   "pipelining, vector widths, shared memory and launchability, registers and\n"
                                   "spills, TMA, AMD buffer ops, warp specialisation), then compile a few what-ifs\n"
                                   "(in parallel, cached by content) to show which switch flips each one. Every\n"
                                   "remark names the pass, the evidence and the snapshot folder it came from.",
                       epilog="examples:\n"
                              "  irscope explain matmul --target sm_90a\n"
                              "  irscope explain matmul --target gfx942 --config m64n256k32.w4.s4\n"
                              "  irscope explain irscope-snapshots/matmul/default/sm_80 --budget 2 --json",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("kernel", metavar="KERNEL|FILE.py:NAME|SNAPSHOT",
                   help="a built-in kernel, FILE.py:FUNCTION, or a snapshot folder (its recorded options are the base)")
    p.add_argument("--target", "-t", default=None, help="one target (default: sm_90a; a snapshot's own target)")
    add_compile_options(p)
    p.add_argument("--triton", metavar="VERSION",
                   help="explain the compile of another Triton release (its environment is made on first use: "
                        "`irscope envs`)")
    p.add_argument("--budget", type=int, default=None, metavar="N",
                   help="at most N what-if compiles (default: 4; 0 reads the decisions only)")
    p.add_argument("--passes", action="store_true",
                   help="record the base compile's pass timeline, so remarks name the pass seen making each change")
    p.add_argument("--out", "-o", metavar="DIR", help="snapshot root (default: $IRSCOPE_OUT or ./irscope-snapshots)")
    p.add_argument("--jobs", "-j", type=positive_int, metavar="N", help="compiles at once (default: one per CPU core)")
    p.add_argument("--timeout", type=positive_seconds, default=300.0, metavar="SECONDS", help="per compile (default: 300)")
    p.add_argument("--json", action="store_true", help="the decisions, remarks and what-ifs as JSON")
    p.set_defaults(run=run)


def run(args: argparse.Namespace, ui) -> int:
    from ..spec.launches import split_ref
    from ..errors import SnapshotError, UsageError
    from ..explain.remarks import DEFAULT_BUDGET, explain
    from ..store.roots import default_out, ensure_root
    from ..render.terminal import ProgressLine
    from ..spec.kernel import CompileOptions
    from ..store.snapshot import is_snapshot_dir
    from ..targets import parse_targets

    budget = DEFAULT_BUDGET if args.budget is None else args.budget
    if budget < 0:
        raise UsageError(f"bad --budget {budget}", "give the most what-if compiles to run: 0 or more")
    out = Path(args.out) if args.out else default_out()
    given = Path(args.kernel).expanduser()
    snapshot = given if given.is_dir() and is_snapshot_dir(given) else None
    if snapshot is None and not given.exists() and not given.suffix and ":" not in args.kernel and \
            ("/" in args.kernel or os.sep in args.kernel):  # a path, but not FILE.py: a snapshot folder meant
        raise SnapshotError(f"no snapshot folder '{given}'", "give a snapshot folder that exists (ROOT/KERNEL/VARIANT/TARGET, "
                         "as `irscope compile` prints it), a built-in kernel, or FILE.py:NAME")
    if snapshot is None and given.is_dir() and not _is_builtin(args.kernel):  # (`matmul` in a root: the kernel)
        raise SnapshotError(f"{given} is a folder but not a snapshot folder (no irscope.json)",
                         "give one snapshot folder (`irscope show` lists them under a root), or a kernel name")
    target = None
    if snapshot is None:
        targets = parse_targets(args.target or "sm_90a")
        if len(targets) != 1:
            raise UsageError(f"explain takes one target, got {len(targets)} ({args.target})",
                             "pick one: --target sm_90a; `irscope compare` sets targets side by side")
        target = targets[0].name
    elif args.passes:  # (read whatever timeline it was compiled with; it is not compiled again)
        raise UsageError(f"--passes with a snapshot folder ({args.kernel}): it is read, not compiled, so no pass "
                         "timeline is recorded", "leave --passes out (a timeline the snapshot has is read), or "
                         "explain the kernel with it: irscope explain KERNEL --target T --passes")
    elif args.target:
        raise UsageError(f"--target {args.target} with a snapshot folder: the snapshot's own target is explained",
                         "leave --target out, or explain the kernel: irscope explain KERNEL --target T")
    elif options_from_args(args) != CompileOptions(line_info=args.line_info) or not args.line_info:
        raise UsageError(f"compile options with a snapshot folder ({args.kernel}): its recorded options are the base",
                         "leave them out, or explain the kernel with them: irscope explain KERNEL --target T ...")
    options = options_from_args(args)
    if snapshot is None and split_ref(args.kernel):  # a captured launch: its own options are the base
        if options != CompileOptions(line_info=args.line_info) or args.triton is not None:
            raise UsageError(f"compile options with a captured launch ({args.kernel}): the launch's own are the base",
                             "leave them out, or explain the kernel's file with them: irscope explain FILE.py:NAME")
        options = _launch_options(args.kernel, target, None if args.line_info else False)
    triton = ""
    if args.triton is not None:  # (--triton "" is no release: refused by triton_versions)
        from .envs import prepare, triton_versions
        versions = triton_versions(args)
        if len(versions) != 1:
            raise UsageError(f"explain takes one Triton release, got {args.triton}",
                             "compare releases with irscope compare --triton A,B or irscope upgrade-check")
        prepare(versions, ui)
        from ..harness.envs import is_running
        triton = "" if is_running(versions[0]) else versions[0]
    ensure_root(out)
    progress = ProgressLine(ui.err)

    def on_progress(p) -> None:
        if getattr(p, "phase", "") == "compiling":
            progress.update(f"[{p.done}/{p.total}] compiling {', '.join(p.running)}".rstrip())

    try:
        result = explain(None if snapshot else args.kernel, target, options, out, snapshot=snapshot,
                         budget=budget, passes=args.passes, workers=args.jobs, timeout=args.timeout,
                         on_progress=on_progress, triton=triton)
    finally:
        progress.close()
    if args.json:
        ui.print(json.dumps(result.as_dict(), indent=1))
        return 0
    ui.print(render(result, ui, snapshot=snapshot is not None))
    return 0


def _is_builtin(name: str) -> bool:
    """Whether `name` is a built-in kernel's (a folder of that name in the working folder, as in a snapshot
    root, does not hide it: compile and compare take the kernel too)."""
    from ..errors import IrscopeError
    from ..spec import library
    if not library.builtin_name(name):
        return False
    try:
        library.load_builtin(name)
    except IrscopeError:
        return False
    return True


def _launch_options(ref: str, target: str, line_info: bool | None):
    """The options a captured launch compiles with (its warps, stages, divisibility, backend options), as
    `irscope compile LAUNCHES.json` takes them; UsageError when it cannot be compiled for `target`."""
    from ..errors import UsageError
    from ..harness.launches import launch_points
    from ..spec.launches import find_launch, split_ref
    from ..store.launches import read_launches
    from ..targets import get_target

    path, launch_id = split_ref(ref)
    find_launch(read_launches(Path(path)), launch_id, path)  # an unknown id: the ids the file has
    points, skipped = launch_points(Path(path), [get_target(target)], line_info=line_info, only={launch_id})
    if not points:
        raise UsageError(f"{ref} cannot be compiled for {target}: {skipped[0][2] if skipped else 'no launch'}",
                         "explain another launch of it, or another target")
    # (no folder name of the launch's: the what-ifs, made from these options, each need their own)
    return points[0].options.with_(name=None)


def _short(path: str) -> str:
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return rel if not rel.startswith("../..") else path


def render(result, ui, snapshot: bool = False) -> str:
    s = ui.style
    kinds = [r.kind for r in result.remarks]
    counts = ", ".join(f"{kinds.count(k)} {k}" for k in ("passed", "missed", "analysis"))
    fresh = sum(r.cached for r in result.whatifs)
    lines = [f"{s(result.label, 'bold')}  {_short(result.snapshot)}",
             f"  {counts} · {len(result.whatifs)} what-if compiles ({result.compiled} compiled, {fresh} from the "
             f"cache)" + (f", {len(result.skipped)} more over --budget" if result.skipped else "")]
    for topic, title in TOPIC_TITLES.items():
        remarks = [r for r in result.remarks if r.decision.topic == topic]
        if not remarks:
            continue
        lines += ["", s(title, "bold")]
        for r in remarks:
            lines.append(f"  {s(f'{r.kind:<8}', *KIND_STYLE[r.kind])}  {r.message}")
            detail = []
            if r.pass_name:
                detail.append(f"pass {r.pass_name}" + (" (seen on the timeline)" if r.pass_source == "timeline"
                                                       else ""))
            if r.evidence:
                detail.append("evidence " + ", ".join(r.evidence))
            detail.append(f"in {_short(r.snapshot)}")
            lines.append(s("            " + " · ".join(detail), "dim"))
    if result.skipped:
        lines += ["", s("not compiled (over --budget)", "bold")]
        lines += [f"  {w.change}: {w.reason}" for w in result.skipped]
    if result.gluon:
        lines += ["", s("a Gluon kernel: its layouts, buffers, MMA and TMA are written in its source, not chosen by "
                        "Triton's passes (docs/gluon.md)", "dim")]
    elif not result.timeline:
        lines += ["", s("passes are Triton's pipeline's; " + ("compile it with --passes (irscope explain KERNEL "
                                                              "--passes) to see them on its timeline" if snapshot else
                                                              "add --passes to see them on this compile's timeline"),
                        "dim")]
    return "\n".join(lines)
