"""Regression tests from a review of `irscope sweep` and its cluster: each names the defect it guards."""
import textwrap

KERNEL = '''
import triton
import triton.language as tl


@triton.jit
def kern(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=m) * 2.0, mask=m)
'''

SET = """
set:
  arg.x_ptr: "*fp32"
  arg.y_ptr: "*fp32"
  arg.n: 4096
  BLOCK: 64
"""


def _write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def test_two_kernels_of_one_name_that_would_share_a_folder_are_refused_not_shown_as_each_other(cli, tmp_path):
    # Two files' `kern` land in kern/<variant>/sm_80: the run compiled that folder once, and the other
    # kernel's row showed its analysis (and every later run compiled one of them again).
    _write(tmp_path / "a" / "k.py", KERNEL)
    _write(tmp_path / "b" / "k.py", KERNEL.replace("* 2.0", "+ 100.0"))
    sweep = _write(tmp_path / "two.yaml", "kernels: [a/k.py:kern, b/k.py:kern]\ntargets: [sm_80]\nout: o\n" + SET)
    for extra in ((), ("--list",)):
        code, out, err = cli("sweep", sweep, *extra)
        assert code == 2, err
        assert "would both be written to kern/default.BLOCK=64." in err and "a/k.py:kern" in err, err
        assert "b/k.py:kern" in err and err.splitlines()[1].startswith("irscope: hint: ")
    assert not (tmp_path / "o").exists()
    # the same kernel file twice is one compile, as before
    sweep = _write(tmp_path / "one.yaml", "kernels: [a/k.py:kern, a/k.py:kern]\ntargets: [sm_80]\nout: o\n" + SET)
    code, out, err = cli("sweep", sweep, "--list")
    assert code == 0, err
