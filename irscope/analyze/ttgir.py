"""What TTGIR says about the compiler's decisions: the layouts it chose (with their parameters), the
shared-memory buffers it allocated and how deep they are, and the ops that show pipelining, matrix
instructions, warp specialisation and layout conversions."""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

# An op: optional results (`%a = `, `%0:2 = `), then `dialect.name`, in custom or generic ("...") form.
# (Led by a newline, not `^`, so the regex engine jumps from line to line.)
_OP = re.compile(r"\n[ \t]*(?:%[^=\n]*?=[ \t]*)?\"?([a-z_][a-z0-9_]*\.[a-z0-9_.]+)\"?(?=[ \t(<{:\"\n])")
_PARTITION = re.compile(r"^[ \t]*partition\d+\(", re.M)
# A layout or memory-space attribute, inline or in an alias definition: #ttg.blocked<{...}>.
_ATTR = re.compile(r"#(?:ttg|ttng|amdg)\.([a-z_0-9]+)(<(?:[^<>]|<[^<>]*>)*>)?")
_ALIAS = re.compile(r"^#(\w+) = (#(?:ttg|ttng|amdg)\.[a-z_0-9]+(?:<(?:[^<>]|<[^<>]*>)*>)?)", re.M)
_PARAM = re.compile(r"(\w+) = (\[(?:[^\[\]]|\[[^\[\]]*\])*\]|array<[^>]*>|[^,{}<>]+)")
# Led by the op name, so the regex engine scans for a literal instead of trying every line.
_ALLOC = re.compile(r"(ttg\.local_alloc|ttng\.tmem_alloc)\b([^\n]*)")
_RESULT = re.compile(r"[ \t]*(%[\w#.$-]+)[^=\n]*=[ \t]*$")
_MEMDESC = re.compile(r"->\s*!ttg\.memdesc<((?:\d+x)+)([a-z][a-z0-9]*)\s*(?:,\s*(#[\w.]+))?")
_BITS = re.compile(r"^[a-z]+(\d+)")

# Ops whose counts the analysis reports, by counter key.
OPS = {
    "ttgir.dot": ("tt.dot",),
    "ttgir.dot_scaled": ("tt.dot_scaled",),
    "ttgir.warp_group_dot": ("ttng.warp_group_dot",),
    "ttgir.warp_group_dot_wait": ("ttng.warp_group_dot_wait",),
    "ttgir.tcgen05_mma": ("ttng.tc_gen5_mma", "ttng.tc_gen5_mma_scaled"),
    "ttgir.async_copy": ("ttg.async_copy_global_to_local", "amdg.buffer_load_to_local",
                         "amdg.async_copy_local_to_global"),
    "ttgir.async_commit_group": ("ttg.async_commit_group",),
    "ttgir.async_wait": ("ttg.async_wait", "amdg.async_wait"),
    "ttgir.tma_load": ("ttng.async_tma_copy_global_to_local", "ttng.async_tma_gather"),
    "ttgir.tma_store": ("ttng.async_tma_copy_local_to_global", "ttng.async_tma_scatter", "ttng.async_tma_reduce"),
    "ttgir.tdm_load": ("amdg.async_tdm_copy_global_to_local", "amdg.async_tdm_gather"),
    "ttgir.warp_specialize": ("ttg.warp_specialize",),
    "ttgir.convert_layout": ("ttg.convert_layout",),
    "ttgir.local_alloc": ("ttg.local_alloc",),
    "ttgir.local_load": ("ttg.local_load",),
    "ttgir.local_store": ("ttg.local_store",),
    "ttgir.tmem_alloc": ("ttng.tmem_alloc",),
    "ttgir.tmem_load": ("ttng.tmem_load",),
    "ttgir.tmem_store": ("ttng.tmem_store",),
    "ttgir.mbarrier_init": ("ttng.init_barrier", "amdg.init_barrier"),
    "ttgir.mbarrier_wait": ("ttng.wait_barrier", "amdg.wait_barrier"),
    "ttgir.load": ("tt.load", "amdg.buffer_load", "tt.descriptor_load"),
    "ttgir.store": ("tt.store", "amdg.buffer_store", "tt.descriptor_store"),
}
_OP_KEY = {op: key for key, ops in OPS.items() for op in ops}


@dataclass(frozen=True)
class Layout:
    """One layout (or memory space) the TTGIR uses: `blocked` with its parameters, say."""

    kind: str  # blocked, slice, dot_op, nvidia_mma, amd_mfma, linear, swizzled_shared, nvmma_shared, ...
    params: tuple[tuple[str, str], ...] = ()  # (name, value) as written: ("warpsPerCTA", "[8, 1]")
    alias: str = ""  # the #name the module gives it, if any
    text: str = ""  # the attribute as written

    def param(self, name: str) -> str | None:
        return dict(self.params).get(name)

    def describe(self) -> str:
        if self.params:
            return f"{self.kind} " + " ".join(f"{k}={v}" for k, v in self.params)
        body = self.text[self.text.find("<"):] if "<" in self.text else ""
        return f"{self.kind} {body}".strip()


@dataclass(frozen=True)
class Allocation:
    """A buffer in shared or tensor memory, from `ttg.local_alloc` / `ttng.tmem_alloc` and its memdesc."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    bytes: int
    buffers: int  # copies of one tile: the pipeliner's multi-buffering depth (1 when single)
    space: str  # "shared" or "tensor"
    encoding: str = ""
    barrier: bool = False  # an array of mbarriers (i64), not data

    @property
    def tile(self) -> tuple[int, ...]:
        return self.shape[1:] if self.buffers > 1 or (len(self.shape) > 2 and self.shape[0] == 1) else self.shape


@dataclass(frozen=True)
class TtgirFacts:
    counters: dict[str, int]
    layouts: tuple[Layout, ...]
    allocations: tuple[Allocation, ...]


def analyze(text: str) -> TtgirFacts:
    ops = Counter(_OP.findall("\n" + text + "\n"))
    out: Counter[str] = Counter()
    out["ttgir.ops"] = sum(ops.values())
    for op, n in ops.items():
        key = _OP_KEY.get(op)
        if key:
            out[key] += n
    if out["ttgir.warp_specialize"]:
        out["ttgir.warp_specialize.partitions"] = len(_PARTITION.findall(text))
    layouts = _layouts(text)
    for layout in layouts:
        out[f"ttgir.layout.{layout.kind}"] += 1
        if layout.kind == "nvidia_mma" and layout.param("versionMajor"):
            out["ttgir.nvidia_mma.version"] = max(out["ttgir.nvidia_mma.version"], _int(layout.param("versionMajor")))
        elif layout.kind in ("amd_mfma", "amd_wmma") and layout.param("version"):
            out[f"ttgir.{layout.kind}.version"] = max(out[f"ttgir.{layout.kind}.version"],
                                                      _int(layout.param("version")))
    allocations = _allocations(text)
    data = [a for a in allocations if a.space == "shared" and not a.barrier]
    out["ttgir.shared.allocs"] = len(data)
    out["ttgir.shared.bytes"] = sum(a.bytes for a in data)
    out["ttgir.shared.buffers"] = max((a.buffers for a in data), default=0)
    out["ttgir.mbarriers"] = sum(a.buffers for a in allocations if a.barrier)
    tmem = [a for a in allocations if a.space == "tensor"]
    out["ttgir.tmem.bytes"] = sum(a.bytes for a in tmem)
    return TtgirFacts({k: v for k, v in out.items() if v}, layouts, allocations)


def _layouts(text: str) -> tuple[Layout, ...]:
    header = text[:text.find("\nmodule")] if "\nmodule" in text else text  # aliases precede the module
    aliases = {body: name for name, body in _ALIAS.findall(header)}
    seen: dict[str, Layout] = {}
    for m in _ATTR.finditer(text):
        whole = m.group(0)
        if whole in seen:
            continue
        kind, body = m.group(1), m.group(2) or ""
        params = tuple((k, v.strip()) for k, v in _PARAM.findall(body)) if "=" in body else ()
        seen[whole] = Layout(kind, params, aliases.get(whole, ""), whole)
    return tuple(seen.values())


def _allocations(text: str) -> tuple[Allocation, ...]:
    out = []
    for found in _ALLOC.finditer(text):
        op, rest = found.group(1), found.group(2)
        line_start = text.rfind("\n", 0, found.start()) + 1
        result = _RESULT.match(text, line_start, found.start())
        if result is None:
            continue
        name = result.group(1)
        m = _MEMDESC.search(rest)
        if not m:
            continue
        shape = tuple(int(d) for d in m.group(1).rstrip("x").split("x"))
        dtype = m.group(2)
        bits = int(_BITS.match(dtype).group(1)) if _BITS.match(dtype) else 8
        elements = 1
        for d in shape:
            elements *= d
        barrier = dtype == "i64" and shape[-1] == 1 and op == "ttg.local_alloc"
        empty = not rest.lstrip().startswith("%")  # filled later, by copies into each buffer
        if barrier:
            buffers = shape[0] if len(shape) >= 2 else 1
        elif empty and len(shape) >= 3:
            buffers = shape[0]
        else:
            buffers = 1
        space = "tensor" if op == "ttng.tmem_alloc" else "shared"
        out.append(Allocation(name, shape, dtype, (elements * bits + 7) // 8, buffers, space, m.group(3) or "",
                              barrier))
    return tuple(out)


def _int(text: str | None) -> int:
    try:
        return int(str(text).split(":")[0].strip())
    except ValueError:
        return 0
