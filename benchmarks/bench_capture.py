"""What `irscope capture` adds to a program's run, side by side with the same program uncaptured.

    python benchmarks/bench_capture.py [--launches 1000] [--distinct 8] [--repeat 3]        # CPU
    python benchmarks/bench_capture.py --gpu [--launches 10000]                             # on a GPU

CPU: the program builds its tensors and launches a Triton kernel --launches times over --distinct
specialisations. Uncaptured it cannot launch (no GPU), so the baseline is the same program with the
launches skipped (`--skip`); captured (`irscope capture --no-compile`) every launch goes through the JIT
to the recorder. The difference is the capture's cost: the child process, Triton's import, the fake
driver, the JIT's own per-launch work, and writing launches.json. Compiles are not included.

GPU: the loop runs for real both times; the program times its own steady-state loop (after the first
launch of each specialisation), so the number compared is the per-launch cost with and without capture.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}

PROGRAM = textwrap.dedent('''
    import sys, time
    import torch, triton, triton.language as tl

    @triton.jit
    def axpy(x_ptr, y_ptr, n, a, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(y_ptr + offs, a * tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)

    launches, distinct, skip = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "skip"
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    x, y = torch.randn(1 << 16, device=dev), torch.randn(1 << 16, device=dev)
    blocks = [2 ** (5 + i % 6) for i in range(distinct)]
    warps = [1 << (i // 6 % 4) for i in range(distinct)]
    if not skip:
        for b, w in zip(blocks, warps):  # first launch of each specialisation: the compile (or the record)
            axpy[(triton.cdiv(1 << 16, b),)](x, y, 1 << 16, 0.5, BLOCK=b, num_warps=w)
    if dev == "cuda":
        torch.cuda.synchronize()
    t = time.perf_counter()
    for i in range(launches):
        b, w = blocks[i % distinct], warps[i % distinct]
        if not skip:
            axpy[(triton.cdiv(1 << 16, b),)](x, y, 1 << 16, 0.5, BLOCK=b, num_warps=w)
    if dev == "cuda":
        torch.cuda.synchronize()
    print("LOOP_S", time.perf_counter() - t)
''')


def _run(cmd: list[str]) -> tuple[float, float]:
    t = time.perf_counter()
    done = subprocess.run(cmd, env=ENV, capture_output=True, text=True)
    wall = time.perf_counter() - t
    if done.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{done.stdout}\n{done.stderr}")
    loop = float(next(line.split()[1] for line in done.stdout.splitlines() if line.startswith("LOOP_S")))
    return wall, loop


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--launches", type=int, default=1000)
    ap.add_argument("--distinct", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--gpu", action="store_true")
    ap.add_argument("--json", metavar="FILE")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        prog = Path(tmp) / "prog.py"
        prog.write_text(PROGRAM)
        n = [str(a.launches), str(a.distinct)]
        plain = [sys.executable, str(prog), *n, "run" if a.gpu else "skip"]
        captured = [sys.executable, "-m", "irscope", "capture", "--no-compile", "--out", str(Path(tmp) / "out"),
                    "--", "python", str(prog), *n, "run"]
        rows = {"plain": [], "captured": []}
        for _ in range(a.repeat):
            rows["plain"].append(_run(plain))
            rows["captured"].append(_run(captured))
        data = json.loads((Path(tmp) / "out" / "launches.json").read_text())
    med = {k: (statistics.median(w for w, _ in v), statistics.median(lp for _, lp in v)) for k, v in rows.items()}
    result = {"launches": a.launches, "distinct": a.distinct, "recorded": len(data["launches"]),
              "counted": sum(launch.get("count") or 0 for launch in data["launches"]),
              "plain_wall_s": med["plain"][0], "captured_wall_s": med["captured"][0],
              "added_wall_s": med["captured"][0] - med["plain"][0],
              "plain_loop_s": med["plain"][1], "captured_loop_s": med["captured"][1], "mode": data["mode"]}
    if a.gpu:
        result["loop_ratio"] = med["captured"][1] / med["plain"][1]
    print(json.dumps(result, indent=1))
    if a.json:
        Path(a.json).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
