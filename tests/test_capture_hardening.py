"""`irscope capture` in the places a real program puts it: a folder with modules of its own, a program that
forks or is interrupted, an output folder that already holds files; and launch files that name files
elsewhere. Each keeps the user's files and records what the program launched."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import sigint_as_in_a_terminal

PROGRAMS = Path(__file__).parent / "capture_programs"
SMALL = PROGRAMS / "small.py"


def _lines(err: str, kind: str) -> list[str]:
    return [ln for ln in err.splitlines() if ln.startswith(f"irscope: {kind}: ")]


def test_modules_in_the_users_folder_do_not_shadow_irscope_or_triton(cli, tmp_path, capfd):
    # The child ran as `python -m irscope.harness.capture_boot`, which puts the current folder first on
    # sys.path: a triton.py there replaced Triton (an internal error) and an irscope.py ran instead of
    # irscope (exit 1, blamed on os._exit). `python prog.py` never imports from the current folder.
    (tmp_path / "triton.py").write_text("print('SHADOW triton')\nraise ImportError('shadow')\n")
    (tmp_path / "irscope.py").write_text("print('SHADOW irscope')\n")
    code, out, err = cli("capture", "--no-compile", "--out", "snaps", "--", "python", str(SMALL))
    child = capfd.readouterr()
    assert code == 0, err + child.err
    assert "SHADOW" not in child.out and "small program done" in child.out
    assert "4 specialisations of 2 kernels" in err


def test_a_module_run_with_dash_m_is_still_found_in_the_current_folder(cli, tmp_path, capfd):
    (tmp_path / "mymod.py").write_text("print('mymod ran')\n")
    code, out, err = cli("capture", "--no-compile", "--out", "snaps", "--", "-m", "mymod")
    assert code == 0, err
    assert capfd.readouterr().out.startswith("mymod ran")


def test_a_forked_child_that_outlives_the_program_leaves_no_launch_file_behind(cli, tmp_path):
    # The child's sys.exit ran capture_boot's `finally` too: it wrote .launches.json.child-PID into the
    # output folder after irscope had read and removed it, where it stayed.
    (tmp_path / "forks.py").write_text(
        "import os, sys, time\n"
        "r, w = os.pipe()\n"
        "if os.fork() == 0:\n"
        "    os.close(w); os.read(r, 1)  # until the program has ended (its end closes the pipe)\n"
        "    time.sleep(0.5)\n"
        "    sys.exit(0)\n"
        f"import runpy; runpy.run_path({str(SMALL)!r}, run_name='__main__')\n"
    )
    code, out, err = cli("capture", "--no-compile", "--out", "snaps", "--", "python", "forks.py")
    assert code == 0, err
    time.sleep(3)  # the forked child ends meanwhile
    assert sorted(p.name for p in (tmp_path / "snaps").iterdir()) == ["launches.json"]
    assert len(json.loads((tmp_path / "snaps" / "launches.json").read_text())["launches"]) == 4


def test_an_output_folder_whose_launches_json_irscope_did_not_write_is_refused_before_the_program_runs(
        cli, tmp_path, capfd):
    # A file of the user's own was replaced by the capture; a folder there was an internal error after the
    # program had run.
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "launches.json").write_text('{"my": "own data"}\n')
    (tmp_path / "dir" / "launches.json").mkdir(parents=True)
    for out, says in (("mine", "is not a launch file irscope wrote"), ("dir", "is not a file")):
        code, _, err = cli("capture", "--no-compile", "--out", out, "--", "python", str(SMALL))
        assert code == 2, err
        [error], [hint] = _lines(err, "error"), _lines(err, "hint")
        assert says in error and f"{out}/launches.json" in error and "--out" in hint and "Traceback" not in err
        assert "small program done" not in capfd.readouterr().out  # refused before anything ran
    assert (tmp_path / "mine" / "launches.json").read_text() == '{"my": "own data"}\n'
    assert (tmp_path / "dir" / "launches.json").is_dir()


def test_an_earlier_capture_is_replaced_by_the_next(cli, tmp_path):
    for _ in range(2):
        code, out, err = cli("capture", "--no-compile", "--out", "snaps", "--", "python", str(SMALL))
        assert code == 0, err
        assert "4 specialisations" in err


def _capture_a_sleeping_program(tmp_path, on_interrupt: str = "") -> subprocess.Popen:
    """`irscope capture` of a program that launches small.py's kernels, then sleeps (running `on_interrupt`,
    its clean-up, on a KeyboardInterrupt), in a session of its own; returned once the launches are made."""
    ready = tmp_path / "ready"
    sleep = "time.sleep(60)\n"
    if on_interrupt:
        sleep = f"try:\n    time.sleep(60)\nexcept KeyboardInterrupt:\n    {on_interrupt}\n    raise\n"
    (tmp_path / "slow.py").write_text(
        "import runpy, time\n"
        f"runpy.run_path({str(SMALL)!r}, run_name='__main__')\n"
        f"open({str(ready)!r}, 'w').close()\n" + sleep)
    proc = subprocess.Popen([sys.executable, "-m", "irscope", "capture", "--no-compile", "--out", "snaps", "--",
                             "python", "slow.py"], cwd=tmp_path, start_new_session=True,
                            preexec_fn=sigint_as_in_a_terminal, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not ready.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    return proc


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX process groups")
def test_ctrl_c_keeps_what_the_program_launched_while_it_cleans_up(tmp_path):
    # Ctrl-C reaches irscope and the program alike; irscope's subprocess.call killed the child a quarter of a
    # second later, so a program that took longer to stop (or a large capture to write) lost every launch
    # ("ended with exit code 130 (os._exit or a kill)").
    proc = _capture_a_sleeping_program(tmp_path, "time.sleep(1.5)  # the program's own clean-up")
    os.killpg(proc.pid, signal.SIGINT)  # as a terminal's Ctrl-C: the whole foreground group
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "what it launched before that is in snaps/launches.json" in err
    assert len(json.loads((tmp_path / "snaps" / "launches.json").read_text())["launches"]) == 4
    assert sorted(p.name for p in (tmp_path / "snaps").iterdir()) == ["launches.json"]


def test_a_sigint_sent_to_irscope_alone_reaches_the_program(tmp_path):
    # `kill -INT` of irscope's pid (`timeout -s INT`, a job runner): the program never got it, and irscope
    # waited for it for ever. irscope passes it on; the program stops as on a Ctrl-C and its launches stay.
    proc = _capture_a_sleeping_program(tmp_path)
    os.kill(proc.pid, signal.SIGINT)  # irscope's process only
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert len(json.loads((tmp_path / "snaps" / "launches.json").read_text())["launches"]) == 4


def test_a_launch_file_cannot_make_a_compile_copy_a_file_it_names_into_the_snapshot(cli, tmp_path):
    # A kernel of an installed module (Liger-Kernel's), with no module source and `file` naming another
    # file: compiling it read that file into the snapshot's source.py (and named it as source_file).
    pytest.importorskip("liger_kernel")
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP SECRET\n")
    data = json.loads((Path(__file__).resolve().parent.parent / "docs" / "examples" / "capture" /
                       "liger-h200-launches.json").read_text())
    data["launches"] = data["launches"][:1]
    for kernel in data["kernels"].values():
        kernel.update(file=str(secret), module_source="")
    (tmp_path / "hostile.json").write_text(json.dumps(data))
    code, out, err = cli("compile", "hostile.json", "--target", "sm_90a", "--no-layouts", "-o", "snaps")
    assert code == 0, err
    [source] = (tmp_path / "snaps").glob("*/*/sm_90a/source.py")
    assert "TOP SECRET" not in source.read_text() and "@triton.jit" in source.read_text()
    meta = json.loads((source.parent / "irscope.json").read_text())
    assert meta["source_file"].endswith("rms_norm.py")


def _minimal_launch_file(variant: str = "w4.s3.0123456789", launch_id: str | None = None) -> dict:
    return {"format": "irscope-launches", "version": 1,
            "kernels": {"m:k": {"name": "k", "function": "k", "src": "def k(x):\n    pass\n"}},
            "launches": [{"id": launch_id or f"k/{variant}", "kernel": "m:k", "variant": variant, "args": []}]}


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="POSIX FIFOs")
def test_a_launch_file_that_is_a_fifo_or_a_device_is_refused_not_read_forever(tmp_path):
    # read_launches read a path that was not a regular file without a limit: a FIFO hung the compile, a link
    # to /dev/zero read until memory ran out; /dev/null was "not a launch file" (damaged, exit 4).
    os.mkfifo(tmp_path / "fifo.json")
    (tmp_path / "null.json").symlink_to(os.devnull)
    for name in ("fifo.json", "null.json"):
        proc = subprocess.run([sys.executable, "-m", "irscope", "compile", name, "--target", "sm_90a"],
                              cwd=tmp_path, capture_output=True, text=True, timeout=60)
        assert proc.returncode == 2, proc.stderr
        [error] = _lines(proc.stderr, "error")
        assert error == f"irscope: error: launch file '{name}' is not a regular file"


def test_a_launch_files_variant_or_id_that_is_not_a_folder_name_is_refused_naming_the_field(cli, tmp_path):
    # A variant `../..` was refused as "--name '../..' is not a folder name", about a flag never given.
    from irscope.store.launches import read_launches
    read_launches(_write(tmp_path / "good.json", _minimal_launch_file()))  # what capture writes is taken
    for data, field in ((_minimal_launch_file("../../x", launch_id="k/x"), "launches[0].variant"),
                        (_minimal_launch_file(launch_id="k:x/w4"), "launches[0].id"),
                        (_minimal_launch_file(launch_id="../../x"), "launches[0].id")):
        _write(tmp_path / "bad.json", data)
        code, _, err = cli("compile", "bad.json", "--target", "sm_90a")
        assert code == 4, err
        [error] = _lines(err, "error")
        assert f"field '{field}' must be" in error and "--name" not in err


def _write(path: Path, data: dict) -> Path:
    path.write_text(json.dumps(data))
    return path


FP8_PROGRAM = '''
import torch
import triton
import triton.language as tl


@triton.jit
def fp8_copy(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs).to(tl.float8e4nv).to(tl.float32))


fp8_copy[(1,)](torch.randn(128), torch.empty(128), BLOCK=128)
'''


def test_a_captured_compile_that_fails_says_why_not_only_how_many(cli, tmp_path):
    """The summary was "1 captured compiles failed": the reason was only in the folder's irscope.json."""
    (tmp_path / "prog.py").write_text(FP8_PROGRAM)
    code, out, err = cli("capture", "--as", "sm_90a", "--target", "sm_80,sm_90a", "--out", "o", "--",
                         "python", "prog.py")
    assert code == 3, err
    assert "1 specialisation of 1 kernel, 1 launch (" in err
    assert "error    at source: type fp8e4nv not supported in this architecture" in err
    assert "1 captured compile failed; first: fp8_copy/" in err and "/sm_80 at stage source: type fp8e4nv" in err
    assert "irscope show o/fp8_copy/" in err
    code, out, err = cli("compile", "o/launches.json", "--target", "sm_80", "-o", "o2")  # the same words
    assert code == 3 and "1 captured compile failed; first:" in err


def test_a_launch_files_argument_missing_the_fields_of_its_kind_is_refused_naming_them(cli, tmp_path):
    """An int turned descriptor (no dtype, shape or block) was compiled, failing 'at stage source: invalid
    literal for int()'; a tensor without a dtype likewise."""
    import json
    from irscope.errors import SnapshotError
    from irscope.store.launches import read_launches
    example = Path(__file__).resolve().parent.parent / "docs" / "examples" / "capture" / "liger-h200-launches.json"
    data = json.loads(example.read_text())
    args = data["launches"][0]["args"]
    j = next(j for j, a in enumerate(args) if a["kind"] == "int")
    args[j] = {"name": args[j]["name"], "kind": "descriptor", "value": 5}
    bad = tmp_path / "launches.json"
    bad.write_text(json.dumps(data))
    with pytest.raises(SnapshotError, match=rf"launches\[0\]\.args\[{j}\] .* is a descriptor without dtype and "
                                            "shape and block_shape"):
        read_launches(bad)
    code, out, err = cli("compile", bad, "--target", "sm_90a")
    assert code == 4 and "is damaged" in err


def test_stdout_is_the_programs_alone(tmp_path):
    # `irscope capture -- python prog.py > out.txt` put irscope's summary and one line a compile into the
    # program's output; they go to stderr now, and the program's stdout comes through unchanged.
    out_txt = tmp_path / "out.txt"
    with out_txt.open("w") as stdout:
        proc = subprocess.run([sys.executable, "-m", "irscope", "capture", "--target", "sm_80", "--out", "snaps",
                               "--", "python", str(SMALL)], cwd=tmp_path, stdout=stdout, stderr=subprocess.PIPE,
                              text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert out_txt.read_text() == "small program done\n"
    assert "captured  4 specialisations of 2 kernels" in proc.stderr
    assert sum("/sm_80  ok" in line for line in proc.stderr.splitlines()) == 4
