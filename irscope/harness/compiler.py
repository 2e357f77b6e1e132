"""The one module that calls Triton's compiler: compile a specialised kernel (specialise.py) for a
`GPUTarget` with no GPU, and collect every stage.

Triton's internal API moves between releases; every difference between the versions irscope supports
(3.6 on the GPU machine, 3.9 here) is handled in this package (harness/) and nowhere else.
"""
from __future__ import annotations

import contextlib
import inspect
import io
import platform
import shutil
import signal
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import __version__
from . import tools
from ..errors import CompileError, EnvironmentProblem, error_summary
from ..ir.resources import Resources, amd_resources, from_triton_metadata, parse_ptxas_log, parse_res_usage
from ..spec.kernel import CompileOptions, KernelSpec, variant_name
from ..ir.stages import BINARY_STAGES, STAGES
from ..targets import Target
from .dumps import captured_fds, pass_dumps
from .specialise import (backend_options_of, codegen_environment, compile_options_of, content_key, gpu_target, jsonable,
                         source_of, specialise, triton_version)


@dataclass
class CompileResult:
    """Everything one compile produced, before it is written to a snapshot folder."""

    spec: KernelSpec
    target: Target
    options: CompileOptions
    variant: str
    stages: dict[str, str | bytes] = field(default_factory=dict)  # stage name -> text or bytes, in order
    specialisation: list[dict] = field(default_factory=list)
    compile_options: dict = field(default_factory=dict)  # what the compiler was given (num_warps, constexprs...)
    backend_options: dict = field(default_factory=dict)  # Triton's full option set after parsing
    environment: dict = field(default_factory=dict)  # set variables that change code generation
    triton_metadata: dict = field(default_factory=dict)
    times_ms: dict[str, float] = field(default_factory=dict)
    logs: dict[str, str] = field(default_factory=dict)  # ptxas -v log, cuobjdump res-usage, compiler stderr
    versions: dict[str, str] = field(default_factory=dict)
    resources: Resources = field(default_factory=Resources)
    content_key: str = ""
    python_source: str = ""
    error: dict | None = None  # {"stage", "type", "message"} when the compile failed
    passes: Any = None  # irscope.passes.record.PassCapture when options.passes asked for the pass timeline
    # Why a failure is not the kernel's own (ptxas killed by a signal, a tool missing, the disk full), or
    # "": such a compile is reported as crashed and writes no folder, so the next run compiles it again.
    not_cached: str = ""

    @property
    def ok(self) -> bool:
        return self.error is None


def compile_kernel(spec: KernelSpec, target: Target, opts: CompileOptions, *, capture_fds: bool = False,
                   log_path: Path | None = None) -> CompileResult:
    """Compile one kernel for one target. Failures are returned in `result.error`, with the stages that
    did compile; only bad requests (unknown names, malformed values) raise.

    `capture_fds` also redirects file descriptors 1 and 2, so that MLIR and LLVM diagnostics (written by
    C++ straight to stderr) land in the result: only safe in a child process. `opts.passes` turns on
    Triton's per-pass dumps, which come the same way (so it redirects them even in this process).
    """
    import triton
    from triton import knobs

    backend, options, signature, constexprs, attrs, record = specialise(spec, target, opts)
    result = CompileResult(spec=spec, target=target, options=opts, variant=variant_name(spec, opts))
    result.specialisation = record
    result.compile_options = compile_options_of(spec, options, constexprs, opts)
    result.backend_options = backend_options_of(options)
    result.environment = codegen_environment()
    result.python_source = _python_source(spec)
    result.content_key = content_key(spec, target, result.compile_options, record, opts.line_info,
                                     result.backend_options, result.environment)
    result.versions = _versions(target)

    captured: dict[str, Any] = {}

    def listener(**event: Any) -> None:
        captured["times"] = event.get("times")

    # Beside the log when there is one: that folder belongs to the process that started this compile and
    # is removed by it, so a compile killed at the timeout, or aborted by the compiler, leaves nothing
    # behind (its own clean-up below never runs then: 2 GB of caches were left in /tmp in two days).
    cache_dir = Path(tempfile.mkdtemp(prefix="irscope-triton-cache-", dir=log_path.parent if log_path else None))
    stdout = io.StringIO()
    failure: Exception | None = None
    started = time.perf_counter()
    try:
        with knobs.cache.scope(), knobs.compilation.scope(), knobs.nvidia.scope(), \
                pass_dumps(opts.passes) as recorder, \
                captured_fds(capture_fds or recorder is not None, recorder, log_path if capture_fds else None) as fd_log, \
                contextlib.redirect_stdout(stdout):
            knobs.cache.dir = str(cache_dir)
            knobs.compilation.always_compile = True
            knobs.compilation.disable_line_info = not opts.line_info
            knobs.compilation.listener = listener
            knobs.nvidia.dump_ptxas_log = True
            try:
                kernel = triton.compile(source_of(spec.fn, signature, constexprs, attrs), target=gpu_target(target),
                                        options=options.__dict__)
            except Exception as e:  # noqa: BLE001 - any compiler failure becomes a failed snapshot
                failure = e
        result.passes = recorder.capture() if recorder is not None else None
        if failure is not None:
            _record_failure(result, failure, cache_dir, spec.fn_name, target, fd_log.getvalue(), stdout.getvalue())
            return result
        result.times_ms["total"] = (time.perf_counter() - started) * 1e3
        _collect(result, kernel, target, captured.get("times"), stdout.getvalue(), fd_log.getvalue())
    finally:
        shutil.rmtree(cache_dir, ignore_errors=True)
    return result


def _python_source(spec: KernelSpec) -> str:
    if spec.source:  # a captured launch: the stored text it compiled, not today's file
        return spec.source
    path = spec.path or inspect.getsourcefile(spec.fn.fn) or ""
    try:
        return Path(path).read_text()
    except OSError:
        return getattr(spec.fn, "src", "")


def _versions(target: Target) -> dict[str, str]:
    versions = {"triton": triton_version(), "irscope": __version__, "python": platform.python_version()}
    if target.vendor == "nvidia":
        try:
            from triton.backends.nvidia.compiler import get_ptxas
            tool = get_ptxas(target.arch)
            versions["ptxas"] = str(tool.version)
            versions["ptxas_binary"] = Path(tool.path).name
        except Exception:  # noqa: BLE001 - a missing ptxas shows up as a failed cubin stage instead
            pass
    return versions


def _collect(result: CompileResult, kernel, target: Target, times, stdout: str, fd_log: str) -> None:
    asm = kernel.asm
    for stage in STAGES:
        if stage in asm and stage != "sass":
            result.stages[stage] = asm[stage]
    meta = kernel.metadata._asdict()
    meta["target"] = target.as_dict()
    result.triton_metadata = {k: jsonable(v) if not isinstance(v, (list, dict)) else v for k, v in meta.items()}
    if times is not None:
        result.times_ms["frontend"] = times.ir_initialization / 1e3
        for stage, us in times.lowering_stages:
            result.times_ms[stage] = us / 1e3
    resources = from_triton_metadata(meta)
    if "cubin" in result.stages:
        result.logs["ptxas"] = _ptxas_section(stdout)
        resources = parse_ptxas_log(result.logs["ptxas"]).merged(resources)
        try:
            result.logs["res-usage"] = tools.resource_usage(result.stages["cubin"])
            resources = resources.merged(parse_res_usage(result.logs["res-usage"]))
            started = time.perf_counter()
            result.stages["sass"] = tools.disassemble(result.stages["cubin"])
            result.times_ms["sass"] = (time.perf_counter() - started) * 1e3
        except EnvironmentProblem as e:
            result.logs["sass-error"] = e.message
    if "amdgcn" in result.stages:
        resources = amd_resources(result.stages["amdgcn"], meta).merged(resources)
    result.resources = resources
    if fd_log.strip():
        result.logs["compiler"] = fd_log


def _ptxas_section(stdout: str) -> str:
    lines = [ln for ln in stdout.splitlines() if "ptxas" in ln or ln.startswith("    ")]
    return "\n".join(lines) + ("\n" if lines else "")


def _record_failure(result: CompileResult, exc: Exception, cache_dir: Path, fn_name: str, target: Target,
                    log: str, stdout: str) -> None:
    done: dict[str, str | bytes] = {}
    for stage in STAGES:
        path = next(cache_dir.glob(f"*/{fn_name}.{stage}"), None)
        if path is not None:
            done[stage] = path.read_bytes() if stage in BINARY_STAGES else path.read_text()
    result.stages = done
    gluon = getattr(result.spec.fn, "is_gluon", lambda: False)()
    front = ["source", "glir"] if gluon else ["source", "ttir"]  # a Gluon kernel has no ttir (3.6: no glir)
    pipeline = front + ["ttgir", "llir", target.asm_stage, target.binary_stage]
    failed = next((s for s in pipeline if s not in done), pipeline[-1])
    message = _error_message(exc)
    if log.strip():
        result.logs["compiler"] = log
    if stdout.strip():
        result.logs["stdout"] = stdout
    diagnostics = [ln for ln in log.splitlines() if "error" in ln.lower()]
    if diagnostics and ("PassManager" in message or "error encountered during parsing" in message):
        # Triton says only that a pass manager (or the IR's verifier) failed; MLIR said why on stderr.
        message = diagnostics[0].strip() + " (" + message + ")"
    elif diagnostics and gluon and message.rstrip().endswith("^"):
        # A Gluon op's builder failed verification: Triton points at the line, MLIR said why on stderr.
        message += "\n" + diagnostics[0].strip()
    result.error = {"stage": failed, "type": type(exc).__name__, "message": message}
    result.not_cached = environmental_failure(result.error)


def _error_message(exc: Exception) -> str:
    text = str(exc).strip() or type(exc).__name__
    if type(exc).__name__ == "CompilationError" and getattr(exc, "error_message", None) is None:
        # Triton wraps what went wrong (a TypeError, an assertion) as the CompilationError's cause and
        # prints only where: add the what, innermost first-class message, as the last line.
        cause: BaseException | None = exc.__cause__
        while cause is not None and getattr(cause, "error_message", "") is None and cause.__cause__ is not None:
            cause = cause.__cause__
        if cause is not None:
            detail = getattr(cause, "error_message", None) or f"{type(cause).__name__}: {cause}".strip()
            text += "\n" + detail.strip().splitlines()[-1] if detail.strip() else ""
    if type(exc).__name__ == "PTXASError":
        lines = [ln for ln in text.splitlines() if "error" in ln.lower() and "Repro command" not in ln]
        return (lines[0] if lines else text.splitlines()[0]).strip()
    return text


# Exceptions of the machine, not of the kernel: a compile that failed with one is tried again next run.
_ENVIRONMENT_ERRORS = {"OSError", "FileNotFoundError", "PermissionError", "BlockingIOError", "InterruptedError",
                       "MemoryError", "ChildProcessError", "BrokenPipeError", "TimeoutError"}


_EXTERNAL_SIGNALS = frozenset((signal.SIGKILL, signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT))


def environmental_failure(error: dict | None) -> str:
    """Why a recorded failure ({"type", "message"}) is not the kernel's own, in words, or "" when it is
    the compiler's answer about this kernel (worth caching). A ptxas that a signal from outside killed
    (Triton: "`ptxas` failed with error code -9": out of memory, a Ctrl-C, a kill) crashed; a tool that cannot
    be found ("Cannot find ptxas") or an OSError (the disk full) is this machine's problem."""
    import re
    if not error:
        return ""
    kind, message = str(error.get("type") or ""), str(error.get("message") or "")
    code = re.search(r"`ptxas` failed with error code (-\d+)", message)
    if code:
        try:
            sig = signal.Signals(-int(code.group(1)))
        except ValueError:
            return ""
        # Killed from outside (the OOM killer, a Ctrl-C, a kill): another run may pass. A ptxas that
        # crashes by itself (SIGSEGV, SIGABRT from an assert) does so on this PTX every time: the answer.
        if sig in _EXTERNAL_SIGNALS:
            return f"ptxas was killed by signal {sig.name}"
    if kind == "RuntimeError" and message.startswith("Cannot find "):
        return message.splitlines()[0]
    if kind in _ENVIRONMENT_ERRORS:
        return f"{kind}: {message.splitlines()[0] if message else ''}".rstrip(": ")
    return ""


def raise_for(result: CompileResult) -> None:
    """Turn a failed result into the CompileError the CLI reports."""
    if result.error is None:
        return
    err = result.error
    summary = error_summary(err)
    raise CompileError(f"{result.spec.name} failed to compile for {result.target.name} at stage {err['stage']}: "
                       f"{summary}", "the stages that compiled are kept in the snapshot folder; `irscope show` it",
                       stage=err["stage"], log=err["message"])
