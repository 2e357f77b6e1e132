import pytest

from irscope.errors import UsageError
from irscope.spec.kernel import (CompileOptions, Config, KernelSpec, Tensor, parse_assignment, parse_divisibility,
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


def test_annotations_give_the_kind_an_argument_takes():
    from irscope.spec.kernel import kind_of_annotation
    assert [kind_of_annotation(a) for a in ("*fp16", "*kbf16", "i32", "u64", "i1", "fp32", "bf16", "", "constexpr")] \
        == ["tensor", "tensor", "integer", "integer", "boolean", "number", "number", None, None]


def test_argument_values_are_checked_against_the_specs_typical_values():
    from irscope.spec.kernel import check_arg_value
    def k():
        pass
    spec = KernelSpec(name="k", fn=k, args={"x_ptr": Tensor("fp16"), "n": 4096, "scale": 0.5, "flag": True})
    for name, value in (("x_ptr", Tensor("fp32")), ("n", 4000), ("scale", 2), ("flag", False)):
        check_arg_value(spec, name, value)  # the right kind (an integer is a number) passes
    for name, value, words in (("n", Tensor("fp16"), "not a tensor"), ("x_ptr", 4096, "not an integer"),
                               ("n", 4000.5, "not a number"), ("scale", "abc", "not a word"),
                               ("flag", 1, "not an integer")):
        with pytest.raises(UsageError) as e:
            check_arg_value(spec, name, value)
        assert e.value.message.startswith(f"--arg {name}=") and words in e.value.message


def test_backend_options_are_checked_against_tritons_fields():
    from irscope.spec.kernel import OptionField, check_backend_option
    fields = {"maxnreg": OptionField("maxnreg", "integer"), "enable_fp_fusion": OptionField("enable_fp_fusion",
              "boolean", True), "supported_fp8_dtypes": OptionField("supported_fp8_dtypes", "list", ())}
    check_backend_option("maxnreg", 128, fields, "sm_90a")
    check_backend_option("enable_fp_fusion", False, fields, "sm_90a")
    with pytest.raises(UsageError, match=r"^unknown backend option 'maxnrg' for sm_90a$") as e:
        check_backend_option("maxnrg", 1, fields, "sm_90a")
    assert "did you mean maxnreg?" in e.value.hint
    for name, value, words in (("maxnreg", "abc", "takes an integer"), ("enable_fp_fusion", 3, "takes a boolean"),
                               ("supported_fp8_dtypes", "fp8e5", "takes a list")):
        with pytest.raises(UsageError, match=words):
            check_backend_option(name, value, fields, "sm_90a")


def test_warps_are_powers_of_two_within_a_block_of_1024_threads():
    from irscope.spec.kernel import check_warps
    check_warps(32, warp_size=32, target="sm_90a")
    check_warps(16, warp_size=64, target="gfx942")
    for value, warp, words in ((64, 32, "at most 32 warps"), (32, 64, "at most 16 warps"), (3, 32, "power of two"),
                               (0, 32, "bad --num-warps 0")):
        with pytest.raises(UsageError, match=words):
            check_warps(value, warp_size=warp, target="t")


def test_divisibility_of_several_arguments_together():
    from irscope.spec.kernel import parse_divisibility
    assert parse_divisibility(["a_ptr,b_ptr=8", "16"]) == (("a_ptr", 8), ("b_ptr", 8), (None, 16))
    with pytest.raises(UsageError, match="bad --divisibility 'a_ptr,=8'"):
        parse_divisibility(["a_ptr,=8"])


def test_irscopes_own_refusal_while_a_kernel_file_imports_keeps_its_words_and_names_the_line(cli, tmp_path):
    """It was wrapped as "importing '...' failed: UsageError: ..." with the hint to run `python FILE.py`."""
    (tmp_path / "k.py").write_text(
        "from irscope.spec import TensorDesc\n"
        "\n"
        "D = TensorDesc('fp16', (4096, 64), (64, 64), swizzle=100)\n")
    code, out, err = cli("compile", tmp_path / "k.py", "--target", "sm_90a")
    assert code == 2
    assert f"irscope: error: {tmp_path / 'k.py'}:3: tensor descriptor" in err and "swizzle=100" in err
    assert "importing" not in err and "python FILE.py" not in err and "irscope: hint: give swizzle=0" in err
