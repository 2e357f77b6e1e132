"""Reading a stage: switching stages, search, go to line, functions and loops, scrolling, mouse."""
from irscope.tui.widgets.code_view import CodeView
from irscope.tui.widgets.find_bar import FindBar

from .driver import open_snapshot, run, screen_text, settle, started

SNAP = "matmul/default/sm_90a"


def lines_of(app):
    return app.view.main.document.lines


def test_stages_switch_by_brackets_numbers_and_clicks(compiled):
    async def scenario():
        async with started([compiled]) as (app, pilot):
            await open_snapshot(app, pilot, SNAP)
            view = app.view
            await pilot.press("right_square_bracket")
            assert view.stage == "llir" and "define" in "\n".join(lines_of(app)[:20])
            await pilot.press("left_square_bracket", "left_square_bracket")
            assert view.stage == "ttir"
            await pilot.press("6")
            assert view.stage == "ptx" and view.tabs.active == "tab-ptx"
            await pilot.click("#tab-sass")
            await settle(pilot)
            assert view.stage == "sass" and "/*0000*/" in "\n".join(lines_of(app)[:40])
            await pilot.press("2")
            assert view.stage == "source"
            assert "TTIR its frontend produced" in screen_text(app)  # the `source` stage says what it is
            await pilot.press("1")
            assert view.stage == "python" and "@triton.jit" in "\n".join(lines_of(app))
    run(scenario)


def test_search_finds_next_and_previous_matches_with_smart_case(compiled):
    async def scenario():
        async with started([compiled]) as (app, pilot):
            await open_snapshot(app, pilot, SNAP)
            main = app.view.main
            expected = [i for i, ln in enumerate(lines_of(app)) if "ttg.async_commit_group" in ln]
            assert len(expected) >= 2
            await pilot.press("slash")
            assert app.focused is app.query_one(FindBar)
            await pilot.press(*"ttg.async_commit_group", "enter")
            await settle(pilot)
            assert main.matches == expected and main.cursor == expected[0]
            assert app.focused is main
            await pilot.press("n")
            assert main.cursor == expected[1]
            await pilot.press("N")
            assert main.cursor == expected[0]
            await pilot.press("N")  # wraps around to the last match
            assert main.cursor == expected[-1]
            assert f"/ttg.async_commit_group: {len(expected)}/{len(expected)}" in screen_text(app)
            await pilot.press("slash", *["backspace"] * 30, *"ASYNC_COMMIT_GROUP", "enter")  # capitals: match case
            await settle(pilot)
            assert main.matches == []
            assert any("is not in ttgir" in str(n.message) for n in app._notifications)
    run(scenario)


def test_go_to_line_and_escape_closes_the_prompt(compiled):
    async def scenario():
        async with started([compiled]) as (app, pilot):
            await open_snapshot(app, pilot, SNAP)
            await pilot.press("colon", *"120", "enter")
            await settle(pilot)
            assert app.view.main.cursor == 119
            assert app.view.main.scroll_offset.y <= 119 < app.view.main.scroll_offset.y + 48
            await pilot.press("colon", "escape")
            assert not app.query_one(FindBar).has_class("-open") and app.focused is app.view.main
            await pilot.press("colon", *"abc", "enter")
            assert app.view.main.cursor == 119
            assert any("not a line number" in str(n.message) for n in app._notifications)
    run(scenario)


def test_jumping_between_functions_and_loops(compiled):
    async def scenario():
        async with started([compiled]) as (app, pilot):
            await open_snapshot(app, pilot, SNAP)
            text = lines_of(app)
            func = next(i for i, ln in enumerate(text) if "tt.func public @matmul_kernel" in ln)
            loop = next(i for i, ln in enumerate(text) if "scf.for" in ln)
            await pilot.press("f")
            assert app.view.main.cursor == func
            await pilot.press("o")
            assert app.view.main.cursor == loop
            await pilot.press("O")  # only one loop: wraps to itself
            assert app.view.main.cursor == loop
            await pilot.press("5")  # llir: the loop is a block with a back edge
            await pilot.press("o")
            cursor = app.view.main.cursor
            assert lines_of(app)[cursor].split(":")[0].strip().isdigit() or "preds" in lines_of(app)[cursor]
            await pilot.press("7", "o")
            assert lines_of(app)[app.view.main.cursor].startswith(".L_x_")
    run(scenario)


def test_scrolling_paging_and_mouse(compiled):
    async def scenario():
        async with started([compiled]) as (app, pilot):
            await open_snapshot(app, pilot, SNAP)
            await pilot.press("5")  # llir, 2,000 lines
            main = app.view.main
            await pilot.press("pagedown")
            assert main.scroll_offset.y > 0 and main.cursor > 0
            await pilot.press("G")
            assert main.cursor == len(lines_of(app)) - 1
            assert main.scroll_offset.y >= len(lines_of(app)) - 48
            await pilot.press("g")
            assert main.cursor == 0 and main.scroll_offset.y == 0
            await pilot.press("j", "j", "k")
            assert main.cursor == 1
            await pilot.click(CodeView, offset=(10, 5))  # a click puts the cursor on that line
            await settle(pilot)
            assert main.cursor == 5 or app.view.side.cursor == 5
    run(scenario)


def test_lines_are_highlighted_and_only_visible_lines_are_lexed(compiled):
    async def scenario():
        async with started([compiled]) as (app, pilot):
            await open_snapshot(app, pilot, SNAP)
            await pilot.press("5")
            doc = app.view.main.document
            assert len(doc._cache) < 200 < len(doc)  # only what was on screen
            line = next(i for i in range(40) if "getelementptr" in doc.lines[i] or "call" in doc.lines[i])
            assert len({str(span.style) for span in doc.text(line).spans}) >= 2
    run(scenario)


def test_the_python_pane_comes_back_beside_the_stage_after_the_python_tab(compiled):
    """Reading the python tab hid the side pane for good: back on a stage (a number key, or Enter on a
    Python line) the stage was full width until `v`."""
    async def scenario():
        async with started([compiled], size=(200, 50)) as (app, pilot):
            await open_snapshot(app, pilot, SNAP)
            view = app.view
            assert view.stage == "ttgir" and view.side.display
            await pilot.press("1")
            assert view.stage == "python" and not view.side.display
            await pilot.press("4")
            await settle(pilot)
            assert view.stage == "ttgir" and view.side.display and view.side.stage == "python"
            await pilot.press("1", "colon", *"14", "enter", "enter")  # line 14 of the Python, into ttgir
            await settle(pilot)
            assert view.stage == "ttgir" and view.side.display and view.side.marks == {13}
            await pilot.press("v", "1", "4")  # hidden by the reader: it stays hidden
            assert view.stage == "ttgir" and not view.side.display
            await pilot.press("1", "v")  # `v` on the python tab: the stage with Python beside it
            assert view.stage == "ttgir" and view.side.display
    run(scenario)


def test_resource_panel_and_split_toggle(compiled):
    async def scenario():
        async with started([compiled]) as (app, pilot):
            await open_snapshot(app, pilot, SNAP)
            view = app.view
            assert view.split  # 160 columns: the Python source starts beside the stage
            await pilot.press("v")
            assert not view.split and not view.side.display
            await pilot.press("v")
            assert view.split and view.side.display
            await pilot.press("r")
            assert not app.query_one("#panel").display
            await pilot.press("r")
            assert app.query_one("#panel").display
    run(scenario)


def test_help_screen_opens_and_closes(compiled):
    async def scenario():
        async with started([compiled]) as (app, pilot):
            await pilot.press("question_mark")
            await settle(pilot)
            assert type(app.screen).__name__ == "HelpScreen"
            assert "Reading a snapshot" in screen_text(app)
            await pilot.press("escape")
            assert type(app.screen).__name__ == "Screen"
    run(scenario)


def test_small_terminal_hides_the_panel_and_keeps_working(compiled):
    async def scenario():
        async with started([compiled], size=(80, 24)) as (app, pilot):
            await open_snapshot(app, pilot, SNAP)
            assert not app.view.split and not app.query_one("#panel").display
            text = screen_text(app)
            assert "ttgir" in text and "module attributes" in text
            assert len(text.splitlines()) == 24
            await pilot.press("r")  # the panel can still be asked for
            assert app.query_one("#panel").display and "registers" in screen_text(app)
            await pilot.press("r")
            assert not app.query_one("#panel").display
    run(scenario)


def test_the_find_bar_covers_the_status_line_and_leaves_the_code_its_size(compiled):
    async def scenario():
        async with started([compiled]) as (app, pilot):
            await open_snapshot(app, pilot, SNAP)
            main, bar = app.view.main, app.query_one(FindBar)
            status = app.query_one("#status")
            size, row = main.size, status.region.y
            assert not bar.visible and "ttgir" in screen_text(app).splitlines()[row]
            await pilot.press("slash")
            await settle(pilot)
            assert bar.visible and app.focused is bar and bar.region.y == row  # over the status line
            assert main.size == size
            await pilot.press(*"scf.for")
            assert "scf.for" in screen_text(app).splitlines()[row]
            await pilot.press("enter")
            await settle(pilot)
            assert not bar.visible and main.size == size and app.focused is main
            assert "/scf.for" in screen_text(app).splitlines()[row]  # the status line is back, with the search
    run(scenario)


def test_footer_shows_the_focused_widgets_keys_and_a_click_presses_one(compiled):
    from irscope.tui.widgets.key_footer import KeyFooter

    async def scenario():
        async with started([compiled]) as (app, pilot):
            await open_snapshot(app, pilot, SNAP)
            footer = app.query_one(KeyFooter)
            shown = {key.description for key in footer.keys}
            assert {"Search", "Split", "Quit", "Compare"} <= shown and "Close" not in shown
            await pilot.press("slash")
            await settle(pilot)
            assert "Close" in {key.description for key in footer.keys}  # the find bar's Escape
            await pilot.press("escape")
            await settle(pilot)
            assert {key.description for key in footer.keys} == shown
            footer_row = screen_text(app).splitlines()[-1]
            assert "Search" in footer_row and "palette" in footer_row
            x = next(start for start, _end, key in footer._spans if key.description == "Split")
            assert app.view.split
            await pilot.click(KeyFooter, offset=(x + 1, 0))
            await settle(pilot)
            assert not app.view.split  # the click pressed v
    run(scenario)


def test_a_failed_snapshot_status_line_does_not_wait_for_debug_locations(compile_cache, tmp_path):
    """The error tab of a failed compile read `reading debug locations…` for ever: it has none to read."""
    import shutil

    from irscope.harness.batch import Point
    from irscope.spec.kernel import CompileOptions

    (failed,) = compile_cache.outcomes([Point("matmul", "sm_80", CompileOptions(constexprs=(("BLOCK_M", 3),)))])
    assert not failed.ok and failed.path is not None, failed
    shutil.copytree(failed.path, tmp_path / failed.label)

    async def scenario():
        async with started([tmp_path]) as (app, pilot):
            await open_snapshot(app, pilot, failed.label)
            view = app.view
            assert view.stage == "error" and view.reading.located
            status = screen_text(app).splitlines()[-2]
            assert " error " in status and "reading debug locations" not in status, status
            for stage in view.stages[1:]:  # what did compile: parsed too by now
                view.show_stage(stage)
                await settle(pilot)
                assert "reading debug locations" not in screen_text(app).splitlines()[-2], stage
    run(scenario)
