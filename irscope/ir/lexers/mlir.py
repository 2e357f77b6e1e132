"""Triton's MLIR: TTIR (and Triton's `source` stage, the TTIR before any pass) and TTGIR.

Ops of Triton's dialects (tt, ttg, ttng, amdg/amdgpu, nvgpu, nvws, proton) stand out from the upstream
dialects (arith, math, scf, cf, llvm...); debug locations (`loc(...)`, `#locN = ...`) are comments, so
they fade into the background in most styles.
"""
from __future__ import annotations

from pygments.lexer import RegexLexer, bygroups
from pygments.token import (Comment, Keyword, Name, Number, Operator, Punctuation, String, Text,
                            Whitespace)

TRITON_DIALECTS = ("tt", "ttg", "ttng", "amdg", "amdgpu", "tti", "nvgpu", "nvg", "nvws", "proton", "gluon",
                   "triton_gpu", "triton_nvidia_gpu")
UPSTREAM_DIALECTS = ("arith", "math", "scf", "cf", "func", "llvm", "nvvm", "rocdl", "ub", "gpu", "index",
                     "vector", "memref", "affine", "builtin", "tensor", "ptr", "ttx")
_TRITON = "|".join(TRITON_DIALECTS)
_UPSTREAM = "|".join(UPSTREAM_DIALECTS)


class TTIRLexer(RegexLexer):
    """Triton IR (MLIR with Triton's dialects)."""

    name = "Triton TTIR"
    aliases = ["ttir"]
    filenames = ["*.ttir"]
    url = "https://triton-lang.org"

    tokens = {
        "root": [
            (r"^#loc\d*\s*=.*?$", Comment.Preproc),
            (r"\bloc\(", Comment, "loc"),
            (r"//.*?$", Comment.Single),
            (r"\s+", Whitespace),
            (r'"(\\\\|\\"|[^"])*"', String.Double),
            (r"%[\w.$-]+(?:[:#]\d+)?", Name.Variable),
            (r"\^[\w.$-]+", Name.Label),
            (r'@(?:"(\\\\|\\"|[^"])*"|[\w.$-]+)', Name.Function),
            (r"![\w.]+", Keyword.Type),
            (r"#[\w.]+", Name.Constant),
            (rf"\b(?:{_TRITON})\.[\w.]+\b", Name.Builtin),
            (rf"\b(?:{_UPSTREAM})\.[\w.]+\b", Keyword),
            (r"\b(?:tensor|memdesc|ptr|vector|memref|index|none)\b", Keyword.Type),
            (r"\b(?:[iuf]\d+|bf16|tf32|f8E\w+|f4E\w+|f6E\w+)\b", Keyword.Type),
            (r"\b(?:module|attributes|public|private|nested|iter_args|to|step|do|tokens|mask|other|"
             r"mutable|volatile|cacheModifier|evictionPolicy)\b", Keyword.Reserved),
            (r"\b(?:true|false|unit)\b", Keyword.Constant),
            (r"0x[0-9a-fA-F]+", Number.Hex),
            (r"-?\d+\.\d*(?:[eE][+-]?\d+)?|-?\d+[eE][+-]?\d+", Number.Float),
            (r"-?\d+", Number.Integer),
            (r"([A-Za-z_][\w.]*)(\s*)(=)", bygroups(Name.Attribute, Whitespace, Operator)),
            (r"[A-Za-z_][\w.$-]*", Name),
            (r"->|=|\*|\+|-", Operator),
            (r"[{}()\[\]<>,:]", Punctuation),
            (r".", Text),
        ],
        "loc": [
            (r"\(", Comment, "#push"),
            (r"\)", Comment, "#pop"),
            (r'"(\\\\|\\"|[^"])*"', Comment),
            (r'[^()"]+', Comment),
        ],
    }


class TTGIRLexer(TTIRLexer):
    """Triton GPU IR: TTIR after layouts are assigned (`#ttg.blocked`, `#mma`, shared memory descriptors)."""

    name = "Triton TTGIR"
    aliases = ["ttgir"]
    filenames = ["*.ttgir"]
