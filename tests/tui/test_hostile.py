"""Hostile snapshot folders: the TUI shows them as damaged, never crashes, never shows a file outside them.

Every case is a copy of the committed golden snapshots/add/default/sm_80, changed one way, in one folder
beside an untouched copy; a secret file planted outside that folder carries a token that must never reach
the screen, whatever the snapshot's irscope.json, debug locations or symlinks point at.
"""
import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest

from irscope.tui.widgets.browser import Browser
from irscope.tui.screens.compare import CompareScreen

from .driver import open_snapshot, run, screen_text, settle, started

GOLDEN = Path(__file__).resolve().parents[2] / "snapshots" / "add" / "default" / "sm_80"
TOKEN = "SECRET-TOKEN-5d41402abc4b2a76"
FN = "add_kernel"


def _meta(snap: Path) -> dict:
    return json.loads((snap / "irscope.json").read_text())


def _write_meta(snap: Path, meta) -> None:
    (snap / "irscope.json").write_text(json.dumps(meta))


def _set(**fields):
    def change(snap, outside):
        meta = _meta(snap)
        meta.update(fields)
        _write_meta(snap, meta)
    return change


def _drop(*keys):
    def change(snap, outside):
        meta = _meta(snap)
        for k in keys:
            meta.pop(k)
        _write_meta(snap, meta)
    return change


def _source_file_outside(snap, outside):
    (snap / "source.py").unlink()
    meta = _meta(snap)
    meta["source_file"] = str(outside / "secret.py")
    _write_meta(snap, meta)


def _locations_name_outside(snap, outside):
    # No source.py, and the IR's debug locations (what Triton cache entries rely on) name the secret file.
    (snap / "source.py").unlink()
    meta = _meta(snap)
    meta.pop("source_file")
    for stage in ("ttir", "ttgir"):  # rewritten with their hashes, so only the locations are hostile
        path = snap / f"{FN}.{stage}"
        path.write_text(path.read_text().replace("kernels/add.py", str(outside / "secret.py")))
        meta["stages"][stage].update(sha256=hashlib.sha256(path.read_bytes()).hexdigest(),
                                     bytes=path.stat().st_size)
    _write_meta(snap, meta)


def _function_outside(snap, outside):
    # `function` names the stage files; ../ climbs out of the snapshot to the planted secret.ttir.
    meta = _meta(snap)
    meta["function"] = "../../../../outside/secret"
    meta["stages"] = {"ttir": {"file": "secret.ttir", "lines": 1}}
    _write_meta(snap, meta)


def _symlink(name):
    def change(snap, outside):
        (snap / name).unlink()
        os.symlink(outside / "secret.py", snap / name)
    return change


def _swap_stages(snap, outside):
    ttir, cubin = snap / f"{FN}.ttir", snap / f"{FN}.cubin"
    a, b = ttir.read_bytes(), cubin.read_bytes()
    ttir.write_bytes(b)
    cubin.write_bytes(a)


def _truncate(stage):
    def change(snap, outside):
        path = snap / f"{FN}.{stage}"
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 3])
    return change


def _garbage(stage):
    def change(snap, outside):
        (snap / f"{FN}.{stage}").write_bytes(bytes(range(256)) * 40 + b"loc(\"\x00\":1:")
    return change


# case -> (how the copy is changed, whether the tree must show it as damaged). None: either, for stage
# files that no longer match irscope.json's sha256 (a store that verifies hashes when it loads a
# snapshot makes them damaged in the tree; otherwise they open, under a warning naming the file).
CASES = {
    "format-text": (_set(format="1"), True),
    "resources-text": (_set(resources="x"), True),
    "resource-not-number": (_set(resources={"registers": "many", "shared": [1]}), True),
    "target-number": (_set(target=5), True),
    "target-name-list": (_set(target={"name": ["sm_80"]}), True),
    "options-list": (_set(compile_options=[4, 3]), True),
    "error-list": (_set(status="failed", error=["boom"]), True),
    "stages-list": (_set(stages=["ttir"]), True),
    "specialisation-junk": (_set(specialisation=["x", 5]), True),
    "kernel-number": (_set(kernel=7), True),
    "no-function": (_drop("function"), True),
    "meta-is-list": (lambda snap, outside: _write_meta(snap, [1, 2]), True),
    "function-outside": (_function_outside, True),
    "stage-symlink-outside": (_symlink(f"{FN}.ttgir"), True),
    "source-symlink-outside": (_symlink("source.py"), True),
    "log-symlink-outside": (_symlink("logs/ptxas.log"), True),
    "source-file-outside": (_source_file_outside, False),
    "locations-name-outside": (_locations_name_outside, False),
    "stages-swapped": (_swap_stages, None),
    "ttgir-truncated": (_truncate("ttgir"), None),
    "ptx-garbage": (_garbage("ptx"), None),
}


@pytest.fixture
def hostile(tmp_path):
    """root/add/default/sm_80 (the golden, untouched) beside root/<case>/default/sm_80 for every case;
    tmp/outside/ holds the secret (secret.py, secret.ttir) that no case may show."""
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = f"# {TOKEN}\nimport os\n{TOKEN} = 1\n" * 3
    (outside / "secret.py").write_text(secret)
    (outside / "secret.ttir").write_text(f'module {{ // {TOKEN} }}\n#loc = loc("{outside / "secret.py"}":1:1)\n')
    root = tmp_path / "root"
    shutil.copytree(GOLDEN, root / "add" / "default" / "sm_80")
    for case, (change, _) in CASES.items():
        snap = root / case / "default" / "sm_80"
        shutil.copytree(GOLDEN, snap)
        meta = _meta(snap)
        meta["variant"] = case  # loadable cases get their own label: add/<case>/sm_80
        _write_meta(snap, meta)
        change(snap, outside)
    # a whole snapshot folder inside the root that is a symlink to one outside it
    shutil.copytree(GOLDEN, outside / "snap")
    (root / "linked" / "default").mkdir(parents=True)
    os.symlink(outside / "snap", root / "linked" / "default" / "sm_80")
    return root


def _entries(app):
    return {e.path.parent.parent.name: e for e in app.query_one(Browser).entries}


def _rendered(app) -> str:
    """Everything the app shows or holds to show: the screen's lines, every widget's render, the
    documents the reader made, and the notifications."""
    parts = [screen_text(app)]
    for widget in app.screen.walk_children(with_self=True):
        try:
            parts.append(str(widget.render()))
        except Exception:  # noqa: BLE001 - some widgets only render inside a layout pass
            pass
    for data in app.view.data.values():
        parts.extend(data.document.lines)
    parts.extend(f"{n.title} {n.message}" for n in app._notifications)
    return "\n".join(parts)


@pytest.mark.slow
def test_hostile_snapshots_show_as_damaged_and_never_leak_a_file_outside(hostile):
    async def scenario():
        async with started([hostile]) as (app, pilot):
            entries = _entries(app)
            # The symlinked folder: damaged here, or not even listed by a store that skips symlinks.
            linked = entries.pop("linked", None)
            assert linked is None or not linked.ok
            assert set(entries) == set(CASES) | {"add"}
            for case, (_, damaged) in CASES.items():
                entry = entries[case]
                if damaged is not None:
                    assert (entry.snapshot is None) == damaged, (case, entry.error)
                if entry.snapshot is None:
                    assert entry.error, case
            assert entries["add"].ok
            bad = sum(e.snapshot is None for case, e in entries.items() if case in CASES)
            bad += linked is not None
            assert f"{len(CASES) + 1 - bad + (linked is not None)} snapshots in root, {bad} damaged" in app.sub_title
            assert "✗" in screen_text(app) and TOKEN not in _rendered(app)

            # Every damaged entry: Enter says why, opens nothing, and the app lives on.
            tree = app.query_one(Browser).tree
            for case in CASES:
                if entries[case].ok:
                    continue
                node = next(n for n in _nodes(tree.root) if n.data is entries[case])
                tree.focus()
                tree.move_cursor(node)
                await pilot.press("enter")
                await settle(pilot)
                assert app.view.snapshot is None, case
                assert entries[case].error in "\n".join(app.view.main.document.lines), case  # why, in the reader
                assert "✗ damaged" in screen_text(app)  # its one tab
            assert TOKEN not in _rendered(app)

            # Every loadable hostile case: each tab shown, the Python tab never the planted file.
            for case in CASES:
                if not entries[case].ok:
                    continue
                await open_snapshot(app, pilot, f"add/{case}/sm_80")
                for k in range(1, len(app.view.stages) + 1):
                    await pilot.press(str(k))
                    await settle(pilot)
                    assert TOKEN not in _rendered(app), (case, app.view.stage)
                if case in ("source-file-outside", "locations-name-outside"):
                    assert "python" not in app.view.stages
                # a comparison with the good snapshot reads both sides' stages
                app.marked = entries["add"].snapshot
                await pilot.press("d")
                await settle(pilot)
                assert isinstance(app.screen, CompareScreen)
                for _ in app.screen.pairs:
                    await pilot.press("]")
                    await settle(pilot)
                    assert TOKEN not in screen_text(app)
                await pilot.press("escape")
                await settle(pilot)

            # The good snapshot beside them still opens and reads as it always did.
            await open_snapshot(app, pilot, "add/default/sm_80")
            assert app.view.stages == ["python", "ttir", "ttgir", "ptx", "sass"] and not app.view.problems
            await pilot.press("3")
            await settle(pilot)
            assert app.view.stage == "ttgir" and "module attributes" in screen_text(app)
            assert TOKEN not in _rendered(app)
    run(scenario)


def test_a_changed_stage_file_is_shown_under_a_warning_naming_it(hostile):
    async def scenario():
        async with started([hostile]) as (app, pilot):
            entry = _entries(app)["ttgir-truncated"]
            if not entry.ok:  # the store checked the hashes as it loaded the snapshot
                assert f"{FN}.ttgir" in entry.error
                return
            await open_snapshot(app, pilot, "add/ttgir-truncated/sm_80")
            await settle(pilot)
            assert any(f"{FN}.ttgir" in str(n.message) for n in app._notifications)
            assert app.view.stage == "ttgir" and "ttgir" in app.view.problems
            assert "damaged" in screen_text(app) and f"{FN}.ttgir" in screen_text(app)
    run(scenario)


def test_one_snapshot_folder_as_the_root_opens_in_the_reader(hostile):
    async def scenario():
        async with started([hostile / "add" / "default" / "sm_80"]) as (app, pilot):
            assert app.view.snapshot is not None and app.view.snapshot.label == "add/default/sm_80"
            assert app.view.stage == "ttgir"
        async with started([hostile / "format-text" / "default" / "sm_80"]) as (app, pilot):
            assert app.view.snapshot is None
            assert any("format" in str(n.message) for n in app._notifications)
    run(scenario)


def _nodes(node):
    for child in node.children:
        yield child
        yield from _nodes(child)


def test_a_kernel_file_named_in_this_session_is_the_one_python_file_shown_from_outside(hostile, tmp_path):
    # What the compile dialog records for a `FILE.py:FUNCTION` it compiled; nothing a snapshot says.
    mine = tmp_path / "mine.py"
    mine.write_text("# the kernel I typed in the compile dialog\n")

    async def scenario():
        async with started([hostile]) as (app, pilot):
            snap = _entries(app)["source-file-outside"].path
            await open_snapshot(app, pilot, "add/source-file-outside/sm_80")
            assert "python" not in app.view.stages
            app.trusted_sources[snap] = mine
            await open_snapshot(app, pilot, "add/default/sm_80")
            await open_snapshot(app, pilot, "add/source-file-outside/sm_80")
            assert app.view.stages[0] == "python"
            await pilot.press("1")
            await settle(pilot)
            assert "the kernel I typed" in screen_text(app) and TOKEN not in _rendered(app)
    run(scenario)


def test_markup_in_a_snapshots_fields_is_shown_as_text_never_run_or_rendered(tmp_path):
    """A snapshot's fields are untrusted: Textual markup in them ran an action when its notification was
    clicked (`[@click=app.screenshot(...)]` wrote a file where the snapshot said), and `[/]` crashed the
    resource panel (MarkupError). They are shown as the characters they are."""
    click = f"[@click=app.screenshot('pwned.svg','{tmp_path / 'pw'}')]KCLICK[/]"
    root = tmp_path / "root"
    snap = root / "add" / "default" / "sm_80"
    shutil.copytree(GOLDEN, snap)
    meta = _meta(snap)
    meta["kernel"] = click
    meta["target"]["name"] = "sm_80[/]"
    meta["compile_options"]["constexprs"] = {"BLOCK_SIZE": "[link=file:///etc/passwd]1024[/link]"}
    _write_meta(snap, meta)

    async def scenario():
        async with started([root]) as (app, pilot):
            entry = app.query_one(Browser).entries[0]
            assert entry.ok, entry.error
            await open_snapshot(app, pilot, entry.label)
            await pilot.press("m")  # "A = <label>": the label holds the kernel field
            await settle(pilot)
            shown = _rendered(app)
            assert "KCLICK" in shown and "[@click=" in shown  # the characters, not an action
            assert all(not n.markup for n in app._notifications)
            screen = screen_text(app)
            assert "target       sm_80[/]" in screen and "BLOCK_SIZE=[li" in screen  # the panel, as typed
            assert app.is_running
            await pilot.press("ctrl+c")  # Textual's own notification keeps its markup
            await settle(pilot)
            assert [n.markup for n in app._notifications if "ctrl+q" in n.message] == [True]
    run(scenario)
    assert not (tmp_path / "pw").exists()


def test_control_characters_in_a_snapshot_are_shown_never_sent_to_the_terminal(tmp_path):
    """Rich keeps ESC in a Text: an OSC 52 (clipboard) in a stage's text, a kernel name or a folder name
    reached the terminal from the code view, the tree or a notification. They show as control pictures."""
    osc = "\x1b]52;c;SGFja2Vk\x07"
    root = tmp_path / "root"
    snap = root / "add" / "default" / "sm_80"
    shutil.copytree(GOLDEN, snap)
    meta = _meta(snap)
    meta["kernel"] = "add" + osc
    ttir = snap / f"{FN}.ttir"
    ttir.write_text(f"// {osc}\n" + ttir.read_text())
    meta["stages"]["ttir"].update(sha256=hashlib.sha256(ttir.read_bytes()).hexdigest(), bytes=ttir.stat().st_size)
    _write_meta(snap, meta)

    async def scenario():
        async with started([root]) as (app, pilot):
            entry = app.query_one(Browser).entries[0]
            await open_snapshot(app, pilot, entry.label)
            await pilot.press("2")  # the ttir tab
            await settle(pilot)
            await pilot.press("m")
            await settle(pilot)
            shown = _rendered(app)
            assert "\x1b" not in shown and "\x07" not in shown
            assert "␛]52;c;SGFja2Vk␇" in shown
    run(scenario)


def _layouts_json(name: str, attr: str) -> dict:
    """A layouts.json (docs/snapshot-format.md) of one blocked encoding, as irscope layouts --compute writes it."""
    bases = {"register": [[1], [2], [512]], "lane": [[4], [8], [16], [32], [64]], "warp": [[128], [256]], "block": []}
    layout = {"shape": [1024], "status": "ok", "by": "triton", "bases": bases, "out_dims": ["dim0"]}
    return {"format": 1, "computed_by": "triton 3.9.0", "note": "",
            "encodings": [{"name": name, "attr": attr, "kind": "blocked", "space": "distributed", "lines": [12],
                           "layouts": [layout]}]}


def test_markup_and_escapes_in_layouts_json_are_shown_as_text_on_the_layout_screen(tmp_path):
    """layouts.json is the snapshot's: an encoding named `[/]` was a MarkupError in the layout screen's
    list that ended the app, `[bold]` was rendered, and an ESC in an attribute reached the terminal."""
    root = tmp_path / "root"
    snap = root / "add" / "default" / "sm_80"
    shutil.copytree(GOLDEN, snap)
    attr = "#ttg.blocked<{}> \x1b]52;c;SGFja2Vk\x07 [link=file:///etc/passwd]x[/link]"
    (snap / "layouts.json").write_text(json.dumps(_layouts_json("[/][bold]B[/bold]", attr)))

    async def scenario():
        from irscope.tui.screens.layouts import LayoutsScreen
        async with started([root]) as (app, pilot):
            await open_snapshot(app, pilot, "add/default/sm_80")
            await pilot.press("L")
            await settle(pilot)
            assert app.is_running and isinstance(app.screen, LayoutsScreen)
            screen = screen_text(app)
            assert "[/][bold]B[/bold] 1024" in screen  # the name in the list, as written
            assert "␛]52;c;SGFja2Vk" in screen and "[link=file:///etc/passwd]x[/link]" in screen
            assert "\x1b]52" not in _rendered(app)
    run(scenario)


def test_a_stage_of_one_huge_line_scrolls_sideways_with_its_search_matches_where_they_are(tmp_path):
    """A stage of one 20 MB line, searched: every repaint lexed, copied and searched the whole line (seconds
    a key). Only the columns on screen are read now; the matches are still marked at their columns."""
    import time
    root = tmp_path / "root"
    snap = root / "add" / "default" / "sm_80"
    shutil.copytree(GOLDEN, snap)
    meta = _meta(snap)
    ttir = snap / f"{FN}.ttir"
    ttir.write_text("é " + "%x = arith.addi %a, %b ; " * 800_000 + "\n")  # 20 MB; not ASCII
    meta["stages"]["ttir"].update(sha256=hashlib.sha256(ttir.read_bytes()).hexdigest(), bytes=ttir.stat().st_size)
    _write_meta(snap, meta)

    async def scenario():
        async with started([root]) as (app, pilot):
            await open_snapshot(app, pilot, "add/default/sm_80")
            await pilot.press("2", "slash", *"addi", "enter")
            await settle(pilot)
            view = app.view.main
            assert view.stage == "ttir" and view.matches == [0]
            began = time.perf_counter()
            for _ in range(4):
                await pilot.press("l")
                await pilot.pause()
            assert time.perf_counter() - began < 8  # (a second a key on a loaded machine is already slow)
            x = int(view.scroll_offset.x)
            assert x > 0
            strip = view.render_line(0)
            gutter = view._gutter_width()
            cells = "".join(seg.text for seg in strip)[gutter:]
            line = view.document.lines[0]
            assert cells.rstrip() == line[x:x + len(cells)].rstrip()  # the columns scrolled to, not others
            match = view._style("match")
            marked, col = [], 0
            for seg in strip:
                if seg.style is not None and seg.style.bgcolor == match.bgcolor and col >= gutter:
                    marked.append((col - gutter + x, seg.text))
                col += len(seg.text)
            assert len(marked) >= 2 and all(t in "addi" and line[c:c + len(t)] == t for c, t in marked)
    run(scenario)


def test_control_characters_in_a_kernel_name_stay_visible_on_the_compare_screen(tmp_path):
    """The compare screen's title (A and B's labels, the axes they differ in) let an ESC in a snapshot's
    kernel name or constexpr reach the terminal."""
    osc = "\x1b]52;c;SGFja2Vk\x07"
    root = tmp_path / "root"
    plain, hostile = root / "add" / "default" / "sm_80", root / "odd" / "default" / "sm_80"
    shutil.copytree(GOLDEN, plain)
    shutil.copytree(GOLDEN, hostile)
    meta = _meta(hostile)
    meta["kernel"] = "add" + osc
    meta["compile_options"]["constexprs"] = {"BLOCK_SIZE": "1024" + osc}
    _write_meta(hostile, meta)

    async def scenario():
        async with started([root]) as (app, pilot):
            labels = [e.label for e in app.query_one(Browser).entries]
            assert len(labels) == 2 and all(e.ok for e in app.query_one(Browser).entries), labels
            await open_snapshot(app, pilot, "add/default/sm_80")
            await pilot.press("m")
            await open_snapshot(app, pilot, next(lb for lb in labels if lb != "add/default/sm_80"))
            await pilot.press("d")
            await settle(pilot)
            assert isinstance(app.screen, CompareScreen)
            shown = _rendered(app)
            assert "\x1b" not in shown and "\x07" not in shown
            assert "add␛]52;c;SGFja2Vk" in screen_text(app)
    run(scenario)
