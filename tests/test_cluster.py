"""Sweeps on a Dask cluster: a real LocalCluster of worker processes, real compiles (no mocks).

Needs the `cluster` extra (dask[distributed]); skipped where it is not installed.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.conftest import sigint_as_in_a_terminal

pytest.importorskip("distributed")

from irscope.cli.sweep import to_csv  # noqa: E402
from irscope.harness.cluster import DaskCluster, chunks  # noqa: E402
from irscope.harness.executors import LocalPool  # noqa: E402
from irscope.harness.workers import JobStatus  # noqa: E402
from irscope.sweep import expand, load_sweep, run_points  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SMALL = """\
name: cluster-small
kernels: [add]
targets: [sm_80, gfx942]
grid:
  BLOCK_SIZE: [128, 256]
"""


@pytest.fixture(scope="module")
def cluster():
    executor = DaskCluster.local(2)
    yield executor
    executor.close()


@pytest.fixture(scope="module")
def sweep_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("cluster") / "small.yaml"
    path.write_text(SMALL)
    return path


def _env(**extra) -> dict:
    return {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""), **extra}


def _without_times(csv: str) -> list[list[str]]:
    rows = [line.split(",") for line in csv.splitlines()]
    keep = [i for i, h in enumerate(rows[0]) if not h.startswith("time.")]
    return [[r[i] for i in keep] for r in rows]


def _started_state(dask_worker=None) -> tuple:
    return os.getppid(), "triton" in sys.modules, "irscope.harness.preload" in sys.modules


def test_local_cluster_workers_are_forked_from_one_server_that_imported_triton(cluster):
    """Each worker of `DaskCluster.local` starts with Triton and irscope's compiler already imported,
    forked from one forkserver that imported them once, not spawned as a fresh Python that imports them."""
    states = cluster.client.run(_started_state)
    parents = {parent for parent, *_ in states.values()}
    assert len(states) == 2 and len(parents) == 1 and os.getpid() not in parents  # one server, not this client
    # preload.py is imported by the forkserver only: a worker has it because it was forked from there.
    assert all(triton and preloaded for _, triton, preloaded in states.values())


@pytest.mark.slow
def test_a_sweep_on_the_cluster_gives_the_local_pools_csv_and_reruns_from_the_cache(cluster, sweep_file, tmp_path):
    points = expand(load_sweep(sweep_file))
    local = run_points(points, tmp_path / "local", workers=2, executor=LocalPool(2))
    remote = run_points(points, tmp_path / "remote", executor=cluster)
    assert [r.status for r in remote.rows] == ["ok"] * 4
    # The same CSV, up to the snapshot root in the `path` column and the compile times.
    assert _without_times(to_csv(remote).replace(str(tmp_path / "remote"), "OUT")) == \
        _without_times(to_csv(local).replace(str(tmp_path / "local"), "OUT"))
    workers = set(cluster.workers())
    assert {r.where for r in remote.rows} <= workers and {r.where for r in local.rows} == {"local"}
    # The compiles' CPU on the workers comes back with their results (this process cannot measure it).
    assert remote.worker_cpu_seconds > 0.1 and local.worker_cpu_seconds == 0.0
    # The snapshots were written here, by the client, from the files the workers sent back.
    for r in remote.rows:
        assert (r.path / "irscope.json").is_file() and r.path.is_relative_to(tmp_path / "remote")
    again = run_points(points, tmp_path / "remote", executor=cluster)
    assert (again.compiled, again.cached) == (0, 4) and {r.where for r in again.rows} == {None}


def test_a_crash_or_a_hang_on_a_worker_kills_that_job_not_the_worker(cluster):
    before = cluster.workers()
    crashed, = cluster.run([3], os._exit, timeout=30)
    hung, = cluster.run([60], time.sleep, timeout=1)
    assert crashed.status == JobStatus.CRASHED and "exited with status 3" in crashed.message
    assert hung.status == JobStatus.TIMEOUT and crashed.where in before
    assert cluster.workers() == before  # the same worker processes: none died


@pytest.mark.slow
def test_a_worker_killed_mid_sweep_loses_no_point(sweep_file, tmp_path):
    executor = DaskCluster.local(2)
    try:
        pids = executor.client.run(os.getpid)
        killed: list[str] = []
        held: list[int] = []  # the points the killed worker was compiling

        def on_progress(p) -> None:
            busy = [w for w, keys in executor.client.processing().items() if keys]
            if not killed and busy:  # the first moment a worker holds a compile: kill it outright
                killed.append(busy[0])
                held.extend(int(key.rsplit("-", 1)[1]) for key in executor.client.processing()[busy[0]])
                os.kill(pids[busy[0]], signal.SIGKILL)

        points = expand(load_sweep(sweep_file))
        result = run_points(points, tmp_path / "out", executor=executor, on_progress=on_progress)
    finally:
        executor.close()
    assert killed, "no worker was ever seen compiling"
    assert [r.status for r in result.rows] == ["ok"] * 4
    assert all((r.path / "irscope.json").is_file() for r in result.rows)
    assert held and all(result.rows[i].where not in (killed[0], None) for i in held)  # compiled elsewhere


def test_a_worker_with_another_irscope_is_named_before_anything_is_sent(sweep_file, tmp_path):
    import distributed
    fake = tmp_path / "fake" / "irscope"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text('__version__ = "9.9.9"\n')
    scheduler = distributed.LocalCluster(n_workers=0, processes=False, protocol="tcp", dashboard_address=None)
    worker = None
    try:
        address = scheduler.scheduler_address
        worker = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker", address, "--nthreads", "1",
                                   "--no-dashboard"], env={**os.environ, "PYTHONPATH": str(fake.parent)},
                                  cwd=fake.parent,  # a dask worker puts its folder first on sys.path
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        proc = subprocess.run([sys.executable, "-m", "irscope", "sweep", str(sweep_file), "--out", str(tmp_path / "o"),
                               "--scheduler", address], env=_env(), capture_output=True, text=True, timeout=120)
    finally:
        if worker is not None:
            worker.kill()
            worker.wait()
        scheduler.close()
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 5, proc.stdout + proc.stderr
    assert lines[0].startswith("irscope: error: worker tcp://") and "has irscope 9.9.9" in lines[0]
    import irscope
    assert f"this client has irscope {irscope.__version__}" in lines[0]
    assert not (tmp_path / "o").exists()  # nothing was compiled


def test_an_unreachable_scheduler_is_one_line_with_a_hint(sweep_file, tmp_path):
    proc = subprocess.run([sys.executable, "-m", "irscope", "sweep", str(sweep_file), "--out", str(tmp_path / "o"),
                           "--scheduler", "tcp://127.0.0.1:9"], env=_env(), capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 5, proc.stderr
    error, hint = proc.stderr.strip().splitlines()
    assert error.startswith("irscope: error: cannot reach the Dask scheduler at tcp://127.0.0.1:9")
    assert hint.startswith("irscope: hint: ") and "dask scheduler" in hint


def test_a_malformed_cluster_is_a_usage_error(sweep_file):
    proc = subprocess.run([sys.executable, "-m", "irscope", "sweep", str(sweep_file), "--cluster", "remote:2"],
                          env=_env(), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "expected local:N" in proc.stderr


def test_ctrl_c_cancels_the_rest_quietly_and_prints_what_finished(tmp_path):
    user = ROOT / "tests" / "data" / "user_kernels.py"
    sweep = tmp_path / "s.yaml"
    sweep.write_text(f'kernels: ["{user}:copy_rows", "{user}:hangs"]\ntargets: [gfx942]\nout: o\n')
    import socket
    dashboard = socket.socket()  # another Dask's dashboard on its default port: Dask warned under the table
    try:
        dashboard.bind(("", 8787))
        dashboard.listen()
    except OSError:  # taken already: by one, which is the case itself
        pass
    proc = subprocess.Popen([sys.executable, "-m", "irscope", "sweep", str(sweep), "--cluster", "local:2"],
                            cwd=tmp_path, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, preexec_fn=sigint_as_in_a_terminal)
    done = tmp_path / "o/copy_rows/default/gfx942/irscope.json"  # written by the client, from the worker's files
    deadline = time.monotonic() + 120
    while not done.is_file() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert done.is_file(), proc.communicate(timeout=30)
    time.sleep(0.3)
    # As a terminal's Ctrl-C does: to the whole process group, the LocalCluster's worker processes included.
    # They ignore it (the client cancels and closes the cluster); each used to die of a KeyboardInterrupt
    # and print tracebacks under the table.
    os.killpg(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=90)
    assert proc.returncode == 130, err
    assert [ln for ln in err.splitlines() if ln.strip()] == ["irscope: interrupted"], err
    assert any(ln.startswith("copy_rows") and " ok " in ln for ln in out.splitlines()), out
    assert "1 interrupted (not compiled)" in out and "2 points: 1 compiled now" in out
    dashboard.close()


def test_the_progress_line_counts_failures_running_compiles_and_each_workers_points():
    from irscope.cli.sweep import progress_text
    from irscope.sweep.run import SweepProgress
    p = SweepProgress("compiling", 5, 9, ("add/a/sm_80", "add/b/sm_80"), 1,
                      (("tcp://10.0.0.7:4000", 3), ("tcp://10.0.0.8:4000", 2)))
    assert progress_text(p) == "[5/9, 1 failed] 2 running; 10.0.0.7:4000:3 10.0.0.8:4000:2 compiling add/a/sm_80, add/b/sm_80"
    local = SweepProgress("compiling", 1, 9, ("add/a/sm_80",), 0, (("local", 1),))
    assert progress_text(local) == "[1/9] compiling add/a/sm_80"  # a local sweep's line is unchanged


def test_a_compiler_abort_on_a_worker_is_not_for_target_with_llvms_reason_and_no_folder(cluster, tmp_path):
    from irscope.harness.batch import Point, compile_points
    kernel = f"{ROOT / 'tests' / 'data' / 'gluon_kernels.py'}:gluon_hopper_mma"
    before = cluster.workers()
    outcome, = compile_points([Point(kernel, "sm_80")], tmp_path, executor=cluster)
    # LLVM aborts the compiling process on wgmma for sm_80: reported as a kernel not for that target, as
    # locally (tests/test_gluon.py), not as a crash of the worker.
    assert outcome.status == "not-for-target" and outcome.path is None and outcome.where in before
    # The compiler's last words were logged on the worker's disk and read there.
    assert "not a kernel for sm_80" in outcome.error["message"]
    assert cluster.workers() == before and not any(tmp_path.iterdir())


def test_many_jobs_go_several_to_a_task_and_a_crash_in_one_fails_only_that_job(cluster):
    import functools
    import operator
    # 40 jobs on 2 worker threads: tasks of up to 4 jobs, each job still in a child process of its own.
    jobs = [functools.partial(abs, -i) for i in range(40)]
    jobs[1] = functools.partial(os._exit, 3)  # the second job of the first task kills its process
    assert len(chunks(40, 2)[0]) == 4 and 1 in chunks(40, 2)[0]
    before = cluster.workers()
    results = cluster.run(jobs, operator.call, timeout=30)
    assert [r.job for r in results] == jobs  # one result per job, in the order of the jobs
    assert results[1].status == JobStatus.CRASHED and "exited with status 3" in results[1].message
    assert all(r.status == JobStatus.OK and r.value == i for i, r in enumerate(results) if i != 1)
    assert {r.where for r in results} <= set(before) and cluster.workers() == before  # no worker died


def test_tasks_shrink_to_single_jobs_as_the_jobs_run_out_and_cover_every_job():
    groups = chunks(100, 2)
    assert [i for g in groups for i in g] == list(range(100))
    assert max(map(len, groups)) == 4 and len(groups[-1]) == 1 and [len(g) for g in groups] == \
        sorted((len(g) for g in groups), reverse=True)
    assert chunks(15, 2) == [range(i, i + 1) for i in range(15)]  # fewer than 8 jobs a thread: one a task


def test_a_sweep_whose_every_point_is_cached_never_touches_the_cluster(tmp_path):
    out = tmp_path / "o"
    one = tmp_path / "one.yaml"
    one.write_text("kernels: [add]\ntargets: [gfx942]\n")
    first = subprocess.run([sys.executable, "-m", "irscope", "sweep", str(one), "--out", str(out), "--jobs", "1"],
                           env=_env(), capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stderr
    # Nothing listens on port 9: joining it would fail with exit 5. Every point is fresh, so it is not joined.
    again = subprocess.run([sys.executable, "-m", "irscope", "sweep", str(one), "--out", str(out), "--json",
                            "--scheduler", "tcp://127.0.0.1:9"], env=_env(), capture_output=True, text=True,
                           timeout=300)
    assert again.returncode == 0, again.stderr
    import json
    summary = json.loads(again.stdout)["summary"]
    assert (summary["compiled"], summary["cached"]) == (0, 1)
    executor = DaskCluster.local(2)
    try:
        from irscope.sweep import expand, load_sweep
        result = run_points(expand(load_sweep(one)), out, executor=executor)
        assert result.cached == 1 and not executor.started  # no LocalCluster was started either
    finally:
        executor.close()


# Travels by value (its module is not importable on a worker), as the version probe does.
_FORK_RACE = '''
import sys
import time


def work(job):
    import irscope_slow_import  # noqa: F401 - in the child: the module a worker thread is importing now
    return job


def around(job, run):
    if job == "imports":  # the first task of a new worker process, warming up: an import that takes a while
        import irscope_slow_import  # noqa: F401
    else:
        time.sleep(0.5)  # the other thread forks its compile child while the first one imports
    return run(job)


def add_path(folder):
    sys.path.insert(0, folder)
'''


def test_a_compile_child_is_never_forked_while_another_worker_thread_imports(tmp_path):
    """`dask worker --nthreads 2`: a worker's two first tasks warm up (imports) at once. A child forked by
    one thread while the other is inside an import inherits that module's lock, held by a thread it does
    not have, and hung until the timeout; the fork now waits for the other thread's warm-up."""
    import distributed
    (tmp_path / "irscope_slow_import.py").write_text("import time\ntime.sleep(2)\n")
    ns: dict = {"__name__": "irscope_fork_race"}
    exec(compile(_FORK_RACE, "<fork race>", "exec"), ns)  # noqa: S102 - the test's own constant source
    cluster = distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=True, dashboard_address=None,
                                       silence_logs=40)
    client = distributed.Client(cluster, set_as_default=False)
    executor = DaskCluster("race", lambda: (client, cluster), 60)
    try:
        client.run(ns["add_path"], str(tmp_path))
        results = executor.run(["imports", "forks"], ns["work"], timeout=8, around=ns["around"])
    finally:
        executor.close()
    assert [(r.status, r.value) for r in results] == [(JobStatus.OK, "imports"), (JobStatus.OK, "forks")], results


def test_a_scheduler_left_without_workers_is_an_error_not_a_hang(tmp_path):
    """Every worker gone (died, or stopped) and none back within the grace period: one error saying so,
    instead of waiting forever for tasks nobody runs."""
    import threading
    import distributed
    from irscope.errors import EnvironmentProblem
    cluster = distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None,
                                       silence_logs=50)
    client = distributed.Client(cluster, set_as_default=False)
    executor = DaskCluster(cluster.scheduler_address, lambda: (client, cluster), 60)
    executor.no_worker_grace = 2.0
    stopper = threading.Timer(1.0, cluster.scale, (0,))
    try:
        executor.ready()
        stopper.start()  # once the task runs: the only worker goes away
        started = time.monotonic()
        with pytest.raises(EnvironmentProblem, match="no Dask worker left on tcp://") as e:
            executor.run([30], time.sleep, timeout=60)
        assert time.monotonic() - started < 20 and "dask worker tcp://" in e.value.hint
    finally:
        stopper.cancel()
        executor.close()


def test_worker_wait_waits_that_long_for_a_first_worker_and_the_run_then_completes(cli, tmp_path):
    """A scheduler with no worker yet (an adaptive or batch cluster starting its first): the run stopped after
    a fixed 30 s. With --worker-wait it waits, and compiles once a worker joins; without a worker it stops
    after the wait, with the hint naming the option."""
    import subprocess
    import sys
    import distributed
    sweep = tmp_path / "s.yaml"
    sweep.write_text("kernels: [add]\ntargets: [gfx942]\n")
    cluster = distributed.LocalCluster(n_workers=0, processes=True, dashboard_address=None, silence_logs=50)
    try:
        address = cluster.scheduler_address
        code, out, err = cli("sweep", sweep, "--out", tmp_path / "none", "--scheduler", address, "--worker-wait", "3")
        assert code == 5 and "no Dask worker joined the scheduler" in err and "within 3 s" in err, err
        assert "--worker-wait SECONDS" in err
        started = []
        worker = threading.Timer(6.0, lambda: started.append(subprocess.Popen(
            [sys.executable, "-m", "distributed.cli.dask_worker", address, "--nthreads", "1", "--no-dashboard"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)))
        worker.start()
        begun = time.monotonic()
        code, out, err = cli("sweep", sweep, "--out", tmp_path / "late", "--scheduler", address,
                             "--worker-wait", "120")
        worker.join()
        assert code == 0, err
        assert time.monotonic() - begun > 6  # it waited for the worker started 6 s in
        assert (tmp_path / "late" / "add" / "default" / "gfx942" / "irscope.json").is_file()
    finally:
        worker_procs = locals().get("started") or []
        for proc in worker_procs:
            proc.terminate()
            proc.wait(30)
        cluster.close()


@pytest.mark.parametrize("argv, words", [
    (["--scheduler", "http://127.0.0.1:8787"], "'http://' is not a Dask protocol"),  # the dashboard's address
    (["--scheduler", "127.0.0.1:8786"], "is not an address"),
    (["--scheduler", ""], "--scheduler was given an empty address"),  # used to compile locally, silently
    (["--cluster", "local:2", "--jobs", "2"], "--jobs with --cluster"),  # used to be ignored
    (["--worker-wait", "60"], "--worker-wait without --scheduler or --cluster"),
    (["--cluster", "local:1", "--worker-wait", "-1"], "--worker-wait '-1': not a number of seconds"),
    (["--cluster", "local:1", "--worker-wait", "nan"], "--worker-wait 'nan': not a number of seconds"),
])
def test_a_bad_scheduler_or_jobs_with_a_cluster_is_refused_before_anything_runs(cli, tmp_path, argv, words):
    sweep = tmp_path / "s.yaml"
    sweep.write_text("kernels: [add]\ntargets: [gfx942]\n")
    code, out, err = cli("sweep", sweep, "--out", tmp_path / "o", *argv)
    assert code == 2 and words in err.splitlines()[0] and err.splitlines()[1].startswith("irscope: hint: "), err
    assert not (tmp_path / "o").exists()


def test_a_fork_of_a_worker_process_waits_while_another_thread_runs_irscope_code():
    """The hook itself (os.register_at_fork): a compile child is never forked while a thread of the worker
    holds the guard (inside an import, Triton's specialisation, the warm-up), whose locks it would inherit
    held. The 2-thread cluster test above takes turns through the guard before it forks."""
    import threading
    import warnings

    from irscope.harness import cluster
    held, release = threading.Event(), threading.Event()

    def inside_irscope():
        with cluster._guard:
            held.set()
            release.wait(10)

    thread = threading.Thread(target=inside_irscope)
    thread.start()
    assert held.wait(10)
    threading.Timer(0.5, release.set).start()
    started = time.monotonic()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # (3.12: forking a process that has threads)
        pid = os.fork()
    if pid == 0:
        os._exit(0)
    waited = time.monotonic() - started
    os.waitpid(pid, 0)
    thread.join()
    assert waited >= 0.4, waited


def test_closing_a_cluster_gives_dasks_client_log_back(tmp_path):
    # Joining a scheduler silences distributed.client (its lost-scheduler tracebacks; irscope says it in one
    # line): the level stayed CRITICAL for the rest of the process, hiding a library user's own Dask errors.
    import logging

    import distributed

    from irscope.harness.cluster import DaskCluster
    log = logging.getLogger("distributed.client")
    before = log.level
    log.setLevel(logging.INFO)
    scheduler = distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, protocol="tcp",
                                         dashboard_address=None)
    try:
        cluster = DaskCluster.connect(scheduler.scheduler_address)
        cluster.start()
        cluster.ready()
        assert log.level == logging.CRITICAL  # quiet while irscope uses it
        cluster.close()
        assert log.level == logging.INFO
    finally:
        scheduler.close()
        log.setLevel(before)


def test_worker_wait_0_gives_up_at_once_on_a_scheduler_with_no_worker(cli, tmp_path):
    """`--worker-wait 0` waited forever: distributed takes a timeout of 0 for no limit."""
    import distributed
    sweep = tmp_path / "s.yaml"
    sweep.write_text("kernels: [add]\ntargets: [gfx942]\n")
    cluster = distributed.LocalCluster(n_workers=0, processes=True, dashboard_address=None, silence_logs=50)
    try:
        done = []
        runner = threading.Thread(target=lambda: done.append(cli(
            "sweep", sweep, "--out", tmp_path / "none", "--scheduler", cluster.scheduler_address, "--worker-wait", "0")),
            daemon=True)
        runner.start()
        runner.join(30)
        assert done, "--worker-wait 0 still waited for a worker after 30 s"
        code, out, err = done[0]
        assert code == 5 and "no Dask worker joined the scheduler" in err and "within 0 s" in err, err
    finally:
        cluster.close()
