"""`irscope verify KERNEL...`: on a GPU, the JIT's compile next to irscope's device-less compile."""
from __future__ import annotations

from ..errors import ExitCode, IrscopeError


def add_parser(sub) -> None:
    p = sub.add_parser("verify", help="on a GPU: check that the device-less compile equals the JIT's, stage by stage",
                       description="Compile each kernel through Triton's JIT on this GPU (from a real launch of its "
                                   "workload) and device-less with the same GPUTarget and specialisation, line info "
                                   "off, and report per stage whether they are byte-identical.")
    p.add_argument("kernels", nargs="+", metavar="KERNEL", help="built-in kernels or FILE.py:NAME with a workload")
    p.add_argument("--config", metavar="NAME", help="a named config (default: the first)")
    p.add_argument("--size", metavar="NAME|K=V,...", help="the launch's size (default: the benchmark size)")
    p.add_argument("--out", metavar="DIR", help="record the verdicts in the matching snapshots under DIR "
                                                "(default: $IRSCOPE_OUT or ./irscope-snapshots)")
    p.add_argument("--json", metavar="FILE", help="also write the verdicts as JSON to FILE")
    p.set_defaults(run=run)


def run(args, ui) -> int:
    from pathlib import Path

    from ..harness import runtime as device
    from ..spec import library
    from ..store import results
    from ..gpu import runner, session
    from ..errors import EnvironmentProblem
    from ..store.roots import default_out
    from ..spec.kernel import CompileOptions, variant_name
    from ..gpu.verify import verify
    from .run import _write_json, check_json_path, refuse_interpreter_env

    # Bad input first, as `irscope run` does: a typo found on the GPU machine after the compiles loses them.
    check_json_path(args.json)
    specs = [library.load_kernel(ref) for ref in args.kernels]
    for spec in specs:
        spec.config(args.config)
        workload = runner.workload_of(spec)
        if args.size:
            workload.parse_size(args.size, workload.bench_size)
    refuse_interpreter_env("irscope verify")
    if not runner.gpu_available():
        raise EnvironmentProblem("there is no CUDA GPU here", "irscope verify compares against the GPU's own JIT; "
                                 "run it on a machine with an NVIDIA GPU")
    target = device.current_target()
    out = Path(args.out) if args.out else default_out()
    s = ui.style
    snaps = [session.recorded_snapshot(out, spec.name, variant_name(spec, CompileOptions(config=args.config)),
                                       target.name) for spec in specs]
    for snap in snaps:  # a verify.json no verdict can be appended to is said before the compiles
        session.readable_records(snap, results.VERIFY_FILE)
    payload, differ, unrecorded = [], 0, []
    for ref, snap in zip(args.kernels, snaps):
        v = verify(runner.Request(ref, args.config, args.size))
        ui.print(f"{s(v.kernel, 'bold')}  config {v.config}  size {v.size_name}  {v.target}  "
                 f"[{', '.join(f'{k} {x}' for k, x in (v.versions or {}).items() if k in ('triton', 'ptxas'))}]")
        for st in v.stages:
            verdict = s("identical", "green") if st.identical else s("DIFFERENT", "red", "bold")
            ui.print(f"  {st.stage:<6} {verdict}  jit {st.jit_bytes:,} B, device-less {st.deviceless_bytes:,} B"
                     + (f"\n         first difference: {st.first_difference}" if st.first_difference else ""))
        differ += not v.identical
        payload.append(v.as_dict())
        try:
            where = session.record(snap, results.VERIFY_FILE, v.as_dict())
        except IrscopeError as e:  # the other kernels are still verified, and --json still written
            unrecorded.append(e)
            ui.print(s(f"  not recorded: {e.message}", "red"))
        else:
            if where is not None:
                ui.print(f"  recorded in {where}")
            elif session.not_recorded_because(snap):
                ui.print(f"  not recorded: {session.not_recorded_because(snap)}")
    _write_json(args.json, payload)
    if unrecorded:
        raise unrecorded[0]
    return int(ExitCode.FAILED) if differ else 0
