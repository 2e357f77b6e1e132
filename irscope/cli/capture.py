"""`irscope capture [--target T|all] [--out DIR] [--execute] -- PROGRAM ARGS...`: run a program unchanged,
record every distinct Triton launch it makes into DIR/launches.json, and compile each for the targets.

The program runs in a child process (irscope.harness.capture_boot), like `coverage run`: its output,
traceback and exit code are its own, and irscope's exit code is the program's when that is not 0.
"""
from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

from ..errors import CompileError, EnvironmentProblem, ExitCode, IrscopeError, UsageError, error_summary
from ..render.terminal import ProgressLine, plural
from .options import positive_int, positive_seconds


# The forms of PROGRAM, said wherever one is refused (docs/capture.md, "What it runs").
PROGRAM_FORMS = ("irscope capture runs Python programs: -- python prog.py ARGS, -- -m module ARGS, "
                 "-- python -c CODE, or a Python console script on PATH (-- pytest ARGS)")


def add_parser(sub) -> None:
    p = sub.add_parser("capture", help="run a program and record (and compile) every Triton launch it makes",
                       description="Run PROGRAM unchanged and record each distinct Triton launch once per "
                                   "specialisation into DIR/launches.json (docs/capture.md), then compile each for "
                                   "the targets. Without a GPU, kernels are not executed unless --execute is given "
                                   "(then Triton's interpreter runs them); on a GPU the real JIT runs.")
    p.add_argument("program", nargs=argparse.REMAINDER, metavar="-- PROGRAM ARGS",
                   help="what to run: `-- python my_model.py ARGS`, `-- pytest tests/x.py`, `-- -m module`, "
                        "`-- python -c CODE`")
    p.add_argument("--target", "-t",
                   help="target(s) to compile the captured launches for: sm_90a (default; with --as, that "
                        "target), a list, or all; the first is the one the JIT specialises for while recording "
                        "without a GPU (unless --as names another)")
    p.add_argument("--out", "-o", metavar="DIR", help="where launches.json and the snapshots go "
                                                    "(default: $IRSCOPE_OUT or ./irscope-snapshots)")
    p.add_argument("--as", dest="emulate", metavar="TARGET",
                   help="an emulation for libraries that ask torch.cuda for their GPU: torch.cuda answers as one "
                        "TARGET device (NVIDIA) and 'cuda' tensors are made on the CPU; the JIT specialises for "
                        "TARGET; recorded in the launch file; never runs the real GPU (docs/capture.md)")
    p.add_argument("--execute", action="store_true",
                   help="without a GPU, run the kernels in Triton's interpreter so the program's results are real")
    p.add_argument("--no-compile", action="store_true", help="only record: write launches.json, compile nothing")
    p.add_argument("--jobs", "-j", type=positive_int, metavar="N", help="compiles at once (default: one per core)")
    p.add_argument("--timeout", type=positive_seconds, default=300.0, metavar="SECONDS",
                   help="give up on a compile after this long (default: 300)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace, ui) -> int:
    # stdout is the program's: `irscope capture -- python prog.py > out.txt` leaves out.txt as the program
    # wrote it, so irscope's own lines (the summary, one a compile) go to stderr.
    ui = ui.on_stderr()
    from ..store.launches import read_launches, write_launches
    from ..store.roots import default_out, ensure_root
    from ..targets import parse_targets

    program = list(args.program)
    if program[:1] == ["--"]:
        program = program[1:]
    if not program:
        raise UsageError("no program to capture", "put it after --: irscope capture -- python my_model.py")
    from ..harness.capture_boot import program_problem
    problem = program_problem(program)
    if problem:
        raise UsageError(f"{problem} (irscope capture -- {' '.join(program)})", PROGRAM_FORMS)
    targets = parse_targets(args.target or args.emulate or "sm_90a")
    emulate = None
    if args.emulate:
        from ..harness.capture_emulate import device_properties
        from ..targets import get_target
        emulate = get_target(args.emulate)
        device_properties(emulate)  # refuses a target it cannot stand for, before the program starts
        if importlib.util.find_spec("torch") is None:
            raise EnvironmentProblem(f"--as {emulate.name} emulates a GPU through torch.cuda, and torch is not "
                                     f"installed in {sys.executable}",
                                     "pip install torch (its CPU build is enough), or capture without --as; "
                                     "nothing ran")
    out = ensure_root(Path(args.out) if args.out else default_out())
    out.mkdir(parents=True, exist_ok=True)  # the child writes its launch file into it
    final = out / "launches.json"
    _refuse_to_replace(final)
    raw = out / f".launches.json.child-{os.getpid()}"
    mode = "interpret" if args.execute else "auto"
    package_root = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [package_root, os.environ.get("PYTHONPATH")])))
    if getattr(args, "debug", False):
        env["IRSCOPE_DEBUG"] = "1"  # the child prints the traceback of a set-up that failed
    # -P: the folder the user stands in is not put before irscope's and Triton's own modules (a `triton.py`
    # or `irscope.py` there would shadow them); the child puts on sys.path what python would for the program.
    child = [sys.executable, "-P", "-m", "irscope.harness.capture_boot", "--launches", str(raw), "--target",
             targets[0].name, "--mode", mode, *(["--as", emulate.name] if emulate else []), "--", *program]
    code = _wait_for(subprocess.Popen(child, env=env))
    for stale in out.glob(f".{raw.name}.tmp-*"):  # the child was killed while it wrote
        stale.unlink(missing_ok=True)
    signal_name = None
    if code < 0:  # killed by a signal: the status a shell gives, 128 + N
        signal_name = _signal_name(-code)
        code = 128 - code
    _refuse_what_did_not_start(raw, program)
    if not raw.is_file():
        if not code:
            raise UsageError("the program exited with code 0 but irscope could not write what it captured",
                             "a program that ends with os._exit() skips the exit that writes the launch file: end "
                             "it with sys.exit() or by returning (if it does neither, this is an irscope bug: "
                             "please report it)")
        how = f"was killed by {signal_name}" if signal_name else f"ended with exit code {code} (os._exit or a kill)"
        ui.warn(f"the program {how} before irscope could write what it captured: nothing was recorded"
                + (f" and the last capture's {final} is kept" if final.exists() else ""))
        return code
    try:
        data = read_launches(raw)
        # A run that launched nothing does not replace an earlier capture (a typo'd argument, a program
        # that failed at its start): the last launch file is kept and the user is told.
        kept = not data["launches"] and (final.exists() or final.is_symlink())
        if not kept:
            final = _where_to_write(final, ui)
            write_launches(final, data)
    finally:
        raw.unlink(missing_ok=True)
    s = ui.style
    if not kept:
        kernels = {launch["kernel"] for launch in data["launches"]}
        launches = sum(launch.get("count") or 0 for launch in data["launches"])
        counted = f", {plural(launches, 'launch', 'launches')}" if any("count" in launch
                                                                      for launch in data["launches"]) else ""
        emulated = " emulated" if data.get("emulation") else ""
        ui.print(f"{s('captured', 'bold')}  {plural(len(data['launches']), 'specialisation')} of "
                 f"{plural(len(kernels), 'kernel')}"
                 f"{counted} ({data.get('mode')} mode, for{emulated} {data['captured_for']['name']})  ->  {final}")
    for item in data.get("skipped") or ():
        ui.warn(f"not recorded: {item.get('kernel', '?')} at {item.get('first_call') or '?'}: {item['reason']}")
    if kept:
        exited = f" (it exited with code {code})" if code else ""
        ui.warn(f"the program launched no Triton kernel{exited}: the last capture's {final} is kept, not replaced")
        return code
    if code:
        ui.warn(f"the program exited with code {code}; what it launched before that is in {final}")
    if args.no_compile or not data["launches"]:
        return code
    failed = compile_launches(ui, final, targets, out, jobs=args.jobs, timeout=args.timeout)
    if code:
        return code
    if failed:
        raise failed_compiles_error(failed, out)
    return 0


def _wait_for(proc: subprocess.Popen) -> int:
    """The child's exit status. A Ctrl-C reaches the child from the terminal as well: the program ends as
    it would, and the child writes what it launched before, so irscope waits for that (subprocess.call
    killed it a quarter of a second later). A second Ctrl-C stops it at once."""
    interrupted = False
    while True:
        try:
            return proc.wait()
        except KeyboardInterrupt:
            if interrupted:
                proc.kill()
                proc.wait()
                return 130
            interrupted = True
            # A SIGINT sent to irscope alone (`kill -INT`, `timeout -s INT`, a job runner) never reached the
            # program, which then ran on while irscope waited: pass it on. When it came from a terminal the
            # program has it already; the child takes two within FORWARDED_WINDOW_S as one (capture_boot).
            try:
                proc.send_signal(signal.SIGINT)
            except OSError:
                pass


def _refuse_to_replace(final: Path) -> None:
    """UsageError, before the program runs, when `final` is something a capture must not replace: a file
    that is not a launch file (irscope writes `"format": "irscope-launches"` at its head), or a folder."""
    if not (final.exists() or final.is_symlink()):
        return
    hint = "pass --out another folder for the capture (or move that one away); nothing ran"
    if not final.is_file():
        raise UsageError(f"'{final}' is not a file, so irscope capture cannot write its launch file there", hint)
    try:
        with open(final, "rb") as f:
            head = f.read(4096)
    except OSError as e:
        raise UsageError(f"cannot read '{final}' to check it is an earlier capture: {e.strerror or e}", hint) from None
    if not re.search(rb'"format"\s*:\s*"irscope-launches"', head):
        raise UsageError(f"'{final}' is not a launch file irscope wrote, and irscope capture would replace it", hint)


def _where_to_write(final: Path, ui) -> Path:
    """`final`, unless the program wrote a file of its own there while it ran (it was checked before): that
    file stays, and the capture goes beside it under a name that is free, said in a warning."""
    try:
        _refuse_to_replace(final)
        return final
    except UsageError:
        pass
    n = 1
    while (final.with_name(f"launches-{n}.json").exists() or final.with_name(f"launches-{n}.json").is_symlink()):
        n += 1
    aside = final.with_name(f"launches-{n}.json")
    ui.warn(f"the program wrote '{final}' of its own while it ran, so irscope kept it and wrote the capture to "
            f"'{aside}' (pass --out a folder the program does not write to)")
    return aside


def _refuse_what_did_not_start(raw: Path, program: list[str]) -> None:
    """Raise what the child said when nothing of the program ran: the program could not be started
    (`.not-started`), or irscope's own set-up failed first (`.boot-failed`). The last launch file stays."""
    command = f"irscope capture -- {' '.join(program)}"
    not_started = raw.with_name(raw.name + ".not-started")
    if not_started.is_file():
        why = not_started.read_text()
        not_started.unlink(missing_ok=True)
        raise UsageError(f"{why} ({command})",
                         "nothing ran and the last capture's launches.json is kept; check the module's name "
                         "and that the program runs with plain python")
    failed = raw.with_name(raw.name + ".boot-failed")
    if not failed.is_file():
        return
    try:
        said = json.loads(failed.read_text())
    except ValueError:
        said = {}
    finally:
        failed.unlink(missing_ok=True)
    error = str(said.get("error") or "no reason given")
    if said.get("missing"):
        raise EnvironmentProblem(f"irscope capture needs the module '{said['missing']}', which {sys.executable} "
                                 f"cannot import ({error})",
                                 f"pip install {said['missing']} into this Python; nothing ran and the last "
                                 "capture's launches.json is kept")
    if said.get("exit_code"):
        e = IrscopeError(error, said.get("hint"))
        e.exit_code = ExitCode(said["exit_code"])
        raise e
    e = IrscopeError(f"irscope capture failed to set up before the program started: {error}",
                     "this is a bug in irscope (nothing ran and the last capture's launches.json is kept); rerun "
                     "with --debug for the traceback and report it")
    e.exit_code = ExitCode.INTERNAL
    raise e


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def compile_launches(ui, path: Path, targets, out: Path, *, jobs=None, timeout=300.0, line_info=None, passes="",
                     layouts=False, executor=None, allow_goldens=False) -> int:
    """Compile every launch of a launch file for `targets` into `out`; print one line a point. Returns
    how many failed. `passes`, `layouts`, `executor`, `allow_goldens`: as `irscope compile` has them."""
    from ..harness.batch import compile_points
    from ..harness.launches import launch_points

    points, skipped = launch_points(path, targets, line_info=line_info)
    if not points and not skipped:
        from ..errors import UsageError
        raise UsageError(f"{path} records no launches: nothing to compile",
                         "capture a program that launches a Triton kernel: irscope capture -- python prog.py")
    for launch_id, target, why in skipped:
        ui.warn(f"not compiled: {launch_id} for {target}: {why}")
    progress = ProgressLine(ui.err)

    def on_progress(p) -> None:
        progress.update(f"[{p.done}/{p.total}] compiling captured launches")

    try:
        if passes:
            points = [dataclasses.replace(p, options=p.options.with_(passes=passes)) for p in points]
        outcomes = compile_points(points, out, workers=jobs, timeout=timeout, on_progress=on_progress,
                                  layouts=layouts, executor=executor, allow_goldens=allow_goldens)
    finally:
        progress.close()
    s = ui.style
    for o in outcomes:
        status = s("ok", "green") if o.ok else s(o.status, "red", "bold")
        ui.print(f"{o.label}  {status}  {o.seconds:.1f} s")
        if not o.ok and o.error:
            stage = o.error.get("stage")
            at = f"at {stage}: " if stage and stage != "?" else ""
            ui.print(f"  {s('error', 'red')}    {at}{error_summary(o.error)}")
    return [o for o in outcomes if not o.ok]


def failed_compiles_error(failed, out: Path):
    """The error for captured compiles that failed: how many, and the first one's reason (the summary said
    only "N captured compiles failed", the cause being in a folder's irscope.json)."""
    first = failed[0]
    stage = (first.error or {}).get("stage")
    at = f" at stage {stage}" if stage and stage != "?" else f" ({first.status})"
    why = error_summary(first.error) if first.error else str(first.status)
    where = f"irscope show {first.path}" if first.path is not None else f"the failed snapshots under {out}"
    return CompileError(f"{len(failed)} captured compile{'s' if len(failed) != 1 else ''} failed; first: "
                        f"{first.label}{at}: {why}", f"the reasons are under each line above; {where} for the "
                        "full log")
