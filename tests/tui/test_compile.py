"""Compiling from the UI: a real compile in the background lands in the tree; errors read as messages."""
import re

from irscope.tui.widgets.browser import Browser
from irscope.tui.screens.compile import CompileScreen, parse_request

from .driver import run, screen_text, settle, started

import pytest
from irscope.errors import UsageError


async def fill(pilot, field: str, value: str) -> None:
    screen = pilot.app.screen
    box = screen.query_one(f"#field-{field}")
    box.value = value
    await pilot.pause()


async def wait_for_compile(pilot) -> None:
    for _ in range(600):
        await pilot.pause(0.2)
        screen = pilot.app.screen
        if isinstance(screen, CompileScreen) and not screen.busy:
            break
    await settle(pilot)


def test_compile_dialog_compiles_in_the_background_and_the_snapshot_appears(compiled, tmp_path):
    out = tmp_path / "new"

    async def scenario():
        async with started([compiled], out=out) as (app, pilot):
            await pilot.press("c")
            await settle(pilot)
            assert isinstance(app.screen, CompileScreen)
            await fill(pilot, "kernel", "add")
            await fill(pilot, "target", "sm_90a")
            await fill(pilot, "constexpr", "BLOCK_SIZE=256")
            await fill(pilot, "num_warps", "2")
            await pilot.click("#compile-go")
            await pilot.pause()
            assert app.screen.busy and "compiling" in screen_text(app)
            await wait_for_compile(pilot)
            text = screen_text(app)
            found = re.search(r"✓ (add/\S*BLOCK_SIZE=256\S*/sm_90a)  ok", text)
            assert found, text
            label = found.group(1)
            assert app.screen.query_one("#compile-progress").percentage == 1.0
            await pilot.press("escape")
            assert app.view.snapshot is not None and app.view.snapshot.label == label
            assert app.view.snapshot.meta["compile_options"]["num_warps"] == 2
            assert (out / label / "irscope.json").is_file()
            assert any(e.label == label for e in app.query_one(Browser).entries)
    run(scenario)


def test_a_failing_compile_and_a_bad_request_are_messages_not_crashes(compiled, tmp_path):
    out = tmp_path / "bad"

    async def scenario():
        async with started([compiled], out=out) as (app, pilot):
            await pilot.press("c")
            await settle(pilot)
            await fill(pilot, "kernel", "nosuch")
            await pilot.press("ctrl+s")
            await wait_for_compile(pilot)
            text = screen_text(app)
            assert "error: unknown kernel 'nosuch'" in text and "hint:" in text
            await fill(pilot, "kernel", "add")
            await fill(pilot, "target", "sm_1")
            await pilot.press("ctrl+s")
            await wait_for_compile(pilot)
            assert "error: unknown target 'sm_1'" in screen_text(app)
            await fill(pilot, "target", "sm_90a")
            await fill(pilot, "constexpr", "BLOCK_SIZE=1000")  # tl.arange needs a power of two
            await pilot.press("ctrl+s")
            await wait_for_compile(pilot)
            text = screen_text(app)
            assert "✗ add/default.BLOCK_SIZE=1000/sm_90a  failed" in text, text
            assert "power of 2" in text
            await pilot.press("escape")
            await settle(pilot)
            view = app.view
            assert view.snapshot is not None and not view.snapshot.ok
            assert view.stage == "error" and "power of 2" in "\n".join(view.main.document.lines)
    run(scenario)


def test_parse_request_checks_numbers_and_assignments(tmp_path):
    req = parse_request({"kernel": "matmul", "target": "sm_90a,gfx942", "num_warps": "4",
                         "constexpr": "BLOCK_M=64 BLOCK_N=32", "divisibility": "1"}, tmp_path)
    assert [p.target for p in req.points] == ["sm_90a", "gfx942"]
    assert req.points[0].options.num_warps == 4
    assert dict(req.points[0].options.constexprs) == {"BLOCK_M": 64, "BLOCK_N": 32}
    with pytest.raises(UsageError, match="num_warps must be a whole number"):
        parse_request({"kernel": "matmul", "num_warps": "four"}, tmp_path)
    with pytest.raises(UsageError, match="no kernel"):
        parse_request({"kernel": " "}, tmp_path)


def test_only_a_kernel_file_typed_in_the_form_is_trusted_as_python_outside_a_snapshot(tmp_path, monkeypatch):
    from pathlib import Path

    from irscope.tui.screens.compile import named_kernel_file

    monkeypatch.chdir(tmp_path)
    assert named_kernel_file("kernels/add.py:add_kernel") == tmp_path / "kernels" / "add.py"
    assert named_kernel_file("/abs/k.py:fn") == Path("/abs/k.py")
    assert named_kernel_file("matmul") is None and named_kernel_file("matmul.tma") is None


def test_a_compile_into_a_folder_already_in_the_tree_joins_its_root_and_the_title_counts_it(
        compiled, tmp_path, monkeypatch):
    """`irscope tui` finds ./irscope-snapshots as an absolute root; the compile writes to the relative
    `irscope-snapshots`: its snapshots went under a second root of the same name, and the title kept
    its first count."""
    import shutil
    monkeypatch.chdir(tmp_path)
    shutil.copytree(compiled / "add", tmp_path / "irscope-snapshots" / "add")

    async def scenario():
        async with started([tmp_path / "irscope-snapshots"], out=tmp_path.joinpath("irscope-snapshots")
                           .relative_to(tmp_path)) as (app, pilot):
            before = app.sub_title
            count = int(before.split()[0])
            await pilot.press("c")
            await settle(pilot)
            await fill(pilot, "kernel", "add")
            await fill(pilot, "target", "sm_80")
            await fill(pilot, "num_warps", "2")
            await pilot.press("ctrl+s")
            await wait_for_compile(pilot)
            await pilot.press("escape")
            await settle(pilot)
            roots = {e.root for e in app.query_one(Browser).entries}
            assert len(roots) == 1 and len(app.roots) == 1, roots
            assert app.sub_title.startswith(f"{count + 1} snapshots in irscope-snapshots"), (before, app.sub_title)
    run(scenario)


def test_tab_in_the_kernel_field_accepts_the_suggested_name_then_moves_on(compiled, tmp_path):
    """Typing `a` showed `add`, but Tab moved on with `a` in the field (then: unknown kernel 'a')."""
    async def scenario():
        async with started([compiled], out=tmp_path / "new") as (app, pilot):
            await pilot.press("c")
            await settle(pilot)
            kernel = app.screen.query_one("#field-kernel")
            assert app.focused is kernel and kernel.value == ""
            await pilot.press("a")
            await settle(pilot)
            await pilot.press("tab")
            assert kernel.value == "add" and app.focused is kernel
            await pilot.press("tab")  # nothing left to complete: the next field
            assert kernel.value == "add" and app.focused is app.screen.query_one("#field-target")
            await pilot.press("shift+tab", "ctrl+u", "m", "a", "t")
            await settle(pilot)
            await pilot.press("right")  # → still accepts too
            assert kernel.value == "matmul"
    run(scenario)


def test_a_bad_field_is_named_as_the_dialog_labels_it_not_as_a_command_line_flag(compiled, tmp_path):
    """`maxnreg=abc` in the alignment field said `bad --divisibility ...`, in the options field
    `--option maxnreg=abc: ...`: flags the dialog has no field for."""
    async def scenario():
        async with started([compiled], out=tmp_path / "new") as (app, pilot):
            await pilot.press("c")
            await settle(pilot)
            await fill(pilot, "kernel", "matmul")
            await fill(pilot, "target", "sm_80")
            await fill(pilot, "divisibility", "maxnreg=abc")
            await pilot.press("ctrl+s")
            await wait_for_compile(pilot)
            text = screen_text(app)
            assert "error: alignment: bad value 'maxnreg=abc'" in text and "hint: give a power of two" in text, text
            await fill(pilot, "divisibility", "")
            await fill(pilot, "option", "maxnreg=abc")
            await pilot.press("ctrl+s")
            await wait_for_compile(pilot)
            text = screen_text(app)
            assert "error: options: maxnreg=abc: Triton's maxnreg for sm_80 takes an integer" in text, text
            assert "e.g. maxnreg=" in text and "--" not in text
    run(scenario)
