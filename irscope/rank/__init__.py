"""Rank an autotune space without running it: compile facts + a chip's peaks -> predicted times.

    facts.py     what a snapshot says about the work of one program (TTGIR) and its resources
    chips.py     the published peaks of the chips behind each target
    model.py     the cost model: waves of programs, each bounded by its slowest demand
    reason.py    an estimate's reason in words
    evaluate.py  how well a ranking matches measured times (Spearman, top-k, slowdowns)
    measured.py  the GPU times `irscope run` recorded beside a space's snapshots, for `rank --measured`
    export.py    the ranking as Triton autotune input: a pruned config list, an early_config_prune
    captured.py  a captured launch (`irscope capture`) as the problem to rank at, without a workload
    trips.py     a loop's trip count, its bounds read from the TTGIR with a launch's arguments
    plans.py     whether a workload's launch at a size keeps what the space was compiled for

docs/rank.md documents the model and its evaluation on the H200.
"""
from __future__ import annotations

from dataclasses import dataclass

from .chips import CHIPS, Chip, chip_for
from .facts import Facts, facts_of
from .model import DEFAULT_MODEL, Estimate, estimate

__all__ = ["CHIPS", "Chip", "chip_for", "Facts", "facts_of", "Estimate", "estimate", "Ranked", "rank"]


@dataclass(frozen=True)
class Ranked:
    """One config's place in a ranking."""

    place: int  # 1 is the predicted fastest; launchable configs first
    facts: Facts
    estimate: Estimate


def rank(facts: list[Facts], problem, chip: Chip, model: int = DEFAULT_MODEL) -> list[Ranked]:
    """Every config's estimate at `problem` on `chip`, fastest first (from model 22, configs predicted to the
    same time by how hard their demands crowd it: Estimate.key; ties left by label, so a ranking is stable)."""
    est = [(f, estimate(f, problem, chip, model)) for f in facts]
    est.sort(key=lambda fe: (fe[1].key, fe[0].label))
    return [Ranked(i + 1, f, e) for i, (f, e) in enumerate(est)]
