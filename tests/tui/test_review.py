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


async def _compile_from_dialog(app, pilot, kernel: str, targets: str) -> None:
    from irscope.tui.screens.compile import CompileScreen
    await pilot.press("c")
    await settle(pilot)
    assert isinstance(app.screen, CompileScreen)
    app.screen.query_one("#field-kernel").value = kernel
    app.screen.query_one("#field-target").value = targets
    await pilot.pause()
    await pilot.press("ctrl+s")
    await pilot.pause()
    assert app.screen.busy


async def _submit_and_wait(pilot, dialog) -> None:
    """Press the dialog's compile key and wait (up to 2 minutes) until it is no longer busy."""
    import asyncio
    await pilot.press("ctrl+s")
    for _ in range(600):
        await asyncio.sleep(0.2)
        if not dialog.busy:
            break


def _compile_thread():
    import threading
    return next((t for t in threading.enumerate() if t.name == "irscope-compile"), None)


def test_a_compile_still_running_when_the_dialog_closes_lands_in_the_tree(compiled, tmp_path):
    # The compile was the dialog's worker: once Esc closed the dialog, its outcome went nowhere.
    import asyncio
    from irscope.tui.widgets.browser import Browser
    out = tmp_path / "new"

    async def scenario():
        async with started([compiled], out=out) as (app, pilot):
            before = len(app.query_one(Browser).entries)
            await _compile_from_dialog(app, pilot, "add", "sm_80")
            await pilot.press("escape")
            for _ in range(600):
                await asyncio.sleep(0.2)
                if len(app.query_one(Browser).entries) > before:
                    break
            await settle(pilot)
            labels = [e.label for e in app.query_one(Browser).entries]
            assert "add/default/sm_80" in [lb for lb in labels if lb.startswith("add/")] and \
                len(labels) == before + 1, labels
            assert (out / "add/default/sm_80/irscope.json").is_file()
            assert app.view.snapshot is not None and app.view.snapshot.path == out / "add/default/sm_80"
            said = [n.message for n in app._notifications]
            assert any(m.startswith("compiled 1 snapshot into") for m in said), said

    run(scenario)


def test_quitting_while_compiling_stops_the_compiles_instead_of_waiting_for_them(compiled, tmp_path):
    # Textual's thread worker was joined at exit: quitting waited for every target to compile.
    import time
    out = tmp_path / "quit"

    async def scenario():
        async with started([compiled], out=out) as (app, pilot):
            await _compile_from_dialog(app, pilot, "add", "all")
            await app.action_quit()

    run(scenario)
    thread = _compile_thread()
    start = time.monotonic()
    if thread is not None:
        thread.join(120)  # it stops at the next compile that ends, its siblings killed
    assert thread is None or not thread.is_alive()
    written = list(out.glob("add/*/*/irscope.json"))
    assert len(written) < 7, f"all {len(written)} compiles ran on after quitting ({time.monotonic() - start:.0f} s)"


PLAIN_KERNEL = '''import triton
import triton.language as tl


@triton.jit
def copy_kernel(src, dst, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(dst + offs, tl.load(src + offs, mask=offs < n), mask=offs < n)
'''


def test_a_plain_jit_function_compiles_from_the_dialog_with_its_typical_args(compiled, tmp_path):
    # The dialog had no field for typical argument values: a FILE.py:FUNCTION without a KernelSpec could
    # not compile from it, and the refusal's hint said `--arg`, which the dialog does not have.
    kernel = tmp_path / "plain.py"
    kernel.write_text(PLAIN_KERNEL)
    out = tmp_path / "new"

    async def scenario():
        async with started([compiled], out=out) as (app, pilot):
            await pilot.press("c")
            await settle(pilot)
            dialog = app.screen
            dialog.query_one("#field-kernel").value = f"{kernel}:copy_kernel"
            dialog.query_one("#field-target").value = "sm_80"
            dialog.query_one("#field-constexpr").value = "BLOCK=128"
            await _submit_and_wait(pilot, dialog)
            text = screen_text(app)
            assert "needs a typical value for argument" in text and "in args" in text and "--arg" not in text, text
            dialog.query_one("#field-arg").value = "src=*fp32 dst=*fp32 n=4096"
            await _submit_and_wait(pilot, dialog)
            await settle(pilot)
            assert "✓ copy_kernel/" in screen_text(app), screen_text(app)
            assert app.view.snapshot is not None and app.view.snapshot.fn_name == "copy_kernel"

    run(scenario)


def _tree_labels(app) -> list[str]:
    from irscope.tui.widgets.browser import Browser

    def walk(node):
        for child in node.children:
            yield child.label.plain
            yield from walk(child)
    return list(walk(app.query_one(Browser).tree.root))


def test_escapes_and_newlines_in_variant_and_kernel_names_show_in_the_tree_never_reach_the_terminal(tmp_path):
    # Sibling variants lose the dotted prefix they share; the rest of the name went to the tree as it was
    # (an OSC set the terminal's title), and a newline in a kernel name hid what followed it.
    from pathlib import Path
    golden = Path(__file__).resolve().parents[2] / "snapshots" / "add" / "default" / "sm_80"
    root = tmp_path / "root"
    for folder, kernel, variant in (("a1", "add", "p\x1b]0;PWNED\x07.\x1b[41mone"),
                                    ("a2", "add", "p\x1b]0;PWNED\x07.\x1b[41mtwo"),
                                    ("b", "add\nevil\tname", "default")):
        snap = root / folder / "default" / "sm_80"
        shutil.copytree(golden, snap)
        meta = json.loads((snap / "irscope.json").read_text())
        meta.update(kernel=kernel, variant=variant)
        (snap / "irscope.json").write_text(json.dumps(meta))

    async def scenario():
        async with started([root]) as (app, pilot):
            labels = _tree_labels(app)
            assert not any(c in label for label in labels for c in "\x1b\x07\n\t"), labels
            assert "…␛[41mone" in labels and "…␛[41mtwo" in labels, labels
            assert "add p␛]0;PWNED␇.…" in labels and "add␊evil␉name" in labels, labels
            assert "\x1b" not in screen_text(app)

    run(scenario)


@pytest.fixture(scope="module")
def with_passes(tmp_path_factory):
    """add for sm_80 compiled with --passes."""
    from irscope.harness.batch import Point, compile_points
    from irscope.spec.kernel import CompileOptions
    out = tmp_path_factory.mktemp("review-passes")
    assert all(o.ok for o in compile_points([Point("add", "sm_80", CompileOptions(passes="mlir"))], out))
    return out


def test_the_pass_timeline_names_a_kernel_with_an_escape_as_text_while_it_loads(with_passes, tmp_path):
    # " reading the pass timeline of LABEL…" sent an OSC in the kernel's name to the terminal (its title).
    from irscope.store.snapshot import load_snapshot
    from irscope.tui.screens.timeline import TimelineScreen
    copy = tmp_path / "add" / "default" / "sm_80"
    shutil.copytree(with_passes / "add/default/sm_80", copy)
    meta = json.loads((copy / "irscope.json").read_text())
    meta["kernel"] = "add\x1b]0;PWNED\x07"
    (copy / "irscope.json").write_text(json.dumps(meta))

    async def scenario():
        async with started([tmp_path]) as (app, pilot):
            await app.push_screen(TimelineScreen(load_snapshot(copy), stage="ttir"))
            title = str(app.screen.query_one("#timeline-title").render())  # before the load is heard of
            assert "reading the pass timeline of add␛]0;PWNED␇/default" in title and "\x1b" not in title, title
            await settle(pilot)
            assert "\x1b" not in screen_text(app)

    run(scenario)


def test_an_escape_in_a_debug_location_file_name_is_shown_on_the_status_line_never_sent(tmp_path):
    # The status line names the file an IR line came from ("via NAME:LINE", "NAME:LINE"), straight from the
    # snapshot's debug locations: an OSC there set the terminal's title.
    import hashlib
    from pathlib import Path
    golden = Path(__file__).resolve().parents[2] / "snapshots" / "add" / "default" / "sm_80"
    snap = tmp_path / "add" / "default" / "sm_80"
    shutil.copytree(golden, snap)
    meta = json.loads((snap / "irscope.json").read_text())
    for stage in ("ttir", "ttgir"):
        path = snap / meta["stages"][stage]["file"]
        data = path.read_bytes().replace(b"kernels/add.py", b"kernels/\x1b]0;PWNED\x07add.py")
        path.write_bytes(data)
        meta["stages"][stage].update(sha256=hashlib.sha256(data).hexdigest(), bytes=len(data))
    (snap / "irscope.json").write_text(json.dumps(meta))

    async def scenario():
        async with started([tmp_path]) as (app, pilot):
            await open_snapshot(app, pilot, "add/default/sm_80")
            assert app.view.stage == "ttgir"
            await pilot.press("colon", "2", "0", "enter")
            await settle(pilot)
            status = str(app.view.query_one("#status").render())
            assert "␛]0;PWNED" in status and "\x1b" not in status, status

    run(scenario)


def test_the_compile_dialog_never_fills_in_a_kernel_file_named_by_the_open_snapshot(tmp_path):
    # `c` filled the kernel field with the snapshot's irscope.json 'kernel', whatever it was: Enter then
    # imported (ran) a FILE.py the untrusted snapshot named, here a source.py shipped inside it.
    from pathlib import Path
    from irscope.tui.screens.compile import CompileScreen
    golden = Path(__file__).resolve().parents[2] / "snapshots" / "add" / "default" / "sm_80"
    for folder, kernel in (("named", "add"), ("file", "root/file/default/sm_80/source.py:add_kernel")):
        snap = tmp_path / "root" / folder / "default" / "sm_80"
        shutil.copytree(golden, snap)
        meta = json.loads((snap / "irscope.json").read_text())
        meta["kernel"] = kernel
        (snap / "irscope.json").write_text(json.dumps(meta))

    async def scenario():
        async with started([tmp_path / "root"]) as (app, pilot):
            for label, wanted in (("root/file/default/sm_80/source.py:add_kernel/default/sm_80", ""),
                                  ("add/default/sm_80", "add")):
                await open_snapshot(app, pilot, label)
                await pilot.press("c")
                await settle(pilot)
                assert isinstance(app.screen, CompileScreen)
                assert app.screen.query_one("#field-kernel").value == wanted
                assert app.screen.query_one("#field-target").value == "sm_80"
                await pilot.press("escape")
                await settle(pilot)

    run(scenario)


def test_a_big_python_file_is_highlighted_a_line_at_a_time_not_lexed_whole_on_first_paint():
    # source.py was lexed whole on first paint, at about 5 us a character: a 7 MB one in a snapshot held the
    # screen for 35 s. Past PYTHON_WHOLE characters it is lexed a line at a time, as the IR stages are.
    import time
    from irscope.tui.model.document import Document
    body = "@triton.jit\ndef k(x_ptr, n):\n    '''a docstring'''\n    return tl.load(x_ptr + n)  # load\n\n"
    big = Document(body * (3_000_000 // len(body)), "python")
    start = time.monotonic()
    first, last = big.text(0), big.text(len(big) - 2)
    assert time.monotonic() - start < 3
    assert first.plain == "@triton.jit" and first.spans and last.spans  # still highlighted
    small = Document('"""one\nstring"""\n', "python")  # under PYTHON_WHOLE: lexed whole, the string is one token
    assert small.text(1).spans and small.text(1).spans[0].style == small.text(0).spans[0].style


def test_a_refusal_hint_that_says_pass_a_flag_names_the_dialog_field_in_words():
    # ",," in targets: the hint read "pass the targets field sm_90a, a comma-separated list, or all".
    from pathlib import Path
    from irscope.errors import UsageError
    from irscope.tui.screens.compile import in_field_words, parse_request
    with pytest.raises(UsageError) as refused:
        parse_request({"kernel": "add", "target": ",,"}, Path("out"))
    assert in_field_words(refused.value.hint, message=False) == "type in targets: sm_90a, a comma-separated list, or all"


def test_a_stage_of_millions_of_lines_is_shown_up_to_max_lines_and_says_the_rest_is_not(tmp_path):
    # Each line costs the views some 60 bytes beyond its text: 20 MB of empty lines took 1.2 GB and 28 s to
    # open, and the 512 MiB a stage file may have would take tens of GB.
    import hashlib
    from pathlib import Path
    from irscope.store.snapshot import load_snapshot
    from irscope.tui.model.stages import MAX_LINES, python_text, read_stage
    golden = Path(__file__).resolve().parents[2] / "snapshots" / "add" / "default" / "sm_80"
    snap = tmp_path / "add" / "default" / "sm_80"
    shutil.copytree(golden, snap)
    meta = json.loads((snap / "irscope.json").read_text())
    ttgir = snap / meta["stages"]["ttgir"]["file"]
    data = b"x\x0c" * (MAX_LINES + 5)  # a form feed ends an IR line (str.splitlines) as a newline does
    ttgir.write_bytes(data)
    meta["stages"]["ttgir"].update(sha256=hashlib.sha256(data).hexdigest(), bytes=len(data))
    (snap / "irscope.json").write_text(json.dumps(meta))
    (snap / "source.py").write_text("pass\n" * (MAX_LINES + 3))

    snapshot = load_snapshot(snap)
    lines = read_stage(snapshot, "ttgir").splitlines()
    assert len(lines) == MAX_LINES + 1 and lines[-2] == "x"
    assert lines[-1].startswith("✗ … the rest of ttgir (10 characters) is not shown")
    source = python_text(snapshot).split("\n")
    assert len(source) == MAX_LINES + 2 and source[-2].startswith("✗ … the rest of python (15 characters)")


def test_d_on_the_compare_screen_and_l_on_the_layout_screen_do_not_stack_copies_of_them(compiled):
    # The app's `d` and `L` work everywhere, so on their own screens each press pushed another copy
    # (a burst of keys left a dozen screens for Esc to pop).
    from irscope.tui.screens.compare import CompareScreen

    async def scenario():
        async with started([compiled]) as (app, pilot):
            await open_snapshot(app, pilot, "add/default/sm_90a")
            for key in ("d", "d", "d", "L", "L", "L"):
                await pilot.press(key)
                await settle(pilot)
            assert [type(s) for s in app.screen_stack[1:]] == [CompareScreen, LayoutsScreen]
            await pilot.press("escape", "escape")
            await settle(pilot)
            assert len(app.screen_stack) == 1

    run(scenario)
