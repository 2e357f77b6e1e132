"""The snapshots under the roots the TUI was given, found without letting one damaged folder stop the rest.

No Textual import.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

from ...errors import IrscopeError
from ...store.snapshot import PYTHON_FILE, Snapshot, iter_snapshot_dirs, load_snapshot
from ...store.roots import default_out
from ...targets import TARGETS


# What reading a hostile snapshot can raise: irscope's own errors (the store's checks), the filesystem's,
# and what an ill-typed irscope.json makes of code that expects a dict or a str (`"target": 5`). The TUI
# catches exactly these around every snapshot read and shows the snapshot as damaged instead of crashing.
DAMAGE = (IrscopeError, OSError, ValueError, KeyError, TypeError, AttributeError, IndexError, RecursionError)


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


def default_roots(given: Sequence[str | os.PathLike], cwd: Path | None = None,
                  default: Path | None = None) -> list[Path]:
    """The default folder (store.roots.default_out(): $IRSCOPE_OUT or ./irscope-snapshots) when it exists,
    then every root given (without repeats)."""
    cwd = Path.cwd() if cwd is None else cwd
    roots: list[Path] = []
    default = cwd / (default if default is not None else default_out())
    if default.is_dir():
        roots.append(default)
    for r in given:
        p = Path(r)
        if not any(same_folder(p, q) for q in roots):
            roots.append(p)
    return roots


def same_folder(a: Path, b: Path) -> bool:
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
    """A snapshot folder, loaded and checked; whatever is wrong with it becomes the entry's error."""
    if not inside(root, path):  # a symlinked folder inside a root: not opened, it could be anywhere
        return Entry(root, path, None, f"{path} leads outside {root} (a symlink); not reading it")
    try:
        snapshot = load_snapshot(path)
        problem = snapshot_problem(snapshot)
    except IrscopeError as e:
        return Entry(root, path, None, e.message)
    except DAMAGE as e:
        return Entry(root, path, None, f"{path} is damaged: {type(e).__name__}: {e}")
    if problem is not None:
        return Entry(root, path, None, f"{path} is damaged: {problem}")
    return Entry(root, path, snapshot)


_TEXT_FIELDS = ("kernel", "function", "variant", "status", "source_file", "description")
_DICT_FIELDS = ("target", "error", "compile_options", "request", "resources", "stages", "versions",
                "triton_metadata", "backend_options")


def snapshot_problem(snapshot: Snapshot) -> str | None:
    """Why the TUI cannot show this snapshot, or None: irscope.json's fields of the wrong type, a file
    that leads out of the folder. Everything the tree, the reader and the compare screen derive from the
    metadata alone is computed here once, so that a damaged snapshot is caught in the tree, not later.
    (The store checks more as it grows; this is the TUI's own floor, so that it works either way.)"""
    meta = snapshot.meta
    if not isinstance(meta, dict):
        return "irscope.json is not an object"
    for name in _TEXT_FIELDS:
        if meta.get(name) is not None and not isinstance(meta[name], str):
            return f"irscope.json's '{name}' should be text, not {_kind(meta[name])}"
    for name in _DICT_FIELDS:
        if meta.get(name) is not None and not isinstance(meta[name], dict):
            return f"irscope.json's '{name}' should be an object, not {_kind(meta[name])}"
    if "format" in meta and (not isinstance(meta["format"], int) or isinstance(meta["format"], bool)):
        return f"irscope.json's 'format' should be a whole number, not {_kind(meta['format'])}"
    if not isinstance(meta.get("target", {}).get("name", "?"), str):
        return f"irscope.json's target name should be text, not {_kind(meta['target']['name'])}"
    if snapshot.error is not None and not all(isinstance(v, (str, type(None))) for v in snapshot.error.values()):
        return "irscope.json's 'error' holds something other than text"
    for name, value in snapshot.resources.as_dict().items():
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
            return f"irscope.json's resource '{name}' should be a number, not {_kind(value)}"
    for stage, info in (meta.get("stages") or {}).items():
        lines = info.get("lines") if isinstance(info, dict) else None
        if not isinstance(info, dict) or not (lines is None or type(lines) is int):
            return f"irscope.json's entry for stage '{stage}' is malformed ({_kind(info)})"
    from .axes import AXES, describe  # the compare screen's axes read compile_options, request, specialisation
    from .facts import resource_rows
    resource_rows(snapshot.resources)
    for axis in (*AXES, "options"):
        describe(snapshot, axis)
    _ = snapshot.label, snapshot.text_stages, snapshot.ok
    return escaped_file(snapshot)


def _kind(value) -> str:
    """How a JSON value is named in a message: its kind, not its (possibly huge) contents."""
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, (int, float)):
        return f"the number {value}"
    if isinstance(value, str):
        return f"the text {value[:20]!r}"
    return {list: "a list", dict: "an object"}.get(type(value), "null" if value is None else type(value).__name__)


def inside(folder: Path, path: Path) -> bool:
    """Whether `path`, symlinks followed, lies inside `folder` (symlinks followed too)."""
    try:
        return Path(path).resolve().is_relative_to(Path(folder).resolve())
    except (OSError, RuntimeError):
        return False


def escaped_file(snapshot: Snapshot) -> str | None:
    """The first file of the snapshot (a stage, source.py, a log, a pass) that leads outside its folder."""
    folder = snapshot.path
    named = [*snapshot.stage_files.values(), *snapshot.extra.values(), folder / PYTHON_FILE]
    for path in named:
        if (path.exists() or path.is_symlink()) and not inside(folder, path):
            return f"{path.name} leads outside the snapshot folder"
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            if path.is_symlink() and not inside(folder, path):
                return f"{path.relative_to(folder)} leads outside the snapshot folder"
    return None


def sort_key(entry: Entry):
    kernel, variant, target = entry.parts
    names = list(TARGETS)
    return (not entry.ok, kernel, variant != "default", variant,
            names.index(target) if target in names else len(names), target)


def matches(entry: Entry, query: str) -> bool:
    """Whether every word of the filter occurs in the entry's kernel/variant/target label."""
    label = entry.label.lower()
    return all(word in label for word in query.lower().split())
