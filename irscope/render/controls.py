"""Control characters in text irscope shows from untrusted input, made visible. No imports beyond `re`: the
pytest plugin, loaded by every pytest run where irscope is installed, uses these.
"""
from __future__ import annotations

import re


def visible_controls(text: str) -> str:
    """`text` with each control character shown as its Unicode control picture (ESC as ␛), one character
    for one: for the TUI, where Rich keeps ESC in a Text and the terminal would act on it, and where a
    column must stay the column it was (search hits, source links)."""
    return _CONTROLS.sub(_picture, text) if _CONTROLS.search(text) else text


# All but tab and newline (a \r would overwrite a line), and Unicode's bidirectional controls: an override
# (U+202E) or isolate makes a terminal or editor that honours them show a line's characters in another
# order than they are (the "Trojan Source" trick), so the text read is not the text there.
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _picture(m: re.Match) -> str:
    c = ord(m.group())
    return chr(0x2400 + c) if c < 0x20 else "\u2421" if c == 0x7f else "\ufffd"


def code(c: str) -> str:
    """One character as Python writes it in a string: `\x1b`, `\u202e`."""
    n = ord(c)
    return f"\\x{n:02x}" if n <= 0xff else f"\\u{n:04x}"


def escaped(text: str) -> str:
    """`text` with every control character and escape sequence written as `\\xNN`, keeping newlines and tabs:
    for text irscope hands to another program's output (pytest's failure reports), where a golden's stage or
    message reaches a terminal or a CI log and no colour of irscope's own is expected."""
    return _CONTROLS.sub(lambda m: code(m.group()), text) if _CONTROLS.search(text) else text
