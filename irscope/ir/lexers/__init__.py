"""Pygments lexers for the stages Pygments does not know: Triton's MLIR (TTIR, TTGIR), SASS and AMDGCN.

They are registered as Pygments plugins (`[project.entry-points."pygments.lexers"]` in pyproject.toml),
so `pygmentize -l ttgir` and any other Pygments user finds them once irscope is installed.
`get_lexer(alias)` finds them without the plugin registration too (a source checkout on PYTHONPATH).
"""
from __future__ import annotations

from .amdgcn import AmdgcnLexer
from .mlir import TTGIRLexer, TTIRLexer
from .sass import SassLexer

LEXERS = (TTIRLexer, TTGIRLexer, SassLexer, AmdgcnLexer)
_BY_ALIAS = {alias: cls for cls in LEXERS for alias in cls.aliases}


def get_lexer(alias: str, **options):
    """A Pygments lexer by alias: irscope's own first, then any Pygments knows; None if there is none."""
    cls = _BY_ALIAS.get(alias)
    if cls is not None:
        return cls(**options)
    from pygments.lexers import get_lexer_by_name
    from pygments.util import ClassNotFound
    try:
        return get_lexer_by_name(alias, **options)
    except ClassNotFound:
        return None


__all__ = ["AmdgcnLexer", "LEXERS", "SassLexer", "TTGIRLexer", "TTIRLexer", "get_lexer"]
