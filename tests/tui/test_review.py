"""Regressions found reviewing the TUI by using it: each test names what went wrong and asserts what now happens."""
import json
import shutil

import pytest

from irscope.tui.screens.layouts import LayoutsScreen

from .driver import open_snapshot, run, screen_text, settle, started


@pytest.fixture(scope="module")
def with_layouts(tmp_path_factory):
    """matmul for sm_80 with its layouts.json (a convert_layout through shared memory in its TTGIR)."""
    from irscope.harness.batch import Point, compile_points
    out = tmp_path_factory.mktemp("review-layouts")
    assert all(o.ok for o in compile_points([Point("matmul", "sm_80")], out, layouts=True))
    return out


def _copy(with_layouts, tmp_path):
    copy = tmp_path / "matmul" / "default" / "sm_80"
    shutil.copytree(with_layouts / "matmul/default/sm_80", copy)
    return copy


def test_a_layouts_json_with_no_encoding_says_so_instead_of_ending_the_app(with_layouts, tmp_path):
    # A kernel without tensors has no encoding; the screen's first item was shown regardless (IndexError).
    copy = _copy(with_layouts, tmp_path)
    layouts = json.loads((copy / "layouts.json").read_text())
    layouts["encodings"] = []
    (copy / "layouts.json").write_text(json.dumps(layouts))
    ttgir = next(copy.glob("*.ttgir"))
    meta = json.loads((copy / "irscope.json").read_text())
    del meta["stages"]["ttgir"]  # no TTGIR either, so no convert_layout
    (copy / "irscope.json").write_text(json.dumps(meta))
    ttgir.unlink()

    async def scenario():
        async with started([tmp_path]) as (app, pilot):
            await open_snapshot(app, pilot, "matmul/default/sm_80")
            await pilot.press("L")
            await settle(pilot)
            assert isinstance(app.screen, LayoutsScreen)
            assert "uses no layout" in str(app.screen.query_one("#layouts-info").render())
            await pilot.press("down", "up", "tab", "escape")
            await settle(pilot)
            assert not isinstance(app.screen, LayoutsScreen)

    run(scenario)


def test_a_changed_ttgir_is_named_on_the_layout_screen_not_its_converts_silently_dropped(with_layouts, tmp_path):
    copy = _copy(with_layouts, tmp_path)
    ttgir = next(copy.glob("*.ttgir"))
    ttgir.write_text(ttgir.read_text() + "// changed after the compile\n")

    async def scenario():
        async with started([tmp_path]) as (app, pilot):
            await open_snapshot(app, pilot, "matmul/default/sm_80")
            await pilot.press("L")
            await settle(pilot)
            screen = app.screen
            assert isinstance(screen, LayoutsScreen)
            assert screen.items and all(item.convert is None for item in screen.items)
            said = [n.message for n in app._notifications]
            assert any("no convert_layout" in m and ttgir.name in m and "sha256" in m for m in said), said

    run(scenario)
