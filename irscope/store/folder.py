"""Writing a snapshot folder: all at once (built beside its place, swapped in with one rename), never
into a golden root unless asked, and sweeping up what a killed writer left. Readers are in snapshot.py.
"""
from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import hashlib
import itertools
import os
import re
import secrets
import shutil
from pathlib import Path
from typing import Iterator, Mapping

from ..errors import UsageError
from ..ir.stages import STAGES
from .snapshot import GOLDEN_MARKER


def snapshot_dir(root: Path, kernel: str, variant: str, target: str) -> Path:
    return Path(root) / kernel / variant / target


def check_writable(dest: Path, allow_goldens: bool) -> None:
    """Refuse to write under a golden root unless asked, so a stray --out never rewrites the goldens."""
    _check_is_folder_path(Path(dest))
    dest = Path(dest).resolve()  # a relative --out's parents stop at the cwd, which may lie inside the root
    for parent in [dest, *dest.parents]:
        if (parent / GOLDEN_MARKER).is_file() and not allow_goldens:
            raise UsageError(f"'{parent}' holds committed golden snapshots; not writing into it",
                             "choose another --out, or pass --update-goldens to rewrite goldens on purpose")


@contextlib.contextmanager
def folder_lock(folder: Path) -> Iterator[None]:
    """Hold the lock of an existing snapshot folder: an flock on the folder itself (no lock file in it).

    `write_folder` holds it from reading the folder's records to swapping the new folder in, and a GPU
    record is appended under it (gpu/session.py), so no record lands in a folder that is being replaced.
    A folder swapped out while this waited is not the one at `folder` any more: the lock is taken again on
    the folder that is there now."""
    while True:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            locked, now = os.fstat(fd), os.stat(folder)
        except FileNotFoundError:  # swapped out and not yet replaced: try again
            os.close(fd)
            continue
        except OSError as e:
            os.close(fd)
            if e.errno not in _NO_FLOCK:
                raise
            # A file system with no flock on a folder: NFS emulates flock as a write lock, which a folder (open
            # read-only) cannot take (EBADF). There the work goes on unlocked: it is not refused (every
            # recompile into an existing folder, and every GPU record, failed with that OSError).
            fd = None
            break
        except BaseException:
            os.close(fd)
            raise
        if (locked.st_dev, locked.st_ino) == (now.st_dev, now.st_ino):
            break
        os.close(fd)
    try:
        yield
    finally:
        if fd is not None:
            os.close(fd)  # closing releases the lock


_NO_FLOCK = {errno.EBADF, errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EINVAL}


def _check_is_folder_path(dest: Path) -> None:
    """A file (or anything but a folder) where the snapshot folder or one of its parents must go: a usage
    error naming it, before any compile, where it was each compile's crash (NotADirectoryError)."""
    for path in [dest, *dest.parents]:
        try:
            if path.is_dir():
                return
            if not path.exists() and not path.is_symlink():
                continue
        except OSError:
            return  # (unreadable: the write says why)
        what = "a link to nothing" if path.is_symlink() and not path.exists() else "a file"
        raise UsageError(f"'{path}' is {what}, where irscope would make the folder '{dest}'",
                         "move it aside, or compile into another --out")


def write_folder(dest: Path, files: Mapping[str, bytes | str]) -> None:
    """Write a folder of files all at once: build it beside `dest`, then swap it in with one rename.

    A crash, a kill or Ctrl-C leaves either the old folder or the new one, never a mix; a half-built
    folder stays hidden (a dot name) and is swept up by the next write into the same parent. Replacing a
    folder loses nothing: its GPU records move to the new folder while its binary stays the same, and a
    file the new folder would drop otherwise (a record of a changed binary, a file irscope did not write)
    is refused before anything is written (UsageError).
    """
    dest = Path(dest)
    if dest.is_dir() and not dest.is_symlink():
        with folder_lock(dest):  # a record appended meanwhile is carried, not left in the folder swapped out
            _write_folder(dest, files)
    else:
        _write_folder(dest, files)


def _write_folder(dest: Path, files: Mapping[str, bytes | str]) -> None:
    carried = _carried(dest, files)
    dest.parent.mkdir(parents=True, exist_ok=True)
    sweep_stale(dest.parent)
    tmp = dest.parent / f".{dest.name}.tmp-{os.getpid()}-{secrets.token_hex(4)}"
    tmp.mkdir()
    try:
        for name, data in itertools.chain(files.items(), carried.items()):
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


# What a snapshot folder holds beside its compile's files: GPU records of its binary (irscope run, verify),
# and caches that are made again on demand.
RECORDS = ("runs.json", "verify.json")
CACHES = (".irscope-analysis.json", "layouts.json")
BINARIES = (".cubin", ".hsaco")
STAGE_SUFFIXES = tuple(f".{s}" for s in STAGES)  # every stage file a compile writes (glir, source, ...)
MADE_DIRS = ("logs", "passes")
# The records of a binary the folder held before, kept beside the new one: runs.<its sha256, 12 digits>.json
_OLD_RECORD = re.compile(r"(runs|verify)\.[0-9a-f]{12}\.json")
# What a killed writer leaves: replace_file's and the analysis cache's temporary files
_LEFTOVER = re.compile(r"\..+\.(tmp-\d+-[0-9a-f]+|\d+\.tmp)")


def _carried(dest: Path, files: Mapping[str, bytes | str]) -> dict[str, bytes]:
    """The files of the folder at `dest` that its replacement by `files` must keep. Its GPU records move
    to the new folder: as they are while its binary stays the same byte for byte, else renamed for the
    binary they were measured on (`runs.<sha256[:12]>.json`), so that neither is lost nor taken for the
    other's. A file irscope never writes there is refused, naming it, before anything is written."""
    if not dest.is_dir() or dest.is_symlink():
        return {}
    lost = foreign_files(dest, files)
    if lost:
        more = f" and {len(lost) - 3} more" if len(lost) > 3 else ""
        raise UsageError(f"'{dest}' holds {', '.join(lost[:3])}{more}; compiling into it again would lose "
                         f"{'it' if len(lost) == 1 else 'them'}",
                         "move those files out of the folder (or the folder aside), or compile into another --out")
    names = _contents(dest)
    binaries = [n for n in files if Path(n).suffix in BINARIES]
    same_binary = bool(binaries) and all(
        n in names and _plain(names[n]) and names[n].read_bytes() == _bytes(files[n]) for n in binaries)
    was = next((names[n] for n in sorted(names) if "/" not in n and Path(n).suffix in BINARIES
                and _plain(names[n])), None)
    old_sha = hashlib.sha256(was.read_bytes()).hexdigest()[:12] if was is not None else "nobinary0000"
    carried = {}
    for name, path in names.items():
        if name in files or not _plain(path):
            continue
        if name in RECORDS:
            kept = name if same_binary else f"{Path(name).stem}.{old_sha}.json"
            carried[kept] = path.read_bytes()
        elif _OLD_RECORD.fullmatch(name):
            carried[name] = path.read_bytes()
    return carried


def _contents(folder: Path) -> dict[str, Path]:
    """Every file, link, FIFO... under `folder` (not its folders) by its path inside it; none is read."""
    return {p.relative_to(folder).as_posix(): p for p in sorted(folder.rglob("*")) if not p.is_dir() or p.is_symlink()}


def foreign_files(folder: Path, replaced_by: Mapping[str, object] = {}) -> list[str]:
    """What `folder` holds that irscope never writes in a snapshot folder, each named with why (a link, a
    FIFO, a file or an empty folder of the user's): what replacing the folder (by the files `replaced_by`)
    or deleting it would lose. Its stages, logs, pass timeline, GPU records and caches are irscope's own."""
    names = _contents(folder)
    # An empty folder is nobody's file, but one irscope does not make is the user's: kept as a loss, named.
    empty = [p.relative_to(folder).as_posix() for p in sorted(folder.rglob("*"))
             if p.is_dir() and not p.is_symlink() and _empty(p)]
    stems = {Path(n).stem for n in names if "/" not in n and Path(n).suffix in STAGE_SUFFIXES}
    lost = []
    for name, path in names.items():
        top = name.split("/", 1)[0]
        if name in replaced_by or name in CACHES or top in MADE_DIRS and "/" in name or _LEFTOVER.fullmatch(name):
            continue
        if path.is_symlink():
            lost.append(f"{name} (a link, not written by irscope)")
        elif not path.is_file():
            lost.append(f"{name} (a FIFO, socket or device, not written by irscope)")
        elif name in RECORDS or _OLD_RECORD.fullmatch(name):
            continue
        elif "/" not in name and (Path(name).suffix in STAGE_SUFFIXES
                                  or name in ("irscope.json", "source.py", "golden.json")
                                  or Path(name).suffix == ".json" and Path(name).stem in stems):
            continue  # a stage of an earlier compile into the same folder: irscope's own
        else:
            lost.append(f"{name} (not written by irscope)")
    return lost + [f"{name}/ (a folder, not made by irscope)" for name in empty
                   if name.split("/", 1)[0] not in MADE_DIRS]


def _empty(folder: Path) -> bool:
    try:
        with os.scandir(folder) as entries:
            return next(entries, None) is None
    except OSError:  # unreadable: not known to be empty (and not irscope's to drop)
        return True


def _plain(path: Path) -> bool:
    """A regular file, not a link: one whose bytes can be read without blocking or leaving the folder."""
    return path.is_file() and not path.is_symlink()


def _bytes(data: bytes | str) -> bytes:
    return data.encode() if isinstance(data, str) else data


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
    if pid != os.getpid() and not process_running(pid):
        shutil.rmtree(path, ignore_errors=True)


def process_running(pid: int) -> bool:
    """Whether a process of this number runs here; True where that cannot be told (another user's, a number
    the system does not take, or none a process could have), so that nothing of it is removed."""
    if pid <= 0:
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, OSError):
        return True
    return True


def replace_file(folder: Path, name: str, data: bytes) -> None:
    """Replace one file of an existing snapshot folder atomically, leaving its other files untouched.

    The bytes go to a hidden temporary file beside it, then one rename swaps it in: a reader sees the old
    file or the new one, never a part. `name` is a plain file name; the rename replaces a symlink of that
    name rather than writing where it points, so nothing outside `folder` is written.
    """
    if not name or name in (".", "..") or "/" in name or os.sep in name:
        raise UsageError(f"'{name}' is not a file name inside {folder}", "name one file of the folder")
    folder = Path(folder)
    for stale in folder.glob(f".{name}.tmp-*"):  # left by a writer killed midway
        _remove_file_if_orphan(stale)
    tmp = folder / f".{name}.tmp-{os.getpid()}-{secrets.token_hex(4)}"
    try:
        with open(tmp, "xb") as f:  # "x": never through a file or link already there
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, folder / name)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _remove_file_if_orphan(path: Path) -> None:
    try:
        pid = int(path.name.rsplit("-", 2)[-2])
    except (ValueError, IndexError):
        return
    if pid != os.getpid() and not process_running(pid) and not path.is_dir():
        path.unlink(missing_ok=True)
