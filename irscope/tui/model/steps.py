"""A pass timeline as the TUI shows it: what each step did in a few words, the step whose IR a reader's
stage is, a step's diff aligned for DiffView, and the step that introduced a line. No Textual import.

Everything here reads `irscope.passes`; the slow parts (decompressing the timeline, normalising and
aligning a big IR) are called from the timeline screen's workers.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ...errors import IrscopeError, SnapshotError
from ...passes import Step, Timeline, compile_pattern, line_origin, load_timeline, normalize_line
from ...passes.text import canonical_mlir
from ...passes.timeline import INDEX_FILE
from ...store.snapshot import PASSES_DIR, Snapshot
from ...diff.align import Row, align
from .document import DARK_THEME, Document

FORM_NAMES = {"mlir": "MLIR", "llvm": "LLVM IR", "mir": "machine IR"}
LEXER_STAGE = {"mlir": "ttgir", "llvm": "llir"}  # Document picks its lexer by stage; machine IR stays plain
CHANGING = ("changed", "unknown")  # what `[` `]` step to and what "changed only" keeps


def timeline_problem(snapshot: Snapshot) -> SnapshotError | None:
    """Why a snapshot has no pass timeline to show, or None when it has one (a stat, nothing read)."""
    folder = Path(snapshot.extra.get("passes") or Path(snapshot.path) / PASSES_DIR)
    if (folder / INDEX_FILE).is_file():
        return None
    try:
        load_timeline(snapshot)  # fails at once, with the message and hint `irscope passes` gives
    except SnapshotError as e:
        return e
    return None


def is_changing(step: Step) -> bool:
    """A step that changed the IR (or whose change is unknown): not `no change`, not `debug info only`."""
    return step.status in CHANGING


def change_text(step: Step) -> str:
    """What a step did, in a few words: `+57 -36`, `no change`, `debug info only`, `first LLVM IR`."""
    status = step.status
    # a pass that failed leaves its IR as it was when it failed: a change, still not a pass that ran
    failed = " · failed" if step.failed else ""
    if status == "changed":
        return f"+{step.added} -{step.removed}{failed}"
    if status != "unknown":
        return status + failed
    if step.failed:
        return "failed"
    if step.after is None:
        return "compile stopped"
    if step.scope.startswith("loop"):
        return "loop only"
    return f"first {FORM_NAMES.get(step.form, step.form)}"


def op_summary(tl: Timeline, step: Step, limit: int = 4) -> str:
    """Op count changes: ops that appear or vanish entirely first, then the largest changes."""
    before = tl.previous_ir(step)
    old = tl.irs[before].ops if before is not None else {}
    new = tl.irs[step.after].ops if step.after is not None else {}

    def rank(item):
        name, delta = item
        return (name in old and name in new, -abs(delta), name)

    items = sorted(step.ops.items(), key=rank)
    text = ", ".join(f"{v:+d} {k}" for k, v in items[:limit])
    return text + (f", … {len(items) - limit} more" if len(items) > limit else "")


def first_of_stage(tl: Timeline, stage: str | None) -> Step | None:
    """The first step a stage's passes made (for opening the timeline where the reader was)."""
    return next((s for s in tl.steps if s.stage == stage), None)


def line_stage_problem(stage: str | None) -> str | None:
    """Why a line of `stage` cannot be traced to a pass, whatever the timeline holds (None: it may be)."""
    if stage == "source":
        return "source is the IR before the first pass: Triton's frontend wrote every line of it"
    if stage not in ("ttir", "ttgir", "llir"):
        return (f"{stage} is not in the pass timeline (it holds TTIR, TTGIR and LLVM IR): "
                "put the cursor on a line of ttir, ttgir or llir")
    return None


@dataclass(frozen=True)
class TimelineAsk:
    """What the reader's `p` (`P`: for the line under the cursor) asks of the timeline, or why it cannot."""

    problem: str | None = None  # said as a warning instead of opening the timeline
    timeout: float | None = None  # how long the warning stays (None: the app's default)
    line: str | None = None  # the IR line whose pass to find


def timeline_ask(snapshot: Snapshot | None, stage: str | None, lines: list[str], cursor: int,
                 for_line: bool) -> TimelineAsk:
    """Whether the timeline can open from the reader (`stage`, cursor on `lines[cursor]`), and at what."""
    if snapshot is None:
        return TimelineAsk("open a snapshot first (Enter in the tree)")
    problem = timeline_problem(snapshot)
    if problem is not None:
        return TimelineAsk(f"{problem.message}\n{problem.hint}", timeout=10)
    if not for_line:
        return TimelineAsk()
    reason = line_stage_problem(stage or "this tab")
    if reason is None and not len(lines):
        reason = f"{stage} is empty"
    return TimelineAsk(reason) if reason is not None else TimelineAsk(line=lines[cursor])


def stage_step(tl: Timeline, stage: str) -> tuple[Step | None, str]:
    """The step whose IR is what the reader shows for `stage` (its last pass), or why there is none."""
    problem = line_stage_problem(stage)
    if problem is not None:
        return None, problem
    form = "llvm" if stage == "llir" else "mlir"
    steps = [s for s in tl.steps if s.stage == stage and s.form == form and s.after is not None
             and tl.irs[s.after].style == "main"]
    if steps:
        return steps[-1], ""
    if stage == "llir":
        return None, ("llir is LLVM IR, and this timeline holds Triton's MLIR passes only (its llir steps are "
                      "MLIR's LLVM dialect): recompile with --passes all for LLVM's passes")
    return None, f"no {stage} pass was recorded in this timeline"


@dataclass(frozen=True)
class StepDiff:
    """A step's IR before and after, normalised and aligned row by row for DiffView."""

    left: Document
    right: Document
    rows: list[Row]
    note: str = ""


def step_diff(tl: Timeline, step: Step, theme: str = DARK_THEME) -> StepDiff:
    """What `step` did, normalised as `irscope passes --diff` does (whole IRs, for scrolling through)."""
    if step.after is None:
        empty = Document("", "")
        return StepDiff(empty, empty, [], f"no IR after this step: {change_text(step)}")
    before = tl.previous_ir(step)
    after_form = tl.irs[step.after].form
    new = tl.comparable(step.after)
    old = tl.comparable(before) if before is not None else ""
    note = ""
    if before is None:
        note = "nothing before it to compare with"
    elif tl.irs[before].form != after_form:
        note = (f"the IR changes form here ({FORM_NAMES[tl.irs[before].form]} → {FORM_NAMES[after_form]}): "
                "the two sides are different languages")
    elif tl.irs[before].style != tl.irs[step.after].style:
        # The pipeliner's own dumps print without aliases and value names: compare in one spelling.
        old, new = canonical_mlir(old), canonical_mlir(new)
        note = "compared canonically: values renamed %vN, #aliases expanded (this pass's own dumps print without them)"
    lexer = LEXER_STAGE.get(after_form, "")
    left = Document(old, LEXER_STAGE.get(tl.irs[before].form, "") if before is not None else lexer, theme=theme)
    right = Document(new, lexer, theme=theme)
    return StepDiff(left, right, align(left.lines, right.lines), note)


def step_ir(tl: Timeline, step: Step, theme: str = DARK_THEME) -> Document:
    """The IR after a step, as the compiler printed it."""
    if step.after is None:
        return Document(f"no IR after step {step.n} ({change_text(step)})", "")
    return Document(tl.text(step.after), LEXER_STAGE.get(tl.irs[step.after].form, ""), theme=theme)


@dataclass(frozen=True)
class Origin:
    """The answer to "which pass introduced this line": the step, or a sentence saying why there is none."""

    line: str  # the line as compared: normalised (no debug locations)
    anchor: Step | None  # the step whose IR the line was taken from
    step: Step | None
    message: str


def origin_of(tl: Timeline, anchor: Step, line: str) -> Origin:
    """The step that introduced `line`, a line of the IR after `anchor` (as printed, or normalised)."""
    wanted = normalize_line(anchor.form, line)
    if wanted is None or not wanted.strip():
        return Origin(line.strip(), anchor, None, "this line is only debug information (a location): "
                                                  "pick a line with an operation")
    wanted = wanted.strip()
    if anchor.after is None or wanted not in {ln.strip() for ln in tl.comparable(anchor.after).split("\n")}:
        return Origin(wanted, anchor, None, f"this line is not in the IR after #{anchor.n} {anchor.label}")
    step = line_origin(tl, anchor, wanted)
    if step is None:
        return Origin(wanted, anchor, None, "there before the first pass: Triton's frontend wrote it "
                                            "(the source stage)")
    message = f"introduced by #{step.n} {step.stage} {step.label}"
    before = tl.previous_ir(step)
    if before is not None and step.after is not None and tl.irs[before].style != tl.irs[step.after].style:
        message += (" (by its text: the pass's own intermediate dumps print without aliases and value names, "
                    "so the op may come from an earlier part)")
    return Origin(wanted, anchor, step, message)


def line_rows(rows: list[Row], right: Document, line: str) -> list[int]:
    """The rows whose right-hand line is `line` (stripped), changed rows first."""
    wanted = line.strip()
    found = [k for k, r in enumerate(rows) if r.right is not None and right.lines[r.right].strip() == wanted]
    return sorted(found, key=lambda k: rows[k].kind == "equal")


def matching_lines(lines: list[str], form: str, kind: str, text: str) -> list[int]:
    """Indexes of the lines of an IR (as printed) that are `text` once normalised (kind "line") or that
    match a pattern (kind "pattern")."""
    if kind == "pattern":
        try:
            regex = compile_pattern(text)
        except IrscopeError:
            return []
        return [i for i, ln in enumerate(lines) if regex.search(ln)]
    wanted = text.strip()
    return [i for i, ln in enumerate(lines) if (normalize_line(form, ln) or "").strip() == wanted]


def pattern_rows(rows: list[Row], right: Document, pattern: str) -> list[int]:
    """The rows whose right-hand line matches `pattern` (an op name or a regex), changed rows first."""
    try:
        regex = compile_pattern(pattern)
    except IrscopeError:  # a bad pattern was reported when it was searched for
        regex = re.compile(re.escape(pattern))
    found = [k for k, r in enumerate(rows) if r.right is not None and regex.search(right.lines[r.right])]
    return sorted(found, key=lambda k: rows[k].kind == "equal")
