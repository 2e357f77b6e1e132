import pytest

from irscope.errors import UsageError
from irscope.spec import (CompileOptions, Config, KernelSpec, Tensor, parse_assignment, parse_divisibility,
                          parse_value, variant_name)


def test_values_from_the_command_line_are_typed():
    assert parse_value("128") == 128
    assert parse_value("0.5") == 0.5
    assert parse_value("true") is True
    assert parse_value("*fp16") == Tensor("fp16")
    assert parse_value("*kbf16") == Tensor("bf16", const=True)
    assert parse_value("ieee") == "ieee"


def test_unknown_tensor_dtype_is_a_usage_error():
    with pytest.raises(UsageError, match="unknown tensor dtype"):
        parse_value("*float16")


@pytest.mark.parametrize("bad", ["BLOCK", "=3", "BLOCK=", "1X=3"])
def test_malformed_assignments_are_rejected_with_an_example(bad):
    with pytest.raises(UsageError) as e:
        parse_assignment(bad, "constexpr")
    assert "NAME=VALUE" in e.value.hint


def test_divisibility_takes_powers_of_two_globally_or_per_argument():
    assert parse_divisibility(["16", "x_ptr=4"]) == ((None, 16), ("x_ptr", 4))
    for bad in ("3", "0", "x=6", "x-y=4", "sixteen"):
        with pytest.raises(UsageError):
            parse_divisibility([bad])


def _spec():
    return KernelSpec(name="k", fn=None, args={}, configs=(Config("default"), Config("big")))


def test_variant_names_say_what_changed():
    spec = _spec()
    assert variant_name(spec, CompileOptions()) == "default"
    assert variant_name(spec, CompileOptions(config="big", num_warps=2)) == "big.w2"
    opts = CompileOptions(num_stages=4, divisibility=((None, 1),), constexprs=(("BLOCK_K", 32),), line_info=False)
    assert variant_name(spec, opts) == "default.s4.div1.BLOCK_K=32.noline"
    assert variant_name(spec, CompileOptions(name="mine")) == "mine"


def test_unknown_config_names_the_menu():
    with pytest.raises(UsageError) as e:
        _spec().config("bigg")
    assert "did you mean big" in e.value.hint


def test_a_spec_less_kernels_signature_is_hashed_into_the_variant_name():
    bare = KernelSpec(name="k", fn=None, args={})
    a = variant_name(bare, CompileOptions(args=(("x_ptr", Tensor("fp32")), ("n", 4096))))
    b = variant_name(bare, CompileOptions(args=(("x_ptr", Tensor("fp16")), ("n", 4096))))
    assert a.startswith("default.sig") and a != b and len(a) == len("default.sig") + 6
    declared = KernelSpec(name="k", fn=None, args={"n": 4096})
    assert variant_name(declared, CompileOptions(args=(("n", 4004),))) == "default.arg.n=4004"
