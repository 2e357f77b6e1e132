"""`irscope report` under hostile and odd input: what a review found, each test failing before its fix."""
from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ADD = ROOT / "snapshots" / "add" / "default" / "sm_90a"


def test_output_onto_a_fifo_is_refused_and_the_fifo_kept(cli, tmp_path):
    """-o onto a FIFO (or, as root, /dev/null) replaced the node with a regular file."""
    os.mkfifo(tmp_path / "pipe")
    code, out, err = cli("report", ADD, "-o", "pipe")
    assert code == 2 and "-o pipe exists and is not a regular file" in err and "-o -" in err, err
    assert (tmp_path / "pipe").is_fifo()
