"""Normalise stage text so that comparisons see code changes, not noise.

Removed (documented in docs/normalisation.md):
- debug locations: MLIR `loc(...)` and `#locN = ...`, LLVM `!dbg` attachments and debug metadata,
  PTX/AMDGCN `.loc`/`.file` directives, labels and sections that exist only for debug info, and
  nvdisasm's `//## File ..., line N` comments;
- absolute paths (anything left after the above is reduced to its file name);
- SASS instruction offsets (`/*0a40*/`), which shift under every inserted instruction;
- trailing whitespace and runs of blank lines.
Everything that changes what the GPU executes is kept. No Triton import.
"""
from __future__ import annotations

import re

_MLIR_LOC_DEF = re.compile(r"^#loc\d*\s*=.*$\n?", re.M)
_MLIR_LOC = re.compile(r"\s*loc\((?:[^()]|\((?:[^()]|\([^()]*\))*\))*\)")

_LL_DBG = re.compile(r",\s*!dbg\s+!\d+")
_LL_DBG_RECORD = re.compile(r"^\s*#dbg_\w+\(.*$\n?", re.M)
_LL_DEBUG_META = re.compile(r"^!\d+\s*=\s*(?:distinct\s+)?!(?:DI|\{!\"Dwarf|\{i32 \d+, !\"D)[^\n]*$\n?", re.M)
_LL_FUNC_DBG = re.compile(r"\s+!dbg\s+!\d+(?=\s*\{)")
_LL_NAMED_DBG = re.compile(r"^!llvm\.dbg\.cu\s*=.*$\n?", re.M)
_LL_SOURCE_FILENAME = re.compile(r'^source_filename\s*=.*$\n?', re.M)

_ASM_LOC = re.compile(r"^\s*\.(?:loc|file)\b.*$\n?", re.M)
_PTX_DEBUG_LABEL = re.compile(r"^\$L__(?:tmp|func_begin|func_end|info_string|debug)\w*:\s*$\n?", re.M)
_AMD_DEBUG_LABEL = re.compile(r"^\.L(?:tmp|func_begin|info_string|debug)\w*:\s*$\n?", re.M)
_SECTION_DEBUG = re.compile(r"^\s*\.section\s+\.?debug_\w*.*?(?=^\s*\.section\s+(?!\.?debug_)|^\s*\.text\b|\Z)",
                            re.M | re.S)
_PTX_DEBUG_SECTION = re.compile(r"^\s*\.section\s+\.debug_\w+\s*\{.*?^\s*\}\s*$\n?", re.M | re.S)
_CFI = re.compile(r"^\s*\.cfi_sections\b.*$\n?", re.M)
_AMD_IS_STMT = re.compile(r"^\s*;\s*:0:0\s*$\n?", re.M)

_SASS_FILE = re.compile(r"^\s*//##\s*File\s+\".*$\n?", re.M)
_SASS_OFFSET = re.compile(r"/\*[0-9a-f]{4,}\*/\s?")
_SASS_ENCODING = re.compile(r"\s*/\*\s*0x[0-9a-f]{16}\s*\*/", re.I)

_ABS_PATH = re.compile(r"(?<![\w.])/(?:[\w.+-]+/)+([\w.+-]+)")
_TRAILING = re.compile(r"[ \t]+$", re.M)
_BLANK_RUNS = re.compile(r"\n{3,}")


def normalize_mlir(text: str) -> str:
    """TTIR/TTGIR (and Triton's `source` stage): drop location attributes and #loc aliases."""
    text = _MLIR_LOC_DEF.sub("", text)
    return _MLIR_LOC.sub("", text)


def normalize_llir(text: str) -> str:
    text = _LL_DBG.sub("", text)
    text = _LL_FUNC_DBG.sub("", text)
    text = _LL_DBG_RECORD.sub("", text)
    text = _LL_DEBUG_META.sub("", text)
    text = _LL_NAMED_DBG.sub("", text)
    return _LL_SOURCE_FILENAME.sub("", text)


def normalize_ptx(text: str) -> str:
    text = _PTX_DEBUG_SECTION.sub("", text)
    text = _ASM_LOC.sub("", text)
    return _PTX_DEBUG_LABEL.sub("", text)


def normalize_amdgcn(text: str) -> str:
    text = _SECTION_DEBUG.sub("", text)
    text = _ASM_LOC.sub("", text)
    text = _CFI.sub("", text)
    text = _AMD_IS_STMT.sub("", text)
    return _AMD_DEBUG_LABEL.sub("", text)


def normalize_sass(text: str) -> str:
    text = _SASS_FILE.sub("", text)
    text = _SASS_ENCODING.sub("", text)
    return _SASS_OFFSET.sub("", text)


_BY_STAGE = {"source": normalize_mlir, "glir": normalize_mlir, "ttir": normalize_mlir, "ttgir": normalize_mlir, "llir": normalize_llir,
             "ptx": normalize_ptx, "amdgcn": normalize_amdgcn, "sass": normalize_sass}


def normalize(stage: str, text: str) -> str:
    """The comparable form of a stage's text (see the module docstring for what goes)."""
    fn = _BY_STAGE.get(stage)
    if fn is not None:
        text = fn(text)
    text = _ABS_PATH.sub(r"\1", text)
    return _BLANK_RUNS.sub("\n\n", _TRAILING.sub("", text))
