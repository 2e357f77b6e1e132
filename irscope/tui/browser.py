"""Browser: the tree of snapshots (kernel / variant / target) with a filter box above it."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import Input, Tree

from ..store import Snapshot
from .catalog import Entry, matches, sort_key


class Browser(Vertical):
    """Every snapshot under the roots, grouped by kernel and variant; type in the box to filter."""

    DEFAULT_CSS = """
    Browser { width: 26; height: 1fr; border-right: vkey $panel; }
    Browser.-hidden { display: none; }
    Browser > Input, Browser > Input:focus { border: none; height: 1; padding: 0 1; background: $boost; }
    Browser > Tree { height: 1fr; }
    """
    BINDINGS = [Binding("m", "mark", "Mark for compare")]

    @dataclass
    class SnapshotSelected(Message):
        """The reader chose a snapshot to read."""

        snapshot: Snapshot

    @dataclass
    class SnapshotMarked(Message):
        """The reader marked a snapshot as side A of the next comparison."""

        snapshot: Snapshot

    def __init__(self, roots: Sequence[Path] = (), **kwargs):
        super().__init__(**kwargs)
        self.roots = list(roots)
        self.entries: list[Entry] = []
        self.marked: Path | None = None
        self.current: Path | None = None

    def compose(self) -> ComposeResult:
        yield Input(placeholder="filter: kernel target…", id="filter")
        tree: Tree[Entry] = Tree("snapshots", id="snapshot-tree")
        tree.show_root = False
        tree.guide_depth = 2
        yield tree

    @property
    def tree(self) -> Tree[Entry]:
        return self.query_one("#snapshot-tree", Tree)

    @property
    def filter_text(self) -> str:
        return self.query_one("#filter", Input).value

    def set_entries(self, entries: Sequence[Entry]) -> None:
        self.entries = sorted(entries, key=sort_key)
        self.rebuild()

    def add_entry(self, entry: Entry, *, select: bool = True) -> None:
        """Add (or replace) one snapshot, e.g. one just compiled, and put the cursor on it."""
        self.entries = sorted([e for e in self.entries if e.path != entry.path] + [entry], key=sort_key)
        self.rebuild(cursor=entry.path if select else None)

    @property
    def snapshots(self) -> list[Snapshot]:
        return [e.snapshot for e in self.entries if e.snapshot is not None]

    def rebuild(self, cursor: Path | None = None) -> None:
        tree = self.tree
        keep = cursor or (tree.cursor_node.data.path if tree.cursor_node and tree.cursor_node.data else None)
        tree.clear()
        query = self.filter_text
        many_roots = len({e.root for e in self.entries}) > 1
        groups: dict[tuple, object] = {}
        target_node = None
        shown = 0
        for entry in self.entries:
            if query and not matches(entry, query):
                continue
            shown += 1
            kernel, variant, target = entry.parts
            parent = tree.root
            keys: list[tuple[str, str]] = []
            if many_roots:
                keys.append(("root", str(entry.root)))
            keys += [("kernel", kernel)] + ([("variant", variant)] if entry.ok else [])
            path_key: tuple = ()
            for kind, name in keys:
                path_key += (name,)
                node = groups.get(path_key)
                if node is None:
                    label = Text(name if kind != "root" else Path(name).name or name,
                                 style="bold" if kind in ("kernel", "root") else "")
                    node = parent.add(label, expand=True)
                    groups[path_key] = node
                parent = node
            leaf = parent.add_leaf(self._leaf_label(entry), data=entry)
            if keep is not None and entry.path == keep:
                target_node = leaf
        if not shown:
            tree.root.add_leaf(Text("no snapshots" + (" match" if query else " found"), style="dim"))
        if target_node is not None:
            self.call_after_refresh(tree.move_cursor, target_node)

    def _leaf_label(self, entry: Entry) -> Text:
        text = Text()
        if self.marked is not None and entry.path == self.marked:
            text.append("A ", style="bold reverse")
        if entry.snapshot is None:
            text.append("✗ ", style="red")
            text.append(entry.relative)
            return text
        if not entry.snapshot.ok:
            text.append("✗ ", style="red")
        text.append(entry.parts[2], style="bold" if entry.path == self.current else "")
        return text

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        self.rebuild()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.tree.focus()

    def on_tree_node_selected(self, event: Tree.NodeSelected) -> None:
        event.stop()
        entry = event.node.data
        if entry is None:
            return
        if entry.snapshot is None:
            self.app.notify(entry.error or "this folder is not a readable snapshot", title=entry.relative,
                            severity="error")
            return
        self.current = entry.path
        self.post_message(self.SnapshotSelected(entry.snapshot))

    def action_mark(self) -> None:
        node = self.tree.cursor_node
        if node is None or node.data is None or node.data.snapshot is None:
            self.app.notify("put the cursor on a snapshot to mark it", severity="warning")
            return
        self.mark(node.data.snapshot)

    def mark(self, snapshot: Snapshot) -> None:
        """Make `snapshot` side A of the next comparison (shown with an A in the tree)."""
        self.marked = snapshot.path
        self.rebuild()
        self.post_message(self.SnapshotMarked(snapshot))

    def focus_filter(self) -> None:
        self.query_one("#filter", Input).focus()
