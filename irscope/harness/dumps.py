"""What a compile writes outside Python: the fd 1/2 capture of MLIR and LLVM diagnostics, and Triton's
per-pass IR dumps turned on and marked stage by stage for the pass timeline (docs/passes.md).
"""
from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from pathlib import Path
from typing import Any, Iterator

from ..errors import UsageError



class _FdLog:
    def __init__(self) -> None:
        self.text = ""

    def getvalue(self) -> str:
        return self.text


@contextlib.contextmanager
def captured_fds(enabled: bool, recorder=None, path: Path | None = None) -> Iterator[_FdLog]:
    """Redirect fds 1 and 2 to a file; its text becomes the log, or goes through `recorder` (pass
    dumps, read as a stream: they can be 150 MB), which returns what is left. With `path` the file is
    that one, so that a parent can read what LLVM wrote before it aborted the process; it is removed
    when the compile returns."""
    log = _FdLog()
    if not enabled:
        yield log
        return
    sys.stdout.flush()
    sys.stderr.flush()
    with (open(path, "w+b") if path is not None else tempfile.TemporaryFile(mode="w+b")) as tmp:
        saved = [os.dup(1), os.dup(2)]
        os.dup2(tmp.fileno(), 1)
        os.dup2(tmp.fileno(), 2)
        try:
            yield log
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved:
                os.close(fd)
            tmp.seek(0)
            log.text = recorder.read(tmp) if recorder is not None else tmp.read().decode(errors="replace")
    if path is not None:
        Path(path).unlink(missing_ok=True)


@contextlib.contextmanager
def pass_dumps(level: str) -> Iterator[Any]:
    """Turn on Triton's per-pass IR dumps (to stderr, which the caller captures) and mark where each
    stage starts and what IR it ends with; yields the PassRecorder that reads them (None: off).

    MLIR_ENABLE_DUMP prints the module before every pass of each `pm.enable_debug()` pass manager;
    MLIR_DUMP_PATH is cleared because Triton opens that file once per process and buffers it.
    Each pass manager's pipeline string tells the passes it runs from those nested inside them.
    LLVM_IR_ENABLE_DUMP (level "all") adds LLVM's print-after-all. docs/passes.md has the details.
    Like the fd capture, this changes process-wide state for the length of one compile.
    """
    if not level:
        yield None
        return
    if level not in ("mlir", "all"):
        raise UsageError(f"unknown pass capture '{level}'", "--passes records Triton's MLIR passes; --passes all "
                         "adds LLVM's")
    from triton import knobs
    from triton._C.libtriton import ir

    from ..passes.dump import final_marker, pipeline_marker, stage_marker
    from ..passes.record import PassRecorder

    previous = knobs.runtime.add_stages_inspection_hook
    original_run = ir.pass_manager.run

    def run_pipeline(pm, *args, **kwargs):  # say which passes this pass manager runs at its top level
        os.write(2, pipeline_marker(pm.get_pipeline_str()))
        return original_run(pm, *args, **kwargs)

    def marked(stage: str, fn):
        def run(src, metadata):
            os.write(2, stage_marker(stage))
            out = fn(src, metadata)
            if hasattr(src, "get_int_attr"):  # an MLIR module, changed in place: the IR its last pass left
                os.write(2, final_marker(stage, str(src)))
            return out
        return run

    def hook(*args):
        if not args:  # Triton 3.9 asks for a part of the cache key first (3.6 does not)
            key, digest = previous() if previous is not None else ("", "")
            return key + "+irscope-passes", digest
        if previous is not None:
            previous(*args)
        stages = args[1]
        for name, fn in list(stages.items()):
            stages[name] = marked(name, fn)

    env = {"MLIR_ENABLE_DUMP": "1", "MLIR_DUMP_PATH": None, "LLVM_IR_ENABLE_DUMP": "1" if level == "all" else None}
    saved = _set_environ(env)
    try:
        with knobs.runtime.scope():
            knobs.runtime.add_stages_inspection_hook = hook
            ir.pass_manager.run = run_pipeline
            yield PassRecorder(level)
    finally:
        ir.pass_manager.run = original_run
        _set_environ(saved)


def _set_environ(values: dict[str, str | None]) -> dict[str, str | None]:
    """Set (None: unset) environment variables the C++ side reads; returns their previous values."""
    saved = {k: os.environ.get(k) for k in values}
    for k, v in values.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
    return saved


