"""How fast a report with a 100k-line LLIR opens in a browser: the numbers docs/benchmarks.md reports.

    python benchmarks/bench_report.py [--from ROOT] [--lines 100000] [--repeat 5] [--uncompressed] [--eager]

It compiles matmul for sm_90a into a temporary folder (or takes ROOT/matmul/default/sm_90a, which must have
an LLIR), grows its LLIR to --lines lines as benchmarks/tui_speed.py does (the body repeated with every SSA
value renamed per copy), builds the report (`irscope.report.build_report`) and opens it from its file://
URL in headless Chromium (the system's chromium and chromium-driver, through Selenium). Medians of
--repeat fresh page loads:

  build      Python: reading, mapping and highlighting every stage, writing the page       (no budget)
  load       navigation start until the page's script has run and unpacked its stages     budget 2 s
  open llir  clicking the LLIR tab until its first rows are drawn (JSON.parse + draw)      budget 2 s with load
  scroll     a jump to the middle of the LLIR until its rows there are drawn                 budget 100 ms

With --eager, the alternative for comparison, once: the same highlighted rows all in the DOM from the
start (hidden in a closed <details>, as "pre-render but hide until expanded" would do), its load and its
first show.
"""
from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from tui_speed import grow  # noqa: E402  (the same growth as the TUI's benchmark)


def big_snapshot(source: Path, dest: Path, lines: int) -> Path:
    src = source / "matmul" / "default" / "sm_90a"
    if not (src / "irscope.json").is_file():
        raise SystemExit(f"{src} is not a snapshot: compile it with `irscope compile matmul -t sm_90a`")
    out = dest / "matmul" / "big" / "sm_90a"
    shutil.copytree(src, out)
    meta = json.loads((out / "irscope.json").read_text())
    path = out / f"{meta['function']}.llir"
    if not path.is_file():
        raise SystemExit(f"{src} has no LLIR stage")
    path.write_text(grow(path.read_text(), lines))
    meta["variant"] = "big"
    meta["stages"]["llir"]["lines"] = lines
    meta["stages"]["llir"].pop("sha256", None)  # the grown file is not the one the compile wrote
    (out / "irscope.json").write_text(json.dumps(meta, indent=1))
    return out


def compile_source(tmp: Path) -> Path:
    from irscope.harness.batch import Point, compile_points
    out = tmp / "compiled"
    outcomes = compile_points([Point("matmul", "sm_90a")], out)
    if not all(o.ok for o in outcomes):
        raise SystemExit(f"compiling matmul failed: {outcomes}")
    return out


def eager_page(rows: list[str]) -> str:
    """Every row in the DOM up front, hidden until a <details> is opened."""
    from pygments.formatters import HtmlFormatter
    body = "".join(f'<div class="r">{r}</div>' for r in rows)
    return (f"<!DOCTYPE html><html><head><meta charset=utf-8><style>{HtmlFormatter().get_style_defs('.vs')}"
            f".vs{{font:12px/17px monospace;white-space:pre;height:460px;overflow:auto}}</style></head><body>"
            f'<details id=d><summary>llir</summary><div class="vs">{body}</div></details></body></html>')


def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    opts = webdriver.ChromeOptions()
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1400,1000"):
        opts.add_argument(a)
    opts.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    return webdriver.Chrome(service=Service(shutil.which("chromedriver") or "/usr/bin/chromedriver"), options=opts)


FRAME = "return new Promise(r => requestAnimationFrame(() => setTimeout(() => r(performance.now()), 0)))"


def load_ms(driver, url: str) -> float:
    """Navigation start until the page's script is done: its `irscope-ready` mark, set once the compressed
    stages are unpacked (after `loadEventEnd`); pages without the mark (--eager's), `loadEventEnd`."""
    driver.get(url)
    from selenium.webdriver.support.ui import WebDriverWait
    WebDriverWait(driver, 60).until(lambda d: d.execute_script(
        "return document.documentElement.dataset.ready || !document.querySelector('script[data-base64]')"))
    return driver.execute_script("const m = performance.getEntriesByName('irscope-ready')[0];"
                                 "if (m) return m.startTime;"
                                 "return performance.getEntriesByType('navigation')[0].loadEventEnd")


def measure(report: Path, eager: Path | None, repeat: int) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {"load": [], "open llir": [], "scroll": [], "eager load": [], "eager show": []}
    driver = browser()
    try:
        for _ in range(repeat):
            times["load"].append(load_ms(driver, report.as_uri()))
            assert driver.execute_script("return document.documentElement.dataset.ready") == "1"
            # Each from the action until the next frame has been drawn (layout and paint included).
            t0 = driver.execute_script("const t0 = performance.now();"
                                       "document.querySelector('.tabs button[data-stage=llir]').click(); return t0")
            times["open llir"].append(driver.execute_script(FRAME) - t0)
            assert driver.execute_script("return document.querySelectorAll('.vs.ir .r').length") > 0, "no LLIR row"
            t0 = driver.execute_script("const p = document.querySelector('.vs.ir'); const t0 = performance.now();"
                                       "p.scrollTop = p.scrollHeight / 2; p.dispatchEvent(new Event('scroll'));"
                                       "return t0")
            times["scroll"].append(driver.execute_script(FRAME) - t0)
            first = driver.execute_script("return +document.querySelector('.vs.ir .r').dataset.i")
            assert first > 1000, f"the middle of the LLIR was not drawn (first row {first})"
        if eager is not None:  # once: it is slow enough to tell
            driver.set_script_timeout(300)
            times["eager load"].append(load_ms(driver, eager.as_uri()))
            t0 = driver.execute_script("document.getElementById('d').open = true; return performance.now()")
            times["eager show"].append(driver.execute_script(FRAME) - t0)
    finally:
        driver.quit()
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--from", dest="source", type=Path, help="a snapshot root with matmul/default/sm_90a")
    ap.add_argument("--lines", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--eager", action="store_true", help="also time the eager page once (slow: tens of seconds)")
    ap.add_argument("--uncompressed", action="store_true",
                    help="also build and time the page with its stages embedded as plain JSON (as before 2026-12-04), "
                         "interleaved with the compressed one, for a side-by-side ratio")
    args = ap.parse_args()
    from irscope.report import build_report, write_report
    from irscope.report.stages import stage_view
    from irscope.store.snapshot import load_snapshot
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        source = args.source or compile_source(tmp)
        snap = load_snapshot(big_snapshot(source, tmp / "root", args.lines))
        print(f"building the report of {snap.label} ...", file=sys.stderr)
        t0 = time.perf_counter()
        report = write_report(tmp / "report.html", build_report([snap]))
        build = time.perf_counter() - t0
        rows = list(stage_view("llir", snap.read("llir"), None).rows)
        eager = tmp / "eager.html"
        eager.write_text(eager_page(rows))
        print(f"built in {build:.1f} s; loading it in Chromium {args.repeat} time(s) ...", file=sys.stderr)
        pages = [("compressed", report)]
        if args.uncompressed:
            from irscope.report import page
            keep, page.GZIP_FROM = page.GZIP_FROM, 10**15
            try:
                pages.append(("plain JSON", write_report(tmp / "plain.html", build_report([snap]))))
            finally:
                page.GZIP_FROM = keep
        results = {name: {k: [] for k in ("load", "open llir", "scroll", "eager load", "eager show")}
                   for name, _ in pages}
        for _ in range(args.repeat):  # interleaved: the machine's load falls on both alike
            for i, (name, path) in enumerate(pages):
                got = measure(path, eager if args.eager and i == 0 and not results[name]["eager load"] else None, 1)
                for k, v in got.items():
                    results[name][k].extend(v)
        print(f"report of {snap.label}: LLIR {args.lines:,} lines, built in {build:.1f} s "
              f"(eager page {eager.stat().st_size / 2**20:.1f} MiB)")
        for name, path in pages:
            times = results[name]
            print(f" {name}: file {path.stat().st_size / 2**20:.1f} MiB")
            for key, values in ((k, v) for k, v in times.items() if v):
                print(f"  {key:12} median {statistics.median(values):8.1f} ms   "
                      f"(min {min(values):.1f}, max {max(values):.1f}, n={len(values)})")
            total = statistics.median(times["load"]) + statistics.median(times["open llir"])
            print(f"  load + open llir: {total:.0f} ms (budget 2000 ms): {'ok' if total < 2000 else 'OVER'}")


if __name__ == "__main__":
    main()
