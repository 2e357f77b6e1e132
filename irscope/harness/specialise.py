"""Specialise a kernel like a real launch would: the JIT's own binder on stand-in tensors, for a chosen
`GPUTarget`, giving the signature, constexprs and attributes Triton's compiler gets, and the content key
of the compile. Also the backend's option set, and the checks that need Triton to answer.
"""
from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import math
import os
from typing import Any

from ..errors import EnvironmentProblem, UsageError
from ..spec.kernel import (DTYPE_BITS, TYPICAL_POINTER_ALIGNMENT, CompileOptions, KernelSpec, OptionField, Tensor,
                           TensorDesc, resolve)
from ..targets import Target



# A typical tensor's size in bytes, for AMD's buffer-op specialisation (tensors under 2 GB get
# tt.pointer_range=32 at launch).
_TYPICAL_TENSOR_BYTES = 1 << 26


class _FakeTensor:
    """What the JIT's specialiser looks at in a tensor: its address, dtype and (on AMD) its size."""

    def __init__(self, tensor: Tensor, address: int, nbytes: int = _TYPICAL_TENSOR_BYTES):
        self.dtype = tensor.dtype
        self._address = address
        self._nbytes = nbytes

    def data_ptr(self) -> int:
        return self._address

    def ptr_range(self) -> int:  # AMD: HIPBackend.is_within_2gb
        return self._nbytes


class _DescBase:
    """The base tensor of a stand-in descriptor: Triton's specialiser reads only its dtype."""

    def __init__(self, dtype: str):
        self.dtype = dtype

    def data_ptr(self) -> int:
        return TYPICAL_POINTER_ALIGNMENT


def tensor_descriptor(desc: TensorDesc, gluon: bool = False):
    """A real `TensorDescriptor` for a TensorDesc, over a stand-in base: the native specialiser accepts
    only that class (or a subclass), and reads `base.dtype` and `block_shape` alone (and, for Gluon's
    class, the shared `layout`, which is part of the type). Built without its `__post_init__`, which would
    ask a torch tensor for its itemsize; the shape was checked on parsing."""
    values = {"base": _DescBase(desc.dtype), "shape": list(desc.shape), "strides": list(desc.all_strides),
              "block_shape": list(desc.block_shape), "padding": desc.padding, "round_f32_to_tf32": False}
    if gluon:
        from triton.experimental.gluon.nvidia.hopper import TensorDescriptor
        values["layout"] = _nvmma_layout(desc)
    else:
        from triton.tools.tensor_descriptor import TensorDescriptor
    d = TensorDescriptor.__new__(TensorDescriptor)
    for f in getattr(TensorDescriptor, "__dataclass_fields__", values):
        object.__setattr__(d, f, values.get(f))
    return d


def _nvmma_layout(desc: TensorDesc):
    """The NVMMA shared layout of a Gluon descriptor: Gluon's default for the block (transposed, fp4-padded
    or CTA-tiled as asked), or exactly the layout asked for when its swizzle is given (a captured one)."""
    from triton.experimental.gluon import language as gl
    dtype = getattr(gl, _GLUON_DTYPES[desc.dtype])
    # only the fields asked for: an older Triton's layout may not have them all
    extra = {k: [list(b) for b in v] if k == "cga_layout" else v
             for k, v in desc.layout_fields.items() if k != "swizzle"}
    if desc.swizzle is None:
        return gl.NVMMASharedLayout.get_default_for(list(desc.block_shape), dtype, **extra)
    return gl.NVMMASharedLayout(swizzle_byte_width=desc.swizzle, element_bitwidth=dtype.primitive_bitwidth,
                                rank=len(desc.block_shape), **extra)


# irscope's (Triton's) dtype names -> the names of Gluon's dtype objects, for every dtype irscope takes
_GLUON_DTYPES = {"fp8e4nv": "float8e4nv", "fp8e5": "float8e5", "fp8e4b15": "float8e4b15", "fp8e4b8": "float8e4b8",
                 "fp8e5b16": "float8e5b16", "fp16": "float16", "bf16": "bfloat16", "fp32": "float32",
                 "fp64": "float64", "i1": "int1", "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64",
                 "u8": "uint8", "u16": "uint16", "u32": "uint32", "u64": "uint64"}


def _check_descriptor(spec: KernelSpec, name: str, desc: TensorDesc, gluon: bool) -> None:
    """What Triton's own descriptor classes would refuse at the launch, refused here as a usage error:
    a Gluon descriptor of elements other than 8, 16 or 32 bits (TensorDescriptor asserts it), or a
    shared layout asked for a @triton.jit kernel's descriptor, which has none (it would be ignored); and
    strides no launch could have: TensorDescriptor asserts, when it is made, that the last stride is 1
    and every other is a multiple of 16 bytes (the compiled code does not depend on them)."""
    strides = desc.strides or desc.contiguous_strides
    elem = max(1, (DTYPE_BITS.get(desc.dtype) or 8) // 8)
    if strides[-1] != 1 or any(st * elem % 16 for st in strides[:-1]):
        row = 16 // math.gcd(16, elem)
        raise UsageError(f"{spec.fn_name}'s {name}: strides {list(strides)} of {desc.dtype} ({elem} B an element) "
                         "cannot be a tensor descriptor's: the last must be 1 and every other a multiple of 16 B "
                         "(Triton's TensorDescriptor asserts it when it is made)",
                         f"give a contiguous last dimension and rows of a multiple of {row} {desc.dtype} elements, "
                         f"e.g. desc:{desc.dtype}[{','.join(map(str, desc.shape[:-1] + (-(-desc.shape[-1] // row) * row,)))}]"
                         f"/[{','.join(map(str, desc.block_shape))}]")
    if gluon:
        bits = DTYPE_BITS.get(desc.dtype)
        if bits not in (8, 16, 32):
            raise UsageError(f"{spec.fn_name}'s {name} is a Gluon tensor descriptor of {desc.dtype}, and Gluon's "
                             f"TensorDescriptor takes 8-, 16- or 32-bit elements only",
                             "give it a dtype such as fp8e4nv, fp16, bf16, fp32, i8 or i32")
    elif desc.layout_fields:
        asked = ", ".join(f"{k}={v}" for k, v in desc.layout_fields.items())
        raise UsageError(f"{spec.fn_name}'s {name}: {asked} is the shared layout of a Gluon descriptor, and "
                         f"{spec.fn_name} is a @triton.jit kernel, whose descriptors carry none (Triton picks the "
                         "layout itself)", f"leave the layout out of {name}")


def source_of(fn, signature: dict, constexprs: dict, attrs: dict):
    """What `triton.compile` takes for this kernel, as the JIT builds it: an `ASTSource`, or for a
    `@gluon.jit` kernel Gluon's own source (it sets the module's warps, CTAs and threads per warp before
    the kernel's explicit layouts are built, and adds the `glir` stage in 3.9). 3.6 and 3.9 alike."""
    from triton.compiler import ASTSource
    if getattr(fn, "is_gluon", lambda: False)():
        from triton.experimental.gluon._runtime import GluonASTSource
        return GluonASTSource(fn, signature, constexprs, attrs)
    return ASTSource(fn, signature, constexprs, attrs)


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

    gluon = getattr(fn, "is_gluon", lambda: False)()
    call_args = []
    for i, p in enumerate(params):
        if p.is_constexpr:
            value = resolved.constexprs.get(p.name, p.default)
        else:
            value = resolved.args[p.name]
            if isinstance(value, Tensor):
                value = _FakeTensor(value, TYPICAL_POINTER_ALIGNMENT * (i + 1) * 4096,
                                    (1 << 32) if opts.large_tensors else _TYPICAL_TENSOR_BYTES)
            elif isinstance(value, TensorDesc):
                _check_descriptor(spec, p.name, value, gluon)
                value = tensor_descriptor(value, gluon=gluon)
        call_args.append(value)
    kwargs = _jit_kwargs(fn)
    if resolved.num_warps is not None:
        kwargs["num_warps"] = resolved.num_warps
    if resolved.num_stages is not None:
        kwargs["num_stages"] = resolved.num_stages
    kwargs.update(resolved.backend_options)

    binder = create_function_from_signature(fn.signature, fn.params, backend)
    # keyword-only parameters (`def k(x_ptr, *, BLOCK: tl.constexpr)`) are passed by name, as a launch must
    keyword_only = [p.kind == p.KEYWORD_ONLY for p in fn.signature.parameters.values()]
    positional = [v for v, kw in zip(call_args, keyword_only) if not kw]
    by_name = {p.name: v for p, v, kw in zip(params, call_args, keyword_only) if kw}
    try:
        with _no_amd_torch_probe():
            bound, specialization, binder_opts = binder(*positional, **by_name, **kwargs)
        options, signature, constexprs, attrs = fn._pack_args(backend, kwargs, bound, specialization, binder_opts)
    except KeyError as e:  # resolve has checked the names already; this is Triton disagreeing
        known = sorted(option_fields(backend))
        raise UsageError(f"Triton refused an option for {target.name}: {e.args[0] if e.args else e}",
                         f"options Triton knows for {target.name}: {', '.join(known)}") from None
    except (TypeError, AssertionError, ValueError, OverflowError) as e:  # Overflow: an integer past 64 bits
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
            entry.update(kind="constexpr", value=jsonable(value))
        elif ty == "constexpr":
            entry.update(kind="constant", value=jsonable(value),
                         why="None is passed to the kernel as a constexpr" if value is None else
                         "an integer equal to 1 is specialised into the kernel as a constant")
        elif ty.startswith("tensordesc"):
            entry.update(kind="descriptor", value=str(resolved.args[p.name]),
                         why="a descriptor is specialised on its dtype and block shape only")
        else:
            is_ptr = ty.startswith("*")
            entry["kind"] = "tensor" if is_ptr else "scalar"
            entry["value"] = str(resolved.args[p.name]) if is_ptr else jsonable(resolved.args[p.name])
            if key in attrs:
                d = per_arg.get(p.name)
                if (d or 1) > 1 and p.do_not_specialize_on_alignment:
                    _no_divisibility(spec, p, entry, d)
                if d is None and global_div and not p.do_not_specialize and not p.do_not_specialize_on_alignment:
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
        if per_arg.get(p.name, 1) > 1 and "divisibility" not in entry:
            _no_divisibility(spec, p, entry, per_arg[p.name])
        record.append(entry)
    return backend, options, signature, constexprs, attrs, record


def _no_divisibility(spec: KernelSpec, p, entry: dict, d: int) -> None:
    """`--divisibility NAME=D` for an argument the JIT gives no divisibility attribute: refused, since it
    would change nothing, silently (the variant's folder name would still say `NAME.divD`)."""
    why = ("it is marked do_not_specialize" if p.do_not_specialize else
           "it is marked do_not_specialize_on_alignment" if p.do_not_specialize_on_alignment else
           "it is None, a constexpr" if entry["kind"] == "constant" and entry["value"] is None else
           "an integer equal to 1 is compiled in as a constant" if entry["kind"] == "constant" else
           "a tensor descriptor is specialised on its dtype and block shape only" if entry["kind"] == "descriptor"
           else f"it is {entry['type']}, and only pointers and integers get one")
    raise UsageError(f"--divisibility {p.name}={d}: {spec.fn_name}'s {p.name} gets no divisibility attribute from "
                     f"Triton's JIT ({why}), so there is nothing to assume",
                     "give --divisibility NAME=D for a pointer or integer argument the JIT specialises")


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


@contextlib.contextmanager
def _no_amd_torch_probe():
    """HIPBackend.is_within_2gb imports torch on first use just to isinstance-check; our stand-ins answer
    through ptr_range(), so skip the (slow) import while the binder runs, and only then: the flag is the
    class's, and a real launch later in this process (a test that compiles a golden, then runs torch
    tensors on an AMD GPU) must still see its tensors' sizes and keep buffer ops (tt.pointer_range=32)."""
    try:
        from triton.backends.amd.compiler import HIPBackend
    except ImportError:
        yield
        return
    if hasattr(HIPBackend, "_torch_available"):  # Triton 3.9: imports torch once, unless told it is absent
        before = HIPBackend._torch_available
        if before is None:
            HIPBackend._torch_available = False
        try:
            yield
        finally:
            if before is None and HIPBackend._torch_available is False:
                HIPBackend._torch_available = None
        return
    if importlib.util.find_spec("torch") is None:  # Triton 3.6: imports torch unconditionally
        HIPBackend.is_within_2gb = staticmethod(
            lambda arg: hasattr(arg, "ptr_range") and arg.ptr_range() <= 2**31 - 1)
    yield


def jsonable(value: Any) -> Any:
    if isinstance(value, (int, float, str, bool)) or value is None:
        return value
    return str(value)


# Environment variables Triton reads that change the code it emits (not where it caches or what it prints):
# a snapshot compiled under one of them is another compile. Names with these prefixes count, less the
# ones below that only move files, print or turn irscope's own capture on.
_CODEGEN_ENV_PREFIXES = ("TRITON_", "AMDGCN_", "DISABLE_", "NVPTX_", "ROCM_", "HIP_")
_NOT_CODEGEN = {"TRITON_CACHE_DIR", "TRITON_HOME", "TRITON_DUMP_DIR", "TRITON_OVERRIDE_DIR", "TRITON_KERNEL_DUMP",
                "TRITON_ALWAYS_COMPILE", "TRITON_PRINT_AUTOTUNING", "TRITON_INTERPRET", "TRITON_CACHE_MANAGER",
                "TRITON_REMOTE_CACHE_BACKEND", "TRITON_KERNEL_OVERRIDE", "TRITON_STORE_BINARY_ONLY",
                "TRITON_ENABLE_LLVM_DEBUG", "TRITON_LLVM_DEBUG_ONLY", "TRITON_DEBUG", "TRITON_FRONT_END_DEBUGGING",
                "DISABLE_LLVM_OPT_PRINT", "TRITON_DEFAULT_FP_FUSION_WARNED",
                # which ptxas runs is in the key as its release (assembler_identity), not as where it lies
                "TRITON_PTXAS_PATH", "TRITON_PTXAS_BLACKWELL_PATH"}


def codegen_environment() -> dict[str, str]:
    """The environment variables set now that change what Triton emits (recorded in the snapshot and its
    content key: AMDGCN_USE_BUFFER_OPS=0, TRITON_F32_DEFAULT=ieee, DISABLE_LLVM_OPT=1 ...)."""
    env = {k: v for k, v in sorted(os.environ.items())
           if k.startswith(_CODEGEN_ENV_PREFIXES) and k not in _NOT_CODEGEN and not k.startswith("TRITON_DUMP")}
    if env.get("TRITON_DEFAULT_FP_FUSION") == "1":  # Triton's default, which specialise() sets to quiet 3.9
        del env["TRITON_DEFAULT_FP_FUSION"]
    return env


def content_key(spec: KernelSpec, target: Target, compile_options: dict, record: list[dict], line_info: bool,
                backend_options: dict | None = None, environment: dict | None = None) -> str:
    """A hash of everything that decides a compile's output: the kernel's source (with the jit functions
    it calls), the target, the options (Triton's whole parsed option set: maxnreg, fp fusion...), the
    specialisation, the code-generating environment, the Triton version, the assembler that makes the
    binary (ptxas: a CUDA toolkit's ptxas named by TRITON_PTXAS_PATH, or one upgraded in place, changes
    the cubin and SASS under the same Triton) and the snapshot format irscope writes."""
    from ..store.snapshot import FORMAT
    payload = json.dumps({"fn": spec.fn.cache_key, "target": target.as_dict(), "options": compile_options,
                          "backend_options": backend_options or {}, "environment": environment or {},
                          "specialisation": record, "triton": triton_version(), "line_info": line_info,
                          "assembler": assembler_identity(target), "format": FORMAT},
                         sort_keys=True, default=str)
    return hashlib.sha256(payload.encode()).hexdigest()


def assembler_identity(target: Target) -> str:
    """The ptxas an NVIDIA target's compile runs, as its file name and release ("" for AMD, whose assembler is
    inside Triton's own LLVM, covered by the Triton version). Not its folder: the same ptxas in another
    virtual environment, or on a cluster's worker, makes the same binary. Triton caches the answer per path."""
    if target.vendor != "nvidia":
        return ""
    try:
        from triton.backends.nvidia.compiler import get_ptxas
        tool = get_ptxas(target.arch)
        return f"{os.path.basename(tool.path)} {tool.version}"
    except Exception:  # noqa: BLE001 - a missing ptxas fails the compile itself, with its own message
        return "unavailable"


def backend_options_of(options) -> dict:
    """Triton's parsed option set as irscope.json records it."""
    return {k: jsonable(v) for k, v in sorted(options.__dict__.items()) if k != "extern_libs"}


def plan(spec: KernelSpec, target: Target, opts: CompileOptions) -> tuple[str, dict, list[dict]]:
    """The content key, compile options and specialisation of a compile, without compiling."""
    backend, options, signature, constexprs, attrs, record = specialise(spec, target, opts)
    compile_options = compile_options_of(spec, options, constexprs, opts)
    key = content_key(spec, target, compile_options, record, opts.line_info, backend_options_of(options),
                      codegen_environment())
    return key, compile_options, record


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


def compile_options_of(spec: KernelSpec, options, constexprs: dict, opts: CompileOptions) -> dict:
    names = spec.fn.arg_names
    out = {"num_warps": options.num_warps, "num_stages": getattr(options, "num_stages", None),
           "constexprs": {names[k[0]]: jsonable(v) for k, v in constexprs.items() if len(k) == 1}}
    if spec.tuning is not None and spec.tuning.heuristics:  # which values @triton.heuristics chose
        from ..spec.autotune import recorded
        out["heuristics"] = {k: jsonable(v) for k, v in recorded(spec, opts, out["constexprs"], options).items()}
    return out


