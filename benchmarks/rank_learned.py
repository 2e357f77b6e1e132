"""Does a learned correction of the rank model's times rank better, trained only on other kernels?

The issue that asked for `irscope rank` allows a learned correction only if it is trained on kernels other
than those it is evaluated on. This script tries the simplest honest one and scores it as docs/rank.md
scores the models:

    python benchmarks/rank_learned.py [--model 15] [--json docs/rank/learned.json]

The correction multiplies a config's predicted time by exp(w . x): x is what the model already knows of the
config at the size (each demand of its fullest wave over the largest, the bound that dominates, warps,
stages, programs an SM, waves, the wave's fill, a main loop, wgmma's repetitions and N, the time itself;
FEATURES), and w is a ridge regression of log(measured / predicted) on x. Each kernel's rows are scored
with a w trained without them (leave one kernel out: the row softmax and its fp16 twin are one kernel,
attention and causal attention another), on

- `others`: the calibration's rows (docs/rank/calibration-facts*.json: kernels of our own, never the
  evaluation's) and every other kernel's evaluation rows, or
- `calibration`: the calibration's rows alone,

at several ridge weights. Both goals (Spearman >= 0.8, a config within 3% of the best in the predicted
top 5) are counted per row, beside the model's own count. numpy solves the regression (the test extra
has it); nothing here changes irscope's model.
"""
from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

DOCS = ROOT / "docs" / "rank"
CALIBRATION = ("calibration-facts.json", "calibration-facts-waves.json", "calibration-facts-swaves.json",
               "calibration-facts-rows.json", "calibration-facts-frows.json", "calibration-facts-onerow.json",
               "calibration-facts-mrows.json")
# Kernels: a space's kernel source. The fp16 row softmax is the row softmax's source at another dtype, and
# causal attention is attention's source with its causal switch on: each pair is left out together.
KERNEL_OF = {"matmul": "matmul", "attention": "attention", "attention.causal": "attention", "add": "add",
             "softmax": "softmax", "softmax.fp16": "softmax", "softmax.persistent": "softmax.persistent"}
DEMANDS = ("tensor core", "issue", "shared memory", "L2", "memory", "latency")
BOUNDS = ("tensor core", "issue", "spills", "shared memory", "L2", "memory", "latency", "program starts")
FEATURES = ("constant", *(f"{d} / largest" for d in DEMANDS), *(f"bound: {b}" for b in BOUNDS),
            "log2 warps / 5", "stages / 5", "programs an SM / 8", "log2 waves / 8", "wave fill", "main loop",
            "wgmma repetitions / 4", "log2 wgmma N / 8", "wgmma", "log(1 + us) / 8")
LAMBDAS = (1.0, 10.0, 100.0, 1000.0)
TRAINED_ON = ("others", "calibration")


def features(facts, estimate) -> list[float]:
    """What the model knows of one config at one size, as numbers of about one (FEATURES, in order)."""
    terms = estimate.terms_us or {}
    largest = max([v for v in terms.values() if v] or [1.0])
    return [1.0, *((terms.get(d) or 0.0) / largest for d in DEMANDS),
            *(1.0 if estimate.bound == b else 0.0 for b in BOUNDS),
            math.log2(facts.num_warps) / 5, facts.num_stages / 5, min(facts.blocks_per_sm, 8) / 8,
            math.log2(max(1, estimate.waves)) / 8, estimate.wave_fill, 1.0 if facts.loop else 0.0,
            (facts.mma_m_reps or 0) / 4, math.log2(facts.mma_n) / 8 if facts.mma_n else 0.0,
            1.0 if facts.instruction == "wgmma" else 0.0, math.log1p(estimate.ms * 1e3) / 8]


def rows_of(model: int) -> tuple[list[tuple], list[tuple], dict]:
    """(calibration rows, evaluation rows, the measured times by space and size): each row (kernel, (space,
    size) or None, label, x, log error or None, predicted ms), launchable configs only; an evaluation row's
    log error is None where it did not run."""
    from irscope.rank import chip_for, estimate
    from irscope.rank.facts import Facts
    from irscope.spec.problem import Problem

    sys.path.insert(0, str(ROOT / "benchmarks"))
    import rank_eval

    chip = chip_for("sm_90a", "h200")
    calibration = []
    for name in CALIBRATION:
        for r in json.loads((DOCS / name).read_text())["rows"]:
            f, p = Facts.from_dict(r["facts"]), r["problem"]
            e = estimate(f, Problem("calibration", "", {}, (p["programs"],), p["flops"], p["min_bytes"]), chip, model)
            if e.launchable and r.get("ms"):
                calibration.append(("calibration", None, f.label, features(f, e), math.log(r["ms"] / e.ms), e.ms))
    facts_doc = json.loads((DOCS / "facts.json").read_text())
    meas = rank_eval.measured(json.loads((DOCS / "measured.json").read_text()))
    evaluation = []
    for space, doc in facts_doc["spaces"].items():
        for c in doc["configs"]:
            f = Facts.from_dict(c["facts"])
            for size, p in c["problems"].items():
                problem = Problem(p["kernel"], p["size_name"], p["size"], tuple(p["grid"]), p["flops"], p["min_bytes"])
                e = estimate(f, problem, chip, model)
                if not e.launchable:
                    continue
                ms = meas.get(space, {}).get(size, {}).get(f.label)
                evaluation.append((KERNEL_OF[space], (space, size), f.label, features(f, e),
                                   math.log(ms / e.ms) if ms else None, e.ms))
    return calibration, evaluation, meas


def ridge(rows: list[tuple], lam: float):
    """w minimising |X w - y|^2 + lam |w|^2 (the constant unpenalised)."""
    import numpy as np

    x = np.array([r[3] for r in rows])
    y = np.array([r[4] for r in rows])
    a = x.T @ x + lam * np.eye(x.shape[1])
    a[0, 0] -= lam
    return np.linalg.solve(a, x.T @ y)


def score_kernel(kernel: str, evaluation: list[tuple], meas: dict, w) -> dict:
    """Both goals and Spearman at each of `kernel`'s rows, by the model and corrected by `w` (None: not)."""
    from irscope.rank.evaluate import evaluate

    by_row: dict = {}
    for r in evaluation:
        if r[0] == kernel:
            by_row.setdefault(r[1], []).append(r)
    out = {}
    for (space, size), rows in sorted(by_row.items()):
        timed = meas.get(space, {}).get(size)
        if not timed or sum(v is not None for v in timed.values()) < 2:
            continue
        preds = {r[2]: r[5] * (math.exp(sum(a * b for a, b in zip(w, r[3]))) if w is not None else 1.0) for r in rows}
        ev = evaluate({label: preds.get(label) for label in timed}, timed)
        out[f"{space} {size}"] = {"spearman": ev.spearman, "top5_slowdown": ev.top5_slowdown,
                                  "both": ev.spearman >= 0.8 and ev.top5_slowdown <= 0.03}
    return out


def summary(scored: dict) -> dict:
    rows = list(scored.values())
    return {"rows": len(rows), "both_goals": sum(r["both"] for r in rows),
            "mean_spearman": round(statistics.mean(r["spearman"] for r in rows), 4)}


def run(model: int) -> dict:
    calibration, evaluation, meas = rows_of(model)
    kernels = sorted(set(KERNEL_OF.values()))
    out = {"model": model, "features": list(FEATURES), "calibration_rows": len(calibration),
           "evaluation_rows": sum(r[4] is not None for r in evaluation), "kernels": kernels,
           "model_alone": {k: summary(score_kernel(k, evaluation, meas, None)) for k in kernels}}
    for trained_on in TRAINED_ON:
        for lam in LAMBDAS:
            per = {}
            for k in kernels:
                train = calibration + ([r for r in evaluation if r[0] != k and r[4] is not None]
                                       if trained_on == "others" else [])
                per[k] = summary(score_kernel(k, evaluation, meas, [float(v) for v in ridge(train, lam)]))
            out[f"{trained_on}, lambda {lam:g}"] = per
    for key, per in list(out.items()):
        if isinstance(per, dict) and set(per) == set(kernels):
            out[key] = {**per, "all": {"rows": sum(p["rows"] for p in per.values()),
                                       "both_goals": sum(p["both_goals"] for p in per.values())}}
    return out


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", type=int, default=15)
    ap.add_argument("--json", type=Path, help="write the figures here (docs/rank/learned.json)")
    args = ap.parse_args(argv)
    out = run(args.model)
    text = json.dumps(out, indent=1, sort_keys=True)
    if args.json:
        args.json.write_text(text + "\n")
    for key, per in out.items():
        if isinstance(per, dict) and "all" in per:
            cells = "  ".join(f"{k} {v['both_goals']}/{v['rows']}" for k, v in per.items() if k != "all")
            print(f"{key:24s} both goals at {per['all']['both_goals']:3d} of {per['all']['rows']}: {cells}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
