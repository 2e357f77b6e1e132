"""Score `irscope rank LAUNCHES.json` against a third-party library's own autotuner on the H200.

A program's autotuned kernel, captured device-less (`irscope capture --as sm_90a`), is ranked from its
launch file (`irscope rank LAUNCHES.json --gpu h200 --json`: docs/rank/autotune/ranking-*.json); the same
call of the library's own wrapper, on the H200, made its autotuner time every config
(benchmarks/autotune_timings.py: docs/rank/autotune/timings-*.json). Configs are joined by their
constexprs, warps and stages; the scores are docs/rank.md's (Spearman, the measured best in the predicted
top 1 / top 5, the slowdowns). A second timing pass of the same call gives how far the GPU's own order
moves between runs, and `--retime`'s do_bench times check the autotuner's.

    python benchmarks/rank_autotune_eval.py [--json docs/rank/autotune.json]
    python benchmarks/rank_autotune_eval.py --rankings docs/rank/autotune/model15 --only flaggems \
        [--json docs/rank/autotune-model15.json]   # FlagGems ranked again by model 15, the same timings
    python benchmarks/rank_autotune_eval.py --top-n [--rankings DIR --only flaggems]   # how many to time
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
DATA = ROOT / "docs" / "rank" / "autotune"
# (the row's title, the stem of its ranking-STEM.json, timings-STEM.json and timings-STEM-2.json)
ROWS = [("fla chunk_fwd_kernel_h, B=8 T=4096 H=16 K=V=128 bf16", "fla-B8-T4096"),
        ("fla chunk_fwd_kernel_h, B=1 T=16384 H=16 K=V=128 bf16", "fla-B1-T16384"),
        ("liger _swiglu_kernel_forward, 8192 x 4096 -> 2 x 11008 bf16", "liger-mlp"),
        ("flag_gems mm_kernel_general_host_tma, 4096 x 4096 x 4096 bf16", "flaggems-mm-M4096-N4096-K4096"),
        ("flag_gems mm_kernel_general_host_tma, 8192 x 8192 x 1024 bf16", "flaggems-mm-M8192-N8192-K1024"),
        # ranked by model 12 (frozen, 462a103) before these sizes were timed
        ("flag_gems mm_kernel_general_host_tma, 8192 x 8192 x 2048 bf16", "flaggems-mm-M8192-N8192-K2048"),
        ("flag_gems mm_kernel_general_host_tma, 16384 x 4096 x 1024 bf16", "flaggems-mm-M16384-N4096-K1024"),
        # ranked by model 13 (frozen, 8ba4f2e) before these sizes were timed
        ("flag_gems mm_kernel_general_host_tma, 12288 x 12288 x 1024 bf16", "flaggems-mm-M12288-N12288-K1024"),
        ("flag_gems mm_kernel_general_host_tma, 5120 x 5120 x 2048 bf16", "flaggems-mm-M5120-N5120-K2048")]


def _key(kwargs: dict, warps: int, stages: int) -> str:
    return json.dumps({"kwargs": {k: kwargs[k] for k in sorted(kwargs)}, "w": warps, "s": stages}, sort_keys=True)


def predictions(ranking: dict, model: int | None = None) -> dict[str, float | None]:
    """{config key: predicted ms, None if it cannot launch} from `irscope rank --json`'s first size: the
    ranking's own estimates, or, given a model, that model's estimates of the same facts and problems."""
    (entry,) = ranking["sizes"]
    if model is not None and not recomputable(ranking, model):
        raise ValueError("this ranking does not keep each config's problem")
    def own(e: dict):  # the ranking's own estimate, as it sorted by: (ms, crowding; 0 before model 22)
        return None if e["ms"] is None else (e["ms"], e.get("crowding", 0.0))

    return {(r["facts"]["label"], r["facts"].get("config_warps") or r["facts"]["num_warps"], r["facts"]["num_stages"]): (
        r["facts"]["constexprs"], own(r["estimate"]) if model is None else _estimate(ranking, r, model))
        for r in entry["ranking"]}


def recomputable(ranking: dict, model: int | None = None) -> bool:
    """Whether another model's estimates can be made from this ranking: `irscope rank --json` keeps each
    config's own problem since 2026-12-02 (FLA's and Liger's rankings are older: their grids and trip
    counts per config are not in them, and the size's are not every config's); and model 15 needs each
    wgmma config's repetitions down M, a fact the rankings made before it lack (it would price them as
    model 14 does, silently); model 16 whether each loop that multiplies has programs of equal lengths
    (`ragged_loop`), which the rankings made before it lack (a persistent kernel's would be taken as
    waves in lockstep); models 17-20 their own L1 counts (Facts.newest_model)."""
    from irscope.rank.facts import Facts
    rows = [r for entry in ranking["sizes"] for r in entry["ranking"]]
    if model is not None and any(Facts.from_dict(r["facts"]).newest_model() < model for r in rows):
        return False  # and so on for each later model's facts (Facts.newest_model)
    return all("problem" in r for r in rows)


def _estimate(ranking: dict, r: dict, model: int) -> float | None:
    from irscope.rank import chip_for, estimate
    from irscope.rank.facts import Facts
    from irscope.spec.problem import Problem
    p = r["problem"]


    problem = Problem(p["kernel"], p["size_name"], p["size"], tuple(p["grid"]), p["flops"], p["min_bytes"],
                      trips=p.get("trips"), loop=p.get("loop"))
    e = estimate(Facts.from_dict(r["facts"]), problem, chip_for(ranking["target"], ranking["gpu"]), model)
    # (model 22 orders configs predicted to the same time: its predictions are (ms, crowding))
    return (e.key if model >= 22 else e.ms) if e.launchable else None


def joined(ranking: dict, timings: dict, field: str = "ms", model: int | None = None) -> tuple[dict, dict]:
    """(predicted, measured) ms by config key, over the configs the autotuner had."""
    names = {k for c in timings["configs"] for k in c["kwargs"]}
    predicted = {}
    for (_, warps, stages), (constexprs, ms) in predictions(ranking, model).items():
        predicted[_key({k: v for k, v in constexprs.items() if k in names}, warps, stages)] = ms
    measured = {}
    for c in timings["configs"]:
        value = c[field] if field == "ms" else (c.get("retimed") or {}).get("ms")
        measured[_key(c["kwargs"], c["num_warps"], c["num_stages"])] = value
    missing = set(measured) - set(predicted)
    if missing:
        raise SystemExit(f"{len(missing)} timed configs have no prediction, e.g. {sorted(missing)[0]}")
    return predicted, measured


def score(stem: str, model: int | None = None, rankings: Path | None = None) -> dict:
    """One row's figures: its ranking (from `rankings`, a folder of `ranking-STEM.json`, instead of the
    committed one where given) against the committed timings."""
    from irscope.rank.evaluate import evaluate, spearman
    ranking = json.loads(((rankings or DATA) / f"ranking-{stem}.json").read_text())
    if model is not None and not recomputable(ranking, model):
        model = None  # scored on the estimates it was ranked with (the row says so)
    first = json.loads((DATA / f"timings-{stem}.json").read_text())
    second = json.loads((DATA / f"timings-{stem}-2.json").read_text())
    predicted, measured = joined(ranking, first, model=model)
    ev = evaluate(predicted, measured)
    _, again = joined(ranking, second)
    _, retimed = joined(ranking, first, "retimed")
    both = [k for k in measured if measured[k] is not None and again.get(k) is not None]
    checked = [k for k in measured if measured[k] is not None and retimed.get(k) is not None]
    ev2 = evaluate(predicted, again)
    return {"configs": len(measured), "timed": sum(v is not None for v in measured.values()),
            "predicted_unlaunchable": sum(v is None for v in predicted.values()),
            "failed_on_gpu": sorted(k for k, v in measured.items() if v is None),
            "evaluation": ev.as_dict(), "second_pass": ev2.as_dict(),
            "gpu_run_to_run_spearman": round(spearman([measured[k] for k in both], [again[k] for k in both]), 4),
            "autotuner_vs_do_bench_spearman": round(spearman([measured[k] for k in checked],
                                                             [retimed[k] for k in checked]), 4),
            "versions": first["versions"], "gpu": first["gpu"]["name"], **({"model": model} if model else {})}


def top_n(rankings: Path | None = None, only: str = "") -> dict:
    """rank_eval.py's `top_n` over these rows (their rankings against the autotuner's first timing pass):
    how many of the predicted fastest configs a user of the library has to time."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from rank_eval import top_n as count

    preds, meas = {}, {}
    for _, stem in ROWS:
        path = (rankings or DATA) / f"ranking-{stem}.json"
        if not stem.startswith(only) or not path.is_file():
            continue
        predicted, measured = joined(json.loads(path.read_text()), json.loads((DATA / f"timings-{stem}.json").read_text()))
        preds[stem], meas[stem] = {"": predicted}, {"": measured}
    return count(preds, meas)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", type=Path, help="write the figures here")
    ap.add_argument("--model", type=int, help="score this model's estimates of the rankings' facts instead of "
                                              "the estimates they were ranked with")
    ap.add_argument("--rankings", type=Path, help="score the ranking-STEM.json files of this folder (a later "
                                                   "model's rankings of the same programs) against the same timings")
    ap.add_argument("--only", default="", help="score only the rows whose stem starts with this")
    ap.add_argument("--top-n", action="store_true", help="how many of each ranking's top configs to time instead")
    args = ap.parse_args(argv)
    if args.top_n:
        doc = top_n(args.rankings, args.only)
        print(f"{doc['rows']} rows: timing the predicted top N finds a config within 3% / 1% of the autotuner's best at")
        for n, c in doc["top_n"].items():
            print(f"  N = {n:>2}: {c['within_3pct']} / {c['within_1pct']} rows")
        for stem, r in doc["by_row"].items():
            print(f"  {stem}: {r['']['configs']} configs, N = {r['']['within_3pct']} for 3%, {r['']['within_1pct']} for 1%")
        return 0
    out = {}
    print("| kernel and size | configs timed (refused at launch) | Spearman (2nd pass) | best in top-1 / top-5 "
          "| predicted top-1 slower | best of top-5 slower | GPU run to run |")
    print("|---|---|---|---|---|---|---|")
    for title, stem in ROWS:
        if not stem.startswith(args.only):
            continue
        r = out[stem] = {"title": title, **score(stem, args.model, args.rankings)}
        e, e2 = r["evaluation"], r["second_pass"]
        if args.model is not None and "model" not in r:
            title += " (its ranking's own estimates: it lacks what this model reads)"
        print(f"| {title} | {r['timed']} ({len(r['failed_on_gpu'])}) | {e['spearman']:.3f} ({e2['spearman']:.3f}) "
              f"| {'yes' if e['best_in_top1'] else 'no'} / {'yes' if e['best_in_top5'] else 'no'} "
              f"| {e['top1_slowdown']:.1%} | {e['top5_slowdown']:.1%} | {r['gpu_run_to_run_spearman']:.3f} |")
    if args.json:
        args.json.write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
