"""irscope rank, reviewed as a user runs it: the exported configs in a real @triton.autotune, hostile input
(docs/rank.md)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# A user's own autotuned add kernel, run by Triton's interpreter: the emitted early_config_prune picks from
# its list, and the autotuner times (here: runs once) only what it keeps.
AUTOTUNED_ADD = textwrap.dedent('''
    import json, sys
    import torch, triton, triton.language as tl
    sys.path.insert(0, ".")
    from {module} import early_config_prune

    kept = []

    def prune(configs, named_args, **kwargs):
        out = early_config_prune(configs, named_args, **kwargs)
        kept.extend((c.kwargs["BLOCK_SIZE"], c.num_warps, c.maxnreg) for c in out)
        return out

    CONFIGS = [triton.Config({{"BLOCK_SIZE": 1024}}, num_warps=4, maxnreg=r) for r in (32, 64, None)] + \\
        [triton.Config({{"BLOCK_SIZE": 4096}}, num_warps=8)]

    @triton.autotune(configs=CONFIGS, key=["n"], prune_configs_by={{"early_config_prune": prune}},
                     do_bench=lambda fn, quantiles=None: (fn(), [1.0, 1.0, 1.0])[1])
    @triton.jit
    def add(x_ptr, y_ptr, out_ptr, n, BLOCK_SIZE: tl.constexpr):
        offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + tl.load(y_ptr + offs, mask=offs < n),
                 mask=offs < n)

    x = torch.ones(4096)
    out = torch.empty(4096)
    add[lambda m: (triton.cdiv(4096, m["BLOCK_SIZE"]),)](x, x, out, 4096)
    assert bool((out == 2).all())
    print(json.dumps(kept))
''')


def _autotuned_keeps(folder: Path, module: str) -> list:
    (folder / "user_add.py").write_text(AUTOTUNED_ADD.format(module=module))
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    done = subprocess.run([sys.executable, "user_add.py"], cwd=folder, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    return [tuple(k) for k in json.loads(done.stdout.strip().splitlines()[-1])]


def test_emitted_configs_keep_the_register_cap_the_ranked_configs_were_compiled_with(tmp_path, cli):
    # A space over option.maxnreg wrote one config without its maxnreg ('wrote 1 config ... (the top 2)'), so
    # CONFIGS ran the default cap and early_config_prune kept every cap of the user's list.
    (tmp_path / "regs.yaml").write_text("name: regs\nkernels: [add]\ntargets: [sm_90a]\ngrid:\n"
                                        "  option.maxnreg: [32, 64]\n")
    code, stdout, err = cli("rank", "regs.yaml", "--gpu", "h200", "--out", "snaps", "--top", "2",
                            "--emit-configs", "ranked.py")
    assert code == 0, err
    assert "wrote 2 configs to ranked.py (the top 2)" in err
    kept = _autotuned_keeps(tmp_path, "ranked")
    assert sorted(kept, key=str) == [(1024, 4, 32), (1024, 4, 64)]


def test_emit_configs_onto_a_pipe_or_a_link_is_refused_at_once_and_kept(tmp_path):
    # A named pipe at the path hung the check for a module irscope wrote (it waited for a writer).
    from irscope.rank.export import is_emitted
    os.mkfifo(tmp_path / "pipe.py")
    (tmp_path / "mine.py").write_text("x = 1\n")
    os.symlink(tmp_path / "mine.py", tmp_path / "link.py")
    for name in ("pipe.py", "link.py"):
        done = subprocess.run([sys.executable, "-m", "irscope", "rank", "add", "--target", "sm_90a", "--out",
                               str(tmp_path / "snaps"), "--emit-configs", str(tmp_path / name)],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 2 and "is not a regular file" in done.stderr and "Traceback" not in done.stderr
    assert (tmp_path / "link.py").is_symlink() and (tmp_path / "mine.py").read_text() == "x = 1\n"
    assert not (tmp_path / "snaps").exists()  # refused before anything compiled
    assert not is_emitted(tmp_path / "pipe.py")  # (and the core's own check does not wait either)


def test_a_target_without_a_chip_table_points_to_the_targets_irscope_models(cli):
    # The hint said 'pass --gpu with one of: a100, h100, ...', and every one of them is refused for sm_89.
    code, _, err = cli("rank", "add", "--target", "sm_89", "--out", "snaps")
    assert code == 2 and "no chip table for target sm_89" in err and "Traceback" not in err
    assert "--target sm_90a (--gpu h100 or h200)" in err and "pass --gpu" not in err


def _strict_json(text: str):
    def refuse(name):
        raise AssertionError(f"{name} is not JSON")
    return json.loads(text, parse_constant=refuse)


def test_measured_json_stays_json_when_the_recorded_times_overflow_a_slowdown_and_its_keys_are_documented(cli):
    # Two recorded times within the runs.json schema (positive, finite) made the predicted #1's slowdown
    # infinite, and --json printed `Infinity`, which no JSON reader takes.
    from irscope.store import results
    from irscope.store.snapshot import load_snapshot
    code, stdout, err = cli("rank", "add", "--target", "sm_90a", "--out", "snaps", "--json")
    assert code == 0, err
    first = _strict_json(stdout)["sizes"][0]["ranking"][0]["facts"]["label"]  # the predicted #1: slow on the GPU
    for folder in Path("snaps").rglob("irscope.json"):
        label = load_snapshot(folder.parent).label
        results.append(folder.parent, "runs.json", {
            "source": "snapshot", "ok": True, "size_name": "bench", "size": {"n": 1 << 27},
            "gpu": {"device": "NVIDIA H100 80GB HBM3"}, "bench": {"kernel": {"ms": 1e300 if label == first else 1e-300}}})
    code, stdout, err = cli("rank", "add", "--target", "sm_90a", "--out", "snaps", "--measured", "--json")
    assert code == 0, err
    report = _strict_json(stdout)
    ev = report["sizes"][0]["measured"]["evaluation"]
    assert ev["best"] != first and ev["top1_slowdown"] is None
    # every key of the report is named in docs/rank.md (a Facts' own fields are facts.py's; maps keyed by
    # label, size or demand are values, not keys)
    doc = (ROOT / "docs" / "rank.md").read_text()
    values = {"facts", "size", "terms_us", "sources", "times_ms", "errors"}

    def keys(obj):
        if isinstance(obj, dict):
            for k, v in obj.items():
                yield k
                if k not in values:
                    yield from keys(v)
        elif isinstance(obj, list):
            for v in obj:
                yield from keys(v)
    missing = sorted({k for k in keys(report) if f"`{k}`" not in doc})
    assert not missing, f"--json keys not named in docs/rank.md: {missing}"


def test_an_emitted_modules_description_cannot_close_its_docstring(tmp_path):
    # The description (kernel and size names, a captured launch's argument names among them) was written
    # into the docstring as it was: three quotes in it ended the docstring, and the rest ran on import.
    import importlib.util
    from irscope.rank.export import write_module
    what = 'k at x"""\nPWNED = 1\n"""=4 \\\\'
    write_module(tmp_path / "ranked.py", [{"kwargs": {"BLOCK": 64}, "num_warps": 4, "num_stages": 3,
                                           "num_ctas": 1, "maxnreg": None}], what)
    spec = importlib.util.spec_from_file_location("ranked_review", tmp_path / "ranked.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert not hasattr(mod, "PWNED") and len(mod.CONFIGS) == 1


def test_a_config_whose_compile_failed_is_not_ranked_as_one_that_cannot_launch(tmp_path, cli):
    """matmul at maxnreg=64 fails in ptxas and keeps its folder: it was ranked last as 'cannot launch: did not
    compile' and counted among the configs that cannot launch (so --measured scored it as the model's call).
    It is listed as not compiled, in the table's note and in --json's `not_compiled`, and not ranked."""
    sweep = tmp_path / "m.yaml"
    sweep.write_text("kernels: [matmul]\ntargets: [sm_90a]\ngrid:\n  option.maxnreg: [64, 255]\n")
    code, out, err = cli("rank", sweep, "--target", "sm_90a", "--out", tmp_path / "o")
    assert code == 0, err
    assert "cannot launch" not in out and "default.maxnreg=64" not in out.split("\n1 config(s) did not")[0], out
    assert "1 config(s) did not compile and are not ranked: default.maxnreg=64: failed at cubin" in out, out
    code, out, err = cli("rank", sweep, "--target", "sm_90a", "--out", tmp_path / "o", "--json")
    report = json.loads(out)
    assert [r["facts"]["label"] for r in report["sizes"][0]["ranking"]] == ["matmul/default.maxnreg=255/sm_90a"]
    assert [(c["label"], c["status"]) for c in report["not_compiled"]] == [("matmul/default.maxnreg=64/sm_90a",
                                                                             "failed")]


CALL_BLOCK = textwrap.dedent('''
    import json, sys, warnings
    import torch, triton, triton.language as tl
    sys.path.insert(0, ".")
    from ranked import early_config_prune

    kept = []

    def prune(configs, named_args, **kwargs):
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            out = early_config_prune(configs, named_args, **kwargs)
        kept.extend([c.num_warps for c in out] + [str(w.message) for w in said])
        return out

    # BLOCK_SIZE is the call's, not the configs': the ranking has it, the user's configs do not
    CONFIGS = [triton.Config({}, num_warps=w) for w in (2, 4, 8)]

    @triton.autotune(configs=CONFIGS, key=["n"], prune_configs_by={"early_config_prune": prune},
                     do_bench=lambda fn, quantiles=None: (fn(), [1.0, 1.0, 1.0])[1])
    @triton.jit
    def add(x_ptr, y_ptr, out_ptr, n, BLOCK_SIZE: tl.constexpr):
        offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + tl.load(y_ptr + offs, mask=offs < n),
                 mask=offs < n)

    x = torch.ones(4096)
    out = torch.empty(4096)
    add[(4,)](x, x, out, 4096, BLOCK_SIZE=int(sys.argv[1]))
    print(json.dumps(kept))
''')


def test_the_pruner_takes_a_constexpr_its_configs_do_not_set_from_the_call_and_warns_when_nothing_matches(
        tmp_path, cli):
    """The ranking varies BLOCK_SIZE; the user's configs vary only the warps and pass BLOCK_SIZE at the call.
    Nothing matched (the configs have no BLOCK_SIZE), so every config was timed, without a word. The call's
    value is used; a call whose value was never ranked keeps all, with a warning."""
    (tmp_path / "b.yaml").write_text("kernels: [add]\ntargets: [sm_90a]\ngrid:\n  BLOCK_SIZE: [1024, 2048]\n"
                                     "  num_warps: [4]\n")
    code, _, err = cli("rank", "b.yaml", "--gpu", "h200", "--out", "snaps", "--top", "2", "--emit-configs",
                       "ranked.py")
    assert code == 0, err
    (tmp_path / "user.py").write_text(CALL_BLOCK)
    env = {**os.environ, "TRITON_INTERPRET": "1"}

    def keeps(block):
        done = subprocess.run([sys.executable, "user.py", str(block)], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout.strip().splitlines()[-1])

    assert keeps(1024) == [4]
    unranked = keeps(256)
    assert unranked[:3] == [2, 4, 8] and "kept none of these 3 configs" in unranked[3], unranked


def test_a_size_that_gives_some_dimensions_names_the_others_it_took_from_the_preset(cli):
    """`--size M=512` ranked 'at M=512', taking N and K from the default preset without saying so."""
    code, out, err = cli("rank", "matmul", "--target", "sm_90a", "--size", "M=512")
    assert code == 0, err
    assert " at M=512 (M=512, N=4096, K=4096): " in out.splitlines()[0], out.splitlines()[0]
    code, out, err = cli("rank", "matmul", "--target", "sm_90a", "--size", "M=512,N=256,K=64")
    assert " at M=512,N=256,K=64: " in out.splitlines()[0]


def test_the_pruner_takes_a_numpy_scalar_at_the_call_as_its_number(tmp_path, cli):
    """A ranked constexpr passed at the call as a NumPy integer made the pruner's json.dumps raise TypeError
    inside the user's autotuner."""
    import importlib.util

    import numpy as np
    import triton
    (tmp_path / "b.yaml").write_text("kernels: [add]\ntargets: [sm_90a]\ngrid:\n  BLOCK_SIZE: [1024, 2048]\n"
                                     "  num_warps: [4]\n")
    code, _, err = cli("rank", "b.yaml", "--gpu", "h200", "--out", "snaps", "--top", "2", "--emit-configs",
                       "ranked.py")
    assert code == 0, err
    spec = importlib.util.spec_from_file_location("ranked_np", tmp_path / "ranked.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    configs = [triton.Config({}, num_warps=w) for w in (2, 4)]
    kept = module.early_config_prune(configs, {}, BLOCK_SIZE=np.int64(1024))
    assert [c.num_warps for c in kept] == [4]
