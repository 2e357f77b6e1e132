"""The snapshots under the roots the TUI was given, found without letting one damaged folder stop the rest.

No Textual import.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

from ..errors import IrscopeError
from ..store import Snapshot, iter_snapshot_dirs, load_snapshot
from ..targets import TARGETS

DEFAULT_ROOT = "irscope-snapshots"


@dataclass(frozen=True)
class Entry:
    """A snapshot folder found under a root: loaded, or the reason it could not be."""

    root: Path
    path: Path
    snapshot: Snapshot | None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.snapshot is not None

    @property
    def parts(self) -> tuple[str, str, str]:
        """(kernel, variant, target): where the entry sits in the tree."""
        s = self.snapshot
        if s is None:
            return ("damaged", "", self.relative)
        return (s.kernel or "?", s.variant or "-", s.target_name or "?")

    @property
    def relative(self) -> str:
        try:
            rel = self.path.relative_to(self.root).as_posix()
        except ValueError:
            rel = self.path.as_posix()
        return rel if rel != "." else self.path.name

    @property
    def label(self) -> str:
        return "/".join(self.parts) if self.ok else self.relative


def default_roots(given: Sequence[str | os.PathLike], cwd: Path | None = None) -> list[Path]:
    """./irscope-snapshots when it exists, then every root given (without repeats)."""
    cwd = Path.cwd() if cwd is None else cwd
    roots: list[Path] = []
    default = cwd / DEFAULT_ROOT
    if default.is_dir():
        roots.append(default)
    for r in given:
        p = Path(r)
        if not any(_same(p, q) for q in roots):
            roots.append(p)
    return roots


def _same(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return False


def scan(roots: Iterable[Path]) -> list[Entry]:
    """Every snapshot under every root, in tree order; damaged folders are entries with an error."""
    entries = []
    for root in roots:
        for path in iter_snapshot_dirs(Path(root)):
            entries.append(load_entry(Path(root), path))
    return sorted(entries, key=sort_key)


def load_entry(root: Path, path: Path) -> Entry:
    try:
        return Entry(root, path, load_snapshot(path))
    except IrscopeError as e:
        return Entry(root, path, None, e.message)
    except (OSError, ValueError, KeyError, TypeError) as e:
        return Entry(root, path, None, f"cannot read {path}: {e}")


def sort_key(entry: Entry):
    kernel, variant, target = entry.parts
    names = list(TARGETS)
    return (not entry.ok, kernel, variant != "default", variant,
            names.index(target) if target in names else len(names), target)


def matches(entry: Entry, query: str) -> bool:
    """Whether every word of the filter occurs in the entry's kernel/variant/target label."""
    label = entry.label.lower()
    return all(word in label for word in query.lower().split())
