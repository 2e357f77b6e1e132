"""A second held-out kernel for model 21 (docs/rank.md, "Model 21"): one explicit step of a particle system
whose particles are stored as four float4s each, as a graphics engine's vertex-style buffers hold them,
written and ranked before any of its configs ran on a GPU.

Each particle is a record of 16 fp32 words (64 bytes, a power of two): position x, y, z, w at words 0-3,
velocity at 4-7, colour at 8-11, age, life, size and seed at 12-15. A program takes BLOCK particles and, for
each, reads the position's and the velocity's x, y, z (6 loads whose lanes are 64 bytes apart: one 32-byte
sector a particle, every other sector of the buffer), applies gravity and drag for one time step, and writes
the new position and velocity to arrays of their own (n x 3 each). It is not one of irscope's built-in
kernels: `irscope rank benchmarks/rank/particles.yaml` loads it from this file, as a user's kernel is loaded.
"""
import triton
import triton.language as tl

from irscope.spec import Config, KernelSpec, Tensor
from irscope.workload import Workload, cdiv, empty, randn

WORDS = 16  # fp32 words a particle
DT, DRAG, GRAVITY = 0.01, 0.1, -9.81


@triton.jit
def particles_kernel(p_ptr, pos_ptr, vel_ptr, n, WORDS: tl.constexpr, DT: tl.constexpr, DRAG: tl.constexpr,
                     GRAVITY: tl.constexpr, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    ok = i < n
    rec = p_ptr + i * WORDS
    x = tl.load(rec, mask=ok, other=0.0)
    y = tl.load(rec + 1, mask=ok, other=0.0)
    z = tl.load(rec + 2, mask=ok, other=0.0)
    vx = tl.load(rec + 4, mask=ok, other=0.0)
    vy = tl.load(rec + 5, mask=ok, other=0.0)
    vz = tl.load(rec + 6, mask=ok, other=0.0)
    keep = 1.0 - DRAG * DT
    vx = vx * keep
    vy = vy * keep + GRAVITY * DT
    vz = vz * keep
    out = i * 3
    tl.store(pos_ptr + out, x + vx * DT, mask=ok)
    tl.store(pos_ptr + out + 1, y + vy * DT, mask=ok)
    tl.store(pos_ptr + out + 2, z + vz * DT, mask=ok)
    tl.store(vel_ptr + out, vx, mask=ok)
    tl.store(vel_ptr + out + 1, vy, mask=ok)
    tl.store(vel_ptr + out + 2, vz, mask=ok)


SIZES = {"small": {"n": 1000}, "bench": {"n": 8_000_000}, "short": {"n": 1_000_000}}


def _build(size, gen, device):
    n = size["n"]
    return {"p": randn(gen, (n, WORDS), "fp32", device), "pos": empty((n, 3), "fp32", device),
            "vel": empty((n, 3), "fp32", device)}


def _launch(x, size, p):
    n = size["n"]
    return [p.call((cdiv(n, p["BLOCK"]),), x["p"], x["pos"], x["vel"], n)]


def _reference(x, size):
    p = x["p"].double()
    keep = 1.0 - DRAG * DT
    vel = p[:, 4:7] * keep
    vel[:, 1] += GRAVITY * DT
    return {"pos": p[:, 0:3] + vel * DT, "vel": vel}


WORKLOAD = Workload(sizes=SIZES, build=_build, outputs=("pos", "vel"), launch=_launch, reference=_reference,
                    flops=lambda s: 15 * s["n"], bytes=lambda s: s["n"] * (6 + 6) * 4)

SPECS = [KernelSpec(name="particles", fn=particles_kernel,
                    description="one explicit step of a particle system stored as four float4s a particle",
                    args={"p_ptr": Tensor("fp32"), "pos_ptr": Tensor("fp32"), "vel_ptr": Tensor("fp32"),
                          "n": 8_000_000},
                    constexprs={"WORDS": WORDS, "DT": DT, "DRAG": DRAG, "GRAVITY": GRAVITY},
                    configs=(Config("default", {"BLOCK": 256}, num_warps=4),),
                    workload=WORKLOAD)]
