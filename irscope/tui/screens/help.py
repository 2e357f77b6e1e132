"""HelpScreen: every key, by screen, and what the views show."""
from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Markdown

HELP = """\
# irscope tui

Browse the snapshots `irscope compile` writes (and Triton cache folders), read every stage with
highlighting, follow a Python line into the IR and back, compare two snapshots, compile new ones.

## Everywhere

| key | does |
|---|---|
| `?` / `F1` | this help |
| `q` | quit (on the compare, pass timeline and layout screens `q` and `Esc` go back; `Esc` closes a dialog) |
| `Ctrl+F` | filter the snapshot tree (words match kernel, variant, target) |
| `b` | show or hide the snapshot tree |
| `<` `>` | narrow / widen the snapshot tree |
| `m` | mark the open snapshot (or the one under the tree's cursor) as side A |
| `d` | compare: the marked snapshot with the open one, else the open one with a sibling |
| `c` | compile a kernel for targets and options (in the background) |
| `Tab` | move between the tree, the code and the Python source |

## Reading a snapshot

| key | does |
|---|---|
| `[` `]` / `1`..`9` | previous / next stage, or stage by number; click a tab too |
| `↑↓` `j k`, `PgUp PgDn Space`, `g G Home End` | move the cursor, a page, to the top or bottom |
| `← →` `h l` | scroll sideways |
| `/` then `n` / `N` | search (smart case), next and previous match |
| `:` / `Ctrl+G` | go to a line number |
| `f` / `F`, `o` / `O` | next / previous function, loop |
| `Enter` | jump across: Python line → the IR it became, IR line → its Python line |
| `v` | split: the Python source beside the stage |
| `r` | show or hide the resource panel |
| `p` | the pass timeline (snapshots compiled with `irscope compile ... --passes`) |
| `P` | the pass that introduced the IR line under the cursor (ttir, ttgir; llir with `--passes all`) |
| `L` | the layouts the snapshot uses, at the one of the TTGIR line under the cursor (docs/layouts.md) |

Stages are Triton's: `python` (the kernel's file), `source (TTIR₀)` (Triton's `source` stage: the TTIR its
frontend produced before any pass), `ttir`, `ttgir`, `llir`, `ptx` or `amdgcn`, `sass`.
A marked bar (▌) shows the lines that belong to the Python line under the cursor; the status line
counts them per stage.

## Comparing

| key | does |
|---|---|
| `[` `]` | previous / next stage |
| `u` | side by side ⇄ unified |
| `n` / `N` | next / previous change |
| `t` `w` `s` `a` `k` | B becomes the sibling that differs from A only in target, num_warps, num_stages, alignment, constexprs (press again for the next one) |
| `x` | swap A and B |
| `e` | every resource and counter delta (folded to 4 lines, `… N more`; again: fold) |
| `Esc` | back to reading |

Stages are compared after `irscope.ir.normalize` (no debug locations, paths or SASS offsets), as
`irscope diff` does; resource and counter deltas are listed above the diff.

## Pass timeline

The IR after every compiler pass, for a snapshot compiled with `irscope compile KERNEL --target T --passes`.

| key | does |
|---|---|
| `↑↓` `j k` | previous / next step (the diff follows) |
| `[` `]` | previous / next pass that changed the IR |
| `c` | show only the passes that changed the IR (again: all) |
| `i` | the diff ⇄ the IR after the pass, as printed |
| `u` | unified ⇄ side by side |
| `n` / `N` | next / previous change in the diff |
| `/` | op name or regex: jump to the pass where it first appears (and say where it disappears) |
| `Enter` / `P` | on a line of the IR after a pass: jump to the pass that introduced it |
| `:` | go to a step by number |
| `Tab` | between the list of passes and the diff |
| `Esc` | back to reading |

Diffs are normalised as `irscope passes --diff` prints them (no debug locations). "Introduced" is by
text: the first pass after which the line is there, unchanged, up to the pass you are looking at.

## Layouts

| key | does |
|---|---|
| `↑↓` | choose an encoding (at a shape) or a `convert_layout` |
| `Tab` | between the list and the grid (arrows scroll the grid) |
| `Esc` | back to reading |

## Compile dialog

| key | does |
|---|---|
| `Tab` / `→` | in the kernel field: take the suggested name (else `Tab` goes to the next field) |
| `Enter` / `Ctrl+S` | compile |
| `Esc` | close (compiles already running go on and land in the tree) |
"""


class HelpScreen(ModalScreen):
    """Keys and views, in one scrollable page."""

    BINDINGS = [Binding("escape,q,question_mark,f1", "dismiss", "Close")]
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll { width: 90%; max-width: 110; height: 90%; border: thick $accent;
                                  background: $surface; padding: 0 1; }
    """

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Markdown(HELP)
