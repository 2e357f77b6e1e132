"""Fixtures for the TUI tests: a few more real snapshots beside the session's `compiled` ones."""
from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def tui_variants(tmp_path_factory):
    """matmul with num_warps=4 and add with alignment 1, on sm_90a: siblings along two compare axes."""
    from irscope.harness.batch import Point, compile_points
    from irscope.spec.kernel import CompileOptions

    out = tmp_path_factory.mktemp("tui-variants")
    points = [Point("matmul", "sm_90a", CompileOptions(num_warps=4)),
              Point("add", "sm_90a", CompileOptions(divisibility=((None, 1),)))]
    outcomes = compile_points(points, out)
    assert all(o.ok for o in outcomes), outcomes
    return out
