"""Scalar functions for generated_kernels.py, wrapped by a decorator the way FlagGems' `pointwise_dynamic`
wraps its own: the module attribute `twice` is the wrapper, not the jit function."""
import triton
import triton.language as tl

FACTOR = tl.constexpr(2.0)  # a global of this module that the scalar function reads


class Pointwise:
    def __init__(self, scalar_fn):
        self._scalar_fn = scalar_fn


def pointwise(fn):
    return Pointwise(fn)


@pointwise
@triton.jit
def twice(x):
    return x * FACTOR
