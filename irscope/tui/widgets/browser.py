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

from ...render.controls import visible_controls
from ...store.snapshot import Snapshot
from ..model.entries import Entry, matches, sort_key


class Browser(Vertical):
    """Every snapshot under the roots, grouped by kernel and variant; type in the box to filter."""

    DEFAULT_CSS = """
    Browser { width: 26; height: 1fr; border-right: vkey $panel; }
    Browser.-hidden { display: none; }
    Browser > Input, Browser > Input:focus { border: none; height: 1; padding: 0 1; background: $boost; }
    Browser > Tree { height: 1fr; }
    """
    BINDINGS = [Binding("m", "mark", "Mark for compare")]
    # The tree's width. A sweep's variant names run long (`default.w4.s2.GROUP_M=8`), and at a fixed 24
    # columns all 162 of them read the same. Two things, since neither alone is enough: sibling variants
    # lose the dotted prefix they all share (`…s2.GROUP_M=8`, the prefix shown once on the kernel's
    # row), and the tree widens to its longest label up to WIDTH_CAP of the screen; `<` and `>` (app
    # keys) narrow and widen it by WIDTH_STEP from there, for names longer still or a screen short of room.
    WIDTH = 26  # the CSS width, kept while every label fits in it (short names look as they always did)
    WIDTH_STEP = 8
    WIDTH_CAP = 0.5

    @dataclass
    class SnapshotSelected(Message):
        """The reader chose a snapshot to read."""

        snapshot: Snapshot

    @dataclass
    class DamagedSelected(Message):
        """The reader chose a folder that cannot be shown (the entry says why)."""

        entry: Entry

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
        self.content_width = 0  # columns the longest label needs (guides included)
        self.extra_width = 0  # what `<` and `>` added or took away

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
        visible = [e for e in self.entries if not query or matches(e, query)]
        prefixes = shared_prefixes(visible, many_roots)
        widest = 0
        for entry in visible:
            shown += 1
            kernel, variant, target = entry.parts
            parent = tree.root
            keys: list[tuple[str, str]] = []
            if many_roots:
                keys.append(("root", str(entry.root)))
            keys += [("kernel", kernel)] + ([("variant", variant)] if entry.ok else [])
            path_key: tuple = ()
            prefix = prefixes.get((entry.root if many_roots else None, kernel), "")
            for depth, (kind, name) in enumerate(keys):
                path_key += (name,)
                node = groups.get(path_key)
                if node is None:
                    label = Text(one_row(name if kind != "root" else Path(name).name or name),
                                 style="bold" if kind in ("kernel", "root") else "")
                    if kind == "kernel" and prefix:
                        label.append(f" {one_row(prefix)}…", style="dim")
                    elif kind == "variant" and prefix:
                        label = Text("…" + one_row(name[len(prefix):]))
                    node = parent.add(label, expand=True)
                    groups[path_key] = node
                    widest = max(widest, GUIDE * (depth + 1) + label.cell_len)
                parent = node
            leaf_label = self._leaf_label(entry)
            widest = max(widest, GUIDE * (len(keys) + 1) + leaf_label.cell_len)
            leaf = parent.add_leaf(leaf_label, data=entry)
            if keep is not None and entry.path == keep:
                target_node = leaf
        if not shown:
            tree.root.add_leaf(Text("no snapshots" + (" match" if query else " found"), style="dim"))
        if target_node is not None:
            self.call_after_refresh(tree.move_cursor, target_node)
        self.content_width = widest + 3  # the border, a column of padding, the scrollbar's room
        self.fit_width()

    def fit_width(self, screen_width: int | None = None) -> None:
        """Width from the content (at least the CSS width, at most WIDTH_CAP of the screen), plus `<`/`>`.
        `screen_width`: the terminal's new width, during a resize (the app's size is still the old one)."""
        if not self.extra_width and self.content_width <= self.WIDTH:
            self.styles.width = None  # the stylesheet's width (narrower on a narrow screen)
            return
        cap = max(self.WIDTH, int((screen_width or self.app.size.width) * self.WIDTH_CAP))
        self.styles.width = max(12, min(max(self.content_width, self.WIDTH) + self.extra_width, cap))

    def widen(self, step: int) -> None:
        cap = max(self.WIDTH, int(self.app.size.width * self.WIDTH_CAP))
        now = max(self.content_width, self.WIDTH) + self.extra_width
        self.extra_width = max(12, min(now + step, cap)) - max(self.content_width, self.WIDTH)
        self.fit_width()

    def _leaf_label(self, entry: Entry) -> Text:
        text = Text()
        if self.marked is not None and entry.path == self.marked:
            text.append("A ", style="bold reverse")
        if entry.snapshot is None:
            text.append("✗ ", style="red")
            text.append(one_row(entry.relative))
            return text
        if not entry.snapshot.ok:
            text.append("✗ ", style="red")
        text.append(one_row(entry.parts[2]), style="bold" if entry.path == self.current else "")
        return text

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        self.rebuild()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        tree = self.tree
        tree.focus()
        first = first_leaf(tree.root) if self.filter_text.strip() else None
        if first is not None:  # Enter after typing a filter: the cursor on the first match (after the
            self.call_after_refresh(tree.move_cursor, first)  # rebuild's own cursor move, also deferred)

    def on_tree_node_selected(self, event: Tree.NodeSelected) -> None:
        event.stop()
        entry = event.node.data
        if entry is None:
            return
        if entry.snapshot is None:
            self.post_message(self.DamagedSelected(entry))
            return
        self.current = entry.path
        self.post_message(self.SnapshotSelected(entry.snapshot))

    def action_mark(self) -> None:
        node = self.tree.cursor_node
        if node is None or node.data is None or node.data.snapshot is None:
            self.app.notify("put the cursor on a snapshot to mark it", severity="warning", markup=False)
            return
        self.mark(node.data.snapshot)

    def mark(self, snapshot: Snapshot) -> None:
        """Make `snapshot` side A of the next comparison (shown with an A in the tree)."""
        self.marked = snapshot.path
        self.rebuild()
        self.post_message(self.SnapshotMarked(snapshot))

    def focus_filter(self) -> None:
        self.query_one("#filter", Input).focus()


GUIDE = 2  # columns of indent per tree level (Tree.guide_depth, set in compose)


def one_row(name: str) -> str:
    """A name from a snapshot as it reads in one row of the tree: its control characters shown as their
    pictures, newline and tab too (`add\\nevil` drew as `add`, and an escape sequence in a variant's name
    reached the terminal once the shared prefix was cut off it)."""
    return visible_controls(name).replace("\n", "\u240a").replace("\t", "\u2409")


def shared_prefixes(entries: Sequence[Entry], many_roots: bool) -> dict[tuple, str]:
    """(root or None, kernel) -> the dotted prefix all of that kernel's variants share, where there is one
    to drop: at least two variants, each longer than the prefix (`default` beside `default.w4` keeps
    both names whole)."""
    variants: dict[tuple, set[str]] = {}
    for e in entries:
        if e.ok:
            kernel, variant, _ = e.parts
            variants.setdefault((e.root if many_roots else None, kernel), set()).add(variant)
    out = {}
    for key, names in variants.items():
        if len(names) < 2:
            continue
        split = [n.split(".") for n in names]
        common = []
        for parts in zip(*split):
            if len(set(parts)) != 1:
                break
            common.append(parts[0])
        if common and all(len(p) > len(common) for p in split):
            out[key] = ".".join(common) + "."
    return out


def first_leaf(node):
    """The first snapshot in the tree below `node`, in display order."""
    for child in node.children:
        if child.data is not None:
            return child
        found = first_leaf(child)
        if found is not None:
            return found
    return None
