"""A third-party autotuned kernel through its library's own wrapper, for `irscope capture`.

flash-linear-attention's core ops (`fla-core` 0.6.0 on PyPI, pure Python; needs `einops` and `packaging`):
`fla.ops.common.chunk_h.chunk_fwd_h`, the chunked linear-attention state recurrence every chunk_* op of
FLA (gla, simple_gla, retention, delta rule...) runs forward. It launches `chunk_fwd_kernel_h`, wrapped in
`@triton.heuristics` over `@triton.autotune` with 48 configs (BK x BV in {32, 64}^2 on a GPU with >= 100 KB
of shared memory, num_warps 1/2/4/8, num_stages 2/3/4), key ['BT', 'USE_G', 'USE_GK', 'USE_GV',
'STATE_V_FIRST', 'K', 'V'], grid `cdiv(K, BK) * cdiv(V, BV) * N * H` (one program per state tile per head).

FLA picks its config list at import from the device (`check_shared_mem()`: [32, 64] on a GPU, [16, 32]
without one) and asks torch.cuda for the device name and capability, so without a GPU run this under
`irscope capture --as sm_90a` (the H200's sm_90a, same shared memory as the emulated H100): the 48
launches are then those the H200 benchmarks. The sizes and the library call are those of
benchmarks/autotune_timings.py, which times each config on the GPU.

    irscope capture --as sm_90a --no-compile --target sm_90a --out cap -- python tests/capture_programs/autotuned_lib.py [B=1,T=16384]
"""
import os
import sys

# FLA passes cache_results=True to every autotuner by default: a timing cached on disk by an earlier run
# would skip the benchmark, and with it every config but the cached best one.
os.environ.setdefault("FLA_CACHE_RESULTS", "0")

import torch  # noqa: E402

from fla.ops.common.chunk_h import chunk_fwd_h  # noqa: E402

# B sequences of T tokens, H heads, head dims K = V = 128, bf16 (FLA's usual training shapes), chunk 64;
# another size as `B=1,T=16384` on the command line.
SIZE = {"B": 8, "T": 4096, "H": 16, "K": 128, "V": 128}
for arg in sys.argv[1:]:
    SIZE.update({k: int(v) for k, v in (kv.split("=") for kv in arg.split(","))})
B, T, H, K, V = (SIZE[n] for n in "BTHKV")
DTYPE = torch.bfloat16
device = "cuda" if torch.cuda.is_available() else "cpu"  # "cuda" under --as (made on the CPU there)

torch.manual_seed(0)
k = torch.randn(B, T, H, K, device=device, dtype=DTYPE) / K ** 0.5
v = torch.randn(B, T, H, V, device=device, dtype=DTYPE)
h, ht = chunk_fwd_h(k, v, output_final_state=True, chunk_size=64)
print("chunk_fwd_h", tuple(k.shape), "->", tuple(h.shape), tuple(ht.shape), h.dtype)
