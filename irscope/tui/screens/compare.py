"""CompareScreen: two snapshots, one stage at a time, normalised and aligned, with their deltas above."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Static, Tab, Tabs

from ...ir.normalize import normalize
from ...ir.resources import Resources
from ...store.snapshot import Snapshot
from ...diff.align import Row, align, summarise
from ..model.axes import AXES, describe, differing_axes, next_sibling
from ..model.controls import visible_text
from ..model.entries import DAMAGE
from ..widgets.delta_summary import DeltaSummary
from ..widgets.diff_view import DiffView
from ..model.document import DARK_THEME, LIGHT_THEME, Document
from ..model.facts import Facts, deltas, facts_of
from ..widgets.key_footer import KeyFooter
from ..model.stages import StageProblem, read_stage

ORDER = ("source", "glir", "ttir", "ttgir", "llir", "asm", "sass")


def stage_pairs(a: Snapshot, b: Snapshot) -> list[tuple[str, str, str]]:
    """(label, stage of A, stage of B) for every stage both have; ptx and amdgcn pair up as `asm`."""
    out = []
    for stage in ORDER:
        if stage == "asm":
            sa = "ptx" if "ptx" in a.stage_files else "amdgcn" if "amdgcn" in a.stage_files else None
            sb = "ptx" if "ptx" in b.stage_files else "amdgcn" if "amdgcn" in b.stage_files else None
            if sa and sb:
                out.append((sa if sa == sb else f"{sa}⇄{sb}", sa, sb))
        elif stage in a.stage_files and stage in b.stage_files:
            out.append((stage, stage, stage))
    return out


def plural(n: int, noun: str) -> str:
    """`1 run`, `2 runs`, `1,024 runs`."""
    return f"{n:,} {noun}" + ("" if n == 1 else "s")


class CompareScreen(Screen):
    """A against B: deltas, then the chosen stage's normalised text, side by side or unified."""

    BINDINGS = [
        Binding("escape,q", "app.pop_screen", "Back"),
        Binding("left_square_bracket", "stage(-1)", "Stage", key_display="["),
        Binding("right_square_bracket", "stage(1)", "Stage", key_display="]", show=False),
        Binding("u", "toggle_mode", "Unified/side"),
        Binding("n", "change(True)", "Next change"),
        Binding("N", "change(False)", "Prev change", show=False),
        Binding("x", "swap", "Swap A/B", show=False),
        Binding("e", "all_deltas", "All deltas", show=False),
    ] + [Binding(key, f"axis('{axis}')", axis.replace("num_", ""), show=axis in ("target", "num_warps", "alignment"))
         for axis, key in AXES.items()]

    SHORT = 24  # rows: below this the header folds to two rows

    @dataclass
    class StageAligned(Message):
        """The alignment of one stage of A and B is ready (computed in a worker)."""

        key: tuple
        left: Document
        right: Document
        rows: list[Row]
        seconds: float

    def __init__(self, a: Snapshot, b: Snapshot, snapshots: Sequence[Snapshot], stage: str | None = None,
                 facts: dict | None = None):
        super().__init__()
        self.a, self.b = a, b
        self.snapshots = list(snapshots)
        self.wanted = stage
        self.pairs: list[tuple[str, str, str]] = []
        self.current = 0
        self._facts: dict = facts if facts is not None else {}
        self._key: tuple = ()
        self._tabs: Tabs | None = None
        self._tabs_made = 0

    def compose(self) -> ComposeResult:
        with Vertical(id="compare"):
            yield Static(id="compare-title")
            with VerticalScroll(id="compare-deltas-box", can_focus=False):  # `e`'s every delta scrolls
                yield DeltaSummary(key="e", id="compare-deltas")
            yield Tabs(classes="compare-tabs")
            yield DiffView(id="diff-view")
            yield Static(id="compare-status")
        yield KeyFooter()

    def on_mount(self) -> None:
        self._fit(self.app.size.height)
        self._load()
        self.query_one(DiffView).focus()

    def on_resize(self, event) -> None:
        self._fit(event.size.height)

    def _fit(self, height: int) -> None:
        # A short terminal keeps its rows for the diff: the title on one row (cut with …), the deltas folded
        # to one (at 40x10 the header took every row and the diff had none).
        short = height < self.SHORT
        self.set_class(short, "-short")
        self.query_one(DeltaSummary).fold_to(1 if short else DeltaSummary.FOLDED)

    def facts(self, snap: Snapshot) -> Facts:
        if snap.path not in self._facts:
            try:
                self._facts[snap.path] = facts_of(snap)
            except DAMAGE as e:  # a damaged stage: compare what can be read, say what could not
                self.app.notify(f"cannot analyse {snap.label}: {getattr(e, 'message', None) or e}",
                                title="damaged snapshot", severity="warning", timeout=10, markup=False)
                self._facts[snap.path] = Facts(resources=Resources())
        return self._facts[snap.path]

    def _load(self) -> None:
        self.pairs = stage_pairs(self.a, self.b)
        self._title()
        if not self.pairs:
            self._replace_tabs()
            self.query_one(DiffView).show(Document("", ""), Document("", ""), [])
            self._status("these snapshots have no stage in common")
            return
        want = self.wanted or "ttgir"
        self.current = next((i for i, (lbl, sa, sb) in enumerate(self.pairs) if want in (lbl, sa, sb)),
                            min(self.current, len(self.pairs) - 1))
        self._replace_tabs()
        self._align()

    def _replace_tabs(self) -> None:
        # A fresh Tabs made with its active tab (refilling one activates its first tab late, and reusing
        # ids while the old tabs are still being removed clashes).
        self._tabs_made += 1
        n = self._tabs_made
        tabs = Tabs(*[Tab(label, id=f"cmp{n}-{i}") for i, (label, _, _) in enumerate(self.pairs)],
                    active=f"cmp{n}-{self.current}" if self.pairs else None, classes="compare-tabs")
        old = self._tabs if self._tabs is not None else self.query_one(".compare-tabs", Tabs)
        self.query_one("#compare").mount(tabs, before=old)
        old.remove()
        self._tabs = tabs

    def _title(self) -> None:
        axes = differing_axes(self.a, self.b)
        text = Text()
        text.append(" A ", style="bold reverse")
        text.append(f" {self.a.label}   ")
        text.append(" B ", style="bold reverse")
        text.append(f" {self.b.label}")
        if axes:
            text.append("   differ in: ", style="dim")
            text.append(", ".join(f"{ax} ({describe(self.a, ax)} → {describe(self.b, ax)})" for ax in axes))
        self.query_one("#compare-title", Static).update(visible_text(text))  # (labels are the snapshots')
        known = deltas(self.facts(self.a), self.facts(self.b))
        items = []
        # Only what differs: a row of `warps 4→4` is noise beside the numbers that moved.
        for d in (d for d in known if d.a != d.b):
            item = Text()
            item.append(f"{d.name} ", style="bold")
            item.append(f"{d.show(d.a)}→{d.show(d.b)}")
            if d.change:
                item.append(f" ({d.change_text})", style="red" if d.change > 0 else "green")
            items.append(visible_text(item))
        empty = Text("no resources known" if not known else f"the same {len(known)} resources and counters",
                     style="dim")
        self.query_one(DeltaSummary).show(items, empty)

    def on_tabs_tab_activated(self, event: Tabs.TabActivated) -> None:
        event.stop()
        if event.tabs is not self._tabs or event.tab is None or not event.tab.id:
            return
        index = int(event.tab.id.rsplit("-", 1)[1])
        if index != self.current:
            self.current = index
            self.wanted = self.pairs[index][0]
            self._align()

    def _align(self) -> None:
        label, sa, sb = self.pairs[self.current]
        self._key = (self.a.path, self.b.path, sa, sb)
        self._status(f"aligning {label}…")
        self.align_stage(self._key, self.a, self.b, sa, sb, DARK_THEME if self.app.current_theme.dark else LIGHT_THEME)

    @work(thread=True, exclusive=True, group="align")
    def align_stage(self, key: tuple, a: Snapshot, b: Snapshot, sa: str, sb: str, theme: str) -> None:
        import time
        started = time.perf_counter()
        try:
            left = Document(normalize(sa, read_stage(a, sa)), sa, theme=theme)
            right = Document(normalize(sb, read_stage(b, sb)), sb, theme=theme)
        except StageProblem as e:
            left, right = Document(f"✗ cannot compare {e.stage}: {e.message}", ""), Document("", "")
        except DAMAGE as e:  # normalising garbage bytes
            left, right = Document(f"✗ cannot compare {sa}: {type(e).__name__}: {e}", ""), Document("", "")
        rows = align(left.lines, right.lines)
        self.post_message(self.StageAligned(key, left, right, rows, time.perf_counter() - started))

    def on_compare_screen_stage_aligned(self, event: StageAligned) -> None:
        if event.key != self._key:
            return
        self.query_one(DiffView).show(event.left, event.right, event.rows)
        s = summarise(event.rows)
        label = self.pairs[self.current][0]
        if s.deleted == s.inserted == s.changed == 0:
            self._status(f"{label}: identical after normalising ({plural(s.equal, 'line')})")
        else:
            self._status(f"{label}: {s.changed:,} changed, {s.deleted:,} only in A, {s.inserted:,} only in B, "
                         f"{s.equal:,} equal · {plural(len(self.query_one(DiffView).changes), 'run')} of changes")

    def _status(self, text: str) -> None:
        self.query_one("#compare-status", Static).update(Text(f" {text}", style="dim"))

    def action_stage(self, delta: int) -> None:
        if self.pairs and self._tabs is not None:
            self._tabs.active = f"cmp{self._tabs_made}-{(self.current + delta) % len(self.pairs)}"

    def action_toggle_mode(self) -> None:
        view = self.query_one(DiffView)
        view.mode = "unified" if view.mode == "side" else "side"

    def action_change(self, forward: bool) -> None:
        view = self.query_one(DiffView)
        k = view.next_change(forward)
        if k is None:
            self.app.notify("no changes in this stage", markup=False)

    def action_all_deltas(self) -> None:
        self.query_one(DeltaSummary).toggle()

    def action_swap(self) -> None:
        self.a, self.b = self.b, self.a
        self._load()

    def action_axis(self, axis: str) -> None:
        sibling = next_sibling(self.snapshots, self.a, axis, current=self.b)
        if sibling is None:
            self.app.notify(f"no snapshot of {self.a.kernel} differs from A in {axis} alone; compile one with `c`",
                            severity="warning", markup=False)
            return
        self.b = sibling
        self._load()

