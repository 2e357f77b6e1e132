"""StageTabs: the reader's row of stage tabs (`1 python  2 source (TTIR₀)  3 ttir …`), made whole each time."""
from __future__ import annotations

from textual.widgets import Tab, Tabs

from ..model.stages import TAB_LABELS


class StageTabs(Tabs):
    """One tab a stage, numbered as the digit keys choose them; or one `✗ damaged` tab."""

    @classmethod
    def of(cls, stages: list[str], active: str | None, serial: int, damaged: bool = False) -> StageTabs:
        # A new Tabs created with its active tab, rather than cleared and refilled: refilling activates the
        # first tab on its own, and that late activation would switch the stage under the reader.
        shown = [Tab("✗ damaged", id="tab-damaged")] if damaged else \
            [Tab(f"{i + 1} {TAB_LABELS.get(stage, stage)}", id=f"tab-{stage}") for i, stage in enumerate(stages)]
        chosen = "tab-damaged" if damaged else f"tab-{active}" if active else None
        return cls(*shown, active=chosen, id=f"stage-tabs-{serial}", classes="stage-tabs")

    def choose(self, stage: str) -> None:
        """Make `stage`'s tab the active one (quietly, if it already is or is not there)."""
        if self.is_mounted and self.active != f"tab-{stage}" and self.query(f"#tab-{stage}"):
            self.active = f"tab-{stage}"
