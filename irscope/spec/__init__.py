"""What irscope knows about a kernel before compiling it: `KernelSpec`, `Config`, `Tensor`, `TensorDesc`, `CompileOptions`
(kernel.py), finding kernels (library.py), and how to run one (workload.py). No Triton import.

Kernel files import their vocabulary from here: `from irscope.spec import Config, KernelSpec, Tensor`.
"""
from .kernel import DTYPES, CompileOptions, Config, KernelSpec, Tensor, TensorDesc

__all__ = ["DTYPES", "CompileOptions", "Config", "KernelSpec", "Tensor", "TensorDesc"]
