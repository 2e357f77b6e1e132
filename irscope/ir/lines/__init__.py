"""Which Python source line each line of a stage came from, read from the debug locations Triton keeps.

One module per IR family: mlir.py (TTIR, TTGIR, Triton's `source`), llvm.py (LLIR), asm.py (PTX and
AMDGCN, which LLVM's AsmPrinter writes alike), sass.py (nvdisasm's line comments); locs.py holds the types.
`line_map(stage, text)` gives a `LineMap`: one `SourceLoc` (or None) per line of the text. It is plain
text processing: no Triton, no Textual.
"""
from __future__ import annotations

from .asm import amdgcn_locs, ptx_locs
from .llvm import llvm_locs
from .locs import LineMap, SourceLoc, base_name, kernel_file, same_file
from .mlir import mlir_locs
from .sass import sass_locs

__all__ = ["LineMap", "SourceLoc", "base_name", "kernel_file", "line_map", "same_file"]


def line_map(stage: str, text: str) -> LineMap:
    """Parse the debug locations of a stage (Triton's stage names; `python` maps each line to itself)."""
    lines = text.splitlines()
    parser = _PARSERS.get(stage)
    if parser is None:
        return LineMap(stage, [None] * len(lines))
    return LineMap(stage, parser(lines))


_PARSERS = {"source": mlir_locs, "glir": mlir_locs, "ttir": mlir_locs, "ttgir": mlir_locs, "llir": llvm_locs,
            "ptx": ptx_locs, "amdgcn": amdgcn_locs, "sass": sass_locs}
