"""A held-out kernel for model 21 (docs/rank.md, "What records cost"): a LiDAR sweep's per-point preprocessing
over points stored as the sensor driver hands them, written and ranked before any of its configs ran on a GPU.

Each point is a record of 20 fp32 words (80 bytes): x, y, z at words 0-2, then the driver's per-return
fields (ring, time, ambient, reflectivity, range flags...) and, at word 8, the calibrated intensity. A program
takes BLOCK points and, for each, reads x, y, z and the intensity (4 loads whose lanes are 80 bytes apart: the
point's first 12 bytes and the 4 at byte 32), and writes the point's range and its intensity corrected for
range fall-off (r^2, clamped near the sensor) to two arrays of their own. It is not one of irscope's
built-in kernels: `irscope rank benchmarks/rank/lidar.yaml` loads it from this file, as a user's kernel is
loaded.
"""
import triton
import triton.language as tl

from irscope.spec import Config, KernelSpec, Tensor
from irscope.workload import Workload, cdiv, empty, randn

WORDS = 20  # fp32 words a point
INTENSITY = 8
NEAR = 0.5  # metres: the range below which the fall-off correction is clamped


@triton.jit
def lidar_kernel(pts_ptr, range_ptr, level_ptr, n, WORDS: tl.constexpr, INTENSITY: tl.constexpr,
                 NEAR: tl.constexpr, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    ok = i < n
    p = pts_ptr + i * WORDS
    x = tl.load(p, mask=ok, other=0.0)
    y = tl.load(p + 1, mask=ok, other=0.0)
    z = tl.load(p + 2, mask=ok, other=0.0)
    level = tl.load(p + INTENSITY, mask=ok, other=0.0)
    r2 = x * x + y * y + z * z
    tl.store(range_ptr + i, tl.sqrt(r2), mask=ok)
    tl.store(level_ptr + i, level * tl.maximum(r2, NEAR * NEAR), mask=ok)


SIZES = {"small": {"n": 1000}, "bench": {"n": 8_000_000}, "short": {"n": 1_000_000}}


def _build(size, gen, device):
    n = size["n"]
    return {"pts": randn(gen, (n, WORDS), "fp32", device, scale=10.0), "range": empty((n,), "fp32", device),
            "level": empty((n,), "fp32", device)}


def _launch(x, size, p):
    n = size["n"]
    return [p.call((cdiv(n, p["BLOCK"]),), x["pts"], x["range"], x["level"], n)]


def _reference(x, size):
    import torch
    p = x["pts"].double()
    r2 = (p[:, :3] ** 2).sum(1)
    return {"range": r2.sqrt(), "level": p[:, INTENSITY] * torch.clamp(r2, min=NEAR * NEAR)}


WORKLOAD = Workload(sizes=SIZES, build=_build, outputs=("range", "level"), launch=_launch, reference=_reference,
                    flops=lambda s: 10 * s["n"], bytes=lambda s: s["n"] * (4 + 2) * 4)

SPECS = [KernelSpec(name="lidar", fn=lidar_kernel,
                    description="a LiDAR sweep's per-point range and range-corrected intensity, from points "
                                "stored as 20-word fp32 records",
                    args={"pts_ptr": Tensor("fp32"), "range_ptr": Tensor("fp32"), "level_ptr": Tensor("fp32"),
                          "n": 8_000_000},
                    constexprs={"WORDS": WORDS, "INTENSITY": INTENSITY, "NEAR": NEAR},
                    configs=(Config("default", {"BLOCK": 256}, num_warps=4),),
                    workload=WORKLOAD)]
