"""Liger-Kernel's fused gate/up GEMM with SwiGLU through its own `liger_kernel.ops.mlp.gemm_swiglu`, for
`irscope rank LAUNCHES.json` against the library's autotuner (docs/rank.md): `_swiglu_kernel_forward` on
host-side TensorDescriptors whose block shapes its configs' pre_hooks set, at the size
benchmarks/autotune_timings.py times (`--kernel liger_mlp`): x 4 x 2,048 x 4,096 against two
11,008 x 4,096 weights, bf16.

    irscope capture --as sm_90a --no-compile --out OUT -- python tests/capture_programs/liger_mlp.py

Liger-Kernel comes with `pip install -e ".[capture]"` (docs/capture.md)."""
import sys

import torch

from liger_kernel.ops import mlp

if __name__ == "__main__":
    b, s, dim, hidden = (int(v) for v in (sys.argv[1:] or ["4x2048x4096x11008"])[0].split("x"))
    torch.manual_seed(0)
    x = torch.randn(b, s, dim, dtype=torch.bfloat16, device="cuda")
    wg = torch.randn(hidden, dim, dtype=torch.bfloat16, device="cuda") / dim ** 0.5
    wu = torch.randn(hidden, dim, dtype=torch.bfloat16, device="cuda") / dim ** 0.5
    agu, _best = mlp.gemm_swiglu(x, wg, wu, 1.0, store_preact=True)
    print("liger gemm_swiglu", b, "x", s, "x", dim, "->", tuple(agu.shape))
