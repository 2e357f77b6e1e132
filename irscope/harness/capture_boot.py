"""`python -m irscope.harness.capture_boot --launches FILE --target T [--mode M] -- PROGRAM ARGS...`

The child process `irscope capture` starts: it hooks Triton (irscope.harness.capture), then runs the
user's program as `python PROGRAM ARGS` would (a script, `-m module`, or a console script such as
pytest), unchanged. Whatever the program does, the launch file is written when it ends (atomically),
and the program's own exit code and traceback are what this process gives.
"""
from __future__ import annotations

import argparse
import importlib.machinery
import importlib.util
import json
import os
import runpy
import shutil
import signal
import sys
import threading
import time
import traceback


# Variables whose names say they hold a credential stay out of the launch file, which is meant to be shared.
_SECRET_WORDS = ("KEY", "TOKEN", "SECRET", "PASS", "CRED", "PRIVATE", "AUTH")  # PASS: DB_PASS, PASSWD, PASSPHRASE


def _parse(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    if "--" not in argv:
        raise SystemExit("irscope capture_boot: usage: --launches FILE --target T [--mode M] -- PROGRAM ARGS")
    i = argv.index("--")
    p = argparse.ArgumentParser(prog="irscope capture_boot")
    p.add_argument("--launches", required=True)
    p.add_argument("--target", required=True)
    p.add_argument("--mode", default="auto", choices=("auto", "record", "interpret", "gpu"))
    p.add_argument("--as", dest="emulate", metavar="TARGET", help="present TARGET to the program as its GPU "
                   "(capture_emulate.py); recording (or, with --mode interpret, interpreting), never on the real GPU")
    args = p.parse_args(argv[:i])
    # Absolute now, while the folder is irscope's: a program that changes directory (os.chdir) would
    # otherwise have its launch file written under the folder it moved to, and the capture lost.
    args.launches = os.path.abspath(args.launches)
    return args, argv[i + 1:]


def _has_gpu() -> bool:
    try:
        from triton.runtime import driver
        driver.active.get_current_device()
        return True
    except Exception:  # noqa: BLE001 - "0 active drivers": no GPU here
        return False


def _interpreter_args(program: list[str]) -> list[str]:
    """PROGRAM ARGS without a leading `python`: `-- python x.py` runs x.py in this interpreter."""
    if program and os.path.basename(program[0]).startswith("python") and shutil.which(program[0]):
        return program[1:]
    return program


def _script(name: str) -> str | None:
    """The file `name` runs: a path, else a console script on PATH (pytest)."""
    return name if os.path.exists(name) else shutil.which(name)


def _top_package_exists(module: str) -> bool:
    """Whether the first part of a dotted module name is importable in the child: from the current folder,
    irscope's own root (its PYTHONPATH) or this path, found without importing anything."""
    top = module.partition(".")[0]
    if not top.isidentifier():
        return False
    if top in sys.builtin_module_names or top in sys.modules:
        return True
    package_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return importlib.machinery.PathFinder.find_spec(top, [os.getcwd(), package_root, *sys.path]) is not None


def program_problem(program: list[str]) -> str | None:
    """Why PROGRAM ARGS cannot be run as `python PROGRAM ARGS` would run it, or None; `irscope capture`
    asks before it starts the child, so a typo is an error and not an empty capture over the last one."""
    args = _interpreter_args(program)
    if not args:
        return f"nothing to run after `{program[0]}`" if program else "no program given after --"
    if args[0] in ("-m", "-c"):
        if len(args) < 2:
            return f"`{args[0]}` needs an argument"
        if args[0] == "-m" and not _top_package_exists(args[1]):
            return f"no module named '{args[1].partition('.')[0]}'"
        return None
    if args[0].startswith("-"):
        return f"python option '{args[0]}' is not supported before the program"
    path = _script(args[0])
    if path is None:
        return f"cannot find program '{args[0]}'"
    # `-- python prog.py` runs prog.py whatever its #! line says, as python does; a program run bare
    # (`-- pytest`, `-- ./prog`) is run by the interpreter its #! line names
    return _not_python(args[0], path, bare=args is program)


# Interpreters a #! line may name that do not run Python. A shell line may still start a Python program:
# pip's launcher for a long or spaced venv path is `#!/bin/sh` then a line beginning '''exec'. Any other
# interpreter (python, pypy, `uv run --script`) may run Python.
_NOT_PYTHON = {"sh", "bash", "dash", "zsh", "ksh", "csh", "tcsh", "fish", "perl", "ruby", "node", "Rscript", "lua",
               "php", "awk", "make"}
_PIP_LAUNCHER = b"'''exec'"


def _not_python(name: str, path: str, bare: bool = True) -> str | None:
    """Why the file `path` (which `name` found) is not a Python program, or None. Like `coverage run`,
    capture runs a file as Python source, as python does; a file python would refuse before running a
    line (a binary such as `ls` or `bash`, a script whose #! line names another interpreter) is refused
    before anything runs. A folder or zip file runs its __main__.py, as python runs them."""
    if os.path.isdir(path):
        if not os.path.isfile(os.path.join(path, "__main__.py")):
            return f"can't find '__main__' module in '{name}'"
        return None
    try:
        with open(path, "rb") as f:
            head = f.read(8192)
    except OSError as e:
        return f"cannot read program '{name}': {e.strerror or e}"
    if head.startswith(b"PK\x03\x04"):  # a zip application (.pyz)
        return None
    where = "it" if name == path else path
    if b"\0" in head:
        return f"'{name}' is not a Python program: {where} is a binary file"
    if bare and head.startswith(b"#!"):
        first, _, rest = head[2:].partition(b"\n")
        line = first.decode("utf-8", "replace").strip()
        words = line.split()
        program = os.path.basename(words[0]) if words else ""
        if program == "env":  # #!/usr/bin/env [-S] NAME ...
            program = next((os.path.basename(w) for w in words[1:] if not w.startswith("-")), "")
        if program in _NOT_PYTHON and not rest.lstrip().startswith(_PIP_LAUNCHER):
            whose = "its #! line" if name == path else f"the #! line of {path}"
            return f"'{name}' is not a Python program: {whose} runs {line or 'nothing'}"
        return None
    if b"\0" in head:
        return f"'{name}' is not a Python program: {where} is a binary file"
    return None


class NotStarted(SystemExit):
    """The program could not be started (no such module): nothing of it ran, so nothing is recorded and
    the launch file of an earlier capture stays."""


def _run_program(program: list[str]) -> None:
    """Run PROGRAM ARGS in this process as `python PROGRAM ARGS` would."""
    problem = program_problem(program)
    if problem:
        raise NotStarted(problem)
    program = _interpreter_args(program)
    if program[0] == "-c":
        sys.argv = ["-c", *program[2:]]
        sys.path.insert(0, "")
        exec(compile(program[1], "<string>", "exec"), {"__name__": "__main__", "__builtins__": __builtins__})
        return
    if program[0] == "-m":
        name = program[1]
        sys.path.insert(0, os.getcwd())  # as `python -m` does (this process runs under -P: see irscope.cli.capture)
        try:  # as python says it, not as a traceback out of runpy
            spec = importlib.util.find_spec(name)
        except ImportError as e:
            # Finding pkg.sub imports pkg: a package that fails on an import of its own has run, and
            # its error is the program's (python would print it), not a missing module.
            if not e.name or not f"{name}.".startswith(f"{e.name}."):
                raise
            spec = None
        except ValueError:
            spec = None
        if spec is None:
            raise NotStarted(f"no module named '{name}'")
        if spec.submodule_search_locations is not None and importlib.util.find_spec(f"{name}.__main__") is None:
            raise NotStarted(f"no module named '{name}.__main__'; '{name}' is a package and cannot be "
                             "directly executed")
        sys.argv = [program[1], *program[2:]]
        runpy.run_module(program[1], run_name="__main__", alter_sys=True)
        return
    path = _script(program[0])
    sys.argv = [path, *program[1:]]
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    runpy.run_path(path, run_name="__main__")


def _hook_triton(args: argparse.Namespace):
    """The Recorder for this run, with Triton hooked (and torch.cuda emulated under --as)."""
    mode = args.mode
    if mode == "auto":
        mode = "record" if args.emulate else ("gpu" if _has_gpu() else "record")
    if mode == "interpret":
        os.environ["TRITON_INTERPRET"] = "1"  # read when @triton.jit runs, so before the program imports

    from ..targets import get_target
    from . import capture
    from .runtime import current_target

    target = current_target() if mode == "gpu" else get_target(args.emulate or args.target)
    from triton import knobs
    recorder = capture.Recorder(target, mode, line_info=not knobs.compilation.disable_line_info)
    if args.emulate:
        from .capture_emulate import emulate
        recorder.emulation = emulate(target, executed=mode == "interpret")
    capture.install(recorder)
    return recorder


def _boot_failed(launches: str, error: Exception) -> None:
    """Tell the parent that irscope's own set-up failed before the program started: a package it needs
    is missing (`missing`), or a bug (`error`). It reports that as one error and keeps the last capture."""
    if os.environ.get("IRSCOPE_DEBUG"):
        traceback.print_exc()
    from ..errors import IrscopeError

    said = {"missing": error.name if isinstance(error, ModuleNotFoundError) else None,
            "error": f"{type(error).__name__}: {error}"}
    if isinstance(error, IrscopeError):  # the parent checks the same things first; said as it is
        said.update(error=error.message, hint=error.hint, exit_code=int(error.exit_code))
    with open(f"{launches}.boot-failed", "w") as f:
        json.dump(said, f)


def _refused(launches: str, said: dict) -> None:
    """Tell the parent that the capture is refused (`Recorder.refused`): it reports that as a usage error
    and keeps the last capture, as for a set-up that failed."""
    from ..errors import ExitCode
    with open(f"{launches}.boot-failed", "w") as f:
        json.dump({"missing": None, **said, "exit_code": int(ExitCode.USAGE)}, f)


# irscope passes a SIGINT it gets on to the program (one sent to irscope alone would never reach it); a
# terminal's Ctrl-C reaches both, so the program would get it twice and be interrupted in its own clean-up.
# Two within this many seconds are one.
FORWARDED_WINDOW_S = 0.5


def _one_interrupt_per_ctrl_c() -> None:
    """SIGINT raises KeyboardInterrupt, as Python's default handler does, except a second one within
    FORWARDED_WINDOW_S of the first (irscope's forwarding of the same Ctrl-C). A program that installs its
    own handler replaces this one."""
    if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        return  # SIGINT ignored or handled by whoever started us: left as it is
    last = [-FORWARDED_WINDOW_S]

    def on_sigint(signum, frame):
        now = time.monotonic()
        if now - last[0] < FORWARDED_WINDOW_S:
            return
        last[0] = now
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, on_sigint)


def _wait_for_threads() -> None:
    """Wait for the threads the program left running, as Python does when a program's main module ends
    (before its atexit handlers): what they launch belongs in the launch file, which is written after this
    (it was written at once, and their launches were lost). A Ctrl-C ends the wait, as it ends Python's.

    Python first runs the exit hooks of `threading._register_atexit`: a ThreadPoolExecutor never shut down
    has idle workers that end only once its hook tells them to, and waiting for them hung the capture."""
    try:
        for hook in reversed(list(getattr(threading, "_threading_atexits", ()))):
            try:
                hook()  # (concurrent.futures' hooks: run again at the exit, where they do nothing more)
            except Exception:  # noqa: BLE001 - the program's to report at its exit, not irscope's here
                pass
        while True:
            running = [t for t in threading.enumerate()
                       if t is not threading.current_thread() and not t.daemon and t.is_alive()]
            if not running:
                return
            for t in running:
                t.join()
    except KeyboardInterrupt:
        pass


def main(argv: list[str] | None = None) -> None:
    args, program = _parse(list(sys.argv[1:] if argv is None else argv))
    environ_before = dict(os.environ)
    try:
        recorder = _hook_triton(args)
    except Exception as e:  # noqa: BLE001 - nothing of the program ran: said to the parent, not a traceback
        _boot_failed(args.launches, e)
        raise SystemExit(2) from None
    from .capture import GluonNotInterpreted
    code: int | None = 0
    started = True
    boot_pid = os.getpid()  # a child the program forks runs this `finally` too when it exits
    _one_interrupt_per_ctrl_c()
    try:
        _run_program(program)
    except NotStarted as e:
        # Said to the parent instead of a launch file: it reports this as the error and keeps the last
        # capture's launches.json.
        started = False
        with open(f"{args.launches}.not-started", "w") as f:
            f.write(str(e.code))
        raise SystemExit(2) from None
    except GluonNotInterpreted:
        code = 2
        raise SystemExit(2) from None  # said to the parent (the `finally`), not as the program's traceback
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        raise
    except BaseException:
        code = 1
        raise
    finally:
        # Only the program's own process writes: a forked child that outlived it would leave its launch
        # file behind in the output folder, or replace the program's (its launches are not recorded).
        if started and os.getpid() == boot_pid:
            _wait_for_threads()
            # The program has ended: a second Ctrl-C (irscope waits for this file) must not cut it short.
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            if recorder.refused:  # even if the program caught the error and went on
                _refused(args.launches, recorder.refused)
            else:
                from ..store.launches import write_launches
                recorder.environment = {k: v for k, v in os.environ.items()
                                        if environ_before.get(k) != v and k != "TRITON_INTERPRET"
                                        and not any(w in k.upper() for w in _SECRET_WORDS)}
                write_launches(args.launches, recorder.document(program, code))


if __name__ == "__main__":
    main()
