"""`irscope snapshot check|update` on real compiles."""
import importlib.metadata
import json
import os
import shutil
import subprocess
import sys

import pytest

from tests.conftest import DATA

EVIL = """
from pathlib import Path
Path(MARKER).write_text("imported")
"""


def _record_hash(stage_file):
    import hashlib
    meta_path = stage_file.parent / "irscope.json"
    meta = json.loads(meta_path.read_text())
    meta["stages"][stage_file.suffix[1:]]["sha256"] = hashlib.sha256(stage_file.read_bytes()).hexdigest()
    meta_path.write_text(json.dumps(meta))


@pytest.mark.slow
def test_update_then_check_passes_and_a_changed_golden_fails(cli, tmp_path):
    code, out, err = cli("snapshot", "update", "add", "--target", "sm_80,gfx90a", "--goldens", "g")
    assert code == 0, err
    assert "add/default/sm_80  written" in out and (tmp_path / "g/.irscope-goldens").is_file()
    code, out, err = cli("snapshot", "check", "--goldens", "g")
    assert code == 0 and "add/default/sm_80  match" in out and "add/default/gfx90a  match" in out
    assert out.rstrip().splitlines()[-1] == "2 golden(s): 2 match, 0 mismatch, 0 missing"
    assert "irscope: kernels to import: add (built-in)" in err
    ptx = tmp_path / "g/add/default/sm_80/add_kernel.ptx"
    ptx.write_text(ptx.read_text().replace("add.f32", "sub.f32"))
    _record_hash(ptx)  # a golden that truly differs (another compile) records its own bytes' sha256
    code, out, err = cli("snapshot", "check", "--goldens", "g")
    assert code == 1 and "add/default/sm_80  mismatch" in out and "first differing stage: ptx" in out
    assert "-\tsub.f32" in out.replace("    ", "\t") or "sub.f32" in out
    assert "irscope: error: 1 of 2 snapshots do not match their goldens" in err
    assert "--- golden: g/add/default/sm_80/add_kernel.ptx" in out and "+++ fresh: " in out
    assert "legend: '-' lines are the golden, '+' lines the fresh compile" in out
    assert out.rstrip().splitlines()[-1] == "2 golden(s): 1 match, 1 mismatch, 0 missing"
    code, out, err = cli("snapshot", "check", "--goldens", "g", "--json")
    assert code == 1 and "do not match" in err
    report = json.loads(out)
    assert report["summary"] == {"match": 1, "mismatch": 1, "missing": 0} and report["ok"] is False
    by_label = {r["label"]: r for r in report["results"]}
    assert by_label["add/default/gfx90a"]["status"] == "match"
    bad = by_label["add/default/sm_80"]
    assert bad["status"] == "mismatch" and bad["stage"] == "ptx" and bad["target"] == "sm_80"
    assert bad["golden"] == "g/add/default/sm_80" and any("sub.f32" in line for line in bad["diff"])
    code, out, err = cli("snapshot", "update", "--goldens", "g")
    assert code == 0 and "add/default/sm_80  written" in out and "add/default/gfx90a  match" in out


@pytest.mark.slow
def test_user_kernel_goldens_are_recompiled_from_where_they_were_made(cli, tmp_path):
    shutil.copy(DATA / "user_kernels.py", tmp_path / "mine.py")
    code, out, err = cli("snapshot", "update", "mine.py:copy_rows", "--goldens", "g", "--num-warps", "2")
    assert code == 0, err
    record = json.loads((tmp_path / "g/copy_rows/default.w2/sm_90a/golden.json").read_text())
    assert record["kernel"] == "mine.py:copy_rows"
    code, out, err = cli("snapshot", "check", "--goldens", "g")
    assert code == 0 and "copy_rows/default.w2/sm_90a  match" in out
    assert "irscope: kernels to import: mine.py\n" in err


@pytest.mark.slow
def test_missing_goldens_and_version_mismatch(cli, tmp_path):
    code, out, err = cli("snapshot", "check", "--goldens", "nowhere")
    assert code == 4 and "no golden folder 'nowhere'" in err
    code, out, err = cli("snapshot", "check", "add", "--goldens", "g")
    assert code == 1 and "no golden snapshot for add/default/sm_90a" in out
    assert "irscope snapshot update add --target sm_90a" in out
    cli("snapshot", "update", "add", "--goldens", "g")
    meta_path = tmp_path / "g/add/default/sm_90a/irscope.json"
    meta = json.loads(meta_path.read_text())
    meta["versions"]["triton"] = "3.5.0"
    meta_path.write_text(json.dumps(meta))
    code, out, err = cli("snapshot", "check", "--goldens", "g")
    assert code == 0 and "skipped" in out and "goldens made with Triton 3.5.0; this is Triton" in out
    code, out, err = cli("snapshot", "check", "--goldens", "g", "--on-version-mismatch", "fail")
    assert code == 1 and "@@" not in out


def test_a_golden_naming_a_kernel_file_outside_the_project_is_refused_before_anything_is_imported(
        cli, tmp_path, tmp_path_factory):
    code, out, err = cli("snapshot", "update", "add", "--target", "sm_80", "--goldens", "g")
    assert code == 0, err
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    marker = elsewhere / "marker"
    (elsewhere / "evil.py").write_text(EVIL.replace("MARKER", repr(str(marker))))
    (tmp_path / "kernels").mkdir()
    os.symlink(elsewhere / "evil.py", tmp_path / "kernels" / "linked.py")  # inside the project, pointing out
    shutil.copy(elsewhere / "evil.py", tmp_path / "g" / "add" / "planted.py")  # inside the golden root
    record_path = tmp_path / "g/add/default/sm_80/golden.json"
    record = json.loads(record_path.read_text())
    assert record["kernel"] == "add"
    refused = {f"{elsewhere}/evil.py:x": "absolute path",
               f"{elsewhere}/evil.py": "absolute path",
               f"../{elsewhere.name}/evil.py:x": "climbs out with '..'",
               "kernels/linked.py:x": "outside the project",
               "g/add/planted.py:x": "inside the golden root",
               "kernels/linked.py:x; import os": "names no Python function",
               "kernels/a\x00.py:x": "not a kernel reference",
               "evil": None}  # a built-in name that does not exist: refused by the library, still no import
    for ref, why in refused.items():
        record_path.write_text(json.dumps({**record, "kernel": ref}))
        code, out, err = cli("snapshot", "check", "--goldens", "g")
        first = next(line for line in err.splitlines() if line.startswith("irscope: error: "))
        if why is None:
            assert code == 2 and "unknown kernel 'evil'" in first, (ref, err)
        else:
            assert code == 4 and "kernels to import" not in err, (ref, code, err)
            assert first.startswith(f"irscope: error: {record_path.relative_to(tmp_path)}: field 'kernel' ")
            assert why in first and first.endswith("refusing to import it"), (ref, first)
        assert not marker.exists(), ref
    # comparing with the tampered golden (a fresh compile of a named kernel) never imports its kernel either
    record_path.write_text(json.dumps({**record, "kernel": f"{elsewhere}/evil.py:x"}))
    code, out, err = cli("snapshot", "check", "add", "--target", "sm_80", "--goldens", "g")
    assert code == 0 and "add/default/sm_80  match" in out and not marker.exists()


def test_a_damaged_golden_json_is_exit_4_naming_the_file(cli, tmp_path):
    code, out, err = cli("snapshot", "update", "add", "--target", "sm_80", "--goldens", "g")
    assert code == 0, err
    record_path = tmp_path / "g/add/default/sm_80/golden.json"
    for damage in ('{"kernel": "add"', '["add"]', '{"kernel": 7}', b"\xff\xfe"):
        record_path.write_bytes(damage.encode() if isinstance(damage, str) else damage)
        code, out, err = cli("snapshot", "check", "--goldens", "g")
        assert code == 4 and f"irscope: error: {record_path.relative_to(tmp_path)} is damaged" in err, (damage, err)
        assert "Traceback" not in err and "internal error" not in err


def test_a_golden_edited_by_hand_is_a_mismatch_that_update_rewrites(cli, tmp_path):
    code, out, err = cli("snapshot", "update", "add", "--target", "sm_80", "--goldens", "g")
    assert code == 0, err
    ptx = tmp_path / "g/add/default/sm_80/add_kernel.ptx"
    ptx.write_text(ptx.read_text().replace("add.f32", "sub.f32"))  # its recorded sha256 no longer holds
    code, out, err = cli("snapshot", "check", "--goldens", "g")
    assert code == 1 and "add/default/sm_80  mismatch" in out
    assert "golden files that are not what irscope wrote (their sha256 differs from irscope.json" in out
    assert "counters and resources that moved" not in out and "\n    ptx\n" in out
    code, out, err = cli("snapshot", "update", "--goldens", "g")
    assert code == 0 and "add/default/sm_80  written" in out
    assert "sub.f32" not in ptx.read_text()
    code, out, err = cli("snapshot", "check", "--goldens", "g")
    assert code == 0 and "add/default/sm_80  match" in out


@pytest.mark.slow
def test_check_keeps_fresh_snapshots_only_when_asked_and_compiles_a_point_once_across_releases(cli, tmp_path):
    code, out, err = cli("snapshot", "update", "add", "--target", "sm_80", "--goldens", "g")
    assert code == 0, err
    plain = tmp_path / "g/add/default/sm_80"
    other = plain.with_name("sm_80@triton-3.6.0")  # the same point's golden from another release
    shutil.copytree(plain, other)
    meta = json.loads((other / "irscope.json").read_text())
    meta["versions"]["triton"] = "3.6.0"
    (other / "irscope.json").write_text(json.dumps(meta))
    ptx = plain / "add_kernel.ptx"
    ptx.write_text(ptx.read_text().replace("add.f32", "sub.f32"))
    _record_hash(ptx)
    code, out, err = cli("snapshot", "check", "--goldens", "g")
    assert code == 1 and out.rstrip().splitlines()[-1] == "1 golden(s): 0 match, 1 mismatch, 0 missing"
    assert "fresh snapshot: not kept (add --keep DIR to keep it)" in out
    code, out, err = cli("snapshot", "check", "--goldens", "g", "--keep", "kept")
    assert code == 1
    line = next(x for x in out.splitlines() if "fresh snapshot:" in x)
    assert (tmp_path / line.split("fresh snapshot:")[1].strip() / "irscope.json").is_file()
    code, out, err = cli("snapshot", "check", "--goldens", "g", "--keep", "g/inside")
    assert code == 2 and "holds committed golden snapshots" in err


SCALE = '''
import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)
'''
# a kernel without a KernelSpec: its signature comes from the command line, as a test's args= gives it
SCALE_OPTIONS = ("--arg", "x_ptr=*fp32", "--arg", "out_ptr=*fp32", "--arg", "n=1024", "--constexpr", "BLOCK=256")


def _spec_less_golden(cli, tmp_path):
    """A golden of kernels/scale.py:scale_kernel (no KernelSpec) on sm_80 under g/; its folder."""
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "scale.py").write_text(SCALE)
    code, out, err = cli("snapshot", "update", "kernels/scale.py:scale_kernel", "--target", "sm_80", "--goldens", "g",
                         *SCALE_OPTIONS)
    assert code == 0, err
    (folder,) = (tmp_path / "g" / "scale_kernel").glob("*/sm_80")
    return folder


def _hint(text: str, after: str) -> list[str]:
    """The command a report names after `after`, split as a shell would."""
    import shlex
    line = next(x for x in text.splitlines() if after in x)
    return shlex.split(line.split(after, 1)[1])


def test_update_keeps_what_golden_json_records_that_the_cli_does_not_know(cli, tmp_path):
    code, out, err = cli("snapshot", "update", "add", "--target", "sm_80", "--goldens", "g")
    assert code == 0, err
    record_path = tmp_path / "g/add/default/sm_80/golden.json"
    record = {**json.loads(record_path.read_text()), "test": "tests/test_codegen.py::test_add", "owner": "me"}
    record_path.write_text(json.dumps(record))  # as the pytest plugin wrote it, plus a field irscope doesn't know
    ptx = tmp_path / "g/add/default/sm_80/add_kernel.ptx"
    ptx.write_text(ptx.read_text() + "// edited\n")  # a mismatch, which update rewrites
    code, out, err = cli("snapshot", "update", "--goldens", "g")
    assert code == 0 and "add/default/sm_80  written" in out, err
    assert "// edited" not in ptx.read_text()
    assert json.loads(record_path.read_text()) == record  # the test that wrote it is kept, not null


@pytest.mark.slow
def test_update_rewrites_a_damaged_golden_json_as_the_hint_says(cli, tmp_path):
    folder = _spec_less_golden(cli, tmp_path)
    record_path = folder / "golden.json"
    record_path.write_text("{bad")
    code, out, err = cli("snapshot", "check", "--goldens", "g")
    assert code == 4 and f"{record_path.relative_to(tmp_path)} is damaged" in err
    command = _hint(err, "irscope: hint: rewrite its golden.json (and recompile it from irscope.json's request): ")
    assert command == ["irscope", "snapshot", "update", "--goldens", "g"]
    code, out, err = cli(*command[1:])
    assert code == 0 and "sm_80  written" in out and "Traceback" not in err, err
    assert f"irscope: note: {record_path.relative_to(tmp_path)} was damaged and is rewritten" in err
    assert json.loads(record_path.read_text())["kernel"] == "kernels/scale.py:scale_kernel"
    assert json.loads(record_path.read_text())["test"] is None
    code, out, err = cli("snapshot", "check", "--goldens", "g")
    assert code == 0 and "sm_80  match" in out, err
    # irscope.json names a kernel file that is not in this project (compiled in another checkout): the hint
    # says how to name it, and doing so works
    meta = json.loads((folder / "irscope.json").read_text())
    (folder / "irscope.json").write_text(json.dumps({**meta, "source_file": "/elsewhere/kernels/scale.py"}))
    record_path.write_text("{bad")
    code, out, err = cli("snapshot", "update", "--goldens", "g")
    assert code == 4 and "irscope.json does not tell which kernel file to recompile" in err, err
    command = err.split("pytest --irscope-update): ", 1)[1].splitlines()[0]
    assert "FILE.py:scale_kernel" in command and "'/elsewhere/kernels/scale.py'" in err
    bin_dir = os.path.dirname(sys.executable)  # where `irscope` is installed
    done = subprocess.run(["bash", "-c", command.replace("FILE.py", "kernels/scale.py")], cwd=tmp_path,
                          capture_output=True, text=True, env={**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"})
    code, out, err = done.returncode, done.stdout, done.stderr
    assert code == 0 and "sm_80  match" in out, err


@pytest.mark.slow
def test_check_names_an_update_that_works_for_a_kernel_without_a_spec(cli, tmp_path):
    folder = _spec_less_golden(cli, tmp_path)
    ptx = folder / "scale_kernel.ptx"
    ptx.write_text(ptx.read_text() + "// edited\n")
    code, out, err = cli("snapshot", "check", "--goldens", "g")
    assert code == 1 and str(tmp_path) not in out + err  # no absolute path in what to run
    command = _hint(out, "if the change is intended: ")
    assert command == _hint(err, "if the changes are intended: ") == ["irscope", "snapshot", "update", "--goldens", "g"]
    code, out, err = cli(*command[1:])
    assert code == 0 and "sm_80  written" in out, err
    # checking the kernel by name: the update it names repeats the compile options given
    ptx.write_text(ptx.read_text() + "// edited\n")
    code, out, err = cli("snapshot", "check", "kernels/scale.py:scale_kernel", "--target", "sm_80", "--goldens", "g",
                         *SCALE_OPTIONS)
    assert code == 1, err
    command = _hint(out, "if the change is intended: ")
    assert command == ["irscope", "snapshot", "update", "kernels/scale.py:scale_kernel", "--target", "sm_80",
                       "--goldens", "g", "--constexpr", "BLOCK=256", *SCALE_OPTIONS[:6]]
    code, out, err = cli(*command[1:])
    assert code == 0 and "sm_80  written" in out, err
    assert "// edited" not in ptx.read_text()


@pytest.mark.slow
def test_pytest_irscope_update_rewrites_a_damaged_golden_json_with_its_test(tmp_path):
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "scale.py").write_text(SCALE)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "test_codegen.py").write_text(
        "def test_x(irscope):\n"
        "    irscope.assert_golden('kernels/scale.py:scale_kernel', target='sm_80', constexprs={'BLOCK': 256},\n"
        "                          args={'x_ptr': '*fp32', 'out_ptr': '*fp32', 'n': 1024})\n")

    registered = any(ep.name == "irscope" for ep in importlib.metadata.entry_points(group="pytest11"))
    plugin = [] if registered else ["-p", "irscope.goldens.pytest_plugin"]

    def pytest_run(*args):
        return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *plugin, *args],
                              cwd=tmp_path, capture_output=True, text=True)

    assert pytest_run("--irscope-update").returncode == 0
    (record_path,) = (tmp_path / "snapshots").rglob("golden.json")
    record = json.loads(record_path.read_text())
    record_path.write_text("{bad")
    done = pytest_run("--irscope-update")
    assert done.returncode == 0 and "1 written" in done.stdout and "damaged" not in done.stdout, done.stdout
    assert json.loads(record_path.read_text()) == record == {**record, "test": "test_codegen.py::test_x"}
    assert pytest_run().returncode == 0


@pytest.mark.parametrize("action", ["check", "update"])
def test_a_golden_root_that_is_a_file_is_refused_before_anything_compiles(cli, tmp_path, action):
    # check called every golden "missing" and suggested an update; update compiled first and then named the
    # pytest option in its hint.
    (tmp_path / "G").write_text("not goldens")
    code, out, err = cli("snapshot", action, "add", "--goldens", "G")
    assert code == 2, err
    assert "irscope: error: 'G' is a file, not a folder of golden snapshots" in err
    assert "irscope snapshot --goldens DIR" in err
    assert "missing" not in out and "kernels to import" not in err  # refused before importing or compiling
    assert (tmp_path / "G").read_text() == "not goldens"
