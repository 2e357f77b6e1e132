"""The pytest plugin, tested by running pytest inside pytest (pytester) on a small real kernel."""
import hashlib
import importlib.metadata
import json
import re
import textwrap
from pathlib import Path

import pytest

import irscope

pytest_plugins = ["pytester"]

KERNEL = '''
import triton
import triton.language as tl
from irscope.spec import Config, KernelSpec, Tensor


@triton.jit
def scale(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * FACTOR, mask=mask)


SPEC = KernelSpec(name="scale", fn=scale, args={"x_ptr": Tensor("fp32"), "out_ptr": Tensor("fp32"), "n": 4096},
                  configs=(Config("default", {"BLOCK": 256}, num_warps=4),))
'''

TESTS = '''
def test_scale_goldens(irscope):
    irscope.assert_golden("kern.py:scale", target=TARGETS)
'''


def _plugin_args():
    registered = any(ep.name == "irscope" for ep in importlib.metadata.entry_points(group="pytest11"))
    return [] if registered else ["-p", "irscope.goldens.pytest_plugin"]


@pytest.fixture
def project(pytester, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(Path(irscope.__file__).parent.parent))

    def write(factor="2.0", targets='["sm_80", "gfx942"]'):
        pytester.path.joinpath("kern.py").write_text(KERNEL.replace("FACTOR", factor))
        pytester.path.joinpath("test_k.py").write_text(TESTS.replace("TARGETS", targets))

    def run(*args):
        return pytester.runpytest_subprocess(*_plugin_args(), "-p", "no:cacheprovider", *args)

    write()
    return pytester, write, run


@pytest.mark.slow
def test_update_writes_goldens_then_an_unchanged_run_passes(project):
    pt, write, run = project
    result = run("--irscope-update")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*irscope goldens*", "*2 written*"])
    golden = pt.path / "snapshots" / "scale" / "default" / "sm_80"
    assert (golden / "irscope.json").is_file() and (pt.path / "snapshots" / ".irscope-goldens").is_file()
    assert json.loads((golden / "golden.json").read_text())["test"] == "test_k.py::test_scale_goldens"
    result = run()
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*2 match*"])


@pytest.mark.slow
def test_a_changed_kernel_fails_with_a_readable_diff(project):
    pt, write, run = project
    run("--irscope-update").assert_outcomes(passed=1)
    write(factor="3.0")
    result = run()
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "scale/default/sm_80 differs from its golden" in out
    assert "first differing stage: ttir" in out
    assert "-" in out and "2.000000e+00" in out and "3.000000e+00" in out
    assert "pytest --irscope-update test_k.py::test_scale_goldens" in out
    assert "Traceback" not in out
    result.stdout.fnmatch_lines([f"*--- golden: {pt.path}/snapshots/scale/default/sm_80/scale.ttir",
                                 "*+++ fresh: */scale/default/sm_80/scale.ttir",
                                 "*legend: '-' lines are the golden, '+' lines the fresh compile"])
    assert re.search(r"^-.*2\.000000e\+00", out, re.M) and re.search(r"^\+.*3\.000000e\+00", out, re.M)
    fresh = Path(re.search(r"fresh snapshot: (\S+/sm_80)$", out, re.M).group(1))
    assert (fresh / "scale.ttir").is_file()  # the report points at a folder that is still there
    result.stdout.fnmatch_lines([f"fresh snapshots of this run: {fresh.parent.parent.parent} *"])


@pytest.mark.slow
def test_a_missing_golden_fails_with_the_command_that_creates_it(project):
    pt, write, run = project
    result = run()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*no golden snapshot for scale/default/sm_80*",
                                 "*create it with: pytest --irscope-update test_k.py::test_scale_goldens*"])


@pytest.mark.slow
def test_unused_goldens_fail_the_run_but_only_for_tests_that_ran(project):
    pt, write, run = project
    run("--irscope-update").assert_outcomes(passed=1)
    write(targets='["sm_80"]')
    result = run("--color=yes")
    assert result.ret == 1 and "1 passed" in result.stdout.str()
    result.stdout.fnmatch_lines(["*1 golden(s) unused*", "*snapshots/scale/default/gfx942*"])
    why = [line for line in result.stdout.lines if "unused golden(s) make this run fail" in line]
    assert len(why) == 1 and "\x1b[31m" in why[0], result.stdout.str()  # one red line saying why it failed
    assert re.sub(r"\x1b\[[0-9;]*m", "", why[0]) == \
        "irscope: 1 unused golden(s) make this run fail; delete them with pytest --irscope-update"
    deselected = run("-k", "nothing_matches")
    assert deselected.ret == 5 and "golden(s) unused" not in deselected.stdout.str()
    cleaned = run("--irscope-update")
    assert cleaned.ret == 0 and "1 golden(s) deleted" in cleaned.stdout.str()
    assert not (pt.path / "snapshots" / "scale" / "default" / "gfx942").exists()


@pytest.mark.slow
def test_an_unused_golden_holding_a_users_file_is_not_deleted(project):
    """--irscope-update deleted an unused golden folder whole, notes a user had put in it included; it keeps
    that golden, names the file, and fails the run, as a recompile into such a folder is refused."""
    pt, write, run = project
    run("--irscope-update").assert_outcomes(passed=1)
    gfx = pt.path / "snapshots" / "scale" / "default" / "gfx942"
    (gfx / "notes.txt").write_text("why this golden matters")
    write(targets='["sm_80"]')
    result = run("--irscope-update")
    out = result.stdout.str()
    assert result.ret == 1 and "notes.txt (not written by irscope)" in out and "not deleted" in out, out
    assert (gfx / "notes.txt").read_text() == "why this golden matters" and (gfx / "irscope.json").is_file()
    (gfx / "notes.txt").unlink()
    cleaned = run("--irscope-update")
    assert cleaned.ret == 0 and "1 golden(s) deleted" in cleaned.stdout.str() and not gfx.exists()


@pytest.mark.slow
def test_an_unused_golden_holding_a_users_file_does_not_keep_the_other_unused_goldens(project):
    """The first unused golden holding a user's file stopped --irscope-update: every unused golden after it was
    neither deleted nor listed. That one is kept and named; the others are deleted."""
    pt, write, run = project
    write(targets='["sm_80", "gfx942", "sm_90a"]')
    run("--irscope-update").assert_outcomes(passed=1)
    goldens = pt.path / "snapshots" / "scale" / "default"
    (goldens / "gfx942" / "notes.txt").write_text("why this golden matters")  # the first unused one, by name
    write(targets='["sm_80"]')
    result = run("--irscope-update")
    out = result.stdout.str()
    assert result.ret == 1 and "notes.txt (not written by irscope)" in out and "not deleted" in out, out
    assert "1 golden(s) deleted" in out and not (goldens / "sm_90a").exists(), out
    assert (goldens / "gfx942" / "notes.txt").is_file() and (goldens / "sm_80" / "irscope.json").is_file()


@pytest.mark.slow
def test_goldens_from_another_triton_version_are_reported_in_one_line(project):
    pt, write, run = project
    run("--irscope-update").assert_outcomes(passed=1)
    for meta_path in (pt.path / "snapshots").rglob("irscope.json"):
        meta = json.loads(meta_path.read_text())
        meta["versions"]["triton"] = "3.5.0"
        meta_path.write_text(json.dumps(meta))
    write(factor="3.0")  # a real difference too: it must not be shown as a wall of diff
    result = run("-rs")
    result.assert_outcomes(skipped=1)
    out = result.stdout.str()
    assert "was made with Triton 3.5.0; this is Triton" in out and "first differing stage" not in out
    failing = run("--irscope-version-mismatch=fail")
    failing.assert_outcomes(failed=1)
    assert "was made with Triton 3.5.0" in failing.stdout.str() and "@@" not in failing.stdout.str()


@pytest.mark.slow
def test_expectations_pass_and_fail_with_clear_messages(project):
    pt, write, run = project
    pt.path.joinpath("test_k.py").write_text(textwrap.dedent('''
        import pytest

        def test_properties(irscope):
            snap = irscope.compile("kern.py:scale", target="sm_90a")
            irscope.expect(snap).uses("ld.global").lacks("wgmma").no_spills().shared_below(1024).launchable()
            irscope.expect(snap).counter("ptx.wgmma", exactly=0).counter("ptx.ld.global", at_least=1)
            irscope.expect(snap).filecheck("ttgir", "CHECK: tt.func public @scale\\nCHECK: tt.load")

        def test_failing_property(irscope):
            snap = irscope.compile("kern.py:scale", target="sm_90a")
            irscope.expect(snap).uses("wgmma.mma_async")

        def test_failing_filecheck(irscope):
            snap = irscope.compile("kern.py:scale", target="sm_90a")
            irscope.expect(snap).filecheck("ptx", "CHECK: cp.async.cg")

        def test_filecheck_past_its_limit(irscope, monkeypatch):
            import importlib
            monkeypatch.setattr(importlib.import_module("irscope.goldens.expect"), "FILECHECK_TIMEOUT_S", 0.001)
            snap = irscope.compile("kern.py:scale", target="sm_90a")
            irscope.expect(snap).filecheck("ptx", "CHECK: ld.global")
    '''))
    result = run()
    result.assert_outcomes(passed=1, failed=3)
    result.stdout.fnmatch_lines(["*scale/default/sm_90a: expected wgmma.mma_async in ptx at least 1 time(s), found 0*"])
    result.stdout.fnmatch_lines(["*FileCheck over ptx failed*"])
    result.stdout.fnmatch_lines(["*FileCheck over ptx did not finish in 0.001 s (was killed)*"])
    assert "TimeoutExpired" not in result.stdout.str()


@pytest.mark.slow
def test_a_relative_kernel_path_resolves_against_the_rootdir_when_pytest_runs_from_a_subdirectory(
        project, monkeypatch):
    pt, write, run = project
    pt.path.joinpath("pytest.ini").write_text("[pytest]\n")
    tests = pt.path / "tests"
    tests.mkdir()
    (pt.path / "test_k.py").rename(tests / "test_k.py")
    (tests / "test_k.py").write_text(TESTS.replace("TARGETS", '"sm_80"'))
    monkeypatch.chdir(tests)  # as an IDE or a CI step in another folder would
    run("--irscope-update").assert_outcomes(passed=1)
    assert (pt.path / "snapshots/scale/default/sm_80/irscope.json").is_file()
    record = json.loads((pt.path / "snapshots/scale/default/sm_80/golden.json").read_text())
    assert record["kernel"] == "kern.py:scale"  # stored relative to the project, as `snapshot check` needs
    result = run()
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*1 match*"])
    (pt.path / "snapshots/scale/default/sm_80/golden.json").write_text("{")
    damaged = run()
    assert damaged.ret == 1 and "Traceback" not in damaged.stdout.str() + damaged.stderr.str()
    damaged.stdout.fnmatch_lines([f"irscope: this run fails: {pt.path}/snapshots/scale/default/sm_80/"
                                  f"golden.json is damaged: *"])


def test_a_failed_expectation_shows_the_test_line_and_no_irscope_frames(project):
    pt, write, run = project
    pt.path.joinpath("test_k.py").write_text(textwrap.dedent('''
        def test_failing_property(irscope):
            snap = irscope.compile("add", target="sm_80")
            irscope.expect(snap).no_spills().uses("wgmma.mma_async")
    '''))
    result = run("--tb=long")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert 'irscope.expect(snap).no_spills().uses("wgmma.mma_async")' in out
    assert "add/default/sm_80: expected wgmma.mma_async in ptx at least 1 time(s), found 0" in out
    frames = re.findall(r"^(\S+\.py):\d+: ", out, re.M)  # --tb=long names each frame as FILE:LINE:
    assert frames and all(not re.search(r"irscope/(expect|pytest_plugin|golden)\.py", f) for f in frames), frames
    assert "def uses(" not in out and "def _fail(" not in out


def test_an_unknown_kernel_or_option_in_a_test_fails_in_one_line(project):
    pt, write, run = project
    pt.path.joinpath("test_k.py").write_text(textwrap.dedent('''
        def test_unknown_kernel(irscope):
            irscope.compile("no_such_kernel", target="sm_80")

        def test_unknown_option(irscope):
            irscope.assert_golden("add", target="sm_80", nm_warps=2)

        def test_missing_kernel_file(irscope):
            irscope.compile("kernels/nowhere.py:k", target="sm_80")
    '''))
    result = run()
    result.assert_outcomes(failed=3)
    out = result.stdout.str()
    failures = out.split("= FAILURES =")[1].split("short test summary")[0]
    sections = [s.strip() for s in re.split(r"^_+ test_\w+ _+$", failures, flags=re.M)[1:]]
    assert len(sections) == 3 and all(len(s.strip("= ").splitlines()) == 1 for s in sections), sections
    assert sections[0].startswith("irscope: unknown kernel 'no_such_kernel' (hint: ")
    assert sections[1].startswith("irscope: unknown compile option 'nm_warps' (hint: options are config, num_warps")
    assert sections[2].startswith(f"irscope: kernel file 'kernels/nowhere.py' not found under the project root {pt.path}")
    assert "Traceback" not in out and "irscope/" not in failures


@pytest.mark.slow
def test_a_passing_run_leaves_no_temporary_folder_of_its_own(project, monkeypatch, tmp_path):
    pt, write, run = project
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp))
    pt.path.joinpath("test_k.py").write_text(textwrap.dedent('''
        def test_add(irscope):
            irscope.expect(irscope.compile("add", target="sm_80")).uses("ld.global")
    '''))
    for _ in range(2):
        run().assert_outcomes(passed=1)
    assert sorted(p.name for p in tmp.glob("irscope-pytest-*")) == []
    # the fresh snapshots went under pytest's basetemp, which pytest prunes itself
    fresh = {p.resolve() for p in pt.path.glob("runpytest-*/irscope*/add/default/sm_80/irscope.json")}
    assert len(fresh) == 2  # one per run (the glob also sees pytest's *current symlinks)


@pytest.mark.slow
def test_update_mends_a_damaged_golden_and_a_goldens_path_that_is_a_file_is_one_line(project):
    """A golden with a corrupt irscope.json could not be rewritten by --irscope-update (its hint said
    "recompile it with irscope compile"); a `snapshots` that is a file was a FileExistsError traceback."""
    pt, write, run = project
    write(targets='["sm_80"]')
    run("--irscope-update").assert_outcomes(passed=1)
    meta = pt.path / "snapshots" / "scale" / "default" / "sm_80" / "irscope.json"
    meta.write_text("{ not json")
    result = run()
    result.assert_outcomes(failed=1)
    result = run("--irscope-update")
    result.assert_outcomes(passed=1)
    assert json.loads(meta.read_text())["function"] == "scale"
    run().assert_outcomes(passed=1)
    import shutil
    shutil.rmtree(pt.path / "snapshots")
    (pt.path / "snapshots").write_text("")
    result = run("--irscope-update")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "is a file, not a folder of golden snapshots" in out and "FileExistsError" not in out


@pytest.mark.slow
def test_control_characters_in_a_golden_reach_the_report_escaped(project):
    """A golden is a file in the repository, so a pull request can put an escape sequence in its stage text
    (OSC 52 writes the clipboard of whoever reads the CI log in a terminal): the failure shows it as text."""
    pt, write, run = project
    write(targets='["sm_80"]')
    run("--irscope-update").assert_outcomes(passed=1)
    ttir = pt.path / "snapshots" / "scale" / "default" / "sm_80" / "scale.ttir"
    ttir.write_text(ttir.read_text().replace("module", "module \x1b]52;c;cm0gLXJmIH4=\x07\x1b[2J\r", 1))
    meta = json.loads((ttir.parent / "irscope.json").read_text())  # a consistent golden: its checksum matches
    meta["stages"]["ttir"].update(sha256=hashlib.sha256(ttir.read_bytes()).hexdigest(), bytes=ttir.stat().st_size)
    (ttir.parent / "irscope.json").write_text(json.dumps(meta))
    result = run()
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "differs from its golden" in out
    assert "\\x1b]52;c;cm0gLXJmIH4=\\x07\\x1b[2J" in out  # (the diff reads the \\r as a line's end)
    # (\r: pytester's text is split at it, so it is checked by the unit test of render.controls.escaped)
    assert not any(c in out for c in "\x1b\x07"), [ln for ln in out.splitlines() if "52;c" in ln]


@pytest.mark.slow
def test_assert_golden_takes_the_snapshot_irscope_compile_returned(project):
    # `snap = irscope.compile(...); irscope.expect(snap)...; irscope.assert_golden(snap)` was an
    # AttributeError traceback ('Snapshot' object has no attribute 'rpartition'): it compares that compile.
    pt, write, run = project
    pt.path.joinpath("test_k.py").write_text(textwrap.dedent('''
        import pytest

        def test_one_compile(irscope):
            snap = irscope.compile("kern.py:scale", target="sm_80")
            irscope.expect(snap).no_spills()
            irscope.assert_golden(snap)

        def test_with_a_target_too(irscope):
            irscope.assert_golden(irscope.compile("kern.py:scale", target="sm_80"), target="gfx942")
    '''))
    result = run("--irscope-update")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*assert_golden takes a kernel with its targets and options, or snapshots*"])
    assert "AttributeError" not in result.stdout.str()
    golden = pt.path / "snapshots" / "scale" / "default" / "sm_80"
    assert json.loads((golden / "golden.json").read_text())["test"] == "test_k.py::test_one_compile"
    write(factor="3.0", targets='["sm_80"]')
    pt.path.joinpath("test_k.py").write_text(
        "def test_one_compile(irscope):\n    irscope.assert_golden(irscope.compile('kern.py:scale', target='sm_80'))\n")
    result = run()
    result.assert_outcomes(failed=1)
    assert "scale/default/sm_80 differs from its golden" in result.stdout.str()
