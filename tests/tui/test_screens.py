"""SVG screenshots of the main screens (pytest-textual-snapshot); review changes with --snapshot-update.

The screens are chosen so that nothing on them depends on where the kernels were compiled: no
absolute paths (Python source, loc-alias lines, PTX's `// add.py:13:9` comments), no timings. The
path's length still shows, though: PTX debug info spells the kernel file's path out byte by byte, so
its line count grows with it. The kernels are therefore compiled from a copy in a folder whose path
has the same length on every machine (`/tmp/irscope-screens-XXXXXXXX`).
"""
import shutil
import tempfile
from pathlib import Path

import pytest

from irscope.spec.library import builtin_dir
from irscope.tui.app import IrscopeApp

from .driver import open_snapshot, settle


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    """add and matmul for sm_90a and gfx942, compiled from copies at a path of fixed length."""
    from irscope.harness.batch import Point, compile_points

    src = Path(tempfile.mkdtemp(prefix="irscope-screens-", dir="/tmp"))
    try:
        for name in ("add", "matmul"):
            shutil.copy(builtin_dir() / f"{name}.py", src / f"{name}.py")
        out = tmp_path_factory.mktemp("screens")
        points = [Point(f"{src}/{k}.py:{k}", t) for k in ("add", "matmul") for t in ("sm_90a", "gfx942")]
        assert all(o.ok for o in compile_points(points, out))
    finally:
        shutil.rmtree(src, ignore_errors=True)
    return out


def app_for(compiled) -> IrscopeApp:
    return IrscopeApp([compiled], Path("irscope-snapshots"), kernels=["add", "matmul"])


def test_reading_matmul_ttgir_with_source_beside_it(compiled, snap_compare):
    async def before(pilot):
        await settle(pilot)
        await open_snapshot(pilot.app, pilot, "matmul/default/sm_90a")
        await pilot.press("colon", *"130", "enter")
        await settle(pilot)

    assert snap_compare(app_for(compiled), terminal_size=(160, 48), run_before=before)


def test_small_terminal_reading_ptx(compiled, snap_compare):
    async def before(pilot):
        await settle(pilot)
        await open_snapshot(pilot.app, pilot, "add/default/sm_90a")
        await pilot.press("6", "colon", *"50", "enter")
        await settle(pilot)

    assert snap_compare(app_for(compiled), terminal_size=(80, 24), run_before=before)


def test_compare_sm90a_with_gfx942(compiled, snap_compare):
    async def before(pilot):
        await settle(pilot)
        await open_snapshot(pilot.app, pilot, "matmul/default/sm_90a")
        await pilot.press("m")
        await open_snapshot(pilot.app, pilot, "matmul/default/gfx942")
        pilot.app.clear_notifications()
        await pilot.press("d")
        await settle(pilot)
        await pilot.press("n")
        await settle(pilot)

    assert snap_compare(app_for(compiled), terminal_size=(160, 48), run_before=before)


def test_help_screen(compiled, snap_compare):
    async def before(pilot):
        await settle(pilot)
        await pilot.press("question_mark")
        await settle(pilot)

    assert snap_compare(app_for(compiled), terminal_size=(100, 40), run_before=before)


def test_compile_dialog(compiled, snap_compare):
    async def before(pilot):
        await settle(pilot)
        await pilot.press("c")
        await settle(pilot)
        pilot.app.screen.query_one("#field-kernel").value = "matmul"
        pilot.app.screen.query_one("#field-target").value = "sm_90a,gfx942"
        for field in pilot.app.screen.query("Input"):  # a blinking cursor makes the picture depend on timing
            field.cursor_blink = False
        await settle(pilot)

    assert snap_compare(app_for(compiled), terminal_size=(100, 30), run_before=before)


def test_help_lists_every_key_the_app_and_the_reader_bind():
    from irscope.tui.app import IrscopeApp
    from irscope.tui.screens.help import HELP
    from irscope.tui.widgets.snapshot_view import SnapshotView
    for owner in (IrscopeApp, SnapshotView):
        for b in owner.BINDINGS:
            shown = b.key_display or b.key.split(",")[0]
            if shown.isdigit():
                assert "`1`..`9`" in HELP
            elif len(shown) == 1:
                assert f"`{shown}`" in HELP or f"`{shown} " in HELP or f" {shown}`" in HELP, (owner.__name__, b.key)
