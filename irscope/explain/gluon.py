"""A Gluon kernel's decisions: its source writes the MMA, the buffers, the TMA copies and the partitions,
so no pass of Triton's pipeline makes them and no what-if of num_warps or num_stages changes them
(docs/gluon.md). No Triton import.
"""
from __future__ import annotations

from ..targets import Target
from .facts import Decision, Facts, per_stage_bytes, pick, shapes

# Gluon's pipeline (gluon_to_ttgir) runs none of the passes decisions.DECIDING_PASS names: the source writes the MMA, the buffers,
# the TMA copies, the buffer ops and the partitions. Only the lowering still picks the instructions, from
# the layouts the source wrote.
GLUON_DECIDING_PASS = {"vectors": "convert-triton-gpu-to-llvm (instructions from the layouts the source wrote)"}
AMD_GLUON_DECIDING_PASS = {"vectors": "convert-triton-amdgpu-to-llvm (instructions from the layouts the source "
                                      "wrote)"}

# Gluon's MMA ops, by what TTGIR and the final code show: the source names the instruction itself.
_GLUON_MMA = {"tcgen05.mma": "blackwell.tcgen05_mma", "wgmma": "hopper.warpgroup_mma", "mma.sync": "ampere.mma_v2",
              "mfma": "amd.cdna3.mfma", "wmma": "amd.rdna4.wmma"}
_GLUON_BEST = {80: "ampere.mma_v2", 86: "ampere.mma_v2", 89: "ampere.mma_v2", 90: "hopper.warpgroup_mma",
               100: "blackwell.tcgen05_mma", 103: "blackwell.tcgen05_mma", 120: "ampere.mma_v2",
               121: "ampere.mma_v2"}


def gluon_matrix(f: Facts, why: str, arch: int) -> Decision:
    """A Gluon kernel's MMA is the op its source calls: no pass picks it, and no other num_warps or target
    rewrites it (a what-if of either only fails or changes nothing)."""
    c, t = f.analysis.counters, f.snapshot.target
    found = [(k, counter) for k, counter in (("tcgen05.mma", "ptx.tcgen05.mma"), ("wgmma", "ptx.wgmma"),
                                             ("mma.sync", "ptx.mma.sync"), ("mfma", "amdgcn.v_mfma"),
                                             ("wmma", "amdgcn.v_wmma")) if c.get(counter)]
    best = _GLUON_BEST.get(arch, "")
    if found:
        kind, counter = found[0]
        value = f"{kind} {shapes(c, counter)}".strip()
        good = t.vendor == "amd" or _GLUON_MMA[kind] == best or not best
        ev = pick(c, counter) + pick(c, "ttgir.nvidia_mma.version") + pick(c, "ttgir.warp_group_dot") + \
            pick(c, "ttgir.tcgen05_mma")
        why += f"; the source's {_GLUON_MMA[kind]}"
        if not good:
            why += f"; {t.name}'s fastest is {best}"
    else:
        value, good, ev = "FMA (no matrix instruction)", False, pick(c, "ttgir.dot")
        why += "; the source's gl.dot_fma: a matrix instruction is the target's own op, " + \
            (best if best else "amd.cdna3.mfma or amd.rdna4.wmma" if t.vendor == "amd" else "ampere.mma_v2")
    why += "; written by hand, so no num_warps or target what-if changes it"
    return Decision("matrix", "tt.dot", value, good, ev, why, "ptx" if t.vendor == "nvidia" else "amdgcn",
                    by_hand=True)


def gluon_stages(f: Facts, target: Target) -> tuple[str, int] | None:
    """(the constexpr that sets a Gluon kernel's buffer count, the largest value estimated to fit): a Gluon
    kernel ignores num_stages, its multi-buffered allocations take their depth from a constexpr of its own
    (STAGES, NUM_BUFFERS). None when no constexpr so named equals the buffer count, or nothing needs fewer."""
    shared = f.analysis.resources.shared
    stage_bytes, buffers = per_stage_bytes(f)
    if not shared or not stage_bytes or buffers < 2 or shared <= target.shared_per_block:
        return None
    consts = (f.snapshot.meta.get("compile_options") or {}).get("constexprs") or {}
    names = [k for k, v in consts.items() if v == buffers and not isinstance(v, bool) and
             any(w in str(k).upper() for w in ("STAGE", "BUF"))]
    if len(names) != 1:
        return None
    return names[0], max(1, buffers + (target.shared_per_block - shared) // stage_bytes)
