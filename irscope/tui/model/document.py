"""A stage's text as the viewer needs it: lines with tabs expanded, highlighting on demand, search.

Highlighting is lazy and per line (toolong's approach): a 100k-line LLIR costs nothing until a line is
on screen, and a line is lexed once while it stays in the cache. Python source is usually small and has
multi-line strings, so it is lexed whole on first use, up to PYTHON_WHOLE characters; a longer file is
lexed a line at a time like the IR. No Textual import (Rich only).
"""
from __future__ import annotations

import bisect
import threading
from collections import OrderedDict
from functools import lru_cache

from rich.cells import cell_len
from rich.style import Style
from rich.syntax import PygmentsSyntaxTheme
from rich.text import Span, Text

from ...ir.lexers import get_lexer
from ...render.controls import visible_controls
from ...render.terminal import LEXERS

CACHE_LINES = 4096
LEX_WHOLE = 160  # lines up to this long are lexed whole; longer ones (LLIR's inline asm) only as far as shown
LEX_AHEAD = 64  # and this many columns past the last one shown (a short scroll right needs no relex)
# Python is lexed whole up to this many characters (Pygments takes about 5 us a character: a 7 MB source.py
# in a snapshot held the screen for 35 s); past it, line by line (a multi-line string may then be miscoloured).
PYTHON_WHOLE = 100_000
DARK_THEME = "monokai"
LIGHT_THEME = "friendly"


def prewarm(stages=("python", "ttir", "llir", "ptx", "sass", "amdgcn")) -> None:
    """Build each lexer's regexes once (Pygments compiles them on first use: 20-170 ms each)."""
    for stage in stages:
        lexer = get_lexer(lexer_alias(stage), stripnl=False, ensurenl=False)
        if lexer is not None:
            for _ in lexer.get_tokens("x = 1\n"):
                pass


def lexer_alias(stage: str) -> str:
    return LEXERS.get(stage, stage)


@lru_cache(maxsize=4)
def _theme(name: str) -> PygmentsSyntaxTheme:
    return PygmentsSyntaxTheme(name)


@lru_cache(maxsize=2048)
def token_style(theme: str, ttype) -> Style:
    style = _theme(theme).get_style_for_token(ttype)
    return Style(color=style.color, bold=style.bold, italic=style.italic, underline=style.underline)


def split_lines(text: str, stage: str) -> list[str]:
    """A text's lines as its debug locations count them. Python counts only newlines (a form feed, which
    PEP 8 allows between sections, is not one: str.splitlines made it one, and every Python line after
    it was marked one line early); the IR stages are split as irscope.ir.lines splits them."""
    if stage != "python":
        return text.splitlines()
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


class Document:
    """Lines of one text, highlighted on demand through the Pygments lexer for its stage."""

    def __init__(self, text: str, stage: str, *, theme: str = DARK_THEME):
        self.stage = stage
        self.theme = theme
        # (visible_controls: a stage's text is untrusted, and an ESC in it would reach the terminal)
        self.lines: list[str] = [visible_controls(ln.expandtabs(8) if "\t" in ln else ln) for ln in split_lines(text, stage)]
        self.width = max((len(ln) if ln.isascii() else cell_len(ln) for ln in self.lines), default=0)
        self._lex_whole = stage == "python" and sum(map(len, self.lines)) + len(self.lines) <= PYTHON_WHOLE
        self._lexer = None
        self._lexer_loaded = False
        self._cache: OrderedDict[int, tuple[Text, int]] = OrderedDict()  # line -> (text, columns lexed)
        self._lock = threading.Lock()
        self._whole: list[Text] | None = None
        self._joined: str | None = None
        self._lower: str | None = None
        self._starts: list[int] | None = None

    def __len__(self) -> int:
        return len(self.lines)

    @property
    def lexer(self):
        if not self._lexer_loaded:
            self._lexer = get_lexer(lexer_alias(self.stage), stripnl=False, ensurenl=False)
            self._lexer_loaded = True
        return self._lexer

    def text(self, index: int, shown_to: int = 0) -> Text:
        """Line `index` as highlighted Rich text (plain where no lexer is known).

        A very long line is highlighted up to column `shown_to` (and a margin), and the text holds only
        that much of it: the rest is read when the reader scrolls there (a line of 50 MB made into one
        Text cost seconds a keystroke).
        """
        if self._lex_whole:
            return self._whole_text()[index]
        with self._lock:  # the viewer's prefetch worker fills the cache from another thread
            cached = self._cache.get(index)
            if cached is not None and cached[1] >= min(shown_to, len(self.lines[index])):
                self._cache.move_to_end(index)
                return cached[0]
        line = self.lines[index]
        upto = len(line) if len(line) <= LEX_WHOLE else min(len(line), max(LEX_WHOLE, shown_to + LEX_AHEAD))
        text = self._highlight(line, upto)
        with self._lock:
            self._cache[index] = (text, upto)
            if len(self._cache) > CACHE_LINES:
                self._cache.popitem(last=False)
        return text

    def is_highlighted(self, index: int, shown_to: int = 0) -> bool:
        with self._lock:
            cached = self._cache.get(index)
        return cached is not None and cached[1] >= min(shown_to, len(self.lines[index]))

    def _highlight(self, line: str, upto: int) -> Text:
        lexer = self.lexer
        line = line[:upto]
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

    def prepare_search(self) -> None:
        """Build what search needs (the joined text, its lowercase copy, line offsets); a worker calls this."""
        if self._starts is None:
            joined = "\n".join(self.lines)
            starts, pos = [], 0
            for ln in self.lines:
                starts.append(pos)
                pos += len(ln) + 1
            self._joined, self._lower, self._starts = joined, joined.lower(), starts

    def find(self, query: str) -> list[int]:
        """The lines (0-based) that contain `query`: one str.find per matching line over the whole text."""
        if not query or "\n" in query:
            return []
        self.prepare_search()
        assert self._joined is not None and self._lower is not None and self._starts is not None
        hay, needle = (self._joined, query) if self.case_sensitive(query) else (self._lower, query.lower())
        starts, out = self._starts, []
        pos = hay.find(needle)
        while pos >= 0:
            line = bisect.bisect_right(starts, pos) - 1
            out.append(line)
            if line + 1 >= len(starts):
                break
            pos = hay.find(needle, starts[line + 1])
        return out

    def spans(self, index: int, query: str, start: int = 0, end: int | None = None) -> list[tuple[int, int]]:
        """Where `query` occurs in line `index` within characters start..end, as (start, end) offsets in
        the line: the viewer asks for what is on screen only (a line of megabytes has millions of hits)."""
        if not query:
            return []
        line = self.lines[index]
        lo = max(0, start - len(query) + 1)
        line = line[lo:] if end is None else line[lo:end + len(query) - 1]
        if not self.case_sensitive(query):
            line, query = line.lower(), query.lower()
        out, at = [], line.find(query)
        while at >= 0:
            out.append((lo + at, lo + at + len(query)))
            at = line.find(query, at + max(1, len(query)))
        return out
