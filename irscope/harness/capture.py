"""Record every distinct Triton launch of a running program, once per specialisation.

`install(target, mode)` hooks the one place every JIT compile passes through, `triton.compiler.compile`
as `JITFunction.create_binder` imports it, so the JIT's own binder, specialiser, autotuner, heuristics
and grid code run unchanged and irscope only writes down what they decided:

* mode "record" (no GPU): a fake active driver answers the runtime and the compile returns a
  `StubKernel` (capture_driver.py); nothing is compiled or executed, the program goes on with the
  outputs it allocated.
* mode "interpret" (`--execute`): kernels run in Triton's interpreter; before each, a shadow
  `JITFunction` of the same function goes through the JIT under the fake driver to be recorded. A
  `@gluon.jit` kernel (which the interpreter cannot run) raises GluonNotInterpreted at its launch, and the
  capture is refused.
* mode "gpu": the real compile runs; its kernel's launcher is wrapped once and unwraps itself at its
  first launch (which gives the grid), so later launches cost nothing extra.

Compiles that do not go through the JIT (`triton.compile(ASTSource(...))`, as Inductor does) are seen
through `knobs.compilation.listener`. `Recorder.document()` is the launch file (irscope.store.launches).
"""
from __future__ import annotations

import hashlib
import json
import linecache
import os
import sys
import threading
import tokenize
import traceback
from dataclasses import dataclass, field
from typing import Any

from . import capture_driver

_SKIP_FRAMES = (os.sep + "triton" + os.sep, os.sep + "irscope" + os.sep + "harness" + os.sep, "<frozen ", "runpy.py")
_JIT_FLAGS = ("debug", "instrumentation_mode", "fpsan_homomorphic_casts", "arch", "backend_name")


class Unrecordable(Exception):
    """A launch irscope cannot write down (an argument of a kind the launch file has no word for)."""


class GluonNotInterpreted(RuntimeError):
    """Raised into the program at a `@gluon.jit` launch in interpret mode: Triton's interpreter cannot run
    Gluon (`gluon.jit` ignores TRITON_INTERPRET), and a stub would leave the kernel's outputs unwritten."""


@dataclass
class _Pending:
    fn: Any
    src: Any
    options: dict
    first_call: str
    via: str = "jit"
    grid: tuple | None = None
    args: list | None = None
    stub: Any = None
    jit_stages: dict = field(default_factory=dict)
    error: str = ""
    wrappers: tuple = ()  # the objects launching it (autotuner, heuristics): see _wrappers_on_stack


class Recorder:
    """What one program launched: kernels by id, launches in order, and what could not be recorded."""

    def __init__(self, target, mode: str, line_info: bool = True):
        self.target = target  # irscope.targets.Target the JIT specialises for (the fake driver's, or the GPU's)
        self.mode = mode
        self.line_info = line_info
        self.pending: list[_Pending] = []
        self.kernels: dict[str, dict] = {}
        self._kernel_ids: dict[int, str] = {}
        self._names: dict[str, str] = {}
        self._in_jit = threading.local()
        self._defaults: dict | None = None
        self.emulation: dict | None = None  # what `--as` presented to the program (capture_emulate.py)
        self.environment: dict[str, str] = {}  # what the program set in its own os.environ
        # Why the capture is refused, as capture_boot tells the parent (error, hint): a Gluon launch to interpret
        self.refused: dict | None = None

    # -- the hooks ---------------------------------------------------------------------------------
    def jit_compile(self, real_compile):
        """The function that replaces `triton.compiler.compile` for the JIT."""
        def compile(src, target=None, options=None, _env_vars=None, **kw):
            if self.mode == "interpret" and _is_gluon(src.fn):
                raise self._refuse_gluon(src.fn)
            p = _Pending(src.fn, src, dict(options or {}), _call_site(), wrappers=_wrappers_on_stack())
            self.pending.append(p)
            if self.mode != "gpu":
                p.stub = capture_driver.StubKernel(lambda grid, args: self._first_launch(p, grid, args))
                return p.stub
            self._in_jit.on = True
            try:
                kernel = real_compile(src, target=target, options=options, **({"_env_vars": _env_vars}
                                                                               if _env_vars is not None else {}), **kw)
            finally:
                self._in_jit.on = False
            p.jit_stages = {k: hashlib.sha256(v if isinstance(v, bytes) else str(v).encode()).hexdigest()
                            for k, v in getattr(kernel, "asm", {}).items()}
            _launch_once(kernel, lambda grid, args: self._first_launch(p, grid, args))
            return kernel
        return compile

    def _refuse_gluon(self, fn) -> GluonNotInterpreted:
        # Refused, not stubbed: the program would go on with outputs the kernel never wrote (torch.empty's)
        # and the capture would say nothing. Plain TRITON_INTERPRET=1 fails at such a launch too.
        where = _call_site()
        program = f" ({where})" if where else ""
        message = (f"Triton's interpreter does not run Gluon kernels, and {_fn_label(fn)}, launched under "
                   f"--execute{program}, is one")
        self.refused = {"error": message,
                        "hint": "capture without --execute (launches are recorded, not run), or on a GPU; the last "
                                "capture's launches.json is kept"}
        return GluonNotInterpreted(message)

    def listener(self, previous):
        """`knobs.compilation.listener`: compiles outside the JIT (Inductor's), chained to any listener."""
        def listen(*, src, metadata, metadata_group, times, cache_hit, **kw):
            if previous is not None:
                previous(src=src, metadata=metadata, metadata_group=metadata_group, times=times,
                         cache_hit=cache_hit, **kw)
            if getattr(self._in_jit, "on", False):
                return
            fn = getattr(src, "fn", None)
            if fn is None:
                self.pending.append(_Pending(None, src, {}, _call_site(), via="compile",
                                             error="compiled from IR text, not Python source"))
                return
            options = {k: v for k, v in dict(metadata or {}).items() if _scalar(v)}
            self.pending.append(_Pending(fn, src, options, _call_site(), via="compile"))
        return listen

    def _first_launch(self, p: _Pending, grid: tuple, args: tuple) -> None:
        p.grid = tuple(int(g) for g in grid)
        try:
            p.args = self._encode_args(p, args)
        except Unrecordable as e:
            p.error = str(e)

    # -- encoding ------------------------------------------------------------------------------------
    def _encode_args(self, p: _Pending, values: tuple | None) -> list[dict]:
        """Every parameter as the specialiser saw it: from the launch's values (the first launch), else
        (a warm-up or a direct compile) from the signature and attributes the compile got."""
        out = []
        attrs = {k[0]: v for k, v in (p.src.attrs or {}).items() if isinstance(k, tuple) and len(k) == 1}
        constants = {k[0]: v for k, v in (p.src.constants or {}).items() if isinstance(k, tuple) and len(k) == 1}
        pointers: dict[int, str] = {}  # data_ptr -> the first tensor argument at it
        for i, param in enumerate(p.fn.params):
            ty = str(p.src.signature.get(param.name, ""))
            div = next((a[1] for a in attrs.get(i, ()) if a[0] == "tt.divisibility"), 1)
            spec = ty + (f":D{div}" if div > 1 else "")
            entry: dict[str, Any] = {"name": param.name}
            if values is not None:
                entry.update(_encode_value(param, values[i], ty))
                if entry.get("kind") == "tensor":  # an in-place op passes one tensor twice: its bytes count once
                    first = pointers.setdefault(values[i].data_ptr(), param.name)
                    if first != param.name:
                        entry["alias"] = first
            elif param.is_constexpr or ty == "constexpr":
                v = constants.get(i, param.default if param.has_default else None)
                entry.update(_encode_value(param, v, ty))
            elif ty.startswith("*"):
                entry.update(kind="tensor", dtype=ty.lstrip("*").removeprefix("k") if ty[1:2] == "k" else ty[1:],
                             divisibility=div)
            elif ty in ("fp16", "bf16", "fp32", "fp64"):
                entry.update(kind="float", value=1.5, value_known=False)
            elif ty in ("i1", "u1"):
                entry.update(kind="bool", value=True, value_known=False)
            elif ty[:1] in "iu":
                entry.update(kind="int", value=(2**33 + 16 if ty.endswith("64") else 16) if div > 1 else 17,
                             value_known=False)
            else:
                raise Unrecordable(f"argument '{param.name}' of type {ty or '?'} cannot be recorded")
            entry["specialised"] = spec
            out.append(entry)
        return out

    # -- the launch file -----------------------------------------------------------------------------
    def document(self, program: list[str], exit_code: int | None) -> dict:
        import triton
        launches, skipped, seen = [], [], {}
        for p in self.pending:
            if p.error or p.fn is None:
                skipped.append({"kernel": _fn_label(p.fn), "reason": p.error or "no Python function",
                                "first_call": p.first_call})
                continue
            try:
                launch = self._launch(p)
            except Unrecordable as e:
                skipped.append({"kernel": _fn_label(p.fn), "reason": str(e), "first_call": p.first_call})
                continue
            key = (launch["kernel"], launch["variant"])
            if key in seen:  # the same specialisation twice (e.g. a direct compile of a JIT kernel)
                seen[key]["count"] = (seen[key].get("count") or 0) + (launch.get("count") or 0)
                continue
            seen[key] = launch
            launches.append(launch)
        import datetime
        return {"format": "irscope-launches", "version": 1,
                "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                "program": list(program), "mode": self.mode, "exit_code": exit_code,
                "captured_for": self.target.as_dict(),
                "versions": {"triton": triton.__version__, "python": sys.version.split()[0],
                             "torch": _torch_version()},
                **({"emulation": self.emulation} if self.emulation else {}),
                **({"environment": self.environment} if self.environment else {}),
                "kernels": self.kernels, "launches": launches, "skipped": skipped}

    def _launch(self, p: _Pending) -> dict:
        kid = self._kernel(p.fn, p.wrappers)
        args = p.args if p.args is not None else self._encode_args(p, None)
        options = self._options(p.options)
        launch: dict[str, Any] = {"kernel": kid, "via": p.via, "args": args, "options": options,
                                  "line_info": self.line_info, "first_call": p.first_call}
        digest = hashlib.sha256(json.dumps([self.kernels[kid]["src"], [a.get("specialised") for a in args],
                                            [a.get("value") for a in args if a["kind"] == "constexpr"], options],
                                           sort_keys=True, default=str).encode()).hexdigest()[:10]
        launch["variant"] = f"w{options.get('num_warps', '-')}.s{options.get('num_stages', '-')}.{digest}"
        launch["id"] = f"{self.kernels[kid]['name']}/{launch['variant']}"
        if p.grid is not None:
            launch["grid"] = list(p.grid)
        if p.stub is not None:
            launch["count"] = p.stub.count
        if p.jit_stages:
            launch["jit_stages"] = p.jit_stages
        tuned = self.kernels[kid].get("autotune")
        if tuned:
            index = _config_index(tuned["configs"], args, {**self._defaults, **options})
            if index is not None:
                launch["autotune_config"] = index
        return {k: launch[k] for k in ("id", "kernel", "variant", "via", "args", "options", "grid", "count",
                                       "first_call", "autotune_config", "line_info", "jit_stages") if k in launch}

    def _options(self, options: dict) -> dict:
        """The launch options that differ from the backend's defaults (num_warps, num_stages always)."""
        if self._defaults is None:
            from .specialise import _make_backend
            self._defaults = dict(_make_backend(self.target).parse_options({}).__dict__)
        out = {}
        for k, v in options.items():
            if k in _JIT_FLAGS or not _scalar(v) or k not in self._defaults:
                continue  # (a direct compile's metadata also holds its hash, name, shared memory...)
            if k in ("num_warps", "num_stages") or self._defaults.get(k, object()) != v:
                out[k] = v
        return out

    def _kernel(self, fn, wrappers: tuple = ()) -> str:
        if id(fn) in self._kernel_ids:
            return self._kernel_ids[id(fn)]
        raw = fn.fn
        file = raw.__code__.co_filename
        qualname = getattr(raw, "__qualname__", raw.__name__)
        kid = f"{raw.__module__}:{qualname}" if not file.startswith("<") else f"{file}:{qualname}"
        while kid in self.kernels:  # two functions of one name and module (re-created at run time)
            kid += "+"
        name = raw.__name__
        if self._names.setdefault(name, kid) != kid:  # two kernels of one name: keep their folders apart
            name = f"{name}.{hashlib.sha1(kid.encode()).hexdigest()[:6]}"
        on_disk = os.path.isfile(file)
        module_source = ""
        try:  # in the encoding its `# -*- coding: ... -*-` line declares, as Python read it
            if on_disk:
                with tokenize.open(file) as f:
                    module_source = f.read()
            else:
                module_source = "".join(linecache.getlines(file))
        except (OSError, SyntaxError, UnicodeDecodeError):
            pass
        entry: dict[str, Any] = {"name": name, "function": raw.__name__, "module": raw.__module__,
                                 "qualname": qualname, "file": file,
                                 "first_line": getattr(fn, "starting_line_number", None) or raw.__code__.co_firstlineno,
                                 "generated": not on_disk, "src": _src(fn), "module_source": module_source,
                                 "jit": _jit_kwargs(fn)}
        foreign = _foreign_globals(fn)
        if foreign:
            entry["globals"] = foreign
        tuned = _autotune_of(fn, wrappers)
        if tuned:
            entry["autotune"] = tuned
        self.kernels[kid] = entry
        self._kernel_ids[id(fn)] = kid
        return kid


# -- installing ---------------------------------------------------------------------------------------
def install(recorder: Recorder) -> None:
    """Hook Triton for `recorder.mode`; call before the program imports its kernels (interpret mode)."""
    import triton.compiler
    from triton import knobs

    from .specialise import gpu_target

    if recorder.mode != "gpu":
        import triton.runtime
        properties = None
        if recorder.emulation:  # Triton's driver reports the same device torch.cuda does
            from .capture_emulate import device_properties, driver_properties
            properties = driver_properties(device_properties(recorder.target))
        triton.runtime.driver.set_active(capture_driver.fake_driver(gpu_target(recorder.target), properties))
    triton.compiler.compile = recorder.jit_compile(triton.compiler.compile)
    knobs.compilation.listener = recorder.listener(knobs.compilation.listener)
    if recorder.mode == "interpret":
        _shadow_interpreter()


def _shadow_interpreter() -> None:
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction

    interpret = InterpretedFunction.run

    def run(self, *args, grid, warmup, **kwargs):
        shadow = self.__dict__.get("_irscope_shadow")
        if shadow is None:
            shadow = self.__dict__["_irscope_shadow"] = JITFunction(self.fn, **self.kwargs)
            shadow._irscope_interpreted = self  # what the program's autotuner wraps (_autotune_of)
        shadow.run(*args, grid=grid, warmup=warmup, **dict(kwargs))  # fake driver, stub: records only
        return interpret(self, *args, grid=grid, warmup=warmup, **kwargs)

    InterpretedFunction.run = run


def _launch_once(kernel, on_first_launch) -> None:
    """Wrap a real CompiledKernel's launcher so that its first launch is recorded and later ones are not."""
    try:
        kernel._init_handles()
    except Exception:  # noqa: BLE001 - out of resources etc.: the JIT raises it again at the launch
        return
    real = kernel._run

    def first(gx, gy, gz, *rest):
        kernel._run = real
        on_first_launch((gx, gy, gz), rest[6:])
        return real(gx, gy, gz, *rest)

    kernel._run = first


# -- helpers ------------------------------------------------------------------------------------------
def _encode_value(param, v, ty: str) -> dict:
    if param.is_constexpr:
        return {"kind": "constexpr", "value": encode_constexpr(v, param.name)}
    if v is None:
        return {"kind": "none"}
    if isinstance(v, bool):
        return {"kind": "bool", "value": v}
    if isinstance(v, int):
        return {"kind": "int", "value": v}
    if isinstance(v, float):
        return {"kind": "float", "value": v}
    if ty.startswith("tensordesc"):
        base = v.base
        entry = {"kind": "descriptor", "dtype": _dtype_name(base.dtype), "shape": [int(n) for n in v.shape],
                 "strides": [int(n) for n in v.strides], "block_shape": [int(n) for n in v.block_shape],
                 "padding": str(getattr(v, "padding", "zero"))}
        if getattr(v, "layout", None) is not None:  # a Gluon descriptor: its shared layout is part of its type
            entry["layout"] = _encode_layout(v.layout, param.name)
        return entry
    if hasattr(v, "data_ptr") and hasattr(v, "dtype"):
        entry = {"kind": "tensor", "dtype": _dtype_name(v.dtype), "divisibility": 16 if v.data_ptr() % 16 == 0 else 1}
        try:  # what it spans, for `irscope rank`'s least traffic; a tensor-like without them is still a pointer
            entry.update(shape=[int(n) for n in v.shape], strides=[int(n) for n in v.stride()])
        except (AttributeError, TypeError):
            pass
        return entry
    raise Unrecordable(f"argument '{param.name}' is a {type(v).__name__}, which a launch file cannot hold")


def _encode_layout(layout, name: str) -> dict:
    """A Gluon descriptor's NVMMA shared layout, every field (irscope.spec.TensorDesc makes it again)."""
    if type(layout).__name__ != "NVMMASharedLayout":
        raise Unrecordable(f"descriptor '{name}' has a {type(layout).__name__} shared layout, which a launch "
                           "file cannot hold (only NVMMASharedLayout)")
    return {"kind": "NVMMASharedLayout", "swizzle_byte_width": int(layout.swizzle_byte_width),
            "element_bitwidth": int(layout.element_bitwidth), "rank": int(layout.rank),
            "transposed": bool(layout.transposed), "fp4_padded": bool(layout.fp4_padded),
            "cga_layout": [[int(x) for x in b] for b in (getattr(layout, "cga_layout", None) or [])]}


def encode_constexpr(v, name: str = "?"):
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if hasattr(v, "value") and type(v).__name__ == "constexpr":
        return encode_constexpr(v.value, name)
    if type(v).__name__ in ("dtype", "pointer_type") and hasattr(v, "name"):
        return {"tl_dtype": str(v)}
    if hasattr(v, "itemsize") and str(v).startswith("torch."):
        return {"tl_dtype": _dtype_name(v)}
    if isinstance(v, (tuple, list)):
        return {"tuple": [encode_constexpr(x, name) for x in v]}
    if hasattr(v, "fn") and hasattr(v, "params"):
        return {"jit_function": getattr(v.fn, "__qualname__", v.fn.__name__)}
    raise Unrecordable(f"constexpr '{name}' is a {type(v).__name__}, which a launch file cannot hold")


def _dtype_name(dtype) -> str:
    from triton._utils import canonicalize_ptr_dtype
    try:
        return str(canonicalize_ptr_dtype(dtype, False)).lstrip("*")
    except Exception:  # noqa: BLE001 - older spellings
        from triton.runtime.jit import type_canonicalisation_dict
        return type_canonicalisation_dict[str(dtype).split(".")[-1]].lstrip("*")


def _scalar(v) -> bool:
    return v is None or isinstance(v, (bool, int, float, str))


def _src(fn) -> str:
    return getattr(fn, "_src", None) or getattr(fn, "src", "")


def _jit_kwargs(fn) -> dict:
    params = list(fn.params)
    return {"do_not_specialize": [p.name for p in params if getattr(p, "do_not_specialize", False)],
            "do_not_specialize_on_alignment": [p.name for p in params
                                               if getattr(p, "do_not_specialize_on_alignment", False)],
            "debug": bool(getattr(fn, "debug", False)), "noinline": bool(getattr(fn, "noinline", False)),
            "gluon": _is_gluon(fn)}


def _is_gluon(fn) -> bool:
    """A `@gluon.jit` kernel (GluonJITFunction): compiled from Gluon's source, never interpreted."""
    return bool(getattr(fn, "is_gluon", lambda: False)())


def _foreign_globals(fn) -> dict[str, str]:
    """Names the kernel takes from its globals (and the jit helpers of its own module it calls) that are
    another module's: `name -> "module:qualname"`, or `"module"` for a module. A generated module gets some
    by having another module's globals copied in after it is loaded (FlagGems' pointwise kernels call
    the real `gelu_none` of flag_gems.ops.gelu, not the copy in their file); its source does not show that."""
    import ast
    import types
    home, scope = fn.fn.__module__, fn.__globals__
    out: dict[str, str] = {}
    todo, seen = [fn], set()
    while todo:
        f = todo.pop()
        if id(f) in seen:
            continue
        seen.add(id(f))
        try:
            names = {n.id for n in ast.walk(ast.parse(_src(f))) if isinstance(n, ast.Name)}
        except SyntaxError:
            continue
        for name in sorted(names - set(out)):
            if name not in scope:
                continue
            v = scope[name]
            if isinstance(v, types.ModuleType):
                if v.__name__ != home and getattr(v, "__file__", None):
                    out[name] = v.__name__
                continue
            raw = v.fn if hasattr(v, "params") and hasattr(v, "fn") else v
            module, qualname = getattr(raw, "__module__", None), getattr(raw, "__qualname__", None)
            if not isinstance(module, str) or not isinstance(qualname, str) or "<" in qualname:
                continue
            if module != home:
                out[name] = f"{module}:{qualname}"
            elif hasattr(v, "params") and getattr(v, "__globals__", None) is scope:
                todo.append(v)
    return out


def _wrappers_on_stack() -> tuple:
    """The objects whose `run` is on the stack (an autotuner, heuristics): the autotuner of a kernel that no
    module global holds (one in a dict, on an object, made by a factory) is found among them."""
    out = []
    frame = sys._getframe(2)
    while frame is not None:
        obj = frame.f_locals.get("self") if frame.f_code.co_name == "run" else None
        if obj is not None and hasattr(obj, "fn"):
            out.append(obj)
        frame = frame.f_back
    return tuple(reversed(out))  # outermost first: its chain of `.fn` holds every wrapper


def _autotune_of(fn, wrappers: tuple = ()) -> dict | None:
    """The config space of an @triton.autotune whose chain of `.fn` reaches `fn`: one that was launching it
    (`wrappers`), else one in its module. Under --execute the chain reaches the InterpretedFunction that
    `fn` shadows."""
    ends = (fn, getattr(fn, "_irscope_interpreted", fn))
    for value in [*wrappers, *list(getattr(fn, "__globals__", {}).values())]:
        chain, obj = [], value
        for _ in range(8):
            if any(obj is end for end in ends) or not hasattr(obj, "fn") or not callable(getattr(obj, "run", None)):
                break
            chain.append(obj)
            obj = obj.fn
        if not any(obj is end for end in ends):
            continue
        tuner = next((c for c in chain if hasattr(c, "configs") and hasattr(c, "keys")), None)
        if tuner is None:
            continue
        configs = []
        for c in tuner.configs:
            d = {k: encode_constexpr(v, k) for k, v in c.all_kwargs().items()} if hasattr(c, "all_kwargs") else {}
            configs.append(d)
        return {"configs": configs, "key": [str(k) for k in tuner.keys],
                "wrappers": [type(c).__name__ for c in chain]}
    return None


def _config_index(configs: list[dict], args: list[dict], options: dict) -> int | None:
    constexprs = {a["name"]: a.get("value") for a in args if a["kind"] == "constexpr"}
    for i, cfg in enumerate(configs):
        if all(constexprs.get(k, options.get(k)) == v for k, v in cfg.items()):
            return i
    return None


def _call_site() -> str:
    for frame in reversed(traceback.extract_stack()[:-2]):
        if not any(s in frame.filename for s in _SKIP_FRAMES):
            return f"{frame.filename}:{frame.lineno}"
    return ""


def _fn_label(fn) -> str:
    raw = getattr(fn, "fn", None)
    return f"{raw.__module__}:{raw.__qualname__}" if raw is not None else "?"


def _torch_version() -> str | None:
    mod = sys.modules.get("torch")
    return getattr(mod, "__version__", None) if mod is not None else None
