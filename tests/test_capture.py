"""`irscope capture`: a real program runs unchanged in a child process, its launches are recorded once per
specialisation into a launch file, and each compiles device-less with the specialisation it had."""
from __future__ import annotations

import importlib.util
import io
import json
from pathlib import Path

import pytest

from irscope.cli import main
from irscope.errors import SnapshotError
from irscope.store.launches import read_launches, write_launches

PROGRAMS = Path(__file__).parent / "capture_programs"
SMALL = PROGRAMS / "small.py"


def _irscope(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def small_capture(tmp_path_factory):
    out = tmp_path_factory.mktemp("capture")
    code, stdout, stderr = _irscope("capture", "--no-compile", "--out", str(out), "--", "python", str(SMALL))
    assert code == 0, stderr
    return out, read_launches(out / "launches.json"), stderr  # irscope's lines: stdout is the program's


def _args(launch):
    return {a["name"]: a for a in launch["args"]}


def test_each_specialisation_is_recorded_once_with_its_launch_count(small_capture):
    _, data, lines = small_capture
    adds = [launch for launch in data["launches"] if launch["kernel"].endswith(":add")]
    assert len(adds) == 2  # three identical launches are one specialisation; the odd-offset view another
    assert sorted(launch["count"] for launch in adds) == [1, 3]
    assert "4 specialisations of 2 kernels" in lines


def test_odd_offset_views_lose_divisibility_and_none_and_stride_one_become_constants(small_capture):
    _, data, _ = small_capture
    aligned, odd = sorted((launch for launch in data["launches"] if launch["kernel"].endswith(":add")),
                          key=lambda launch: launch["count"], reverse=True)
    assert _args(aligned)["x_ptr"] == {"name": "x_ptr", "kind": "tensor", "dtype": "fp32", "divisibility": 16,
                                       "shape": [4096], "strides": [1], "specialised": "*fp32:D16"}
    assert _args(odd)["x_ptr"]["shape"] == [4095]  # the view x[1:]: what irscope rank counts as its bytes
    assert _args(odd)["bias_ptr"]["alias"] == "y_ptr" and "alias" not in _args(odd)["y_ptr"]  # y passed twice
    assert _args(odd)["x_ptr"]["divisibility"] == 1 and _args(odd)["x_ptr"]["specialised"] == "*fp32"
    assert _args(aligned)["n"]["specialised"] == "i32:D16" and _args(odd)["n"]["specialised"] == "i32"
    assert _args(aligned)["bias_ptr"] == {"name": "bias_ptr", "kind": "none", "specialised": "constexpr"}
    assert _args(odd)["bias_ptr"]["kind"] == "tensor"
    assert _args(aligned)["DT"]["value"] == {"tl_dtype": "fp32"}
    assert _args(aligned)["scale"] == {"name": "scale", "kind": "float", "value": 0.5, "specialised": "fp32"}
    rows = [launch for launch in data["launches"] if launch["kernel"].endswith(":scale_rows")]
    assert all(_args(launch)["stride"]["specialised"] == "constexpr" for launch in rows)
    assert aligned["grid"] == [16, 1, 1] and aligned["first_call"].endswith("small.py:34")


def test_an_autotuned_kernel_records_its_config_space_and_each_config_it_ran(small_capture):
    _, data, _ = small_capture
    kernel = next(k for kid, k in data["kernels"].items() if kid.endswith(":scale_rows"))
    assert [c["BLOCK"] for c in kernel["autotune"]["configs"]] == [64, 128]
    assert kernel["autotune"]["key"] == ["n"]
    rows = [launch for launch in data["launches"] if launch["kernel"].endswith(":scale_rows")]
    assert sorted(launch["autotune_config"] for launch in rows) == [0, 1]
    assert sorted(launch["options"]["num_warps"] for launch in rows) == [2, 4]


def test_the_launch_file_round_trips_and_a_damaged_one_is_refused(small_capture, tmp_path):
    _, data, _ = small_capture
    write_launches(tmp_path / "again.json", data)
    assert read_launches(tmp_path / "again.json") == data
    broken = json.loads(json.dumps(data))
    broken["launches"][0]["args"][0]["kind"] = "pickle"
    (tmp_path / "broken.json").write_text(json.dumps(broken))
    with pytest.raises(SnapshotError, match=r"launches\[0\]\.args\[0\]\.kind"):
        read_launches(tmp_path / "broken.json")


def test_compiling_a_capture_reproduces_the_captured_specialisation(small_capture, tmp_path):
    from irscope.harness.launches import launch_points
    from irscope.targets import get_target

    out, data, _ = small_capture
    points, skipped = launch_points(out / "launches.json", [get_target("sm_90a")])
    assert skipped == []  # launch_points refuses a point whose device-less specialisation differs
    odd = next(p for p in points if dict(p.options.divisibility).get("x_ptr") == 1)
    code, stdout, stderr = _irscope("compile", str(out / "launches.json"), "--target", "sm_90a", "-o",
                                    str(tmp_path))
    assert code == 0, stderr
    variant = odd.options.name
    meta = json.loads((tmp_path / "add" / variant / "sm_90a" / "irscope.json").read_text())
    spec = {a["name"]: a for a in meta["specialisation"]}
    assert spec["x_ptr"]["divisibility"] == 1 and spec["y_ptr"]["divisibility"] == 16
    assert meta["status"] == "ok" and "ptx" in meta["stages"]


def test_a_launch_file_asking_for_an_option_that_reads_a_file_skips_that_launch(small_capture, tmp_path):
    """A launch file is untrusted input: Triton's ir_override would read any file in place of a stage."""
    from irscope.harness.launches import launch_points
    from irscope.targets import get_target

    out, data, _ = small_capture
    hostile = json.loads(json.dumps(data))
    hostile["launches"][0]["options"]["ir_override"] = "/etc/hostname"
    write_launches(tmp_path / "launches.json", hostile)
    points, skipped = launch_points(tmp_path / "launches.json", [get_target("sm_90a")])
    assert [(i, t) for i, t, _ in skipped] == [(hostile["launches"][0]["id"], "sm_90a")]
    assert "ir_override=/etc/hostname" in skipped[0][2] and "never from a file" in skipped[0][2]
    assert len(points) == len(data["launches"]) - 1
    assert not any(dict(p.options.backend_options).get("ir_override") for p in points)


def test_a_failing_program_keeps_its_exit_code_and_what_it_launched(tmp_path):
    code, _, stderr = _irscope("capture", "--no-compile", "--out", str(tmp_path), "--", "python", str(SMALL), "fail")
    assert code == 1
    assert "exited with code 1" in stderr
    assert len(read_launches(tmp_path / "launches.json")["launches"]) == 4
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # nothing half-written left


def test_execute_runs_the_kernels_in_the_interpreter_and_still_records_them(tmp_path):
    code, _, stderr = _irscope("capture", "--execute", "--no-compile", "--out", str(tmp_path), "--", "python",
                               str(SMALL), "check")
    assert code == 0, stderr  # the program's own asserts on the interpreter's results passed
    data = read_launches(tmp_path / "launches.json")
    assert data["mode"] == "interpret"
    assert sorted(launch["id"].split("/")[0] for launch in data["launches"]) == ["add", "add", "scale_rows",
                                                                                 "scale_rows"]


def test_a_tensor_descriptor_stand_in_specialises_like_the_jit(tmp_path):
    from irscope import harness
    from irscope.spec import KernelSpec, TensorDesc
    from irscope.spec.kernel import CompileOptions, parse_value
    from irscope.spec.library import load_kernel
    from irscope.targets import get_target

    assert parse_value("desc:fp16[4096,4096]/[64,64]") == TensorDesc("fp16", (4096, 4096), (64, 64))
    kernel = tmp_path / "desc.py"
    kernel.write_text("import triton, triton.language as tl\n@triton.jit\ndef copy(a_desc, b_desc):\n"
                      "    b_desc.store([0, 0], a_desc.load([0, 0]))\n")
    spec = load_kernel(f"{kernel}:copy")
    opts = CompileOptions(args=(("a_desc", parse_value("desc:bf16[256,128]/[32,16]")),
                                ("b_desc", parse_value("desc:bf16[256,128]/[32,16]"))))
    *_, signature, _, attrs, record = harness.specialise(spec, get_target("sm_90a"), opts)
    assert signature["a_desc"] == "tensordesc<bf16[32, 16]>"
    assert attrs.get((0,)) is None  # no divisibility on a descriptor: shape and strides are run-time values
    assert record[0]["kind"] == "descriptor"
    assert isinstance(KernelSpec, type)


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("liger_kernel") is None,
                    reason="liger-kernel is not installed (pip install -e '.[test,capture]')")
def test_liger_kernel_ops_capture_and_compile_for_the_seven_core_targets(tmp_path):
    targets = "sm_80,sm_90a,sm_100a,sm_120a,gfx90a,gfx942,gfx950"
    code, stdout, stderr = _irscope("capture", "--target", targets, "--out", str(tmp_path), "--", "python",
                                    str(PROGRAMS / "liger_ops.py"))
    assert code == 0, stderr
    assert "FAILED" not in stderr
    data = read_launches(tmp_path / "launches.json")
    names = {k["function"] for k in data["kernels"].values()}
    assert {"_rms_norm_forward_kernel", "_rms_norm_backward_kernel", "_swiglu_forward_kernel",
            "_swiglu_backward_kernel", "liger_cross_entropy_kernel", "_layer_norm_forward_kernel",
            "_triton_rope"} <= names
    compiled = [line for line in stderr.splitlines() if line.split()[1:2] == ["ok"]]
    not_compiled = [line for line in stderr.splitlines() if "not compiled:" in line]
    # Every launch compiles for every target, except where the target cannot run it at all (Liger's
    # CUDA choice of 32 warps exceeds an AMD block of 64-wide waves): those are reported, not hidden.
    assert len(compiled) + len(not_compiled) == 7 * len(data["launches"])
    assert all("at most 16 warps" in line for line in not_compiled)


@pytest.mark.skipif(importlib.util.find_spec("liger_kernel") is None,
                    reason="liger-kernel is not installed (pip install -e '.[test,capture]')")
def test_launches_captured_on_an_h200_specialise_device_less_as_its_jit_did():
    from irscope.harness.launches import launch_points
    from irscope.targets import get_target

    path = Path(__file__).parent.parent / "docs" / "examples" / "capture" / "liger-h200-launches.json"
    data = read_launches(path)
    assert data["mode"] == "gpu" and data["versions"]["triton"] == "3.6.0"
    assert all(set(launch["jit_stages"]) >= {"ttir", "ttgir", "llir", "ptx", "cubin"} for launch in data["launches"])
    points, skipped = launch_points(path, [get_target("sm_90a")])
    # launch_points refuses any launch whose device-less specialisation differs from the JIT's `specialised`
    assert skipped == [] and len(points) == len(data["launches"]) == 9


_KERNEL_MODULE = '''import triton
import triton.language as tl


@triton.jit
def kern(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    v = tl.load(x_ptr + offs, mask=m)
    tl.store(out_ptr + offs, v * 3.0, mask=m)


def make():
    @triton.jit
    def inner(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1.0, mask=offs < n)
    return inner
'''

_KERNEL_PROGRAM = '''import torch
from mykern import kern, make

x, o = torch.randn(1024), torch.zeros(1024)
kern[(4,)](x, o, 1024, BLOCK=256)
make()[(4,)](x, o, 1024, BLOCK=256)
'''


@pytest.fixture(scope="module")
def edited_capture(tmp_path_factory):
    """A program whose kernels live in their own module, captured; then the module is edited (a line
    added above the kernels, the kernels' arithmetic changed) and the capture compiled again for sm_80."""
    work = tmp_path_factory.mktemp("edited")
    (work / "mykern.py").write_text(_KERNEL_MODULE)
    (work / "prog.py").write_text(_KERNEL_PROGRAM)
    code, _, stderr = _irscope("capture", "--no-compile", "--out", str(work / "cap"), "--", "python",
                               str(work / "prog.py"))
    assert code == 0, stderr
    (work / "mykern.py").write_text("# edited after the capture\n" + _KERNEL_MODULE.replace("* 3.0", "* 2.0")
                                    .replace("+ 1.0", "- 1.0"))
    code, _, stderr = _irscope("compile", str(work / "cap" / "launches.json"), "--target", "sm_80", "-o",
                               str(work / "again"))
    assert code == 0, stderr
    return work, read_launches(work / "cap" / "launches.json")


def test_recompiling_a_capture_keeps_the_source_it_compiled_not_the_file_edited_since(edited_capture):
    import re
    work, data = edited_capture
    folder = next((work / "again" / "kern").glob("*/sm_80"))
    source = (folder / "source.py").read_text()
    assert source == _KERNEL_MODULE  # the launch file's module text, not mykern.py as it reads now
    code, shown, stderr = _irscope("show", str(folder), "--stage", "python")
    assert code == 0, stderr
    assert "v * 3.0" in shown and "v * 2.0" not in shown and "edited" not in shown
    # The IR's debug locations count lines in that same text: the store's line holds the store.
    ttir = (folder / "kern.ttir").read_text()
    located = {int(line) for file, line in re.findall(r'loc\("([^"]*)":(\d+):\d+\)', ttir)
               if file.endswith("mykern.py")}
    store = next(i for i, text in enumerate(source.splitlines(), 1) if "tl.store" in text)
    assert store in located and max(located) <= len(source.splitlines())
    # A kernel made inside a function is compiled from its own recorded text: source.py is that text.
    inner = next((work / "again" / "inner").glob("*/sm_80"))
    recorded = next(k for k in data["kernels"].values() if k["function"] == "inner")["src"]
    assert (inner / "source.py").read_text() == recorded and "+ 1.0" in recorded


def test_a_compiled_capture_records_its_kernels_file_and_explain_names_it_not_dot(edited_capture):
    work, _ = edited_capture
    folder = next((work / "again" / "kern").glob("*/sm_80"))
    for snapshot in (folder, next((work / "again" / "inner").glob("*/sm_80"))):
        recorded = json.loads((snapshot / "irscope.json").read_text())["source_file"]
        assert recorded not in (None, ".") and Path(recorded).resolve() == (work / "mykern.py").resolve()
    code, _, stderr = _irscope("explain", str(folder), "--budget", "1")
    assert code == 2 and "Traceback" not in stderr
    error, hint = stderr.splitlines()[:2]
    assert error.startswith("irscope: error: ") and f"is a compile of {recorded}," in error
    assert hint.startswith("irscope: hint: ") and ".:kern" not in hint
    assert f"irscope explain LAUNCHES.json:kern/{folder.parent.name} --target sm_80" in hint  # (no launch file beside)


def test_explain_of_a_captured_snapshot_names_its_launch_and_that_launch_is_explained_with_its_own_options(
        edited_capture):
    """A captured `add` was explained as the built-in `add` (same name); a launch ref was compiled with the
    kernel's defaults, not the warps, stages and divisibility the launch had."""
    work, data = edited_capture
    folder = next((work / "again" / "kern").glob("*/sm_80"))
    data = json.loads(json.dumps(data))
    launch = next(launch for launch in data["launches"] if launch["id"] == f"kern/{folder.parent.name}")
    launch["options"].update(num_warps=2, num_stages=2)  # not the kernel's defaults (4, 3): which base is seen
    write_launches(work / "again" / "launches.json", data)
    code, _, stderr = _irscope("explain", str(folder), "--budget", "1")
    ref = f"{work / 'again' / 'launches.json'}:kern/{folder.parent.name}"
    assert code == 2 and f"irscope explain {ref} --target sm_80" in stderr, stderr
    code, out, stderr = _irscope("explain", ref, "--target", "sm_80", "--budget", "0", "--json", "-o",
                                 str(work / "explained"))
    assert code == 0, stderr
    base = json.loads((Path(json.loads(out)["snapshot"]) / "irscope.json").read_text())
    assert (base["request"]["num_warps"], base["request"]["num_stages"]) == (2, 2)
    code, out, stderr = _irscope("explain", ref, "--target", "sm_80", "--budget", "0", "--json", "--no-line-info",
                                 "-o", str(work / "explained"))
    assert code == 0, stderr
    assert json.loads((Path(json.loads(out)["snapshot"]) / "irscope.json").read_text())["request"]["line_info"] is False
    code, _, stderr = _irscope("explain", f"{work / 'again' / 'launches.json'}:kern/nope", "--target", "sm_80")
    assert code == 2 and "has no launch 'kern/nope'" in stderr and "launches in it: " in stderr
    code, _, stderr = _irscope("explain", ref, "--target", "sm_80", "--num-warps", "8")
    assert code == 2 and "the launch's own are the base" in stderr


def test_a_captured_kernel_from_no_file_records_no_source_file(edited_capture, tmp_path):
    """`<string>` (a kernel exec'd from text) names no file: null, not "." nor the pseudo-name."""
    work, data = edited_capture
    launch = next(launch for launch in data["launches"] if launch["id"].startswith("kern/"))
    fileless = json.loads(json.dumps(data))
    fileless["kernels"][launch["kernel"]]["file"] = "<string>"
    write_launches(tmp_path / "launches.json", fileless)
    code, _, stderr = _irscope("compile", f"{tmp_path / 'launches.json'}:{launch['id']}", "--target", "sm_80",
                               "-o", str(tmp_path / "out"))
    assert code == 0, stderr
    meta = json.loads(next((tmp_path / "out").glob("kern/*/sm_80/irscope.json")).read_text())
    assert meta["source_file"] is None


@pytest.mark.parametrize("change", [{"description": "captured: prog.py:12"}, {"source_file": "mine/other.py"}])
def test_a_snapshot_of_another_kernel_named_like_a_builtin_is_not_explained_as_the_builtin(tmp_path, change):
    import shutil
    folder = tmp_path / "add" / "w4.s3.0123456789" / "sm_80"
    shutil.copytree(Path(__file__).parent.parent / "snapshots" / "add" / "default" / "sm_80", folder)
    meta = json.loads((folder / "irscope.json").read_text())
    (folder / "irscope.json").write_text(json.dumps({**meta, **change}))
    code, _, stderr = _irscope("explain", str(folder), "--budget", "1", "-o", str(tmp_path / "out"))
    assert code == 2 and "not of a built-in kernel" in stderr and not (tmp_path / "out").exists(), stderr


def test_a_builtin_compiled_from_inside_its_folder_is_still_explained_as_the_builtin(tmp_path):
    """source_file is relative to where the compile ran: `add.py` from inside kernels/ is the built-in's."""
    import shutil
    folder = tmp_path / "add" / "default" / "sm_80"
    shutil.copytree(Path(__file__).parent.parent / "snapshots" / "add" / "default" / "sm_80", folder)
    meta = json.loads((folder / "irscope.json").read_text())
    (folder / "irscope.json").write_text(json.dumps({**meta, "source_file": "add.py"}))
    code, _, stderr = _irscope("explain", str(folder), "--budget", "1", "-o", str(tmp_path / "out"))
    assert code == 0, stderr
