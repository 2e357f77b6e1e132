"""What stands in for a GPU while `irscope capture` runs a program on a machine without one.

A fake active driver answers Triton's runtime (device 0, stream 0, the chosen `GPUTarget`, a benchmarker
that runs each autotune config once and calls them all equally fast), and `StubKernel` takes the place
of the CompiledKernel the JIT caches per specialisation: its `run` is the "launch", which records the
first launch's grid and arguments and counts the rest. Nothing here compiles or executes a kernel.
"""
from __future__ import annotations

from typing import Any, Callable

# What the runtime reads of a device (the keys nvidia's driver.c returns); sizes of an H100-class part,
# so kernels that size themselves from the SM count or shared memory take a plausible path. Under
# `--as TARGET` the emulated device's own figures replace them (capture_emulate.driver_properties).
_PROPERTIES = {"max_shared_mem": 232448, "max_num_regs": 65536, "multiprocessor_count": 132, "warpSize": 32,
               "sm_clock_rate": 1980000, "mem_clock_rate": 2619000, "mem_bus_width": 5120}


class _FakeUtils:
    def __init__(self, warp_size: int, properties: dict | None = None):
        self.properties = dict(properties or _PROPERTIES, warpSize=warp_size)

    def get_device_properties(self, device):
        return dict(self.properties)

    def load_binary(self, name, kernel, shared, device):  # (module, function, n_regs, n_spills, n_max_threads)
        return (1, 1, 0, 0, 1024)

    def unload_module(self, module):
        pass


def fake_driver(target, properties: dict | None = None):
    """A DriverBase for `target` (a triton GPUTarget) that never auto-selects itself; `properties` are
    what its utils report of the device (default: an H100-class part). torch is imported only by the
    methods that hand the runtime a torch object, so a program that never uses torch captures without it."""
    from triton.backends.driver import DriverBase

    class FakeDriver(DriverBase):
        def __init__(self):
            self.target = target
            self.utils = _FakeUtils(target.warp_size, properties)
            self.launcher_cls = _no_launcher

        @classmethod
        def is_active(cls):
            return False

        def map_python_to_cpp_type(self, ty):
            return ty

        def get_current_target(self):
            return self.target

        def get_active_torch_device(self):
            import torch
            return torch.device("cpu")

        def get_benchmarker(self):
            return _bench_once

        def get_current_device(self):
            return 0

        def set_current_device(self, device):
            pass

        def get_current_stream(self, device=None):
            return 0

        def get_device_capability(self, device=None):
            arch = self.target.arch
            return divmod(arch, 10) if isinstance(arch, int) else (0, 0)

        def get_device_interface(self):
            import torch
            return _DeviceInterface(torch.cpu)

        def get_empty_cache_for_benchmark(self):
            import torch
            return torch.empty(0)

        def clear_cache(self, cache):
            pass

    return FakeDriver()


class _Event:
    """A timing event of `triton.testing.do_bench` (autotuners built with warmup/rep use it): every
    interval is one long second, so do_bench runs each config the fewest times it can, all equally fast."""

    def __init__(self, enable_timing: bool = False, **_: Any):
        pass

    def record(self, stream=None):
        pass

    def synchronize(self):
        pass

    def elapsed_time(self, other) -> float:
        return 1000.0


class _DeviceInterface:
    """`torch.cpu` with the timing events a GPU's device interface has."""

    Event = _Event

    def __init__(self, base):
        self._base = base

    def synchronize(self, device=None):
        pass

    def current_device(self):
        return 0

    def __getattr__(self, name: str):
        return getattr(self._base, name)


def _no_launcher(src, metadata):
    raise RuntimeError("irscope capture: a real CompiledKernel was launched without a GPU")


def _bench_once(kernel_call: Callable[[], Any], quantiles=None, **_: Any):
    """Run a config once (so it is specialised and recorded) and call it as fast as every other."""
    kernel_call()
    return [1.0] * len(quantiles) if quantiles else 1.0


class StubKernel:
    """Stands in for a CompiledKernel in the JIT's cache: one per specialisation, launched by `run`."""

    function = None
    packed_metadata = None

    def __init__(self, on_first_launch: Callable[[tuple, tuple], None]):
        self._first = on_first_launch
        self.count = 0

    def launch_metadata(self, grid, stream, *args):
        return None

    def run(self, gx, gy, gz, stream, function, packed_metadata, launch_metadata, enter_hook, exit_hook, *args):
        self.count += 1
        if self.count == 1:
            self._first((gx, gy, gz), args)

    def __getitem__(self, grid):
        """`kernel[grid](*args)`: a launch of the compiled kernel itself, as libraries that keep the
        JIT's kernel and launch it again do (FlagGems' LibEntry); counted like the JIT's launches."""
        def launch(*args, **kwargs):
            self.count += 1
        return launch

    def __getattr__(self, name: str):
        # `result` must stay missing: Triton 3.6's run() takes a kernel with one for an async future.
        raise AttributeError(f"irscope capture compiles nothing while recording: a captured kernel has no "
                             f"'{name}' (compile the launch file with `irscope compile launches.json`)")
