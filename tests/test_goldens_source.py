"""A golden's source.py kept in step with its kernel file: check warns, update rewrites source.py alone.

Real compiles of one small kernel for one target, in a temporary project, through the CLI and through the
pytest plugin (pytester)."""
import importlib.metadata
import json
import shutil
from pathlib import Path

import pytest

import irscope

pytest_plugins = ["pytester"]

KERNELS = Path(irscope.__file__).parent.parent / "kernels"
MASK = "    mask = offsets < n_elements\n"
COMMENTED = "    mask = offsets < n_elements  # the last block is masked\n"


def _files(folder: Path) -> dict[str, tuple[bytes, int]]:
    return {p.relative_to(folder).as_posix(): (p.read_bytes(), p.stat().st_mtime_ns)
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.slow
def test_a_kernel_file_changed_only_in_a_comment_warns_on_check_and_update_rewrites_source_py_alone(cli, tmp_path):
    kernel = tmp_path / "add_k.py"
    shutil.copy(KERNELS / "add.py", kernel)
    code, out, err = cli("snapshot", "update", "add_k.py:add_kernel", "--target", "sm_80", "--goldens", "g")
    assert code == 0 and "add/default/sm_80  written" in out, err
    golden = tmp_path / "g/add/default/sm_80"
    assert (golden / "source.py").read_bytes() == kernel.read_bytes()
    text = kernel.read_text()
    assert MASK in text
    kernel.write_text(text.replace(MASK, COMMENTED))  # a comment inside the jit function: the IR is the same
    before = _files(golden)

    code, out, err = cli("snapshot", "check", "--goldens", "g")
    assert code == 0, err
    assert "add/default/sm_80  match  warning: stale source.py (add_k.py differs: +1 -1 lines)" in out
    lines = out.rstrip().splitlines()
    assert lines[-2] == "1 golden(s): 1 match, 0 mismatch, 0 missing"
    assert lines[-1].startswith("warning: 1 matching golden(s) keep a stale source.py")
    assert lines[-1].endswith("refresh it with: irscope snapshot update --goldens g")
    code, out, err = cli("snapshot", "check", "--goldens", "g", "--json")
    report = json.loads(out)
    assert code == 0 and report["ok"] is True and report["source_stale"] == 1
    assert report["results"][0]["source_stale"] is True
    assert report["results"][0]["source"] == {"kernel_file": "add_k.py", "added": 1, "removed": 1,
                                              "had_source": True}
    code, out, err = cli("snapshot", "check", "--goldens", "g", "--on-stale-source", "fail")
    assert code == 1 and "irscope: error: 1 of 1 goldens keep a stale source.py (--on-stale-source fail)" in err
    assert _files(golden) == before  # check writes nothing

    code, out, err = cli("snapshot", "update", "--goldens", "g")
    assert code == 0, err
    assert "add/default/sm_80  source refreshed  (source.py is now add_k.py, +1 -1 lines; IR unchanged" in out
    assert out.rstrip().splitlines()[-1] == "1 golden(s): 0 match, 0 mismatch, 0 missing, 1 source-refreshed"
    after = _files(golden)
    assert after.keys() == before.keys()  # no temporary file left behind, nothing added
    assert after["source.py"][0] == kernel.read_bytes()
    changed = [name for name in before if after[name] != before[name]]
    assert changed == ["source.py"]  # every other file keeps its bytes and its mtime, irscope.json included

    code, out, err = cli("snapshot", "update", "--goldens", "g")
    assert code == 0 and "add/default/sm_80  match\n" in out and "refreshed" not in out
    assert _files(golden) == after  # a second update writes nothing
    code, out, err = cli("snapshot", "check", "--goldens", "g")
    assert code == 0 and "stale source.py" not in out

    (golden / "source.py").unlink()  # a golden made without one (by hand, or by an older tool)
    code, out, err = cli("snapshot", "check", "--goldens", "g")
    lines_in_kernel = len(kernel.read_text().splitlines())
    assert code == 0, err
    assert f"add/default/sm_80  match  warning: no source.py (add_k.py has {lines_in_kernel} lines)" in out
    code, out, err = cli("snapshot", "update", "--goldens", "g")
    assert code == 0 and f"source refreshed  (source.py is now add_k.py, {lines_in_kernel} lines, none before;" in out
    assert (golden / "source.py").read_bytes() == kernel.read_bytes()
    assert {name: v for name, v in _files(golden).items() if name != "source.py"} == \
        {name: v for name, v in after.items() if name != "source.py"}


KERNEL = '''
import triton
import triton.language as tl
from irscope.spec import Config, KernelSpec, Tensor


@triton.jit
def scale(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)


SPEC = KernelSpec(name="scale", fn=scale, args={"x_ptr": Tensor("fp32"), "out_ptr": Tensor("fp32"), "n": 4096},
                  configs=(Config("default", {"BLOCK": 256}, num_warps=4),))
'''

TESTS = '''
def test_scale_golden(irscope):
    irscope.assert_golden("kern.py:scale", target="sm_80")
'''


def _plugin_args():
    registered = any(ep.name == "irscope" for ep in importlib.metadata.entry_points(group="pytest11"))
    return [] if registered else ["-p", "irscope.goldens.pytest_plugin"]


@pytest.mark.slow
def test_the_plugin_warns_of_a_stale_source_py_and_its_update_rewrites_source_py_alone(pytester, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(Path(irscope.__file__).parent.parent))
    kernel = pytester.path / "kern.py"
    kernel.write_text(KERNEL)
    pytester.path.joinpath("test_k.py").write_text(TESTS)

    def run(*args):
        return pytester.runpytest_subprocess(*_plugin_args(), "-p", "no:cacheprovider", *args)

    run("--irscope-update").assert_outcomes(passed=1)
    golden = pytester.path / "snapshots/scale/default/sm_80"
    kernel.write_text(KERNEL.replace("    mask = offs < n\n", "    mask = offs < n  # the tail\n"))
    before = _files(golden)

    result = run()
    result.assert_outcomes(passed=1)  # a warning, not a failure: the IR is what a golden guards
    result.stdout.fnmatch_lines([
        "*irscope goldens*", "1 match",
        "irscope: 1 matching golden(s) keep a stale source.py (not the kernel file their IR is compiled from); "
        "a warning, not a failure:",
        f"  {golden}: source.py differs from kern.py (+1 -1 lines)",
        "refresh source.py alone with: pytest --irscope-update (or irscope snapshot update)"])
    strict = run("--irscope-stale-source=fail")
    strict.assert_outcomes(failed=1)
    strict.stdout.fnmatch_lines([f"*scale/default/sm_80 matches its golden ({golden}), but its source.py differs "
                                 f"from kern.py (+1 -1 lines) (--irscope-stale-source=fail)*",
                                 "*refresh source.py alone with: pytest --irscope-update "
                                 "test_k.py::test_scale_golden*"])
    assert _files(golden) == before

    updated = run("--irscope-update")
    updated.assert_outcomes(passed=1)
    updated.stdout.fnmatch_lines(["1 source-refreshed",
                                  "1 golden(s) with source.py refreshed (their IR matched; no other file rewritten):",
                                  f"  {golden}: source.py differs from kern.py (+1 -1 lines)"])
    after = _files(golden)
    assert after.keys() == before.keys()
    assert [name for name in before if after[name] != before[name]] == ["source.py"]
    assert after["source.py"][0] == kernel.read_bytes()

    again = run("--irscope-update")
    again.assert_outcomes(passed=1)
    again.stdout.fnmatch_lines(["*irscope goldens*", "1 match"])
    assert "source.py refreshed" not in again.stdout.str() and "stale source.py" not in again.stdout.str()
    assert _files(golden) == after  # a second update writes nothing
