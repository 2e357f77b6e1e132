"""Comparing snapshots, and the one line-diff engine: align.py (the anchored line aligner, rows for a
side-by-side view), unified.py (unified diffs built on it), delta.py (one value that moved), snapshots.py
(counter and resource deltas and a normalised stage diff of two snapshots).

`diff_snapshots` loads on first use, so the pass timeline can use the engine without loading the analysers."""
from __future__ import annotations

__all__ = ["diff_snapshots"]


def __getattr__(name: str):
    if name == "diff_snapshots":
        from .snapshots import diff_snapshots
        return diff_snapshots
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
