"""The snapshot folder read back: loading it, checked (schema.py), and finding every snapshot under a root.
Writing is folder.py (atomic) and writer.py (irscope.json from a compile).

A snapshot folder is a Triton cache entry plus irscope's metadata, so Triton's own cache folders
(`~/.triton/cache/<hash>/`) and `TRITON_KERNEL_DUMP` folders open through the same code:

    <root>/<kernel>/<variant>/<target>/
        irscope.json          irscope's metadata (format in docs/snapshot-format.md)
        source.py             the kernel's Python file
        <fn>.source           Triton's stages, named as Triton names them: source (the TTIR the frontend
        <fn>.ttir ...         made), ttir, ttgir, llir, ptx or amdgcn, cubin or hsaco
        <fn>.sass             SASS disassembled from the cubin (NVIDIA)
        <fn>.json             Triton's own metadata for the kernel
        logs/                 ptxas -v, cuobjdump -res-usage, compiler stderr
        passes/               the IR after every compiler pass (irscope compile --passes; docs/passes.md)

This module does not import Triton.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Iterator, Mapping

from ..errors import SnapshotError
from ..ir.resources import Resources, amd_resources, from_triton_metadata, parse_ptxas_log, parse_res_usage
from ..ir.stages import STAGES, TEXT_STAGES
from ..targets import TARGETS, Target
from .schema import INT, META_SCHEMA, TRITON_META_SCHEMA, Check, inside, is_int, obj, read_json, validate

FORMAT = 1
META_FILE = "irscope.json"
PYTHON_FILE = "source.py"
LOG_DIR = "logs"
PASSES_DIR = "passes"
GOLDEN_MARKER = ".irscope-goldens"  # a root holding committed goldens; only `--update-goldens` writes there


@dataclass(frozen=True)
class Snapshot:
    """One compiled kernel on disk: an irscope snapshot, a Triton cache entry or a kernel-dump folder."""

    path: Path
    meta: dict
    stage_files: Mapping[str, Path]  # stage -> file, in pipeline order
    origin: str = "irscope"  # "irscope", "triton-cache" or "triton-dump"
    extra: Mapping[str, Path] = field(default_factory=dict)  # other files: logs, run results
    # stage -> whether its bytes matched the recorded sha256 when last read (filled lazily)
    _verified: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    @property
    def kernel(self) -> str:
        return self.meta.get("kernel") or self.fn_name

    @property
    def fn_name(self) -> str:
        return self.meta.get("function", "")

    @property
    def variant(self) -> str:
        return self.meta.get("variant", "")

    @property
    def target_name(self) -> str:
        return self.meta.get("target", {}).get("name", "?")

    @property
    def target(self) -> Target | None:
        return TARGETS.get(self.target_name)

    @property
    def ok(self) -> bool:
        return self.meta.get("status", "ok") == "ok"

    @property
    def error(self) -> dict | None:
        return self.meta.get("error")

    @property
    def label(self) -> str:
        return "/".join(p for p in (self.kernel, self.variant, self.target_name) if p)

    @property
    def stages(self) -> tuple[str, ...]:
        return tuple(self.stage_files)

    @property
    def text_stages(self) -> tuple[str, ...]:
        return tuple(s for s in self.stage_files if s in TEXT_STAGES)

    @cached_property
    def resources(self) -> Resources:
        stored = self.meta.get("resources")
        if stored is not None:
            return Resources.from_dict(stored)
        return _resources_from_files(self)

    def read(self, stage: str) -> str:
        """The text of a stage (binary stages are refused: read `sass` instead)."""
        if stage in ("cubin", "hsaco") and stage in self.stage_files:
            raise SnapshotError(f"stage '{stage}' is a binary", "read its disassembly: --stage sass" if stage == "cubin"
                                else "read its assembly: --stage amdgcn")
        text = self.read_bytes(stage).decode("utf-8", errors="replace")
        return text.replace("\r\n", "\n").replace("\r", "\n")  # universal newlines, as read_text gave

    def read_bytes(self, stage: str) -> bytes:
        """The bytes of a stage, checked against the sha256 irscope.json recorded (SnapshotError if they differ)."""
        if stage not in self.stage_files:
            have = ", ".join(self.stages) or "none"
            raise SnapshotError(f"{self.label} has no stage '{stage}'", f"stages in {self.path}: {have}")
        path = inside(self.path, self.stage_files[stage], f"stage file {self.stage_files[stage].name}")
        try:
            data = path.read_bytes()
        except OSError as e:
            raise SnapshotError(f"cannot read {self.stage_files[stage]}: {e.strerror}",
                                "is the folder complete?") from None
        ok = self._hash_ok(stage, data)
        self._verified[stage] = ok
        if not ok:
            raise SnapshotError(f"{self.stage_files[stage]} does not match the sha256 irscope.json records for stage "
                                f"'{stage}'", "the file was changed or damaged after the compile; compile it again with "
                                "`irscope compile` (a sweep or `irscope rank` recompiles its damaged points itself)")
        return data

    def _hash_ok(self, stage: str, data: bytes) -> bool:
        recorded = ((self.meta.get("stages") or {}).get(stage) or {}).get("sha256")
        return recorded is None or hashlib.sha256(data).hexdigest() == recorded

    def damaged_stages(self, stages: tuple[str, ...] | None = None) -> tuple[str, ...]:
        """Stages (of `stages`, or all) whose file does not match its recorded sha256 (or cannot be read),
        without raising.

        Each file is hashed once per Snapshot; `read` and `read_bytes` check again on every read.
        """
        bad = []
        for stage, path in self.stage_files.items():
            if stages is not None and stage not in stages:
                continue
            if stage not in self._verified:
                try:
                    self._verified[stage] = self._hash_ok(stage, inside(self.path, path, stage).read_bytes())
                except (OSError, SnapshotError):
                    self._verified[stage] = False
            if not self._verified[stage]:
                bad.append(stage)
        return tuple(bad)

    def python_source(self) -> str | None:
        return self._read_optional(self.path / PYTHON_FILE, PYTHON_FILE)

    def log(self, name: str) -> str | None:
        return self._read_optional(self.path / LOG_DIR / f"{name}.log", f"{LOG_DIR}/{name}.log")

    def _read_optional(self, path: Path, what: str) -> str | None:
        if not path.is_file():
            return None
        try:
            return inside(self.path, path, what).read_text(errors="replace")
        except OSError as e:
            raise SnapshotError(f"cannot read {path}: {e.strerror}", "is the folder complete?") from None


# -- loading --------------------------------------------------------------------------------------------

def load_snapshot(path: Path | str) -> Snapshot:
    """Open an irscope snapshot, a Triton cache entry or a TRITON_KERNEL_DUMP folder.

    The folder is untrusted: irscope.json must fit its schema (META_SCHEMA), and every file it names or
    holds must resolve inside the folder; otherwise SnapshotError. Nothing in it is imported or run.
    """
    path = Path(path)
    if not path.exists():
        raise SnapshotError(f"'{path}' does not exist", "give a snapshot folder (irscope compile writes them)")
    if not path.is_dir():
        raise SnapshotError(f"'{path}' is not a folder", "give the snapshot's folder, not one of its files")
    try:
        names = sorted(os.listdir(path))
    except OSError as e:
        raise SnapshotError(f"cannot list '{path}': {e.strerror}", "check its permissions") from None
    # Triton's metadata is <kernel>.json; irscope's own files (results, analysis cache) are not it.
    triton_meta = [path / n for n in sorted(names) if n.endswith(".json") and not n.startswith(("__grp__", "."))
                   and n not in ("runs.json", "verify.json", "golden.json", "layouts.json", "launches.json")]
    staged = any(Path(n).suffix[1:] in TEXT_STAGES for n in names)
    if META_FILE not in names and not triton_meta and not staged:
        # by its names alone: a folder that is no snapshot of any kind (a wrong path) is said to be so, not
        # called hostile for a link it holds
        raise _not_a_snapshot(path)
    _refuse_links_out(path, names)
    if META_FILE in names:
        return _load_irscope(path)
    if triton_meta:
        return _load_triton_cache(path, triton_meta[0])
    if _dump_stem(path, names) is not None:
        return _load_dump(path)
    raise _not_a_snapshot(path)


def _not_a_snapshot(path: Path) -> SnapshotError:
    return SnapshotError(f"'{path}' is not a snapshot", "a snapshot folder holds irscope.json (irscope compile), "
                         "or a Triton cache entry's <kernel>.json and stage files")


def _refuse_links_out(path: Path, names: list[str]) -> None:
    """SnapshotError for any symlink in the folder (or its logs/ and passes/) that resolves outside it."""
    for name in names:
        entry = path / name
        if entry.is_symlink():
            inside(path, entry, name)
        elif name in (LOG_DIR, PASSES_DIR) and entry.is_dir():
            for sub in entry.iterdir():
                if sub.is_symlink():
                    inside(path, sub, f"{name}/{sub.name}")


def _stage_files(path: Path, fn_name: str, only: Mapping | None = None) -> dict[str, Path]:
    """stage -> file for `fn_name`'s stage files, each checked to resolve inside `path`."""
    out = {}
    for s in STAGES:
        file = path / f"{fn_name}.{s}"
        if (only is None or s in only) and (file.is_file() or file.is_symlink()):
            inside(path, file, f"stage file {file.name}")
            out[s] = file
    return out


def _extra_files(path: Path) -> dict[str, Path]:
    out = {}
    logs = path / LOG_DIR
    if logs.is_dir():
        inside(path, logs, f"{LOG_DIR}/")
        for p in sorted(logs.glob("*.log")):
            inside(path, p, f"{LOG_DIR}/{p.name}")
            out[f"log:{p.stem}"] = p
    for name in ("runs.json", "verify.json", "layouts.json", PYTHON_FILE):
        if (path / name).exists() or (path / name).is_symlink():
            inside(path, path / name, name)
            if name != PYTHON_FILE:
                out[name] = path / name
    if (path / PASSES_DIR).exists():
        inside(path, path / PASSES_DIR, f"{PASSES_DIR}/")
        for p in (path / PASSES_DIR).iterdir():
            inside(path, p, f"{PASSES_DIR}/{p.name}")
        if (path / PASSES_DIR / "index.json").is_file():
            out["passes"] = path / PASSES_DIR  # the pass timeline (irscope.passes reads it)
    return out


def _load_irscope(path: Path) -> Snapshot:
    meta = read_json(path / META_FILE, _FORMAT_ONLY, path, META_FILE)
    if is_int(meta.get("format")) and meta["format"] > FORMAT:
        # irscope is installed from its repository (README: pip install -e .), not from PyPI, where the name
        # is not irscope's: the hint says which irscope wrote the folder, not to `pip install -U irscope`.
        versions = meta.get("versions")
        wrote = versions.get("irscope") if isinstance(versions, dict) else None
        by = f"irscope {wrote[:20]}" if isinstance(wrote, str) and wrote else "that irscope"
        raise SnapshotError(f"{path} was written by a newer irscope (format {meta['format']}; this one reads "
                            f"format {FORMAT})", f"read it with {by}, or update this irscope's checkout and "
                            "reinstall it (pip install -e . in it)")
    validate(meta, META_SCHEMA, path / META_FILE)
    fn = meta["function"]
    recorded = meta.get("stages")
    for stage, info in (recorded or {}).items():
        if "file" in info and info["file"] != f"{fn}.{stage}":
            raise SnapshotError(f"{path / META_FILE} is damaged: field 'stages.{stage}.file' must be {fn}.{stage}, "
                                f"not {json.dumps(info['file'])[:40]}", "recompile it with irscope compile")
    # The files irscope.json lists, when it lists them: a stray file in the folder is not a stage.
    files = _stage_files(path, fn, recorded)
    triton_json = path / f"{fn}.json"  # Triton's metadata, read by irscope run --snapshot
    if triton_json.exists() or triton_json.is_symlink():
        inside(path, triton_json, triton_json.name)
    missing = [s for s in (recorded or {}) if s not in files]
    if missing:
        # there but no file (a FIFO, a folder): said so, not called missing
        what = "is not a regular file" if os.path.lexists(path / f"{fn}.{missing[0]}") else "is missing"
        raise SnapshotError(f"{path} is damaged: stage file {fn}.{missing[0]} {what}",
                            "recompile it with irscope compile")
    return Snapshot(path=path, meta=meta, stage_files=files, origin="irscope", extra=_extra_files(path))


_FORMAT_ONLY: Check = obj(format=INT)  # checked first, so a newer format is named as such, not as damage


def _target_name(backend: str, arch) -> str:
    for t in TARGETS.values():
        if t.backend == backend and str(t.arch) == str(arch):
            return t.name
    return f"sm_{arch}" if backend == "cuda" else str(arch)


def _load_triton_cache(path: Path, meta_file: Path) -> Snapshot:
    tmeta = read_json(meta_file, TRITON_META_SCHEMA, path, meta_file.name)
    fn = tmeta.get("name") or meta_file.stem
    if not fn.isidentifier():
        raise SnapshotError(f"{meta_file} is damaged: field 'name' must be a Python identifier, not "
                            f"{json.dumps(fn)[:40]}", "clear that Triton cache entry and rerun")
    target = tmeta.get("target") or {}
    meta = {
        "kernel": fn, "function": fn, "variant": path.name[:12], "status": "ok",
        "target": {**target, "name": _target_name(target.get("backend", ""), target.get("arch", ""))},
        "compile_options": {"num_warps": tmeta.get("num_warps"), "num_stages": tmeta.get("num_stages")},
        "versions": {"triton": tmeta.get("triton_version", "?")}, "triton_metadata": tmeta,
    }
    return Snapshot(path=path, meta=meta, stage_files=_stage_files(path, fn), origin="triton-cache")


def _dump_stem(path: Path, names) -> str | None:
    """The kernel of a TRITON_KERNEL_DUMP-like folder: one name with at least one IR stage beside it. A lone
    .cubin in /tmp is no snapshot, and neither is a folder of several kernels' stages (/tmp, holding
    tmpXXXX.ptx files Triton left there): a dump folder holds one kernel's."""
    stems = {Path(n).stem for n in names if Path(n).suffix[1:] in TEXT_STAGES and Path(n).suffix != ".sass"
             and (path / n).is_file()}
    return next(iter(stems)) if len(stems) == 1 else None


def _load_dump(path: Path) -> Snapshot:
    fn = _dump_stem(path, os.listdir(path))
    files = _stage_files(path, fn)
    target = {"name": "?"}
    if "ptx" in files:
        m = re.search(r"^\.target\s+(sm_\w+)", files["ptx"].read_text(errors="replace"), re.M)
        target = {"name": m.group(1) if m else "?", "backend": "cuda"}
    elif "amdgcn" in files:
        m = re.search(r"(gfx\w+)", files["amdgcn"].read_text(errors="replace")[:400])
        target = {"name": m.group(1) if m else "?", "backend": "hip"}
    meta = {"kernel": fn, "function": fn, "variant": path.name[:12], "status": "ok", "target": target}
    return Snapshot(path=path, meta=meta, stage_files=files, origin="triton-dump")


def keeps_caches(snapshot: Snapshot) -> bool:
    """Whether irscope may write its caches (the analysis cache, layouts.json) into a snapshot's folder:
    only its own folders, never committed goldens, a Triton cache entry or a kernel-dump folder."""
    return snapshot.origin == "irscope" and not any((p / GOLDEN_MARKER).is_file()
                                                    for p in [Path(snapshot.path).resolve(),
                                                              *Path(snapshot.path).resolve().parents])


def _resources_from_files(snap: Snapshot) -> Resources:
    tmeta = snap.meta.get("triton_metadata", {})
    res = from_triton_metadata(tmeta)
    if "amdgcn" in snap.stage_files:
        res = amd_resources(snap.read("amdgcn"), tmeta)
    log = snap.log("ptxas")
    if log:
        res = parse_ptxas_log(log).merged(res)
    usage = snap.log("res-usage")
    if usage:
        res = res.merged(parse_res_usage(usage))
    return res


def is_snapshot_dir(path: Path) -> bool:
    if (path / META_FILE).is_file() or (path / META_FILE).is_symlink():
        return True
    names = os.listdir(path)
    return any(Path(n).suffix == ".json" and not n.startswith(".") for n in names) and \
        any(Path(n).suffix[1:] in STAGES for n in names) or _dump_stem(path, names) is not None


def iter_snapshot_dirs(root: Path) -> Iterator[Path]:
    """Every snapshot folder under `root` (itself included), skipping hidden and half-written ones."""
    root = Path(root)
    if not root.is_dir():
        return
    stack = [root]
    while stack:
        d = stack.pop()
        try:
            if is_snapshot_dir(d):
                yield d
                continue
            # Symlinked folders are not followed: a walk stays under its root and cannot loop.
            children = sorted((p for p in d.iterdir() if p.is_dir() and not p.is_symlink()
                               and not p.name.startswith(".")), reverse=True)
        except OSError:
            continue
        stack.extend(children)


def find_snapshots(root: Path | str) -> list[Snapshot]:
    """Load every snapshot under `root`. A damaged one raises: say which, rather than hide it."""
    root = Path(root)
    if not root.exists():
        raise SnapshotError(f"'{root}' does not exist", "give a folder of snapshots, e.g. snapshots/")
    return [load_snapshot(d) for d in iter_snapshot_dirs(root)]


@dataclass(frozen=True)
class Catalog:
    """What a walk over a root found: the snapshots that opened, and the folders that did not, with why."""

    snapshots: tuple[Snapshot, ...]
    damaged: tuple[tuple[Path, SnapshotError], ...]


def scan_snapshots(root: Path | str) -> Catalog:
    """Load every snapshot under `root`, never raising for a damaged one: it is kept in `damaged`."""
    root = Path(root)
    if not root.exists():
        raise SnapshotError(f"'{root}' does not exist", "give a folder of snapshots, e.g. snapshots/")
    good, bad = [], []
    for d in iter_snapshot_dirs(root):
        try:
            good.append(load_snapshot(d))
        except SnapshotError as e:
            bad.append((d, e))
    return Catalog(tuple(good), tuple(bad))
