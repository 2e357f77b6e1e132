"""Driving the app in tests: start it on roots, wait for its workers, pick snapshots, read the screen."""
from __future__ import annotations

import asyncio
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Sequence

from irscope.tui.app import IrscopeApp
from irscope.tui.widgets.browser import Browser


def run(scenario) -> None:
    """Run an async test scenario (the suite does not depend on an asyncio pytest plugin)."""
    asyncio.run(scenario())


def make_app(roots: Sequence[Path], out: Path | None = None) -> IrscopeApp:
    return IrscopeApp(list(roots), out or Path("irscope-snapshots"), kernels=["add", "matmul"])


@asynccontextmanager
async def started(roots: Sequence[Path], size=(160, 48), out: Path | None = None):
    app = make_app(roots, out)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        yield app, pilot


async def settle(pilot) -> None:
    """Let messages, workers and refreshes finish."""
    await pilot.pause()
    for _ in range(3):
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()


def tree_node(app, label: str):
    tree = app.query_one(Browser).tree

    def walk(node):
        for child in node.children:
            if child.data is not None and child.data.label == label:
                return child
            found = walk(child)
            if found is not None:
                return found
        return None

    node = walk(tree.root)
    assert node is not None, f"{label} is not in the tree"
    return node


async def open_snapshot(app, pilot, label: str) -> None:
    """Select a snapshot in the tree the way a reader does: cursor onto it, Enter."""
    tree = app.query_one(Browser).tree
    tree.focus()
    node = tree_node(app, label)
    tree.move_cursor(node)
    await pilot.pause()
    await pilot.press("enter")
    await settle(pilot)
    assert app.view.snapshot is not None and app.view.snapshot.label == label


def screen_text(app) -> str:
    """What the terminal shows, as plain text."""
    return "\n".join(strip.text.rstrip() for strip in app.screen._compositor.render_strips())
