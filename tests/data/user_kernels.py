"""Kernels for the tests: a user's file with and without a spec, and kernels that fail in each way."""
import os
import time

import triton
import triton.language as tl

from irscope.spec import Config, KernelSpec, Tensor


@triton.jit
def scale(x_ptr, out_ptr, n, factor, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * factor, mask=mask)


@triton.jit
def copy_rows(src_ptr, dst_ptr, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    tl.store(dst_ptr + row * stride + offs, tl.load(src_ptr + row * stride + offs))


COPY_ROWS = KernelSpec(name="copy_rows", fn=copy_rows, args={"src_ptr": Tensor("fp16"), "dst_ptr": Tensor("fp16"),
                                                                 "stride": 1024},
                       configs=(Config("default", {"BLOCK": 1024}, num_warps=4),))


@triton.jit
def type_error(x_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    tl.store(x_ptr + tl.arange(0, BLOCK), x + undefined_name)  # noqa: F821 - the point of this kernel


TYPE_ERROR = KernelSpec(name="type_error", fn=type_error, args={"x_ptr": Tensor("fp32")},
                        configs=(Config("default", {"BLOCK": 128}),))


# Reached through a list so that Triton's dependency scan (which rejects plain Python functions) lets
# the constexpr functions below call them while the kernel compiles.
_ACTIONS = [os.abort, time.sleep]


@triton.constexpr_function
def _abort_compiler(n):
    _ACTIONS[0]()  # stands in for an LLVM abort: the compiling process dies with SIGABRT


@triton.constexpr_function
def _hang_compiler(n):
    _ACTIONS[1](600)
    return n


@triton.jit
def crashes(x_ptr, BLOCK: tl.constexpr):
    tl.store(x_ptr + tl.arange(0, _abort_compiler(BLOCK)), 0.0)


@triton.jit
def hangs(x_ptr, BLOCK: tl.constexpr):
    tl.store(x_ptr + tl.arange(0, _hang_compiler(BLOCK)), 0.0)


CRASHES = KernelSpec(name="crashes", fn=crashes, args={"x_ptr": Tensor("fp32")}, configs=(Config("default", {"BLOCK": 64}),))
HANGS = KernelSpec(name="hangs", fn=hangs, args={"x_ptr": Tensor("fp32")}, configs=(Config("default", {"BLOCK": 64}),))
