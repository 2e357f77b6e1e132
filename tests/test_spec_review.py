"""Regression tests from the review of getting kernels in: kernel files, the FILE.py:NAME form, and
specialisation being exactly what Triton's JIT does for the same launch."""
import json
import subprocess
import sys
import textwrap

import pytest

KERNEL = '''
import triton
import triton.language as tl


@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, 1.0, mask=offs < n)
'''


def _write(folder, name, text):
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def _error(err):
    lines = [ln for ln in err.splitlines() if ln.startswith("irscope: ")]
    assert lines and lines[0].startswith("irscope: error: ") and lines[1].startswith("irscope: hint: "), err
    assert "Traceback" not in err
    return lines[0], lines[1]


@pytest.mark.parametrize("exit_call", ["sys.exit(0)", "sys.exit('bye')", "raise SystemExit(3)"])
def test_a_kernel_file_that_exits_on_import_is_a_usage_error_not_a_silent_exit(cli, tmp_path, exit_call):
    path = _write(tmp_path, "exits.py", KERNEL + f"\nimport sys\n{exit_call}\n")
    code, out, err = cli("compile", f"{path}:k", "--arg", "x_ptr=*fp32", "--arg", "n=64", "--constexpr",
                         "BLOCK=16", "--no-layouts")
    first, hint = _error(err)
    assert code == 2 and "sys.exit" in first and "__main__" in hint
    assert not (tmp_path / "irscope-snapshots").exists()


def test_what_a_kernel_file_prints_on_import_stays_out_of_the_json(tmp_path):
    path = _write(tmp_path, "chatty.py", "print('hello from the module')\n" + KERNEL)
    proc = subprocess.run([sys.executable, "-m", "irscope", "kernels", f"{path}:k", "--json"], capture_output=True,
                          text=True, cwd=tmp_path, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["function"] == "k"
    assert "hello from the module" in proc.stderr


def _specialise(ref, target="sm_90a", **options):
    from irscope.harness.specialise import specialise
    from irscope.spec.kernel import CompileOptions
    from irscope.spec.library import load_kernel
    from irscope.targets import get_target
    return specialise(load_kernel(ref), get_target(target), CompileOptions(**options))


def _jit(ref, target, **launch):
    """The JIT's own specialisation of a launch with these real values (torch CPU tensors stand for GPU
    ones: the specialiser reads only their address, dtype and, on AMD, their storage's size)."""
    from irscope.harness.specialise import _jit_kwargs, _make_backend
    from irscope.spec.library import load_kernel
    from irscope.targets import get_target
    from triton.runtime.jit import create_function_from_signature
    fn = load_kernel(ref).fn
    backend = _make_backend(get_target(target))
    kwargs = _jit_kwargs(fn)
    bound, specialization, opts = create_function_from_signature(fn.signature, fn.params, backend)(**launch, **kwargs)
    _, signature, constexprs, attrs = fn._pack_args(backend, kwargs, bound, specialization, opts)
    return signature, constexprs, attrs


def test_specialising_for_amd_leaves_real_launches_their_buffer_ops(tmp_path):
    """irscope skips HIPBackend's torch probe for its stand-ins; a real torch tensor launched later in the
    same process (the goldens fixture, then a GPU test) must still be seen as under 2 GB."""
    torch = pytest.importorskip("torch")
    from irscope.spec.kernel import Tensor
    from triton.backends.amd.compiler import HIPBackend
    path = _write(tmp_path, "k.py", KERNEL)
    HIPBackend._torch_available = None  # as in a fresh process
    irscope = _specialise(f"{path}:k", "gfx942", args=(("x_ptr", Tensor("fp32")), ("n", 4096)),
                          constexprs=(("BLOCK", 16),))
    assert ["tt.pointer_range", 32] in irscope[4][(0,)]
    assert HIPBackend.is_within_2gb(torch.empty(16))
    signature, constexprs, attrs = _jit(f"{path}:k", "gfx942", x_ptr=torch.empty(16), n=4096, BLOCK=16)
    assert ["tt.pointer_range", 32] in attrs[(0,)] and attrs == irscope[4]


KEYWORD_ONLY = '''
import triton
import triton.language as tl


@triton.jit
def k(x_ptr, *, n, BLOCK: tl.constexpr = 64):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, 1.0, mask=offs < n)
'''


@pytest.mark.parametrize("n,constexprs", [(4096, (("BLOCK", 16),)), (1, ())])
def test_keyword_only_parameters_specialise_as_the_jit_does(tmp_path, n, constexprs):
    torch = pytest.importorskip("torch")
    from irscope.spec.kernel import Tensor
    path = _write(tmp_path, "kw.py", KEYWORD_ONLY)
    _, _, signature, got_constexprs, attrs, _ = _specialise(f"{path}:k", args=(("x_ptr", Tensor("fp32")), ("n", n)),
                                                            constexprs=constexprs)
    assert (signature, got_constexprs, attrs) == _jit(f"{path}:k", "sm_90a", x_ptr=torch.empty(16), n=n,
                                                      **dict(constexprs))


def test_a_kernel_with_keyword_only_parameters_compiles(cli, tmp_path):
    path = _write(tmp_path, "kw.py", KEYWORD_ONLY)
    code, out, err = cli("compile", f"{path}:k", "--arg", "x_ptr=*fp32", "--arg", "n=4096", "--no-layouts",
                         "-t", "sm_80")
    assert code == 0, err
    assert "k/default.sig" in out and "  ok  " in out


NOT_SPECIALISED = '''
import triton
import triton.language as tl


@triton.jit(do_not_specialize_on_alignment=["n"])
def on_alignment(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, 1.0, mask=offs < n)


@triton.jit(do_not_specialize=["n"])
def not_at_all(x_ptr, n, scale, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, scale, mask=offs < n)
'''


def test_a_global_divisibility_leaves_do_not_specialize_on_alignment_arguments_alone(tmp_path):
    """docs/specialisation.md: arguments marked do_not_specialize(_on_alignment) are left alone."""
    from irscope.spec.kernel import Tensor
    path = _write(tmp_path, "dns.py", NOT_SPECIALISED)
    _, _, _, _, attrs, record = _specialise(f"{path}:on_alignment", args=(("x_ptr", Tensor("fp32")), ("n", 4096)),
                                            constexprs=(("BLOCK", 16),), divisibility=((None, 32),))
    assert attrs[(0,)] == [["tt.divisibility", 32]]  # the pointer takes the asked-for divisibility
    assert attrs[(1,)] == [] and record[1]["divisibility"] == 1  # n is not assumed divisible by 32


@pytest.mark.parametrize("kernel,name,why", [("not_at_all", "n", "do_not_specialize"),
                                             ("on_alignment", "n", "do_not_specialize_on_alignment"),
                                             ("not_at_all", "scale", "fp32")])
def test_divisibility_for_an_argument_the_jit_gives_none_is_refused_not_ignored(cli, tmp_path, kernel, name, why):
    path = _write(tmp_path, "dns.py", NOT_SPECIALISED)
    argv = ["compile", f"{path}:{kernel}", "--arg", "x_ptr=*fp32", "--arg", "n=4096", "--constexpr", "BLOCK=16",
            "--divisibility", f"{name}=16", "--no-layouts"]
    if kernel == "not_at_all":
        argv += ["--arg", "scale=0.5"]
    code, out, err = cli(*argv)
    first, _ = _error(err)
    assert code == 2 and f"--divisibility {name}=16" in first and why in first
    assert not (tmp_path / "irscope-snapshots").exists()
    argv[argv.index(f"{name}=16")] = f"{name}=1"  # what a capture asks of a misaligned argument: nothing to refuse
    code, out, err = cli(*argv)
    assert code == 0, err


@pytest.mark.parametrize("folder", ["runs:2024", "with space"])
def test_a_kernel_file_in_a_folder_with_a_colon_or_space_is_found_with_and_without_its_name(cli, tmp_path, folder):
    path = _write(tmp_path, f"{folder}/k.py", KERNEL)
    for ref in (str(path), f"{path}:k"):
        code, out, err = cli("kernels", ref, "--json")
        assert code == 0, err
        assert json.loads(out)["function"] == "k"


DEFAULTS = '''
import triton
import triton.language as tl


@triton.jit
def k(x_ptr, n, scale=2.0, flag=True, BLOCK: tl.constexpr = 128):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, scale if flag else 0.0, mask=offs < n)
'''


def test_a_parameter_left_out_takes_its_default_as_the_jits_binder_does(cli, tmp_path):
    torch = pytest.importorskip("torch")
    from irscope.spec.kernel import Tensor
    path = _write(tmp_path, "defaults.py", DEFAULTS)
    _, _, signature, constexprs, attrs, record = _specialise(f"{path}:k",
                                                             args=(("x_ptr", Tensor("fp32")), ("n", 4096)))
    assert (signature, constexprs, attrs) == _jit(f"{path}:k", "sm_90a", x_ptr=torch.empty(16), n=4096)
    assert signature["scale"] == "fp32" and signature["flag"] == "u1"
    assert [(e["name"], e["value"]) for e in record[2:4]] == [("scale", 2.0), ("flag", True)]
    code, out, err = cli("compile", f"{path}:k", "--arg", "x_ptr=*fp32", "--arg", "n=4096", "--no-layouts")
    assert code == 0, err


OPTIONAL = '''
import triton
import triton.language as tl
from irscope.spec import KernelSpec, Tensor


@triton.jit
def k(x_ptr, bias_ptr, n, ACT: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    v = tl.load(x_ptr + offs, mask=offs < n)
    if bias_ptr is not None:
        v += tl.load(bias_ptr + offs, mask=offs < n)
    if ACT is not None:
        v = v * 3
    tl.store(x_ptr + offs, v, mask=offs < n)


SPEC = KernelSpec(name="k", fn=k, args={"x_ptr": Tensor("fp32"), "bias_ptr": None, "n": 4096},
                  constexprs={"ACT": "double", "BLOCK": 64})
'''


def test_none_on_the_command_line_is_none_as_a_launch_passes_it(cli, tmp_path):
    torch = pytest.importorskip("torch")
    from irscope.spec.kernel import CompileOptions, Tensor, parse_value
    assert parse_value("None") is None and parse_value("none") == "none"
    path = _write(tmp_path, "optional.py", OPTIONAL)
    _, _, signature, constexprs, attrs, record = _specialise(
        f"{path}:k", args=(("bias_ptr", parse_value("None")),), constexprs=(("ACT", parse_value("None")),))
    assert (signature, constexprs, attrs) == _jit(f"{path}:k", "sm_90a", x_ptr=torch.empty(16), bias_ptr=None,
                                                  n=4096, ACT=None, BLOCK=64)
    assert "None" in record[1]["why"] and "equal to 1" not in record[1]["why"]
    code, out, err = cli("compile", str(path), "--constexpr", "ACT=None", "--no-layouts")
    assert code == 0, err
    ttir = next((tmp_path / "irscope-snapshots/k/default.ACT=None/sm_90a").glob("*.ttir")).read_text()
    assert "arith.mulf" not in ttir  # `ACT is not None` was false, as under the JIT (the word "None" made it true)
    # a typical value of None says nothing of the kind: a tensor may take its place
    code, out, err = cli("compile", str(path), "--arg", "bias_ptr=*fp32", "--no-layouts")
    assert code == 0, err
    # and a request that recorded None reads back as None
    assert dict(CompileOptions.from_dict(CompileOptions(constexprs=(("ACT", None),)).to_dict()).constexprs) == \
        {"ACT": None}


@pytest.mark.parametrize("argv,message,hint", [
    (["--arg", "n=99999999999999999999999"], "too large", "--arg"),  # past 64 bits: Triton's OverflowError
    (["--arg", "n=4096", "--arg", "BLOCK=64"], "no argument 'BLOCK'", "--constexpr BLOCK=VALUE"),
    (["--arg", "n=4096", "--constexpr", "n=64"], "no constexpr 'n'", "--arg n=VALUE"),
])
def test_launch_values_of_the_wrong_size_or_kind_are_usage_errors(cli, tmp_path, argv, message, hint):
    path = _write(tmp_path, "k.py", KERNEL)
    code, out, err = cli("compile", f"{path}:k", "--arg", "x_ptr=*fp32", "--constexpr", "BLOCK=16", *argv)
    first, second = _error(err)
    assert code == 2 and message in first and hint in second


CONST = '''
import triton
import triton.language as tl


@triton.jit
def k(x_ptr, y_ptr: tl.const, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(y_ptr + offs))
'''


def test_read_only_pointers_come_from_the_annotation_as_in_the_jit_not_from_star_k(tmp_path):
    """docs/kernel-spec.md: `*kfp16` compiles as `*fp16`; the `*k` comes from a `tl.const` annotation."""
    torch = pytest.importorskip("torch")
    from irscope.spec.kernel import parse_value
    path = _write(tmp_path, "const.py", CONST)
    _, _, signature, constexprs, attrs, _ = _specialise(
        f"{path}:k", args=(("x_ptr", parse_value("*kfp32")), ("y_ptr", parse_value("*fp32"))),
        constexprs=(("BLOCK", 16),))
    assert signature["x_ptr"] == "*fp32" and signature["y_ptr"] == "*kfp32"
    assert (signature, constexprs, attrs) == _jit(f"{path}:k", "sm_90a", x_ptr=torch.empty(16),
                                                  y_ptr=torch.empty(16), BLOCK=16)


def test_kernels_json_says_which_parameters_are_descriptors_and_which_it_cannot_know(cli, tmp_path):
    code, out, err = cli("kernels", "attention_ws", "--json")
    assert code == 0, err
    kinds = {p["name"]: p["kind"] for p in json.loads(out)["parameters"]}
    assert kinds["q_desc"] == "descriptor" and kinds["sm_scale"] == "scalar"  # a descriptor was called a scalar
    path = _write(tmp_path, "k.py", KERNEL)
    code, out, err = cli("kernels", f"{path}:k", "--json", "--arg", "n=4096")
    assert code == 0, err
    kinds = {p["name"]: p["kind"] for p in json.loads(out)["parameters"]}
    # without a spec, a pointer is not known to be one: it was called a scalar
    assert kinds == {"x_ptr": "unknown", "n": "scalar", "BLOCK": "constexpr"}


@pytest.mark.parametrize("arg, why", [
    ("q_desc=desc:fp16[128,4096,100]/[1,64,64]", "strides [409600, 100, 1] of fp16"),  # a row of 200 B
    ("q_desc=desc:fp16[128,4096,128]/[1,64,64]/strides[524288,128,2]", "strides [524288, 128, 2] of fp16"),
])
def test_a_descriptor_no_launch_could_make_is_refused(cli, tmp_path, arg, why):
    # It compiled: TensorDescriptor asserts a 16-byte-aligned row and a contiguous last dimension when a
    # program makes one, so no launch could have had it.
    code, out, err = cli("compile", "attention_ws", "--target", "sm_100a", "--arg", arg, "--out", "o")
    assert code == 2, err
    assert why in _error(err)[0] and "multiple of 16 B" in _error(err)[0]
    assert "irscope: hint: give a contiguous last dimension and rows of a multiple of 8 fp16 elements" in err
    assert not (tmp_path / "o").exists()
