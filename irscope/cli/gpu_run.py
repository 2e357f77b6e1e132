"""The GPU half of `irscope run`: check each config, time the ones that are right, record the results."""
from __future__ import annotations

import re
from pathlib import Path

from ..errors import ExitCode, SnapshotError


def run_on_gpu(args, ui, specs) -> int:
    from .. import bench, device, library, results, runner
    from ..pipeline import default_out
    from ..replay import snapshot_runner
    from ..spec import CompileOptions, variant_name
    from ..store import load_snapshot, snapshot_dir
    from ..workload import jit_launch
    from .run import _write_json, report

    target = device.current_target()
    ceilings = None if args.check else bench.measure_ceilings()
    if ceilings:
        ui.print(f"{ui.style(ceilings.device, 'bold')} (cc {ceilings.capability}, driver {ceilings.driver}): copy "
                 f"{ceilings.copy_gbps / 1e3:.2f} TB/s, fp16 matmul {ceilings.matmul_tflops:.0f} TFLOP/s (torch, "
                 f"{bench.MATMUL_N}^3)")
    jobs = []  # (request, run callable, source, snapshot to record into or None)
    for snap_dir in args.snapshot:
        snap = load_snapshot(snap_dir)
        if "cubin" in snap.damaged_stages():  # Triton loads the cubin by path: check its bytes first
            raise SnapshotError(f"{snap.stage_files['cubin']} does not match the sha256 irscope.json records",
                                "the cubin changed after the compile; recompile the snapshot")
        ref, spec = snapshot_kernel(snap, args.kernels, specs)
        config = (snap.meta.get("request") or {}).get("config")
        for size in args.size or [None]:
            jobs.append((runner.Request(ref, config, size, args.seed),
                         snapshot_runner(snap, spec, jit_launch), "snapshot", snap))
    out = Path(args.out) if args.out else default_out()
    for ref, spec in zip(args.kernels, specs):
        configs = [c.name for c in spec.configs] if args.config == "all" else [args.config]
        for config in configs:
            folder = snapshot_dir(out, spec.name, variant_name(spec, CompileOptions(config=config)), target.name)
            snap = load_snapshot(folder) if (folder / "irscope.json").is_file() else None
            for size in args.size or [None]:
                jobs.append((runner.Request(ref, config, size, args.seed), jit_launch, "jit", snap))

    payload, failed = [], 0
    for request, run, source, snap in jobs:
        prepared = runner.prepare(request, "cuda", default_size=runner.workload_of(
            library.load_kernel(request.kernel)).bench_size)
        result = runner.check(prepared, run)
        report(ui, result)
        record = {"source": source, "gpu": _gpu(ceilings, target), **result.as_dict()}
        if result.ok and not args.check:
            timed = _time(prepared, run, args.repeats, ceilings)
            _report_bench(ui, timed)
            record["bench"] = timed.as_dict()
        elif not result.ok:
            failed += 1
            ui.print(ui.style("  not timed: its results are wrong", "red"))
        if snap is not None:
            where = results.append(snap.path, results.RUNS_FILE, record)
            ui.print(f"  recorded in {where}")
        payload.append(record)
    _write_json(args.json, payload)
    return int(ExitCode.FAILED) if failed else 0


def snapshot_kernel(snap, refs, specs) -> tuple[str, object]:
    """(ref, KernelSpec) whose Python signature launches a snapshot's cubin: a kernel the user named on the
    command line with the snapshot's function, else the built-in kernel of the snapshot's name.

    A snapshot folder is untrusted: the `source_file` (or a path-like `kernel`) it records is never
    imported, since importing a file runs it.
    """
    from .. import library
    from ..errors import UsageError

    for ref, spec in zip(refs, specs):
        if spec.fn_name == snap.fn_name:
            return ref, spec
    hint = (f"name the kernel's file yourself, as in the compile: irscope run FILE.py:{snap.fn_name} "
            f"--snapshot {snap.path}")
    if not builtin_name(snap.kernel):
        raise UsageError(f"{snap.path} holds kernel '{snap.kernel}', which is not a built-in; irscope never "
                         "imports the source file a snapshot records", hint)
    try:
        spec = library.load_kernel(snap.kernel)
    except UsageError:
        raise UsageError(f"{snap.path} holds kernel '{snap.kernel}', which is not a built-in; irscope never "
                         "imports the source file a snapshot records", hint) from None
    if spec.fn_name != snap.fn_name:
        raise UsageError(f"{snap.path} holds function '{snap.fn_name}', but the built-in kernel '{snap.kernel}' is "
                         f"'{spec.fn_name}'", hint)
    return spec.name, spec


def builtin_name(name: str) -> bool:
    """Whether `name` can only mean a built-in kernel (`matmul`, `blur.row`), never a file to import."""
    return re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*", name) is not None \
        and not name.endswith(".py")


def _gpu(ceilings, target) -> dict:
    if ceilings is None:
        import torch
        return {"device": torch.cuda.get_device_name(), "target": target.name}
    return {"device": ceilings.device, "capability": ceilings.capability, "driver": ceilings.driver,
            "target": target.name, "copy_gbps": ceilings.copy_gbps, "matmul_tflops": ceilings.matmul_tflops}


def _time(prepared, run, repeats, ceilings):
    from .. import bench

    def kernel() -> None:
        for call in prepared.calls:
            run(call)

    # Baselines see the inputs as the check left them, and may write into the output tensors.
    tensors = {**prepared.x, **prepared.inputs}
    baselines = {name: make(tensors, prepared.size) for name, make in prepared.workload.baselines.items()}
    w = prepared.workload
    return bench.bench(kernel, baselines, w.flops(prepared.size), w.bytes(prepared.size), repeats=repeats,
                       ceilings=ceilings)


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
