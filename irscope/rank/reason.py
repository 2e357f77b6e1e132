"""Why an estimate is what it is, in the words `irscope rank` prints beside it (model.py computes, this
names)."""
from __future__ import annotations

from .chips import Chip
from .facts import Facts


def reason_for(bound, f: Facts, chip: Chip, programs, waves, fill, n, pipelined, latency, per_iter, comp, parts,
               ahead, stores=0.0, reductions=0, sass_floor=0, stalls=False, reps=None, issued=0.0,
               memory: str = "") -> str:
    """An estimate's reason in words: the bound, its parts, the occupancy and what limits it, wave
    quantisation (`fill` 1.0 where the model has no waves); `latency` named by what the program's chain
    waits for (`reductions`: those across its warps that the model priced; `sass_floor`: the SASS
    instructions a warp issues an iteration, where they and not the TTGIR's element count set its work;
    `stalls`: the clocks its SASS stalls a warp an iteration instead, model 14's; `reps`: the fraction of
    wgmma's rate model 15 gave a warpgroup that repeats it down M; `issued`: the SASS instructions a warp
    of the program issues, where model 18 took them, not the TTGIR's element count, as its issue work;
    `memory`: the DRAM's bound in other words than its bandwidth, model 21's streams of records)."""
    occ = f"{f.blocks_per_sm} program{'s' if f.blocks_per_sm != 1 else ''}/SM ({f.occupancy_limiter or '?'})"
    words = {
        "tensor core": f"tensor core: {f.instruction} on {f.dot_dtype or '?'}" +
                       (f", repeated {f.mma_m_reps}x down M a warpgroup ({reps:.0%} of the rate)" if reps else ""),
        "issue": (f"issue: {issued:,.0f} SASS instructions a warp, on the SM's four schedulers at one a clock"
                  if issued else "issue: element-wise and special-function work"),
        "shared memory": "shared memory bandwidth: operands and layout conversions",
        "L2": "L2 feed: tile loads re-read from L2",
        "memory": memory or "memory bandwidth",
        "L1": "L1: its warps' loads and stores, 128 bytes of the sectors they touch a clock",
        "program starts": f"starting programs: {programs} of {f.num_warps} warp(s)",
        "spills": f"spills: {f.spill_bytes} B/thread spilled",
    }
    if bound == "latency":
        if f.loop and stores and stores >= max(comp, latency / max(1, ahead) if pipelined else latency):
            text = "latency: each iteration waits for its own stores"
        elif f.loop and pipelined and latency / max(1, ahead) >= comp:
            text = f"latency: copies {ahead} iteration(s) ahead do not cover their {latency:.0f} cycles"
        elif f.loop and not pipelined:
            text = "latency: the loop's loads are not pipelined"
        elif not f.loop and f.straight.get("load_bytes"):
            k = reductions
            text = ("latency: one program's loads" + (f", {k} reduction{'s' if k != 1 else ''} across its warps"
                                                       if k else "") + " and work outlast its share of the traffic")
        else:
            text = "latency: one program's serial work"
        if f.loop and sass_floor:
            text += (f" (its warps' own work: {sass_floor} clocks an iteration, the stalls and waits of its SASS)"
                     if stalls else f" (its warps' own work: {sass_floor} SASS instructions an iteration, one a clock)")
        text += f", {occ}"
    else:
        text = words[bound]
        if bound in parts:
            total = sum(parts.values()) or 1.0
            mix = " + ".join(f"{k} {v / total:.0%}" for k, v in parts.items() if v / total >= 0.05)
            text += f" ({mix}{', overlapped' if f.warp_specialized else ', in turn'})"
        text += f", {occ}"
    if fill < 0.85:
        text += (f"; wave quantisation: {programs} program{'s' if programs != 1 else ''} in {waves} "
                 f"wave{'s' if waves != 1 else ''} of {chip.sms * f.blocks_per_sm} ({fill:.0%} full)")
    return for_chip(text, chip)


# AMD's words for the same things: the model's bounds keep NVIDIA's names as keys (`--json`'s `bound`, the
# terms), and what is printed says matrix core, LDS and CU on an AMD chip.
_AMD_WORDS = (("tensor core", "matrix core"), ("shared memory", "LDS"), ("/SM", "/CU"))


def for_chip(text: str, chip: Chip) -> str:
    """`text` in the chip's vendor's words (AMD: matrix core, LDS, programs/CU)."""
    if chip.target.startswith("gfx"):
        for nvidia, amd in _AMD_WORDS:
            text = text.replace(nvidia, amd)
    return text
