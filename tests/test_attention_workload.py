"""The workload kernels/attention.py and kernels/attention_ws.py share (irscope/spec/attention.py): one
reference both are checked against, and the SDPA baselines both are timed against. CPU only, no compile."""
import pytest

from irscope.spec.attention import attention_inputs, attention_reference
from irscope.spec.library import load_kernel

torch = pytest.importorskip("torch")

RAGGED = {"z": 1, "h": 2, "n": 97, "d": 64}


@pytest.mark.parametrize("causal", [False, True], ids=["non-causal", "causal"])
def test_the_attention_reference_is_pytorchs_attention_in_fp32(causal):
    x = attention_inputs("fp16")(RAGGED, torch.Generator().manual_seed(0), "cpu")
    want = torch.nn.functional.scaled_dot_product_attention(*(x[k].float() for k in "qkv"), is_causal=causal)
    got = attention_reference(causal)(x, RAGGED)["o"]
    assert got.dtype == torch.float32 and got.shape == x["q"].shape
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)


def test_both_attention_kernel_files_check_against_the_same_reference_and_time_the_same_baselines():
    triton_spec, gluon_spec = load_kernel("attention.causal"), load_kernel("attention_ws.causal")
    size = dict(gluon_spec.workload.size("ragged"), h=1)
    x = gluon_spec.workload.build(size, torch.Generator().manual_seed(1), "cpu")
    assert {k: (v.dtype, v.shape) for k, v in x.items()} == \
        {k: (v.dtype, v.shape) for k, v in triton_spec.workload.build(size, torch.Generator(), "cpu").items()}
    assert torch.equal(triton_spec.workload.reference(x, size)["o"], gluon_spec.workload.reference(x, size)["o"])
    assert list(triton_spec.workload.baselines) == list(gluon_spec.workload.baselines) == ["sdpa flash", "sdpa cudnn"]
    bench = triton_spec.workload.size("bench")
    assert triton_spec.workload.flops(bench) == gluon_spec.workload.flops(bench) == 0.5 * 4 * 4 * 32 * 4096 ** 2 * 128
