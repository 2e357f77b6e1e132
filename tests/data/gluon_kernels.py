"""Gluon kernels for the tests: explicit layouts, shared memory, a Hopper-only warpgroup MMA, and a TMA
copy through host-side tensor descriptors."""
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (fence_async_shared, mbarrier, tma, warpgroup_mma,
                                                               warpgroup_mma_wait)

from irscope.spec import Config, KernelSpec, Tensor, TensorDesc

# Triton 3.9's names of the TMA copies; 3.6 spelt them async_copy_global_to_shared / _shared_to_global.
_tma_load = tma.async_load if hasattr(tma, "async_load") else tma.async_copy_global_to_shared
_tma_store = tma.async_store if hasattr(tma, "async_store") else tma.async_copy_shared_to_global


@gluon.jit
def copy(src, dst, n, BLOCK: gl.constexpr, TPW: gl.constexpr):
    # Gluon's layouts are explicit, so threads per warp is the target's: 32 on NVIDIA, 64 on CDNA.
    layout: gl.constexpr = gl.BlockedLayout([4], [TPW], [gl.num_warps()], [0])
    offs = gl.program_id(0) * BLOCK + gl.arange(0, BLOCK, layout=layout)
    mask = offs < n
    gl.store(dst + offs, gl.load(src + offs, mask=mask), mask=mask)


@gluon.jit
def transpose_smem(src, dst, M: gl.constexpr, N: gl.constexpr, TPW: gl.constexpr):
    """Through a swizzled shared buffer: rows in, columns out."""
    rows: gl.constexpr = gl.BlockedLayout([1, 4], [1, TPW], [gl.num_warps(), 1], [1, 0])
    cols: gl.constexpr = gl.BlockedLayout([4, 1], [TPW, 1], [1, gl.num_warps()], [0, 1])
    smem_layout: gl.constexpr = gl.SwizzledSharedLayout(4, 2, 8, [1, 0])
    rm = gl.arange(0, M, layout=gl.SliceLayout(1, rows))
    rn = gl.arange(0, N, layout=gl.SliceLayout(0, rows))
    tile = gl.load(src + rm[:, None] * N + rn[None, :])
    smem = gl.allocate_shared_memory(gl.float32, [M, N], smem_layout, tile)
    out = smem.load(cols)
    cm = gl.arange(0, M, layout=gl.SliceLayout(1, cols))
    cn = gl.arange(0, N, layout=gl.SliceLayout(0, cols))
    gl.store(dst + cn[None, :] * M + cm[:, None], out)


@gluon.jit
def hopper_mma(a_ptr, b_ptr, c_ptr, BM: gl.constexpr, BN: gl.constexpr, BK: gl.constexpr):
    """One tile of A @ B through shared memory and wgmma: Hopper only."""
    blocked: gl.constexpr = gl.BlockedLayout([1, 8], [4, 8], [gl.num_warps(), 1], [1, 0])
    shared: gl.constexpr = gl.NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=16, rank=2)
    acc_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[gl.num_warps(), 1],
                                                          instr_shape=[16, BN, 16])
    rm = gl.arange(0, BM, layout=gl.SliceLayout(1, blocked))
    rk = gl.arange(0, BK, layout=gl.SliceLayout(0, blocked))
    rkr = gl.arange(0, BK, layout=gl.SliceLayout(1, blocked))
    rn = gl.arange(0, BN, layout=gl.SliceLayout(0, blocked))
    a_s = gl.allocate_shared_memory(gl.float16, [BM, BK], shared, gl.load(a_ptr + rm[:, None] * BK + rk[None, :]))
    b_s = gl.allocate_shared_memory(gl.float16, [BK, BN], shared, gl.load(b_ptr + rkr[:, None] * BN + rn[None, :]))
    fence_async_shared()
    acc = gl.zeros([BM, BN], gl.float32, acc_layout)
    acc = warpgroup_mma(a_s, b_s, acc, is_async=True)
    acc = warpgroup_mma_wait(num_outstanding=0, deps=[acc])
    acc = gl.convert_layout(acc, blocked)
    gl.store(c_ptr + rm[:, None] * BN + rn[None, :], acc.to(gl.float16))


@gluon.jit
def tma_copy(src_desc, dst_desc, BM: gl.constexpr, BN: gl.constexpr, STAGES: gl.constexpr):
    """STAGES tiles of BM x BN by TMA into shared buffers (an mbarrier each), then out by TMA: one bulk
    tensor load and one store per stage, unrolled."""
    smem = gl.allocate_shared_memory(gl.float16, [STAGES, BM, BN], src_desc.layout)
    bars = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    first = gl.program_id(0) * STAGES * BM
    for i in gl.static_range(STAGES):
        mbarrier.init(bars.index(i), count=1)
    for i in gl.static_range(STAGES):
        mbarrier.expect(bars.index(i), BM * BN * 2)
        _tma_load(src_desc, [first + i * BM, 0], bars.index(i), smem.index(i))
    for i in gl.static_range(STAGES):
        mbarrier.wait(bars.index(i), 0)
        _tma_store(dst_desc, [first + i * BM, 0], smem.index(i))
    tma.store_wait(0)


COPY = KernelSpec(name="gluon_copy", fn=copy, args={"src": Tensor("fp32"), "dst": Tensor("fp32"), "n": 4096},
                  configs=(Config("nvidia", {"BLOCK": 1024, "TPW": 32}, num_warps=4),
                           Config("cdna", {"BLOCK": 1024, "TPW": 64}, num_warps=4)))
TRANSPOSE = KernelSpec(name="gluon_transpose", fn=transpose_smem, args={"src": Tensor("fp32"), "dst": Tensor("fp32")},
                       configs=(Config("nvidia", {"M": 64, "N": 64, "TPW": 32}, num_warps=4),
                                Config("cdna", {"M": 64, "N": 64, "TPW": 64}, num_warps=4)))
HOPPER_MMA = KernelSpec(name="gluon_hopper_mma", fn=hopper_mma,
                        args={"a_ptr": Tensor("fp16"), "b_ptr": Tensor("fp16"), "c_ptr": Tensor("fp16")},
                        configs=(Config("default", {"BM": 64, "BN": 64, "BK": 64}, num_warps=4),))
_NO_TMA = {"gfx942": "TMA and mbarriers are NVIDIA's, Hopper and later"}
# The descriptors' block shape names the constexprs, so it follows the config (a 64 x 64 fp16 tile is
# 128 B a row: one TMA message a tile with the default 128-byte swizzle).
TMA_COPY = KernelSpec(name="gluon_tma_copy", fn=tma_copy,
                      args={"src_desc": TensorDesc("fp16", (4096, 64), ("BM", "BN")),
                            "dst_desc": TensorDesc("fp16", (4096, 64), ("BM", "BN"))},
                      configs=(Config("s2", {"BM": 64, "BN": 64, "STAGES": 2}, num_warps=4, not_for=_NO_TMA),
                               Config("s4", {"BM": 64, "BN": 64, "STAGES": 4}, num_warps=4, not_for=_NO_TMA)))


@gluon.jit
def tma_roundtrip(src_desc, dst_desc, BM: gl.constexpr, BN: gl.constexpr):
    """One BM x BN tile of the descriptors' own dtype by TMA into shared memory (in src_desc's layout) and
    out through dst_desc: any 8-, 16- or 32-bit dtype, any NVMMA layout the two share."""
    smem = gl.allocate_shared_memory(src_desc.dtype, [BM, BN], src_desc.layout)
    bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    mbarrier.init(bar, count=1)
    mbarrier.expect(bar, src_desc.block_type.nbytes)
    _tma_load(src_desc, [gl.program_id(0) * BM, 0], bar, smem)
    mbarrier.wait(bar, 0)
    mbarrier.invalidate(bar)
    _tma_store(dst_desc, [gl.program_id(0) * BM, 0], smem)
    tma.store_wait(0)


TMA_ROUNDTRIP = KernelSpec(name="gluon_tma_roundtrip", fn=tma_roundtrip,
                           args={"src_desc": TensorDesc("fp16", (4096, 64), ("BM", "BN")),
                                 "dst_desc": TensorDesc("fp16", (4096, 64), ("BM", "BN"))},
                           configs=(Config("default", {"BM": 64, "BN": 64}, num_warps=4, not_for=_NO_TMA),))
