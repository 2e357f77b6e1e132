"""Liger-Kernel ops (forward and backward) through its own autograd Functions, on CPU tensors (tests/test_capture.py)."""
import torch
from liger_kernel.ops.rms_norm import LigerRMSNormFunction
from liger_kernel.ops.swiglu import LigerSiLUMulFunction
from liger_kernel.ops.cross_entropy import LigerCrossEntropyFunction
from liger_kernel.ops.layer_norm import LigerLayerNormFunction
from liger_kernel.ops.rope import LigerRopeFunction

torch.manual_seed(0)
# CPU tensors without a GPU (irscope capture records, the JIT never executes); the GPU's when there is one.
torch.set_default_device("cuda" if torch.cuda.is_available() else "cpu")
def run(name, f):
    try:
        f(); print("ran", name)
    except Exception as e:
        print("FAILED", name, type(e).__name__, str(e)[:200])

def rms():
    x = torch.randn(4, 128, 256, requires_grad=True); w = torch.ones(256, requires_grad=True)
    y = LigerRMSNormFunction.apply(x, w, 1e-6); y.sum().backward()
def swiglu():
    a = torch.randn(4, 128, 512, requires_grad=True); b = torch.randn(4, 128, 512, requires_grad=True)
    LigerSiLUMulFunction.apply(a, b).sum().backward()
def ce():
    logits = torch.randn(64, 1000, requires_grad=True); t = torch.randint(0, 1000, (64,))
    out = LigerCrossEntropyFunction.apply(logits, t, None)
    loss = out[0] if isinstance(out, tuple) else out
    loss.backward()
def ln():
    x = torch.randn(64, 256, requires_grad=True); w = torch.ones(256, requires_grad=True); b = torch.zeros(256, requires_grad=True)
    LigerLayerNormFunction.apply(x, w, b, 1e-6).sum().backward()
def rope():
    q = torch.randn(2, 8, 64, 64, requires_grad=True); k = torch.randn(2, 4, 64, 64, requires_grad=True)
    cos = torch.randn(1, 64, 64); sin = torch.randn(1, 64, 64)
    qo, ko = LigerRopeFunction.apply(q, k, cos, sin)
    (qo.sum() + ko.sum()).backward()
for n, f in [("rms_norm", rms), ("swiglu", swiglu), ("cross_entropy", ce), ("layer_norm", ln), ("rope", rope)]:
    run(n, f)
