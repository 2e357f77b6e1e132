"""Kernels under Triton's runtime wrappers, for tests/test_autotune.py: @triton.autotune, @triton.heuristics,
both stacked in either order, and an autotuner with prune_configs_by. Tiny, so compiles stay fast."""
import triton
import triton.language as tl

from irscope.spec import KernelSpec, Tensor


def _zero_out(nargs):  # a pre_hook: irscope never launches, so it must never be called
    raise AssertionError("irscope ran a config's pre_hook")


@triton.autotune(
    configs=[
        triton.Config({"BLOCK": 128}, num_warps=4, num_stages=3),
        triton.Config({"BLOCK": 256}, num_warps=2, num_stages=2, num_ctas=1, maxnreg=128, pre_hook=_zero_out),
    ],
    key=["n"],
)
@triton.jit
def tuned(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2, mask=mask)


@triton.heuristics({
    "BLOCK": lambda args: triton.next_power_of_2(args["n"]),
    "EVEN": lambda args: args["n"] % args["BLOCK"] == 0,  # reads the heuristic computed before it
    "HALF": lambda args: str(args["x_ptr"].dtype) == "torch.float16",
    "num_warps": lambda args: 2 if args["n"] < 2048 else 4,  # a launch option, not a constexpr
})
@triton.jit
def heuristic(x_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr, HALF: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    if EVEN:
        x = tl.load(x_ptr + offs)
    else:
        x = tl.load(x_ptr + offs, mask=offs < n)
    if HALF:
        x = x * 2
    tl.store(x_ptr + offs, x, mask=offs < n)


@triton.heuristics({"BIG": lambda args: args["x_ptr"].shape[0] > 4096})
@triton.jit
def reads_shape(x_ptr, BIG: tl.constexpr):
    tl.store(x_ptr, 1.0 if BIG else 0.0)


# autotune above heuristics: the heuristic sees the chosen config's BLOCK and num_warps.
@triton.autotune(configs=[triton.Config({"BLOCK": 64}, num_warps=1), triton.Config({"BLOCK": 96}, num_warps=2)],
                 key=["n"])
@triton.heuristics({"EVEN": lambda args: args["n"] % args["BLOCK"] == 0,
                    "WIDE": lambda args: args["num_warps"] > 1})
@triton.jit
def tuned_then_heuristic(x_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr, WIDE: tl.constexpr):
    offs = tl.arange(0, 128)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs) + (BLOCK if EVEN else 0) + (1 if WIDE else 0))


# heuristics above autotune: the heuristic runs before a config is chosen and sees none of its values.
@triton.heuristics({"STEP": lambda args: 4 if args["n"] > 1000 else 1,
                    "SAW_BLOCK": lambda args: "BLOCK" in args})
@triton.autotune(configs=[triton.Config({"BLOCK": 32}, num_warps=1), triton.Config({"BLOCK": 64}, num_warps=1)],
                 key=["n"])
@triton.jit
def heuristic_then_tuned(x_ptr, n, BLOCK: tl.constexpr, STEP: tl.constexpr, SAW_BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs) + STEP + (1 if SAW_BLOCK else 0))


# Wrong on purpose: above the autotuner, BLOCK is not chosen yet (Triton raises KeyError at launch too).
@triton.heuristics({"HALF_BLOCK": lambda args: args["BLOCK"] // 2})
@triton.autotune(configs=[triton.Config({"BLOCK": 32}, num_warps=1)], key=[])
@triton.jit
def heuristic_reads_config(x_ptr, BLOCK: tl.constexpr, HALF_BLOCK: tl.constexpr):
    tl.store(x_ptr + tl.arange(0, BLOCK), 1.0)


def _fits(configs, named_args, **kwargs):
    """Drop configs whose block is larger than the whole problem (as tutorial-style prunes do)."""
    return [c for c in configs if c.kwargs["BLOCK"] <= named_args["n"]]


def _needs_gpu(**kwargs):
    raise RuntimeError("no CUDA device")


@triton.autotune(configs=[triton.Config({"BLOCK": b}, num_warps=1) for b in (32, 64, 128, 256)], key=["n"],
                 prune_configs_by={"early_config_prune": _fits, "perf_model": _needs_gpu, "top_k": 2})
@triton.jit
def pruned(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


PRUNED = KernelSpec(name="pruned", fn=pruned, args={"x_ptr": Tensor("fp32"), "n": 100})


def _smaller_is_faster(BLOCK, num_warps, **kwargs):  # a perf model that needs no GPU
    return BLOCK + num_warps


@triton.autotune(configs=[triton.Config({"BLOCK": b}, num_warps=w) for b in (64, 32) for w in (1, 2)], key=["n"],
                 prune_configs_by={"perf_model": _smaller_is_faster, "top_k": 0.5})
@triton.jit
def modelled(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, 1.0, mask=offs < n)


MODELLED = KernelSpec(name="modelled", fn=modelled, args={"x_ptr": Tensor("fp32"), "n": 100})
