"""How fast the TUI is on large stages: the numbers docs/tui.md reports.

    python benchmarks/tui_speed.py [--from ROOT] [--lines 100000] [--diff-lines 20000] [--repeat 5]

It builds a benchmark root from real snapshots of matmul (sm_90a and gfx942; compiled into a temporary
folder unless --from gives a root that has them): their LLIR grown to --lines lines and their TTGIR to
--diff-lines lines by repeating the kernel's body with every SSA value renamed per copy, so that lines
are as unique as in one long kernel. Then it drives the real app headless (Textual's run_test, 160x48)
and times, as the median of --repeat runs:

  open      selecting a snapshot until its first screen is composed          budget 1 s
  stage     switching to the big LLIR (first time: read + split) and back    budget 100 ms
  scroll    a page down in the big LLIR, composed                            budget 100 ms
  search    `/` + a query + Enter on the big LLIR, cursor on the first hit   budget 100 ms
  diff      the compare screen's side-by-side of the two big TTGIRs          budget 1 s

Each time runs from the action until the code view has drawn its new state (the document, scroll
offset and search it now holds) plus one full frame of the screen composed (`render_strips`), which is
what a terminal would be sent; animations that go on after that (the tab underline sliding) are not
counted. Run it on an idle machine.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import re
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

BUDGETS = {"open": 1.0, "stage (first)": 0.1, "stage (again)": 0.1, "scroll": 0.1, "scroll (cold)": 0.1,
           "search": 0.1, "diff": 1.0, "baseline": 0.1}


def grow(text: str, lines: int) -> str:
    """The text with its function body repeated (SSA names renamed per copy) until it has `lines` lines."""
    src = text.splitlines()
    out: list[str] = []
    k = 0
    while len(out) < lines:
        out.extend(re.sub(r"%([\w.]+)", lambda m, k=k: f"%{m.group(1)}_r{k}", ln) for ln in src)
        k += 1
    return "\n".join(out[:lines]) + "\n"


def build_root(source: Path, dest: Path, lines: int, diff_lines: int) -> Path:
    for target in ("sm_90a", "gfx942"):
        src = source / "matmul" / "default" / target
        if not (src / "irscope.json").is_file():
            raise SystemExit(f"{src} is not a snapshot: compile it with `irscope compile matmul -t sm_90a,gfx942`")
        out = dest / "matmul" / "big" / target
        shutil.copytree(src, out)
        meta = json.loads((out / "irscope.json").read_text())
        fn = meta["function"]
        meta["variant"] = "big"
        for stage, count in (("llir", lines), ("ttgir", diff_lines)):
            path = out / f"{fn}.{stage}"
            path.write_text(grow(path.read_text(), count))
            meta["stages"][stage]["lines"] = count
        (out / "irscope.json").write_text(json.dumps(meta, indent=1))
    return dest


def compile_source(tmp: Path) -> Path:
    from irscope.pipeline import Point, compile_points
    out = tmp / "compiled"
    outcomes = compile_points([Point("matmul", "sm_90a"), Point("matmul", "gfx942")], out)
    if not all(o.ok for o in outcomes):
        raise SystemExit(f"compiling matmul failed: {outcomes}")
    return out


async def measure(root: Path, repeat: int) -> dict[str, list[float]]:
    from irscope.tui.app import IrscopeApp
    from irscope.tui.browser import Browser
    from irscope.tui.compare_screen import CompareScreen
    from irscope.tui.diff_view import DiffView

    times: dict[str, list[float]] = {k: [] for k in BUDGETS}
    for _ in range(repeat):
        app = IrscopeApp([root], root / "out", kernels=["matmul"])
        async with app.run_test(size=(160, 48)) as pilot:
            await pilot.pause()
            await app.workers.wait_for_complete()
            await pilot.pause()
            snaps = {s.target_name: s for s in app.query_one(Browser).snapshots}

            def composed() -> None:
                app.screen._compositor.render_strips()

            t = time.perf_counter()
            await pilot.pause()  # Pilot's own cost of one round trip: the floor under every number below
            times["baseline"].append(time.perf_counter() - t)

            main = app.view.main

            async def painted(timeout: float = 30.0) -> None:
                """Until the code view has drawn what it now holds: its document, at its scroll offset."""
                deadline = time.perf_counter() + timeout
                while time.perf_counter() < deadline:
                    if main.painted == (main.document, main.scroll_offset.y, main._generation):
                        return
                    await asyncio.sleep(0.002)

            t = time.perf_counter()
            app.view.open(snaps["sm_90a"])
            await painted()
            composed()
            times["open"].append(time.perf_counter() - t)
            # Line maps and search indexes are parsed in the background after the first paint; the
            # steps below are measured once they are ready, as a reader who has been reading finds them.
            while any(d.map is None for s, d in app.view.data.items() if s != "python") or \
                    len(app.view.data) < len(app.view.stages):
                await pilot.pause(0.05)
            await app.workers.wait_for_complete()
            await pilot.pause()

            t = time.perf_counter()
            app.view.show_stage("llir")
            await painted()
            composed()
            times["stage (first)"].append(time.perf_counter() - t)
            app.view.show_stage("ttgir")
            await pilot.pause()
            t = time.perf_counter()
            app.view.show_stage("llir")
            await painted()
            composed()
            times["stage (again)"].append(time.perf_counter() - t)
            assert len(main.document) >= 1000

            main.focus()
            await pilot.pause(0.2)
            await app.workers.wait_for_complete()  # the page after the visible one, highlighted ahead
            t = time.perf_counter()
            main.action_page(1)
            await painted()
            composed()
            times["scroll"].append(time.perf_counter() - t)
            t = time.perf_counter()
            for _ in range(3):  # past what was highlighted ahead
                main.action_page(1)
                await painted()
                composed()
            times["scroll (cold)"].append((time.perf_counter() - t) / 3)

            await pilot.press("slash", *"define", "enter")  # warm the query box's first use
            await pilot.press("slash", *["backspace"] * 10, *"getelementptr")
            t = time.perf_counter()
            await pilot.press("enter")  # the search itself: typing the query is the reader's time
            await painted()
            composed()
            times["search"].append(time.perf_counter() - t)
            assert main.matches, "the search found nothing"

            app.view.show_stage("ttgir")
            await pilot.pause()
            t = time.perf_counter()
            app.push_screen(CompareScreen(snaps["sm_90a"], snaps["gfx942"], list(snaps.values()), stage="ttgir"))
            for _ in range(500):
                await pilot.pause()
                screen = app.screen
                if isinstance(screen, CompareScreen) and screen.query_one(DiffView).rows:
                    break
            composed()
            times["diff"].append(time.perf_counter() - t)
            rows = app.screen.query_one(DiffView).rows
            assert len(rows) >= 1000, len(rows)
    return times


def measure_core(root: Path, repeat: int) -> dict[str, list[float]]:
    """The TUI's own work on the same stages, without Textual: where the app's time goes."""
    from irscope.lines import line_map
    from irscope.normalize import normalize
    from irscope.store import load_snapshot
    from irscope.tui.align import align
    from irscope.tui.document import Document, prewarm

    prewarm()
    a = load_snapshot(root / "matmul" / "big" / "sm_90a")
    b = load_snapshot(root / "matmul" / "big" / "gfx942")
    llir = a.read("llir")
    times: dict[str, list[float]] = {k: [] for k in ("read+split llir", "highlight 48 lines", "search llir",
                                                     "line map llir (worker)", "normalize+align ttgir")}
    for _ in range(repeat):
        t = time.perf_counter()
        doc = Document(a.read("llir"), "llir")
        times["read+split llir"].append(time.perf_counter() - t)
        t = time.perf_counter()
        for i in range(5000, 5048):
            doc.text(i, 120)
        times["highlight 48 lines"].append(time.perf_counter() - t)
        doc.prepare_search()
        t = time.perf_counter()
        doc.find("getelementptr")
        times["search llir"].append(time.perf_counter() - t)
        t = time.perf_counter()
        line_map("llir", llir)
        times["line map llir (worker)"].append(time.perf_counter() - t)
        t = time.perf_counter()
        align(normalize("ttgir", a.read("ttgir")).splitlines(), normalize("ttgir", b.read("ttgir")).splitlines())
        times["normalize+align ttgir"].append(time.perf_counter() - t)
    return times


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--from", dest="source", type=Path, help="a root with matmul/default/{sm_90a,gfx942}")
    p.add_argument("--lines", type=int, default=100_000, help="lines of the big LLIR (default 100000)")
    p.add_argument("--diff-lines", type=int, default=20_000, help="lines of each TTGIR compared (default 20000)")
    p.add_argument("--repeat", type=int, default=5)
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="irscope-tui-bench-") as tmp:
        tmp = Path(tmp)
        source = args.source or compile_source(tmp)
        root = build_root(source, tmp / "bench", args.lines, args.diff_lines)
        llir = next(root.glob("matmul/big/sm_90a/*.llir"))
        print(f"big LLIR: {args.lines:,} lines, {llir.stat().st_size / 1e6:.1f} MB; "
              f"compared TTGIRs: {args.diff_lines:,} lines each; median of {args.repeat} runs")
        times = asyncio.run(measure(root, args.repeat))
        core = measure_core(root, args.repeat)
    failed = 0
    print(f"{'step':<16}{'median':>10}{'max':>10}{'budget':>10}")
    for step, values in times.items():
        med, worst, budget = statistics.median(values), max(values), BUDGETS[step]
        ok = med <= budget
        failed += not ok
        print(f"{step:<16}{med * 1000:>8.0f}ms{worst * 1000:>8.0f}ms{budget * 1000:>8.0f}ms  {'ok' if ok else 'OVER'}")
    print("\nirscope's own share, without Textual (same stages):")
    for step, values in core.items():
        print(f"  {step:<24}{statistics.median(values) * 1000:>8.0f}ms")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
