"""The pass timeline screen on a real `--passes` compile: opening it, stepping, a pass's diff, hiding the
passes that changed nothing, the pass where a pattern first appears, the pass that introduced a line,
and the message for a snapshot compiled without --passes."""
from pathlib import Path

import pytest

from irscope.passes import find_pattern, load_timeline
from irscope.store.snapshot import load_snapshot
from irscope.tui.app import IrscopeApp
from irscope.tui.widgets.code_view import CodeView
from irscope.tui.widgets.pass_diff_view import PassDiffView
from irscope.tui.model.steps import is_changing, stage_step, step_diff
from irscope.tui.screens.timeline import TimelineScreen

from .driver import open_snapshot, run, screen_text, settle, started

SNAP = "matmul/default/sm_90a"
ASYNC_COPY = "ttg.async_copy_global_to_local"


@pytest.fixture(scope="session")
def passes_root(tmp_path_factory):
    """matmul for sm_90a compiled with --passes, and add for sm_90a compiled without (no timeline)."""
    from irscope.harness.batch import Point, compile_points
    from irscope.spec.kernel import CompileOptions

    out = tmp_path_factory.mktemp("timeline")
    outcomes = compile_points([Point("matmul", "sm_90a", CompileOptions(passes="mlir")), Point("add", "sm_90a")], out)
    assert all(o.ok for o in outcomes), outcomes
    return out


@pytest.fixture(scope="session")
def timeline(passes_root):
    return load_timeline(load_snapshot(passes_root / SNAP))


def test_the_reader_stages_are_the_ir_after_their_last_pass(passes_root, timeline):
    snap = load_snapshot(passes_root / SNAP)
    for stage in ("ttir", "ttgir"):
        anchor, _ = stage_step(timeline, stage)
        assert anchor.stage == stage and timeline.text(anchor.after).rstrip() == snap.read(stage).rstrip()
    anchor, why = stage_step(timeline, "llir")  # MLIR passes only: llir's steps are the LLVM dialect
    assert anchor is None and "--passes all" in why
    assert stage_step(timeline, "source")[0] is None and stage_step(timeline, "ptx")[0] is None
    unroll = step_named(timeline, "triton-loop-unroll")
    diff = step_diff(timeline, unroll)
    assert diff.rows and all(r.kind == "equal" for r in diff.rows) and diff.left.lines == diff.right.lines


async def search(app, pilot, pattern: str) -> None:
    """`/`, the pattern, Enter (set rather than typed: Pilot takes ~0.2 s a key on a busy machine)."""
    await pilot.press("slash")
    app.focused.value = pattern
    await pilot.press("enter")
    await settle(pilot)


async def open_timeline(app, pilot, key="p") -> TimelineScreen:
    await pilot.press(key)
    await settle(pilot)
    assert isinstance(app.screen, TimelineScreen), [str(n.message) for n in app._notifications]
    return app.screen


def step_named(tl, name, part=""):
    return next(s for s in tl.steps if s.name == name and s.part == part)


def changed_lines(view: PassDiffView, side="right") -> list[str]:
    doc = view.right if side == "right" else view.left
    kinds = ("insert", "replace") if side == "right" else ("delete", "replace")
    return [doc.lines[getattr(r, side)] for r in view.rows if r.kind in kinds and getattr(r, side) is not None]


def test_opens_at_the_stage_being_read_and_steps_through_the_passes(passes_root, timeline):
    async def scenario():
        async with started([passes_root]) as (app, pilot):
            await open_snapshot(app, pilot, SNAP)
            assert app.view.stage == "ttgir"
            screen = await open_timeline(app, pilot)
            step_list = screen.step_list
            assert [s.n for s in step_list.shown] == [s.n for s in timeline.steps]
            first_ttgir = next(s for s in timeline.steps if s.stage == "ttgir")
            assert screen.current.n == first_ttgir.n and step_list.current.n == first_ttgir.n
            text = screen_text(app)
            assert f"{len(timeline.steps)} steps" in text and f"#{first_ttgir.n} " in text
            # every row: number, stage, pass, change; a pass that changed nothing says so, dimmed
            unroll = step_named(timeline, "triton-loop-unroll")
            row = step_list.get_option(str(unroll.n)).prompt
            assert "triton-loop-unroll" in row.plain and row.plain.rstrip().endswith("no change")
            assert any("dim" in str(span.style) for span in row.spans)
            # down: the next step, and its diff
            await pilot.press("down")
            await settle(pilot)
            assert screen.current.n == first_ttgir.n + 1
            assert f"#{first_ttgir.n + 1} " in screen_text(app)
            # ] and [: the next and previous pass that changed the IR, skipping the others
            start = screen.current.n
            await pilot.press("right_square_bracket")
            await settle(pilot)
            landed = screen.current
            assert is_changing(landed) and landed.n > start
            assert not any(is_changing(s) for s in timeline.steps[start + 1:landed.n])
            await pilot.press("right_square_bracket", "left_square_bracket")
            await settle(pilot)
            assert screen.current.n == landed.n
            await pilot.press("escape")
            assert not isinstance(app.screen, TimelineScreen)
    run(scenario)


@pytest.mark.slow
def test_the_pipeliner_step_shows_the_async_copies_it_added(passes_root, timeline):
    lower = step_named(timeline, "tritongpu-pipeline", "LowerLoops")

    async def scenario():
        async with started([passes_root]) as (app, pilot):
            await open_snapshot(app, pilot, SNAP)
            screen = await open_timeline(app, pilot)
            await pilot.press("colon", *str(lower.n), "enter")
            await settle(pilot)
            assert screen.current.n == lower.n
            view = screen.diff_view
            assert view.mode == "unified" and view.display and not screen.ir_view.display
            added = [ln for ln in changed_lines(view) if ASYNC_COPY in ln]
            assert len(added) == lower.ops[ASYNC_COPY] == 2
            assert not any(ASYNC_COPY in ln for ln in view.left.lines)
            assert "compared canonically" in screen_text(app)  # the pipeliner's own dump is printed without names
            assert ASYNC_COPY in screen_text(app)  # scrolled to the first change, which has them in view
            await pilot.press("u")
            await settle(pilot)
            assert view.mode == "side" and "│" in screen_text(app)
            await pilot.press("i")
            await settle(pilot)
            ir = screen.ir_view
            assert ir.display and not view.display
            assert ir.document.lines == timeline.text(lower.after).splitlines()
            await pilot.press("i")
            await settle(pilot)
            assert view.display and view.mode == "side"
    run(scenario)


@pytest.mark.slow
def test_hiding_the_passes_that_changed_nothing(passes_root, timeline):
    async def scenario():
        async with started([passes_root]) as (app, pilot):
            await open_snapshot(app, pilot, SNAP)
            screen = await open_timeline(app, pilot)
            await pilot.press("c")
            await settle(pilot)
            changing = [s.n for s in timeline.steps if is_changing(s)]
            unchanged = [s.n for s in timeline.steps if s.status == "no change"]
            assert unchanged and changing
            assert [s.n for s in screen.step_list.shown] == changing
            assert [int(o.id) for o in screen.step_list.options] == changing
            assert f"showing those {len(changing)} only" in screen_text(app)
            assert is_changing(screen.current)
            before = screen.current.n
            await pilot.press("down")  # the next listed step is the next one that changed the IR
            await settle(pilot)
            assert screen.current.n == changing[changing.index(before) + 1] == screen.step_list.current.n
            await pilot.press("c")
            await settle(pilot)
            assert len(screen.step_list.options) == len(timeline.steps)
    run(scenario)


@pytest.mark.slow
def test_a_pattern_jumps_to_the_pass_where_it_first_appears(passes_root, timeline):
    blame = find_pattern(timeline, ASYNC_COPY)

    async def scenario():
        async with started([passes_root]) as (app, pilot):
            await open_snapshot(app, pilot, SNAP)
            screen = await open_timeline(app, pilot)
            await search(app, pilot, ASYNC_COPY)
            first = screen.current
            assert (first.name, first.part) == ("tritongpu-pipeline", "LowerLoops") and first == blame.first.step
            note = screen_text(app).splitlines()[-3]  # above the status line and the footer
            assert f"first appears #{first.n} tritongpu-pipeline › LowerLoops (2 lines)" in note
            assert f"disappears #{blame.gone.step.n} convert-triton-gpu-to-llvm" in note
            view = screen.diff_view
            assert view.pointed is not None and view.rows[view.pointed].kind != "equal"
            assert ASYNC_COPY in view.right.lines[view.rows[view.pointed].right]
            await search(app, pilot, "tt.no_such_op")
            assert screen.current == first  # stays
            assert any("never appears" in str(n.message) for n in app._notifications)
            await search(app, pilot, "cp(")
            assert any("bad pattern" in str(n.message) for n in app._notifications)
    run(scenario)


@pytest.mark.slow
def test_a_line_jumps_to_the_pass_that_introduced_it(passes_root, timeline):
    fence = step_named(timeline, "triton-nvidia-gpu-fence-insertion")
    pipeline_finish = step_named(timeline, "tritongpu-pipeline", "finish")

    async def scenario():
        async with started([passes_root]) as (app, pilot):
            await open_snapshot(app, pilot, SNAP)
            lines = app.view.main.document.lines
            app.view.main.go_to(next(i for i, ln in enumerate(lines) if "ttng.fence_async_shared" in ln))
            await pilot.pause()
            screen = await open_timeline(app, pilot, key="P")  # from the reader's ttgir
            assert screen.current.n == fence.n
            view = screen.diff_view
            pointed = view.rows[view.pointed]
            assert pointed.kind == "insert" and "ttng.fence_async_shared" in view.right.lines[pointed.right]
            assert f"introduced by #{fence.n} ttgir triton-nvidia-gpu-fence-insertion" in screen.note.plain
            # from the IR after a pass: Enter on a line
            await pilot.press("i")
            await settle(pilot)
            ir = screen.ir_view
            ir.focus()
            ir.go_to(next(i for i, ln in enumerate(ir.document.lines) if ASYNC_COPY in ln))
            await pilot.press("enter")
            await settle(pilot)
            assert screen.current.n == pipeline_finish.n  # by text: the pipeliner's last part printed it
            assert "intermediate dumps" in screen.note.plain
            assert ir.display and ir.marks and ASYNC_COPY in ir.document.lines[ir.cursor]
            # a location line is no operation
            ir.go_to(next(i for i, ln in enumerate(ir.document.lines) if ln.startswith("#loc")))
            await pilot.press("P")
            await settle(pilot)
            assert screen.current.n == pipeline_finish.n
            assert any("only debug information" in str(n.message) for n in app._notifications)
            await pilot.press("escape")
            # the reader's source stage is before every pass
            await pilot.press("2")
            assert app.view.stage == "source"
            await pilot.press("P")
            await settle(pilot)
            assert not isinstance(app.screen, TimelineScreen)
            assert any("before the first pass" in str(n.message) for n in app._notifications)
    run(scenario)


def test_a_snapshot_without_a_timeline_says_how_to_record_one(passes_root):
    async def scenario():
        async with started([passes_root]) as (app, pilot):
            await open_snapshot(app, pilot, "add/default/sm_90a")
            await pilot.press("p")
            await settle(pilot)
            assert not isinstance(app.screen, TimelineScreen)
            messages = [str(n.message) for n in app._notifications]
            assert any("add/default/sm_90a has no pass timeline" in m and  # (the hint gives its --out too)
                       "irscope compile add --target sm_90a --out " in m and m.rstrip().endswith("--passes")
                       for m in messages), messages
            await pilot.press("P")
            await settle(pilot)
            assert not isinstance(app.screen, TimelineScreen)
    run(scenario)


@pytest.mark.slow
def test_timeline_screenshot_at_the_pipeliner(passes_root, snap_compare):
    async def before(pilot):
        await settle(pilot)
        await open_snapshot(pilot.app, pilot, SNAP)
        await pilot.press("p")
        await settle(pilot)
        await search(pilot.app, pilot, ASYNC_COPY)
        pilot.app.clear_notifications()
        await settle(pilot)

    app = IrscopeApp([passes_root], Path("irscope-snapshots"), kernels=["add", "matmul"])
    assert snap_compare(app, terminal_size=(160, 48), run_before=before)


def test_pass_names_from_the_index_are_shown_as_text_never_sent_to_the_terminal(passes_root, tmp_path):
    """passes/index.json is the snapshot's: an ESC in a pass's name, options or op names reached the
    terminal from the step list and the step's heading (and a BEL, dropped by Rich, shifted the columns)."""
    import json
    import shutil
    from .test_hostile import _rendered

    osc = "\x1b]52;c;SGFja2Vk\x07"
    copy = tmp_path / SNAP
    shutil.copytree(passes_root / SNAP, copy)
    index = copy / "passes" / "index.json"
    data = json.loads(index.read_text())
    first = data["steps"][0]
    name = first["name"]
    first.update(name=f"[/]{name}{osc}", options=f"[bold]o[/bold]{osc}", ops={f"tt.x{osc}": 1})
    index.write_text(json.dumps(data))

    async def scenario():
        async with started([tmp_path]) as (app, pilot):
            await open_snapshot(app, pilot, SNAP)
            await pilot.press("3")  # ttir: the timeline opens at its first pass, the one renamed
            await pilot.press("p")
            await settle(pilot)
            assert isinstance(app.screen, TimelineScreen) and app.screen.current.n == 0
            shown = _rendered(app)
            assert "\x1b" not in shown and "\x07" not in shown
            screen = screen_text(app)
            assert f"[/]{name}␛]52;c;SGFja2Vk␇" in screen and "[bold]o[/bold]␛]52" in screen and "tt.x␛]52" in screen
            rows = [ln for ln in screen.splitlines() if ln.startswith(("  0 ttir", "  1 ttir"))]
            assert len(rows) == 2 and rows[0].index("▕") == rows[1].index("▕")  # the columns line up
    run(scenario)
