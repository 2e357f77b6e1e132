"""Regression tests from a second review of `irscope sweep` (hostile sweep files, --triton, the cluster):
each names the defect it guards."""
import subprocess
import sys
import textwrap

import pytest

from irscope.errors import UsageError
from irscope.sweep import TooManyPoints, expand, load_sweep


def _write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def test_a_merge_key_bomb_is_read_at_once_not_merged_a_billion_times(cli, tmp_path):
    # Ten lines, each merging the line above ten times: the merges were worked out again for every
    # reference, 10^9 mappings, and `irscope sweep --list` ran for ever.
    lines = ["x-a: &a {k: 1}"]
    for prev, name in zip("abcdefghi", "bcdefghij"):
        lines.append(f"x-{name}: &{name} {{<<: [{', '.join(['*' + prev] * 10)}]}}")
    sweep = _write(tmp_path / "merge.yaml", "\n".join(lines) + "\nkernels: [add]\ntargets: [gfx942]\n")
    proc = subprocess.run([sys.executable, "-m", "irscope", "sweep", str(sweep), "--list"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    # the merges still mean what YAML says
    sweep = _write(tmp_path / "m.yaml", "x-w: &w {num_warps: [2, 4]}\nx-v: &v {<<: [*w, *w]}\nkernels: [add]\n"
                                        "targets: [gfx942]\ngrid: {<<: *v}\n")
    assert len(expand(load_sweep(sweep))) == 2


@pytest.mark.parametrize("value", ["[" * 50000 + "]" * 50000, "{a: " * 30000 + "1" + "}" * 30000])
def test_values_nested_thousands_deep_are_a_usage_error_not_an_internal_error(cli, tmp_path, value):
    sweep = _write(tmp_path / "deep.yaml", "kernels: [add]\ntargets: [gfx942]\ngrid:\n  BLOCK_SIZE: " + value + "\n")
    code, out, err = cli("sweep", sweep, "--list")
    assert code == 2, err
    assert "nested thousands of levels deep" in err and "internal error" not in err, err
    assert err.splitlines()[1].startswith("irscope: hint: ")


def test_a_grid_of_repeated_values_is_one_point_and_a_product_over_the_limit_is_refused_at_once(tmp_path):
    # `BLOCK_SIZE: [64, 64, ...]` x `num_warps: [4, 4, ...]`, 20,000 each: one point from a product of 4 x 10^8
    # combinations, all made one by one before the limit was looked at (the command ran for ever).
    many = lambda v: ", ".join([v] * 20000)  # noqa: E731
    sweep = _write(tmp_path / "rep.yaml", f"kernels: [add]\ntargets: [gfx942]\n"
                                          f"grid:\n  BLOCK_SIZE: [{many('64')}]\n  num_warps: [{many('4')}]\n")
    proc = subprocess.run([sys.executable, "-m", "irscope", "sweep", str(sweep), "--list"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "1 point, 0 fresh" in proc.stdout, proc.stderr
    assert load_sweep(sweep).kernels[0].grids == ((("BLOCK_SIZE", (64,)), ("num_warps", (4,))),)
    # 4 and 4.0 are two values (a constexpr's type is part of the compile)
    assert load_sweep(_write(tmp_path / "t.yaml", "kernels: [add]\ntargets: [gfx942]\ngrid: {X: [4, 4.0, 4]}\n")
                      ).kernels[0].grids == ((("X", (4, 4.0)),),)
    # the count held to the limit is the grids' product (docs/sweep.md), repeats across grids included
    two = _write(tmp_path / "two.yaml", "kernels: [add]\ntargets: [gfx942]\n"
                                        "grid: [{num_warps: [2, 4]}, {num_warps: [2, 4]}]\n")
    with pytest.raises(TooManyPoints) as caught:
        expand(load_sweep(two), limit=3)
    assert caught.value.bound == 4
    assert len(expand(load_sweep(two), limit=4)) == 2


def test_one_grid_mapping_named_many_times_is_one_grid_not_gigabytes_of_lines(tmp_path):
    # `grid: [*g, *g, ...]` 200,000 times in 800 KB: the lines of every value of every copy were 18 million
    # tuples (3 GB, 27 s) before the points were counted.
    values = ", ".join(str(i) for i in range(1, 46))
    refs = ", ".join(["*g"] * 50000)
    sweep = load_sweep(_write(tmp_path / "g.yaml", f"kernels: [add]\ntargets: [gfx942]\n"
                                                   f"x-g: &g {{BLOCK_SIZE: [{values}], num_stages: [{values}]}}\n"
                                                   f"grid: [{refs}]\n"))
    entry = sweep.kernels[0]
    assert len(entry.grids) == 1 and len(entry.value_lines) == 90 and len(entry.axis_lines) == 2
    with pytest.raises(TooManyPoints) as caught:
        expand(sweep, limit=sweep.max_points)
    assert caught.value.bound == 45 * 45


KERNEL = '''
import triton
import triton.language as tl


@triton.jit
def kern(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=m) * 2.0, mask=m)
'''

SET = """
set:
  arg.x_ptr: "*fp32"
  arg.y_ptr: "*fp32"
  arg.n: 4096
"""


@pytest.mark.slow
def test_a_sweep_under_two_releases_says_which_release_each_row_is(cli, tmp_path):
    # `--triton 3.6.0,RUNNING` printed each point twice with the same axis values and nothing else to tell
    # the two releases' rows apart; the release is an axis, the last, as in compare.
    import csv
    import io
    import json
    from irscope.harness import envs
    running = envs.running_version()
    if running == "3.6.0":
        pytest.skip("this machine runs Triton 3.6.0 itself")
    # (the first `--triton 3.6.0` of a run installs its environment into irscope's cache, this test's or
    # tests/test_versions.py's, whichever runs first: it used to skip when that had not happened yet, which
    # in a run of the whole suite, in file order, was always)
    _write(tmp_path / "k.py", KERNEL)
    sweep = _write(tmp_path / "s.yaml", "kernels: [k.py:kern]\ntargets: [sm_80]\nout: o\ngrid: {BLOCK: [64, 128]}\n"
                   + SET)
    code, out, err = cli("sweep", sweep, "--triton", f"3.6.0,{running}")
    assert code == 0, err
    head, *rows = out.splitlines()[:5]
    assert head.split()[:3] == ["BLOCK", "triton", "status"], out
    assert [r.split()[:2] for r in rows] == [["64", "3.6.0"], ["128", "3.6.0"], ["64", running], ["128", running]]
    code, out, err = cli("sweep", sweep, "--triton", f"3.6.0,{running}", "--csv")
    assert [(r["axis.BLOCK"], r["axis.triton"]) for r in csv.DictReader(io.StringIO(out))] == \
        [("64", "3.6.0"), ("128", "3.6.0"), ("64", running), ("128", running)]
    code, out, err = cli("sweep", sweep, "--triton", "3.6.0", "--json")
    assert [p["axes"] for p in json.loads(out)["points"]] == [{"BLOCK": 64, "triton": "3.6.0"},
                                                              {"BLOCK": 128, "triton": "3.6.0"}]


@pytest.mark.parametrize("where", [("--cluster", "local:2"), ("--scheduler", "tcp://127.0.0.1:9")])
def test_another_release_with_a_cluster_is_refused_before_its_environment_is_made_or_the_cluster_started(
        cli, tmp_path, monkeypatch, where):
    # `sweep --triton 3.7.1 --cluster local:2` installed 3.7.1 (a 700 MB download), planned every point and
    # started the LocalCluster, and only then was refused: a Dask worker compiles with its own Triton only.
    from irscope.harness import cluster, envs

    def never(*args, **kwargs):
        raise AssertionError("reached")
    monkeypatch.setenv("IRSCOPE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(envs, "ensure_env", never)
    monkeypatch.setattr(envs, "create_env", never)
    monkeypatch.setattr(cluster.DaskCluster, "start", never)
    sweep = _write(tmp_path / "s.yaml", "kernels: [add]\ntargets: [gfx942]\nout: o\n")
    code, out, err = cli("sweep", sweep, "--triton", "3.7.1", *where)
    assert code == 2, err
    assert err.splitlines()[0] == f"irscope: error: --triton 3.7.1 with {where[0]}: a Dask worker compiles with its " \
                                  "own Triton only", err
    assert f"leave {where[0]} out" in err.splitlines()[1]
    assert not (tmp_path / "o").exists()
    # the running release is no other release: it is not refused
    code, out, err = cli("sweep", sweep, "--triton", envs.running_version(), "--list", *where)
    assert code == 0 and "1 point, 0 fresh" in out, err


def test_a_point_that_crashed_on_a_full_disk_gets_a_hint_about_the_disk_not_a_compile_alone(tmp_path):
    # With --out on a full disk, the hint said 'compile it alone with `irscope compile ... --jobs 1` to see the
    # compiler's output', which fills the same disk; it says the disk is full.
    from irscope.cli.sweep import _broken_hint
    from irscope.harness.batch import CompileStatus
    from irscope.sweep.points import SweepPoint
    from irscope.sweep.run import SweepRow
    from irscope.spec.kernel import CompileOptions

    def row(message):
        return SweepRow(SweepPoint("add", "gfx942", CompileOptions()), CompileStatus.CRASHED, False, None,
                        "add/default/gfx942", "k", error={"type": "error", "message": message})
    hint = _broken_hint([row("OSError: [Errno 28] No space left on device")], out=tmp_path / "o")
    assert f"the disk under {tmp_path / 'o'} is full" in hint and "irscope compile" not in hint, hint
    assert "compile it alone" in _broken_hint([row("Segmentation fault")], out=tmp_path / "o")


@pytest.mark.parametrize("text, words", [
    ("local:²", "expected local:N"),  # '²'.isdigit(): int('²') was an internal error
    ("local:٢", "expected local:N"),  # an Arabic-Indic 2 started 2 workers
    ("local:100000", "100,000 worker processes on a machine of"),  # a typo started them all
])
def test_a_cluster_of_odd_digits_or_more_workers_than_the_machine_can_hold_is_a_usage_error(cli, tmp_path, text,
                                                                                           words):
    sweep = _write(tmp_path / "s.yaml", "kernels: [add]\ntargets: [gfx942]\nout: o\n")
    code, out, err = cli("sweep", sweep, "--cluster", text)
    assert code == 2 and words in err and "internal error" not in err, err
    assert err.splitlines()[1].startswith("irscope: hint: ")
    assert not (tmp_path / "o").exists()


def test_a_string_axis_value_in_the_csv_is_text_never_a_spreadsheet_formula(cli, tmp_path):
    # `stats --csv` and compare's CSV escaped such cells; sweep's wrote its own rows and did not, so a sweep
    # of a user's kernel file with a string constexpr '=1+1' gave a cell a spreadsheet runs when opened.
    _write(tmp_path / "k.py", '''
        import triton
        import triton.language as tl

        @triton.jit
        def scale(x_ptr, n, MODE: tl.constexpr, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            x = tl.load(x_ptr + offs, mask=offs < n)
            if MODE == "=1+1":
                x = x * 2
            tl.store(x_ptr + offs, x, mask=offs < n)
        ''')
    sweep = _write(tmp_path / "s.yaml", """\
        kernels: [k.py:scale]
        targets: [gfx942]
        set: {BLOCK: 64, arg.x_ptr: "*fp32", arg.n: 4096}
        grid: {MODE: ["=1+1", "plain"]}
        """)
    code, out, err = cli("sweep", sweep, "--csv")
    assert code == 0, err
    import csv
    import io
    rows = list(csv.DictReader(io.StringIO(out)))
    assert sorted(r["axis.MODE"] for r in rows) == ["'=1+1", "plain"], out
    assert all(r["status"] == "ok" and r["res.registers"].isdigit() for r in rows), out
