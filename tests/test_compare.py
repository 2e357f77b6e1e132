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
    assert len(lines) == 3 and "BLOCK_SIZE=256" in lines[1] and "BLOCK_SIZE=1024" in lines[2]
    code, out, err = cli("compare", "add", "--num-warps", "2,x")
    assert code == 2 and "bad --num-warps" in err
    code, out, err = cli("compare", "add", "--constexpr", "BLOK=1,2", "-o", tmp_path)
    assert code == 2 and "BLOK" in err and "BLOCK_SIZE" in err


def test_a_point_that_fails_still_shows_the_others(cli, tmp_path):
    code, out, err = cli("compare", f"{DATA / 'user_kernels.py'}:type_error", "--target", "sm_80", "-o", tmp_path)
    assert code == 3 and "did not compile" in err
