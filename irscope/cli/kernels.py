"""`irscope kernels [KERNEL]`: the built-in kernel library, or one kernel's configs and typical launch."""
from __future__ import annotations

from ..render import table


def add_parser(sub) -> None:
    p = sub.add_parser("kernels", help="list the built-in kernels, or one kernel's configs")
    p.add_argument("kernel", nargs="?", help="show this kernel's configs and typical launch values")
    p.set_defaults(run=run)


def run(args, ui) -> int:
    from .. import library

    if args.kernel:
        spec = library.load_kernel(args.kernel)
        ui.print(f"{ui.style(spec.name, 'bold')}: {spec.description}")
        ui.print(f"function {spec.fn_name} in {spec.path}\n")
        ui.print("typical launch (decides the JIT's specialisation):")
        ui.print("  " + ", ".join(f"{k}={v}" for k, v in spec.args.items()))
        rows = [[c.name, " ".join(f"{k}={v}" for k, v in {**spec.constexprs, **c.constexprs}.items()),
                 c.num_warps or "-", c.num_stages or "-", _note(c)] for c in spec.configs]
        ui.print()
        ui.print(table(["config", "constexprs", "warps", "stages", "note"], rows, style=ui.style))
        return 0
    rows = [[s.name, s.fn_name, len(s.configs), s.description] for s in library.builtin_specs()]
    ui.print(table(["kernel", "function", "configs", "description"], rows, right=(2,), style=ui.style))
    return 0


def _note(cfg) -> str:
    if not cfg.not_for:
        return cfg.note
    return "; ".join(filter(None, [cfg.note, f"not for {', '.join(cfg.not_for)} (see the spec for why)"]))
