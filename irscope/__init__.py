"""irscope: see what Triton compiles your kernels to, for any GPU target, without a GPU."""

__version__ = "0.1.0"
