"""The compile harness: the only package that imports Triton (inside functions).

compiler.py specialises and compiles one kernel; batch.py compiles many in child processes (workers.py)
and hands the results to the store; runtime.py is Triton's runtime on a GPU; tools.py finds the
disassemblers in Triton's wheel. Every difference between Triton releases lives in this package.
"""
from .compiler import CompileResult, check_tools, compile_kernel, plan, specialise

__all__ = ["CompileResult", "check_tools", "compile_kernel", "plan", "specialise"]
