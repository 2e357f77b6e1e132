"""`irscope compare`: every point of the axes, side by side, with what flips between neighbours."""
import json

from tests.conftest import DATA


def test_hopper_matrix_instruction_by_num_warps(cli, tmp_path):
    code, out, err = cli("compare", "matmul", "--config", "m64n32k32.w2.s5", "--num-warps", "2,4", "-o", tmp_path)
    assert code == 0, err
    head = out.splitlines()[0].split()
    assert head == ["counter", "w2", "w4"]
    row = next(line.split() for line in out.splitlines() if line.strip().startswith("ptx.wgmma "))
    assert row[1] == "0" and row[2] == "*2"  # changed from its left neighbour: marked (no colour here)
    flips = out[out.index("what flips between neighbours"):]
    assert "w2 → w4:" in flips and "ptx.mma.sync" in flips and "ptx.wgmma 0 → 2" in flips
    assert "ttgir.nvidia_mma.version 2 → 3" in flips
    assert "2 points (2 compiled, 0 from the cache)" in out
    # the same points again come from the cache, and --changed keeps only the rows that differ
    code, out, err = cli("compare", "matmul", "--config", "m64n32k32.w2.s5", "--num-warps", "2,4", "-o", tmp_path,
                         "--changed", "--only", "ptx.*")
    assert code == 0 and "(0 compiled, 2 from the cache)" in out
    assert "ptx.cp.async.commit_group" not in out and "ptx.wgmma" in out
    # a resource in --only is named as one (it said "matches no counter", as for a typo)
    code, out, err = cli("compare", "matmul", "--config", "m64n32k32.w2.s5", "--num-warps", "2,4", "-o", tmp_path,
                         "--only", "ptx.*,resources.*,nomatch*")
    assert code == 0 and "'resources.*' names a resource, not a counter" in err
    assert "'nomatch*' matches no counter" in err and "'resources.*' matches no counter" not in err


def test_compare_across_targets_reuses_snapshots_with_the_same_content(cli, compiled):
    code, out, err = cli("compare", "matmul", "--target", "sm_80,sm_90a,sm_100a,gfx942", "-o", compiled, "--only",
                         "*mma*,*mfma*,*tcgen05*")
    assert code == 0, err
    assert "(0 compiled, 4 from the cache)" in out  # the session fixture compiled these very points
    assert out.splitlines()[0].split() == ["counter", "sm_80", "sm_90a", "sm_100a", "gfx942"]
    assert "sm_90a → sm_100a:" in out and "ptx.tcgen05" in out and "gfx942: LDS" in out
    code, out, err = cli("compare", "matmul", "--target", "sm_80,gfx942", "-o", compiled, "--json")
    rows = json.loads(out)
    assert [r["axes"]["target"] for r in rows] == ["sm_80", "gfx942"] and all(r["cached"] for r in rows)


def test_compare_axes_from_constexprs_and_bad_axes(cli, tmp_path):
    code, out, err = cli("compare", "add", "--target", "gfx942", "--constexpr", "BLOCK_SIZE=256,1024", "-o", tmp_path,
                         "--csv")
    assert code == 0, err
    lines = out.splitlines()
    assert len(lines) == 3 and lines[0].startswith("axis.BLOCK_SIZE,path,")
    assert lines[1].startswith("256,") and "default.BLOCK_SIZE=256/gfx942" in lines[1]
    assert lines[2].startswith("1024,") and "add/default/gfx942" in lines[2]  # the config's own value: its folder
    code, out, err = cli("compare", "add", "--num-warps", "2,x")
    assert code == 2 and "bad --num-warps" in err
    code, out, err = cli("compare", "add", "--constexpr", "BLOK=1,2", "-o", tmp_path)
    assert code == 2 and "BLOK" in err and "BLOCK_SIZE" in err


def test_a_point_that_fails_still_shows_the_others(cli, tmp_path):
    code, out, err = cli("compare", f"{DATA / 'user_kernels.py'}:type_error", "--target", "sm_80", "-o", tmp_path)
    assert code == 3 and "did not compile" in err


def test_an_asked_value_the_config_already_has_reuses_the_configs_folder(cli, tmp_path):
    # add's default config has num_warps=4: `w4` is the same compile as `default`, so no `default.w4` twin
    code, out, err = cli("compare", "add", "--target", "sm_80", "--num-warps", "4,8", "-o", tmp_path)
    assert code == 0, err
    assert out.splitlines()[0].split() == ["counter", "w4", "w8"]  # the table still lists the asked values
    assert "w4 changes nothing: the same compile (content key) as add/default/sm_80" in out
    folders = sorted(p.parent.relative_to(tmp_path).as_posix() for p in tmp_path.glob("add/*/*/irscope.json"))
    assert folders == ["add/default.w8/sm_80", "add/default/sm_80"]
    keys = [json.loads((tmp_path / f / "irscope.json").read_text())["content_key"] for f in folders]
    assert len(set(keys)) == len(keys)  # one folder per content key
    code, out, err = cli("compare", "add", "--target", "sm_80", "--num-warps", "4,8", "-o", tmp_path, "--json")
    rows = json.loads(out)
    assert [r["axes"]["num_warps"] for r in rows] == [4, 8] and all(r["cached"] for r in rows)
    assert [r["label"] for r in rows] == ["add/default/sm_80", "add/default.w8/sm_80"]


def test_a_constexpr_equal_to_the_configs_reuses_its_folder_too(cli, tmp_path):
    code, out, err = cli("compare", "add", "--target", "sm_80", "--constexpr", "BLOCK_SIZE=1024,2048", "-o", tmp_path,
                         "--json")
    assert code == 0, err
    rows = json.loads(out)
    assert [r["axes"]["BLOCK_SIZE"] for r in rows] == [1024, 2048]
    assert [r["variant"] for r in rows] == ["default", "default.BLOCK_SIZE=2048"]
    assert not (tmp_path / "add" / "default.BLOCK_SIZE=1024").exists()


def test_a_divisibility_axis_can_move_several_arguments_together(cli, tmp_path):
    code, out, err = cli("compare", "add", "--target", "sm_80", "--divisibility", "x_ptr,y_ptr,out_ptr=16,4",
                         "--out", tmp_path / "o", "--json")
    assert code in (0, 1), err
    points = json.loads(out)
    assert len(points) == 2
    by_div = {p["axes"]["divisibility"]: p for p in points}
    wide, narrow = by_div["x_ptr,y_ptr,out_ptr=16"], by_div["x_ptr,y_ptr,out_ptr=4"]
    assert wide["counters"]["ptx.ld.global.16B"] > 0
    assert narrow["counters"].get("ptx.ld.global.16B", 0) == 0 and narrow["counters"]["ptx.ld.global.4B"] > 0


def test_a_point_that_crashed_is_still_in_the_json_and_named_under_the_table(cli):
    # compare --json listed only the points with a snapshot: a crashed compile was simply missing (its exit
    # code 3 and the error line said so, the JSON did not).
    user = DATA / "user_kernels.py"
    code, out, err = cli("compare", "add", f"{user}:crashes", "--target", "sm_80", "--json")
    assert code == 3
    points = json.loads(out)
    assert len(points) == 2
    [crashed] = [p for p in points if p.get("status") == "crashed"]
    assert "SIGABRT" in crashed["reason"] and crashed["label"].startswith("crashes/")
    assert any(p.get("kernel") == "add" and "counters" in p for p in points)
    code, out, err = cli("compare", "add", f"{user}:crashes", "--target", "sm_80")
    assert code == 3 and "no column (crashed: " in out
