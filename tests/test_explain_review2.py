"""`irscope explain` regressions of the second review: the switches a remark prints, typed after the user's own
flags, compile what the what-if compiled; advice is given only for what a what-if was planned to fix; the
reasons name what limits a width. Every test reads real compiles (one output folder serves the module).
"""
from __future__ import annotations

import io
import json
import shlex
from pathlib import Path

import pytest

from irscope.explain import explain
from irscope.spec.kernel import CompileOptions


@pytest.fixture(scope="module")
def out(tmp_path_factory):
    return tmp_path_factory.mktemp("explain-review2")


def _cli(*argv):
    from irscope.cli import main
    buf, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out=buf, err=err)
    return code, buf.getvalue(), err.getvalue()


def _key(folder) -> str:
    return json.loads((folder / "irscope.json").read_text())["content_key"]


def test_the_alignment_switch_typed_after_a_per_argument_divisibility_compiles_what_the_what_if_did(out, tmp_path):
    """With `--divisibility x_ptr=1` on the command line the fix read 'would be 16 B per thread with
    --divisibility 16', but its what-if had dropped x_ptr=1 while a user typing the switch keeps it (a
    per-argument divisibility outranks the global one): the printed command changed nothing."""
    base = ["--arg", "n_elements=1000", "--divisibility", "x_ptr=1"]
    code, text, err = _cli("explain", "add", "--target", "sm_80", *base, "--budget", "1", "--json", "--out", str(out))
    assert code == 0, err
    (whatif,) = json.loads(text)["whatifs"]
    assert whatif["status"] == "ok", whatif
    typed = tmp_path / "typed"
    code, _, err = _cli("compile", "add", "--target", "sm_80", *base, *shlex.split(whatif["change"]),
                        "--out", str(typed))
    assert code == 0, err
    (folder,) = [p.parent for p in typed.rglob("irscope.json")]
    assert _key(folder) == _key(Path(whatif["snapshot"])), (whatif["change"], folder, whatif["snapshot"])


MM32 = '''
import triton
import triton.language as tl
from irscope.spec import Config, KernelSpec, Tensor


@triton.jit
def mm32(a_ptr, b_ptr, c_ptr, K, sam, sbk, scm, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a = a_ptr + rm[:, None] * sam + rk[None, :]
    b = b_ptr + rk[:, None] * sbk + rn[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        x = tl.load(a, mask=rk[None, :] < K - k, other=0.0)
        y = tl.load(b, mask=rk[:, None] < K - k, other=0.0)
        acc += tl.dot(x, y)
        a += BK
        b += BK * sbk
    tl.store(c_ptr + rm[:, None] * scm + rn[None, :], acc)


SPEC = KernelSpec(name="mm32", fn=mm32, description="tf32 dot, a K-major B in shared memory",
                  args={"a_ptr": Tensor("fp32"), "b_ptr": Tensor("fp32"), "c_ptr": Tensor("fp32"), "K": 4096,
                        "sam": 4096, "sbk": 4096, "scm": 4096},
                  configs=(Config("default", {"BM": 64, "BN": 64, "BK": 256}, num_warps=4, num_stages=3),))
CAPPED = KernelSpec(name="mm32cap", fn=mm32, description="its config caps the registers",
                    args=SPEC.args, configs=(Config("cap", {"BM": 64, "BN": 64, "BK": 64}, num_warps=4, num_stages=2,
                                                    options={"maxnreg": 40}),))
'''


@pytest.fixture(scope="module")
def mm32(out):
    path = out / "mm32.py"
    path.write_text(MM32)
    return explain(f"{path}:mm32", "sm_90a", CompileOptions(), out, budget=1)


def test_a_fix_that_loses_pipelining_is_no_advice_for_a_vector_width_it_happens_to_widen(mm32):
    """tf32's B tile is copied 4 B at a time into its K-major buffer. The shared-memory fix `--num-stages 1`
    (the only depth that fits) also drops the loop's cp.async for plain 16 B loads, and the B load read
    'missed: would be 16 B per thread (ld.global) with --num-stages 1': advice to unpipeline the loop."""
    assert [w.whatif.change for w in mm32.whatifs] == ["--num-stages 1"]
    shared = [r for r in mm32.remarks if r.change == "--num-stages 1" and r.decision.topic == "shared"]
    assert [r.kind for r in shared] == ["missed"] and "would be" in shared[0].message  # what it was planned for
    loop = next(r for r in mm32.remarks if r.change == "--num-stages 1" and r.decision.topic == "pipelining")
    assert loop.decision.good is False  # the fast path it loses
    width = next(r for r in mm32.remarks if r.change == "--num-stages 1" and r.decision.topic == "vectors")
    assert width.decision.value == "16 B per thread (ld.global)"
    assert width.kind == "analysis" and width.message.startswith("load of b_ptr at line 17: becomes 16 B"), \
        width.message


def test_a_narrow_async_copy_names_the_shared_memory_layout_it_writes_not_only_the_values(mm32):
    """The B load is 16 contiguous bytes a thread in registers (contiguity 4 fp32) and 16-aligned, yet each
    cp.async moves 4 B: wgmma's tf32 B operand is K-major in shared memory. The remark blamed only 'the value's
    layout', which its own 'contiguity 4 elements' contradicted."""
    b = next(d for d in mm32.decisions if d.topic == "vectors" and d.subject.startswith("load of b_ptr"))
    assert b.value == "4 B per thread (cp.async)" and "contiguity 4 elements" in b.why, (b.value, b.why)
    assert "in the shared-memory layout the copy writes" in b.why, b.why
    store = next(d for d in mm32.decisions if d.topic == "vectors" and d.subject.startswith("store"))
    assert "shared-memory" not in store.why  # a plain store writes no buffer


def test_amd_spills_are_vgprs_and_scratch_not_bytes_stored_and_loaded(out):
    """AMD's listing counts spilled VGPRs (and the scratch they take), nothing of loads: attention on gfx942
    with nothing aligned read '256 registers/thread, spills 5 spilled VGPRs stored / 0 spilled VGPRs loaded'."""
    result = explain("attention", "gfx942", CompileOptions(divisibility=((None, 1),)), out, budget=0)
    regs = next(d for d in result.decisions if d.topic == "registers")
    ev = dict(regs.evidence)
    assert ev["resources.spill_stores"] > 0 and ev["resources.scratch"] > 0 and "resources.spill_loads" not in ev
    assert regs.value.endswith(f", {ev['resources.spill_stores']} VGPRs spilled ({ev['resources.scratch']} B of "
                               "scratch a lane)"), regs.value
    assert "loaded" not in regs.value


def test_a_blackwell_dot_below_four_warps_says_why_it_is_no_tcgen05(out):
    """On sm_100a at 2 warps the dot is mma.sync, 'missed', with no reason given (Hopper's said that wgmma needs
    a warpgroup); the fix `--num-warps 4` was planned all the same."""
    result = explain("matmul", "sm_100a", CompileOptions(config="m64n128k32.w4.s4", num_warps=2), out, budget=0)
    matrix = next(d for d in result.decisions if d.topic == "matrix")
    assert matrix.value.startswith("mma.sync") and matrix.good is False
    assert matrix.why.endswith("sm_100a: Triton uses tcgen05 from 4 warps up (num_warps >= 4)"), matrix.why
    assert [w.change for w in result.skipped if w.topic == "matrix"] == ["--num-warps 4"]


def test_layouts_of_a_failed_compile_says_it_failed_not_compile_it_again(out):
    """`irscope layouts` on the folder of a compile that failed before TTGIR said 'has no TTGIR stage' and
    'compile it again', which fails the same way; it says what failed and where the log is."""
    code, _, err = _cli("compile", "matmul", "--target", "sm_80", "--constexpr", "BLOCK_K=24", "--out", str(out))
    assert code != 0
    folder = out / "matmul" / "default.BLOCK_K=24" / "sm_80"
    code, _, err = _cli("layouts", str(folder))
    assert code == 4 and "did not compile (at source: arange's range must be a power of 2)" in err, err
    assert "compile it again" not in err and f"irscope show {folder}" in err, err


def test_the_json_of_a_snapshot_read_without_what_ifs_names_its_kernel(out):
    """`irscope explain SNAPSHOT --budget 0 --json` gave `"kernel": ""` (the kernel was looked up only to compile
    what-ifs), where the same snapshot with what-ifs gave its name."""
    base = explain("add", "sm_80", CompileOptions(), out, budget=0)
    code, text, err = _cli("explain", base.snapshot, "--budget", "0", "--json")
    assert code == 0, err
    data = json.loads(text)
    assert data["kernel"] == "add" and data["label"] == "add/default/sm_80", (data["kernel"], data["label"])


def test_an_ieee_fp32_dot_says_what_would_use_tensor_cores_and_amd_has_fp32_mfma(out):
    """The missed FMA remark said why (input_precision='ieee') but not what would be needed, and docs/explain.md
    said such a dot 'uses no tensor core anywhere', while gfx942 runs it on fp32 MFMA."""
    nvidia = explain("matmul.fp32", "sm_80", CompileOptions(), out, budget=0)
    fma = next(d for d in nvidia.decisions if d.topic == "matrix")
    assert fma.value.startswith("FMA") and fma.good is False
    assert "input_precision='tf32' or 'tf32x3' would" in fma.why, fma.why
    amd = explain("matmul.fp32", "gfx942", CompileOptions(), out, budget=0)
    mfma = next(d for d in amd.decisions if d.topic == "matrix")
    assert mfma.value.startswith("mfma f32_") and mfma.value.endswith("_f32") and mfma.good is True, mfma.value
    doc = (Path(__file__).parent.parent / "docs" / "explain.md").read_text()
    assert "uses no tensor core anywhere" not in doc and "`mfma f32_32x32x2_f32`" in doc


def test_a_register_cap_set_by_the_config_is_lifted_by_an_option_that_outranks_it(out, mm32):
    """A config's options={"maxnreg": 40} spills; the planned fix 'without --option maxnreg' removed nothing (the
    command line had no such option), compiled the same thing and read 'unchanged with without --option maxnreg'."""
    result = explain(f"{out / 'mm32.py'}:mm32cap", "sm_80", CompileOptions(), out, budget=1)
    regs = next(d for d in result.decisions if d.topic == "registers")
    assert regs.good is False and "maxnreg=40" in regs.why, (regs.value, regs.why)
    assert [w.whatif.change for w in result.whatifs] == ["--option maxnreg=255"]
    fix = next(r for r in result.remarks if r.change and r.decision.topic == "registers")
    assert fix.kind == "missed" and fix.decision.value.endswith("no spills"), fix.message
    assert "unchanged" not in fix.message and "with without" not in fix.message


def test_a_switch_that_leaves_an_option_out_reads_without_not_with_without(out):
    result = explain("matmul", "sm_80", CompileOptions(backend_options=(("maxnreg", 128),)), out, budget=1)
    fix = next(r for r in result.remarks if r.change == "without --option maxnreg")
    assert "no spills without --option maxnreg" in fix.message and "with without" not in fix.message, fix.message


def test_which_compiles_record_layouts_json_is_what_docs_layouts_says(out, tmp_path):
    """docs/layouts.md said every compile through compile_points (sweeps, the TUI's compile form) records
    layouts.json; only `irscope compile` does, and explain's compiles leave it to `irscope layouts`."""
    base = explain("add", "sm_90a", CompileOptions(), out, budget=0)
    assert not (Path(base.snapshot) / "layouts.json").exists()
    code, _, err = _cli("compile", "add", "--target", "sm_90a", "--out", str(tmp_path))
    assert code == 0, err
    assert (tmp_path / "add" / "default" / "sm_90a" / "layouts.json").is_file()
    doc = (Path(__file__).parent.parent / "docs" / "layouts.md").read_text()
    said = doc[doc.index("- **At compile time**"):doc.index("each snapshot's TTGIR is parsed by")]
    assert "`irscope compile`" in said and "`irscope explain`'s compiles" in said and "leave it out" in said


def test_one_bank_conflict_reads_one_extra_wavefront():
    """attention on gfx942 stores a tile into an LDS buffer with 2**1 - 1 conflicts: '1 extra wavefronts'."""
    from irscope.layouts.cost import BankConflicts
    assert BankConflicts(1, 4, 16, 2).summary().startswith("1 extra wavefront per access (4-element vectors")
    assert BankConflicts(3, 4, 16, 4).summary().startswith("3 extra wavefronts per access")


def test_the_nothing_aligned_probe_also_unaligns_what_the_command_line_aligned_by_name(out, tmp_path):
    """With `--divisibility x_ptr=16` given, the probe must also say `--divisibility 1` for the others: the
    switch typed after the command's flags compiles what the probe compiled."""
    base = ["--divisibility", "x_ptr=16"]
    code, text, err = _cli("explain", "add", "--target", "sm_80", *base, "--budget", "1", "--json", "--out", str(out))
    assert code == 0, err
    (whatif,) = json.loads(text)["whatifs"]
    assert whatif["change"] == "--divisibility 1 --divisibility x_ptr=1", whatif
    code, _, err = _cli("compile", "add", "--target", "sm_80", *base, *shlex.split(whatif["change"]),
                        "--out", str(tmp_path))
    assert code == 0, err
    (folder,) = [p.parent for p in tmp_path.rglob("irscope.json")]
    assert _key(folder) == _key(Path(whatif["snapshot"]))
