"""Running a snapshot's own binary instead of the JIT's: proof that what was read is what runs.

The cubin in a snapshot was compiled for a specialisation (argument types, constants, divisibility; see
docs/specialisation.md). A launch may only use it if its arguments keep every assumption, or the binary
computes something else: `check_call` says which assumption a launch breaks, before anything runs.
"""
from __future__ import annotations

import re
from typing import Any, Callable

from ..errors import UsageError
from ..spec.kernel import DTYPES
from ..store.snapshot import Snapshot


class SpecialisationMismatch(UsageError):
    """A launch's arguments break an assumption the snapshot's binary was compiled with; for an integer
    argument, `arg` and `value` name it and the launch's value (what a sweep's `arg.NAME` would take)."""

    def __init__(self, message: str, hint: str | None = None, *, arg: str | None = None, value: Any = None):
        super().__init__(message, hint)
        self.arg = arg
        self.value = value


def full_args(fn, call) -> list[Any]:
    """Every parameter of the kernel, in order, as Triton's launcher takes them (constexprs included)."""
    args = iter(call.args)
    out = []
    for p in fn.params:
        if p.is_constexpr:
            out.append(call.constexprs[p.name] if p.name in call.constexprs else p.default)
        else:
            out.append(next(args))
    return out


def _dtype_name(value) -> str | None:
    dtype = getattr(value, "dtype", None)
    if dtype is None:
        return None
    from ..spec.workload import dtype_name
    return dtype_name(dtype)


def check_call(snapshot: Snapshot, fn, call) -> None:
    """Raise SpecialisationMismatch if `call` breaks an assumption of the snapshot's specialisation."""
    values = dict(zip(fn.arg_names, full_args(fn, call)))
    label = snapshot.label
    for e in snapshot.meta.get("specialisation") or ():
        name, kind = e["name"], e.get("kind")
        value = values.get(name)
        if kind in ("constexpr", "constant"):
            if str(value) != str(e.get("value")):
                raise SpecialisationMismatch(
                    f"{label} was compiled with {name}={e.get('value')}, but this launch has {name}={value}",
                    "choose a --size (or config) that matches the snapshot, or compile one for this launch")
            continue
        if kind == "descriptor":
            _check_descriptor(label, name, e["type"], value)
            continue
        div = e.get("divisibility", 1)
        if kind == "tensor":
            want = e["type"][1:]
            if want.startswith("k") and want[1:] in DTYPES:  # a read-only (tl.const) pointer
                want = want[1:]
            got = _dtype_name(value)
            if got != want:
                raise SpecialisationMismatch(f"{label} takes {name} as {e['type']}, but this launch passes {got}",
                                             "run the snapshot of the matching dtype")
            if div > 1 and value.data_ptr() % div:
                raise SpecialisationMismatch(f"{label} assumes {name} is {div}-byte aligned; this tensor is not",
                                             "pass an aligned tensor, or run a snapshot compiled with --divisibility 1")
        elif kind == "scalar" and div > 1 and isinstance(value, int) and value % div:
            raise SpecialisationMismatch(
                f"{label} assumes {name} is a multiple of {div}; this launch has {name}={value}",
                f"choose a --size where {name} is a multiple of {div}, or compile the snapshot with --arg {name}={value}",
                arg=name, value=value)


def _check_descriptor(label: str, name: str, type_: str, value) -> None:
    """A descriptor's type is its dtype and block shape (and, for Gluon's, its shared layout, which
    follows from those by default): a launch with other blocks would copy tiles the cubin does not expect."""
    m = re.match(r"tensordesc<(\w+)\[([\d,\s]*)\]", type_)
    if m is None:
        return
    want = [int(v) for v in m[2].split(",") if v.strip()]
    got = [int(v) for v in getattr(value, "block_shape", None) or ()]
    dtype = _dtype_name(getattr(value, "base", None))
    if got != want or dtype != m[1]:
        raise SpecialisationMismatch(
            f"{label} takes {name} as a {m[1]} descriptor of {want} blocks, but this launch passes "
            f"{dtype} blocks of {got}", "run the snapshot of the config and dtype this launch uses")


def snapshot_runner(snapshot: Snapshot, spec, fallback: Callable) -> Callable:
    """A `run(call)` for `runner.execute`: calls of the snapshot's kernel launch its cubin (after
    `check_call`); the other kernels of a multi-kernel workload go through `fallback` (the JIT)."""
    from ..harness.runtime import LoadedBinary

    binary = LoadedBinary(snapshot, spec)

    def run(call) -> None:
        if call.kernel != spec.name:
            fallback(call)
            return
        check_call(snapshot, spec.fn, call)
        binary.launch(call.grid, full_args(spec.fn, call))

    return run
