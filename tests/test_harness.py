"""The compile harness on real kernels and real targets (no GPU)."""
import re
from pathlib import Path

import pytest

from irscope import harness
from irscope.spec import library
from irscope.spec.kernel import CompileOptions, Tensor
from irscope.targets import get_target


def _record(spec_name, target="sm_90a", **opts):
    spec = library.load_kernel(spec_name)
    return {a["name"]: a for a in harness.specialise(spec, get_target(target), CompileOptions(**opts))[-1]}


def test_default_specialisation_is_the_jits_for_a_typical_launch():
    rec = _record("matmul")
    assert rec["a_ptr"]["divisibility"] == 16 and rec["K"]["divisibility"] == 16
    # strides equal to 1 become constants, as the JIT does for a contiguous tensor
    assert rec["stride_ak"]["kind"] == "constant" and rec["stride_ak"]["type"] == "constexpr"
    assert rec["stride_am"]["kind"] == "scalar" and rec["stride_am"]["type"] == "i32"


def test_divisibility_one_removes_every_hint_but_keeps_constants():
    rec = _record("matmul", divisibility=((None, 1),))
    assert {a["divisibility"] for a in rec.values() if a["kind"] in ("tensor", "scalar")} == {1}
    assert rec["stride_ak"]["kind"] == "constant"


def test_divisibility_per_argument_and_typical_values():
    rec = _record("matmul", divisibility=(("a_ptr", 4),), args=(("K", 4004),))
    assert rec["a_ptr"]["divisibility"] == 4 and rec["b_ptr"]["divisibility"] == 16
    assert rec["K"]["divisibility"] == 1  # 4004 is not a multiple of 16: the JIT gives no hint


def test_amd_pointers_get_the_buffer_op_range_a_real_launch_gets():
    rec = _record("add", target="gfx942")
    assert rec["x_ptr"]["attrs"] == {"tt.pointer_range": 32}


def test_unknown_names_are_usage_errors_with_suggestions():
    from irscope.errors import UsageError
    with pytest.raises(UsageError) as e:
        _record("matmul", constexprs=(("BLOCK_MM", 64),))
    assert "did you mean BLOCK_M" in e.value.hint
    with pytest.raises(UsageError, match="backend option"):
        _record("matmul", backend_options=(("maxnrg", 128),))
    with pytest.raises(UsageError, match="power of two"):
        _record("matmul", num_warps=3)


@pytest.mark.parametrize("target,asm,binary", [("sm_80", "ptx", "cubin"), ("gfx950", "amdgcn", "hsaco")])
def test_every_stage_is_collected(target, asm, binary):
    res = harness.compile_kernel(library.load_kernel("add"), get_target(target), CompileOptions())
    assert res.ok, res.error
    expected = ["source", "ttir", "ttgir", "llir", asm, binary] + (["sass"] if binary == "cubin" else [])
    assert list(res.stages) == expected
    assert res.versions["triton"] and res.content_key
    assert set(res.times_ms) >= {"ttir", "ttgir", "llir", asm, binary}


def test_alignment_decides_pipelining_on_hopper(compiled):
    """The seeds' central finding: without tt.divisibility the matmul loses its async copies."""
    from irscope.store.snapshot import load_snapshot
    aligned = load_snapshot(compiled / "matmul" / "default" / "sm_90a").read("ptx")
    spec = library.load_kernel("matmul")
    res = harness.compile_kernel(spec, get_target("sm_90a"), CompileOptions(divisibility=((None, 1),)))
    assert len(re.findall(r"cp\.async\.cg", aligned)) > 0
    assert len(re.findall(r"cp\.async", res.stages["ptx"])) == 0


def test_line_info_off_leaves_no_locations():
    res = harness.compile_kernel(library.load_kernel("add"), get_target("sm_90a"), CompileOptions(line_info=False))
    assert ".loc" not in res.stages["ptx"] and "!dbg" not in res.stages["llir"]


def test_user_kernel_with_values_from_the_command_line(tmp_path):
    from tests.conftest import DATA
    spec = library.load_kernel(f"{DATA / 'user_kernels.py'}:scale")
    opts = CompileOptions(args=(("x_ptr", Tensor("fp32")), ("out_ptr", Tensor("fp32")), ("n", 4096),
                                ("factor", 2.0)), constexprs=(("BLOCK", 256),))
    res = harness.compile_kernel(spec, get_target("sm_90a"), opts)
    assert res.ok, res.error
    rec = {a["name"]: a for a in res.specialisation}
    assert rec["factor"]["type"] == "fp32" and rec["n"]["divisibility"] == 16


def test_frontend_error_is_reported_with_its_stage():
    from tests.conftest import DATA
    spec = library.load_kernel(f"{DATA / 'user_kernels.py'}:type_error")
    res = harness.compile_kernel(spec, get_target("sm_90a"), CompileOptions())
    assert not res.ok and res.error["stage"] == "source"
    assert "undefined_name" in res.error["message"]


def test_the_content_key_tells_backend_options_and_codegen_environment_apart(monkeypatch):
    # maxnreg and AMDGCN_USE_BUFFER_OPS change the code: a cache keyed by content must not reuse across them.
    spec = library.load_kernel("add")
    base = harness.plan(spec, get_target("sm_80"), CompileOptions())[0]
    assert harness.plan(spec, get_target("sm_80"), CompileOptions(backend_options=(("maxnreg", 32),)))[0] != base
    assert harness.plan(spec, get_target("sm_80"), CompileOptions())[0] == base
    amd = harness.plan(spec, get_target("gfx942"), CompileOptions())[0]
    monkeypatch.setenv("AMDGCN_USE_BUFFER_OPS", "0")
    assert harness.plan(spec, get_target("gfx942"), CompileOptions())[0] != amd
    monkeypatch.setenv("TRITON_CACHE_DIR", "/elsewhere")  # where Triton caches changes nothing it emits
    monkeypatch.delenv("AMDGCN_USE_BUFFER_OPS")
    assert harness.plan(spec, get_target("gfx942"), CompileOptions())[0] == amd


def test_large_tensors_drop_amds_pointer_range_assumption():
    # Under 2 GB (irscope's default) AMD's JIT marks pointers tt.pointer_range=32 (buffer ops); 2 GB or more, not.
    spec = library.load_kernel("add")
    record = harness.plan(spec, get_target("gfx942"), CompileOptions())[2]
    large = harness.plan(spec, get_target("gfx942"), CompileOptions(large_tensors=True))[2]
    ptr = {e["name"]: e for e in record}["x_ptr"]
    assert ptr["attrs"]["tt.pointer_range"] == 32
    assert "tt.pointer_range" not in ({e["name"]: e for e in large}["x_ptr"].get("attrs") or {})
    assert CompileOptions.from_dict(CompileOptions(large_tensors=True).to_dict()).large_tensors


def test_the_content_key_follows_the_ptxas_release_not_its_folder(monkeypatch, tmp_path):
    # The key held the Triton version but not the assembler: a CUDA toolkit's ptxas named by
    # TRITON_PTXAS_PATH (another release, another cubin and SASS) reused the cached snapshots of the
    # bundled one. Its folder is not in the key: the same ptxas elsewhere (another venv, a worker) is equal.
    import triton
    spec = library.load_kernel("add")
    base = harness.plan(spec, get_target("sm_80"), CompileOptions())[0]
    bundled = Path(triton.__file__).parent / "backends" / "nvidia" / "bin"
    elsewhere = tmp_path / "toolkit" / "bin"
    elsewhere.mkdir(parents=True)
    (elsewhere / "ptxas").symlink_to(bundled / "ptxas")
    monkeypatch.setenv("TRITON_PTXAS_PATH", str(elsewhere / "ptxas"))
    assert harness.plan(spec, get_target("sm_80"), CompileOptions())[0] == base
    newer = tmp_path / "newer" / "bin"
    newer.mkdir(parents=True)
    (newer / "ptxas").symlink_to(bundled / "ptxas-blackwell")  # another release (13.x, the bundled one 12.x)
    monkeypatch.setenv("TRITON_PTXAS_PATH", str(newer / "ptxas"))
    assert harness.plan(spec, get_target("sm_80"), CompileOptions())[0] != base


def test_a_ctrl_c_in_the_instant_after_a_workers_fork_kills_it_quietly(tmp_path):
    # Between its fork and _child setting SIGINT's default, a worker still had the parent's Python
    # handler: a Ctrl-C there raised KeyboardInterrupt inside multiprocessing's bootstrap (a traceback
    # printed, the job run anyway or called crashed with status 1). Workers now start with SIGINT held.
    import os
    import subprocess
    import sys
    script = tmp_path / "window.py"
    script.write_text(
        "import os, signal\nfrom irscope.harness.workers import run_jobs\n\n\ndef work(job):\n    return job * 2\n\n\n"
        "if __name__ == '__main__':\n"
        "    os.register_at_fork(after_in_child=lambda: os.kill(os.getpid(), signal.SIGINT))  # the instant\n"
        "    (r,) = run_jobs([1], work, workers=1)\n"
        "    print(r.status, r.message)\n")
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "crashed the compiler process was killed by signal SIGINT"
    assert "Traceback" not in proc.stderr and "KeyboardInterrupt" not in proc.stderr
