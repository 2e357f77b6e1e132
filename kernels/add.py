"""Vector add: `c = a + b`, the kernel the talk takes "four ways down to the metal"."""
import triton
import triton.language as tl

from irscope.spec import Config, KernelSpec, Tensor


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


SPEC = KernelSpec(
    name="add",
    fn=add_kernel,
    description="element-wise c = a + b over fp32 vectors",
    args={"x_ptr": Tensor("fp32"), "y_ptr": Tensor("fp32"), "out_ptr": Tensor("fp32"), "n_elements": 1 << 24},
    configs=(
        Config("default", {"BLOCK_SIZE": 1024}, num_warps=4),
        Config("b4096", {"BLOCK_SIZE": 4096}, num_warps=8, note="bigger blocks, more bytes in flight per program"),
    ),
)
