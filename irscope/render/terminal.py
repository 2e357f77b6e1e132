"""Text for terminals: tables, sizes, colour, syntax highlighting and a progress line.

Presenters (the CLI, the pytest plugin) call these; nothing here prints on its own except `ProgressLine`,
which writes to the stream it is given.
"""
from __future__ import annotations

import os
import re
import secrets
import sys
import time
from typing import IO, Iterable, Sequence

from ..store.snapshot import Snapshot
from .controls import code, escaped

# What a terminal would act on in text irscope prints from untrusted input (a snapshot's fields and stages,
# a launch file): every control character and escape sequence. An OSC 52 writes the clipboard, ESC [2J
# clears the screen, a C1 CSI moves the cursor, and even a colour (ESC [31m) from a file could make text
# look like irscope's own. Only the colours irscope writes itself pass: `Style` and `highlight` put this
# process's secret mark before each of their SGR sequences, and SafeStream keeps a sequence with the mark
# (dropping the mark) and escapes every other one. A file cannot carry the mark: it is drawn afresh at start.
_MARK = "\ue000" + secrets.token_hex(8) + "\ue001"
_UNSAFE = re.compile(rf"(?:{_MARK})?\x1b(?:\[[0-9;]*m)?|[\x00-\x08\x0b\x0c\x0e-\x1a\x1c-\x1f\x7f\x80-\x9f]"
                     "|[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")  # and bidi controls (controls.py)
_UNSAFE_OUT = re.compile(_UNSAFE.pattern + r"|\r")  # results: a carriage return could overwrite a line
_STRAY_MARK = re.compile(re.escape(_MARK))
# The SGR parameters colour output uses (irscope's Style, Pygments' formatters): colours, bold, dim, italic,
# underline and their resets. Not 8 (conceal), 5 (blink) or 7 (reverse), which could hide or fake text.
_SGR_KEPT = {0, 1, 2, 3, 4, 22, 23, 24, 39, 49, *range(30, 38), *range(40, 48), *range(90, 98), *range(100, 108)}


def _escaped(m: re.Match) -> str:
    seq = m.group()
    if seq.startswith(_MARK):
        seq = seq[len(_MARK):]
        if len(seq) > 1 and _colour_only(seq[2:-1]):
            return seq  # irscope's own colours: kept
    return code(seq[0]) + seq[1:]


def _trusted(sgr: str) -> str:
    """An SGR sequence of irscope's own, marked for SafeStream to keep."""
    return _MARK + sgr


def _colour_only(params: str) -> bool:
    codes = [int(c) if c else 0 for c in params.split(";")]
    i = 0
    while i < len(codes):
        if codes[i] in (38, 48) and i + 2 < len(codes) and codes[i + 1] == 5:  # 256-colour: 38;5;N
            i += 3
        elif codes[i] in _SGR_KEPT:
            i += 1
        else:
            return False
    return True


class SafeStream:
    """A text stream that writes control characters as `\\xNN`, keeping newlines, tabs, irscope's own colour
    sequences and, where asked (stderr's progress lines), carriage returns: nothing from a hostile snapshot
    reaches the terminal as a command or a colour, hides text or overwrites a line."""

    def __init__(self, stream, *, carriage_returns: bool = True):
        self._stream = stream
        self._unsafe = _UNSAFE if carriage_returns else _UNSAFE_OUT

    def write(self, text: str) -> int:
        return self._stream.write(_STRAY_MARK.sub("", self._unsafe.sub(_escaped, text)))

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name):
        return getattr(self._stream, name)


RESET = "\x1b[0m"
STYLES = {"bold": "\x1b[1m", "dim": "\x1b[2m", "red": "\x1b[31m", "green": "\x1b[32m", "yellow": "\x1b[33m",
          "cyan": "\x1b[36m", "magenta": "\x1b[35m"}

# Pygments lexer names per stage; irscope registers ttir, ttgir, sass and amdgcn as Pygments plugins.
LEXERS = {"source": "ttir", "glir": "ttgir", "ttir": "ttir", "ttgir": "ttgir", "llir": "llvm", "ptx": "ptx", "sass": "sass",
          "amdgcn": "amdgcn", "python": "python"}


def wants_color(stream: IO, mode: str = "auto") -> bool:
    """Colour on a terminal unless NO_COLOR is set; `always` and `never` override."""
    if mode == "always":
        return True
    if mode == "never" or os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    return hasattr(stream, "isatty") and stream.isatty()


class Style:
    """Applies ANSI styles when colour is on, and nothing otherwise."""

    def __init__(self, color: bool):
        self.color = color

    def __call__(self, text: str, *styles: str) -> str:
        if not self.color or not styles:
            return text
        return "".join(_trusted(STYLES[s]) for s in styles) + text + _trusted(RESET)


# Triton's own steps in order, as irscope.json's times_ms names them (the front end: Python AST to TTIR).
_TIMED = ("frontend", "ttir", "ttgir", "llir", "ptx", "amdgcn", "cubin", "hsaco")
_TIMED_NAMES = {"frontend": "front end", "cubin": "cubin (ptxas)", "hsaco": "hsaco (ld.lld)"}


def time_split(times: dict) -> str:
    """Compile time by stage with each one's share of Triton's time: `4.45 s in Triton: front end 22% ·
    ttir 1% ... cubin (ptxas) 13%; sass (disassembly) 1.63 s more`. "" when nothing was timed."""
    parts = [(k, float(times[k])) for k in _TIMED if isinstance(times.get(k), (int, float))]
    total = sum(v for _, v in parts)
    if total <= 0:
        return ""
    text = f"{total / 1e3:.2f} s in Triton: " + " · ".join(f"{_TIMED_NAMES.get(k, k)} {v / total:.0%}"
                                                          for k, v in parts)
    if isinstance(times.get("sass"), (int, float)):
        text += f"; sass (disassembly) {times['sass'] / 1e3:.2f} s more"
    return text


def plural(n: int, noun: str, many: str | None = None) -> str:
    """`1 point`, `2 points` (`many`: the plural, where it is not noun + s)."""
    return f"{n} {noun}" if n == 1 else f"{n} {many or noun + 's'}"


def human_bytes(n: int | None) -> str:
    if n is None:
        return "-"
    if n < 1024:
        return f"{n} B"
    for unit in ("KiB", "MiB", "GiB"):
        n /= 1024
        if n < 1024 or unit == "GiB":
            return f"{n:.1f} {unit}" if n < 100 else f"{n:.0f} {unit}"
    return f"{n} B"


def count(n: int | None) -> str:
    return "-" if n is None else f"{n:,}"


def table(headers: Sequence[str], rows: Iterable[Sequence[object]], *, right: Sequence[int] = (),
          style: Style | None = None) -> str:
    """A plain text table; columns in `right` are right-aligned."""
    rows = [["" if c is None else str(c) for c in row] for row in rows]
    widths = [max([len(h)] + [len(_visible(r[i])) for r in rows]) for i, h in enumerate(headers)]

    def line(cells: Sequence[str]) -> str:
        out = []
        for i, c in enumerate(cells):
            pad = " " * (widths[i] - len(_visible(c)))
            out.append(pad + c if i in right else c + pad)
        return "  ".join(out).rstrip()

    head = line(list(headers))
    if style:
        head = style(head, "bold")
    return "\n".join([head] + [line(r) for r in rows])


def _visible(text: str) -> str:
    """`text` as a terminal shows it after SafeStream: untrusted sequences escaped, irscope's colours gone."""
    return re.sub(r"\x1b\[[0-9;]*m", "", _STRAY_MARK.sub("", _UNSAFE_OUT.sub(_escaped, text)))


def highlight(text: str, stage: str, color: bool) -> str:
    """Syntax-highlight a stage for a terminal (through Pygments); plain text when colour is off."""
    if not color:
        return text
    from pygments import highlight as pyg_highlight
    from pygments.formatters import TerminalFormatter

    from ..ir.lexers import get_lexer  # irscope's own first: Pygments' "sass" is the CSS preprocessor
    lexer = get_lexer(LEXERS.get(stage, stage))
    if lexer is None:
        return text
    # The stage's own control characters are escaped first, so every ESC in Pygments' output is its colour.
    out = pyg_highlight(escaped(text), lexer, TerminalFormatter())
    return re.sub(r"\x1b\[[0-9;]*m", lambda m: _trusted(m.group()), out)


def stage_sizes(snap: Snapshot) -> str:
    parts = []
    for stage, info in snap.meta.get("stages", {}).items():
        if stage == "source":
            continue
        size = human_bytes(info["bytes"]) if info.get("lines") is None else f"{info['lines']:,} lines"
        parts.append(f"{stage} {size}")
    if not parts:
        parts = [f"{s} {human_bytes(p.stat().st_size)}" for s, p in snap.stage_files.items()]
    return " · ".join(parts)


def resources_line(snap: Snapshot) -> str:
    r = snap.resources
    t = snap.target
    smem = human_bytes(r.shared)
    if t is not None and r.shared is not None:
        smem += f" of {human_bytes(t.shared_per_block)}"
        if r.shared > t.shared_per_block:
            smem += " (over the per-block limit: cannot launch)"
    if t is not None and t.vendor == "amd":
        regs = f"vgpr {count(r.registers)}, agpr {count(r.agprs)}, sgpr {count(r.sgprs)}"
        spills = f"spilled vgprs {count(r.spill_stores)}, scratch {human_bytes(r.scratch)}"
        return f"lds {smem} · {regs} · {spills}"
    spills = f"spills {human_bytes(r.spill_stores)} st / {human_bytes(r.spill_loads)} ld · stack {human_bytes(r.stack)}"
    extra = f" · tmem {r.tensor_memory} cols" if r.tensor_memory else ""
    return f"shared {smem} · registers {count(r.registers)}/thread · {spills}{extra}"


class ProgressLine:
    """One line on a terminal that redraws itself: `[3/14] compiling matmul/default/sm_90a (12 s)`."""

    def __init__(self, stream: IO = sys.stderr, enabled: bool | None = None):
        self.stream = stream
        self.enabled = stream.isatty() if enabled is None else enabled
        self.started = time.monotonic()
        self._width = 0

    def update(self, text: str) -> None:
        if not self.enabled:
            return
        elapsed = time.monotonic() - self.started
        line = f"{text} ({elapsed:.0f} s)"
        cols = _columns(self.stream) - 1
        line = line[:cols]
        self.stream.write("\r" + line + " " * max(0, self._width - len(line)))
        self.stream.flush()
        self._width = len(line)

    def close(self) -> None:
        if self.enabled and self._width:
            self.stream.write("\r" + " " * self._width + "\r")
            self.stream.flush()
        self._width = 0


def _columns(stream: IO) -> int:
    try:
        return os.get_terminal_size(stream.fileno()).columns
    except (OSError, ValueError, AttributeError):
        return 100
