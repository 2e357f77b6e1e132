"""`irscope run --interpret`: the check half of the runner, through the real CLI and the real interpreter."""
import math

import pytest

from tests.conftest import DATA

WRONG = DATA / "wrong_kernels.py"


def test_run_interpret_checks_every_ci_size_and_passes(cli):
    code, out, err = cli("run", "add", "--interpret")
    assert code == 0, err
    assert "size small (n=8192)" in out and "size ragged (n=5001)" in out
    assert out.count("PASS") == 2 and "2 passed, 0 failed" in out
    assert "launch  add grid=(5,)" in out  # 5001 elements in blocks of 1024: the ragged tail has a program
    assert "Triton interpreter on the CPU" in out


def test_a_kernel_with_wrong_arithmetic_fails_with_exit_1(cli):
    code, out, err = cli("run", f"{WRONG}:add_off_by_one", "--interpret", "--size", "small")
    assert code == 1, out + err
    assert "FAIL" in out and "elements outside tolerance" in out
    assert "0 NaN" in out  # every element was written, just wrong


@pytest.mark.slow
def test_outputs_are_poisoned_so_an_unwritten_tail_fails(cli):
    # n=256 is two whole blocks: the floor-sized grid happens to cover it; n=300 leaves 44 elements unwritten.
    code, out, err = cli("run", f"{WRONG}:add_no_tail", "--interpret", "--size", "small")
    assert code == 0, out + err
    code, out, err = cli("run", f"{WRONG}:add_no_tail", "--interpret", "--size", "ragged")
    assert code == 1
    assert "44 of 300 elements outside tolerance (44 NaN: never written)" in out


def test_size_overrides_apply_over_the_first_preset(cli):
    code, out, err = cli("run", "softmax", "--interpret", "--size", "cols=100")
    assert code == 0, err
    assert "(rows=16, cols=100)" in out and out.count("PASS") == 1


def test_bad_requests_fail_before_any_process_starts(cli):
    code, _, err = cli("run", "add", "--interpret", "--size", "m=3")
    assert code == 2 and "bad --size item 'm=3'" in err and "dimensions are n" in err
    code, _, err = cli("run", "add", "--interpret", "--config", "b4097")
    assert code == 2 and "did you mean b4096" in err
    code, _, err = cli("run", "nosuchkernel", "--interpret")
    assert code == 2 and "unknown kernel" in err


def test_a_kernel_without_a_workload_cannot_run(cli):
    code, _, err = cli("run", f"{DATA / 'user_kernels.py'}:copy_rows", "--interpret")
    assert code == 2 and "has no workload" in err and "docs/kernel-spec.md" in err


def test_without_a_gpu_run_asks_for_interpret(cli):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a CUDA GPU is present: this checks the message on machines without one")
    code, out, err = cli("run", "add")
    assert code == 5
    assert "no CUDA GPU" in err and "pass --interpret" in err


def test_a_missing_snapshot_folder_is_named_before_where_it_would_run(cli, tmp_path):
    """On any machine, GPU or not, a --snapshot that is not a snapshot is the error, not the lack of a GPU."""
    code, _, err = cli("run", "--snapshot", tmp_path / "nope", "--size", "bench")
    assert code == 4 and "nope' does not exist" in err and "CUDA" not in err and "Traceback" not in err


def test_size_presets_and_overrides_parse():
    from irscope.errors import UsageError
    from irscope.spec.library import load_kernel
    w = load_kernel("matmul").workload
    assert w.parse_size(None, "small") == ("small", {"M": 128, "N": 256, "K": 128})
    assert w.parse_size("ragged", "small") == ("ragged", {"M": 100, "N": 200, "K": 70})
    assert w.parse_size("K=17", "small") == ("K=17", {"M": 128, "N": 256, "K": 17})
    assert w.parse_size("bench:M=33,N=65", "small")[1] == {"M": 33, "N": 65, "K": 4096}
    for bad in ("Q=3", "K=x", "K=0", "nosuch", "nosuch:K=3"):
        with pytest.raises(UsageError):
            w.parse_size(bad, "small")


def test_a_workload_names_the_other_specs_it_launches():
    from irscope.errors import UsageError
    from irscope.spec.library import load_kernel
    from irscope.gpu.runner import params_of
    spec = load_kernel("blur.col")
    p = params_of(spec, spec.workload, "h32w64")
    assert p["BLOCK_H"] == 32 and p.num_warps == 8
    assert p.of("blur.row")["BLOCK_W"] == 128 and p.of("blur.gray").kernel == "blur.gray"
    with pytest.raises(UsageError):
        p.of("blur")


def test_a_number_where_the_reference_has_nan_is_a_mismatch():
    torch = pytest.importorskip("torch")
    from irscope.gpu.runner import compare
    want = torch.tensor([1.0, math.nan, math.inf, math.nan])
    agree = compare("o", torch.tensor([1.0, math.nan, math.inf, math.nan]), want)
    assert agree.ok and agree.max_abs == 0.0 and agree.max_rel == 0.0  # NaN against NaN is no error of inf
    wrote = compare("o", torch.tensor([1.0, 0.0, math.inf, math.nan]), want)
    assert not wrote.ok and wrote.mismatches == 1 and wrote.worst_index == (1,) and wrote.nans == 0
    inf_for_nan = compare("o", torch.tensor([1.0, math.nan, math.inf, math.inf]), want)
    assert inf_for_nan.mismatches == 1 and inf_for_nan.worst_index == (3,)


def test_a_number_or_the_opposite_infinity_where_the_reference_is_infinite_is_a_mismatch():
    """Against an infinite reference the tolerance atol + rtol*|want| is infinite, and no difference is
    greater: 5 against inf, and -inf against inf, passed."""
    torch = pytest.importorskip("torch")
    from irscope.gpu.runner import compare
    want = torch.tensor([math.inf, math.inf, -math.inf, 2.0])
    assert compare("o", torch.tensor([math.inf, math.inf, -math.inf, 2.0]), want).ok
    check = compare("o", torch.tensor([5.0, -math.inf, -math.inf, math.inf]), want)
    assert check.mismatches == 3 and not check.ok


def test_an_interpreter_childs_unreadable_results_are_the_checks_failure_not_a_traceback(monkeypatch, tmp_path):
    """A child killed while writing its results left half a JSON file, read back as a JSONDecodeError (exit
    70). The child now writes them whole by a rename; the reader turns anything unreadable into failures."""
    import subprocess
    from pathlib import Path
    from irscope.gpu import runner

    def half_written(cmd, **kwargs):
        Path(cmd[-1]).write_text('[{"kernel": "add", "ok": tr')
        return subprocess.CompletedProcess(cmd, -9, "", "")

    monkeypatch.setattr(runner.subprocess, "run", half_written)
    (result,) = runner.check_many_interpreted([runner.Request("add", size="small")])
    assert not result.ok and "interpreter process died" in result.error
