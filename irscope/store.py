"""The snapshot folder: writing it atomically, loading it, finding every snapshot under a root.

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

import ctypes
import json
import os
import secrets
import shutil
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Iterator, Mapping

from .errors import SnapshotError, UsageError
from .resources import Resources, amd_resources, from_triton_metadata, parse_ptxas_log, parse_res_usage
from .targets import TARGETS, Target

FORMAT = 1
META_FILE = "irscope.json"
PYTHON_FILE = "source.py"
LOG_DIR = "logs"
PASSES_DIR = "passes"
GOLDEN_MARKER = ".irscope-goldens"  # a root holding committed goldens; only `--update-goldens` writes there
STAGES = ("source", "ttir", "ttgir", "llir", "ptx", "amdgcn", "cubin", "hsaco", "sass")
TEXT_STAGES = tuple(s for s in STAGES if s not in ("cubin", "hsaco"))


@dataclass(frozen=True)
class Snapshot:
    """One compiled kernel on disk: an irscope snapshot, a Triton cache entry or a kernel-dump folder."""

    path: Path
    meta: dict
    stage_files: Mapping[str, Path]  # stage -> file, in pipeline order
    origin: str = "irscope"  # "irscope", "triton-cache" or "triton-dump"
    extra: Mapping[str, Path] = field(default_factory=dict)  # other files: logs, run results

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
        if stage not in self.stage_files:
            have = ", ".join(self.stages) or "none"
            raise SnapshotError(f"{self.label} has no stage '{stage}'", f"stages in {self.path}: {have}")
        if stage in ("cubin", "hsaco"):
            raise SnapshotError(f"stage '{stage}' is a binary", "read its disassembly: --stage sass (cubin)")
        try:
            return self.stage_files[stage].read_text(errors="replace")
        except OSError as e:
            raise SnapshotError(f"cannot read {self.stage_files[stage]}: {e.strerror}", "is the folder complete?") from None

    def read_bytes(self, stage: str) -> bytes:
        if stage not in self.stage_files:
            raise SnapshotError(f"{self.label} has no stage '{stage}'", f"stages: {', '.join(self.stages)}")
        return self.stage_files[stage].read_bytes()

    def python_source(self) -> str | None:
        path = self.path / PYTHON_FILE
        return path.read_text(errors="replace") if path.is_file() else None

    def log(self, name: str) -> str | None:
        path = self.path / LOG_DIR / f"{name}.log"
        return path.read_text(errors="replace") if path.is_file() else None


def snapshot_dir(root: Path, kernel: str, variant: str, target: str) -> Path:
    return Path(root) / kernel / variant / target


# -- writing --------------------------------------------------------------------------------------------

def check_writable(dest: Path, allow_goldens: bool) -> None:
    """Refuse to write under a golden root unless asked, so a stray --out never rewrites the goldens."""
    for parent in [dest, *dest.parents]:
        if (parent / GOLDEN_MARKER).is_file() and not allow_goldens:
            raise UsageError(f"'{parent}' holds committed golden snapshots; not writing into it",
                             "choose another --out, or pass --update-goldens to rewrite goldens on purpose")


def write_folder(dest: Path, files: Mapping[str, bytes | str]) -> None:
    """Write a folder of files all at once: build it beside `dest`, then swap it in with one rename.

    A crash, a kill or Ctrl-C leaves either the old folder or the new one, never a mix; a half-built
    folder stays hidden (a dot name) and is swept up by the next write into the same parent.
    """
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    sweep_stale(dest.parent)
    tmp = dest.parent / f".{dest.name}.tmp-{os.getpid()}-{secrets.token_hex(4)}"
    tmp.mkdir()
    try:
        for name, data in files.items():
            path = tmp / name
            path.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(data, str):
                path.write_text(data)
            else:
                path.write_bytes(data)
        if dest.exists():
            if not _exchange(tmp, dest):
                old = dest.parent / f".{dest.name}.old-{os.getpid()}-{secrets.token_hex(4)}"
                os.rename(dest, old)
                os.rename(tmp, dest)
                tmp = old
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            os.rename(tmp, dest)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _exchange(a: Path, b: Path) -> bool:
    """Atomically swap two paths (Linux renameat2 RENAME_EXCHANGE). False where unsupported."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    return renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0


def sweep_stale(parent: Path) -> None:
    """Remove half-built folders whose writer is gone (killed midway)."""
    for p in parent.glob(".*.tmp-*"):
        _remove_if_orphan(p)
    for p in parent.glob(".*.old-*"):
        _remove_if_orphan(p)


def _remove_if_orphan(path: Path) -> None:
    try:
        pid = int(path.name.rsplit("-", 2)[-2])
    except (ValueError, IndexError):
        return
    if pid != os.getpid() and not _alive(pid):
        shutil.rmtree(path, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


# -- loading --------------------------------------------------------------------------------------------

def load_snapshot(path: Path | str) -> Snapshot:
    """Open an irscope snapshot, a Triton cache entry or a TRITON_KERNEL_DUMP folder."""
    path = Path(path)
    if not path.exists():
        raise SnapshotError(f"'{path}' does not exist", "give a snapshot folder (irscope compile writes them)")
    if not path.is_dir():
        raise SnapshotError(f"'{path}' is not a folder", "give the snapshot's folder, not one of its files")
    if (path / META_FILE).is_file():
        return _load_irscope(path)
    triton_meta = [p for p in path.glob("*.json") if not p.name.startswith("__grp__")]
    if triton_meta:
        return _load_triton_cache(path, triton_meta[0])
    if any((path / f).is_file() for f in os.listdir(path) if Path(f).suffix[1:] in STAGES):
        return _load_dump(path)
    raise SnapshotError(f"'{path}' is not a snapshot", "a snapshot folder holds irscope.json (irscope compile), "
                        "or a Triton cache entry's <kernel>.json and stage files")


def _stage_files(path: Path, fn_name: str) -> dict[str, Path]:
    return {s: path / f"{fn_name}.{s}" for s in STAGES if (path / f"{fn_name}.{s}").is_file()}


def _extra_files(path: Path) -> dict[str, Path]:
    out = {}
    logs = path / LOG_DIR
    if logs.is_dir():
        out.update({f"log:{p.stem}": p for p in sorted(logs.glob("*.log"))})
    for name in ("runs.json", "verify.json"):
        if (path / name).is_file():
            out[name] = path / name
    if (path / PASSES_DIR / "index.json").is_file():
        out["passes"] = path / PASSES_DIR  # the pass timeline (irscope.passes reads it)
    return out


def _load_irscope(path: Path) -> Snapshot:
    try:
        meta = json.loads((path / META_FILE).read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise SnapshotError(f"{path / META_FILE} is damaged: {e}", "recompile it with irscope compile") from None
    if not isinstance(meta, dict) or "function" not in meta:
        raise SnapshotError(f"{path / META_FILE} is not irscope metadata", "recompile it with irscope compile")
    if meta.get("format", FORMAT) > FORMAT:
        raise SnapshotError(f"{path} was written by a newer irscope (format {meta['format']})",
                            "upgrade irscope: pip install -U irscope")
    files = _stage_files(path, meta["function"])
    missing = [s for s in meta.get("stages", {}) if s not in files]
    if missing:
        raise SnapshotError(f"{path} is damaged: stage file {meta['function']}.{missing[0]} is missing",
                            "recompile it with irscope compile")
    return Snapshot(path=path, meta=meta, stage_files=files, origin="irscope", extra=_extra_files(path))


def _target_name(backend: str, arch) -> str:
    for t in TARGETS.values():
        if t.backend == backend and str(t.arch) == str(arch):
            return t.name
    return f"sm_{arch}" if backend == "cuda" else str(arch)


def _load_triton_cache(path: Path, meta_file: Path) -> Snapshot:
    try:
        tmeta = json.loads(meta_file.read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise SnapshotError(f"{meta_file} is damaged: {e}", "clear that Triton cache entry and rerun") from None
    fn = tmeta.get("name") or meta_file.stem
    target = tmeta.get("target") or {}
    meta = {
        "kernel": fn, "function": fn, "variant": path.name[:12], "status": "ok",
        "target": {"name": _target_name(target.get("backend", ""), target.get("arch", "")), **target},
        "compile_options": {"num_warps": tmeta.get("num_warps"), "num_stages": tmeta.get("num_stages")},
        "versions": {"triton": tmeta.get("triton_version", "?")}, "triton_metadata": tmeta,
    }
    return Snapshot(path=path, meta=meta, stage_files=_stage_files(path, fn), origin="triton-cache")


def _load_dump(path: Path) -> Snapshot:
    stems = sorted({Path(f).stem for f in os.listdir(path) if Path(f).suffix[1:] in STAGES})
    fn = stems[0]
    files = _stage_files(path, fn)
    target = {"name": "?"}
    if "ptx" in files:
        import re
        m = re.search(r"^\.target\s+(sm_\w+)", files["ptx"].read_text(errors="replace"), re.M)
        target = {"name": m.group(1) if m else "?", "backend": "cuda"}
    elif "amdgcn" in files:
        import re
        m = re.search(r"(gfx\w+)", files["amdgcn"].read_text(errors="replace")[:400])
        target = {"name": m.group(1) if m else "?", "backend": "hip"}
    meta = {"kernel": fn, "function": fn, "variant": path.name[:12], "status": "ok", "target": target}
    return Snapshot(path=path, meta=meta, stage_files=files, origin="triton-dump")


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
    if (path / META_FILE).is_file():
        return True
    names = os.listdir(path)
    has_stage = any(Path(n).suffix[1:] in STAGES for n in names)
    return has_stage


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
            children = sorted((p for p in d.iterdir() if p.is_dir() and not p.name.startswith(".")), reverse=True)
        except OSError:
            continue
        stack.extend(children)


def find_snapshots(root: Path | str) -> list[Snapshot]:
    """Load every snapshot under `root`. A damaged one raises: say which, rather than hide it."""
    root = Path(root)
    if not root.exists():
        raise SnapshotError(f"'{root}' does not exist", "give a folder of snapshots, e.g. snapshots/")
    return [load_snapshot(d) for d in iter_snapshot_dirs(root)]
