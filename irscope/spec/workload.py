"""How to run a kernel: inputs for a size, the launch, a torch reference, and what a run ought to cost.

A `KernelSpec` says how to *compile* a kernel; its `workload=` says how to *run* it. irscope's runner
(`irscope run`, issue 7's GPU runner, the CI checks) does the same few steps with every workload:

    size   = workload.size("small")                  # or "ragged", "bench", or user's K=V overrides
    x      = workload.build(size, generator, device)  # fresh random tensors, outputs included
    poison the tensors named in workload.outputs with NaN
    calls  = workload.launch(x, size, params)         # -> [KernelCall, ...], in launch order
    for call in calls: run(call)                      # the one place a kernel actually runs
    want   = workload.reference(x_before, size)        # torch, in fp32 or wider
    compare x[name] with want[name] for every output, to workload.tolerances[dtype]

The launch contract (what a runner may rely on):

- `launch(x, size, params)` only *describes* launches: it returns `KernelCall`s and runs nothing.
  `params` is a `Params`: the resolved constexprs, num_warps and num_stages of the spec being run
  (spec defaults, then its chosen config); `params.of("blur.row")` gives another spec's `Params`
  (with its default config) when one workload launches several kernels. The specs a workload launches
  besides its own are listed in `workload.kernels`.
- A `KernelCall` carries everything one launch needs: the `@triton.jit` function, the grid (a tuple),
  the non-constexpr arguments in the function's order, the constexprs by name, num_warps, num_stages
  and any other backend options of the config.
- Running a call is the runner's business, through a callable `run(call) -> None`. `irscope.harness.runtime.jit_launch`
  (the default) does `call.fn[call.grid](*call.args, **call.constexprs, num_warps=..., num_stages=...)`,
  which works through the JIT on a GPU and under TRITON_INTERPRET=1 on the CPU. A runner that launches
  a prebuilt binary (a cubin from a snapshot) passes its own callable, matches `call.kernel` (the spec
  name) or `call.fn` to the binary it holds, and must check that `call.constexprs` equal the ones the
  binary was compiled with (a launch may derive constexprs from the size: softmax's BLOCK_SIZE is the
  row length rounded up to a power of two, attention's HEAD_DIM is the size's `d`), and that the
  arguments keep the specialisation the binary assumed: an integer the binary took as divisible by 16
  (or as the constant 1) must be so at the run's size, or the binary computes something else.
- Tensors are torch tensors on the runner's device; arguments that are not tensors are Python ints and
  floats, as a real launch passes them.

torch is imported inside functions only: it is a test extra, not a runtime dependency of irscope.
"""
from __future__ import annotations

import contextvars

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from ..errors import UsageError

Size = Mapping[str, int]


@dataclass(frozen=True)
class Tolerance:
    """How far a result may be from the reference: |got - want| <= atol + rtol * |want|, elementwise."""

    atol: float
    rtol: float


# Per output dtype. fp16 keeps 11 significant bits (~5e-4 relative), bf16 8 bits (~4e-3): a kernel that
# accumulates in fp32 and rounds once at the end lands well inside these.
DEFAULT_TOLERANCES: Mapping[str, Tolerance] = {
    "fp32": Tolerance(1e-4, 1e-4),
    "fp16": Tolerance(1e-2, 1e-2),
    "bf16": Tolerance(4e-2, 2e-2),
}


@dataclass(frozen=True)
class KernelCall:
    """One launch of one kernel, described; a runner's `run(call)` carries it out."""

    kernel: str  # the spec's name, e.g. "blur.row"
    fn: Any  # the @triton.jit function
    grid: tuple[int, ...]
    args: tuple  # the non-constexpr parameters, in the function's order
    constexprs: Mapping[str, Any]
    num_warps: int | None = None
    num_stages: int | None = None
    options: Mapping[str, Any] = field(default_factory=dict)  # other backend options: maxnreg...

    def jit_kwargs(self) -> dict[str, Any]:
        """The keyword arguments of the JIT call: constexprs, num_warps, num_stages, backend options."""
        kwargs = dict(self.constexprs)
        if self.num_warps is not None:
            kwargs["num_warps"] = self.num_warps
        if self.num_stages is not None:
            kwargs["num_stages"] = self.num_stages
        kwargs.update(self.options)
        return kwargs



@dataclass(frozen=True)
class Params:
    """The launch parameters of one spec, resolved: what `launch` reads to build its grid and calls."""

    kernel: str
    fn: Any
    constexprs: Mapping[str, Any]
    num_warps: int | None = None
    num_stages: int | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    others: Mapping[str, "Params"] = field(default_factory=dict, repr=False, compare=False)

    def __getitem__(self, name: str) -> Any:
        return self.constexprs[name]

    def of(self, kernel: str) -> "Params":
        """The parameters of another spec this workload launches (its default config)."""
        if kernel == self.kernel:
            return self
        if kernel not in self.others:
            raise UsageError(f"workload of '{self.kernel}' launches '{kernel}' but does not list it",
                             "add it to the Workload's kernels=(...)")
        return self.others[kernel]

    def call(self, grid: Sequence[int], *args: Any, **constexprs: Any) -> KernelCall:
        """A KernelCall of this spec's kernel; keyword arguments override constexprs (derived from the size)."""
        return KernelCall(self.kernel, self.fn, tuple(int(g) for g in grid), tuple(args),
                          {**self.constexprs, **constexprs}, self.num_warps, self.num_stages, dict(self.options))


def params_for(spec, config: str | None = None, constexprs: Mapping[str, Any] | None = None) -> Params:
    """A spec's Params under one of its configs (default: the first), plus overrides."""
    cfg = spec.config(config)
    return Params(spec.name, spec.fn, {**spec.constexprs, **cfg.constexprs, **(constexprs or {})},
                  cfg.num_warps, cfg.num_stages, dict(cfg.options))


def params_of(spec, workload: Workload, config: str | None, constexprs: Mapping[str, Any] | None = None) -> Params:
    """The spec's Params under `config` (and `constexprs` over it), with the other specs its workload launches
    at their defaults."""
    from . import library
    own = params_for(spec, config, constexprs)
    others = {name: params_for(library.load_kernel(_sibling(spec, name))) for name in workload.kernels
              if name != spec.name}
    return Params(own.kernel, own.fn, own.constexprs, own.num_warps, own.num_stages, own.options, others)


def _sibling(spec, name: str) -> str:
    # Specs named in `kernels` live in the same file as the spec (built-in names or FILE.py:NAME).
    from . import library
    if spec.path and Path(spec.path).resolve().parent != library.builtin_dir().resolve():
        return f"{spec.path}:{name}"
    return name


Builder = Callable[[Size, Any, Any], dict]  # (size, torch.Generator, device) -> {name: tensor}
Launcher = Callable[[dict, Size, Params], Sequence[KernelCall]]
Reference = Callable[[dict, Size], dict]  # (inputs, size) -> {output name: expected tensor}
Baseline = Callable[[dict, Size], Callable[[], Any]]  # (inputs, size) -> a zero-argument callable to time


@dataclass(frozen=True)
class Workload:
    """Everything needed to run a kernel and judge the result: sizes, inputs, launch, reference, cost."""

    sizes: Mapping[str, Size]  # preset name -> {dimension: value}
    build: Builder  # fresh random inputs (never zeros) and the output tensors
    outputs: tuple[str, ...]  # which tensors of `build`'s dict the kernels write
    launch: Launcher
    reference: Reference
    flops: Callable[[Size], float] = lambda size: 0.0
    bytes: Callable[[Size], float] = lambda size: 0.0  # the least DRAM traffic the work needs
    tolerances: Mapping[str, Tolerance] = field(default_factory=lambda: dict(DEFAULT_TOLERANCES))
    baselines: Mapping[str, Baseline] = field(default_factory=dict)  # what a user would run instead
    check_sizes: tuple[str, ...] = ("small", "ragged")  # presets CI checks in the interpreter
    bench_size: str = "bench"  # the preset a GPU run times unless told otherwise
    kernels: tuple[str, ...] = ()  # other specs the launch runs, by name (their default configs)
    note: str = ""

    def size(self, name: str) -> dict[str, int]:
        """A named preset."""
        if name not in self.sizes:
            raise UsageError(f"no size preset '{name}'", f"presets: {', '.join(self.sizes)}; or give K=V,... "
                             f"with dimensions {', '.join(self.dims)}")
        return dict(self.sizes[name])

    @property
    def dims(self) -> tuple[str, ...]:
        first = next(iter(self.sizes.values()), {})
        return tuple(first)

    def parse_size(self, text: str | None, default: str) -> tuple[str, dict[str, int]]:
        """`--size` -> (label, size): a preset name, or `K=V,...` applied over the `default` preset."""
        if not text:
            return default, self.size(default)
        if "=" not in text:
            return text, self.size(text)
        base_name, _, rest = text.partition(":") if ":" in text else (default, "", text)
        size = self.size(base_name)
        seen: set[str] = set()
        for item in (p for p in rest.split(",") if p.strip()):
            key, sep, value = item.partition("=")
            key = key.strip()
            if key in seen:
                raise UsageError(f"bad --size '{text}': {key} is given twice", f"give {key} once")
            seen.add(key)
            if not sep or key not in size:
                raise UsageError(f"bad --size item '{item}'", f"dimensions are {', '.join(size)}; "
                                 f"write e.g. --size {next(iter(size), 'n')}=1000 or PRESET:K=V")
            try:
                size[key] = int(value)
            except ValueError:
                raise UsageError(f"bad --size value '{item}': not an integer",
                                 f"write e.g. --size {key}=1000") from None
            if size[key] < 1:
                raise UsageError(f"bad --size value '{item}': must be positive", f"write e.g. --size {key}=1000")
        return text, size

    def with_(self, **changes) -> "Workload":
        return replace(self, **changes)


# Helpers kernel files use to write workloads. They import torch when called, never at import time.

def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def next_power_of_2(n: int) -> int:
    return 1 << max(0, int(n) - 1).bit_length()


def torch_dtype(name: str):
    """Triton's dtype names (fp16, bf16, fp32) -> torch dtypes."""
    import torch
    table = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32, "fp64": torch.float64,
             "i8": torch.int8, "i16": torch.int16, "i32": torch.int32, "i64": torch.int64, "u8": torch.uint8}
    return table[name]


def dtype_name(dtype) -> str:
    """torch dtype -> Triton's name (the key of `tolerances`)."""
    import torch
    table = {torch.float16: "fp16", torch.bfloat16: "bf16", torch.float32: "fp32", torch.float64: "fp64",
             torch.int8: "i8", torch.int16: "i16", torch.int32: "i32", torch.int64: "i64", torch.uint8: "u8"}
    return table.get(dtype, str(dtype).replace("torch.", ""))


def randn(gen, shape: Sequence[int], dtype: str, device, scale: float = 1.0):
    """Normal random values (never all zeros) from `gen`, as `dtype` on `device`."""
    import torch
    if _is_meta(device):  # shapes only (irscope rank): no values, no memory
        return torch.empty(tuple(shape), dtype=torch_dtype(dtype), device="meta")
    x = torch.randn(tuple(shape), generator=gen, device=gen.device, dtype=torch.float32)
    if scale != 1.0:
        x = x * scale
    return x.to(device=device, dtype=torch_dtype(dtype))


def rand(gen, shape: Sequence[int], dtype: str, device):
    """Uniform random values in [0, 1) from `gen`, as `dtype` on `device`."""
    import torch
    if _is_meta(device):
        return torch.empty(tuple(shape), dtype=torch_dtype(dtype), device="meta")
    x = torch.rand(tuple(shape), generator=gen, device=gen.device, dtype=torch.float32)
    return x.to(device=device, dtype=torch_dtype(dtype))


def _is_meta(device) -> bool:
    return str(device) == "meta"


def empty(shape: Sequence[int], dtype: str, device):
    """An output tensor; the runner fills it with NaN before the launch."""
    import torch
    return torch.empty(tuple(shape), dtype=torch_dtype(dtype), device=device)


def sm_count(device) -> int:
    """Streaming multiprocessors of `device`, for persistent grids; 1 on the CPU (the interpreter), so
    that a persistent kernel's few programs each loop over several rows of a small CI size there."""
    import torch
    dev = torch.device(device)
    if dev.type == "cuda":
        return torch.cuda.get_device_properties(dev).multi_processor_count
    if dev.type == "meta":  # a launch planned for a chip irscope models (irscope rank)
        return MODELLED_SMS.get()
    return 1


MODELLED_SMS: contextvars.ContextVar[int] = contextvars.ContextVar("modelled_sms", default=1)
