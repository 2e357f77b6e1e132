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
FORMAT = 1  # the newest format this irscope reads (irscope.layouts.model writes it)
# Per layout: at most 2**20 hardware positions or offsets (a 256x256 tile of Triton's kernels is 2**16).
# The writer (irscope.harness.layouts) records none larger and the reader refuses them, so the two agree.
MAX_BITS = 20
_HINT = "recompute it: irscope layouts SNAPSHOT --compute"
_DISTRIBUTED = ("register", "lane", "warp", "block")
_SHARED = ("offset", "block")


def has_layouts(snapshot) -> bool:
    p = Path(snapshot.path) / LAYOUTS_FILE
    return p.exists() or p.is_symlink()


def _not_a_directory(path: Path) -> None:
    if path.is_dir():
        raise SnapshotError(f"{path} is a directory, not a file",
                            f"remove it, then recompute it: irscope layouts {path.parent} --compute")


def read_layouts(snapshot) -> dict | None:
    """The checked contents of the snapshot's layouts.json, or None when it has none."""
    path = Path(snapshot.path) / LAYOUTS_FILE
    if not has_layouts(snapshot):
        return None
    _not_a_directory(path)
    data = read_json(path, LAYOUTS_SCHEMA, Path(snapshot.path), LAYOUTS_FILE)
    if data["format"] > FORMAT:
        raise SnapshotError(f"{path} is a layouts file of format {data['format']}; this irscope reads format "
                            f"{FORMAT}", "read it with the irscope that wrote it, or recompute it: irscope layouts "
                            "SNAPSHOT --compute")
    for i, enc in enumerate(data["encodings"]):
        if not enc["layouts"]:  # an encoding is recorded at each shape it is used at: one at least
            raise SnapshotError(f"{path} is damaged: encodings[{i}].layouts is empty", _HINT)
        for j, sl in enumerate(enc["layouts"]):
            _check_bases(path, f"encodings[{i}].layouts[{j}]", sl)
    return data


def _check_bases(path: Path, where: str, sl: dict) -> None:
    shape = sl["shape"]
    if not shape or any(s < 1 for s in shape):
        raise SnapshotError(f"{path} is damaged: {where}.shape {shape} is out of range", _HINT)
    bases = sl.get("bases")
    if bases is None:
        if sl["status"] == "ok":
            raise SnapshotError(f"{path} is damaged: {where} is \"ok\" but has no bases", _HINT)
        return  # not available: recorded at any shape it is used at, with the reason
    if sl["status"] != "ok":
        raise SnapshotError(f"{path} is damaged: {where} has bases but status {sl['status']!r}", _HINT)
    if any(s & (s - 1) for s in shape):
        raise SnapshotError(f"{path} is damaged: {where}.shape {shape} is not a power of two in every dim "
                            "(no layout is converted at such a shape)", _HINT)
    size = 1
    for s in shape:
        size *= s
    if size > 1 << MAX_BITS:
        raise SnapshotError(f"{path} is damaged: {where}.shape {shape} has more than 2**{MAX_BITS} elements, "
                            "more than irscope records", _HINT)
    dims = _SHARED if "offset" in bases else _DISTRIBUTED
    if sorted(bases) != sorted(dims):
        raise SnapshotError(f"{path} is damaged: {where}.bases has {', '.join(sorted(bases)) or 'no'} "
                            f"in-dims, not {', '.join(dims)}", _HINT)
    bits = sum(len(v) for v in bases.values())
    if bits > MAX_BITS:
        raise SnapshotError(f"{path} is damaged: {where} has {bits} input bits (at most {MAX_BITS}: irscope "
                            "records no larger layout)", _HINT)
    for dim, vecs in bases.items():
        for k, v in enumerate(vecs):
            if len(v) != len(shape) or any(x < 0 or x >= s for x, s in zip(v, shape)):
                raise SnapshotError(f"{path} is damaged: {where}.bases.{dim}[{k}] = {v} does not fit shape {shape}",
                                    _HINT)


def write_layouts(folder: Path, data: dict) -> Path:
    """Write layouts.json into a snapshot folder atomically (a temporary file renamed over the old one)."""
    folder = Path(folder)
    path = folder / LAYOUTS_FILE
    _not_a_directory(path)
    if path.is_symlink():
        inside(folder, path, LAYOUTS_FILE)
    replace_file(folder, LAYOUTS_FILE, (json.dumps(data, indent=1) + "\n").encode())  # mode by the umask
    return path
