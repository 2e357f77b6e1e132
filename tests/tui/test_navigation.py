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
