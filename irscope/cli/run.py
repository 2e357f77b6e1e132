"""`irscope run KERNEL...`: run kernels on fresh random inputs, check them against torch, and time them.

Every run builds inputs from a seed, poisons the outputs with NaN, launches the kernel and compares
every output with the workload's torch reference to its dtype's tolerance (exit 1 when any is off).
On a CUDA GPU it then times the kernel and the torch baselines with do_bench, interleaved and repeated,
against the copy bandwidth and library matmul rate measured in the same run (`--check` skips timing).
`--snapshot DIR` launches that snapshot's cubin instead of the JIT's compile (the kernel's Python comes from
the built-in library or a FILE.py:NAME the user gives, never from a path the snapshot records). `--interpret`
runs the check on the CPU through Triton's interpreter (what CI does). `--profile` also runs each checked
run under Triton's Proton profiler (irscope.gpu.profile) and records its figures beside do_bench's.
"""
from __future__ import annotations

import argparse

from ..errors import EnvironmentProblem, ExitCode, IrscopeError, UsageError
from .options import positive_int, positive_seconds


def add_parser(sub) -> None:
    p = sub.add_parser("run", help="run kernels and check them against their torch reference",
                       description="Build fresh random inputs, poison the outputs with NaN, launch the kernel and "
                                   "compare every output with its torch reference (max abs and relative error, "
                                   "tolerances per dtype). --interpret runs it on the CPU through Triton's "
                                   "interpreter.")
    p.add_argument("kernels", nargs="*", metavar="KERNEL",
                   help="a built-in kernel (`irscope kernels` lists them) or FILE.py:NAME with a workload")
    p.add_argument("--config", metavar="NAME", action="append",
                   help="a named config from the kernel's menu (default: its first; repeatable); on a GPU, `all` "
                        "checks and times every config of the menu, as an autotuner would")
    p.add_argument("--size", metavar="NAME|K=V,...", action="append",
                   help="a size preset (small, ragged, bench...) or dimensions over the first preset: n=1000, "
                        "or PRESET:K=V (repeatable; default: the workload's CI presets with --interpret, its "
                        "benchmark size on a GPU)")
    p.add_argument("--snapshot", metavar="DIR", action="append", default=[],
                   help="launch this snapshot's cubin (made anywhere, by any Triton) instead of compiling "
                        "through the JIT, with the same checks (repeatable). Its Python signature comes from the "
                        "built-in kernel of the snapshot's name, or from a FILE.py:NAME you also give (which then "
                        "runs through the JIT too): the source file a snapshot records is never imported")
    p.add_argument("--check", action="store_true", help="on a GPU: check the results, skip the timing")
    p.add_argument("--profile", action="store_true",
                   help="on a GPU: also run each checked run under Triton's Proton profiler, in a scope carrying "
                        "its flops and bytes, and record Proton's kernel time, TFLOP/s and GB/s beside do_bench's")
    p.add_argument("--profile-dir", metavar="DIR",
                   help="where Proton's output files go, one .hatchet a run (default: ./irscope-proton)")
    p.add_argument("--repeats", type=positive_int, default=3, metavar="N",
                   help="timed runs of each candidate, interleaved (default: 3; each a do_bench median)")
    p.add_argument("--out", metavar="DIR", help="where to look for the snapshot to record GPU results in "
                                                "(default: $IRSCOPE_OUT or ./irscope-snapshots)")
    p.add_argument("--json", metavar="FILE", help="also write every result as JSON to FILE")
    p.add_argument("--seed", type=_seed, default=0, help="seed of the random inputs (default: 0)")
    p.add_argument("--interpret", action="store_true",
                   help="run on the CPU through Triton's interpreter (TRITON_INTERPRET=1, in a fresh process)")
    p.add_argument("--timeout", type=positive_seconds, default=900.0, metavar="SECONDS",
                   help="give up on the interpreter after this long (default: 900)")
    p.set_defaults(run=run)


PROFILE_DIR = "irscope-proton"  # --profile-dir's default


def _seed(text: str) -> int:
    """A seed torch's generator takes (-2^63 to 2^64-1): a larger one was a FAIL of the kernel, exit 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"takes an integer, not {text!r}") from None
    if not -(1 << 63) <= value < 1 << 64:
        raise argparse.ArgumentTypeError(f"takes an integer from -2^63 to 2^64-1, not {text}")
    return value


def run(args: argparse.Namespace, ui) -> int:
    from ..spec import library
    from ..gpu import runner, session
    from ..store.snapshot import load_snapshot

    if not args.kernels and not args.snapshot:
        raise UsageError("nothing to run", "name a KERNEL, or a snapshot folder with --snapshot DIR")
    check_json_path(args.json)
    if args.snapshot and args.interpret:
        raise UsageError("--snapshot launches a snapshot's compiled cubin, which needs a CUDA GPU; the interpreter "
                         "runs the Python kernel instead", _cpu_hint(args.snapshot))
    if args.profile and args.interpret:
        raise UsageError("--profile runs the kernel under Proton, which records a GPU's kernels; the interpreter "
                         "runs on the CPU", "drop --interpret, and run with --profile on a machine with a CUDA GPU")
    if args.profile_dir is not None and not args.profile:
        raise UsageError("--profile-dir says where --profile's Proton files go, and --profile is not given",
                         "add --profile, or drop --profile-dir")
    if args.profile:  # before anything runs: a folder that cannot be made lost the profiles of every run
        from pathlib import Path
        args.profile_dir = args.profile_dir or PROFILE_DIR
        where = Path(args.profile_dir)
        above = next((q for q in [where, *where.parents] if q.exists() and not q.is_dir()), None)
        if above is not None:
            raise UsageError(f"--profile-dir {args.profile_dir}: '{above}' is a file, not a folder",
                             "give --profile-dir a folder (it is made if missing)")
    # a missing or damaged folder is said before whether this machine can run it
    snapshots = [load_snapshot(folder) for folder in args.snapshot]
    specs = [library.load_kernel(k) for k in args.kernels]
    configs = args.config or [None]
    for ref, spec in zip(args.kernels, specs):
        workload = runner.workload_of(spec)
        for config in configs:
            if config != "all":
                spec.config(config)  # a typo fails here, before any process starts
        for size in args.size or []:
            workload.parse_size(size, workload.check_sizes[0])
    if args.snapshot and not args.kernels and args.config:
        raise UsageError("--config picks configs of the KERNELs you name; a snapshot's cubin runs with the config "
                         "it was compiled with", "drop --config, or name the kernel too: irscope run KERNEL --config "
                         f"{args.config[0]} --snapshot DIR")
    for snap in snapshots:  # its cubin, its kernel and the sizes it launches at, before whether a GPU is here
        session.check_cubin(snap)
        workload = runner.workload_of(session.snapshot_kernel(snap, args.kernels, specs)[1])
        for size in args.size or []:
            workload.parse_size(size, workload.check_sizes[0])

    if args.interpret:
        if "all" in configs:
            raise UsageError("--config all times every config, which needs a GPU", "name configs, or none")
        gluon = [ref for ref, spec in zip(args.kernels, specs) if getattr(spec.fn, "is_gluon", lambda: False)()]
        if gluon:
            raise UsageError(f"Triton's interpreter does not run Gluon kernels, and {gluon[0]} is one",
                             f"run it on a GPU (irscope run {gluon[0]}), or read its compile without one "
                             f"(irscope compile {gluon[0]} --target sm_90a)")
        requests = [runner.Request(ref, config, size, args.seed) for ref, spec in zip(args.kernels, specs)
                    for config in configs for size in (args.size or runner.workload_of(spec).check_sizes)]
        ui.err.write(f"irscope: checking {len(requests)} run(s) in Triton's interpreter on the CPU...\n")
        results = runner.check_many_interpreted(requests, timeout=args.timeout)
        for result in results:
            report(ui, result)
        _write_json(args.json, [r.as_dict() for r in results])
        failed = [r for r in results if not r.ok]
        if len(results) > 1:
            ui.print(f"{len(results) - len(failed)} passed, {len(failed)} failed")
        return int(ExitCode.FAILED) if failed else 0

    refuse_interpreter_env("irscope run")
    if not runner.gpu_available():
        if args.snapshot:
            raise EnvironmentProblem("there is no CUDA GPU here to launch the snapshot's cubin on",
                                     _cpu_hint(args.snapshot))
        if args.profile:
            raise EnvironmentProblem("there is no CUDA GPU here for Proton to profile",
                                     "run --profile on a machine with a CUDA GPU; here, check the kernel with "
                                     "--interpret, without --profile")
        raise EnvironmentProblem("there is no CUDA GPU here to run on",
                                 "pass --interpret to check the kernel on the CPU through Triton's interpreter")
    if args.profile:
        from ..harness import proton
        proton.proton()  # a Triton without Proton stops here, before any run
    return _run_on_gpu(args, ui, specs)


def _run_on_gpu(args, ui, specs) -> int:
    """Check each run, time the ones that are right, record the results beside their snapshots."""
    from pathlib import Path

    from ..gpu import bench, session
    from ..harness import runtime
    from ..store.roots import default_out

    target = runtime.current_target()
    ceilings = None if args.check and not args.profile else bench.measure_ceilings()
    if ceilings:
        ui.print(f"{ui.style(ceilings.device, 'bold')} (cc {ceilings.capability}, driver {ceilings.driver}): copy "
                 f"{ceilings.copy_gbps / 1e3:.2f} TB/s, fp16 matmul {ceilings.matmul_tflops:.0f} TFLOP/s (torch, "
                 f"{bench.MATMUL_N}^3)")
    out = Path(args.out) if args.out else default_out()
    jobs = session.plan_jobs(args.snapshot, args.kernels, specs, args.config, args.size, args.seed, out, target)
    payload, unrecorded = [], []
    try:
        _run_jobs(args, ui, jobs, ceilings, target, payload, unrecorded)
    except BaseException:  # a run that stops midway (a size a snapshot refuses, Ctrl-C) keeps the runs it made
        if payload:
            try:
                _write_json(args.json, payload)
            except IrscopeError:  # what stopped the runs is the error to report
                pass
        raise
    _write_json(args.json, payload)
    if unrecorded:  # said last, after every run and --json: an unwritable runs.json loses no other result
        raise unrecorded[0]
    return int(ExitCode.FAILED) if any(not r["ok"] or "error" in (r.get("profile") or {}) for r in payload) else 0


def _run_jobs(args, ui, jobs, ceilings, target, payload: list, unrecorded: list) -> None:
    """Run each job in turn, appending its record to `payload` and its snapshot's runs.json (a record that
    cannot be written goes to `unrecorded`, and the runs go on)."""
    from pathlib import Path

    from ..gpu import profile, runner, session
    from ..spec import library
    from ..store import results

    taken: set[str] = set()  # Proton file names given out in this command
    for job in jobs:
        prepared = runner.prepare(job.request, "cuda", default_size=runner.workload_of(
            library.load_kernel(job.request.kernel)).bench_size)
        result = runner.check(prepared, job.run)
        report(ui, result, job.snapshot.label if job.source == "snapshot" else None)
        record = {"source": job.source, "gpu": session.gpu_record(ceilings, target), **result.as_dict()}
        if job.snapshot is not None:  # which config of a space this is, for --json (irscope rank --measured)
            record["label"] = job.snapshot.label
        timed = None
        if result.ok and not args.check:
            timed = session.time_prepared(prepared, job.run, args.repeats, ceilings)
            _report_bench(ui, timed)
            record["bench"] = timed.as_dict()
        if result.ok and args.profile:
            try:
                prof = profile.profile_prepared(prepared, job.run, folder=Path(args.profile_dir),
                                                source=job.source, ceilings=ceilings,
                                                ms=timed.kernel.ms if timed else None, taken=taken)
            except IrscopeError as e:  # the do_bench figures above still count; the run is not profiled
                ui.print(ui.style(f"  proton  not profiled: {e.message}", "red"))
                record["profile"] = {"error": e.message}
            else:
                _report_profile(ui, prof)
                record["profile"] = prof.as_dict()
        if not result.ok:
            ui.print(ui.style("  not timed: its results are wrong", "red"))
        payload.append(record)
        try:
            where = session.record(job.snapshot, results.RUNS_FILE, record)
        except IrscopeError as e:
            unrecorded.append(e)
            ui.print(ui.style(f"  not recorded: {e.message}", "red"))
        else:
            if where is not None:
                ui.print(f"  recorded in {where}")
            elif session.not_recorded_because(job.snapshot):
                ui.print(f"  not recorded: {session.not_recorded_because(job.snapshot)}")


def check_json_path(path: str | None) -> None:
    """Refuse a --json FILE that cannot be written, before anything runs (it was exit 70 once the GPU's
    work was done)."""
    if path:
        from pathlib import Path
        where = Path(path)
        above = next((q for q in where.parents if q.exists() and not q.is_dir()), None)
        if above is not None or where.is_dir() or not where.parent.exists():
            why = (f"'{above}' is a file, not a folder" if above is not None else
                   "it is a folder" if where.is_dir() else f"folder '{where.parent}' does not exist")
            raise UsageError(f"--json {path}: {why}", "give --json a file in a folder that exists")


def refuse_interpreter_env(command: str) -> None:
    """TRITON_INTERPRET set in the environment turns Triton's JIT into its CPU interpreter in this process:
    a GPU run would time the interpreter and record it as the GPU's, and verify would have no JIT compile."""
    from ..harness import runtime
    if runtime.interpreting():
        import os
        raise EnvironmentProblem(
            f"TRITON_INTERPRET={os.environ.get('TRITON_INTERPRET', '')} is set, so Triton would interpret the kernels "
            f"on the CPU instead of compiling them for the GPU ({command} needs the GPU's compile)",
            "unset TRITON_INTERPRET" + (", or pass --interpret to check the kernel on the CPU"
                                        if command == "irscope run" else ""))


def _cpu_hint(snapshots) -> str:
    """What does work without a GPU: checking the snapshot's kernel (not its cubin) in the interpreter."""
    from ..errors import IrscopeError
    from ..store.snapshot import load_snapshot
    from ..spec.library import builtin_name

    kernel = "KERNEL"
    try:
        snap = load_snapshot(snapshots[0])
        kernel = snap.kernel if builtin_name(snap.kernel) else f"FILE.py:{snap.fn_name}"
    except IrscopeError:
        pass
    return (f"on the CPU, check the kernel itself without --snapshot: irscope run {kernel} --interpret; "
            "run --snapshot on a machine with a CUDA GPU")


def _write_json(path: str | None, payload) -> None:
    """Write --json FILE; one the file system refuses after the runs (a full disk) is an error naming it, not
    an internal error."""
    if path:
        import json

        from ..errors import OutputUnwritable
        from ..store.output import write_output
        try:
            write_output(path, json.dumps(payload, indent=1, default=str) + "\n")
        except OSError as e:
            raise OutputUnwritable(f"cannot write --json {path}: {e.strerror or e}",
                                   "the results are in the output above; give --json a file on a disk with room "
                                   "that you may write") from None


def report(ui, r, snapshot: str | None = None) -> None:
    """One run's result: a header, the launches, a line per output, then PASS or FAIL. A snapshot's run is
    named by its label (a sweep point's variant says what it ran; its menu config does not)."""
    s = ui.style
    dims = ", ".join(f"{k}={v}" for k, v in r.size.items())
    versions = ", ".join(f"{k} {v}" for k, v in r.versions.items())
    where = "Triton interpreter on the CPU" if r.mode == "interpret" else r.device
    what = f"snapshot {snapshot}" if snapshot else f"config {r.config}"
    ui.print(f"{s(r.kernel, 'bold')}  {what}  size {r.size_name}" + (f" ({dims})" if dims and dims !=
             r.size_name else "") + f"  seed {r.seed}  [{where}; {versions}]")
    for launch in r.launches:
        ui.print(f"  launch  {launch}")
    width = max([len(o.name) for o in r.outputs] + [6])
    for o in r.outputs:
        verdict = s("ok", "green") if o.ok else s("FAIL", "red", "bold")
        line = (f"  {o.name:<{width}}  {o.dtype} {tuple(o.shape)}  max abs {o.max_abs:.3g}  rel {o.max_rel:.3g}  "
                f"(atol {o.atol:g}, rtol {o.rtol:g})  {verdict}")
        ui.print(line)
        if not o.ok:
            total = 1
            for d in o.shape:
                total *= d
            ui.print(f"  {'':<{width}}  {o.mismatches} of {total} elements outside tolerance ({o.nans} NaN: never "
                     f"written); worst at {o.worst_index}: got {o.worst_got:.6g}, want {o.worst_want:.6g}")
    if r.error:
        ui.print(f"  {s('error', 'red')}  {r.error}")
    status = s("PASS", "green", "bold") if r.ok else s("FAIL", "red", "bold")
    ui.print(f"{status}  {snapshot or f'{r.kernel} {r.config}'} {r.size_name}  ({r.seconds:.2f} s)")


def _report_profile(ui, p) -> None:
    """Proton's figures of a run, under do_bench's: time per iteration, rates, fractions, its kernels."""
    rate = [f"{p.tflops:.1f} TFLOP/s" if p.tflops else "", f"{p.gbps:.0f} GB/s" if p.gbps else ""]
    fr = [f"{p.copy_fraction:.0%} of copy bandwidth" if p.copy_fraction is not None else "",
          f"{p.matmul_fraction:.0%} of the library matmul rate" if p.matmul_fraction is not None and p.tflops
          and p.tflops > 1 else ""]
    fr = [f for f in fr if f]
    kernels = ", ".join(f"{k.name} x{k.calls} ({k.mean_ms:.4f} ms)" for k in p.kernels)
    ui.print(f"  proton  {p.ms:.4f} ms  " + "  ".join(r for r in rate if r) + (f"  ({', '.join(fr)})" if fr else "")
             + f"  [{p.iterations} iterations, L2 flushed: {kernels}]")
    ui.print(f"          {p.file}")


def _report_bench(ui, b) -> None:
    k = b.kernel
    rate = []
    if k.tflops:
        rate.append(f"{k.tflops:.1f} TFLOP/s")
    if k.gbps:
        rate.append(f"{k.gbps:.0f} GB/s")
    fr = []
    if b.copy_fraction is not None:
        fr.append(f"{b.copy_fraction:.0%} of copy bandwidth")
    if b.matmul_fraction is not None and k.tflops and k.tflops > 1:
        fr.append(f"{b.matmul_fraction:.0%} of the library matmul rate")
    ui.print(f"  time    {k.ms:.4f} ms  " + "  ".join(rate) + (f"  ({', '.join(fr)})" if fr else "") +
             f"  [median of {b.repeats} do_bench runs: {', '.join(f'{v:.4f}' for v in k.samples)}]")
    for base in b.baselines:
        ui.print(f"  vs {base.name:<22} {base.ms:.4f} ms  -> kernel is {b.speedup(base):.2f}x")
