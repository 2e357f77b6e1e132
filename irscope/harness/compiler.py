"""The one module that calls Triton's compiler: specialise a kernel like the JIT would, compile it for a
`GPUTarget` with no GPU, and collect every stage.

Triton's internal API moves between releases; every difference between the versions irscope supports
(3.6 on the GPU machine, 3.9 here) is handled in this file and nowhere else.
"""
from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import inspect
import io
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from .. import __version__
from . import tools
from ..errors import CompileError, EnvironmentProblem, UsageError, error_summary
from ..ir.resources import Resources, amd_resources, from_triton_metadata, parse_ptxas_log, parse_res_usage
from ..spec.kernel import (TYPICAL_POINTER_ALIGNMENT, CompileOptions, KernelSpec, OptionField, Tensor, resolve,
                           variant_name)
from ..ir.stages import BINARY_STAGES, STAGES
from ..targets import Target


# A typical tensor's size in bytes, for AMD's buffer-op specialisation (tensors under 2 GB get
# tt.pointer_range=32 at launch).
_TYPICAL_TENSOR_BYTES = 1 << 26


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
    triton_metadata: dict = field(default_factory=dict)
    times_ms: dict[str, float] = field(default_factory=dict)
    logs: dict[str, str] = field(default_factory=dict)  # ptxas -v log, cuobjdump res-usage, compiler stderr
    versions: dict[str, str] = field(default_factory=dict)
    resources: Resources = field(default_factory=Resources)
    content_key: str = ""
    python_source: str = ""
    error: dict | None = None  # {"stage", "type", "message"} when the compile failed
    passes: Any = None  # irscope.passes.record.PassCapture when options.passes asked for the pass timeline

    @property
    def ok(self) -> bool:
        return self.error is None


class _FakeTensor:
    """What the JIT's specialiser looks at in a tensor: its address, dtype and (on AMD) its size."""

    def __init__(self, tensor: Tensor, address: int):
        self.dtype = tensor.dtype
        self._address = address

    def data_ptr(self) -> int:
        return self._address

    def ptr_range(self) -> int:  # AMD: HIPBackend.is_within_2gb
        return _TYPICAL_TENSOR_BYTES


def triton_version() -> str:
    import triton
    return triton.__version__


def gpu_target(target: Target):
    from triton.backends.compiler import GPUTarget
    return GPUTarget(target.backend, target.arch, target.warp_size)


def _make_backend(target: Target):
    from triton.compiler.compiler import make_backend
    try:
        return make_backend(gpu_target(target))
    except Exception as e:  # noqa: BLE001 - Triton raises bare RuntimeError/ValueError here
        raise EnvironmentProblem(f"Triton {triton_version()} cannot compile for {target.name}: {e}",
                                 "install a Triton with the nvidia and amd backends (pip install triton)") from None


def check_tools(target: Target) -> None:
    """Fail early, with a hint, when Triton cannot find the assembler a target needs."""
    if target.vendor != "nvidia":
        return
    from triton.backends.nvidia.compiler import get_ptxas
    try:
        get_ptxas(target.arch).version
    except (RuntimeError, OSError) as e:
        raise EnvironmentProblem(f"Triton {triton_version()} cannot run ptxas for {target.name}: {e}",
                                 "reinstall triton (its wheel ships ptxas), or point TRITON_PTXAS_PATH / "
                                 "TRITON_PTXAS_BLACKWELL_PATH at a CUDA toolkit's ptxas") from None


def _jit_kwargs(fn) -> dict:
    """The options the JIT adds to every launch (JITFunction.run), in the spelling of this Triton."""
    from triton import knobs
    kwargs: dict[str, Any] = {"debug": bool(getattr(fn, "debug", False)) or bool(knobs.runtime.debug)}
    for name in ("instrumentation_mode", "fpsan_homomorphic_casts"):  # 3.6 has the first, 3.9 both
        if hasattr(knobs.compilation, name):
            kwargs[name] = getattr(knobs.compilation, name)
    return kwargs


def specialise(spec: KernelSpec, target: Target, opts: CompileOptions):
    """Specialise like a real launch: returns (backend, options, signature, constexprs, attrs, record).

    The JIT's own binder (`create_function_from_signature`) and `_pack_args` do the work on stand-in
    tensors, so the rules are Triton's, including `do_not_specialize` and AMD's buffer-op ranges.
    """
    from triton.runtime.jit import create_function_from_signature

    os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")  # Triton 3.9's default, without its warning
    fn = spec.fn
    params = list(fn.params)
    constexpr_names = [p.name for p in params if p.is_constexpr]
    backend = _make_backend(target)
    annotations = {p.name: getattr(p, "annotation_type", "") or "" for p in params}
    resolved = resolve(spec, opts, [p.name for p in params], constexpr_names, annotations=annotations,
                       option_fields=option_fields(backend), warp_size=target.warp_size,
                       max_threads=target.max_threads_per_block, target=target.name)
    _disable_amd_torch_probe()

    call_args = []
    for i, p in enumerate(params):
        if p.is_constexpr:
            value = resolved.constexprs.get(p.name, p.default)
        else:
            value = resolved.args[p.name]
            if isinstance(value, Tensor):
                value = _FakeTensor(value, TYPICAL_POINTER_ALIGNMENT * (i + 1) * 4096)
        call_args.append(value)
    kwargs = _jit_kwargs(fn)
    if resolved.num_warps is not None:
        kwargs["num_warps"] = resolved.num_warps
    if resolved.num_stages is not None:
        kwargs["num_stages"] = resolved.num_stages
    kwargs.update(resolved.backend_options)

    binder = create_function_from_signature(fn.signature, fn.params, backend)
    try:
        bound, specialization, binder_opts = binder(*call_args, **kwargs)
        options, signature, constexprs, attrs = fn._pack_args(backend, kwargs, bound, specialization, binder_opts)
    except KeyError as e:  # resolve has checked the names already; this is Triton disagreeing
        known = sorted(option_fields(backend))
        raise UsageError(f"Triton refused an option for {target.name}: {e.args[0] if e.args else e}",
                         f"options Triton knows for {target.name}: {', '.join(known)}") from None
    except (TypeError, AssertionError, ValueError) as e:
        raise UsageError(f"cannot specialise {spec.fn_name} for {target.name}: {e}",
                         "check the --arg, --constexpr and --option values") from None

    record = []
    global_div = [d for name, d in opts.divisibility if name is None]
    per_arg = {name: d for name, d in opts.divisibility if name is not None}
    for i, p in enumerate(params):
        ty = signature[p.name]
        key = (i,)
        entry: dict[str, Any] = {"name": p.name, "type": ty}
        value = call_args[i]
        if p.is_constexpr:
            entry.update(kind="constexpr", value=_jsonable(value))
        elif ty == "constexpr":
            entry.update(kind="constant", value=_jsonable(value),
                         why="an integer equal to 1 is specialised into the kernel as a constant")
        else:
            is_ptr = ty.startswith("*")
            entry["kind"] = "tensor" if is_ptr else "scalar"
            entry["value"] = str(resolved.args[p.name]) if is_ptr else _jsonable(resolved.args[p.name])
            if key in attrs:
                d = per_arg.get(p.name)
                if d is None and global_div and not p.do_not_specialize:
                    d = global_div[-1]
                    typical = TYPICAL_POINTER_ALIGNMENT if is_ptr else value
                    if isinstance(typical, int) and not isinstance(typical, bool) and typical % d:
                        d = 1
                if d is not None:
                    rest = [a for a in attrs[key] if a[0] != "tt.divisibility"]
                    attrs[key] = ([["tt.divisibility", d]] if d > 1 else []) + rest
                div = [a[1] for a in attrs[key] if a[0] == "tt.divisibility"]
                entry["divisibility"] = div[0] if div else 1
                extra = {a[0]: a[1] for a in attrs[key] if a[0] != "tt.divisibility"}
                if extra:
                    entry["attrs"] = extra
        record.append(entry)
    return backend, options, signature, constexprs, attrs, record


def target_option_fields(target: Target) -> dict[str, OptionField]:
    """The backend options Triton knows for a target (`option_fields` of its backend)."""
    os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
    return option_fields(_make_backend(target))


def option_fields(backend) -> dict[str, OptionField]:
    """The backend options Triton knows for a backend, with the kind of value each takes: the fields of
    its options dataclass (CUDAOptions, HIPOptions), typed by annotation, else by default value."""
    import dataclasses
    import typing

    defaults = backend.parse_options({})
    hints: dict[str, Any] = {}
    try:
        hints = typing.get_type_hints(type(defaults))
    except Exception:  # noqa: BLE001 - a string annotation this Python cannot evaluate: use the defaults
        pass
    out = {}
    for f in dataclasses.fields(defaults):
        if f.name in ("arch", "backend_name"):  # set by the target, never by the user
            continue
        default = getattr(defaults, f.name, None)
        out[f.name] = OptionField(f.name, _option_kind(hints.get(f.name, f.type), default), default)
    return out


def _option_kind(annotation: Any, default: Any) -> str:
    import typing

    if typing.get_origin(annotation) is typing.Union:  # Optional[int] -> int
        inner = [a for a in typing.get_args(annotation) if a is not type(None)]
        annotation = inner[0] if len(inner) == 1 else annotation
    origin = typing.get_origin(annotation) or annotation
    kinds = {bool: "boolean", int: "integer", float: "number", str: "word", tuple: "list", list: "list",
             dict: "mapping"}
    if isinstance(origin, type) and origin in kinds:
        if origin is bool and isinstance(default, int) and not isinstance(default, bool):
            return "integer"  # CUDAOptions.max_num_imprecise_acc_default: annotated bool, holds a count
        return kinds[origin]
    if default is not None:
        return next((k for t, k in kinds.items() if isinstance(default, t)), "word")
    return "word"


def _disable_amd_torch_probe() -> None:
    # HIPBackend.is_within_2gb imports torch on first use just to isinstance-check; our stand-ins
    # answer through ptr_range(), so skip the (slow) import.
    try:
        from triton.backends.amd.compiler import HIPBackend
    except ImportError:
        return
    if hasattr(HIPBackend, "_torch_available"):  # Triton 3.9: imports torch once, unless told it is absent
        if HIPBackend._torch_available is None:
            HIPBackend._torch_available = False
    elif importlib.util.find_spec("torch") is None:  # Triton 3.6: imports torch unconditionally
        HIPBackend.is_within_2gb = staticmethod(
            lambda arg: hasattr(arg, "ptr_range") and arg.ptr_range() <= 2**31 - 1)


def _jsonable(value: Any) -> Any:
    if isinstance(value, (int, float, str, bool)) or value is None:
        return value
    return str(value)


def content_key(spec: KernelSpec, target: Target, compile_options: dict, record: list[dict], line_info: bool) -> str:
    """A hash of everything that decides a compile's output: the kernel's source (with the jit functions
    it calls), the target, the options, the specialisation and the Triton version."""
    payload = json.dumps({"fn": spec.fn.cache_key, "target": target.as_dict(), "options": compile_options,
                          "specialisation": record, "triton": triton_version(), "line_info": line_info},
                         sort_keys=True, default=str)
    return hashlib.sha256(payload.encode()).hexdigest()


def plan(spec: KernelSpec, target: Target, opts: CompileOptions) -> tuple[str, dict, list[dict]]:
    """The content key, compile options and specialisation of a compile, without compiling."""
    backend, options, signature, constexprs, attrs, record = specialise(spec, target, opts)
    compile_options = _compile_options(spec, options, constexprs, opts)
    return content_key(spec, target, compile_options, record, opts.line_info), compile_options, record


def warm_up(targets: list[Target] | tuple[Target, ...] = ()) -> None:
    """Do once, before forking compile workers, what every compile would otherwise repeat in its own
    process: hashing Triton's files for its cache key (about 0.5 s) and asking ptxas for its version.
    Children forked afterwards inherit the results."""
    from triton.runtime.cache import triton_key
    triton_key()
    for target in targets:
        if target.vendor == "nvidia":
            try:
                from triton.backends.nvidia.compiler import get_ptxas
                get_ptxas(target.arch)
            except Exception:  # noqa: BLE001 - a missing ptxas shows up in the compile itself
                pass


def _compile_options(spec: KernelSpec, options, constexprs: dict, opts: CompileOptions) -> dict:
    names = spec.fn.arg_names
    out = {"num_warps": options.num_warps, "num_stages": getattr(options, "num_stages", None),
           "constexprs": {names[k[0]]: _jsonable(v) for k, v in constexprs.items() if len(k) == 1}}
    if spec.tuning is not None and spec.tuning.heuristics:  # which values @triton.heuristics chose
        from ..spec.autotune import recorded
        out["heuristics"] = {k: _jsonable(v) for k, v in recorded(spec, opts, out["constexprs"], options).items()}
    return out


def compile_kernel(spec: KernelSpec, target: Target, opts: CompileOptions, *, capture_fds: bool = False) -> CompileResult:
    """Compile one kernel for one target. Failures are returned in `result.error`, with the stages that
    did compile; only bad requests (unknown names, malformed values) raise.

    `capture_fds` also redirects file descriptors 1 and 2, so that MLIR and LLVM diagnostics (written by
    C++ straight to stderr) land in the result: only safe in a child process. `opts.passes` turns on
    Triton's per-pass dumps, which come the same way (so it redirects them even in this process).
    """
    import triton
    from triton import knobs
    from triton.compiler import ASTSource

    backend, options, signature, constexprs, attrs, record = specialise(spec, target, opts)
    result = CompileResult(spec=spec, target=target, options=opts, variant=variant_name(spec, opts))
    result.specialisation = record
    result.compile_options = _compile_options(spec, options, constexprs, opts)
    result.backend_options = {k: _jsonable(v) for k, v in sorted(options.__dict__.items()) if k != "extern_libs"}
    result.python_source = _python_source(spec)
    result.content_key = content_key(spec, target, result.compile_options, record, opts.line_info)
    result.versions = _versions(target)

    captured: dict[str, Any] = {}

    def listener(**event: Any) -> None:
        captured["times"] = event.get("times")

    cache_dir = Path(tempfile.mkdtemp(prefix="irscope-triton-cache-"))
    stdout = io.StringIO()
    failure: Exception | None = None
    started = time.perf_counter()
    try:
        with knobs.cache.scope(), knobs.compilation.scope(), knobs.nvidia.scope(), \
                _pass_dumps(opts.passes) as recorder, \
                _captured_fds(capture_fds or recorder is not None, recorder) as fd_log, \
                contextlib.redirect_stdout(stdout):
            knobs.cache.dir = str(cache_dir)
            knobs.compilation.always_compile = True
            knobs.compilation.disable_line_info = not opts.line_info
            knobs.compilation.listener = listener
            knobs.nvidia.dump_ptxas_log = True
            try:
                kernel = triton.compile(ASTSource(spec.fn, signature, constexprs, attrs), target=gpu_target(target),
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


class _FdLog:
    def __init__(self) -> None:
        self.text = ""

    def getvalue(self) -> str:
        return self.text


@contextlib.contextmanager
def _captured_fds(enabled: bool, recorder=None) -> Iterator[_FdLog]:
    """Redirect fds 1 and 2 to a file; its text becomes the log, or goes through `recorder` (pass
    dumps, read as a stream: they can be 150 MB), which returns what is left."""
    log = _FdLog()
    if not enabled:
        yield log
        return
    sys.stdout.flush()
    sys.stderr.flush()
    with tempfile.TemporaryFile(mode="w+b") as tmp:
        saved = [os.dup(1), os.dup(2)]
        os.dup2(tmp.fileno(), 1)
        os.dup2(tmp.fileno(), 2)
        try:
            yield log
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved:
                os.close(fd)
            tmp.seek(0)
            log.text = recorder.read(tmp) if recorder is not None else tmp.read().decode(errors="replace")


@contextlib.contextmanager
def _pass_dumps(level: str) -> Iterator[Any]:
    """Turn on Triton's per-pass IR dumps (to stderr, which the caller captures) and mark where each
    stage starts and what IR it ends with; yields the PassRecorder that reads them (None: off).

    MLIR_ENABLE_DUMP prints the module before every pass of each `pm.enable_debug()` pass manager;
    MLIR_DUMP_PATH is cleared because Triton opens that file once per process and buffers it.
    Each pass manager's pipeline string tells the passes it runs from those nested inside them.
    LLVM_IR_ENABLE_DUMP (level "all") adds LLVM's print-after-all. docs/passes.md has the details.
    Like the fd capture, this changes process-wide state for the length of one compile.
    """
    if not level:
        yield None
        return
    if level not in ("mlir", "all"):
        raise UsageError(f"unknown pass capture '{level}'", "--passes records Triton's MLIR passes; --passes all "
                         "adds LLVM's")
    from triton import knobs
    from triton._C.libtriton import ir

    from ..passes.dump import final_marker, pipeline_marker, stage_marker
    from ..passes.record import PassRecorder

    previous = knobs.runtime.add_stages_inspection_hook
    original_run = ir.pass_manager.run

    def run_pipeline(pm, *args, **kwargs):  # say which passes this pass manager runs at its top level
        os.write(2, pipeline_marker(pm.get_pipeline_str()))
        return original_run(pm, *args, **kwargs)

    def marked(stage: str, fn):
        def run(src, metadata):
            os.write(2, stage_marker(stage))
            out = fn(src, metadata)
            if hasattr(src, "get_int_attr"):  # an MLIR module, changed in place: the IR its last pass left
                os.write(2, final_marker(stage, str(src)))
            return out
        return run

    def hook(*args):
        if not args:  # Triton 3.9 asks for a part of the cache key first (3.6 does not)
            key, digest = previous() if previous is not None else ("", "")
            return key + "+irscope-passes", digest
        if previous is not None:
            previous(*args)
        stages = args[1]
        for name, fn in list(stages.items()):
            stages[name] = marked(name, fn)

    env = {"MLIR_ENABLE_DUMP": "1", "MLIR_DUMP_PATH": None, "LLVM_IR_ENABLE_DUMP": "1" if level == "all" else None}
    saved = _set_environ(env)
    try:
        with knobs.runtime.scope():
            knobs.runtime.add_stages_inspection_hook = hook
            ir.pass_manager.run = run_pipeline
            yield PassRecorder(level)
    finally:
        ir.pass_manager.run = original_run
        _set_environ(saved)


def _set_environ(values: dict[str, str | None]) -> dict[str, str | None]:
    """Set (None: unset) environment variables the C++ side reads; returns their previous values."""
    saved = {k: os.environ.get(k) for k in values}
    for k, v in values.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
    return saved


def _python_source(spec: KernelSpec) -> str:
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
    result.triton_metadata = {k: _jsonable(v) if not isinstance(v, (list, dict)) else v for k, v in meta.items()}
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
    pipeline = ["source", "ttir", "ttgir", "llir", target.asm_stage, target.binary_stage]
    failed = next((s for s in pipeline if s not in done), pipeline[-1])
    message = _error_message(exc)
    if log.strip():
        result.logs["compiler"] = log
    if stdout.strip():
        result.logs["stdout"] = stdout
    diagnostics = [ln for ln in log.splitlines() if "error" in ln.lower()]
    if diagnostics and "PassManager" in message:
        message = diagnostics[0].strip() + " (" + message + ")"
    result.error = {"stage": failed, "type": type(exc).__name__, "message": message}


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


def raise_for(result: CompileResult) -> None:
    """Turn a failed result into the CompileError the CLI reports."""
    if result.error is None:
        return
    err = result.error
    summary = error_summary(err)
    raise CompileError(f"{result.spec.name} failed to compile for {result.target.name} at stage {err['stage']}: "
                       f"{summary}", "the stages that compiled are kept in the snapshot folder; `irscope show` it",
                       stage=err["stage"], log=err["message"])
