"""`irscope run` on a GPU, `run --snapshot` and `verify`: the parts that need no GPU run everywhere (on
real snapshots and real launches built on the CPU); the rest carry the `gpu` marker."""
import json
import shutil

import pytest

from irscope import harness
from irscope.spec import library
from irscope.store import results
from irscope.gpu import runner
from irscope.gpu.replay import SpecialisationMismatch, check_call, full_args
from irscope.store.snapshot import load_snapshot
from irscope.targets import get_target
from irscope.gpu.verify import options_for_call


@pytest.fixture(scope="module")
def matmul_bench_calls():
    """The launch the matmul workload describes at its benchmark size, with CPU tensors."""
    prepared = runner.prepare(runner.Request("matmul", size="bench"), "cpu")
    return prepared


def test_a_launch_at_the_benchmark_size_keeps_the_snapshots_specialisation(compiled, matmul_bench_calls):
    snap = load_snapshot(compiled / "matmul" / "default" / "sm_90a")
    fn = library.load_kernel("matmul").fn
    call = matmul_bench_calls.calls[0]
    check_call(snap, fn, call)  # raises on any broken assumption
    args = full_args(fn, call)
    assert len(args) == len(fn.arg_names) and args[fn.arg_names.index("BLOCK_M")] == 128


def test_a_size_that_breaks_divisibility_is_refused_before_launch(compiled):
    snap = load_snapshot(compiled / "matmul" / "default" / "sm_90a")
    fn = library.load_kernel("matmul").fn
    call = runner.prepare(runner.Request("matmul", size="bench:K=4004"), "cpu").calls[0]
    with pytest.raises(SpecialisationMismatch) as e:
        check_call(snap, fn, call)
    assert "assumes K is a multiple of 16; this launch has K=4004" in e.value.message


def test_another_config_is_refused_by_its_constexprs(compiled):
    snap = load_snapshot(compiled / "matmul" / "default" / "sm_90a")
    fn = library.load_kernel("matmul").fn
    config = library.load_kernel("matmul").configs[1].name
    call = runner.prepare(runner.Request("matmul", config=config, size="small"), "cpu").calls[0]
    with pytest.raises(SpecialisationMismatch, match="was compiled with BLOCK_"):
        check_call(snap, fn, call)


def test_the_device_less_options_of_a_real_launch_reproduce_the_snapshots_specialisation(compiled, matmul_bench_calls):
    """What `irscope verify` compiles on the GPU: a real launch's arguments give the typical launch's
    specialisation, so the JIT and the snapshot see the same kernel."""
    spec = library.load_kernel("matmul")
    opts = options_for_call(spec, matmul_bench_calls.calls[0], "default")
    record = harness.specialise(spec, get_target("sm_90a"), opts)[-1]
    stored = load_snapshot(compiled / "matmul" / "default" / "sm_90a").meta["specialisation"]
    strip = lambda rec: [{k: v for k, v in e.items() if k != "value" or e["kind"] != "tensor"} for e in rec]  # noqa: E731
    assert strip(record) == strip(stored)


def test_results_recorded_beside_a_snapshot_show_up_in_irscope_show(cli, tmp_path, compiled):
    snap_dir = tmp_path / "snap"
    shutil.copytree(compiled / "add" / "default" / "sm_90a", snap_dir)
    result = runner.check_interpreted(runner.Request("add", size="small"))
    assert result.ok
    record = {"source": "jit", "gpu": {"device": "NVIDIA H200", "target": "sm_90a"}, **result.as_dict(),
              "bench": {"kernel": {"ms": 0.0123, "tflops": None, "gbps": 4100.0}, "speedups": {"torch add": 1.02}}}
    results.append(snap_dir, results.RUNS_FILE, record)
    results.append(snap_dir, results.RUNS_FILE, record)
    assert len(results.runs(load_snapshot(snap_dir))) == 2
    code, out, err = cli("show", snap_dir)
    assert code == 0 and "GPU runs (2; newest last)" in out
    assert "jit on NVIDIA H200 · size small · ok · 0.012 ms · 4100 GB/s · 1.02x vs torch add" in out
    (snap_dir / results.RUNS_FILE).write_text("{broken")
    code, out, err = cli("show", snap_dir)
    assert code == 4 and "runs.json is damaged" in err


def test_gpu_commands_without_a_gpu_say_so(cli):
    code, out, err = cli("verify", "add")
    assert code == 5 and "irscope: error: there is no CUDA GPU here" in err
    code, out, err = cli("run", "add")
    assert code == 5 and "--interpret" in err
    code, out, err = cli("run")
    assert code == 2 and "nothing to run" in err
    code, out, err = cli("run", "--snapshot", "x", "--interpret")
    assert code == 2 and "needs a CUDA GPU" in err


@pytest.mark.gpu
def test_run_checks_and_times_add_on_the_gpu(cli, tmp_path):
    code, out, err = cli("run", "add", "--repeats", "2", "--json", tmp_path / "r.json")
    assert code == 0, out + err
    record = json.loads((tmp_path / "r.json").read_text())[0]
    assert record["ok"] and record["bench"]["kernel"]["ms"] > 0 and record["bench"]["copy_fraction"] > 0.3


@pytest.mark.gpu
def test_a_snapshots_cubin_runs_and_is_checked(cli, compiled, tmp_path):
    snap_dir = tmp_path / "snap"
    shutil.copytree(compiled / "matmul" / "default" / "sm_90a", snap_dir)
    code, out, err = cli("run", "--snapshot", snap_dir, "--check")
    assert code == 0 and "PASS" in out, out + err
    assert results.runs(load_snapshot(snap_dir))[-1]["source"] == "snapshot"


@pytest.mark.gpu
def test_verify_finds_the_jit_and_the_device_less_compile_identical(cli):
    code, out, err = cli("verify", "add", "matmul")
    assert code == 0 and "DIFFERENT" not in out, out + err


def test_a_sweep_points_snapshot_runs_with_its_own_constexprs_not_its_menu_configs(tmp_path, cli):
    """`irscope run --snapshot` of a sweep point (add at BLOCK_SIZE=256, whose menu config says 1024) plans
    the launch the cubin was compiled for: its grid and constexprs, so the check passes before it runs."""
    from pathlib import Path
    from irscope.gpu import session

    code, _, err = cli("compile", "add", "--target", "sm_90a", "--constexpr", "BLOCK_SIZE=256", "--out", "snaps")
    assert code == 0, err
    folder = next(p.parent for p in (tmp_path / "snaps").rglob("irscope.json"))
    snap = load_snapshot(folder)
    job = session.plan_jobs([str(folder)], [], [], None, ["n=100000"], 0, Path("unused"), None)[0]
    assert job.request.constexprs == {"BLOCK_SIZE": 256}
    call = runner.prepare(job.request, "cpu").calls[0]
    assert call.grid == (-(-100000 // 256),)
    check_call(snap, library.load_kernel("add").fn, call)  # the menu's BLOCK_SIZE=1024 would be refused
    # a damaged one whose constexpr is not a value (a list) is refused by name, before any grid is computed
    meta = json.loads((folder / "irscope.json").read_text())
    for e in meta["specialisation"]:
        if e["name"] == "BLOCK_SIZE":
            e["value"] = [256]
    (folder / "irscope.json").write_text(json.dumps(meta))
    from irscope.errors import SnapshotError
    with pytest.raises(SnapshotError, match="records constexpr BLOCK_SIZE as list"):
        session.plan_jobs([str(folder)], [], [], None, ["n=100000"], 0, Path("unused"), None)


def test_verify_passes_a_launchs_descriptors_with_their_layout_not_the_specs():
    """options_for_call dropped descriptor arguments, so `irscope verify` compiled a descriptor kernel with
    the spec's descriptors instead of the launch's (a Gluon descriptor's layout is part of its type)."""
    from irscope.spec.kernel import TensorDesc
    spec = library.load_kernel("attention_ws")
    call = runner.prepare(runner.Request("attention_ws", size="small"), "cpu").calls[0]
    opts = options_for_call(spec, call, "default")
    descs = {n: v for n, v in opts.args if isinstance(v, TensorDesc)}
    assert set(descs) == {"q_desc", "k_desc", "v_desc", "o_desc"}
    q = call.args[0]
    assert descs["q_desc"].shape == tuple(q.shape) and descs["q_desc"].swizzle == q.layout.swizzle_byte_width
    assert descs["q_desc"].transposed == q.layout.transposed
    record = {e["name"]: e for e in harness.specialise(spec, get_target("sm_90a"), opts)[-1]}
    assert f"[{', '.join(map(str, q.block_shape))}]" in record["q_desc"]["type"]
    assert record["q_desc"]["value"].startswith(f"desc:fp16[{','.join(map(str, q.shape))}]")
