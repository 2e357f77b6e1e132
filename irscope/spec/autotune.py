"""Kernels behind Triton's runtime wrappers: `@triton.autotune` (configs, pruning) and `@triton.heuristics`.

irscope compiles the `@triton.jit` function inside the wrappers; what the wrappers add becomes irscope's
own vocabulary: the autotuner's `triton.Config`s become the kernel's menu of `Config`s, its
`prune_configs_by` a report of what the kernel's own pruning would drop, and the heuristics values
computed from the typical launch the way `Heuristics.run` computes them. The wrappers are read by
attribute (`.fn`, `.configs`, `.keys`, `.values`, `.early_config_prune`...), so this module never
imports Triton and works with 3.6 and 3.9 alike.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from ..errors import UsageError

# Launch options a triton.Config carries besides its kwargs; Config.all_kwargs() is preferred where it exists.
_CONFIG_FIELDS = ("num_warps", "num_ctas", "num_stages", "maxnreg", "ir_override")
_SHORT = {"num_warps": "w", "num_stages": "s", "num_ctas": "c", "maxnreg": "r"}


@dataclass(frozen=True)
class Heuristic:
    """One `@triton.heuristics` value: the name it sets and the function computing it from the launch's args."""

    name: str
    fn: Callable[[dict], Any]
    sees_config: bool  # it sits below an autotuner, so the runtime hands it the chosen config's values too


@dataclass(frozen=True)
class Pruning:
    """An autotuner's `prune_configs_by`: run only for the report, never applied to the menu."""

    early_config_prune: Callable | None = None
    perf_model: Callable | None = None
    top_k: Any = 1.0


@dataclass(frozen=True)
class Tuning:
    """What the runtime wrappers around a kernel's `@triton.jit` function add to it."""

    wrappers: tuple[str, ...]  # outermost first: "autotune", "heuristics", or another wrapper's class name
    key: tuple[str, ...] = ()
    triton_configs: tuple = ()  # the autotuner's triton.Config objects, in its order
    config_names: tuple[str, ...] = ()  # irscope's name for each of them
    heuristics: tuple[Heuristic, ...] = ()  # in the order the runtime computes them
    pruning: Pruning | None = None


@dataclass(frozen=True)
class PruneReport:
    """Which configs the kernel's own `prune_configs_by` would drop for the typical launch."""

    pruned: Mapping[str, str]  # config name -> why ("early_config_prune", "perf_model (top_k=4)")
    notes: tuple[str, ...] = ()  # what could not be computed, and why


def is_autotuner(obj: Any) -> bool:
    return hasattr(obj, "fn") and hasattr(obj, "configs") and (hasattr(obj, "keys") or hasattr(obj, "key")) \
        and callable(getattr(obj, "run", None))


def is_heuristics(obj: Any) -> bool:
    return hasattr(obj, "fn") and isinstance(getattr(obj, "values", None), Mapping) \
        and callable(getattr(obj, "run", None))


def unwrap(obj: Any, is_jit: Callable[[Any], bool]) -> tuple[Any, Tuning] | None:
    """(the @triton.jit function, what its wrappers add), or None when `obj` wraps no jit function.

    Any object with a `.fn` and a `.run` is followed (Triton's KernelInterface wrappers all have both),
    so wrappers irscope does not know still reach the kernel; only autotune and heuristics add to it.
    """
    wrappers: list[str] = []
    heuristics: list[Heuristic] = []
    autotuner = None
    for _ in range(16):  # wrappers stack a few deep; a cycle of .fn must not hang the loader
        if is_jit(obj):
            break
        if not (hasattr(obj, "fn") and callable(getattr(obj, "run", None))):
            return None
        if is_autotuner(obj) and autotuner is None:
            autotuner = obj
            wrappers.append("autotune")
        elif is_heuristics(obj):
            wrappers.append("heuristics")
            heuristics += [Heuristic(str(k), v, autotuner is not None) for k, v in obj.values.items()]
        else:
            wrappers.append(type(obj).__name__)
        obj = obj.fn
    else:
        return None
    if not wrappers:
        return None
    tuning = Tuning(tuple(wrappers), heuristics=tuple(heuristics))
    if autotuner is not None:
        configs = tuple(getattr(autotuner, "configs", None) or ())
        keys = getattr(autotuner, "keys", None) or getattr(autotuner, "key", None) or ()
        early, perf = getattr(autotuner, "early_config_prune", None), getattr(autotuner, "perf_model", None)
        pruning = Pruning(early, perf, getattr(autotuner, "configs_top_k", 1.0)) if early or perf else None
        tuning = Tuning(tuning.wrappers, tuple(str(k) for k in keys), configs, config_names(configs),
                        tuning.heuristics, pruning)
    return obj, tuning


def _launch_kwargs(cfg: Any) -> dict[str, Any]:
    """What the autotuner passes to the kernel for a triton.Config: its kwargs plus its launch options."""
    all_kwargs = getattr(cfg, "all_kwargs", None)
    if callable(all_kwargs):
        return dict(all_kwargs())
    out = dict(getattr(cfg, "kwargs", {}) or {})
    out.update({k: getattr(cfg, k) for k in _CONFIG_FIELDS if getattr(cfg, k, None) is not None})
    return out


def _slug(value: Any) -> str:
    return re.sub(r"[^A-Za-z0-9_+-]", "_", str(value))


def config_names(configs: Sequence[Any]) -> tuple[str, ...]:
    """A name per triton.Config, built from its values: `BLOCK_M128_BLOCK_N64_w4_s3`.

    Built from the values rather than the position (`c0`, `c1`), so a name keeps meaning the same
    config when the list is reordered or grows, and snapshots compiled last month still line up.
    num_ctas appears only when it is not 1, as the others are absent when None. Two equal configs
    (a list built by a comprehension can repeat one) get `_2`, `_3` in list order.
    """
    names: list[str] = []
    for cfg in configs:
        kw = _launch_kwargs(cfg)
        user = dict(getattr(cfg, "kwargs", {}) or {})
        parts = [f"{k}{_slug(v)}" for k, v in user.items()]
        order = ("num_warps", "num_stages", "num_ctas", "maxnreg")  # w, s, c, r, then the rest as Triton orders them
        for k, v in sorted(kw.items(), key=lambda kv: order.index(kv[0]) if kv[0] in order else len(order)):
            if k in user or v is None or (k == "num_ctas" and v == 1):
                continue
            parts.append(f"{_SHORT.get(k, k)}{_slug(v)}")
        name = "_".join(parts) or "default"
        base, n = name, 1
        while name in names:
            n += 1
            name = f"{base}_{n}"
        names.append(name)
    return tuple(names)


def menu(tuning: Tuning, param_names: Sequence[str], config_type: type) -> tuple:
    """The autotuner's configs as irscope `Config`s: kwargs naming a parameter are constexprs; the rest
    (num_ctas, maxnreg, AMD's waves_per_eu given as a kwarg...) go to the backend options."""
    out = []
    for cfg, name in zip(tuning.triton_configs, tuning.config_names):
        kw = _launch_kwargs(cfg)
        constexprs = {k: v for k, v in kw.items() if k in param_names}
        options = {k: v for k, v in kw.items() if k not in param_names and k not in ("num_warps", "num_stages")}
        has_hook = getattr(cfg, "pre_hook", None) is not None
        note = "its pre_hook is not run (irscope compiles, it does not launch)" if has_hook else ""
        out.append(config_type(name, constexprs, num_warps=kw.get("num_warps"), num_stages=kw.get("num_stages"),
                               options=options, note=note))
    return tuple(out) or (config_type("default"),)


# Triton's dtype names -> torch's, for the stand-in tensors heuristics read (`args["x"].dtype == torch.float16`).
_TORCH_DTYPES = {"fp16": "float16", "bf16": "bfloat16", "fp32": "float32", "fp64": "float64", "i1": "bool",
                 "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64", "u8": "uint8", "u16": "uint16",
                 "u32": "uint32", "u64": "uint64", "fp8e4nv": "float8_e4m3fn", "fp8e5": "float8_e5m2",
                 "fp8e4b8": "float8_e4m3fnuz", "fp8e5b16": "float8_e5m2fnuz"}
_BITS = {"fp16": 16, "bf16": 16, "fp32": 32, "fp64": 64, "i1": 8, "i8": 8, "i16": 16, "i32": 32, "i64": 64, "u8": 8,
         "u16": 16, "u32": 32, "u64": 64}


class _Unknown(Exception):
    """A heuristic read something of a stand-in tensor that a typical launch does not know (its shape...)."""

    def __init__(self, arg: str, attr: str):
        super().__init__(arg, attr)
        self.arg, self.attr = arg, attr


class LaunchTensor:
    """A typical launch's tensor as a heuristic sees it: a dtype (torch's, when torch is installed), its
    element size and an address; no shape, strides or device, which irscope's typical launch lacks."""

    def __init__(self, name: str, dtype: str, address: int = 0):
        self._name, self._dtype, self._address = name, dtype, address

    @property
    def dtype(self) -> Any:
        torch_name = _TORCH_DTYPES.get(self._dtype)
        try:
            import torch  # only when a heuristic reads a dtype: torch is optional and slow to import
            return getattr(torch, torch_name)
        except (ImportError, AttributeError, TypeError):
            return f"torch.{torch_name or self._dtype}"

    def element_size(self) -> int:
        return _BITS.get(self._dtype, 8) // 8

    def data_ptr(self) -> int:
        return self._address

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        raise _Unknown(self._name, attr)

    def __repr__(self) -> str:
        return f"<typical tensor {self._name}: *{self._dtype}>"


def _stand_ins(args: Mapping[str, Any]) -> dict[str, Any]:
    out = {}
    for i, (name, value) in enumerate(args.items()):
        dtype = getattr(value, "dtype", None)
        out[name] = LaunchTensor(name, dtype, 512 * 4096 * (i + 1)) if isinstance(dtype, str) else value
    return out


def overridden(opts: Any) -> set[str]:
    """Names the user set on the command line: they win over a heuristic (Triton's runtime would
    overwrite them, but a user who names a value means it, and it is the way past a failing heuristic)."""
    names = {k for k, _ in opts.constexprs} | {k for k, _ in opts.backend_options}
    names |= {k for k in ("num_warps", "num_stages") if getattr(opts, k) is not None}
    return names


def heuristic_values(spec: Any, cfg: Any, opts: Any, args: Mapping[str, Any]) -> dict[str, Any]:
    """Each heuristic's value for the typical launch, computed the way `Heuristics.run` does.

    The runtime calls a heuristic with `{**dict(zip(arg_names, args)), **kwargs}`: the arguments the
    launch passes (constexpr defaults are not among them), the values of heuristics computed before it,
    and, when it sits below an autotuner, the chosen config's `all_kwargs()` (its kwargs, num_warps,
    num_stages...). A heuristic above the autotuner runs before a config is chosen, so it sees none of
    them. The spec's constexprs and a config the spec itself declares count as passed by the launch.
    """
    tuning = spec.tuning
    if tuning is None or not tuning.heuristics:
        return {}
    def launch_options(c):
        return {**c.options, **{k: getattr(c, k) for k in ("num_warps", "num_stages") if getattr(c, k) is not None}}
    passed = {**_stand_ins(args), **spec.constexprs}
    chosen: dict[str, Any] = {}
    if cfg.name in tuning.config_names:
        chosen = {**cfg.constexprs, **launch_options(cfg)}
    else:
        passed.update({**cfg.constexprs, **launch_options(cfg)})
    passed.update(dict(opts.constexprs))
    passed.update({k: getattr(opts, k) for k in ("num_warps", "num_stages") if getattr(opts, k) is not None})
    skip = overridden(opts)
    values: dict[str, Any] = {}
    for h in tuning.heuristics:
        if h.name not in skip:
            values[h.name] = _call(spec, h, {**passed, **(chosen if h.sees_config else {}), **values})
    return values


def _call(spec: Any, h: Heuristic, seen: dict) -> Any:
    hint = f"pass --constexpr {h.name}=VALUE to set it yourself"
    what = f"heuristic '{h.name}' of {spec.fn_name}"
    try:
        return h.fn(seen)
    except KeyError as e:
        name = e.args[0] if e.args else "?"
        param = next((p for p in getattr(spec.fn, "params", ()) if p.name == name), None)
        why = "the typical launch does not pass it"
        configs = getattr(getattr(spec, "tuning", None), "triton_configs", ())
        if not h.sees_config and any(name in (getattr(c, "kwargs", None) or {}) for c in configs):
            why = ("the autotune config sets it, and a config is chosen after this heuristic runs "
                   "(it sits above @triton.autotune)")
        elif param is not None and param.is_constexpr and param.has_default:
            why += " (Triton hands heuristics the launch's arguments, not constexpr defaults)"
            hint = f"pass --constexpr {name}=VALUE, or {hint}"
        elif param is not None:
            hint = f"pass {'--constexpr' if param.is_constexpr else '--arg'} {name}=VALUE, or {hint}"
        raise UsageError(f"{what} reads args['{name}'], but {why}", hint) from None
    except _Unknown as e:
        raise UsageError(f"{what} reads {e.arg}.{e.attr}, which irscope's typical launch does not know (it has a "
                         f"dtype and element_size(), no shape or strides)", hint) from None
    except Exception as e:  # noqa: BLE001 - a user's lambda can raise anything
        raise UsageError(f"{what} failed on the typical launch: {type(e).__name__}: {e}", hint) from None


def recorded(spec: Any, opts: Any, constexprs: Mapping[str, Any], options: Any) -> dict[str, Any]:
    """The values that came from heuristics in a compile, as irscope.json's `compile_options.heuristics`."""
    tuning = getattr(spec, "tuning", None)
    if tuning is None:
        return {}
    skip = overridden(opts)
    out = {}
    for h in tuning.heuristics:
        if h.name in skip:
            continue
        if h.name in constexprs:
            out[h.name] = constexprs[h.name]
        elif hasattr(options, h.name):
            out[h.name] = getattr(options, h.name)
    return out


def prune_report(spec: Any, args: Mapping[str, Any], constexprs: Mapping[str, Any]) -> PruneReport | None:
    """What the kernel's `prune_configs_by` would drop for the typical launch, computed without a GPU.

    Called the way `Autotuner.prune_configs` calls it: `early_config_prune(configs, nargs, **kwargs)`
    with nargs the positional arguments (irscope's typical non-constexpr values) and kwargs the
    keyword ones (constexprs passed, heuristics above the autotuner); then `perf_model(**nargs,
    **kwargs, **config.all_kwargs())` keeps the `top_k` fastest. A perf model usually asks the GPU
    for its clock and bandwidth: when it fails, the report says so and marks nothing.
    """
    tuning = getattr(spec, "tuning", None)
    if tuning is None or tuning.pruning is None:
        return None
    pruning = tuning.pruning
    configs = list(tuning.triton_configs)
    names = dict(zip(map(id, configs), tuning.config_names))
    nargs = _stand_ins(args)
    kwargs = dict(constexprs)
    notes: list[str] = []
    for h in tuning.heuristics:
        if not h.sees_config:
            try:
                kwargs[h.name] = h.fn({**nargs, **kwargs})
            except _Unknown as e:
                notes.append(f"heuristic {h.name} above the autotuner reads {e.arg}.{e.attr}, which the typical "
                             "launch does not know")
            except Exception as e:  # noqa: BLE001
                notes.append(f"heuristic {h.name} above the autotuner failed: {type(e).__name__}: {e}")
    pruned: dict[str, str] = {}
    kept = configs
    if pruning.early_config_prune is not None:
        try:
            kept = list(pruning.early_config_prune(configs, nargs, **kwargs))
        except _Unknown as e:
            notes.append(f"early_config_prune reads {e.arg}.{e.attr}, which the typical launch does not know: "
                         "nothing marked")
            return PruneReport({}, tuple(notes))
        except Exception as e:  # noqa: BLE001 - the kernel's own code, run on stand-ins
            notes.append(f"early_config_prune failed on the typical launch ({type(e).__name__}: {e}): "
                         "it may need a GPU; nothing marked")
            return PruneReport({}, tuple(notes))
        kept_ids = {id(c) for c in kept}
        pruned.update({names[id(c)]: "early_config_prune" for c in configs if id(c) not in kept_ids
                       and not any(_same(c, k) for k in kept)})
        extra = [c for c in kept if id(c) not in names and not any(_same(c, o) for o in configs)]
        if extra:
            notes.append(f"early_config_prune returned {len(extra)} config(s) not in the list: "
                         + "; ".join(config_names(extra)))
    if pruning.perf_model is not None:
        top_k = _top_k(pruning.top_k, len(configs), len(kept))
        if top_k is None:
            notes.append(f"top_k={pruning.top_k!r} is neither a float <= 1.0 nor an int")
        elif len(kept) > top_k:
            try:
                est = {id(c): pruning.perf_model(**nargs, **kwargs, **_launch_kwargs(c)) for c in kept}
            except Exception as e:  # noqa: BLE001
                notes.append(f"perf_model needs a GPU (on the typical launch it raised {type(e).__name__}: {e}); "
                             f"the autotuner would keep its top_k={pruning.top_k!r} of those left")
            else:
                ranked = sorted(kept, key=lambda c: est[id(c)])
                for c in ranked[top_k:]:
                    if id(c) in names:
                        pruned[names[id(c)]] = f"perf_model (top_k={pruning.top_k!r})"
    return PruneReport(pruned, tuple(notes))


def _same(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001
        return False


def _top_k(top_k: Any, n_all: int, n_left: int) -> int | None:
    """Autotuner.prune_configs' top_k: a fraction (of all configs in 3.6, of those left, at least 1, later)."""
    if isinstance(top_k, float) and top_k <= 1.0:
        if _triton_before_3_7():
            return int(n_all * top_k)
        return max(1, int(n_left * top_k))
    return top_k if isinstance(top_k, int) else None


def _triton_before_3_7() -> bool:
    from importlib.metadata import PackageNotFoundError, version
    try:
        major, minor = (int(x) for x in version("triton").split(".")[:2])
    except (PackageNotFoundError, ValueError):
        return False
    return (major, minor) < (3, 7)
