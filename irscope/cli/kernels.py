"""`irscope kernels [KERNEL] [--json]`: the built-in kernel library, or one kernel's configs and typical launch."""
from __future__ import annotations

import json

from ..render.terminal import table


def add_parser(sub) -> None:
    p = sub.add_parser("kernels", help="list the built-in kernels, or one kernel's configs",
                       description="Without KERNEL: the built-in kernels. With KERNEL (a built-in name or "
                                   "FILE.py:FUNCTION): its typical launch and its menu of configs.")
    p.add_argument("kernel", nargs="?", metavar="KERNEL", help="show this kernel's configs and typical launch values")
    p.add_argument("--json", action="store_true",
                   help="every kernel (or KERNEL) with its parameters, typical launch and configs, as JSON")
    p.set_defaults(run=run)


def run(args, ui) -> int:
    from ..spec import library

    if args.json:
        specs = [library.load_kernel(args.kernel)] if args.kernel else library.builtin_specs()
        data = [kernel_as_dict(s) for s in specs]
        ui.print(json.dumps(data[0] if args.kernel else data, indent=1, default=str))
        return 0
    if args.kernel:
        spec = library.load_kernel(args.kernel)
        ui.print(f"{ui.style(spec.name, 'bold')}: {spec.description}")
        ui.print(f"function {spec.fn_name} in {spec.path}\n")
        ui.print("typical launch (decides the JIT's specialisation):")
        ui.print("  " + ", ".join(f"{k}={_arg(v)}" for k, v in spec.args.items()))
        rows = [[c.name, " ".join(f"{k}={v}" for k, v in {**spec.constexprs, **c.constexprs}.items()),
                 c.num_warps or "-", c.num_stages or "-", _note(c)] for c in spec.configs]
        ui.print()
        ui.print(table(["config", "constexprs", "warps", "stages", "note"], rows, style=ui.style))
        return 0
    rows = [[s.name, s.fn_name, len(s.configs), s.description] for s in library.builtin_specs()]
    ui.print(table(["kernel", "function", "configs", "description"], rows, right=(2,), style=ui.style))
    return 0


def kernel_as_dict(spec) -> dict:
    """The JSON form of a KernelSpec (`irscope kernels --json`); keys documented in docs/cli.md."""
    params = []
    for p in getattr(spec.fn, "params", ()):
        kind = "constexpr" if p.is_constexpr else ("tensor" if _is_tensor(spec.args.get(p.name)) else "scalar")
        params.append({"name": p.name, "kind": kind})
    return {
        "name": spec.name, "function": spec.fn_name, "path": str(spec.path), "description": spec.description,
        "parameters": params,
        "launch": {k: _arg(v) for k, v in spec.args.items()},
        "constexprs": dict(spec.constexprs),
        "configs": [{"name": c.name, "constexprs": {**spec.constexprs, **c.constexprs}, "num_warps": c.num_warps,
                     "num_stages": c.num_stages, "options": dict(c.options), "note": c.note,
                     "not_for": dict(c.not_for)} for c in spec.configs],
        "runnable": spec.workload is not None,
    }


def _is_tensor(value) -> bool:
    from ..spec.kernel import Tensor
    return isinstance(value, Tensor)


def _arg(value):
    """A typical launch value as `--arg` takes it: `*fp16`, `*kfp16` for a read-only tensor, or the number."""
    if _is_tensor(value):
        return f"*{'k' if value.const else ''}{value.dtype}"
    return value


def _note(cfg) -> str:
    if not cfg.not_for:
        return cfg.note
    return "; ".join(filter(None, [cfg.note, f"not for {', '.join(cfg.not_for)} (see the spec for why)"]))
