"""`python -m irscope.harness.capture_boot --launches FILE --target T [--mode M] -- PROGRAM ARGS...`

The child process `irscope capture` starts: it hooks Triton (irscope.harness.capture), then runs the
user's program as `python PROGRAM ARGS` would (a script, `-m module`, or a console script such as
pytest), unchanged. Whatever the program does, the launch file is written when it ends (atomically),
and the program's own exit code and traceback are what this process gives.
"""
from __future__ import annotations

import argparse
import os
import runpy
import shutil
import sys


# Variables whose names say they hold a credential stay out of the launch file, which is meant to be shared.
_SECRET_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH")


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
    return p.parse_args(argv[:i]), argv[i + 1:]


def _has_gpu() -> bool:
    try:
        from triton.runtime import driver
        driver.active.get_current_device()
        return True
    except Exception:  # noqa: BLE001 - "0 active drivers": no GPU here
        return False


def _run_program(program: list[str]) -> None:
    """Run PROGRAM ARGS in this process as `python PROGRAM ARGS` would."""
    if program and os.path.basename(program[0]).startswith("python") and shutil.which(program[0]):
        program = program[1:]  # `-- python x.py`: this interpreter is the python
    if not program:
        raise SystemExit("irscope capture: no program given after --")
    if program[0] == "-m":
        sys.argv = [program[1], *program[2:]]
        runpy.run_module(program[1], run_name="__main__", alter_sys=True)
        return
    path = program[0] if os.path.exists(program[0]) else shutil.which(program[0])
    if path is None:
        raise SystemExit(f"irscope capture: cannot find program '{program[0]}'")
    sys.argv = [path, *program[1:]]
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    runpy.run_path(path, run_name="__main__")


def main(argv: list[str] | None = None) -> None:
    args, program = _parse(list(sys.argv[1:] if argv is None else argv))
    environ_before = dict(os.environ)
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
    code: int | None = 0
    try:
        _run_program(program)
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        raise
    except BaseException:
        code = 1
        raise
    finally:
        from ..store.launches import write_launches
        recorder.environment = {k: v for k, v in os.environ.items()
                                if environ_before.get(k) != v and k != "TRITON_INTERPRET"
                                and not any(w in k.upper() for w in _SECRET_WORDS)}
        write_launches(args.launches, recorder.document(program, code))


if __name__ == "__main__":
    main()
