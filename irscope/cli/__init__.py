"""The `irscope` command: `main(argv) -> int`, the only place that prints errors and picks exit codes.

Each subcommand lives in its own module with `add_parser(subparsers)` and `run(args, ui) -> int`;
modules import their heavy dependencies (Triton, Textual) inside `run`, so `irscope --help` stays fast.
"""
from __future__ import annotations

import argparse
import difflib
import importlib
import os
import re
import sys
from typing import IO, Sequence

from .. import __version__
from ..errors import ExitCode, IrscopeError, OutputUnwritable, UsageError
from ..render.terminal import SafeStream, Style, wants_color

# Subcommands, in the order `irscope --help` lists them; each is the module of its name (MODULES: where not).
COMMANDS = ("compile", "show", "targets", "kernels", "stats", "diff", "compare", "explain", "sweep", "passes", "tui",
            "run", "verify", "snapshot", "capture", "envs", "upgrade-check", "layouts", "report", "rank")
MODULES = {"upgrade-check": "upgrade"}


class _Output(SafeStream):
    """Standard output: a write it refuses (a full disk, /dev/full) is one error line of any command, not an
    internal error (a closed pipe stays BrokenPipeError: `irscope show ... | head` is fine)."""

    def write(self, text: str) -> int:
        return self._guarded(super().write, text)

    def flush(self) -> None:
        self._guarded(self._stream.flush)

    @staticmethod
    def _guarded(call, *args):
        try:
            return call(*args)
        except BrokenPipeError:
            raise
        except OSError as e:
            raise OutputUnwritable(f"cannot write to stdout: {e.strerror or e}",
                                   "send the output somewhere writable (a file on a disk with room, or a pipe)") from None


class UI:
    """Where a command writes: stdout for results, stderr for progress, with colour decided once."""

    def __init__(self, out: IO, err: IO, color_mode: str = "auto"):
        # Both through SafeStream: what a command prints may come from a hostile snapshot's fields.
        self.out = _Output(out, carriage_returns=False)
        self.err = SafeStream(err)
        self.color_mode = color_mode
        self.color = wants_color(out, color_mode)
        self.style = Style(self.color)
        self.err_style = Style(wants_color(err, color_mode))
        self._raw_err = err

    def on_stderr(self) -> "UI":
        """This UI with its results on stderr too: for a command whose stdout belongs to a program it runs."""
        return UI(self._raw_err, self._raw_err, self.color_mode)

    def print(self, text: str = "") -> None:
        self.out.write(text + "\n")

    def warn(self, text: str) -> None:
        self.err.write(f"irscope: {self.err_style('warning', 'yellow')}: {text}\n")


class _Parser(argparse.ArgumentParser):
    """argparse that raises UsageError instead of printing usage and exiting."""

    def error(self, message: str):  # type: ignore[override]
        # argparse words an unknown (sub)command as "argument COMMAND: invalid choice: 'x' (choose from ...)"
        m = re.match(r"argument (?:COMMAND|ACTION): invalid choice: (.+?) \(choose from", message)
        commands = [a for a in self._actions if isinstance(a, argparse._SubParsersAction)]
        if m and commands:
            word = m.group(1).strip("'\"")
            choices = list(commands[0].choices)
            close = difflib.get_close_matches(word, choices, n=1)
            raise UsageError(f"unknown command '{self.prog} {word}'",
                             (f"did you mean `{self.prog} {close[0]}`? " if close else "") +
                             f"commands: {', '.join(choices)}; see `{self.prog} --help`")
        raise UsageError(message, f"see `{self.prog} --help`")

    def parse_args(self, args=None, namespace=None):  # type: ignore[override]
        # Unknown options reach the top parser, whose error would point at `irscope --help`: name the
        # subcommand's help, and the option meant if one is close.
        ns, extras = self.parse_known_args(args, namespace)
        if extras:
            parser = self  # the deepest subcommand given: `irscope snapshot check`, not `irscope snapshot`
            while True:
                subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
                chosen = getattr(ns, subs[0].dest, None) if subs else None
                if chosen not in (subs[0].choices if subs else {}):
                    break
                parser = subs[0].choices[chosen]
            prog = parser.prog
            known = [o for a in parser._actions for o in a.option_strings]
            flag = next((e.split("=")[0] for e in extras if e.startswith("--")), None)
            close = difflib.get_close_matches(flag, known, n=1, cutoff=0.8) if flag else []
            raise UsageError(f"unrecognized arguments: {' '.join(extras)}",
                             (f"did you mean {close[0]}? " if close else "") + f"see `{prog} --help`")
        return ns


def _add_global_options(parser: argparse.ArgumentParser, default) -> None:
    """--color and --debug, on `irscope` itself and again on every subcommand."""
    g = parser.add_argument_group("global options")
    g.add_argument("--color", choices=COLOR_MODES, default="auto" if default is None else default, metavar="WHEN",
                   help="colour output: auto (the default: on when writing to a terminal and NO_COLOR is unset), "
                        "always or never")
    g.add_argument("--debug", action="store_true", default=False if default is None else default,
                   help="show Python tracebacks for internal errors")


class _CommandParser(_Parser):
    """A subcommand's parser: it takes the global options too, so `irscope show X --color never` works.

    Their default is SUPPRESS, so a subcommand that is not given them keeps the value parsed before the
    subcommand's name (`irscope --color never show X`). Nested subcommands (`snapshot check`) get this
    class as well, through argparse's `parser_class` default.
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        _add_global_options(self, argparse.SUPPRESS)

    def format_help(self) -> str:
        # The global options last, after the command's own groups (added once this parser exists).
        groups = self._action_groups
        groups.sort(key=lambda g: g.title == "global options")
        return super().format_help()


COLOR_MODES = ("auto", "always", "never")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="irscope", description="See what Triton compiles your kernels to, for any GPU, without one.",
                     epilog="`irscope COMMAND --help` shows a command's options; --color and --debug go before or "
                            "after COMMAND.")
    parser.add_argument("--version", action="version", version=f"irscope {__version__}")
    _add_global_options(parser, None)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_CommandParser)
    for name in COMMANDS:
        importlib.import_module(f".{MODULES.get(name, name)}", __name__).add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None, *, out: IO | None = None, err: IO | None = None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv or bool(os.environ.get("IRSCOPE_DEBUG"))
    ui = UI(out, err, _color_in(argv))  # for errors found while parsing, before args.color is known
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        debug = debug or args.debug
        ui = UI(out, err, args.color)
        if not getattr(args, "run", None):  # options but no command: the list of commands, as a usage error
            parser.print_help(out)
            return int(ExitCode.USAGE)
        return int(args.run(args, ui) or 0)
    except IrscopeError as e:
        _report(ui, e.message, e.hint)
        return int(e.exit_code)
    except KeyboardInterrupt:
        err.write("\nirscope: interrupted\n")
        return int(ExitCode.INTERRUPTED)
    except BrokenPipeError:  # `irscope show ... | head`
        try:
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - silence the flush at exit
        except OSError:
            pass
        return int(ExitCode.OK)
    except Exception as e:  # noqa: BLE001 - the last line of defence: no traceback unless asked
        if debug:
            raise
        _report(ui, f"internal error: {type(e).__name__}: {e}",
                "this is a bug in irscope; rerun with --debug for the traceback and report it")
        return int(ExitCode.INTERNAL)


def _color_in(argv: Sequence[str]) -> str:
    """The last valid `--color MODE` / `--color=MODE` of the command line, else auto."""
    mode = "auto"
    for i, word in enumerate(argv):
        if word == "--color" and i + 1 < len(argv):
            value = argv[i + 1]
        else:
            value = word[len("--color="):] if word.startswith("--color=") else ""
        if value in COLOR_MODES:
            mode = value
    return mode


def _report(ui: UI, message: str, hint: str | None) -> None:
    s = ui.err_style
    first = message.strip().splitlines()[0] if message.strip() else "unknown error"
    ui.err.write(f"irscope: {s('error', 'red', 'bold')}: {first}\n")
    if hint:
        ui.err.write(f"irscope: {s('hint', 'cyan')}: {hint}\n")
