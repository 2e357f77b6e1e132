"""The schema of irscope.json (docs/snapshot-format.md) and of the other JSON files in a snapshot folder,
and the checks every read of an untrusted folder goes through: values of the right type, paths inside it.
"""
from __future__ import annotations

import json
import math
import os
import re
import stat
import time
from pathlib import Path
from typing import Callable

from ..errors import SnapshotError
from ..ir.stages import STAGES


class _Invalid(Exception):
    """A JSON value that does not fit the schema; `where` names the field (`target.name`)."""

    def __init__(self, where: str, want: str, got: object):
        shown = json.dumps(got, default=str)
        shown = shown if len(shown) <= 40 else shown[:37] + "..."
        super().__init__(f"field '{where}' must be {want}, not {shown}" if where else f"must be {want}, not {shown}")


Check = Callable[[object, str], None]


def _kind(want: str, test: Callable[[object], bool]) -> Check:
    def check(value: object, where: str) -> None:
        if not test(value):
            raise _Invalid(where, want, value)
    return check


def is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


ANY: Check = lambda value, where: None  # noqa: E731 - a field whose content irscope only displays
STR = _kind("a string", lambda v: isinstance(v, str))
INT = _kind("an integer", is_int)
NUM = _kind("a finite number", lambda v: is_int(v) or isinstance(v, float) and math.isfinite(v))  # JSON reads NaN, Infinity
BOOL = _kind("true or false", lambda v: isinstance(v, bool))
# a time or rate read back to compute with (a ratio, a correlation): never 0, negative, NaN or infinite
POSITIVE = _kind("a positive finite number",
                 lambda v: (is_int(v) or isinstance(v, float)) and math.isfinite(v) and v > 0)
# a count read back to compute with (registers, bytes, warps): an integer, never negative, never absurd
COUNT = _kind("a non-negative integer", lambda v: is_int(v) and 0 <= v < 1 << 48)
WARPS = _kind("a positive integer", lambda v: is_int(v) and 0 < v <= 1024)
IDENT = _kind("a Python identifier (the @triton.jit function's name)",
              lambda v: isinstance(v, str) and v.isidentifier())
SHA256 = _kind("64 lower-case hex digits",
               lambda v: isinstance(v, str) and re.fullmatch(r"[0-9a-f]{64}", v) is not None)
SCALAR = _kind("a string, number, true, false or null", lambda v: v is None or isinstance(v, (str, int, float)))


def opt(check: Check) -> Check:
    """`check`, or null."""
    return lambda value, where: None if value is None else check(value, where)


def either(a: Check, b: Check, want: str) -> Check:
    def check(value: object, where: str) -> None:
        try:
            a(value, where)
        except _Invalid:
            try:
                b(value, where)
            except _Invalid:
                raise _Invalid(where, want, value) from None
    return check


def one_of(*choices: str) -> Check:
    return _kind(" or ".join(f"'{c}'" for c in choices), lambda v: v in choices)


def list_of(item: Check) -> Check:
    def check(value: object, where: str) -> None:
        if not isinstance(value, list):
            raise _Invalid(where, "a list", value)
        for i, v in enumerate(value):
            item(v, f"{where}[{i}]")
    return check


def map_of(item: Check, keys: tuple[str, ...] | None = None) -> Check:
    """An object with any keys (or only `keys`), every value checked by `item`."""
    def check(value: object, where: str) -> None:
        if not isinstance(value, dict):
            raise _Invalid(where, "an object", value)
        for k, v in value.items():
            if keys is not None and k not in keys:
                raise _Invalid(f"{where}.{k}" if where else k, f"one of the keys {', '.join(keys)}", k)
            item(v, f"{where}.{k}" if where else k)
    return check


def obj(required: tuple[str, ...] = (), **fields: Check) -> Check:
    """An object whose known keys have these types; unknown keys are allowed (later formats add some)."""
    def check(value: object, where: str) -> None:
        if not isinstance(value, dict):
            raise _Invalid(where, "an object", value)
        for k in required:
            if k not in value:
                raise _Invalid(f"{where}.{k}" if where else k, "present", None)
        for k, c in fields.items():
            if k in value:
                c(value[k], f"{where}.{k}" if where else k)
    return check


_STAGE_RECORD = obj(file=STR, bytes=opt(COUNT), lines=opt(COUNT), sha256=opt(SHA256))
_ARG = obj(("name", "type"), name=STR, type=STR, kind=opt(STR), value=ANY, divisibility=opt(INT),
           attrs=opt(map_of(ANY)), why=opt(STR))

META_SCHEMA: Check = obj(
    ("function",),
    format=INT, kernel=STR, function=IDENT, variant=STR, description=opt(STR), source_file=opt(STR),
    target=obj(("name",), name=STR, backend=opt(STR), arch=opt(either(INT, STR, "an integer or a string")),
               warp_size=opt(WARPS), vendor=opt(STR)),
    status=one_of("ok", "failed"),
    error=opt(obj(stage=opt(STR), type=opt(STR), message=opt(STR))),
    request=opt(map_of(ANY)),
    compile_options=opt(obj(num_warps=opt(WARPS), num_stages=opt(COUNT), constexprs=opt(map_of(ANY)))),
    backend_options=opt(map_of(ANY)),
    specialisation=opt(list_of(_ARG)),
    resources=opt(map_of(opt(COUNT))),
    times_ms=opt(map_of(NUM)),
    versions=opt(map_of(SCALAR)),
    content_key=opt(STR),
    stages=map_of(_STAGE_RECORD, keys=STAGES),
    created=opt(STR),
    passes=opt(obj(steps=opt(INT), changed=opt(INT))),
    golden=opt(map_of(ANY)),
    triton_metadata=opt(map_of(ANY)),
)
"""irscope.json, format 1. One schema for every reader: a value that passes it has these types."""

TRITON_META_SCHEMA: Check = obj(
    name=opt(STR), num_warps=opt(WARPS), num_stages=opt(COUNT), shared=opt(COUNT), tmem_size=opt(COUNT),
    triton_version=opt(STR), target=opt(obj(backend=opt(STR), arch=opt(either(INT, STR, "an integer or a string")),
                                            warp_size=opt(WARPS), name=opt(STR))),
)
"""The fields irscope reads of Triton's own `<fn>.json` (a cache entry's metadata)."""


def fits(value: object, schema: Check) -> bool:
    """Whether `value` fits `schema` (for data irscope can do without, such as a cache: a misfit is ignored)."""
    try:
        schema(value, "")
    except _Invalid:
        return False
    return True


def validate(value: object, schema: Check, source: Path, hint: str | None = None) -> None:
    """SnapshotError naming the field of `source` that does not fit `schema`."""
    try:
        schema(value, "")
    except _Invalid as e:
        raise SnapshotError(f"{source} is damaged: {e}", hint or "recompile it with irscope compile (the format "
                            "is in docs/snapshot-format.md)") from None


# The largest file irscope reads from a snapshot folder: a stage or log (the largest real ones, a big
# kernel's LLVM IR or a pass timeline's module, are tens of MB) and a JSON file, whose parse takes several
# times its size in memory. Beyond them a folder is damaged or hostile, and reading it could exhaust memory.
MAX_FILE_BYTES = 512 << 20
MAX_JSON_BYTES = 64 << 20


def loads(text: str | bytes):
    """`json.loads` for untrusted text: a document nested deeper than Python's reader allows is a ValueError,
    as any other bad JSON is (json raises RecursionError there, which readers catching ValueError miss)."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("nested deeper than Python's JSON reader allows") from None


PIPE_WRITER_WAIT_S = 2.0  # how long a named pipe with no writer yet is given one


def read_given(path: Path, limit: int, regular_only: bool = False) -> tuple[bytes, int]:
    """(at most `limit` + 1 bytes, the file's st_mode) of a file the user named: a sweep file, a sweep
    result, a launch file. Opened without waiting, so a named pipe that nothing writes to reads as empty
    (after PIPE_WRITER_WAIT_S for a writer to come) instead of holding open() forever (one with a writer,
    `<(...)`, reads as usual); /dev/zero is read no
    further than `limit`. With `regular_only`, anything but a regular file is not read at all (b"").
    OSError as opening or reading raises it."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as f:
        mode = os.fstat(f.fileno()).st_mode
        if regular_only and not stat.S_ISREG(mode):
            return b"", mode
        if hasattr(os, "set_blocking"):
            os.set_blocking(f.fileno(), True)
        data = f.read(limit + 1)
        # `mkfifo p; irscope sweep p & gen > p`: the writer may open the pipe a moment after irscope does
        deadline = time.monotonic() + PIPE_WRITER_WAIT_S
        while not data and stat.S_ISFIFO(mode) and time.monotonic() < deadline:
            time.sleep(0.05)
            data = f.read(limit + 1)
        return data, mode


def read_json(path: Path, schema: Check, root: Path, what: str):
    """A JSON file of a snapshot folder, checked to lie inside `root` and to fit `schema`."""
    real = inside(root, path, what, MAX_JSON_BYTES)
    try:
        data = loads(real.read_text())
    except (OSError, ValueError) as e:
        raise SnapshotError(f"{path} is damaged: {e}", "recompile it with irscope compile") from None
    validate(data, schema, path)
    return data


def inside(root: Path, path: Path, what: str, limit: int = MAX_FILE_BYTES) -> Path:
    """`path` with its links resolved, refused unless it lies inside the snapshot folder `root` and, if it
    is a file, holds at most `limit` bytes.

    A snapshot folder is untrusted input: no field and no symlink in it may make irscope read elsewhere, and
    no file in it may make irscope read more than any compile writes.
    """
    base = Path(root).resolve()
    try:
        real = Path(path).resolve()
    except (OSError, RuntimeError) as e:  # a symlink loop
        raise SnapshotError(f"{root}: {what} cannot be resolved ({e})", "the snapshot folder is damaged") from None
    if real != base and base not in real.parents:
        raise SnapshotError(f"{root}: {what} points outside the snapshot folder ({path})",
                            "irscope reads nothing outside a snapshot; this folder is damaged or hostile")
    try:
        st = real.stat()
    except OSError:
        st = None  # missing or unreadable: the read that follows says so
    if st is not None and not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
        # a FIFO, socket or device would block the read or never end: a tarball can carry them
        raise SnapshotError(f"{root}: {what} is not a regular file", "this folder is damaged or hostile")
    size = st.st_size if st is not None and stat.S_ISREG(st.st_mode) else 0
    if size > limit:
        raise SnapshotError(f"{root}: {what} is {size / (1 << 20):,.1f} MiB, more than irscope reads from a snapshot "
                            f"({limit >> 20} MiB)", "no compile writes a file this large; this folder is damaged or "
                            "hostile")
    return real

_BASES = list_of(list_of(INT))
_SHAPED_LAYOUT = obj(("shape", "status"), shape=list_of(INT), status=one_of("ok", "not-available"), by=opt(STR),
                     note=opt(STR), bases=opt(map_of(_BASES, keys=("register", "lane", "warp", "block", "offset"))),
                     out_dims=opt(list_of(STR)))
LAYOUTS_SCHEMA: Check = obj(
    ("format", "encodings"),
    format=INT, computed_by=opt(STR), note=opt(STR),
    encodings=list_of(obj(("name", "attr", "kind", "space", "layouts"), name=STR, attr=STR, kind=STR,
                          space=one_of("distributed", "shared", "tensor_memory", "other"),
                          lines=opt(list_of(INT)), layouts=list_of(_SHAPED_LAYOUT))),
)
"""layouts.json, format 1 (docs/snapshot-format.md): each encoding of the TTGIR as linear layouts."""
