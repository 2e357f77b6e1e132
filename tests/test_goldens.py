"""irscope's own golden snapshots (snapshots/): the five built-in kernels (with the three kernels of the
separable blur and the persistent TMA matmul) on the seven core targets at their default configs, plus the points that show the
compiler's known switches. A change to a kernel, or a Triton upgrade, that changes what the compiler
emits fails here with a diff; `pytest --irscope-update` rewrites the goldens once the change is
understood (review `git diff snapshots/`).

The dtype and causal variants (softmax.fp16, matmul.bf16, attention.causal, ...) share these kernels'
code; they are compiled for every target by tests/test_kernels_compile.py and checked by properties
below, but not kept as goldens: every golden travels with the repository (and to the GPU machine).
"""
import pytest

pytestmark = pytest.mark.slow  # compiles every built-in kernel for all seven targets (docs/testing.md)

SPECS = ["add", "attention", "blur", "blur.col", "blur.gray", "blur.row", "matmul", "matmul.tma", "softmax"]


@pytest.mark.parametrize("kernel", SPECS)
def test_builtin_kernel_on_every_core_target(irscope, kernel):
    irscope.assert_golden(kernel, target="all")


# The switches the seeds' article found, each a golden of its own (all on the default matmul):
SWITCHES = {
    # On Hopper num_warps picks the matrix instruction: below a warpgroup (4 warps) there is no wgmma.
    "hopper_num_warps": [dict(target="sm_90a", num_warps=w) for w in (2, 4)],
    # Without 16-byte alignment there are no cp.async copies, so the loop is not pipelined.
    "alignment": [dict(target=t, divisibility=1) for t in ("sm_80", "sm_90a")],
    # Shared memory grows with num_stages (the A tile is multi-buffered).
    "num_stages": [dict(target="sm_90a", num_stages=s) for s in (1, 2, 4)],
}


@pytest.mark.parametrize("switch", sorted(SWITCHES))
def test_matmul_compiler_switches(irscope, switch):
    for point in SWITCHES[switch]:
        irscope.assert_golden("matmul", **point)


def test_switches_do_what_the_goldens_say(irscope):
    """Properties that must survive a Triton upgrade even when exact goldens change."""
    w2 = irscope.compile("matmul", target="sm_90a", num_warps=2)
    w4 = irscope.compile("matmul", target="sm_90a", num_warps=4)
    irscope.expect(w2).lacks("wgmma.mma_async").uses("mma.sync")
    irscope.expect(w4).uses("wgmma.mma_async")
    unaligned = irscope.compile("matmul", target="sm_90a", divisibility=1)
    irscope.expect(unaligned).lacks("cp.async")
    irscope.expect(irscope.compile("matmul", target="sm_90a")).uses("cp.async").no_spills().launchable()
    s2 = irscope.compile("matmul", target="sm_90a", num_stages=2).resources.shared
    s4 = irscope.compile("matmul", target="sm_90a", num_stages=4).resources.shared
    assert s4 > s2


def test_tma_matmul_moves_its_tiles_by_tma_where_there_is_tma(irscope):
    """Tensor descriptors become TMA on Hopper and Blackwell, and plain loads where there is none."""
    for target in ("sm_90a", "sm_100a"):
        snap = irscope.compile("matmul.tma", target=target)
        irscope.expect(snap).counter("ttgir.tma_load", at_least=2).counter("sass.UTMALDG", at_least=2) \
            .counter("sass.LDGSTS", exactly=0).no_spills().launchable()
    sm80 = irscope.compile("matmul.tma", target="sm_80")
    irscope.expect(sm80).counter("sass.UTMALDG", exactly=0).uses("mma.sync").launchable()


@pytest.mark.parametrize("variant", ["attention.causal", "attention.bf16", "matmul.bf16"])
def test_variants_keep_the_hopper_matrix_instruction(irscope, variant):
    irscope.expect(irscope.compile(variant, target="sm_90a")).uses("wgmma.mma_async").no_spills().launchable()
    irscope.expect(irscope.compile(variant, target="sm_100a")).uses("tcgen05.mma")
