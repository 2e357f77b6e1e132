"""Comparing two snapshots: picking them, the deltas, side by side and unified, switching the axis."""
import re

from irscope.tui.screens.compare import CompareScreen
from irscope.tui.widgets.diff_view import DiffView

from .driver import open_snapshot, run, screen_text, settle, started


async def compare_screen(app, pilot) -> CompareScreen:
    await settle(pilot)
    assert isinstance(app.screen, CompareScreen)
    return app.screen


def test_marked_snapshot_against_the_open_one_side_by_side_and_unified(compiled):
    async def scenario():
        async with started([compiled]) as (app, pilot):
            await open_snapshot(app, pilot, "matmul/default/sm_90a")
            await pilot.press("m")
            await open_snapshot(app, pilot, "matmul/default/gfx942")
            await pilot.press("d")
            screen = await compare_screen(app, pilot)
            assert screen.a.label == "matmul/default/sm_90a" and screen.b.label == "matmul/default/gfx942"
            assert [p[0] for p in screen.pairs] == ["source", "ttir", "ttgir", "llir", "ptx⇄amdgcn"]
            assert screen.pairs[screen.current][0] == "ttgir"  # the stage that was being read
            text = screen_text(app)
            assert "differ in: target (sm_90a → gfx942)" in text
            ra, rb = screen.a.resources.registers, screen.b.resources.registers
            assert f"registers {ra}→{rb} ({rb - ra:+,})" in text
            view = app.screen.query_one(DiffView)
            assert view.mode == "side" and view.rows and view.changes
            assert "loc(" not in "\n".join(view.left.lines)  # normalised, as irscope diff does
            assert "nvidia_mma" in text and "amd_mfma" in "\n".join(view.right.lines)
            assert "│" in text  # two columns
            rows_side = len(view.rows)
            await pilot.press("u")
            assert view.mode == "unified" and len(view.rows) >= rows_side
            assert all(r.kind in ("equal", "delete", "insert") for r in view.rows)
            await pilot.press("n")
            first = view.scroll_offset.y
            await pilot.press("n")
            assert view.scroll_offset.y > first or len(view.changes) == 1
            await pilot.press("right_square_bracket")
            await settle(pilot)
            assert screen.pairs[screen.current][0] == "llir" and view.left.stage == "llir"
            await pilot.press("right_square_bracket")
            await settle(pilot)
            assert view.left.stage == "ptx" and view.right.stage == "amdgcn"
            await pilot.press("x")
            await settle(pilot)
            assert screen.a.label == "matmul/default/gfx942"
            await pilot.press("escape")
            assert not isinstance(app.screen, CompareScreen)
    run(scenario)


def test_axis_keys_pick_the_sibling_that_differs_in_that_axis_only(compiled, tui_variants):
    async def scenario():
        async with started([compiled, tui_variants]) as (app, pilot):
            await open_snapshot(app, pilot, "matmul/default/sm_90a")
            await pilot.press("d")  # nothing marked: a sibling along the first axis that has one (target)
            screen = await compare_screen(app, pilot)
            assert screen.b.label == "matmul/default/sm_80"
            await pilot.press("t")
            await settle(pilot)
            assert screen.b.label == "matmul/default/sm_100a"  # the next target along
            await pilot.press("w")
            await settle(pilot)
            assert screen.b.label == "matmul/default.w4/sm_90a"
            assert "differ in: num_warps (8 → 4)" in screen_text(app)
            await pilot.press("a")
            await settle(pilot)
            assert screen.b.label == "matmul/default.w4/sm_90a"  # no such sibling: B stays
            assert any("alignment alone" in str(n.message) for n in app._notifications)
            await pilot.press("escape")
            await open_snapshot(app, pilot, "add/default/sm_90a")
            await pilot.press("d")
            screen = await compare_screen(app, pilot)
            await pilot.press("a")
            await settle(pilot)
            assert screen.b.label.startswith("add/") and "div 1" in screen_text(app)
            assert "differ in: alignment (div 16 → div 1)" in screen_text(app)
    run(scenario)


def test_compare_without_a_partner_says_what_to_do(compiled, tmp_path):
    import shutil
    root = tmp_path / "one"
    shutil.copytree(compiled / "add" / "default" / "sm_90a", root / "add" / "default" / "sm_90a")

    async def scenario():
        async with started([root]) as (app, pilot):
            await pilot.press("d")
            assert any("open a snapshot first" in str(n.message) for n in app._notifications)
            await open_snapshot(app, pilot, "add/default/sm_90a")
            await pilot.press("d")
            assert not isinstance(app.screen, CompareScreen)
            assert any("nothing to compare with" in str(n.message) for n in app._notifications)
    run(scenario)


def test_the_header_lists_only_what_differs_and_counts_in_words(tmp_path):
    # The committed add/default/sm_80 golden twice: B with 30 registers and one ttgir line changed.
    import hashlib
    import json
    import shutil
    from pathlib import Path

    golden = Path(__file__).resolve().parents[2] / "snapshots" / "add" / "default" / "sm_80"
    root = tmp_path / "pair"
    shutil.copytree(golden, root / "add" / "default" / "sm_80")
    b = root / "add" / "default.w8" / "sm_80"
    shutil.copytree(golden, b)
    ttgir = b / "add_kernel.ttgir"
    ttgir.write_text(ttgir.read_text().replace("arith.constant 1024 : i32", "arith.constant 2048 : i32"))
    meta = json.loads((b / "irscope.json").read_text())
    meta["variant"] = "default.w8"
    meta["compile_options"]["num_warps"] = 8
    meta["resources"]["registers"] = 30
    meta["stages"]["ttgir"].update(sha256=hashlib.sha256(ttgir.read_bytes()).hexdigest(), bytes=ttgir.stat().st_size)
    (b / "irscope.json").write_text(json.dumps(meta))

    async def scenario():
        async with started([root]) as (app, pilot):
            await open_snapshot(app, pilot, "add/default/sm_80")
            await pilot.press("m")
            await open_snapshot(app, pilot, "add/default.w8/sm_80")
            await pilot.press("d")
            screen = await compare_screen(app, pilot)
            deltas = str(screen.query_one("#compare-deltas").render())
            assert "registers 26→30 (+4)" in deltas
            assert "warps" not in deltas and "shared" not in deltas and "0→0" not in deltas
            status = str(screen.query_one("#compare-status").render())
            assert "1 changed" in status and "· 1 run of changes" in status
            assert not app.view.problems and not [n for n in app._notifications if n.severity == "warning"]
    run(scenario)


def test_deltas_fold_to_four_lines_of_whole_items_and_e_shows_them_all(compiled):
    """The counter summary was cut at 4 lines, mid-item (`· sass.instructions` and no value), with no
    sign that more existed."""
    from irscope.tui.model.facts import deltas

    async def scenario():
        async with started([compiled], size=(120, 48)) as (app, pilot):
            await open_snapshot(app, pilot, "matmul/default/sm_90a")
            await pilot.press("d")
            screen = await compare_screen(app, pilot)
            assert screen.b.label == "matmul/default/sm_80"
            summary = screen.query_one("#compare-deltas")
            items = [f"{d.name} {d.show(d.a)}→{d.show(d.b)}" + (f" ({d.change_text})" if d.change else "")
                     for d in deltas(screen.facts(screen.a), screen.facts(screen.b)) if d.a != d.b]

            def shown_lines():
                top = summary.region.y
                return screen_text(app).splitlines()[top:top + summary.region.height]

            lines = shown_lines()
            assert len(lines) == 4 and len(items) > 20
            hidden = int(re.search(r"… (\d+) more \(e: all\)$", lines[-1]).group(1))
            pieces = [piece for line in lines for piece in line.strip().split(" · ")]
            # whole items, in order, then the count of the rest
            assert pieces == items[:len(items) - hidden] + [f"… {hidden} more (e: all)"]
            await pilot.press("e")
            await settle(pilot)
            lines = shown_lines()
            assert len(lines) > 4 and all(any(item in line for line in lines) for item in items)
            assert lines[-1].rstrip().endswith("(e: fewer)") and "more" not in lines[-1]
            await pilot.press("e")
            await settle(pilot)
            assert len(shown_lines()) == 4
    run(scenario)
