"""Values of the wrong type on the command line are usage errors before any compile: exit 2, one line naming
the argument and the type it takes, a hint, and no snapshot folder (not even a failed one)."""
import io

import pytest

from irscope.cli import main
from tests.conftest import DATA

USER = DATA / "user_kernels.py"
ANNOTATED = '''
import triton
import triton.language as tl


@triton.jit
def annotated(x_ptr: "*fp32", n: tl.int32, factor: tl.float32, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * factor, mask=offs < n)
'''


def _run(argv, out_dir):
    out, err = io.StringIO(), io.StringIO()
    code = main([*map(str, argv), "--out", str(out_dir)], out=out, err=err)
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("argv, name, words", [
    (["--arg", "K=*fp16"], "K", ["integer", "not a tensor"]),
    (["--arg", "a_ptr=4096"], "a_ptr", ["tensor", "not an integer"]),
    (["--arg", "K=4000.5"], "K", ["integer", "not a number"]),
    (["--arg", "K=abc"], "K", ["integer", "not a word"]),
    (["--arg", "K=true"], "K", ["integer", "not a boolean"]),
    (["--option", "maxnreg=abc"], "maxnreg", ["takes an integer"]),
    (["--option", "enable_fp_fusion=3"], "enable_fp_fusion", ["takes a boolean"]),
    (["--option", "supported_fp8_dtypes=fp8e5"], "supported_fp8_dtypes", ["takes a list"]),
    (["--option", "bogus=1"], "bogus", ["unknown backend option 'bogus' for sm_90a"]),
    (["--num-warps", "64"], "--num-warps", ["at most 32 warps"]),
    (["--num-warps", "3"], "--num-warps", ["not a power of two"]),
    # compiled, then its own snapshot was refused as damaged (exit 4): more than Triton's 32-bit int
    (["--num-stages", "99999999999999999999"], "--num-stages", ["at most 2147483647"]),
    (["--jobs", "0"], "--jobs", ["positive integer"]),
    (["--timeout", "0"], "--timeout", ["positive number of seconds"]),
    (["--timeout", "-5"], "--timeout", ["positive number of seconds"]),
])
def test_a_wrongly_typed_value_is_a_usage_error_naming_the_argument(tmp_path, argv, name, words):
    code, out, err = _run(["compile", "matmul", "--target", "sm_90a", *argv], tmp_path / "D")
    lines = err.splitlines()
    assert code == 2, err
    assert lines[0].startswith("irscope: error: ") and lines[1].startswith("irscope: hint: "), err
    assert name in lines[0] and all(w in lines[0] for w in words), err
    assert "Traceback" not in err and out == ""
    assert not (tmp_path / "D").exists()  # checked before any compile: no failed snapshot folder


def test_an_unknown_option_lists_the_known_ones_and_the_closest(tmp_path):
    code, _, err = _run(["compile", "matmul", "--option", "maxnrg=1"], tmp_path / "D")
    assert code == 2 and "unknown backend option 'maxnrg' for sm_90a" in err
    hint = err.splitlines()[1]
    assert "did you mean maxnreg" in hint and "enable_fp_fusion" in hint and "num_ctas" in hint


def test_the_warp_limit_follows_the_targets_warp_size(tmp_path):
    # 1024 threads a block: 32 warps of 32 on NVIDIA, 16 waves of 64 on CDNA.
    code, _, err = _run(["compile", "add", "--target", "gfx942", "--num-warps", "32"], tmp_path / "D")
    assert code == 2 and "gfx942 runs at most 16 warps" in err and "1, 2, 4, 8, 16" in err
    assert not (tmp_path / "D").exists()


def test_one_bad_target_of_many_stops_every_compile(tmp_path):
    code, _, err = _run(["compile", "add", "--target", "sm_90a,gfx942", "--num-warps", "32"], tmp_path / "D")
    assert code == 2 and "gfx942" in err and not (tmp_path / "D").exists()


def test_a_spec_less_kernel_takes_its_types_from_triton_annotations(tmp_path):
    kernel = tmp_path / "annotated.py"
    kernel.write_text(ANNOTATED)
    ok = ["--arg", "x_ptr=*fp32", "--arg", "n=4096", "--arg", "factor=2", "--constexpr", "BLOCK=128"]
    for arg, words in (("n=*fp16", ["annotated i32", "integer"]), ("factor=*fp16", ["annotated fp32", "number"]),
                       ("x_ptr=8", ["annotated *fp32", "tensor"])):
        argv = ["compile", f"{kernel}:annotated", *ok, "--arg", arg]
        code, _, err = _run(argv, tmp_path / "D")
        assert code == 2 and f"--arg {arg}" in err and all(w in err for w in words), err
    assert not (tmp_path / "D").exists()


def test_a_spec_less_kernel_without_annotations_takes_no_words(tmp_path):
    argv = ["compile", f"{USER}:scale", "--arg", "x_ptr=*fp32", "--arg", "out_ptr=*fp32", "--arg", "n=abc",
            "--arg", "factor=2.0", "--constexpr", "BLOCK=256"]
    code, _, err = _run(argv, tmp_path / "D")
    assert code == 2 and "--arg n=abc" in err and "not a word" in err
    assert not (tmp_path / "D").exists()


def test_well_typed_values_still_compile(tmp_path):
    # an integer where the spec has a float, true/false for a boolean option
    code, out, err = _run(["compile", f"{USER}:scale", "--arg", "x_ptr=*fp32", "--arg", "out_ptr=*fp32",
                           "--arg", "n=4096", "--arg", "factor=2", "--constexpr", "BLOCK=256",
                           "--option", "enable_fp_fusion=false", "--target", "sm_80"], tmp_path / "D")
    assert code == 0, err
