"""Finding kernels: the built-in library in `kernels/` and users' own files (`path/to/file.py:kernel`).

A kernel file is plain Python: `@triton.jit` functions plus `KernelSpec` objects. A kernel may sit under
`@triton.autotune` / `@triton.heuristics` (irscope.spec.autotune): its autotune configs become its menu. Built-in names are
the spec names declared in the library's files (`matmul`, `blur.row`); a spec's file is the part of its
name before the first dot, so looking one up imports one file.
"""
from __future__ import annotations

import contextlib
import difflib
import hashlib
import importlib.util
import os
import re
import sys
from pathlib import Path
from types import ModuleType

from . import autotune
from ..errors import IrscopeError, UsageError
from .kernel import Config, KernelSpec

_loaded: dict[Path, ModuleType] = {}


def builtin_dir() -> Path:
    """The folder of the built-in kernels: `kernels/` beside the package, or inside it once installed."""
    here = Path(__file__).resolve().parents[1]  # the irscope package
    for candidate in (here / "kernels", here.parent / "kernels"):
        if (candidate / "__init__.py").is_file():
            return candidate
    raise UsageError("the built-in kernel library is missing", "reinstall irscope: pip install -e '.[test]'")


def builtin_files() -> list[Path]:
    return sorted(p for p in builtin_dir().glob("*.py") if not p.name.startswith("_"))


def load_module(path: Path) -> ModuleType:
    """Import a kernel file once per process, under a private module name."""
    path = path.resolve()
    if path in _loaded:
        return _loaded[path]
    if not path.is_file():
        raise UsageError(f"kernel file '{path}' does not exist", "give the path to a .py file: FILE.py:KERNEL")
    digest = hashlib.sha1(str(path).encode()).hexdigest()[:8]
    mod_name = f"irscope_kernels.{path.stem}_{digest}"
    module_spec = importlib.util.spec_from_file_location(mod_name, path)
    if module_spec is None or module_spec.loader is None:
        raise UsageError(f"cannot import '{path}'", "kernel files must be Python files ending in .py")
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[mod_name] = module
    # As `python FILE.py` would: the file's folder is first on the path while it runs, so that it imports
    # its neighbours (an --emit-configs module, its own helpers) as the user's program does
    sys.path.insert(0, str(path.parent))
    try:
        # What the module prints is the file's chatter, not irscope's output: stdout may be JSON (--json)
        with contextlib.redirect_stdout(sys.stderr):
            module_spec.loader.exec_module(module)
    except SystemExit as e:  # a script's `sys.exit()` at import would end irscope with its status, silently
        del sys.modules[mod_name]
        raise UsageError(f"importing '{path}' called sys.exit({e.code!r}): irscope imports a kernel file, and it "
                         "ended there", "put the file's program under `if __name__ == \"__main__\":` so that "
                         "importing it only defines the kernels") from None
    except SyntaxError as e:
        del sys.modules[mod_name]
        raise UsageError(f"{path}:{e.lineno}: syntax error: {e.msg}", "fix the kernel file and run again") from None
    except IrscopeError as e:  # irscope's own refusal of what the file asked for (a TensorDesc's swizzle, say)
        del sys.modules[mod_name]
        import traceback
        lines = [f.lineno for f in traceback.extract_tb(e.__traceback__) if Path(f.filename) == path]
        where = f"{path}:{lines[-1]}" if lines else str(path)
        raise UsageError(f"{where}: {e.message}", e.hint) from None
    except Exception as e:  # a user's module can raise anything on import
        del sys.modules[mod_name]
        raise UsageError(f"importing '{path}' failed: {type(e).__name__}: {e}",
                         "run `python FILE.py` to see the full error") from None
    finally:
        if str(path.parent) in sys.path:
            sys.path.remove(str(path.parent))
    _loaded[path] = module
    return module


def specs_in(module: ModuleType) -> list[KernelSpec]:
    """The KernelSpec objects a module declares (module-level names and `SPECS` lists)."""
    found: list[KernelSpec] = []
    for value in list(vars(module).values()):
        items = value if isinstance(value, (list, tuple)) else [value]
        for item in items:
            if isinstance(item, KernelSpec) and all(item is not s for s in found):
                found.append(item)
    path = getattr(module, "__file__", "") or ""
    return [_unwrapped(s if s.path else _with_path(s, path)) for s in found]


def _with_path(spec: KernelSpec, path: str) -> KernelSpec:
    from dataclasses import replace
    return replace(spec, path=path)


def _is_jit_function(obj) -> bool:
    return hasattr(obj, "arg_names") and hasattr(obj, "params") and callable(getattr(obj, "fn", None))


def _is_kernel(obj) -> bool:
    """A `@triton.jit` function, bare or under Triton's runtime wrappers (autotune, heuristics...)."""
    return _is_jit_function(obj) or (not isinstance(obj, KernelSpec) and
                                     autotune.unwrap(obj, _is_jit_function) is not None)


def _unwrapped(spec: KernelSpec) -> KernelSpec:
    """A spec whose `fn` is a wrapped kernel -> the spec of its jit function, with what the wrappers add:
    the autotuner's configs become the menu unless the spec declares its own."""
    from dataclasses import replace
    if _is_jit_function(spec.fn):
        return spec
    found = autotune.unwrap(spec.fn, _is_jit_function)
    if found is None:
        return spec
    fn, tuning = found
    configs = spec.configs
    if tuning.triton_configs and [c.name for c in configs] == ["default"] and not configs[0].constexprs:
        configs = autotune.menu(tuning, [p.name for p in fn.params], Config)
    return replace(spec, fn=fn, tuning=tuning, configs=configs)


def builtin_specs() -> list[KernelSpec]:
    """Every spec of the built-in library (imports every kernel file)."""
    return [s for f in builtin_files() for s in specs_in(load_module(f))]


def load_kernel(ref: str) -> KernelSpec:
    """`matmul`, `blur.row`, `path/to/file.py:my_kernel` or `path/to/file.py` -> its KernelSpec."""
    path_part, sep, name = ref.rpartition(":")
    # `runs:2024/k.py` is a file in a folder with a colon in its name, not the kernel `2024/k.py` of `runs`
    is_name = "/" not in name and os.sep not in name and not name.endswith(".py")
    if sep and path_part and is_name and not (len(path_part) == 1 and path_part.isalpha()):  # not a drive letter
        return _user_kernel(Path(path_part), name)
    if ref.endswith(".py") or os.sep in ref:
        return _user_kernel(Path(ref), None)
    return _builtin_kernel(ref)


def builtin_name(name: str) -> bool:
    """Whether `name` can only mean a built-in kernel (`matmul`, `blur.row`), never a file to import."""
    return re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*", name) is not None \
        and not name.endswith(".py")


def load_builtin(name: str) -> KernelSpec:
    """The built-in kernel `name`, for a name read from untrusted input (a snapshot folder's irscope.json):
    never a file, since importing a file runs it. UsageError if `name` is not a built-in's."""
    if not builtin_name(name):
        raise UsageError(f"'{name}' is not a built-in kernel's name, and irscope never imports a file a "
                         "snapshot names", "name the kernel's file on the command line: FILE.py:KERNEL")
    return _builtin_kernel(name)


def config_choices(ref: str, config: str | None) -> list[str | None]:
    """`--config all` -> every config of the kernel's menu (an autotuned kernel's: its autotune space);
    any other value stands for itself."""
    if config != "all":
        return [config]
    return [c.name for c in load_kernel(ref).configs]


def _builtin_kernel(name: str) -> KernelSpec:
    stems = {p.stem: p for p in builtin_files()}
    stem = name.split(".")[0]
    if stem in stems:
        for spec in specs_in(load_module(stems[stem])):
            if spec.name == name:
                return spec
    names = [s.name for s in builtin_specs()]
    close = difflib.get_close_matches(name, names, n=3, cutoff=0.5)
    hint = (f"did you mean {', '.join(close)}? " if close else "") + \
        f"built-in kernels: {', '.join(names)}; or compile your own with FILE.py:KERNEL"
    raise UsageError(f"unknown kernel '{name}'", hint)


def _user_kernel(path: Path, name: str | None) -> KernelSpec:
    module = load_module(path)
    specs = specs_in(module)
    jit_fns = {k: v for k, v in vars(module).items() if _is_kernel(v)}
    if name is None:
        if len(specs) == 1:
            return specs[0]
        if not specs and len(jit_fns) == 1:
            name = next(iter(jit_fns))
        else:
            choices = [s.name for s in specs] or list(jit_fns)
            raise UsageError(f"'{path}' holds several kernels; say which",
                             f"use {path}:NAME with NAME one of {', '.join(choices) or '(none found)'}")
    for spec in specs:
        if spec.name == name or spec.fn_name == name:
            return spec
    if name in jit_fns:
        # No spec in the file: the signature comes from the command line (--arg, --constexpr).
        return _unwrapped(KernelSpec(name=name, fn=jit_fns[name], args={}, path=str(path.resolve())))
    choices = sorted({s.name for s in specs} | set(jit_fns))
    close = difflib.get_close_matches(name, choices, n=3)
    hint = (f"did you mean {', '.join(close)}? " if close else "") + \
        f"kernels in {path}: {', '.join(choices) or '(no @triton.jit function found)'}"
    raise UsageError(f"'{path}' has no kernel '{name}'", hint)
