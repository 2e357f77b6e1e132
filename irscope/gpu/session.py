"""A GPU run of `irscope run`: which runs to make (JIT launches of configs, snapshots' cubins), the kernel
a snapshot's cubin launches with, timing a checked run, and where each result is recorded.

The CLI and any other presenter (the TUI, the pytest plugin) share these rules; they only report.
torch and Triton are imported inside functions.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from ..errors import SnapshotError


@dataclass(frozen=True)
class Job:
    """One run to make: what to run, how to launch it, and the snapshot its result is recorded in."""

    request: Any  # gpu.runner.Request
    run: Callable  # launches one KernelCall: the JIT, or a snapshot's cubin
    source: str  # "jit" or "snapshot"
    snapshot: Any = None  # store.Snapshot to record the result in, or None


def plan_jobs(snapshots: Sequence[str], refs: Sequence[str], specs: Sequence, config,
              sizes: Sequence[str] | None, seed: int, out: Path, target) -> list[Job]:
    """Every run of one `irscope run` on this GPU: each snapshot's cubin at each size, then each kernel's
    config(s) through the JIT, recorded in the matching snapshot under `out` when there is one."""
    from ..harness.runtime import jit_launch
    from ..spec.kernel import CompileOptions, variant_name
    from ..store.results import RUNS_FILE
    from ..store.snapshot import load_snapshot
    from . import runner
    from .replay import snapshot_runner

    jobs = []
    for snap_dir in snapshots:
        snap = load_snapshot(snap_dir)
        check_cubin(snap)
        if target is not None and snap.target_name != target.name:
            # A cubin holds one architecture's machine code: launched anyway, it failed as the kernel's FAIL.
            raise SnapshotError(f"{snap.path} was compiled for {snap.target_name}, and this GPU is {target.name}: "
                                "its binary cannot run here",
                                f"compile it for this GPU (irscope compile {snap.kernel} --target {target.name}) "
                                "and run that snapshot")
        ref, spec = snapshot_kernel(snap, refs, specs)
        snap_config = (snap.meta.get("request") or {}).get("config")
        # the cubin's own constexprs: a sweep point (BLOCK_SIZE=256) launches with its grid, not its config's
        own = {e["name"]: e.get("value") for e in snap.meta.get("specialisation") or ()
               if e.get("kind") == "constexpr" and e.get("name") in spec.fn.arg_names}
        odd = next((k for k, v in own.items() if not isinstance(v, (int, float, str, bool, type(None)))), None)
        if odd is not None:  # untrusted: a launch's grid is computed from these values
            raise SnapshotError(f"{snap.path}: irscope.json records constexpr {odd} as {type(own[odd]).__name__}, "
                                "not a value a launch can take", "the snapshot is damaged; recompile it")
        readable_records(snap, RUNS_FILE)
        for size in sizes or [None]:
            jobs.append(Job(runner.Request(ref, snap_config, size, seed, own or None),
                            snapshot_runner(snap, spec, jit_launch), "snapshot", snap))
    for ref, spec in zip(refs, specs):
        wanted = list(config) if isinstance(config, (list, tuple)) else [config]  # `--config` is repeatable
        configs = [c.name for c in spec.configs] if "all" in wanted else wanted
        for name in configs:
            snap = recorded_snapshot(out, spec.name, variant_name(spec, CompileOptions(config=name)), target.name)
            readable_records(snap, RUNS_FILE)
            for size in sizes or [None]:
                jobs.append(Job(runner.Request(ref, name, size, seed), jit_launch, "jit", snap))
    return jobs


def check_cubin(snap) -> None:
    """Raise SnapshotError unless `snap` holds a cubin whose bytes are the ones irscope.json records: said
    before whether this machine has a GPU, so a snapshot no GPU can run is not carried to one to find out."""
    if "cubin" not in snap.stage_files:
        amd, failed = snap.target_name.startswith("gfx"), not snap.ok
        why = (f"it was compiled for {snap.target_name}, an AMD target (its binary is an hsaco)" if amd else
               f"its compile {snap.meta.get('status')} before the binary" if failed else "the folder holds none")
        raise SnapshotError(f"{snap.path} has no cubin to run: {why}",
                            f"see why with irscope show {snap.path}, fix the kernel and compile it again" if failed
                            and not amd else f"run a snapshot compiled for an NVIDIA target (irscope compile "
                            f"{snap.kernel} --target sm_90a), or check the kernel itself: irscope run KERNEL --interpret")
    if "cubin" in snap.damaged_stages():  # Triton loads the cubin by path: check its bytes first
        raise SnapshotError(f"{snap.stage_files['cubin']} does not match the sha256 irscope.json records",
                            "the cubin changed after the compile; recompile the snapshot")


def recorded_snapshot(out: Path, kernel: str, variant: str, target: str):
    """The snapshot a GPU result of (kernel, variant, target) is recorded in: the one under `out`, if any."""
    from ..store.snapshot import load_snapshot
    from ..store.folder import snapshot_dir
    folder = snapshot_dir(out, kernel, variant, target)
    return load_snapshot(folder) if (folder / "irscope.json").is_file() else None


def readable_records(snapshot, name: str) -> None:
    """Raise SnapshotError now if a snapshot's `runs.json` or `verify.json` is one a result cannot be appended
    to (damaged, a link out of the folder, too big): said before the GPU's work, not after it."""
    from ..store import results
    if snapshot is not None:
        if name == results.RUNS_FILE:
            results.runs(snapshot)
        else:
            results.verifications(snapshot)


def not_recorded_because(snapshot) -> str:
    """Why a result of `snapshot` is not written beside it ("" when it is): irscope records results only in
    folders of its own, never in committed goldens (a run would change the repository, which only an
    update may do), a Triton cache entry or a kernel-dump folder."""
    from ..store.snapshot import keeps_caches
    if snapshot is None or keeps_caches(snapshot):
        return ""
    what = ("a golden snapshot (irscope writes into goldens only when updating them)" if snapshot.origin == "irscope"
            else "a folder irscope did not write (a Triton cache entry or a kernel dump)")
    return f"{snapshot.label} is {what}; the result is in the output above and in --json"


def record(snapshot, name: str, result: dict) -> Path | None:
    """Append a run's (`runs.json`) or verification's (`verify.json`) result to its snapshot's records.

    Two runs of one snapshot at once (two shells, a script's jobs) would each read the list, append and
    rename theirs over the other's: the folder is locked around the read and the rename (store.folder_lock,
    which a recompile holds too), so none is lost. A recompile that replaced the binary while this ran
    leaves it beside the new one as `runs.<its sha256[:12]>.json`, as the recompile files the binary's
    earlier records: never taken for the new binary's. A file that cannot be written is a SnapshotError
    naming it, not an OSError after the GPU's work."""
    from ..store import results
    from ..store.folder import folder_lock
    if snapshot is None or not_recorded_because(snapshot):
        return None
    try:
        with folder_lock(Path(snapshot.path)):
            measured = _binary_sha(snapshot.meta)
            if measured and _binary_sha(_meta_now(snapshot)) != measured:
                name = f"{Path(name).stem}.{measured[:12]}.json"
            return results.append(snapshot.path, name, result)
    except OSError as e:
        raise SnapshotError(f"cannot record the result in {Path(snapshot.path) / name}: "
                            f"{e.strerror or type(e).__name__}",
                            "make the snapshot folder writable (the result is still in the output above and "
                            "in --json)") from None


def _binary_sha(meta: dict) -> str:
    """The sha256 irscope.json records for the snapshot's binary (cubin or hsaco), or ""."""
    stages = meta.get("stages") if isinstance(meta, dict) else None
    for stage in ("cubin", "hsaco"):
        info = stages.get(stage) if isinstance(stages, dict) else None
        sha = info.get("sha256") if isinstance(info, dict) else None
        if isinstance(sha, str) and re.fullmatch(r"[0-9a-f]{64}", sha):
            return sha
    return ""


def _meta_now(snapshot) -> dict:
    """The folder's irscope.json as it is now (a recompile may have replaced it since the run was planned)."""
    from ..store.snapshot import load_snapshot
    try:
        return load_snapshot(snapshot.path).meta
    except SnapshotError:
        return {}


def snapshot_kernel(snap, refs, specs) -> tuple[str, object]:
    """(ref, KernelSpec) whose Python signature launches a snapshot's cubin: a kernel the user named on the
    command line with the snapshot's function, else the built-in kernel of the snapshot's name.

    A snapshot folder is untrusted: the `source_file` (or a path-like `kernel`) it records is never
    imported, since importing a file runs it.
    """
    from ..errors import UsageError
    from ..spec import library

    for ref, spec in zip(refs, specs):
        if spec.fn_name == snap.fn_name:
            return ref, spec
    hint = (f"name the kernel's file yourself, as in the compile: irscope run FILE.py:{snap.fn_name} "
            f"--snapshot {snap.path}")
    try:
        spec = library.load_builtin(snap.kernel)
    except UsageError:
        raise UsageError(f"{snap.path} holds kernel '{snap.kernel}', which is not a built-in; irscope never "
                         "imports the source file a snapshot records", hint) from None
    if spec.fn_name != snap.fn_name:
        raise UsageError(f"{snap.path} holds function '{snap.fn_name}', but the built-in kernel '{snap.kernel}' is "
                         f"'{spec.fn_name}'", hint)
    return spec.name, spec


def gpu_record(ceilings, target) -> dict:
    """The GPU a run was made on, as recorded with it."""
    if ceilings is None:
        import torch
        return {"device": torch.cuda.get_device_name(), "target": target.name}
    return {"device": ceilings.device, "capability": ceilings.capability, "driver": ceilings.driver,
            "target": target.name, "copy_gbps": ceilings.copy_gbps, "matmul_tflops": ceilings.matmul_tflops}


def time_prepared(prepared, run, repeats: int, ceilings):
    """Time a checked run's launches against the workload's baselines (interleaved do_bench)."""
    from . import bench

    def kernel() -> None:
        for call in prepared.calls:
            run(call)

    # Baselines see the inputs as the check left them, and may write into the output tensors.
    tensors = {**prepared.x, **prepared.inputs}
    baselines = {name: make(tensors, prepared.size) for name, make in prepared.workload.baselines.items()}
    w = prepared.workload
    return bench.bench(kernel, baselines, w.flops(prepared.size), w.bytes(prepared.size), repeats=repeats,
                       ceilings=ceilings)
