"""Gluon kernels as a program launches them (tests/test_capture_gluon.py): one defined inside a function,
a TMA copy through descriptors with a swizzle that is not Gluon's default for the block, and a descriptor
whose layout is transposed (K-major), used for its shared layout. Runs on CPU tensors under capture."""
import torch
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import mbarrier, tma
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor


@gluon.jit
def tma_roundtrip(src_desc, dst_desc, BM: gl.constexpr, BN: gl.constexpr):
    smem = gl.allocate_shared_memory(src_desc.dtype, [BM, BN], src_desc.layout)
    bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    mbarrier.init(bar, count=1)
    mbarrier.expect(bar, src_desc.block_type.nbytes)
    tma.async_load(src_desc, [gl.program_id(0) * BM, 0], bar, smem)
    mbarrier.wait(bar, 0)
    mbarrier.invalidate(bar)
    tma.async_store(dst_desc, [gl.program_id(0) * BM, 0], smem)
    tma.store_wait(0)


@gluon.jit
def through_shared(x_ptr, out_ptr, layout_desc, BM: gl.constexpr, BN: gl.constexpr):
    blocked: gl.constexpr = gl.BlockedLayout([1, 8], [4, 8], [gl.num_warps(), 1], [1, 0])
    rm = gl.arange(0, BM, layout=gl.SliceLayout(1, blocked))
    rn = gl.arange(0, BN, layout=gl.SliceLayout(0, blocked))
    offs = rm[:, None] * BN + rn[None, :]
    smem = gl.allocate_shared_memory(layout_desc.dtype, [BM, BN], layout_desc.layout, gl.load(x_ptr + offs))
    gl.store(out_ptr + offs, smem.load(blocked))


def make_add():
    @gluon.jit
    def inner_add(x_ptr, out_ptr, n, BLOCK: gl.constexpr):
        layout: gl.constexpr = gl.BlockedLayout([4], [32], [gl.num_warps()], [0])
        offs = gl.program_id(0) * BLOCK + gl.arange(0, BLOCK, layout=layout)
        mask = offs < n
        gl.store(out_ptr + offs, gl.load(x_ptr + offs, mask=mask) + 1.0, mask=mask)
    return inner_add


if __name__ == "__main__":
    x, y = torch.randn(4096), torch.empty(4096)
    make_add()[(4,)](x, y, 4096, BLOCK=1024, num_warps=4)
    t = torch.randn(256, 64, dtype=torch.float16)
    o = torch.empty_like(t)
    narrow = gl.NVMMASharedLayout(swizzle_byte_width=64, element_bitwidth=16, rank=2)  # the default is 128
    tma_roundtrip[(4,)](TensorDescriptor.from_tensor(t, [64, 64], narrow), TensorDescriptor.from_tensor(o, [64, 64], narrow),
                        BM=64, BN=64, num_warps=4)
    k_major = gl.NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=16, rank=2, transposed=True)
    through_shared[(1,)](t, o, TensorDescriptor.from_tensor(t, [64, 64], k_major), BM=64, BN=64, num_warps=4)
    print("gluon program done")
