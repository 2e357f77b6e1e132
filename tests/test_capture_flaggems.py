"""FlagGems captured without a GPU (`irscope capture --as sm_90a`): the kernels it generates at run time keep
their source and the helpers they were given, its Hopper matmul takes host-side TensorDescriptors, and every
launch specialises back device-less exactly as the JIT did. (The seven-target compile and the H200 check
are in docs/capture.md; they are too many compiles for a test.)

FlagGems is not in the test extra: its wheel pins numpy==1.26.4 and other versions, so it is installed
with `pip install --no-deps flag-gems==5.0.2 sqlalchemy==2.0.48` (docs/capture.md); without it these skip."""
from __future__ import annotations

import importlib.util
import io
from pathlib import Path

import pytest

from irscope.cli import main
from irscope.store.launches import read_launches
from irscope.targets import get_target

pytestmark = pytest.mark.skipif(importlib.util.find_spec("flag_gems") is None or
                                importlib.util.find_spec("sqlalchemy") is None,
                                reason="FlagGems is not installed: pip install --no-deps flag-gems==5.0.2 "
                                       "sqlalchemy==2.0.48 (its pins would replace numpy; docs/capture.md)")

PROGRAM = Path(__file__).parent / "capture_programs" / "flaggems_ops.py"


@pytest.fixture(scope="module")
def capture(tmp_path_factory):
    out = tmp_path_factory.mktemp("flaggems")
    err = io.StringIO()
    code = main(["capture", "--as", "sm_90a", "--no-compile", "--out", str(out), "--", "python", str(PROGRAM)],
                out=io.StringIO(), err=err)
    assert code == 0, err.getvalue()
    return out / "launches.json", read_launches(out / "launches.json")


def _launches(data, name):
    return [launch for launch in data["launches"] if data["kernels"][launch["kernel"]]["name"] == name]


def test_every_op_forward_and_backward_is_captured_on_the_hopper_path(capture):
    _, data = capture
    names = {k["name"] for k in data["kernels"].values()}
    assert {"add_func_kernel_rank_1", "gelu_none_kernel_rank_1", "gelu_backward_none_kernel_rank_1",
            "silu_forward_kernel_rank_1", "silu_backward_kernel_kernel_rank_1", "mm_kernel_general_host_tma",
            "softmax_kernel_inner", "softmax_backward_kernel_inner", "layer_norm_persistent_kernel",
            "layer_norm_backward_kernel", "weight_bias_backward_kernel"} <= names
    assert "mm_kernel_general" not in names  # the emulated sm_90a made FlagGems pick its Hopper matmul
    assert data["emulation"]["as"] == "sm_90a" and data["skipped"] == []


def test_the_hopper_matmul_takes_host_descriptors_with_the_block_its_pre_hook_set(capture):
    _, data = capture
    mms = _launches(data, "mm_kernel_general_host_tma")
    assert len(mms) == 6  # forward and the two backward products, each autotuned over two configs
    for launch in mms:
        descs = [a for a in launch["args"] if a["kind"] == "descriptor"]
        assert [d["name"] for d in descs] == ["a_desc", "b_desc", "c_desc"]
        assert all(d["block_shape"] == [32, 32] and d["specialised"] == "tensordesc<fp16[32, 32]>" for d in descs)
    row_major = {tuple(a["value"] for a in launch["args"] if a["name"] in ("A_ROW_MAJOR", "B_ROW_MAJOR"))
                 for launch in mms}
    assert row_major == {(True, True), (True, False), (False, True)}  # dA = dC B^T, dB = A^T dC


def test_a_generated_kernel_keeps_its_module_source_and_the_helper_it_was_handed(capture):
    _, data = capture
    kernel = next(k for k in data["kernels"].values() if k["name"] == "gelu_none_kernel_rank_1")
    assert "def gelu_none_kernel_rank_1(" in kernel["module_source"] and kernel["src"].startswith("def ")
    assert "code_cache" in kernel["file"]
    assert kernel["globals"]["gelu_none"] == "flag_gems.ops.gelu:gelu_none"


def test_every_launch_specialises_back_device_less_as_the_jit_did(capture):
    from irscope.harness.launches import launch_points, load_launch_kernel

    path, data = capture
    points, skipped = launch_points(path, [get_target("sm_90a")])
    assert skipped == [] and len(points) == len(data["launches"])
    gelu = next(p for p in points if "/gelu_none_kernel_rank_1/" in p.kernel or ":gelu_none_kernel_rank_1/" in p.kernel)
    spec, _ = load_launch_kernel(gelu.kernel)
    helper = spec.fn.__globals__["gelu_none"]
    assert "erf" in helper.__globals__  # FlagGems' gelu_none, with its module's globals, not the bare copy


def test_the_hopper_matmul_compiles_back_to_tma_copies(capture):
    from irscope import harness
    from irscope.harness.launches import launch_points, load_launch_kernel

    path, _ = capture
    target = get_target("sm_90a")
    points, _ = launch_points(path, [target])
    point = next(p for p in points if "mm_kernel_general_host_tma/w4." in p.kernel)
    spec, _ = load_launch_kernel(point.kernel)
    result = harness.compile_kernel(spec, target, point.options)
    assert result.ok
    assert "async_tma_copy_global_to_local" in result.stages["ttgir"]
    assert "cp.async.bulk.tensor" in result.stages["ptx"]  # 32x32 tiles: mma.sync, not wgmma


def test_the_cpu_capture_records_exactly_the_launches_of_the_h200s_jit(capture):
    # docs/examples/capture/flaggems-h200-launches.json: the same program on an H200, real JIT and autotuning
    # (Triton 3.6.0, torch 2.11): the same launches, each with the same arguments, grid and autotune config.
    _, data = capture
    h200 = read_launches(Path(__file__).parent.parent / "docs" / "examples" / "capture" / "flaggems-h200-launches.json")
    assert h200["mode"] == "gpu" and "emulation" not in h200

    def launches(d):  # (the H200's file predates the tensors' shape, strides and alias fields)
        args = lambda x: [{k: v for k, v in a.items() if k not in ("shape", "strides", "alias") or a["kind"] != "tensor"}  # noqa: E731
                          for a in x["args"]]
        return {x["id"]: (args(x), x.get("grid"), x.get("autotune_config")) for x in d["launches"]}

    assert launches(data) == launches(h200)
