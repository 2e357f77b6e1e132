"""Many compiles at once: a sweep file (kernels x targets x an option grid), a content-keyed cache, and
the results as analyses.

    sweep = load_sweep("docs/examples/matmul-autotune.yaml")
    result = run_points(expand(sweep), sweep.out or default_out(), workers=2)
    result.rows[0].analysis.launch.launchable, result.summary()

A point is fresh when its snapshot folder already holds a compile with the content key `harness.plan`
gives now (kernel source with the jit functions it calls, target, options, specialisation, Triton
version): re-running an unchanged sweep compiles nothing. The format is documented in docs/sweep.md.

    file.py    the YAML file -> Sweep, KernelEntry; option names -> CompileOptions (options_for)
    points.py  Sweep -> SweepPoint (expand)
    run.py     plan_points, run_points -> SweepResult of SweepRow
"""
from .file import KernelEntry, Sweep, load_sweep, options_for
from .points import SweepPoint, TooManyPoints, expand
from .run import (PlannedPoint, SweepInterrupted, SweepProgress, SweepResult, SweepRow, TargetSummary, plan_points,
                  run_points)

__all__ = ["KernelEntry", "PlannedPoint", "Sweep", "SweepInterrupted", "SweepPoint", "SweepProgress", "SweepResult",
           "SweepRow", "TargetSummary", "TooManyPoints", "expand", "load_sweep", "options_for", "plan_points", "run_points"]
