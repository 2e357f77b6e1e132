"""Occupancy estimates and launchability: what a compiled kernel's resources mean on its target.

Rules and their sources (docs/analyzers.md has the long form):
- NVIDIA (CUDA C++ Programming Guide, "Technical Specifications per Compute Capability" and the
  occupancy calculator's rules, cuda_occupancy.h): registers are allocated per warp in units of 256, each
  warp's from one of the SM's 4 sub-partitions (a quarter of the register file each); every block reserves
  1 KiB of shared memory for the system and allocates shared memory in units of 128 bytes; an SM holds at
  most `max_warps_per_sm` warps and `MAX_BLOCKS_PER_SM` blocks; Blackwell datacenter SMs have 512
  tensor-memory columns. Checked against the H200's driver (cuOccupancyMaxActiveBlocksPerMultiprocessor):
  the same blocks/SM for 376 cubins and at every dynamic shared size in 32-byte steps (docs/gpu.md).
- AMD (CDNA3/CDNA4 ISA guides): a CU has 4 SIMDs of 512 VGPRs per lane (arch VGPRs and AGPRs share
  them, allocated in granules of 8), at most 8 waves per SIMD, and LDS is shared by the CU's workgroups.
  LLVM's own estimate (`; Occupancy: N` in the listing) is used when present: it knows the VGPR, AGPR
  and SGPR rules exactly but not the LDS Triton requests at launch, which is applied here.
- A launch fails (Triton raises OutOfResources, CUDA reports "too many resources requested") when the
  shared memory exceeds the per-block opt-in limit, the block has more threads than the target allows or
  the registers of its threads exceed the register file, or the tensor memory exceeds 512 columns.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..ir.resources import Resources
from ..targets import Target

REG_ALLOC_UNIT = 256  # registers, allocated per warp
# cuda_occupancy.h (cudaOccSubPartitionsPerMultiprocessor): 4 on every SM from Volta on. A warp's registers
# come from one sub-partition, so the warps that fit are those of one quarter of the file, times 4.
SUB_PARTITIONS = 4
SHARED_RESERVED_PER_BLOCK = 1024  # bytes the CUDA runtime keeps per block (compute capability 8.0+)
SHARED_ALLOC_UNIT = 128  # cuda_occupancy.h, cudaOccSMemAllocationGranularity: 128 bytes from sm_80 on
AMD_VGPR_GRANULE = 8
MAX_BLOCKS_PER_SM = {75: 16, 80: 32, 86: 16, 87: 16, 89: 24, 90: 32, 100: 32, 103: 32, 120: 32, 121: 32}


@dataclass(frozen=True)
class Occupancy:
    """How many blocks (NVIDIA: per SM) or waves (AMD: per SIMD) fit at once, and what limits it."""

    unit: str  # "blocks/SM" or "waves/SIMD"
    value: int  # resident blocks per SM, or waves per SIMD
    warps: int  # resident warps per SM (NVIDIA) or waves per SIMD (AMD)
    max_warps: int  # the hardware's maximum of `warps`
    limiter: str  # what bounds it: registers, shared memory, warps, blocks, tensor memory, vgprs, lds
    limits: dict[str, int] = field(default_factory=dict)  # the bound each resource alone would give

    @property
    def fraction(self) -> float:
        return self.warps / self.max_warps if self.max_warps else 0.0

    def describe(self) -> str:
        if self.unit == "waves/SIMD":
            return f"{self.value} waves/SIMD of {self.max_warps} ({self.limiter})"
        return f"{self.value} blocks/SM, {self.warps}/{self.max_warps} warps = {self.fraction:.0%} ({self.limiter})"

    def as_dict(self) -> dict:
        return {"unit": self.unit, "value": self.value, "warps": self.warps, "max_warps": self.max_warps,
                "fraction": round(self.fraction, 4), "limiter": self.limiter, "limits": dict(self.limits)}


@dataclass(frozen=True)
class Launch:
    """Whether the compiled kernel can be launched on its target, and if not, why."""

    launchable: bool
    reasons: tuple[str, ...] = ()
    checked: bool = True  # False when the target (and so its limits) is unknown

    def as_dict(self) -> dict:
        return {"launchable": self.launchable, "reasons": list(self.reasons), "checked": self.checked}


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def _nvidia_regs_per_warp(registers: int, warp_size: int) -> int:
    return _ceil(registers * warp_size, REG_ALLOC_UNIT) * REG_ALLOC_UNIT


def occupancy(res: Resources, target: Target | None) -> Occupancy | None:
    """An estimate of resident blocks/waves; None when the target or the warp count is unknown."""
    if target is None or not res.num_warps:
        return None
    if target.vendor == "amd":
        return _amd_occupancy(res, target)
    warps = res.num_warps
    limits = {"warps": target.max_warps_per_sm // warps,
              "blocks": MAX_BLOCKS_PER_SM.get(int(target.arch), 32)}
    if res.registers:
        per_warp = _nvidia_regs_per_warp(res.registers, target.warp_size)
        warps_per_partition = (target.regs_per_sm // SUB_PARTITIONS) // per_warp
        limits["registers"] = (warps_per_partition * SUB_PARTITIONS) // warps
    if res.shared:
        per_block = _ceil(res.shared + SHARED_RESERVED_PER_BLOCK, SHARED_ALLOC_UNIT) * SHARED_ALLOC_UNIT
        limits["shared memory"] = target.shared_per_sm // per_block
    if res.tensor_memory and target.tensor_memory_columns:
        limits["tensor memory"] = target.tensor_memory_columns // res.tensor_memory
    limiter = min(limits, key=lambda k: (limits[k], k != "warps"))
    blocks = max(0, limits[limiter])
    return Occupancy("blocks/SM", blocks, blocks * warps, target.max_warps_per_sm, limiter, limits)


def _amd_occupancy(res: Resources, target: Target) -> Occupancy:
    max_waves = target.max_warps_per_sm
    limits = {"waves": max_waves}
    if res.occupancy:
        limits["vgprs"] = res.occupancy
    elif res.registers:
        total = _ceil(res.registers + (res.agprs or 0), AMD_VGPR_GRANULE) * AMD_VGPR_GRANULE
        limits["vgprs"] = target.regs_per_sm // total
    if res.shared:
        groups = target.shared_per_sm // res.shared
        simds = target.simds_per_cu or 4
        limits["lds"] = (groups * res.num_warps) // simds if groups else 0
        if groups and not limits["lds"]:
            limits["lds"] = 1  # one small workgroup still puts a wave on some SIMDs
    limiter = min(limits, key=lambda k: (limits[k], k != "waves"))
    waves = max(0, limits[limiter])
    return Occupancy("waves/SIMD", waves, waves, max_waves, limiter, limits)


def launch(res: Resources, target: Target | None, *, ok: bool = True, error: dict | None = None) -> Launch:
    """Launchability against the target's per-block limits."""
    if not ok:
        stage = (error or {}).get("stage", "?")
        return Launch(False, (f"did not compile (failed at stage {stage})",))
    if target is None:
        return Launch(True, ("target unknown: limits not checked",), checked=False)
    reasons = []
    if res.shared is not None and res.shared > target.shared_per_block:
        what = "LDS" if target.vendor == "amd" else "shared memory"
        reasons.append(f"{what} {res.shared:,} B > {target.shared_per_block:,} B per block on {target.name}")
    if res.num_warps:
        threads = res.num_warps * target.warp_size
        if threads > target.max_threads_per_block:
            reasons.append(f"{threads} threads > {target.max_threads_per_block} per block on {target.name}")
        if target.vendor == "nvidia" and res.registers:
            regs = _nvidia_regs_per_warp(res.registers, target.warp_size) * res.num_warps
            if regs > target.regs_per_sm:
                reasons.append(f"{res.registers} registers x {threads} threads need {regs:,} registers > "
                               f"{target.regs_per_sm:,} per block on {target.name}")
    if res.tensor_memory and target.vendor == "nvidia":
        cap = target.tensor_memory_columns
        if res.tensor_memory > cap:
            reasons.append(f"tensor memory {res.tensor_memory} columns > {cap} on {target.name}")
    return Launch(not reasons, tuple(reasons))
