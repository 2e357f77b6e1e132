"""Review of the GPU-side commands on a machine without a GPU (run, verify, profile) and of the pytest
plugin's goldens (shared goldens, pytest-xdist). Real compiles of one small kernel through pytest inside
pytest (pytester), as a user's suite runs; the CLI through its real entry point."""
import importlib.metadata
import importlib.util
import json
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

HEADER = ("ARGS = {'x_ptr': '*fp32', 'out_ptr': '*fp32', 'n': 4096}\nK = 'kernels/scale.py:scale'\n"
          "KW = dict(args=ARGS, constexprs={'BLOCK': 64})\n")
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
        pytester.path.joinpath("test_user.py").write_text(HEADER + textwrap.dedent(body))

    def run(*args):
        return pytester.runpytest_subprocess(*_plugin_args(), "-p", "no:cacheprovider", *args)

    return pytester, tests, run


SHARED = '''
def test_a(irscope):
    A_USES

def test_b(irscope):
    irscope.assert_golden(K, target="sm_80", **KW)
'''


@pytest.mark.slow
def test_a_golden_two_tests_compare_is_kept_while_one_of_them_still_uses_it(project):
    """golden.json recorded only the test that wrote it: when that test stopped using the golden,
    `pytest --irscope-update` of it deleted the golden the other test still compared (which then failed,
    'no golden snapshot')."""
    pt, tests, run = project
    golden = pt.path / "snapshots" / POINT / "sm_80"
    tests(SHARED.replace("A_USES", 'irscope.assert_golden(K, target="sm_80", **KW)'))
    run("--irscope-update").assert_outcomes(passed=2)
    record = json.loads((golden / "golden.json").read_text())
    assert record["test"] == "test_user.py::test_a"
    assert record["tests"] == ["test_user.py::test_a", "test_user.py::test_b"]

    tests(SHARED.replace("A_USES", "pass"))  # test_a stops comparing it; test_b still does
    for args in ((), ("--irscope-update",)):
        result = run("test_user.py::test_a", *args)
        result.assert_outcomes(passed=1)
        assert "golden(s) unused" not in result.stdout.str() and "golden(s) deleted" not in result.stdout.str()
        assert result.ret == 0, result.stdout.str()
        assert (golden / "irscope.json").is_file()
    run().assert_outcomes(passed=2)

    tests(SHARED.replace("A_USES", "pass").replace('    irscope.assert_golden(K, target="sm_80", **KW)\n',
                                                   "    pass\n"))
    result = run("--irscope-update")  # neither uses it now: it is unused, and deleted
    result.stdout.fnmatch_lines(["1 golden(s) deleted:", f"*{POINT}/sm_80"])
    assert not golden.exists()


def test_a_golden_json_whose_tests_is_not_a_list_of_strings_is_damaged(tmp_path):
    from irscope.errors import SnapshotError
    from irscope.goldens.root import _record_at, recorded_tests

    (tmp_path / "golden.json").write_text(json.dumps({"test": "t::a", "tests": ["t::a", "t::b", "t::a"]}))
    assert recorded_tests(_record_at(tmp_path)) == ["t::a", "t::b"]
    (tmp_path / "golden.json").write_text(json.dumps({"test": "t::a", "tests": "t::b"}))
    with pytest.raises(SnapshotError, match="field 'tests' is 't::b', not a list of strings"):
        _record_at(tmp_path)


# (pytest-xdist is in the test extra; a bare install without it skips these)
needs_xdist = pytest.mark.skipif(importlib.util.find_spec("xdist") is None,
                                 reason="pytest-xdist is not installed (pip install pytest-xdist): this checks the "
                                        "plugin under -n")


@pytest.mark.slow
@needs_xdist
def test_under_xdist_the_controller_reports_fails_and_deletes_unused_goldens(project):
    """Under `pytest -n 2` each worker looked for unused goldens itself and its summary and exit status never
    reached the controller: an unused golden passed the run silently, and the run had no summary at all."""
    pt, tests, run = project
    tests('''
        def test_a(irscope):
            irscope.assert_golden(K, target="sm_80", **KW)

        def test_b(irscope):
            irscope.assert_golden(K, target="sm_80", num_warps=2, **KW)
    ''')
    run("-n", "2", "--irscope-update").assert_outcomes(passed=2)
    unused = pt.path / "snapshots" / POINT.replace("/default.", "/default.w2.") / "sm_80"
    assert (unused / "irscope.json").is_file()
    tests('''
        def test_a(irscope):
            irscope.assert_golden(K, target="sm_80", **KW)

        def test_b(irscope):
            pass
    ''')
    result = run("-n", "2")
    result.assert_outcomes(passed=2)
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()
    result.stdout.fnmatch_lines(["*irscope goldens*", "1 match", "1 golden(s) unused by the tests that wrote them:",
                                 f"  {unused}", "irscope: 1 unused golden(s) make this run fail*"])
    result = run("-n", "2", "--irscope-update")
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["1 golden(s) deleted:", f"  {unused}"])
    assert not unused.exists() and (pt.path / "snapshots" / POINT / "sm_80" / "irscope.json").is_file()


@pytest.mark.slow
@needs_xdist
def test_under_xdist_a_crashed_worker_makes_no_golden_unused(project):
    pt, tests, run = project
    tests('''
        def test_a(irscope):
            irscope.assert_golden(K, target="sm_80", **KW)
    ''')
    run("--irscope-update").assert_outcomes(passed=1)
    tests('''
        import os

        def test_a(irscope):
            pass

        def test_crash():
            os._exit(3)
    ''')
    result = run("-n", "2", "--irscope-update")
    assert "golden(s) deleted" not in result.stdout.str()
    result.stdout.fnmatch_lines(["irscope: 1 pytest-xdist worker(s) went down without saying which goldens*"])
    assert (pt.path / "snapshots" / POINT / "sm_80" / "irscope.json").is_file()


def test_the_interpreter_child_does_not_put_irscope_s_own_package_folder_on_sys_path(tmp_path):
    """The child's PYTHONPATH named irscope/ itself (a path left from before the re-layout moved the runner
    into irscope/gpu/), so in it irscope's modules were top-level ones (`errors`, `spec`, `report`, `diff`...)
    and shadowed any installed module of those names that a user's kernel file imported."""
    from irscope.gpu.runner import Request, check_interpreted

    data = Path(__file__).parent / "data" / "wrong_kernels.py"
    kernel = tmp_path / "guarded.py"
    kernel.write_text("import importlib.util\nif importlib.util.find_spec('errors') is not None:\n"
                      "    raise RuntimeError('irscope/ itself is on sys.path: ' + importlib.util.find_spec('errors').origin)\n"
                      + data.read_text())
    result = check_interpreted(Request(f"{kernel}:add_no_tail", size="small"))
    assert result.ok, result.error


def test_a_snapshot_without_a_runnable_cubin_is_refused_before_whether_a_gpu_is_here(cli, tmp_path):
    """`run --snapshot` of an AMD snapshot (no cubin at all) or of a damaged cubin said, without a GPU,
    'there is no CUDA GPU here to launch the snapshot's cubin on ... run --snapshot on a machine with a CUDA
    GPU', where no GPU could run it: the user learnt that only on the GPU machine."""
    import shutil

    from tests.conftest import GOLDENS

    code, _, err = cli("run", "--snapshot", GOLDENS / "add" / "default" / "gfx942")
    assert code == 4, err
    assert "has no cubin to run: it was compiled for gfx942, an AMD target" in err
    assert "irscope compile add --target sm_90a" in err and "no CUDA GPU" not in err
    damaged = tmp_path / "add" / "default" / "sm_80"
    shutil.copytree(GOLDENS / "add" / "default" / "sm_80", damaged)
    with (damaged / "add_kernel.cubin").open("ab") as f:
        f.write(b"x")
    code, _, err = cli("run", "--snapshot", damaged)
    assert code == 4, err
    assert "add_kernel.cubin does not match the sha256 irscope.json records" in err and "no CUDA GPU" not in err


def test_a_json_file_the_disk_refuses_after_the_runs_is_one_line_not_an_internal_error(cli):
    """`--json /dev/full` (a full disk) passed the check before the runs, then was 'internal error: OSError:
    [Errno 28] ... this is a bug in irscope', exit 70, once the runs were done."""
    if not Path("/dev/full").exists():
        pytest.skip("needs /dev/full (Linux) to play a full disk")
    code, out, err = cli("run", "add", "--interpret", "--size", "small", "--json", "/dev/full")
    assert "PASS  add default small" in out
    assert code == 5, err
    assert err.splitlines()[-2:] == ["irscope: error: cannot write --json /dev/full: No space left on device",
                                     "irscope: hint: the results are in the output above; give --json a file on a "
                                     "disk with room that you may write"]


def test_tests_added_to_a_shared_golden_at_once_are_all_kept(tmp_path):
    """Two xdist workers each adding their test to a golden's `tests` read golden.json, added theirs and wrote
    it back, unlocked: one was lost, and the golden could then be deleted while that test still compared
    it. The read and write hold the folder's lock (held here while eight threads add theirs)."""
    import threading
    import time
    from irscope.goldens.root import GoldenRoot, _record_at, recorded_tests
    from irscope.harness.batch import Point, compile_points
    from irscope.store.folder import folder_lock
    from irscope.store.snapshot import load_snapshot
    fresh = load_snapshot(compile_points([Point("add", "gfx942")], tmp_path / "fresh")[0].path)
    root = GoldenRoot(tmp_path / "snapshots")
    root.mark()
    root.update(fresh, "t.py::test_0", "add")
    folder = root.folder(fresh)
    ids = [f"t.py::test_{i}" for i in range(1, 9)]
    threads = [threading.Thread(target=root.update, args=(fresh, i, "add")) for i in ids]
    with folder_lock(folder):
        for t in threads:
            t.start()
        time.sleep(0.5)
        assert recorded_tests(_record_at(folder)) == ["t.py::test_0"], "an update wrote without the lock"
    for t in threads:
        t.join(60)
    assert sorted(recorded_tests(_record_at(folder))) == sorted(["t.py::test_0", *ids])
