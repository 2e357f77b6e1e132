"""`irscope diff` and `diff_snapshots` on real snapshots: deltas, the default stage, normalisation, exit codes."""
import json
import shutil

import pytest

from irscope.diff.snapshots import diff_snapshots
from irscope.store.snapshot import load_snapshot


def _snap(compiled, kernel, target, variant="default"):
    return compiled / kernel / variant / target


def _moved_copy(src, dest, old: str, new: str):
    """The same snapshot as if compiled in another checkout: every absolute path in its stages differs."""
    import hashlib
    shutil.copytree(src, dest)
    meta = json.loads((dest / "irscope.json").read_text())
    for stage, info in meta["stages"].items():
        path = dest / info["file"]
        if info["lines"] is None:
            continue
        text = path.read_text().replace(old, new)
        path.write_text(text)
        info["sha256"] = hashlib.sha256(text.encode()).hexdigest()
    (dest / "irscope.json").write_text(json.dumps(meta))
    return dest


def test_a_snapshot_equals_itself(cli, compiled):
    code, out, err = cli("diff", _snap(compiled, "add", "sm_90a"), _snap(compiled, "add", "sm_90a"))
    assert code == 0, err
    assert "every common stage is the same" in out


def test_num_warps_4_vs_2_on_hopper_diffs_ttgir_first_and_shows_the_instruction_flip(tmp_path):
    from irscope.harness.batch import Point, compile_points
    from irscope.spec.kernel import CompileOptions
    w4, w2 = compile_points([Point("matmul", "sm_90a", CompileOptions(num_warps=w, config="m64n32k32.w2.s5"))
                             for w in (4, 2)], tmp_path)
    d = diff_snapshots(load_snapshot(w4.path), load_snapshot(w2.path))
    assert not d.equal and d.stage == "ttgir"  # source and ttir are the same: num_warps acts from TTGIR on
    assert d.differing_stages[0] == "ttgir" and "source" not in d.differing_stages
    deltas = {x.key: (x.a, x.b) for x in d.counters}
    assert deltas["ptx.wgmma"][0] > 0 and deltas["ptx.wgmma"][1] == 0
    assert deltas["ptx.mma.sync"][0] == 0 and deltas["ptx.mma.sync"][1] > 0
    assert {x.key for x in d.resources} >= {"num_warps", "registers"}
    assert any(line.startswith("+") and "nvidia_mma<{versionMajor = 2" in line for line in d.unified)
    assert any(line.startswith("-") and "nvidia_mma<{versionMajor = 3" in line for line in d.unified)
    assert not any("loc(" in line for line in d.unified)  # normalised


def test_paths_are_ignored_unless_raw(cli, compiled, tmp_path):
    src = _snap(compiled, "add", "sm_80")
    from irscope.spec.library import builtin_dir
    old = str(builtin_dir())
    moved = _moved_copy(src, tmp_path / "moved", old, "/elsewhere/checkout/kernels")
    code, out, err = cli("diff", src, moved)
    assert code == 0, out + err
    code, out, err = cli("diff", src, moved, "--stage", "ttgir")
    assert code == 0 and "ignored:" in out and "absolute paths" in out and "debug locations" in out
    assert "differ only in what normalisation removes" in out
    code, out, err = cli("diff", src, moved, "--raw")
    assert code == 1 and "/elsewhere/checkout/kernels" in out


def test_different_targets_have_different_stages(cli, compiled):
    code, out, err = cli("diff", _snap(compiled, "matmul", "sm_90a"), _snap(compiled, "matmul", "gfx942"), "--stat")
    assert code == 1
    assert "only in A: ptx, sass" in out and "only in B: amdgcn" in out
    assert "amdgcn.v_mfma" in out and "ptx.wgmma" in out and "launchable" in out
    assert "@@" not in out  # --stat: no unified diff


def test_stage_choice_and_bad_stages(cli, compiled):
    a, b = _snap(compiled, "matmul", "sm_80"), _snap(compiled, "matmul", "sm_90a")
    code, out, err = cli("diff", a, b, "--stage", "ptx", "-U", "0")
    assert code == 1 and "+++ B/ptx" in out and "wgmma.mma_async" in out
    code, out, err = cli("diff", a, b, "--stage", "ttir")
    assert code == 0 and "identical" in out  # the same TTIR for both NVIDIA targets
    code, out, err = cli("diff", a, _snap(compiled, "matmul", "gfx942"), "--stage", "ptx")
    assert code == 4 and "has no stage 'ptx'" in err
    code, out, err = cli("diff", a, b, "--stage", "cubin")
    assert code == 2 and err.startswith("irscope: error: ")


@pytest.fixture
def add_w4_w8(tmp_path):
    """add on sm_80 at its default num_warps (4) and at 8: two compiles of the smallest kernel."""
    from irscope.harness.batch import Point, compile_points
    from irscope.spec.kernel import CompileOptions
    w4, w8 = compile_points([Point("add", "sm_80"), Point("add", "sm_80", CompileOptions(num_warps=8))],
                            tmp_path / "snaps")
    return w4.path, w8.path


def test_diff_json_parses_and_keeps_the_exit_codes(cli, add_w4_w8):
    w4, w8 = add_w4_w8
    code, out, err = cli("diff", w4, w4, "--json")
    assert code == 0, err
    same = json.loads(out)
    assert same["equal"] is True and same["counters"] == [] and same["differing_stages"] == []
    assert same["stage"] is None and same["unified"] == [] and same["a"]["label"] == "add/default/sm_80"
    code, out, err = cli("diff", w4, w8, "--json", "-U", "0")
    assert code == 1, err
    d = json.loads(out)
    assert d["equal"] is False and d["b"]["variant"] == "default.w8" and d["b"]["target"] == "sm_80"
    assert d["differing_stages"][0] == "ttgir" and d["stage"] == "ttgir" and "source" not in d["differing_stages"]
    warps = next(r for r in d["resources"] if r["key"] == "num_warps")
    assert (warps["a"], warps["b"], warps["change"]) == (4, 8, 4)
    assert all(set(c) == {"key", "a", "b", "change"} for c in d["counters"]) and d["counters"]
    lines = d["unified"]
    assert lines[0].startswith("--- A/ttgir") and lines[1].startswith("+++ B/ttgir")
    assert any(line.startswith("-") and '"ttg.num-warps" = 4' in line for line in lines)
    assert any(line.startswith("+") and '"ttg.num-warps" = 8' in line for line in lines)
    code, out, err = cli("diff", w4, w8, "--json", "--stat")
    assert code == 1 and json.loads(out)["unified"] is None  # --stat: no diff lines computed for the output


def test_a_side_that_did_not_compile_and_two_different_kernels_are_said_before_the_tables(cli, compiled, tmp_path):
    # Both were diffed in silence: a failed side's counters read as `-`, and add beside matmul as one kernel.
    code, _, err = cli("compile", "add", "--target", "sm_90a", "--constexpr", "BLOCK_SIZE=1000", "--out", tmp_path)
    assert code == 3, err
    failed = tmp_path / "add" / "default.BLOCK_SIZE=1000" / "sm_90a"
    code, out, err = cli("diff", failed, _snap(compiled, "add", "sm_90a"))
    assert code == 1, err
    note = next(line for line in out.splitlines() if line.startswith("note: A did not compile"))
    assert "(failed at source: " in note and "power of 2" in note, note
    code, out, err = cli("diff", _snap(compiled, "add", "sm_90a"), _snap(compiled, "matmul", "sm_90a"), "--json")
    assert json.loads(out)["notes"] == ["A is add_kernel, B is matmul_kernel: two different kernel functions"]
    code, out, err = cli("diff", _snap(compiled, "add", "sm_90a"), _snap(compiled, "add", "sm_80"), "--json")
    assert json.loads(out)["notes"] == []


def test_two_compiles_that_failed_differently_are_not_equal(cli, tmp_path):
    # Both failed at source, so both have the same few stages: diff said "every common stage is the same"
    # and exited 0, as if nothing told them apart.
    (tmp_path / "k.py").write_text(
        "import triton\nimport triton.language as tl\n\n\n@triton.jit\ndef k(x_ptr, MODE: tl.constexpr):\n"
        "    tl.static_assert(MODE != 1, 'mode one is refused')\n    tl.static_assert(MODE != 2, 'mode two is refused')\n"
        "    tl.store(x_ptr, 1.0)\n")
    for mode, name in ((1, "m1"), (2, "m2"), (2, "m2b")):
        code, _, err = cli("compile", "k.py:k", "--constexpr", f"MODE={mode}", "--arg", "x_ptr=*fp32", "--out", "s",
                           "--name", name)
        assert code == 3, err
    one, two, again = (str(tmp_path / "s" / "k" / v / "sm_90a") for v in ("m1", "m2", "m2b"))
    code, out, err = cli("diff", one, two)
    assert code == 1, err
    assert "note: A did not compile (failed at source: mode one is refused)" in out
    assert "but the compiles ended differently" in out
    code, out, _ = cli("diff", one, two, "--json")
    assert code == 1 and json.loads(out)["outcome"] == {"a": "failed at source: mode one is refused",
                                                        "b": "failed at source: mode two is refused"}
    code, out, _ = cli("diff", two, again, "--json")  # the same failure twice: equal
    assert code == 0 and json.loads(out)["outcome"] is None and json.loads(out)["equal"] is True


def test_a_missing_status_is_ok_and_two_ok_compiles_end_alike(cli, tmp_path):
    # The outcome check (212d9f3) compared irscope.json's raw status and error: a snapshot without a status
    # (ok, as every reader takes it) "ended differently" from its own copy, exit 1.
    code, _, err = cli("compile", "add", "--target", "sm_80", "--out", "s")
    assert code == 0, err
    a = tmp_path / "s" / "add" / "default" / "sm_80"
    b = tmp_path / "nostatus"
    shutil.copytree(a, b)
    meta = json.loads((b / "irscope.json").read_text())
    del meta["status"]
    (b / "irscope.json").write_text(json.dumps(meta))
    code, out, _ = cli("diff", str(a), str(b), "--json")
    assert code == 0 and json.loads(out)["outcome"] is None and json.loads(out)["equal"] is True
