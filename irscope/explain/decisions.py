"""What the compiler decided for one snapshot, read from its counters, stages and specialisation.

Each `Decision` is one choice with the evidence that shows it: which matrix instruction the dots became,
whether the main loop is software-pipelined and how deep, how wide each global load/store group is, the
shared memory / LDS and whether it launches, registers and spills, TMA, AMD buffer ops, warp
specialisation. `good` says whether the fast path was taken; `key` identifies the decision across
snapshots of the same kernel, so a what-if compile's decision can be set beside the base's.
No Triton import: snapshots copied from elsewhere are explained the same way.
"""
from __future__ import annotations

import re

from ..store.snapshot import Snapshot
from ..targets import CORE, TARGETS, Target
from .facts import Decision, Facts, is_gluon, per_stage_bytes, pick, shapes
from .gluon import AMD_GLUON_DECIDING_PASS, GLUON_DECIDING_PASS, gluon_matrix, gluon_stages

TOPICS = ("matrix", "pipelining", "vectors", "shared", "registers", "tma", "buffer_ops", "warp_specialize")

# The Triton passes that make each decision (docs/passes.md; `irscope passes` shows them on a timeline).
DECIDING_PASS = {
    "matrix": "tritongpu-accelerate-matmul",
    "pipelining": "tritongpu-pipeline (tritongpu-assign-latencies, tritongpu-schedule-loops)",
    "vectors": "tritongpu-coalesce (layouts from the axis analysis), convert-triton-gpu-to-llvm (instructions)",
    "tma": "triton-nvidia-optimize-descriptor-encoding, triton-nvidia-tma-lowering",
    "buffer_ops": "tritonamdgpu-convert-buffer-ops",
    "warp_specialize": "nvgpu-warp-specialization",
}
AMD_DECIDING_PASS = {"matrix": "tritonamdgpu-accelerate-matmul", "pipelining": "tritonamdgpu-pipeline",
                     "vectors": "tritongpu-coalesce (layouts from the axis analysis), convert-triton-amdgpu-to-llvm "
                                "(instructions)"}


def deciding_pass(topic: str, vendor: str | None, gluon: bool = False) -> str:
    """The pass Triton's pipeline for `vendor` (Gluon's, with `gluon`) makes this decision in ("" when none)."""
    if gluon:
        return (AMD_GLUON_DECIDING_PASS if vendor == "amd" else GLUON_DECIDING_PASS).get(topic, "")
    if vendor == "amd" and topic in AMD_DECIDING_PASS:
        return AMD_DECIDING_PASS[topic]
    return DECIDING_PASS.get(topic, "")


# An op or attribute whose first appearance on the pass timeline shows the deciding pass.
TIMELINE_PATTERN = {
    "matrix": r"ttng\.warp_group_dot |ttng\.tc_gen5_mma|#ttg\.nvidia_mma<|#ttg\.amd_mfma<|#ttg\.amd_wmma<",
    "pipelining": "ttg.async_copy_global_to_local|ttng.async_tma_copy_global_to_local|amdg.buffer_load_to_local",
    "tma": "ttng.async_tma_copy_global_to_local",
    "buffer_ops": "amdg.buffer_load",
    "warp_specialize": "ttg.warp_specialize",
}

# Matched a line at a time, each anchored at the line's start: a snapshot is untrusted, and an unanchored
# search for the op with a lazy scan to the operand type is quadratic on one long line of `tt.dot %a`.
_DOT_OP = re.compile(r"\s*(?:%[\w.$#:-]+\s*=\s*)?(?:tt\.dot|ttng\.warp_group_dot|ttng\.tc_gen5_mma)\s+%")
_OPERAND_TYPE = re.compile(r":\s*(?:tensor|!ttg\.memdesc)<[\dx]+x(\w+)")


def read_decisions(facts: Facts) -> tuple[Decision, ...]:
    """Every decision the snapshot shows, in TOPICS order."""
    a = facts.analysis
    if a.status != "ok":
        return ()
    out: list[Decision] = []
    for reader in (_matrix, _pipelining, _vectors, _shared, _registers, _tma, _buffer_ops, _warp_specialize):
        out.extend(reader(facts))
    return tuple(out)


_DOT_RESULT = re.compile(r"->\s*tensor<(\d+)x(\d+)x")
# tcgen05's MMA returns nothing: its MxN is that of the accumulator in tensor memory, an operand.
_TMEM_ACC = re.compile(r"!ttg\.memdesc<(\d{1,9})x(\d{1,9})x\w{1,16},[^>]{0,200}#ttng\.tensor_memory\b")
_PRECISION = re.compile(r"inputPrecision = (\w+)")
_PRECISIONS = {"0": "tf32", "1": "tf32x3", "2": "ieee"}  # Triton's InputPrecision enum, as TTGIR prints it


def dot_dtype(snapshot: Snapshot) -> str:
    return dot_facts(snapshot)[0]


def dot_facts(snapshot: Snapshot) -> tuple[str, str, str]:
    """(operand dtype, MxN tile of the result, input precision) of the first dot in TTGIR; "" where unknown."""
    if "ttgir" not in snapshot.stage_files:
        return "", "", ""
    for line in snapshot.read("ttgir").splitlines():
        m = _DOT_OP.match(line) and _OPERAND_TYPE.search(line)
        if not m:
            continue
        tile = _DOT_RESULT.search(line) or _TMEM_ACC.search(line)
        precision = _PRECISION.search(line)
        return (m.group(1), f"{tile.group(1)}x{tile.group(2)}" if tile else "",
                _PRECISIONS.get(precision.group(1), precision.group(1)) if precision else "")
    return "", "", ""


def _matrix(f: Facts) -> list[Decision]:
    c, t = f.analysis.counters, f.snapshot.target
    dots = c.get("ttgir.dot", 0) + c.get("ttgir.warp_group_dot", 0) + c.get("ttgir.tcgen05_mma", 0) + \
        c.get("ttgir.dot_scaled", 0)
    if not dots or t is None:
        return []
    dtype, tile, precision = dot_facts(f.snapshot)
    why = f"num_warps={f.num_warps}, {dtype or '?'} operands" + (f", {tile} tile" if tile else "") + \
        (f", input precision {precision}" if precision and dtype == "f32" else "") + f", {t.name}"
    arch = int(t.arch) if t.vendor == "nvidia" and str(t.arch).isdigit() else 0
    if is_gluon(f.snapshot):
        return [gluon_matrix(f, why, arch)]
    if t.vendor == "nvidia":
        if c.get("ptx.tcgen05.mma"):
            return [Decision("matrix", "tt.dot", "tcgen05.mma", True, pick(c, "ptx.tcgen05.mma") +
                             pick(c, "ttgir.tcgen05_mma"), why, "ptx")]
        if c.get("ptx.wgmma"):
            return [Decision("matrix", "tt.dot", f"wgmma {shapes(c, 'ptx.wgmma')}".strip(), True,
                             pick(c, "ptx.wgmma") + pick(c, "ttgir.nvidia_mma.version"), why, "ptx")]
        if c.get("ptx.mma.sync"):
            best = arch in (80, 86, 87, 89, 120, 121)
            if arch in (90, 100, 103) and (f.num_warps or 0) < 4:
                why += (": wgmma needs a warpgroup (num_warps >= 4)" if arch == 90 else
                        ": Triton uses tcgen05 from 4 warps up (num_warps >= 4)")
            return [Decision("matrix", "tt.dot", f"mma.sync {shapes(c, 'ptx.mma.sync')}".strip(), best,
                             pick(c, "ptx.mma.sync") + pick(c, "ttgir.nvidia_mma.version"), why, "ptx")]
        # (TTGIR prints no inputPrecision for ieee, the default)
        return [Decision("matrix", "tt.dot", "FMA (no tensor-core instruction)", False, pick(c, "ttgir.dot"),
                         why + (": fp32 operands with input_precision='ieee' never use NVIDIA's tensor cores "
                                "(input_precision='tf32' or 'tf32x3' would, at tf32's precision)"
                                if dtype == "f32" and precision in ("", "ieee") else ""), "ptx")]
    for kind in ("v_mfma", "v_wmma"):
        if c.get(f"amdgcn.{kind}"):
            return [Decision("matrix", "tt.dot", f"{kind[2:]} {shapes(c, 'amdgcn.' + kind)}".strip(), True,
                             pick(c, f"amdgcn.{kind}"), why, "amdgcn")]
    return [Decision("matrix", "tt.dot", "FMA (no matrix instruction)", False, pick(c, "ttgir.dot"), why, "amdgcn")]


def _loop_inputs(f: Facts) -> list[str]:
    """What decides whether the loop's loads can be asynchronous: the loads' pointers and the integers that
    bound their masks (K in `offs_k < K - k * BLOCK_K`), with the divisibility this compile assumed."""
    loads = [g for g in f.groups if g.kind == "load" and g.in_loop]
    names = dict.fromkeys([x for g in loads for x in g.arguments] + [x for g in loads for x in g.mask_arguments])
    return [f"{a} divisible by {f.divisibility.get(a, '?')}" for a in names]


_ASYNC_VIA = ("cp.async", "tma", "global_load_lds", "buffer_load_lds")


_TMA_OP = re.compile(r"^\s*(?:%[\w.$#-]+(?::\d+)?\s*=\s*)?(ttng\.async_tma_copy_global_to_local|"
                     r"ttng\.async_tma_copy_local_to_global|tt\.descriptor_load|tt\.descriptor_store)\s+(%[\w.$-]+)")
_DESC_PARAM = re.compile(r'(%[\w.$-]+): !tt\.tensordesc<.*?loc\("([^"]+)"')
_SSA_PARAM = re.compile(r"(%[\w.$-]+): ")
_PARTITION = re.compile(r"^\s*partition\d+\((.*)$")


def descriptor_arguments(ttgir: str) -> dict[tuple[int, str], tuple[str, ...]]:
    """(source line, load/store) -> the descriptor parameters its TMA copies take, for the copies whose
    descriptor is a kernel parameter (a Gluon kernel's host-side TensorDescriptor), also inside the
    partitions of a ttg.warp_specialize (whose arguments are its operands, in order). The access groups
    trace pointers only."""
    from ..ir.lines import line_map

    lines = ttgir.splitlines()
    names: dict[str, str] = {}  # SSA value -> descriptor parameter
    operands: list[str] = []  # the last ttg.warp_specialize's
    found: list[tuple[int, str, str]] = []
    for i, ln in enumerate(lines):
        if "tt.func" in ln and "!tt.tensordesc" in ln:
            for chunk in re.split(r",\s+(?=%)", ln[ln.find("(") + 1:]):
                m = _DESC_PARAM.match(chunk)
                if m:
                    names[m.group(1)] = m.group(2)
        elif "ttg.warp_specialize(" in ln:
            operands = re.findall(r"%[\w.$-]+", ln.split("ttg.warp_specialize(", 1)[1].split(")", 1)[0])
        elif _PARTITION.match(ln):  # partitionN(%arg31: type loc(...), ...): bound to the operands in order
            for param, operand in zip(_SSA_PARAM.findall(_PARTITION.match(ln).group(1)), operands):
                if operand in names:
                    names[param] = names[operand]
                else:
                    names.pop(param, None)  # a name of the previous partition's, bound to something else here
        m = _TMA_OP.match(ln)
        if m and m.group(2) in names:
            found.append((i, "store" if m.group(1).endswith(("global", "store")) else "load", names[m.group(2)]))
    if not found:
        return {}
    locs = line_map("ttgir", ttgir)
    out: dict[tuple[int, str], tuple[str, ...]] = {}
    for i, kind, name in found:
        loc = locs.source_of(i)
        key = (loc.line if loc is not None else 0, kind)
        out[key] = tuple(dict.fromkeys(out.get(key, ()) + (name,)))
    return out


def _pipelining(f: Facts) -> list[Decision]:
    c = f.analysis.counters
    has_loop_loads = c.get("ttgir.load", 0) + c.get("ttgir.async_copy", 0) + c.get("ttgir.tma_load", 0)
    if not has_loop_loads or "scf.for" not in (f.snapshot.read("ttgir") if "ttgir" in f.snapshot.stage_files else ""):
        return []
    buffers = c.get("ttgir.shared.buffers", 0)
    amd = f.snapshot.target is not None and f.snapshot.target.vendor == "amd"
    # AMD's stream pipeliner at num_stages=2 keeps one LDS buffer and loads the next iteration's tiles into
    # registers while this one's multiply: pipelined, with a prologue, though not multi-buffered
    ahead = amd and buffers < 2 and prefetched(f.snapshot.read("ttgir"))
    pipelined = buffers >= 2 or ahead
    loads = [g for g in f.groups if g.kind == "load" and g.in_loop]  # a load before the loop is not pipelined
    descs = descriptor_arguments(f.snapshot.read("ttgir"))
    how = ", ".join(dict.fromkeys(f"{'/'.join(g.arguments or descs.get((g.line, g.kind), ())) or '?'} {g.via}" +
                                  (f" {g.width}B" if g.width else "") for g in loads))
    depth = (f"pipelined: the next iteration's loads in registers, {buffers} LDS buffer" if ahead else
             f"pipelined: {buffers} buffers" if pipelined else
             "not pipelined" + (f" ({buffers} buffer)" if buffers else ""))
    value = depth + (f"; {how}" if how else "")
    asynchronous = bool(loads) and all(g.via in _ASYNC_VIA for g in loads)
    why = f"num_stages={f.num_stages}; " + ", ".join(_loop_inputs(f))
    if is_gluon(f.snapshot):
        why = ("a Gluon kernel allocates its buffers and barriers itself: the compiler does not pipeline it, and "
               "num_stages changes nothing, so no --num-stages what-if")
        if not pipelined:
            why += ("; pipelining it is the source's: gl.allocate_shared_memory of [STAGES, ...] buffers with an "
                    "mbarrier each, the loads issued STAGES - 1 iterations ahead")
        asynchronous = asynchronous or c.get("ttgir.tma_load", 0) > 0
    narrow = [g for g in loads if g.via not in _ASYNC_VIA and g.width < 4]
    if not amd and narrow:
        why += (f"; cp.async copies 4, 8 or 16 B: {', '.join('/'.join(g.arguments) for g in narrow)} at "
                f"{narrow[0].width} B per thread (pointer or mask not provably aligned) stays a synchronous ld.global")
    evidence = tuple((k, c.get(k, 0)) for k in ("ttgir.shared.buffers", "ttgir.async_copy", "ttgir.tma_load",
                                                 "ttgir.load", "ptx.cp.async", "sass.LDGSTS") if k in c or
                     k in ("ttgir.shared.buffers", "ttgir.async_copy"))
    return [Decision("pipelining", "main loop", value, pipelined and (asynchronous or amd), evidence, why, "ttgir",
                     by_hand=is_gluon(f.snapshot))]


# A global load's line and the #locN it ends on, matched in linear time (a snapshot is untrusted: an
# unanchored `= tt.load.*loc(...)$` search is quadratic on one long line of `= tt.load`).
_GLOBAL_LOAD = re.compile(r"[^=]*= (?:tt\.load|amdg\.buffer_load|amdg\.buffer_load_to_local|"
                          r"ttg\.async_copy_global_to_local)\b")
_LOC_AT_END = re.compile(r"\bloc\((#loc\d+)\)\s*$")


def _load_loc(line: str) -> str | None:
    m = _GLOBAL_LOAD.match(line) and _LOC_AT_END.search(line)
    return m.group(1) if m else None


def prefetched(ttgir: str) -> bool:
    """Whether the first loop that loads from global memory has a prologue: a load of the same source
    location issued before the loop and in its body (the pipeliner's peeled first iteration)."""
    lines = ttgir.splitlines()
    # One pass: the loop is the outermost scf.for around the first load inside a loop (a loop that starts
    # earlier and loads would hold an earlier such load); its region ends where the braces close again.
    depth, open_loops, outer, body = 0, [], None, set()
    for i, line in enumerate(lines):
        if "scf.for" in line and line.rstrip().endswith("{"):
            open_loops.append((i, depth))  # (its first line, the brace depth before it)
        loc = _load_loc(line) if open_loops else None
        if loc:
            outer = outer or open_loops[0]
            body.add(loc)
        depth += line.count("{") - line.count("}")
        while open_loops and depth <= open_loops[-1][1]:
            open_loops.pop()
        if outer is not None and (not open_loops or open_loops[0] != outer):
            break
    if outer is None:
        return False
    return any(_load_loc(line) in body for line in lines[:outer[0]])


def _vectors(f: Facts) -> list[Decision]:
    out, gluon = [], is_gluon(f.snapshot)
    for g in f.groups:
        if g.via == "tma":
            continue
        divs = {a: f.divisibility.get(a, 1) for a in g.arguments}
        # an integer that bounds the mask (n in `offs < n`) caps the width as a pointer does: named when it does
        divs.update({a: f.divisibility.get(a, 1) for a in g.mask_arguments
                     if a not in divs and f.divisibility.get(a, 1) < 16})
        why = ", ".join(f"{a} divisible by {d}" for a, d in divs.items()) or "pointer not traced to an argument"
        if g.contiguity:
            why += f"; contiguity {g.contiguity} elements"
        if g.width < 16:
            low = [a for a, d in divs.items() if d < 16]
            # An async copy writes shared memory: its width is also capped by the buffer's layout (tf32's B
            # operand, K-major for wgmma, takes 4 B copies of a row 16 B contiguous in registers)
            into = " and in the shared-memory layout the copy writes" if g.via in _ASYNC_VIA else ""
            why += ("; 16 B needs " + " and ".join(f"{a} divisible by 16" for a in low) if low else
                    "; 16 B needs 16 contiguous bytes per thread in the layout the source wrote (size_per_thread "
                    f"of its gl.BlockedLayout){into} and an aligned mask" if gluon else
                    f"; 16 B needs 16 contiguous bytes per thread in the value's layout{into} (and an aligned mask)")
        value = f"{g.width} B per thread ({g.via})"
        out.append(Decision("vectors", g.subject, value, g.width >= 16,
                            tuple((f"{g.via}.{w}B", n) for w, n in g.widths), why,
                            "ptx" if "ptx" in f.snapshot.stage_files else "amdgcn", by_hand=gluon))
    return out


def largest_stages(f: Facts, target: Target) -> int | None:
    """The largest num_stages whose shared memory (estimated: one buffer per stage more or less) fits."""
    shared, stage_bytes = f.analysis.resources.shared, per_stage_bytes(f)[0]
    if not shared or not stage_bytes or not f.num_stages or is_gluon(f.snapshot):  # Gluon ignores num_stages
        return None
    return max(1, f.num_stages + (target.shared_per_block - shared) // stage_bytes)


def _shared(f: Facts) -> list[Decision]:
    res, t, launch = f.analysis.resources, f.snapshot.target, f.analysis.launch
    if t is None or res.shared is None:
        return []
    what = "LDS" if t.vendor == "amd" else "shared memory"
    others = [TARGETS[n] for n in CORE if TARGETS[n].vendor == t.vendor and n != t.name]
    over = [o.name for o in others if res.shared > o.shared_per_block]
    why = f"{res.shared:,} B of {t.shared_per_block:,} B per block on {t.name}"
    if over:
        why += "; the same bytes would not fit " + ", ".join(over)
    best = largest_stages(f, t)
    if best is not None:
        why += f"; largest num_stages that fits (estimated): {best}"
    if is_gluon(f.snapshot) and per_stage_bytes(f)[0]:
        own = gluon_stages(f, t)
        why += ("; a Gluon kernel's buffer count is a constexpr of its own: num_stages does not change it, so no "
                "--num-stages what-if" + (f"; largest {own[0]} that fits (estimated): {own[1]}" if own else ""))
    value = f"{what} {res.shared:,} B: " + ("launches" if launch.launchable else "does NOT launch")
    return [Decision("shared", "kernel", value, launch.launchable,
                     (("resources.shared", res.shared), ("ttgir.shared.bytes", f.analysis.counters.get(
                         "ttgir.shared.bytes", 0))), why + "".join(f"; {r}" for r in launch.reasons
                                                             if not r.startswith(what)), "resources")]


def _registers(f: Facts) -> list[Decision]:
    res = f.analysis.resources
    if res.registers is None:
        return []
    spills = (res.spill_stores or 0) + (res.spill_loads or 0)
    amd = f.snapshot.target is not None and f.snapshot.target.vendor == "amd"
    # (AMD's listing counts the VGPRs spilled and the scratch they take, not bytes stored and loaded as ptxas)
    said = (f"{res.spill_stores or 0} VGPRs spilled ({res.scratch or 0} B of scratch a lane)" if amd else
            f"spills {res.spill_stores or 0} B stored / {res.spill_loads or 0} B loaded")
    value = f"{res.registers} registers/thread, " + (said if spills else "no spills")
    maxnreg = f.backend_options.get("maxnreg")
    why = f"num_warps={f.num_warps}" + (f", maxnreg={maxnreg}" if maxnreg else "")
    ws = _partitions(f.snapshot)
    if ws is not None and ws[1]:
        value = f"{res.registers} registers/thread at launch" + value[value.index(","):]
        why += (f"; setmaxnreg then gives the worker partitions {', '.join(map(str, ws[1]))} registers a thread "
                "(ttg.warp_specialize requestedRegisters) and the default partition the rest")
    ev = (("resources.registers", res.registers), ("resources.spill_stores", res.spill_stores or 0),
          ("resources.scratch", res.scratch or 0) if amd else ("resources.spill_loads", res.spill_loads or 0))
    c = f.analysis.counters
    ev += tuple((k, c[k]) for k in ("sass.STL", "sass.LDL", "amdgcn.scratch_store") if k in c)
    return [Decision("registers", "kernel", value, not spills, ev, why, "resources")]


def _tma(f: Facts) -> list[Decision]:
    c, t = f.analysis.counters, f.snapshot.target
    if t is None or t.vendor != "nvidia" or not str(t.arch).isdigit() or int(t.arch) < 90:
        return []
    n = c.get("ttgir.tma_load", 0) + c.get("ttgir.tma_store", 0)
    ev = tuple((k, c.get(k, 0)) for k in ("ttgir.tma_load", "ttgir.tma_store", "ptx.cp.async.bulk.tensor"))
    gluon = is_gluon(f.snapshot)
    if n:
        names = ", ".join(dict.fromkeys(a for args in descriptor_arguments(f.snapshot.read("ttgir")).values()
                                        for a in args))
        why = (f"tensor descriptors {names}" if names else "tensor descriptors") + \
            (": the source's tma.async_load/async_store" if gluon else "")
        return [Decision("tma", "kernel", f"TMA: {c.get('ttgir.tma_load', 0)} loads, {c.get('ttgir.tma_store', 0)} "
                                          "stores", True, ev, why, "ttgir", by_hand=gluon)]
    why = ("the loads take pointers; TMA in Gluon is hopper.tma.async_load/async_store on a TensorDescriptor "
           "argument (triton.experimental.gluon.nvidia.hopper.TensorDescriptor)" if gluon else
           "the loads take pointer tensors; TMA needs tensor descriptors (tl.make_tensor_descriptor)")
    return [Decision("tma", "kernel", "no TMA", None, ev, why, "ttgir", by_hand=gluon)]


def _buffer_ops(f: Facts) -> list[Decision]:
    c, t = f.analysis.counters, f.snapshot.target
    if t is None or t.vendor != "amd":
        return []
    buf = c.get("amdgcn.buffer_load", 0) + c.get("amdgcn.buffer_store", 0)
    # (gfx950 copies global memory straight to LDS with global_load_lds: a global instruction too)
    glob = c.get("amdgcn.global_load", 0) + c.get("amdgcn.global_load_lds", 0) + c.get("amdgcn.global_store", 0)
    ev = tuple((k, c.get(k, 0)) for k in ("amdgcn.buffer_load", "amdgcn.buffer_store", "amdgcn.global_load",
                                           "amdgcn.global_load_lds", "amdgcn.global_store")
               if k != "amdgcn.global_load_lds" or k in c)
    ranged = ", ".join(f"{a} (tt.pointer_range={r})" for a, r in f.pointer_range.items())
    why = (f"offsets fit 32 bits: {ranged}, as irscope assumes tensors < 2 GB" if ranged else
           "no pointer has tt.pointer_range=32 (buffer ops switched off, or tensors of 2 GB or more)")
    gluon = is_gluon(f.snapshot)
    if gluon:  # Gluon's pipeline has no tritonamdgpu-convert-buffer-ops: gl.load stays a global load
        why = ("the source's amd.cdna3.buffer_load/buffer_store" if buf else
               "gl.load/gl.store: in Gluon only amd.cdna3.buffer_load/buffer_store give buffer ops") + \
            "; AMDGCN_USE_BUFFER_OPS does not change a Gluon kernel, so no what-if"
    value = f"buffer ops: {buf} buffer, {glob} global instructions" if buf else \
        f"no buffer ops: {glob} global instructions"
    return [Decision("buffer_ops", "kernel", value, buf > 0, ev, why, "amdgcn", by_hand=gluon)]


_REQUESTED = re.compile(r"requestedRegisters = array<i32: ([\d, ]+)>")
_WORKER_WARPS = re.compile(r"^[ \t]*partition\d+\(.*num_warps\((\d+)\)", re.M)


def _partitions(snapshot: Snapshot) -> tuple[list[int], list[int]] | None:
    """The worker partitions' warps and requested registers of the first ttg.warp_specialize, from the TTGIR."""
    if "ttgir" not in snapshot.stage_files:
        return None
    text = snapshot.read("ttgir")
    if "ttg.warp_specialize" not in text:
        return None
    regs = _REQUESTED.search(text)
    return ([int(w) for w in _WORKER_WARPS.findall(text)],
            [int(r) for r in regs[1].split(",")] if regs else [])


def _warp_specialize(f: Facts) -> list[Decision]:
    c, t = f.analysis.counters, f.snapshot.target
    n = c.get("ttgir.warp_specialize", 0)
    if not n and (t is None or t.vendor != "nvidia" or not str(t.arch).isdigit() or int(t.arch) < 90):
        return []
    if n:
        parts = c.get("ttgir.warp_specialize.partitions", 0)
        value = f"warp-specialised: {parts} partitions"
        ws = _partitions(f.snapshot)
        if ws is not None and ws[0]:
            value = (f"warp-specialised: the default partition ({f.num_warps} warps) and {parts} "
                     f"worker{'s' if parts != 1 else ''} "
                     f"({', '.join(map(str, ws[0]))} warps)")
            if ws[1]:
                value += f", setmaxnreg {', '.join(map(str, ws[1]))} registers"
        why = "gl.warp_specialize in the Gluon source" if is_gluon(f.snapshot) else "tl.range(..., warp_specialize=True)"
        ev = pick(c, "ttgir.warp_specialize") + tuple((k, c[k]) for k in ("ptx.setmaxnreg",) if k in c)
        return [Decision("warp_specialize", "kernel", value, True, ev, why, "ttgir", by_hand=is_gluon(f.snapshot))]
    if is_gluon(f.snapshot):
        return [Decision("warp_specialize", "kernel", "not warp-specialised", None, (("ttgir.warp_specialize", 0),),
                         "the Gluon source calls no gl.warp_specialize", "ttgir", by_hand=True)]
    return [Decision("warp_specialize", "kernel", "not warp-specialised", None, (("ttgir.warp_specialize", 0),),
                     "no loop asks for it: tl.range(..., warp_specialize=True) on Hopper/Blackwell", "ttgir")]
