"""Triton's Proton profiler (`triton.profiler`), the one place irscope calls it.

`irscope run --profile` runs a checked workload's launches again under Proton: one session per run, its
launches inside a scope that carries the work's `flops` and `bytes` (Proton's own scope metrics, the ones
its viewer divides by time), L2 flushed between iterations outside that scope as `do_bench` does. Proton
writes its tree (hatchet JSON) to `<stem>.hatchet`; irscope.gpu.profile reads it back without hatchet.

The calls used (`start(name, context=, data=, backend=)`, `scope(name, metrics)`,
`finalize(session, "hatchet")`) are the same in Triton 3.6 (the GPU machine) and 3.9.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Mapping

from ..errors import EnvironmentProblem

L2_FLUSH_BYTES = 256 << 20  # what Triton's do_bench zeroes between calls: past any GPU's L2


def proton():
    """`triton.profiler`, or an EnvironmentProblem saying this Triton lacks it."""
    try:
        import triton
    except ImportError as e:
        raise EnvironmentProblem(f"--profile needs Triton, which does not import here ({e})",
                                 "install Triton (pip install triton)") from None
    try:
        import triton.profiler as prof
    except (ImportError, OSError) as e:  # no profiler package, or libproton missing from the wheel
        raise EnvironmentProblem(f"this Triton ({triton.__version__}) has no Proton profiler: triton.profiler does "
                                 f"not import ({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''})",
                                 "install a Triton wheel that ships Proton (the PyPI wheels do), or drop --profile"
                                 ) from None
    return prof


def profile_iterations(launch: Callable[[], Any], *, stem: Path, scope: str, metrics: Mapping[str, float],
                       iterations: int) -> Path:
    """Run `launch` `iterations` times under a fresh Proton session, each inside `scope` with `metrics`;
    return the hatchet file Proton wrote. The caller has launched it before (compiled, warm)."""
    import torch

    prof = proton()
    try:
        stem.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise EnvironmentProblem(f"cannot make {stem.parent} for Proton's file: {e.strerror or type(e).__name__}",
                                 "give --profile-dir a folder that can be written") from None
    flush = torch.empty(L2_FLUSH_BYTES, dtype=torch.int8, device="cuda")
    torch.cuda.synchronize()
    try:
        session = prof.start(str(stem), context="shadow", data="tree", backend="cupti")
    except Exception as e:  # noqa: BLE001 - CUPTI that does not load, a session already open: one line
        raise EnvironmentProblem(f"Proton did not start: {type(e).__name__}: {_first_line(e)}",
                                 "check that Triton's CUPTI loads (TRITON_CUPTI_LIB_PATH) and that no other "
                                 "profiler holds the GPU") from None
    if session is None:  # Proton ignores start() when TRITON_PROTON_DISABLE is set
        raise EnvironmentProblem("Proton did not start a session: TRITON_PROTON_DISABLE is set",
                                 "unset TRITON_PROTON_DISABLE, or drop --profile")
    failure = None
    try:
        for _ in range(iterations):
            flush.zero_()  # outside the scope: its kernel is recorded under ROOT, not with the workload
            with prof.scope(scope, dict(metrics)):
                launch()
        torch.cuda.synchronize()
    except Exception as e:  # noqa: BLE001 - Proton refusing a metric, a launch failing: said in one line
        failure = f"the profiled launches failed: {type(e).__name__}: {_first_line(e)}"
    try:  # always: finalize flushes CUPTI's buffers, writes the tree and closes the session
        prof.finalize(session, "hatchet")
    except Exception as e:  # noqa: BLE001
        failure = failure or f"Proton did not write its profile: {type(e).__name__}: {_first_line(e)}"
    if failure:
        raise EnvironmentProblem(failure, f"run it again without --profile to see the launch alone; Proton's "
                                 f"file, if any, is {stem}.hatchet")
    del flush
    for path in (stem.with_name(stem.name + ".hatchet"), stem):
        if path.is_file() and path.stat().st_size:  # (empty: the name irscope claimed, not written)
            return path
    raise EnvironmentProblem(f"Proton wrote no profile at {stem}.hatchet",
                             "check that the folder is writable and that CUPTI loads (TRITON_CUPTI_LIB_PATH)")


def proton_version() -> str:
    """Triton's version: Proton ships inside it."""
    import triton
    return str(triton.__version__)


def _first_line(e: BaseException) -> str:
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    return lines[0][:200] if lines else ""
