"""A golden's `source.py` against the kernel file its fresh compile read.

Goldens are compared by their IR (root.py), not by `source.py`, so a kernel file edited without changing
what the compiler emits (a refactor, a comment) leaves a golden that matches while it shows old Python:
`irscope show` and the TUI's source view would pair the golden's IR with text it did not come from. This
module finds that drift and refreshes `source.py` alone: the stage files keep their bytes (they hold
absolute paths in debug locations, which a rewrite from another checkout would churn for nothing).

irscope.json is left as it is. What it records of the source is `content_key`, the key of the compile
that produced the stored stages; those stages are unchanged, and the key also moves with irscope's own
key formula (docs/snapshot-format.md), so rewriting it would churn every golden on each refresh.
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path

from ..errors import SnapshotError
from ..store.folder import replace_file
from ..store.schema import inside
from ..store.snapshot import PYTHON_FILE, Snapshot


@dataclass(frozen=True)
class SourceDrift:
    """How a golden's source.py differs from the kernel file that a fresh compile of it read."""

    kernel_file: str  # the file the fresh compile read, as its irscope.json names it
    added: int  # lines of the kernel file that source.py lacks
    removed: int  # lines of source.py that the kernel file no longer has
    had_source: bool = True  # False: the golden had no source.py at all

    @property
    def lines(self) -> str:
        """The change in lines: `+3 -1 lines`, or `57 lines, none before`."""
        return f"+{self.added} -{self.removed} lines" if self.had_source else f"{self.added} lines, none before"

    @property
    def summary(self) -> str:
        """One clause: `source.py differs from kernels/k.py (+3 -1 lines)`."""
        if not self.had_source:
            return f"source.py is missing (the kernel file {self.kernel_file} has {self.added} lines)"
        return f"source.py differs from {self.kernel_file} ({self.lines})"

    @property
    def warning(self) -> str:
        """What `snapshot check` says on the golden's line."""
        if not self.had_source:
            return f"no source.py ({self.kernel_file} has {self.added} lines)"
        return f"stale source.py ({self.kernel_file} differs: {self.lines})"

    def as_dict(self) -> dict:
        return {"kernel_file": self.kernel_file, "added": self.added, "removed": self.removed,
                "had_source": self.had_source}


def _source_bytes(snap: Snapshot) -> bytes | None:
    path = snap.path / PYTHON_FILE
    if not (path.is_file() or path.is_symlink()):
        return None
    try:
        return inside(snap.path, path, PYTHON_FILE).read_bytes()
    except OSError as e:
        raise SnapshotError(f"cannot read {path}: {e.strerror}", "is the folder complete?") from None


def source_drift(golden: Snapshot, fresh: Snapshot) -> SourceDrift | None:
    """None when the golden's source.py is the fresh compile's (or the fresh compile kept none)."""
    new = _source_bytes(fresh)
    if not new:  # a kernel whose file could not be read: nothing better to store
        return None
    old = _source_bytes(golden)
    if old == new:
        return None
    kernel_file = str(fresh.meta.get("source_file") or golden.meta.get("source_file") or "the kernel file")
    new_lines = new.decode(errors="replace").splitlines()
    if old is None:
        return SourceDrift(kernel_file, len(new_lines), 0, had_source=False)
    added = removed = 0
    for line in difflib.unified_diff(old.decode(errors="replace").splitlines(), new_lines, lineterm="", n=0):
        if line.startswith("+") and not line.startswith("+++"):
            added += 1
        elif line.startswith("-") and not line.startswith("---"):
            removed += 1
    return SourceDrift(kernel_file, added, removed)


def refresh_source(root: Path, golden: Snapshot, fresh: Snapshot) -> None:
    """Write the fresh compile's source.py into the golden folder, atomically, touching no other file.

    Refused (SnapshotError) unless the golden folder lies inside the golden root `root`, links resolved."""
    folder = inside(root, golden.path, "golden folder")
    if folder == Path(root).resolve():
        raise SnapshotError(f"{golden.path} is the golden root itself, not a golden", "pass a golden's folder")
    data = _source_bytes(fresh)
    if data is None:
        raise SnapshotError(f"{fresh.path} has no {PYTHON_FILE} to refresh the golden from", "recompile it")
    replace_file(folder, PYTHON_FILE, data)
