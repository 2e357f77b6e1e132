"""Files a user names on the command line (`--json FILE`, `report -o FILE`, `rank --emit-configs FILE.py`):
written so that nobody ever reads half of one, and nothing but the named file changes."""
from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path


def write_output(path: Path | str, text: str, *, make_folder: bool = False) -> Path:
    """Write `text` to `path` as a whole: into a hidden temporary file beside it, then one rename, so a reader
    (a dashboard polling --json, a browser on the report) sees the old file or the new one, and a full disk
    or a Ctrl-C leaves the old one. The temporary file is removed on any failure.

    - A symlink is followed: its target is replaced, as `open(path, "w")` would write it, not the link.
    - Something there that is not a regular file (`/dev/stdout`, a FIFO, a terminal) is written in place:
      a rename would replace it with a file.
    - A file there keeps its permissions; a new one gets the umask's, as `open()` gives.
    """
    path = Path(path)
    try:
        there = os.stat(path)  # through a symlink
    except FileNotFoundError:
        there = None
    if there is not None and not stat.S_ISREG(there.st_mode):
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return path
    target = Path(os.path.realpath(path))  # a (dangling) symlink's target, or the path itself
    if make_folder:
        target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        if there is not None:
            mode = stat.S_IMODE(there.st_mode)
        else:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        os.chmod(tmp, mode)  # mkstemp's are 0600
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
