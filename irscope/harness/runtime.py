"""Triton's runtime on a real GPU: compile a launch through the JIT, and load a snapshot's binary.

The counterpart of `harness.py` for the machine with the GPU. Like the harness, it is one of the few
modules that touch Triton's internals (`JITFunction.warmup`, `CompiledKernel`), and it keeps every
difference between Triton releases (3.6 on the GPU machine, 3.9 where snapshots are made) here.
"""
from __future__ import annotations

import tempfile
from typing import Any, Callable, Sequence

from ..errors import EnvironmentProblem, SnapshotError
from ..ir.stages import STAGES
from ..spec.workload import KernelCall
from ..store.snapshot import Snapshot
from ..targets import TARGETS, Target


def current_target() -> Target:
    """The compile target of this process's GPU (sm_90 -> sm_90a: Triton compiles Hopper as the "a" target)."""
    import torch
    if not torch.cuda.is_available():
        raise EnvironmentProblem("there is no CUDA GPU here", "run this on a machine with an NVIDIA GPU")
    major, minor = torch.cuda.get_device_capability()
    for t in TARGETS.values():
        if t.vendor == "nvidia" and t.arch == major * 10 + minor:
            return t
    raise EnvironmentProblem(f"this GPU (compute capability {major}.{minor}) is not among irscope's targets",
                             "see `irscope targets`")


def interpreting() -> bool:
    """Whether Triton's JIT interprets kernels on the CPU in this process (TRITON_INTERPRET=1, true, yes...,
    as Triton reads it) instead of compiling them for the GPU."""
    from triton import knobs
    return bool(knobs.runtime.interpret)


def jit_compile(call) -> dict[str, str | bytes]:
    """Compile one launch (a `workload.KernelCall`) through Triton's JIT on this GPU without running it,
    with line information off, and return its stages by name."""
    from triton import knobs

    kwargs = call.jit_kwargs()
    # The JIT keeps compiled kernels in memory per device; a launch made earlier in this process (the
    # correctness check, with line info on) would be handed back instead of compiled again.
    if hasattr(call.fn, "device_caches"):
        call.fn.device_caches.clear()
    with tempfile.TemporaryDirectory(prefix="irscope-jit-") as cache, knobs.compilation.scope(), knobs.cache.scope():
        knobs.compilation.disable_line_info = True
        knobs.compilation.always_compile = True
        knobs.cache.dir = cache
        kernel = call.fn.warmup(*call.args, grid=call.grid, **kwargs)
    if hasattr(call.fn, "device_caches"):
        call.fn.device_caches.clear()
    return {s: kernel.asm[s] for s in STAGES if s != "sass" and s in kernel.asm}


class LoadedBinary:
    """A snapshot's cubin loaded into this process through Triton's own loader, ready to launch."""

    def __init__(self, snapshot: Snapshot, spec):
        from triton.compiler.compiler import CompiledKernel

        from .specialise import source_of

        if "cubin" not in snapshot.stage_files:
            raise SnapshotError(f"{snapshot.label} has no cubin to run",
                                "run a snapshot compiled for an NVIDIA target (irscope compile ... --target sm_90a)")
        fn = snapshot.fn_name
        meta_file = snapshot.path / f"{fn}.json"
        if not meta_file.is_file():
            raise SnapshotError(f"{snapshot.label} lacks Triton's metadata ({meta_file.name})", "recompile it")
        self.snapshot = snapshot
        self.spec = spec
        signature, constexprs, attrs = _specialisation(snapshot, spec.fn)
        group = {meta_file.name: str(meta_file), f"{fn}.cubin": str(snapshot.stage_files["cubin"])}
        self.kernel = CompiledKernel(source_of(spec.fn, signature, constexprs, attrs), group,
                                     snapshot.meta.get("content_key", snapshot.path.name))

    def launch(self, grid: tuple[int, ...], args: list[Any]) -> None:
        ensure_scratch_allocator(args)
        grid3 = tuple(grid) + (1,) * (3 - len(grid))
        self.kernel[grid3](*args)


def _specialisation(snapshot: Snapshot, fn) -> tuple[dict, dict, dict]:
    """The (signature, constexprs, attrs) a snapshot was compiled with, from its irscope.json."""
    entries = snapshot.meta.get("specialisation")
    if not entries:
        raise SnapshotError(f"{snapshot.label} does not record its specialisation",
                            "only irscope snapshots can be run; recompile with irscope compile")
    names = list(fn.arg_names)
    signature, constexprs, attrs = {}, {}, {}
    for e in entries:
        if e["name"] not in names:
            raise SnapshotError(f"{snapshot.label} was compiled from a different kernel: no argument '{e['name']}'",
                                "the kernel's source changed since; recompile the snapshot")
        key = (names.index(e["name"]),)
        signature[e["name"]] = e["type"]
        if e["type"] == "constexpr":
            constexprs[key] = e.get("value")
        div = e.get("divisibility", 1)
        extra = [[k, v] for k, v in (e.get("attrs") or {}).items()]
        if div > 1 or extra:
            attrs[key] = ([["tt.divisibility", div]] if div > 1 else []) + extra
    return signature, constexprs, attrs


_scratch_device: list = []  # the device Triton's scratch allocator hands memory out on, once set


def ensure_scratch_allocator(args: Sequence[Any]) -> None:
    """Give Triton an allocator for kernels that need global scratch memory (tensor descriptors made
    inside a kernel, `tl.make_tensor_descriptor`), on the device of the launch's tensors. Set once per
    device: a launch inside a timing loop pays nothing."""
    device = next((a.device for a in args if hasattr(a, "data_ptr") and hasattr(a, "device")), None)
    if device is None or _scratch_device == [device]:
        return
    import torch
    import triton

    def allocate(size: int, alignment: int, stream):
        return torch.empty(size, dtype=torch.int8, device=device)

    triton.set_allocator(allocate)
    _scratch_device[:] = [device]


def do_bench(fn: Callable[[], Any], warmup: int = 25, rep: int = 100) -> float:
    """Triton's own timer (CUDA events, L2 flushed between calls): the median of a run, in ms."""
    from triton.testing import do_bench as triton_do_bench
    return float(triton_do_bench(fn, warmup=warmup, rep=rep, return_mode="median"))


def driver_version() -> str:
    try:
        import subprocess
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20)
        return out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout.strip() else "?"
    except (OSError, IndexError, Exception):  # noqa: BLE001 - a missing nvidia-smi only loses a label
        return "?"

def jit_launch(call: KernelCall) -> None:
    """Launch through Triton's JIT: on a GPU, or on the CPU when TRITON_INTERPRET=1 was set before import."""
    if any(getattr(getattr(a, "device", None), "type", None) == "cuda" for a in call.args):
        ensure_scratch_allocator(call.args)
    call.fn[call.grid](*call.args, **call.jit_kwargs())
