"""The irscope TUI application: the browser on the left, the reader on the right, screens on top."""
from __future__ import annotations

import gc
import threading
from pathlib import Path
from typing import Sequence

from textual import work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.geometry import Size
from textual.screen import Screen
from textual.widgets import Header

from ..render.controls import visible_controls
from ..render.terminal import plural
from ..store.snapshot import Snapshot
from .model.axes import partner
from .widgets.browser import Browser
from .model.entries import Entry, load_entry, same_folder, scan
from .screens.compare import CompareScreen
from .screens.compile import CompileScreen
from .screens.help import HelpScreen
from .widgets.key_footer import KeyFooter
from .widgets.snapshot_view import SnapshotView


class IrscopeApp(App):
    """Browse, read and compare compiled Triton kernels."""

    CSS_PATH = "irscope.tcss"
    TITLE = "irscope"
    BINDINGS = [
        Binding("q", "quit", "Quit"),
        Binding("question_mark,f1", "help", "Help", key_display="?"),
        Binding("ctrl+f", "filter", "Filter", show=False),
        Binding("b", "toggle_browser", "Tree", show=False),
        Binding("less_than_sign", "widen_browser(-1)", "Narrow tree", key_display="<", show=False),
        Binding("greater_than_sign", "widen_browser(1)", "Widen tree", key_display=">", show=False),
        Binding("m", "mark", "Mark A", show=False),
        Binding("d", "compare", "Compare"),
        Binding("c", "compile", "Compile"),
        Binding("L", "layouts", "Layouts", show=False),
    ]

    def __init__(self, roots: Sequence[Path], out: Path, kernels: Sequence[str] = ()):
        super().__init__()
        self.roots, self.out, self.kernels = list(roots), Path(out), list(kernels)
        self.marked: Snapshot | None = None
        # Snapshot folder -> the kernel file the user named for it in this session's compile form.
        self.trusted_sources: dict[Path, Path] = {}
        self.closing = threading.Event()  # set as the app quits: compiles still running stop (CompileScreen)

    def notify(self, message: str, *, title: str = "", severity="information", timeout: float | None = None,
               markup: bool = True) -> None:
        # A message may quote a snapshot's field: its control characters are shown, never sent to the terminal
        super().notify(visible_controls(message), title=visible_controls(title), severity=severity, timeout=timeout,
                       markup=markup)

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="main"):
            yield Browser(self.roots, id="browser")
            yield SnapshotView(id="reader-pane")
        yield KeyFooter()

    def on_mount(self) -> None:
        # Textual allocates thousands of short-lived objects a frame; at Python's default thresholds the
        # collector runs every 700 allocations and cascades into full collections (10-50 ms) in the
        # middle of keystrokes. Collect the young generation less often (measured in docs/tui.md).
        self._gc_threshold = gc.get_threshold()
        gc.set_threshold(50_000, 20, 100)
        self.sub_title = "loading snapshots…"
        self.scan_roots()
        self.prewarm()

    def on_unmount(self) -> None:
        self.closing.set()
        # The reader freezes what it has loaded out of the garbage collector's reach (SnapshotView);
        # give it back, so that a process that goes on after the app (a test run) collects as usual.
        gc.unfreeze()
        gc.set_threshold(*self._gc_threshold)

    @work(thread=True, group="prewarm")
    def prewarm(self) -> None:
        from .model.document import prewarm
        prewarm()

    def on_resize(self, event) -> None:
        # Every screen on the stack, not just the top one: a resize while the compare screen (or any) was
        # open left the reader below laid out for the old size when it came back. (`self.size` is still
        # the old size here: this handler runs before App's own.)
        for screen in self.screen_stack:
            self.fit_screen(screen, event.size)
        browsers = self.screen_stack[0].query(Browser) if self.screen_stack else []
        if self.is_mounted and browsers:
            browsers.first().fit_width(event.size.width)

    def fit_screen(self, screen: Screen, size: Size) -> None:
        """The classes the stylesheet sizes a screen by: `-narrow` under 100 columns."""
        screen.set_class(size.width < 100, "-narrow")

    def push_screen(self, screen, *args, **kwargs):
        if isinstance(screen, Screen):  # a screen opened after the last resize starts at the current size
            self.fit_screen(screen, self.size)
        return super().push_screen(screen, *args, **kwargs)

    @work(thread=True, exclusive=True, group="scan")
    def scan_roots(self) -> None:
        entries = scan(self.roots)
        self.call_from_thread(self._entries_found, entries)

    def _entries_found(self, entries: list[Entry]) -> None:
        browser = self.query_one(Browser)
        browser.set_entries(entries)
        self._count_in_title()
        if not entries:
            self.view.show_nothing_found(self.roots, self.out)
        browser.tree.focus()
        # `irscope tui SNAPSHOT`: a root that is itself one snapshot folder opens straight in the reader.
        single = next((e for e in entries if e.path == e.root), None)
        if single is not None:
            browser.current = single.path
            browser.rebuild(cursor=single.path)
            if single.snapshot is None:
                self.show_damaged(single)
            else:
                self.open_snapshot(single.snapshot)

    def _count_in_title(self) -> None:
        entries = self.query_one(Browser).entries
        names = ", ".join(r.name or str(r) for r in self.roots) or "no folder"
        damaged = sum(not e.ok for e in entries)
        self.sub_title = visible_controls(f"{plural(sum(e.ok for e in entries), 'snapshot')} in {names}" +
                                          (f", {damaged} damaged" if damaged else ""))

    def show_damaged(self, entry: Entry) -> None:
        reason = entry.error or "this folder is not a readable snapshot"
        self.notify(reason, title=entry.relative, severity="error", markup=False)
        self.view.show_damaged(entry.relative, reason)

    def open_snapshot(self, snapshot: Snapshot) -> None:
        self.view.open(snapshot, trusted=self.trusted_sources.get(snapshot.path))
        self.view.main.focus()

    @property
    def view(self) -> SnapshotView:
        return self.query_one(SnapshotView)

    def on_browser_snapshot_selected(self, event: Browser.SnapshotSelected) -> None:
        self.open_snapshot(event.snapshot)

    def on_browser_damaged_selected(self, event: Browser.DamagedSelected) -> None:
        self.show_damaged(event.entry)

    def on_browser_snapshot_marked(self, event: Browser.SnapshotMarked) -> None:
        self.marked = event.snapshot
        self.notify(f"A = {event.snapshot.label}; open another snapshot and press d to compare", markup=False)

    def on_compile_screen_snapshots_compiled(self, event: CompileScreen.SnapshotsCompiled) -> None:
        browser = self.query_one(Browser)
        # The compile's folder may be a root already, named another way (./irscope-snapshots, found at
        # start as an absolute path): its snapshots join that root, not a second one of the same name.
        root = next((r for r in self.roots if same_folder(r, event.root)), None)
        if root is None:
            root = event.root
            self.roots.append(root)

        def under_root(path: Path) -> Path:
            path = Path(path)
            return root / path.relative_to(event.root) if path.is_relative_to(event.root) else path

        self.trusted_sources.update({under_root(p): f for p, f in event.sources.items()})
        paths = [under_root(p) for p in event.paths]
        for path in paths:
            browser.add_entry(load_entry(root, path))
        self._count_in_title()
        entry = next((e for e in browser.entries if e.path == paths[-1]), None)
        if entry is not None and entry.snapshot is not None:
            browser.current = entry.path
            self.view.open(entry.snapshot, trusted=self.trusted_sources.get(entry.path))
        if not isinstance(self.screen, CompileScreen):  # the dialog was closed while they compiled
            failed = sum(e.snapshot is None or not e.snapshot.ok for e in browser.entries if e.path in paths)
            self.notify(f"compiled {plural(len(paths), 'snapshot')} into {event.root}" +
                        (f", {failed} failed" if failed else "") + ": they are in the tree", markup=False)

    def action_help(self) -> None:
        self.push_screen(HelpScreen())

    def action_filter(self) -> None:
        browser = self.query_one(Browser)
        browser.remove_class("-hidden")
        browser.focus_filter()

    def action_toggle_browser(self) -> None:
        self.query_one(Browser).toggle_class("-hidden")

    def action_widen_browser(self, direction: int) -> None:
        browser = self.query_one(Browser)
        browser.remove_class("-hidden")
        browser.widen(direction * Browser.WIDTH_STEP)

    def action_mark(self) -> None:
        if self.view.snapshot is None:
            self.notify("open a snapshot first (Enter in the tree)", severity="warning", markup=False)
            return
        self.query_one(Browser).mark(self.view.snapshot)

    def action_compare(self) -> None:
        if isinstance(self.screen, CompareScreen):  # `d` there stacked another compare of the same pair
            return
        snapshots = self.query_one(Browser).snapshots
        if self.view.snapshot is None:
            self.notify("open a snapshot first, then press d", severity="warning", markup=False)
            return
        pair = partner(snapshots, self.view.snapshot, self.marked)
        if pair is None:
            self.notify("nothing to compare with: mark a snapshot with m, open another, press d", severity="warning",
                        markup=False)
            return
        self.push_screen(CompareScreen(*pair, snapshots, stage=self.view.stage))

    def action_layouts(self) -> None:
        """The layout screen for the snapshot being read, at what the TTGIR line under the cursor uses."""
        from .screens.layouts import LayoutsScreen
        if isinstance(self.screen, LayoutsScreen):  # `L` there stacked another copy of the screen
            return
        snapshot = self.view.snapshot
        if snapshot is None:
            self.notify("open a snapshot first", severity="warning", markup=False)
            return
        line = self.view.main.cursor + 1 if self.view.stage == "ttgir" else None
        self.push_screen(LayoutsScreen(snapshot, line))

    def action_compile(self) -> None:
        from ..spec.library import builtin_name
        initial = {}
        snapshot = self.view.snapshot
        if snapshot is not None:
            # The open snapshot's kernel, only as a built-in's name: its irscope.json is untrusted, and a
            # `FILE.py:FUNCTION` from there, compiled with one Enter, would import (run) that file.
            initial = {"kernel": snapshot.kernel if builtin_name(snapshot.kernel) else "",
                       "target": snapshot.target_name}
        self.push_screen(CompileScreen(self.out, self.kernels, initial))
