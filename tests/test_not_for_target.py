"""A kernel that uses the other vendor's operations is not for the target: said so, not called a crash.

Real compiles: a Gluon kernel with AMD's explicit buffer ops for sm_90a (Triton aborts the process on the
unregistered dialect) and one with Hopper's mbarrier for gfx942 (a pass fails to legalize it)."""
from __future__ import annotations

import textwrap

KERNELS = textwrap.dedent('''
    from triton.experimental import gluon
    from triton.experimental.gluon import language as gl
    from triton.experimental.gluon.language.amd import cdna3
    from triton.experimental.gluon.language.nvidia.hopper import mbarrier
    from irscope.spec import Config, KernelSpec, Tensor


    @gluon.jit
    def buf_copy(src, dst, BLOCK: gl.constexpr):
        layout: gl.constexpr = gl.BlockedLayout([4], [64], [gl.num_warps()], [0])
        offs = gl.program_id(0) * BLOCK + gl.arange(0, BLOCK, layout=layout)
        cdna3.buffer_store(cdna3.buffer_load(src, offs) * 2.0, dst, offs)


    @gluon.jit
    def with_barrier(x_ptr, out_ptr, BLOCK: gl.constexpr, TPW: gl.constexpr):
        bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
        mbarrier.init(bar, count=1)
        layout: gl.constexpr = gl.BlockedLayout([1], [TPW], [gl.num_warps()], [0])
        offs = gl.arange(0, BLOCK, layout=layout)
        gl.store(out_ptr + offs, gl.load(x_ptr + offs))
        mbarrier.invalidate(bar)


    BUF = KernelSpec(name="bufcopy", fn=buf_copy, args={"src": Tensor("fp32"), "dst": Tensor("fp32")},
                     configs=(Config("default", {"BLOCK": 1024}, num_warps=4),))
    BAR = KernelSpec(name="bar", fn=with_barrier, args={"x_ptr": Tensor("fp32"), "out_ptr": Tensor("fp32")},
                     configs=(Config("default", {"BLOCK": 128, "TPW": 32}, num_warps=4),
                              Config("wave64", {"BLOCK": 256, "TPW": 64}, num_warps=4)))
''')


def test_the_other_vendors_operations_make_a_compile_not_for_its_target(cli, tmp_path):
    (tmp_path / "k.py").write_text(KERNELS)
    code, out, err = cli("compile", f"{tmp_path / 'k.py'}:bufcopy", "--target", "sm_90a", "-o", tmp_path / "o")
    # it was "crashed", with a hint to rerun with --jobs 1 or raise --timeout
    assert code == 3 and "not-for-target" in out and "crashed" not in out, out + err
    assert "uses amdg.buffer_load, an AMD operation" in err and "--jobs 1" not in err
    assert "not_for=" in err and "irscope kernels" not in err  # the spec says nothing about targets
    code, out, err = cli("compile", f"{tmp_path / 'k.py'}:bar", "--config", "wave64", "--target", "gfx942", "-o",
                         tmp_path / "o")
    assert code == 3 and "uses ttng.init_barrier, an NVIDIA operation" in err, out + err
    code, out, err = cli("compile", f"{tmp_path / 'k.py'}:bar", "--target", "sm_90a", "-o", tmp_path / "o")
    assert code == 0, out + err  # its own vendor's target compiles it


def test_a_long_abort_message_is_cut_at_a_word(tmp_path):
    from irscope.harness.batch import crash_reason
    from irscope.targets import get_target
    log = tmp_path / "compile.log"
    log.write_text("LLVM ERROR: " + "word " * 200 + "\n")
    reason = crash_reason(log, get_target("sm_90a"))
    assert reason.endswith("word ...") and len(reason) < 340
