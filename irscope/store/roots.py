"""The one default output root: where snapshots go, and where readers look, unless told otherwise."""
from __future__ import annotations

import os
from pathlib import Path

DEFAULT_OUT = "irscope-snapshots"


def default_out() -> Path:
    """Where snapshots go unless --out says otherwise: $IRSCOPE_OUT, else ./irscope-snapshots."""
    return Path(os.environ.get("IRSCOPE_OUT") or DEFAULT_OUT)
