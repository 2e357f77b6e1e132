"""`irscope report` under hostile and odd input, a second review: each test fails before its fix."""
from __future__ import annotations

import base64
import gzip
import html
import json
import re
import shutil
from pathlib import Path

from irscope.report import build_report
from irscope.store.snapshot import load_snapshot

ROOT = Path(__file__).resolve().parent.parent
ADD = ROOT / "snapshots" / "add" / "default" / "sm_90a"


def embedded(page: str, ident: str):
    """The value the page embeds under `ident` (JSON, or gzip in base64), as the page's script reads it."""
    m = re.search(rf'<script type="application/(json|gzip)"[^>]* id="{re.escape(ident)}">(.*?)</script>', page, re.S)
    assert m, ident
    text = gzip.decompress(base64.b64decode(m.group(2))).decode() if m.group(1) == "gzip" else m.group(2)
    return json.loads(text)


def stage_rows(page: str, stage: str) -> dict:
    ids = json.loads(html.unescape(re.search(r'data-stages="([^"]*)"', page).group(1)))
    return embedded(page, ids[stage])


def _copy(dest: Path, stage: str, edit) -> Path:
    shutil.copytree(ADD, dest)
    meta = json.loads((dest / "irscope.json").read_text())
    path = dest / meta["stages"][stage]["file"]
    path.write_text(edit(path.read_text()), newline="")
    meta["stages"][stage].pop("sha256", None)
    (dest / "irscope.json").write_text(json.dumps(meta))
    return dest


def test_a_line_break_other_than_newline_in_a_stage_keeps_every_python_line_on_its_own_ir_lines(tmp_path):
    """The line map split a stage at U+2028, form feeds and the like (str.splitlines) where its rows split at
    newlines only: one such character moved every Python line's highlight below it onto the next IR lines."""
    clean = build_report([load_snapshot(ADD)])
    want = stage_rows(clean, "ttgir")
    odd = "\u2028", "\x0c", "\x85", "\x1e"  # (a lone CR is a newline already: the stage is read as text)

    def edit(text: str) -> str:
        lines = text.split("\n")
        return "\n".join(lines[:3] + [lines[3] + " // a" + "b".join(odd) + "c"] + lines[4:])
    page = build_report([load_snapshot(_copy(tmp_path / "odd", "ttgir", edit))])
    got = stage_rows(page, "ttgir")
    assert len(got["rows"]) == len(want["rows"])
    assert got["src"] == want["src"] and any(want["src"])
    assert "\\u2028" in got["rows"][3] and "\\x0c" in got["rows"][3]  # shown where it is, as its escape


def test_a_sweep_result_of_more_axes_than_a_table_holds_is_refused_and_a_real_one_keeps_its_columns(cli, tmp_path):
    """Each axis is a column of the points' table: 100 points of 500 axes each (a 756 KiB file) made a 45 MiB page
    in 18 s, and a file of 64 MiB would have taken all memory. A result's axes that vary are still its columns."""
    many = tmp_path / "axes.json"
    many.write_text(json.dumps({"points": [{"axes": {f"a{p}_{i}": i for i in range(40)}} for p in range(5)]}))
    code, out, err = cli("report", "--sweep", many, "-o", tmp_path / "r.html")
    assert code == 2 and "names 200 axes" in err and "up to 64" in err and not (tmp_path / "r.html").exists(), err
    few = tmp_path / "few.json"  # BLOCK varies; num_warps does not; K is missing at one point (a column too)
    few.write_text(json.dumps({"points": [{"target": "sm_90a", "axes": {"BLOCK": 32, "num_warps": 4, "K": 1}},
                                          {"target": "sm_90a", "axes": {"BLOCK": 64, "num_warps": 4}}]}))
    code, out, err = cli("report", "--sweep", few, "-o", tmp_path / "few.html")
    assert code == 0, err
    head = re.search(r"<table class=\"sortable points\"><thead><tr>(.*?)</tr>",
                     (tmp_path / "few.html").read_text()).group(1)
    assert re.findall(r"<th[^>]*>([^<]*)</th>", head)[:4] == ["point", "status", "BLOCK", "K"]


def test_a_failed_gpu_run_says_why_in_its_row(cli, tmp_path):
    """A run whose launch raised (runs.json's error) read 'FAILED' alone: the reason was in the file, not the page."""
    snap = tmp_path / "add"
    shutil.copytree(ADD, snap)
    (snap / "runs.json").write_text(json.dumps([
        {"recorded": "2026-12-05T00:00:00+0000", "ok": False, "size_name": "bench",
         "error": "launch failed: RuntimeError: <out of resources>", "gpu": {"device": "NVIDIA H200"}},
        {"recorded": "2026-12-05T00:00:01+0000", "ok": True, "size_name": "bench", "gpu": {"device": "NVIDIA H200"}}]))
    code, out, err = cli("report", snap, "-o", tmp_path / "r.html")
    assert code == 0, err
    page = (tmp_path / "r.html").read_text()
    assert "FAILED: launch failed: RuntimeError: &lt;out of resources&gt;" in page
    assert ">ok</td>" in page


def test_a_compared_roofline_names_the_snapshot_whose_ceilings_it_draws(cli, tmp_path):
    """With the first column run-less, the note said the ceilings were its run's (they are the next one's)."""
    def run(device: str, copy: float) -> list:
        return [{"recorded": "2026-12-05T00:00:00+0000", "ok": True, "size_name": "bench",
                 "gpu": {"device": device, "copy_gbps": copy, "matmul_tflops": 700.0},
                 "bench": {"kernel": {"ms": 0.5}, "flops": 1e9, "bytes": 1.2e10}}]
    folders = []
    for target, runs in (("sm_90a", None), ("sm_80", run("A100", 1500.0)), ("sm_100a", run("B200", 7000.0))):
        dest = tmp_path / target
        shutil.copytree(ADD.parent / target, dest)
        if runs:
            (dest / "runs.json").write_text(json.dumps(runs))
        folders.append(dest)
    code, out, err = cli("report", "--compare", *folders, "-o", tmp_path / "r.html")
    assert code == 0, err
    page = (tmp_path / "r.html").read_text()
    note = re.search(r"the ceilings are those ([^<]*)'s run measured", page)
    assert note and note.group(1) == "sm_80" and "compared on A100" in page, note and note.group(0)
