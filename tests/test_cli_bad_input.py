"""Bad input a new user gives `irscope rank`, `capture`, `compile`, `sweep`: one `irscope: error:` line, a
hint that holds, a usage exit code, and no work thrown away (found by a review as a new user, wave 5).

The compiles are of the `add` kernel for sm_90a only, in one module-scoped snapshot root.
"""
import io
import json
from pathlib import Path

import pytest

SPACE = "name: t\nkernels: [add]\ntargets: [sm_90a]\n"
ONE_POINT = SPACE + "grid:\n  BLOCK_SIZE: [1024]\n"


def _error_lines(err: str) -> list[str]:
    return [ln for ln in err.splitlines() if ln.startswith("irscope: ")]


def _one_error(err: str) -> str:
    """The error line of `err`, checked to be one error plus one hint and no traceback."""
    lines = _error_lines(err)
    assert "Traceback" not in err and "internal error" not in err, err
    assert [ln.split(":")[1].strip() for ln in lines] == ["error", "hint"], err
    return lines[0]


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    """A snapshot root holding add/default.BLOCK_SIZE=1024/sm_90a (one compile)."""
    from irscope.cli import main

    base = tmp_path_factory.mktemp("rank-cli")
    (base / "one.yaml").write_text(ONE_POINT)
    err = io.StringIO()
    assert main(["sweep", str(base / "one.yaml"), "--out", str(base / "snaps")], out=io.StringIO(), err=err) == 0, \
        err.getvalue()
    return base


@pytest.mark.parametrize("command", [
    ["compile", "add", "--target", "sm_90a"],
    ["sweep", "SPACE"],
    ["rank", "SPACE"],
    ["explain", "add", "--target", "sm_90a", "--budget", "0"],
    ["compare", "add", "--target", "sm_90a", "--num-warps", "2,4"],
    ["capture", "--no-compile", "--", "python", "prog.py"],
])
def test_an_output_folder_that_cannot_be_made_is_a_usage_error_before_anything_compiles(cli, tmp_path, command):
    # It was a crash per compile (compile, sweep: exit 3 with a hint about --timeout), exit 70 (capture),
    # or "0 configs ranked" and exit 0 (rank).
    (tmp_path / "space.yaml").write_text(ONE_POINT)
    (tmp_path / "prog.py").write_text("print('ran')\n")
    (tmp_path / "afile").write_text("")
    argv = [str(tmp_path / "space.yaml") if a == "SPACE" else a for a in command]
    at = argv.index("--") if "--" in argv else len(argv)
    for out in ("afile", "afile/sub", *(["/proc/irscope-no"] if Path("/proc/self").is_dir() else [])):
        code, stdout, err = cli(*argv[:at], "--out", out, *argv[at:])
        assert code == 2, err
        assert f"'{out}'" in _one_error(err) and "pass --out a folder you can write" in err
        assert not (tmp_path / "irscope-snapshots").exists()
        assert "ran" not in stdout  # capture refused before the program started


def test_rank_refuses_emit_configs_into_a_missing_folder_before_compiling(cli, tmp_path):
    (tmp_path / "space.yaml").write_text(ONE_POINT)
    code, out, err = cli("rank", "space.yaml", "--out", "snaps", "--emit-configs", "no/such/dir/ranked.py")
    assert code == 2, err
    assert "the folder 'no/such/dir' does not exist" in _one_error(err) and "mkdir -p no/such/dir" in err
    assert not (tmp_path / "snaps").exists()  # refused before the compiles, which it used to waste (exit 70)
    code, out, err = cli("rank", "space.yaml", "--out", "snaps", "--emit-configs", ".")
    assert code == 2 and "is a folder" in _one_error(err)


def test_rank_of_a_space_where_no_config_compiles_fails_with_the_first_reason(cli, tmp_path):
    # It printed a table of "cannot launch: did not compile" rows and exited 0.
    (tmp_path / "bad.yaml").write_text(SPACE + "grid:\n  BLOCK_SIZE: [1000]\n")
    code, out, err = cli("rank", "bad.yaml", "--out", "snaps")
    assert code == 3, err
    line = _one_error(err)
    assert "none of the 1 configs compiled" in line and "power of 2" in line
    assert "irscope show snaps/add/default.BLOCK_SIZE=1000/sm_90a" in err


def test_rank_checks_every_size_before_printing_and_its_hint_compiles_the_space_for_it(cli, root, tmp_path):
    space = root / "one.yaml"
    code, out, err = cli("rank", space, "--out", root / "snaps", "--size", "small", "--size", "ragged")
    assert code == 2, err
    assert out == ""  # the `small` table used to be printed before `ragged` was found not to fit
    line = _one_error(err)
    assert "size ragged" in line and "n_elements is a multiple of 16" in line
    assert f"add `arg.n_elements: 5001` under `set:` in {space}" in err
    # The hint holds: the sweep file with that line ranks at both sizes.
    fixed = tmp_path / "fixed.yaml"
    fixed.write_text(ONE_POINT + "set:\n  arg.n_elements: 5001\n")
    code, out, err = cli("rank", fixed, "--out", root / "snaps", "--size", "small", "--size", "ragged", "--json")
    assert code == 0, err
    assert [s["size"] for s in json.loads(out)["sizes"]] == ["small", "ragged"]
    # A kernel's menu (no sweep file) is told to use one, not the `arg.X` of a sweep it does not have.
    code, out, err = cli("rank", "add", "--target", "sm_90a", "--out", root / "snaps", "--size", "n=1000")
    assert code == 2 and "rank a sweep file whose `set:` has `arg.n_elements: 1000`" in err


def test_rank_and_sweep_recompile_a_cached_snapshot_that_was_damaged(cli, root):
    # rank has no --force: a damaged cache entry used to stop it for good (exit 4, "recompile it").
    from irscope.store.snapshot import load_snapshot

    folder = root / "snaps" / "add" / "default.BLOCK_SIZE=1024" / "sm_90a"
    ttgir = folder / "add_kernel.ttgir"
    ttgir.write_text(ttgir.read_text()[:100])
    code, out, err = cli("rank", root / "one.yaml", "--out", root / "snaps")
    assert code == 0, err
    assert "1 config ranked" in out
    load_snapshot(folder).read("ttgir")  # whole again: its sha256 matches
    # a damaged cubin too (rank reads its control bits; sweep's counters never open it)
    cubin = folder / "add_kernel.cubin"
    cubin.write_bytes(cubin.read_bytes()[:200])
    code, out, err = cli("rank", root / "one.yaml", "--out", root / "snaps")
    assert code == 0, err
    assert not load_snapshot(folder).damaged_stages()
    (folder / "add_kernel.sass").unlink()
    code, out, err = cli("sweep", root / "one.yaml", "--out", root / "snaps")
    assert code == 0, err
    assert (folder / "add_kernel.sass").is_file()


def test_capture_of_a_missing_program_is_a_usage_error_and_keeps_the_last_launch_file(cli, tmp_path):
    (tmp_path / "snaps").mkdir()
    last = tmp_path / "snaps" / "launches.json"
    earlier = '{"format": "irscope-launches", "version": 1, "kernels": {}}'
    last.write_text(earlier)  # what an earlier capture left: not to be replaced by an empty capture
    for program, says in ((["python", "nothere.py"], "cannot find program 'nothere.py'"),
                          (["-m", "no_such_module_x"], "no module named 'no_such_module_x'"),
                          (["python"], "nothing to run after `python`"),
                          # the package exists, its submodule does not: found only in the child, which
                          # runs nothing and writes no launch file
                          (["-m", "json.no_such_submodule"], "no module named 'json.no_such_submodule'")):
        code, out, err = cli("capture", "--out", "snaps", "--", *program)
        assert code == 2, err
        assert says in _one_error(err)
    assert last.read_text() == earlier


def test_capture_of_a_package_without_main_keeps_the_last_launch_file_and_a_broken_package_is_the_programs(
        cli, tmp_path, capfd):
    """`-m pkg` of a package without __main__ runs no program: an error as python gives it, the last
    launches.json kept. A package whose own __init__ fails on an import has run: its error is the
    program's (the traceback python would print), not a missing module."""
    (tmp_path / "nomain").mkdir()
    (tmp_path / "nomain" / "__init__.py").write_text("")
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "__init__.py").write_text("import no_such_dependency_q\n")
    (tmp_path / "snaps").mkdir()
    last = tmp_path / "snaps" / "launches.json"
    earlier = '{"format": "irscope-launches", "version": 1, "kernels": {}}'  # an earlier capture's
    last.write_text(earlier)
    code, out, err = cli("capture", "--out", "snaps", "--", "-m", "nomain")
    assert code == 2 and "'nomain' is a package and cannot be directly executed" in _one_error(err)
    assert last.read_text() == earlier
    assert not list((tmp_path / "snaps").glob(".launches*"))
    capfd.readouterr()
    code, out, err = cli("capture", "--out", "snaps", "--", "-m", "broken.sub")
    child = capfd.readouterr().err  # the program's own output, from the child process
    assert code == 1 and "exited with code 1" in err
    assert "No module named 'no_such_dependency_q'" in child
    assert "no module named 'broken.sub'" not in child + err


def test_capture_of_a_program_ending_in_os_exit_does_not_call_it_an_irscope_bug(cli, tmp_path):
    (tmp_path / "quits.py").write_text("import os\nos._exit(0)\n")
    code, out, err = cli("capture", "--out", "snaps", "--", "python", "quits.py")
    assert code == 2
    assert "exited with code 0" in _one_error(err)
    assert "os._exit()" in err and "sys.exit()" in err


def test_damaged_snapshot_hints_name_commands_that_exist(cli, root, tmp_path):
    import shutil

    folder = tmp_path / "copy"
    shutil.copytree(root / "snaps" / "add" / "default.BLOCK_SIZE=1024" / "sm_90a", folder)
    meta = json.loads((folder / "irscope.json").read_text())
    (folder / "irscope.json").write_text(json.dumps({**meta, "format": 7, "versions": {"irscope": "9.1.0"}}))
    code, out, err = cli("show", folder)
    assert code == 4 and "format 7; this one reads format 1" in _one_error(err)
    assert "read it with irscope 9.1.0" in err and "pip install -U irscope" not in err  # not irscope's name on PyPI
    (folder / "irscope.json").write_text(json.dumps(meta))
    (folder / "add_kernel.ptx").write_text("damaged")
    for command in (("show", folder, "--stage", "ptx"), ("diff", folder, folder)):
        code, out, err = cli(*command)
        assert code == 4 and "sha256" in _one_error(err)
        assert "compile it again with `irscope compile`" in err


def test_an_empty_sweep_file_is_told_what_a_sweep_needs_and_that_holds(cli, tmp_path):
    (tmp_path / "empty.yaml").write_text("")
    code, out, err = cli("sweep", "empty.yaml", "--list")
    assert code == 2 and "at least `kernels` and `targets`" in _one_error(err)
    (tmp_path / "two.yaml").write_text(SPACE)  # those two and no grid: a valid sweep (one point)
    code, out, err = cli("sweep", "two.yaml", "--list")
    assert code == 0 and "1 point," in out, err


@pytest.mark.parametrize("argv", [
    ["compare", "add", "--jobs", "0"], ["compare", "add", "--timeout", "-1"],
    ["explain", "add", "--jobs", "-1"], ["explain", "add", "--timeout", "0"],
    ["upgrade-check", "--from", "3.6.0", "--to", "3.9.0", "--jobs", "0"],
    ["snapshot", "check", "add", "--jobs", "0"],
    ["run", "add", "--interpret", "--repeats", "0"], ["run", "add", "--interpret", "--timeout", "0"],
])
def test_counts_and_timeouts_below_one_are_refused_by_every_command(cli, argv):
    # compare, explain, upgrade-check and snapshot took --jobs 0 or -1; compare's --timeout -1 "killed"
    # every compile; run --timeout 0 failed every check, and --repeats 0 timed nothing.
    code, out, err = cli(*argv)
    assert code == 2, err
    assert f"argument {argv[-2]}" in _one_error(err) and "positive" in err


def test_report_to_a_folder_is_a_usage_error(cli, root, tmp_path):
    snap = root / "snaps" / "add" / "default.BLOCK_SIZE=1024" / "sm_90a"
    code, out, err = cli("report", snap, "-o", tmp_path)
    assert code == 2 and "is a folder" in _one_error(err) and "report.html" in err  # was exit 70
    (tmp_path / "afile").write_text("")
    code, out, err = cli("report", snap, "-o", tmp_path / "afile" / "r.html")
    assert code == 2 and "afile' is a file, not a folder" in _one_error(err)  # checked before the report is built


def test_a_sweep_with_json_output_does_not_point_at_a_table_it_did_not_print(cli, tmp_path):
    (tmp_path / "bad.yaml").write_text(SPACE + "grid:\n  BLOCK_SIZE: [1000]\n")
    code, out, err = cli("sweep", "bad.yaml", "--out", "snaps", "--json")
    assert code == 3 and json.loads(out)["points"][0]["error"]["stage"] == "source"
    assert "under the table" not in err and "each point's row says why" in _one_error(err) + err
    code, out, err = cli("sweep", "bad.yaml", "--out", "snaps")  # the table, and the reasons under it
    assert code == 3 and "the reasons are under the table" in err


@pytest.mark.parametrize("target", ["all", "sm_80,sm_90a"])
def test_rank_of_several_targets_says_it_ranks_one_instead_of_calling_them_unknown(cli, target):
    # It said "unknown target 'all'" with a hint offering 'all'.
    code, out, err = cli("rank", "softmax", "--target", target)
    assert code == 2
    assert "a ranking is for one target" in _one_error(err) and "--target sm_90a" in err


def test_explain_of_a_missing_snapshot_folder_is_not_called_a_missing_kernel_file(cli):
    # It said "kernel file '.../sm_90a' does not exist; give the path to a .py file".
    code, out, err = cli("explain", "irscope-snapshots/add/nope/sm_90a")
    assert code == 4  # a snapshot folder missing: exit 4, as every command gives it (docs/cli.md)
    assert "no snapshot folder 'irscope-snapshots/add/nope/sm_90a'" in _one_error(err) and ".py" in err
    Path("empty").mkdir()
    code, out, err = cli("explain", "empty")
    assert code == 4 and "is a folder but not a snapshot folder" in _one_error(err)
    code, out, err = cli("explain", "nothere.py:k")  # a kernel file is still told it is one
    assert code == 2 and "kernel file" in _one_error(err)


def test_a_columns_pattern_that_matches_no_counter_is_warned_about(root):
    """`sweep --columns` with a typo printed the table without the column and said nothing."""
    from irscope.cli import main

    out, err = io.StringIO(), io.StringIO()
    code = main(["sweep", str(root / "one.yaml"), "--out", str(root / "snaps"), "--columns", "ptx.ld*,ptx.wgmam*"],
                out=out, err=err)
    assert code == 0
    warned = [ln for ln in err.getvalue().splitlines() if "warning" in ln]
    assert len(warned) == 1 and "'ptx.wgmam*' matches no counter" in warned[0]


def test_a_size_key_given_twice_is_refused():
    from irscope.spec import library
    from irscope.errors import UsageError

    workload = library.load_kernel("add").workload
    with pytest.raises(UsageError, match="n is given twice"):
        workload.parse_size("n=4096,n=100", workload.bench_size)
    assert workload.parse_size("n=4096", workload.bench_size)[1]["n"] == 4096


def test_rank_refuses_emit_configs_through_a_file_saying_it_is_a_file(cli, tmp_path):
    # It said the folder 'afile' did not exist and suggested `mkdir -p afile`, which fails on a file.
    (tmp_path / "space.yaml").write_text(ONE_POINT)
    (tmp_path / "afile").write_text("")
    for given in ("afile/ranked.py", "afile/sub/ranked.py"):
        code, out, err = cli("rank", "space.yaml", "--out", "snaps", "--emit-configs", given)
        assert code == 2, err
        assert f"--emit-configs {given}: 'afile' is a file, not a folder" in _one_error(err) and "mkdir" not in err
    assert not (tmp_path / "snaps").exists()


def test_rank_never_replaces_a_file_it_did_not_write_with_emit_configs(cli, tmp_path):
    # `--emit-configs space.yaml` replaced the sweep being ranked with a Python module, exit 0.
    (tmp_path / "space.yaml").write_text(ONE_POINT)
    (tmp_path / "mine.py").write_text("KEEP = 1\n")
    for given, words in (("space.yaml", "its name ends in .py"), ("notes.txt", "its name ends in .py"),
                         ("mine.py", "the file is there and irscope did not write it, so it is kept")):
        code, out, err = cli("rank", "space.yaml", "--out", "snaps", "--emit-configs", given)
        assert code == 2 and words in _one_error(err), (given, err)
    assert (tmp_path / "space.yaml").read_text() == ONE_POINT and (tmp_path / "mine.py").read_text() == "KEEP = 1\n"
    assert not (tmp_path / "snaps").exists()  # refused before the compiles
    if Path("/proc/self").is_dir():  # a folder no file can be made in (root may write where the mode says no)
        code, out, err = cli("rank", "space.yaml", "--out", "snaps", "--emit-configs", "/proc/ranked.py")
        assert code == 2 and "cannot write in the folder '/proc'" in _one_error(err)
        assert not (tmp_path / "snaps").exists()


def test_compile_refuses_one_name_for_several_configs_and_options_a_launch_file_cannot_take(cli, tmp_path):
    # `--config all --name foo` reported six "ok" compiles into one folder, five of them overwritten; a
    # launch file's compile dropped --num-warps, --constexpr and --name without a word.
    code, out, err = cli("compile", "matmul", "--config", "all", "--name", "foo", "--target", "sm_80")
    assert code == 2 and "--name foo names one variant folder" in _one_error(err) and "gives matmul 6 configs" in err
    assert not (tmp_path / "irscope-snapshots").exists()
    code, out, err = cli("compile", "launches.json", "--num-warps", "2", "--constexpr", "B=3", "--name", "zz")
    assert code == 2 and "--num-warps, --constexpr, --name do not apply to a launch file" in _one_error(err)


def test_report_replaces_an_earlier_report_but_never_another_file(cli, root, tmp_path):
    snap = root / "snaps" / "add" / "default.BLOCK_SIZE=1024" / "sm_90a"
    (tmp_path / "kernel.py").write_text("import triton\n")
    code, out, err = cli("report", snap, "-o", "kernel.py")
    assert code == 2 and "exists and is not an HTML file" in _one_error(err)
    assert (tmp_path / "kernel.py").read_text() == "import triton\n"
    for _ in range(2):  # written, then replaced
        code, out, err = cli("report", snap, "-o", "r.html")
        assert code == 0 and (tmp_path / "r.html").read_text().startswith("<!DOCTYPE html>"), err


@pytest.mark.parametrize("argv,hint", [
    (["sweep", "x.yaml", "--no-layouts"], "see `irscope sweep --help`"),
    (["compile", "add", "--targte", "sm_80"], "did you mean --target? see `irscope compile --help`"),
    (["show", "x", "--stge", "ptx"], "did you mean --stage? see `irscope show --help`"),
    (["snapshot", "check", "--goldns", "x"], "did you mean --goldens? see `irscope snapshot check --help`"),
])
def test_an_unknown_option_names_the_commands_help_and_the_option_meant(cli, argv, hint):
    code, out, err = cli(*argv)
    assert code == 2 and "unrecognized arguments" in _one_error(err) and f"irscope: hint: {hint}" in err


def test_upgrade_check_takes_compile_options_for_kernels_but_not_for_a_sweep_file(cli, tmp_path):
    # Its hint for a kernel without a KernelSpec said "pass --arg", which it did not take.
    (tmp_path / "s.yaml").write_text(ONE_POINT)
    for option in (["--arg", "n=4"], ["--no-line-info"]):
        code, out, err = cli("upgrade-check", "--from", "3.6.0", "--to", "3.9.0", "s.yaml", *option)
        assert code == 2 and "compile options do not apply to a sweep file" in _one_error(err)
    code, out, err = cli("upgrade-check", "--from", "3.9.0", "--to", "3.9.0", "k.py:k", "--arg", "n=4")
    assert code == 2 and "--from and --to are both 3.9.0" in _one_error(err)  # --arg parsed


def test_a_sweep_over_every_config_names_each_points_config():
    from irscope.sweep import expand, load_sweep
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "all.yaml"
        path.write_text("kernels: [matmul]\ntargets: [sm_80]\nconfig: all\ngrid:\n  num_warps: [4, 8]\n")
        points = expand(load_sweep(path))
    assert len(points) == 12 and all(p.axes[0] == ("config", p.options.config) for p in points)
    assert {dict(p.axes)["num_warps"] for p in points} == {4, 8}


@pytest.mark.parametrize("argv", [["targets"], ["kernels"], ["targets", "--json"]])
def test_a_stdout_that_refuses_writes_is_one_error_line_for_every_command(argv):
    # `irscope report -o - > /dev/full` and `sweep --list > /dev/full` were internal errors (exit 70)
    import errno

    from irscope.cli import main

    class Full(io.StringIO):
        def write(self, text):
            raise OSError(errno.ENOSPC, "No space left on device")

    err = io.StringIO()
    assert main(argv, out=Full(), err=err) == 5
    assert _error_lines(err.getvalue()) == ["irscope: error: cannot write to stdout: No space left on device",
                                            "irscope: hint: send the output somewhere writable (a file on a disk "
                                            "with room, or a pipe)"]
