"""Time every autotune config of a real third-party kernel on the GPU, through its library's own wrapper.

Runs ON the GPU machine (torch + Triton + the library; irscope is not needed there). Three kernels
(`--kernel`), each launched once by its library's own Python wrapper, with the autotuner made to
benchmark every config:

- `fla_chunk_h` (default): flash-linear-attention's `chunk_fwd_kernel_h` (`fla-core` 0.6.0,
  `fla.ops.common.chunk_h`), through FLA's `chunk_fwd_h` at the sizes of
  tests/capture_programs/autotuned_lib.py (B=8, T=4096, H=16, K=V=128, bf16, chunk 64): 48 configs
  (BK, BV in {32, 64}, num_warps 1/2/4/8, num_stages 2/3/4). Needs the wheels fla-core, einops, packaging.
- `liger_mlp`: Liger-Kernel 0.8.5's fused gate/up GEMM + SwiGLU `_swiglu_kernel_forward`
  (`liger_kernel.ops.mlp`, host-side TMA descriptors whose block shapes its config pre_hooks set), through
  `gemm_swiglu` (B=4, S=2048, dim=4096, hidden=11008, bf16): 32 configs (BLOCK_M 64/128, BLOCK_K 64/128,
  GROUP_SIZE_M 1/8, num_warps 4/8, num_stages 2/3). Needs the wheel liger-kernel.
- `flaggems_mm`: FlagGems 5.0.2's Hopper matmul `mm_kernel_general_host_tma` (host-side TMA descriptors
  set by a pre_hook, GROUP_M 8), through `flag_gems.mm` (M=N=K=4096 unless `--size`, bf16): its whole menu
  less what its own shared-memory estimate drops (tests/capture_programs/flaggems_mm.py). Needs the wheels
  flag-gems and sqlalchemy (and PyYAML where the machine lacks it). `--prewarm 14` compiles the menu in 14
  processes first.

The configs timed here are the launches `irscope capture --as sm_90a` records for the same call
(tests/capture_programs/autotuned_lib.py for fla_chunk_h), joined by `index` (the launch file's
`autotune_config`) or by the config's kwargs, num_warps and num_stages.

    # the library's pure-Python wheels: unpacked here with --wheels DIR, or installed beforehand
    # (python3 -m pip install --no-deps --target DIR *.whl; then PYTHONPATH=DIR)
    python3 benchmarks/autotune_timings.py timings.json --wheels wheels/
    python3 benchmarks/autotune_timings.py liger.json --kernel liger_mlp --wheels wheels/ --retime

What it writes (JSON, to argv[1]): the versions (python, torch, CUDA, Triton, the library, the GPU's name,
capability, SM count, shared memory), the problem, the autotuner's key, and `configs`: for every config
in the autotuner's order, `index`, `kwargs`, `num_warps`, `num_stages`, `num_ctas`, `maxnreg`, `ms`
(median), `ms_p20`, `ms_p80` and `source`:

- `autotuner`: Triton's own benchmark of the config (`Autotuner.configs_timings`, which `Autotuner.run`
  sets in Triton 3.x, 3.6 included: a dict Config -> [p50, p20, p80] in ms from the driver's benchmarker,
  `triton.testing.do_bench`, which flushes L2 between runs). The autotuner's in-memory results are cleared
  and its disk cache (FLA passes `cache_results=True`) turned off first, so it benchmarks every config in
  this process.
- `do_bench`: where the autotuner left no timing for a config (no `configs_timings`, a pruned config),
  the script times it itself: the exact launch the autotuner got from the wrapper (recorded by wrapping
  `Autotuner.run` during the wrapper's call) with that config's kwargs, after the config's and the
  autotuner's pre_hooks, through `triton.testing.do_bench(quantiles=(0.5, 0.2, 0.8))`.

`--retime` also times every config that second way, under `retimed`, as a check on the autotuner's
numbers. A config that cannot run (out of resources) has `ms: null` and `failed: true`.
"""
import argparse
import json
import math
import os
import platform
import sys
import tempfile
import time
import zipfile


def unpack_wheels(folder):
    """Unpack every pure-Python wheel of FOLDER into a temporary folder put first on sys.path (no pip)."""
    target = tempfile.mkdtemp(prefix="autotune-wheels-")
    names = sorted(n for n in os.listdir(folder) if n.endswith(".whl"))
    if not names:
        raise SystemExit(f"no .whl files in {folder}")
    for name in names:
        with zipfile.ZipFile(os.path.join(folder, name)) as z:
            z.extractall(target)
    sys.path.insert(0, target)
    return names


def find_autotuner(obj):
    """The Autotuner inside a chain of Heuristics/Autotuner wrappers around a JITFunction."""
    from triton.runtime.autotuner import Autotuner
    seen = obj
    while seen is not None:
        if isinstance(seen, Autotuner):
            return seen
        seen = getattr(seen, "fn", None)
    raise SystemExit(f"no triton Autotuner wraps {obj!r}")


def dist_version(name, module=None):
    try:
        import importlib.metadata as md
        return md.version(name)
    except Exception:
        return getattr(module, "__version__", None)


# ---- the kernels: each returns (kernel object, a call of its library's wrapper, problem, library) ----

def setup_fla_chunk_h(a, torch):
    # FLA gives its autotuners cache_results=True: a timing cached on disk would skip the benchmark.
    os.environ["FLA_CACHE_RESULTS"] = "0"
    import fla
    from fla.ops.common import chunk_h as module

    dtype = getattr(torch, a.dtype)
    size = {"B": 8, "T": 4096, "H": 16, "K": 128, "V": 128}
    size.update({k: int(v) for k, v in (kv.split("=") for kv in a.size.split(","))} if a.size else {})
    B, T, H, K, V = (size[n] for n in "BTHKV")
    torch.manual_seed(0)
    k = torch.randn(B, T, H, K, device="cuda", dtype=dtype) / K ** 0.5
    v = torch.randn(B, T, H, V, device="cuda", dtype=dtype)

    def call():
        h, ht = module.chunk_fwd_h(k, v, output_final_state=True, chunk_size=64)
        return [list(h.shape), list(ht.shape)]

    problem = {"B": B, "T": T, "H": H, "K": K, "V": V, "dtype": a.dtype, "chunk_size": 64,
               "output_final_state": True}
    kernel = {"id": "fla.ops.common.chunk_h:chunk_fwd_kernel_h", "wrapper": "fla.ops.common.chunk_h.chunk_fwd_h"}
    return module.chunk_fwd_kernel_h, call, problem, kernel, {"name": "fla-core", "version": dist_version("fla-core", fla)}


def setup_liger_mlp(a, torch):
    import liger_kernel
    from liger_kernel.ops import mlp as module

    dtype = getattr(torch, a.dtype)
    B, S, D, HID = 4, 2048, 4096, 11008
    torch.manual_seed(0)
    x = torch.randn(B, S, D, device="cuda", dtype=dtype)
    wg = torch.randn(HID, D, device="cuda", dtype=dtype) / D ** 0.5
    wu = torch.randn(HID, D, device="cuda", dtype=dtype) / D ** 0.5

    def call():
        agu, _best = module.gemm_swiglu(x, wg, wu, 1.0, store_preact=True)
        return [list(agu.shape)]

    problem = {"B": B, "S": S, "dim": D, "hidden_dim": HID, "dtype": a.dtype, "gate_multiplier": 1.0,
               "store_preact": True}
    kernel = {"id": "liger_kernel.ops.mlp:_swiglu_kernel_forward", "wrapper": "liger_kernel.ops.mlp.gemm_swiglu"}
    return (module._swiglu_kernel_forward, call, problem, kernel,
            {"name": "liger-kernel", "version": dist_version("liger-kernel", liger_kernel)})


def setup_flaggems_mm(a, torch):
    # FlagGems' own settings: its vendor without probing, and a fresh cache folder (its LibTuner keeps tuned
    # configs and timings in an sqlite file there: an earlier run's would skip the benchmark).
    os.environ.setdefault("GEMS_VENDOR", "nvidia")
    os.environ["FLAGGEMS_CACHE_DIR"] = tempfile.mkdtemp(prefix="flaggems-cache-")
    import flag_gems
    # FlagGems imports its arch modules under names of their own ("hopper.ops.mm"): the kernel flag_gems.mm
    # launches is the one in the module loaded from that file, whatever its name
    path = os.path.join(os.path.dirname(flag_gems.__file__), "runtime", "backend", "_nvidia", "hopper", "ops", "mm.py")
    module = next((m for m in list(sys.modules.values()) if getattr(m, "__file__", None) == path
                   and hasattr(m, "mm_kernel_general_host_tma")), None)
    if module is None:
        raise SystemExit(f"FlagGems did not load its Hopper matmul ({path}): is this GPU a Hopper?")

    dtype = getattr(torch, a.dtype)
    size = {"M": 4096, "N": 4096, "K": 4096}
    size.update({k: int(v) for k, v in (kv.split("=") for kv in a.size.split(","))} if a.size else {})
    M, N, K = (size[n] for n in "MNK")
    torch.manual_seed(0)
    x = torch.randn(M, K, device="cuda", dtype=dtype)
    y = torch.randn(K, N, device="cuda", dtype=dtype)

    def call():
        return [list(flag_gems.mm(x, y).shape)]

    problem = {"M": M, "N": N, "K": K, "dtype": a.dtype}
    kernel = {"id": "flag_gems.runtime.backend._nvidia.hopper.ops.mm:mm_kernel_general_host_tma",
              "wrapper": "flag_gems.mm"}
    return (module.mm_kernel_general_host_tma, call, problem, kernel,
            {"name": "flag-gems", "version": dist_version("flag-gems", flag_gems)})


KERNELS = {"fla_chunk_h": setup_fla_chunk_h, "liger_mlp": setup_liger_mlp, "flaggems_mm": setup_flaggems_mm}


def prewarm(n, args):
    """Compile every config before timing, in `n` processes at once: each runs this script on every n-th
    config (`--slice i/n`), so Triton's cache (shared by TRITON_CACHE_DIR) holds them all when the timed
    run's autotuner asks. The timed run still benchmarks every config itself."""
    import subprocess
    base = ["--kernel", args.kernel, "--dtype", args.dtype] + (["--wheels", args.wheels] if args.wheels else []) + \
        (["--size", args.size] if args.size else [])
    procs = [subprocess.Popen([sys.executable, __file__, os.devnull, *base, "--slice", f"{i}/{n}"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) for i in range(n)]
    failed = [(i, p.communicate()[1][-400:]) for i, p in enumerate(procs) if p.wait() != 0]
    for i, err in failed:
        print(f"prewarm slice {i}/{n} failed: {err}", file=sys.stderr)


def timing_triple(value):
    """Triton's timing of one config ([p50, p20, p80] from do_bench with quantiles, or one float), in ms."""
    vals = list(value) if isinstance(value, (list, tuple)) else [value]
    vals = [None if v is None else float(v) for v in vals] + [None] * 3
    return [None if (v is None or math.isinf(v) or math.isnan(v)) else v for v in vals[:3]]


def config_key(cfg):
    return json.dumps({**cfg.kwargs, "num_warps": cfg.num_warps, "num_stages": cfg.num_stages,
                       "num_ctas": getattr(cfg, "num_ctas", 1), "maxnreg": getattr(cfg, "maxnreg", None)},
                      sort_keys=True, default=str)


def jsonable(v):
    if isinstance(v, (bool, int, float, str)) or v is None:
        return v
    if isinstance(v, (list, tuple)):
        return [jsonable(x) for x in v]
    return str(v)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", help="where to write the JSON")
    ap.add_argument("--kernel", default="fla_chunk_h", choices=sorted(KERNELS))
    ap.add_argument("--wheels", help="a folder of pure-Python wheels (fla-core, einops, packaging; "
                                     "liger-kernel) to unpack and import from, when the library is not installed")
    ap.add_argument("--retime", action="store_true",
                    help="also time every config with triton.testing.do_bench, as a check on the autotuner's numbers")
    ap.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float16"])
    ap.add_argument("--size", help="fla_chunk_h's sizes other than B=8,T=4096,H=16,K=128,V=128, e.g. B=1,T=16384 "
                                   "(as tests/capture_programs/autotuned_lib.py takes them); flaggems_mm's "
                                   "M=,N=,K= (4096 each by default)")
    ap.add_argument("--prewarm", type=int, default=0, metavar="N",
                    help="compile every config first in N processes at once (Triton's cache then holds them)")
    ap.add_argument("--slice", help=argparse.SUPPRESS)  # i/n: a prewarm process's share of the configs
    args = ap.parse_args()
    if args.prewarm:
        t = time.time()
        prewarm(args.prewarm, args)
        print(f"prewarmed in {time.time() - t:.0f} s ({args.prewarm} processes)")

    wheels = unpack_wheels(args.wheels) if args.wheels else []

    import torch
    import triton
    import triton.testing

    if not torch.cuda.is_available():
        raise SystemExit("this script times kernels on a GPU: torch.cuda.is_available() is False")

    kernel_obj, call, problem, kernel_info, library = KERNELS[args.kernel](args, torch)
    tuner = find_autotuner(kernel_obj)
    if args.slice:  # a prewarm process: its share of the configs, compiled (and benchmarked) by the wrapper
        i, n = (int(x) for x in args.slice.split("/"))
        tuner.configs = tuner.configs[i::n]
        call()
        torch.cuda.synchronize()
        return
    if hasattr(tuner.cache, "clear"):  # (FlagGems' LibTuner keeps its own, in a fresh folder here)
        tuner.cache.clear()            # forget any earlier tuning of this key in this process
    tuner.cache_results = False    # and never read a disk-cached one (cache_results=True, TRITON_CACHE_AUTOTUNING)
    tuner.__dict__.pop("configs_timings", None)

    # Record the exact launch the autotuner gets from the wrapper (for the do_bench fallback and --retime).
    recorded = {}
    original_run = tuner.run

    def recording_run(*a, **kw):
        if not recorded:
            recorded["args"], recorded["kwargs"] = a, dict(kw)
        return original_run(*a, **kw)

    tuner.run = recording_run
    t0 = time.time()
    try:
        problem["outputs"] = call()  # the autotuner compiles and benchmarks every config, then runs the best
        torch.cuda.synchronize()
    finally:
        tuner.run = original_run
    wall_s = time.time() - t0
    if not recorded:
        raise SystemExit(f"{kernel_info['wrapper']} did not go through the autotuner")

    timings = getattr(tuner, "configs_timings", None) or {}
    by_key = {config_key(c): t for c, t in timings.items()}

    def do_bench_config(cfg):
        a, kw = recorded["args"], recorded["kwargs"]
        current = {**kw, **cfg.all_kwargs()}
        nargs = {**dict(zip(tuner.arg_names, a)), **current}

        def launch():
            if cfg.pre_hook:
                cfg.pre_hook(nargs)
            tuner.pre_hook(nargs)
            tuner.fn.run(*a, **current)
            tuner.post_hook(nargs, exception=None)

        try:
            return timing_triple(triton.testing.do_bench(launch, quantiles=(0.5, 0.2, 0.8))), None
        except Exception as e:  # out of resources, a compile error: this config cannot run here
            return [None, None, None], f"{type(e).__name__}: {str(e)[:300]}"

    configs = []
    for index, cfg in enumerate(tuner.configs):
        entry = {"index": index, "kwargs": {kk: jsonable(vv) for kk, vv in cfg.kwargs.items()},
                 "num_warps": cfg.num_warps, "num_stages": cfg.num_stages,
                 "num_ctas": getattr(cfg, "num_ctas", 1), "maxnreg": getattr(cfg, "maxnreg", None)}
        raw = by_key.get(config_key(cfg))
        if raw is not None:
            triple, error, source = timing_triple(raw), None, "autotuner"
        else:
            (triple, error), source = do_bench_config(cfg), "do_bench"
        entry.update(ms=triple[0], ms_p20=triple[1], ms_p80=triple[2], source=source)
        if triple[0] is None:
            entry["failed"] = True
            if error:
                entry["error"] = error
        if args.retime:
            retimed, rerror = do_bench_config(cfg)
            entry["retimed"] = {"ms": retimed[0], "ms_p20": retimed[1], "ms_p80": retimed[2]}
            if rerror:
                entry["retimed"]["error"] = rerror
        configs.append(entry)

    best = getattr(tuner, "best_config", None)
    best_index = next((i for i, c in enumerate(tuner.configs)
                       if best is not None and config_key(c) == config_key(best)), None)
    measured = [c for c in configs if c["ms"] is not None]
    fastest = min(measured, key=lambda c: c["ms"])["index"] if measured else None
    props = torch.cuda.get_device_properties(0)

    result = {
        "format": "irscope-autotune-timings",
        "version": 1,
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "library": {**library, "wheels": wheels},
        "kernel": {**kernel_info, "name": args.kernel, "autotune_key": list(tuner.keys),
                   "n_configs": len(tuner.configs)},
        "problem": problem,
        "versions": {"python": platform.python_version(), "torch": torch.__version__, "cuda": torch.version.cuda,
                     "triton": triton.__version__, library["name"]: library["version"]},
        "gpu": {"name": torch.cuda.get_device_name(0), "capability": list(torch.cuda.get_device_capability(0)),
                "sm_count": props.multi_processor_count,
                "shared_memory_per_block_optin": getattr(props, "shared_memory_per_block_optin", None)},
        "timing_source": "Autotuner.configs_timings" if timings else "triton.testing.do_bench (fallback)",
        "autotuner_bench_s": getattr(tuner, "bench_time", None),
        "wrapper_call_s": wall_s,
        "best_config_index": best_index,
        "fastest_measured_index": fastest,
        "configs": configs,
    }
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
    n_auto = sum(c["source"] == "autotuner" for c in configs)
    print(f"{len(configs)} configs of {kernel_info['id']} timed ({n_auto} by the autotuner, "
          f"{len(configs) - n_auto} by do_bench), best {best_index}, fastest measured {fastest} -> {args.out}")
    for c in sorted(measured, key=lambda c: c["ms"])[:5]:
        print(f"  #{c['index']:2d} {c['kwargs']} w{c['num_warps']} s{c['num_stages']}: {c['ms']:.4f} ms")


if __name__ == "__main__":
    main()
