"""The pass timeline: the IR after every compiler pass of a compile, which pass changed what, which
pass introduced a pattern, and how two targets' pass pipelines differ.

`irscope compile --passes` records it (the harness captures Triton's dumps; `record` parses and
stores them); `irscope passes` and the TUI read it through the names below. Listing needs only the
index; IR texts are decompressed on first use. No Triton, no Textual (docs/passes.md).
"""
from .blame import Blame, Event, compile_pattern, find_pattern, line_origin, matching_hunks
from .pipelines import Row, align_pipelines, only_in, pipeline_steps
from .text import comparable_lines, count_ops, normalize_form, normalize_line, op_of
from .timeline import IRInfo, Step, Timeline, load_timeline

__all__ = ["Blame", "Event", "IRInfo", "Row", "Step", "Timeline", "align_pipelines", "comparable_lines",
           "compile_pattern", "count_ops", "find_pattern", "line_origin", "load_timeline", "matching_hunks",
           "normalize_form", "normalize_line", "only_in", "op_of", "pipeline_steps"]
