"""A kernel generated at run time as FlagGems generates its pointwise kernels: its source (a copy of the
scalar function and a kernel calling it) is written to a cache folder, loaded from there without entering
sys.modules, and then handed the scalar function's module globals and the real scalar function
(tests/test_capture_sources.py)."""
import importlib.util
import inspect
import os
import sys
import tempfile

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_helpers  # noqa: E402

scalar = gen_helpers.twice._scalar_fn
code = f'''import triton
import triton.language as tl


@triton.jit
{scalar.src}

@triton.jit
def twice_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, twice(tl.load(x_ptr + offs, mask=offs < n)), mask=offs < n)
'''
path = os.path.join(tempfile.mkdtemp(prefix="generated-kernels-"), "twice_kernel_gen.py")
with open(path, "w") as f:
    f.write(code)
spec = importlib.util.spec_from_file_location("_gen_twice_module", path)
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
module.__dict__.update(scalar.__globals__)  # FACTOR and friends, as FlagGems does
module.__dict__["twice"] = scalar
x = torch.randn(1000)
module.twice_kernel[(4,)](x, torch.empty_like(x), x.numel(), BLOCK=256)
print("launched", inspect.getsourcefile(module.twice_kernel.fn))
