"""Browsing: the tree of snapshots, its filter, damaged folders, Triton cache folders, several roots."""
import json
import re
import shutil
from pathlib import Path

from irscope.targets import CORE
from irscope.tui.widgets.browser import Browser

from .driver import open_snapshot, run, screen_text, settle, started, tree_node


def leaves(app):
    out = []

    def walk(node):
        for child in node.children:
            if child.data is not None:
                out.append(child.data.label)
            walk(child)

    walk(app.query_one(Browser).tree.root)
    return out


def test_tree_lists_kernels_variants_and_targets_in_target_order(compiled):
    async def scenario():
        async with started([compiled]) as (app, pilot):
            tree = app.query_one(Browser).tree
            assert [str(n.label) for n in tree.root.children] == ["add", "matmul"]
            assert [str(n.label) for n in tree.root.children[1].children] == ["default"]
            assert leaves(app) == [f"{k}/default/{t}" for k in ("add", "matmul") for t in CORE]
            assert "14 snapshots" in app.sub_title
    run(scenario)


def test_filter_box_narrows_the_tree_to_matching_words(compiled):
    async def scenario():
        async with started([compiled]) as (app, pilot):
            await pilot.press("ctrl+f")
            await pilot.press(*"matmul gfx")
            await settle(pilot)
            assert leaves(app) == ["matmul/default/gfx90a", "matmul/default/gfx942", "matmul/default/gfx950"]
            await pilot.press("enter")  # back to the tree
            assert app.focused is app.query_one(Browser).tree
            await pilot.press("ctrl+f", *["backspace"] * 10, *"nothing-like-this")
            await settle(pilot)
            assert leaves(app) == [] and "no snapshots match" in screen_text(app)
    run(scenario)


def test_selecting_a_snapshot_shows_its_stages_as_tabs_and_its_resources(compiled):
    async def scenario():
        async with started([compiled]) as (app, pilot):
            await open_snapshot(app, pilot, "matmul/default/sm_90a")
            view = app.view
            assert view.stages == ["python", "source", "ttir", "ttgir", "llir", "ptx", "sass"]
            assert view.stage == "ttgir"
            labels = [str(t.label) for t in view.tabs.query("Tab")]
            assert labels == ["1 python", "2 source (TTIR₀)", "3 ttir", "4 ttgir", "5 llir", "6 ptx", "7 sass"]
            text = screen_text(app)
            regs = view.snapshot.resources.registers
            assert re.search(rf"registers\s+{regs}\b", text) and "Hopper" in text
            assert "module attributes" in text  # ttgir is on screen
            await open_snapshot(app, pilot, "matmul/default/gfx942")
            assert "amdgcn" in app.view.stages and "sass" not in app.view.stages
            assert app.view.stage == "ttgir"  # the stage stays when the snapshot changes
            assert "sgprs" in screen_text(app) and "(CDNA3)" in screen_text(app)
    run(scenario)


def test_damaged_folders_are_listed_and_reported_not_fatal(compiled, tmp_path):
    root = tmp_path / "root"
    shutil.copytree(compiled / "add" / "default" / "sm_90a", root / "add" / "default" / "sm_90a")
    bad = root / "add" / "default" / "sm_80"
    bad.mkdir(parents=True)
    (bad / "irscope.json").write_text("{not json")

    async def scenario():
        async with started([root]) as (app, pilot):
            assert leaves(app)[0] == "add/default/sm_90a"
            damaged = tree_node(app, "add/default/sm_80")
            tree = app.query_one(Browser).tree
            tree.focus()
            tree.move_cursor(damaged)
            await pilot.press("enter")
            await settle(pilot)
            assert app.view.snapshot is None  # nothing opened, and the app still runs
            assert any("damaged" in str(n.message) for n in app._notifications)
    run(scenario)


def test_triton_cache_folders_open(compiled, tmp_path):
    # A Triton cache entry: <hash>/<kernel>.json plus the stage files, as ~/.triton/cache keeps them.
    snap = compiled / "add" / "default" / "sm_90a"
    entry = tmp_path / "cache" / "Q2ZJSKBQ7AX2OVS6XRM3UFTJ6C5AFB"
    entry.mkdir(parents=True)
    for f in snap.iterdir():
        if f.suffix[1:] in ("json", "ttir", "ttgir", "llir", "ptx", "cubin", "source") and f.name != "irscope.json":
            shutil.copy(f, entry / f.name)
    assert json.loads((entry / "add_kernel.json").read_text())["name"] == "add_kernel"

    async def scenario():
        async with started([tmp_path / "cache"]) as (app, pilot):
            assert leaves(app) == ["add_kernel/Q2ZJSKBQ7AX2/sm_90a"]
            await open_snapshot(app, pilot, "add_kernel/Q2ZJSKBQ7AX2/sm_90a")
            # No source.py: the debug locations name the kernel's file, but a path a snapshot records is
            # never opened (it could name any file); the stages read, and the status names the file.
            assert app.view.stages[0] == "source" and "python" not in app.view.stages
            assert "ttgir" in app.view.stages
            assert app.view.source_file and app.view.source_file.endswith("add.py")
    run(scenario)


def test_several_roots_show_as_top_level_folders(compiled, tui_variants):
    async def scenario():
        async with started([compiled, tui_variants]) as (app, pilot):
            tree = app.query_one(Browser).tree
            assert [str(n.label) for n in tree.root.children] == [compiled.name, tui_variants.name]
            assert "matmul/default.w4/sm_90a" in leaves(app)
    run(scenario)


def test_tree_can_be_hidden_and_shown(compiled):
    async def scenario():
        async with started([compiled]) as (app, pilot):
            await open_snapshot(app, pilot, "add/default/sm_90a")
            browser = app.query_one(Browser)
            await pilot.press("b")
            assert not browser.display
            await pilot.press("b")
            assert browser.display
    run(scenario)


GOLDEN = Path(__file__).resolve().parents[2] / "snapshots" / "add" / "default" / "sm_80"
SWEEP = [f"default.w{w}.s{s}.GROUP_M={g}" for w in (4, 8) for s in (2, 3) for g in (4, 8)]


def sweep_root(tmp_path, variants=SWEEP) -> Path:
    """The committed add/default/sm_80 golden, copied under the long variant names a sweep makes."""
    root = tmp_path / "sweep"
    for variant in variants:
        snap = root / "add" / variant / "sm_80"
        shutil.copytree(GOLDEN, snap)
        meta = json.loads((snap / "irscope.json").read_text())
        meta["variant"] = variant
        (snap / "irscope.json").write_text(json.dumps(meta))
    return root


def test_long_sibling_variants_show_what_tells_them_apart_and_the_tree_widens(tmp_path):
    async def scenario():
        async with started([sweep_root(tmp_path)], size=(160, 48)) as (app, pilot):
            browser = app.query_one(Browser)
            [kernel] = browser.tree.root.children
            assert str(kernel.label) == "add default.…"  # the prefix every variant shares, once
            assert [str(n.label) for n in kernel.children] == ["…" + v.removeprefix("default.") for v in SWEEP]
            text = screen_text(app)
            assert all(v.removeprefix("default.") in text for v in SWEEP)  # each one whole on screen
            assert browser.outer_size.width == Browser.WIDTH  # short enough now to fit as they always did
            auto = browser.outer_size.width
            await pilot.press("greater_than_sign")
            await settle(pilot)
            assert browser.outer_size.width == auto + Browser.WIDTH_STEP
            await pilot.press("less_than_sign", "less_than_sign")
            await settle(pilot)
            assert browser.outer_size.width == auto - Browser.WIDTH_STEP
            for _ in range(20):  # never past half the screen, never to nothing
                await pilot.press("greater_than_sign")
            await settle(pilot)
            assert browser.outer_size.width == 80
    run(scenario)


def test_the_tree_widens_to_names_with_nothing_in_common(tmp_path):
    names = ["m128n256k64.w8.s4", "m64n128k32.w4.s3.BLOCK_K=64.GROUP_M=8"]

    async def scenario():
        async with started([sweep_root(tmp_path, names)], size=(160, 48)) as (app, pilot):
            browser = app.query_one(Browser)
            assert Browser.WIDTH < browser.outer_size.width <= 80
            assert all(name in screen_text(app) for name in names)
    run(scenario)


def test_enter_in_the_filter_puts_the_cursor_on_the_first_match(tmp_path):
    async def scenario():
        async with started([sweep_root(tmp_path)]) as (app, pilot):
            tree = app.query_one(Browser).tree
            await pilot.press("ctrl+f", *"s3 GROUP_M=8", "enter")
            await settle(pilot)
            assert app.focused is tree
            assert tree.cursor_node.data.label == "add/default.w4.s3.GROUP_M=8/sm_80"
            await pilot.press("enter")
            await settle(pilot)
            assert app.view.snapshot.variant == "default.w4.s3.GROUP_M=8"
    run(scenario)


def test_an_empty_folder_says_how_to_compile_a_snapshot_not_to_choose_one(tmp_path):
    """The tree said `no snapshots found` while the reader said `Choose a snapshot in the tree`."""
    async def scenario():
        async with started([tmp_path], out=tmp_path / "out") as (app, pilot):
            text = screen_text(app)
            assert "no snapshots found" in text and "Choose a snapshot" not in text
            shown = "\n".join(app.view.main.document.lines)  # (the screen cuts the long test path)
            assert "No snapshots found in" in text and "Press c to compile one" in text
            assert f"irscope compile matmul --target sm_90a -o {tmp_path}" in shown
    run(scenario)
