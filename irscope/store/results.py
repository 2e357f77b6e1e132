"""GPU results kept beside the snapshot they belong to: `runs.json` (runs and timings) and
`verify.json` (JIT versus device-less compiles), read back by `irscope show`, the TUI and `irscope diff`.

A snapshot's compiled stages never change after it is written; these files only grow, each record
appended whole (written to a temporary file, then renamed over the old one). No torch, no Triton.
"""
from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any

from ..errors import SnapshotError
from .folder import replace_file
from .schema import (ANY, BOOL, INT, MAX_JSON_BYTES, NUM, POSITIVE, SCALAR, STR, Check, inside, list_of, loads, map_of,
                     obj, opt, validate)

RUNS_FILE = "runs.json"
VERIFY_FILE = "verify.json"


def append(folder: Path, name: str, record: dict) -> Path:
    """Append one record to a JSON list file in a snapshot folder, atomically."""
    path = Path(folder) / name
    records = _read(path, Path(folder))  # checked as any reader checks it: inside, a regular file, bounded
    records.append(finite({"recorded": time.strftime("%Y-%m-%dT%H:%M:%S%z"), **record}))
    # (replace_file: the file's mode follows the umask, as the folder's other files do; mkstemp made it 0600)
    replace_file(Path(folder), name, (json.dumps(records, indent=1, default=str) + "\n").encode())
    return path


def finite(value):
    """`value` with NaN and infinities as null: JSON has no such numbers, and readers refuse Python's spelling
    (a record here, `rank --json`'s slowdown over a recorded time of 1e-300 ms)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value


# The fields the readers use (show, the TUI, diff); a record may hold more.
_TIMING = opt(obj(ms=opt(POSITIVE), tflops=opt(NUM), gbps=opt(NUM)))
_FRACTIONS = dict(copy_fraction=opt(NUM), matmul_fraction=opt(NUM))
# `irscope run --profile`: Proton's figures of the run (irscope/gpu/profile.py, docs/snapshot-format.md).
_PROFILE = opt(obj(
    scope=opt(STR), error=opt(STR), iterations=opt(INT), ms=opt(NUM), flops=opt(NUM), bytes=opt(NUM), tflops=opt(NUM),
    gbps=opt(NUM), metrics_summed=opt(BOOL), file=opt(STR), proton=opt(STR), device=opt(map_of(ANY)),
    kernels=opt(list_of(obj(("name",), name=STR, calls=opt(INT), total_ms=opt(NUM), mean_ms=opt(NUM)))),
    **_FRACTIONS))
RUN_SCHEMA: Check = list_of(obj(
    recorded=STR, source=opt(STR), ok=opt(BOOL), size_name=opt(SCALAR), size=opt(map_of(INT)), error=opt(STR),
    label=opt(STR), gpu=opt(obj(copy_gbps=opt(POSITIVE), matmul_tflops=opt(POSITIVE), device=opt(STR))),
    bench=opt(obj(kernel=_TIMING, speedups=opt(map_of(opt(NUM))), flops=opt(NUM), bytes=opt(NUM), **_FRACTIONS)),
    profile=_PROFILE, versions=opt(map_of(SCALAR)),
))
VERIFY_SCHEMA: Check = list_of(obj(
    recorded=STR, target=opt(SCALAR), versions=opt(map_of(SCALAR)),
    stages=opt(list_of(obj(("stage",), stage=STR, identical=opt(BOOL)))),
))
_SCHEMAS = {RUNS_FILE: RUN_SCHEMA, VERIFY_FILE: VERIFY_SCHEMA}


def _read(path: Path, root: Path | None = None) -> list[dict]:
    if not (path.is_file() or path.is_symlink()):
        return []
    real = inside(root, path, path.name, MAX_JSON_BYTES) if root is not None else path
    try:
        data = loads(real.read_text())
    except (OSError, ValueError) as e:
        raise SnapshotError(f"{path} is damaged: {e}", "move it aside: it only holds earlier GPU results") from None
    if not isinstance(data, list):
        raise SnapshotError(f"{path} is not a list of results", "move it aside and run again")
    validate(data, _SCHEMAS.get(path.name, list_of(map_of(ANY))), path,
             "move it aside: it only holds earlier GPU results")
    return data


def runs(snapshot) -> list[dict]:
    """The GPU runs recorded for a snapshot, oldest first."""
    return _read(Path(snapshot.path) / RUNS_FILE, Path(snapshot.path))


def verifications(snapshot) -> list[dict]:
    return _read(Path(snapshot.path) / VERIFY_FILE, Path(snapshot.path))


def summary(record: dict) -> str:
    """One line for a run record: where, what, verdict, time and rate."""
    gpu = record.get("gpu") or {}
    check = "ok" if record.get("ok") else "FAILED"
    parts = [f"{record.get('source', 'jit')} on {gpu.get('device', '?')}", f"size {record.get('size_name', '?')}",
             check]
    bench: dict[str, Any] = record.get("bench") or {}
    k = bench.get("kernel") or {}
    if k.get("ms") is not None:
        parts.append(f"{k['ms']:.3f} ms")
        if k.get("tflops"):
            parts.append(f"{k['tflops']:.0f} TFLOP/s")
        if k.get("gbps"):
            parts.append(f"{k['gbps']:.0f} GB/s")
        for name, x in (bench.get("speedups") or {}).items():
            if x is not None:
                parts.append(f"{x:.2f}x vs {name}")
    prof: dict[str, Any] = record.get("profile") or {}
    if prof.get("ms") is not None:
        rates = [f"{prof['tflops']:.1f} TFLOP/s" if prof.get("tflops") else "",
                 f"{prof['gbps']:.0f} GB/s" if prof.get("gbps") else "",
                 f"{_pct(prof['copy_fraction'])} of copy" if prof.get("copy_fraction") is not None else "",
                 f"{_pct(prof['matmul_fraction'])} of matmul" if prof.get("matmul_fraction") is not None else ""]
        parts.append(f"proton {prof['ms']:.3f} ms" + "".join(f", {r}" for r in rates if r))
    versions = record.get("versions") or {}
    parts.append(", ".join(f"{k} {v}" for k, v in versions.items()))
    return " · ".join(p for p in parts if p)


def _pct(v: float) -> str:
    return f"{v:.1%}" if abs(v) < 0.1 else f"{v:.0%}"
