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

Keys are sent as the terminal driver sends them (one `events.Key` into the driver's queue, no Pilot
waits). Each time runs from the action until the app has settled: the code view has drawn what it now
holds (document, scroll offset, search), no message is queued anywhere in the app, and the screen has no
layout, repaint or dirty widget pending (so every consequence of the key, such as the Python source
beside the stage following the cursor, is on screen); then one full frame of the screen is composed
(`render_strips`) on top, the most a terminal would be sent. Background threads (the next page being
highlighted ahead) do not hold the clock, the UI thread's work does; animations are off (the tab
underline's 0.3 s slide is not something a reader waits for). Run it on an idle machine.
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

BUDGETS = {"open": 1.0, "stage (first)": 0.1, "stage (again)": 0.1, "cursor": 0.1, "scroll": 0.1,
           "scroll (cold)": 0.1, "search": 0.1, "diff": 1.0}


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
    from irscope.harness.batch import Point, compile_points
    out = tmp / "compiled"
    outcomes = compile_points([Point("matmul", "sm_90a"), Point("matmul", "gfx942")], out)
    if not all(o.ok for o in outcomes):
        raise SystemExit(f"compiling matmul failed: {outcomes}")
    return out


async def measure(root: Path, repeat: int) -> dict[str, list[float]]:
    from irscope.tui.app import IrscopeApp
    from irscope.tui.widgets.browser import Browser
    from irscope.tui.screens.compare import CompareScreen
    from irscope.tui.widgets.diff_view import DiffView
    from textual import events

    times: dict[str, list[float]] = {k: [] for k in BUDGETS}
    for _ in range(repeat):
        app = IrscopeApp([root], root / "out", kernels=["matmul"])
        app.animation_level = "none"  # the stage tabs' underline slides for 0.3 s after a switch: frames
        # nobody waits for, which would otherwise hold `settled` for a random part of that time
        async with app.run_test(size=(160, 48)) as pilot:
            await pilot.pause()
            await app.workers.wait_for_complete()
            await pilot.pause()
            snaps = {s.target_name: s for s in app.query_one(Browser).snapshots}

            def composed() -> None:
                app.screen._compositor.render_strips()

            def idle() -> bool:
                screen = app.screen
                if screen._layout_required or screen._repaint_required or screen._dirty_widgets:
                    return False
                # (handlers run on this loop: while this runs, none is half done unless it awaits)
                return all(node._message_queue.empty() and not node._next_callbacks
                           for node in (app, screen, *screen.walk_children()))

            async def settled(timeout: float = 30.0) -> None:
                """Until the code view shows its new state and the UI thread has nothing left to do."""
                deadline = time.perf_counter() + timeout
                while time.perf_counter() < deadline:
                    if main.painted == (main.document, main.scroll_offset.y, main._generation) and idle():
                        return
                    await asyncio.sleep(0.001)
                raise TimeoutError("the app did not settle")

            async def key(name: str) -> None:
                """Send a key the way the terminal driver does (into the app's queue, from the loop)."""
                event = events.Key(name, {"enter": "\r", "pagedown": None}.get(name, name if len(name) == 1 else None))
                event.set_sender(app)
                await app._post_message(event)

            main = app.view.main

            t = time.perf_counter()
            app.view.open(snaps["sm_90a"])  # what Enter on the tree's snapshot does
            main.focus()
            await settled()
            composed()
            times["open"].append(time.perf_counter() - t)
            # Line maps and search indexes are parsed in the background after the first paint; the
            # steps below are measured once they are ready, as a reader who has been reading finds them.
            while any(d.map is None for s, d in app.view.data.items() if s != "python") or \
                    len(app.view.data) < len(app.view.stages):
                await pilot.pause(0.05)
            await app.workers.wait_for_complete()
            await pilot.pause()

            async def timed(step: str, *keys: str) -> None:
                t = time.perf_counter()
                for name in keys:
                    await key(name)
                    await settled()
                composed()
                times[step].append((time.perf_counter() - t) / len(keys))

            number = {stage: str(i + 1) for i, stage in enumerate(app.view.stages)}
            await timed("stage (first)", number["llir"])
            assert app.view.stage == "llir" and len(main.document) >= 1000, (app.view.stage, number, app.focused, len(main.document))
            await key(number["ttgir"])
            await settled()
            await timed("stage (again)", number["llir"])

            await pilot.pause(0.2)
            await app.workers.wait_for_complete()  # the page after the visible one, highlighted ahead
            await timed("cursor", "down")
            await pilot.pause(0.2)
            await app.workers.wait_for_complete()
            top = main.scroll_offset.y
            await timed("scroll", "pagedown")
            assert main.scroll_offset.y > top
            await timed("scroll (cold)", "pagedown", "pagedown", "pagedown")  # past what was highlighted ahead

            await pilot.press("slash", *"define", "enter")  # warm the query box's first use
            await pilot.press("slash", *["backspace"] * 10, *"getelementptr")
            await timed("search", "enter")  # the search itself: typing the query is the reader's time
            assert main.matches, "the search found nothing"

            await key(number["ttgir"])
            await settled()
            t = time.perf_counter()
            app.push_screen(CompareScreen(snaps["sm_90a"], snaps["gfx942"], list(snaps.values()), stage="ttgir"))
            while True:
                await asyncio.sleep(0.001)
                screen = app.screen
                if isinstance(screen, CompareScreen) and screen.query_one(DiffView).rows and idle():
                    break
                if time.perf_counter() - t > 60:
                    raise TimeoutError("the diff did not appear")
            composed()
            times["diff"].append(time.perf_counter() - t)
            rows = app.screen.query_one(DiffView).rows
            assert len(rows) >= 1000, len(rows)
    return times


def measure_core(root: Path, repeat: int) -> dict[str, list[float]]:
    """The TUI's own work on the same stages, without Textual: where the app's time goes."""
    from irscope.ir.lines import line_map
    from irscope.ir.normalize import normalize
    from irscope.store.snapshot import load_snapshot
    from irscope.diff.align import align
    from irscope.tui.model.document import Document, prewarm

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
