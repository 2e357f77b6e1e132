"""`irscope report`: one self-contained HTML file, checked in a real headless Chromium (Selenium driving the
system's chromium-driver). Without a browser the browser tests skip, saying what to install.

The snapshots are the committed goldens under snapshots/ (no compile); the sweep is `irscope sweep` over a
copy of them (every point fresh, so nothing compiles). Screenshots go to the test's folder, or to
docs/report/ with IRSCOPE_REPORT_SCREENSHOTS=1 (how the committed ones were made).
"""
from __future__ import annotations

import json
import os
import shutil
import struct
import time
import zlib
from pathlib import Path

import pytest

from irscope.ir.lines import kernel_file, line_map
from irscope.report import build_report, write_report
from irscope.report.page import embed_json
from irscope.store import results
from irscope.store.snapshot import load_snapshot

pytest_plugins = ["pytester"]  # test_failing_goldens_write_a_report_when_asked runs pytest inside pytest

ROOT = Path(__file__).resolve().parent.parent
SNAPS = ROOT / "snapshots"
MATMUL = SNAPS / "matmul" / "default" / "sm_90a"
SHOTS = ROOT / "docs" / "report"
CHROMIUM = [p for p in ("/usr/bin/chromium", "/usr/bin/chromium-browser") if Path(p).is_file()]
DRIVER = shutil.which("chromedriver") or next((p for p in ("/usr/bin/chromedriver",) if Path(p).is_file()), None)


# -- a browser ------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def browser():
    selenium = pytest.importorskip("selenium", reason="selenium is not installed: pip install -e '.[test]'")
    if not CHROMIUM or not DRIVER:
        pytest.skip("no Chromium here: apt-get install -y chromium chromium-driver (.ci/run does)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    opts = webdriver.ChromeOptions()
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1400,1000",
              "--hide-scrollbars"):
        opts.add_argument(a)
    opts.binary_location = CHROMIUM[0]
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(DRIVER), options=opts)
    driver.selenium = selenium
    yield driver
    driver.quit()


def open_page(driver, path: Path) -> list[dict]:
    """Load a report from its file:// URL; returns the console's errors (there should be none)."""
    driver.get(path.resolve().as_uri())
    # the page unpacks its compressed stages after the load event: wait for the script to say it is done
    from selenium.webdriver.support.ui import WebDriverWait
    WebDriverWait(driver, 30).until(lambda d: d.execute_script("return document.documentElement.dataset.ready"))
    assert driver.execute_script("return document.documentElement.dataset.ready") == "1", "the script did not finish"
    return [e for e in driver.get_log("browser") if e["level"] in ("SEVERE", "ERROR")]


def shot(driver, tmp_path: Path, name: str) -> Path:
    folder = SHOTS if os.environ.get("IRSCOPE_REPORT_SCREENSHOTS") else tmp_path
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    driver.save_screenshot(str(path))
    assert _png_colours(path) > 8, f"{path} is (nearly) one colour: nothing was drawn"
    return path


def _png_colours(path: Path) -> int:
    """How many distinct pixels a sample of the PNG has (no image library: zlib and the PNG layout)."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    idat, pos = b"", 8
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        if kind == b"IDAT":
            idat += data[pos + 8:pos + 8 + n]
        pos += 12 + n
    raw = zlib.decompress(idat)
    return len({raw[i:i + 3] for i in range(0, len(raw) - 3, 997)})


# -- reports built once ----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def sweep_json(tmp_path_factory):
    """A real sweep result: matmul over four targets, every point fresh in a copy of the committed snapshots."""
    from irscope.cli import main
    import io
    work = tmp_path_factory.mktemp("sweep")
    shutil.copytree(SNAPS / "matmul", work / "snaps" / "matmul")
    spec = work / "s.yaml"
    spec.write_text("name: matmul-targets\nkernels: [matmul]\ntargets: [gfx90a, gfx942, sm_80, sm_90a]\n")
    out, err = io.StringIO(), io.StringIO()
    assert main(["sweep", str(spec), "--out", str(work / "snaps"), "--json"], out=out, err=err) == 0, err.getvalue()
    path = work / "result.json"
    path.write_text(out.getvalue())
    return path


@pytest.fixture(scope="module")
def snapshot_report(tmp_path_factory):
    """matmul on sm_90a, with a GPU run beside it (a record as `irscope run` writes one), and add on two targets."""
    work = tmp_path_factory.mktemp("report")
    shutil.copytree(MATMUL, work / "matmul")
    # The shape `irscope run` records (irscope/cli/run.py): the GPU with its measured ceilings, the bench.
    flops, nbytes = 2 * 4096 ** 3, 3 * 4096 * 4096 * 2
    results.append(work / "matmul", results.RUNS_FILE, {
        "source": "jit", "ok": True, "size_name": "4096",
        "gpu": {"device": "NVIDIA H200", "target": "sm_90a", "copy_gbps": 3900.0, "matmul_tflops": 720.0},
        "bench": {"kernel": {"name": "matmul", "ms": 0.25, "tflops": flops / 0.25e-3 / 1e12,
                             "gbps": nbytes / 0.25e-3 / 1e9},
                  "flops": flops, "bytes": nbytes, "copy_fraction": 0.1, "matmul_fraction": 0.76, "speedups": {}},
        # `--profile`'s figures (irscope/gpu/profile.py): Proton's kernel time under the run's scope.
        "profile": {"scope": "matmul/default/4096/jit", "iterations": 40, "ms": 0.24, "flops": flops,
                    "bytes": nbytes, "tflops": flops / 0.24e-3 / 1e12, "gbps": nbytes / 0.24e-3 / 1e9,
                    "copy_fraction": 0.1, "matmul_fraction": 0.8, "metrics_summed": True,
                    "kernels": [{"name": "matmul_kernel", "calls": 40, "total_ms": 9.6, "mean_ms": 0.24}]},
    })
    snaps = [load_snapshot(work / "matmul")]
    path = write_report(work / "snapshot.html", build_report(snaps))
    return path, snaps[0]


# -- without a browser ------------------------------------------------------------------------------------

def test_embedded_json_cannot_close_its_script_element():
    text = embed_json({"rows": ["</script><script>alert(1)</script>", "<!-- x"]})
    assert "</script" not in text and "<!--" not in text
    assert json.loads(text)["rows"][0] == "</script><script>alert(1)</script>"


def test_the_quick_highlighter_escapes_and_keeps_one_row_a_line():
    from irscope.report.stages import quick_highlight
    rows = quick_highlight(['  %x = load <2 x half>, ptr @g, !dbg !7 ; "</script>" & more', "<img onerror=x>"])
    assert len(rows) == 2 and "<img" not in rows[1] and "</script>" not in rows[0]
    assert '<span class="nv">%x</span>' in rows[0] and '<span class="c">; ' in rows[0]
    assert '<span class="c">' not in rows[0].split(";")[0]  # the ; of &lt; does not open a comment


def test_report_without_inputs_is_a_usage_error(cli):
    code, out, err = cli("report")
    assert code == 2 and "nothing to report" in err and "hint:" in err


def test_report_of_a_csv_sweep_says_to_write_json(cli, tmp_path):
    bad = tmp_path / "sweep.csv"
    bad.write_text("kernel,target\nmatmul,sm_90a\n")
    code, out, err = cli("report", "--sweep", bad)
    assert code == 2 and "is not JSON" in err and "--json" in err


def test_report_is_one_file_that_loads_nothing_from_outside(cli, tmp_path):
    code, out, err = cli("report", SNAPS / "add" / "default" / "sm_90a", "-o", tmp_path / "r.html")
    assert code == 0, err
    html = (tmp_path / "r.html").read_text()
    assert "wrote" in out and "<style>" in html and "<script>" in html
    for ref in ("src=\"http", "href=\"http", "<link ", "import(", "fetch("):
        assert ref not in html, ref


# -- in the browser ------------------------------------------------------------------------------------

def test_snapshot_page_loads_without_console_errors(browser, snapshot_report, tmp_path):
    path, _ = snapshot_report
    assert open_page(browser, path) == []
    tabs = [b.text for b in browser.find_elements("css selector", ".tabs button")]
    assert tabs == ["ttir", "ttgir", "ptx", "sass"]
    assert browser.find_elements("css selector", ".vs.ir .r"), "no IR row drawn"
    assert browser.find_elements("css selector", ".vs.py .r"), "no Python row drawn"
    shot(browser, tmp_path, "snapshot.png")


def test_clicking_a_python_line_highlights_its_lines_in_every_stage(browser, snapshot_report, tmp_path):
    path, snap = snapshot_report
    texts = {s: snap.read(s) for s in ("ttgir", "ptx")}
    maps = {s: line_map(s, t) for s, t in texts.items()}
    kfile = kernel_file(list(maps.values()))
    # The Python line that became the most TTGIR lines (the tl.dot, the loads) and is in PTX too.
    line = max((ln for ln in maps["ttgir"].source_lines(kfile) if ln in maps["ptx"].source_lines(kfile)),
               key=lambda ln: len(maps["ttgir"].lines_for(ln, kfile)))
    want = {s: len(set(m.lines_for(line, kfile))) for s, m in maps.items()}
    assert open_page(browser, path) == []
    py = browser.find_element("css selector", ".vs.py")
    browser.execute_script("arguments[0].scrollTop = arguments[1] * 17 - 100", py, line - 1)
    # The pane redraws its rows after the scroll event: click the row as drawn once the redraw is done
    # (a row found before it is a stale element).
    sel = f'.vs.py .r[data-i="{line - 1}"]'
    for _ in range(50):
        if browser.execute_script(f"const r = document.querySelector('{sel}'); if (r) r.click(); return !!r"):
            break
        time.sleep(0.05)
    assert browser.find_elements("css selector", f'.vs.py .r.cur[data-i="{line - 1}"]'), "the line is not selected"
    status = browser.find_element("css selector", ".viewer .status").text
    assert status.startswith(f"line {line}: {want['ttgir']} line(s) of ttgir"), status
    # The visible hits are some of the rows the map gives, and the first of them is on screen.
    hits = {int(e.get_attribute("data-i")) for e in browser.find_elements("css selector", ".vs.ir .r.hit")}
    assert hits and hits <= set(maps["ttgir"].lines_for(line, kfile))
    # Every tab's badge counts its lines from that Python line, opened or not (only opened ones did).
    badges = {b.get_attribute("data-stage"): b.find_element("css selector", ".badge").text
              for b in browser.find_elements("css selector", ".tabs button")}
    assert badges["ptx"] == str(want["ptx"]) and badges["ttgir"] == str(want["ttgir"]) and badges["ttir"], badges
    browser.execute_script("arguments[0].scrollLeft = 0; document.querySelector('.viewer').scrollIntoView()", py)
    shot(browser, tmp_path, "mapping.png")
    browser.find_element("css selector", '.tabs button[data-stage="ptx"]').click()
    status = browser.find_element("css selector", ".viewer .status").text
    assert status.startswith(f"line {line}: {want['ptx']} line(s) of ptx"), status
    assert browser.find_element("css selector", '.tabs button[data-stage="ttgir"] .badge').text == str(want["ttgir"])
    # And back: clicking an IR line selects the Python line it came from.
    i = browser.find_element("css selector", ".vs.ir .r.mp:not(.hit)").get_attribute("data-i")
    # A click drawn by the page itself: Selenium's scrolling the row into view redraws the pane first.
    browser.execute_script(f"document.querySelector('.vs.ir .r[data-i=\"{i}\"]').click()")
    other = int(browser.find_element("css selector", ".vs.py .r.cur").get_attribute("data-i")) + 1
    assert other != line and browser.find_element("css selector", ".viewer .status").text.startswith(f"line {other}:")


def test_runs_beside_a_snapshot_are_drawn_on_a_roofline(browser, snapshot_report, tmp_path):
    path, _ = snapshot_report
    assert open_page(browser, path) == []
    roof = browser.find_element("css selector", "svg.roofline")
    assert len(roof.find_elements("css selector", "circle.pt")) == 1  # do_bench's
    assert len(roof.find_elements("css selector", "rect.pt.proton")) == 1  # Proton's, beside it
    assert "NVIDIA H200" in roof.text and "Proton" in roof.text and roof.size["width"] > 300
    cells = [td.text for td in browser.find_elements("css selector", "section table.sortable tbody td")]
    assert "0.2500" in cells and "76%" in cells
    assert "0.2400" in cells and "80%" in cells and "matmul_kernel x40 (0.2400 ms)" in cells


def test_comparison_marks_what_flipped_and_shows_each_stage_diff(browser, tmp_path):
    a, b = SNAPS / "matmul" / "default" / "sm_90a", SNAPS / "matmul" / "default.s2" / "sm_90a"
    path = write_report(tmp_path / "compare.html", build_report(compare=[load_snapshot(a), load_snapshot(b)]))
    assert open_page(browser, path) == []
    assert browser.find_elements("css selector", "td.flip"), "no counter flipped between num_stages 3 and 2?"
    details = browser.find_elements("css selector", "details.lazy")
    assert [d.find_element("css selector", "summary b").text for d in details][:1] == ["ttir"] or details
    details[0].find_element("css selector", "summary").click()
    # the report fills a lazy diff on the `toggle` event, which the browser fires as a task after the click:
    # wait for it (a loaded CI machine read the rows before the handler ran)
    from selenium.webdriver.support.ui import WebDriverWait
    WebDriverWait(browser, 10).until(lambda d: details[0].find_elements("css selector", ".vs.diff .r"))
    rows = details[0].find_elements("css selector", ".vs.diff .r")
    assert rows and any(r.text.split(" ", 1)[-1].lstrip().startswith(("+", "-")) for r in rows)
    browser.execute_script("arguments[0].scrollIntoView()", details[0])
    shot(browser, tmp_path, "compare.png")


def test_sweep_plots_colour_points_by_launchable_and_the_table_sorts(browser, sweep_json, tmp_path):
    data = json.loads(sweep_json.read_text())
    unlaunchable = sum(1 for p in data["points"] if not (p["analysis"] or {}).get("launch", {}).get("launchable"))
    assert unlaunchable == 2  # gfx90a and gfx942: matmul's LDS does not fit
    from irscope.report import read_sweep
    path = write_report(tmp_path / "sweep.html", build_report(sweeps=[(str(sweep_json), read_sweep(sweep_json))]))
    assert open_page(browser, path) == []
    plots = browser.find_elements("css selector", "svg.plot")
    assert len(plots) >= 5
    shared = plots[0]
    assert shared.size["width"] > 300 and len(shared.find_elements("css selector", "circle")) == 4
    assert len(shared.find_elements("css selector", "circle.bad")) == unlaunchable
    assert len(shared.find_elements("css selector", "line.limit")) == 4  # each point's target limit
    table = browser.find_element("css selector", "table.sortable")
    header = [th.text for th in table.find_elements("css selector", "th")]
    col = header.index("shared")
    table.find_elements("css selector", "th")[col].click()
    values = [float(tr.find_elements("css selector", "td")[col].text)
              for tr in table.find_elements("css selector", "tbody tr")]
    assert values == sorted(values)
    browser.execute_script("window.scrollTo(0, 0)")
    shot(browser, tmp_path, "sweep.png")


def test_a_hostile_stage_is_shown_as_text_not_run(browser, tmp_path):
    snap_dir = tmp_path / "add"
    shutil.copytree(SNAPS / "add" / "default" / "sm_90a", snap_dir)
    meta = json.loads((snap_dir / "irscope.json").read_text())
    evil = "</script><script>document.title='owned'</script><img src=x onerror=\"document.title='owned'\">\n"
    (snap_dir / "add_kernel.ttgir").write_text(evil)
    meta["stages"]["ttgir"].pop("sha256", None)
    (snap_dir / "irscope.json").write_text(json.dumps(meta))
    path = write_report(tmp_path / "hostile.html", build_report([load_snapshot(snap_dir)]))
    open_page(browser, path)
    browser.find_element("css selector", '.tabs button[data-stage="ttgir"]').click()
    assert browser.title != "owned"
    assert "document.title='owned'" in browser.find_element("css selector", ".vs.ir").text


def test_a_100k_line_stage_draws_only_the_rows_in_view(browser, tmp_path):
    snap_dir = tmp_path / "big"
    shutil.copytree(MATMUL, snap_dir)
    text = (snap_dir / "matmul_kernel.ptx").read_text().splitlines()
    big = "\n".join((text * (100_000 // len(text) + 1))[:100_000]) + "\n"
    (snap_dir / "matmul_kernel.ptx").write_text(big)
    meta = json.loads((snap_dir / "irscope.json").read_text())
    meta["stages"]["ptx"].pop("sha256", None)
    (snap_dir / "irscope.json").write_text(json.dumps(meta))
    path = write_report(tmp_path / "big.html", build_report([load_snapshot(snap_dir)]))
    # its rows are embedded gzip-compressed: 100,000 lines of highlighted PTX in a file far smaller than them
    assert 'type="application/gzip" data-base64' in path.read_text()
    assert path.stat().st_size < len(big) / 4, (path.stat().st_size, len(big))
    assert open_page(browser, path) == []
    browser.find_element("css selector", '.tabs button[data-stage="ptx"]').click()
    assert len(browser.find_elements("css selector", ".vs.ir .r")) < 200
    pane = browser.find_element("css selector", ".vs.ir")
    browser.execute_script("arguments[0].scrollTop = arguments[0].scrollHeight", pane)
    browser.execute_script("return new Promise(r => requestAnimationFrame(() => r()))")
    numbers = [int(e.text) for e in browser.find_elements("css selector", ".vs.ir .r .ln")]
    assert max(numbers) == 100_000 and len(numbers) < 200


def test_a_damaged_compressed_stage_is_said_in_the_page_not_drawn_half(browser, snapshot_report, tmp_path):
    page = snapshot_report[0].read_text()
    start = page.index('data-base64 id="')
    body = page.index(">", start) + 1
    cut = tmp_path / "cut.html"
    cut.write_text(page[:body] + page[body:page.index("</script>", body)][:200] + page[page.index("</script>", body):])
    browser.get(cut.resolve().as_uri())
    from selenium.webdriver.support.ui import WebDriverWait
    WebDriverWait(browser, 30).until(lambda d: d.execute_script("return document.documentElement.dataset.ready"))
    assert browser.execute_script("return document.documentElement.dataset.ready") == "failed"
    assert "could not be unpacked" in browser.find_element("css selector", "p.warn").text
    # the console says so too; read here, or the next page's test would find this page's error in the log
    assert any("irscope report:" in e["message"] for e in browser.get_log("browser") if e["level"] == "SEVERE")


# -- the golden plugin ------------------------------------------------------------------------------------

GOLDEN_KERNEL = '''
import triton
import triton.language as tl
from irscope.spec import Config, KernelSpec, Tensor


@triton.jit
def scale(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * FACTOR, mask=mask)


SPEC = KernelSpec(name="scale", fn=scale, args={"x_ptr": Tensor("fp32"), "out_ptr": Tensor("fp32"), "n": 4096},
                  configs=(Config("default", {"BLOCK": 256}, num_warps=4),))
'''


def test_failing_goldens_write_a_report_when_asked(pytester, monkeypatch, browser):
    import importlib.metadata
    import irscope
    monkeypatch.setenv("PYTHONPATH", str(Path(irscope.__file__).parent.parent))
    registered = any(ep.name == "irscope" for ep in importlib.metadata.entry_points(group="pytest11"))
    plugin = [] if registered else ["-p", "irscope.goldens.pytest_plugin"]
    pytester.path.joinpath("test_k.py").write_text(
        'def test_scale(irscope):\n    irscope.assert_golden("kern.py:scale", target="sm_80")\n')
    pytester.path.joinpath("kern.py").write_text(GOLDEN_KERNEL.replace("FACTOR", "2.0"))
    pytester.runpytest_subprocess(*plugin, "-p", "no:cacheprovider", "--irscope-update").assert_outcomes(passed=1)
    pytester.path.joinpath("kern.py").write_text(GOLDEN_KERNEL.replace("FACTOR", "3.0"))
    reports = pytester.path / "reports"
    result = pytester.runpytest_subprocess(*plugin, "-p", "no:cacheprovider", "--irscope-report", str(reports))
    result.assert_outcomes(failed=1)
    (page,) = reports.glob("*.html")
    assert page.name == "test_k.py_test_scale.html"
    assert f"irscope: report {page}" in result.stdout.str()
    assert open_page(browser, page) == []
    sections = [h.text for h in browser.find_elements("css selector", "section h2")]
    assert sections == ["scale/default/sm_80", "comparison: A vs B"]
    stages = [b.text.split(" ")[0] for b in browser.find_elements("css selector", "details.lazy summary b")]
    assert "ttir" in stages  # the constant 2.0 became 3.0 from TTIR on


def test_sweep_plot_labels_tell_every_point_apart_and_say_what_they_are():
    """The axis labels were each name's last 18 characters: `ZE=256,num_warps=2`, twice (one per target)."""
    import re
    from irscope.report import build_report
    points = [{"status": "ok", "target": t, "axes": {"BLOCK_SIZE": b, "num_warps": w},
               "analysis": {"resources": {"registers": 20, "shared": 0}, "launch": {"launchable": True}}}
              for t in ("sm_90a", "gfx942") for b in (256, 1024) for w in (2, 4)]
    html = build_report(sweeps=[("s.json", {"sweep": {"name": "s"}, "points": points})])
    ticks = re.findall(r'<text class="tick" x="[\d.]+" y="[\d.]+" text-anchor="end" transform="rotate[^"]*">([^<]*)</text>',
                       html)
    first_plot = ticks[:len(points)]
    assert len(set(first_plot)) == len(points) and "sm_90a 256,2" in first_plot and "gfx942 1024,4" in first_plot
    assert "along each plot's axis: target BLOCK_SIZE,num_warps" in html
    assert '<div class="wide"><table' in html  # the wide table scrolls in place, not the page
    from irscope.report.svg import tick_label
    assert tick_label("x" * 10) == "x" * 10 and len(tick_label("y" * 40)) == 22 and "\u2026" in tick_label("y" * 40)


# -- what the CLI refuses, skips and writes ---------------------------------------------------------------

ADD = SNAPS / "add" / "default" / "sm_90a"


def test_report_replaces_only_a_report_irscope_wrote(cli, tmp_path):
    """-o replaced any file starting with <!doctype html>: a page the user wrote was lost."""
    mine = "<!DOCTYPE html>\n<html><head><title>my notes</title></head><body>precious</body></html>\n"
    (tmp_path / "mine.html").write_text(mine)
    code, out, err = cli("report", ADD, "-o", "mine.html")
    assert code == 2 and "mine.html exists and is an HTML file irscope did not write" in err and "hint:" in err
    assert (tmp_path / "mine.html").read_text() == mine
    assert cli("report", ADD, "-o", "r.html")[0] == 0
    new = (tmp_path / "r.html").read_text()
    assert '<meta name="generator" content="irscope ' in new[:300]
    # A report written before the marker (the same head, without it) is still recognised and replaced.
    (tmp_path / "old.html").write_text(new.replace(new[new.index('<meta name="generator"'):new.index(
        '<meta name="viewport"')], "", 1))
    assert "generator" not in (tmp_path / "old.html").read_text()[:1000]
    code, out, err = cli("report", ADD, "-o", "old.html")
    assert code == 0 and "generator" in (tmp_path / "old.html").read_text()[:300], err


def test_report_to_stdout_with_dash(cli, tmp_path):
    code, out, err = cli("report", ADD, "-o", "-")
    assert code == 0 and out.startswith("<!DOCTYPE html>") and out.rstrip().endswith("</html>"), err
    assert not (tmp_path / "-").exists()


def test_a_missing_or_empty_snapshot_path_is_exit_4(cli, tmp_path):
    (tmp_path / "empty").mkdir()
    for path in ("nonexist", "empty"):
        code, out, err = cli("report", path, "-o", "z.html")
        assert code == 4 and f"'{path}'" in err and "hint:" in err, (path, code, err)
    assert not (tmp_path / "z.html").exists()


def _damaged_copy(dest: Path) -> Path:
    shutil.copytree(ADD, dest)
    (dest / "add_kernel.ptx").write_text("// changed after the compile\n")  # no longer its recorded sha256
    return dest


def test_a_damaged_snapshot_in_a_folder_is_skipped_with_a_warning(cli, tmp_path):
    shutil.copytree(ADD, tmp_path / "many" / "good")
    _damaged_copy(tmp_path / "many" / "bad")
    code, out, err = cli("report", "many", "-o", "r.html")
    assert code == 0 and "irscope: warning: skipped many/bad" in err and "sha256" in err, err
    html = (tmp_path / "r.html").read_text()
    assert "many/good" in html and "many/bad" not in html
    code, out, err = cli("report", "many/bad", "-o", "r2.html")  # named itself: still an error
    assert code == 4 and "sha256" in err and not (tmp_path / "r2.html").exists()


def test_neighbours_of_different_kernels_are_not_diffed_and_many_columns_warn(cli, tmp_path, monkeypatch):
    """A folder of 27 snapshots of two kernels took a minute: one 27-column table, 26 diffs, some across kernels."""
    a80, mm = SNAPS / "add" / "default" / "sm_80", MATMUL
    code, out, err = cli("report", "--compare", ADD, mm, a80, "-o", "c.html")
    assert code == 0, err
    html = (tmp_path / "c.html").read_text()
    assert html.count("not diffed: different kernels (add, matmul)") == 1
    assert html.count("not diffed: different kernels (matmul, add)") == 1
    # Without --compare: each kernel's snapshots side by side, not one table across kernels.
    import irscope.cli.report as report_cli
    monkeypatch.setattr(report_cli, "MANY", 1)
    monkeypatch.setattr(report_cli, "BIG", 1000)
    code, out, err = cli("report", ADD, mm, a80, "-o", "i.html")
    assert code == 0 and "warning: comparing 2 snapshots side by side" in err and "--compare" in err
    assert "i.html is " in err and "takes a while to open" in err
    html = (tmp_path / "i.html").read_text()
    assert html.count("<h2>comparison: ") == 1 and "not diffed" not in html


def test_report_of_a_csv_sweep_names_the_csv_in_its_hint(cli, tmp_path):
    (tmp_path / "sweep.csv").write_text("kernel,target\nmatmul,sm_90a\n")
    code, out, err = cli("report", "--sweep", "sweep.csv")
    hint = next(line for line in err.splitlines() if line.startswith("irscope: hint:"))
    assert code == 2 and "CSV" in hint and "--json" in hint


# -- sorting, wrapping, a failed compile's source ---------------------------------------------------------

def _failed_copy(dest: Path) -> Path:
    """The add snapshot as a compile that failed in the frontend: no stage, its error, its source.py."""
    shutil.copytree(ADD, dest)
    meta = json.loads((dest / "irscope.json").read_text())
    for f in dest.glob("add_kernel.*"):
        f.unlink()
    meta.update(status="failed", stages={}, resources={},
                error={"stage": "source", "type": "CompilationError", "message": "at 4:8: <b>ranks</b> differ"})
    (dest / "irscope.json").write_text(json.dumps(meta))
    return dest


def test_table_sorts_missing_last_both_ways_and_rows_keep_one_height(browser, tmp_path):
    why = "LDS 147,456 B > 65,536 B per block on gfx942"
    regs = [100, None, 9, 10, None, 64]  # as strings 9 > 100; "-" sorted in the middle
    times = dict.fromkeys(("frontend", "ttir", "ttgir", "llir", "amdgcn", "hsaco", "disassembly"), 1234.5)
    points = [{"status": "ok", "target": "gfx942", "axes": {"BLOCK": 2 ** i}, "times_ms": times,
               "analysis": {"resources": {"registers": r, "shared": 1024},
                            "launch": {"launchable": i % 2 == 0, "reasons": [] if i % 2 == 0 else [why]}}}
              if r is not None else
              {"status": "failed", "target": "gfx942", "axes": {"BLOCK": 2 ** i}, "error": {"message": why}}
              for i, r in enumerate(regs)]
    failed = load_snapshot(_failed_copy(tmp_path / "failed"))
    path = write_report(tmp_path / "t.html", build_report(
        [failed], sweeps=[("s.json", {"sweep": {"name": "s"}, "points": points})]))
    assert open_page(browser, path) == []
    # The failed compile's Python is drawn beside its error, escaped.
    lone = browser.find_element("css selector", ".failed .vs.py.lone")
    assert "def add_kernel" in lone.text or "@triton.jit" in lone.text
    assert "<b>ranks</b>" in browser.find_element("css selector", ".failed pre.error").text
    table = browser.find_element("css selector", "table.points")
    col = [th.text for th in table.find_elements("css selector", "th")].index("registers")

    def column():
        return [tr.find_elements("css selector", "td")[col].text for tr in table.find_elements("css selector",
                                                                                               "tbody tr")]
    th = table.find_elements("css selector", "th")[col]
    th.click()
    assert column() == ["9", "10", "64", "100", "-", "-"]
    th.click()
    assert column() == ["100", "64", "10", "9", "-", "-"]
    # "why not" wraps in a column given room: an unlaunchable row is as tall as a launchable one.
    heights = {tr.get_attribute("class") or "": tr.size["height"] for tr in table.find_elements("css selector",
                                                                                                "tbody tr")}
    assert heights[""] == heights["unlaunchable"], heights
