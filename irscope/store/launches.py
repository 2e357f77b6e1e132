"""The launch file `irscope capture` writes (docs/capture.md): every distinct Triton launch of a program,
once per specialisation, as JSON a person can read.

Reading one is safe: plain JSON, checked field by field against LAUNCHES_SCHEMA before anything uses it;
nothing in it is run on load. (Compiling a launch later runs its kernel's Python source: that is
irscope.spec.launches, for files the user names.) Writing is atomic: a temporary file beside it, renamed.
"""
from __future__ import annotations

import json
import os
import re
import secrets
import stat
from pathlib import Path
from typing import Any

from ..errors import SnapshotError, UsageError
from .schema import (ANY, BOOL, INT, SCALAR, STR, Check, _Invalid, _kind, either, list_of, loads, map_of, obj, one_of, opt,
                     read_given, validate)

FORMAT = "irscope-launches"
VERSION = 1

_INTS = list_of(INT)
ARG_KINDS = ("tensor", "int", "float", "bool", "none", "descriptor", "constexpr")

_ARG: Check = obj(
    ("name", "kind"), name=STR, kind=one_of(*ARG_KINDS),
    dtype=opt(STR), divisibility=opt(INT), value=ANY, value_known=opt(BOOL),
    shape=opt(_INTS), strides=opt(_INTS), block_shape=opt(_INTS), padding=opt(STR),
    layout=opt(obj(("swizzle_byte_width",), kind=opt(STR), swizzle_byte_width=INT, element_bitwidth=opt(INT),
                   rank=opt(INT), transposed=opt(BOOL), fp4_padded=opt(BOOL), cga_layout=opt(list_of(_INTS)))),
    specialised=opt(STR),  # what the JIT's specialiser made of it: "*fp16:D", "i32", "constexpr"
    alias=opt(STR),  # a tensor at the same address as an earlier tensor argument (an in-place op)
)

# A kernel's name is the first folder of its snapshots (kernel/variant/target under --out): a Python name,
# or one with a `.hash` suffix (capture keeps two kernels of one name apart so), never a path.
FOLDER_NAME = _kind("a kernel name (letters, digits, _ and ., not starting with a dot)",
                    lambda v: isinstance(v, str) and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.]*", v) is not None)
# A launch's variant is the second folder (`w4.s3.<hash>`); its id, `KERNEL/VARIANT`, names it in a reference
# (`LAUNCHES.json:ID`). Neither is a path, and an id holds no `:`.
_VARIANT = r"[A-Za-z0-9_][A-Za-z0-9_.+=-]*"
VARIANT_NAME = _kind("a variant folder name (letters, digits, _ . + = and -, not starting with a dot or -)",
                     lambda v: isinstance(v, str) and re.fullmatch(_VARIANT, v) is not None)
LAUNCH_ID = _kind("KERNEL/VARIANT (a kernel name, a slash, a variant folder name)",
                  lambda v: isinstance(v, str) and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.]*/" + _VARIANT, v) is not None)

_KERNEL: Check = obj(
    ("name", "function", "src"),
    name=FOLDER_NAME, function=STR, module=opt(STR), qualname=opt(STR), file=opt(STR), first_line=opt(INT),
    generated=opt(BOOL), src=STR, module_source=opt(STR), jit=opt(map_of(ANY)),
    globals=opt(map_of(STR)),  # names the kernel takes from another module: "module:qualname" or "module"
    autotune=opt(obj(("configs",), configs=list_of(map_of(ANY)), key=opt(list_of(STR)),
                     wrappers=opt(list_of(STR)))),
)

_LAUNCH: Check = obj(
    ("id", "kernel", "variant", "args"),
    id=LAUNCH_ID, kernel=STR, variant=VARIANT_NAME, via=opt(one_of("jit", "compile")),
    args=list_of(_ARG), options=opt(map_of(SCALAR)), grid=opt(list_of(INT)),
    count=opt(INT), first_call=opt(STR), autotune_config=opt(INT), line_info=opt(BOOL),
    specialisation=opt(map_of(ANY)), jit_stages=opt(map_of(STR)),
)

LAUNCHES_SCHEMA: Check = obj(
    ("format", "version", "kernels", "launches"),
    format=one_of(FORMAT), version=INT, created=opt(STR), program=opt(list_of(STR)),
    mode=opt(one_of("record", "interpret", "gpu")), exit_code=opt(INT),
    captured_for=opt(obj(("name",), name=STR, backend=opt(STR),
                         arch=opt(either(INT, STR, "an integer or a string")), warp_size=opt(INT))),
    versions=opt(map_of(SCALAR)),
    emulation=opt(obj(("as",), **{"as": STR})),  # `irscope capture --as TARGET`: what the program was shown
    environment=opt(map_of(STR)),  # the variables the program set in its own os.environ
    kernels=map_of(_KERNEL), launches=list_of(_LAUNCH),
    skipped=opt(list_of(obj(("reason",), kernel=opt(STR), reason=STR, first_call=opt(STR)))),
)
"""The launch file, format 1 (docs/capture.md). Unknown keys are allowed; later versions add some."""

def check_launches(data: Any, source: Path) -> dict:
    """`data` as a launch file, or SnapshotError naming the field that does not fit."""
    version = data.get("version") if isinstance(data, dict) and data.get("format") == FORMAT else None
    if isinstance(version, int) and not isinstance(version, bool) and version > VERSION:
        # before the schema: a later version may lay its fields out otherwise, and "field 'kernels' must be
        # present" would not say that this irscope is the older one
        raise SnapshotError(f"{source} is a launch file of version {version}; this irscope reads "
                            f"version {VERSION}", "upgrade irscope, or capture again with this one")
    if not isinstance(data, dict) or data.get("format") != FORMAT:  # another JSON file, not a damaged capture
        raise SnapshotError(f"{source} is not a launch file: it has no \"format\": \"{FORMAT}\"",
                            "give the launches.json irscope capture wrote (irscope capture -- python prog.py)")
    validate(data, LAUNCHES_SCHEMA, source, "capture it again with irscope capture (the format is in docs/capture.md)")
    if data["version"] > VERSION:
        raise SnapshotError(f"{source} is a launch file of version {data['version']}; this irscope reads "
                            f"version {VERSION}", "upgrade irscope, or capture again with this one")
    seen: set[str] = set()
    for i, launch in enumerate(data["launches"]):
        if launch["id"] in seen:  # a compile or a ranking finds a launch by its id
            raise SnapshotError(f"{source} is damaged: launches[{i}] repeats the id '{launch['id']}'",
                                "capture it again with irscope capture")
        seen.add(launch["id"])
        if launch["kernel"] not in data["kernels"]:
            raise SnapshotError(f"{source} is damaged: launches[{i}] names kernel '{launch['kernel']}', "
                                "which the file does not hold", "capture it again with irscope capture")
        for j, arg in enumerate(launch["args"]):
            missing = [f for f in _NEEDS.get(arg["kind"], ()) if f not in arg]
            if missing:
                raise SnapshotError(f"{source} is damaged: launches[{i}].args[{j}] ('{arg['name']}') is a "
                                    f"{arg['kind']} without {' and '.join(missing)}",
                                    "capture it again with irscope capture")
            if arg["kind"] != "descriptor" and "layout" in arg:
                raise SnapshotError(f"{source} is damaged: launches[{i}].args[{j}] ('{arg['name']}') is a "
                                    f"{arg['kind']} with a descriptor's layout",
                                    "capture it again with irscope capture")
            fits = _VALUES.get(arg["kind"])
            if fits is not None and not fits(arg.get("value")):
                raise SnapshotError(f"{source} is damaged: launches[{i}].args[{j}] ('{arg['name']}') is {arg['kind']} "
                                    f"{str(arg.get('value'))[:40]}, which no launch passes",
                                    "capture it again with irscope capture")
    return data


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


# The fields an argument of each kind is made from (irscope/harness/capture.py writes them all)
_NEEDS = {"tensor": ("dtype",), "descriptor": ("dtype", "shape", "block_shape")}

# What a launch's scalar argument may hold: what Triton's JIT takes (an int is an i32, i64 or u64)
_VALUES = {"int": lambda v: _is_int(v) and -2**63 <= v < 2**64,
           "float": lambda v: _is_int(v) or isinstance(v, float),
           "bool": lambda v: isinstance(v, bool)}


MAX_LAUNCHES_BYTES = 256 << 20  # a launch file holds every kernel's source once: tens of MB at most


def read_launches(path: Path) -> dict:
    """A launch file, read as plain JSON and checked (never executed). Only a regular file is read, and
    no more of it than a capture writes: a link to /dev/zero or a FIFO is refused, not read forever."""
    path = Path(path)
    hint = "give the launches.json irscope capture wrote"
    try:
        raw, mode = read_given(path, MAX_LAUNCHES_BYTES, regular_only=True)  # a FIFO or /dev/zero: not read
    except FileNotFoundError:
        raise UsageError(f"launch file '{path}' does not exist",
                         "write one with: irscope capture -- python your_program.py") from None
    except OSError as e:
        raise UsageError(f"cannot read launch file '{path}': {e.strerror}", "check the path") from None
    if not stat.S_ISREG(mode):
        what = "a folder" if stat.S_ISDIR(mode) else "not a regular file"
        raise UsageError(f"launch file '{path}' is {what}", hint)
    try:
        if len(raw) > MAX_LAUNCHES_BYTES:
            raise UsageError(f"launch file '{path}' is larger than any capture writes "
                             f"({MAX_LAUNCHES_BYTES >> 20} MiB)", hint)
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise SnapshotError(f"{path} is not a launch file: it is not UTF-8 text ({e.reason})", hint) from None
    try:
        data = loads(text)
    except ValueError as e:
        raise SnapshotError(f"{path} is not a launch file: {e}", hint) from None
    return check_launches(data, path)


def is_launch_file(path: Path) -> bool:
    """A `.json` file (by name): `irscope compile` takes those as launch files."""
    return str(path).endswith(".json")


def write_launches(path: Path, data: dict) -> None:
    """Check, then write atomically: readers see the old file or the new one, never half of one."""
    path = Path(path)
    try:
        LAUNCHES_SCHEMA(data, "")
    except _Invalid as e:  # a bug in the recorder, not the user's doing
        raise SnapshotError(f"refusing to write {path}: {e}", "report this as an irscope bug") from None
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f".{path.name}.tmp-{os.getpid()}-{secrets.token_hex(4)}"
    try:
        tmp.write_text(json.dumps(data, indent=1, sort_keys=False) + "\n")
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
