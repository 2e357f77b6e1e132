"""`irscope report` under hostile and odd input: what a review found, each test failing before its fix."""
from __future__ import annotations

import os
import time
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


# -- in the browser (the fixture and loader of tests/test_report.py) -----------------------------------------

from tests.test_report import browser, open_page  # noqa: E402,F401 - a fixture, used by name


def _variants(tmp_path: Path, n: int) -> list:
    import json
    import shutil
    from irscope.store.snapshot import load_snapshot
    snaps = []
    for i in range(n):
        dest = tmp_path / f"v{i}"
        shutil.copytree(ADD, dest)
        meta = json.loads((dest / "irscope.json").read_text())
        meta["variant"] = f"v{i}"
        (dest / "irscope.json").write_text(json.dumps(meta))
        snaps.append(load_snapshot(dest))
    return snaps


def test_viewers_far_below_are_built_when_reached_not_on_load(browser, tmp_path):
    """Every snapshot's panes were drawn on load: a report of 500 snapshots was held for most of a minute."""
    from irscope.report import build_report, write_report
    path = write_report(tmp_path / "many.html", build_report(_variants(tmp_path, 12)))
    assert open_page(browser, path) == []
    built = browser.execute_script("return document.querySelectorAll('.viewer[data-built]').length")
    assert 1 <= built < 6, built
    assert browser.find_elements("css selector", "section .viewer .vs.ir .r"), "the first viewer is not drawn"
    # Reached by scrolling: drawn once it comes near the screen.
    last = browser.find_elements("css selector", ".viewer")[-1]
    browser.execute_script("arguments[0].scrollIntoView()", last)
    from selenium.webdriver.support.ui import WebDriverWait
    WebDriverWait(browser, 10).until(lambda d: last.find_elements("css selector", ".vs.ir .r"))
    # Reached by a click before that (a link, a script): the click is served, not lost.
    viewer = browser.find_elements("css selector", ".viewer:not([data-built])")[-1]
    browser.execute_script("arguments[0].querySelector('.tabs button[data-stage=\"ptx\"]').click()", viewer)
    assert viewer.find_element("css selector", ".tabs button.on").get_attribute("data-stage") == "ptx"
    assert viewer.find_elements("css selector", ".vs.ir .r")


def test_a_file_cut_short_says_so_at_the_top(browser, tmp_path):
    """The script is the file's last element: a file cut short ran none, and its panes stayed empty in silence."""
    from irscope.report import build_report, write_report
    from irscope.store.snapshot import load_snapshot
    whole = write_report(tmp_path / "whole.html", build_report([load_snapshot(ADD)]))
    assert open_page(browser, whole) == []
    assert not browser.find_elements("css selector", "#unready")
    text = whole.read_text()
    cut = tmp_path / "cut.html"
    cut.write_text(text[:len(text) * 2 // 3])
    browser.get(cut.resolve().as_uri())
    note = browser.find_element("css selector", "#unready")
    assert note.is_displayed() and "cut short" in note.text


def test_a_table_sorts_from_the_keyboard(browser, tmp_path):
    """A sortable column's heading could only be clicked: not reachable by Tab, Enter did nothing."""
    from irscope.report import build_report, write_report
    points = [{"status": "ok", "target": "sm_90a", "axes": {"BLOCK": b},
               "analysis": {"resources": {"registers": r}}} for b, r in ((16, 100), (32, 9), (64, 40))]
    path = write_report(tmp_path / "s.html", build_report(sweeps=[("s.json", {"points": points})]))
    assert open_page(browser, path) == []
    table = browser.find_element("css selector", "table.points")
    heads = table.find_elements("css selector", "th")
    col = [th.text for th in heads].index("registers")
    assert heads[col].get_attribute("tabindex") == "0"
    heads[col].send_keys(browser.selenium.webdriver.common.keys.Keys.ENTER)
    assert [tr.find_elements("css selector", "td")[col].text
            for tr in table.find_elements("css selector", "tbody tr")] == ["9", "40", "100"]


def test_every_roofline_on_a_page_has_its_own_clip_id(cli, tmp_path):
    """A snapshot's roofline and its comparison's shared the id rf-clip: two elements of one id on the page."""
    import re
    gpu = {"device": "H200", "copy_gbps": 3900, "matmul_tflops": 720}
    run = {"recorded": "t", "ok": True, "size_name": "4096", "gpu": gpu,
           "bench": {"kernel": {"ms": 0.25}, "flops": 2 * 4096 ** 3, "bytes": 3 * 4096 * 4096 * 2}}
    _copy_with_runs(tmp_path / "a", [run])
    _copy_with_runs(tmp_path / "b", [dict(run, bench=dict(run["bench"], kernel={"ms": 0.5}))])
    code, out, err = cli("report", "a", "b", "-o", "r.html")
    assert code == 0, err
    html = (tmp_path / "r.html").read_text()
    ids = re.findall(r'<clipPath id="([^"]+)"', html)
    assert len(ids) == 3 and len(set(ids)) == 3, ids
    assert all(f'clip-path="url(#{i})"' in html for i in ids)


def test_a_sweep_of_more_points_than_a_page_holds_is_plotted_and_listed_only_so_far(cli, tmp_path, monkeypatch):
    """A sweep result of 100,000 points made a 70 MiB page that Chromium had not opened after two minutes."""
    import json
    import irscope.report.sweep as sweep
    monkeypatch.setattr(sweep, "PLOT_LIMIT", 3)
    monkeypatch.setattr(sweep, "TABLE_LIMIT", 2)
    points = [{"status": "ok", "target": "sm_90a", "axes": {"BLOCK": b}, "times_ms": {"ttir": 1.0},
               "analysis": {"resources": {"registers": 32}}} for b in (16, 32, 64, 128)]
    (tmp_path / "s.json").write_text(json.dumps({"points": points}))
    code, out, err = cli("report", "--sweep", "s.json", "-o", "r.html")
    assert code == 0, err
    html = (tmp_path / "r.html").read_text()
    assert '<svg class="plot"' not in html and "4 points: not plotted (the plots draw up to 3" in html
    assert "the first 2 of 4 points (the rest are in s.json)" in html
    assert html.count("<td>BLOCK=") == 2
    monkeypatch.setattr(sweep, "PLOT_LIMIT", 4)
    monkeypatch.setattr(sweep, "TABLE_LIMIT", 4)
    assert cli("report", "--sweep", "s.json", "-o", "r.html")[0] == 0
    html = (tmp_path / "r.html").read_text()
    assert html.count('<svg class="plot"') == 5 and "every point (click" in html and html.count("<td>BLOCK=") == 4


def test_two_compiles_that_failed_differently_say_so_in_the_comparison(cli, tmp_path):
    # With no stage that differs, the comparison said nothing at all (not "the same text", not the outcome).
    (tmp_path / "k.py").write_text(
        "import triton\nimport triton.language as tl\n\n\n@triton.jit\ndef k(x_ptr, MODE: tl.constexpr):\n"
        "    tl.static_assert(MODE != 1, 'mode one is refused')\n    tl.static_assert(MODE != 2, 'mode two is refused')\n"
        "    tl.store(x_ptr, 1.0)\n")
    for mode in (1, 2):
        code, _, err = cli("compile", "k.py:k", "--constexpr", f"MODE={mode}", "--arg", "x_ptr=*fp32", "--out", "s",
                           "--name", f"m{mode}")
        assert code == 3, err
    code, _, err = cli("report", "s/k/m1/sm_90a", "s/k/m2/sm_90a", "-o", "r.html")
    assert code == 0, err
    page = (tmp_path / "r.html").read_text()
    assert "the compiles ended differently: m1 failed at source: mode one is refused; m2 failed at source: " \
           "mode two is refused" in page


def test_python_and_ir_lines_are_chosen_from_the_keyboard(browser, tmp_path):
    """The panes could only be clicked: not reachable by Tab, and no key moved the chosen line."""
    from irscope.report import build_report, write_report
    from irscope.store.snapshot import load_snapshot
    from tests.test_report import MATMUL
    keys = browser.selenium.webdriver.common.keys.Keys
    path = write_report(tmp_path / "k.html", build_report(snapshots=[load_snapshot(MATMUL)]))
    assert open_page(browser, path) == []
    py = browser.find_element("css selector", ".vs.py")
    ir = browser.find_element("css selector", ".vs.ir")
    assert py.get_attribute("tabindex") == "0" and ir.get_attribute("tabindex") == "0"
    status = browser.find_element("css selector", ".viewer .status")
    py.send_keys(keys.HOME)
    assert browser.find_elements("css selector", '.vs.py .r.cur[data-i="0"]') and status.text.startswith("line 1:")
    py.send_keys(keys.ARROW_DOWN, keys.ARROW_DOWN)
    assert status.text.startswith("line 3:"), status.text
    py.send_keys(keys.END)
    last = len(MATMUL.joinpath("source.py").read_text().splitlines())
    assert status.text.startswith(f"line {last}:"), status.text
    # In the stage, the arrows stop only on lines that came from Python, and choose their Python line.
    ir.send_keys(keys.HOME)
    cur = browser.find_element("css selector", ".vs.ir .r.cur")
    assert "mp" in cur.get_attribute("class").split()
    first = int(cur.get_attribute("data-i"))
    ir.send_keys(keys.ARROW_DOWN)
    nxt = browser.find_element("css selector", ".vs.ir .r.cur")
    assert int(nxt.get_attribute("data-i")) > first and "mp" in nxt.get_attribute("class").split()
    chosen = int(browser.find_element("css selector", ".vs.py .r.cur").get_attribute("data-i")) + 1
    assert status.text.startswith(f"line {chosen}:"), status.text


def test_a_stage_past_the_reports_limit_is_cut_at_a_line_and_says_so(browser, tmp_path, monkeypatch):
    """A stage of the store's largest size (512 MiB) took about eight times that to build, and no browser
    holds a string that long: past SHOWN_LIMIT the stage is cut at a line's end, with a note (the limit is
    lowered here so that a real compile's TTGIR is past it)."""
    from irscope.report import build_report, stages, write_report
    from irscope.store.snapshot import load_snapshot
    from tests.test_report import MATMUL
    snap = load_snapshot(MATMUL)
    ttgir = snap.read("ttgir")
    monkeypatch.setattr(stages, "SHOWN_LIMIT", len(ttgir) // 3)
    kept = ttgir[:ttgir.rfind("\n", 0, len(ttgir) // 3) + 1].count("\n")
    path = write_report(tmp_path / "cut.html", build_report(snapshots=[snap]))
    assert open_page(browser, path) == []
    browser.find_element("css selector", '.tabs button[data-stage="ttgir"]').click()
    note = browser.find_element("css selector", ".viewer .note").text
    total = len(ttgir.splitlines())
    assert note.startswith(f"cut: the first {kept:,} of {total:,} lines are shown"), note
    ir = browser.find_element("css selector", ".vs.ir")
    # The part shown still maps to Python as the whole does: MLIR prints most location aliases after the
    # module, in the part cut off, and without them only the signature's rows had a Python line.
    from irscope.ir.lines import kernel_file, line_map
    whole = line_map("ttgir", ttgir)
    kfile = kernel_file([whole])
    shown = {ln: [i for i in whole.lines_for(ln, kfile) if i < kept] for ln in whole.source_lines(kfile)}
    line = max(shown, key=lambda ln: len(set(shown[ln])))
    assert len(set(shown[line])) >= 2
    py = browser.find_element("css selector", ".vs.py")
    browser.execute_script("arguments[0].scrollTop = arguments[1] * 17 - 100", py, line - 1)
    sel = f'.vs.py .r[data-i="{line - 1}"]'
    for _ in range(50):
        if browser.execute_script(f"const r = document.querySelector('{sel}'); if (r) r.click(); return !!r"):
            break
        time.sleep(0.05)
    status = browser.find_element("css selector", ".viewer .status").text
    assert status.startswith(f"line {line}: {len(set(shown[line]))} line(s) of ttgir"), status
    browser.execute_script("arguments[0].scrollTop = 1e9", ir)
    time.sleep(0.3)
    last = max(int(r.get_attribute("data-i")) for r in browser.find_elements("css selector", ".vs.ir .r"))
    assert last == kept - 1
