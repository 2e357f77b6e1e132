"""The compile harness: the only package that imports Triton (inside functions).

specialise.py specialises a kernel like the JIT would; compiler.py compiles it and collects every stage
(dumps.py: the compiler's own output and the per-pass IR); batch.py compiles many points in child
processes (workers.py) and hands each result to the store; runtime.py is Triton's runtime on a GPU;
interpreter.py fixes Triton's interpreter for the CPU check; tools.py finds the disassemblers in
Triton's wheel. Every difference between Triton releases lives in this package.
"""
from .compiler import CompileResult, compile_kernel, raise_for
from .specialise import check_tools, content_key, plan, specialise, target_option_fields, triton_version, warm_up

__all__ = ["CompileResult", "check_tools", "compile_kernel", "content_key", "plan", "raise_for", "specialise",
           "target_option_fields", "triton_version", "warm_up"]
