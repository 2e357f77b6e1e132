"""Kernels for the analyzer tests: the instructions the built-in kernels never reach (TMA, warp specialisation)."""
import triton
import triton.language as tl

from irscope.spec import Config, KernelSpec, Tensor


@triton.jit
def tma_matmul(a_ptr, b_ptr, c_ptr, M, N, K,
               BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, WARP_SPECIALIZE: tl.constexpr):
    # Tensor descriptors made in the kernel: loads and stores become TMA (cp.async.bulk.tensor).
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BLOCK_M, BLOCK_K])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[K, N], strides=[N, 1], block_shape=[BLOCK_K, BLOCK_N])
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[N, 1], block_shape=[BLOCK_M, BLOCK_N])
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in tl.range(0, tl.cdiv(K, BLOCK_K), warp_specialize=WARP_SPECIALIZE):
        a = a_desc.load([pid_m * BLOCK_M, k * BLOCK_K])
        b = b_desc.load([k * BLOCK_K, pid_n * BLOCK_N])
        acc = tl.dot(a, b, acc)
    c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], acc.to(tl.float16))


TMA_MATMUL = KernelSpec(
    name="tma_matmul", fn=tma_matmul,
    args={"a_ptr": Tensor("fp16"), "b_ptr": Tensor("fp16"), "c_ptr": Tensor("fp16"), "M": 4096, "N": 4096, "K": 4096},
    configs=(Config("default", {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "WARP_SPECIALIZE": False},
                    num_warps=4, num_stages=3),
             Config("ws", {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "WARP_SPECIALIZE": True},
                    num_warps=4, num_stages=3)),
)
