"""The snapshot folder format, both directions: snapshot.py (load, find, write atomically), results.py
(GPU results beside a snapshot). No Triton import."""
from .snapshot import GOLDEN_MARKER, META_FILE, STAGES, Snapshot, find_snapshots, iter_snapshot_dirs, load_snapshot
from .folder import check_writable, snapshot_dir, write_folder

__all__ = ["GOLDEN_MARKER", "META_FILE", "STAGES", "Snapshot", "check_writable", "find_snapshots",
           "iter_snapshot_dirs", "load_snapshot", "snapshot_dir", "write_folder"]
