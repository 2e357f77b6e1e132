"""The TTGIR text around layouts, without Triton: encoding aliases, the types that use them, and the ops
whose cost depends on them (`ttg.convert_layout`, shared-memory loads and stores).

Triton prints a type with every alias spelled out (`#ttg.slice<{dim = 1, parent = #ttg.blocked<...>}>`),
so an encoding is keyed by its expanded text (`expand`), which is what layouts.json records as `attr`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

_ALIAS = re.compile(r"^#([A-Za-z_][\w]*)\s*=\s*(#(?:ttg|ttng|amdg|triton_gpu)\..*)$", re.M)
_REF = re.compile(r"#([A-Za-z_]\w*)(?![\w.])")
_TYPE_START = re.compile(r"tensor<|!ttg\.memdesc<|->\s*<")
_OPNAME = re.compile(r"^\s*(?:%[\w#:, %]+=\s*)?\"?([a-z_]+\.[\w.]+)")

DTYPE_BITS = {"i1": 8, "i8": 8, "i16": 16, "i32": 32, "i64": 64, "f16": 16, "bf16": 16, "f32": 32, "f64": 64,
              "tf32": 32}


def aliases(text: str) -> dict[str, str]:
    """alias name (without '#') -> its definition, with the aliases it names expanded."""
    out: dict[str, str] = {}
    for m in _ALIAS.finditer(text):
        out[m.group(1)] = expand(m.group(2).strip(), out)
    return out


def expand(attr: str, table: dict[str, str]) -> str:
    """`attr` with every alias it names replaced by its definition (as Triton prints the type)."""
    for _ in range(8):  # aliases nest a few levels at most (slice of dot_op of mma)
        new = _REF.sub(lambda m: table.get(m.group(1), m.group(0)), attr)
        if new == attr:
            return new
        attr = new
    return attr


def kind_of(attr: str) -> str:
    """`#ttg.blocked<{...}>` -> "blocked"; "?" for text that is not an encoding."""
    m = re.match(r"#\w+\.(\w+)", attr)
    return m.group(1) if m else "?"


SHARED_KINDS = ("nvmma_shared", "swizzled_shared", "amd_rotating_shared", "padded_shared", "shared_linear")
DISTRIBUTED_KINDS = ("blocked", "slice", "nvidia_mma", "dot_op", "amd_mfma", "amd_wmma", "linear")


def space_of(kind: str) -> str:
    if kind in SHARED_KINDS:
        return "shared"
    if kind in DISTRIBUTED_KINDS:
        return "distributed"
    if kind.startswith("tensor_memory"):
        return "tensor_memory"
    return "other"


@dataclass(frozen=True)
class TypeUse:
    """One `tensor<...>` or `!ttg.memdesc<...>` in the text."""

    memdesc: bool
    shape: tuple[int, ...]
    dtype: str
    encoding: str  # as written (may name aliases); "" for a tensor without one
    alloc_shape: tuple[int, ...]  # memdesc: the buffer's shape (a subslice names it last); else = shape

    @property
    def elem_bits(self) -> int:
        return pointer_or_bits(self.dtype)

    def layout_shape(self, rank: int) -> tuple[int, ...]:
        """The shape its encoding is converted at: a tensor's own, a buffer's allocation (last `rank` dims)."""
        return self.alloc_shape[-rank:] if self.memdesc else self.shape


def pointer_or_bits(dtype: str) -> int:
    if dtype.startswith("!tt.ptr"):
        return 64
    if dtype in DTYPE_BITS:
        return DTYPE_BITS[dtype]
    m = re.match(r"f8|f4|i(\d+)", dtype)
    if m and m.group(0).startswith("f8"):
        return 8
    if m and m.group(0) == "f4":
        return 4
    return int(m.group(1)) if m and m.group(1) else 32


def _split_top(body: str) -> list[str]:
    parts, depth, cur = [], 0, []
    for ch in body:
        if ch in "<[{(":
            depth += 1
        elif ch in ">]})":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur).strip())
    return parts


def _dims(text: str) -> tuple[tuple[int, ...], str]:
    dims = []
    rest = text
    while True:
        m = re.match(r"(\d+)x", rest)
        if not m:
            break
        dims.append(int(m.group(1)))
        rest = rest[m.end():]
    return tuple(dims), rest


def parse_type(body: str, memdesc: bool) -> TypeUse | None:
    """The inside of `tensor<...>` / `!ttg.memdesc<...>` (without the brackets)."""
    parts = _split_top(body)
    shape, dtype = _dims(parts[0])
    if not shape and not memdesc:
        return None
    enc = parts[1] if len(parts) > 1 and parts[1].startswith("#") else ""
    alloc = shape
    if memdesc and parts and re.fullmatch(r"(\d+x)*\d+", parts[-1]) and len(parts) > 2:
        alloc = tuple(int(d) for d in parts[-1].split("x"))
    return TypeUse(memdesc, shape, dtype, enc, alloc)


def types_in(line: str) -> list[TypeUse]:
    """Every tensor and memdesc type in a line, in order (`-> <...>`, a memdesc without its name as
    async copies print it, counts as a memdesc)."""
    out = []
    i = 0
    while True:
        m = _TYPE_START.search(line, i)
        if not m:
            return out
        start = m.end()
        depth, j = 1, start
        while j < len(line) and depth:
            if line[j] == "<":
                depth += 1
            elif line[j] == ">" and line[j - 1] != "-":
                depth -= 1
            j += 1
        use = parse_type(line[start:j - 1], memdesc=not m.group(0).startswith("tensor"))
        if use is not None:
            out.append(use)
        i = j


def op_name(line: str) -> str:
    m = _OPNAME.match(line)
    return m.group(1) if m else ""


@dataclass(frozen=True)
class EncodingUse:
    """An encoding as the text uses it: its name there, and the shapes and lines it is used at."""

    name: str  # `#blocked1`, or the inline text (`#ttg.dot_op<{opIdx = 0, parent = #mma, kWidth = 2}>`)
    attr: str  # expanded: the key
    shapes: tuple[tuple[int, ...], ...]
    lines: tuple[int, ...]  # 1-based lines of the TTGIR that use it

    @property
    def kind(self) -> str:
        return kind_of(self.attr)


def encoding_uses(text: str) -> list[EncodingUse]:
    """Every distributed and shared encoding the module's types use, in order of first use."""
    table = aliases(text)
    reverse = {v: f"#{k}" for k, v in table.items()}
    found: dict[str, tuple[str, dict, list]] = {}
    for n, line in enumerate(text.splitlines(), 1):
        if line.startswith("#"):
            continue
        for use in types_in(line):
            if not use.encoding:
                continue
            attr = expand(use.encoding, table)
            kind = kind_of(attr)
            if space_of(kind) == "other":
                continue
            rank = _rank(attr, use)
            name = reverse.get(attr, use.encoding)
            entry = found.setdefault(attr, (name, {}, []))
            entry[1].setdefault(use.layout_shape(rank), None)
            if not entry[2] or entry[2][-1] != n:
                entry[2].append(n)
    return [EncodingUse(name, attr, tuple(shapes), tuple(lines)) for attr, (name, shapes, lines) in found.items()]


def _rank(attr: str, use: TypeUse) -> int:
    """A shared encoding's rank: `order`'s length, or 2 for nvmma_shared (its buffers are 2-D tiles)."""
    if not use.memdesc:
        return len(use.shape)
    m = re.search(r"order\s*=\s*\[([\d,\s]*)\]", attr)
    if m and m.group(1).strip():
        return len(m.group(1).split(","))
    return min(2, len(use.alloc_shape))


@dataclass(frozen=True)
class ConvertOp:
    line: int
    shape: tuple[int, ...]
    src: str  # expanded encodings
    dst: str
    src_name: str
    dst_name: str
    elem_bits: int


def converts(text: str) -> list[ConvertOp]:
    table = aliases(text)
    reverse = {v: f"#{k}" for k, v in table.items()}
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        if op_name(line) != "ttg.convert_layout":
            continue
        ts = types_in(line)
        if len(ts) >= 2 and ts[0].encoding and ts[1].encoding:
            s, d = expand(ts[0].encoding, table), expand(ts[1].encoding, table)
            out.append(ConvertOp(n, ts[1].shape, s, d, reverse.get(s, ts[0].encoding), reverse.get(d, ts[1].encoding),
                                 ts[1].elem_bits))
    return out


READS = ("ttg.local_load",)
WRITES = ("ttg.local_store", "ttg.local_alloc", "ttg.async_copy_global_to_local", "amdg.buffer_load_to_local")


@dataclass(frozen=True)
class SharedAccess:
    """A load from or store to shared memory through registers: its distributed and shared sides."""

    line: int
    op: str
    direction: str  # "read" or "write"
    tensor_shape: tuple[int, ...]
    tensor: str  # expanded distributed encoding
    tensor_name: str
    shared: str  # expanded shared encoding
    shared_name: str
    alloc_shape: tuple[int, ...]  # the buffer's shape the shared layout is converted at
    elem_bits: int


def shared_accesses(text: str) -> list[SharedAccess]:
    table = aliases(text)
    reverse = {v: f"#{k}" for k, v in table.items()}
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        op = op_name(line)
        if op not in READS + WRITES:
            continue
        ts = types_in(line)
        tens = [t for t in ts if not t.memdesc and t.encoding]
        mems = [t for t in ts if t.memdesc and t.encoding]
        if not tens or not mems:
            continue
        t, m = tens[0], mems[-1]
        sh = expand(m.encoding, table)
        te = expand(t.encoding, table)
        out.append(SharedAccess(n, op, "read" if op in READS else "write", t.shape, te, reverse.get(te, t.encoding),
                                sh, reverse.get(sh, m.encoding), m.layout_shape(_rank(sh, m)), m.elem_bits))
    return out
