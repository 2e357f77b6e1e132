"""A program written for a GPU that checks its own result, for tests/test_capture_emulate.py: it refuses to
run without CUDA, puts its tensors on "cuda", picks its block from the compute capability, sizes a
persistent grid by the SM count, and then asserts that the kernel wrote out = 2 * x. So it passes only
where the kernel really ran: on a GPU, or under `irscope capture --as TARGET --execute` (the emulated
device, Triton's interpreter); a record-mode capture leaves `out` as the program allocated it."""
import sys

import torch
import triton
import triton.language as tl

if not torch.cuda.is_available():
    raise SystemExit("this program needs a CUDA GPU")


@triton.jit
def persistent_double(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    for start in range(tl.program_id(0) * BLOCK, n, tl.num_programs(0) * BLOCK):
        offs = start + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2, mask=mask)


major, _ = torch.cuda.get_device_capability()
sms = torch.cuda.get_device_properties(0).multi_processor_count
block = 128 if major >= 9 else 64
x = torch.randn(40_000, device="cuda")  # more than one block a program, and not a multiple of the block
out = torch.zeros_like(x)
persistent_double[(sms,)](x, out, x.numel(), BLOCK=block)
torch.cuda.synchronize()
if not torch.equal(out, x * 2):
    print(f"wrong result: {int((out != x * 2).sum())} of {x.numel()} elements differ", file=sys.stderr)
    raise SystemExit(3)
print(f"checked: out == 2 * x with {sms} programs of {block} on {torch.cuda.get_device_name()}")
