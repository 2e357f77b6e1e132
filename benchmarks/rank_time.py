"""Time every config of the ranked spaces on a GPU, each checked against its torch reference first: the
measured side of docs/rank.md. Runs each config's own cubin (compiled device-less by Triton 3.9, packed by
rank_bundle.py), so the times belong to exactly the binaries whose facts the model read.

    python3 benchmarks/rank_time.py BUNDLE_DIR OUT.json [--passes 2] [--size S]...
        [--heldout | --heldout3 | ... | --heldout15 | --rerun | --rerunw]

Per space and size: inputs built once (seed 0), the reference computed once; per config: outputs
poisoned with NaN, one launch, every output compared (the workload's tolerances), then Triton's do_bench
(CUDA events, L2 flushed, median). Configs run in a shuffled order, a different one each pass, so that
the card's clock and power state drift falls on no config in particular; each pass's time is kept.
"""
from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

SPACES = {  # kernel -> the two sizes of the evaluation (docs/rank.md)
    "matmul": ("bench", "M=1024,N=1024,K=1024"),
    "attention": ("n4096.d128", "n1024.d128"),
    "add": ("bench", "n=16777216"),
    # Timed only after model 2 was frozen: held-out spaces.
    "softmax": ("bench", "rows=2048,cols=8192"),
    "softmax.persistent": ("bench", "rows=2048,cols=8192"),
}
# What each held-out run timed: one list, rank_eval.py's, which scores them (this script's folder is on
# sys.path when it runs).
from rank_eval import (HELDOUT, HELDOUT_3, HELDOUT_4, HELDOUT_5, HELDOUT_6, HELDOUT_7, HELDOUT_8,  # noqa: E402
                       HELDOUT_9, HELDOUT_9W, HELDOUT_10, HELDOUT_10W, HELDOUT_11, HELDOUT_11W, HELDOUT_12,
                       HELDOUT_13, HELDOUT_14, HELDOUT_14W, HELDOUT_15, HELDOUT_16, HELDOUT_17, HELDOUT_22,
                       HELDOUT_22W, HELDOUT_BLUR,
                       HELDOUT_FIR, HELDOUT_CONV1D, HELDOUT_19, HELDOUT_20, HELDOUT_21, HELDOUT_21B, HELDOUT_H100,
                       RERUN, RERUN_W)

# Each later run's flag, what it times and its words in --help: one flag a run, in the order they were made.
RUNS = [("heldout", HELDOUT, "the held-out sizes"),
        ("heldout3", HELDOUT_3, "model 3's held-out spaces and sizes"),
        ("heldout4", HELDOUT_4, "model 4's held-out spaces and sizes"),
        ("heldout5", HELDOUT_5, "model 5's held-out sizes"),
        ("heldout6", HELDOUT_6, "model 6's held-out sizes"),
        ("heldout7", HELDOUT_7, "model 7's held-out sizes"),
        ("heldout8", HELDOUT_8, "model 8's held-out sizes"),
        ("heldout9", HELDOUT_9, "model 9's held-out sizes (first root)"),
        ("heldout9w", HELDOUT_9W, "model 9's held-out sizes (softmax-wide root)"),
        ("heldout10", HELDOUT_10, "model 10's held-out sizes (first root)"),
        ("heldout10w", HELDOUT_10W, "model 10's held-out sizes (softmax-wide root)"),
        ("heldout11", HELDOUT_11, "model 11's held-out sizes (first root)"),
        ("heldout11w", HELDOUT_11W, "model 11's held-out sizes (softmax-wide root)"),
        ("heldout12", HELDOUT_12, "model 12's held-out sizes (the matmul)"),
        ("heldout13", HELDOUT_13, "model 13's held-out sizes (the matmul)"),
        ("heldout14", HELDOUT_14, "model 14's held-out sizes (first root)"),
        ("heldout14w", HELDOUT_14W, "model 14's held-out sizes (softmax-wide root)"),
        ("heldout15", HELDOUT_15, "model 15's held-out sizes (the matmul, both attentions)"),
        ("heldout16", HELDOUT_16, "model 16's held-out sizes (the matmul, both attentions)"),
        ("heldout17", HELDOUT_17, "new sizes of the matmul and add, for the top-N figures"),
        ("heldoutblur", HELDOUT_BLUR, "the fused blur, a kernel no model was designed on"),
        ("heldoutfir", HELDOUT_FIR, "the FIR filter (benchmarks/rank/fir.py), model 17's held-out kernel"),
        ("heldoutconv1d", HELDOUT_CONV1D, "the causal conv1d (benchmarks/rank/conv1d.py), model 18's held-out kernel"),
        ("heldout19", HELDOUT_19, "the rotary embedding and the depthwise conv (benchmarks/rank/rope.py, dwconv.py), "
                                  "model 19's held-out kernels"),
        ("heldout20", HELDOUT_20, "3-D Gaussian splatting's covariance (benchmarks/rank/gscov.py), model 20's held-out kernel"),
        ("heldout21", HELDOUT_21, "a LiDAR sweep's per-point range (benchmarks/rank/lidar.py), model 21's held-out kernel"),
        ("heldout21b", HELDOUT_21B, "a particle system's step (benchmarks/rank/particles.py), model 21's second held-out kernel"),
        ("heldout22", HELDOUT_22, "model 22's held-out sizes (add, the persistent softmax; first root)"),
        ("heldout22w", HELDOUT_22W, "model 22's held-out sizes (the persistent softmax; softmax-wide root)"),
        ("heldouth100", HELDOUT_H100, "the evaluation's spaces on an H100, the H100 calibration's check (both roots)"),
        ("rerun", RERUN, "every size already timed again (the first root's spaces without matrix products; for "
                         "rank_eval.py noise)"),
        ("rerunw", RERUN_W, "the softmax-wide root's sizes already timed again")]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("bundle")
    ap.add_argument("out")
    ap.add_argument("--passes", type=int, default=2)
    ap.add_argument("--only", default="")
    ap.add_argument("--size", action="append", default=[], help="time only this size of the set (repeatable)")
    for flag, _, words in RUNS:
        ap.add_argument(f"--{flag}", action="store_true", help=f"time {words} instead")
    args = ap.parse_args()
    import torch
    import triton

    from irscope.gpu import runner
    from irscope.gpu.replay import check_call, full_args
    from irscope.harness.runtime import LoadedBinary, do_bench
    from irscope.spec import library
    from irscope.spec.workload import params_for
    from irscope.store.snapshot import load_snapshot

    dirs = sorted(p for p in Path(args.bundle).iterdir() if (p / "irscope.json").is_file())
    by_kernel: dict[str, list] = {}
    for d in dirs:
        s = load_snapshot(d)
        by_kernel.setdefault(s.kernel, []).append(s)
    result = {"versions": {"python": sys.version.split()[0], "torch": torch.__version__, "triton": triton.__version__,
                           "gpu": torch.cuda.get_device_name(), "driver": runner._versions().get("driver", "?")},
              "command": " ".join(sys.argv), "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
              "spaces": {}}
    # the last flag given in RUNS' order wins, as one run times one set
    chosen = next((sizes for flag, sizes, _ in reversed(RUNS) if getattr(args, flag)), SPACES)
    for kernel, sizes in chosen.items():
        if args.only and kernel not in args.only.split(","):
            continue
        spec = library.load_kernel(kernel)  # a built-in's name, or a user's FILE.py:NAME (the held-out fir)
        snaps = by_kernel.get(spec.name, [])
        binaries = {}
        for s in snaps:
            try:
                binaries[s.label] = LoadedBinary(s, spec)
            except Exception as e:  # noqa: BLE001 - recorded, never fatal
                binaries[s.label] = e
        space = result["spaces"].setdefault(spec.name, {})
        for size in sizes:
            if args.size and size not in args.size:
                continue
            started = time.time()
            p = runner.prepare(runner.Request(kernel, size=size), "cuda")
            want = p.workload.reference({**p.x, **p.inputs}, p.size)
            rows = {}
            for pass_no in range(args.passes):
                order = list(snaps)
                random.Random(1000 * pass_no + len(size)).shuffle(order)
                for s in order:
                    row = rows.setdefault(s.label, {"label": s.label, "times_ms": [], "error": None})
                    if row["error"]:
                        continue
                    b = binaries[s.label]
                    if isinstance(b, Exception):
                        row["error"] = f"load failed: {type(b).__name__}: {str(b).splitlines()[0][:200]}"
                        continue
                    constexprs = {e["name"]: e["value"] for e in s.meta["specialisation"] if e.get("kind") == "constexpr"}
                    params = params_for(spec, None, constexprs)
                    calls = [c for c in p.workload.launch(p.x, p.size, params) if c.kernel == spec.name]
                    call = calls[0]
                    try:
                        check_call(s, spec.fn, call)
                        launch_args = full_args(spec.fn, call)
                        if pass_no == 0:
                            for name in p.workload.outputs:
                                runner.poison(p.x[name])
                            b.launch(call.grid, launch_args)
                            torch.cuda.synchronize()
                            checks = [runner.compare(n, p.x[n], want[n], p.workload.tolerances)
                                      for n in p.workload.outputs]
                            row["max_rel"] = max(c.max_rel for c in checks)
                            if not all(c.ok for c in checks):
                                row["error"] = f"wrong result: {checks[0].mismatches} mismatches, max_rel {row['max_rel']:.3g}"
                                continue
                        row["times_ms"].append(do_bench(lambda: b.launch(call.grid, launch_args)))
                    except Exception as e:  # noqa: BLE001 - a config that cannot launch is a result
                        row["error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
                        torch.cuda.synchronize()
            space[size] = {"size": p.size, "flops": p.workload.flops(p.size), "bytes": p.workload.bytes(p.size),
                           "seconds": round(time.time() - started, 1), "configs": sorted(rows.values(), key=lambda r: r["label"])}
            ok = [r for r in rows.values() if r["times_ms"]]
            best = min(ok, key=lambda r: min(r["times_ms"])) if ok else None
            print(f"{kernel} {size}: {len(ok)}/{len(rows)} timed in {time.time() - started:.0f} s; best "
                  f"{best['label'] if best else '-'} {min(best['times_ms']) if best else 0:.4f} ms", flush=True)
            del p, want
            torch.cuda.empty_cache()
            Path(args.out).write_text(json.dumps(result, indent=1))  # each size as it is done
    Path(args.out).write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
