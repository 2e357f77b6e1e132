"""Gluon kernels compile device-less like Triton kernels: real compiles for the targets that take them,
the glir stage kept, the JIT's specialisation, and a kernel that needs Hopper reported as not for sm_80."""
import json

import pytest

from tests.conftest import DATA
from irscope.analyze import analyze
from irscope.store import load_snapshot

KERNELS = f"{DATA / 'gluon_kernels.py'}"
NVIDIA = ("sm_80", "sm_90a", "sm_100a", "sm_120a")
AMD = ("gfx90a", "gfx942", "gfx950")


@pytest.fixture(scope="module")
def gluon_out(tmp_path_factory):
    """The copy kernel for all seven targets (its layout's threads per warp per vendor), the shared-memory
    transpose on sm_90a and gfx942, the wgmma tile on sm_90a and sm_80, and the TMA copy through host
    descriptors at 2 and 4 stages on sm_90a (and on gfx942, which its config says it is not for), compiled once."""
    from irscope.harness.batch import Point, compile_points
    from irscope.spec import CompileOptions

    out = tmp_path_factory.mktemp("gluon")
    points = [Point(f"{KERNELS}:gluon_copy", t, CompileOptions(config="nvidia")) for t in NVIDIA]
    points += [Point(f"{KERNELS}:gluon_copy", t, CompileOptions(config="cdna")) for t in AMD]
    points += [Point(f"{KERNELS}:gluon_transpose", "sm_90a", CompileOptions(config="nvidia")),
               Point(f"{KERNELS}:gluon_transpose", "gfx942", CompileOptions(config="cdna")),
               Point(f"{KERNELS}:gluon_hopper_mma", "sm_90a"), Point(f"{KERNELS}:gluon_hopper_mma", "sm_80")]
    points += [Point(f"{KERNELS}:gluon_tma_copy", "sm_90a", CompileOptions(config=c)) for c in ("s2", "s4")]
    points += [Point(f"{KERNELS}:gluon_tma_copy", "gfx942", CompileOptions(config="s2"))]
    done = compile_points(points, out)
    return {(o.point.kernel.rsplit(":", 1)[1] + (f".{o.point.options.config}" if "tma" in o.point.kernel else ""),
             o.point.target): o for o in done}


@pytest.mark.parametrize("target", NVIDIA + AMD)
def test_a_gluon_copy_compiles_for_every_core_target_with_its_glir_stage(gluon_out, target):
    o = gluon_out[("gluon_copy", target)]
    assert o.ok, o.error
    snap = load_snapshot(o.path)
    binary = "cubin" if target in NVIDIA else "hsaco"
    assert snap.stages[:3] == ("source", "glir", "ttgir") and binary in snap.stages
    assert "ttir" not in snap.stages  # Gluon's IR goes straight to Triton's GPU dialect
    assert "#ttg.blocked<" in snap.read("glir")
    # The explicit layout reaches the IR as written: 4 elements a thread, the vendor's warp size.
    tpw = 32 if target in NVIDIA else 64
    assert f"threadsPerWarp = [{tpw}]" in snap.read("ttgir")


def test_a_gluon_kernel_is_specialised_like_the_jit_would(gluon_out):
    snap = load_snapshot(gluon_out[("gluon_copy", "sm_90a")].path)
    spec = {e["name"]: e for e in snap.meta["specialisation"]}
    assert spec["src"]["type"] == "*fp32" and spec["src"]["divisibility"] == 16
    assert spec["n"]["type"] == "i32" and spec["n"]["divisibility"] == 16
    assert snap.meta["compile_options"]["constexprs"] == {"BLOCK": 1024, "TPW": 32}
    assert "tt.divisibility = 16" in snap.read("glir")


def test_gluon_shared_memory_is_counted_against_the_stage_text(gluon_out):
    for target in ("sm_90a", "gfx942"):
        o = gluon_out[("gluon_transpose", target)]
        assert o.ok, o.error
        snap = load_snapshot(o.path)
        a = analyze(snap)
        allocs = snap.read("ttgir").count("ttg.local_alloc")
        assert allocs >= 1 and a.counters["ttgir.local_alloc"] == allocs
        assert "#ttg.swizzled_shared<{vec = 4, perPhase = 2, maxPhase = 8" in snap.read("ttgir")
        assert snap.resources.shared >= 64 * 64 * 4  # the fp32 tile sits in shared memory (LDS on AMD)


def test_gluon_wgmma_compiles_for_hopper_and_is_reported_as_not_for_sm_80(gluon_out):
    hopper = gluon_out[("gluon_hopper_mma", "sm_90a")]
    assert hopper.ok, hopper.error
    snap = load_snapshot(hopper.path)
    wgmma = snap.read("ptx").count("wgmma.mma_async")
    assert wgmma >= 1 and analyze(snap).counters["ptx.wgmma"] == wgmma
    ampere = gluon_out[("gluon_hopper_mma", "sm_80")]
    # LLVM aborts the compiling process (no folder); irscope says the kernel is not for the target.
    assert ampere.status == "not-for-target" and ampere.path is None
    assert "warpgroup MMA (wgmma)" in ampere.error["message"]
    assert "not a kernel for sm_80" in ampere.error["message"]


@pytest.mark.parametrize("stages", [2, 4])
def test_a_gluon_kernel_taking_host_descriptors_compiles_to_one_tma_copy_a_stage(gluon_out, stages):
    outcome = gluon_out[(f"gluon_tma_copy.s{stages}", "sm_90a")]
    assert outcome.ok, outcome.error
    snap = load_snapshot(outcome.path)
    descs = [e for e in snap.meta["specialisation"] if e["kind"] == "descriptor"]
    assert [e["name"] for e in descs] == ["src_desc", "dst_desc"]
    for e in descs:  # the block shape came from the config's constexprs, the layout is Gluon's default
        assert e["value"] == "desc:fp16[4096,64]/[64,64]"
        assert e["type"].startswith("tensordesc<fp16[64, 64],NVMMASharedLayout(swizzle_byte_width=128")
    c = analyze(snap).counters
    ptx, sass = snap.read("ptx"), snap.read("sass")
    assert c["ptx.cp.async.bulk.tensor.load"] == stages == ptx.count("cp.async.bulk.tensor.2d.shared::cta.global")
    assert c["ptx.cp.async.bulk.tensor.store"] == stages == ptx.count("cp.async.bulk.tensor.2d.global.shared::cta")
    assert c["sass.UTMALDG"] == stages == sass.count("UTMALDG")
    assert c["sass.UTMASTG"] == stages == sass.count("UTMASTG")
    assert c["ttgir.mbarrier_init"] == stages and c.get("ptx.cp.async", 0) == 0  # no per-thread copies


def test_a_compile_the_config_says_is_not_for_the_target_is_reported_so_with_the_specs_reason(gluon_out):
    amd = gluon_out[("gluon_tma_copy.s2", "gfx942")]
    assert amd.status == "not-for-target"
    assert amd.error["message"].startswith("not for gfx942: TMA and mbarriers are NVIDIA's, Hopper and later (the "
                                           "compiler: ")
    assert json.loads((amd.path / "irscope.json").read_text())["status"] == "failed"  # the stages it got are kept


def test_explain_reads_a_gluon_kernels_warp_specialisation_and_names_no_triton_pass(cli):
    from tests.conftest import ROOT
    code, out, err = cli("explain", ROOT / "snapshots" / "attention_ws" / "default" / "sm_90a", "--budget", "0",
                         "--json")
    assert code == 0, err
    remarks = {r["topic"]: r for r in json.loads(out)["remarks"]}
    ws = remarks["warp_specialize"]
    assert "the default partition (4 warps) and 2 workers (4, 1 warps), setmaxnreg 240, 24 registers" in ws["message"]
    assert "gl.warp_specialize in the Gluon source" in ws["message"] and not ws["pass"]
    pipelining = remarks["pipelining"]
    assert not pipelining["pass"] and "allocates its buffers and barriers itself" in pipelining["message"]


def test_a_gluon_descriptors_swizzle_is_part_of_its_type_and_the_block_follows_the_config():
    from dataclasses import replace

    from irscope.errors import UsageError
    from irscope.harness.specialise import specialise
    from irscope.spec import CompileOptions, TensorDesc
    from irscope.spec.library import load_kernel
    from irscope.targets import get_target

    spec = load_kernel(f"{KERNELS}:gluon_tma_copy")
    hopper = get_target("sm_90a")
    signature = specialise(spec, hopper, CompileOptions(config="s4"))[2]
    assert "swizzle_byte_width=128" in signature["src_desc"]
    narrow = replace(spec, args={**spec.args, "src_desc": TensorDesc("fp16", (4096, 64), ("BM", "BN"), swizzle=64)})
    signature = specialise(narrow, hopper, CompileOptions(config="s4"))[2]
    assert "swizzle_byte_width=64" in signature["src_desc"] and "swizzle_byte_width=128" in signature["dst_desc"]
    wrong = replace(spec, args={**spec.args, "src_desc": TensorDesc("fp16", (4096, 64), ("BLOCK", "BN"))})
    with pytest.raises(UsageError, match="takes its block shape from 'BLOCK'"):
        specialise(wrong, hopper, CompileOptions(config="s4"))


def test_a_snapshot_run_refuses_descriptors_of_other_blocks_than_its_cubin_takes():
    torch = pytest.importorskip("torch")
    from irscope.gpu.replay import SpecialisationMismatch, check_call
    from irscope.spec.library import load_kernel
    from irscope.spec.workload import params_for
    from tests.conftest import ROOT

    spec = load_kernel("attention_ws")
    golden = load_snapshot(ROOT / "snapshots" / "attention_ws" / "default" / "sm_90a")
    size = spec.workload.sizes["small"]
    x = spec.workload.build(size, torch.Generator().manual_seed(0), "cpu")
    check_call(golden, spec.fn, spec.workload.launch(x, size, params_for(spec))[0])  # its own config: fine
    narrow = spec.workload.launch(x, size, params_for(spec, "m64n64.b4"))[0]
    with pytest.raises(SpecialisationMismatch, match=r"k_desc as a fp16 descriptor of \[1, 128, 128\] blocks"):
        check_call(golden, spec.fn, narrow)


def test_the_cli_says_a_gluon_layout_does_not_fit_the_target(cli, tmp_path):
    # threads_per_warp=32 is an NVIDIA layout: on CDNA (64 lanes) MLIR's verifier refuses it.
    code, out, err = cli("compile", f"{KERNELS}:gluon_copy", "--config", "nvidia", "--target", "gfx942",
                         "--out", tmp_path / "o")
    assert code == 3
    assert "Result has an invalid layout" in err and "threadsPerWarp = [32]" in err
    code, out, err = cli("show", tmp_path / "o" / "gluon_copy" / "nvidia" / "gfx942", "--json")
    assert code == 0 and json.loads(out)["status"] == "failed"


def test_show_and_stats_read_a_gluon_snapshot(cli, gluon_out):
    path = gluon_out[("gluon_copy", "gfx942")].path
    code, out, err = cli("show", path, "--stage", "glir", "--color", "never")
    assert code == 0 and "#ttg.blocked<" in out
    code, out, err = cli("stats", path, "--json")
    assert code == 0, err


@pytest.mark.slow  # two 15-second compiles of the largest Gluon kernel
@pytest.mark.parametrize("kernel", ["attention_ws", "attention_ws.causal"])
def test_the_warp_specialised_attention_keeps_its_hopper_code(irscope, kernel):
    # The golden is also what the H200 runs through `irscope run --snapshot` (docs/gpu.md).
    irscope.assert_golden(kernel, target="sm_90a")
    snap = irscope.compile(kernel, target="sm_90a")
    irscope.expect(snap).uses("wgmma.mma_async").uses("cp.async.bulk.tensor").uses("setmaxnreg").no_spills()


def test_a_gluon_descriptor_of_every_dtype_irscope_takes_specialises_or_is_refused_as_triton_would(cli, tmp_path):
    # fp64, u16, u32, u64, i1 and three fp8 kinds were an AttributeError (exit 70): no Gluon name for them.
    from irscope.errors import UsageError
    from irscope.harness.specialise import specialise
    from irscope.spec import DTYPES, CompileOptions, TensorDesc
    from irscope.spec.library import load_kernel
    from irscope.targets import get_target

    spec = load_kernel(f"{KERNELS}:gluon_tma_roundtrip")
    for dtype in DTYPES:
        desc = TensorDesc(dtype, (4096, 64), (64, 64))
        opts = CompileOptions(args=(("src_desc", desc), ("dst_desc", desc)))
        if dtype in ("fp64", "u64", "i64", "i1"):  # Gluon's TensorDescriptor asserts 8, 16 or 32 bits
            with pytest.raises(UsageError, match=f"Gluon tensor descriptor of {dtype}.*8-, 16- or 32-bit"):
                specialise(spec, get_target("sm_90a"), opts)
            continue
        signature = specialise(spec, get_target("sm_90a"), opts)[2]
        assert signature["src_desc"].startswith(f"tensordesc<{dtype}[64, 64],NVMMASharedLayout(")
    code, out, err = cli("compile", f"{KERNELS}:gluon_tma_roundtrip", "--arg", "src_desc=desc:u16[4096,64]/[64,64]",
                         "--arg", "dst_desc=desc:u16[4096,64]/[64,64]", "--target", "sm_90a", "--no-layouts")
    assert code == 0, err
    code, out, err = cli("compile", f"{KERNELS}:gluon_tma_copy", "--config", "s2", "--arg",
                         "src_desc=desc:fp64[4096,64]/[64,64]", "--target", "sm_90a")
    assert code == 2 and "8-, 16- or 32-bit elements" in err and "Traceback" not in err


def test_a_swizzle_that_no_nvmma_layout_has_is_a_usage_error_when_the_descriptor_is_made(cli, tmp_path):
    # TensorDesc(swizzle=100) was a bare AssertionError out of Gluon at the compile (exit 70).
    from irscope.errors import UsageError
    from irscope.spec import TensorDesc

    for swizzle in (100, 16, 256, -64, True, "64"):
        with pytest.raises(UsageError, match="0, 32, 64 or 128 bytes"):
            TensorDesc("fp16", (4096, 64), (64, 64), swizzle=swizzle)
    assert TensorDesc("fp16", (4096, 64), (64, 64), swizzle=32).swizzle == 32
    from tests.conftest import ROOT
    (tmp_path / "swz.py").write_text(
        f"import sys\nsys.path.insert(0, {str(ROOT)!r})\nfrom dataclasses import replace\n"
        "from tests.data.gluon_kernels import TMA_COPY\n"
        "from irscope.spec import TensorDesc\n"
        "S100 = replace(TMA_COPY, name='swz100', args={**TMA_COPY.args, "
        "'src_desc': TensorDesc('fp16', (4096, 64), ('BM', 'BN'), swizzle=100)})\n")
    code, out, err = cli("compile", "swz.py:swz100", "--config", "s2", "--target", "sm_90a")
    assert code == 2 and "swizzle=100 is not an NVMMA shared layout's swizzle" in err and "Traceback" not in err


def test_a_swizzle_given_for_a_triton_kernels_descriptor_is_refused_not_ignored(tmp_path):
    from irscope.errors import UsageError
    from irscope.harness.specialise import specialise
    from irscope.spec import CompileOptions, TensorDesc
    from irscope.spec.library import load_kernel
    from irscope.targets import get_target

    kernel = tmp_path / "desc.py"
    kernel.write_text("import triton, triton.language as tl\n@triton.jit\ndef copy(a_desc, b_desc):\n"
                      "    b_desc.store([0, 0], a_desc.load([0, 0]))\n")
    spec = load_kernel(f"{kernel}:copy")
    plain = TensorDesc("fp16", (256, 128), (32, 32))
    opts = CompileOptions(args=(("a_desc", plain), ("b_desc", plain)))
    assert specialise(spec, get_target("sm_90a"), opts)[2]["a_desc"] == "tensordesc<fp16[32, 32]>"
    swizzled = CompileOptions(args=(("a_desc", TensorDesc("fp16", (256, 128), (32, 32), swizzle=64)),
                                    ("b_desc", plain)))
    with pytest.raises(UsageError, match="a_desc: swizzle=64 is the shared layout of a Gluon descriptor"):
        specialise(spec, get_target("sm_90a"), swizzled)


def test_docs_gluon_examples_are_what_the_snapshot_and_the_compile_say(gluon_out):
    """docs/gluon.md's `stats` counters are the checked-in attention_ws snapshot's, and its compile example's
    stage sizes are a fresh compile's."""
    import re

    from tests.conftest import ROOT
    from irscope.render.terminal import stage_sizes

    doc = (ROOT / "docs" / "gluon.md").read_text()
    block = doc.split("$ irscope stats snapshots/attention_ws/default/sm_90a", 1)[1].split("$ irscope", 1)[0]
    claimed = dict(re.findall(r"\b((?:ttgir|ptx|sass)\.[\w.]+)\s+(\d+)", block))
    assert "ptx.cp.async.bulk.tensor" in claimed
    counters = analyze(load_snapshot(ROOT / "snapshots" / "attention_ws" / "default" / "sm_90a")).counters
    assert {k: int(v) for k, v in claimed.items()} == {k: counters.get(k, 0) for k in claimed}
    stages = re.search(r"gluon_hopper_mma/default/sm_90a  ok .*\n  stages   (.*)\n", doc)
    # (not the PTX's lines nor the cubin's size: their debug sections spell out the kernel file's path, so
    # they move with where the checkout lives, as the README says; CI's clone in /tmp/ciN differed)
    fresh = stage_sizes(load_snapshot(gluon_out[("gluon_hopper_mma", "sm_90a")].path))
    kept = lambda text: [s for s in text.split(" · ") if not s.startswith(("ptx ", "cubin "))]  # noqa: E731
    assert stages and kept(stages.group(1)) == kept(fresh) and len(kept(fresh)) == 4
    assert "GluonJITFunction.run" not in doc  # Triton 3.9 has none: create_binder sets ASTSource = GluonASTSource
