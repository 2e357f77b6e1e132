"""Kernels under @triton.autotune and @triton.heuristics (tests/data/tuned_kernels.py): found, their configs
become the menu, heuristics are computed from the typical launch and recorded, pruning is reported."""
import json
from io import StringIO
from pathlib import Path

import pytest
import triton

from irscope.spec import autotune, library
from irscope.cli import main
from irscope.errors import UsageError
from irscope.harness import plan
from irscope.spec import CompileOptions, Tensor
from irscope.sweep.file import load_sweep
from irscope.sweep.points import expand
from irscope.targets import get_target

DATA = Path(__file__).parent / "data" / "tuned_kernels.py"


def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = StringIO(), StringIO()
    code = main(list(argv), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def _meta(folder: Path) -> dict:
    return json.loads((folder / "irscope.json").read_text())


def test_an_autotuned_kernel_is_found_and_its_configs_are_its_menu():
    spec = library.load_kernel(f"{DATA}:tuned")
    assert spec.tuning.wrappers == ("autotune",) and spec.tuning.key == ("n",)
    assert [c.name for c in spec.configs] == ["BLOCK128_w4_s3", "BLOCK256_w2_s2_r128"]
    second = spec.configs[1]
    assert (dict(second.constexprs), second.num_warps, second.num_stages) == ({"BLOCK": 256}, 2, 2)
    assert dict(second.options) == {"num_ctas": 1, "maxnreg": 128}
    assert "pre_hook" in second.note and not spec.configs[0].note


def test_every_config_compiles_with_its_constexprs_warps_stages_and_options(tmp_path):
    code, out, err = _cli("compile", f"{DATA}:tuned", "--target", "sm_80", "--config", "all", "--out", str(tmp_path),
                          "--arg", "x_ptr=*fp32", "--arg", "out_ptr=*fp32", "--arg", "n=4096")
    assert code == 0, err
    spec = library.load_kernel(f"{DATA}:tuned")
    for cfg in spec.configs:
        folders = list((tmp_path / "tuned").glob(f"{cfg.name}.*/sm_80"))
        assert len(folders) == 1, folders
        meta = _meta(folders[0])
        co = meta["compile_options"]
        assert co["constexprs"]["BLOCK"] == cfg.constexprs["BLOCK"]
        assert (co["num_warps"], co["num_stages"]) == (cfg.num_warps, cfg.num_stages)
        assert meta["backend_options"]["maxnreg"] == cfg.options.get("maxnreg")
        assert "heuristics" not in co


def test_heuristics_are_computed_from_the_typical_launch_and_recorded(tmp_path):
    code, out, err = _cli("compile", f"{DATA}:heuristic", "--target", "sm_80", "--out", str(tmp_path),
                          "--arg", "x_ptr=*fp16", "--arg", "n=1000")
    assert code == 0, err
    (folder,) = (tmp_path / "heuristic").glob("*/sm_80")
    co = _meta(folder)["compile_options"]
    # BLOCK = next_power_of_2(n); EVEN reads the BLOCK computed before it; HALF reads the tensor's dtype.
    assert co["heuristics"] == {"BLOCK": 1024, "EVEN": False, "HALF": True, "num_warps": 2}
    assert {k: co["constexprs"][k] for k in ("BLOCK", "EVEN", "HALF")} == {"BLOCK": 1024, "EVEN": False, "HALF": True}
    assert co["num_warps"] == 2


def _plan(ref: str, **opts):
    spec = library.load_kernel(f"{DATA}:{ref}")
    _, compile_options, _ = plan(spec, get_target("sm_80"), CompileOptions(**opts))
    return compile_options


def test_a_constexpr_given_on_the_command_line_wins_over_its_heuristic_and_is_not_recorded_as_one():
    co = _plan("heuristic", args=(("x_ptr", Tensor("fp32")), ("n", 1000)), constexprs=(("BLOCK", 256),))
    assert co["constexprs"]["BLOCK"] == 256 and "BLOCK" not in co["heuristics"]
    assert co["heuristics"] == {"EVEN": False, "HALF": False, "num_warps": 2}  # 1000 % 256, an fp32 tensor


def test_a_heuristic_below_autotune_sees_the_chosen_config(tmp_path):
    code, out, err = _cli("compile", f"{DATA}:tuned_then_heuristic", "--target", "sm_80", "--config", "all",
                          "--out", str(tmp_path), "--arg", "x_ptr=*fp32", "--arg", "n=192")
    assert code == 0, err
    found = {}
    for folder in (tmp_path / "tuned_then_heuristic").glob("*/sm_80"):
        co = _meta(folder)["compile_options"]
        found[folder.parent.name.split(".")[0]] = (co["constexprs"]["BLOCK"], co["num_warps"], co["heuristics"])
    # 192 % 64 == 192 % 96 == 0; WIDE reads the config's num_warps.
    assert found == {"BLOCK64_w1_s3": (64, 1, {"EVEN": True, "WIDE": False}),
                     "BLOCK96_w2_s3": (96, 2, {"EVEN": True, "WIDE": True})}


def test_a_heuristic_above_autotune_runs_before_a_config_is_chosen():
    spec = library.load_kernel(f"{DATA}:heuristic_then_tuned")
    assert spec.tuning.wrappers == ("heuristics", "autotune")
    co = _plan("heuristic_then_tuned", config="BLOCK64_w1_s3", args=(("x_ptr", Tensor("fp32")), ("n", 5000)))
    assert co["heuristics"] == {"STEP": 4, "SAW_BLOCK": False}
    assert co["constexprs"]["BLOCK"] == 64


def test_a_heuristic_reading_what_a_typical_launch_lacks_is_a_one_line_usage_error():
    code, out, err = _cli("compile", f"{DATA}:reads_shape", "--target", "sm_80", "--arg", "x_ptr=*fp32",
                          "--out", "/nonexistent-never-written")
    assert code == 2
    assert "heuristic 'BIG' of reads_shape reads x_ptr.shape" in err
    assert "--constexpr BIG=VALUE" in err and "Traceback" not in err


def test_a_heuristic_above_autotune_reading_a_config_value_says_the_config_is_chosen_later():
    with pytest.raises(UsageError, match=r"reads args\['BLOCK'\].*chosen after"):
        _plan("heuristic_reads_config", args=(("x_ptr", Tensor("fp32")),))


def test_setting_the_value_yourself_gets_past_a_heuristic_that_cannot_run():
    co = _plan("reads_shape", args=(("x_ptr", Tensor("fp32")),), constexprs=(("BIG", True),))
    assert co["constexprs"]["BIG"] is True and co["heuristics"] == {}


def test_kernels_json_lists_the_configs_and_marks_those_early_config_prune_drops():
    code, out, err = _cli("kernels", f"{DATA}:pruned", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert [c["name"] for c in data["configs"]] == ["BLOCK32_w1_s3", "BLOCK64_w1_s3", "BLOCK128_w1_s3",
                                                    "BLOCK256_w1_s3"]
    assert [c.get("pruned") for c in data["configs"]] == [None, None, "early_config_prune", "early_config_prune"]
    prune = data["tuning"]["prune"]
    assert prune["early_config_prune"] == "_fits" and prune["kept"] == ["BLOCK32_w1_s3", "BLOCK64_w1_s3"]
    code, out, err = _cli("kernels", f"{DATA}:pruned")
    assert "PRUNED by early_config_prune" in out and "reported, not applied" in out


def test_a_perf_model_that_needs_a_gpu_is_reported_and_marks_nothing():
    code, out, err = _cli("kernels", f"{DATA}:pruned", "--json", "--arg", "n=1000")
    assert code == 0, err
    prune = json.loads(out)["tuning"]["prune"]
    assert prune["pruned"] == {}
    assert any("perf_model needs a GPU" in n and "no CUDA device" in n for n in prune["notes"])


def test_config_names_come_from_the_values_so_reordering_keeps_them():
    a = triton.Config({"BLOCK_M": 128, "BLOCK_N": 64}, num_warps=4, num_stages=3)
    b = triton.Config({"BLOCK_M": 64, "BLOCK_N": 64}, num_warps=8, num_stages=2, num_ctas=2, maxnreg=96)
    assert autotune.config_names([a, b]) == ("BLOCK_M128_BLOCK_N64_w4_s3", "BLOCK_M64_BLOCK_N64_w8_s2_c2_r96")
    assert autotune.config_names([b, a]) == tuple(reversed(autotune.config_names([a, b])))
    assert autotune.config_names([a, a]) == ("BLOCK_M128_BLOCK_N64_w4_s3", "BLOCK_M128_BLOCK_N64_w4_s3_2")


def test_a_sweep_with_config_all_covers_the_autotune_space(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(f"kernels:\n  - kernel: {DATA}:pruned\n    config: all\ntargets: [sm_80]\n")
    points = expand(load_sweep(path))
    assert [p.options.config for p in points] == [c.name for c in library.load_kernel(f"{DATA}:pruned").configs]


def test_a_perf_model_that_runs_without_a_gpu_marks_all_but_its_top_k():
    code, out, err = _cli("kernels", f"{DATA}:modelled", "--json")
    assert code == 0, err
    prune = json.loads(out)["tuning"]["prune"]
    assert prune["kept"] == ["BLOCK32_w1_s3", "BLOCK32_w2_s3"]  # top_k=0.5 of 4, smallest BLOCK + num_warps
    assert prune["pruned"] == {"BLOCK64_w1_s3": "perf_model (top_k=0.5)", "BLOCK64_w2_s3": "perf_model (top_k=0.5)"}
