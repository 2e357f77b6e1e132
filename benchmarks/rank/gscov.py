"""A held-out kernel for model 20 (docs/rank.md, "Model 19's held-out check"): the per-Gaussian preprocessing of
3-D Gaussian splatting, over parameters stored one Gaussian after another, written and ranked before any of
its configs ran on a GPU.

Each Gaussian's 59 fp32 parameters sit together (position 3, spherical harmonics 48, opacity 1, log-scale 3,
rotation quaternion 4), as a scene file stores them. A program takes BLOCK Gaussians and, for each, reads its
opacity, scales and quaternion (8 loads whose lanes are 59 words, 236 bytes, apart), builds the 3-D covariance
R S S^T R^T from the normalised quaternion and the exponentiated scales, and writes its 6 unique entries
(6 stores 24 bytes apart) and its activated opacity. Every lane of a load falls in a bank of its own and a
line of its own: the access model 20 prices by the L1's line lookups, model 19 by its banks (one pass) and
models 17-18 as contiguous. It is not one of irscope's built-in kernels: `irscope rank
benchmarks/rank/gscov.yaml` loads it from this file, as a user's kernel is loaded.
"""
import triton
import triton.language as tl

from irscope.spec import Config, KernelSpec, Tensor
from irscope.workload import Workload, cdiv, empty, randn

FIELDS = 59  # fp32 parameters a Gaussian
OPACITY, SCALE, ROT = 51, 52, 55


@triton.jit
def gscov_kernel(p_ptr, cov_ptr, alpha_ptr, n, FIELDS: tl.constexpr, OPACITY: tl.constexpr, SCALE: tl.constexpr,
                 ROT: tl.constexpr, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    ok = i < n
    g = p_ptr + i * FIELDS
    sx = tl.exp(tl.load(g + SCALE, mask=ok, other=0.0))
    sy = tl.exp(tl.load(g + SCALE + 1, mask=ok, other=0.0))
    sz = tl.exp(tl.load(g + SCALE + 2, mask=ok, other=0.0))
    qw = tl.load(g + ROT, mask=ok, other=1.0)
    qx = tl.load(g + ROT + 1, mask=ok, other=0.0)
    qy = tl.load(g + ROT + 2, mask=ok, other=0.0)
    qz = tl.load(g + ROT + 3, mask=ok, other=0.0)
    norm = tl.rsqrt(qw * qw + qx * qx + qy * qy + qz * qz)
    qw, qx, qy, qz = qw * norm, qx * norm, qy * norm, qz * norm
    # R, then M = R S (each column scaled), then the covariance M M^T
    m00 = (1 - 2 * (qy * qy + qz * qz)) * sx
    m01 = (2 * (qx * qy - qw * qz)) * sy
    m02 = (2 * (qx * qz + qw * qy)) * sz
    m10 = (2 * (qx * qy + qw * qz)) * sx
    m11 = (1 - 2 * (qx * qx + qz * qz)) * sy
    m12 = (2 * (qy * qz - qw * qx)) * sz
    m20 = (2 * (qx * qz - qw * qy)) * sx
    m21 = (2 * (qy * qz + qw * qx)) * sy
    m22 = (1 - 2 * (qx * qx + qy * qy)) * sz
    c = cov_ptr + i * 6
    tl.store(c, m00 * m00 + m01 * m01 + m02 * m02, mask=ok)
    tl.store(c + 1, m00 * m10 + m01 * m11 + m02 * m12, mask=ok)
    tl.store(c + 2, m00 * m20 + m01 * m21 + m02 * m22, mask=ok)
    tl.store(c + 3, m10 * m10 + m11 * m11 + m12 * m12, mask=ok)
    tl.store(c + 4, m10 * m20 + m11 * m21 + m12 * m22, mask=ok)
    tl.store(c + 5, m20 * m20 + m21 * m21 + m22 * m22, mask=ok)
    tl.store(alpha_ptr + i, tl.sigmoid(tl.load(g + OPACITY, mask=ok, other=0.0)), mask=ok)


SIZES = {"small": {"n": 1000}, "bench": {"n": 4_000_000}, "short": {"n": 500_000}}


def _build(size, gen, device):
    n = size["n"]
    return {"p": randn(gen, (n, FIELDS), "fp32", device, scale=0.5), "cov": empty((n, 6), "fp32", device),
            "alpha": empty((n,), "fp32", device)}


def _launch(x, size, p):
    n = size["n"]
    return [p.call((cdiv(n, p["BLOCK"]),), x["p"], x["cov"], x["alpha"], n)]


def _reference(x, size):
    import torch
    p = x["p"].double()
    s = torch.exp(p[:, SCALE:SCALE + 3])
    q = p[:, ROT:ROT + 4]
    q = q / q.norm(dim=1, keepdim=True)
    w, a, b, c = q.unbind(1)
    r = torch.stack([1 - 2 * (b * b + c * c), 2 * (a * b - w * c), 2 * (a * c + w * b),
                     2 * (a * b + w * c), 1 - 2 * (a * a + c * c), 2 * (b * c - w * a),
                     2 * (a * c - w * b), 2 * (b * c + w * a), 1 - 2 * (a * a + b * b)], 1).reshape(-1, 3, 3)
    m = r * s[:, None, :]
    sigma = m @ m.transpose(1, 2)
    iu = [(0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2)]
    return {"cov": torch.stack([sigma[:, i, j] for i, j in iu], 1), "alpha": torch.sigmoid(p[:, OPACITY])}


WORKLOAD = Workload(sizes=SIZES, build=_build, outputs=("cov", "alpha"), launch=_launch, reference=_reference,
                    flops=lambda s: 90 * s["n"], bytes=lambda s: s["n"] * (8 + 6 + 1) * 4)

SPECS = [KernelSpec(name="gscov", fn=gscov_kernel,
                    description="3-D Gaussian splatting's preprocessing: each Gaussian's covariance and opacity "
                                "from its 59 fp32 parameters, stored one Gaussian after another",
                    args={"p_ptr": Tensor("fp32"), "cov_ptr": Tensor("fp32"), "alpha_ptr": Tensor("fp32"),
                          "n": 4_000_000},
                    constexprs={"FIELDS": FIELDS, "OPACITY": OPACITY, "SCALE": SCALE, "ROT": ROT},
                    configs=(Config("default", {"BLOCK": 256}, num_warps=4),),
                    workload=WORKLOAD)]
