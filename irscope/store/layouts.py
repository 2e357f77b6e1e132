"""layouts.json beside a snapshot's stages: each encoding of its TTGIR as linear layouts (format in
docs/snapshot-format.md). Written once at compile time, or later by `irscope layouts --compute`, and
read by the CLI and the TUI with no Triton. Like every snapshot file it is untrusted: beyond the schema,
the reader refuses bases that do not fit their shape or that would take long to enumerate.
"""
from __future__ import annotations

import json
from pathlib import Path

from ..errors import SnapshotError
from .folder import replace_file
from .schema import LAYOUTS_SCHEMA, inside, read_json

LAYOUTS_FILE = "layouts.json"
MAX_BITS = 24  # per layout: 2**24 hardware positions or offsets is far past any tile Triton makes
_HINT = "recompute it: irscope layouts SNAPSHOT --compute"


def has_layouts(snapshot) -> bool:
    p = Path(snapshot.path) / LAYOUTS_FILE
    return p.is_file() or p.is_symlink()


def read_layouts(snapshot) -> dict | None:
    """The checked contents of the snapshot's layouts.json, or None when it has none."""
    path = Path(snapshot.path) / LAYOUTS_FILE
    if not has_layouts(snapshot):
        return None
    data = read_json(path, LAYOUTS_SCHEMA, Path(snapshot.path), LAYOUTS_FILE)
    for i, enc in enumerate(data["encodings"]):
        if not enc["layouts"]:  # an encoding is recorded at each shape it is used at: one at least
            raise SnapshotError(f"{path} is damaged: encodings[{i}].layouts is empty", _HINT)
        for j, sl in enumerate(enc["layouts"]):
            _check_bases(path, f"encodings[{i}].layouts[{j}]", sl)
    return data


def _check_bases(path: Path, where: str, sl: dict) -> None:
    shape = sl["shape"]
    if not shape or any(s < 1 or s > 1 << 20 for s in shape):
        raise SnapshotError(f"{path} is damaged: {where}.shape {shape} is out of range", _HINT)
    bases = sl.get("bases")
    if bases is None:
        return
    bits = sum(len(v) for v in bases.values())
    if bits > MAX_BITS:
        raise SnapshotError(f"{path} is damaged: {where} has {bits} input bits (at most {MAX_BITS})", _HINT)
    for dim, vecs in bases.items():
        for k, v in enumerate(vecs):
            if len(v) != len(shape) or any(x < 0 or x >= s for x, s in zip(v, shape)):
                raise SnapshotError(f"{path} is damaged: {where}.bases.{dim}[{k}] = {v} does not fit shape {shape}",
                                    _HINT)


def write_layouts(folder: Path, data: dict) -> Path:
    """Write layouts.json into a snapshot folder atomically (a temporary file renamed over the old one)."""
    folder = Path(folder)
    path = folder / LAYOUTS_FILE
    if path.is_symlink():
        inside(folder, path, LAYOUTS_FILE)
    replace_file(folder, LAYOUTS_FILE, (json.dumps(data, indent=1) + "\n").encode())  # mode by the umask
    return path
