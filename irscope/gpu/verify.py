"""Evidence that a snapshot shows what the GPU compiles: the JIT's compile of a real launch, next to the
device-less compile of the same kernel with the same specialisation, stage by stage.

Both compiles run in this process, with the same Triton, with line information off (otherwise the two
differ only in absolute paths, and the cubin in the source file's size and mtime).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

from ..spec.kernel import CompileOptions, Tensor, TensorDesc

COMPARED = ("glir", "ttir", "ttgir", "llir", "ptx", "cubin")  # glir: a Gluon kernel's first stage


@dataclass(frozen=True)
class StageVerdict:
    stage: str
    identical: bool
    jit_bytes: int
    deviceless_bytes: int
    first_difference: str = ""  # the first differing line (text stages), "jit | device-less"


@dataclass(frozen=True)
class Verification:
    kernel: str
    config: str
    size_name: str
    target: str
    stages: tuple[StageVerdict, ...]
    specialisation: tuple[dict, ...] = ()
    versions: dict | None = None

    @property
    def identical(self) -> bool:
        return all(s.identical for s in self.stages)

    def as_dict(self) -> dict:
        d = asdict(self)
        d["identical"] = self.identical
        return d


def options_for_call(spec, call, config: str) -> CompileOptions:
    """The device-less compile options that reproduce a real launch's specialisation."""
    from ..spec.workload import dtype_name

    names = [p.name for p in spec.fn.params if not p.is_constexpr]
    args, divisibility = [], []
    for name, value in zip(names, call.args):
        if hasattr(value, "data_ptr"):
            args.append((name, Tensor(dtype_name(value.dtype))))
            if value.data_ptr() % 16:
                divisibility.append((name, 1))
        elif hasattr(value, "block_shape") and hasattr(getattr(value, "base", None), "data_ptr"):
            # a tensor descriptor: its dtype and block shape are the specialisation; Gluon's also its layout
            layout = getattr(value, "layout", None)
            gluon = {} if layout is None else {
                "swizzle": int(layout.swizzle_byte_width), "transposed": bool(layout.transposed),
                "fp4_padded": bool(layout.fp4_padded),
                "cga_layout": tuple(tuple(int(x) for x in b) for b in (getattr(layout, "cga_layout", None) or ()))}
            args.append((name, TensorDesc(dtype_name(value.base.dtype), tuple(int(n) for n in value.shape),
                                          tuple(int(n) for n in value.block_shape),
                                          tuple(int(n) for n in value.strides), getattr(value, "padding", "zero"),
                                          **gluon)))
        elif isinstance(value, (bool, int, float)):
            args.append((name, value))
    return CompileOptions(config=config, num_warps=call.num_warps, num_stages=call.num_stages,
                          constexprs=tuple(call.constexprs.items()), backend_options=tuple(call.options.items()),
                          divisibility=tuple(divisibility), args=tuple(args), line_info=False)


def verify(request) -> Verification:
    """Compile the kernel of `request` through the JIT on this GPU and device-less, and compare."""
    from ..harness import runtime as device
    from .. import harness
    from ..spec import library
    from . import runner

    workload = runner.workload_of(library.load_kernel(request.kernel))
    prepared = runner.prepare(request, "cuda", default_size=workload.bench_size)
    spec = prepared.spec
    call = next(c for c in prepared.calls if c.kernel == spec.name)
    target = device.current_target()
    jit = device.jit_compile(call)
    result = harness.compile_kernel(spec, target, options_for_call(spec, call, prepared.config))
    harness.raise_for(result)
    verdicts = []
    for stage in COMPARED:
        a, b = jit.get(stage), result.stages.get(stage)
        if a is None and b is None:
            continue
        same = a == b
        first = ""
        if not same and isinstance(a, str) and isinstance(b, str):
            for la, lb in zip(a.splitlines(), b.splitlines()):
                if la != lb:
                    first = f"{la.strip()[:100]} | {lb.strip()[:100]}"
                    break
        verdicts.append(StageVerdict(stage, same, len(a or b"") if isinstance(a, bytes) else len((a or "").encode()),
                                     len(b) if isinstance(b, bytes) else len((b or "").encode()), first))
    return Verification(spec.name, prepared.config, prepared.size_name, target.name, tuple(verdicts),
                        tuple(result.specialisation), result.versions)
