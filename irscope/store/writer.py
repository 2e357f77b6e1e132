"""The snapshot folder written from a compile: every file by name, and irscope.json (its format is in
docs/snapshot-format.md). Reads a harness CompileResult by its attributes; imports neither Triton nor the
harness, so the format lives in the store, beside the reader that checks it.
"""
from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

from .snapshot import FORMAT, LOG_DIR, META_FILE, PYTHON_FILE


def snapshot_meta(result) -> dict:
    """irscope.json for a CompileResult (documented in docs/snapshot-format.md)."""
    spec, opts = result.spec, result.options
    stages = {}
    for stage, data in result.stages.items():
        raw = data.encode() if isinstance(data, str) else data
        stages[stage] = {"file": f"{spec.fn_name}.{stage}", "bytes": len(raw),
                         "lines": raw.count(b"\n") if isinstance(data, str) else None,
                         "sha256": hashlib.sha256(raw).hexdigest()}
    return {
        "format": FORMAT,
        "kernel": spec.name,
        "function": spec.fn_name,
        "variant": result.variant,
        "description": spec.description,
        "source_file": _display_path(spec.path),
        "target": {**result.target.as_dict(), "vendor": result.target.vendor},
        "status": "ok" if result.ok else "failed",
        "error": result.error,
        "request": opts.to_dict(),
        "compile_options": result.compile_options,
        "backend_options": result.backend_options,
        **({"environment": result.environment} if getattr(result, "environment", None) else {}),
        "specialisation": result.specialisation,
        "resources": result.resources.as_dict(),
        "times_ms": {k: round(v, 3) for k, v in result.times_ms.items()},
        "versions": result.versions,
        "content_key": result.content_key,
        "stages": stages,
        **({"passes": result.passes.summary()} if result.passes is not None else {}),
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


def _display_path(path: str) -> str | None:
    if not path:  # a kernel from no file (a function handed to the pytest fixture): not "." (the cwd)
        return None
    try:
        return str(Path(path).resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return path


def snapshot_files(result) -> dict[str, bytes | str]:
    """Every file of a snapshot folder, by name; irscope.json last, written only once the rest are."""
    fn = result.spec.fn_name
    files: dict[str, bytes | str] = {f"{fn}.{stage}": data for stage, data in result.stages.items()}
    files[PYTHON_FILE] = result.python_source
    if result.triton_metadata:
        files[f"{fn}.json"] = json.dumps(result.triton_metadata, indent=1, sort_keys=True, default=str)
    for name, text in result.logs.items():
        files[f"{LOG_DIR}/{name}.log"] = text
    if result.passes is not None:
        files.update(result.passes.files())
    files[META_FILE] = json.dumps(snapshot_meta(result), indent=1, default=str) + "\n"
    return files
