"""The pytest plugin against what a user's project and golden root can be: tests that stop midway, golden
roots that are read-only or hostile (links out, huge files), options that are wrong. Real compiles of one
small kernel, run through pytest inside pytest (pytester), as a user's suite runs."""
import importlib.metadata
import json
import os
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

import irscope

pytest_plugins = ["pytester"]

KERNEL = '''
import triton
import triton.language as tl


@triton.jit
def scale(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)
'''

ARGS = '{"x_ptr": "*fp32", "out_ptr": "*fp32", "n": 4096}'
POINT = "scale/default.BLOCK=64.sig1eee4f"


def _plugin_args():
    registered = any(ep.name == "irscope" for ep in importlib.metadata.entry_points(group="pytest11"))
    return [] if registered else ["-p", "irscope.goldens.pytest_plugin"]


@pytest.fixture
def project(pytester, monkeypatch):
    """A user's project: kernels/scale.py, and tests written by each test through `tests(body)`."""
    monkeypatch.setenv("PYTHONPATH", str(Path(irscope.__file__).parent.parent))
    pytester.path.joinpath("pytest.ini").write_text("[pytest]\n")
    (pytester.path / "kernels").mkdir()
    (pytester.path / "kernels" / "scale.py").write_text(KERNEL)

    def tests(body: str) -> None:
        pytester.path.joinpath("test_user.py").write_text(
            f"import os\nARGS = {ARGS}\nK = 'kernels/scale.py:scale'\nKW = dict(args=ARGS, constexprs={{'BLOCK': 64}})\n"
            + textwrap.dedent(body))

    def run(*args):
        return pytester.runpytest_subprocess(*_plugin_args(), "-p", "no:cacheprovider", *args)

    return pytester, tests, run


def _out(result) -> str:
    """The run's output below pytest's header (whose rootdir line holds the test's own name)."""
    return result.stdout.str().split("collected", 1)[-1]


TWO_GOLDENS = '''
def test_two(irscope):
    irscope.assert_golden(K, target="sm_80", **KW)
    snap = irscope.compile(K, target="sm_80", **KW)
    if os.environ.get("IRSCOPE_TEST_BREAK"):
        irscope.expect(snap).uses("wgmma.mma_async")  # fails: sm_80 has no wgmma
    irscope.assert_golden(K, target="gfx942", **KW)
'''


@pytest.mark.slow
def test_a_test_that_fails_before_its_second_golden_keeps_it_on_update_and_reports_it_not_unused(project,
                                                                                                 monkeypatch):
    """A test that failed midway had its not-yet-compared goldens called unused, and --irscope-update
    deleted them: a broken expectation cost a committed golden."""
    pt, tests, run = project
    tests(TWO_GOLDENS)
    run("--irscope-update").assert_outcomes(passed=1)
    gfx = pt.path / "snapshots" / POINT / "gfx942"
    assert (gfx / "irscope.json").is_file()
    monkeypatch.setenv("IRSCOPE_TEST_BREAK", "1")
    for args in ((), ("--irscope-update",)):
        result = run(*args)
        result.assert_outcomes(failed=1)
        out = _out(result)
        assert "golden(s) unused" not in out and "golden(s) deleted" not in out, out
        assert (gfx / "irscope.json").is_file(), args
    monkeypatch.delenv("IRSCOPE_TEST_BREAK")
    run().assert_outcomes(passed=1)


ONE_GOLDEN = '''
def test_one(irscope):
    irscope.assert_golden(K, target="sm_80", **KW)
'''


@pytest.mark.slow
def test_a_golden_root_whose_kernel_folder_links_out_is_neither_read_nor_changed(project, tmp_path):
    """`snapshots/scale -> /elsewhere` made a run compare with the goldens found there ("1 match") and
    --irscope-update write a golden there, outside the golden root."""
    pt, tests, run = project
    tests(ONE_GOLDEN)
    run("--irscope-update").assert_outcomes(passed=1)
    elsewhere = tmp_path / "elsewhere"
    shutil.move(pt.path / "snapshots" / "scale", elsewhere)
    (pt.path / "snapshots" / "scale").symlink_to(elsewhere)
    before = sorted(p.relative_to(elsewhere) for p in elsewhere.rglob("*"))
    for args in ((), ("--irscope-update",)):
        result = run(*args)
        result.assert_outcomes(failed=1)
        out = _out(result)
        assert f"{POINT}/sm_80 leads outside the golden root {pt.path}/snapshots" in out, out
        assert "Traceback" not in out and "1 match" not in out and "1 written" not in out
    shutil.rmtree(elsewhere / POINT.split("/")[1] / "sm_80")  # a write would now create it out there
    run("--irscope-update").assert_outcomes(failed=1)
    assert sorted(p.relative_to(elsewhere) for p in elsewhere.rglob("*")) == \
        [p for p in before if "sm_80" not in str(p)]


@pytest.mark.slow
def test_golden_json_is_never_read_through_a_link_out_nor_when_huge(project, tmp_path):
    """golden.json was read wherever it pointed and however large: an update copied an outside JSON file's
    fields into the new golden.json (into the repository), and a 3 GB one was a MemoryError."""
    pt, tests, run = project
    tests(ONE_GOLDEN)
    run("--irscope-update").assert_outcomes(passed=1)
    record = pt.path / "snapshots" / POINT / "sm_80" / "golden.json"
    secret = tmp_path / "secret.json"
    secret.write_text('{"token": "SECRET-123"}')
    record.unlink()
    record.symlink_to(secret)
    result = run("--irscope-update")
    result.assert_outcomes(passed=1)
    assert not record.is_symlink() and "SECRET" not in record.read_text()
    assert json.loads(record.read_text())["test"] == "test_user.py::test_one"
    record.unlink()
    with open(record, "wb") as f:  # sparse: 100 MB that take no disk
        f.truncate(100 << 20)
    result = run()
    assert result.ret == 1, result.stdout.str()
    result.stdout.fnmatch_lines([f"irscope: this run fails: *{POINT}/sm_80: golden.json is 100.0 MiB, more than "
                                 f"irscope reads from a snapshot (64 MiB)*"])


def _immutable(folder: Path, on: bool) -> bool:
    """Make a folder refuse writes even to root (chattr +i), or allow them again; False where it cannot."""
    if os.geteuid() != 0:
        folder.chmod(0o555 if on else 0o755)
        return True
    if shutil.which("chattr") is None:
        return False
    return subprocess.run(["chattr", "+i" if on else "-i", str(folder)], capture_output=True).returncode == 0


@pytest.mark.slow
def test_a_golden_root_that_cannot_be_written_fails_in_one_line_not_a_traceback(project):
    """--irscope-update into a golden root the file system refuses was an OSError traceback through
    irscope's store in each test, and an INTERNALERROR when deleting an unused golden at the session's end."""
    pt, tests, run = project
    tests(TWO_GOLDENS)
    run("--irscope-update").assert_outcomes(passed=1)
    gfx = pt.path / "snapshots" / POINT / "gfx942"
    if not _immutable(gfx, True):
        pytest.skip("no way to make a folder unwritable here (not root's chattr, nor chmod)")
    try:
        tests(ONE_GOLDEN.replace("test_one", "test_two"))  # test_two stops using its gfx942 golden
        result = run("--irscope-update")
        assert result.ret == 1, result.stdout.str()
        out = _out(result)
        assert "INTERNALERROR" not in out + result.stderr.str() and "Traceback" not in out
        result.stdout.fnmatch_lines([f"irscope: this run fails: cannot write the golden {gfx}: *"])
        assert "golden(s) deleted" not in out and (gfx / "irscope.json").is_file()
    finally:
        _immutable(gfx, False)
    # a golden whose folder cannot be made (its kernel's folder is a file): the test fails in one line
    shutil.rmtree(pt.path / "snapshots" / "scale")
    (pt.path / "snapshots" / "scale").write_text("")
    result = run("--irscope-update")
    result.assert_outcomes(failed=1)
    out = _out(result)
    assert "Traceback" not in out and "OSError" not in out and "Error: [Errno" not in out, out
    result.stdout.fnmatch_lines([f"irscope: cannot write the golden {pt.path}/snapshots/{POINT}/sm_80: * (hint: *"])


@pytest.mark.parametrize("plugin", ["irscope.pytest_plugin", "irscope.goldens.pytest_plugin"])
def test_the_plugin_named_by_its_module_path_loads_once_beside_its_entry_point(pytester, monkeypatch, plugin):
    """`pytest -p irscope.pytest_plugin` (the documented old path) was a ValueError before any test ran
    wherever irscope is installed: pluggy refused the entry point's second name for the same module."""
    monkeypatch.setenv("PYTHONPATH", str(Path(irscope.__file__).parent.parent))
    pytester.makepyfile(test_user='''
        def test_fixture(irscope, pytestconfig):
            assert pytestconfig.getoption("--irscope-update") is True and irscope.expect is not None
    ''')
    for env in ({}, {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}):
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        result = pytester.runpytest_subprocess("-p", plugin, "-p", "no:cacheprovider", "--irscope-update")
        assert "ValueError" not in result.stdout.str() + result.stderr.str(), result.stderr.str()
        result.assert_outcomes(passed=1)


def test_a_list_as_an_option_value_and_bad_ini_values_are_one_line_errors(pytester, monkeypatch):
    """A list in constexprs={...} was a TypeError traceback through the plugin's compile cache; an ini
    irscope_version_mismatch typo silently meant fail; an empty irscope_goldens made the rootdir the root."""
    monkeypatch.setenv("PYTHONPATH", str(Path(irscope.__file__).parent.parent))
    pytester.makepyfile(test_user='''
        def test_list(irscope):
            irscope.compile("add", target="sm_80", constexprs={"BLOCK_SIZE": [1024]})
    ''')
    run = lambda *a: pytester.runpytest_subprocess(*_plugin_args(), "-p", "no:cacheprovider", *a)  # noqa: E731
    result = run()
    result.assert_outcomes(failed=1)
    assert "TypeError" not in result.stdout.str()
    assert any(line.startswith("irscope: compile option constexprs['BLOCK_SIZE'] is [1024], a list; values must be "
                               "numbers, strings, bools or tuples (hint: ") for line in result.stdout.lines)
    for ini, error in (("irscope_version_mismatch = fial", "ini irscope_version_mismatch is 'fial'; use skip or fail"),
                       ("irscope_goldens =", "ini irscope_goldens is empty; *")):
        pytester.path.joinpath("pytest.ini").write_text(f"[pytest]\n{ini}\n")
        result = run()
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines([f"ERROR: {error}"])


@pytest.mark.slow
def test_a_test_that_stopped_calling_assert_golden_at_all_has_its_goldens_unused(project):
    """The unused goldens were looked for only when some test of the run compared a golden: a test that ran
    alone (-k) after its assert_golden was removed left its goldens unreported and --irscope-update kept them."""
    pt, tests, run = project
    other = ONE_GOLDEN.replace("sm_80", "sm_90a")
    tests(TWO_GOLDENS + other)
    run("--irscope-update").assert_outcomes(passed=2)
    tests("def test_two():\n    pass\n" + other)
    point = pt.path / "snapshots" / POINT
    result = run("-k", "test_two")
    assert result.ret == 1
    result.stdout.fnmatch_lines(["2 golden(s) unused by the tests that wrote them:", f"  {point}/gfx942",
                                 f"  {point}/sm_80", "irscope: 2 unused golden(s) make this run fail; *"])
    result = run("-k", "test_two", "--irscope-update")
    assert result.ret == 0 and "2 golden(s) deleted" in result.stdout.str()
    assert sorted(p.name for p in point.iterdir()) == ["sm_90a"]  # test_one's, which did not run
    run().assert_outcomes(passed=2)


@pytest.mark.slow
def test_a_report_folder_that_cannot_be_written_still_shows_the_mismatch(project):
    """--irscope-report naming a file was a FileExistsError traceback in place of the golden's diff."""
    pt, tests, run = project
    tests(ONE_GOLDEN)
    run("--irscope-update").assert_outcomes(passed=1)
    kernel = pt.path / "kernels" / "scale.py"
    kernel.write_text(kernel.read_text().replace("* 2.0", "* 3.0"))
    (pt.path / "reports").write_text("")
    result = run("--irscope-report", "reports")
    result.assert_outcomes(failed=1)
    out = _out(result)
    assert "FileExistsError" not in out and "Traceback" not in out
    result.stdout.fnmatch_lines([f"{POINT}/sm_80 differs from its golden *", "first differing stage: ttir *",
                                 "irscope: no report: cannot write reports/test_user.py_test_one.html: * "
                                 "(--irscope-report DIR)"])
    (pt.path / "reports").unlink()
    result = run("--irscope-report", "reports")
    result.stdout.fnmatch_lines(["irscope: report reports/test_user.py_test_one.html"])
    assert (pt.path / "reports" / "test_user.py_test_one.html").is_file()


@pytest.mark.slow
def test_the_update_command_in_a_failure_pastes_where_pytest_ran_and_an_empty_target_is_one_line(project):
    """The command was the rootdir-relative node id unquoted: from tests/ it named no file, and a
    parametrized id is a glob to the shell; target=[] said 'pass --target', a CLI flag."""
    pt, tests, run = project
    (pt.path / "tests").mkdir()
    pt.path.joinpath("tests", "test_user.py").write_text(textwrap.dedent('''
        import pytest

        @pytest.mark.parametrize("t", ["sm_80"])
        def test_param(irscope, t):
            irscope.assert_golden("add", target=t)

        def test_empty(irscope):
            irscope.assert_golden("add", target=[])
    '''))
    os.chdir(pt.path / "tests")  # pytester's chdir is undone after the test
    result = run()
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(["create it with: pytest --irscope-update 'test_user.py::test_param?sm_80?'"])
    assert any(line.startswith('irscope: assert_golden got no target ([]) (hint: give one (target="sm_90a")')
               for line in result.stdout.lines), result.stdout.str()


@pytest.mark.slow
def test_reports_of_tests_run_elsewhere_never_make_goldens_unused(project):
    """A pytest-xdist controller receives every worker's test reports (through pytest_runtest_logreport) but
    none of their goldens' uses: to it every golden of a test that ran looked unused, and with
    --irscope-update it would have deleted them all. Played here as xdist's controller plays it."""
    pt, tests, run = project
    tests(TWO_GOLDENS)
    run("--irscope-update").assert_outcomes(passed=1)
    pt.path.joinpath("conftest.py").write_text(textwrap.dedent('''
        import pytest

        @pytest.hookimpl(tryfirst=True)
        def pytest_sessionfinish(session):  # the report a worker sent of test_two, which ran there
            report = pytest.TestReport("test_user.py::test_two", ("test_user.py", 3, "test_two"), {}, "passed",
                                       None, "call")
            session.config.hook.pytest_runtest_logreport(report=report)
    '''))
    for args in ((), ("--irscope-update",)):
        result = run("-k", "nothing_here", *args)
        assert "golden(s) unused" not in result.stdout.str() and "golden(s) deleted" not in result.stdout.str()
        assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED, result.stdout.str()
    assert (pt.path / "snapshots" / POINT / "gfx942" / "irscope.json").is_file()


def test_an_irscope_error_in_a_test_body_is_one_line_without_pytests_hidden_frames_notice(pytester, monkeypatch):
    """An IrscopeError raised by the test's own code (a stage the snapshot lacks, a bad folder) was its line
    plus pytest's "All traceback entries are hidden. Pass `--full-trace`..." (every frame was hidden)."""
    monkeypatch.setenv("PYTHONPATH", str(Path(irscope.__file__).parent.parent))
    pytester.makepyfile(test_user='''
        from irscope.store.snapshot import load_snapshot

        def test_body(irscope):
            load_snapshot("no_such_folder")
    ''')
    result = pytester.runpytest_subprocess(*_plugin_args(), "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    failures = result.stdout.str().split("= FAILURES =")[1].split("short test summary")[0]
    lines = [line for line in failures.splitlines() if line.strip() and not line.startswith(("_", "="))]
    assert lines == ["irscope: 'no_such_folder' does not exist (hint: give a snapshot folder (irscope compile writes "
                     "them))"], failures


@pytest.mark.slow
def test_a_kernel_that_does_not_compile_fails_with_triton_s_line_and_caret(project):
    """A failed compile said only `NameError('undefined_name is not defined')`, not where, and its hint
    promised a compiler's log in a folder that holds none (the error is in its irscope.json)."""
    pt, tests, run = project
    kernel = pt.path / "kernels" / "scale.py"
    kernel.write_text(kernel.read_text().replace("* 2.0", "* undefined_name"))
    tests(ONE_GOLDEN)
    result = run()
    result.assert_outcomes(failed=1)
    out = _out(result)
    assert "Traceback" not in out
    result.stdout.fnmatch_lines([f"irscope: {POINT}/sm_80 failed to compile (failed): NameError('undefined_name is "
                                 "not defined') (hint: the failed compile's record (irscope.json's 'error', logs/) "
                                 "is in *)",
                                 "    at *:*:", "    def scale(x_ptr, out_ptr, n, BLOCK: tl.constexpr):", "*",
                                 "*tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * undefined_name*",
                                 "*^", "    NameError('undefined_name is not defined')"])
