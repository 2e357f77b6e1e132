"""H200 run of the warp-specialised Gluon attention (kernels/attention_ws.py) against SDPA cuDNN and flash.

    OUT=/tmp/out python3 benchmarks/gpu_attention_ws.py            # from the repository root, on the GPU

Every kernel config runs in its own child process with a time limit, so a config that hangs (a barrier
waited on forever) or faults costs that config only. Each child JIT-compiles the kernel with the
machine's Triton (3.6 on the H200; the kernel is written for 3.6 and 3.9), checks it against an fp32
reference (non-causal and causal, short, ragged (n 300) and long sequences), then times it with triton.testing.do_bench
at z 4, h 32, d 128, fp16, n 1024-8192 (and d 64 at n 4096, 8192), the best of --repeats do_bench runs.
The first child times SDPA's cuDNN and flash backends at the same sizes; after the default config come
the 3.9 snapshots' cubins through `irscope run --snapshot` when asked (--snapshot DIR). Writes $OUT/attention_ws.json and $OUT/attention_ws.log; prints a summary.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SIZES = (1024, 2048, 4096, 8192)
Z, H, D = 4, 32, 128


def _kernel_module():
    sys.path.insert(0, str(ROOT))
    spec = importlib.util.spec_from_file_location("attention_ws", ROOT / "kernels" / "attention_ws.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _reference(q, k, v, causal):
    import torch
    qf, kf, vf = (t.float().flatten(0, 1) for t in (q, k, v))
    n, d = qf.shape[1], qf.shape[2]
    out = torch.empty_like(qf)
    mask = torch.ones(n, n, dtype=torch.bool, device=q.device).tril() if causal else None
    chunk = max(1, (1 << 26) // (n * n))
    for i in range(0, qf.shape[0], chunk):
        s = qf[i:i + chunk] @ kf[i:i + chunk].transpose(1, 2) / math.sqrt(d)
        if mask is not None:
            s = s.masked_fill(~mask, float("-inf"))
        out[i:i + chunk] = torch.softmax(s, dim=-1) @ vf[i:i + chunk]
    return out.view(q.shape)


def _inputs(z, h, n, d, seed=0):
    import torch
    g = torch.Generator(device="cuda").manual_seed(seed)
    q, k, v = (torch.randn((z, h, n, d), generator=g, device="cuda", dtype=torch.float16) for _ in range(3))
    return q, k, v


def _launcher(mod, cfg, causal, q, k, v, o):
    n, d = q.shape[2], q.shape[3]
    bm, bn = cfg["BLOCK_M"], cfg["BLOCK_N"]
    descs = mod.descriptors(q, k, v, o, bm, bn)
    zh = q.shape[0] * q.shape[1]
    kernel = mod.attention_ws_kernel[mod.grid(n, zh, bm, cfg["PERSISTENT"], q.device)]

    def run():
        kernel(*descs, 1.0 / math.sqrt(d), n, zh, **{**cfg, "HEAD_DIM": d, "IS_CAUSAL": causal}, num_warps=4)
    return run


def _flops(z, h, n, d, causal):
    return (0.5 if causal else 1.0) * 4 * z * h * n * n * d


def child_kernel(task):
    """Check one config (both masks, a short and a long sequence), then time it at the sizes asked."""
    import torch
    import triton
    from triton.testing import do_bench
    mod = _kernel_module()
    cfg, causal, d = task["config"], task["causal"], task.get("d", D)
    rec = {"kind": "kernel", "config": task["name"], "causal": causal, "d": d, "checks": [], "times": []}
    for z, h, n in ((1, 4, 1024), (1, 3, 300), (1, 2, 4096)):
        q, k, v = _inputs(z, h, n, d, seed=n)
        o = torch.full_like(q, float("nan"))
        t0 = time.time()
        _launcher(mod, cfg, causal, q, k, v, o)()
        torch.cuda.synchronize()
        want = _reference(q, k, v, causal)
        err = (o.float() - want).abs()
        ok = bool(torch.isfinite(o).all()) and bool((err <= 1e-2 + 1e-2 * want.abs()).all())
        rec["checks"].append({"z": z, "h": h, "n": n, "ok": ok, "max_abs_err": float(err.nan_to_num(1e9).max()),
                              "seconds": round(time.time() - t0, 2)})
        print(json.dumps({"progress": f"{task['name']} causal={causal} d={d} n={n} ok={ok}"}), flush=True)
        if not ok:
            rec["ok"] = False
            return rec
    rec["ok"] = True
    for n in task["sizes"]:
        q, k, v = _inputs(Z, H, n, d, seed=1)
        o = torch.empty_like(q)
        run = _launcher(mod, cfg, causal, q, k, v, o)
        run()
        torch.cuda.synchronize()
        # The long sequences against cuDNN's output too (fp16 vs fp16; the fp32 reference is costly there).
        from torch.nn.attention import SDPBackend, sdpa_kernel
        import torch.nn.functional as F
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            ref = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        vs_cudnn = float((o.float() - ref.float()).abs().max())
        ms = min(do_bench(run, warmup=25, rep=100, return_mode="median") for _ in range(task.get("repeats", 2)))
        tflops = _flops(Z, H, n, d, causal) / ms / 1e9
        rec["times"].append({"n": n, "ms": ms, "tflops": round(tflops, 1), "max_abs_vs_cudnn": vs_cudnn})
        print(json.dumps({"progress": f"{task['name']} causal={causal} d={d} n={n} {ms:.3f} ms {tflops:.0f} TFLOP/s"}),
              flush=True)
    rec["triton"] = triton.__version__
    return rec


def child_sdpa(task):
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from triton.testing import do_bench
    rec = {"kind": "sdpa", "times": []}
    for d in task.get("dims", (D,)):
        for causal in (False, True):
            for n in task["sizes"]:
                q, k, v = _inputs(Z, H, n, d, seed=1)
                for name, backend in (("cudnn", SDPBackend.CUDNN_ATTENTION), ("flash", SDPBackend.FLASH_ATTENTION)):
                    def run():
                        with sdpa_kernel(backend):
                            return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                    try:
                        run()
                        ms = min(do_bench(run, warmup=25, rep=100, return_mode="median") for _ in range(task.get("repeats", 2)))
                        rec["times"].append({"backend": name, "causal": causal, "n": n, "d": d, "ms": ms,
                                             "tflops": round(_flops(Z, H, n, d, causal) / ms / 1e9, 1)})
                    except Exception as e:  # noqa: BLE001 - record a backend that is not there
                        rec["times"].append({"backend": name, "causal": causal, "n": n, "d": d,
                                             "error": f"{type(e).__name__}: {e}"[:300]})
                print(json.dumps({"progress": f"sdpa d={d} causal={causal} n={n}"}), flush=True)
    return rec


def _run_child(task, timeout, log):
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", json.dumps(task)]
    t0 = time.time()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
        out, err, rc = p.stdout, p.stderr, p.returncode
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        err = e.stderr.decode() if isinstance(e.stderr, bytes) else (e.stderr or "")
        rc = "timeout"
    log.write(f"\n=== {task.get('name', task['kind'])} causal={task.get('causal')} rc={rc} "
              f"{time.time() - t0:.1f} s\n{out}\n--- stderr (tail)\n{err[-3000:]}\n")
    log.flush()
    result = None
    for line in out.splitlines():
        if line.startswith('{"result"'):
            result = json.loads(line)["result"]
    if result is None:
        result = {"kind": task["kind"], "config": task.get("name"), "causal": task.get("causal"), "ok": False,
                  "error": f"rc={rc}: " + (err.strip().splitlines() or ["no output"])[-1][:400]}
        progress = [json.loads(ln)["progress"] for ln in out.splitlines() if ln.startswith('{"progress"')]
        result["last_progress"] = progress[-1] if progress else None
    result["wall_s"] = round(time.time() - t0, 1)
    return result


def _run_snapshot(snap, timeout, log):
    """`irscope run --snapshot SNAP`: the 3.9 cubin checked (small and ragged sizes) and timed (bench) here."""
    cmd = [sys.executable, "-m", "irscope", "run", "--snapshot", snap, "--size", "small", "--size", "ragged",
           "--size", "bench"]
    t0 = time.time()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT,
                           env={**os.environ, "PYTHONPATH": str(ROOT)})
        text, rc = p.stdout + p.stderr, p.returncode
    except subprocess.TimeoutExpired:
        text, rc = f"timed out after {timeout:.0f} s", "timeout"
    log.write(f"\n=== irscope run --snapshot {snap} --size small --size ragged --size bench rc={rc} "
              f"{time.time() - t0:.1f} s\n"
              f"{text[-4000:]}\n")
    log.flush()
    return {"kind": "snapshot", "snapshot": snap, "rc": rc, "tail": text[-1500:], "wall_s": round(time.time() - t0, 1)}


def _summary(results):
    cudnn = {(t["causal"], t["n"], t["d"]): t.get("ms") for r in results if r["kind"] == "sdpa"
             for t in r.get("times", ()) if t["backend"] == "cudnn"}
    flash = {(t["causal"], t["n"], t["d"]): t.get("ms") for r in results if r["kind"] == "sdpa"
             for t in r.get("times", ()) if t["backend"] == "flash"}
    lines = []
    for r in results:
        if r["kind"] != "kernel":
            continue
        head = f"{r['config']:<14} causal={int(bool(r['causal']))} d={r.get('d', D)}"
        if not r.get("ok"):
            lines.append(f"{head} FAILED {r.get('error') or r.get('checks')}")
            continue
        for t in r.get("times", ()):
            key = (r["causal"], t["n"], r.get("d", D))
            c, f = cudnn.get(key), flash.get(key)
            lines.append(f"{head} n={t['n']:<5} {t['ms']:.3f} ms {t['tflops']:6.1f} TFLOP/s"
                         + (f"  {c / t['ms']:.3f}x cudnn" if c else "") + (f"  {f / t['ms']:.3f}x flash" if f else ""))
    for r in results:
        if r["kind"] == "sdpa":
            if not r.get("times"):
                lines.append(f"sdpa FAILED {r.get('error')}")
            for t in r.get("times", ()):
                lines.append(f"sdpa {t['backend']:<5} causal={int(t['causal'])} d={t['d']} n={t['n']:<5} "
                             + (f"{t['ms']:.3f} ms {t['tflops']:6.1f} TFLOP/s" if "ms" in t else t["error"]))
    return lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--child")
    ap.add_argument("--configs", default="", help="comma-separated config names (default: every config)")
    ap.add_argument("--snapshot", action="append", default=[], help="also `irscope run --snapshot DIR --size bench`")
    ap.add_argument("--timeout", type=int, default=50, help="seconds one config's child may take")
    ap.add_argument("--budget", type=int, default=215, help="seconds for the whole run")
    ap.add_argument("--repeats", type=int, default=3, help="do_bench runs per point (the best is kept)")
    args = ap.parse_args()
    if args.child:
        task = json.loads(args.child)
        rec = child_kernel(task) if task["kind"] == "kernel" else child_sdpa(task)
        print(json.dumps({"result": rec}), flush=True)
        return 0

    out = Path(os.environ.get("OUT", "results"))
    out.mkdir(parents=True, exist_ok=True)
    mod = _kernel_module()
    wanted = [c for c in args.configs.split(",") if c]
    configs = [c for c in mod.CONFIGS if not wanted or c.name in wanted]
    # First the baselines (they must not be cut for time), d 128 and d 64.
    tasks = [{"kind": "sdpa", "sizes": SIZES, "dims": (D, 64), "repeats": args.repeats}]
    for c in configs:
        for causal in (False, True):
            tasks.append({"kind": "kernel", "name": c.name, "causal": causal, "sizes": SIZES, "repeats": args.repeats,
                          "config": {**mod.SPECS[0].constexprs, **dict(c.constexprs)}})
    if configs:
        for causal in (False, True):
            tasks.append({"kind": "kernel", "name": configs[0].name + ".d64", "causal": causal, "d": 64,
                          "sizes": (4096, 8192), "repeats": args.repeats,
                          "config": {**mod.SPECS[0].constexprs, **dict(configs[0].constexprs)}})
    # The snapshots' cubins (Triton 3.9, compiled here without a GPU) right after the default config.
    tasks[3:3] = [{"kind": "snapshot", "snapshot": snap} for snap in args.snapshot]
    import torch
    import triton
    info = {"torch": torch.__version__, "triton": triton.__version__, "cuda": torch.version.cuda,
            "device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none", "z": Z, "h": H, "d": D,
            "started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())}
    results = []
    t_start = time.time()
    with open(out / "attention_ws.log", "w") as log:
        log.write(json.dumps(info) + "\n")
        for task in tasks:
            left = args.budget - (time.time() - t_start)
            if left < 20:  # stay inside the 4 minutes a device request gets
                results.append({"kind": task["kind"], "config": task.get("name") or task.get("snapshot"),
                                "causal": task.get("causal"), "d": task.get("d", D), "ok": False,
                                "error": "skipped: out of time"})
                continue
            if task["kind"] == "snapshot":
                results.append(_run_snapshot(task["snapshot"], min(90, left), log))
            else:
                results.append(_run_child(task, min(args.timeout, left), log))
            (out / "attention_ws.json").write_text(json.dumps({"info": info, "results": results}, indent=1))
        summary = _summary(results)
        log.write("\n".join(["", "=== summary"] + summary) + "\n")
    info["seconds"] = round(time.time() - t_start, 1)
    (out / "attention_ws.json").write_text(json.dumps({"info": info, "results": results, "summary": summary},
                                                      indent=1))
    print("\n".join(summary))
    for r in results:
        if r["kind"] == "snapshot":
            print(f"snapshot {r.get('snapshot') or r.get('config')}: rc={r.get('rc')} {r.get('error', '')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
