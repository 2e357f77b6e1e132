"""The documented counters: every key `analyze` can produce, the stage it is read from, its group for
display and what it means. docs/analyzers.md is this table in prose; a test keeps the two in step.

Patterns: `<shape>` is an instruction shape (m64n256k16, 64x256x16, 16816), `<n>B` a width in bytes per
thread (or lane), `<op>`/`<kind>`/`<variant>` a name taken from the instruction or attribute itself.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache


@dataclass(frozen=True)
class CounterInfo:
    pattern: str
    group: str
    meaning: str

    @property
    def stage(self) -> str:
        return self.pattern.split(".")[0]


def _g(group: str, *entries: tuple[str, str]) -> list[CounterInfo]:
    return [CounterInfo(p, group, m) for p, m in entries]


CATALOG: tuple[CounterInfo, ...] = tuple(
    _g("TTGIR · matrix", ("ttgir.dot", "tt.dot ops left for the generic MMA path (Ampere-style mma, MFMA, WMMA, FMA)"),
       ("ttgir.dot_scaled", "tt.dot_scaled ops (microscaled formats)"),
       ("ttgir.warp_group_dot", "ttng.warp_group_dot: Hopper's asynchronous warp-group MMA (wgmma)"),
       ("ttgir.warp_group_dot_wait", "ttng.warp_group_dot_wait"),
       ("ttgir.tcgen05_mma", "ttng.tc_gen5_mma(_scaled): Blackwell's tensor-memory MMA"),
       ("ttgir.nvidia_mma.version", "versionMajor of the #ttg.nvidia_mma layout: 2 = mma.sync (Ampere-style), 3 = wgmma (Hopper)"),
       ("ttgir.amd_mfma.version", "version of the #ttg.amd_mfma layout (2 = CDNA2, 3 = CDNA3, 4 = CDNA4)"),
       ("ttgir.amd_wmma.version", "version of the #ttg.amd_wmma layout (RDNA)"))
    + _g("TTGIR · memory", ("ttgir.async_copy", "asynchronous global-to-shared copies: ttg.async_copy_global_to_local, "
                                                "amdg.buffer_load_to_local (pipelined loads)"),
         ("ttgir.async_commit_group", "ttg.async_commit_group"), ("ttgir.async_wait", "ttg.async_wait, amdg.async_wait"),
         ("ttgir.tma_load", "TMA loads: ttng.async_tma_copy_global_to_local, ttng.async_tma_gather"),
         ("ttgir.tma_store", "TMA stores: ttng.async_tma_copy_local_to_global, scatter, reduce"),
         ("ttgir.tdm_load", "AMD tensor data mover loads: amdg.async_tdm_copy_global_to_local"),
         ("ttgir.load", "plain loads: tt.load, amdg.buffer_load, tt.descriptor_load"),
         ("ttgir.store", "plain stores: tt.store, amdg.buffer_store, tt.descriptor_store"),
         ("ttgir.local_alloc", "ttg.local_alloc ops"), ("ttgir.local_load", "ttg.local_load (shared to registers)"),
         ("ttgir.local_store", "ttg.local_store (registers to shared)"),
         ("ttgir.shared.allocs", "shared-memory data allocations (ttg.local_alloc, mbarrier arrays excluded)"),
         ("ttgir.shared.bytes", "bytes of those allocations (from their memdesc shapes); the kernel's shared memory is "
                                "at least this, plus scratch for layout conversions"),
         ("ttgir.shared.buffers", "deepest multi-buffering: the leading dimension of an N x tile allocation the "
                                  "pipeliner made (1 = not pipelined)"),
         ("ttgir.mbarriers", "mbarriers allocated (i64 arrays in shared memory)"),
         ("ttgir.tmem_alloc", "ttng.tmem_alloc ops"), ("ttgir.tmem.bytes", "bytes of tensor memory allocated"),
         ("ttgir.tmem_load", "ttng.tmem_load"), ("ttgir.tmem_store", "ttng.tmem_store"),
         ("ttgir.mbarrier_init", "ttng.init_barrier"), ("ttgir.mbarrier_wait", "ttng.wait_barrier"))
    + _g("TTGIR · layouts", ("ttgir.layout.<kind>", "distinct layouts of one kind in use: blocked, slice, dot_op, "
                                                    "nvidia_mma, amd_mfma, amd_wmma, linear, swizzled_shared, "
                                                    "nvmma_shared, amd_rotating_shared, padded_shared, "
                                                    "tensor_memory_encoding, and the memory spaces shared_memory and "
                                                    "tensor_memory"),
         ("ttgir.convert_layout", "ttg.convert_layout ops (data moved between layouts, often through shared memory)"),
         ("ttgir.warp_specialize", "ttg.warp_specialize regions"),
         ("ttgir.warp_specialize.partitions", "partitions (producer/consumer warp groups) of those regions"),
         ("ttgir.ops", "every op the module's text writes (terminators the printer leaves out, such as the "
                       "empty scf.yield of an scf.if, are not counted)"))
    + _g("PTX · matrix", ("ptx.wgmma", "wgmma.mma_async (Hopper warp-group MMA)"),
         ("ptx.wgmma.<shape>", "wgmma by shape, e.g. ptx.wgmma.m64n256k16"),
         ("ptx.mma.sync", "mma.sync (Ampere-style warp MMA)"), ("ptx.mma.sync.<shape>", "mma.sync by shape (m16n8k16)"),
         ("ptx.mma.<kind>", "other mma forms (mma.sp)"), ("ptx.tcgen05", "every tcgen05.* instruction (Blackwell)"),
         ("ptx.tcgen05.<op>", "tcgen05 by operation: mma, commit, ld, st, alloc, dealloc, cp, wait, ..."))
    + _g("PTX · copies", ("ptx.cp.async", "cp.async.ca/cg global-to-shared copies (Ampere-style pipelining)"),
         ("ptx.cp.async.<n>B", "cp.async by copy size: 4, 8 or 16 bytes"),
         ("ptx.cp.async.ca", "cp.async caching at all levels (4/8/16 B)"), ("ptx.cp.async.cg", "cp.async bypassing L1 (16 B)"),
         ("ptx.cp.async.commit_group", "cp.async.commit_group"), ("ptx.cp.async.wait_group", "cp.async.wait_group"),
         ("ptx.cp.async.bulk.tensor", "TMA copies: cp.async.bulk.tensor"),
         ("ptx.cp.async.bulk.tensor.load", "TMA loads (global to shared)"),
         ("ptx.cp.async.bulk.tensor.store", "TMA stores (shared to global)"),
         ("ptx.cp.async.bulk", "non-tensor bulk copies"), ("ptx.cp.async.bulk.commit_group", "cp.async.bulk.commit_group"),
         ("ptx.cp.async.bulk.wait_group", "cp.async.bulk.wait_group(.read)"),
         ("ptx.cp.async.bulk.prefetch", "cp.async.bulk.prefetch"), ("ptx.cp.reduce.async.bulk", "TMA reductions"),
         ("ptx.tensormap", "tensormap.* (descriptors built on the device)"))
    + _g("PTX · loads and stores",
         ("ptx.ld.global", "ld.global, also after memory-order qualifiers (ld.volatile.global, ld.relaxed.gpu.global); "
                           "ld.param is not counted"),
         ("ptx.ld.global.<n>B", "ld.global by bytes per thread (v4.b32 = 16 B)"), ("ptx.st.global", "st.global"),
         ("ptx.st.global.<n>B", "st.global by bytes per thread"), ("ptx.ld.shared", "ld.shared"),
         ("ptx.ld.shared.<n>B", "ld.shared by width"), ("ptx.st.shared", "st.shared"),
         ("ptx.st.shared.<n>B", "st.shared by width"), ("ptx.ld.local", "ld.local (local arrays)"),
         ("ptx.ld.local.<n>B", "ld.local by width"), ("ptx.st.local", "st.local"), ("ptx.st.local.<n>B", "st.local by width"),
         ("ptx.ld.const", "ld.const"), ("ptx.ld.const.<n>B", "ld.const by width"),
         ("ptx.ld.generic", "ld without a state space"), ("ptx.ld.generic.<n>B", "by width"),
         ("ptx.st.generic", "st without a state space"), ("ptx.st.generic.<n>B", "by width"),
         ("ptx.ldmatrix", "ldmatrix (shared to registers, MMA fragments)"), ("ptx.stmatrix", "stmatrix"),
         ("ptx.atom", "atom.*"), ("ptx.red", "red.*"))
    + _g("PTX · synchronisation", ("ptx.bar", "CTA barriers: bar.sync, bar.arrive, barrier.*"),
         ("ptx.bar.warp", "bar.warp.sync"), ("ptx.mbarrier", "mbarrier.* (asynchronous transaction barriers)"),
         ("ptx.mbarrier.<op>", "mbarrier by operation: init, arrive, try_wait, inval, ..."),
         ("ptx.fence", "every fence.*"), ("ptx.fence.proxy.async", "fence.proxy.async (generic to async proxy)"),
         ("ptx.fence.proxy.<kind>", "other proxy fences (tensormap)"),
         ("ptx.setmaxnreg", "setmaxnreg (register reallocation between warp groups)"),
         ("ptx.setmaxnreg.<op>", "setmaxnreg.inc / .dec"))
    + _g("PTX · totals", ("ptx.instructions", "every PTX instruction"))
    + _g("SASS · matrix", ("sass.HGMMA", "HGMMA (Hopper warp-group MMA)"), ("sass.HGMMA.<shape>", "HGMMA by shape"),
         ("sass.HMMA", "HMMA (warp MMA)"), ("sass.HMMA.<shape>", "HMMA by shape (16816)"),
         ("sass.<X>MMA", "other MMA opcodes: IMMA, QGMMA, QMMA (sm_120 fp8), OMMA (sm_120 fp4), UTCHMMA, UTCQMMA, ..."),
         ("sass.<X>MMA.<shape>", "by shape, where the opcode writes one (QMMA.16832; the UTC*MMA opcodes do not)"),
         ("sass.UTC", "every UTC* (Blackwell tensor-core/TMEM) instruction"),
         ("sass.UTC<op>", "UTC* by opcode: UTCBAR, UTCATOMSWS, UTCCP, ..."))
    + _g("SASS · memory", ("sass.LDGSTS", "LDGSTS (cp.async)"), ("sass.LDGSTS.<n>B", "LDGSTS by bytes per thread"),
         ("sass.UTMALDG", "TMA loads"), ("sass.UTMASTG", "TMA stores"), ("sass.UTMA<op>", "other TMA opcodes"),
         ("sass.UBLK<op>", "bulk copies"), ("sass.LDSM", "LDSM (ldmatrix)"), ("sass.STSM", "STSM (stmatrix)"),
         ("sass.LDG", "global loads"), ("sass.LDG.<n>B", "by width"), ("sass.STG", "global stores"),
         ("sass.STG.<n>B", "by width"), ("sass.LDS", "shared loads"), ("sass.LDS.<n>B", "by width"),
         ("sass.STS", "shared stores"), ("sass.STS.<n>B", "by width"),
         ("sass.LDL", "local-memory loads (spill reloads, local arrays)"), ("sass.STL", "local-memory stores (spills)"),
         ("sass.ATOMG", "global atomics"), ("sass.ATOMS", "shared atomics"), ("sass.RED", "reductions"),
         ("sass.REDG", "global reductions"))
    + _g("SASS · synchronisation", ("sass.BAR", "BAR (CTA barriers)"), ("sass.SYNCS", "SYNCS (mbarrier operations)"),
         ("sass.WARPGROUP", "WARPGROUP.ARRIVE / DEPBAR (wgmma ordering)"), ("sass.DEPBAR", "DEPBAR (cp.async waits)"),
         ("sass.MEMBAR", "MEMBAR"), ("sass.USETMAXREG", "USETMAXREG (setmaxnreg)"), ("sass.ELECT", "ELECT"))
    + _g("SASS · totals", ("sass.instructions", "every SASS instruction"))
    + _g("SASS · arithmetic", ("sass.FFMA", "fp32 fused multiply-adds"), ("sass.FADD", "fp32 adds"), ("sass.FMUL", "fp32 multiplies"), ("sass.HFMA2", "packed fp16x2/bf16x2 fused multiply-adds (two lanes an instruction), and ptxas's constant-move idiom `HFMA2 Rd, -RZ, RZ, c` (every HFMA2 of the committed matmul and attention goldens is one)"), ("sass.HADD2", "packed fp16x2/bf16x2 adds"), ("sass.HMUL2", "packed fp16x2/bf16x2 multiplies"), ("sass.IMAD", "integer multiply-adds (also address arithmetic and moves)"), ("sass.IADD3", "three-input integer adds"), ("sass.LOP3", "three-input logic"), ("sass.SHF", "funnel shifts"), ("sass.MUFU", "special-function unit (exp2, rcp, rsqrt...)"), ("sass.FMNMX", "fp32 min/max"), ("sass.F2F", "float conversions"), ("sass.I2F", "integer to float"), ("sass.F2I", "float to integer"))
    + _g("AMDGCN · matrix", ("amdgcn.v_mfma", "v_mfma_* (CDNA matrix cores)"),
         ("amdgcn.v_mfma.<variant>", "by variant, e.g. amdgcn.v_mfma.f32_32x32x8_f16"),
         ("amdgcn.v_smfmac", "sparse MFMA"), ("amdgcn.v_smfmac.<variant>", "by variant"),
         ("amdgcn.v_wmma", "v_wmma_* (RDNA matrix instructions)"), ("amdgcn.v_wmma.<variant>", "by variant"),
         ("amdgcn.v_swmmac", "sparse WMMA"), ("amdgcn.v_swmmac.<variant>", "by variant"))
    + _g("AMDGCN · memory", ("amdgcn.global_load", "global_load_*"), ("amdgcn.global_load.<n>B", "by bytes per lane"),
         ("amdgcn.global_store", "global_store_*"), ("amdgcn.global_store.<n>B", "by width"),
         ("amdgcn.buffer_load", "buffer_load_*"), ("amdgcn.buffer_load.<n>B", "by width"),
         ("amdgcn.buffer_store", "buffer_store_*"), ("amdgcn.buffer_store.<n>B", "by width"),
         ("amdgcn.load_to_lds", "loads that write straight into LDS (`... lds`, global_load_lds_*)"),
         ("amdgcn.global_load_lds", "global_load_lds_*"), ("amdgcn.global_load_lds.<n>B", "by width"),
         ("amdgcn.flat_load", "flat_load_*"), ("amdgcn.flat_load.<n>B", "by width"), ("amdgcn.flat_store", "flat_store_*"),
         ("amdgcn.flat_store.<n>B", "by width"), ("amdgcn.scratch_load", "scratch (spill) loads"),
         ("amdgcn.scratch_load.<n>B", "by width"), ("amdgcn.scratch_store", "scratch (spill) stores"),
         ("amdgcn.scratch_store.<n>B", "by width"),
         ("amdgcn.ds_read", "LDS reads: ds_read_* (gfx9) and ds_load_* (gfx11+)"),
         ("amdgcn.ds_read.<n>B", "by bytes per lane (ds_read2* move two values)"),
         ("amdgcn.ds_write", "LDS writes: ds_write_* and ds_store_*"), ("amdgcn.ds_write.<n>B", "by width"),
         ("amdgcn.atomic", "global/buffer/flat atomics"))
    + _g("AMDGCN · synchronisation", ("amdgcn.s_waitcnt", "s_waitcnt* (waits for outstanding memory operations)"),
         ("amdgcn.s_barrier", "s_barrier*"), ("amdgcn.instructions", "every AMDGCN instruction"))
    + _g("AMDGCN · arithmetic", ("amdgcn.v_fma", "v_fma_* and v_fmac_*: fused multiply-adds"), ("amdgcn.v_pk_fma", "v_pk_fma_*: packed (two-lane) fused multiply-adds"), ("amdgcn.v_pk_add", "v_pk_add_*: packed adds"), ("amdgcn.v_pk_mul", "v_pk_mul_*: packed multiplies"), ("amdgcn.v_dot", "v_dot*: dot-product instructions"), ("amdgcn.v_add", "v_add_* (float and integer adds)"), ("amdgcn.v_mul", "v_mul_* (multiplies)"), ("amdgcn.v_exp", "v_exp_* (exp2)"), ("amdgcn.v_rcp", "v_rcp_* (reciprocals)"), ("amdgcn.v_cvt", "v_cvt_* (conversions)"))
)

GROUP_ORDER = tuple(dict.fromkeys(c.group for c in CATALOG))

_PLACEHOLDERS = {"<shape>": r"(?:m\d+n\d+k\d+|\d+(?:x\d+)*)", "<n>": r"\d+", "<op>": r"[\w.]+", "<kind>": r"[\w.]+",
                 "<variant>": r"\w+", "<X>": r"[A-Z]+"}


@lru_cache(maxsize=None)
def _compiled() -> list[tuple[re.Pattern, int]]:
    out = []
    for i, info in enumerate(CATALOG):
        rx = re.escape(info.pattern)
        for ph, sub in _PLACEHOLDERS.items():
            rx = rx.replace(re.escape(ph), sub)
        out.append((re.compile(rx + "$"), i))
    return out


@lru_cache(maxsize=4096)
def info(key: str) -> CounterInfo | None:
    """The catalog entry that documents `key` (the first pattern that matches)."""
    for rx, i in _compiled():
        if rx.match(key):
            return CATALOG[i]
    return None


def fixed_keys(stages) -> tuple[str, ...]:
    """The catalogue's counters with a fixed name (no `<shape>`-like part) read from these stages: a script
    finds each of them in `stats --json`/`--csv`, as 0 when the thing is absent."""
    return tuple(c.pattern for c in CATALOG if c.stage in stages and "<" not in c.pattern)


def sort_key(key: str) -> tuple[int, int, str]:
    """Display order: by group, then by catalog entry, then by name."""
    entry = info(key)
    if entry is None:
        return (len(GROUP_ORDER), 0, key)
    return (GROUP_ORDER.index(entry.group), CATALOG.index(entry), key)


def group_of(key: str) -> str:
    entry = info(key)
    return entry.group if entry else "other"


def grouped(keys) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """(group, keys) pairs in display order, for the keys given."""
    groups: dict[str, list[str]] = {}
    for key in sorted(keys, key=sort_key):
        groups.setdefault(group_of(key), []).append(key)
    return tuple((g, tuple(ks)) for g, ks in groups.items())
