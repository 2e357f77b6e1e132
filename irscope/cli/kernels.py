"""`irscope kernels [KERNEL] [--json]`: the built-in kernel library, or one kernel's configs and typical launch."""
from __future__ import annotations

import json

from ..errors import UsageError
from ..render.terminal import table


def add_parser(sub) -> None:
    p = sub.add_parser("kernels", help="list the built-in kernels, or one kernel's configs",
                       description="Without KERNEL: the built-in kernels. With KERNEL (a built-in name or "
                                   "FILE.py:FUNCTION): its typical launch and its menu of configs.")
    p.add_argument("kernel", nargs="?", metavar="KERNEL", help="show this kernel's configs and typical launch values")
    p.add_argument("--json", action="store_true",
                   help="every kernel (or KERNEL) with its parameters, typical launch and configs, as JSON")
    p.add_argument("--arg", action="append", default=[], metavar="NAME=VALUE",
                   help="a typical launch value (as for compile), for the report of an autotuner's pruning")
    p.add_argument("--constexpr", action="append", default=[], metavar="NAME=VALUE",
                   help="a constexpr the launch passes, for the report of an autotuner's pruning")
    p.set_defaults(run=run)


def run(args, ui) -> int:
    from ..spec import library

    launch = _launch(args)
    if (launch[0] or launch[1]) and not args.kernel:
        raise UsageError("--arg and --constexpr need a KERNEL", "irscope kernels KERNEL --arg NAME=VALUE")
    if args.kernel and (launch[0] or launch[1]):  # checked as a compile checks them: a typo is not shown as fine
        from ..spec.kernel import check_overrides
        check_overrides(library.load_kernel(args.kernel), *launch)
    if args.json:
        specs = [library.load_kernel(args.kernel)] if args.kernel else library.builtin_specs()
        data = [kernel_as_dict(s, *launch) for s in specs]
        ui.print(json.dumps(data[0] if args.kernel else data, indent=1, default=str))
        return 0
    if args.kernel:
        spec = library.load_kernel(args.kernel)
        report = _prune_report(spec, *launch)
        ui.print(f"{ui.style(spec.name, 'bold')}: {spec.description}")
        ui.print(f"function {spec.fn_name} in {spec.path}\n")
        ui.print("typical launch (decides the JIT's specialisation):")
        ui.print("  " + (", ".join(f"{k}={_arg(v)}" for k, v in {**spec.args, **launch[0]}.items())
                         or "(none declared: pass --arg NAME=VALUE to compile)"))
        for line in _tuning_lines(spec, report):
            ui.print(line)
        pruned = report.pruned if report else {}
        with_options = any(c.options for c in spec.configs)
        rows = [[c.name, " ".join(f"{k}={v}" for k, v in {**spec.constexprs, **c.constexprs}.items()),
                 c.num_warps or "-", c.num_stages or "-"]
                + ([" ".join(f"{k}={v}" for k, v in c.options.items())] if with_options else [])
                + [_note(c, pruned.get(c.name))] for c in spec.configs]
        ui.print()
        ui.print(table(["config", "constexprs", "warps", "stages"] + (["options"] if with_options else []) + ["note"],
                       rows, style=ui.style))
        return 0
    rows = [[s.name, s.fn_name, len(s.configs), s.description] for s in library.builtin_specs()]
    ui.print(table(["kernel", "function", "configs", "description"], rows, right=(2,), style=ui.style))
    return 0


def _launch(args) -> tuple[dict, dict]:
    """(typical argument values, constexprs passed) from --arg and --constexpr."""
    from ..spec.kernel import parse_assignment
    return (dict(parse_assignment(a, "argument") for a in args.arg),
            dict(parse_assignment(c, "constexpr") for c in args.constexpr))


def _prune_report(spec, args: dict | None = None, constexprs: dict | None = None):
    """The autotuner's pruning for the typical launch, or None when the kernel has none."""
    from ..spec.autotune import PruneReport, prune_report
    tuning = spec.tuning
    if tuning is None or tuning.pruning is None:
        return None
    launch = {**spec.args, **(args or {})}
    missing = [p.name for p in spec.fn.params if not p.is_constexpr and p.name not in launch]
    if missing:
        return PruneReport({}, (f"not computed: the typical launch has no value for {missing[0]} "
                                f"(pass --arg {missing[0]}=VALUE)",))
    return prune_report(spec, launch, {**spec.constexprs, **(constexprs or {})})


def _tuning_lines(spec, report) -> list[str]:
    """What @triton.autotune / @triton.heuristics add, in words."""
    tuning = spec.tuning
    if tuning is None:
        return []
    lines = ["", "wrapped by " + " > ".join(f"@triton.{w}" if w in ("autotune", "heuristics") else w
                                             for w in tuning.wrappers) + " (outermost first)"]
    if "autotune" in tuning.wrappers:
        lines.append(f"  autotune: {len(tuning.triton_configs)} configs, key={list(tuning.key)}")
    for h in tuning.heuristics:
        where = "sees the autotune config" if h.sees_config and "autotune" in tuning.wrappers else "from the launch"
        lines.append(f"  heuristic {h.name} ({where}): computed at compile time from the typical launch")
    if tuning.pruning is not None:
        p = tuning.pruning
        parts = [f"{k}={getattr(v, '__name__', v)}" for k, v in
                 (("early_config_prune", p.early_config_prune), ("perf_model", p.perf_model)) if v is not None]
        if p.perf_model is not None:
            parts.append(f"top_k={p.top_k!r}")
        lines.append(f"  prune_configs_by: {', '.join(parts)} (reported, not applied: every config compiles)")
        if report is not None:
            lines.append(f"  on the typical launch it would drop {len(report.pruned)} of {len(spec.configs)}: "
                         + (", ".join(report.pruned) or "none"))
            lines += [f"  note: {n}" for n in report.notes]
    return lines


def kernel_as_dict(spec, args: dict | None = None, constexprs: dict | None = None) -> dict:
    """The JSON form of a KernelSpec (`irscope kernels --json`); keys documented in docs/cli.md."""
    report = _prune_report(spec, args, constexprs)
    pruned = report.pruned if report else {}
    launch = {**spec.args, **(args or {})}
    params = [{"name": p.name, "kind": _param_kind(p, launch)} for p in getattr(spec.fn, "params", ())]
    return {
        "name": spec.name, "function": spec.fn_name, "path": str(spec.path), "description": spec.description,
        "parameters": params,
        "launch": {k: _arg(v) for k, v in launch.items()},
        "constexprs": dict(spec.constexprs),
        "configs": [{"name": c.name, "constexprs": {**spec.constexprs, **c.constexprs}, "num_warps": c.num_warps,
                     "num_stages": c.num_stages, "options": dict(c.options), "note": c.note,
                     "not_for": dict(c.not_for), **({"pruned": pruned[c.name]} if c.name in pruned else {})}
                    for c in spec.configs],
        "runnable": spec.workload is not None,
        **({"tuning": _tuning_dict(spec, report)} if spec.tuning is not None else {}),
    }


def _tuning_dict(spec, report) -> dict:
    tuning = spec.tuning
    out: dict = {"wrappers": list(tuning.wrappers), "key": list(tuning.key),
                 "heuristics": [{"name": h.name, "sees_config": h.sees_config} for h in tuning.heuristics]}
    if tuning.pruning is not None:
        p = tuning.pruning
        out["prune"] = {"early_config_prune": getattr(p.early_config_prune, "__name__", None),
                        "perf_model": getattr(p.perf_model, "__name__", None),
                        "top_k": p.top_k if p.perf_model is not None else None,
                        "pruned": dict(report.pruned) if report else {},
                        "kept": [c.name for c in spec.configs if not report or c.name not in report.pruned],
                        "notes": list(report.notes) if report else []}
    return out


def _param_kind(param, launch: dict) -> str:
    """constexpr, tensor, descriptor or scalar: from the typical launch value, else from the parameter's
    annotation (`x_ptr: "*fp32"`); `unknown` for a kernel without a spec whose parameter has neither."""
    from ..spec.kernel import TensorDesc, kind_of_annotation
    if param.is_constexpr:
        return "constexpr"
    value = launch.get(param.name)
    if value is None:
        annotated = kind_of_annotation(getattr(param, "annotation_type", "") or "")
        if annotated is None and getattr(param, "has_default", False) and param.default is not None:
            return "scalar"  # `scale=2.0`: a launch may leave it out, and its default is a number or a flag
        return "unknown" if annotated is None else "tensor" if annotated == "tensor" else "scalar"
    return "tensor" if _is_tensor(value) else "descriptor" if isinstance(value, TensorDesc) else "scalar"


def _is_tensor(value) -> bool:
    from ..spec.kernel import Tensor
    return isinstance(value, Tensor)


def _arg(value):
    """A typical launch value as `--arg` takes it: `*fp16`, `*kfp16` for a read-only tensor, or the number."""
    if _is_tensor(value):
        return f"*{'k' if value.const else ''}{value.dtype}"
    return value


def _note(cfg, pruned: str | None = None) -> str:
    parts = [f"PRUNED by {pruned}" if pruned else "", cfg.note]
    if cfg.not_for:
        parts.append(f"not for {', '.join(cfg.not_for)} (see the spec for why)")
    return "; ".join(filter(None, parts))
