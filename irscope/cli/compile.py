"""`irscope compile KERNEL... --target T`: compile without a GPU and save every stage as a snapshot folder."""
from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import CompileError, UsageError, error_summary
from ..render.terminal import ProgressLine, resources_line, stage_sizes, table
from .envs import add_triton_option, prepare, triton_versions
from .options import add_compile_options, options_from_args, positive_int, positive_seconds
from .sweep import add_cluster_options, open_executor


def add_parser(sub) -> None:
    p = sub.add_parser("compile", help="compile kernels for GPU targets (no GPU needed) into snapshot folders",
                       description="Compile kernels the way Triton's JIT would for a typical launch, for any "
                                   "target, and save every stage (ttir, ttgir, llir, ptx/amdgcn, cubin/hsaco, sass).")
    p.add_argument("kernels", nargs="+", metavar="KERNEL",
                   help="a built-in kernel (`irscope kernels` lists them), FILE.py:FUNCTION, or a LAUNCHES.json "
                        "that irscope capture wrote (compiling it runs its kernels' Python source)")
    p.add_argument("--target", "-t", default="sm_90a",
                   help="target(s): sm_90a, a comma-separated list, or all (default: sm_90a; `irscope targets`)")
    add_compile_options(p)
    p.add_argument("--out", "-o", metavar="DIR", help="where snapshots go (default: $IRSCOPE_OUT or ./irscope-snapshots)")
    p.add_argument("--name", metavar="NAME", help="name of the variant folder (default: the config plus what you changed)")
    p.add_argument("--jobs", "-j", type=positive_int, metavar="N", help="compiles at once (default: one per CPU core)")
    p.add_argument("--timeout", type=positive_seconds, default=300.0, metavar="SECONDS",
                   help="give up on a compile after this long (default: 300)")
    add_cluster_options(p)
    p.add_argument("--passes", nargs="?", const="mlir", default="", choices=("mlir", "all"),
                   help="also record the IR after every compiler pass (`irscope passes` reads it): Triton's MLIR "
                        "passes, or with `--passes all` LLVM's too (much slower; docs/passes.md)")
    p.add_argument("--no-layouts", action="store_true",
                   help="skip recording the linear layouts (layouts.json, about a second a snapshot); "
                        "`irscope layouts` computes them later when Triton is there")
    p.add_argument("--update-goldens", action="store_true",
                   help="allow writing into a folder of committed goldens (snapshots/)")
    add_triton_option(p)
    p.set_defaults(run=run)


# What `irscope compile` takes that a launch file's compile cannot: the launch says each of these itself.
_KERNEL_OPTIONS = (("config", "--config"), ("num_warps", "--num-warps"), ("num_stages", "--num-stages"),
                   ("divisibility", "--divisibility"), ("constexpr", "--constexpr"), ("arg", "--arg"),
                   ("option", "--option"), ("large_tensors", "--large-tensors"), ("name", "--name"),
                   ("triton", "--triton"))


def _not_for_launch_files(args: argparse.Namespace) -> list[str]:
    return [flag for dest, flag in _KERNEL_OPTIONS if getattr(args, dest, None) not in (None, False, [], "")]


def run(args: argparse.Namespace, ui) -> int:
    from ..harness.batch import Point, compile_points
    from ..store.roots import default_out, ensure_root
    from ..store.snapshot import load_snapshot
    from ..targets import parse_targets

    targets = parse_targets(args.target)
    options = options_from_args(args).with_(passes=args.passes)
    out = Path(args.out) if args.out else default_out()
    from ..spec.library import config_choices
    from ..store.launches import is_launch_file
    launch_files = [k for k in args.kernels if is_launch_file(k)]
    if launch_files:  # captured launches (docs/capture.md): each carries its own options and specialisation
        from .capture import compile_launches, failed_compiles_error
        given = _not_for_launch_files(args)
        if given:
            raise UsageError(f"{', '.join(given)} {'does' if len(given) == 1 else 'do'} not apply to a launch file: "
                             "each launch compiles with the options and specialisation it ran with",
                             "to compile a kernel of it otherwise, give FILE.py:NAME with those options (a "
                             "launch file and such options in separate commands)")
        ensure_root(out)
        executor = open_executor(args, args.jobs)
        try:
            failed = [o for f in launch_files
                      for o in compile_launches(ui, Path(f), targets, out, jobs=args.jobs, timeout=args.timeout,
                                                line_info=None if args.line_info else False, passes=args.passes,
                                                layouts=not args.no_layouts, executor=executor,
                                                allow_goldens=args.update_goldens)]
        finally:
            executor.close()
        if failed:
            raise failed_compiles_error(failed, out)
        args.kernels = [k for k in args.kernels if not is_launch_file(k)]
        if not args.kernels:
            return 0
    if options.name:  # one variant folder: two configs of one kernel would overwrite each other there
        for k in args.kernels:
            configs = config_choices(k, options.config)
            if len(configs) > 1:
                raise UsageError(f"--name {options.name} names one variant folder, and --config {options.config} "
                                 f"gives {k} {len(configs)} configs: each would overwrite the last",
                                 "drop --name (each config gets a folder named after it), or give one --config")
    versions = triton_versions(args)
    prepare(versions, ui)
    points = [Point(k, t.name, options.with_(config=c), v) for v in (versions or [""]) for k in args.kernels
              for c in config_choices(k, options.config) for t in targets]
    ensure_root(out)
    progress = ProgressLine(ui.err)

    def on_progress(p) -> None:
        names = ", ".join(f"{pt.kernel} {pt.target}" + (f" (triton {pt.triton})" if pt.triton else "")
                          for pt, *_ in p.running)
        progress.update(f"[{p.done}/{p.total}] compiling {names}" if names else f"[{p.done}/{p.total}]")

    executor = open_executor(args, args.jobs)
    try:
        outcomes = compile_points(points, out, workers=args.jobs, timeout=args.timeout,
                                  allow_goldens=args.update_goldens, on_progress=on_progress,
                                  layouts=not args.no_layouts, executor=executor)
    finally:
        progress.close()
        executor.close()

    s = ui.style
    snaps = []
    for o in outcomes:
        snap = load_snapshot(o.path) if o.path else None
        snaps.append(snap)
        status = s("ok", "green") if o.ok else s(o.status, "yellow") if o.status == "not-for-target" else \
            s(o.status, "red", "bold")
        label = o.label
        ui.print(f"{s(label, 'bold')}  {status}  {o.seconds:.1f} s")
        if snap and snap.ok:
            ui.print(f"  stages   {stage_sizes(snap)}")
            ui.print(f"  usage    {resources_line(snap)}")
        if o.error:
            stage = o.error.get("stage")
            at = f"at {stage}: " if stage and stage != "?" else ""
            ui.print(f"  {s('error', 'red')}    {at}{error_summary(o.error)}")
        if o.path:
            ui.print(f"  folder   {o.path}")
    failed = [o for o in outcomes if not o.ok]
    if len(outcomes) > 1:
        ui.print()
        ui.print(table(["", "ok", "failed"], [["snapshots", len(outcomes) - len(failed), len(failed)]], right=(1, 2)))
    if failed:
        first = failed[0]
        stage = (first.error or {}).get("stage")
        where = f" at stage {stage}" if stage and stage != "?" else f" ({first.status})"
        msg = error_summary(first.error) if first.error else first.status
        with_folder = next((o for o in failed if o.path is not None), None)
        if all(o.status == "not-for-target" for o in failed):
            declared = any((o.error or {}).get("declared") for o in failed)
            raise CompileError(f"{len(failed)} of {len(outcomes)} compiles are not for their target; first: "
                               f"{first.label}: {msg}",
                               f"`irscope kernels {first.point.kernel}` says which targets each config is for, and "
                               "why not the others" if declared else
                               "the kernel uses operations those targets lack: compile it for a target that has "
                               "them, or say so in its spec (Config(..., not_for={TARGET: REASON}), "
                               "docs/kernel-spec.md)")
        if with_folder is not None:
            hint = f"the stages that compiled are kept in the failed snapshot's folder: irscope show {with_folder.path}"
        elif first.status == "not-for-target" or "not a kernel for" in msg:
            hint = "compile it for a target that has those instructions, or guard the kernel's arch-specific ops"
        else:
            hint = "a crashed or timed-out compile leaves no folder: run it alone with --jobs 1, or raise --timeout"
        raise CompileError(f"{len(failed)} of {len(outcomes)} compiles failed; first: {first.label}{where}: {msg}",
                           hint)
    return 0
