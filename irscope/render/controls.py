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


_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # all but tab and newline (a \r would overwrite a line)


def _picture(m: re.Match) -> str:
    c = ord(m.group())
    return chr(0x2400 + c) if c < 0x20 else "\u2421" if c == 0x7f else "\ufffd"


def escaped(text: str) -> str:
    """`text` with every control character and escape sequence written as `\\xNN`, keeping newlines and tabs:
    for text irscope hands to another program's output (pytest's failure reports), where a golden's stage or
    message reaches a terminal or a CI log and no colour of irscope's own is expected."""
    return _CONTROLS.sub(lambda m: f"\\x{ord(m.group()):02x}", text) if _CONTROLS.search(text) else text
