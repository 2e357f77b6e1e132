"""Source to IR and back: a Python line marks what it became in every stage; an IR line marks its source."""
from .driver import open_snapshot, run, screen_text, settle, started

SNAP = "matmul/default/sm_90a"


def python_line(app, needle):
    return next(i for i, ln in enumerate(app.view.side.document.lines) if needle in ln)


def test_python_line_marks_the_lines_it_became_in_every_stage(compiled):
    async def scenario():
        async with started([compiled]) as (app, pilot):
            await open_snapshot(app, pilot, SNAP)
            view = app.view
            assert view.split
            dot = python_line(app, "acc = tl.dot(a, b, acc)")
            view.side.focus()
            view.side.go_to(dot)
            await settle(pilot)
            assert view.source_line == dot + 1
            marked = sorted(view.main.marks)
            assert marked and any("warp_group_dot" in view.main.document.lines[i] for i in marked)
            assert view.side.marks == {dot}
            status = screen_text(app).splitlines()[-2]
            assert f"matmul.py:{dot + 1}" in status
            for stage in ("ttgir", "llir", "ptx", "sass"):
                assert f"{stage} 0" not in status and f"{stage} " in status
            # Enter on the Python line jumps the stage to the first block of those lines.
            await pilot.press("enter")
            await settle(pilot)
            assert app.focused is view.main and view.main.cursor == marked[0]
            # Every stage marks its own lines for the same Python line.
            await pilot.press("7")
            assert view.stage == "sass" and view.main.marks
            assert all(view.main.document.lines[i].strip().startswith(("/*", "//##")) for i in view.main.marks)
    run(scenario)


def test_ir_line_marks_its_python_line_and_enter_goes_there(compiled):
    async def scenario():
        async with started([compiled]) as (app, pilot):
            await open_snapshot(app, pilot, SNAP)
            view = app.view
            load_b = python_line(app, "b = tl.load(b_ptrs")
            ir = next(i for i, ln in enumerate(view.main.document.lines)
                      if "ttg.async_copy_global_to_local %b_ptrs" in ln)
            view.main.focus()
            view.main.go_to(ir)
            await settle(pilot)
            assert view.source_line == load_b + 1
            assert view.side.marks == {load_b} and view.side.cursor == load_b
            assert ir in view.main.marks  # and the other lines from the same Python line
            await pilot.press("enter")
            assert app.focused is view.side and view.side.cursor == load_b
            # A line without a location says so.
            view.main.focus()
            view.main.go_to(0)
            await settle(pilot)
            assert "no source location" in screen_text(app)
    run(scenario)


def test_without_split_enter_switches_between_the_python_tab_and_the_stage(compiled):
    async def scenario():
        async with started([compiled], size=(100, 30)) as (app, pilot):
            await open_snapshot(app, pilot, SNAP)
            view = app.view
            assert not view.split
            ir = next(i for i, ln in enumerate(view.main.document.lines) if "tt.store" in ln)
            view.main.go_to(ir)
            await pilot.press("enter")
            await settle(pilot)
            assert view.stage == "python" and "tl.store" in view.main.document.lines[view.main.cursor]
            store = view.main.cursor
            await pilot.press("enter")  # back into the stage it was read from
            await settle(pilot)
            assert view.stage == "ttgir" and view.main.cursor <= ir
            assert view.data["ttgir"].map.source_of(view.main.cursor, view.source_file).line == store + 1
            await pilot.press("1")
            assert view.main.cursor == store and view.main.marks == {store}
    run(scenario)


def test_amd_snapshot_maps_too(compiled):
    async def scenario():
        async with started([compiled]) as (app, pilot):
            await open_snapshot(app, pilot, "matmul/default/gfx942")
            view = app.view
            dot = python_line(app, "acc = tl.dot(a, b, acc)")
            view.side.go_to(dot)
            await settle(pilot)
            await pilot.press("6")
            assert view.stage == "amdgcn"
            assert any("mfma" in view.main.document.lines[i] for i in view.main.marks)
    run(scenario)


FORM_FEED_KERNEL = '''import triton
import triton.language as tl
\x0c

@triton.jit
def ff_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(axis=0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(out_ptr + offs, x * 2, mask=offs < n)
'''


def test_a_form_feed_in_the_python_file_does_not_shift_the_lines_marked(tmp_path):
    """Python counts lines by newlines only; the reader split source.py with str.splitlines, which also
    breaks at a form feed (PEP 8 allows one between sections), so every line after it was marked one early:
    the IR of tl.store marked the tl.load above it."""
    from irscope.harness.batch import Point, compile_points
    from irscope.spec.kernel import CompileOptions, parse_assignment
    from irscope.tui.widgets.browser import Browser

    kernel = tmp_path / "ffk.py"
    kernel.write_text(FORM_FEED_KERNEL)
    args = tuple(parse_assignment(a, "argument") for a in ("x_ptr=*fp32", "out_ptr=*fp32", "n=1024"))
    options = CompileOptions(constexprs=(("BLOCK", 256),), args=args)
    (outcome,) = compile_points([Point(f"{kernel}:ff_kernel", "sm_80", options)], tmp_path / "out")
    assert outcome.ok, outcome

    async def scenario():
        async with started([tmp_path / "out"]) as (app, pilot):
            await open_snapshot(app, pilot, app.query_one(Browser).entries[0].label)
            view = app.view
            assert view.stage == "ttgir" and view.split
            store = next(i for i, ln in enumerate(view.main.document.lines) if "tt.store" in ln)
            view.main.focus()
            view.main.go_to(store)
            await settle(pilot)
            assert view.source_line == 9
            assert [view.side.document.lines[i] for i in view.side.marks] == \
                ["    tl.store(out_ptr + offs, x * 2, mask=offs < n)"]
            assert view.side.document.lines[2] == "␌"  # the form feed, shown as a character on its own line
    run(scenario)
