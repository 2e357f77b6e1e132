"""`irscope capture --as TARGET`: a program written for a GPU (it asks torch.cuda for its device, puts tensors on
"cuda", sizes its grid by the SM count) runs without one, its launches are recorded as that GPU's JIT would
specialise them, the launch file says it was an emulation, and the capture compiles back device-less."""
from __future__ import annotations

import io
from pathlib import Path

import pytest

from irscope.cli import main
from irscope.harness.capture_emulate import device_properties
from irscope.store.launches import read_launches
from irscope.targets import get_target

ASKS_CUDA = Path(__file__).parent / "capture_programs" / "asks_cuda.py"
ASKS_CUDA_CHECKED = Path(__file__).parent / "capture_programs" / "asks_cuda_checked.py"


def _irscope(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def as_sm80(tmp_path_factory):
    out = tmp_path_factory.mktemp("as-sm80")
    code, stdout, stderr = _irscope("capture", "--as", "sm_80", "--out", str(out), "--", "python", str(ASKS_CUDA))
    assert code == 0, stderr
    return read_launches(out / "launches.json"), stderr  # irscope's lines: stdout is the program's


def _args(launch):
    return {a["name"]: a for a in launch["args"]}


def test_a_program_that_needs_cuda_runs_under_as_and_sees_that_targets_device(as_sm80):
    data, lines = as_sm80
    (launch,) = data["launches"]
    assert launch["grid"] == [108, 1, 1]  # an A100's SM count, from torch.cuda.get_device_properties
    args = _args(launch)
    assert args["BLOCK"]["value"] == 32  # the program's pre-Hopper choice, from get_device_capability
    assert args["x_desc"] == {"name": "x_desc", "kind": "descriptor", "dtype": "fp16", "shape": [4096, 32],
                              "strides": [32, 1], "block_shape": [32, 32], "padding": "zero",
                              "specialised": "tensordesc<fp16[32, 32]>"}
    assert args["out_ptr"]["specialised"] == "*fp16:D16"  # a "cuda" tensor, made on the CPU, aligned as on a GPU
    assert "for emulated sm_80" in lines
    assert f"{launch['id']}/sm_80  ok" in lines  # compiled for the target --as named (no --target given)


def test_the_launch_file_says_the_gpu_was_emulated_and_what_it_answered(as_sm80):
    data, _ = as_sm80
    assert data["mode"] == "record" and data["captured_for"]["name"] == "sm_80"
    emulation = data["emulation"]
    assert emulation["as"] == "sm_80"
    assert "get_device_properties" in emulation["torch_cuda_calls"]
    assert emulation["device_properties"]["multi_processor_count"] == 108
    assert emulation["device_properties"]["name"].startswith("irscope emulation of sm_80")


def test_without_as_the_same_program_stops_for_want_of_a_gpu(tmp_path):
    code, _, stderr = _irscope("capture", "--no-compile", "--out", str(tmp_path), "--", "python", str(ASKS_CUDA))
    assert code == 1
    data = read_launches(tmp_path / "launches.json")
    assert data["launches"] == [] and "emulation" not in data


def test_as_sm90a_takes_the_hopper_path_and_the_capture_compiles_back_with_tma(tmp_path):
    import torch
    before = (torch.cuda.is_available, torch.cuda.get_device_properties)
    code, stdout, stderr = _irscope("capture", "--as", "sm_90a", "--out", str(tmp_path), "--", "python",
                                    str(ASKS_CUDA))
    assert code == 0, stderr
    (launch,) = read_launches(tmp_path / "launches.json")["launches"]
    assert launch["grid"] == [132, 1, 1] and _args(launch)["BLOCK"]["value"] == 64
    assert f"{launch['id']}/sm_90a  ok" in stderr
    folder = tmp_path / launch["id"] / "sm_90a"
    assert "async_tma_copy_global_to_local" in next(folder.glob("*.ttgir")).read_text()
    # compiling it back emulated the GPU in this process only while the kernel's module was imported
    assert (torch.cuda.is_available, torch.cuda.get_device_properties) == before
    assert torch.overrides._get_current_function_mode() is None  # no "cuda"-to-CPU mode left on the stack


def test_as_with_execute_runs_the_kernels_in_the_interpreter_so_a_program_checking_its_result_passes(tmp_path):
    # asks_cuda_checked.py exits 3 unless its kernel really wrote out = 2 * x: under --as alone (record
    # mode, nothing executed) it does; with --execute the interpreter runs the kernel on the CPU tensors
    # the emulation made, on the grid the emulated SM count gave, and the capture compiles back.
    executed, recorded = tmp_path / "executed", tmp_path / "recorded"
    code, stdout, stderr = _irscope("capture", "--as", "sm_90a", "--execute", "--out", str(executed), "--",
                                    "python", str(ASKS_CUDA_CHECKED))
    assert code == 0, stderr
    data = read_launches(executed / "launches.json")
    assert data["mode"] == "interpret" and data["exit_code"] == 0 and data["captured_for"]["name"] == "sm_90a"
    assert data["emulation"]["as"] == "sm_90a"
    assert "Triton's interpreter ran the kernels" in data["emulation"]["what"]
    (launch,) = data["launches"]
    assert launch["grid"] == [132, 1, 1] and _args(launch)["BLOCK"]["value"] == 128 and launch["count"] == 1
    assert "(interpret mode, for emulated sm_90a)" in stderr
    assert f"{launch['id']}/sm_90a  ok" in stderr

    code, _, stderr = _irscope("capture", "--as", "sm_90a", "--no-compile", "--out", str(recorded), "--",
                               "python", str(ASKS_CUDA_CHECKED))
    assert code == 3, stderr  # the program's own exit code: its check failed, nothing had run
    same = read_launches(recorded / "launches.json")
    assert same["mode"] == "record" and "nothing was executed" in same["emulation"]["what"]
    (alike,) = same["launches"]  # the interpreter's shadow JIT recorded what record mode records
    assert (alike["id"], alike["grid"], alike["args"]) == (launch["id"], launch["grid"], launch["args"])


def test_as_refuses_an_amd_target_before_the_program_starts(tmp_path):
    code, _, stderr = _irscope("capture", "--as", "gfx942", "--no-compile", "--out", str(tmp_path), "--",
                               "python", str(ASKS_CUDA))
    assert code == 2
    assert "only NVIDIA targets can be emulated" in stderr
    assert not (tmp_path / "launches.json").exists()


def test_each_emulated_device_has_its_architectures_limits():
    hopper, consumer = device_properties(get_target("sm_90a")), device_properties(get_target("sm_120a"))
    assert (hopper.major, hopper.minor, hopper.multi_processor_count) == (9, 0, 132)
    assert hopper.shared_memory_per_block_optin == 227 * 1024
    assert (consumer.major, consumer.multi_processor_count, consumer.shared_memory_per_block_optin) == (12, 170,
                                                                                                       99 * 1024)

