"""What irscope knows about a kernel before compiling it: its spec, its configs, and the options asked for.

A kernel file declares a `KernelSpec` next to its `@triton.jit` function. The spec gives the values a
typical launch passes (so irscope can specialise the kernel the way Triton's JIT would), the constexpr
defaults, and a menu of named configs. `CompileOptions` is what the user asked for on top of that.
Nothing here imports Triton.
"""
from __future__ import annotations

import ast
import difflib
import hashlib
import re
from dataclasses import dataclass, field, replace
from typing import Any, Mapping, Sequence

from ..errors import UsageError

# Typical addresses of the tensors a launch passes: torch's caching allocator hands out blocks aligned
# to 512 bytes, so a real launch sees every pointer 16-byte aligned unless the tensor is a view at an
# odd offset. irscope assumes the common case and lets the user say otherwise (--divisibility).
TYPICAL_POINTER_ALIGNMENT = 512


@dataclass(frozen=True)
class Tensor:
    """A pointer argument of a typical launch: a tensor of `dtype` (Triton's names: fp16, bf16, fp32, i8...)."""

    dtype: str
    const: bool = False  # a `*k` pointer (read-only), as Triton marks `tl.const` arguments

    def __str__(self) -> str:
        return f"*{self.dtype}"


@dataclass(frozen=True)
class TensorDesc:
    """A host-side tensor descriptor argument (`triton.tools.tensor_descriptor.TensorDescriptor`) of a
    typical launch: a tensor of `dtype` with this shape and strides, read in blocks of `block_shape`
    (an entry may name a constexpr, e.g. "BLOCK_M": the block then follows the config).
    For a `@gluon.jit` kernel it stands for Gluon's descriptor, whose NVMMA shared layout is part of its
    type: `swizzle` is that layout's swizzle in bytes, 0, 32, 64 or 128, or None for Gluon's default for the
    block; `transposed` (a K-major operand), `fp4_padded` and `cga_layout` (bases of the CTA tiling) are
    its other fields (its element bits and rank are the dtype's and the block's). A `@triton.jit` kernel's
    descriptor has no layout: any of these given for one is refused.

    Triton's specialiser sees only the dtype and the block shape (`tensordesc<fp16[64, 64]>`); shape,
    strides and padding are run-time values, kept here so a launch file says what the program passed.
    """

    dtype: str
    shape: tuple[int, ...]
    block_shape: tuple[int | str, ...]
    strides: tuple[int, ...] = ()  # () means contiguous (row-major) over `shape`
    padding: str = "zero"
    swizzle: int | None = None
    transposed: bool = False
    fp4_padded: bool = False
    cga_layout: tuple[tuple[int, ...], ...] = ()

    def __post_init__(self) -> None:
        hint = "give swizzle=0, 32, 64 or 128, or leave it out for Gluon's default for the block"
        if self.swizzle is not None and (not isinstance(self.swizzle, int) or isinstance(self.swizzle, bool)
                                         or self.swizzle not in SWIZZLES):
            raise UsageError(f"tensor descriptor {self}: swizzle={self.swizzle!r} is not an NVMMA shared layout's "
                             "swizzle (0, 32, 64 or 128 bytes)", hint)
        for name in ("transposed", "fp4_padded"):
            if not isinstance(getattr(self, name), bool):
                raise UsageError(f"tensor descriptor {self}: {name}={getattr(self, name)!r} is not true or false",
                                 f"give {name}=True or leave it out")
        try:  # a tuple of tuples, however it came (a list read back from JSON)
            cga = tuple(tuple(b) for b in self.cga_layout)
        except TypeError:
            cga = None
        if cga is None or any(len(b) != len(self.block_shape) or not all(isinstance(x, int) and not isinstance(
                x, bool) and x >= 0 for x in b) for b in cga):
            given = self.cga_layout
            object.__setattr__(self, "cga_layout", ())  # (for the message's str(self))
            raise UsageError(f"tensor descriptor {self}: cga_layout={given!r} is not a list of bases, "
                             f"each {len(self.block_shape)} non-negative integers (one a block dimension)",
                             "give e.g. cga_layout=((1, 0),) for two CTAs split along the first dimension")
        object.__setattr__(self, "cga_layout", cga)
        if self.fp4_padded and (self.swizzle not in (None, 128) or DTYPE_BITS.get(self.dtype) != 8):
            raise UsageError(f"tensor descriptor {self}: an fp4-padded layout takes 8-bit elements and a 128-byte "
                             "swizzle", "give an 8-bit dtype (u8, i8) and swizzle=128, or leave swizzle out")

    @property
    def layout_fields(self) -> dict[str, Any]:
        """The NVMMA layout fields asked for (those not left to Gluon's default)."""
        out: dict[str, Any] = {} if self.swizzle is None else {"swizzle": self.swizzle}
        out.update({k: getattr(self, k) for k in ("transposed", "fp4_padded", "cga_layout") if getattr(self, k)})
        return out

    @property
    def contiguous_strides(self) -> tuple[int, ...]:
        out, step = [], 1
        for n in reversed(self.shape):
            out.append(step)
            step *= n
        return tuple(reversed(out))

    @property
    def all_strides(self) -> tuple[int, ...]:
        return self.strides or self.contiguous_strides

    def __str__(self) -> str:
        dims = ",".join(map(str, self.shape))
        block = ",".join(map(str, self.block_shape))
        strides = f"/strides[{','.join(map(str, self.strides))}]" if self.strides else ""
        layout = "".join(f"/swizzle={v}" if k == "swizzle" else
                         f"/cga[{','.join('[' + ','.join(map(str, b)) + ']' for b in v)}]" if k == "cga_layout" else
                         f"/{k}" for k, v in self.layout_fields.items())
        return f"desc:{self.dtype}[{dims}]/[{block}]{strides}{layout}"


SWIZZLES = (0, 32, 64, 128)  # the swizzle widths, in bytes, of an NVMMA shared layout
_DESC = re.compile(r"^desc:(?P<dtype>\w+)\[(?P<shape>[\d,\s]+)\]/\[(?P<block>[\d,\s]+)\]"
                   r"(?:/strides\[(?P<strides>[\d,\s]+)\])?(?P<layout>(?:/[^/]+)*)$")
_LAYOUT_PART = re.compile(r"^(?:swizzle=(?P<swizzle>\d+)|(?P<flag>transposed|fp4_padded)|"
                          r"cga\[(?P<cga>\[[\d,\s]*\](?:\s*,\s*\[[\d,\s]*\])*)?\])$")


def parse_tensor_desc(text: str) -> TensorDesc:
    """`desc:fp16[4096,4096]/[64,64]` (optionally `/strides[4096,1]`, then a Gluon descriptor's layout:
    `/swizzle=64`, `/transposed`, `/fp4_padded`, `/cga[[1,0]]`) -> TensorDesc."""
    m = _DESC.match(text.strip())
    example = ("write it as desc:DTYPE[SHAPE]/[BLOCK], e.g. --arg a_desc=desc:fp16[4096,4096]/[64,64] (a Gluon "
               "descriptor's layout after it: /swizzle=64, /transposed, /fp4_padded, /cga[[1,0]])")
    if not m:
        raise UsageError(f"malformed tensor descriptor '{text}'", example)
    layout: dict[str, Any] = {}
    for part in m["layout"].split("/")[1:]:
        p = _LAYOUT_PART.match(part.strip())
        key = p and ("swizzle" if p["swizzle"] else p["flag"] or "cga_layout")
        if not p or key in layout:
            raise UsageError(f"malformed tensor descriptor '{text}': '/{part}' is not a layout field "
                             "(or is given twice)", example)
        layout[key] = (int(p["swizzle"]) if p["swizzle"] else True if p["flag"] else
                       tuple(_ints(b) for b in re.findall(r"\[([\d,\s]*)\]", p["cga"] or "")))
    if m["dtype"] not in DTYPES:
        raise UsageError(f"unknown tensor dtype '{m['dtype']}' in '{text}'", f"use one of: {', '.join(DTYPES)}")
    shape, block = _ints(m["shape"]), _ints(m["block"])
    strides = _ints(m["strides"]) if m["strides"] else ()
    if not shape or len(shape) != len(block) or (strides and len(strides) != len(shape)) or not 1 <= len(shape) <= 5:
        raise UsageError(f"tensor descriptor '{text}': shape, block (and strides) need the same rank, 1 to 5",
                         example)
    if any(n < 1 for n in shape + block) or any(b & (b - 1) for b in block):
        raise UsageError(f"tensor descriptor '{text}': sizes must be positive and block sizes powers of two",
                         example)
    return TensorDesc(m["dtype"], shape, block, strides, **layout)


def _ints(text: str) -> tuple[int, ...]:
    return tuple(int(v) for v in text.split(",") if v.strip())


@dataclass(frozen=True)
class Config:
    """A named point of a kernel's menu: constexprs plus launch options, like a `triton.Config`."""

    name: str
    constexprs: Mapping[str, Any] = field(default_factory=dict)
    num_warps: int | None = None
    num_stages: int | None = None
    options: Mapping[str, Any] = field(default_factory=dict)  # other backend options: maxnreg, kpack...
    note: str = ""
    # Targets this config is not meant for, with the reason (target name -> why): it fails to compile
    # there, or needs more shared memory than a block may have. Stated here rather than hidden.
    not_for: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class KernelSpec:
    """A kernel irscope can compile: the `@triton.jit` function and how a typical launch calls it."""

    name: str
    fn: Any  # triton.runtime.jit.JITFunction
    args: Mapping[str, Any]  # typical launch value of every non-constexpr parameter: Tensor, int, float, bool
    configs: Sequence[Config] = (Config("default"),)
    constexprs: Mapping[str, Any] = field(default_factory=dict)  # defaults under every config
    description: str = ""
    workload: Any = None  # how to run it on a GPU or in the interpreter (irscope.spec.workload.Workload)
    path: str = ""  # the file the spec was loaded from; set by irscope.spec.library
    # What @triton.autotune / @triton.heuristics around `fn` add (irscope.spec.autotune.Tuning); set by irscope.spec.library
    tuning: Any = None
    # The Python text `fn` was defined from when `path` as it reads now may not be it: a captured launch's,
    # from the launch file (what was compiled; the text its IR's debug locations count lines in)
    source: str = ""

    @property
    def fn_name(self) -> str:
        return getattr(self.fn, "__name__", None) or self.fn.fn.__name__

    @property
    def default_config(self) -> Config:
        return self.configs[0]

    def config(self, name: str | None) -> Config:
        """The named config, or the default one."""
        if name is None:
            return self.default_config
        for cfg in self.configs:
            if cfg.name == name:
                return cfg
        names = [c.name for c in self.configs]
        close = difflib.get_close_matches(name, names, n=3)
        hint = (f"did you mean {', '.join(close)}? " if close else "") + f"configs of {self.name}: {', '.join(names)}"
        raise UsageError(f"kernel '{self.name}' has no config '{name}'", hint)


@dataclass(frozen=True)
class CompileOptions:
    """What the user asked for on top of a kernel's spec. Tuples keep it hashable and picklable."""

    config: str | None = None
    num_warps: int | None = None
    num_stages: int | None = None
    constexprs: tuple[tuple[str, Any], ...] = ()
    backend_options: tuple[tuple[str, Any], ...] = ()  # maxnreg=128, enable_fp_fusion=False, kpack=2 ...
    divisibility: tuple[tuple[str | None, int], ...] = ()  # (None, 1): every argument; ("x_ptr", 4): one
    args: tuple[tuple[str, Any], ...] = ()  # typical launch values that differ from the spec's
    line_info: bool = True
    # Tensors of 2 GB or more: AMD's JIT then drops the buffer-op assumption (tt.pointer_range=32).
    large_tensors: bool = False
    name: str | None = None  # the variant folder's name, if the user chose one
    # Record the IR after every pass: "" (no), "mlir" (Triton's MLIR passes) or "all" (also LLVM's).
    # Not part of the variant name: the compiled code is the same, so it lands in the same folder.
    passes: str = ""

    def __post_init__(self) -> None:
        # The name becomes one folder under --out (kernel/NAME/target): never a path that leaves it, whether
        # typed on the command line or read from a snapshot's recorded request.
        if self.name is not None:
            check_variant_name(self.name)

    def with_(self, **changes) -> "CompileOptions":
        return replace(self, **changes)

    def to_dict(self) -> dict:
        """The options as irscope.json's `request` records them (JSON: tensors as `*fp16`)."""
        out: dict = {"config": self.config, "line_info": self.line_info}
        if self.large_tensors:
            out["large_tensors"] = True
        for name in ("num_warps", "num_stages", "name"):
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        for name in ("constexprs", "backend_options", "args"):
            if getattr(self, name):
                out[name] = {k: v if isinstance(v, (int, float, bool)) else str(v) for k, v in getattr(self, name)}
        if self.divisibility:
            out["divisibility"] = [[n, d] for n, d in self.divisibility]
        if self.passes:
            out["passes"] = self.passes
        return out

    @classmethod
    def from_dict(cls, request: Mapping[str, Any]) -> "CompileOptions":
        """The options a `request` (from `to_dict`, as irscope.json records it) asked for. A request is read
        from a file: a field of the wrong kind is a ValueError that names it."""
        if not isinstance(request, Mapping):
            raise ValueError(f"it is {_quoted(request)[:60]}, not a mapping")

        def pairs(key):
            got = request.get(key) or {}
            if not isinstance(got, Mapping) or not all(isinstance(k, str) for k in got):
                raise ValueError(f"{key} is not a mapping of names to values")
            for k, v in got.items():
                # (a backend option of another kind is for refused_recorded_option to name)
                if not isinstance(v, (int, float, str)) and key != "backend_options":  # bool is an int
                    raise ValueError(f"{key}.{k} is {_quoted(v)[:60]}, not a number, boolean or word")
            return tuple((k, parse_value(v) if isinstance(v, str) else v) for k, v in got.items())

        def optional(key, kind, test=lambda v: True):
            value = request.get(key)
            if value is not None and (not isinstance(value, kind) or isinstance(value, bool) != (kind is bool)
                                      or not test(value)):
                raise ValueError(f"{key} is {_quoted(value)[:60]}")
            return value

        def divisor(entry):
            if not isinstance(entry, (list, tuple)) or len(entry) != 2 or \
                    not (entry[0] is None or isinstance(entry[0], str)) or \
                    not isinstance(entry[1], int) or isinstance(entry[1], bool) or entry[1] < 1:
                raise ValueError(f"divisibility holds {_quoted(entry)[:60]}, not [ARGUMENT or null, a positive "
                                 f"integer]")
            return entry[0], entry[1]

        divisibility = request.get("divisibility") or ()
        if not isinstance(divisibility, (list, tuple)):
            raise ValueError(f"divisibility is {_quoted(divisibility)[:60]}, not a list")
        return cls(config=optional("config", str),
                   num_warps=optional("num_warps", int, lambda v: v >= 1),
                   num_stages=optional("num_stages", int, lambda v: v >= 0),
                   constexprs=pairs("constexprs"), backend_options=pairs("backend_options"), args=pairs("args"),
                   divisibility=tuple(divisor(d) for d in divisibility),
                   line_info=optional("line_info", bool) is not False,
                   name=optional("name", str),
                   large_tensors=bool(optional("large_tensors", bool)),
                   passes=optional("passes", str, lambda v: v in ("", "mlir", "all")) or "")


def parse_value(text: str) -> Any:
    """`128` -> 128, `0.5` -> 0.5, `true` -> True, `None` -> None, `*fp16` -> Tensor("fp16"),
    `desc:fp16[4096,4096]/[64,64]` -> TensorDesc, anything else -> the string."""
    text = text.strip()
    if text.startswith("desc:"):
        return parse_tensor_desc(text)
    if text.startswith("*"):
        dtype = text[1:]
        const = dtype.startswith("k")
        dtype = dtype[1:] if const and dtype[1:] in DTYPES else dtype
        if dtype not in DTYPES:
            raise UsageError(f"unknown tensor dtype '{text}'", f"use one of: {', '.join('*' + d for d in DTYPES)}")
        return Tensor(dtype, const=const)
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text
    # None as Python writes it: a launch passes None for an optional pointer or constexpr (`bias_ptr=None`,
    # `ACTIVATION=None`), and the kernel's `is None` tests must see None, not the word "None"
    return value if isinstance(value, (int, float, str, bool)) or value is None else text


# The bits of an element of each dtype (a Gluon descriptor takes 8-, 16- and 32-bit elements only).
DTYPE_BITS = {"fp8e4nv": 8, "fp8e5": 8, "fp8e4b15": 8, "fp8e4b8": 8, "fp8e5b16": 8, "fp16": 16, "bf16": 16, "fp32": 32,
              "fp64": 64, "i1": 1, "i8": 8, "i16": 16, "i32": 32, "i64": 64, "u8": 8, "u16": 16, "u32": 32, "u64": 64}
DTYPES = ("fp8e4nv", "fp8e5", "fp8e4b15", "fp8e4b8", "fp8e5b16", "fp16", "bf16", "fp32", "fp64", "i1", "i8", "i16",
          "i32", "i64", "u8", "u16", "u32", "u64")

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def parse_assignment(text: str, what: str) -> tuple[str, Any]:
    """`NAME=VALUE` from the command line -> (name, parsed value)."""
    name, sep, value = text.partition("=")
    name = name.strip()
    if not sep or not _NAME.match(name) or not value.strip():
        raise UsageError(f"malformed {what} '{text}'", f"write it as NAME=VALUE, e.g. {EXAMPLES.get(what, 'BLOCK=128')}")
    return name, parse_value(value)


EXAMPLES = {"constexpr": "--constexpr BLOCK_M=128",
            "argument": "--arg K=4096, --arg a_ptr=*fp16 or --arg a_desc=desc:fp16[4096,4096]/[64,64]",
            "option": "--option maxnreg=128"}


def parse_divisibility(items: Sequence[str]) -> tuple[tuple[str | None, int], ...]:
    """`16`, `1`, `x_ptr=4`, `a_ptr,b_ptr=8` -> ((None, 16), (None, 1), ("x_ptr", 4), ("a_ptr", 8),
    ("b_ptr", 8)); values must be powers of two. Several names before `=` share the value."""
    out = []
    for item in items:
        name, sep, value = item.rpartition("=")
        names = name.split(",") if sep else [None]
        try:
            d = int(value)
        except ValueError:
            d = 0
        if d < 1 or d & (d - 1) or (sep and not all(_NAME.match(n) for n in names)):
            raise UsageError(f"bad --divisibility '{item}'",
                             "give a power of two for every argument (16, 1), NAME=VALUE for one (x_ptr=4), or "
                             "NAMES=VALUE for several (a_ptr,b_ptr=8)")
        out.extend((n, d) for n in names)
    return tuple(out)


# -- the types of values --------------------------------------------------------------------------------
# A value given on the command line or in a sweep file is checked against what the kernel expects before
# anything compiles: Triton would otherwise fail deep in the kernel's body (a tensor added to an integer),
# in a later stage (maxnreg=abc at ttgir), or at ptxas (64 warps), and leave a failed snapshot behind.

_KIND_EXAMPLES = {"tensor": "*fp16", "descriptor": "desc:fp16[4096,4096]/[64,64]", "integer": "4096", "number": "0.5", "boolean": "true", "word": "ieee"}
_OPTION_EXAMPLES = {"integer": "128", "number": "0.5", "boolean": "true", "word": "ieee"}


def kind_of(value: Any) -> str:
    """What a parsed value is, in the words a message uses: tensor, boolean, integer, number, none or word."""
    if value is None:
        return "none"
    if isinstance(value, Tensor):
        return "tensor"
    if isinstance(value, TensorDesc):
        return "descriptor"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    return "word"


def kind_of_annotation(annotation: str) -> str | None:
    """The kind a Triton annotation asks for (`*fp16` tensor, `i32` integer, `fp32` number, `i1` boolean)."""
    if not annotation:
        return None
    if annotation.startswith("*"):
        return "tensor"
    if annotation == "i1":
        return "boolean"
    if re.fullmatch(r"[iu](8|16|32|64)", annotation):
        return "integer"
    if annotation.startswith(("fp", "bf")):
        return "number"
    return None


def _fits(value: Any, kind: str) -> bool:
    got = kind_of(value)
    return got == kind or (kind == "number" and got == "integer")


def _a(kind: str) -> str:
    if kind == "none":
        return "None"
    return ("an " if kind[0] in "aeiou" else "a ") + kind


def _shown(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def _quoted(value: Any) -> str:
    """A value read from a file, for a message: strings quoted (escaped), anything else as JSON writes it."""
    return ascii(value) if isinstance(value, str) else _shown(value) if isinstance(value, (bool, int, float)) \
        or value is None else ascii(value)


def check_arg_value(spec: KernelSpec, name: str, value: Any, annotation: str = "", given: str = "") -> None:
    """A typical value given for argument `name` is of the kind the kernel takes there.

    The kind comes from the spec's own typical value (`KernelSpec.args`), else from the parameter's
    Triton annotation (`n: tl.int32`); with neither, any number, boolean or tensor will do, not a word.
    """
    typical = spec.args.get(name)
    if value is None:  # the JIT takes None for any argument (it becomes a constexpr): the kernel decides
        return
    declared = name in spec.args and typical is not None  # a None typical value says nothing of the kind
    kind = kind_of(typical) if declared else kind_of_annotation(annotation)
    given = given or f"--arg {name}={_shown(value)}"
    if kind is None:
        if kind_of(value) == "word":
            raise UsageError(f"{given}: a typical value is a number, true/false, None or a tensor, not a word",
                             f"e.g. --arg {name}=4096 or --arg {name}=*fp16")
        return
    if _fits(value, kind):
        return
    why = f"its typical value is {_shown(typical)}" if declared else f"annotated {annotation}"
    example = _shown(typical) if declared else _KIND_EXAMPLES[kind]
    what = "a tensor pointer" if kind == "tensor" else _a(kind)
    raise UsageError(f"{given}: {spec.fn_name}'s {name} is {what} ({why}), not {_a(kind_of(value))}",
                     f"give {_a(kind)}, e.g. --arg {name}={example}")


@dataclass(frozen=True)
class OptionField:
    """One backend option Triton knows for a target (a field of CUDAOptions or HIPOptions)."""

    name: str
    kind: str  # integer, number, boolean, word; or list, mapping (not something NAME=VALUE can give)
    default: Any = None


# Backend options a recorded request may bring back into a compile (a golden's or a snapshot's irscope.json, a
# launch file): numbers, booleans, and these words, each a short name. A file is untrusted input, and other
# options reach outside the compile: ir_override names a file Triton reads in place of a stage, ptx_options
# and llvm_fn_attrs are text for ptxas's command line and LLVM, extern_libs names libraries to link.
RECORDED_WORDS = frozenset({"default_dot_input_precision", "schedule_hint", "wgp_cu_mode", "instrumentation_mode",
                            "instruction_sched_variant"})


def refused_recorded_option(pairs: Sequence[tuple[str, Any]]) -> str | None:
    """Why a compile asked for by a file may not have one of these backend options (`NAME=VALUE ...`);
    None when it may have them all. Options given on the command line or in a test are not checked."""
    for name, value in pairs:
        if isinstance(value, (bool, int)) or isinstance(value, float) and value == value and abs(value) != float("inf"):
            continue
        if isinstance(value, str) and name in RECORDED_WORDS and re.fullmatch(r"[\w.-]{0,32}", value):
            continue
        return (f"backend option {name}={_shown(value)[:60]}, which irscope takes from a command line or a test, "
                f"never from a file (only numbers, booleans and {', '.join(sorted(RECORDED_WORDS))})")
    return None


def check_backend_option(name: str, value: Any, fields: Mapping[str, OptionField], target: str,
                         given: str = "") -> None:
    """`--option NAME=VALUE` names an option Triton knows for `target` and gives a value of its type."""
    field_ = fields.get(name)
    if field_ is None:
        known = sorted(fields)
        close = difflib.get_close_matches(name, known, n=3)
        raise UsageError(f"unknown backend option '{name}' for {target}",
                         (f"did you mean {', '.join(close)}? " if close else "") +
                         f"options Triton knows for {target}: {', '.join(known)}")
    given = given or f"--option {name}={_shown(value)}"
    if field_.kind in ("list", "mapping"):
        raise UsageError(f"{given}: Triton's {name} takes a {field_.kind}, which --option cannot give",
                         "leave it to Triton, or set it in a kernel config's options={...}")
    if not _fits(value, field_.kind):
        example = _shown(field_.default) if field_.default not in (None, "") else _OPTION_EXAMPLES[field_.kind]
        raise UsageError(f"{given}: Triton's {name} for {target} takes {_a(field_.kind)}, not "
                         f"{_a(kind_of(value))}", f"give {_a(field_.kind)}, e.g. --option {name}={example}")


def check_constexpr_value(spec: KernelSpec, name: str, value: Any, known: Any, given: str = "") -> None:
    """A constexpr whose default is a number is not given a word (Triton would fail deep in the body)."""
    if isinstance(known, (int, float)) and not isinstance(known, bool) and isinstance(value, str):
        given = given or f"--constexpr {name}={value}"
        raise UsageError(f"{given}: {spec.name}'s {name} is a number (its default is {known})",
                         f"give a number, e.g. --constexpr {name}={known}")


def check_warps(value: Any, what: str = "--num-warps", *, warp_size: int | None = None, max_threads: int = 1024,
                target: str = "") -> None:
    """Warps per program: a positive power of two, and no more threads than one block may have."""
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise UsageError(f"bad {what} {value}", f"{what} takes a positive integer")
    max_warps = max_threads // warp_size if warp_size else 32
    allowed = ", ".join(str(1 << i) for i in range(max_warps.bit_length()))
    if value & (value - 1):
        raise UsageError(f"bad {what} {value}: not a power of two", f"Triton takes {allowed}")
    if warp_size and value > max_warps:
        # Triton refuses to launch more threads than a block may have (CompiledKernel._init_handles:
        # num_warps * warp_size > n_max_threads, 1024 on every GPU it supports); ptxas already fails
        # on the .maxntid it is given, AMD at run time.
        raise UsageError(f"bad {what} {value}: {target} runs at most {max_warps} warps per program "
                         f"({max_threads} threads a block, {warp_size} a warp)", f"give one of {allowed}")


def parse_int_list(text: str, what: str) -> list[int]:
    """`2,4,8` -> [2, 4, 8] for an option named `what`."""
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        values = []
    if not values or any(v < 1 for v in values):
        raise UsageError(f"bad {what} '{text}'", f"give positive integers, comma-separated: {what} 2,4,8")
    return values


def check_variant_name(name: str) -> None:
    """A variant's folder name (`--name`) is one plain folder name: not empty, not `.` or `..`, no slash."""
    if not isinstance(name, str) or name in ("", ".", "..") or "/" in name or "\\" in name or \
            name != name.strip() or any(ord(c) < 32 for c in name) or name.startswith("."):
        raise UsageError(f"--name {name!r} is not a folder name: the variant is one folder under --out",
                         "use a plain name such as --name my-variant (no slashes, not starting with a dot)")


def variant_name(spec: KernelSpec, opts: CompileOptions) -> str:
    """The folder name of a compile variant: the config's name plus what the user changed.

    `default`, `m128n256k64.w2`, `default.div1`, `default.s4.BLOCK_K=32` -- readable and stable, so the
    same options always land in the same folder.
    """
    if opts.name:
        return opts.name
    parts = [opts.config or spec.default_config.name]
    if opts.num_warps is not None:
        parts.append(f"w{opts.num_warps}")
    if opts.num_stages is not None:
        parts.append(f"s{opts.num_stages}")
    for name, d in opts.divisibility:
        parts.append(f"div{d}" if name is None else f"{name}.div{d}")
    parts += [f"{k}={_slug(v)}" for k, v in opts.constexprs]
    parts += [f"{k}={_slug(v)}" for k, v in opts.backend_options]
    # A typical value that overrides the spec's is a choice, named in full; the values of a kernel with no
    # spec (its signature, given on the command line) are folded into a short hash of the signature.
    parts += [f"arg.{k}={_slug(v)}" for k, v in opts.args if k in spec.args]
    signature = [(k, str(v)) for k, v in opts.args if k not in spec.args]
    if signature:
        parts.append("sig" + hashlib.sha1(repr(signature).encode()).hexdigest()[:6])
    if opts.large_tensors:
        parts.append("large")
    if not opts.line_info:
        parts.append("noline")
    return ".".join(parts)


def _slug(value: Any) -> str:
    return re.sub(r"[^A-Za-z0-9_+-]", "_", str(value))


@dataclass(frozen=True)
class Resolved:
    """A spec and options merged into exactly what the compiler gets (before specialisation)."""

    constexprs: dict[str, Any]
    args: dict[str, Any]  # typical launch values of the non-constexpr parameters
    num_warps: int | None
    num_stages: int | None
    backend_options: dict[str, Any]
    heuristics: dict[str, Any] = field(default_factory=dict)  # values @triton.heuristics computed


def resolve(spec: KernelSpec, opts: CompileOptions, param_names: Sequence[str],
            constexpr_names: Sequence[str], *, annotations: Mapping[str, str] | None = None,
            option_fields: Mapping[str, OptionField] | None = None, warp_size: int | None = None,
            max_threads: int = 1024, target: str = "") -> Resolved:
    """Merge spec defaults, the chosen config and the user's overrides; check every name exists and
    every value is of the kind its parameter or option takes.

    `annotations` (parameter -> Triton annotation), `option_fields` (Triton's option set) and
    the target's warp and block sizes come from the harness, which reads them from Triton; without
    them those checks are off.
    """
    cfg = spec.config(opts.config)
    constexprs = {**spec.constexprs, **cfg.constexprs}
    for name, value in opts.constexprs:
        _check_name(spec, name, constexpr_names, "constexpr", "--constexpr")
        check_constexpr_value(spec, name, value, constexprs.get(name))
        constexprs[name] = value
    args = dict(spec.args)
    for name, value in opts.args:
        _check_name(spec, name, [p for p in param_names if p not in constexpr_names], "argument", "--arg")
        check_arg_value(spec, name, value, (annotations or {}).get(name, ""))
        args[name] = value
    for name, _ in opts.divisibility:
        if name is not None:
            _check_name(spec, name, [p for p in param_names if p not in constexpr_names], "argument", "--divisibility")
    # A parameter with a default (`scale=2.0`) the launch may leave out: the JIT's binder then takes the default
    missing = [p for p in param_names if p not in constexpr_names and p not in args and not _has_default(spec.fn, p)]
    if missing:
        names = ", ".join(f"'{m}'" for m in missing)
        raise UsageError(f"kernel '{spec.name}' needs a typical value for argument{'s' if len(missing) > 1 else ''} "
                         f"{names}",
                         f"pass --arg {missing[0]}=VALUE for each (a number, or *fp16 for a tensor; in a sweep "
                         f"file `set: {{arg.{missing[0]}: VALUE}}`; in the pytest fixture args={{'{missing[0]}': "
                         "VALUE, ...}), or declare them in the kernel's KernelSpec(args=...)")
    heuristics = _heuristics(spec, cfg, opts, args, constexprs, constexpr_names)
    for p in getattr(spec.fn, "params", ()):  # after the heuristics: Triton hands them only what the launch passed
        if not p.is_constexpr and p.name not in args and p.has_default:
            args[p.name] = p.default
    missing = [p for p in constexpr_names if p not in constexprs and not _has_default(spec.fn, p)]
    if missing:
        raise UsageError(f"kernel '{spec.name}' needs a value for constexpr '{missing[0]}'",
                         f"pass --constexpr {missing[0]}=VALUE or choose a config with --config")
    backend_options = dict(cfg.options)
    backend_options.update(opts.backend_options)
    backend_options.update({k: v for k, v in heuristics.items() if k not in constexprs and k not in args
                            and k not in ("num_warps", "num_stages")})
    if option_fields is not None:
        for name, value in backend_options.items():
            check_backend_option(name, value, option_fields, target)
    num_warps = opts.num_warps if opts.num_warps is not None else heuristics.get("num_warps", cfg.num_warps)
    num_stages = opts.num_stages if opts.num_stages is not None else heuristics.get("num_stages", cfg.num_stages)
    if num_stages is not None and (not isinstance(num_stages, int) or isinstance(num_stages, bool) or num_stages < 1):
        raise UsageError(f"bad --num-stages {num_stages}", "--num-stages takes a positive integer")
    if num_stages is not None and num_stages > MAX_NUM_STAGES:  # the snapshot it wrote was then refused as damaged
        raise UsageError(f"--num-stages {num_stages} is more than Triton's passes take (a 32-bit int: at most "
                         f"{MAX_NUM_STAGES})", "give a pipeline depth such as 2, 3 or 4")
    if num_warps is not None:
        check_warps(num_warps, warp_size=warp_size, max_threads=max_threads, target=target)
    for name, value in list(args.items()):
        if isinstance(value, TensorDesc) and any(isinstance(b, str) for b in value.block_shape):
            args[name] = _desc_blocks(spec, name, value, constexprs)
    return Resolved(constexprs, args, num_warps, num_stages, backend_options, heuristics)


def _desc_blocks(spec: KernelSpec, name: str, desc: TensorDesc, constexprs: Mapping[str, Any]) -> TensorDesc:
    """A descriptor whose block shape names constexprs (`("BLOCK_M", "HEAD_DIM")`): their values under
    the config, as the launch would build it."""
    block = []
    for b in desc.block_shape:
        value = constexprs.get(b) if isinstance(b, str) else b
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise UsageError(f"kernel '{spec.name}': descriptor '{name}' takes its block shape from '{b}', "
                             f"which is {value!r} under this config, not a positive integer",
                             "give the constexpr a value with --constexpr or choose a config with --config")
        block.append(value)
    return replace(desc, block_shape=tuple(block))


def _heuristics(spec: KernelSpec, cfg: Config, opts: CompileOptions, args: dict, constexprs: dict,
                constexpr_names: Sequence[str]) -> dict[str, Any]:
    """@triton.heuristics values for the typical launch (irscope.spec.autotune), merged into constexprs/args."""
    if spec.tuning is None:
        return {}
    from .autotune import heuristic_values
    values = heuristic_values(spec, cfg, opts, args)
    constexprs.update({k: v for k, v in values.items() if k in constexpr_names})
    args.update({k: v for k, v in values.items() if k in args})
    return values


def _has_default(fn: Any, name: str) -> bool:
    for p in getattr(fn, "params", ()):
        if p.name == name:
            return p.has_default
    return False


MAX_NUM_STAGES = (1 << 31) - 1  # num_stages is an int in Triton's C++ passes


def check_overrides(spec: KernelSpec, args: Mapping[str, Any], constexprs: Mapping[str, Any]) -> None:
    """Each --arg and --constexpr names a parameter of the kernel and gives a value of its kind, as a
    compile checks them (for a command that shows the kernel with them, compiling nothing)."""
    params = list(getattr(spec.fn, "params", ()))
    constexpr_names = [p.name for p in params if p.is_constexpr]
    arg_names = [p.name for p in params if not p.is_constexpr]
    defaults = {**spec.constexprs, **spec.config(None).constexprs}
    for name, value in constexprs.items():
        _check_name(spec, name, constexpr_names, "constexpr", "--constexpr")
        check_constexpr_value(spec, name, value, defaults.get(name))
    annotations = {p.name: getattr(p, "annotation_type", "") or "" for p in params}
    for name, value in args.items():
        _check_name(spec, name, arg_names, "argument", "--arg")
        check_arg_value(spec, name, value, annotations.get(name, ""))


def _check_name(spec: KernelSpec, name: str, known: Sequence[str], what: str, flag: str) -> None:
    if name in known:
        return
    close = difflib.get_close_matches(name, known, n=3)
    hint = f"did you mean {', '.join(close)}? " if close else ""
    params = [p.name for p in getattr(spec.fn, "params", ())]
    if name in params and flag in ("--arg", "--constexpr"):  # --arg for a constexpr, or --constexpr for an argument
        other = "--arg" if flag == "--constexpr" else "--constexpr"
        hint = f"{name} is {'not ' if other == '--arg' else ''}a tl.constexpr: give it with {other} {name}=VALUE; "
    raise UsageError(f"{spec.fn_name} has no {what} '{name}'",
                     hint + f"{what}s of {spec.fn_name}: {', '.join(known) or '(none)'} ({flag})")

