"""Every built-in kernel, every config, checked against its torch reference in Triton's interpreter.

The interpreter runs in one child process for the whole module (TRITON_INTERPRET=1 must be set before
Triton is imported); each (kernel, config) is then its own test, so a failure names what broke.
"""
import json
import math

import pytest

from irscope.spec import library
from irscope.gpu.runner import Request, check_many_interpreted, compare, execute
from irscope.spec.workload import Tolerance, Workload

torch = pytest.importorskip("torch")

SPECS = library.builtin_specs()
# Triton's interpreter does not run Gluon kernels (attention_ws): their checks run on a GPU (docs/gpu.md).
INTERPRETED = [s for s in SPECS if not s.fn.is_gluon()]
POINTS = [(s.name, c.name) for s in INTERPRETED for c in s.configs]


@pytest.fixture(scope="module")
def interpreted():
    """(kernel, config) -> [RunResult per CI size], all from one interpreter process."""
    requests = [Request(s.name, c.name, size, seed=7) for s in INTERPRETED for c in s.configs
                for size in s.workload.check_sizes]
    results = check_many_interpreted(requests)
    out = {}
    for req, res in zip(requests, results):
        out.setdefault((req.kernel, req.config), []).append(res)
    return out


@pytest.mark.slow
@pytest.mark.parametrize("kernel,config", POINTS, ids=[f"{k}-{c}" for k, c in POINTS])
def test_kernel_matches_its_torch_reference_in_the_interpreter(interpreted, kernel, config):
    results = interpreted[(kernel, config)]
    assert results
    for r in results:
        detail = [(o.name, o.max_abs, o.mismatches, o.nans) for o in r.outputs]
        assert r.ok, f"{kernel} {config} {r.size_name}: {r.error or detail}"
        assert r.mode == "interpret" and r.launches


def test_every_spec_has_a_workload_with_ragged_ci_sizes_and_costs():
    for spec in SPECS:
        w = spec.workload
        assert isinstance(w, Workload), spec.name
        assert "ragged" in w.check_sizes and set(w.check_sizes) <= set(w.sizes), spec.name
        assert w.bench_size in w.sizes, spec.name
        bench = w.size(w.bench_size)
        assert w.flops(bench) > 0 and w.bytes(bench) > 0, spec.name
        assert w.baselines, f"{spec.name} has nothing to time against"


def test_ragged_sizes_are_not_multiples_of_the_blocks():
    # "ragged" must leave a partial block somewhere, or the masks are never exercised.
    for spec in SPECS:
        ragged = spec.workload.size("ragged")
        blocks = [v for c in spec.configs for k, v in {**spec.constexprs, **c.constexprs}.items()
                  if k.startswith(("BLOCK", "TILE")) and isinstance(v, int)]
        assert any(dim % b for dim in ragged.values() for b in blocks) or not blocks, spec.name


def test_inputs_are_fresh_random_data_never_zeros():
    for spec in SPECS:
        w = spec.workload
        size = w.size("small")
        a = w.build(size, torch.Generator().manual_seed(1), "cpu")
        b = w.build(size, torch.Generator().manual_seed(2), "cpu")
        for name, t in a.items():
            if name in w.outputs or not isinstance(t, torch.Tensor) or name == "w":  # w: the blur's fixed weights
                continue
            assert t.float().abs().sum() > 0 and t.float().std() > 0, (spec.name, name)
            assert not torch.equal(t, b[name]), f"{spec.name}: input {name} does not depend on the seed"


def test_the_comparison_catches_one_corrupted_element():
    want = torch.randn(64, 32)
    got = want.clone().half()
    ok = compare("c", got, want)
    assert ok.ok and ok.max_abs < 1e-2
    got[17, 3] += 0.5
    bad = compare("c", got, want)
    assert not bad.ok and bad.mismatches == 1 and bad.worst_index == (17, 3)
    assert math.isclose(bad.max_abs, 0.5, rel_tol=0.05)


def test_the_comparison_catches_a_nan_left_by_the_poison():
    want = torch.randn(100)
    got = want.clone()
    got[99] = float("nan")
    r = compare("out", got, want)
    assert not r.ok and r.nans == 1 and r.mismatches == 1 and r.worst_index == (99,)


def test_tolerances_are_per_dtype():
    want = torch.ones(8)
    got = want + 5e-3  # inside fp16's tolerance, far outside fp32's
    assert compare("x", got.half(), want).ok
    assert not compare("x", got, want).ok
    assert compare("x", got, want, {"fp32": Tolerance(1e-2, 0.0)}).ok


def test_a_launch_that_writes_nothing_leaves_nan_and_fails():
    # Outputs are poisoned before the launch: skipping the kernel must fail every output, not pass on zeros.
    result = execute(Request("matmul", size="ragged"), "cpu", run=lambda call: None)
    assert not result.ok
    (c,) = result.outputs
    assert c.nans == 100 * 200 and c.mismatches == 100 * 200


def test_the_separable_blur_launches_its_three_kernels_with_the_chosen_config():
    calls = []
    execute(Request("blur.row", config="h4w256", size="ragged"), "cpu", run=calls.append)
    assert [c.kernel for c in calls] == ["blur.gray", "blur.row", "blur.col"]
    assert calls[1].constexprs["BLOCK_W"] == 256 and calls[2].constexprs["BLOCK_W"] == 64
    assert calls[1].grid == (1, 5)  # 37 wide in one 256-wide block, 19 rows in blocks of 4


def test_size_derived_constexprs_are_in_the_call():
    calls = []
    execute(Request("softmax", size="ragged"), "cpu", run=calls.append)
    assert calls[0].constexprs["BLOCK_SIZE"] == 1024  # 781 columns, rounded up to a power of two
    calls = []
    execute(Request("attention", size="ragged.d128"), "cpu", run=calls.append)
    assert calls[0].constexprs["HEAD_DIM"] == 128 and calls[0].grid == (1, 1)


def test_kernels_checks_arg_and_constexpr_as_compile_does_and_json_shows_them(cli):
    # `kernels add --arg n=17` listed n=17 in add's typical launch (add has no n), and --json left every
    # --arg out of its `launch`.
    code, out, err = cli("kernels", "add", "--arg", "n=17")
    assert code == 2 and out == ""
    assert "irscope: error: add_kernel has no argument 'n'" in err
    code, _, err = cli("kernels", "add", "--constexpr", "BLOCK_SIZE=abc")
    assert code == 2 and "BLOCK_SIZE" in err
    code, _, err = cli("kernels", "--arg", "n_elements=1")
    assert code == 2 and "need a KERNEL" in err
    code, out, err = cli("kernels", "add", "--arg", "n_elements=17", "--json")
    assert code == 0, err
    assert json.loads(out)["launch"]["n_elements"] == 17


def test_a_parameter_with_a_default_is_a_scalar_in_kernels_json(cli, tmp_path):
    # `scale=2.0` with no annotation and no typical value was kind "unknown", although its default says.
    (tmp_path / "k.py").write_text("import triton\nimport triton.language as tl\n\n\n@triton.jit\n"
                                   "def k(x_ptr: '*fp32', n, scale=2.0, BLOCK: tl.constexpr = 64):\n"
                                   "    tl.store(x_ptr + tl.arange(0, BLOCK), scale)\n")
    code, out, err = cli("kernels", "k.py:k", "--json")
    assert code == 0, err
    kinds = {p["name"]: p["kind"] for p in json.loads(out)["parameters"]}
    assert kinds == {"x_ptr": "tensor", "n": "unknown", "scale": "scalar", "BLOCK": "constexpr"}
