"""`irscope explain`: each decision read from a real compile, and the what-if compile that flips it.

Every test compiles real kernels for real targets; one output folder serves the whole module, so
explain's content-keyed cache lets later tests reuse earlier compiles (the sm_80 default is compiled once).
"""
from __future__ import annotations

import io
import json
import subprocess
import sys

import pytest

from irscope.explain import explain
from irscope.spec.kernel import CompileOptions


@pytest.fixture(scope="module")
def out(tmp_path_factory):
    return tmp_path_factory.mktemp("explain")


def _decision(result, topic, subject_part=""):
    found = [d for d in result.decisions if d.topic == topic and subject_part in d.subject]
    assert found, f"no {topic} decision about {subject_part!r} in {[d.key for d in result.decisions]}"
    return found[0]


def _flip(result, change, topic, subject_part=""):
    found = [r for r in result.remarks if r.change == change and r.decision.topic == topic
             and subject_part in r.decision.subject]
    assert found, f"no {topic} remark for {change}: {[(r.change, r.message) for r in result.remarks]}"
    return found[0]


@pytest.mark.slow
def test_hopper_wgmma_at_4_warps_drops_to_mma_sync_at_2_and_back(out):
    opts = CompileOptions(config="m64n128k32.w4.s4")
    at4 = explain("matmul", "sm_90a", opts, out, budget=1)
    assert _decision(at4, "matrix").value.startswith("wgmma")
    assert _decision(at4, "matrix").good is True
    flip = _flip(at4, "--num-warps 2", "matrix")
    assert flip.decision.value.startswith("mma.sync") and flip.kind == "analysis"
    assert any(e.startswith("ptx.wgmma ") and e.endswith("→ 0") for e in flip.evidence)
    assert flip.snapshot.endswith("m64n128k32.w4.s4.w2/sm_90a")
    # From the 2-warp side the same pair of compiles (both cached now) reads as a missed wgmma.
    at2 = explain("matmul", "sm_90a", opts.with_(num_warps=2), out, budget=1)
    assert at2.compiled == 0
    missed = _decision(at2, "matrix")
    assert missed.good is False and "num_warps >= 4" in missed.why
    fix = _flip(at2, "--num-warps 4", "matrix")
    assert fix.kind == "missed" and fix.decision.value.startswith("wgmma")


@pytest.mark.parametrize("div,width,via", [(16, 16, "cp.async"), (8, 8, "cp.async"), (4, 4, "cp.async"),
                                           (1, 2, "ld.global")])
def test_pointer_alignment_sets_vector_width_and_async_copies_on_sm_80(out, div, width, via):
    opts = CompileOptions() if div == 16 else CompileOptions(divisibility=((None, div),))
    result = explain("matmul", "sm_80", opts, out, budget=0)
    load = _decision(result, "vectors", "load of a_ptr")
    assert load.value == f"{width} B per thread ({via})"
    assert f"a_ptr divisible by {div}" in load.why
    assert load.good is (div == 16)
    pipe = _decision(result, "pipelining")
    assert pipe.value.startswith("pipelined") is (div > 1)


def test_k_not_a_multiple_of_16_turns_the_a_loads_async_copies_off(out):
    result = explain("matmul", "sm_80", CompileOptions(), out, budget=2)
    assert [r.whatif.change for r in result.whatifs] == ["--divisibility 1", "--arg K=4097"]
    assert "K divisible by 16" in _decision(result, "pipelining").why
    flip = _flip(result, "--arg K=4097", "pipelining")
    assert "a_ptr ld.global 2B" in flip.decision.value and "b_ptr cp.async 16B" in flip.decision.value
    assert "K divisible by 1" in flip.decision.why
    # the loop was pipelined before and is after: it "stays" so, its copies move (it said "becomes pipelined")
    assert flip.message.startswith("main loop: stays pipelined: ") and "buffers; now a_ptr ld.global 2B" in \
        flip.message, flip.message
    assert _flip(result, "--arg K=4097", "vectors", "a_ptr").decision.value == "2 B per thread (ld.global)"


@pytest.mark.slow
def test_shared_memory_over_the_sm_120a_limit_is_missed_and_fewer_stages_launch(out):
    result = explain("matmul", "sm_120a", CompileOptions(num_stages=4), out, budget=1)
    shared = _decision(result, "shared")
    assert shared.good is False and "does NOT launch" in shared.value
    assert "largest num_stages that fits (estimated): 3" in shared.why
    fix = _flip(result, "--num-stages 3", "shared")
    assert fix.kind == "missed" and fix.decision.value.endswith("launches")


def test_spills_under_maxnreg_are_missed_and_vanish_without_it(out):
    result = explain("matmul", "sm_80", CompileOptions(backend_options=(("maxnreg", 128),)), out, budget=1)
    regs = _decision(result, "registers")
    assert regs.good is False and "spills" in regs.value and "maxnreg=128" in regs.why
    fix = _flip(result, "without --option maxnreg", "registers")
    assert fix.kind == "missed" and fix.decision.value.endswith("no spills")
    assert fix.snapshot.endswith("matmul/default/sm_80")  # the plain compile, from the cache


@pytest.mark.slow
def test_amd_buffer_ops_on_by_the_2gb_assumption_and_off_by_triton_switch(out):
    result = explain("matmul", "gfx942", CompileOptions(config="m64n256k32.w4.s4"), out, budget=4)
    bops = _decision(result, "buffer_ops")
    assert bops.good is True and "a_ptr (tt.pointer_range=32)" in bops.why and "tensors < 2 GB" in bops.why
    off = _flip(result, "AMDGCN_USE_BUFFER_OPS=0", "buffer_ops")
    assert off.decision.value.startswith("no buffer ops")
    assert "amdgcn.buffer_load 20 → 0" in off.evidence[0] or any("buffer_load" in e and "→ 0" in e
                                                                  for e in off.evidence)
    assert _decision(result, "matrix").value.startswith("mfma")


@pytest.mark.slow
def test_amd_loads_one_iteration_ahead_at_two_stages_are_pipelined_and_one_stage_is_not(out):
    """AMD's stream pipeliner at num_stages=2 keeps one LDS buffer and loads the next tiles into registers
    (a prologue before the loop): it read as "missed: not pipelined (1 buffer)" from the buffer count."""
    two = explain("matmul", "gfx942", CompileOptions(num_stages=2), out, budget=0)
    loop = _decision(two, "pipelining")
    assert loop.good is True and loop.value.startswith("pipelined: the next iteration's loads in registers, 1 LDS")
    one = explain("matmul", "gfx942", CompileOptions(num_stages=1), out, budget=1)
    assert _decision(one, "pipelining").value.startswith("not pipelined")
    assert _decision(one, "pipelining").good is False
    fix = _flip(one, "--num-stages 2", "pipelining")  # a missed decision's what-if: the one that fixes it
    assert fix.decision.good is True and "would be pipelined" in fix.message


def test_a_prologue_load_of_the_loops_own_source_line_is_what_prefetched_means():
    from irscope.explain.decisions import prefetched
    loop = ("    %r = scf.for %k = %c0 to %n step %c1 iter_args(%a = %x) -> (tensor<4xf16>) {{\n"
            "      %v = amdg.buffer_load %p[%o] : !tt.ptr<f16> -> tensor<4xf16> loc(#loc7)\n"
            "      scf.yield %v : tensor<4xf16> loc(#loc9)\n    }} loc(#loc8)\n{after}")
    ahead = "    %x = amdg.buffer_load %p[%o] : !tt.ptr<f16> -> tensor<4xf16> loc(#loc7)\n" + loop.format(after="")
    assert prefetched(ahead) is True
    assert prefetched(loop.format(after="")) is False  # no prologue
    other = ahead.replace("loc(#loc7)\n    %r", "loc(#loc3)\n    %r", 1)  # a load before it, of another line
    assert prefetched(other) is False
    assert prefetched(loop.format(after="    %z = tt.load %q : tensor<4x!tt.ptr<f16>> loc(#loc7)\n")) is False


def test_explaining_a_snapshot_folder_starts_from_its_recorded_options(out):
    base = explain("matmul", "sm_80", CompileOptions(divisibility=((None, 8),)), out, budget=0)
    again = explain(None, None, CompileOptions(), out, snapshot=base.snapshot, budget=1)
    assert again.snapshot == base.snapshot and again.compiled == 0  # --divisibility 16 == the cached default
    assert [r.whatif.change for r in again.whatifs] == ["--divisibility 16"]
    fix = _flip(again, "--divisibility 16", "vectors", "a_ptr")
    assert fix.kind == "missed" and fix.decision.value == "16 B per thread (cp.async)"


def test_cli_explain_json_names_every_remarks_snapshot_folder(out):
    from irscope.cli import main
    buf, err = io.StringIO(), io.StringIO()
    code = main(["explain", "matmul", "--target", "sm_80", "--budget", "1", "--json", "--out", str(out)],
                out=buf, err=err)
    assert code == 0, err.getvalue()
    data = json.loads(buf.getvalue())
    assert data["remarks"] and all(r["snapshot"] for r in data["remarks"])
    assert {r["kind"] for r in data["remarks"]} <= {"passed", "missed", "analysis"}
    assert data["whatifs"][0]["cached"] is True


def test_cli_explain_text_lists_topics_and_a_negative_budget_is_a_usage_error(out):
    from irscope.cli import main
    buf = io.StringIO()
    assert main(["explain", "matmul", "--target", "sm_80", "--budget", "0", "--out", str(out)], out=buf,
                err=io.StringIO()) == 0
    text = buf.getvalue()
    assert "matrix instruction" in text and "software pipelining" in text and "in " in text
    err = io.StringIO()
    assert main(["explain", "matmul", "--budget", "-1", "--out", str(out)], out=io.StringIO(), err=err) == 2
    assert "bad --budget -1" in err.getvalue()


def test_explain_core_imports_neither_textual_nor_triton():
    code = ("import sys, irscope.explain, irscope.analyze.vectors, irscope.analyze.equivalence; "
            "print('textual' in sys.modules, 'triton' in sys.modules)")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert res.stdout.split() == ["False", "False"]


@pytest.mark.slow
def test_compare_group_puts_num_warps_in_one_ttir_class_and_two_ttgir_classes(out):
    from irscope.cli import main
    buf, err = io.StringIO(), io.StringIO()
    code = main(["compare", "matmul", "--target", "sm_80", "--num-warps", "4,8", "--group", "--out", str(out),
                 "--color", "never"], out=buf, err=err)
    assert code == 0, err.getvalue()
    lines = {ln.split()[0]: ln for ln in buf.getvalue().split("equivalence classes per stage")[1].splitlines()[1:]
             if ln.startswith("  ") and ln.split()}
    assert "same in all 2" in lines["ttir"]  # num_warps is decided after TTIR
    assert "2 classes: A = w4 · B = w8" in lines["ttgir"]
    buf = io.StringIO()
    assert main(["compare", "matmul", "--target", "sm_80", "--num-warps", "4,8", "--group", "--json", "--out",
                 str(out)], out=buf, err=io.StringIO()) == 0
    classes = [p["stage_classes"] for p in json.loads(buf.getvalue())]
    assert classes[0]["ttir"] == classes[1]["ttir"] == "A" and classes[1]["ttgir"] == "B"


@pytest.mark.slow
def test_with_passes_the_deciding_pass_is_read_from_the_compiles_timeline(out):
    result = explain("matmul", "sm_80", CompileOptions(), out, budget=0, passes=True)
    assert result.timeline
    matrix = next(r for r in result.remarks if r.decision.topic == "matrix")
    assert matrix.pass_source == "timeline" and matrix.pass_name == "tritongpu-accelerate-matmul"
    pipe = next(r for r in result.remarks if r.decision.topic == "pipelining")
    assert pipe.pass_source == "timeline" and pipe.pass_name.startswith("tritongpu-pipeline")


def test_cli_explain_of_a_snapshot_takes_no_compile_options_and_reads_decisions_with_budget_0(out):
    from irscope.cli import main
    folder = str(out / "matmul" / "default" / "sm_80")  # compiled by the tests above
    err = io.StringIO()
    assert main(["explain", folder, "--num-warps", "4", "--out", str(out)], out=io.StringIO(), err=err) == 2
    assert "its recorded options are the base" in err.getvalue()
    buf = io.StringIO()
    assert main(["explain", folder, "--budget", "0", "--json", "--out", str(out)], out=buf, err=io.StringIO()) == 0
    data = json.loads(buf.getvalue())
    assert data["snapshot"] == folder and data["whatifs"] == [] and data["skipped"]


def test_tma_loads_are_traced_through_their_descriptors_to_the_pointers(out):
    result = explain("matmul.tma", "sm_90a", CompileOptions(config="m128n128k64.w4.s3"), out, budget=0)
    assert _decision(result, "tma").good is True
    pipe = _decision(result, "pipelining")
    assert pipe.good is True and "a_ptr tma" in pipe.value and "b_ptr tma" in pipe.value


# Gluon kernels: the source writes the MMA, buffers, TMA, buffer ops and partitions; Gluon's pipeline
# (gluon_to_ttgir) runs none of the passes that decide them in a Triton kernel.
GLUON = "tests/data/gluon_kernels.py"
_BUFFER_COPY = '''
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.amd import cdna3
from irscope.spec import Config, KernelSpec, Tensor


@gluon.jit
def buf_copy(src, dst, BLOCK: gl.constexpr):
    layout: gl.constexpr = gl.BlockedLayout([4], [64], [gl.num_warps()], [0])
    offs = gl.program_id(0) * BLOCK + gl.arange(0, BLOCK, layout=layout)
    cdna3.buffer_store(cdna3.buffer_load(src, offs) * 2.0, dst, offs)


SPEC = KernelSpec(name="bufcopy", fn=buf_copy, args={"src": Tensor("fp32"), "dst": Tensor("fp32")},
                  configs=(Config("default", {"BLOCK": 1024}, num_warps=4),))
'''
_TMA_LOOP = '''
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import mbarrier, tma
from irscope.spec import Config, KernelSpec, TensorDesc


@gluon.jit
def rowsum(a_desc, K, BM: gl.constexpr, BK: gl.constexpr):
    a_s = gl.allocate_shared_memory(a_desc.dtype, [BM, BK], a_desc.layout)
    bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    mbarrier.init(bar, count=1)
    phase = 0
    for k in range(0, K, BK):  # one buffer: each load waits for the last one's use
        mbarrier.expect(bar, a_desc.block_type.nbytes)
        tma.async_load(a_desc, [gl.program_id(0) * BM, k], bar, a_s)
        mbarrier.wait(bar, phase)
        phase ^= 1
    mbarrier.invalidate(bar)


SPEC = KernelSpec(name="rowsum", fn=rowsum, args={"a_desc": TensorDesc("fp16", (4096, 4096), ("BM", "BK")), "K": 4096},
                  configs=(Config("default", {"BM": 64, "BK": 64}, num_warps=4),))
'''


@pytest.fixture(scope="module")
def gluon_snaps(tmp_path_factory):
    """The wgmma tile on sm_90a and the pointer copy on gfx942, each with its pass timeline, and an explicit
    buffer-op copy on gfx942, compiled once: name -> snapshot folder."""
    from tests.conftest import ROOT
    from irscope.harness.batch import Point, compile_points

    out = tmp_path_factory.mktemp("gluon-explain")
    bufcopy = out / "bufcopy.py"
    bufcopy.write_text(_BUFFER_COPY)
    loop = out / "rowsum.py"
    loop.write_text(_TMA_LOOP)
    kernels = ROOT / GLUON
    points = [Point(f"{kernels}:gluon_hopper_mma", "sm_90a", CompileOptions(passes="mlir")),
              Point(f"{kernels}:gluon_copy", "gfx942", CompileOptions(config="cdna", passes="mlir")),
              Point(f"{bufcopy}:bufcopy", "gfx942", CompileOptions()), Point(f"{loop}:rowsum", "sm_90a")]
    done = compile_points(points, out)
    assert all(o.ok for o in done), [o.error for o in done]
    return dict(zip(("hopper_mma", "copy_amd", "bufcopy", "tma_loop"), (o.path for o in done)))


def _explained(folder):
    return explain(None, None, CompileOptions(), folder.parent.parent.parent, snapshot=folder, budget=0)


@pytest.mark.parametrize("name", ["hopper_mma", "copy_amd"])
def test_a_gluon_kernels_remarks_name_only_passes_its_own_pipeline_ran(gluon_snaps, name):
    from irscope.passes.timeline import load_timeline
    from irscope.store import load_snapshot

    ran = {step.name for step in load_timeline(load_snapshot(gluon_snaps[name])).steps}
    result = _explained(gluon_snaps[name])
    named = {p.split(" (")[0] for r in result.remarks for p in r.pass_name.split(", ") if r.pass_name}
    assert named <= ran, f"passes Gluon's pipeline did not run: {named - ran}"
    for d in result.decisions:  # what the source wrote is the author's, not a pass's
        assert d.by_hand == (d.topic not in ("shared", "registers")), d
    if name == "hopper_mma":
        matrix = next(r for r in result.remarks if r.decision.topic == "matrix")
        assert matrix.pass_name == "" and matrix.pass_source == "start"
        assert "the source's hopper.warpgroup_mma" in matrix.message
        ws = next(r for r in result.remarks if r.decision.topic == "warp_specialize")
        assert "gl.warp_specialize" in ws.message and "tl.range" not in ws.message and not ws.pass_name
        tma = next(r for r in result.remarks if r.decision.topic == "tma")
        assert "TensorDescriptor" in tma.message and "tl.make_tensor_descriptor" not in tma.message
    else:
        vectors = [r for r in result.remarks if r.decision.topic == "vectors"]
        assert vectors and all(r.pass_name.startswith("convert-triton-amdgpu-to-llvm") for r in vectors)


def test_the_timeline_says_a_gluon_wgmma_was_there_before_the_first_pass(gluon_snaps):
    from irscope.explain.remarks import AT_START, _timeline_passes
    from irscope.store import load_snapshot

    # (not the first pass after which it "appears": it never appears, it was written so)
    assert _timeline_passes(load_snapshot(gluon_snaps["hopper_mma"]))["matrix"] == AT_START


def test_a_gluon_kernels_buffer_ops_are_its_sources_and_no_triton_switch_is_probed(gluon_snaps):
    from irscope.analyze import analyze
    from irscope.explain.decisions import read_decisions
    from irscope.explain.facts import gather
    from irscope.explain.whatif import plan_whatifs
    from irscope.store import load_snapshot

    for name, buffer in (("bufcopy", True), ("copy_amd", False)):
        snap = load_snapshot(gluon_snaps[name])
        facts = gather(snap, analyze(snap))
        decisions = read_decisions(facts)
        bops = next(d for d in decisions if d.topic == "buffer_ops")
        assert bops.good is buffer and bops.by_hand
        assert "amd.cdna3.buffer_load" in bops.why and "2 GB" not in bops.why
        planned, skipped = plan_whatifs(facts, decisions, CompileOptions(), 10)
        assert not [w for w in planned + skipped if w.env], "AMDGCN_USE_BUFFER_OPS does not change a Gluon kernel"
        remark = next(r for r in _explained(gluon_snaps[name]).remarks if r.decision.topic == "buffer_ops")
        assert remark.pass_name == ""


def test_no_num_warps_what_if_is_planned_for_a_gluon_wgmma(gluon_snaps):
    from irscope.analyze import analyze
    from irscope.explain.decisions import read_decisions
    from irscope.explain.facts import gather
    from irscope.explain.whatif import plan_whatifs
    from irscope.store import load_snapshot

    snap = load_snapshot(gluon_snaps["hopper_mma"])
    facts = gather(snap, analyze(snap))
    decisions = read_decisions(facts)
    planned, skipped = plan_whatifs(facts, decisions, CompileOptions(), 10)
    assert not [w for w in planned + skipped if w.topic == "matrix"]  # its layouts are written for 4 warps
    assert "no num_warps or target what-if" in next(d for d in decisions if d.topic == "matrix").why


def test_a_gluon_kernel_over_the_shared_limit_is_fixed_by_its_own_stages_constexpr_not_num_stages(out):
    from tests.conftest import ROOT

    opts = CompileOptions(config="s4", constexprs=(("BM", 128), ("BN", 128)))
    result = explain(f"{ROOT / GLUON}:gluon_tma_copy", "sm_120a", opts, out, budget=4)
    shared = _decision(result, "shared")
    assert shared.good is False and "num_stages that fits" not in shared.why
    assert "largest STAGES that fits (estimated): 3" in shared.why
    assert not [w for w in list(result.skipped) + [r.whatif for r in result.whatifs] if "num-stages" in w.change]
    fix = _flip(result, "--constexpr STAGES=3", "shared")
    assert fix.kind == "missed" and fix.decision.good and "would be" in fix.message


def test_a_gluon_loops_tma_loads_are_named_by_their_descriptors():
    from tests.conftest import ROOT

    folder = ROOT / "snapshots" / "attention_ws" / "default" / "sm_90a"
    result = explain(None, None, CompileOptions(), folder.parent.parent.parent, snapshot=folder, budget=0)
    pipe = _decision(result, "pipelining")
    # the loader partition's copies take the kernel's descriptors through ttg.warp_specialize's operands
    assert "k_desc tma, q_desc tma, v_desc tma" in pipe.value and "?" not in pipe.value
    assert "pipelining it is the source's" not in pipe.why  # (it is pipelined: no hint)
    assert "q_desc" in _decision(result, "tma").why


def test_a_gluon_loop_left_unpipelined_is_told_how_to_pipeline_it_in_gluon_and_its_loads_are_named(gluon_snaps):
    pipe = _decision(_explained(gluon_snaps["tma_loop"]), "pipelining")
    assert pipe.good is False and pipe.by_hand
    assert pipe.value == "not pipelined (1 buffer); a_desc tma"  # it said `? tma`
    assert "[STAGES, ...] buffers with an mbarrier each" in pipe.why and "num_stages=" not in pipe.why


def test_a_gluon_kernels_explanation_ends_on_gluon_not_on_triton_passes(cli):
    """It ended with "passes are Triton's pipeline's; add --passes ...", which Gluon's pipeline does not run."""
    from tests.conftest import ROOT
    code, out, err = cli("explain", ROOT / "snapshots" / "attention_ws" / "default" / "sm_90a", "--budget", "0")
    assert code == 0, err
    assert "a Gluon kernel: its layouts, buffers, MMA and TMA are written in its source" in out
    assert "passes are Triton's pipeline's" not in out
    code, out, err = cli("explain", ROOT / "snapshots" / "add" / "default" / "sm_90a", "--budget", "0", "--json")
    assert code == 0 and json.loads(out)["gluon"] is False
