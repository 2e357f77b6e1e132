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
    # Configs predicted alike leave a ranking's order among them to the label (above). The same figures
    # at the worst order among them: how many share the first place's prediction, how many the fifth's
    # (those past the fifth among them too; 1 where every config tied with the fifth is in the top 5, as
    # in a space of five configs or fewer), and the slowdowns if the slowest of them were taken.
    ties_top1: int = 1
    ties_top5: int = 1
    top1_slowdown_worst: float = 0.0
    top5_slowdown_worst: float = 0.0

    def as_dict(self) -> dict:
        return dict(vars(self))


def evaluate(predicted_ms: Mapping[str, "float | tuple | list | None"],
             measured_ms: Mapping[str, float | None]) -> Evaluation:
    """Compare predictions with measurements, by config label. None (or inf) means "cannot launch" /
    "did not run"; only configs with both a prediction and a measurement enter the correlation. A
    prediction is a time, or (time, crowding) as model 22 orders configs predicted to the same time
    (Estimate.key); configs whose predictions are equal are tied: Spearman gives them their mean rank, the
    top-1 and top-5 take them by label, and the `_worst` figures take the slowest of them."""
    both = sorted(k for k, v in predicted_ms.items()
                  if _finite(v) and _finite(measured_ms.get(k)))
    if len(both) < 2:
        raise ValueError("fewer than two configs were both predicted and measured")
    key = {k: prediction_key(predicted_ms[k]) for k in both}
    meas = [float(measured_ms[k]) for k in both]
    by_pred = sorted(both, key=lambda k: (key[k], k))
    best = min(both, key=lambda k: (measured_ms[k], k))
    t_best = float(measured_ms[best])
    top5 = by_pred[:5]
    no_launch = [k for k, v in predicted_ms.items() if not _finite(v)]
    # The worst order among ties: the slowest of those tied at the first place; at the fifth, those
    # predicted ahead of it and the slowest of those tied with it
    first = [k for k in both if key[k] == key[by_pred[0]]]
    fifth = key[top5[-1]]
    ahead = [k for k in both if key[k] < fifth]
    tied = sorted((k for k in both if key[k] == fifth), key=lambda k: -float(measured_ms[k]))
    worst5 = ahead + tied[:len(top5) - len(ahead)]
    if len(ahead) + len(tied) <= len(top5):
        tied = [top5[-1]]  # all of them are in the top 5 whatever their order: none shares a place at its edge
    return Evaluation(
        configs=len(both), spearman=round(spearman([key[k] for k in both], meas), 4), best=best,
        predicted_top1=by_pred[0], best_in_top1=by_pred[0] == best, best_in_top5=best in top5,
        top1_slowdown=round(float(measured_ms[by_pred[0]]) / t_best - 1, 4),
        top5_slowdown=round(min(float(measured_ms[k]) for k in top5) / t_best - 1, 4),
        unlaunchable_predicted=len(no_launch),
        unlaunchable_agreed=sum(1 for k in no_launch if not _finite(measured_ms.get(k))),
        ties_top1=len(first), ties_top5=len(tied),
        top1_slowdown_worst=round(max(float(measured_ms[k]) for k in first) / t_best - 1, 4),
        top5_slowdown_worst=round(min(float(measured_ms[k]) for k in worst5) / t_best - 1, 4))


def prediction_key(v) -> tuple[float, float]:
    """A prediction as what a ranking sorts by: (time, model 22's crowding; 0 for a bare time)."""
    if isinstance(v, (tuple, list)):
        return (float(v[0]), float(v[1]) if len(v) > 1 else 0.0)
    return (float(v), 0.0)


def _finite(v) -> bool:
    return v is not None and math.isfinite(prediction_key(v)[0])
