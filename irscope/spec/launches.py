"""A captured launch (one entry of a launch file, irscope.store.launches) as what irscope compiles: the
typical values of its arguments, its constexprs, and the CompileOptions that reproduce its
specialisation. No Triton here: irscope.harness.launches turns the kernel's source into a JITFunction.

The reference of a captured launch is `LAUNCHES.json:KERNEL/VARIANT` (its `id`); its compiles land in
`KERNEL/VARIANT/TARGET`, so launches with the same specialisation share one folder.
"""
from __future__ import annotations

import ast
from typing import Any, Callable, Mapping

from ..errors import UsageError
from .kernel import CompileOptions, Tensor, TensorDesc


def split_ref(ref: str) -> tuple[str, str] | None:
    """`path/launches.json:add/w4.s3.1a2b` -> (path, launch id); None for any other kernel reference."""
    path, sep, launch_id = ref.rpartition(":")
    if sep and path.endswith(".json") and launch_id:
        return path, launch_id
    return None


def find_launch(data: Mapping[str, Any], launch_id: str, source: str) -> dict:
    for launch in data["launches"]:
        if launch["id"] == launch_id:
            return launch
    ids = [launch["id"] for launch in data["launches"]]
    raise UsageError(f"{source} has no launch '{launch_id}'",
                     f"launches in it: {', '.join(ids[:8]) or '(none)'}{' ...' if len(ids) > 8 else ''}")


def arg_values(launch: Mapping[str, Any], decode_constexpr: Callable[[Any], Any]) -> tuple[dict, dict, tuple]:
    """(typical values of the arguments, constexpr values, per-argument divisibility) of a launch."""
    args: dict[str, Any] = {}
    constexprs: dict[str, Any] = {}
    divisibility = []
    for a in launch["args"]:
        kind, name = a["kind"], a["name"]
        if kind == "constexpr":
            constexprs[name] = decode_constexpr(a.get("value"))
        elif kind == "tensor":
            args[name] = Tensor(a.get("dtype") or "fp32")
            if (a.get("divisibility") or 1) < 16:
                divisibility.append((name, 1))
        elif kind == "descriptor":
            args[name] = TensorDesc(a.get("dtype") or "fp32", tuple(a.get("shape") or ()),
                                    tuple(a.get("block_shape") or ()), tuple(a.get("strides") or ()),
                                    a.get("padding") or "zero")
        elif kind == "none":
            args[name] = None
        else:
            args[name] = a.get("value")
    return args, constexprs, tuple(divisibility)


def compile_options(launch: Mapping[str, Any], divisibility: tuple, known_options: Callable[[str], bool],
                    line_info: bool | None = None) -> CompileOptions:
    """The options of a captured launch: its num_warps/num_stages, the backend options the target knows,
    the divisibility it had, and its folder name (the launch's variant)."""
    options = dict(launch.get("options") or {})
    backend = tuple((k, v) for k, v in sorted(options.items())
                    if k not in ("num_warps", "num_stages") and known_options(k))
    return CompileOptions(num_warps=options.get("num_warps"), num_stages=options.get("num_stages"),
                          backend_options=backend, divisibility=divisibility,
                          line_info=launch.get("line_info", True) if line_info is None else line_info,
                          name=launch["variant"])


_KEPT = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Assign,
         ast.AnnAssign, ast.AugAssign, ast.If, ast.Try)


def definitions(source: str) -> list[ast.stmt]:
    """The top-level statements of a module that define things (imports, functions, classes, assignments,
    `if`/`try` around them), not the ones that do things (calls, loops, `if __name__ == "__main__":`):
    a captured script's kernels can be defined again without running the script."""
    tree = ast.parse(source)
    kept = []
    for node in tree.body:
        if not isinstance(node, _KEPT):
            continue
        if isinstance(node, ast.If) and "__name__" in ast.unparse(node.test):
            continue
        kept.append(node)
    return kept
