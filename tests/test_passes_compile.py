"""The pass timeline on real compiles: matmul for Hopper and Blackwell with `--passes`, read back."""
import json
import re
from pathlib import Path

import pytest

from irscope import harness
from irscope.spec import library
from irscope.passes import align_pipelines, find_pattern, load_timeline, only_in
from irscope.spec.kernel import CompileOptions
from irscope.store.snapshot import load_snapshot
from irscope.targets import get_target

@pytest.fixture(scope="session")
def with_passes(tmp_path_factory, compile_cache):
    """matmul compiled for sm_90a and sm_100a with --passes, and for sm_90a without (another root: the
    session's compile cache, where the plain point is the default one other tests compile too)."""
    from irscope.harness.batch import Point, compile_points

    root = tmp_path_factory.mktemp("passes")
    outcomes = compile_points([Point("matmul", t, CompileOptions(passes="mlir")) for t in ("sm_90a", "sm_100a")],
                              root / "with")
    plain = compile_cache.outcomes([Point("matmul", "sm_90a")])
    assert all(o.ok for o in outcomes + plain), outcomes + plain
    return {"sm_90a": outcomes[0].path, "sm_100a": outcomes[1].path, "plain": plain[0].path}


def _triton_pipeline_source() -> str:
    import importlib.util
    spec = importlib.util.find_spec("triton.backends.nvidia.compiler")
    return Path(spec.origin).read_text()


def test_async_copies_of_the_hopper_matmul_come_from_the_software_pipeliner(with_passes):
    tl = load_timeline(load_snapshot(with_passes["sm_90a"]))
    blame = find_pattern(tl, "ttg.async_copy_global_to_local")
    first = blame.first.step
    assert blame.at_start == 0
    assert (first.name, first.stage, first.part) == ("tritongpu-pipeline", "ttgir", "LowerLoops")
    assert first.ops["ttg.async_copy_global_to_local"] == 2  # one per operand, a and b
    # tritongpu-pipeline is what make_ttgir's passes.ttgpuir.add_pipeline adds on sm_90 (capability 9x)
    assert "passes.ttgpuir.add_pipeline(pm, opt.num_stages, dump_enabled)" in _triton_pipeline_source()
    assert "num-stages=3" in first.options
    gone = blame.gone.step
    assert (gone.name, gone.stage) == ("convert-triton-gpu-to-llvm", "llir")


def test_a_pass_that_changes_nothing_is_reported_as_such(with_passes, cli):
    tl = load_timeline(load_snapshot(with_passes["sm_90a"]))
    unroll = next(s for s in tl.steps if s.name == "triton-loop-unroll")  # matmul asks for no unrolling
    assert unroll.status == "no change" and tl.text(unroll.before) == tl.text(unroll.after)
    code, out, err = cli("passes", with_passes["sm_90a"])
    assert code == 0, err
    assert re.search(rf"^\s+{unroll.n}\s+ttir\s+triton-loop-unroll\s+\d+\s+no change\s*$", out, re.M), out
    assert re.search(r"tritongpu-pipeline › LowerLoops\s+\d+\s+\+\d+ -\d+\s+.*ttg\.", out), out


def test_the_last_pass_of_a_stage_leaves_exactly_the_stage_output(with_passes):
    snap = load_snapshot(with_passes["sm_90a"])
    tl = load_timeline(snap)
    for stage in ("ttir", "ttgir"):
        last = [s for s in tl.steps if s.stage == stage][-1]
        assert tl.text(last.after).rstrip() == snap.read(stage).rstrip()
    first = tl.steps[0]
    assert first.name == "inline" and tl.text(tl.initial).rstrip() == snap.read("source").rstrip()


def test_capturing_passes_changes_neither_the_code_nor_the_folder(with_passes):
    snap, plain = load_snapshot(with_passes["sm_90a"]), load_snapshot(with_passes["plain"])
    assert snap.read("ptx") == plain.read("ptx") and snap.read("ttgir") == plain.read("ttgir")
    assert snap.variant == plain.variant == "default"
    assert snap.meta["request"]["passes"] == "mlir" and snap.meta["passes"]["steps"] == len(load_timeline(snap).steps)
    assert "passes" in snap.extra and "passes" not in plain.extra


def test_the_timeline_is_compact(with_passes):
    folder = with_passes["sm_90a"] / "passes"
    size = sum(p.stat().st_size for p in folder.iterdir())
    assert size < 2 * 1024 * 1024, size  # the raw dumps are about 20 MB
    index = json.loads((folder / "index.json").read_text())
    assert len(index["irs"]) < len(index["steps"]) / 2  # unchanged IRs are stored once


def test_blackwell_runs_passes_hopper_does_not(with_passes):
    hopper = load_timeline(load_snapshot(with_passes["sm_90a"]))
    blackwell = load_timeline(load_snapshot(with_passes["sm_100a"]))
    rows = align_pipelines(hopper, blackwell)
    only_b = {row.name for row, _ in only_in(rows, "b")}
    only_a = {row.name for row, _ in only_in(rows, "a")}
    assert {"tritongpu-hoist-tmem-alloc", "tritongpu-promote-lhs-to-tmem",
            "tritongpu-automatic-warp-specialization", "triton-nvidia-gpu-remove-tmem-tokens"} <= only_b
    assert "nvgpu-warp-specialization" in only_a  # Hopper's own warp specialization pass
    nested = [s for s in blackwell.steps if s.within == "tritongpu-automatic-warp-specialization"]
    assert {"tritongpu-partition-scheduling", "nvws-insert-aref"} <= {s.name for s in nested}
    assert [r for r in rows if r.side == "both" and r.name == "tritongpu-pipeline"]


def test_pipeline_command_compares_two_snapshots(with_passes, cli):
    code, out, err = cli("passes", "--pipeline", with_passes["sm_90a"], with_passes["sm_100a"])
    assert code == 0, err
    only_blackwell = out.split("only matmul/default/sm_100a runs")[1]
    assert "tritongpu-promote-lhs-to-tmem" in only_blackwell and "after triton-licm" in only_blackwell
    assert "inside tritongpu-automatic-warp-specialization" in only_blackwell


def test_pipeline_command_compiles_a_kernel_for_two_targets(cli):
    code, out, err = cli("passes", "--pipeline", "sm_90a", "sm_100a", "add")
    assert code == 0, err
    assert out.startswith("pass pipelines: sm_90a (") and "only sm_100a runs" in out
    assert "triton-nvidia-gpu-lower-clc" in out.split("only sm_100a runs")[1]
    assert not list(Path.cwd().iterdir())  # compiled into a temporary folder, gone


def test_first_prints_the_pass_and_its_diff(with_passes, cli):
    code, out, err = cli("passes", with_passes["sm_90a"], "--first", "ttg.async_copy_global_to_local")
    assert code == 0, err
    assert re.search(r"first appears\s+#\d+ ttgir tritongpu-pipeline › LowerLoops", out)
    assert re.search(r"disappears\s+#\d+ llir convert-triton-gpu-to-llvm", out)
    assert re.search(r"^\+.*ttg\.async_copy_global_to_local", out, re.M)  # the diff, with the new lines
    assert "loc(" not in out  # normalised
    code, out, _ = cli("passes", with_passes["sm_90a"], "--first", "ttg.async_copy_global_to_local", "--raw")
    assert code == 0 and "loc(" in out


def test_first_on_a_pattern_that_never_appears_fails_like_grep(with_passes, cli):
    code, out, err = cli("passes", with_passes["sm_90a"], "--first", "ttng.tc_gen5_mma")
    assert code == 1 and "never appears" in out


@pytest.mark.parametrize("pattern", ["tt.load(", "x{99999999999}"])
def test_bad_regex_is_a_one_line_usage_error(with_passes, cli, pattern):
    code, out, err = cli("passes", with_passes["sm_90a"], "--first", pattern)
    assert code == 2 and out == ""  # a repeat too large to compile was an OverflowError: exit 70
    assert err.startswith(f"irscope: error: bad pattern '{pattern}'") and len(err.splitlines()) == 2


@pytest.mark.slow
def test_the_recompile_hint_of_a_dotted_builtin_compiles_that_kernel_with_its_timeline(cli, tmp_path):
    """softmax.fp16 lives in softmax.py: the hint named the file's function, which compiled softmax (fp32)."""
    import shlex
    code, _, err = cli("compile", "softmax.fp16", "--target", "sm_80", "--out", str(tmp_path))
    assert code == 0, err
    snap = tmp_path / "softmax.fp16" / "default" / "sm_80"
    code, _, err = cli("passes", str(snap))
    assert code == 4 and "irscope compile softmax.fp16 --target sm_80" in err
    command = shlex.split(err.split("recompile with --passes: ")[1].strip())
    assert command[0] == "irscope"
    code, _, err = cli(*command[1:])
    assert code == 0, err
    code, out, err = cli("passes", str(snap))
    assert code == 0 and "ttir" in out, err


def test_a_snapshot_without_passes_says_to_recompile_with_passes(with_passes, cli):
    code, out, err = cli("passes", with_passes["plain"])
    assert code == 4 and out == ""
    lines = err.splitlines()
    assert lines[0] == "irscope: error: matmul/default/sm_90a has no pass timeline"
    root = Path(with_passes["plain"]).parent.parent.parent
    assert f"irscope compile matmul --target sm_90a --out {root} --passes" in lines[1]


def test_diff_and_json_views(with_passes, cli):
    tl = load_timeline(load_snapshot(with_passes["sm_90a"]))
    fence = next(s for s in tl.steps if s.name == "triton-nvidia-gpu-fence-insertion")
    code, out, err = cli("passes", with_passes["sm_90a"], "--diff", fence.n)
    assert code == 0, err
    assert re.search(r"^\+\s+ttng\.fence_async_shared", out, re.M)
    code, out, _ = cli("passes", with_passes["sm_90a"], "--json", "--stage", "ttgir", "--changed")
    steps = json.loads(out)
    assert steps and all(s["stage"] == "ttgir" and s["status"] == "changed" for s in steps)
    code, _, err = cli("passes", with_passes["sm_90a"], "--diff", 10_000)
    assert code == 2 and "no step 10000" in err


def test_in_process_compile_captures_passes_and_restores_the_streams(capfd):
    spec = library.load_kernel("add")
    result = harness.compile_kernel(spec, get_target("gfx942"), CompileOptions(passes="mlir"))
    assert result.ok and result.passes is not None
    steps = result.passes.steps
    assert {"ttir", "ttgir", "llir"} <= {s["stage"] for s in steps}
    assert any(s["name"].startswith("tritonamdgpu-") for s in steps)
    assert "compiler" not in result.logs  # the dumps went to the timeline, not the log
    print("still here")
    assert "still here" in capfd.readouterr().out


def test_a_damaged_or_hostile_timeline_is_one_line_exit_4(with_passes, cli, tmp_path):
    """passes/ is read from an untrusted folder: an index that is not the format or names IRs the files
    lack (a KeyError, exit 70), and lines.xz expanding to gigabytes from a few hundred KB (2.1 GB of
    memory), are refused with one line."""
    import lzma
    import shutil

    def copy(name: str) -> Path:
        dest = tmp_path / name
        shutil.copytree(with_passes["sm_90a"], dest)
        return dest

    cases = {}
    snap = copy("steps-text")
    (snap / "passes" / "index.json").write_text('{"steps": "abc", "irs": []}')
    cases[snap] = "field 'steps' must be a list"
    snap = copy("after-out-of-range")
    index = json.loads((snap / "passes" / "index.json").read_text())
    index["steps"][0]["after"] = 10 ** 6
    (snap / "passes" / "index.json").write_text(json.dumps(index))
    cases[snap] = "a step names IR 1000000"
    snap = copy("numbers-out-of-order")  # every step numbered 0: the table's numbers were not what --diff takes
    index = json.loads((snap / "passes" / "index.json").read_text())
    for step in index["steps"]:
        step["n"] = 0
    (snap / "passes" / "index.json").write_text(json.dumps(index))
    cases[snap] = "step 1 is numbered 0"
    snap = copy("bomb")
    bomb = lzma.LZMACompressor()
    data = b"".join(bomb.compress(b"a" * (64 << 20)) for _ in range(9)) + bomb.flush()
    assert len(data) < 1 << 20
    (snap / "passes" / "lines.xz").write_bytes(data)
    cases[snap] = "expands to more than 512 MiB"
    index = json.loads((with_passes["sm_90a"] / "passes" / "index.json").read_text())
    changed = next(s["n"] for s in index["steps"] if s.get("changed"))  # a step whose diff reads the IRs
    for snap, why in cases.items():
        code, out, err = cli("passes", snap, "--diff", str(changed))
        assert code == 4 and why in err and err.count("irscope: error:") == 1, (snap.name, code, err)
        assert "Traceback" not in err and "internal error" not in err


def test_a_timeline_of_an_unknown_form_or_null_fields_is_read_or_refused_never_an_internal_error(with_passes, cli,
                                                                                                  tmp_path):
    """An IR of a form the recorder never writes ('evil') was a KeyError (exit 70) where a step's diff crossed
    forms; a null scope, nested or ops, which the schema allows, was an internal error in every view."""
    import shutil
    index = json.loads((with_passes["sm_90a"] / "passes" / "index.json").read_text())
    crossing = next(s for s in index["steps"] if s.get("before") is not None and s.get("after") is not None
                    and index["irs"][s["before"]]["form"] != index["irs"][s["after"]]["form"]
                    or s.get("after") is not None and s["n"] == 0)
    evil = tmp_path / "evil"
    shutil.copytree(with_passes["sm_90a"], evil)
    bad = json.loads(json.dumps(index))
    bad["irs"][crossing["after"]]["form"] = "evil"
    (evil / "passes" / "index.json").write_text(json.dumps(bad))
    code, out, err = cli("passes", evil, "--diff", str(crossing["n"]))
    assert code == 4 and "'mlir' or 'llvm' or 'mir'" in err and "internal error" not in err, (code, err)

    nulls = tmp_path / "nulls"
    shutil.copytree(with_passes["sm_90a"], nulls)
    bad = json.loads(json.dumps(index))
    for step in bad["steps"]:
        step.update(scope=None, nested=None, ops=None, form=None, added=None)
    for ir in bad["irs"]:
        ir.update(ops=None, style=None)
    (nulls / "passes" / "index.json").write_text(json.dumps(bad))
    changed = next(s["n"] for s in index["steps"] if s.get("changed"))
    for args in ((), ("--diff", str(changed)), ("--first", "ttg.async_copy_global_to_local", "--json")):
        code, out, err = cli("passes", nulls, *args)
        assert code == 0 and "internal error" not in err, (args, code, err)


def test_an_unknown_stage_or_negative_context_is_a_usage_error(with_passes, cli):
    """`passes --stage bogus` printed an empty table, `--context -2` broken hunk headers; both exit 0."""
    code, out, err = cli("passes", with_passes["sm_90a"], "--stage", "bogus")
    assert code == 2 and "runs at stage 'bogus'" in err and "stages: ttir" in err
    code, out, err = cli("passes", with_passes["sm_90a"], "--context", "-2", "--diff", "1")
    assert code == 2 and "--context -2 is negative" in err
    assert cli("passes", with_passes["sm_90a"], "--stage", "ttgir")[0] == 0


@pytest.mark.parametrize("pattern", ["matmul_kernel", "module", ""])
def test_first_on_a_pattern_there_from_start_to_end_says_no_pass_changed_it(with_passes, cli, pattern):
    """`--first matmul_kernel` printed 'still there after the last pass', then exit 70 (AttributeError)."""
    code, out, err = cli("passes", with_passes["sm_90a"], "--first", pattern)
    assert code == 0, err
    assert "present from the start" in out and "no pass changed whether it matches" in out


def test_json_is_given_for_first_diff_and_pipeline(with_passes, cli):
    """--json was ignored with --first, --diff and --pipeline."""
    snap = with_passes["sm_90a"]
    code, out, err = cli("passes", snap, "--first", "ttg.async_copy_global_to_local", "--json")
    data = json.loads(out)
    assert code == 0 and data["first"]["pass"] == "tritongpu-pipeline › LowerLoops"
    assert any("ttg.async_copy_global_to_local" in ln for ln in data["diff"] if ln.startswith("+"))
    code, out, err = cli("passes", snap, "--first", "ttng.tc_gen5_mma", "--json")
    assert code == 1 and json.loads(out)["first"] is None
    code, out, err = cli("passes", snap, "--diff", "1", "--json")
    assert code == 0 and json.loads(out)["step"]["n"] == 1
    code, out, err = cli("passes", "--pipeline", snap, with_passes["sm_100a"], "--json")
    data = json.loads(out)
    assert code == 0 and any(r["pass"] == "tritongpu-promote-lhs-to-tmem" for r in data["only_b"])


def test_a_long_diff_stops_with_a_count_unless_all(with_passes, cli):
    tl = load_timeline(load_snapshot(with_passes["sm_90a"]))
    lower = next(s for s in tl.steps if s.name == "convert-triton-gpu-to-llvm")
    code, out, _ = cli("passes", with_passes["sm_90a"], "--diff", lower.n)
    assert code == 0 and re.search(r"… [\d,]+ more lines of this diff \(--all", out) and len(out.splitlines()) < 420
    code, out, _ = cli("passes", with_passes["sm_90a"], "--diff", lower.n, "--all")
    assert code == 0 and "more lines" not in out and len(out.splitlines()) > 1000


def test_filters_of_the_list_are_refused_with_first_and_diff(with_passes, cli):
    code, out, err = cli("passes", with_passes["sm_90a"], "--first", "tt.load", "--stage", "ttgir")
    assert code == 2 and "--stage filters the list of passes; --first does not list them" in err
    code, out, err = cli("passes", with_passes["sm_90a"], "--diff", "1", "--changed")
    assert code == 2 and "--changed" in err
    # --pipeline listed every pass of both, the filter left out without a word
    code, out, err = cli("passes", "--pipeline", with_passes["sm_90a"], with_passes["sm_100a"], "--stage", "ttgir")
    assert code == 2 and "--stage filters the list of passes; --pipeline does not list them" in err, (code, err)


def test_a_compile_that_stopped_before_its_first_pass_lists_no_step_and_diff_says_why(cli, tmp_path):
    """A frontend error leaves an empty timeline: --diff 0 said 'steps are numbered 0 to -1'."""
    (tmp_path / "bad.py").write_text(
        "import triton\nimport triton.language as tl\n\n\n@triton.jit\n"
        "def bad_kernel(x_ptr, BLOCK: tl.constexpr):\n    x = tl.load(x_ptr + tl.arange(0, BLOCK))\n"
        "    tl.store(x_ptr + tl.arange(0, BLOCK), tl.dot(x, x))\n")
    code, out, err = cli("compile", "bad.py:bad_kernel", "--target", "sm_90a", "--passes", "--constexpr", "BLOCK=64",
                         "--arg", "x_ptr=*fp32", "-o", tmp_path / "out")
    assert code != 0 and "failed" in out + err
    snap = next((tmp_path / "out").glob("bad_kernel/*/sm_90a"))
    assert (snap / "passes" / "index.json").is_file()
    code, out, err = cli("passes", snap)
    assert code == 0 and "no pass ran" in out
    code, out, err = cli("passes", snap, "--diff", "0")
    assert code == 2 and "0 to -1" not in err and "no pass ran" in err and "Traceback" not in err, err


def test_pipeline_of_a_mistyped_snapshot_folder_says_it_does_not_exist(with_passes, cli, tmp_path):
    """--pipeline took a path that is not there for a target: 'unknown target' with a list of targets (two
    mistyped folders), or 'not one of each' beside a real snapshot."""
    for pair in ((tmp_path / "snaps" / "sm_90a", tmp_path / "snaps" / "sm_100a"),
                 (with_passes["sm_90a"], tmp_path / "snaps" / "sm_100a")):
        code, out, err = cli("passes", "--pipeline", *pair)
        assert code == 4 and "does not exist" in err and "unknown target" not in err, (pair, err)
