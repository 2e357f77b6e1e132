"""`irscope sweep`: the YAML format and its errors, parallel crash-isolated compiles, the content cache."""
import json
import textwrap

import pytest

from irscope.errors import UsageError
from irscope.sweep import TooManyPoints, expand, load_sweep, run_points
from tests.conftest import DATA, sigint_as_in_a_terminal

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


def _write(tmp_path, text, name="sweep.yaml"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


@pytest.fixture
def kernel_file(tmp_path):
    path = tmp_path / "scale.py"
    path.write_text(KERNEL)
    return path


def test_second_run_compiles_nothing_and_a_changed_kernel_recompiles(cli, tmp_path, kernel_file):
    sweep = _write(tmp_path, """
        kernels: [scale.py:scale]
        targets: [gfx942]
        grid:
          BLOCK: [256, 1024]
          num_warps: [2, 4]
        out: snaps
    """)
    code, out, err = cli("sweep", sweep, "-j", "2")
    assert code == 0, err
    assert "4 points: 4 compiled now, 0 from the cache" in out
    assert out.splitlines()[0].split()[:3] == ["BLOCK", "num_warps", "status"]
    code, out, err = cli("sweep", sweep)
    assert code == 0 and "4 points: 0 compiled now, 4 from the cache" in out and out.count("ok (cached)") == 4
    kernel_file.write_text(KERNEL.replace("* 2.0", "* 3.0"))
    from irscope.spec import library
    library._loaded.clear()  # a new process would import the edited file; this one must forget the old module
    code, out, err = cli("sweep", sweep)
    assert code == 0 and "4 points: 4 compiled now, 0 from the cache" in out
    assert len(list((tmp_path / "snaps" / "scale").glob("*/gfx942/irscope.json"))) == 4


def test_results_as_json_and_csv(cli, tmp_path, kernel_file):
    sweep = _write(tmp_path, """
        kernels: [scale.py:scale]
        targets: sm_80
        set: {BLOCK: 512}
        grid: [{num_warps: 4}, {num_warps: 8, num_stages: 2}]
    """)
    code, out, err = cli("sweep", sweep, "--json", "--out", tmp_path / "o")
    assert code == 0, err
    data = json.loads(out)
    assert [p["axes"] for p in data["points"]] == [{"num_warps": 4}, {"num_warps": 8, "num_stages": 2}]
    p = data["points"][0]
    assert p["status"] == "ok" and p["analysis"]["counters"]["ptx.ld.global"] > 0 and len(p["content_key"]) == 64
    assert p["times_ms"]["triton"] > 0 and p["times_ms"]["assembler"] > 0
    assert data["summary"]["compiled"] == 2 and data["summary"]["targets"][0]["unlaunchable"] == 0
    code, out, err = cli("sweep", sweep, "--csv", "--out", tmp_path / "o")
    header, *rows = out.splitlines()
    cols = header.split(",")
    assert {"axis.num_warps", "axis.num_stages", "time.triton_ms", "time.assembler_ms", "launchable",
            "ptx.ld.global", "res.registers"} <= set(cols)
    assert len(rows) == 2 and dict(zip(cols, rows[0].split(",")))["cached"] == "1"


def test_summary_counts_points_that_cannot_launch(cli, compiled):
    sweep = _write(compiled.parent, """
        kernels: [matmul]
        targets: [gfx90a, gfx942, gfx950, sm_90a]
    """, name="launch.yaml")
    code, out, err = cli("sweep", sweep, "--out", compiled)
    assert code == 0, err
    assert "0 compiled now, 4 from the cache" in out
    assert "gfx942: 1 point, 1 ok, 1 cannot launch (LDS)" in out
    assert "gfx950: 1 point, 1 ok, all launchable" in out and "sm_90a: 1 point, 1 ok, all launchable" in out


def test_a_crashing_compile_is_that_points_failure_only(cli, tmp_path):
    sweep = _write(tmp_path, f"""
        kernels: ["{DATA / 'user_kernels.py'}:crashes", "{DATA / 'user_kernels.py'}:copy_rows"]
        targets: [gfx942]
        out: o
    """)
    code, out, err = cli("sweep", sweep)
    assert code == 3 and "1 of 2 points did not compile" in err
    assert "crashed" in out and "1 failed" in out
    # the reason is under the table, and the hint sends nobody to a folder a crashed point does not have
    assert "crashed  crashes/default/gfx942: the compiler process was killed by signal SIGABRT" in out
    hint = err.splitlines()[1]
    assert "irscope show" not in hint and "leaves no folder" in hint


def test_each_broken_point_gets_its_reason_and_the_hint_names_a_folder_that_exists(cli, tmp_path):
    user = DATA / "user_kernels.py"
    sweep = _write(tmp_path, f"""
        kernels: ["{user}:hangs", "{user}:type_error", "{user}:copy_rows"]
        targets: [gfx942]
        timeout: 3
        out: o
    """)
    code, out, err = cli("sweep", sweep)
    assert code == 3, err
    lines = out.splitlines()
    assert "timeout  hangs/default/gfx942: killed after 3 s" in lines
    assert any(ln.startswith("failed   type_error/default/gfx942: at source: ") and "undefined_name" in ln
               for ln in lines), out
    assert all(len(ln) < 200 for ln in lines)
    hint = err.splitlines()[1]
    folder = hint.split("`irscope show ")[1].split("`")[0]
    assert "type_error" in folder and (tmp_path / folder / "irscope.json").is_file()


def test_progress_names_the_variant_being_compiled(tmp_path, kernel_file):
    path = _write(tmp_path, "kernels: [scale.py:scale]\ntargets: [gfx942]\ngrid: {BLOCK: [128, 256]}\n")
    seen = []
    run_points(expand(load_sweep(path)), tmp_path / "o", workers=1, on_progress=lambda p: seen.extend(p.running))
    assert {"scale/default.BLOCK=128/gfx942", "scale/default.BLOCK=256/gfx942"} <= set(seen), seen


@pytest.mark.parametrize("as_json", [False, True])
def test_ctrl_c_prints_the_table_of_what_finished_and_exits_130(tmp_path, as_json):
    import json
    import os
    import signal
    import subprocess
    import sys
    import time

    user = DATA / "user_kernels.py"
    sweep = _write(tmp_path, f"""
        kernels: ["{user}:copy_rows", "{user}:hangs"]
        targets: [gfx942]
        out: o
    """)
    proc = subprocess.Popen([sys.executable, "-m", "irscope", "sweep", str(sweep), "-j", "2",
                             *(["--json"] if as_json else [])], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=sigint_as_in_a_terminal)
    done = tmp_path / "o/copy_rows/default/gfx942/irscope.json"
    deadline = time.monotonic() + 90
    while not done.is_file() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert done.is_file(), proc.communicate(timeout=30)
    time.sleep(0.3)  # let the parent collect the finished point
    os.killpg(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "interrupted" in err and "Traceback" not in err
    if as_json:  # the summary said nothing of the interrupted points: only the rows' statuses showed them
        summary = json.loads(out)["summary"]
        assert summary["points"] == 2 and summary["compiled"] == 1 and summary["interrupted"] == 1, summary
        assert summary["not_started"] == 0  # `hangs` had begun compiling
        return
    table = out.splitlines()
    assert table[0].split()[:2] == ["kernel", "status"] and any(ln.startswith("copy_rows") and " ok " in ln
                                                                   for ln in table), out
    assert not any(ln.startswith("hangs ") for ln in table)  # not finished: not a row of the table
    assert "1 interrupted (not compiled)" in out and "2 points: 1 compiled now" in out


@pytest.mark.parametrize("text, line, words", [
    ("kernels: [matmul]\ntargets: [sm_90a]\ngird:\n  num_warps: [4]\n", 3, ["unknown key `gird`", "grid"]),
    ("kernels: [matmul]\ntargets: [sm_90a]\ngrid:\n  num_warps: [4\n  BLOCK_M: [64]\n", 5, ["not valid YAML"]),
    ("kernels: [matmul]\ntargets: [sm_90a]\ngrid:\n  BLOCK_Q: [64]\n", 4, ["no constexpr `BLOCK_Q`", "BLOCK_M",
                                                                         "arg.NAME (an argument)"]),
    ("kernels: [matmul]\ntargets:\n  - sm_90a\n  - sm_99z\n", 4, ["unknown target 'sm_99z'"]),
    ("targets: [sm_90a]\n", 1, ["missing `kernels:`"]),
    ("kernels: [matmul]\ntargets: [sm_90a]\ngrid:\n  num_warps: [4, -2]\n", 4, ["num_warps", "positive"]),
    ("kernels: [matmul]\ntargets: [sm_90a]\ngrid:\n  num_warps: [[4]]\n", 4, ["numbers, strings or booleans"]),
    ("kernels:\n  - kernel: nope.py:k\ntargets: [sm_90a]\n", 2, ["kernel file 'nope.py' does not exist"]),
    ("kernels: [matmul]\ntargets: [sm_90a]\njobs: 0\n", 3, ["`jobs:` takes a positive integer"]),
    # a value is reported at its own line, not at the kernel's
    ("kernels: [matmul]\ntargets: [sm_90a]\ngrid:\n  BLOCK_K: [32]\n  num_warps: [3]\n", 5,
     ["num_warps 3", "not a power of two"]),
    ("kernels: [matmul]\ntargets: [sm_90a]\ngrid:\n  num_warps:\n    - 4\n    - 64\n", 6,
     ["num_warps 64", "at most 32 warps"]),
    ("kernels: [matmul]\ntargets: [sm_90a, gfx942]\ngrid:\n  num_warps: [4]\n  option.maxnreg:\n    - 128\n",
     6, ["unknown backend option 'maxnreg' for gfx942"]),
    ("kernels: [matmul]\ntargets: [sm_90a]\nset:\n  GROUP_M: 8\ngrid:\n  option.maxnreg: [128, abc]\n", 6,
     ["option.maxnreg: abc", "takes an integer"]),
    ("kernels: [matmul]\ntargets: [sm_90a]\ngrid:\n  arg.K:\n    - 4096\n    - '*fp16'\n", 6,
     ["arg.K: *fp16", "K is an integer", "not a tensor"]),
    ("kernels: [matmul]\ntargets: [sm_90a]\ngrid:\n  config: [default, huge]\n", 4, ["no config 'huge'"]),
    ("kernels: [matmul]\ntargets: [sm_90a]\nconfig: nope\n", 3, ["no config 'nope'"]),
    ("kernels:\n  - kernel: matmul\n    config: nah\ntargets: [sm_90a]\n", 3, ["no config 'nah'"]),
    ("kernels: [matmul]\ntargets: [sm_90a]\ngrid:\n  BLOCK_M: [64, big]\n", 4, ["BLOCK_M is a number"]),
    # no points
    ("kernels: [matmul]\ntargets: [sm_90a]\ngrid: []\n", 3, ["`grid:` is empty", "no points"]),
    ("kernels: [matmul]\ntargets: [sm_90a]\ngrid: {}\n", 3, ["empty mapping"]),
    ("kernels: [matmul]\ntargets: [sm_90a]\ngrid:\n  - {num_warps: [4]}\n  - {}\n", 5, ["empty mapping"]),
    ("kernels: [matmul]\ntargets: [sm_90a]\ngrid:\n  num_warps: []\n", 4, ["axis `num_warps` has no values"]),
])
def test_sweep_file_errors_name_the_line(cli, tmp_path, text, line, words):
    path = _write(tmp_path, text)
    code, out, err = cli("sweep", path)
    assert code == 2, err
    first = err.splitlines()[0]
    assert first.startswith(f"irscope: error: {path}:{line}: "), err
    assert all(w in err for w in words), err
    assert err.splitlines()[1].startswith("irscope: hint: ")
    assert not (tmp_path / "irscope-snapshots").exists()  # nothing compiled, nothing half-written


def test_expand_grid_union_fixed_values_and_per_kernel_grids(tmp_path, kernel_file):
    path = _write(tmp_path, """
        kernels:
          - matmul
          - kernel: scale.py:scale
            grid: {BLOCK: [128, 256]}
            set: {num_warps: 2}
        targets: [sm_90a, gfx942]
        set: {num_stages: 3}
        grid:
          - {num_warps: [4, 8], BLOCK_K: 32}
          - {num_warps: 4, BLOCK_K: 32}
          - {num_warps: 2, divisibility: 1, option.enable_fp_fusion: false}
    """)
    sweep = load_sweep(path)
    points = expand(sweep)
    matmul = [p for p in points if p.kernel == "matmul"]
    assert len(matmul) == 3 * 2  # the repeated {num_warps: 4, BLOCK_K: 32} point is not compiled twice
    last = matmul[-1].options
    assert last.num_warps == 2 and last.divisibility == ((None, 1),)
    assert last.backend_options == (("enable_fp_fusion", False),)
    assert all(p.options.num_stages == 3 for p in points)
    scale = [p for p in points if p.kernel.endswith(":scale")]
    assert {dict(p.options.constexprs)["BLOCK"] for p in scale} == {128, 256}
    assert all(p.options.num_warps == 2 for p in scale) and scale[0].kernel.startswith(str(tmp_path))


def test_run_points_reports_cpu_and_recorded_compile_time(tmp_path, kernel_file):
    path = _write(tmp_path, "kernels: [scale.py:scale]\ntargets: [sm_80]\n")
    points = expand(load_sweep(path))
    result = run_points(points, tmp_path / "o", workers=1)
    assert result.compiled == 1 and result.cpu_seconds > 0 and result.wall_seconds > 0
    row = result.rows[0]
    assert row.status == "ok" and not row.cached and row.triton_ms > 0 and row.assembler_ms > 0
    again = run_points(points, tmp_path / "o", workers=1)
    assert again.compiled == 0 and again.rows[0].cached and again.recorded_ms == result.recorded_ms
    with pytest.raises(UsageError):
        load_sweep(tmp_path / "missing.yaml")


def test_the_documented_example_is_a_valid_162_point_sweep():
    from pathlib import Path
    example = Path(__file__).resolve().parent.parent / "docs" / "examples" / "matmul-autotune.yaml"
    points = expand(load_sweep(example))
    assert len(points) == 162 and {p.target for p in points} == {"sm_90a"}


@pytest.mark.parametrize("data", [b"kernels: [matmul]\ntargets: [\xff\xfe]\n", b"\x7fELF\x02\x01\x01\x00\x00",
                                  b"kernels: [matmul]\x00\n"])
def test_a_binary_file_is_a_usage_error(cli, tmp_path, data):
    path = tmp_path / "sweep.yaml"
    path.write_bytes(data)
    code, out, err = cli("sweep", path)
    assert code == 2, err
    assert err.startswith(f"irscope: error: {path}:") and "not a text file" in err and "Traceback" not in err
    assert err.splitlines()[1].startswith("irscope: hint: ")


def _killed_ptxas(tmp_path, monkeypatch, signal: int = 9):
    """TRITON_PTXAS_PATH pointing at a ptxas that answers --version but dies of `signal` when it assembles
    (SIGKILL: what the kernel's OOM killer, or a user's kill, does to it; SIGSEGV: a crash of its own)."""
    import os
    import stat
    from triton.backends.nvidia.compiler import get_ptxas
    real = get_ptxas(80).path
    fake = tmp_path / "bin" / "ptxas"
    fake.parent.mkdir()
    fake.write_text(f'#!/bin/sh\ncase "$*" in *--version*) exec "{real}" "$@";; esac\nkill -{signal} $$\n')
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("TRITON_PTXAS_PATH", str(fake))
    return lambda: monkeypatch.delenv("TRITON_PTXAS_PATH") or os.environ.get("TRITON_PTXAS_PATH")


def test_a_ptxas_killed_by_a_signal_is_a_crash_that_is_not_cached(cli, tmp_path, monkeypatch):
    sweep = _write(tmp_path, "kernels: [add]\ntargets: [sm_80]\nout: o\n")
    restore = _killed_ptxas(tmp_path, monkeypatch)
    code, out, err = cli("sweep", sweep, "-j", "1")
    assert code == 3, err
    assert "crashed  add/default/sm_80: ptxas was killed by signal SIGKILL (not cached" in out, out
    assert not (tmp_path / "o" / "add").exists()  # no folder: nothing for the next run to serve
    code, out, err = cli("sweep", sweep, "--list")
    assert "to compile" in out and "0 fresh" in out
    restore()
    code, out, err = cli("sweep", sweep, "-j", "1")
    assert code == 0 and "1 compiled now, 0 from the cache" in out, out + err


def test_a_killed_ptxas_under_another_release_writes_no_folder_either(tmp_path, monkeypatch):
    """remote.py's compile (the child of --triton X) wrote the failure's folder, so it was cached there."""
    from irscope.harness.remote import _compile, options_to_json
    from irscope.spec.kernel import CompileOptions
    _killed_ptxas(tmp_path, monkeypatch)
    r = _compile({"kernel": "add", "target": "sm_80", "options": options_to_json(CompileOptions()),
                  "out": str(tmp_path / "o"), "suffix": ".triton-3.8.0", "log": ""})
    assert r["status"] == "crashed" and "ptxas was killed by signal SIGKILL (not cached" in r["message"], r
    assert r["not_cached"] == "ptxas was killed by signal SIGKILL"  # so the spec's not_for does not relabel it
    assert not (tmp_path / "o").exists()


def test_a_ptxas_that_crashes_by_itself_is_the_answer_for_that_ptx_and_is_cached(cli, tmp_path, monkeypatch):
    # SIGSEGV or SIGABRT from ptxas itself happens on this PTX every time: compiling again each run wastes it
    sweep = _write(tmp_path, "kernels: [add]\ntargets: [sm_80]\nout: o\n")
    _killed_ptxas(tmp_path, monkeypatch, signal=11)
    code, out, err = cli("sweep", sweep, "-j", "1")
    assert code == 3 and "failed" in out and "crashed" not in out, out + err
    assert (tmp_path / "o" / "add").exists()
    code, out, err = cli("sweep", sweep, "-j", "1")
    assert "0 compiled now, 1 from the cache" in out, out + err


def test_a_failure_cached_by_an_older_irscope_for_a_killed_ptxas_is_compiled_again(cli, tmp_path, monkeypatch):
    from irscope import harness
    from irscope.spec import library
    from irscope.spec.kernel import CompileOptions
    from irscope.store.folder import snapshot_dir, write_folder
    from irscope.store.writer import snapshot_files
    from irscope.targets import get_target
    restore = _killed_ptxas(tmp_path, monkeypatch)
    spec, target = library.load_kernel("add"), get_target("sm_80")
    result = harness.compile_kernel(spec, target, CompileOptions())
    assert result.error and "error code -9" in result.error["message"] and result.not_cached
    restore()
    result.not_cached = ""  # as irscope wrote it before it knew: a failed snapshot
    write_folder(snapshot_dir(tmp_path / "o", spec.name, result.variant, target.name), snapshot_files(result))
    sweep = _write(tmp_path, "kernels: [add]\ntargets: [sm_80]\nout: o\n")
    code, out, err = cli("sweep", sweep, "-j", "1")
    assert code == 0 and "1 compiled now, 0 from the cache" in out, out + err


def test_a_sweep_over_its_point_limit_is_refused_before_planning_unless_raised(cli, tmp_path):
    text = "kernels: [add]\ntargets: [sm_80, gfx942]\ngrid: {num_warps: [2, 4]}\nmax_points: 3\n"
    sweep = _write(tmp_path, text)
    code, out, err = cli("sweep", sweep)
    assert code == 2 and f"irscope: error: {sweep}: up to 4 points, more than the limit of 3 (about" in err, err
    assert "`max_points: 4` in the file or --max-points 4" in err.splitlines()[1]
    assert not (tmp_path / "irscope-snapshots").exists()
    code, out, err = cli("sweep", sweep, "--list")  # listing is held to it too: the grid is made to list it
    assert code == 2 and "more than the limit of 3" in err
    code, out, err = cli("sweep", sweep, "--list", "--max-points", "4")  # --max-points 4 raises it
    assert code == 0 and "4 points, 0 fresh" in out, err
    # rank has no --max-points: the file's limit holds, and the hint says only that
    code, out, err = cli("rank", sweep, "--target", "sm_80")
    assert code == 2 and "more than the limit of 3" in err and "--max-points" not in err
    assert cli("sweep", _write(tmp_path, text.replace("3", "4")), "--list")[0] == 0


def test_a_typo_sized_grid_is_refused_without_making_its_points(cli, tmp_path):
    """8,000,000 points: making them all took minutes and gigabytes before the limit was looked at."""
    stages = ", ".join(str(i) for i in range(1, 1001))
    blocks = ", ".join(str(2 ** (i % 10 + 6)) for i in range(1000))
    sweep = _write(tmp_path, f"kernels: [add]\ntargets: [sm_80, gfx942]\ngrid:\n  num_warps: [1, 2, 4, 8]\n"
                             f"  num_stages: [{stages}]\n  BLOCK_SIZE: [{blocks}]\n")
    code, out, err = cli("sweep", sweep, "--list")
    # (BLOCK_SIZE's 1,000 values are 10 values repeated: a value given twice is one point, counted once)
    assert code == 2 and "up to 80,000 points, more than the limit of 2,000" in err
    with pytest.raises(TooManyPoints) as caught:
        expand(load_sweep(sweep), limit=10)
    assert caught.value.bound == 80_000


_BOMB = "a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n" \
        "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n"


@pytest.mark.parametrize("field, words", [
    ("name: *d\n", "`name:` takes free text, not a list"),
    ("description: *d\n", "`description:` takes free text, not a list"),
    ("columns: [*d]\n", "`columns:` takes a counter name or glob, not a list"),
    ("targets: [*d]\n", "`targets:` takes target names, not a list"),
])
def test_text_fields_are_type_checked_not_expanded_from_yaml_aliases(cli, tmp_path, field, words):
    """A few lines of nested YAML aliases expand to gigabytes when str()-ed: text fields are checked."""
    bomb = "".join(f"x-{ln}\n" for ln in _BOMB.splitlines())
    text = bomb + "kernels: [add]\n" + ("" if field.startswith("targets") else "targets: [gfx942]\n") + field
    code, out, err = cli("sweep", _write(tmp_path, text))
    assert code == 2 and words in err, err


def test_spare_x_keys_hold_anchors_and_other_unknown_keys_are_still_refused(tmp_path):
    sweep = load_sweep(_write(tmp_path, "x-warps: &w [2, 4]\nkernels: [add]\ntargets: [gfx942]\n"
                                        "grid: {num_warps: *w}\n"))
    assert len(expand(sweep)) == 2
    with pytest.raises(UsageError, match="unknown key `y-warps`"):
        load_sweep(_write(tmp_path, "y-warps: 1\nkernels: [add]\ntargets: [gfx942]\n"))


def test_a_huge_or_endless_file_is_refused_without_reading_it_all(cli, tmp_path):
    code, out, err = cli("sweep", "/dev/zero")
    assert code == 2 and "is over 1024 KiB: not a sweep file" in err, err


def test_a_nested_value_is_named_in_the_files_words(cli, tmp_path):
    code, out, err = cli("sweep", _write(tmp_path, "kernels: [add]\ntargets: [gfx942]\ngrid: {num_warps: [[4]]}\n"))
    assert code == 2 and "not a list" in err and "_Seq" not in err, err
    code, out, err = cli("sweep", _write(tmp_path, "kernels: [add]\ntargets: [gfx942]\nset: {BLOCK_SIZE: }\n"))
    assert code == 2 and "not an empty value" in err and "NoneType" not in err, err


def test_the_summary_says_where_the_cpu_went_what_never_started_and_no_all_launchable_beside_failures():
    from pathlib import Path
    from irscope.cli import UI
    from irscope.cli.sweep import render_summary
    from irscope.sweep.run import SweepResult, SweepRow
    from irscope.sweep.points import SweepPoint
    from irscope.spec.kernel import CompileOptions
    point = SweepPoint("add", "gfx942", CompileOptions())
    rows = (SweepRow(point, "failed", False, None, "add/a/gfx942", "k"),
            SweepRow(point, "interrupted", False, None, "add/b/gfx942", "k"),
            SweepRow(point, "interrupted", False, None, "add/c/gfx942", "k"))
    result = SweepResult(rows, 1, 0, 2.0, 1.0, Path("o"), interrupted=2, worker_cpu_seconds=3.0, not_started=1)
    import io
    text = render_summary(result, UI(io.StringIO(), io.StringIO()))
    assert "2 interrupted (not compiled; 1 not started)" in text
    assert "2.0 s wall after start-up, 1.0 s CPU here and 3.0 s in the compiles on the Dask workers" in text
    assert "gfx942: 1 point, 0 ok, 1 failed" in text.splitlines()[1] and "launchable" not in text


def test_list_json_and_damaged_folders_and_nan_timeout_and_a_full_stdout(cli, tmp_path):
    import errno
    import io
    from irscope.cli import main
    sweep = _write(tmp_path, "kernels: [add]\ntargets: [gfx942]\nout: o\n")
    code, out, err = cli("sweep", sweep, "-j", "1")
    assert code == 0, err
    code, out, err = cli("sweep", sweep, "--list", "--json")
    assert code == 0 and json.loads(out)["points"][0]["fresh"] is True
    code, out, err = cli("sweep", sweep, "--list", "--csv")  # it printed the text table
    assert code == 2 and "--list has no CSV form" in err and out == ""
    ir = next((tmp_path / "o").rglob("*.amdgcn"))
    ir.write_text(ir.read_text()[: len(ir.read_text()) // 2])  # damaged: the run would compile it again
    code, out, err = cli("sweep", sweep, "--list")
    assert "to compile" in out and "0 fresh" in out, out

    class Full(io.StringIO):
        def write(self, text):
            raise OSError(errno.ENOSPC, "No space left on device")

    err = io.StringIO()
    assert main(["sweep", str(sweep)], out=Full(), err=err) == 5
    assert err.getvalue().startswith("irscope: error: cannot write the results to stdout: No space left"), err.getvalue()
    code, out, err = cli("sweep", _write(tmp_path, "kernels: [add]\ntargets: [gfx942]\ntimeout: .nan\n", "n.yaml"))
    assert code == 2 and "`timeout:` takes a positive number" in err
