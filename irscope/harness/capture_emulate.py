"""`irscope capture --as TARGET`: present a GPU to a program that has none, while its launches are recorded.

Some libraries ask PyTorch for their device before they launch anything (FlagGems reads
`torch.cuda.get_device_properties(0).major` to pick its Hopper kernels, enters `torch.cuda.device(x.device)`
around every launch, sizes grids by the SM count). Without a GPU they stop before the JIT is reached. This
is an **emulation**, not a GPU: for the whole run,

* the `torch.cuda` calls in `emulate`'s table answer as one device of TARGET (capability, name, properties
  from `device_properties`, a no-op device context, synchronize);
* tensors the program asks to put on "cuda" are made on the CPU (a TorchFunctionMode rewrites the device
  of factory functions, `.to()` and `.cuda()`), so they specialise as CUDA tensors do (dtype, 16-byte
  alignment of `data_ptr()`);
* Triton's fake driver (capture_driver.py) answers as TARGET, as in every record-mode capture.

Nothing is executed unless `--execute` is given too: then Triton's interpreter runs each kernel on the CPU
tensors (as it would without `--as`), so the program's results are real. Either way the JIT's binder,
specialiser and autotuner run as they are and irscope records what they decided. What the program saw is
written into the launch file (`emulation`), so a capture made this way is never mistaken for one made on a
GPU. NVIDIA targets only: PyTorch's ROCm build answers through `torch.version.hip` and other fields this
does not fake.
"""
from __future__ import annotations

import contextlib
from dataclasses import asdict, dataclass

from ..errors import UsageError
from ..targets import Target

MiB, GiB = 1 << 20, 1 << 30

# One representative part per architecture (the first of Target.products); per-block and per-SM shared
# memory come from irscope.targets. SM counts, L2 and memory from NVIDIA's data sheets.
_PARTS = {
    80: ("A100-SXM4-80GB", 108, 40 * MiB, 80 * GiB),
    90: ("H100 SXM5 80GB", 132, 50 * MiB, 80 * GiB),
    100: ("B200", 148, 126 * MiB, 180 * GiB),
    120: ("GeForce RTX 5090", 170, 96 * MiB, 32 * GiB),
}

@dataclass(frozen=True)
class EmulatedDeviceProperties:
    """What `torch.cuda.get_device_properties` answers: the fields of torch's `_CudaDeviceProperties`
    that kernels libraries read."""

    name: str
    major: int
    minor: int
    multi_processor_count: int
    L2_cache_size: int
    total_memory: int
    shared_memory_per_block: int
    shared_memory_per_block_optin: int
    shared_memory_per_multiprocessor: int
    max_threads_per_multi_processor: int
    max_threads_per_block: int
    regs_per_multiprocessor: int
    warp_size: int
    is_integrated: int = 0
    is_multi_gpu_board: int = 0
    gcnArchName: str = "NVIDIA CUDA"

    @property
    def multiProcessorCount(self) -> int:  # the spelling some libraries use
        return self.multi_processor_count


def device_properties(target: Target) -> EmulatedDeviceProperties:
    """The one device `--as TARGET` presents, or UsageError for a target it cannot stand for."""
    if target.vendor != "nvidia":
        raise UsageError(f"--as {target.name}: only NVIDIA targets can be emulated",
                         "PyTorch's ROCm build is not faked; capture for an AMD target with --target instead")
    major, minor = divmod(int(target.arch), 10)
    part = _PARTS.get(major * 10) or _PARTS[min(_PARTS, key=lambda a: abs(a - major * 10))]
    product, sms, l2, memory = part
    return EmulatedDeviceProperties(
        name=f"irscope emulation of {target.name} ({product})", major=major, minor=minor,
        multi_processor_count=sms, L2_cache_size=l2, total_memory=memory,
        shared_memory_per_block=48 * 1024, shared_memory_per_block_optin=target.shared_per_block,
        shared_memory_per_multiprocessor=target.shared_per_sm,
        max_threads_per_multi_processor=target.max_warps_per_sm * 32, max_threads_per_block=1024,
        regs_per_multiprocessor=target.regs_per_sm, warp_size=32)


def driver_properties(props: EmulatedDeviceProperties) -> dict:
    """The same device as Triton's driver utils report it (the keys nvidia's driver.c returns)."""
    return {"max_shared_mem": props.shared_memory_per_block_optin, "max_num_regs": props.regs_per_multiprocessor,
            "multiprocessor_count": props.multi_processor_count, "warpSize": props.warp_size,
            "sm_clock_rate": 1980000, "mem_clock_rate": 2619000, "mem_bus_width": 5120}


def emulate(target: Target, executed: bool = False) -> dict:
    """Make `torch.cuda` answer as one device of `target` and put "cuda" tensors on the CPU, for the rest
    of this process (the captured program's). `executed`: the kernels run in Triton's interpreter
    (`--execute`), which takes the CPU tensors as they are. Returns what the launch file records about it."""
    answers = _answers(device_properties(target))
    _patch(answers)
    _cuda_on_cpu_mode().__enter__()  # stays on the mode stack for the rest of the program
    ran = ("Triton's interpreter ran the kernels on the CPU (--execute)" if executed
           else "nothing was executed")
    return {"as": target.name, "what": "torch.cuda answered as this device and 'cuda' tensors were made on "
                                       f"the CPU; no GPU was used and {ran}",
            "torch_cuda_calls": list(answers), "device_properties": asdict(device_properties(target))}


@contextlib.contextmanager
def emulated(target: Target):
    """The same emulation for a while only, then torch.cuda as it was: for importing a captured kernel's
    module to compile it, in a process (irscope's, a test run's) that goes on afterwards."""
    import torch
    answers = _answers(device_properties(target))
    saved = {name: torch.cuda.__dict__.get(name, _MISSING) for name in answers}
    _patch(answers)
    try:
        with _cuda_on_cpu_mode():
            yield
    finally:
        for name, value in saved.items():
            if value is _MISSING:
                delattr(torch.cuda, name)
            else:
                setattr(torch.cuda, name, value)


_MISSING = object()


def _answers(props: EmulatedDeviceProperties) -> dict:
    class _NoDevice(contextlib.AbstractContextManager):
        def __init__(self, *args, **kwargs):
            pass

        def __exit__(self, *exc):
            return False

    return {
        "is_available": lambda: True, "init": lambda: None,
        "device_count": lambda: 1, "current_device": lambda: 0, "set_device": lambda device: None,
        "get_device_name": lambda device=None: props.name,
        "get_device_capability": lambda device=None: (props.major, props.minor),
        "get_device_properties": lambda device=None: props,
        "device": _NoDevice, "_DeviceGuard": _NoDevice, "synchronize": lambda device=None: None,
        "mem_get_info": lambda device=None: (props.total_memory, props.total_memory),
        "get_arch_list": lambda: [f"sm_{props.major}{props.minor}"],
    }


def _patch(answers: dict) -> None:
    import torch
    for name, fn in answers.items():
        setattr(torch.cuda, name, fn)


def _cpu_for_cuda(value):
    import torch
    if isinstance(value, torch.device):
        return torch.device("cpu") if value.type == "cuda" else value
    if isinstance(value, str) and value.split(":")[0] == "cuda":
        return "cpu"
    return value


def _cuda_on_cpu_mode():
    from torch.overrides import TorchFunctionMode

    class CudaOnCpu(TorchFunctionMode):
        """Tensors asked for on "cuda" are made on the CPU: factory functions' `device=`, `.to(...)`,
        `.cuda()`. Everything else runs as it is."""

        def __torch_function__(self, func, types, args=(), kwargs=None):
            import torch
            kwargs = dict(kwargs or {})
            if "device" in kwargs:
                kwargs["device"] = _cpu_for_cuda(kwargs["device"])
            if func is torch.Tensor.cuda:
                return args[0]
            args = tuple(_cpu_for_cuda(a) for a in args)
            return func(*args, **kwargs)

    return CudaOnCpu()


@contextlib.contextmanager
def program_context(data: dict):
    """While a captured kernel's module is imported to compile it: what the program's library saw at
    import. The variables the program set for itself (`environment`, where not set here), and for a capture
    made `--as TARGET`, the same emulation; both undone afterwards. A launch file of another capture
    changes nothing."""
    import os
    added = {k: v for k, v in (data.get("environment") or {}).items() if k not in os.environ}
    os.environ.update(added)
    emulated_as = (data.get("emulation") or {}).get("as")
    try:
        if emulated_as:
            from ..targets import get_target
            with emulated(get_target(emulated_as)):
                yield
        else:
            yield
    finally:
        for k in added:
            os.environ.pop(k, None)
