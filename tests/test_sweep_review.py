"""Regression tests from a review of `irscope sweep` and its cluster: each names the defect it guards."""
import textwrap

KERNEL = '''
import triton
import triton.language as tl


@triton.jit
def kern(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=m) * 2.0, mask=m)
'''

SET = """
set:
  arg.x_ptr: "*fp32"
  arg.y_ptr: "*fp32"
  arg.n: 4096
  BLOCK: 64
"""


def _write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def test_two_kernels_of_one_name_that_would_share_a_folder_are_refused_not_shown_as_each_other(cli, tmp_path):
    # Two files' `kern` land in kern/<variant>/sm_80: the run compiled that folder once, and the other
    # kernel's row showed its analysis (and every later run compiled one of them again).
    _write(tmp_path / "a" / "k.py", KERNEL)
    _write(tmp_path / "b" / "k.py", KERNEL.replace("* 2.0", "+ 100.0"))
    sweep = _write(tmp_path / "two.yaml", "kernels: [a/k.py:kern, b/k.py:kern]\ntargets: [sm_80]\nout: o\n" + SET)
    for extra in ((), ("--list",)):
        code, out, err = cli("sweep", sweep, *extra)
        assert code == 2, err
        assert "would both be written to kern/default.BLOCK=64." in err and "a/k.py:kern" in err, err
        assert "b/k.py:kern" in err and err.splitlines()[1].startswith("irscope: hint: ")
    assert not (tmp_path / "o").exists()
    # the same kernel file twice is one compile, as before
    sweep = _write(tmp_path / "one.yaml", "kernels: [a/k.py:kern, a/k.py:kern]\ntargets: [sm_80]\nout: o\n" + SET)
    code, out, err = cli("sweep", sweep, "--list")
    assert code == 0, err


def _cluster_env(**extra) -> dict:
    import os
    from pathlib import Path
    root = str(Path(__file__).resolve().parent.parent)
    return {**os.environ, "PYTHONPATH": root + os.pathsep + os.environ.get("PYTHONPATH", ""), **extra}


def test_a_worker_started_without_the_clients_codegen_variables_is_named_before_anything_is_sent(tmp_path):
    # The content key holds the client's AMDGCN_USE_BUFFER_OPS=0, but the worker compiled with buffer ops:
    # the rows showed buffer loads under the key of a compile without them (and the next run compiled again).
    import os
    import subprocess
    import sys
    import pytest
    distributed = pytest.importorskip("distributed")
    sweep = _write(tmp_path / "env.yaml", "kernels: [add]\ntargets: [gfx942]\nout: o\n")
    scheduler = distributed.LocalCluster(n_workers=0, processes=False, protocol="tcp", dashboard_address=None)
    worker = None
    try:
        address = scheduler.scheduler_address
        env = {k: v for k, v in _cluster_env().items() if k != "AMDGCN_USE_BUFFER_OPS"}
        worker = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker", address, "--nthreads", "1",
                                   "--no-dashboard"], env=env, cwd=tmp_path,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        run = [sys.executable, "-m", "irscope", "sweep", str(sweep), "--scheduler", address]
        proc = subprocess.run(run, env=_cluster_env(AMDGCN_USE_BUFFER_OPS="0"), capture_output=True, text=True,
                              timeout=180)
        same = subprocess.run(run + ["--json"], env=env, capture_output=True, text=True, timeout=180)
    finally:
        if worker is not None:
            worker.kill()
            worker.wait()
        scheduler.close()
    error, hint = proc.stderr.strip().splitlines()
    assert proc.returncode == 5, proc.stdout + proc.stderr
    assert error.startswith("irscope: error: worker tcp://") and "AMDGCN_USE_BUFFER_OPS unset" in error
    assert "this client with AMDGCN_USE_BUFFER_OPS=0" in error and "TRITON_*/AMDGCN_*" in hint
    # the same environment on both sides compiles on the worker as before
    assert same.returncode == 0, same.stderr
    import json
    assert json.loads(same.stdout)["points"][0]["where"].startswith("tcp://")
    assert os.path.isfile(tmp_path / "o" / "add" / "default" / "gfx942" / "irscope.json")


def test_a_worker_that_compiles_another_version_of_the_kernel_file_is_not_shown_as_this_one(tmp_path):
    # A FILE.py kernel is imported by the worker's compile child from the worker's disk: another version there
    # (another machine's checkout, or the file edited while the sweep ran) was written and shown under the key
    # this machine planned.
    import pytest
    pytest.importorskip("distributed")
    from irscope.harness.cluster import DaskCluster
    from irscope.sweep import expand, load_sweep, run_points
    kernel = _write(tmp_path / "k.py", KERNEL)
    sweep = _write(tmp_path / "s.yaml", "kernels: [k.py:kern]\ntargets: [sm_80]\n" + SET)
    executor = DaskCluster.local(1)
    start = executor.start

    def edit_then_start():  # called once planning meets the first stale point, after its key is made
        kernel.write_text(KERNEL.replace("* 2.0", "+ 100.0"))
        start()

    executor.start = edit_then_start
    try:
        result = run_points(expand(load_sweep(sweep)), tmp_path / "o", executor=executor)
    finally:
        executor.close()
    row = result.rows[0]
    assert row.status == "crashed" and row.analysis is None and row.where.startswith("tcp://"), row
    assert "another kernel file, environment or Triton than planned here" in row.reason, row.reason


def test_a_cached_irscope_json_that_is_a_fifo_or_a_link_outside_is_stale_not_a_hang(tmp_path):
    # Planning read each cached folder's irscope.json with read_text(): a FIFO there held `sweep` and
    # `sweep --list` forever, and a link was followed outside the snapshot folder.
    import os
    import subprocess
    import sys
    folder = tmp_path / "o" / "add" / "default" / "sm_80"
    folder.mkdir(parents=True)
    os.mkfifo(folder / "irscope.json")
    sweep = _write(tmp_path / "f.yaml", "kernels: [add]\ntargets: [sm_80]\nout: o\n")
    proc = subprocess.run([sys.executable, "-m", "irscope", "sweep", str(sweep), "--list"], env=_cluster_env(),
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "to compile" in proc.stdout and "0 fresh" in proc.stdout
    from irscope.sweep.run import _recorded_key
    outside = tmp_path / "secret.json"
    outside.write_text('{"content_key": "abc"}')
    (folder / "irscope.json").unlink()
    (folder / "irscope.json").symlink_to(outside)
    assert _recorded_key(folder / "irscope.json") is None


def test_a_sweep_file_that_is_a_named_pipe_nothing_writes_to_is_an_error_not_a_hang(tmp_path):
    # open() of a FIFO waits for a writer: `irscope sweep pipe.yaml` hung before reading a byte. A pipe with a
    # writer (`irscope sweep <(...)`) still reads.
    import os
    import subprocess
    import sys
    os.mkfifo(tmp_path / "pipe.yaml")
    proc = subprocess.run([sys.executable, "-m", "irscope", "sweep", "pipe.yaml", "--list"], cwd=tmp_path,
                          env=_cluster_env(), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stderr
    error, hint = proc.stderr.strip().splitlines()
    assert error == "irscope: error: sweep file 'pipe.yaml' is a named pipe that nothing writes to"
    assert hint.startswith("irscope: hint: ")
    proc = subprocess.run(["bash", "-c", f"{sys.executable} -m irscope sweep <(printf 'kernels: [add]\\ntargets: "
                           "[sm_80]\\n') --list --out o"], cwd=tmp_path, env=_cluster_env(), capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0 and "add/default/sm_80" in proc.stdout, proc.stderr


def test_a_scheduler_that_goes_away_mid_sweep_is_one_line_exit_5_not_tracebacks_and_crashed_points(tmp_path):
    # Every unfinished point read `crashed: the Dask task failed: FutureCancelledError ...` (exit 3, with a
    # hint to compile it alone), under 30 lines of Dask's reconnect traceback.
    import socket
    import subprocess
    import sys
    import time
    import pytest
    pytest.importorskip("distributed")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    address = f"tcp://127.0.0.1:{port}"
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "env": _cluster_env(), "cwd": tmp_path}
    scheduler = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
                                  "--port", str(port), "--dashboard-address", ":0"], **quiet)
    worker = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker", address, "--nthreads", "1",
                               "--no-dashboard"], **quiet)
    sweep = _write(tmp_path / "many.yaml", "kernels: [add]\ntargets: [sm_80, gfx942]\nout: o\ngrid:\n"
                   "  BLOCK_SIZE: [64, 128, 256, 512, 1024, 2048]\n  num_warps: [1, 2, 4]\n")
    proc = None
    try:
        # (the sweep starts once the scheduler listens: on a loaded machine its start can outlast the client's
        # connect timeout, and this test is about losing a scheduler, not about never reaching one)
        listening = time.monotonic() + 120
        while time.monotonic() < listening:
            assert scheduler.poll() is None, "the Dask scheduler exited before it listened"
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.1)
        proc = subprocess.Popen([sys.executable, "-m", "irscope", "sweep", str(sweep), "--scheduler", address],
                                cwd=tmp_path, env=_cluster_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)
        deadline = time.monotonic() + 120
        while not list((tmp_path / "o").glob("add/*/*/irscope.json")) and time.monotonic() < deadline:
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.1)
        scheduler.kill()
        out, err = proc.communicate(timeout=120)
    finally:
        for p in (proc, worker, scheduler):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()
    assert proc.returncode == 5, out + err
    error, hint = err.strip().splitlines()
    assert error.startswith(f"irscope: error: lost the connection to the Dask scheduler at {address}"), err
    assert "written and cached" in error and hint.startswith("irscope: hint: ") and "Traceback" not in err
    assert list((tmp_path / "o").glob("add/*/*/irscope.json"))  # what finished stays


def test_an_argument_value_past_64_bits_is_reported_at_its_own_line_in_the_files_words(cli, tmp_path):
    # It was refused only while planning: at the `kernels:` line, with a hint about --arg flags a sweep has not.
    sweep = _write(tmp_path / "big.yaml", "kernels: [add]\ntargets: [sm_80]\ngrid:\n  BLOCK_SIZE: [1024]\n"
                   "  arg.n_elements:\n    - 4096\n    - 99999999999999999999999999\n")
    code, out, err = cli("sweep", sweep, "--list")
    assert code == 2, err
    error, hint = err.strip().splitlines()
    assert error.startswith(f"irscope: error: {sweep}:7: `arg.n_elements: 99999999999999999999999999`"), err
    assert "past 64 bits" in error and "--arg" not in hint
    sweep.write_text(sweep.read_text().replace("99999999999999999999999999", str(2**64 - 1)))
    assert cli("sweep", sweep, "--list")[0] == 0


def test_compile_on_a_cluster_refuses_a_workers_other_version_of_the_kernel_file(tmp_path):
    # The sweep's check (above) did not cover `compile`/`compare --scheduler`: compile_points wrote the
    # worker's compile of its own copy of FILE.py as this point's snapshot. It is now a crash, folder removed.
    import pytest
    pytest.importorskip("distributed")
    from irscope.harness.batch import Point, compile_points
    from irscope.harness.cluster import DaskCluster
    from irscope.spec.kernel import CompileOptions, parse_assignment
    kernel = _write(tmp_path / "k.py", KERNEL)
    options = CompileOptions(args=tuple(parse_assignment(a, "argument") for a in ("x_ptr=*fp32", "y_ptr=*fp32", "n=4096")),
                             constexprs=(("BLOCK", 64),))
    executor = DaskCluster.local(1)
    start = executor.start

    def edit_then_start():  # called after the points are checked and their keys planned
        kernel.write_text(textwrap.dedent(KERNEL.replace("* 2.0", "+ 100.0")))
        start()

    executor.start = edit_then_start
    try:
        (o,) = compile_points([Point(f"{kernel}:kern", "sm_80", options)], tmp_path / "o", executor=executor)
    finally:
        executor.close()
    assert o.status == "crashed" and o.path is None and o.where.startswith("tcp://"), o
    assert "another kernel file, environment or Triton than planned here" in o.error["message"]
    assert not list((tmp_path / "o").rglob("irscope.json"))


def test_a_yaml_merge_is_overridden_by_the_mappings_own_keys(cli, tmp_path):
    # `{<<: *base, num_warps: [8]}` was refused as "'num_warps' is given twice"; YAML lets the mapping's own
    # key win over the merged one. A key the mapping itself gives twice is still refused.
    merged = _write(tmp_path / "m.yaml", "kernels: [add]\ntargets: [sm_80]\n"
                    "grid: {<<: {num_warps: [4], num_stages: [2]}, num_warps: [8]}\n")
    code, out, err = cli("sweep", merged, "--list", "-o", "o")
    assert code == 0, err
    assert "add/default.w8.s2/sm_80" in out and "w4" not in out
    # a list of merges: the earlier mapping wins (PyYAML 6.0.4 let the later one win, 6.0.1 the earlier)
    listed = _write(tmp_path / "l.yaml", "x-a: &a {num_warps: [2]}\nx-b: &b {num_warps: [4], num_stages: [3]}\n"
                    "kernels: [add]\ntargets: [sm_80]\ngrid: {<<: [*a, *b], num_stages: [2]}\n")
    code, out, err = cli("sweep", listed, "--list", "-o", "o")
    assert code == 0 and "add/default.w2.s2/sm_80" in out and "w4" not in out and ".s3" not in out, out + err
    twice = _write(tmp_path / "t.yaml", "kernels: [add]\ntargets: [sm_80]\ngrid: {num_warps: [4], num_warps: [8]}\n")
    code, _, err = cli("sweep", twice, "--list", "-o", "o")
    assert code == 2 and "t.yaml:3: 'num_warps' is given twice" in err


def test_a_named_pipe_whose_writer_comes_a_moment_later_is_read(cli, tmp_path):
    # `mkfifo p; irscope sweep p & gen > p`: opened without waiting (so a pipe nobody writes to is refused,
    # not waited on forever), a writer that opened it a moment after irscope was refused as "nothing writes".
    import os
    import threading
    import time
    pipe = tmp_path / "p.yaml"
    os.mkfifo(pipe)

    def writer():
        time.sleep(0.5)
        pipe.write_text("kernels: [add]\ntargets: [sm_80]\n")

    t = threading.Thread(target=writer)
    t.start()
    code, out, err = cli("sweep", pipe, "--list", "-o", "o")
    t.join()
    assert code == 0 and "add/default/sm_80" in out, err
