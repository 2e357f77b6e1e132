"""Shared fixtures: real compiles, done once per test session and shared by the tests that read them."""
from __future__ import annotations

import io
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="session")
def compiled(tmp_path_factory):
    """add and matmul compiled for all seven targets (one child process per compile, two at a time)."""
    from irscope.harness.batch import Point, compile_points
    from irscope.targets import CORE

    out = tmp_path_factory.mktemp("compiled")
    points = [Point(k, t) for k in ("add", "matmul") for t in CORE]
    outcomes = compile_points(points, out)
    failed = [o for o in outcomes if not o.ok]
    assert not failed, failed
    return out


@pytest.fixture
def cli(monkeypatch, tmp_path):
    """Run `irscope ARGS...` in-process; returns (exit code, stdout, stderr). Cwd is a fresh folder."""
    from irscope.cli import main

    monkeypatch.chdir(tmp_path)

    def run(*argv: str) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        code = main([str(a) for a in argv], out=out, err=err)
        return code, out.getvalue(), err.getvalue()

    return run


def pytest_collection_modifyitems(config, items):
    """Tests marked `gpu` run only where torch sees a CUDA GPU; elsewhere they skip, saying why."""
    gpu_items = [item for item in items if "gpu" in item.keywords]
    if not gpu_items:
        return
    try:
        import torch
        have_gpu = torch.cuda.is_available()
    except ImportError:
        have_gpu = False
    if not have_gpu:
        skip = pytest.mark.skip(reason="needs a CUDA GPU: torch.cuda.is_available() is False here")
        for item in gpu_items:
            item.add_marker(skip)
