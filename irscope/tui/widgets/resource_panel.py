"""ResourcePanel: a snapshot's resources and counters, its target and the options it was compiled with."""
from __future__ import annotations

from dataclasses import dataclass

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual import work
from textual.message import Message
from textual.widgets import Static

from ...ir.resources import Resources
from ...render.controls import visible_controls
from ...store.snapshot import Snapshot
from ..model.axes import describe
from ..model.entries import DAMAGE
from ..model.facts import Facts, facts_of, resource_rows


class ResourcePanel(Static):
    """The numbers of the snapshot on screen: resources, counters, launchability, options."""

    DEFAULT_CSS = """
    ResourcePanel { width: 30; height: 1fr; padding: 0 1; border-left: vkey $panel; overflow-y: auto; }
    """

    @dataclass
    class Analysed(Message):
        """A snapshot's counters, occupancy and launchability are ready (analysed in a worker)."""

        snapshot: Snapshot
        facts: Facts
        problem: str | None = None

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.snapshot: Snapshot | None = None
        self.facts: Facts | None = None

    def open(self, snapshot: Snapshot, facts: Facts | None = None) -> None:
        """Show a snapshot's numbers: its metadata's resources now, the analysis's (unless given) when ready."""
        self.snapshot = snapshot
        # Resources are in the snapshot's metadata; counters need the stages read, so they come later.
        try:
            self.facts = facts or Facts(resources=snapshot.resources)
        except DAMAGE as e:
            self.facts = Facts(resources=Resources())
            self._warn(f"{snapshot.path}: cannot read its resources: {e}")
        if facts is None:
            self.analyse(snapshot)

    def _warn(self, message: str) -> None:
        self.app.notify(message, title="damaged snapshot", severity="warning", timeout=10, markup=False)

    @work(thread=True, exclusive=True, group="analysis")
    def analyse(self, snapshot: Snapshot) -> None:
        try:
            self.post_message(self.Analysed(snapshot, facts_of(snapshot)))
        except DAMAGE as e:  # a damaged stage met by the analysis: keep the metadata's numbers, say why
            message = getattr(e, "message", None) or f"{type(e).__name__}: {e}"
            self.post_message(self.Analysed(snapshot, Facts(resources=Resources()), message))

    def on_resource_panel_analysed(self, event: Analysed) -> None:
        if event.snapshot is self.snapshot:
            if event.problem is not None:
                self._warn(f"cannot analyse {event.snapshot.label}: {event.problem}")
                return
            self.facts = event.facts
            self.show(event.snapshot, event.facts)

    def toggle(self) -> bool:
        """Show the panel if hidden, hide it if shown; returns whether it is shown now."""
        shown = not self.display  # narrow screens hide it by default (CSS), so ask what is shown
        self.set_class(not shown, "-hidden")
        self.set_class(shown, "-shown")
        return shown

    def show(self, snapshot: Snapshot | None, facts: Facts | None) -> None:
        if snapshot is None:
            self.snapshot = self.facts = None
        if snapshot is None or facts is None:
            self.update(Text("no snapshot", style="dim"))
            return
        try:
            self.update(panel_table(snapshot, facts))
        except DAMAGE as e:  # the catalog checks irscope.json first; this is the floor under that check
            self.update(Text(f"✗ damaged snapshot: {type(e).__name__}: {e}", style="red"))


def _row(table: Table, *cells) -> None:
    """A row whose strings are plain text: they hold a snapshot's fields (untrusted), and Rich would read
    `[...]` in them as markup (a crash on `[/]`, a live link on `[link=...]`)."""
    table.add_row(*(Text(visible_controls(c)) if isinstance(c, str) else c for c in cells))


def panel_table(snapshot: Snapshot, facts: Facts) -> Table:
    table = Table.grid(padding=(0, 1), expand=True)
    table.add_column(style="bold", no_wrap=True)
    table.add_column(overflow="fold")

    def section(title: str) -> None:
        if table.row_count:
            _row(table, "", "")
        _row(table, Text(title, style="bold underline"), "")

    section("target")
    t = snapshot.target
    _row(table, "target", f"{snapshot.target_name}" + (f" ({t.family})" if t else ""))
    _row(table, "warps", describe(snapshot, "num_warps"))
    _row(table, "stages", describe(snapshot, "num_stages"))
    _row(table, "align", describe(snapshot, "alignment"))
    cx = describe(snapshot, "constexprs")
    if cx != "-":
        _row(table, "consts", cx)
    if not snapshot.ok:
        err = snapshot.error or {}
        _row(table, Text("FAILED", style="bold red"), f"at {err.get('stage', '?')}")
    section("resources")
    rows = resource_rows(facts.resources)
    for label, value in rows:
        _row(table, label, value)
    if not rows:
        _row(table, Text("none known", style="dim"), "")
    if facts.occupancy or facts.launchable is not None:
        section("launch")
        if facts.launchable is not None:
            _row(table, "launch", Text("ok", style="green") if facts.launchable else Text("cannot", style="red"))
        for reason in facts.reasons:
            _row(table, "", Text(reason, style="red"))
        if facts.occupancy:
            _row(table, "occupancy", facts.occupancy)
    section("stages")
    stages = snapshot.meta.get("stages") or {}
    for stage in snapshot.text_stages:
        lines = (stages.get(stage) or {}).get("lines")
        _row(table, stage, "" if lines is None else f"{lines:,} lines")
    if not facts.counters:
        return table
    return Group(table, Text(""), counters_table(facts.counters))


def counters_table(counters) -> Table:
    """Counters under one heading per stage, names without the stage prefix, values right-aligned: the
    panel is narrow, so long names are cut rather than pushing the values out of sight."""
    table = Table.grid(padding=(0, 1), expand=True)
    table.add_column(no_wrap=True, overflow="ellipsis", ratio=1)
    table.add_column(justify="right", no_wrap=True)
    current = None
    for name, value in counters.items():
        stage, _, short = name.partition(".")
        if stage != current:
            current = stage
            _row(table, Text(f"{stage} counters", style="bold underline"), "")
        _row(table, short or name, f"{value:,}" if isinstance(value, int) else str(value))
    return table
