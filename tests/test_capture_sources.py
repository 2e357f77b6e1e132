"""`irscope capture` of kernels that are not plain functions of an importable module: one generated at run
time and handed a helper of another module (FlagGems' way), and one compiled outside the JIT (Inductor's
way); each is recorded with what it needs and compiles back device-less."""
from __future__ import annotations

import io
from pathlib import Path

from irscope.cli import main
from irscope.store.launches import read_launches
from irscope.targets import get_target

PROGRAMS = Path(__file__).parent / "capture_programs"


def _irscope(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def _args(launch):
    return {a["name"]: a for a in launch["args"]}


def test_a_kernel_generated_at_run_time_compiles_back_with_the_helper_it_was_handed(tmp_path, monkeypatch):
    from irscope import harness
    from irscope.harness.launches import launch_points, load_launch_kernel

    program = PROGRAMS / "generated_kernels.py"
    code, _, stderr = _irscope("capture", "--target", "sm_80", "--no-compile", "--out", str(tmp_path), "--",
                               "python", str(program))
    assert code == 0, stderr
    data = read_launches(tmp_path / "launches.json")
    (kernel,) = data["kernels"].values()
    assert "def twice_kernel(" in kernel["module_source"] and "code_cache" not in kernel["file"]
    assert kernel["globals"]["twice"] == "gen_helpers:twice"  # the module attribute is a wrapper of it
    monkeypatch.syspath_prepend(str(program.parent))  # gen_helpers importable, as an installed library is
    target = get_target("sm_80")
    (point,), skipped = launch_points(tmp_path / "launches.json", [target])
    spec, _ = load_launch_kernel(point.kernel)
    assert spec.fn.__globals__["twice"].__globals__["FACTOR"].value == 2.0  # its home module's globals
    result = harness.compile_kernel(spec, target, point.options)
    assert result.ok and skipped == []
    assert "2.000000e+00" in result.stages["ttir"]


def test_a_compile_outside_the_jit_is_recorded_from_its_signature_and_compiles_back(tmp_path):
    # Inductor's path (knobs.compilation.listener); torch 2.13 CPU's Inductor itself makes no Triton
    # kernels without a GPU (docs/capture.md, Limits), so the program calls triton.compile as it does.
    code, stdout, stderr = _irscope("capture", "--target", "sm_90a", "--out", str(tmp_path), "--", "python",
                                    str(PROGRAMS / "direct_compile.py"))
    assert code == 0, stderr
    (launch,) = read_launches(tmp_path / "launches.json")["launches"]
    assert launch["via"] == "compile" and "grid" not in launch
    args = _args(launch)
    assert args["x_ptr"]["specialised"] == "*fp32:D16" and args["BLOCK"]["value"] == 128
    assert args["n"] == {"name": "n", "kind": "int", "value": 16, "value_known": False, "specialised": "i32:D16"}
    assert launch["options"] == {"num_warps": 2, "num_stages": 3}  # options only, not the compile's metadata
    assert f"{launch['id']}/sm_90a  ok" in stderr


def test_what_the_program_set_in_its_environment_is_kept_but_not_its_credentials(tmp_path):
    program = tmp_path / "sets_env.py"
    program.write_text("import os\nos.environ['MY_LIB_VENDOR'] = 'nvidia'\nos.environ['HUB_TOKEN'] = 'hunter2'\n")
    code, _, stderr = _irscope("capture", "--no-compile", "--out", str(tmp_path), "--", "python", str(program))
    assert code == 0, stderr
    data = read_launches(tmp_path / "launches.json")
    assert data["environment"] == {"MY_LIB_VENDOR": "nvidia"}
