"""The diff engine (irscope.diff.unified) on real stages of the committed goldens: the form of
difflib's unified diff, never a longer diff than difflib's, a shorter one where the aligner can, a patch
that turns A into B; and the one Delta type."""
import difflib
import re
from pathlib import Path

import pytest

from irscope.diff.delta import Delta
from irscope.diff.unified import CHECKED_LINES, unified_diff
from irscope.ir.normalize import normalize
from irscope.store.snapshot import load_snapshot

GOLDENS = Path(__file__).resolve().parent.parent / "snapshots"


def _lines(folder: str, stage: str) -> list[str]:
    return normalize(stage, load_snapshot(GOLDENS / folder).read(stage)).splitlines()


def _difflib(a, b, n=3) -> list[str]:
    return list(difflib.unified_diff(a, b, "A", "B", lineterm="", n=n))


def _changed(diff) -> int:
    return sum(line[:1] in "+-" for line in diff[2:])


def _apply(a: list[str], diff: list[str]) -> list[str]:
    """A unified diff applied to `a`, checking every context and removed line against it."""
    out, pos = [], 0
    for line in diff[2:]:
        m = re.match(r"@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@$", line)
        if m:
            start = int(m.group(1)) - (m.group(2) != "0")
            out += a[pos:start]
            pos = start
        elif line[0] in " -":
            assert a[pos] == line[1:], f"line {pos + 1} of A is not {line[1:]!r}"
            pos += 1
            if line[0] == " ":
                out.append(line[1:])
        else:
            out.append(line[1:])
    return out + a[pos:]


def test_a_small_change_reads_exactly_as_difflib_prints_it():
    a, b = _lines("add/default/sm_80", "ttgir"), _lines("add/default/sm_90a", "ttgir")
    assert a != b
    for n in (0, 2, 3):
        assert unified_diff(a, b, "A", "B", n) == _difflib(a, b, n)


def test_equal_and_empty_sides_follow_difflibs_headers_and_ranges():
    a = _lines("add/default/sm_80", "ptx")
    assert unified_diff(a, a, "A", "B") == []
    assert unified_diff([], [], "A", "B") == []
    assert unified_diff([], a[:2], "A", "B") == _difflib([], a[:2]) == ["--- A", "+++ B", "@@ -0,0 +1,2 @@",
                                                                          "+" + a[0], "+" + a[1]]
    assert unified_diff(a[:1], [], "A", "B") == _difflib(a[:1], [])


@pytest.mark.parametrize("stage,a,b", [
    ("ptx", "matmul/default/sm_90a", "matmul/default.w2/sm_90a"),  # num_warps 4 -> 2
    ("ptx", "attention/default/sm_120a", "attention/default/sm_80"),
    ("sass", "matmul/default.s1/sm_90a", "matmul/default.w2/sm_90a"),
    ("amdgcn", "matmul.tma/default/gfx90a", "matmul.tma/default/gfx942"),
])
def test_repetitive_ir_gets_a_shorter_diff_than_difflibs_autojunk_gives(stage, a, b):
    la, lb = _lines(a, stage), _lines(b, stage)
    ours, theirs = unified_diff(la, lb, "A", "B"), _difflib(la, lb)
    assert _changed(ours) < _changed(theirs)
    assert _apply(la, ours) == lb


@pytest.mark.parametrize("stage,a,b", [
    ("ttgir", "matmul/default/sm_90a", "matmul/default.w2/sm_90a"),
    ("sass", "softmax/default/sm_100a", "softmax/default/sm_80"),
    ("ttir", "blur/default/sm_90a", "blur/default/gfx942"),
])
def test_a_diff_is_never_longer_than_difflibs_and_turns_a_into_b(stage, a, b):
    la, lb = _lines(a, stage), _lines(b, stage)
    ours = unified_diff(la, lb, "A", "B", 2)
    assert _changed(ours) <= _changed(_difflib(la, lb, 2))
    assert _apply(la, ours) == lb


def test_a_stage_past_the_checked_size_is_diffed_by_the_aligner_alone_and_still_patches():
    import sys
    sys.path.insert(0, str(GOLDENS.parent / "benchmarks"))
    from tui_speed import grow
    a = grow(load_snapshot(GOLDENS / "matmul/default/sm_90a").read("ttgir"), CHECKED_LINES + 500).splitlines()
    b = list(a)
    b[100] += " // changed"
    del b[7000:7003]
    b.insert(CHECKED_LINES, "inserted")
    diff = unified_diff(a, b, "A", "B")
    assert _changed(diff) == 2 + 3 + 1  # a changed line (- and +), three deleted, one inserted
    assert sum(line.startswith("@@") for line in diff) == 3
    assert _apply(a, diff) == b


def test_delta_change_is_b_minus_a_for_numbers_only():
    assert Delta("registers", 26, 30).change == 4
    assert Delta("occupancy (warps/SM)", 0.5, 0.25).change == -0.25
    assert Delta("launchable", True, False).change is None
    assert Delta("ptx.wgmma", None, 3).change is None
    assert Delta("stage sass", True, False) == Delta("stage sass", True, False)
