"""Rich text built from untrusted input (a snapshot's layouts.json, its pass index, its IR), made safe to draw.

render.controls.visible_controls does this for a str; a Text is usually assembled from several pieces,
some of them the snapshot's, with styles on top, so it is cleaned once it is whole. No Textual import.
"""
from __future__ import annotations

from rich.text import Text

from ...render.controls import visible_controls


def visible_text(text: Text) -> Text:
    """`text` with each control character shown as its control picture (an ESC in a pass's name reached
    the terminal); one character for one, so its styles stay where they were."""
    plain = visible_controls(text.plain)
    if plain == text.plain:
        return text
    return Text(plain, style=text.style, justify=text.justify, overflow=text.overflow, no_wrap=text.no_wrap,
                end=text.end, spans=list(text.spans))
