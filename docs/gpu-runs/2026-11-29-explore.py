import json, os, sys, time, subprocess, traceback
sys.path.insert(0, os.getcwd())
OUT = os.environ.get("OUT", "/tmp/out")
res = {}
def step(name):
    def deco(f):
        t = time.time()
        try:
            res[name] = f()
        except Exception as e:
            res[name] = {"error": f"{type(e).__name__}: {e}", "tb": traceback.format_exc()[-2000:]}
        res[name + "_s"] = round(time.time() - t, 2)
        print(name, json.dumps(res[name], default=str)[:3000], flush=True)
    return deco

@step("env")
def _():
    import torch, triton
    smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,clocks.max.sm,power.limit", "--format=csv,noheader"], capture_output=True, text=True).stdout
    cc = subprocess.run(["bash", "-c", "which gcc cc nvcc; gcc --version | head -1"], capture_output=True, text=True).stdout
    try:
        import cupy; cpv = cupy.__version__
    except Exception as e: cpv = str(e)
    return {"python": sys.version, "torch": torch.__version__, "triton": triton.__version__, "smi": smi, "cc": cc, "cupy": cpv,
            "cap": torch.cuda.get_device_capability(), "name": torch.cuda.get_device_name()}

os.environ["TRITON_DISABLE_LINE_INFO"] = "1"
import torch, triton
from irscope import harness, library
from irscope.spec import CompileOptions
from irscope.targets import get_target

def jit_vs_deviceless(spec_name, make_args, grid, opts):
    spec = library.load_kernel(spec_name)
    cfg = spec.default_config
    args = make_args()
    kern = spec.fn[grid](*args, **cfg.constexprs, num_warps=cfg.num_warps, num_stages=cfg.num_stages) if cfg.num_stages else spec.fn[grid](*args, **cfg.constexprs, num_warps=cfg.num_warps)
    torch.cuda.synchronize()
    dl = harness.compile_kernel(spec, get_target("sm_90a"), opts)
    out = {"deviceless_ok": dl.ok, "error": dl.error}
    for st in ("ttir", "ttgir", "llir", "ptx", "cubin"):
        a = kern.asm.get(st); b = dl.stages.get(st)
        out[st] = "identical" if a == b else f"DIFF ({len(a or '')} vs {len(b or '')})"
        if a != b and st != "cubin":
            import difflib
            d = list(difflib.unified_diff(str(a).splitlines(), str(b).splitlines(), lineterm="", n=0))
            out[st + "_diff"] = d[:12]
    return out

@step("verify_add")
def _():
    n = 1 << 24
    return jit_vs_deviceless("add", lambda: (torch.randn(n, device="cuda"), torch.randn(n, device="cuda"), torch.empty(n, device="cuda"), n),
                             (n // 1024,), CompileOptions(line_info=False, args=(("n_elements", n),)))

@step("verify_matmul")
def _():
    M = N = K = 4096
    def mk():
        a = torch.randn(M, K, device="cuda", dtype=torch.float16); b = torch.randn(K, N, device="cuda", dtype=torch.float16); c = torch.empty(M, N, device="cuda", dtype=torch.float16)
        return (a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1))
    return jit_vs_deviceless("matmul", mk, (triton.cdiv(M, 128) * triton.cdiv(N, 256),), CompileOptions(line_info=False))

@step("snapshot_cubin_run")
def _():
    from triton.compiler.compiler import CompiledKernel, ASTSource
    from irscope.store import load_snapshot
    snap = load_snapshot(".devscratch/snaps/matmul/default.noline/sm_90a")
    spec = library.load_kernel("matmul")
    sig = {a["name"]: a["type"] for a in snap.meta["specialisation"]}
    names = spec.fn.arg_names
    constexprs = {(names.index(a["name"]),): a["value"] for a in snap.meta["specialisation"] if a["type"] == "constexpr"}
    attrs = {(names.index(a["name"]),): [["tt.divisibility", a["divisibility"]]] for a in snap.meta["specialisation"] if a.get("divisibility", 1) > 1}
    src = ASTSource(spec.fn, sig, constexprs, attrs)
    group = {p.name: str(p) for p in snap.path.iterdir() if p.name in ("matmul_kernel.json", "matmul_kernel.cubin")}
    ck = CompiledKernel(src, group, snap.meta["content_key"])
    M = N = K = 4096
    a = torch.randn(M, K, device="cuda", dtype=torch.float16); b = torch.randn(K, N, device="cuda", dtype=torch.float16); c = torch.full((M, N), float("nan"), device="cuda", dtype=torch.float16)
    args = (a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1), 128, 256, 64, 8)
    ck[(triton.cdiv(M, 128) * triton.cdiv(N, 256), 1, 1)](*args)
    torch.cuda.synchronize()
    ref = a.float() @ b.float()
    err = ((c.float() - ref).abs().max() / ref.abs().max()).item()
    from triton.testing import do_bench
    t_snap = do_bench(lambda: ck[(triton.cdiv(M, 128) * triton.cdiv(N, 256), 1, 1)](*args))
    t_torch = do_bench(lambda: torch.matmul(a, b))
    fl = 2 * M * N * K
    return {"rel_err": err, "nan": bool(torch.isnan(c).any()), "snap_ms": t_snap, "torch_ms": t_torch, "snap_tflops": fl / t_snap / 1e9, "torch_tflops": fl / t_torch / 1e9, "n_regs": ck.n_regs, "n_spills": ck.n_spills}

json.dump(res, open(os.path.join(OUT, "explore.json"), "w"), indent=1, default=str)
