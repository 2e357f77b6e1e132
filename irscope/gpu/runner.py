"""Run a kernel's workload and check it against its torch reference: `RunResult` and how to get one.

Two ways to get there:

- `check_interpreted(request)`: on the CPU through Triton's interpreter. TRITON_INTERPRET=1 is read
  when `@triton.jit` decorates a function, so the check runs in a fresh Python process started with
  that variable set (`python -m irscope.gpu.runner`), never in this one, whose kernel files may already
  be imported for compiling.
- `execute(request, device, run=jit_launch)`: in this process, on `device`. The interpreter child
  calls it with device "cpu"; a GPU runner calls it with "cuda" (and, to launch a snapshot's cubin,
  its own `run`; see irscope.spec.workload for the launch contract).

On a GPU, `irscope run` prepares a run (`prepare`), checks it (`check`), then times the same launches
with `irscope.gpu.bench`; `irscope.gpu.replay` launches a snapshot's cubin instead of the JIT.
torch is imported inside functions only.
"""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from .. import errors
from ..errors import EnvironmentProblem, IrscopeError, UsageError
from ..spec.workload import (DEFAULT_TOLERANCES, KernelCall, Tolerance, Workload, dtype_name,
                             params_of)
from ..harness.runtime import jit_launch

DEFAULT_SEED = 0
INTERPRET_TIMEOUT = 900.0


@dataclass(frozen=True)
class Request:
    """What to run: a kernel (built-in name or FILE.py:NAME), a config, a size, a seed."""

    kernel: str
    config: str | None = None
    size: str | None = None  # preset name or K=V,...; None: the workload's first check size (interpreter)
    seed: int = DEFAULT_SEED
    # constexprs over the config's: a snapshot's own (a sweep point's BLOCK_SIZE=256 is not its menu config's)
    constexprs: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class OutputCheck:
    """One output compared with its reference."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    max_abs: float  # largest |got - want|
    max_rel: float  # max_abs over the largest |want|: the error relative to the output's scale
    mismatches: int  # elements outside atol + rtol * |want| (NaN counts)
    nans: int  # NaN elements where the reference has none (a poisoned element never written)
    atol: float
    rtol: float
    worst_index: tuple[int, ...] = ()
    worst_got: float = 0.0
    worst_want: float = 0.0

    @property
    def ok(self) -> bool:
        return self.mismatches == 0


@dataclass(frozen=True)
class RunResult:
    """The outcome of one run: what ran, on what, and how every output compared."""

    kernel: str
    config: str
    size_name: str
    size: Mapping[str, int]
    seed: int
    mode: str  # "interpret" or "gpu"
    device: str
    outputs: tuple[OutputCheck, ...] = ()
    launches: tuple[str, ...] = ()  # "kernel grid=(..)" per launch, in order
    seconds: float = 0.0
    versions: Mapping[str, str] = field(default_factory=dict)
    error: str | None = None  # the launch raised or the child died: no comparison was possible

    @property
    def ok(self) -> bool:
        return self.error is None and bool(self.outputs) and all(o.ok for o in self.outputs)

    def as_dict(self) -> dict:
        d = asdict(self)
        d["ok"] = self.ok
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "RunResult":
        d = {k: v for k, v in d.items() if k != "ok"}
        outputs = tuple(OutputCheck(**{**o, "shape": tuple(o["shape"]), "worst_index": tuple(o["worst_index"])})
                        for o in d.pop("outputs", ()))
        return cls(**{**d, "outputs": outputs, "launches": tuple(d.get("launches", ()))})


def workload_of(spec) -> Workload:
    """A spec's workload, or a usage error saying how to give it one."""
    if not isinstance(spec.workload, Workload):
        raise UsageError(f"kernel '{spec.name}' has no workload, so irscope cannot run it",
                         "give its KernelSpec a workload=Workload(...) (see docs/kernel-spec.md)")
    return spec.workload


@dataclass
class Prepared:
    """A run ready to launch: the spec, its workload and config, the size, the inputs and the calls."""

    spec: Any
    workload: Workload
    config: str
    size_name: str
    size: dict
    x: dict  # every tensor the kernels see, outputs poisoned with NaN
    inputs: dict  # untouched copies of the inputs, for the reference and the baselines
    calls: list  # the KernelCalls, in launch order
    base: dict  # the RunResult fields known before running

    @property
    def launches(self) -> tuple[str, ...]:
        return tuple(f"{c.kernel} grid={c.grid}" for c in self.calls)


def prepare(request: Request, device: str = "cpu", *, default_size: str | None = None) -> Prepared:
    """Build fresh random inputs for a request on `device`, poison the outputs, describe the launches."""
    import torch

    from ..spec import library
    spec = library.load_kernel(request.kernel)
    workload = workload_of(spec)
    cfg = spec.config(request.config)
    params = params_of(spec, workload, cfg.name, request.constexprs)
    size_name, size = workload.parse_size(request.size, default_size or workload.check_sizes[0])
    mode = "interpret" if os.environ.get("TRITON_INTERPRET") == "1" else "gpu"
    base = dict(kernel=spec.name, config=cfg.name, size_name=size_name, size=size, seed=request.seed, mode=mode,
                device=str(device), versions=_versions())

    gen = torch.Generator(device=device).manual_seed(request.seed)
    x = workload.build(size, gen, device)
    missing = [n for n in workload.outputs if n not in x]
    if missing:
        raise UsageError(f"workload of '{spec.name}' names output '{missing[0]}' that its build does not make",
                         f"build returns: {', '.join(x)}")
    for name in workload.outputs:
        poison(x[name])
    inputs = {k: (v.clone() if isinstance(v, torch.Tensor) else v) for k, v in x.items() if k not in workload.outputs}
    calls = list(workload.launch(x, size, params))
    return Prepared(spec, workload, cfg.name, size_name, size, x, inputs, calls, base)


def check(p: Prepared, run: Callable[[KernelCall], None] = jit_launch) -> RunResult:
    """Launch a prepared run and compare every output with the workload's reference."""
    import torch

    started = time.perf_counter()
    try:
        for c in p.calls:
            run(c)
        if torch.device(p.base["device"]).type == "cuda":
            torch.cuda.synchronize()
    except IrscopeError:
        raise
    except Exception as e:  # noqa: BLE001 - a kernel that fails to launch is a failed run, reported
        return RunResult(**p.base, launches=p.launches, seconds=time.perf_counter() - started,
                         error=f"launch failed: {type(e).__name__}: {_first_line(str(e))}")
    seconds = time.perf_counter() - started
    want = p.workload.reference({**p.x, **p.inputs}, p.size)
    checks = tuple(compare(name, p.x[name], want[name], p.workload.tolerances) for name in p.workload.outputs)
    return RunResult(**p.base, outputs=checks, launches=p.launches, seconds=seconds)


def execute(request: Request, device: str = "cpu", run: Callable[[KernelCall], None] = jit_launch,
            *, default_size: str | None = None) -> RunResult:
    """Build inputs, poison outputs with NaN, launch, compare with the reference: in this process."""
    return check(prepare(request, device, default_size=default_size), run)


def poison(t) -> None:
    """Fill a floating-point output with NaN (integers with -1), so an element never written is caught."""
    if t.dtype.is_floating_point:
        t.fill_(math.nan)
    else:
        t.fill_(-1)


def compare(name: str, got, want, tolerances: Mapping[str, Tolerance] = DEFAULT_TOLERANCES) -> OutputCheck:
    """Compare an output with its reference, elementwise, to the tolerance of the output's dtype."""
    import torch
    dtype = dtype_name(got.dtype)
    tol = tolerances.get(dtype) or DEFAULT_TOLERANCES.get(dtype) or Tolerance(0.0, 0.0)
    if tuple(got.shape) != tuple(want.shape):
        raise UsageError(f"output '{name}' has shape {tuple(got.shape)} but its reference {tuple(want.shape)}",
                         "fix the workload's reference")
    g = got.detach().to(torch.float64)
    w = want.detach().to(device=got.device, dtype=torch.float64)
    diff = (g - w).abs()
    nan_got = torch.isnan(g) & ~torch.isnan(w)
    # NaN where the reference has NaN, and an infinity equal to the reference's, agree; any other NaN or
    # infinity difference (a number where the reference has NaN or an infinity, the opposite infinity) is a
    # mismatch: against an infinite reference the tolerance is infinite too, and no difference exceeds it.
    same = (g == w) | (torch.isnan(g) & torch.isnan(w))
    off = torch.isnan(diff) | torch.isinf(w) | torch.isinf(g)
    bad = ~same & ((diff > tol.atol + tol.rtol * w.abs()) | off)
    diff_clean = torch.where(same, torch.zeros_like(diff),
                             torch.where(torch.isnan(diff), torch.full_like(diff, math.inf), diff))
    n = g.numel()
    if n:
        flat = int(torch.argmax(diff_clean).item())
        worst = tuple(int(i) for i in _unravel(flat, tuple(got.shape)))
        max_abs = float(diff_clean.max().item())
        finite = w.abs()[torch.isfinite(w)]
        scale = (float(finite.max().item()) if finite.numel() else 0.0) or 1.0
    else:
        worst, max_abs, scale = (), 0.0, 1.0
    return OutputCheck(name=name, dtype=dtype, shape=tuple(got.shape), max_abs=max_abs, max_rel=max_abs / scale,
                       mismatches=int(bad.sum().item()), nans=int(nan_got.sum().item()), atol=tol.atol,
                       rtol=tol.rtol, worst_index=worst,
                       worst_got=float(g.reshape(-1)[flat].item()) if n else 0.0,
                       worst_want=float(w.reshape(-1)[flat].item()) if n else 0.0)


def _unravel(index: int, shape: tuple[int, ...]) -> list[int]:
    out = []
    for dim in reversed(shape):
        out.append(index % dim)
        index //= dim
    return list(reversed(out))


def _versions() -> dict[str, str]:
    from importlib import metadata
    out = {}
    for pkg in ("triton", "torch"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            pass
    return out


def _first_line(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1] if lines else ""


# --- The interpreter check: a fresh process with TRITON_INTERPRET=1 ------------------------------------

def check_interpreted(request: Request, *, timeout: float = INTERPRET_TIMEOUT) -> RunResult:
    """Run `execute` on the CPU through Triton's interpreter, in a fresh child process."""
    return check_many_interpreted([request], timeout=timeout)[0]


def check_many_interpreted(requests: Sequence[Request], *, timeout: float = INTERPRET_TIMEOUT) -> list[RunResult]:
    """Several interpreter checks in one child process (it pays torch's and Triton's import once).

    A usage error in a request (unknown kernel, config or size) is raised; a kernel that fails to
    launch, or a child that dies, gives failed RunResults."""
    _require_torch()
    reqs = [Request(_absolute_ref(r.kernel), r.config, r.size, r.seed) for r in requests]
    env = dict(os.environ, TRITON_INTERPRET="1")
    root = str(Path(__file__).resolve().parents[2])  # the folder holding the irscope package, not the package
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    with tempfile.TemporaryDirectory(prefix="irscope-run-") as tmp:
        result_path = Path(tmp) / "result.json"
        cmd = [sys.executable, "-m", "irscope.gpu.runner", json.dumps([asdict(r) for r in reqs]), str(result_path)]
        message = ""
        try:
            proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
            if proc.returncode:
                message = f"the interpreter process died: {_first_line(proc.stderr) or f'exit {proc.returncode}'}"
        except subprocess.TimeoutExpired:
            message = f"the interpreter check took longer than {timeout:.0f} s"
        try:
            payloads = json.loads(result_path.read_text()) if result_path.is_file() else []
        except (OSError, ValueError):  # (written whole by a rename; kept for a child of an older irscope)
            payloads = []
            message = message or "the interpreter process left its results unreadable"
        if not isinstance(payloads, list) or not all(isinstance(p, dict) for p in payloads):
            payloads, message = [], message or "the interpreter process left results of the wrong shape"
    results = []
    for i, request in enumerate(requests):
        if i >= len(payloads):
            results.append(_failed(request, message or "the interpreter process stopped early"))
            continue
        payload = payloads[i]
        if "class" in payload:
            cls = getattr(errors, payload["class"], IrscopeError)
            raise cls(payload["error"], payload.get("hint"))
        results.append(RunResult.from_dict(payload))
    return results


def _failed(request: Request, message: str) -> RunResult:
    return RunResult(kernel=request.kernel, config=request.config or "default", size_name=request.size or "",
                     size={}, seed=request.seed, mode="interpret", device="cpu", error=message)


def _absolute_ref(ref: str) -> str:
    # The child starts in the same folder, but a FILE.py:NAME made absolute cannot be misread.
    path, sep, name = ref.rpartition(":")
    if sep and path.endswith(".py"):
        return f"{Path(path).resolve()}:{name}"
    if ref.endswith(".py"):
        return str(Path(ref).resolve())
    return ref


def _require_torch() -> None:
    import importlib.util
    if importlib.util.find_spec("torch") is None:
        raise EnvironmentProblem("irscope run needs torch to build inputs and references",
                                 "install it: pip install 'irscope[test]' (or pip install torch)")


def gpu_available() -> bool:
    """Whether this process can see a CUDA GPU (through torch)."""
    _require_torch()
    import torch
    return bool(torch.cuda.is_available())


def _child(argv: list[str]) -> int:
    """`python -m irscope.gpu.runner REQUESTS_JSON RESULT_PATH`: the interpreter check's process."""
    requests = [Request(**r) for r in json.loads(argv[0])]
    out = Path(argv[1])
    from ..harness.interpreter import fix_interpreter_bf16_dot
    fix_interpreter_bf16_dot()
    results = []
    for request in requests:
        try:
            results.append(execute(request, "cpu").as_dict())
        except IrscopeError as e:
            results.append({"class": type(e).__name__, "error": e.message, "hint": e.hint})
        except Exception as e:  # noqa: BLE001 - a broken workload fails its own check, not the batch
            results.append({"kernel": request.kernel, "config": request.config or "default",
                            "size_name": request.size or "", "size": {}, "seed": request.seed, "mode": "interpret",
                            "device": "cpu", "error": f"{type(e).__name__}: {_first_line(str(e))}"})
        # after each request, whole or not at all: a child killed while writing leaves the last whole list
        partial = out.with_suffix(".partial")
        partial.write_text(json.dumps(results))
        os.replace(partial, out)
    return 0


if __name__ == "__main__":
    sys.exit(_child(sys.argv[1:]))
