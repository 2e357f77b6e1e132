"""The one default output root: where snapshots go, and where readers look, unless told otherwise."""
from __future__ import annotations

import os
from pathlib import Path

from ..errors import UsageError

DEFAULT_OUT = "irscope-snapshots"


def default_out() -> Path:
    """Where snapshots go unless --out says otherwise: $IRSCOPE_OUT, else ./irscope-snapshots."""
    return Path(os.environ.get("IRSCOPE_OUT") or DEFAULT_OUT)


def ensure_root(out: Path) -> Path:
    """Check that the output root can be made and written, as a usage error before anything compiles
    (otherwise every compile worker crashes on it and is reported as a crashed compile). Folders made to
    prove it are removed again, so a command refused later leaves none."""
    out = Path(out)
    hint = "pass --out a folder you can write (or set $IRSCOPE_OUT to one)"
    missing = []  # the folders to make, deepest first
    existing = out
    while not existing.exists() and existing != existing.parent:
        missing.append(existing)
        existing = existing.parent
    if not existing.is_dir():
        raise UsageError(f"the output folder '{out}' is a file, not a folder" if existing == out else
                         f"cannot make the output folder '{out}': '{existing}' is a file", hint)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UsageError(f"cannot make the output folder '{out}': {e.strerror or e}", hint) from None
    for folder in missing:
        try:
            folder.rmdir()
        except OSError:  # something else wrote into it meanwhile: it stays
            break
    if not missing and not os.access(out, os.W_OK | os.X_OK):
        raise UsageError(f"cannot write into the output folder '{out}'", hint)
    return out
