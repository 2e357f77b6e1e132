"""Compiling a launch file: each captured launch as a KernelSpec and the points of `compile_points`.

Loading a launch as a kernel RUNS ITS KERNEL'S PYTHON SOURCE (docs/capture.md): the module it was
defined in is imported when it is importable here and unchanged since the capture; otherwise the
source the file holds is run, its definitions only (imports, functions, classes, assignments; not its
`if __name__ == "__main__":` part). irscope does this only for launch files named on the command line.
"""
from __future__ import annotations

import hashlib
import importlib
import inspect
import linecache
import sys
import tokenize
import types
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..errors import SnapshotError, UsageError
from ..spec import launches as spec_launches
from ..spec.kernel import KernelSpec, refused_recorded_option
from ..store.launches import read_launches
from ..targets import Target

_namespaces: dict[tuple[str, str], dict] = {}


def load_launch_kernel(ref: str) -> tuple[KernelSpec, dict]:
    """`LAUNCHES.json:ID` -> (the KernelSpec of that launch, the launch)."""
    path, launch_id = spec_launches.split_ref(ref)
    data = read_launches(Path(path))
    launch = spec_launches.find_launch(data, launch_id, path)
    kernel = data["kernels"][launch["kernel"]]
    from .capture_emulate import program_context
    try:
        with program_context(data):  # the library may ask its device at import, as it did in the capture
            fn, text = _jit_function(launch["kernel"], kernel)
        args, constexprs, _ = spec_launches.arg_values(launch, _decode_constexpr(fn))
    except _Damaged as e:
        raise SnapshotError(f"{path} is damaged: launch '{launch_id}': {e}",
                            "capture it again with irscope capture (the format is in docs/capture.md)") from None
    try:
        args.update(_descriptor_layouts(launch, args))
    except (UsageError, KeyError, TypeError, ValueError) as e:  # a layout no capture writes: the file's fault
        why = e.message if isinstance(e, UsageError) else f"{type(e).__name__}: {e}"
        raise SnapshotError(f"{path} is damaged: launch '{launch_id}' has a descriptor layout irscope cannot "
                            f"make ({why})",
                            "capture it again with irscope capture (the format is in docs/capture.md)") from None
    file = kernel.get("file") or ""
    if not text:  # a module imported as it is here: its own file is the source, never one the launch file names
        file = inspect.getsourcefile(fn.fn) or ""
    return KernelSpec(name=kernel["name"], fn=fn, args=args, constexprs=constexprs,
                      description=f"captured: {launch.get('first_call') or file}",
                      path="" if file.startswith("<") else file,  # `<string>` and the like name no file
                      source=text), launch


def _descriptor_layouts(launch: dict, args: dict) -> dict:
    """The Gluon descriptors of a launch with the shared layout each had (`layout` of the argument), all its
    fields given, so the compile's layout is the captured one and not Gluon's default for the block."""
    out = {}
    for a in launch["args"]:
        layout = a.get("layout") if a["kind"] == "descriptor" else None
        if layout is None:
            continue
        if layout.get("kind", "NVMMASharedLayout") != "NVMMASharedLayout":
            raise UsageError(f"the launch's descriptor '{a['name']}' has a {layout['kind']} shared layout, which "
                             "this irscope cannot make again", "upgrade irscope, or capture with this one")
        out[a["name"]] = replace(args[a["name"]], swizzle=layout["swizzle_byte_width"],
                                 transposed=bool(layout.get("transposed")), fp4_padded=bool(layout.get("fp4_padded")),
                                 cga_layout=tuple(tuple(b) for b in layout.get("cga_layout") or ()))
    return out


def launch_points(path: Path, targets: list[Target], *, line_info: bool | None = None, only=None):
    """(points to compile, (launch id, target, why) for each one that cannot be compiled for a target);
    `only`: the launch ids to take (default: all)."""
    from .batch import Point
    from .specialise import specialise, target_option_fields

    data = read_launches(path)
    points, skipped = [], []
    for launch in data["launches"]:
        if only is not None and launch["id"] not in only:
            continue
        ref = f"{Path(path).resolve()}:{launch['id']}"
        try:
            spec, _ = load_launch_kernel(ref)
        except UsageError as e:
            skipped += [(launch["id"], t.name, e.message) for t in targets]
            continue
        _, _, divisibility = spec_launches.arg_values(launch, lambda v: v)
        for target in targets:
            fields = target_option_fields(target)
            opts = spec_launches.compile_options(launch, divisibility, fields.__contains__, line_info)
            refused = refused_recorded_option(opts.backend_options)
            if refused:  # a launch file is untrusted input
                skipped.append((launch["id"], target.name, f"the launch file asks for {refused}"))
                continue
            try:
                _, _, signature, _, attrs, _ = specialise(spec, target, opts)
            except UsageError as e:  # 32 warps on a 64-wide AMD wave, a dtype the target lacks...
                skipped.append((launch["id"], target.name, e.message))
                continue
            if target.name == (data.get("captured_for") or {}).get("name"):
                got = specialisation_of(spec.fn, signature, attrs)
                want = [a.get("specialised") for a in launch["args"]]
                if got != want:  # the device-less compile would not be the captured one: say so, skip it
                    skipped.append((launch["id"], target.name, f"device-less specialisation {got} differs from "
                                                               f"the captured {want}"))
                    continue
            points.append(Point(ref, target.name, opts))
    return points, skipped


def specialisation_of(fn, signature: dict, attrs: dict) -> list[str]:
    """Each parameter as the capture writes its `specialised` field: `*fp16:D16`, `i32`, `constexpr`."""
    out = []
    for i, p in enumerate(fn.params):
        div = next((a[1] for a in attrs.get((i,), ()) if a[0] == "tt.divisibility"), 1)
        out.append(str(signature.get(p.name, "")) + (f":D{div}" if div > 1 else ""))
    return out


# -- the kernel's function ------------------------------------------------------------------------------
def _jit_function(kernel_id: str, kernel: dict) -> tuple[Any, str]:
    """The kernel's JITFunction, and the launch file's text it was defined from (its module's source, or
    its own `src` when it is made again from that; "" when it came from a module imported as it is now)."""
    ns = _namespace(kernel)
    obj: Any = ns
    for part in (kernel.get("qualname") or kernel["function"]).split("."):
        obj = obj.get(part) if isinstance(obj, dict) else getattr(obj, part, None)
        if obj is None:
            break
    for _ in range(8):  # autotune / heuristics / library wrappers around the jit function
        if obj is None or _is_jit(obj) or not hasattr(obj, "fn"):
            break
        obj = obj.fn
    if _is_jit(obj) and (getattr(obj, "_src", None) or getattr(obj, "src", "")) == kernel["src"]:
        # ns is the module the launch file holds (imported only when its file still reads the same); a
        # function it merely imported from elsewhere was not defined from that text.
        defined_here = getattr(obj.fn, "__module__", None) == ns.get("__name__")
        return obj, (kernel.get("module_source") or "") if defined_here else ""
    # defined inside a function, or changed since: made again from the recorded src
    return _rebuilt(kernel_id, kernel, ns), kernel["src"]


def _rebuilt(kernel_id: str, kernel: dict, ns: dict):
    """A JITFunction made from the recorded `src` (the text the JIT compiled), in the module's namespace;
    a GluonJITFunction for a `@gluon.jit` kernel (`jit.gluon`), whose source is Gluon's, not Triton's."""
    name = f"<irscope-launch {kernel_id}>"
    _remember_source(name, kernel["src"])
    scope = dict(ns)
    try:
        exec(compile(kernel["src"], name, "exec"), scope)  # noqa: S102 - documented: compiling runs the kernel's source
    except Exception as e:  # noqa: BLE001 - the user's code can raise anything
        raise UsageError(f"the recorded source of {kernel_id} does not run here: {type(e).__name__}: {e}",
                         "install what the captured program imported, then compile again") from None
    raw = scope.get(kernel["function"])
    if raw is None:
        raise UsageError(f"the recorded source of {kernel_id} defines no '{kernel['function']}'",
                         "capture the program again")
    jit = kernel.get("jit") or {}
    for key in ("do_not_specialize", "do_not_specialize_on_alignment"):
        names = jit.get(key)
        if names and not (isinstance(names, list) and all(isinstance(n, str) for n in names)):
            raise _Damaged(f"kernel {kernel_id}'s jit.{key} is {str(names)[:40]}, not a list of parameter names")
    return _jit_class(jit.get("gluon") is True)(raw, do_not_specialize=jit.get("do_not_specialize") or None,
                       do_not_specialize_on_alignment=jit.get("do_not_specialize_on_alignment") or None,
                       debug=jit.get("debug") or None, noinline=jit.get("noinline") or None)


def _namespace(kernel: dict) -> dict:
    """The globals the kernel was defined in: its module if importable and unchanged, else its recorded
    module source, definitions only, as a private module."""
    module, source, file = kernel.get("module") or "", kernel.get("module_source") or "", kernel.get("file") or ""
    key = (module, hashlib.sha1(source.encode()).hexdigest())
    if key in _namespaces:
        return _namespaces[key]
    ns = None
    if module and module != "__main__" and not kernel.get("generated"):
        try:
            mod = importlib.import_module(module)
            if not source or _text(getattr(mod, "__file__", None)) == source:
                ns = vars(mod)
        except Exception:  # noqa: BLE001 - not importable here: run the recorded source instead
            ns = None
    if ns is None:
        ns = _definitions_module(key[1], module, source, file)
        ns.update(_foreign_globals(kernel.get("globals") or {}, ns))
    _namespaces[key] = ns
    return ns


def _foreign_globals(names: dict, ns: dict) -> dict:
    """The objects a kernel took from other modules at the capture (`globals` of the kernel), imported.
    A jit helper whose module attribute is now something else (FlagGems wraps `gelu_none` in its
    pointwise decorator and hands generated kernels the bare jit function) is made again from the
    definition in `ns` (the generated module's copy of it), with its home module's globals."""
    import types as _types

    out = {}
    for name, origin in names.items():
        module, _, qualname = origin.partition(":")
        try:
            home = importlib.import_module(module)
            obj: Any = home
            for part in filter(None, qualname.split(".")):
                obj = getattr(obj, part)
        except Exception:  # noqa: BLE001 - not here: the module source's own definition (if any) stays
            continue
        copy = ns.get(name)
        if qualname and not _is_jit(obj) and _is_jit(copy):
            raw = copy.fn
            fn = _types.FunctionType(raw.__code__, vars(home), raw.__name__, raw.__defaults__, raw.__closure__)
            fn.__qualname__ = qualname
            obj = _rejit(copy, fn)
        out[name] = obj
    return out


def _jit_class(gluon: bool):
    if gluon:
        from triton.experimental.gluon._runtime import GluonJITFunction
        return GluonJITFunction
    from triton.runtime.jit import JITFunction
    return JITFunction


def _rejit(like, fn):
    params = list(like.params)
    return _jit_class(bool(getattr(like, "is_gluon", lambda: False)()))(fn, do_not_specialize=[p.name for p in params if p.do_not_specialize] or None,
                       do_not_specialize_on_alignment=[p.name for p in params
                                                       if getattr(p, "do_not_specialize_on_alignment", False)] or None,
                       debug=getattr(like, "debug", None), noinline=getattr(like, "noinline", None))


def _definitions_module(digest: str, module: str, source: str, file: str) -> dict:
    import triton
    import triton.language as tl
    name = f"irscope_launches.m{digest[:12]}"
    mod = types.ModuleType(name)
    mod.__dict__.update(triton=triton, tl=tl)
    if module and "." in module:
        mod.__package__ = module.rpartition(".")[0]  # relative imports resolve against the original package
    sys.modules[name] = mod
    if not source:
        return vars(mod)
    filename = file or f"<irscope-launch {name}>"
    _remember_source(filename, source)
    mod.__file__ = filename
    try:
        statements = spec_launches.definitions(source)
    except SyntaxError as e:
        raise UsageError(f"the recorded source of {file or module} does not parse: {e.msg}",
                         "capture the program again") from None
    for node in statements:
        code = compile(__import__("ast").Module(body=[node], type_ignores=[]), filename, "exec")
        try:
            exec(code, vars(mod))  # noqa: S102 - documented: compiling runs the kernel's source
        # SystemExit too: a kept `if` may end the script (`if not ok: raise SystemExit(3)`, a result check at
        # top level), which must not end irscope's compile.
        except (Exception, SystemExit):  # noqa: BLE001 - a definition that needs the program's state
            continue
    return vars(mod)


def _remember_source(filename: str, text: str) -> None:
    # inspect.getsourcelines (which @triton.jit calls) reads through linecache; an mtime of None keeps
    # the entry there (linecache.checkcache leaves such entries alone).
    lines = text.splitlines(keepends=True)
    linecache.cache[filename] = (len(text), None, lines, filename)


def _text(path: str | None) -> str | None:
    """A module's text as the capture read it: in the encoding its coding line declares."""
    if not path:
        return None
    try:
        with tokenize.open(path) as f:
            return f.read()
    except (OSError, SyntaxError, UnicodeDecodeError):
        return None


def _is_jit(obj) -> bool:
    from triton.runtime.jit import JITFunction
    return isinstance(obj, JITFunction)


class _Damaged(ValueError):
    """A field of a launch file that no capture writes (load_launch_kernel says which file and launch)."""


def _decode_constexpr(fn):
    def decode(v):
        import triton.language as tl
        if isinstance(v, dict):
            if "tl_dtype" in v:
                name = v["tl_dtype"]
                if name not in tl.dtype.SINT_TYPES + tl.dtype.UINT_TYPES + tl.dtype.FP_TYPES + tl.dtype.OTHER_TYPES:
                    raise _Damaged(f"its constexpr dtype {str(name)[:40]!r} is no Triton dtype")
                return tl.dtype(name)
            if "tuple" in v:
                if not isinstance(v["tuple"], list):
                    raise _Damaged(f"a constexpr tuple is a {type(v['tuple']).__name__}, not a list")
                return tuple(decode(x) for x in v["tuple"])
            if "jit_function" in v:
                if not isinstance(v["jit_function"], str):
                    raise _Damaged(f"a constexpr jit function's name is a {type(v['jit_function']).__name__}, not a string")
                found = fn.__globals__.get(v["jit_function"].rpartition(".")[2])
                if found is None:
                    raise UsageError(f"constexpr jit function '{v['jit_function']}' is not in "
                                     f"{fn.__module__} here", "capture the program again")
                return found
        return v
    return decode
