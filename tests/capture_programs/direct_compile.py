"""Compiles outside the JIT, as PyTorch Inductor does: `triton.compile(ASTSource(...))` with a signature,
constexprs and attributes of its own, for a target of its own (tests/test_capture_sources.py)."""
import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource


@triton.jit
def scale(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 3, mask=offs < n)


signature = {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"}
attrs = {(0,): [["tt.divisibility", 16]], (1,): [["tt.divisibility", 16]], (2,): [["tt.divisibility", 16]]}
compiled = triton.compile(ASTSource(scale, signature, {(3,): 128}, attrs), target=GPUTarget("cuda", 90, 32),
                          options={"num_warps": 2})
print("compiled", compiled.metadata.name, len(compiled.asm["ptx"]), "bytes of PTX")
