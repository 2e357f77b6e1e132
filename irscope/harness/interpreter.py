"""Triton's interpreter (TRITON_INTERPRET=1), as irscope's CPU check uses it: one fix for a known bug.

Only the interpreter check's child process (irscope.gpu.runner, started with TRITON_INTERPRET=1) calls
this; it lives in the harness because it patches Triton's internals, which only the harness touches.
"""
from __future__ import annotations


def fix_interpreter_bf16_dot() -> None:
    """Make the interpreter's `tl.dot` multiply bf16 values, not their bit patterns (triton#11584).

    Triton's interpreter keeps bf16 tensors as uint16 and `create_dot` hands that storage straight to
    np.matmul, so a bf16 dot returns numbers around 1e10 (Triton 3.6 to 3.9; upstream says bf16 dot is
    not supported there yet). A GPU multiplies the bf16 values exactly and accumulates in fp32: widen
    the operands to fp32 first, which is exact. Only the interpreter's process calls this.
    """
    import numpy as np
    from triton.runtime import interpreter

    builder = interpreter.InterpreterBuilder
    if getattr(builder.create_dot, "_irscope_bf16", False):
        return
    original = builder.create_dot

    def create_dot(self, a, b, d, *args, **kwargs):
        return original(self, _widen_bf16(a, interpreter, np), _widen_bf16(b, interpreter, np), d, *args, **kwargs)

    create_dot._irscope_bf16 = True
    builder.create_dot = create_dot


def _widen_bf16(handle, interpreter, np):
    import triton.language as tl
    if handle.dtype.scalar != tl.bfloat16 or handle.data.dtype != np.uint16:
        return handle
    widened = (handle.data.astype(np.uint32) << 16).view(np.float32)
    return interpreter.TensorHandle(widened, tl.float32)
