"""Files a user names (`run --json FILE`, `report -o FILE`, `rank --emit-configs FILE.py`): written whole, through
a symlink to its target, in place when they are no regular file, keeping a file's permissions."""
import json
import os
import stat
import threading

import pytest

from irscope.store.output import write_output


def test_a_write_that_fails_midway_leaves_the_old_file_and_no_temporary(tmp_path):
    out = tmp_path / "results.json"
    out.write_text('{"old": true}\n')
    with pytest.raises(UnicodeEncodeError):
        write_output(out, '{"new": "' + "x" * 100_000 + '\udc80"}')  # fails after 100 kB were written
    assert out.read_text() == '{"old": true}\n'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.json"]


def test_a_symlink_is_followed_and_stays_a_symlink(tmp_path):
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / "latest.json"
    target.write_text("old\n")
    link = tmp_path / "latest.json"
    link.symlink_to(target)
    write_output(link, "new\n")
    assert link.is_symlink() and target.read_text() == "new\n"
    dangling = tmp_path / "next.json"
    dangling.symlink_to(tmp_path / "real" / "next.json")
    write_output(dangling, "first\n")
    assert dangling.is_symlink() and (tmp_path / "real" / "next.json").read_text() == "first\n"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="POSIX FIFOs")
def test_a_fifo_is_written_into_not_replaced(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()))
    reader.start()
    write_output(fifo, "through the pipe\n")
    reader.join(10)
    assert got == ["through the pipe\n"] and stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_a_file_keeps_its_permissions_and_a_new_one_gets_the_umasks(tmp_path):
    private = tmp_path / "private.json"
    private.write_text("{}\n")
    private.chmod(0o600)
    write_output(private, "[]\n")
    assert stat.S_IMODE(private.stat().st_mode) == 0o600 and private.read_text() == "[]\n"
    umask = os.umask(0o022)
    try:
        write_output(tmp_path / "new.json", "[]\n")
    finally:
        os.umask(umask)
    assert stat.S_IMODE((tmp_path / "new.json").stat().st_mode) == 0o644  # not mkstemp's 0600


def test_run_json_goes_through_a_symlink_to_its_target(cli, tmp_path):
    (tmp_path / "keep").mkdir()
    (tmp_path / "keep" / "run.json").write_text("[]\n")
    (tmp_path / "run.json").symlink_to(tmp_path / "keep" / "run.json")
    code, out, err = cli("run", "add", "--interpret", "--size", "small", "--json", "run.json")
    assert code == 0, err
    assert (tmp_path / "run.json").is_symlink()
    [result] = json.loads((tmp_path / "keep" / "run.json").read_text())
    assert result["kernel"] == "add" and result["ok"]


def test_report_through_a_symlink_replaces_its_target_not_the_link(cli, tmp_path):
    # `ln -s /srv/www/kernels.html report.html`: the report replaced the link with a file of its own, and the
    # page the link served never changed.
    from pathlib import Path
    snap = Path(__file__).resolve().parent.parent / "snapshots" / "add" / "default" / "sm_80"
    (tmp_path / "www").mkdir()
    assert cli("report", snap, "-o", "www/kernels.html")[0] == 0  # yesterday's
    (tmp_path / "report.html").symlink_to(tmp_path / "www" / "kernels.html")
    sm90 = snap.parent / "sm_90a"
    code, out, err = cli("report", sm90, "-o", "report.html")
    assert code == 0, err
    assert (tmp_path / "report.html").is_symlink()
    assert "add/default/sm_90a" in (tmp_path / "www" / "kernels.html").read_text()
    assert sorted(p.name for p in (tmp_path / "www").iterdir()) == ["kernels.html"]
