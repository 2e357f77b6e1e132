"""Stage names in pipeline order, as Triton's `CompiledKernel.asm` names them, plus irscope's `sass`.

The one list every layer uses: the harness collects stages in this order, the store finds their files,
the analyzers, diffs and presenters show them.
"""
# `glir` is a Gluon kernel's IR before Triton's GPU passes (Triton 3.9; 3.6 keeps it only in `source`).
STAGES = ("source", "glir", "ttir", "ttgir", "llir", "ptx", "amdgcn", "cubin", "hsaco", "sass")
BINARY_STAGES = ("cubin", "hsaco")
TEXT_STAGES = tuple(s for s in STAGES if s not in BINARY_STAGES)
