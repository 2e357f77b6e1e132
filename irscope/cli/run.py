"""`irscope run KERNEL... --interpret`: run kernels on fresh random inputs and check them against torch.

With --interpret the check runs on the CPU through Triton's interpreter (what CI does): inputs are
built from a seed, outputs poisoned with NaN, the kernel launched, every output compared with the
workload's torch reference to its dtype's tolerance. Exit status 1 when any output is off.
"""
from __future__ import annotations

import argparse

from ..errors import EnvironmentProblem, ExitCode


def add_parser(sub) -> None:
    p = sub.add_parser("run", help="run kernels and check them against their torch reference",
                       description="Build fresh random inputs, poison the outputs with NaN, launch the kernel and "
                                   "compare every output with its torch reference (max abs and relative error, "
                                   "tolerances per dtype). --interpret runs it on the CPU through Triton's "
                                   "interpreter.")
    p.add_argument("kernels", nargs="+", metavar="KERNEL",
                   help="a built-in kernel (`irscope kernels` lists them) or FILE.py:NAME with a workload")
    p.add_argument("--config", metavar="NAME", help="a named config from the kernel's menu (default: its first)")
    p.add_argument("--size", metavar="NAME|K=V,...",
                   help="a size preset (small, ragged, bench...) or dimensions over the first preset: n=1000, "
                        "or PRESET:K=V (default with --interpret: every preset the workload checks in CI)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random inputs (default: 0)")
    p.add_argument("--interpret", action="store_true",
                   help="run on the CPU through Triton's interpreter (TRITON_INTERPRET=1, in a fresh process)")
    p.add_argument("--timeout", type=float, default=900.0, metavar="SECONDS",
                   help="give up on the interpreter after this long (default: 900)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace, ui) -> int:
    from .. import library, runner

    specs = [library.load_kernel(k) for k in args.kernels]
    requests = []
    for ref, spec in zip(args.kernels, specs):
        workload = runner.workload_of(spec)
        spec.config(args.config)  # a typo fails here, before any process starts
        sizes = [args.size] if args.size else list(workload.check_sizes if args.interpret else [workload.bench_size])
        for size in sizes:
            workload.parse_size(size, workload.check_sizes[0])
            requests.append(runner.Request(ref, args.config, size, args.seed))

    if not args.interpret:
        if not runner.gpu_available():
            raise EnvironmentProblem("there is no CUDA GPU here to run on",
                                     "pass --interpret to check the kernel on the CPU through Triton's interpreter")
        # The GPU path (launch through the JIT, time with do_bench, baselines, --snapshot) is issue 7's.
        raise EnvironmentProblem("this irscope cannot run kernels on the GPU yet, only check them in the interpreter",
                                 "pass --interpret")

    ui.err.write(f"irscope: checking {len(requests)} run(s) in Triton's interpreter on the CPU...\n")
    results = runner.check_many_interpreted(requests, timeout=args.timeout)
    for result in results:
        report(ui, result)
    failed = [r for r in results if not r.ok]
    if len(results) > 1:
        ui.print(f"{len(results) - len(failed)} passed, {len(failed)} failed")
    return int(ExitCode.FAILED) if failed else 0


def report(ui, r) -> None:
    """One run's result: a header, the launches, a line per output, then PASS or FAIL."""
    s = ui.style
    dims = ", ".join(f"{k}={v}" for k, v in r.size.items())
    versions = ", ".join(f"{k} {v}" for k, v in r.versions.items())
    where = "Triton interpreter on the CPU" if r.mode == "interpret" else r.device
    ui.print(f"{s(r.kernel, 'bold')}  config {r.config}  size {r.size_name}" + (f" ({dims})" if dims and dims !=
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
    ui.print(f"{status}  {r.kernel} {r.config} {r.size_name}  ({r.seconds:.2f} s)")
