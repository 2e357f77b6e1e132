"""Stage names in pipeline order, as Triton's `CompiledKernel.asm` names them, plus irscope's `sass`.

The one list every layer uses: the harness collects stages in this order, the store finds their files,
the analyzers, diffs and presenters show them.
"""
STAGES = ("source", "ttir", "ttgir", "llir", "ptx", "amdgcn", "cubin", "hsaco", "sass")
BINARY_STAGES = ("cubin", "hsaco")
TEXT_STAGES = tuple(s for s in STAGES if s not in BINARY_STAGES)
