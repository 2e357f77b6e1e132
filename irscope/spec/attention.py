"""The workload the attention kernel files share: inputs, the torch reference, SDPA baselines and the cost.

kernels/attention.py (Triton) and kernels/attention_ws.py (Gluon, Hopper only) compute the same function
of the same contiguous (Z, H, N_CTX, HEAD_DIM) tensors; only their sizes, dtypes and launches differ. So
they check against one reference and are timed against the same baselines, kept here once rather than
in each file, where the two copies could drift apart.

torch is imported inside functions only, as everywhere in irscope/spec.
"""
from __future__ import annotations

import math
from typing import Mapping, Sequence

from .workload import Baseline, Builder, Launcher, Reference, Size, Workload, empty, randn


def attention_workload(*, sizes: Mapping[str, Size], dtype: str, causal: bool, launch: Launcher,
                       check_sizes: Sequence[str]) -> Workload:
    """The Workload of an attention forward kernel over sizes with dimensions z, h, n, d."""
    share = 0.5 if causal else 1.0
    return Workload(
        sizes=sizes, build=attention_inputs(dtype), outputs=("o",), launch=launch,
        reference=attention_reference(causal), check_sizes=tuple(check_sizes),
        # two matmuls of 2*n*n*d each per head; causal does half of them
        flops=lambda s: share * 4 * s["z"] * s["h"] * s["n"] * s["n"] * s["d"],
        bytes=lambda s: 4 * 2 * s["z"] * s["h"] * s["n"] * s["d"],
        baselines=sdpa_baselines(causal))


def attention_inputs(dtype: str) -> Builder:
    """Random q, k, v and an output o, each (z, h, n, d) in `dtype`."""
    def build(size, gen, device):
        shape = (size["z"], size["h"], size["n"], size["d"])
        return {"q": randn(gen, shape, dtype, device), "k": randn(gen, shape, dtype, device),
                "v": randn(gen, shape, dtype, device), "o": empty(shape, dtype, device)}
    return build


def attention_reference(causal: bool) -> Reference:
    """softmax(Q K^T / sqrt(d)) V in fp32, per (batch, head), with the causal mask when asked."""
    def reference(x, size):
        import torch
        q, k, v = (x[name].float().flatten(0, 1) for name in "qkv")
        bh, n, d = q.shape
        out = torch.empty_like(q)
        chunk = max(1, (1 << 26) // (n * n))  # keep the score matrices under ~256 MB
        mask = torch.ones(n, n, dtype=torch.bool, device=q.device).tril() if causal else None
        for i in range(0, bh, chunk):
            s = q[i:i + chunk] @ k[i:i + chunk].transpose(1, 2) / math.sqrt(d)
            if mask is not None:
                s = s.masked_fill(~mask, float("-inf"))
            out[i:i + chunk] = torch.softmax(s, dim=-1) @ v[i:i + chunk]
        return {"o": out.view(x["q"].shape)}
    return reference


def sdpa_baselines(causal: bool) -> dict[str, Baseline]:
    """PyTorch's scaled_dot_product_attention pinned to its flash and its cuDNN backend: what a user
    would run instead (the names are those `irscope run` prints)."""
    return {"sdpa flash": sdpa_baseline("FLASH_ATTENTION", causal),
            "sdpa cudnn": sdpa_baseline("CUDNN_ATTENTION", causal)}


def sdpa_baseline(backend: str, causal: bool) -> Baseline:
    """One SDPA backend (a name of torch.nn.attention.SDPBackend) as a baseline."""
    def baseline(x, size):
        import torch.nn.functional as F
        from torch.nn.attention import SDPBackend, sdpa_kernel
        chosen = getattr(SDPBackend, backend)

        def run():
            with sdpa_kernel(chosen):
                return F.scaled_dot_product_attention(x["q"], x["k"], x["v"], is_causal=causal)
        return run
    return baseline
