"""Comparing snapshots: snapshots.py (counter and resource deltas, normalised stage diffs) and
align.py (the anchored line aligner)."""
from .snapshots import diff_snapshots

__all__ = ["diff_snapshots"]
