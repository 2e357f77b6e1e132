"""`irscope snapshot check|update` on real compiles."""
import json
import shutil

from tests.conftest import DATA


def test_update_then_check_passes_and_a_changed_golden_fails(cli, tmp_path):
    code, out, err = cli("snapshot", "update", "add", "--target", "sm_80,gfx90a", "--goldens", "g")
    assert code == 0, err
    assert "add/default/sm_80  written" in out and (tmp_path / "g/.irscope-goldens").is_file()
    code, out, err = cli("snapshot", "check", "--goldens", "g")
    assert code == 0 and out.count("match") == 2
    ptx = tmp_path / "g/add/default/sm_80/add_kernel.ptx"
    ptx.write_text(ptx.read_text().replace("add.f32", "sub.f32"))
    code, out, err = cli("snapshot", "check", "--goldens", "g")
    assert code == 1 and "add/default/sm_80  mismatch" in out and "first differing stage: ptx" in out
    assert "-\tsub.f32" in out.replace("    ", "\t") or "sub.f32" in out
    assert "irscope: error: 1 of 2 snapshots do not match their goldens" in err
    code, out, err = cli("snapshot", "update", "--goldens", "g")
    assert code == 0 and "add/default/sm_80  written" in out and "add/default/gfx90a  match" in out


def test_user_kernel_goldens_are_recompiled_from_where_they_were_made(cli, tmp_path):
    shutil.copy(DATA / "user_kernels.py", tmp_path / "mine.py")
    code, out, err = cli("snapshot", "update", "mine.py:copy_rows", "--goldens", "g", "--num-warps", "2")
    assert code == 0, err
    record = json.loads((tmp_path / "g/copy_rows/default.w2/sm_90a/golden.json").read_text())
    assert record["kernel"] == "mine.py:copy_rows"
    code, out, err = cli("snapshot", "check", "--goldens", "g")
    assert code == 0 and "copy_rows/default.w2/sm_90a  match" in out


def test_missing_goldens_and_version_mismatch(cli, tmp_path):
    code, out, err = cli("snapshot", "check", "--goldens", "nowhere")
    assert code == 4 and "no golden folder 'nowhere'" in err
    code, out, err = cli("snapshot", "check", "add", "--goldens", "g")
    assert code == 1 and "no golden snapshot for add/default/sm_90a" in out
    assert "irscope snapshot update add --target sm_90a" in out
    cli("snapshot", "update", "add", "--goldens", "g")
    meta_path = tmp_path / "g/add/default/sm_90a/irscope.json"
    meta = json.loads(meta_path.read_text())
    meta["versions"]["triton"] = "3.5.0"
    meta_path.write_text(json.dumps(meta))
    code, out, err = cli("snapshot", "check", "--goldens", "g")
    assert code == 0 and "skipped" in out and "goldens made with Triton 3.5.0; this is Triton" in out
    code, out, err = cli("snapshot", "check", "--goldens", "g", "--on-version-mismatch", "fail")
    assert code == 1 and "@@" not in out
