"""Does a captured launch pose the same problem as the workload? For every config of the evaluation's
spaces (compiled sweep roots) at every size the evaluation timed, the launch a program would record
(the workload's own call: grid, scalar arguments, tensor shapes and strides) is turned into a problem by
irscope.rank.captured, as `irscope rank LAUNCHES.json` does, and its prediction is set beside the one from
the workload (`irscope rank SWEEP.yaml`). Equal predictions mean the H200 evaluation (docs/rank.md) holds
for ranking a captured launch too.

    python benchmarks/rank_captured.py ROOT|ROOT/KERNEL... [--json OUT]
    python benchmarks/rank_captured.py /tmp/root1 /tmp/root2 /tmp/mmroot /tmp/attroot/attention /tmp/causalroot \
        --json docs/rank/captured.json   # the evaluation's roots (benchmarks/rank/*.yaml compiled)
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def launch_of(call) -> dict:
    """The launch record `irscope capture` writes for this call (the fields the ranking reads)."""
    from irscope.harness.capture import _dtype_name
    names = [p.name for p in call.fn.params if not p.is_constexpr]
    args = []
    for name, v in zip(names, call.args):
        if hasattr(v, "data_ptr"):
            args.append({"name": name, "kind": "tensor", "dtype": _dtype_name(v.dtype), "shape": list(v.shape),
                         "strides": list(v.stride())})
        elif isinstance(v, bool):
            args.append({"name": name, "kind": "bool", "value": v})
        elif isinstance(v, int):
            args.append({"name": name, "kind": "int", "value": v})
        elif isinstance(v, float):
            args.append({"name": name, "kind": "float", "value": v})
        else:
            args.append({"name": name, "kind": "none"})
    return {"id": call.kernel, "args": args, "grid": list(call.grid)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("roots", nargs="+", type=Path)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    from irscope.gpu.replay import SpecialisationMismatch, check_call
    from irscope.rank import chip_for, estimate, facts_of
    from irscope.rank.captured import launch_problem
    from irscope.spec import library
    from irscope.spec.problem import problem_at
    from irscope.store.snapshot import load_snapshot
    chip = chip_for("sm_90a", "h200")
    sizes = {k: [s["size_name"] if isinstance(s, dict) else s for s in v["sizes"]]
             for k, v in json.loads((ROOT / "docs/rank/facts.json").read_text())["spaces"].items()}
    rows: dict[tuple[str, str], dict] = {}
    worst = 0.0
    for root in args.roots:  # a snapshot root, or one kernel's folder of it
        kdirs = [root] if any(root.glob("*/sm_90a/irscope.json")) else sorted(p for p in root.iterdir() if p.is_dir())
        for kdir in kdirs:
            spec = library.load_kernel(kdir.name)
            snaps = [load_snapshot(d) for d in sorted(kdir.glob("*/sm_90a")) if (d / "irscope.json").exists()]
            snaps = [(s, facts_of(s), s.read("ttgir")) for s in snaps if s.ok and "ttgir" in s.stage_files]
            snaps = [(s, f, t) for s, f, t in snaps if f.launchable]
            for size in sizes.get(kdir.name, []):
                n, diffs = 0, []
                preds = ({}, {})  # label -> ms: from the workload, from the launch
                for s, f, ttgir in snaps:
                    p = problem_at(spec, size, f.constexprs, sms=chip.sms)
                    try:  # a size this config was not compiled for is refused by irscope rank: not compared
                        check_call(s, spec.fn, p.call)
                    except SpecialisationMismatch:
                        continue
                    q = launch_problem(launch_of(p.call), spec.name, f, ttgir)
                    a, b = estimate(f, p, chip).ms, estimate(f, q, chip).ms
                    diffs.append(abs(b / a - 1))
                    preds[0][s.label], preds[1][s.label] = a, b
                    n += 1
                worst = max([worst] + diffs)
                if n:  # the root compiled for this size (another may hold the space's other sizes)
                    row = rows.setdefault((kdir.name, size), {"space": kdir.name, "size": size, "configs": 0,
                                                              "max_rel_diff": 0.0})
                    row["configs"] += n
                    row["max_rel_diff"] = max([row["max_rel_diff"]] + diffs)
                    row.setdefault("predictions", ({}, {}))
                    row["predictions"][0].update(preds[0])
                    row["predictions"][1].update(preds[1])
    # Where the two differ, both are scored against the H200's timings of the evaluation (measured.json).
    import statistics
    from irscope.rank.evaluate import evaluate
    timed = json.loads((ROOT / "docs/rank/measured.json").read_text())["spaces"]
    for row in rows.values():
        workload, launch = row.pop("predictions")
        data = timed.get(row["space"], {}).get(row["size"])
        if row["max_rel_diff"] == 0 or data is None:
            continue
        meas = {c["label"]: statistics.median(c["times_ms"]) if c["times_ms"] and not c["error"] else None
                for c in data["configs"]}
        for name, preds in (("workload", workload), ("launch", launch)):
            ev = evaluate(preds, meas)
            row[f"scored_{name}"] = {"spearman": ev.spearman, "top5_slowdown": ev.top5_slowdown,
                                     "top1_slowdown": ev.top1_slowdown}
    for row in rows.values():
        scored = "".join(f"  {n}: Spearman {row[f'scored_{n}']['spearman']:.3f}, best of top 5 "
                         f"{row[f'scored_{n}']['top5_slowdown']:.1%}" for n in ("workload", "launch")
                         if f"scored_{n}" in row)
        print(f"{row['space']:20} {row['size']:28} {row['configs']:4} configs  largest difference "
              f"{row['max_rel_diff']:.2e}{scored}")
    print(f"{len(rows)} rows, {sum(r['configs'] for r in rows.values())} (config, size) pairs; largest relative "
          f"difference between the two predictions: {worst:.2e}")
    if args.json:
        args.json.write_text(json.dumps({"rows": list(rows.values()), "max_rel_diff": worst}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
