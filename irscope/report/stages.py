"""A stage as the report embeds it: its lines highlighted one by one (Pygments, irscope's lexers), and
which Python line each came from (irscope.ir.lines), ready to be written as JSON and drawn lazily.

The page draws only the rows on screen (assets/report.js), so a stage of any length costs the browser one
JSON.parse when its tab is first opened; what grows with the stage is the file, and the build time here.
Pygments' lexers are precise but slow on big text (its LLVM lexer took 12 s of CPU for 20k lines of LLIR
on the loaded 2-core development machine), so past `PYGMENTS_LIMIT` lines a stage is coloured by
`quick_highlight`: one regular expression for comments, strings, SSA values, symbols, metadata and
numbers, with Pygments' CSS classes.
Past `HIGHLIGHT_LIMIT` lines it is embedded as escaped plain text.
"""
from __future__ import annotations

import html
import re
from dataclasses import dataclass

from ..ir.lines import LineMap, line_map
from ..render.terminal import LEXERS

PYGMENTS_LIMIT = 10_000  # lines
HIGHLIGHT_LIMIT = 500_000  # lines
# Past this many characters a stage is cut at a line's end: building its rows takes about eight times its
# size here (a 512 MiB stage, the store's limit, about 4 GB), and a browser cannot hold one string of the
# whole (V8's limit is about 512 M characters). The note says so; `irscope show` has every line.
SHOWN_LIMIT = 64 * 1024 * 1024

# Pygments' classes (default style): c comment, s string, nv variable, nf function, nl label, m number.
# Order matters: comments and strings first, so nothing inside them is coloured again.
_QUICK = re.compile(
    r'(?P<c>(?://|(?<!&lt)(?<!&gt)(?<!&amp);).*$)|(?P<s>"[^"\n]*")|(?P<nv>[%$][\w.\-]+)|(?P<nf>@[\w.$\-]+)'
    r'|(?P<nl>![\w.\-]+)|(?P<m>(?<![\w.])\d[\w.]*)', re.M)


def quick_highlight(lines: list[str]) -> list[str]:
    """Fast, approximate colouring of any stage's lines (escaped text in spans of Pygments' classes).

    The text is escaped first, in one call, then matched: the one character class escaping brings in
    (`;` of `&lt;`) is kept out of comments by a look-behind."""
    text = html.escape("\n".join(lines), quote=False)
    coloured = _QUICK.sub(lambda m: f'<span class="{m.lastgroup}">{m.group()}</span>', text)
    return coloured.split("\n")


@dataclass(frozen=True)
class StageView:
    """One stage's rows (HTML, one per line), and the Python line of each row (0: none)."""

    stage: str
    rows: tuple[str, ...]
    source_lines: tuple[int, ...]
    highlighted: bool
    note: str = ""

    def as_json(self) -> dict:
        return {"stage": self.stage, "rows": list(self.rows), "src": list(self.source_lines),
                "highlighted": self.highlighted, "note": self.note}


def highlight_lines(text: str, lexer_name: str) -> tuple[list[str], bool]:
    """The text's lines as HTML (Pygments classes, no wrapper); plain escaped lines when no lexer fits."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if len(lines) > HIGHLIGHT_LIMIT:
        return [html.escape(ln, quote=False) for ln in lines], False
    if len(lines) > PYGMENTS_LIMIT and lexer_name != "diff":
        return quick_highlight(lines), True
    from ..ir.lexers import get_lexer  # irscope's own first: Pygments' "sass" is the CSS preprocessor
    lexer = get_lexer(lexer_name)
    if lexer is None:
        return [html.escape(ln, quote=False) for ln in lines], False
    from pygments import highlight
    from pygments.formatters import HtmlFormatter
    lexer.stripnl = False
    lexer.ensurenl = True
    out = highlight("\n".join(lines) + "\n", lexer, HtmlFormatter(nowrap=True)).split("\n")
    if out and out[-1] == "":
        out.pop()
    if len(out) != len(lines):  # a lexer that ate or added lines: keep the rows aligned with the map
        return [html.escape(ln, quote=False) for ln in lines], False
    return out, True


_SPAN = re.compile(r'<span class="([\w-]*)">|</span>')


def compact(row: str) -> str:
    """A highlighted row in the page's short form: `<span class="nv">` is `<nv|`, `</span>` is `>`.

    Unambiguous because the escaped text has no raw `<` or `>`; a third of the size, and the JSON has no
    `</` to escape. assets/report.js expands the rows it draws."""
    return _SPAN.sub(lambda m: ">" if m.group(1) is None else f"<{m.group(1)}|", row)


def shown_part(text: str, limit: int | None = None) -> tuple[str, str]:
    """(the part of `text` the report shows, a note saying what was cut: "" when it is whole)."""
    limit = SHOWN_LIMIT if limit is None else limit
    if len(text) <= limit:
        return text, ""
    end = text.rfind("\n", 0, limit) + 1 or limit
    total = text.count("\n") + (not text.endswith("\n"))
    kept = text.count("\n", 0, end)
    return text[:end], (f"cut: the first {kept:,} of {total:,} lines are shown (a report holds "
                        f"{limit // 2**20} MiB of a stage; irscope show has the whole)")


_LOC_ALIAS = re.compile(r"^#loc\w*\s*=.*$", re.M)


def mapping_text(whole: str, shown: str) -> str:
    """The text a cut stage is mapped from: the part shown, and the location aliases (`#loc12 = loc(...)`)
    of the part cut off, where MLIR prints them (after the module): without them no line of a cut TTIR or
    TTGIR maps to Python. The aliases' own lines fall past the rows shown, so none is drawn."""
    if len(shown) >= len(whole):
        return shown
    aliases = "\n".join(m.group() for m in _LOC_ALIAS.finditer(whole, len(shown)))
    return shown + ("\n" if shown and not shown.endswith("\n") else "") + aliases + "\n" if aliases else shown


# What str.splitlines() (the line maps) takes for a line's end besides "\n" and "\r\n", which the rows, split at
# "\n", do not: one of these in a stage moved every Python line's highlight below it onto the wrong IR lines.
_OTHER_BREAKS = re.compile(r"\r(?!\n)|[\x0b\x0c\x1c-\x1e\x85\u2028\u2029]")


def one_row_a_line(text: str) -> str:
    r"""`text` with every line break but "\n" (and "\r\n") written as its escape (`\x0c`, `\u2028`), so that
    its rows and its line map count the same lines, and such a character shows where it is."""
    if not _OTHER_BREAKS.search(text):
        return text
    return _OTHER_BREAKS.sub(lambda m: "\\r" if m.group() == "\r" else
                             f"\\x{ord(m.group()):02x}" if ord(m.group()) < 256 else f"\\u{ord(m.group()):04x}", text)


def stage_view(stage: str, text: str, kernel_file: str | None, lmap: LineMap | None = None,
               cut: str = "") -> StageView:
    """`cut`: the note of a text `shown_part` already cut (a text still too long is cut here). A `lmap` given
    must be of the text as `one_row_a_line` leaves it."""
    text = one_row_a_line(text)
    if not cut:
        text, cut = shown_part(text)
        lmap = lmap if not cut else None
    rows, highlighted = highlight_lines(text, LEXERS.get(stage, stage))
    src = [0] * len(rows)
    note = ""
    if stage != "python" and kernel_file:
        try:
            lmap = lmap or line_map(stage, text)
        except (ValueError, IndexError, KeyError, RecursionError) as e:  # damaged text: show it unmapped
            lmap, note = None, f"cannot read its debug locations ({type(e).__name__})"
        if lmap is not None:
            for line, idxs in lmap.source_lines(kernel_file).items():
                for i in idxs:
                    if i < len(src) and not src[i]:
                        src[i] = line
    if not highlighted and len(rows) > HIGHLIGHT_LIMIT:
        note = f"{len(rows):,} lines: shown without highlighting (more than {HIGHLIGHT_LIMIT:,})"
    elif len(rows) > PYGMENTS_LIMIT and stage != "diff":
        note = f"{len(rows):,} lines: coloured by a quick highlighter (Pygments' lexer up to {PYGMENTS_LIMIT:,})"
    note = "; ".join(n for n in (cut, note) if n)
    return StageView(stage, tuple(map(compact, rows)) if highlighted else tuple(rows), tuple(src), highlighted, note)


def maps_and_file(texts: dict[str, str]) -> tuple[dict[str, LineMap], str | None]:
    """Each stage's line map, and the kernel's file as its locations spell it."""
    from ..ir.lines import kernel_file
    maps = {}
    for stage, text in texts.items():
        try:
            maps[stage] = line_map(stage, text)
        except (ValueError, IndexError, KeyError, RecursionError):
            continue
    return maps, kernel_file(list(maps.values()))
