"""Regressions found by reviewing the snapshot store and the commands that read snapshots back
(show, diff, stats, snapshot check/update): each test fails without its fix."""
import json

from irscope.diff.snapshots import diff_snapshots
from irscope.store.snapshot import load_snapshot


def test_diff_of_an_nvidia_and_an_amd_snapshot_never_subtracts_blocks_per_sm_from_waves_per_simd(goldens):
    d = diff_snapshots(load_snapshot(goldens / "add" / "default" / "sm_90a"),
                       load_snapshot(goldens / "add" / "default" / "gfx942"))
    occupancy = {x.key: x for x in d.resources if x.key.startswith("occupancy")}
    assert set(occupancy) == {"occupancy (blocks/SM)", "occupancy (waves/SIMD)"}
    assert occupancy["occupancy (blocks/SM)"].b is None and occupancy["occupancy (blocks/SM)"].a > 0
    assert occupancy["occupancy (waves/SIMD)"].a is None and occupancy["occupancy (waves/SIMD)"].b > 0
    assert all(x.change is None for x in occupancy.values())


def test_snapshot_check_keep_naming_a_file_is_a_usage_error_that_leaves_the_file_alone(cli, tmp_path):
    keep = tmp_path / "notes.txt"
    keep.write_text("mine")
    for where in (keep, keep / "sub"):
        code, out, err = cli("snapshot", "check", "add", "--goldens", tmp_path / "g", "--keep", where)
        assert code == 2, err
        assert "internal error" not in err and "irscope: error: " in err and "--keep" in err
        assert "irscope: hint: " in err
    assert keep.read_text() == "mine"


def _compare_axes(*argv):
    from irscope.cli import build_parser
    from irscope.cli.compare import axes_from_args
    return dict(axes_from_args(build_parser().parse_args(["compare", *argv])))


def test_compare_axis_values_given_twice_are_one_point_not_two_identical_columns():
    assert _compare_axes("add", "--num-warps", "4,4,8")["num_warps"] == [4, 8]
    assert _compare_axes("add", "--arg", "n_elements=1,1,2")["arg.n_elements"] == [1, 2]


def test_compare_constexpr_given_twice_is_one_axis_of_every_value_not_the_last_one():
    axes = _compare_axes("add", "--constexpr", "BLOCK_SIZE=256", "--constexpr", "BLOCK_SIZE=512,256")
    assert axes["BLOCK_SIZE"] == [256, 512]


def test_compare_config_or_divisibility_of_no_value_is_a_usage_error_not_an_empty_table(cli, tmp_path):
    for flag in ("--config", "--divisibility"):
        code, out, err = cli("compare", "add", flag, ",", "--out", tmp_path / "out")
        assert code == 2, (flag, out, err)
        assert f"irscope: error: no " in err and flag in err and "irscope: hint: " in err
        assert not (tmp_path / "out").exists()


def test_compile_with_a_relative_out_from_inside_a_golden_root_is_refused_without_update_goldens(
        cli, tmp_path, monkeypatch):
    root = tmp_path / "goldens"
    (root / "add").mkdir(parents=True)
    (root / ".irscope-goldens").write_text("committed goldens\n")
    monkeypatch.chdir(root / "add")  # `--out .` from a folder inside the root: its parents stop at the cwd
    code, out, err = cli("compile", "add", "--target", "sm_90a", "--out", ".")
    assert code == 2, out + err
    assert "holds committed golden snapshots" in err and str(root) in err
    assert list((root / "add").iterdir()) == []


def test_snapshot_update_keep_into_a_golden_root_not_yet_marked_is_refused_not_taken_for_a_match(cli, tmp_path):
    goldens = tmp_path / "goldens"  # no .irscope-goldens yet: its first update writes it
    for keep in (goldens, goldens / "fresh"):
        code, out, err = cli("snapshot", "update", "add", "--goldens", goldens, "--keep", keep)
        assert code == 2, out + err
        assert "golden root" in err and "irscope: hint: " in err
        assert not goldens.exists()


def test_a_stage_file_that_is_a_fifo_or_a_folder_is_named_as_such_not_as_missing(goldens, tmp_path):
    import os
    import shutil

    import pytest

    from irscope.errors import SnapshotError
    for kind in ("fifo", "folder"):
        snap = shutil.copytree(goldens / "add" / "default" / "sm_90a", tmp_path / kind)
        (snap / "add_kernel.ptx").unlink()
        os.mkfifo(snap / "add_kernel.ptx") if kind == "fifo" else (snap / "add_kernel.ptx").mkdir()
        with pytest.raises(SnapshotError, match="stage file add_kernel.ptx is not a regular file"):
            load_snapshot(snap)


def test_recompiling_into_a_folder_holding_a_fifo_is_refused_and_the_fifo_is_kept(tmp_path):
    import os
    import stat

    import pytest

    from irscope.errors import UsageError
    from irscope.store.folder import write_folder
    dest = tmp_path / "add" / "default" / "sm_90a"
    write_folder(dest, {"add_kernel.ttir": "module {}\n", "irscope.json": "{}\n"})
    for name in ("mine.fifo", "runs.json"):  # runs.json a FIFO: refused, never read (a read would block)
        os.mkfifo(dest / name)
        with pytest.raises(UsageError, match=f"holds {name} "):
            write_folder(dest, {"add_kernel.ttir": "module { }\n", "irscope.json": "{}\n"})
        assert stat.S_ISFIFO((dest / name).lstat().st_mode)
        assert (dest / "add_kernel.ttir").read_text() == "module {}\n"
        (dest / name).unlink()
