"""One error family for irscope, and the exit codes the CLI maps it to.

Core modules raise these; only the CLI turns them into `irscope: error: ...` lines.
"""
from __future__ import annotations

import enum
import re


class ExitCode(enum.IntEnum):
    """Documented exit statuses of the `irscope` command (see docs/cli.md)."""

    OK = 0
    FAILED = 1  # a comparison found differences, a check or golden failed (like diff(1), FileCheck)
    USAGE = 2  # bad arguments: unknown kernel, target or option, malformed value
    COMPILE = 3  # at least one kernel failed to compile (snapshots of the others are kept)
    SNAPSHOT = 4  # a snapshot folder is missing, damaged or not a snapshot
    ENVIRONMENT = 5  # a tool, package or device irscope needs is missing
    INTERNAL = 70  # a bug in irscope (EX_SOFTWARE)
    INTERRUPTED = 130  # Ctrl-C


class IrscopeError(Exception):
    """An error with a message for the user and a hint saying what to do next."""

    exit_code: ExitCode = ExitCode.USAGE

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message


class UsageError(IrscopeError):
    """The user asked for something that does not exist or is malformed."""

    exit_code = ExitCode.USAGE


class CompileError(IrscopeError):
    """Triton (or ptxas, or LLVM) rejected the kernel."""

    exit_code = ExitCode.COMPILE

    def __init__(self, message: str, hint: str | None = None, *, stage: str | None = None, log: str = ""):
        super().__init__(message, hint)
        self.stage = stage
        self.log = log


class SnapshotError(IrscopeError):
    """A snapshot folder is missing, damaged, or of an unknown format."""

    exit_code = ExitCode.SNAPSHOT


class EnvironmentProblem(IrscopeError):
    """Something irscope needs from the machine is missing (a compiler tool, a GPU, a package)."""

    exit_code = ExitCode.ENVIRONMENT


class OutputUnwritable(EnvironmentProblem):
    """Standard output refused a write (a full disk, /dev/full): not a bug, and not the command's input."""


class ComparisonFailed(IrscopeError):
    """A check found a difference; the report has already been produced."""

    exit_code = ExitCode.FAILED


def error_summary(err: dict) -> str:
    """One line for a failed compile's error: what went wrong where Triton says it, else the first line."""
    lines = [ln.strip() for ln in str(err.get("message", "")).strip().splitlines() if ln.strip()]
    if not lines:
        return str(err.get("type", "error"))
    # Triton's CompilationError and its subclasses (UnsupportedLanguageConstruct, CompileTimeAssertionFailure)
    # begin "at LINE:COL:", then the source and a caret; what went wrong is the last line
    triton_style = err.get("type") in _TRITON_COMPILATION_ERRORS or re.match(r"at \d+:\d+:$", lines[0])
    if triton_style and lines[-1] != "^":
        return lines[-1]
    return lines[0]


_TRITON_COMPILATION_ERRORS = ("CompilationError", "UnsupportedLanguageConstruct", "CompileTimeAssertionFailure")
