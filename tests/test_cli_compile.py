"""`irscope compile`, `show`, `targets`, `kernels` through the real CLI entry point."""
import json
import re
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from tests.conftest import DATA, sigint_as_in_a_terminal

USER = DATA / "user_kernels.py"


def test_compile_writes_a_snapshot_and_prints_a_summary(cli, tmp_path):
    code, out, err = cli("compile", "add", "--target", "sm_90a,gfx942")
    assert code == 0, err
    assert "add/default/sm_90a  ok" in out and "add/default/gfx942  ok" in out
    assert "registers" in out and "vgpr" in out and "irscope-snapshots/add/default/sm_90a" in out
    meta = json.loads((tmp_path / "irscope-snapshots/add/default/sm_90a/irscope.json").read_text())
    assert meta["status"] == "ok" and meta["target"]["name"] == "sm_90a"
    assert set(meta["stages"]) == {"source", "ttir", "ttgir", "llir", "ptx", "cubin", "sass"}
    assert meta["resources"]["registers"] > 0 and "spill_stores" in meta["resources"]
    assert meta["versions"]["triton"] and meta["versions"]["ptxas"]
    assert {"ttir", "ttgir", "llir", "ptx", "cubin"} <= set(meta["times_ms"])
    assert len(meta["content_key"]) == 64


def test_options_name_the_variant_folder_and_are_recorded(cli, tmp_path):
    code, out, err = cli("compile", "matmul", "--config", "m64n32k32.w2.s5", "--num-stages", "2",
                         "--divisibility", "1", "--constexpr", "GROUP_M=4", "--option", "maxnreg=128",
                         "--no-line-info", "--out", "o")
    assert code == 0, err
    folder = tmp_path / "o/matmul/m64n32k32.w2.s5.s2.div1.GROUP_M=4.maxnreg=128.noline/sm_90a"
    meta = json.loads((folder / "irscope.json").read_text())
    assert meta["compile_options"]["num_warps"] == 2 and meta["compile_options"]["num_stages"] == 2
    assert meta["compile_options"]["constexprs"]["GROUP_M"] == 4
    assert meta["backend_options"]["maxnreg"] == 128
    assert all(a.get("divisibility", 1) == 1 for a in meta["specialisation"] if a["kind"] in ("tensor", "scalar"))
    assert ".loc" not in (folder / "matmul_kernel.ptx").read_text()


def test_user_kernel_with_a_spec_in_its_file(cli, tmp_path):
    code, out, err = cli("compile", f"{USER}:copy_rows", "--target", "sm_80")
    assert code == 0, err
    assert (tmp_path / "irscope-snapshots/copy_rows/default/sm_80/copy_rows.ptx").is_file()


def test_user_kernel_with_its_signature_on_the_command_line(cli, tmp_path):
    code, out, err = cli("compile", f"{USER}:scale", "--arg", "x_ptr=*fp32", "--arg", "out_ptr=*fp32",
                         "--arg", "n=4096", "--arg", "factor=2.0", "--constexpr", "BLOCK=256", "-t", "gfx90a")
    assert code == 0, err
    # the signature of a kernel without a spec is folded into a short hash, not spelled out in the folder name
    assert re.search(r"scale/default\.BLOCK=256\.sig[0-9a-f]{6}/gfx90a", out), out


def _error(err):
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert lines[0].startswith("irscope: error: ") and lines[1].startswith("irscope: hint: "), err
    assert "Traceback" not in err
    return lines[0], lines[1]


@pytest.mark.parametrize("argv,exit_code,message,hint", [
    (["compile", "matmull"], 2, "unknown kernel 'matmull'", "did you mean matmul"),
    (["compile", "add", "--target", "sm_91"], 2, "unknown target 'sm_91'", "gfx950"),
    (["compile", "add", "--constexpr", "BLOCK_SIZE"], 2, "malformed constexpr", "NAME=VALUE"),
    (["compile", "add", "--constexpr", "BLOCK=64"], 2, "no constexpr 'BLOCK'", "BLOCK_SIZE"),
    (["compile", "add", "--constexpr", "BLOCK_SIZE=big"], 2, "BLOCK_SIZE is a number", "BLOCK_SIZE=1024"),
    (["compile", "add", "--num-warps", "3"], 2, "not a power of two", "1, 2, 4"),
    (["compile", "add", "--num-warps", "four"], 2, "invalid int value", "--help"),
    (["compile", "add", "--divisibility", "3"], 2, "bad --divisibility", "power of two"),
    (["compile", "add", "--config", "huge"], 2, "no config 'huge'", "b4096"),
    (["compile", f"{USER}:scale"], 2, "needs a typical value for arguments 'x_ptr', 'out_ptr', 'n', 'factor'", "--arg x_ptr="),
    (["compile", f"{USER}:nope"], 2, "has no kernel 'nope'", "scale"),
    (["compile", "missing.py:k"], 2, "does not exist", "FILE.py:KERNEL"),
    (["compile", "add", "--option", "maxnrg=1"], 2, "unknown backend option", "maxnreg"),
    (["show", "nowhere"], 4, "does not exist", "snapshot"),
    (["frobnicate"], 2, "unknown command 'irscope frobnicate'", "--help"),
])
def test_bad_input_gets_one_line_and_a_hint(cli, tmp_path, argv, exit_code, message, hint):
    code, out, err = cli(*argv)
    first, second = _error(err)
    assert code == exit_code
    assert message in first and hint in second
    assert not (tmp_path / "irscope-snapshots").exists()  # nothing half-written


def test_a_kernel_that_fails_to_compile_keeps_its_stages_in_a_failed_folder(cli, tmp_path):
    code, out, err = cli("compile", f"{USER}:type_error")
    first, _ = _error(err)
    assert code == 3 and "type_error/default/sm_90a at stage source" in first
    assert "undefined_name" in first  # what went wrong, not only where (Triton puts that in the cause)
    meta = json.loads((tmp_path / "irscope-snapshots/type_error/default/sm_90a/irscope.json").read_text())
    assert meta["status"] == "failed" and meta["error"]["stage"] == "source"
    code, out, err = cli("show", "irscope-snapshots/type_error/default/sm_90a")
    assert code == 0 and "FAILED" in out and "undefined_name" in out


def test_a_crashing_compile_fails_alone_while_the_others_finish(cli, tmp_path):
    code, out, err = cli("compile", f"{USER}:crashes", "add", "--target", "sm_80")
    assert code == 3
    assert "crashes/default/sm_80  crashed" in out and "SIGABRT" in out
    assert "add/default/sm_80  ok" in out


def test_a_hanging_compile_is_killed_at_the_timeout(cli, tmp_path):
    started = time.monotonic()
    code, out, err = cli("compile", f"{USER}:hangs", "--timeout", "3")
    assert code == 3 and "timeout" in out and time.monotonic() - started < 30


def test_a_killed_or_aborted_compile_leaves_no_triton_cache_behind(cli, tmp_path, monkeypatch):
    # Killed at the timeout, or aborted by the compiler, a compile never runs its own clean-up: its Triton
    # cache must live where the process that started it removes it.
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setenv("TMPDIR", str(scratch))
    monkeypatch.setattr(tempfile, "tempdir", None)
    code, out, err = cli("compile", f"{USER}:hangs", f"{USER}:crashes", "--timeout", "5")
    assert code == 3 and "timeout" in out and "SIGABRT" in out
    assert list(scratch.iterdir()) == []


def test_goldens_are_not_overwritten_unless_asked(cli, tmp_path):
    (tmp_path / "goldens").mkdir()
    (tmp_path / "goldens" / ".irscope-goldens").write_text("")
    code, out, err = cli("compile", "add", "--out", "goldens")
    assert code == 2 and "golden" in err and not (tmp_path / "goldens/add").exists()
    code, out, err = cli("compile", "add", "--out", "goldens", "--update-goldens")
    assert code == 0 and (tmp_path / "goldens/add/default/sm_90a/irscope.json").is_file()


def test_show_prints_summary_stage_and_json(cli, compiled):
    snap = compiled / "matmul" / "default" / "sm_90a"
    code, out, err = cli("show", snap)
    assert code == 0 and "specialisation" in out and "stride_ak" in out and "ptxas" in out
    code, out, err = cli("show", snap, "--stage", "ptx")
    assert code == 0 and out.startswith("//") and "wgmma" in out and "\x1b[" not in out  # plain when piped
    code, out, err = cli("--color", "always", "show", snap, "--stage", "llir")
    assert "\x1b[" in out
    code, out, err = cli("show", snap, "--json")
    assert json.loads(out)["kernel"] == "matmul"
    code, out, err = cli("show", snap, "--stage", "amdgcn")
    assert code == 4 and "no stage 'amdgcn'" in err


def test_targets_and_kernels_list(cli):
    code, out, _ = cli("targets")
    assert code == 0 and "sm_90a *" in out and "227 KiB" in out and "gfx950" in out
    code, out, _ = cli("kernels")
    assert code == 0 and "matmul" in out and "add" in out
    code, out, _ = cli("kernels", "matmul")
    assert "m64n32k32.w2.s5" in out and "stride_ak=1" in out


def _irscope(*args, **kw):
    return subprocess.Popen([sys.executable, "-m", "irscope", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kw)


def _children(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL])
def test_killing_a_compile_midway_leaves_no_half_written_folder(tmp_path, sig):
    # Ctrl-C in a terminal: SIGINT at its default disposition (a shell that started this run in the
    # background would have it ignored, and the child would inherit that).
    proc = _irscope("compile", "matmul", "--target", "sm_90a,sm_100a", cwd=tmp_path, start_new_session=True,
                    preexec_fn=sigint_as_in_a_terminal)
    # Inside the compiles: wait until the parent has forked its workers (a warm compile takes under 2 s,
    # so a fixed sleep could land after the end), then let them get into Triton.
    deadline = time.monotonic() + 60
    while not _children(proc.pid) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert _children(proc.pid), "the compile forked no workers"
    time.sleep(0.3)
    os.killpg(proc.pid, sig)
    out, err = proc.communicate(timeout=60)
    if sig == signal.SIGINT:
        # 130, or (under `python -m`) death by SIGINT, which a shell shows as 130 too: CPython's `-m` ends a
        # process by SIGINT when a KeyboardInterrupt once escaped an exec() of a string, even one irscope
        # caught further up (dataclasses builds methods with exec: the interrupt landed in an import).
        assert proc.returncode in (130, -signal.SIGINT) and "interrupted" in err and "Traceback" not in err, err
    root = tmp_path / "irscope-snapshots"
    for folder in root.rglob("*") if root.exists() else []:
        assert not folder.name.startswith("."), f"left behind: {folder}"
        if folder.is_dir() and folder.parent.name == "default":
            assert (folder / "irscope.json").is_file(), f"incomplete: {folder}"
    rerun = _irscope("compile", "matmul", "--target", "sm_90a", cwd=tmp_path)
    assert rerun.wait(timeout=120) == 0
    assert (root / "matmul/default/sm_90a/irscope.json").is_file()


def test_python_dash_m_and_the_console_script_are_the_same_program(tmp_path):
    out = subprocess.run([sys.executable, "-m", "irscope", "--version"], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.startswith("irscope ")


def test_missing_compiler_tools_are_an_environment_error(tmp_path):
    """Triton without ptxas (simulated by tests/data/no_ptxas/sitecustomize.py): exit 5 with a hint, and
    no snapshot folder; AMD targets, which need no NVIDIA tool, still compile."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(DATA / "no_ptxas"), str(Path(__file__).parent.parent)]))
    proc = subprocess.run([sys.executable, "-m", "irscope", "compile", "add", "--target", "sm_90a"], cwd=tmp_path,
                          env=env, capture_output=True, text=True)
    assert proc.returncode == 5, proc.stderr
    assert proc.stderr.startswith("irscope: error: Triton") and "cannot run ptxas for sm_90a" in proc.stderr
    assert "TRITON_PTXAS" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "irscope-snapshots").exists()
    ok = subprocess.run([sys.executable, "-m", "irscope", "compile", "add", "--target", "gfx942"], cwd=tmp_path,
                        env=env, capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr


def _alive(pid: int) -> bool:
    """A process that exists and is not a zombie (a killed worker waits as one for init to reap it)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return False
    return fields[0] != "Z"


def _folders(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*")} if root.exists() else set()


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads worker processes from /proc (Linux)")
def test_workers_die_with_a_killed_parent_and_write_nothing_after_it(tmp_path):
    # SIGKILL to the parent alone, as the OOM killer or `kill -9 PID` sends it: no process group signal
    # reaches the workers, so only PR_SET_PDEATHSIG (or their own check) can stop them.
    proc = _irscope("compile", "matmul", "--target", "all", "--out", "D", "-j", "2", cwd=tmp_path)
    deadline = time.monotonic() + 60
    while not _children(proc.pid) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    workers = _children(proc.pid)
    assert workers, "the compile forked no workers"
    time.sleep(0.3)
    proc.kill()
    proc.wait(timeout=10)
    seen = set(workers)
    deadline = time.monotonic() + 2
    while any(_alive(w) for w in seen) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [w for w in seen if _alive(w)], "workers kept running after their parent was killed"
    root = tmp_path / "D"
    before = _folders(root)
    time.sleep(4)  # longer than a warm compile: a surviving worker would have written its folder by now
    assert _folders(root) == before


def test_a_worker_knows_when_its_parent_is_gone_without_the_death_signal(tmp_path):
    # The portable fallback (compile_one checks before writing): a worker whose parent exits sees itself
    # orphaned. Simulated without PR_SET_PDEATHSIG: record the parent as _die_with_parent does, then let it go.
    flag = tmp_path / "orphaned"
    script = f"""
import os, sys, time
from irscope.harness import workers
assert not workers.orphaned()  # outside a worker: never orphaned
parent = os.getpid()
r, w = os.pipe()
if os.fork() == 0:
    workers._parent = parent  # what _die_with_parent records (after checking getppid() against it)
    os.write(w, b"T" if workers.orphaned() else b"F")  # the parent is alive until it reads this
    time.sleep(0.5)
    open({str(flag)!r}, "w").write(f"{{workers.orphaned()}}")
    os._exit(0)
assert os.read(r, 1) == b"F"
os._exit(0)
"""
    subprocess.run([sys.executable, "-c", script], check=True, timeout=30)
    deadline = time.monotonic() + 10
    while not flag.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.1)
    assert flag.read_text() == "True"


@pytest.mark.parametrize("name", ["../../victim", "/tmp/abs", "a/b", "..", ".", ".hidden", ""])
def test_a_name_that_is_not_one_folder_name_is_a_usage_error_and_writes_nothing(cli, tmp_path, name):
    """--name is the variant's folder under --out: a name that would leave it (or hide it) is refused
    before anything compiles (it wrote to, and wiped, a folder two levels above --out)."""
    code, out, err = cli("compile", "add", "--target", "sm_80", "--name", name, "--out", "snaps")
    assert code == 2 and "Traceback" not in err and err.count("irscope: error:") == 1, err
    assert "is not a folder name" in err and "irscope: hint: use a plain name" in err
    assert not (tmp_path / "snaps").exists() and not (tmp_path.parent / "victim").exists()


def test_a_file_where_a_snapshot_folder_must_go_is_one_usage_error_before_any_compile(cli, tmp_path):
    """A user's file `snaps/add` in the way of `snaps/add/default/sm_80`: each compile 'crashed' with a
    NotADirectoryError (exit 3); it is one usage error naming the file, and the file is kept."""
    (tmp_path / "snaps").mkdir()
    (tmp_path / "snaps" / "add").write_text("mine")
    code, out, err = cli("compile", "add", "--target", "sm_80,gfx942", "--out", "snaps")
    assert code == 2 and err.splitlines()[0] == (
        "irscope: error: 'snaps/add' is a file, where irscope would make the folder 'snaps/add/default/sm_80'"), err
    assert "crashed" not in out + err and (tmp_path / "snaps" / "add").read_text() == "mine"


def test_compiling_again_keeps_the_gpu_records_and_refuses_to_drop_a_users_file(cli, tmp_path):
    """A recompile into the same folder carries runs.json and verify.json over while the cubin is the same,
    and refuses, naming it, a file irscope did not write there (compile replaced the whole folder)."""
    assert cli("compile", "add", "--target", "sm_80", "--out", "snaps")[0] == 0
    snap = tmp_path / "snaps" / "add" / "default" / "sm_80"
    (snap / "runs.json").write_text("[]\n")
    (snap / "verify.json").write_text("[]\n")
    code, out, err = cli("compile", "add", "--target", "sm_80", "--out", "snaps")
    assert code == 0, err
    assert (snap / "runs.json").read_text() == "[]\n" and (snap / "verify.json").exists()
    (snap / "notes.txt").write_text("mine")
    code, out, err = cli("compile", "add", "--target", "sm_80", "--out", "snaps")
    assert code == 2 and "notes.txt (not written by irscope)" in err and err.count("irscope: error:") == 1, err
    assert (snap / "notes.txt").read_text() == "mine" and (snap / "runs.json").exists()
