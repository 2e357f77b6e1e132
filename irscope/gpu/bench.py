"""Timing on a GPU: a kernel's launches and the torch baselines a user would run instead, interleaved
and repeated within one run, against the machine's ceilings measured in the same process.

Every figure comes from Triton's `do_bench` (CUDA events, L2 flushed between calls, the median of each
run); a candidate's time is the median of its `repeats` runs, taken in turn with the others so that
the card's clock and power state affect all of them alike.
"""
from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Mapping, Sequence

COPY_BYTES = 1 << 30  # the copy ceiling moves 1 GiB: far past the L2, well past launch overhead
MATMUL_N = 8192  # the library matmul ceiling: fp16 8192^3 through torch (cuBLAS)


@dataclass(frozen=True)
class Timing:
    """One candidate's time: the kernel or a baseline."""

    name: str
    ms: float  # median over the repeats
    samples: tuple[float, ...] = ()  # each repeat's do_bench median, in ms
    tflops: float | None = None
    gbps: float | None = None  # GB/s (10^9 bytes) of the least DRAM traffic the work needs


@dataclass(frozen=True)
class Ceilings:
    """What this GPU does at best, measured here: copy bandwidth and the library's fp16 matmul rate."""

    copy_gbps: float
    matmul_tflops: float
    device: str
    driver: str
    capability: str


@dataclass(frozen=True)
class BenchResult:
    """A timed run: the kernel, its baselines, the ceilings and the fractions of them reached."""

    kernel: Timing
    baselines: tuple[Timing, ...] = ()
    ceilings: Ceilings | None = None
    flops: float = 0.0
    bytes: float = 0.0
    repeats: int = 3

    @property
    def copy_fraction(self) -> float | None:
        if self.ceilings is None or not self.kernel.gbps:
            return None
        return self.kernel.gbps / self.ceilings.copy_gbps

    @property
    def matmul_fraction(self) -> float | None:
        if self.ceilings is None or not self.kernel.tflops:
            return None
        return self.kernel.tflops / self.ceilings.matmul_tflops

    def speedup(self, baseline: Timing) -> float:
        """How many times faster the kernel is than `baseline` (above 1: the kernel wins)."""
        return baseline.ms / self.kernel.ms

    def as_dict(self) -> dict:
        d = asdict(self)
        d["copy_fraction"] = self.copy_fraction
        d["matmul_fraction"] = self.matmul_fraction
        d["speedups"] = {b.name: self.speedup(b) for b in self.baselines}
        return d


_ceilings: dict[str, Ceilings] = {}


def measure_ceilings() -> Ceilings:
    """Copy bandwidth (bytes read plus written) and cuBLAS fp16 matmul rate, once per process."""
    if "gpu" in _ceilings:
        return _ceilings["gpu"]
    import torch

    from ..harness.runtime import do_bench, driver_version
    src = torch.empty(COPY_BYTES // 4, dtype=torch.float32, device="cuda").normal_()
    dst = torch.empty_like(src)
    copy_ms = do_bench(lambda: dst.copy_(src))
    a = torch.randn(MATMUL_N, MATMUL_N, device="cuda", dtype=torch.float16)
    b = torch.randn(MATMUL_N, MATMUL_N, device="cuda", dtype=torch.float16)
    mm_ms = statistics.median(do_bench(lambda: torch.matmul(a, b)) for _ in range(3))
    major, minor = torch.cuda.get_device_capability()
    result = Ceilings(copy_gbps=2 * COPY_BYTES / copy_ms / 1e6, matmul_tflops=2 * MATMUL_N ** 3 / mm_ms / 1e9,
                      device=torch.cuda.get_device_name(), driver=driver_version(), capability=f"{major}.{minor}")
    del src, dst, a, b
    torch.cuda.empty_cache()
    _ceilings["gpu"] = result
    return result


def time_candidates(candidates: Mapping[str, Callable[[], Any]], repeats: int = 3) -> dict[str, list[float]]:
    """do_bench each candidate `repeats` times, interleaved: a, b, c, a, b, c, ..."""
    from ..harness.runtime import do_bench
    samples: dict[str, list[float]] = {name: [] for name in candidates}
    for _ in range(repeats):
        for name, fn in candidates.items():
            samples[name].append(do_bench(fn))
    return samples


def bench(kernel: Callable[[], Any], baselines: Mapping[str, Callable[[], Any]], flops: float, nbytes: float,
          *, repeats: int = 3, ceilings: Ceilings | None = None) -> BenchResult:
    """Time the kernel and its baselines in one interleaved series; derive rates and fractions."""
    samples = time_candidates({"kernel": kernel, **baselines}, repeats)

    def timing(name: str, values: Sequence[float]) -> Timing:
        ms = statistics.median(values)
        return Timing(name, ms, tuple(values), flops / ms / 1e9 if flops else None,
                      nbytes / ms / 1e6 if nbytes else None)

    return BenchResult(kernel=timing("kernel", samples.pop("kernel")),
                       baselines=tuple(timing(n, v) for n, v in samples.items()), ceilings=ceilings, flops=flops,
                       bytes=nbytes, repeats=repeats)
