"""The pytest plugin, tested by running pytest inside pytest (pytester) on a small real kernel."""
import importlib.metadata
import json
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
    registered = any(ep.value.startswith("irscope.pytest_plugin") for ep in importlib.metadata.entry_points(group="pytest11"))
    return [] if registered else ["-p", "irscope.pytest_plugin"]


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


def test_a_missing_golden_fails_with_the_command_that_creates_it(project):
    pt, write, run = project
    result = run()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*no golden snapshot for scale/default/sm_80*",
                                 "*create it with: pytest --irscope-update test_k.py::test_scale_goldens*"])


def test_unused_goldens_fail_the_run_but_only_for_tests_that_ran(project):
    pt, write, run = project
    run("--irscope-update").assert_outcomes(passed=1)
    write(targets='["sm_80"]')
    result = run()
    result.assert_outcomes(passed=1)
    assert result.ret == 1
    result.stdout.fnmatch_lines(["*1 golden(s) unused*", "*snapshots/scale/default/gfx942*"])
    deselected = run("-k", "nothing_matches")
    assert deselected.ret == 5 and "golden(s) unused" not in deselected.stdout.str()
    cleaned = run("--irscope-update")
    assert cleaned.ret == 0 and "1 golden(s) deleted" in cleaned.stdout.str()
    assert not (pt.path / "snapshots" / "scale" / "default" / "gfx942").exists()


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
    '''))
    result = run()
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(["*scale/default/sm_90a: expected wgmma.mma_async in ptx at least 1 time(s), found 0*"])
    result.stdout.fnmatch_lines(["*FileCheck over ptx failed*"])
