"""What a compiled kernel asks of the hardware: registers, spills, stack, shared memory / LDS, scratch.

Read from text only: ptxas's `-v` log, cuobjdump's resource usage, the AMDGPU metadata block in amdgcn,
and Triton's own metadata. No Triton import.
"""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass, replace

import yaml


@dataclass(frozen=True)
class Resources:
    """Per-kernel resource usage. None means "not known from what this snapshot holds"."""

    num_warps: int | None = None
    shared: int | None = None  # bytes of shared memory (NVIDIA) or LDS (AMD) per block, as Triton allocates it
    registers: int | None = None  # 32-bit registers per thread (NVIDIA) / arch VGPRs per lane (AMD)
    spill_stores: int | None = None  # bytes (NVIDIA, ptxas) or spilled VGPRs (AMD)
    spill_loads: int | None = None
    stack: int | None = None  # bytes of stack frame per thread (NVIDIA): where ptxas puts spills and arrays
    # bytes of local memory per thread outside the stack frame (NVIDIA, cuobjdump's LOCAL; 0 for Triton's
    # kernels, whose spills are in the stack). The driver reserves stack + local per thread: equal to
    # CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES for 376 cubins on the H200 (docs/gpu.md, "Occupancy against the driver").
    local: int | None = None
    barriers: int | None = None
    tensor_memory: int | None = None  # Blackwell tensor-memory columns
    sgprs: int | None = None  # AMD scalar registers
    agprs: int | None = None  # AMD accumulation registers
    scratch: int | None = None  # AMD private segment bytes per lane
    occupancy: int | None = None  # AMD: waves per SIMD the LLVM backend computed

    def as_dict(self) -> dict:
        return {k: v for k, v in asdict(self).items() if v is not None}

    @classmethod
    def from_dict(cls, data: dict) -> "Resources":
        return cls(**{k: v for k, v in data.items() if k in cls.__dataclass_fields__})

    def merged(self, other: "Resources") -> "Resources":
        """Fields of `other` fill the gaps of `self`."""
        return Resources(**{**other.as_dict(), **self.as_dict()})


_PTXAS_PROPS = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_PTXAS_USED = re.compile(r"Used (\d+) registers(?:, used (\d+) barriers)?")


def parse_ptxas_log(log: str) -> Resources:
    """ptxas -v: 'N bytes stack frame, N bytes spill stores, N bytes spill loads', 'Used N registers'."""
    props = _PTXAS_PROPS.search(log)
    used = _PTXAS_USED.search(log)
    if not props and not used:
        return Resources()
    return Resources(
        stack=int(props.group(1)) if props else None,
        spill_stores=int(props.group(2)) if props else None,
        spill_loads=int(props.group(3)) if props else None,
        registers=int(used.group(1)) if used else None,
        barriers=int(used.group(2)) if used and used.group(2) else None,
    )


_RES_USAGE = re.compile(r"REG:(\d+)\s+STACK:(\d+)\s+SHARED:(\d+)\s+LOCAL:(\d+)")


def parse_res_usage(text: str) -> Resources:
    """cuobjdump -res-usage: 'REG:28 STACK:0 SHARED:1024 LOCAL:0 ...' (first kernel function)."""
    m = _RES_USAGE.search(text)
    if not m:
        return Resources()
    return Resources(registers=int(m.group(1)), stack=int(m.group(2)), local=int(m.group(4)))


_AMD_META = re.compile(r"^\s*\.amdgpu_metadata\s*$(.*?)^\s*\.end_amdgpu_metadata", re.M | re.S)
_AMD_OCCUPANCY = re.compile(r"^; Occupancy: (\d+)", re.M)
_AMD_VGPRS = re.compile(r"^; NumVgprs: (\d+)", re.M)


def parse_amdgcn(text: str) -> Resources:
    """The AMDGPU metadata block of an amdgcn listing: VGPRs, SGPRs, AGPRs, spills, LDS, scratch."""
    m = _AMD_META.search(text)
    if not m:
        return Resources()
    try:
        meta = yaml.safe_load(m.group(1))
    except (yaml.YAMLError, RecursionError):  # (a listing from a dump folder or a cache is untrusted input)
        return Resources()
    kernels = meta.get("amdhsa.kernels") if isinstance(meta, dict) else None
    if not isinstance(kernels, list) or not kernels or not isinstance(kernels[0], dict):
        return Resources()
    k = kernels[0]

    def count(key: str) -> int | None:  # the metadata's counts, and nothing of another type
        v = k.get(key)
        return v if isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 1 << 48 else None

    # The kernel's own counts are in its "; Kernel info:" block. A `noinline` function it calls comes first
    # in the listing with a "; NumVgprs:" of its own, which is not the kernel's (32 against the kernel's 54).
    info = text.rfind("; Kernel info:")
    own = text[info:] if info >= 0 else text
    occupancy = _AMD_OCCUPANCY.search(own)
    vgprs = _AMD_VGPRS.search(own)  # arch VGPRs; .vgpr_count includes AGPRs on gfx90a+
    return Resources(
        registers=int(vgprs.group(1)) if vgprs else count(".vgpr_count"),
        sgprs=count(".sgpr_count"),
        agprs=count(".agpr_count"),
        spill_stores=count(".vgpr_spill_count"),
        shared=count(".group_segment_fixed_size"),
        scratch=count(".private_segment_fixed_size"),
        occupancy=int(occupancy.group(1)) if occupancy else None,
    )


def from_triton_metadata(meta: dict) -> Resources:
    """Triton's own metadata (the cache's `<kernel>.json`): shared memory, tensor memory, warps."""
    return Resources(num_warps=meta.get("num_warps"), shared=meta.get("shared"),
                     tensor_memory=meta.get("tmem_size") or None)


def amd_resources(listing: str, triton_meta: dict) -> Resources:
    """An AMD kernel's resources: registers from its listing; LDS as the listing's static group segment
    (0 for Triton kernels) plus the LDS Triton requests at launch (`shared` in its metadata)."""
    static, meta = parse_amdgcn(listing), from_triton_metadata(triton_meta)
    if static.shared is None and meta.shared is None:
        return meta.merged(static)
    return replace(meta.merged(static), shared=(static.shared or 0) + (meta.shared or 0))
