"""The one HTML file: sections of markup, the data they draw from (JSON in inert <script> blocks, parsed
only when a pane first needs it), the stylesheet and the script, all inline. No server, no network."""
from __future__ import annotations

import base64
import gzip
import json
import re
import time
from html import escape
from importlib import resources


def embed_json(value) -> str:
    """JSON safe inside a <script> element: no `</script>` and no `<!--` can end or confuse it."""
    return json.dumps(value, separators=(",", ":")).replace("</", "<\\/").replace("<!--", "\\u003c!--")


# A value whose JSON is at least this long is embedded gzip-compressed (base64, which holds no `<`): a
# stage's highlighted rows shrink 8-15x, and the page unpacks them when it loads (DecompressionStream).
GZIP_FROM = 4096  # characters


def embed_gzip(value) -> str:
    """A value's JSON, gzip-compressed and base64-encoded (the same bytes every time: no timestamp)."""
    raw = json.dumps(value, separators=(",", ":")).encode("utf-8")
    return base64.b64encode(gzip.compress(raw, compresslevel=6, mtime=0)).decode("ascii")


class Page:
    """Sections added in order; `html()` writes them out with a table of contents."""

    def __init__(self, title: str):
        self.title = title
        self.sections: list[tuple[str, str, str]] = []  # (anchor, heading, markup)
        self.blobs: list[tuple[str, str, bool]] = []  # (element id, JSON text or base64 of its gzip, gzipped)
        self._ids = 0

    def new_id(self, prefix: str) -> str:
        self._ids += 1
        return f"{prefix}-{self._ids}"

    def add_data(self, value, prefix: str = "d") -> str:
        """Embed a value; returns the id the script reads it back by."""
        ident = self.new_id(prefix)
        text = embed_json(value)
        if len(text) >= GZIP_FROM:
            self.blobs.append((ident, embed_gzip(value), True))
        else:
            self.blobs.append((ident, text, False))
        return ident

    def add_section(self, heading: str, markup: str) -> None:
        anchor = f"s{len(self.sections) + 1}"
        self.sections.append((anchor, heading, markup))

    def html(self) -> str:
        from pygments.formatters import HtmlFormatter
        css = _asset("report.css") + HtmlFormatter(style="default").get_style_defs(".vs")
        toc = "".join(f'<a href="#{a}">{escape(h)}</a>' for a, h, _ in self.sections)
        body = "".join(f'<section id="{a}"><h2>{escape(h)}</h2>{m}</section>' for a, h, m in self.sections)
        blobs = "".join(f'<script type="application/gzip" data-base64 id="{i}">{j}</script>\n' if gz else
                        f'<script type="application/json" id="{i}">{j}</script>\n' for i, j, gz in self.blobs)
        made = time.strftime("%Y-%m-%d %H:%M %Z")
        from .. import __version__
        return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
                f'<meta name="generator" content="{GENERATOR} {escape(__version__)}">'
                f'<meta name="viewport" content="width=device-width, initial-scale=1">'
                f'<title>{escape(self.title)}</title><style>{css}</style></head><body>'
                f'<header class="top"><h1>{escape(self.title)}</h1><div class="meta">irscope {escape(__version__)} · '
                f'{escape(made)} · one self-contained file</div></header>{UNREADY}<nav class="toc">{toc}</nav>'
                f'<main>{body}</main>\n{blobs}<script>{_asset("report.js")}</script></body></html>\n')


# Shown until the page's script, the file's last element, runs and removes it: a file cut short (a mail's
# size limit, a full disk) has no script, and its stage panes stayed empty without a word.
UNREADY = ('<p class="warn" id="unready">Loading the page\'s script... If this stays, the file is cut short (its '
           'script is at its end) or scripts are off: the tables and plots read, the stage panes stay empty.</p>')


# How `irscope report -o FILE` knows FILE is a report it may replace. Every report names irscope as its
# generator in the first line of its head; those written before the marker (irscope 0.x up to this change,
# one page layout) are known by their exact head: the same doctype, metas and title, then this stylesheet's
# first rule. A page someone else wrote matches neither.
GENERATOR = "irscope"
_MARKED = re.compile(rb'<meta name="generator" content="irscope[ "]')
_OLD_HEAD = re.compile(rb'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><meta name="viewport" '
                       rb'content="width=device-width, initial-scale=1"><title>[^<]*</title><style>:root '
                       rb'\{ --fg: #1d2127; --dim: #6b7280;')
HEAD_BYTES = 64 * 1024  # the marker is in the first 200 bytes; an old report's title may be long


def is_report(head: bytes) -> bool:
    """Whether a file starting with `head` (its first HEAD_BYTES) is a page irscope report wrote."""
    start = head[:1024]
    return bool(_MARKED.search(start) and start.lstrip().lower().startswith(b"<!doctype html")
                or _OLD_HEAD.match(head))


def _asset(name: str) -> str:
    return resources.files(__package__).joinpath("assets", name).read_text(encoding="utf-8")


def table(headers, rows, *, numeric=(), wrap=(), sortable: bool = False, row_class=None, cls: str = "") -> str:
    """An HTML table; cells are escaped unless given as (html, sort value) tuples of already safe markup.
    Columns in `numeric` are right-aligned, those in `wrap` are the ones given room to wrap (class wrap)."""
    classes = " ".join(c for c in ("sortable" if sortable else "", cls) if c)
    head = "".join(f'<th class="num">{escape(h)}</th>' if i in numeric else f"<th>{escape(h)}</th>"
                   for i, h in enumerate(headers))
    body = []
    for r, row in enumerate(rows):
        cells = []
        for i, c in enumerate(row):
            num = ' class="num"' if i in numeric else ' class="wrap"' if i in wrap else ""
            if isinstance(c, tuple):
                markup, key = c
                cells.append(f'<td{num} data-v="{escape(str(key))}">{markup}</td>')
            else:
                cells.append(f"<td{num}>{escape('' if c is None else str(c))}</td>")
        rc = row_class(r) if row_class else ""
        body.append(f'<tr class="{rc}">' + "".join(cells) + "</tr>" if rc else "<tr>" + "".join(cells) + "</tr>")
    return f'<table class="{classes}"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'
