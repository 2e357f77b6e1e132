"""Config exploration on the H200 for the two missed targets: matmul 8192^3 and attention hd128 vs cuDNN."""
import dataclasses, json, os, statistics, sys
sys.path.insert(0, os.getcwd())
import torch
from irscope import runner, library
from irscope.device import do_bench
from irscope.workload import jit_launch
OUT = os.environ.get("OUT", "/tmp")
res = []

def explore(kernel, size, variants, reps=3):
    base = runner.prepare(runner.Request(kernel, size=size), "cuda")
    w = base.workload
    cands = {}
    for name, change in variants.items():
        calls = [dataclasses.replace(c, constexprs={**c.constexprs, **change.get("cx", {})},
                                     num_warps=change.get("w", c.num_warps), num_stages=change.get("s", c.num_stages)) for c in base.calls]
        p = dataclasses.replace(base, calls=calls)
        r = runner.check(p, jit_launch)
        print(kernel, size, name, "ok" if r.ok else f"WRONG {r.error}", flush=True)
        if r.ok:
            cands[name] = (lambda calls=calls: [jit_launch(c) for c in calls])
    tensors = {**base.x, **base.inputs}
    for bname, make in w.baselines.items():
        cands["torch:" + bname] = make(tensors, base.size)
    samples = {n: [] for n in cands}
    for _ in range(reps):
        for n, f in cands.items():
            samples[n].append(do_bench(f))
    fl = w.flops(base.size)
    for n, v in samples.items():
        ms = statistics.median(v)
        row = {"kernel": kernel, "size": size, "candidate": n, "ms": ms, "tflops": fl / ms / 1e9, "samples": v}
        res.append(row)
        print(f"  {n:<28} {ms:.4f} ms  {fl/ms/1e9:.0f} TFLOP/s  {v}", flush=True)

MM = {"default": {},
      "s4": {"s": 4},
      "m256n128": {"cx": {"BLOCK_M": 256, "BLOCK_N": 128}},
      "g16": {"cx": {"GROUP_M": 16}},
      "s4.g16": {"s": 4, "cx": {"GROUP_M": 16}},
      "m128n256k32.s4": {"s": 4, "cx": {"BLOCK_K": 32}}}
for size in ("8192", "bench"):
    explore("matmul", size, MM)
AT = {"default": {}, "n128": {"cx": {"BLOCK_N": 128}}, "w4": {"w": 4}, "s2": {"s": 2}, "s4": {"s": 4},
      "n128.s2": {"cx": {"BLOCK_N": 128}, "s": 2}}
for k in ("attention", "attention.causal"):
    for size in ("n4096.d128", "n8192.d128"):
        explore(k, size, AT)
json.dump(res, open(os.path.join(OUT, "explore2.json"), "w"), indent=1)
