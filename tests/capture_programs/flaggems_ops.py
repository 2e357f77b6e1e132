"""FlagGems ops, forward and backward, for `irscope capture` (tests/test_capture_flaggems.py, docs/capture.md).

FlagGems generates its pointwise kernels at run time (Python source written into its code cache and
imported) and, on Hopper, multiplies through host-side TensorDescriptors (`mm_kernel_general_host_tma`).
It asks torch.cuda for its device, so without a GPU run this under `irscope capture --as sm_90a`; on a
GPU run it as it is. The tensors are "cuda" ones either way (the emulation makes them on the CPU).
"""
import os
import sys
import tempfile

# FlagGems' own settings: its vendor without probing nvidia-smi, and a fresh cache folder so the kernels
# are generated in this run and no earlier autotune result is reused.
os.environ.setdefault("GEMS_VENDOR", "nvidia")
os.environ.setdefault("FLAGGEMS_CACHE_DIR", tempfile.mkdtemp(prefix="flaggems-cache-"))

import torch  # noqa: E402

import flag_gems  # noqa: E402

# FlagGems' autotuners offer long menus (the Hopper matmul 200-odd configs, the layer-norm backward a
# dozen): the real autotuning on a GPU would compile every one. Each keeps the first MENU entries of its
# own menu, here and on the GPU alike; the kernels, their pre_hooks and the specialisation are FlagGems'.
MENU = int(os.environ.get("FLAGGEMS_MENU", "2"))


def short_menus(n):
    from flag_gems.utils.libentry import LibEntry
    from triton.runtime import Autotuner
    root = os.path.dirname(flag_gems.__file__)  # its arch modules are imported as "hopper.ops.mm"
    for module in list(sys.modules.values()):
        if not (getattr(module, "__file__", None) or "").startswith(root):
            continue
        for value in list(vars(module).values()):
            if isinstance(value, LibEntry) and isinstance(value.fn, Autotuner):
                value.fn.configs = value.fn.configs[:n]


short_menus(MENU)
torch.manual_seed(0)
dev = "cuda"


def run(name, f):
    try:
        f()
        print("ran", name)
    except Exception as e:  # noqa: BLE001 - report and go on to the next op
        print("FAILED", name, type(e).__name__, str(e)[:300])


def pointwise():
    x = torch.randn(1024, 1024, device=dev, dtype=torch.float16)
    y = torch.randn(1024, 1024, device=dev, dtype=torch.float16)
    flag_gems.add(x, y)
    flag_gems.mul(x, y)


def gelu():
    x = torch.randn(1024, 1024, device=dev, dtype=torch.bfloat16)
    g = torch.randn_like(x)
    flag_gems.gelu(x)
    flag_gems.gelu_backward(g, x)


def silu():
    x = torch.randn(4096, 256, device=dev, dtype=torch.float16)
    flag_gems.silu(x)
    flag_gems.silu_backward(torch.randn_like(x), x)


def matmul():
    a = torch.randn(512, 256, device=dev, dtype=torch.float16)
    b = torch.randn(256, 384, device=dev, dtype=torch.float16)
    c = flag_gems.mm(a, b)
    g = torch.randn_like(c)
    flag_gems.mm(g, b.t())  # backward: dA = dC @ B^T (B^T column-major)
    flag_gems.mm(a.t(), g)  # backward: dB = A^T @ dC (A^T column-major)


def softmax():
    x = torch.randn(256, 1024, device=dev, dtype=torch.float32)
    y = flag_gems.softmax(x, -1)
    flag_gems.softmax_backward(torch.randn_like(y), y, -1, x.dtype)


def layer_norm():
    x = torch.randn(256, 1024, device=dev, dtype=torch.float16)
    w = torch.ones(1024, device=dev, dtype=torch.float16)
    b = torch.zeros(1024, device=dev, dtype=torch.float16)
    y, mean, rstd = flag_gems.layer_norm(x, [1024], w, b, 1e-5)
    flag_gems.layer_norm_backward(torch.randn_like(y), x, [1024], mean, rstd, w, b, [True, True, True])


for n, f in [("pointwise", pointwise), ("gelu", gelu), ("silu", silu), ("mm", matmul), ("softmax", softmax),
             ("layer_norm", layer_norm)]:
    run(n, f)
print("flag_gems", flag_gems.__version__)
