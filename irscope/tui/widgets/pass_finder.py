"""PassFinder: the pass timeline's answer line. It searches the timeline in workers, for where a pattern
first appears (`/`) and for the pass that introduced a line (`P`, Enter), says the answer on its line
above the status, and tells the screen which step to show."""
from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual import work
from textual.message import Message

from ...errors import IrscopeError
from ...passes import Blame, Step, Timeline, find_pattern
from ..model.controls import visible_text
from ..model.steps import Origin, origin_of
from .status_line import StatusLine
from .step_text import blame_note


class PassFinder(StatusLine):
    """Where a pattern first appears, which pass introduced a line: searched, said, and the step found."""

    @dataclass
    class PatternFound(Message):
        """Where a pattern appears and disappears along the timeline, or why it could not be searched."""

        pattern: str
        blame: Blame | None
        error: IrscopeError | None

    @dataclass
    class OriginFound(Message):
        """The step that introduced a line (or why none did)."""

        origin: Origin

    @dataclass
    class StepFound(Message):
        """A search landed on `step`; `point` = ("line" | "pattern", text) is what to single out in it."""

        step: Step
        point: tuple[str, str]

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.note = Text()  # the last search's or jump's answer
        self.pattern = ""  # the last pattern searched for
        self._steps = 0

    def say(self, note: Text) -> None:
        """The answer to the last search or jump, on its own line (hidden while there is none)."""
        self.note = note = visible_text(note)  # it may quote a line of the snapshot's IR
        self.set_class(not note.plain, "-hidden")
        self.show(Text(" ") + note)

    def find(self, tl: Timeline, pattern: str) -> None:
        """Look for `pattern` after every pass; the answer comes as `PatternFound`."""
        self.pattern, self._steps = pattern, len(tl.steps)
        self.say(Text(f"looking for {pattern} after every pass…", style="dim"))
        self._find(tl, pattern)

    @work(thread=True, exclusive=True, group="timeline-find")
    def _find(self, tl: Timeline, pattern: str) -> None:
        try:
            self.post_message(self.PatternFound(pattern, find_pattern(tl, pattern), None))
        except IrscopeError as e:
            self.post_message(self.PatternFound(pattern, None, e))

    def on_pass_finder_pattern_found(self, event: PatternFound) -> None:
        event.stop()
        if event.pattern != self.pattern:
            return
        if event.blame is None:
            assert event.error is not None
            self.say(Text(event.error.message, style="red"))
            self.app.notify(f"{event.error.message}\n{event.error.hint or ''}", severity="warning", markup=False)
            return
        blame = event.blame
        self.say(blame_note(blame, self._steps))
        found = blame.first or blame.gone
        if found is not None:
            self.post_message(self.StepFound(found.step, ("pattern", event.pattern)))
        elif not blame.at_start:
            self.app.notify(self.note.plain, severity="warning", markup=False)

    def find_origin(self, tl: Timeline, anchor: Step, line: str) -> None:
        """Look for the pass that introduced `line` of `anchor`'s IR; the answer comes as `OriginFound`."""
        self.say(Text("finding the pass that introduced the line…", style="dim"))
        self._origin(tl, anchor, line)

    @work(thread=True, exclusive=True, group="timeline-origin")
    def _origin(self, tl: Timeline, anchor: Step, line: str) -> None:
        self.post_message(self.OriginFound(origin_of(tl, anchor, line)))

    def on_pass_finder_origin_found(self, event: OriginFound) -> None:
        event.stop()
        origin = event.origin
        if origin.step is None:
            self.say(Text(origin.message, style="yellow"))
            self.app.notify(origin.message, severity="warning", markup=False)
            return
        self.say(Text(f"{origin.message}: {origin.line.strip()}", style="yellow"))
        self.post_message(self.StepFound(origin.step, ("line", origin.line)))
