"""A stage's text as the viewer needs it: lines with tabs expanded, highlighting on demand, search.

Highlighting is lazy and per line (toolong's approach): a 100k-line LLIR costs nothing until a line is
on screen, and a line is lexed once while it stays in the cache. Python source is small and has
multi-line strings, so it is lexed whole on first use. No Textual import (Rich only).
"""
from __future__ import annotations

from collections import OrderedDict
from functools import lru_cache

from rich.cells import cell_len
from rich.style import Style
from rich.syntax import PygmentsSyntaxTheme
from rich.text import Span, Text

from ..lexers import get_lexer
from ..render import LEXERS

CACHE_LINES = 4096
DARK_THEME = "monokai"
LIGHT_THEME = "friendly"


def lexer_alias(stage: str) -> str:
    return LEXERS.get(stage, stage)


@lru_cache(maxsize=4)
def _theme(name: str) -> PygmentsSyntaxTheme:
    return PygmentsSyntaxTheme(name)


@lru_cache(maxsize=2048)
def token_style(theme: str, ttype) -> Style:
    style = _theme(theme).get_style_for_token(ttype)
    return Style(color=style.color, bold=style.bold, italic=style.italic, underline=style.underline)


class Document:
    """Lines of one text, highlighted on demand through the Pygments lexer for its stage."""

    def __init__(self, text: str, stage: str, *, theme: str = DARK_THEME):
        self.stage = stage
        self.theme = theme
        self.lines: list[str] = [ln.expandtabs(8) if "\t" in ln else ln for ln in text.splitlines()]
        self.width = max((len(ln) if ln.isascii() else cell_len(ln) for ln in self.lines), default=0)
        self._lexer = None
        self._lexer_loaded = False
        self._cache: OrderedDict[int, Text] = OrderedDict()
        self._whole: list[Text] | None = None
        self._lower: list[str] | None = None

    def __len__(self) -> int:
        return len(self.lines)

    @property
    def lexer(self):
        if not self._lexer_loaded:
            self._lexer = get_lexer(lexer_alias(self.stage), stripnl=False, ensurenl=False)
            self._lexer_loaded = True
        return self._lexer

    def text(self, index: int) -> Text:
        """Line `index` as highlighted Rich text (plain where no lexer is known)."""
        if self.stage == "python":
            return self._whole_text()[index]
        cached = self._cache.get(index)
        if cached is not None:
            self._cache.move_to_end(index)
            return cached
        text = self._highlight(self.lines[index])
        self._cache[index] = text
        if len(self._cache) > CACHE_LINES:
            self._cache.popitem(last=False)
        return text

    def _highlight(self, line: str) -> Text:
        lexer = self.lexer
        if lexer is None or not line:
            return Text(line)
        spans, pos = [], 0
        for ttype, value in lexer.get_tokens(line):
            end = pos + len(value)
            style = token_style(self.theme, ttype)
            if style.color is not None or style.bold or style.italic:
                spans.append(Span(pos, end, style))
            pos = end
        return Text(line, spans=spans)

    def _whole_text(self) -> list[Text]:
        if self._whole is None:
            lexer = self.lexer
            if lexer is None:
                self._whole = [Text(ln) for ln in self.lines]
            else:
                joined = "\n".join(self.lines) + "\n"
                out, spans, line, pos = [], [], 0, 0
                for ttype, value in lexer.get_tokens(joined):
                    style = token_style(self.theme, ttype)
                    for k, piece in enumerate(value.split("\n")):
                        if k:
                            out.append(Text(self.lines[line] if line < len(self.lines) else "", spans=spans))
                            spans, line, pos = [], line + 1, 0
                        if piece and (style.color is not None or style.bold or style.italic):
                            spans.append(Span(pos, pos + len(piece), style))
                        pos += len(piece)
                while len(out) < len(self.lines):
                    out.append(Text(self.lines[len(out)]))
                self._whole = out[:len(self.lines)]
        return self._whole

    # -- search ---------------------------------------------------------------------------------------

    @staticmethod
    def case_sensitive(query: str) -> bool:
        """Smart case: a query with a capital letter matches case; an all-lowercase one ignores it."""
        return query != query.lower()

    def find(self, query: str) -> list[int]:
        """The lines (0-based) that contain `query`."""
        if not query:
            return []
        if self.case_sensitive(query):
            return [i for i, ln in enumerate(self.lines) if query in ln]
        if self._lower is None:
            self._lower = [ln.lower() for ln in self.lines]
        q = query.lower()
        return [i for i, ln in enumerate(self._lower) if q in ln]

    def spans(self, index: int, query: str) -> list[tuple[int, int]]:
        """Where `query` occurs in line `index`, as (start, end) character offsets."""
        if not query:
            return []
        line = self.lines[index]
        if not self.case_sensitive(query):
            line, query = line.lower(), query.lower()
        out, start = [], line.find(query)
        while start >= 0:
            out.append((start, start + len(query)))
            start = line.find(query, start + max(1, len(query)))
        return out
