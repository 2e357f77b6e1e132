"""How the timeline screen words a pass timeline: its title, a row of the step list, a step's heading,
and the answer to a pattern search. Rich text only (no Textual), so it is tested as plain code.

Pass names, options and op names come from the snapshot's passes/index.json: each text is returned with
its control characters shown (`visible_text`), never as they are."""
from __future__ import annotations

from rich.text import Text

from ...passes import Blame, Step, Timeline
from ...render.controls import visible_controls
from ..model.controls import visible_text
from ..model.steps import change_text, is_changing, op_summary


def timeline_title(tl: Timeline, label: str, listed: int | None = None) -> Text:
    """`passes  matmul/default/sm_90a  77 steps (ttir 7, ...) · 30 changed the IR`; `listed` when filtered."""
    counts = ", ".join(f"{k} {v}" for k, v in tl.stage_counts().items())
    changed = sum(1 for s in tl.steps if s.status == "changed")
    text = Text()
    text.append(" passes ", style="bold reverse")
    text.append(f" {label}", style="bold")
    text.append(f"   {len(tl.steps)} steps ({counts}) · {changed} changed the IR", style="dim")
    if listed is not None:
        text.append(f" · showing those {listed} only (c: all)", style="yellow")
    return visible_text(text)


def step_row(step: Step, width: int, change_width: int = 10) -> Text:
    """One line of the step list: number, stage, pass, change; unchanged steps dimmed."""
    change = change_text(step)
    name = visible_controls(("↳ " if step.within else "") + step.label)  # (Text drops a BEL: the padding would be short)
    change_width = max(change_width, len(change))
    room = max(4, width - 3 - 1 - 5 - 2 - change_width - 1)
    if len(name) > room:
        name = name[:room - 1] + "…"
    text = Text(no_wrap=True)
    text.append(f"{step.n:>3} ", style="dim")
    text.append(f"{step.stage:<5}  ", style="dim")
    text.append(f"{name:<{room}} ", style="" if is_changing(step) else "dim")
    text.append(" " * (change_width - len(change)))
    _change(text, step)
    # Cut to the row, never wrapped: on a narrow screen a wrapped row read as two steps, its change below
    # (the step's own heading says the change).
    text.truncate(width, overflow="ellipsis")
    return visible_text(text)


def _change(text: Text, step: Step) -> None:
    if step.status == "changed":
        text.append(f"+{step.added}", style="green")
        text.append(f" -{step.removed}", style="red")
    else:
        text.append(change_text(step), style="dim")


def step_heading(tl: Timeline, step: Step, note: str = "") -> Text:
    """Three lines: number, stage, pass and change; its op count changes; where it runs, options, `note`."""
    text = Text()
    text.append(f" #{step.n} ", style="bold reverse")
    text.append(f" {step.stage}  ", style="dim")
    text.append(("↳ " if step.within else "") + step.label, style="bold")
    text.append("  ")
    _change(text, step)
    ops = op_summary(tl, step, limit=8)
    if ops:
        text.append(f"\n {ops}")
    details = [f"inside {step.within}"] if step.within else []
    if step.options:
        details.append(f"options {step.options}")
    if step.nested:
        details.append(f"runs {len(step.nested)} nested")
    if note:
        details.append(note)
    if details:
        text.append("\n " + " · ".join(details), style="dim")
    return visible_text(text)


def blame_note(blame: Blame, steps: int) -> Text:
    """`PATTERN first appears #30 tritongpu-pipeline › LowerLoops (2 lines) · disappears #65 ...`."""
    first, gone = blame.first, blame.gone
    note = Text(style="yellow")
    note.append(blame.pattern, style="bold")
    if blame.at_start:
        note.append(f" there from the start ({blame.at_start} lines)")
    if first is not None:
        note.append(f" first appears #{first.step.n} {first.step.label} ({first.count} lines)")
    if gone is not None:
        note.append(f" · disappears #{gone.step.n} {gone.step.label}")
    elif first is not None or blame.at_start:
        note.append(" · still there after the last pass")
    else:
        note.append(f" never appears in the {steps} steps (normalised IR)")
    return visible_text(note)


def timeline_status(step: Step | None, listed_at: int | None, listed: int, view: str, mode: str, changes: int,
                    ir_line: int, ir_lines: int, busy: str = "") -> Text:
    """The timeline's status line: the step, where it is in the list, what is shown of it, what is busy."""
    text = Text()
    text.append(" passes ", style="bold reverse")
    if step is not None:
        text.append(f" step {step.n}")
        text.append(f" ({listed_at + 1 if listed_at is not None else '-'}/{listed} listed)", style="dim")
        if view == "diff":
            kind = "side by side" if mode == "side" else "unified"
            text.append(f"  diff ({kind}, normalised): {changes} runs of changes", style="dim")
        else:
            text.append(f"  the IR after it, as printed: line {ir_line + 1}/{ir_lines}", style="dim")
    if busy:
        text.append(f"  {busy}", style="dim")
    return text
