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


def _copy_with_runs(dest: Path, runs: list) -> Path:
    import json
    import shutil
    shutil.copytree(ROOT / "snapshots" / "matmul" / "default" / "sm_90a", dest)
    (dest / "runs.json").write_text(json.dumps(runs))
    return dest


def test_runs_with_rates_no_axis_can_hold_are_not_drawn_and_the_rest_is(cli, tmp_path):
    """A runs.json of 1e300 FLOP in 1e-300 ms made the roofline's axes infinite: an internal error (exit 70)."""
    gpu = {"device": "H200", "copy_gbps": 3900, "matmul_tflops": 720}
    good = {"recorded": "t", "ok": True, "size_name": "good", "gpu": gpu,
            "bench": {"kernel": {"ms": 0.25}, "flops": 2 * 4096 ** 3, "bytes": 3 * 4096 * 4096 * 2}}
    huge = dict(good, size_name="huge", bench={"kernel": {"ms": 1e-300}, "flops": 1e300, "bytes": 1})
    tiny = dict(good, size_name="tiny", bench={"kernel": {"ms": 1e300}, "flops": 1e-300, "bytes": 1e300})
    roofless = dict(good, size_name="roofless", gpu=dict(gpu, matmul_tflops=1e300))
    _copy_with_runs(tmp_path / "s", [good, huge, tiny, roofless])
    code, out, err = cli("report", "s", "-o", "r.html")
    assert code == 0, err
    html = (tmp_path / "r.html").read_text()
    assert html.count('<circle class="pt"') == 1 and "good: 0.2500 ms" in html  # the others are in the table only
    assert html.count("<td>huge</td>") == 1 and html.count("<td>roofless</td>") == 1


def test_a_sweep_point_whose_target_is_null_is_named_by_a_question_mark(cli, tmp_path):
    """`"target": null` (which the schema allows) named the point None: an internal error (exit 70) in the plots."""
    import json
    (tmp_path / "s.json").write_text(json.dumps({"points": [{"status": "ok", "target": None}]}))
    code, out, err = cli("report", "--sweep", "s.json", "-o", "r.html")
    assert code == 0, err
    assert "None" not in (tmp_path / "r.html").read_text().split("<main>")[1]


def test_a_sweep_result_that_is_a_silent_pipe_or_endless_is_refused_not_waited_on(cli, tmp_path):
    """--sweep FIFO (nothing writing) waited forever; --sweep /dev/zero read until memory ran out."""
    import subprocess
    import sys
    os.mkfifo(tmp_path / "pipe")
    for what, want in (("pipe", "is a named pipe that nothing writes to"),
                       ("/dev/zero", "larger than any sweep result irscope reads")):
        proc = subprocess.run([sys.executable, "-m", "irscope", "report", "--sweep", what, "-o", "r.html"],
                              cwd=tmp_path, capture_output=True, text=True, timeout=60)
        assert proc.returncode == 2 and want in proc.stderr and "hint:" in proc.stderr, proc.stderr
    assert not (tmp_path / "r.html").exists()
