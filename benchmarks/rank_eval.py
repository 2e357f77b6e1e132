"""The evaluation of `irscope rank` behind docs/rank.md, in two steps.

    python benchmarks/rank_eval.py facts SNAPSHOT_ROOT [WIDE_ROOT] [--only K,...]  # -> docs/rank/facts.json (no GPU)
    python benchmarks/rank_eval.py score TIMES.json...          # -> docs/rank/measured.json, evaluation.json
    python benchmarks/rank_eval.py predict 5                    # -> docs/rank/predictions-5.json (frozen)
    python benchmarks/rank_eval.py sizes                        # models 9-13's held-out sizes added to facts.json
    python benchmarks/rank_eval.py table                        # docs/rank.md's table
    python benchmarks/rank_eval.py errors                       # each model's median error
    python benchmarks/rank_eval.py topn [MODEL...] [--before-heldout17 | --heldout17] [--worst]  # how many to time
    python benchmarks/rank_eval.py noise RERUN.json...          # -> docs/rank/noise.json: run-to-run orders
    python benchmarks/rank_eval.py onchip h100 OUT.json [--model M] [--rows HELDOUT_22,...]  # freeze on another chip
    python benchmarks/rank_eval.py onchip-score OUT.json TIMES.json... [--json EVAL.json]

`facts` reads every snapshot of the three spaces (benchmarks/rank/*.yaml, compiled for sm_90a) and keeps
what the model reads, with the problem at each evaluation size: from that file alone the predictions are
reproducible. `score` merges the H200 timings (benchmarks/rank_time.py) and computes, per space and size,
Spearman's correlation, whether the measured best is in the predicted top-1/top-5, and the slowdowns;
tests/test_rank.py recomputes the same figures from the committed files, on the CPU.
"""
from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

DOCS = ROOT / "docs" / "rank"
SPACES = {"matmul": ("bench", "M=1024,N=1024,K=1024"), "attention": ("n4096.d128", "n1024.d128"),
          "add": ("bench", "n=16777216"), "softmax": ("bench", "rows=2048,cols=8192"),
          "softmax.persistent": ("bench", "rows=2048,cols=8192"), "attention.causal": ()}
GPU = "h200"
HELDOUT = {"attention": ("n8192.d128", "n2048.d128"), "add": ("n=67108864", "n=4194304")}
# Timed only after model 3 was frozen with its predictions (docs/rank/predictions-3.json): a new space
# (causal attention) and new matmul sizes.
HELDOUT_3 = {"matmul": ("M=2048,N=2048,K=2048", "M=8192,N=8192,K=8192", "M=8192,N=8192,K=1024",
                        "M=512,N=512,K=8192"),
             "attention.causal": ("n4096.d128", "n1024.d128")}


# Timed only after model 4 was frozen (docs/rank/predictions-4.json): the softmax spaces at rows of 16384
# and the fp16 row softmax (benchmarks/rank/softmax-wide.yaml, compiled into a second snapshot root).
HELDOUT_4 = {"softmax": ("rows=4096,cols=16384", "rows=1024,cols=16384"),
             "softmax.persistent": ("rows=4096,cols=16384", "rows=1024,cols=16384"),
             "softmax.fp16": ("bench", "rows=2048,cols=8192"), "add": ("n=33554432", "n=2097152")}


# Timed only after model 5 was frozen (docs/rank/predictions-5.json): new sizes of the spaces already
# compiled (benchmarks/rank/*.yaml, the first snapshot root).
HELDOUT_5 = {"matmul": ("M=4096,N=4096,K=512", "M=2048,N=2048,K=8192", "M=3072,N=3072,K=3072"),
             "attention": ("z=4,h=32,n=16384,d=128",), "attention.causal": ("n2048.d128", "n8192.d128"),
             "softmax": ("rows=8192,cols=8192",), "softmax.persistent": ("rows=8192,cols=8192",)}
# Timed only after model 6 was frozen (docs/rank/predictions-6.json): new sizes again, of the spaces it
# changes (those whose loops copy: the matmul, attention, the persistent softmax).
HELDOUT_6 = {"matmul": ("M=6144,N=6144,K=2048", "M=1536,N=1536,K=4096", "M=4096,N=2048,K=1024"),
             "attention": ("z=2,h=16,n=4096,d=128",), "attention.causal": ("z=4,h=32,n=16384,d=128", "z=8,h=16,n=1024,d=128"),
             "softmax.persistent": ("rows=16384,cols=4096",)}
# Timed only after model 7 was frozen (docs/rank/predictions-7.json): new sizes of the spaces whose loops
# multiply (its change: spills inside such loops).
HELDOUT_7 = {"matmul": ("M=8192,N=4096,K=4096", "M=2560,N=2560,K=2560", "M=16384,N=1024,K=2048"),
             "attention": ("z=1,h=32,n=32768,d=128", "z=16,h=16,n=1024,d=128"),
             "attention.causal": ("z=2,h=16,n=8192,d=128", "z=16,h=8,n=2048,d=128")}

# Timed only after model 8 was frozen (docs/rank/predictions-8.json): new sizes of the spaces whose loops
# multiply (its change: those loops' demands combined as a p-norm).
HELDOUT_8 = {"matmul": ("M=4096,N=4096,K=4096", "M=3072,N=8192,K=2048", "M=1024,N=4096,K=8192",
                        "M=12288,N=2048,K=1024"),
             "attention": ("z=4,h=16,n=8192,d=128", "z=8,h=32,n=2048,d=128"),
             "attention.causal": ("z=1,h=32,n=16384,d=128", "z=8,h=16,n=4096,d=128")}


# Timed only after model 9 was frozen (docs/rank/predictions-9.json): new sizes of the spaces without
# matrix products (its change), in each snapshot root: HELDOUT_9 the first (benchmarks/rank/*.yaml, rows
# of 8192 columns), HELDOUT_9W the second (softmax-wide.yaml: the 16,384-column blocks, the fp16 rows).
HELDOUT_9 = {"softmax": ("rows=4096,cols=8192", "rows=16384,cols=8192"),
             "softmax.persistent": ("rows=4096,cols=8192", "rows=16384,cols=8192"),
             "add": ("n=8388608", "n=50331648")}
HELDOUT_9W = {"softmax": ("rows=2048,cols=16384",), "softmax.persistent": ("rows=2048,cols=16384",),
              "softmax.fp16": ("rows=4096,cols=8192", "rows=16384,cols=8192")}


# Timed only after model 10 was frozen (docs/rank/predictions-10.json): new sizes of the spaces whose
# programs have no loop (its change): the first root's and the second's, as for model 9.
HELDOUT_10 = {"softmax": ("rows=8192,cols=6144", "rows=32768,cols=8192"),
              "add": ("n=12582912", "n=100663296")}
HELDOUT_10W = {"softmax": ("rows=8192,cols=12288",),
               "softmax.fp16": ("rows=8192,cols=6144", "rows=32768,cols=8192")}


# Timed only after model 11 was frozen (docs/rank/predictions-11.json): new sizes of the spaces without
# matrix products (its change), in both roots as for models 9 and 10.
HELDOUT_11 = {"softmax": ("rows=12288,cols=8192", "rows=16384,cols=7168"),
              "softmax.persistent": ("rows=3072,cols=8192", "rows=12288,cols=8192"),
              "add": ("n=6291456", "n=25165824")}
HELDOUT_11W = {"softmax": ("rows=8192,cols=16384", "rows=3072,cols=14336"),
               "softmax.persistent": ("rows=8192,cols=16384",),
               "softmax.fp16": ("rows=12288,cols=8192", "rows=24576,cols=7168")}


# Timed only after model 12 was frozen (docs/rank/predictions-12.json): new sizes of the matmul (its change:
# the clock a long launch that multiplies keeps), from short launches to long ones.
HELDOUT_12 = {"matmul": ("M=8192,N=8192,K=2048", "M=6144,N=6144,K=1024", "M=16384,N=4096,K=1024",
                         "M=4096,N=4096,K=2048", "M=10240,N=10240,K=1024", "M=2048,N=8192,K=4096")}


# Timed only after model 13 was frozen (docs/rank/predictions-13.json): new sizes of the matmul again.
HELDOUT_13 = {"matmul": ("M=12288,N=12288,K=1024", "M=5120,N=5120,K=2048", "M=8192,N=2048,K=2048",
                         "M=4096,N=4096,K=1024", "M=2048,N=2048,K=4096", "M=6144,N=4096,K=3072")}


# Timed only after model 14 was frozen (docs/rank/predictions-14.json): new sizes of the spaces without
# matrix products (its change), in both roots: few rows a program and many, rows masked and not.
HELDOUT_14 = {"softmax.persistent": ("rows=1536,cols=8192", "rows=6144,cols=8192", "rows=24576,cols=8192"),
              "softmax": ("rows=6144,cols=8192", "rows=24576,cols=7680"),
              "add": ("n=10485760", "n=41943040")}
HELDOUT_14W = {"softmax": ("rows=6144,cols=16384", "rows=12288,cols=12288"),
               "softmax.persistent": ("rows=3072,cols=16384", "rows=16384,cols=16384"),
               "softmax.fp16": ("rows=6144,cols=8192", "rows=49152,cols=8192")}


# Timed only after model 15 was frozen (docs/rank/predictions-15.json): new sizes of the spaces whose loops
# multiply (its change: a warpgroup's wgmma repeated down M).
HELDOUT_15 = {"matmul": ("M=4096,N=8192,K=2048", "M=8192,N=8192,K=512", "M=3072,N=3072,K=8192",
                         "M=2048,N=4096,K=2048", "M=7168,N=7168,K=1024", "M=1024,N=8192,K=4096"),
              "attention": ("z=2,h=32,n=8192,d=128", "z=8,h=8,n=4096,d=128"),
              "attention.causal": ("z=4,h=16,n=2048,d=128", "z=2,h=8,n=16384,d=128")}
# Model 16's (frozen before it was timed): matmuls of short K launched many waves deep, where model 16
# changes most, two longer ones, and both attentions (the causal one a control: model 16 leaves it).
HELDOUT_16 = {"matmul": ("M=6144,N=6144,K=512", "M=12288,N=8192,K=512", "M=8192,N=8192,K=256",
                         "M=16384,N=8192,K=1024", "M=10240,N=10240,K=1536", "M=4096,N=16384,K=512"),
              "attention": ("z=4,h=32,n=4096,d=128", "z=1,h=16,n=16384,d=128"),
              "attention.causal": ("z=2,h=32,n=4096,d=128",)}


# Timed only after 2c24b7a's "How many to time" (docs/rank.md), with models 15 and 16 unchanged since they
# were frozen: new sizes of the matmul (short K and long) and of add (the space whose row needed the most
# of its ranking), to check the published top-N figures and both goals on rows no model or figure had seen.
HELDOUT_17 = {"matmul": ("M=5120,N=5120,K=512", "M=10240,N=10240,K=512", "M=3072,N=12288,K=1024",
                         "M=6144,N=2048,K=4096", "M=6144,N=6144,K=6144", "M=12288,N=4096,K=2048"),
              "add": ("n=7340032", "n=29360128")}
# Model 22's (frozen before it was timed: docs/rank/predictions-22.json): new sizes of the spaces whose configs
# model 21 predicted alike (its change: such ties ordered by how hard each config's demands crowd its bound),
# add and the persistent softmax, in both roots; rows of few programs' rows and of many, masked and not.
HELDOUT_22 = {"add": ("n=3145728", "n=5242880", "n=9437184", "n=14680064", "n=20971520"),
              "softmax.persistent": ("rows=1024,cols=8192", "rows=2560,cols=8192", "rows=5120,cols=8192",
                                     "rows=10240,cols=8192", "rows=8192,cols=7168")}
HELDOUT_22W = {"softmax.persistent": ("rows=1536,cols=16384", "rows=6144,cols=16384", "rows=4096,cols=12288")}
# A kernel no model was designed on, ranked by models 15 and 16 (`irscope rank benchmarks/rank/blur.yaml ...
# --json`: docs/rank/heldout-blur/predictions-model*.json) before it was timed; scored apart (`newspace`).
HELDOUT_BLUR = {"blur": ("bench", "4k")}
# Model 17's held-out kernel, a user's file (benchmarks/rank/fir.py): ranked and committed (`irscope rank
# --json`: docs/rank/heldout-fir/predictions-model*.json) before it was timed; scored apart (`newspace`).
HELDOUT_FIR = {"benchmarks/rank/fir.py:fir": ("bench", "short")}
# Model 18's held-out kernel, a user's file (benchmarks/rank/conv1d.py), the same way:
# docs/rank/heldout-conv1d/predictions-model*.json were committed before it was timed.
HELDOUT_CONV1D = {"benchmarks/rank/conv1d.py:conv1d": ("bench", "short")}
# Model 19's held-out kernels, users' files (benchmarks/rank/rope.py, dwconv.py), the same way:
# docs/rank/heldout-rope/ and heldout-dwconv/predictions-model*.json were committed before they were timed.
HELDOUT_19 = {"benchmarks/rank/rope.py:rope": ("bench", "short"),
              "benchmarks/rank/dwconv.py:dwconv": ("bench", "short")}
# Model 20's held-out kernel, a user's file (benchmarks/rank/gscov.py), the same way:
# docs/rank/heldout-gscov/predictions-model*.json were committed before it was timed.
HELDOUT_20 = {"benchmarks/rank/gscov.py:gscov": ("bench", "short")}
# Model 21's held-out kernel, a user's file (benchmarks/rank/lidar.py), the same way:
# docs/rank/heldout-lidar/predictions-model*.json were committed before it was timed.
HELDOUT_21 = {"benchmarks/rank/lidar.py:lidar": ("bench", "short")}
# Model 21's second held-out kernel (benchmarks/rank/particles.py), frozen after the first was scored:
# docs/rank/heldout-particles/predictions-model*.json were committed before it was timed.
HELDOUT_21B = {"benchmarks/rank/particles.py:particles": ("bench", "short")}
# The H100's calibration (irscope/rank/chips.py: the H200's SM figures, the H100's DRAM), checked on the
# evaluation's spaces timed on an H100 for the first time: `onchip h100` froze its predictions
# (docs/rank/h100/predictions.json) before the run. Both roots' configs (rank_bundle.py of each).
HELDOUT_H100 = {"matmul": ("bench", "M=6144,N=6144,K=2048", "M=8192,N=8192,K=1024"),
                "attention": ("n4096.d128", "n8192.d128"), "attention.causal": ("n4096.d128",),
                "add": ("bench", "n=67108864"), "softmax": ("bench", "rows=16384,cols=8192"),
                "softmax.fp16": ("bench",), "softmax.persistent": ("bench", "rows=4096,cols=8192")}


def sizes_of(kernel: str) -> tuple:
    return tuple(SPACES.get(kernel, ())) + HELDOUT.get(kernel, ()) + HELDOUT_3.get(kernel, ()) + \
        (HELDOUT_4.get(kernel, ()) if kernel in WIDE_SAME_ROOT else ()) + HELDOUT_5.get(kernel, ()) + \
        HELDOUT_6.get(kernel, ()) + HELDOUT_7.get(kernel, ()) + HELDOUT_8.get(kernel, ()) + HELDOUT_9.get(kernel, ()) + \
        HELDOUT_10.get(kernel, ()) + HELDOUT_11.get(kernel, ()) + HELDOUT_12.get(kernel, ()) + \
        HELDOUT_13.get(kernel, ()) + HELDOUT_14.get(kernel, ()) + HELDOUT_15.get(kernel, ()) + \
        HELDOUT_16.get(kernel, ()) + HELDOUT_17.get(kernel, ())


WIDE_SAME_ROOT = ("add",)  # model 4's held-out sizes of a space already compiled (no second root)

# A second timing of the spaces without matrix products at every size already timed, in both roots, after
# model 11's held-out run: how far a measured order repeats from one run to the next, the floor under what
# any model can reach there. Scored apart (`noise`), never merged into measured.json.
RERUN = {k: tuple(s for s in sizes_of(k) if s != "rows=16384,cols=4096"  # (its launches were all refused)
                  and s not in HELDOUT_14.get(k, ()))  # (timed after this rerun)
         for k in ("softmax", "softmax.persistent", "add")}
RERUN_W = {k: tuple(HELDOUT_4[k]) + HELDOUT_9W.get(k, ()) + HELDOUT_10W.get(k, ()) + HELDOUT_11W.get(k, ())
           for k in ("softmax", "softmax.persistent", "softmax.fp16")}


def collect_facts(root: Path, wide: Path | None = None, only: tuple = ()) -> dict:
    """The facts of every space under `root` (benchmarks/rank/*.yaml) and, under `wide`, of
    softmax-wide.yaml's (only the kernels `only` names, when it names any); each config with its
    problem at each size of its space."""
    from irscope.rank import chip_for, facts_of
    from irscope.spec import library
    from irscope.spec.problem import problem_at
    from irscope.store.snapshot import find_snapshots

    chip = chip_for("sm_90a", GPU)
    out = {"gpu": GPU, "target": "sm_90a", "spaces": {}}
    roots = [(root, kernel, sizes_of(kernel)) for kernel in SPACES]
    if wide is not None:
        roots += [(wide, kernel, sizes + HELDOUT_9W.get(kernel, ()) + HELDOUT_10W.get(kernel, ()) +
                   HELDOUT_11W.get(kernel, ()) + HELDOUT_14W.get(kernel, ()))
                  for kernel, sizes in HELDOUT_4.items() if kernel not in WIDE_SAME_ROOT]
    for where, kernel, sizes in roots:
        if only and kernel not in only:
            continue
        spec = library.load_kernel(kernel)
        space = out["spaces"].setdefault(kernel, {"sizes": [], "configs": []})
        space["sizes"] += [s for s in sizes if s not in space["sizes"]]
        for s in sorted(find_snapshots(where / kernel), key=lambda s: s.label):
            if s.target_name != "sm_90a":
                continue
            f = facts_of(s)
            problems = {size: problem_at(spec, size, f.constexprs, sms=chip.sms).as_dict() for size in sizes}
            space["configs"].append({"facts": f.as_dict(), "problems": problems})
    return out


def add_sizes(doc: dict, first: dict, wide: dict) -> int:
    """Add each space's problems at new sizes to a facts document: `first`'s to the configs of the first
    snapshot root, `wide`'s to those of the second (softmax-wide.yaml: 16,384-column blocks, the fp16
    rows); a config belongs to the root whose sizes it already has."""
    from irscope.rank import chip_for
    from irscope.spec import library
    from irscope.spec.problem import problem_at

    chip = chip_for(doc["target"], doc["gpu"])
    wide_sizes = {k: set(v) for k, v in HELDOUT_4.items() if k not in WIDE_SAME_ROOT}
    added = 0
    for kernel in sorted(set(first) | set(wide)):
        spec = library.load_kernel(kernel)
        space = doc["spaces"][kernel]
        for c in space["configs"]:
            in_wide = bool(set(c["problems"]) & wide_sizes.get(kernel, set()))
            for size in (wide if in_wide else first).get(kernel, ()):
                c["problems"][size] = problem_at(spec, size, c["facts"]["constexprs"], sms=chip.sms).as_dict()
                added += 1
        space["sizes"] += [s for s in first.get(kernel, ()) + wide.get(kernel, ()) if s not in space["sizes"]]
    return added


def predictions(facts_doc: dict, model: int = 2, chip=None) -> dict:
    """{kernel: {size: {label: predicted ms or None}}} from the facts file alone (on `chip`, else the file's)."""
    from irscope.rank import chip_for, estimate
    from irscope.rank.facts import Facts
    from irscope.spec.problem import Problem

    chip = chip or chip_for(facts_doc["target"], facts_doc["gpu"])
    out: dict = {}
    for kernel, space in facts_doc["spaces"].items():
        for size in space["sizes"]:
            preds = out.setdefault(kernel, {}).setdefault(size, {})
            for c in space["configs"]:
                if size not in c["problems"]:
                    continue  # a config of another root's space of the same kernel (softmax-wide.yaml)
                f = Facts.from_dict(c["facts"])
                if f.newest_model() < model:
                    raise SystemExit(f"{f.label}: these facts were stored before model {f.newest_model() + 1} and lack "
                                     f"what model {model} reads; collect them again (collect_facts) or score model "
                                     f"{f.newest_model()}")
                p = c["problems"][size]
                problem = Problem(p["kernel"], p["size_name"], p["size"], tuple(p["grid"]), p["flops"], p["min_bytes"])
                e = estimate(f, problem, chip, model)
                # (model 22 orders configs predicted to the same time: its predictions are [ms, crowding])
                preds[f.label] = (list(e.key) if model >= 22 else e.ms) if e.launchable else None
    return out


def ms_of(v) -> float:
    """A prediction's time: a bare time (models 1-21) or model 22's [ms, crowding]."""
    from irscope.rank.evaluate import prediction_key
    return prediction_key(v)[0]


def measured(times_doc: dict) -> dict:
    """{kernel: {size: {label: median ms over passes, or None when it did not run or was wrong}}}."""
    out: dict = {}
    for kernel, sizes in times_doc["spaces"].items():
        for size, data in sizes.items():
            m = out.setdefault(kernel, {}).setdefault(size, {})
            for row in data["configs"]:
                m[row["label"]] = statistics.median(row["times_ms"]) if row["times_ms"] and not row["error"] else None
    return out


def score(preds: dict, meas: dict) -> dict:
    from irscope.rank.evaluate import evaluate
    # A size whose every launch was refused (a size the space was not compiled for) is not a row.
    return {kernel: {size: evaluate(preds[kernel][size], meas[kernel][size]).as_dict() for size in sizes
                     if sum(v is not None for v in meas[kernel][size].values()) >= 2}
            for kernel, sizes in meas.items() if kernel in preds}


def score_models(facts_doc: dict, meas: dict) -> dict:
    """{"model 1": figures, "model 2": figures}: docs/rank/evaluation.json."""
    from irscope.rank.model import MODELS
    return {f"model {m}": score(predictions(facts_doc, m), meas) for m in MODELS}


def on_chip(facts_doc: dict, gpu: str, sizes: dict, model: int = 21) -> dict:
    """Frozen predictions of the stored facts on another chip at `sizes` ({kernel: (size, ...)}): model 21 on
    the chip's own calibration, model 21 on the H200's figures (what `--gpu h200` gave for it), and model 2
    on the chip without a calibration (what `irscope rank` gave it before it had one)."""
    import dataclasses

    from irscope.rank.chips import CHIPS

    chip = CHIPS[gpu]
    bare = dataclasses.replace(chip, **{f.name: None for f in dataclasses.fields(chip) if f.name.startswith("measured")})

    def only(preds: dict) -> dict:
        return {k: {s: preds[k][s] for s in ss} for k, ss in sizes.items()}

    variants = {f"model {model} ({gpu} calibration)": only(predictions(facts_doc, model, chip)),
                f"model {model} (h200 figures)": only(predictions(facts_doc, model, CHIPS["h200"])),
                f"model 2 ({gpu} uncalibrated)": only(predictions(facts_doc, 2, bare))}
    return {"gpu": gpu, "facts": "docs/rank/facts.json", "sizes": {k: list(v) for k, v in sizes.items()},
            "variants": variants}


def score_on_chip(frozen: dict, times_docs: list[dict]) -> dict:
    """Each frozen variant's figures against the chip's timings, per space and size, with the rows that meet
    both goals and the median error of the predicted times (the frozen rows only: a timing of another size
    has no prediction)."""
    timed = measured(merge_times(times_docs))
    meas = {k: {s: timed[k][s] for s in ss if s in timed.get(k, {})} for k, ss in frozen["sizes"].items() if k in timed}
    out = {}
    for name, preds in frozen["variants"].items():
        figures = score(preds, meas)
        flat = [f for sizes in figures.values() for f in sizes.values()]
        n, med = median_error(preds, meas)
        out[name] = {"rows": len(flat), **goals(flat),
                     "timings": n, "median_error": round(med, 4), "figures": figures}
    return out


def goals(flat: list[dict]) -> dict:
    """How many rows meet both goals (Spearman >= 0.8, a config within 3% of the best in the top 5), and
    each: with configs predicted alike taken by label (`both_goals`) and at their worst order (`_worst`)."""
    return {"both_goals": sum(f["spearman"] >= 0.8 and f["top5_slowdown"] <= 0.03 for f in flat),
            "both_goals_worst": sum(f["spearman"] >= 0.8 and f["top5_slowdown_worst"] <= 0.03 for f in flat),
            "spearman_0.8": sum(f["spearman"] >= 0.8 for f in flat),
            "top5_within_3pct": sum(f["top5_slowdown"] <= 0.03 for f in flat),
            "top5_within_3pct_worst": sum(f["top5_slowdown_worst"] <= 0.03 for f in flat)}


def median_error(preds: dict, meas: dict) -> tuple[int, float]:
    """(timings, the median of |predicted / measured - 1|) over every config timed at every size."""
    errs = [abs(ms_of(preds[k][s][label]) / t - 1) for k, sizes in meas.items() for s, row in sizes.items()
            for label, t in row.items() if t and preds.get(k, {}).get(s, {}).get(label)]
    return len(errs), statistics.median(errs)


TOP_N = (1, 2, 3, 5, 8, 10, 15, 20)
BIG_SPACE = 24  # configs timed at a row: the softmax spaces of 5 and 6 configs are smaller


def top_n(preds: dict, meas: dict, worst: bool = False) -> dict:
    """How many of the predicted fastest configs a user has to time: per row (space and size), the least N
    whose best measured time is within 3% (and 1%) of the measured best, and over the rows, how many of
    them timing the predicted top N brings within 3% and 1% for N in TOP_N. Configs predicted alike stand
    in label order, or with `worst` the slowest of them first."""
    rows: dict = {}
    for kernel, sizes in meas.items():
        for size, m in sizes.items():
            p = preds.get(kernel, {}).get(size, {})
            both = [c for c, v in p.items() if v is not None and m.get(c) is not None]
            if len(both) < 2:
                continue
            best = min(m[c] for c in both)
            need, fastest = {}, float("inf")
            for i, c in enumerate(sorted(both, key=lambda c: (p[c], -m[c] if worst else 0.0, c)), 1):
                fastest = min(fastest, m[c])
                for pct in (3, 1):
                    if pct not in need and fastest <= best * (1 + pct / 100):
                        need[pct] = i
            rows.setdefault(kernel, {})[size] = {"configs": len(both), "within_3pct": need[3], "within_1pct": need[1]}
    flat = [r for sizes in rows.values() for r in sizes.values()]
    big = [r for r in flat if r["configs"] >= BIG_SPACE]  # where timing the top N is a real saving

    def counts(of: list) -> dict:
        return {str(n): {"within_3pct": sum(r["within_3pct"] <= n for r in of),
                         "within_1pct": sum(r["within_1pct"] <= n for r in of)} for n in TOP_N}

    return {"rows": len(flat), "top_n": counts(flat), "big_rows": len(big), "big_top_n": counts(big), "by_row": rows}


def noise(facts_doc: dict, first: dict, second: dict, model: int | None = None) -> dict:
    """Per space and size timed twice: Spearman between the two runs' times (over the configs both ran),
    and the model's Spearman against each; and how many rows reach 0.8 each way."""
    from irscope.rank.evaluate import spearman
    from irscope.rank.model import DEFAULT_MODEL
    model = model or DEFAULT_MODEL
    preds = predictions(facts_doc, model)
    rows: dict = {}
    for kernel, sizes in second.items():
        for size, again in sizes.items():
            once = first.get(kernel, {}).get(size, {})
            both = sorted(k for k in again if again[k] and once.get(k) and preds[kernel][size].get(k))
            if len(both) < 3:
                continue
            a, b = [once[k] for k in both], [again[k] for k in both]
            p = [preds[kernel][size][k] for k in both]
            rows.setdefault(kernel, {})[size] = {
                "configs": len(both), "run_to_run": round(spearman(a, b), 4),
                "model_first": round(spearman(p, a), 4), "model_second": round(spearman(p, b), 4)}
    flat = [f for sizes in rows.values() for f in sizes.values()]
    counts = {"rows": len(flat), "run_to_run_at_least_0.8": sum(f["run_to_run"] >= 0.8 for f in flat),
              "model_first_at_least_0.8": sum(f["model_first"] >= 0.8 for f in flat),
              "model_second_at_least_0.8": sum(f["model_second"] >= 0.8 for f in flat)}
    return {"model": model, "rows": rows, "counts": counts}


def run_times(records: list[dict]) -> dict:
    """{kernel: {size: {label: ms, or None when it failed}}} from `irscope run --snapshot ... --json` records
    (benchmarks/rank_run.sh): do_bench's median of its repeats, the time `irscope rank --measured` reads."""
    out: dict = {}
    for r in records:
        ms = ((r.get("bench") or {}).get("kernel") or {}).get("ms")
        kernel = r["label"].split("/")[0]
        out.setdefault(kernel, {}).setdefault(r["size_name"], {})[r["label"]] = ms if r.get("ok") else None
    return out


def cross_check(facts_doc: dict, runs: dict, timed: dict, model: int | None = None) -> dict:
    """The rows timed both by `irscope run` and by rank_time.py: the model's figures against `irscope run`'s
    times, and how the two harnesses' times agree (Spearman, the median ratio)."""
    from irscope.rank.evaluate import spearman
    from irscope.rank.model import DEFAULT_MODEL
    model = model or DEFAULT_MODEL
    preds = predictions(facts_doc, model)
    figures = score(preds, runs)
    for kernel, sizes in figures.items():
        for size, f in sizes.items():
            a, b = runs[kernel][size], timed.get(kernel, {}).get(size, {})
            both = sorted(k for k in a if a[k] and b.get(k))
            f["configs_run"] = len(a)
            f["configs_timed"] = sum(v is not None for v in a.values())
            f["failed"] = sum(v is None for v in a.values())
            # every run that failed is one the model calls unlaunchable, and every such config run failed
            f["failed_are_the_unlaunchable_run"] = ({k for k, v in a.items() if v is None}
                                                    == {k for k in a if preds[kernel][size].get(k) is None})
            f["rank_time_configs"] = len(both)
            f["rank_time_spearman"] = round(spearman([a[k] for k in both], [b[k] for k in both]), 4)
            f["median_ratio"] = round(statistics.median(a[k] / b[k] for k in both), 4)
    return {"model": model, "rows": figures}


def merge_times(docs: list[dict]) -> dict:
    """Several timing runs as one {"runs": [...], "spaces": {kernel: {size: ...}}}."""
    spaces: dict = {}
    runs = []
    for d in docs:
        runs.append({"versions": d["versions"], "command": d["command"], "started": d["started"],
                     "sizes": {k: list(v) for k, v in d["spaces"].items()}})
        for kernel, sizes in d["spaces"].items():
            spaces.setdefault(kernel, {}).update(sizes)
    return {"runs": runs, "spaces": spaces}


def newspace(prediction_files: list[Path], times_doc: dict) -> dict:
    """A space scored apart from facts.json (the held-out blur): each `irscope rank --json` file's ranking at
    each size against the timings, with top-N and the median error of the predicted time."""
    from irscope.rank.evaluate import evaluate
    meas = measured(times_doc)
    out = {}
    for path in prediction_files:
        doc = json.loads(Path(path).read_text())
        model = f"model {doc['model']}"
        for entry in doc["sizes"]:
            kernel, size = entry["problem"]["kernel"], entry["size"]
            # (time, crowding): what the ranking sorted by (crowding 0 before model 22)
            preds = {r["facts"]["label"]: ((r["estimate"]["ms"], r["estimate"].get("crowding", 0.0))
                                           if r["facts"]["launchable"] else None) for r in entry["ranking"]}
            m = meas[kernel][size]
            figures = evaluate(preds, m).as_dict()
            order = sorted((k for k in preds if preds[k] is not None and m.get(k) is not None),
                           key=lambda k: (preds[k], k))
            best = min(m[k] for k in order)
            figures["top_n_within_3pct"] = next(n for n in range(1, len(order) + 1)
                                                if min(m[k] for k in order[:n]) <= 1.03 * best)
            errors = sorted(abs(preds[k][0] / m[k] - 1) for k in order)
            figures["median_error"] = round(errors[len(errors) // 2], 4)
            figures["predicted_best_us"] = round(preds[order[0]][0] * 1e3, 2)
            figures["measured_best_us"] = round(best * 1e3, 2)
            out.setdefault(model, {}).setdefault(kernel, {})[size] = figures
    return out


def main(argv: list[str]) -> int:
    DOCS.mkdir(parents=True, exist_ok=True)
    if argv[:1] == ["newspace"]:
        # newspace TIMES.json PREDICTIONS.json... [--json OUT]
        args, out = argv[1:], None
        if "--json" in args:
            i = args.index("--json")
            out, args = Path(args[i + 1]), args[:i] + args[i + 2:]
        figures = newspace([Path(a) for a in args[1:]], json.loads(Path(args[0]).read_text()))
        text = json.dumps(figures, indent=1, sort_keys=True)
        if out:
            out.write_text(text + "\n")
        print(text)
        return 0
    if argv[:1] == ["facts"]:
        # --only K1,K2: recollect those spaces and keep the others' committed facts (a new fact that only
        # some spaces' model reads, without compiling every space again)
        roots, only = argv[1:], ()
        if "--only" in roots:
            i = roots.index("--only")
            only, roots = tuple(roots[i + 1].split(",")), roots[:i] + roots[i + 2:]
        doc = collect_facts(Path(roots[0]), Path(roots[1]) if len(roots) > 1 else None, only)
        if only:
            kept = json.loads((DOCS / "facts.json").read_text())
            kept["spaces"].update(doc["spaces"])
            doc = kept
        (DOCS / "facts.json").write_text(json.dumps(doc, indent=1, sort_keys=True))
        n = sum(len(s["configs"]) for s in doc["spaces"].values())
        print(f"{n} configs' facts -> {DOCS / 'facts.json'}")
        return 0
    if argv[:1] == ["sizes"]:
        # Held-out sizes added to the committed facts (the problem at a size needs the spec and the
        # config's constexprs, not its snapshot): predictions for them without compiling the spaces again.
        doc = json.loads((DOCS / "facts.json").read_text())
        n = add_sizes(doc, HELDOUT_9, HELDOUT_9W) + add_sizes(doc, HELDOUT_10, HELDOUT_10W) + \
            add_sizes(doc, HELDOUT_11, HELDOUT_11W) + add_sizes(doc, HELDOUT_12, {}) + \
            add_sizes(doc, HELDOUT_13, {}) + add_sizes(doc, HELDOUT_14, HELDOUT_14W) + add_sizes(doc, HELDOUT_15, {}) + \
            add_sizes(doc, HELDOUT_16, {}) + add_sizes(doc, HELDOUT_17, {}) + add_sizes(doc, HELDOUT_22, HELDOUT_22W)
        (DOCS / "facts.json").write_text(json.dumps(doc, indent=1, sort_keys=True))
        print(f"{n} problems added -> {DOCS / 'facts.json'}")
        return 0
    if argv[:1] == ["score"]:
        times = merge_times([json.loads(Path(a).read_text()) for a in argv[1:]])
        (DOCS / "measured.json").write_text(json.dumps(times, indent=1, sort_keys=True))
        figures = score_models(json.loads((DOCS / "facts.json").read_text()), measured(times))
        (DOCS / "evaluation.json").write_text(json.dumps(figures, indent=1, sort_keys=True))
        for model, kernels in figures.items():
            for kernel, sizes in kernels.items():
                for size, f in sizes.items():
                    print(model, kernel, size, json.dumps(f))
        return 0
    if argv[:1] == ["onchip"]:
        # onchip GPU OUT.json [--model M] [--rows NAME,...]: freeze the predictions of HELDOUT_<GPU>'s rows, or
        # of the named sets' (HELDOUT_22,HELDOUT_22W), under model M (on_chip)
        args, model, sets = argv[1:], 21, None
        if "--model" in args:
            i = args.index("--model")
            model, args = int(args[i + 1]), args[:i] + args[i + 2:]
        if "--rows" in args:
            i = args.index("--rows")
            sets, args = args[i + 1].split(","), args[:i] + args[i + 2:]
        gpu, out = args[0], Path(args[1])
        sizes: dict = {}
        for name in sets or [f"HELDOUT_{gpu.upper()}"]:
            for kernel, ss in globals()[name].items():
                sizes[kernel] = tuple(sizes.get(kernel, ())) + tuple(ss)
        frozen = on_chip(json.loads((DOCS / "facts.json").read_text()), gpu, sizes, model)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(frozen, indent=1, sort_keys=True) + "\n")
        print(f"{'; '.join(frozen['variants'])} -> {out}")
        return 0
    if argv[:1] == ["onchip-score"]:
        # onchip-score FROZEN.json TIMES.json... [--json OUT]: score_on_chip
        args, out = argv[1:], None
        if "--json" in args:
            i = args.index("--json")
            out, args = Path(args[i + 1]), args[:i] + args[i + 2:]
        figures = score_on_chip(json.loads(Path(args[0]).read_text()), [json.loads(Path(a).read_text()) for a in args[1:]])
        if out:
            out.write_text(json.dumps(figures, indent=1, sort_keys=True) + "\n")
        for name, f in figures.items():
            print(f"{name}: both goals at {f['both_goals']} of {f['rows']} rows (Spearman >= 0.8 at {f['spearman_0.8']}, "
                  f"top 5 within 3% at {f['top5_within_3pct']}); median error {f['median_error']:.1%} over {f['timings']} timings")
        return 0
    if argv[:1] == ["predict"]:
        # Freeze a model's predictions for every space and size, timed or not (the held-out check).
        model = int(argv[1])
        preds = predictions(json.loads((DOCS / "facts.json").read_text()), model)
        (DOCS / f"predictions-{model}.json").write_text(json.dumps(preds, indent=1, sort_keys=True))
        print(f"model {model}'s predictions -> {DOCS / f'predictions-{model}.json'}")
        return 0
    if argv[:1] == ["noise"]:
        rerun = measured(merge_times([json.loads(Path(a).read_text()) for a in argv[1:]]))
        doc = noise(json.loads((DOCS / "facts.json").read_text()),
                    measured(json.loads((DOCS / "measured.json").read_text())), rerun)
        (DOCS / "noise.json").write_text(json.dumps(doc, indent=1, sort_keys=True))
        for kernel, sizes in doc["rows"].items():
            for size, f in sizes.items():
                print(f"{kernel:20s} {size:24s} run to run {f['run_to_run']:.3f}  model {doc['model']} against "
                      f"the first run {f['model_first']:.3f}, the second {f['model_second']:.3f}")
        print(json.dumps(doc["counts"]))
        return 0
    if argv[:1] == ["runs"]:
        # the rows timed again through the CLI (`irscope run --snapshot`, benchmarks/rank_run.sh)
        runs = run_times([r for a in argv[1:] for r in json.loads(Path(a).read_text())])
        doc = cross_check(json.loads((DOCS / "facts.json").read_text()), runs,
                          measured(json.loads((DOCS / "measured.json").read_text())))
        doc["files"] = [Path(a).name for a in argv[1:]]
        (DOCS / "irscope-run.json").write_text(json.dumps(doc, indent=1, sort_keys=True))
        for kernel, sizes in doc["rows"].items():
            for size, f in sizes.items():
                print(f"{kernel:20s} {size:24s} {f['configs_run']:3d} run, {f['failed']} failed  model "
                      f"{doc['model']}: Spearman {f['spearman']:.3f}, top-1 {f['top1_slowdown']:.1%}, top-5 "
                      f"{f['top5_slowdown']:.1%}; against rank_time.py: Spearman {f['rank_time_spearman']:.3f}, "
                      f"times x{f['median_ratio']:.3f}")
        return 0
    if argv[:1] == ["table"]:
        print(markdown(json.loads((DOCS / "evaluation.json").read_text())))
        return 0
    if argv[:1] == ["topn"]:
        # how many of the predicted fastest configs to time (`irscope rank --top N`, `--emit-configs`)
        facts = json.loads((DOCS / "facts.json").read_text())
        meas = measured(json.loads((DOCS / "measured.json").read_text()))
        # --before-heldout17: the rows the published figures were read off; --heldout17: the rows that checked them
        late = {k: set(sizes) for k, sizes in HELDOUT_17.items()}
        if "--before-heldout17" in argv or "--heldout17" in argv:
            keep = "--heldout17" in argv
            meas = {k: {s: m for s, m in sizes.items() if (s in late.get(k, ())) == keep} for k, sizes in meas.items()}
        models = [int(a) for a in argv[1:] if not a.startswith("--")] or [15, 16]
        for m in models:
            # --worst: configs predicted alike taken slowest first (docs/rank.md, "Ties, and model 22")
            doc = top_n(predictions(facts, m), meas, "--worst" in argv)
            print(f"model {m}, {doc['rows']} rows: timing the predicted top N finds a config within 3% / 1% "
                  f"of the measured best at" + (" (ties at their worst order)" if "--worst" in argv else ""))
            print(f"  (and at the {doc['big_rows']} rows of {BIG_SPACE} configs or more)")
            for n, c in doc["top_n"].items():
                b = doc["big_top_n"][n]
                print(f"  N = {n:>2}: {c['within_3pct']:3d} / {c['within_1pct']:3d} rows"
                      f"   ({b['within_3pct']:3d} / {b['within_1pct']:3d})")
            worst = sorted(((r["within_3pct"], k, s) for k, sizes in doc["by_row"].items()
                            for s, r in sizes.items()), reverse=True)[:3]
            print("  the most N needed for 3%: " + ", ".join(f"{k} at {s} ({n})" for n, k, s in worst))
        return 0
    if argv[:1] == ["errors"]:
        facts = json.loads((DOCS / "facts.json").read_text())
        meas = measured(json.loads((DOCS / "measured.json").read_text()))
        from irscope.rank.model import MODELS
        for m in MODELS:
            n, med = median_error(predictions(facts, m), meas)
            print(f"model {m}: median error {med:.1%} over {n:,} timings (a config at a size)")
        return 0
    print(__doc__)
    return 2


def held_out_from(kernel: str, size: str) -> str:
    """The models whose design had not seen this space and size's timings."""
    # (each model's held-out sets, latest first: a size is held out from the first model that timed it)
    runs = ((22, HELDOUT_22, HELDOUT_22W), (16, HELDOUT_16, HELDOUT_17), (15, HELDOUT_15), (14, HELDOUT_14, HELDOUT_14W), (13, HELDOUT_13), (12, HELDOUT_12),
            (11, HELDOUT_11, HELDOUT_11W),
            (10, HELDOUT_10, HELDOUT_10W), (9, HELDOUT_9, HELDOUT_9W), (8, HELDOUT_8), (7, HELDOUT_7),
            (6, HELDOUT_6), (5, HELDOUT_5))
    for model, *sets in runs:
        if any(size in s.get(kernel, ()) for s in sets):
            return f"1-{model}"
    if size in HELDOUT_4.get(kernel, ()):
        return "1, 2, 3, 4"
    if size in HELDOUT_3.get(kernel, ()):
        return "1, 2, 3"
    if kernel.startswith("softmax") or kernel == "matmul" or size in HELDOUT.get(kernel, ()):
        return "1, 2"
    return "1"


def markdown(figures: dict, default: int | None = None) -> str:
    """The evaluation as docs/rank.md's table: one row per space and size, the models side by side, the
    default's figures in bold."""
    from irscope.rank.model import DEFAULT_MODEL, MODELS
    default = default or DEFAULT_MODEL
    models = [figures[f"model {m}"] for m in MODELS]
    names = " / ".join(str(m) for m in MODELS)
    rows = [f"| space | size | held out from model | configs timed | Spearman model {names} | best in top-1 / "
            f"top-5 (model {default}) | predicted top-1 slower than best, {names} | best of predicted top-5 slower, "
            f"{names} | the same at the worst order of configs predicted alike (model {default}) | cannot launch: "
            f"predicted / GPU agreed |", "|---|---|---|---|---|---|---|---|---|---|"]
    d = MODELS.index(default)

    def cells(each, key, fmt):
        return " / ".join(f"**{fmt(g[key])}**" if i == d else fmt(g[key]) for i, g in enumerate(each))

    last = models[d]
    for kernel in last:
        for size, f in last[kernel].items():
            each = [m[kernel][size] for m in models]
            rows.append(f"| {kernel} | {size} | {held_out_from(kernel, size)} | {f['configs']} | "
                        + cells(each, "spearman", lambda v: f"{v:.3f}") + " | "
                        f"{'yes' if f['best_in_top1'] else 'no'} / {'yes' if f['best_in_top5'] else 'no'} | "
                        + cells(each, "top1_slowdown", lambda v: f"{v:.1%}") + " | "
                        + cells(each, "top5_slowdown", lambda v: f"{v:.1%}") + " | "
                        + (f"{f['top5_slowdown_worst']:.1%} ({f['ties_top5']} alike at #5)" if f["ties_top5"] > 1
                           else "the same") + " | "
                        f"{f['unlaunchable_predicted']} / {f['unlaunchable_agreed']} |")
    return "\n".join(rows)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
