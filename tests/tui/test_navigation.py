"""The navigator's plain-code parts (no Textual): where n/N, f/o and the highlighting prefetch go next."""
import subprocess
import sys

from irscope.tui.model.matches import match_index, next_match, prefetch_order
from irscope.tui.model.stages import next_landmark


def test_the_reading_and_match_models_do_not_import_textual():
    code = ("import sys, irscope.tui.model.reading, irscope.tui.model.matches; "
            "sys.exit(any(m in sys.modules for m in ('textual', 'triton')))")
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_next_match_walks_the_matching_lines_both_ways_and_wraps():
    lines = [3, 7, 20]
    assert next_match(lines, 0) == 3 and next_match(lines, 3) == 7 and next_match(lines, 20) == 3
    assert next_match(lines, 7, forward=False) == 3 and next_match(lines, 3, forward=False) == 20
    assert next_match([], 5) is None
    assert match_index(lines, 7) == 2 and match_index(lines, 8) is None


def test_next_landmark_goes_to_the_next_function_or_loop_and_wraps():
    loops = [10, 40, 90]
    assert next_landmark(loops, 10, True) == 40 and next_landmark(loops, 95, True) == 10
    assert next_landmark(loops, 40, False) == 10 and next_landmark(loops, 5, False) == 90


def test_prefetch_highlights_the_page_below_then_the_page_above():
    assert prefetch_order(top=10, page=5, length=100, pages=1) == [15, 16, 17, 18, 19, 9, 8, 7, 6, 5]
    assert prefetch_order(top=0, page=5, length=7, pages=1) == [5, 6]


def test_every_bound_key_is_in_the_help_screen_and_in_docs_tui_md():
    """The help screen and docs/tui.md list every key (docs/tui.md: "Help: every key below"); the compile
    dialog's Ctrl+S and the layout screen were in neither or one of them."""
    import re
    from pathlib import Path

    from irscope.tui.app import IrscopeApp
    from irscope.tui.screens.compare import CompareScreen
    from irscope.tui.screens.compile import CompileScreen
    from irscope.tui.screens.help import HELP
    from irscope.tui.screens.layouts import LayoutsScreen
    from irscope.tui.screens.timeline import TimelineScreen
    from irscope.tui.widgets.browser import Browser
    from irscope.tui.widgets.code_view import CodeView
    from irscope.tui.widgets.diff_view import DiffView
    from irscope.tui.widgets.snapshot_view import SnapshotView
    from irscope.tui.widgets.step_list import StepList

    names = {"left_square_bracket": "[", "right_square_bracket": "]", "question_mark": "?", "slash": "/",
             "colon": ":", "less_than_sign": "<", "greater_than_sign": ">", "escape": "Esc", "pageup": "PgUp",
             "pagedown": "PgDn", "space": "Space", "home": "Home", "end": "End", "enter": "Enter", "tab": "Tab",
             "up": "↑", "down": "↓", "left": "←", "right": "→", "f1": "F1", "ctrl+f": "Ctrl+F", "ctrl+g": "Ctrl+G",
             "ctrl+s": "Ctrl+S"}

    def keys_named(text: str) -> set[str]:
        words = {w for span in re.findall(r"`([^`\n]+)`", text) for w in span.replace("↑↓", "↑ ↓").split()}
        return words | ({str(k) for k in range(1, 10)} if "`1`..`9`" in text else set())

    docs = (Path(__file__).resolve().parents[2] / "docs" / "tui.md").read_text()
    for where, text in (("the help screen", HELP), ("docs/tui.md", docs)):
        named = keys_named(text)
        for owner in (IrscopeApp, SnapshotView, CodeView, Browser, CompareScreen, TimelineScreen, StepList, DiffView,
                      LayoutsScreen, CompileScreen):
            for binding in owner.BINDINGS:
                for key in binding.key.split(","):
                    assert names.get(key, key) in named, f"{where} does not name {owner.__name__}'s key {key}"
