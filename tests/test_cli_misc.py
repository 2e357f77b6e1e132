"""Small CLI behaviours: `kernels --json`, and the global options --color and --debug after the subcommand."""
import json
import os

import pytest

ANSI = "\x1b["


def test_kernels_json_lists_every_builtin_kernel_with_its_configs_and_typical_launch(cli):
    from irscope.spec import library

    code, out, err = cli("kernels", "--json")
    assert code == 0, err
    kernels = json.loads(out)
    assert [k["name"] for k in kernels] == [s.name for s in library.builtin_specs()]
    add = next(k for k in kernels if k["name"] == "add")
    assert add["function"] == "add_kernel" and add["path"].endswith("add.py") and add["runnable"] is True
    assert add["launch"]["x_ptr"] == "*fp32" and isinstance(add["launch"]["n_elements"], int)
    assert {"name": "BLOCK_SIZE", "kind": "constexpr"} in add["parameters"]
    assert {"name": "x_ptr", "kind": "tensor"} in add["parameters"]
    default = add["configs"][0]
    assert default["name"] == "default" and default["num_warps"] == 4 and default["constexprs"] == {"BLOCK_SIZE": 1024}
    assert set(default) == {"name", "constexprs", "num_warps", "num_stages", "options", "note", "not_for"}
    matmul = next(k for k in kernels if k["name"] == "matmul")
    assert any(c["not_for"] for c in matmul["configs"])  # a config's unfit targets, with why


def test_kernels_name_json_is_that_kernels_object_of_the_list(cli):
    code, out, err = cli("kernels", "add", "--json")
    assert code == 0, err
    one = json.loads(out)
    everything = json.loads(cli("kernels", "--json")[1])
    assert one == next(k for k in everything if k["name"] == "add")
    code, out, err = cli("kernels", "nope", "--json")
    assert code == 2 and "unknown kernel 'nope'" in err and out == ""


@pytest.mark.parametrize("mode", ["always", "never"])
def test_color_after_the_subcommand_equals_color_before_it(cli, mode):
    before = cli("--color", mode, "kernels", "add")
    after = cli("kernels", "add", "--color", mode)
    assert before == after and before[0] == 0
    assert (ANSI in before[1]) == (mode == "always")


def test_a_global_color_is_kept_when_the_subcommand_is_not_given_one(cli):
    # the subcommand's --color defaults to SUPPRESS, so it does not reset the value given before it
    code, out, err = cli("--color", "always", "kernels", "add")
    assert code == 0 and ANSI in out
    code, out, err = cli("--color", "always", "kernels", "add", "--color", "never")
    assert code == 0 and ANSI not in out  # the later one wins
    code, out, err = cli("show", "no-such-folder", "--color", "always")
    assert code == 4 and err.startswith(f"irscope: {ANSI}")  # errors are coloured by it too


def test_bad_color_after_the_subcommand_is_a_usage_error_naming_the_command(cli):
    code, out, err = cli("kernels", "--color", "sometimes")
    assert code == 2 and "invalid choice: 'sometimes'" in err and "`irscope kernels --help`" in err


def _raise_internal_error():
    raise RuntimeError("a bug")


@pytest.mark.parametrize("argv", [["--debug", "kernels"], ["kernels", "--debug"]])
def test_debug_before_or_after_the_subcommand_shows_the_traceback(cli, monkeypatch, argv):
    from irscope.spec import library
    monkeypatch.setattr(library, "builtin_specs", _raise_internal_error)  # stands in for a bug in irscope
    code, out, err = cli("kernels")
    assert code == 70 and "internal error: RuntimeError: a bug" in err and "--debug" in err
    with pytest.raises(RuntimeError, match="a bug"):
        cli(*argv)


def test_every_subcommand_help_lists_the_global_options(capsys):
    from irscope.cli import COMMANDS, main

    for command in COMMANDS:
        with pytest.raises(SystemExit) as exit_:
            main([command, "--help"])
        assert exit_.value.code == 0
        text = capsys.readouterr().out
        assert "global options:" in text and "--color WHEN" in text and "--debug" in text, command


def test_options_without_a_command_list_the_commands_as_a_usage_error(cli):
    for argv in ([], ["--color", "never"], ["--debug"]):
        code, out, err = cli(*argv)
        assert code == 2 and "COMMAND" in out and "compare" in out, argv


def test_a_usage_error_is_coloured_as_the_command_line_asks_wherever_color_is(cli):
    code, out, err = cli("kernels", "--frob", "--color", "always")
    assert code == 2 and err.startswith(f"irscope: {ANSI}")
    code, out, err = cli("--color=always", "frob")
    assert code == 2 and err.startswith(f"irscope: {ANSI}")


def test_an_unknown_command_is_named_with_the_closest_one(cli):
    code, out, err = cli("comapre", "add")
    assert code == 2 and "unknown command 'irscope comapre'" in err and "did you mean `irscope compare`?" in err
    code, out, err = cli("snapshot", "chek")
    assert code == 2 and "did you mean `irscope snapshot check`?" in err and "commands: check, update" in err


def test_show_refuses_an_unknown_stage_and_stage_with_json_as_usage_and_hints_each_binarys_readable_stage(cli):
    """`show --stage bogus` was exit 4 (diff's is 2), `--stage ptx --json` printed the record without a
    word, and an AMD hsaco hinted `--stage sass (cubin)`, a stage AMD snapshots never have."""
    from pathlib import Path
    goldens = Path(__file__).resolve().parent.parent / "snapshots" / "add" / "default"
    nvidia = next(p for p in sorted(goldens.iterdir()) if p.name.startswith("sm_"))
    code, out, err = cli("show", nvidia, "--stage", "bogus")
    assert code == 2 and "unknown stage 'bogus'" in err and "hint: stages: python, source" in err
    code, out, err = cli("show", nvidia, "--stage", "ptx", "--json")
    assert code == 2 and not out and "--json prints the snapshot's record, not a stage" in err
    code, out, err = cli("show", nvidia, "--stage", "PTX")
    assert code == 0 and ".target sm_" in out
    code, out, err = cli("show", nvidia, "--stage", "cubin")
    assert code == 4 and "hint: read its disassembly: --stage sass" in err


def test_small_mistakes_are_one_line_usage_errors(cli, tmp_path):
    """Found by a review as a new user: each of these exited 0 saying nothing, or misled."""
    from pathlib import Path
    snap = Path(__file__).resolve().parent.parent / "snapshots" / "add" / "default" / "sm_80"
    code, out, err = cli("diff", snap, snap, "-U", "-1")  # was accepted
    assert code == 2 and "--context -1 is negative" in err
    code, out, err = cli("stats", snap, "--only", "nomatch*")  # printed the resources only, exit 0
    assert code == 2 and "no counter matches --only 'nomatch*'" in err and "sass.*" in err
    assert cli("stats", snap, "--only", "sass.*")[0] == 0
    code, out, err = cli("stats", snap, "--only", "resources.*")  # said "no counter matches", as for a typo
    assert code == 2 and "names resources, not counters" in err and "always shown" in err
    (tmp_path / "afile").write_text("")
    code, out, err = cli("report", snap, "-o", "afile/x.html")  # "File exists", after building the report
    assert code == 2 and "'afile' is a file, not a folder" in err
    (tmp_path / "launches.json").write_text('{"format": "irscope-launches", "version": 1, "kernels": {}, '
                                            '"launches": []}')
    code, out, err = cli("compile", "launches.json")  # exit 0, no output
    assert code == 2 and "records no launches" in err and not out
    (tmp_path / "launches.json").write_text('{"format": "irscope-launches", "version": 99}')
    code, out, err = cli("compile", "launches.json")  # "field 'kernels' must be present"
    assert code == 4 and "version 99; this irscope reads version 1" in err


def test_a_report_is_written_with_the_umasks_mode(cli, tmp_path):
    from pathlib import Path
    snap = Path(__file__).resolve().parent.parent / "snapshots" / "add" / "default" / "sm_80"
    old = os.umask(0o022)
    try:
        assert cli("report", snap, "-o", "r.html")[0] == 0
    finally:
        os.umask(old)
    assert (tmp_path / "r.html").stat().st_mode & 0o777 == 0o644  # mkstemp made it 0600


def test_a_sweep_result_or_analysis_cache_of_another_shape_is_refused_or_ignored_never_exit_70(cli, tmp_path):
    """Files given to irscope (a sweep result) or found in a snapshot (its analysis cache) are as untrusted as
    the snapshot: a field of another type was a TypeError (exit 70) halfway through the work."""
    import shutil
    from pathlib import Path
    for bad, field in (('{"points": [{"analysis": [1]}]}', "points[0].analysis"),
                       ('{"points": [{"times_ms": {"ttir": "abc"}}]}', "points[0].times_ms.ttir")):
        (tmp_path / "s.json").write_text(bad)
        code, out, err = cli("report", "--sweep", "s.json", "-o", "r.html")
        assert code == 2 and f"field '{field}'" in err and "internal error" not in err, err
    snap = tmp_path / "add" / "default" / "sm_80"
    shutil.copytree(Path(__file__).resolve().parent.parent / "snapshots" / "add" / "default" / "sm_80", snap)
    (snap / "golden.json").unlink()
    code, first, err = cli("stats", snap)  # writes the cache (an irscope folder outside the goldens)
    cache = snap / ".irscope-analysis.json"
    assert code == 0 and cache.exists(), err
    doc = json.loads(cache.read_text())
    for entry in doc["stages"].values():
        entry["counters"] = {k: "many" for k in entry["counters"]}
    cache.write_text(json.dumps(doc))
    code, again, err = cli("stats", snap)
    assert code == 0 and again == first, err  # the bad entries analysed again, not shown


def test_run_checks_its_json_path_before_running(cli, tmp_path):
    """`run --json /etc/passwd/x` ran every check, then failed with exit 70 (NotADirectoryError)."""
    (tmp_path / "afile").write_text("")
    code, out, err = cli("run", "add", "--interpret", "--size", "small", "--json", "afile/x.json")
    assert code == 2 and "'afile' is a file, not a folder" in err and "PASS" not in out
    code, out, err = cli("run", "add", "--interpret", "--size", "small", "--json", "nofolder/x.json")
    assert code == 2 and "does not exist" in err


def test_a_launch_files_kernel_name_is_a_name_never_a_path(cli, tmp_path):
    """The name becomes the snapshots' first folder under --out: `../../x` would have written above it."""
    for name in ("../../x", "/abs", "a/b", ".hidden"):
        doc = {"format": "irscope-launches", "version": 1, "launches": [],
               "kernels": {"k": {"name": name, "function": "f", "src": "def f(): pass\n"}}}
        (tmp_path / "launches.json").write_text(json.dumps(doc))
        code, out, err = cli("compile", "launches.json")
        assert code == 4 and "kernels.k.name" in err and "a kernel name" in err, (name, err)


def test_a_triton_compilation_error_subclass_is_summarised_by_what_went_wrong_not_its_location():
    """An UnsupportedLanguageConstruct (a noinline function called with a tensor) was summarised as
    'at 3:27:', its first line, in compile's table and error."""
    from irscope.errors import error_summary
    err = {"stage": "source", "type": "UnsupportedLanguageConstruct",
           "message": "at 3:27:\ndef helper(x):\n    return tl.exp(x)\n\n                           ^\n"
                      "Function helper is marked noinline, but was called with non-scalar argument x"}
    assert error_summary(err) == "Function helper is marked noinline, but was called with non-scalar argument x"
    assert error_summary({"type": "CompileTimeAssertionFailure", "message": "at 1:4:\nx\n^\nBLOCK must be 64"}) \
        == "BLOCK must be 64"
    assert error_summary({"type": "RuntimeError", "message": "PassManager::run failed\nmore"}) == \
        "PassManager::run failed"
