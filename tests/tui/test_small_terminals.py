"""The TUI at small and odd terminal sizes, and resized while a screen is open: what each screen does when
space is short (what stays on screen, what scrolls, what a user can still reach) on real snapshots."""
import pytest

from irscope.tui.widgets.browser import Browser
from irscope.tui.widgets.resource_panel import ResourcePanel

from .driver import open_snapshot, run, settle, started
from .test_browse import sweep_root

LONG = ["default.a-very-long-variant-name-for-a-sweep.w4.s2.GROUP_M=8",
        "default.a-very-long-variant-name-for-a-sweep.w8.s3.GROUP_M=16.BLOCK_SIZE=1024"]


@pytest.fixture(scope="module")
def rich_root(tmp_path_factory):
    """matmul for sm_90a with its pass timeline and layouts, and for gfx942: every screen has something."""
    from irscope.harness.batch import Point, compile_points
    from irscope.spec.kernel import CompileOptions

    out = tmp_path_factory.mktemp("small-terminals")
    outcomes = compile_points([Point("matmul", "sm_90a", CompileOptions(passes="mlir")), Point("matmul", "gfx942")],
                              out, layouts=True)
    assert all(o.ok for o in outcomes), outcomes
    return out


def test_shrinking_the_terminal_narrows_a_wide_tree_to_half_the_new_width(tmp_path):
    """The tree was capped at half the old width (the app read its size before Textual updated it): at
    200 columns it took 57, and after a resize to 60 it still took 57 of the 60."""
    async def scenario():
        async with started([sweep_root(tmp_path, LONG)], size=(200, 60)) as (app, pilot):
            browser = app.query_one(Browser)
            assert browser.outer_size.width > 50
            await pilot.resize_terminal(60, 15)
            await settle(pilot)
            assert browser.outer_size.width <= 30
            await pilot.resize_terminal(200, 60)
            await settle(pilot)
            assert browser.outer_size.width > 50
    run(scenario)


def test_a_resize_under_another_screen_reaches_the_reader_and_the_tree(tmp_path, goldens):
    """Resized while the compare (or help) screen was open, the reader came back laid out for the old
    size: at 80 columns the resource panel still took 30 of them and the tree kept half of 200."""
    async def scenario():
        async with started([goldens], size=(160, 48)) as (app, pilot):
            await open_snapshot(app, pilot, "matmul/default/sm_90a")
            panel = app.query_one(ResourcePanel)
            assert panel.display and panel.region.width > 0
            await pilot.press("d")
            await settle(pilot)
            await pilot.resize_terminal(80, 24)
            await settle(pilot)
            await pilot.press("escape")
            await settle(pilot)
            assert app.screen.has_class("-narrow")
            assert panel.region.width == 0  # hidden under 100 columns, as on a terminal started at 80
            await pilot.press("question_mark")
            await settle(pilot)
            await pilot.resize_terminal(160, 48)
            await settle(pilot)
            await pilot.press("escape")
            await settle(pilot)
            assert not app.screen.has_class("-narrow") and panel.region.width > 0
    run(scenario)

    async def tree():
        async with started([sweep_root(tmp_path, LONG)], size=(200, 60)) as (app, pilot):
            browser = app.query_one(Browser)
            await pilot.press("question_mark")
            await settle(pilot)
            await pilot.resize_terminal(60, 15)
            await settle(pilot)
            await pilot.press("escape")
            await settle(pilot)
            assert browser.outer_size.width <= 30
    run(tree)


async def _compare(app, pilot) -> None:
    await open_snapshot(app, pilot, "matmul/default/sm_90a")
    await pilot.press("m")
    await open_snapshot(app, pilot, "matmul/default/gfx942")
    await pilot.press("d")
    await settle(pilot)
    assert type(app.screen).__name__ == "CompareScreen"


def _rows(app, selector: str) -> int:
    return app.screen.query_one(selector).region.height


@pytest.mark.parametrize("size", [(40, 10), (60, 15)])
def test_on_a_short_terminal_the_compare_header_folds_to_two_rows_and_the_diff_keeps_the_rest(goldens, size):
    """At 40x10 the title and deltas took every row and the diff had none."""
    async def scenario():
        async with started([goldens], size=size) as (app, pilot):
            await _compare(app, pilot)
            assert _rows(app, "#compare-title") == 1 and _rows(app, "#compare-deltas") == 1
            assert "more (e: all)" in "\n".join(app.screen.query_one("#compare-deltas").render().plain.split("\n"))
            assert _rows(app, "#diff-view") >= size[1] - 7  # title, deltas, tabs (2), status, footer
    run(scenario)


@pytest.mark.parametrize("size", [(40, 10), (80, 24)])
def test_every_delta_takes_at_most_half_the_screen_and_scrolls(goldens, size):
    """`e` at 80x24 pushed the tabs, the diff and its status line off the screen (92 deltas)."""
    async def scenario():
        async with started([goldens], size=size) as (app, pilot):
            await _compare(app, pilot)
            await pilot.press("e")
            await settle(pilot)
            box = app.screen.query_one("#compare-deltas-box")
            assert box.region.height <= size[1] // 2 and box.max_scroll_y > 0
            assert _rows(app, "#diff-view") >= 1 and _rows(app, "#compare-status") == 1
            box.scroll_end(animate=False)  # the last delta is there to scroll to
            await settle(pilot)
            assert box.scroll_y == box.max_scroll_y > 0
    run(scenario)


def test_the_compare_header_folds_and_unfolds_as_the_terminal_is_resized(goldens):
    async def scenario():
        async with started([goldens], size=(160, 48)) as (app, pilot):
            await _compare(app, pilot)
            deltas = app.screen.query_one("#compare-deltas")
            assert _rows(app, "#compare-deltas") == 4
            await pilot.resize_terminal(40, 10)
            await settle(pilot)
            assert _rows(app, "#compare-title") == 1 and _rows(app, "#compare-deltas") == 1
            assert _rows(app, "#diff-view") >= 3
            await pilot.resize_terminal(160, 48)
            await settle(pilot)
            assert deltas.region.height == 4
    run(scenario)


def _on_screen(app, widget) -> bool:
    """Whether all of `widget` is drawn: inside the screen and inside what its scrolled parents show."""
    region = widget.region
    return region.area > 0 and app.screen.region.contains_region(region) and \
        all(p.region.contains_region(region) for p in widget.ancestors if getattr(p, "region", None) is not None
            and p is not app and p is not app.screen)


@pytest.mark.parametrize("size", [(40, 10), (60, 15), (80, 24)])
def test_every_field_and_button_of_the_compile_dialog_is_reachable_on_a_small_terminal(goldens, tmp_path, size):
    """The dialog was at least 60 columns wide (past a 40-column screen's edge) and cut its buttons off
    below about 20 rows, with no way to scroll to them."""
    async def scenario():
        async with started([goldens], size=size, out=tmp_path / "out") as (app, pilot):
            await pilot.press("c")
            await settle(pilot)
            dialog = app.screen.query_one("#compile-dialog")
            assert app.screen.region.contains_region(dialog.region), (dialog.region, app.screen.region)
            reached = []
            for k in range(11):  # the kernel field has focus; Tab through the 8 other fields and 2 buttons
                assert _on_screen(app, app.focused), app.focused
                reached.append(app.focused.id)
                if k < 10:
                    await pilot.press("tab")
                    await settle(pilot)
            assert reached[-2:] == ["compile-go", "compile-close"]
            await pilot.press("enter")  # the Close button, reached and pressed
            await settle(pilot)
            assert type(app.screen).__name__ != "CompileScreen"
    run(scenario)


@pytest.mark.parametrize("size", [(40, 10), (100, 30)])
def test_every_compile_result_can_be_scrolled_to(goldens, tmp_path, size):
    """The results were a Static capped at 10 lines: three failed compiles' reasons (8 lines each) showed
    the first and a half, and nothing scrolled to the rest; at 40x10 not even the first was on screen."""
    from .test_compile import fill, wait_for_compile

    async def scenario():
        async with started([goldens], size=size, out=tmp_path / "out") as (app, pilot):
            await pilot.press("c")
            await settle(pilot)
            await fill(pilot, "kernel", "add")
            await fill(pilot, "target", "sm_80,sm_90a,gfx942")
            await fill(pilot, "constexpr", "BLOCK_SIZE=3")  # arange's range must be a power of 2
            await pilot.press("ctrl+s")
            await wait_for_compile(pilot)
            dialog, log = app.screen.query_one("#compile-dialog"), app.screen.query_one("#compile-log")
            text = str(log.render())
            assert text.count("failed") == 3
            assert dialog.region.intersection(log.region).area > 0  # scrolled down to the results
            assert log.virtual_region.height >= len(text.splitlines())  # all of them laid out, none cut
            dialog.scroll_end(animate=False)
            await settle(pilot)
            assert log.region.bottom <= dialog.region.bottom  # the last line drawn, scrolled to
    run(scenario)


@pytest.mark.parametrize("size", [(40, 10), (60, 15), (80, 24)])
def test_the_layout_screen_keeps_room_for_the_grid_on_a_small_terminal(rich_root, size):
    """The list was 36 columns whatever the width (at 40 the grid had 3) and the description up to 14
    rows whatever the height (at 60x15 it took all of them and the grid had none); its text past 14 rows
    was cut, with nothing to scroll."""
    async def scenario():
        async with started([rich_root], size=size) as (app, pilot):
            await open_snapshot(app, pilot, "matmul/default/sm_90a")
            await pilot.press("L")
            await settle(pilot)
            screen = app.screen
            assert type(screen).__name__ == "LayoutsScreen"
            grid = screen.query_one("#layouts-left")
            assert grid.region.width >= size[0] // 2 and grid.region.height >= 2, grid.region
            box, info = screen.query_one("#layouts-info-box"), screen.query_one("#layouts-info")
            assert box.region.height <= size[1] * 2 // 5
            assert info.virtual_region.height >= len(str(info.render()).splitlines())  # all of it, scrollable
            await pilot.press("escape")
            await settle(pilot)
            assert type(app.screen).__name__ != "LayoutsScreen"
    run(scenario)


@pytest.mark.parametrize("size", [(40, 10), (60, 15), (80, 24)])
def test_the_pass_timeline_shows_the_list_and_the_step_on_a_narrow_terminal_one_row_a_step(rich_root, size):
    """At 40 columns the step list took all 40 and the step's diff had none; at 60 its rows wrapped, each
    step reading as two (its change on a row of its own)."""
    async def scenario():
        async with started([rich_root], size=size) as (app, pilot):
            await open_snapshot(app, pilot, "matmul/default/sm_90a")
            await pilot.press("p")
            await settle(pilot)
            screen = app.screen
            assert type(screen).__name__ == "TimelineScreen" and screen.timeline is not None
            steps, pane = screen.query_one("#step-list"), screen.query_one("#step-pane")
            assert pane.region.width >= size[0] * 2 // 5 and steps.region.width >= size[0] * 2 // 5
            shown = steps.shown
            rules = sum(a.stage != b.stage for a, b in zip(shown, shown[1:]))
            assert steps.virtual_size.height == len(shown) + rules
            before = screen.current.n
            await pilot.press("down")  # the list still steps, and the step's diff follows
            await settle(pilot)
            assert screen.current.n == next(s.n for s in shown if s.n > before)
    run(scenario)
