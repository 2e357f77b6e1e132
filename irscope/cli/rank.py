"""`irscope rank SWEEP.yaml|KERNEL --target T`: predict every config's time from its compile facts."""
from __future__ import annotations

import json
from pathlib import Path

from ..errors import UsageError
from ..render.terminal import ProgressLine, plural, table
from ..rank.captured import REREADS_WARN
from ..rank.model import DEFAULT_MODEL, MODELS, effective_model
from ..rank.reason import for_chip
from ..store.results import finite
from .options import positive_int
from .sweep import add_cluster_options, open_executor, progress_text


def add_parser(sub) -> None:
    p = sub.add_parser("rank", help="rank an autotune space by predicted time, from compile facts alone (no GPU)",
                       description="Compile every config of a sweep file, or of a kernel's menu (an autotuned "
                                   "kernel's autotune space), for one target (cached, in parallel), predict each "
                                   "config's time at the given sizes from its compile facts and the GPU's published "
                                   "peaks, and print the ranking with the bound behind each estimate (docs/rank.md).")
    p.add_argument("space", metavar="SWEEP.yaml|KERNEL|LAUNCHES.json",
                   help="a sweep file, a kernel (built-in or FILE.py:NAME), or the launch file of `irscope capture` "
                        "(a program's own launches of a kernel, one per autotune config, ranked at the size it ran)")
    p.add_argument("--target", "-t", metavar="T", help="the target to rank for (default: the sweep's only target)")
    p.add_argument("--size", action="append", metavar="PRESET|K=V,...",
                   help="problem size (the workload's preset or K=V,...; repeatable; default: its bench size)")
    p.add_argument("--gpu", metavar="NAME", help="the chip to model (default: the target's usual one; "
                                                 "see docs/rank.md for the table)")
    p.add_argument("--kernel", "-k", metavar="NAME",
                   help="rank this kernel of a sweep or launch file that holds several (default: its only kernel)")
    p.add_argument("--model", type=int, choices=MODELS, default=DEFAULT_MODEL,
                   help=f"the cost model (docs/rank.md): 1 datasheet only, 2-{MODELS[-1]} add more of the chip's "
                        f"calibration (the H200's and the H100's; default {DEFAULT_MODEL})")
    p.add_argument("--top", type=positive_int, default=10, metavar="N",
                   help="configs to print, and to write with --emit-configs (default 10)")
    p.add_argument("--out", "-o", metavar="DIR", help="snapshot root (default: a sweep file's `out:`, else "
                                                       "$IRSCOPE_OUT or ./irscope-snapshots)")
    p.add_argument("--jobs", "-j", type=positive_int, metavar="N",
                   help="compiles at once (default: a sweep file's `jobs:`, else one per core)")
    add_cluster_options(p)
    p.add_argument("--emit-configs", metavar="FILE.py",
                   help="write the top N (--top; at each --size) as triton.Configs plus an early_config_prune "
                        "for @triton.autotune (replaces only a module it wrote before)")
    p.add_argument("--measured", action="store_true",
                   help="score the ranking against the GPU times `irscope run` recorded beside these configs' "
                        "snapshots at each size (runs.json; `--snapshot DIR`, or a kernel's `--config all --out "
                        "ROOT` through the JIT): Spearman, the fastest's place, top-1/top-5 slowdowns, and each "
                        "config's measured time beside its prediction")
    p.add_argument("--json", action="store_true", help="every config's facts and estimate per size, as JSON")
    p.set_defaults(run=run)


def _one_target(text: str) -> str:
    """The --target of a ranking: one target (get_target's hint offers `all`, which a ranking cannot take)."""
    from ..targets import get_target
    if text.strip().lower() == "all" or "," in text:
        raise UsageError(f"--target {text}: a ranking is for one target",
                         "pass one, e.g. --target sm_90a, and rank each target in its own run")
    return get_target(text).name


def _points(args):
    """(sweep points, the constexprs the space varies, the target, the sweep file or None for a menu)."""
    from ..spec import library
    from ..sweep import SweepPoint, load_sweep
    from ..sweep.file import options_for
    if args.space.endswith((".yaml", ".yml")):
        sweep = load_sweep(args.space)
        from .sweep import expand_within
        points = expand_within(sweep, flag=False)
        targets = sorted({p.target for p in points})
        target = args.target or (targets[0] if len(targets) == 1 else None)
        if target is None:
            raise UsageError(f"{args.space} has targets {', '.join(targets)}; rank one at a time",
                             "pass --target, e.g. --target sm_90a")
        target = _one_target(target)
        points = [p for p in points if p.target == target]
        if not points:
            raise UsageError(f"{args.space} has no point for {target}", f"its targets: {', '.join(targets)}")
        tuned = {n for p in points for n, _ in p.axes if n not in ("num_warps", "num_stages", "config")}
        tuned |= {n for p in points if p.options.config for n in library.load_kernel(p.kernel).config(
            p.options.config).constexprs}
        return points, tuned, target, sweep
    spec = library.load_kernel(args.space)  # (an unknown kernel says so before the target is asked for)
    if not args.target:
        raise UsageError("which target? a kernel's menu is ranked for one target", "pass --target, e.g. --target sm_90a")
    target = _one_target(args.target)
    points = [SweepPoint(args.space, target, options_for({}, c.name, True)) for c in spec.configs]
    tuned = {n for c in spec.configs for n in c.constexprs}
    return points, tuned, target, None


def run(args, ui) -> int:
    from ..errors import CompileError
    from ..rank import chip_for, facts_of, rank
    from ..rank.captured import rereads
    from ..rank.export import launch_options, merged_top, write_module
    from ..rank.chips import CHIPS
    from ..rank.measured import damaged_runs, names_chip, no_runs_error, recorded_devices
    from ..spec import library
    from ..store.roots import default_out, ensure_root
    from ..store.snapshot import load_snapshot
    from ..sweep import run_points

    from .rank_launches import captured_space, is_capture
    captured, sweep = None, None
    if is_capture(args.space):  # the flags are checked before a launch's source runs (compiling runs it)
        if args.size:
            raise UsageError("--size: a captured kernel is ranked at the size the program launched it with",
                             "capture the program at the size you want ranked")
        if args.measured:
            raise UsageError("--measured scores the runs `irscope run` recorded, and it cannot run a captured "
                             "launch (it builds inputs from a workload)",
                             "time the configs with the program's own autotuner (benchmarks/autotune_timings.py "
                             "shows how) and compare")
        captured = captured_space(args, _one_target(args.target) if args.target else None)
    if captured is not None:  # a program's own launches (irscope capture): ranked at the size it ran
        points, tuned, target, name, spec = captured.points, captured.tuned, captured.target, captured.name, None
        for launch_id, why in captured.skipped:
            ui.warn(f"not ranked: {launch_id}: {why}")
        from ..rank.captured import tensor_bytes
        if any(tensor_bytes(launch) is None for launch in captured.launches.values()):
            ui.warn("the launch file records no tensor shapes (an older irscope captured it), so the least DRAM "
                    "traffic is taken as what the programs load and store, which overstates a kernel that reuses "
                    "its tiles (a matmul); capture the program again for the shapes")
    else:
        points, tuned, target, sweep = _points(args)
    chip = chip_for(target, args.gpu)
    kernels = sorted({p.kernel for p in points})
    if args.kernel and captured is None:
        if args.kernel not in kernels:
            raise UsageError(f"the space has no kernel '{args.kernel}'", f"it holds: {', '.join(kernels)}")
        points, kernels = [p for p in points if p.kernel == args.kernel], [args.kernel]
    if len(kernels) != 1 and captured is None:
        raise UsageError(f"the space holds {len(kernels)} kernels ({', '.join(kernels)}); rank one at a time",
                         f"pass --kernel, e.g. --kernel {kernels[0]}")
    if captured is None:
        spec = library.load_kernel(kernels[0])
        name = spec.name
        from ..spec.workload import Workload
        workload = spec.workload
        if not isinstance(workload, Workload):  # the sizes, grid, flops and bytes a prediction is made at
            raise UsageError(f"kernel '{spec.name}' has no workload, so irscope cannot plan its launch at a size "
                             "to predict a time", "capture a program that launches it (irscope capture -- python "
                             "prog.py) and rank the launch file, or give it a KernelSpec with "
                             "workload=Workload(...) (docs/kernel-spec.md)")
        from ..rank.plans import check_launched_constexprs
        from ..spec.problem import require_torch
        require_torch()  # planning the launch needs it: found after the compiles, it would waste them
        # So is a bad size (malformed, too large to plan, or launched with other constexprs than the space's)
        check_launched_constexprs(spec, [p.options for p in points], args.size or [None], sms=chip.sms)
    emit = Path(args.emit_configs) if args.emit_configs else None
    if emit is not None:  # so is a file that cannot be written: found after the compiles, it would waste them
        _check_emit_path(emit)
    # A sweep file's out:, jobs: and timeout: are honoured as `irscope sweep` honours them (the flags win), so
    # both commands compile into, and read from, the same root.
    out = ensure_root(Path(args.out) if args.out else (sweep.out if sweep and sweep.out else default_out()))
    jobs = args.jobs if args.jobs is not None else (sweep.jobs if sweep else None)
    timeout = {"timeout": sweep.timeout} if sweep else {}  # a menu takes run_points' default
    progress = ProgressLine(ui.err)

    def on_progress(p) -> None:
        progress.update(f"checking the cache: {p.done}/{p.total}" if p.phase == "planning" else progress_text(p))

    executor = open_executor(args, jobs)
    try:
        result = run_points(points, out, workers=jobs, on_progress=on_progress, executor=executor,
                             **timeout)
    finally:
        progress.close()
        executor.close()
    snaps, failed, ref_of = [], [], {}
    for row in result.rows:
        snap = load_snapshot(row.path) if row.path is not None else None
        if snap is None or not snap.ok:  # (a failed compile keeps its folder: not ranked as "cannot launch")
            failed.append(row)
        else:
            snaps.append(snap)
            ref_of[snap.label] = row.point.kernel
    if not snaps:  # nothing to rank: a table of failures and exit 0 would read as success
        first = next(r for r in result.rows if r.status != "ok")
        raise CompileError(f"none of the {len(result.rows)} configs compiled, so none is ranked; first: "
                           f"{first.label}: {first.status}: {first.reason}",
                           f"`irscope show {first.path}` for the compiler's log" if first.path else
                           "a crashed or timed-out compile leaves no folder: compile that config alone with "
                           "`irscope compile ... --jobs 1` to see the compiler's output")
    if args.measured:
        for why in damaged_runs(snaps):
            ui.warn(f"{why}; its runs are not scored")
    if args.measured and not args.gpu:  # the chip the runs were made on, when they name one of the target's
        fits = [c for c in CHIPS.values() if c.target == target
                and any(names_chip(d, c.name) for d in recorded_devices(snaps))]
        if len(fits) > 1:  # scoring one chip's runs in silence would hide the other's
            names = ", ".join(c.name for c in fits)
            raise UsageError(f"--measured: the runs beside these snapshots were made on {len(fits)} GPUs ({names})",
                             f"choose the one to score with --gpu, e.g. --gpu {fits[0].name}")
        chip = fits[0] if fits else chip
    facts = {s.label: (s, facts_of(s)) for s in snaps}
    options = {s.label: launch_options(s.meta) for s in snaps}  # maxnreg, num_ctas...: part of a config too
    # Every size is planned and checked against every snapshot before anything is printed, so a size the
    # space was not compiled for stops the command before the first table, not after it.
    planned = _captured_plans(captured, facts, ref_of) if captured is not None else \
        _workload_plans(args, spec, facts, chip)
    for _, first, _, _ in planned:  # a prediction of a launch no such GPU can hold is no answer
        if chip.memory_gb and first.min_bytes > chip.memory_gb * 1e9:
            ui.warn(f"at {first.size_name} the kernel's tensors take {first.min_bytes / 1e9:,.0f} GB, more than the "
                    f"{chip.product}'s {chip.memory_gb:g} GB: no launch of this size fits on it")
    if args.measured and all(m is None for *_, m in planned):
        raise no_runs_error(planned[0][1].size_name, args.space, str(out), menu=not _is_sweep_file(args.space))
    # (the model asked for, and the one the chip's calibration allows: docs/rank.md)
    ran = effective_model(chip, args.model)
    report = {"space": args.space, "kernel": name, "target": target, "gpu": chip.name, "model": args.model,
              "model_run": ran, "calibration": getattr(chip.calibration(ran), "source", None), "sizes": [],
              "not_compiled": [{"label": r.label, "status": str(r.status), "reason": r.reason} for r in failed]}
    rankings = []
    for size, first, problems, measured in planned:
        ranking, reread = [], {}
        for label, (s, f) in facts.items():
            if label in problems:  # a captured kernel's launches at other sizes are ranked in their own table
                ranking.extend(rank([f], problems[label], chip, args.model))
                reread[label] = rereads(s.read("ttgir"), problems[label]) if "ttgir" in s.stage_files else None
        ranking.sort(key=lambda r: (r.estimate.key, r.facts.label))
        entry = {"size": first.size_name, "problem": first.as_dict(), "near_best": _near_best(ranking),
                 "alike": [{"places": [a, b], "constexprs": differ} for a, b, differ in _alike(ranking, len(ranking))],
                 "ranking": [{"place": i + 1, "facts": r.facts.as_dict(), "estimate": r.estimate.as_dict(),
                              "programs": problems[r.facts.label].programs,
                              # each config's own (its grid, its trips): "problem" above is the first's
                              "problem": problems[r.facts.label].as_dict(),
                              # its loops' reads over the least the launch needs, where their bounds say
                              "rereads": reread.get(r.facts.label)} for i, r in enumerate(ranking)]}
        scored = _score(ranking, measured) if measured is not None else None
        if args.measured:
            entry["measured"] = None if measured is None else {
                "device": measured.device, "timed": measured.timed, "sources": dict(measured.sources),
                "times_ms": dict(measured.times), "errors": dict(measured.errors),
                "evaluation": scored.as_dict() if scored else None}
        report["sizes"].append(entry)
        if not args.json:
            _print(ui, name, chip, target, first, ranking, problems, args.top, failed, args.measured, measured,
                   scored, tuned if captured is not None else None, (args.model, report["model_run"]), options)
        # (models 17 and later run a loop whose bounds are constants as they say: its re-reads are priced)
        _warn_rereads(ui, {label: v for label, v in reread.items()
                           if not (report["model_run"] >= 17 and facts[label][1].bounded_trips >= 0)},
                      first.size_name if len(planned) > 1 else "",
                      _advice(chip, args.model, 17, ", which runs such loops as their bounds say"))
        if report["model_run"] < 21:
            _warn_records(ui, {label: f for label, (_, f) in facts.items() if label in problems},
                          first.size_name if len(planned) > 1 else "", _advice(chip, args.model, 21))
        rankings.append(ranking)
    if args.json:  # (before the check below: with --json, the report holds each config's reason)
        ui.print(json.dumps(finite(report), indent=1))
    if not any(r.estimate.launchable for ranking in rankings for r in ranking):
        raise CompileError(f"none of the {plural(len(facts), 'config')} can launch on {chip.product}, so none "
                           "is ranked" + (" and nothing is written to --emit-configs" if emit else ""),
                           f"the {'report' if args.json else 'table'} gives each config's reason (registers, shared "
                           "memory, threads): give the space smaller tiles, fewer stages or fewer warps")
    if emit is not None:
        configs = merged_top(rankings, tuned, args.top, options)
        sizes = [entry["size"] for entry in report["sizes"]]
        at = f"at {sizes[0]}" if len(sizes) == 1 else f"the top {args.top} at each of {', '.join(sizes)}"
        try:
            write_module(emit, configs, f"{name} for {target} on {chip.product}, {at}")
        except OSError as e:
            raise UsageError(f"cannot write --emit-configs {emit}: {e.strerror or e}",
                             "give a FILE.py in a folder you can write") from None
        # news, not a warning; stderr, so that --json's stdout stays one document
        ui.err.write(f"wrote {plural(len(configs), 'config')} to {emit} "
                     f"({'the top ' + str(args.top) if len(sizes) == 1 else at})\n")
        for entry in report["sizes"]:
            near = entry["near_best"]
            if near > args.top:
                ui.err.write(f"irscope: note: {near} configs are predicted within {NEAR:.0%} of the best"
                             f"{'' if len(sizes) == 1 else ' at ' + entry['size']}, more than --top {args.top} "
                             f"keeps; --top {near} lets the autotuner time them all\n")
            cut = [a for a in entry["alike"] if a["places"][0] <= args.top < a["places"][1]]
            if cut and near <= args.top:  # (alike configs past the near-best ones: the model cannot order them)
                (first, last), keys = cut[0]["places"], cut[0]["constexprs"]
                ui.err.write(f"irscope: note: --top {args.top} cuts through #{first}-{last}"
                             f"{'' if len(sizes) == 1 else ' at ' + entry['size']}, predicted alike (they differ "
                             f"only in {', '.join(keys)}); --top {last} lets the autotuner time them all\n")
    return 0


def _workload_plans(args, spec, facts, chip) -> list:
    """(size, a problem, {label: problem}, measured runs or None) per --size, from the kernel's workload."""
    from ..gpu.replay import SpecialisationMismatch, check_call
    from ..rank.measured import measured_at
    from ..rank.plans import check_int_args
    from ..spec.problem import problem_at
    planned = []
    for size in args.size or [None]:
        problems = {label: problem_at(spec, size, f.constexprs, sms=chip.sms) for label, (_, f) in facts.items()}
        first = next(iter(problems.values()))
        for label, (s, _) in facts.items():
            try:
                check_call(s, spec.fn, problems[label].call)
                check_int_args(s, spec.fn, problems[label].call)
            except SpecialisationMismatch as e:
                raise UsageError(f"size {first.size_name}: {e.message}", _mismatch_hint(e, args.space)) from None
        measured = measured_at([s for s, _ in facts.values()], first.size, chip.name) if args.measured else None
        planned.append((size, first, problems, measured))
    return planned


def _captured_plans(captured, facts, ref_of) -> list:
    """(None, a problem, {label: problem}, None) per size the program launched the kernel at: each
    compiled launch's problem from its own record (irscope.rank.captured)."""
    from ..rank.captured import launch_problem
    from .rank_launches import size_key
    groups: dict[tuple, dict] = {}
    for label, (s, f) in facts.items():
        launch = captured.launches[ref_of[label]]
        groups.setdefault(size_key(launch), {})[label] = launch_problem(launch, captured.name, f, s.read("ttgir")
                                                                        if "ttgir" in s.stage_files else "")
    return [(None, next(iter(problems.values())), problems, None) for problems in groups.values()]


def _is_sweep_file(space: str) -> bool:
    return space.endswith((".yaml", ".yml"))


def _check_emit_path(path: Path) -> None:
    """Refuse an --emit-configs path that cannot become a file (a missing or unwritable folder, a folder
    itself, a path through a file), or whose file is not one irscope wrote: the user's sweep, kernel or
    notes are never replaced by a module."""
    import os
    import stat
    import tempfile

    from ..rank.export import is_emitted
    folder = path.parent
    if path.is_dir():
        raise UsageError(f"--emit-configs {path} is a folder", "give the path of a .py file to write, e.g. "
                         f"--emit-configs {path / 'ranked_configs.py'}")
    if path.suffix != ".py":
        raise UsageError(f"--emit-configs {path}: the module it writes is Python, so its name ends in .py",
                         f"e.g. --emit-configs {path.with_suffix('.py').name}")
    existing = next((p for p in (folder, *folder.parents) if p.exists()), None)
    if existing is not None and not existing.is_dir():  # mkdir -p cannot make a folder there
        raise UsageError(f"--emit-configs {path}: '{existing}' is a file, not a folder",
                         "give a FILE.py in a folder, e.g. --emit-configs ranked_configs.py")
    if not folder.is_dir():
        raise UsageError(f"--emit-configs {path}: the folder '{folder}' does not exist",
                         f"create it first (mkdir -p {folder}), or give a FILE.py in an existing folder")
    try:  # (os.access says yes to root on a read-only file system, or in /sys)
        fd, probe = tempfile.mkstemp(dir=folder, prefix=f".{path.name}.", suffix=".tmp")
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise UsageError(f"--emit-configs {path}: cannot write in the folder '{folder}': {e.strerror or e}",
                         "give a FILE.py in a folder you can write") from None
    if (path.exists() or path.is_symlink()) and not stat.S_ISREG(path.lstat().st_mode):
        # a pipe would hang the check below; a link or a device is not a module irscope wrote
        raise UsageError(f"--emit-configs {path}: it is there and is not a regular file (a link, a pipe or a "
                         "device), so it is kept", "give the path of a new .py file, or of a module irscope "
                         "wrote before")
    if path.exists() and not is_emitted(path):
        raise UsageError(f"--emit-configs {path}: the file is there and irscope did not write it, so it is "
                         "kept", "give a new name, or move the file away first; a module irscope wrote there "
                         "before is replaced")


def _mismatch_hint(e, space: str) -> str:
    """What to do about a size that breaks a snapshot's specialisation: rank has no --arg, so the way to
    compile the space for that size is a sweep file's `arg.NAME` (docs/sweep.md)."""
    if e.arg is None:
        return ("rank a space compiled for what the workload launches at this size (a sweep file's arg.NAME and "
                "constexprs decide it: docs/sweep.md)")
    if _is_sweep_file(space):
        return (f"rank at a size where {e.arg} keeps the space's assumption, or compile the space for it: add "
                f"`arg.{e.arg}: {e.value}` under `set:` in {space}")
    return (f"rank at a size where {e.arg} keeps the kernel's assumption, or rank a sweep file whose `set:` has "
            f"`arg.{e.arg}: {e.value}` (docs/sweep.md)")


# Configs predicted this close to the best are not told apart by the model: the H200 evaluation's near-ties
# (docs/rank.md: the row softmax's configs within 1-2% of each other) ran in orders the GPU repeats from run
# to run and the model does not predict.
NEAR = 0.01


def _measured_cell(measured, label: str) -> str:
    if measured is None or label not in measured.times:
        return "-"
    ms = measured.times[label]
    return "failed" if ms is None else f"{ms * 1e3:,.1f}"


def _near_best(ranking) -> int:
    """How many launchable configs are predicted within NEAR of the fastest (the fastest among them)."""
    times = [r.estimate.ms for r in ranking if r.estimate.launchable]
    return sum(1 for t in times if t <= times[0] * (1 + NEAR)) if times else 0


def _advice(chip, asked: int, needs: int, why: str = "") -> str:
    """What to try when a warning's cause is priced from model `needs` on: the default model, where the chip
    has that model's calibration and a model before it was asked for; else the chips that have one (a chip
    without it runs an older model whatever is asked); "" where the model asked for prices it already."""
    from ..rank.chips import CHIPS
    if chip.calibration(needs) is None:
        have = [c.name.upper() for c in CHIPS.values() if c.calibration(needs) is not None]
        return f"{chip.product} has no calibration for model {needs}" + \
            (f": only the {' and the '.join(have)} ({CHIPS[have[0].lower()].target}) have one" if have else "")
    return f"try --model {DEFAULT_MODEL} (the default){why}" if asked < needs else ""


def _runs(shown, value) -> list[tuple[int, int]]:
    """(first index, last index) of each run of two or more neighbours in `shown` with equal `value(r)`."""
    runs, i = [], 0
    while i < len(shown):
        j = i
        while j + 1 < len(shown) and value(shown[j + 1]) == value(shown[i]):
            j += 1
        if j > i:
            runs.append((i, j))
        i = j + 1
    return runs


def _tied(ranking, top: int) -> list[tuple[int, int]]:
    """Runs of the shown configs predicted to the same time, other than those predicted alike (_alike: the
    same in everything the model reads); (first place, last place)."""
    shown = [r for r in ranking[:top] if r.estimate.launchable]
    alike = {(a, b) for a, b, _ in _alike(ranking, top)}
    return [(i + 1, j + 1) for i, j in _runs(shown, lambda r: r.estimate.ms) if (i + 1, j + 1) not in alike]


def _alike(ranking, top: int) -> list[tuple[int, int, list[str]]]:
    """Runs of the shown configs predicted to the same time that differ only in constexprs (the same warps and
    stages): (first place, last place, the constexprs that differ). Nothing the model prices changes with
    those (a launch order like GROUP_SIZE_M, which the L2 sees): the model cannot order them."""
    shown = [r for r in ranking[:top] if r.estimate.launchable]  # (launchable configs come first)
    runs = []
    for i, j in _runs(shown, lambda r: r.estimate.key):
        group = [r.facts for r in shown[i:j + 1]]
        if len({(f.num_warps, f.num_stages) for f in group}) == 1:
            keys = sorted({k for f in group for k in f.constexprs})
            differ = [k for k in keys if len({repr(f.constexprs.get(k)) for f in group}) > 1]
            if differ:
                runs.append((i + 1, j + 1, differ))  # (places as the table numbers them)
    return runs


def _score(ranking, measured):
    """The ranking's Evaluation against the measured times, or None when fewer than two configs have both."""
    from ..rank.evaluate import evaluate
    predicted = {r.facts.label: r.estimate.key if r.estimate.launchable else None for r in ranking}
    try:
        return evaluate(predicted, measured.times)
    except ValueError:
        return None


def _print_measured(ui, ranking, m, ev, chip) -> None:
    """Under a ranking: how well it matched the GPU's recorded times at this size."""
    from ..rank.measured import names_chip
    if m is None:
        ui.print("measured: no GPU time of these configs is recorded at this size")
        return
    words = {"snapshot": "runs of the snapshots' own cubins", "jit": "JIT runs"}
    how = " and ".join(f"{n} {words.get(src, src + ' runs')}" for src, n in sorted(m.sources.items()))
    launchable = [r.facts.label for r in ranking if r.estimate.launchable]
    ui.print(f"measured on {m.device}: {m.timed} of {len(ranking)} configs timed at this size (runs.json beside each "
             f"snapshot, from irscope run: {how})")
    if not names_chip(m.device, chip.name):
        ui.print(f"  note: the ranking models the {chip.product} (--gpu {chip.name}), not the GPU these times are from")
    if ev is None:
        ui.print("  fewer than two configs have both a prediction and a time: nothing to score")
    else:
        name = lambda label: label.split("/")[1] if "/" in label else label  # noqa: E731
        place = launchable.index(ev.best) + 1 if ev.best in launchable else "?"
        partial = ev.configs < len(launchable)  # the figures are about the timed configs only
        among = f" (among the {ev.configs} timed of {len(launchable)} launchable: no goal applies)" if partial else \
            " (goal: 0.8 or more, docs/rank.md)"
        ui.print(f"  Spearman {ev.spearman:.3f} between predicted and measured times{among}")
        top1 = "the predicted #1" if ev.predicted_top1 == launchable[0] else \
            f"the first of them in the ranking, {name(ev.predicted_top1)},"
        ui.print(f"  the fastest, {name(ev.best)} ({m.times[ev.best] * 1e3:,.1f} us), is #{place} of the ranking; "
                 f"{top1} runs {ev.top1_slowdown:.1%} slower, the best of the {'first 5 timed' if partial else 'top 5'} "
                 f"{ev.top5_slowdown:.1%}" + ("" if partial else " (goal: within 3%)"))
        if ev.ties_top1 > 1 or ev.ties_top5 > 1:
            # configs predicted to the same time stand in label order: what another order among them gives
            places = [f"{n} the #{k}'s" for n, k in ((ev.ties_top1, 1), (ev.ties_top5, 5)) if n > 1]
            shared = places[0].replace(" the", " share the", 1) + " predicted time" + \
                "".join(f" and {p}" for p in places[1:])
            ui.print(f"  {shared}; at their worst order the #1 runs {ev.top1_slowdown_worst:.1%} slower, the best of "
                     f"the {'first 5 timed' if partial else 'top 5'} {ev.top5_slowdown_worst:.1%}")
    cannot = [r.facts.label for r in ranking if not r.estimate.launchable]
    if cannot:
        failed = sum(1 for label in cannot if label in m.times and m.times[label] is None)
        ran = sum(1 for label in cannot if m.times.get(label) is not None)
        parts = [f"{failed} failed on the GPU"] + ([f"{ran} ran (the model is wrong about those)"] if ran else []) + \
            ([f"{len(cannot) - failed - ran} were not run"] if len(cannot) - failed - ran else [])
        ui.print(f"  {len(cannot)} config(s) the model calls unlaunchable: {', '.join(parts)}")
    surprises = [r.facts.label for r in ranking if r.estimate.launchable and r.facts.label in m.errors]
    for label in surprises[:3]:
        ui.print(f"  failed on the GPU, though predicted to run: {label}: {m.errors[label]}")
    if len(surprises) > 3:
        ui.print(f"  ... and {len(surprises) - 3} more (--json lists them)")


def _config_name(facts, tuned, options=None) -> str:
    """A config as the table names it: its variant folder, or for a captured launch (whose variant ends in
    a hash) its warps, stages, CTAs and register cap where set (`c2`, `r128`, as a menu's names have them)
    and the constexprs and other options its autotune configs set (`w4.s3.BK=64.BV=64`)."""
    variant = facts.label.split("/")[1] if "/" in facts.label else facts.label
    if tuned is None:
        return variant
    values = [f"{k}={facts.constexprs[k]}" for k in sorted(tuned) if k in facts.constexprs]
    extra = dict(options or {})
    fields = ([f"c{extra.pop('num_ctas')}"] if extra.get("num_ctas", 1) != 1 else []) + \
        ([f"r{extra.pop('maxnreg')}"] if extra.get("maxnreg") is not None else [])
    values += [f"{k}={v}" for k, v in sorted(extra.items()) if k not in ("num_ctas", "maxnreg")]
    # (the warps the config asked for: a warp-specialised kernel runs its partitions' warps too)
    return ".".join([f"w{facts.asked_warps}", f"s{facts.num_stages}"] + fields + values) if values or fields \
        else variant


def _size_words(problem) -> str:
    """The size a table is at: its name, and every dimension where the name does not give them all (`--size
    M=512` takes N and K from the default preset: said, not left to guess)."""
    if problem is None:
        return "?"
    name, size = problem.size_name, dict(problem.size or {})
    given = {part.partition("=")[0].strip() for part in name.rpartition(":")[2].split(",") if "=" in part}
    if "=" not in name or set(size) <= given:
        return name
    return f"{name} ({', '.join(f'{k}={v}' for k, v in size.items())})"


def _warn_rereads(ui, reread: dict, size: str, advice: str) -> None:
    """Say that the ranking cannot be trusted where the configs' loops read many times what the launch needs
    (captured.rereads): the model charges each byte once."""
    many = [v for v in reread.values() if v is not None and v >= REREADS_WARN]
    if many:
        low, high = min(many), max(many)
        span = f"{low:,.0f}x" if round(low) == round(high) else f"{low:,.0f}-{high:,.0f}x"
        at = f" at {size}" if size else ""
        ui.warn(f"this ranking{at} is not to be trusted: the loops of {plural(len(many), 'config')} read {span} the "
                f"bytes the launch needs at least (a stencil's or a convolution's taps, by their bounds), and the "
                f"model charges each byte once, so their times are far too short and their order unreliable "
                f"(docs/rank.md, \"A kernel no model was designed on\"); time the space instead" +
                (f", or {advice}" if advice else ""))


def _warn_records(ui, facts: dict, size: str, advice: str) -> None:
    """Say that a model before 21 prices a stream of records (records.record_streams: a few fields of each of
    many records, a sector or more of DRAM for each) at the bytes it uses."""
    streams = {label: f.records for label, f in facts.items() if f.records}
    if streams:
        worst = max((s["sectors"] * 32 / max(1, s["used"]), s["stride"]) for v in streams.values() for s in v)
        at = f" at {size}" if size else ""
        ui.warn(f"this ranking{at} is not to be trusted: {plural(len(streams), 'config')} read a few fields of each of "
                f"many records ({worst[1]} bytes apart, up to {worst[0]:.1f}x the bytes used in 32-byte sectors), "
                f"which this model prices at the bytes used, so their times are too short and their order "
                f"unreliable (docs/rank.md, \"What records cost\"); {advice}")


def _print(ui, name, chip, target, problem, ranking, problems, top, failed, show_measured=False, measured=None,
           scored=None, tuned=None, models=None, options=None) -> None:
    asked, ran = models or (None, None)
    by = f"model {ran}" if asked == ran or asked is None else \
        f"model {ran}: {chip.product} has no calibration for model {asked}, so times are from published peaks; " \
        "compare its configs, not chips"
    ui.print(f"{name} on {chip.product} ({target}) at {_size_words(problem)}: "
             f"{plural(len(ranking), 'config')} ranked by predicted time ({by}; docs/rank.md)")
    rows = []
    for i, r in enumerate(ranking[:top]):
        e = r.estimate
        variant = _config_name(r.facts, tuned, (options or {}).get(r.facts.label))
        if e.launchable:
            p = problems[r.facts.label]
            rate = f"{p.flops / e.ms / 1e9:,.0f} TFLOP/s" if p.flops and p.flops / max(p.min_bytes, 1) > 8 \
                else f"{p.min_bytes / e.ms / 1e6:,.0f} GB/s"
            row = [str(i + 1), variant, f"{e.ms * 1e3:,.1f}", rate, for_chip(e.bound, chip), e.reason]
        else:
            row = [str(i + 1), variant, "-", "-", for_chip(e.bound, chip), e.reason]
        if show_measured:  # --measured: the GPU's time beside the prediction
            row.insert(3, _measured_cell(measured, r.facts.label))
        rows.append(row)
    head = ["#", "config", "us", "rate", "bound", "why"]
    if show_measured:
        head.insert(3, "GPU us")
    ui.print(table(head, rows))
    near = _near_best(ranking)
    if near >= 2:
        ui.print(f"{near} configs (#1-{near}) are predicted within {NEAR:.0%} of the best, closer than the model can "
                 f"order them (docs/rank.md): time them all")
    tied = _tied(ranking, top)
    if tied:
        where = ", ".join(f"#{a}-{b}" if b > a + 1 else f"#{a} and #{b}" for a, b in tied[:4]) + \
            (f" and {len(tied) - 4} more" if len(tied) > 4 else "")
        ui.print(f"{where} are predicted to the same time" + (
            f": model {ran} orders them by how hard their other demands crowd the bound (docs/rank.md, \"Ties, "
            f"and model 22\")" if ran is not None and ran >= 22 else
            ": they stand in label order" + (" (--model 22 orders them; docs/rank.md, \"Ties, and model 22\")"
                                              if chip.calibration(22) is not None else "")))
    alike = _alike(ranking, top)
    if alike:
        names = sorted({k for *_, differ in alike for k in differ})
        where = ", ".join(f"#{a}-{b}" if b > a + 1 else f"#{a} and #{b}" for a, b, _ in alike[:4]) + \
            (f" and {len(alike) - 4} more" if len(alike) > 4 else "")
        ui.print(f"{where} are predicted alike: they differ only in {', '.join(names)}, which changes nothing the "
                 f"model prices (a launch order's reuse in L2 is not modelled): time each")
    cannot = sum(1 for r in ranking if not r.estimate.launchable)
    if cannot:
        ui.print(f"{cannot} config(s) cannot launch on {target} (listed last with --json)")
    if failed:
        named = "; ".join(f"{r.label.split('/')[1] if r.label.count('/') == 2 else r.label}: {r.status}"
                          + (f" {r.reason}" if r.reason and r.reason != str(r.status) else "") for r in failed[:3])
        more = f"; and {len(failed) - 3} more (--json lists them)" if len(failed) > 3 else ""
        ui.print(f"{len(failed)} config(s) did not compile and are not ranked: {named}{more}")
    if show_measured:
        _print_measured(ui, ranking, measured, scored, chip)
    ui.print()
