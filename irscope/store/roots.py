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
    """Make the output root (and its parents), or refuse it as a usage error before anything compiles:
    otherwise every compile worker would crash on it and be reported as a crashed compile."""
    out = Path(out)
    hint = "pass --out a folder you can write (or set $IRSCOPE_OUT to one)"
    if out.exists() and not out.is_dir():
        raise UsageError(f"the output folder '{out}' is a file, not a folder", hint)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UsageError(f"cannot make the output folder '{out}': {e.strerror or e}", hint) from None
    if not os.access(out, os.W_OK | os.X_OK):
        raise UsageError(f"cannot write into the output folder '{out}'", hint)
    return out
