"""FlagGems' Hopper matmul through its own `flag_gems.mm`, for `irscope rank LAUNCHES.json` against the
library's autotuner (docs/rank.md): `mm_kernel_general_host_tma` (host-side TensorDescriptors, their
blocks set by the configs' pre_hook) and its whole menu, BLOCK_M 32-256 x BLOCK_N 32-128 x BLOCK_K
32-128 x 2-4 stages x 4/8 warps, less what FlagGems' own shared-memory estimate drops on the device.

    irscope capture --as sm_90a --no-compile --out OUT -- python tests/capture_programs/flaggems_mm.py 4096x4096x4096

FlagGems is installed with `pip install --no-deps flag-gems==5.0.2 sqlalchemy==2.0.48` (docs/capture.md).
Under `--as sm_90a` its vendor is set here and its cache folder is fresh (no earlier tuning reused)."""
import os
import sys
import tempfile

os.environ.setdefault("GEMS_VENDOR", "nvidia")
os.environ.setdefault("FLAGGEMS_CACHE_DIR", tempfile.mkdtemp(prefix="flaggems-cache-"))

import torch  # noqa: E402

import flag_gems  # noqa: E402

if __name__ == "__main__":
    m, n, k = (int(v) for v in (sys.argv[1:] or ["4096x4096x4096"])[0].split("x"))
    a = torch.randn(m, k, dtype=torch.bfloat16, device="cuda")
    b = torch.randn(k, n, dtype=torch.bfloat16, device="cuda")
    c = flag_gems.mm(a, b)
    print("flag_gems.mm", m, "x", n, "x", k, "->", tuple(c.shape))
