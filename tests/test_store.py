import json
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap

import pytest

from irscope.errors import SnapshotError, UsageError
from irscope.store.snapshot import GOLDEN_MARKER, find_snapshots, load_snapshot, scan_snapshots
from irscope.store.folder import check_writable, write_folder


def test_write_folder_creates_then_replaces_whole(tmp_path):
    dest = tmp_path / "k" / "v" / "sm_90a"
    write_folder(dest, {"k.ptx": "one", "logs/b.log": b"two", "irscope.json": "{}"})
    assert (dest / "k.ptx").read_text() == "one" and (dest / "logs" / "b.log").read_bytes() == b"two"
    write_folder(dest, {"k.ttgir": "three", "irscope.json": "{}"})  # an earlier compile's stages and logs go
    assert sorted(p.name for p in dest.iterdir()) == ["irscope.json", "k.ttgir"]
    assert [p.name for p in dest.parent.iterdir()] == ["sm_90a"]  # no temporary or old folders left


def _snapshot_files(cubin: bytes) -> dict:
    return {"k.ptx": "ptx", "k.cubin": cubin, "k.json": "{}", "source.py": "", "irscope.json": "{}"}


def test_a_rewrite_keeps_the_gpu_records_of_an_unchanged_binary(tmp_path):
    dest = tmp_path / "add" / "default" / "sm_90a"
    write_folder(dest, _snapshot_files(b"\x7fELF same"))
    (dest / "runs.json").write_text('[{"recorded": "then"}]')
    (dest / "verify.json").write_text("[]")
    (dest / ".irscope-analysis.json").write_text("{}")  # a cache: made again on demand
    write_folder(dest, {**_snapshot_files(b"\x7fELF same"), "k.ptx": "ptx, line info changed"})
    assert (dest / "runs.json").read_text() == '[{"recorded": "then"}]' and (dest / "verify.json").exists()
    assert (dest / "k.ptx").read_text() == "ptx, line info changed" and not (dest / ".irscope-analysis.json").exists()


def test_a_rewrite_that_changes_the_binary_keeps_its_records_under_the_old_binarys_name(tmp_path):
    import hashlib
    dest = tmp_path / "add" / "default" / "sm_90a"
    write_folder(dest, _snapshot_files(b"\x7fELF old"))
    (dest / "runs.json").write_text('[{"recorded": "old binary"}]')
    (dest / ".runs.json.tmp-99999-abcdef12").write_text("a killed writer's leftover")
    (dest / "k.glir").write_text("an earlier compile's stage")
    write_folder(dest, _snapshot_files(b"\x7fELF new"))
    old = hashlib.sha256(b"\x7fELF old").hexdigest()[:12]
    assert not (dest / "runs.json").exists()  # never taken for the new binary's
    assert (dest / f"runs.{old}.json").read_text() == '[{"recorded": "old binary"}]'
    assert not (dest / "k.glir").exists() and not (dest / ".runs.json.tmp-99999-abcdef12").exists()
    write_folder(dest, _snapshot_files(b"\x7fELF newer"))  # kept again at the next rewrite
    assert (dest / f"runs.{old}.json").exists()


@pytest.mark.parametrize("extra", ["notes.txt", "mine/plot.png", ".hidden"])
def test_a_rewrite_that_would_lose_a_users_file_is_refused_and_writes_nothing(tmp_path, extra):
    """A file irscope never writes there: refused, naming the file, and the folder is left as it was."""
    dest = tmp_path / "add" / "default" / "sm_90a"
    write_folder(dest, _snapshot_files(b"\x7fELF old"))
    (dest / extra).parent.mkdir(exist_ok=True)
    (dest / extra).write_text("keep me")
    with pytest.raises(UsageError, match=re.escape(extra)) as e:
        write_folder(dest, _snapshot_files(b"\x7fELF new"))
    assert "would lose" in e.value.message
    assert (dest / extra).read_text() == "keep me" and (dest / "k.cubin").read_bytes() == b"\x7fELF old"
    assert [p.name for p in dest.parent.iterdir()] == ["sm_90a"]


def test_a_rewrite_does_not_drop_an_empty_folder_the_user_made(tmp_path):
    """An empty folder of the user's (mine/, mine/later/) was dropped by a recompile without a word; irscope's
    own (logs/, passes/) are not in the way."""
    dest = tmp_path / "add" / "default" / "sm_90a"
    write_folder(dest, _snapshot_files(b"\x7fELF old"))
    (dest / "mine" / "later").mkdir(parents=True)
    (dest / "passes").mkdir()
    with pytest.raises(UsageError, match=re.escape("mine/later/ (a folder, not made by irscope)")):
        write_folder(dest, _snapshot_files(b"\x7fELF new"))
    assert (dest / "mine" / "later").is_dir() and (dest / "k.cubin").read_bytes() == b"\x7fELF old"
    (dest / "mine" / "later").rmdir()
    (dest / "mine").rmdir()
    write_folder(dest, _snapshot_files(b"\x7fELF new"))
    assert (dest / "k.cubin").read_bytes() == b"\x7fELF new"


def test_a_record_appended_while_the_folder_is_rewritten_is_carried_not_lost(tmp_path):
    """A run appending to runs.json (under the folder's lock, as gpu/session.record does) while a recompile
    replaced the folder: the recompile had read the records already, so the new one stayed in the folder
    swapped out and was deleted with it. The rewrite waits for the lock and carries the record."""
    import hashlib
    import threading
    import time
    from irscope.store.folder import folder_lock
    from irscope.store.results import append
    dest = tmp_path / "add" / "default" / "sm_90a"
    write_folder(dest, _snapshot_files(b"\x7fELF old"))
    done = threading.Event()
    with folder_lock(dest):
        writer = threading.Thread(target=lambda: (write_folder(dest, _snapshot_files(b"\x7fELF new")), done.set()))
        writer.start()
        time.sleep(0.5)
        assert not done.is_set(), "the rewrite did not wait for the folder's lock"
        append(dest, "runs.json", {"source": "jit", "ok": True})
    writer.join(30)
    assert done.is_set() and (dest / "k.cubin").read_bytes() == b"\x7fELF new"
    old = hashlib.sha256(b"\x7fELF old").hexdigest()[:12]
    assert [r["source"] for r in json.loads((dest / f"runs.{old}.json").read_text())] == ["jit"]
    with folder_lock(dest):  # the lock is taken on the folder there now, not the one swapped out
        pass


def test_a_rewrite_where_the_file_system_has_no_flock_on_a_folder_still_writes(tmp_path, monkeypatch):
    """NFS emulates flock as a write lock, which a folder (open read-only) cannot take: EBADF. Every recompile
    into an existing folder failed with that OSError once the rewrite took the folder's lock."""
    import errno
    from irscope.store import folder as folder_module

    def no_flock(fd, op):
        raise OSError(errno.EBADF, "Bad file descriptor")

    dest = tmp_path / "add" / "default" / "sm_90a"
    write_folder(dest, _snapshot_files(b"\x7fELF old"))
    monkeypatch.setattr(folder_module.fcntl, "flock", no_flock)
    write_folder(dest, _snapshot_files(b"\x7fELF new"))
    assert (dest / "k.cubin").read_bytes() == b"\x7fELF new"
    with folder_module.folder_lock(dest):  # (a GPU record is appended under it)
        pass


def test_interrupted_write_leaves_the_old_folder_untouched(tmp_path):
    dest = tmp_path / "snap"
    write_folder(dest, {"a.txt": "old"})

    class Exploding(dict):
        def items(self):
            yield "a.txt", "new"
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        write_folder(dest, Exploding({"a.txt": "new"}))
    assert (dest / "a.txt").read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["snap"]


WRITER = textwrap.dedent("""
    import sys
    from irscope.store import write_folder
    dest, n = sys.argv[1], 0
    print("ready", flush=True)
    while True:
        tag = str(n % 2)
        write_folder(dest, {f"f{i:04d}.txt": tag * 2000 for i in range(400)})
        n += 1
""")


def test_killing_a_writer_at_random_moments_never_leaves_a_mixed_folder(tmp_path):
    dest = tmp_path / "snap"
    for attempt in range(12):
        proc = subprocess.Popen([sys.executable, "-c", WRITER, str(dest)], stdout=subprocess.PIPE)
        proc.stdout.readline()
        import time
        time.sleep(0.05 + 0.037 * attempt)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        if dest.exists():
            contents = {p.read_text() for p in dest.iterdir()}
            assert len(contents) == 1 and len(list(dest.iterdir())) == 400, f"mixed folder after kill {attempt}"
    visible = [p.name for p in tmp_path.iterdir() if not p.name.startswith(".")]
    assert visible == ["snap"]
    write_folder(dest, {f"f{i:04d}.txt": "z" for i in range(400)})  # the next write sweeps the dead writers' leftovers
    assert sorted(p.name for p in tmp_path.iterdir()) == ["snap"]


def test_goldens_are_refused_unless_asked(tmp_path):
    (tmp_path / GOLDEN_MARKER).write_text("")
    with pytest.raises(UsageError, match="golden"):
        check_writable(tmp_path / "matmul" / "default" / "sm_90a", allow_goldens=False)
    check_writable(tmp_path / "matmul" / "default" / "sm_90a", allow_goldens=True)


def test_snapshot_of_a_real_compile_has_every_stage(compiled):
    snap = load_snapshot(compiled / "matmul" / "default" / "sm_90a")
    assert snap.ok and snap.origin == "irscope"
    assert snap.stages == ("source", "ttir", "ttgir", "llir", "ptx", "cubin", "sass")
    assert snap.kernel == "matmul" and snap.fn_name == "matmul_kernel" and snap.target_name == "sm_90a"
    assert "def matmul_kernel" in snap.python_source()
    assert "ptxas" in snap.log("ptxas")


def test_missing_and_damaged_snapshots_say_what_is_wrong(tmp_path, compiled):
    with pytest.raises(SnapshotError, match="does not exist"):
        load_snapshot(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(SnapshotError, match="not a snapshot"):
        load_snapshot(tmp_path / "empty")
    broken = tmp_path / "broken"
    shutil.copytree(compiled / "add" / "default" / "sm_80", broken)
    (broken / "add_kernel.ptx").unlink()
    with pytest.raises(SnapshotError, match="add_kernel.ptx is missing"):
        load_snapshot(broken)
    (broken / "irscope.json").write_text("{not json")
    with pytest.raises(SnapshotError, match="damaged"):
        load_snapshot(broken)


def test_a_triton_cache_entry_opens_as_a_snapshot(tmp_path, compiled):
    src = compiled / "add" / "default" / "gfx942"
    entry = tmp_path / "cache" / "5CWQ5QCJZ3M2Q"
    entry.mkdir(parents=True)
    for p in src.glob("add_kernel.*"):
        shutil.copy(p, entry / p.name)
    (entry / "__grp__add_kernel.json").write_text("{}")
    snap = load_snapshot(entry)
    assert snap.origin == "triton-cache" and snap.target_name == "gfx942"
    assert "amdgcn" in snap.stages and snap.resources.registers is not None
    assert [s.path for s in find_snapshots(tmp_path / "cache")] == [entry]


def test_a_kernel_dump_folder_opens_with_its_target_read_from_the_ptx(tmp_path, compiled):
    src = compiled / "add" / "default" / "sm_100a"
    dump = tmp_path / "dump" / "HASH"
    dump.mkdir(parents=True)
    for stage in ("ttir", "ttgir", "llir", "ptx"):
        shutil.copy(src / f"add_kernel.{stage}", dump)
    snap = load_snapshot(dump)
    assert snap.origin == "triton-dump" and snap.target_name == "sm_100a"
    # a folder of several kernels' stages (/tmp, where Triton leaves tmpXXXX.ptx files) is none: `irscope
    # diff A /tmp` read it as a dump of the first name
    shutil.copy(src / "add_kernel.ptx", dump / "tmp0mfhh0v3.ptx")
    with pytest.raises(SnapshotError):
        load_snapshot(dump)


def test_find_snapshots_walks_kernel_variant_target_and_skips_hidden(compiled):
    labels = sorted(s.label for s in find_snapshots(compiled))
    assert len(labels) == 14 and "matmul/default/gfx950" in labels


def _copy(compiled, dest):
    shutil.copytree(compiled / "add" / "default" / "sm_80", dest)
    return dest


def _edit_meta(folder, **changes):
    meta = json.loads((folder / "irscope.json").read_text())
    meta.update(changes)
    (folder / "irscope.json").write_text(json.dumps(meta))


def test_an_ill_typed_irscope_json_is_refused_naming_the_field(tmp_path, compiled):
    snap = _copy(compiled, tmp_path / "s")
    for field, value, named in (("format", "1", "'format'"), ("target", {"name": 5}, "'target.name'"),
                                ("stages", [], "'stages'"), ("function", "../../secret", "'function'"),
                                ("specialisation", [{"name": "x"}], "'specialisation[0].type'")):
        shutil.copy(compiled / "add" / "default" / "sm_80" / "irscope.json", snap / "irscope.json")
        _edit_meta(snap, **{field: value})
        with pytest.raises(SnapshotError, match=f"field {re.escape(named)}"):
            load_snapshot(snap)


def test_a_symlink_out_of_the_folder_is_refused_and_one_inside_is_not(tmp_path, compiled):
    snap = _copy(compiled, tmp_path / "s")
    (tmp_path / "secret").write_text("secret")
    (snap / "add_kernel.ptx").rename(snap / "real.ptx")
    (snap / "add_kernel.ptx").symlink_to(snap / "real.ptx")
    assert "ld.global" in load_snapshot(snap).read("ptx")
    (snap / "logs" / "ptxas.log").unlink()
    (snap / "logs" / "ptxas.log").symlink_to(tmp_path / "secret")
    with pytest.raises(SnapshotError, match="logs/ptxas.log points outside the snapshot folder"):
        load_snapshot(snap)


def test_a_folder_that_is_no_snapshot_is_said_to_be_none_even_with_a_link_out_of_it(tmp_path):
    """A wrong path (a home folder, /etc) is "not a snapshot", not "hostile" for a link it holds; once a
    name makes it look like one (a stage file), its links out are refused as before."""
    (tmp_path / "secret").write_text("secret")
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "todo.txt").write_text("x")
    (folder / "localtime").symlink_to(tmp_path / "secret")
    with pytest.raises(SnapshotError, match="is not a snapshot"):
        load_snapshot(folder)
    (folder / "k.ttir").write_text("module {}\n")
    with pytest.raises(SnapshotError, match="localtime points outside the snapshot folder"):
        load_snapshot(folder)


def test_a_stage_whose_bytes_differ_from_the_recorded_hash_is_refused_and_listed(tmp_path, compiled):
    snap = _copy(compiled, tmp_path / "s")
    with open(snap / "add_kernel.ttgir", "a") as f:
        f.write("// edited\n")
    s = load_snapshot(snap)
    assert s.damaged_stages() == ("ttgir",)
    with pytest.raises(SnapshotError, match="add_kernel.ttgir does not match the sha256"):
        s.read("ttgir")
    assert "ld.global" in s.read("ptx")


def test_scan_snapshots_keeps_going_past_a_damaged_one(tmp_path, compiled):
    good = _copy(compiled, tmp_path / "root" / "a")
    bad = _copy(compiled, tmp_path / "root" / "b")
    _edit_meta(bad, resources="x")
    found = scan_snapshots(tmp_path / "root")
    assert [s.path for s in found.snapshots] == [good]
    assert [(p, "field 'resources'" in str(e)) for p, e in found.damaged] == [(bad, True)]
    with pytest.raises(SnapshotError, match="field 'resources'"):
        find_snapshots(tmp_path / "root")
