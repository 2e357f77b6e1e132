"""A program written for a GPU, for tests/test_capture_emulate.py: it refuses to run without CUDA, puts its
tensors on "cuda", picks its block from the compute capability, sizes its grid by the SM count, enters
torch.cuda.device() around the launch and gives its kernel a host-side TensorDescriptor."""
import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

if not torch.cuda.is_available():
    raise SystemExit("this program needs a CUDA GPU")


@triton.jit
def persistent_copy(x_desc, out_ptr, n_tiles, BLOCK: tl.constexpr):
    for tile in range(tl.program_id(0), n_tiles, tl.num_programs(0)):
        v = x_desc.load([tile * BLOCK, 0])
        offs = (tile * BLOCK + tl.arange(0, BLOCK))[:, None] * BLOCK + tl.arange(0, BLOCK)[None, :]
        tl.store(out_ptr + offs, v)


major, minor = torch.cuda.get_device_capability()
props = torch.cuda.get_device_properties(torch.cuda.current_device())
block = 64 if major >= 9 else 32
x = torch.randn(4096, block, device="cuda", dtype=torch.float16)
out = torch.empty_like(x)
desc = TensorDescriptor.from_tensor(x, [block, block])
with torch.cuda.device(x.device):
    persistent_copy[(props.multi_processor_count,)](desc, out, x.shape[0] // block, BLOCK=block)
torch.cuda.synchronize()
print("launched on", torch.cuda.get_device_name(), "with", props.multi_processor_count, "programs")
