"""How good a ranking is, against measured times: the figures docs/rank.md reports per space and size."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping


def _ranks(values: list[float]) -> list[float]:
    """Average ranks (1-based), ties sharing the mean of their places."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def spearman(a: list[float], b: list[float]) -> float:
    """Spearman's rank correlation of two equally long lists (Pearson's r of their ranks)."""
    if len(a) != len(b) or len(a) < 2:
        raise ValueError("spearman needs two lists of the same length, at least 2")
    ra, rb = _ranks(a), _ranks(b)
    ma, mb = sum(ra) / len(ra), sum(rb) / len(rb)
    cov = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    va = math.sqrt(sum((x - ma) ** 2 for x in ra))
    vb = math.sqrt(sum((y - mb) ** 2 for y in rb))
    return cov / (va * vb) if va and vb else 0.0


@dataclass(frozen=True)
class Evaluation:
    """A ranking of one space at one size, against the measured times of the configs that ran."""

    configs: int  # configs both predicted and measured (launchable and correct)
    spearman: float
    best: str  # the measured fastest config
    predicted_top1: str
    best_in_top1: bool
    best_in_top5: bool
    top1_slowdown: float  # measured time of the predicted top-1 over the measured best, minus 1
    top5_slowdown: float  # the best measured time among the predicted top-5, over the measured best, minus 1
    unlaunchable_predicted: int  # configs the model says cannot launch
    unlaunchable_agreed: int  # ... of which the GPU also refused or failed them

    def as_dict(self) -> dict:
        return dict(vars(self))


def evaluate(predicted_ms: Mapping[str, float | None], measured_ms: Mapping[str, float | None]) -> Evaluation:
    """Compare predictions with measurements, by config label. None (or inf) means "cannot launch" /
    "did not run"; only configs with both a prediction and a measurement enter the correlation."""
    both = sorted(k for k, v in predicted_ms.items()
                  if _finite(v) and _finite(measured_ms.get(k)))
    if len(both) < 2:
        raise ValueError("fewer than two configs were both predicted and measured")
    pred = [float(predicted_ms[k]) for k in both]
    meas = [float(measured_ms[k]) for k in both]
    by_pred = sorted(both, key=lambda k: (predicted_ms[k], k))
    best = min(both, key=lambda k: (measured_ms[k], k))
    t_best = float(measured_ms[best])
    top5 = by_pred[:5]
    no_launch = [k for k, v in predicted_ms.items() if not _finite(v)]
    return Evaluation(
        configs=len(both), spearman=round(spearman(pred, meas), 4), best=best, predicted_top1=by_pred[0],
        best_in_top1=by_pred[0] == best, best_in_top5=best in top5,
        top1_slowdown=round(float(measured_ms[by_pred[0]]) / t_best - 1, 4),
        top5_slowdown=round(min(float(measured_ms[k]) for k in top5) / t_best - 1, 4),
        unlaunchable_predicted=len(no_launch),
        unlaunchable_agreed=sum(1 for k in no_launch if not _finite(measured_ms.get(k))))


def _finite(v) -> bool:
    return v is not None and math.isfinite(float(v))
