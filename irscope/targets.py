"""The GPU targets irscope compiles for, by the names users type, with their per-block limits.

Limits come from NVIDIA's CUDA C++ Programming Guide (table "Technical Specifications per Compute
Capability") and AMD's CDNA ISA guides; analyses use them to tell whether a compiled config can launch
and to estimate occupancy. This module does not import Triton: `harness.py` turns a `Target` into a
`GPUTarget`.
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass

from .errors import UsageError

KiB = 1024


@dataclass(frozen=True)
class Target:
    """One compile target, e.g. `Target("sm_90a")` for Hopper or `gfx942` for MI300."""

    name: str  # canonical name, e.g. "sm_90a", "gfx942"
    vendor: str  # "nvidia" or "amd"
    arch: int | str  # what GPUTarget takes: 90 or "gfx942"
    warp_size: int
    family: str  # "Hopper", "CDNA3", ...
    products: str  # a few chips, for humans
    shared_per_block: int  # bytes of shared memory / LDS one block (workgroup) may use
    shared_per_sm: int  # bytes per SM / CU
    regs_per_thread: int  # most 32-bit registers one thread may use (VGPRs on AMD, AGPRs apart)
    regs_per_sm: int  # 32-bit registers per SM (NVIDIA) or per SIMD lane budget (AMD: VGPRs per lane)
    max_warps_per_sm: int  # resident warps per SM (NVIDIA) or waves per SIMD (AMD)
    max_threads_per_block: int = 1024
    tensor_memory_columns: int = 0  # Blackwell datacenter tensor memory (TMEM) per SM, in columns
    simds_per_cu: int = 0  # AMD: SIMDs per compute unit (occupancy is counted per SIMD)

    @property
    def backend(self) -> str:
        """Triton's backend name: "cuda" or "hip"."""
        return "cuda" if self.vendor == "nvidia" else "hip"

    @property
    def asm_stage(self) -> str:
        """The assembly stage Triton produces for this target: ptx or amdgcn."""
        return "ptx" if self.vendor == "nvidia" else "amdgcn"

    @property
    def binary_stage(self) -> str:
        """The binary stage: cubin or hsaco."""
        return "cubin" if self.vendor == "nvidia" else "hsaco"

    @property
    def stages(self) -> tuple[str, ...]:
        """Stage names in pipeline order, as Triton names them (plus sass for NVIDIA)."""
        base = ("ttir", "ttgir", "llir", self.asm_stage, self.binary_stage)
        return base + (("sass",) if self.vendor == "nvidia" else ())

    def as_dict(self) -> dict:
        return {"name": self.name, "backend": self.backend, "arch": self.arch, "warp_size": self.warp_size}


def _nv(name, cc, family, products, smem_block_kib, smem_sm_kib, warps, tmem=0) -> Target:
    return Target(name=name, vendor="nvidia", arch=cc, warp_size=32, family=family, products=products,
                  shared_per_block=smem_block_kib * KiB, shared_per_sm=smem_sm_kib * KiB, regs_per_thread=255,
                  regs_per_sm=64 * KiB, max_warps_per_sm=warps, tensor_memory_columns=tmem)


def _amd(name, family, products, lds_kib, warp_size=64) -> Target:
    return Target(name=name, vendor="amd", arch=name, warp_size=warp_size, family=family, products=products,
                  shared_per_block=lds_kib * KiB, shared_per_sm=lds_kib * KiB, regs_per_thread=512 if warp_size == 64
                  else 256, regs_per_sm=512, max_warps_per_sm=8 if warp_size == 64 else 16, simds_per_cu=4 if
                  warp_size == 64 else 2)


# The seven targets `--target all` means, then the others users type. Triton compiles every NVIDIA
# target from Hopper on as the architecture-specific "a" variant (sm_90 -> sm_90a), so the plain
# names are aliases of the "a" ones.
CORE = ("sm_80", "sm_90a", "sm_100a", "sm_120a", "gfx90a", "gfx942", "gfx950")

TARGETS: dict[str, Target] = {
    t.name: t
    for t in (
        _nv("sm_80", 80, "Ampere", "A100, A30", 163, 164, 64),
        _nv("sm_90a", 90, "Hopper", "H100, H200, GH200", 227, 228, 64),
        _nv("sm_100a", 100, "Blackwell (datacenter)", "B200, GB200", 227, 228, 64, tmem=512),
        _nv("sm_120a", 120, "Blackwell (consumer)", "RTX 5090, RTX PRO 6000", 99, 100, 48),
        _amd("gfx90a", "CDNA2", "MI210, MI250X", 64),
        _amd("gfx942", "CDNA3", "MI300X, MI300A, MI325X", 64),
        _amd("gfx950", "CDNA4", "MI350X, MI355X", 160),
        _nv("sm_75", 75, "Turing", "T4, RTX 2080", 64, 64, 32),
        _nv("sm_86", 86, "Ampere (consumer)", "RTX 3090, A10, A40", 99, 100, 48),
        _nv("sm_87", 87, "Ampere (Jetson Orin)", "Jetson AGX Orin", 163, 164, 48),
        _nv("sm_89", 89, "Ada Lovelace", "L4, L40S, RTX 4090", 99, 100, 48),
        _nv("sm_103a", 103, "Blackwell Ultra", "B300, GB300", 227, 228, 64, tmem=512),
        _nv("sm_121a", 121, "Blackwell (DGX Spark)", "GB10", 99, 100, 48),
        _amd("gfx1100", "RDNA3", "RX 7900 XTX, PRO W7900", 64, warp_size=32),
        _amd("gfx1201", "RDNA4", "RX 9070 XT", 64, warp_size=32),
    )
}

ALIASES = {"sm_90": "sm_90a", "sm_100": "sm_100a", "sm_103": "sm_103a", "sm_120": "sm_120a", "sm_121": "sm_121a",
           "hopper": "sm_90a", "h100": "sm_90a", "h200": "sm_90a", "a100": "sm_80", "b200": "sm_100a",
           "mi250": "gfx90a", "mi300": "gfx942", "mi300x": "gfx942", "mi355": "gfx950", "mi355x": "gfx950"}


def get_target(name: str) -> Target:
    """The target a user typed, by canonical name or alias (`sm_90` is `sm_90a`)."""
    key = name.strip().lower().replace("-", "_")
    if key.startswith("sm") and not key.startswith("sm_"):
        key = "sm_" + key[2:]
    key = ALIASES.get(key, key)
    if key in TARGETS:
        return TARGETS[key]
    close = difflib.get_close_matches(key, list(TARGETS) + list(ALIASES), n=3, cutoff=0.5)
    hint = f"did you mean {', '.join(close)}? " if close else ""
    raise UsageError(f"unknown target '{name}'",
                     hint + f"known targets: {', '.join(TARGETS)} (or 'all' for {' '.join(CORE)}); see `irscope targets`")


def parse_targets(text: str) -> list[Target]:
    """`sm_90a`, `sm_80,gfx942` or `all` -> targets, in the order given, without repeats."""
    names = [n for n in text.split(",") if n.strip()]
    if not names:
        raise UsageError("no target given", "pass --target sm_90a, a comma-separated list, or all")
    out: list[Target] = []
    for name in names:
        expanded = [TARGETS[n] for n in CORE] if name.strip().lower() == "all" else [get_target(name)]
        out.extend(t for t in expanded if t not in out)
    return out
