"""Why a config is slow, from the GPU's own samples: each config of a bundle (rank_bundle.py) timed as
rank_time.py times it, then run again under Proton's PC sampling (CUPTI), which records, for a sample of
its warps' program counters, what each warp was waiting for. A diagnosis of the ranking's misses
(docs/rank.md), not an evaluation: nothing here feeds a model's constants.

    python3 benchmarks/rank_stalls.py BUNDLE_DIR OUT_DIR --size KERNEL=SIZE... [--only SUBSTRING...] [--launches 40]

(KERNEL: a built-in's name, or a user's FILE.py:NAME, e.g. benchmarks/rank/conv1d.py:conv1d=bench.)

Writes OUT_DIR/stalls.json (per config: its time, and the samples by stall reason over the whole kernel)
and each session's Proton tree (OUT_DIR/<n>.hatchet), read back here without hatchet.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path


def totals(path: Path) -> dict:
    """Every numeric metric of a Proton hatchet file, summed over its frames (each frame's own samples);
    read by irscope's reader of Proton's trees (bounded, type-checked)."""
    from irscope.gpu.profile import read_profile
    out: dict = {}
    for frame in read_profile(path).root.walk():
        for k, v in frame.metrics.items():
            if isinstance(v, (int, float)):
                out[k] = out.get(k, 0) + v
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("bundle")
    ap.add_argument("out")
    ap.add_argument("--size", action="append", default=[], help="KERNEL=SIZE: the size to run KERNEL's configs at")
    ap.add_argument("--only", action="append", default=[], help="configs whose label holds this (repeatable)")
    ap.add_argument("--launches", type=int, default=40, help="launches under each sampling session")
    args = ap.parse_args()
    import torch
    import triton
    import triton.profiler as proton

    from irscope.gpu import runner
    from irscope.gpu.replay import check_call, full_args
    from irscope.harness.runtime import LoadedBinary, do_bench
    from irscope.spec import library
    from irscope.spec.workload import params_for
    from irscope.store.snapshot import load_snapshot

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    sizes = dict(s.split("=", 1) for s in args.size)
    # KERNEL may be a user's FILE.py:NAME (a held-out kernel): its snapshots name the spec, not the file
    refs = {library.load_kernel(k).name: k for k in sizes}
    sizes = {name: sizes[ref] for name, ref in refs.items()}
    result = {"versions": {"python": sys.version.split()[0], "torch": torch.__version__, "triton": triton.__version__,
                           "gpu": torch.cuda.get_device_name(), "driver": runner._versions().get("driver", "?")},
              "command": " ".join(sys.argv), "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
              "configs": []}
    snaps = [load_snapshot(d) for d in sorted(Path(args.bundle).iterdir()) if (d / "irscope.json").is_file()]
    snaps = [s for s in snaps if s.kernel in sizes and (not args.only or any(o in s.label for o in args.only))]
    prepared: dict = {}
    for n, s in enumerate(snaps):
        row = {"label": s.label, "size": sizes[s.kernel]}
        result["configs"].append(row)
        try:
            spec = library.load_kernel(refs[s.kernel])
            if s.kernel not in prepared:
                p = runner.prepare(runner.Request(refs[s.kernel], size=sizes[s.kernel]), "cuda")
                prepared[s.kernel] = (p, p.workload.reference({**p.x, **p.inputs}, p.size))
            p, want = prepared[s.kernel]
            b = LoadedBinary(s, spec)
            constexprs = {e["name"]: e["value"] for e in s.meta["specialisation"] if e.get("kind") == "constexpr"}
            call = [c for c in p.workload.launch(p.x, p.size, params_for(spec, None, constexprs))
                    if c.kernel == s.kernel][0]
            check_call(s, spec.fn, call)
            launch_args = full_args(spec.fn, call)
            for name in p.workload.outputs:
                runner.poison(p.x[name])
            b.launch(call.grid, launch_args)
            torch.cuda.synchronize()
            checks = [runner.compare(k, p.x[k], want[k], p.workload.tolerances) for k in p.workload.outputs]
            row["ok"] = all(c.ok for c in checks)
            row["ms"] = do_bench(lambda: b.launch(call.grid, launch_args))
            stem = out / f"{n}"
            session = proton.start(str(stem), backend="cupti", mode="pcsampling")
            # a module loaded inside the session, so the sampler knows its code
            b2 = LoadedBinary(s, spec)
            for _ in range(args.launches):
                b2.launch(call.grid, launch_args)
            torch.cuda.synchronize()
            proton.finalize(session, "hatchet")
            row["hatchet"] = f"{n}.hatchet"
            row["samples"] = totals(Path(f"{stem}.hatchet"))
        except Exception as e:  # noqa: BLE001 - recorded: what failed is the finding
            row["error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}"
            try:
                torch.cuda.synchronize()
            except Exception:  # noqa: BLE001
                pass
        print(json.dumps({k: v for k, v in row.items() if k != "samples"}), flush=True)
        (out / "stalls.json").write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
