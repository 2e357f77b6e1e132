"""The layout screen: opened from the reader with L on the TTGIR line under the cursor, its grid and the
two sides of a convert; and its SVG screenshot (pytest-textual-snapshot)."""
from pathlib import Path

import pytest

from irscope.layouts.text import converts
from irscope.store import load_snapshot
from irscope.tui.app import IrscopeApp
from irscope.tui.screens.layouts import LayoutsScreen

from .driver import open_snapshot, run, settle, started


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    from irscope.harness.batch import Point, compile_points
    out = tmp_path_factory.mktemp("layout-screen")
    assert all(o.ok for o in compile_points([Point("matmul", "sm_80")], out, layouts=True))
    return out


def _convert_line(compiled) -> int:
    snap = load_snapshot(compiled / "matmul/default/sm_80")
    (op,) = converts(snap.read("ttgir"))
    return op.line


def test_l_on_a_convert_line_shows_both_sides_and_how_the_data_moves(compiled):
    line = _convert_line(compiled)

    async def scenario():
        async with started([compiled]) as (app, pilot):
            await open_snapshot(app, pilot, "matmul/default/sm_80")
            assert app.view.stage == "ttgir"
            await pilot.press("colon", *str(line), "enter")
            await settle(pilot)
            await pilot.press("L")
            await settle(pilot)
            screen = app.screen
            assert isinstance(screen, LayoutsScreen)
            item = screen.items[screen.query_one("OptionList").highlighted]
            assert item.convert is not None and item.convert.op.line == line
            info = str(screen.query_one("#layouts-info").render())
            assert "through shared memory" in info and "#mma -> #blocked" in info
            assert screen.query_one("#layouts-right").display  # the destination beside the source
            # Up to the first encoding: the accumulator's grid, lane:register cells, one colour a warp.
            await pilot.press("home")
            await settle(pilot)
            assert screen.items[screen.query_one("OptionList").highlighted].encoding.name == "#mma"
            grid = screen.query_one("#layouts-grid-a").render()
            assert " 0:0 " in str(grid) and " 1:0 " in str(grid)  # (0,0): lane 0 reg 0; (0,1): reg 1 ... lane 1
            assert not screen.query_one("#layouts-right").display
            await pilot.press("escape")
            await settle(pilot)
            assert not isinstance(app.screen, LayoutsScreen)

    run(scenario)


def test_a_snapshot_without_layouts_says_how_to_compute_them(compiled, tmp_path):
    import shutil
    copy = tmp_path / "matmul" / "default" / "sm_80"
    shutil.copytree(compiled / "matmul/default/sm_80", copy)
    (copy / "layouts.json").unlink()

    async def scenario():
        async with started([tmp_path]) as (app, pilot):
            await open_snapshot(app, pilot, "matmul/default/sm_80")
            await pilot.press("L")
            await settle(pilot)
            assert "--compute" in str(app.screen.query_one("#layouts-info").render())

    run(scenario)


def test_layout_screen_of_the_mma_v2_accumulator(compiled, snap_compare):
    async def before(pilot):
        await settle(pilot)
        await open_snapshot(pilot.app, pilot, "matmul/default/sm_80")
        await pilot.press("L")
        await settle(pilot)

    app = IrscopeApp([compiled], Path("irscope-snapshots"), kernels=["matmul"])
    assert snap_compare(app, terminal_size=(140, 40), run_before=before)
