"""Evidence that a capture compiles device-less to what the GPU's JIT compiled, stage by stage.

    TRITON_DISABLE_LINE_INFO=1 irscope capture --no-compile --out cap -- python prog.py      # on the GPU
    python benchmarks/capture_vs_jit.py cap/launches.json [--md table.md]

A capture made on a GPU ("gpu" mode) holds, for each launch, the sha256 of every stage the real JIT
compiled (`jit_stages`). This compiles each launch device-less for the same target, in this process,
with the same Triton, and compares the stages irscope.gpu.verify compares (ttir ttgir llir ptx cubin).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> int:
    from irscope import harness
    from irscope.gpu.verify import COMPARED
    from irscope.harness.launches import launch_points, load_launch_kernel
    from irscope.store.launches import read_launches
    from irscope.targets import get_target

    ap = argparse.ArgumentParser()
    ap.add_argument("launches")
    ap.add_argument("--md", metavar="FILE")
    a = ap.parse_args()
    data = read_launches(Path(a.launches))
    target = get_target(data["captured_for"]["name"])
    points, skipped = launch_points(Path(a.launches), [target])
    rows, all_same = [], bool(points)  # no launch at all proves nothing
    for point in points:
        spec, launch = load_launch_kernel(point.kernel)
        result = harness.compile_kernel(spec, target, point.options)
        cells = []
        for stage in COMPARED:
            want = (launch.get("jit_stages") or {}).get(stage)
            got = result.stages.get(stage)
            if want is None and got is None:
                continue
            digest = hashlib.sha256(got if isinstance(got, bytes) else str(got).encode()).hexdigest() if got else None
            same = want is not None and digest == want
            all_same &= same
            cells.append(f"{stage} {'=' if same else 'DIFFERS'}")
        rows.append((launch["id"], result.ok, cells))
    lines = [f"Triton {data['versions'].get('triton')}, torch {data['versions'].get('torch')}, target {target.name}, "
             f"line info {'on' if any(p.options.line_info for p in points) else 'off'}", "",
             "| launch | device-less compile | stages (JIT sha256 vs device-less) |", "|---|---|---|"]
    lines += [f"| `{i}` | {'ok' if ok else 'FAILED'} | {', '.join(c)} |" for i, ok, c in rows]
    lines += [f"| `{i}` | not compiled: {why} | |" for i, _, why in skipped]
    lines.append("")
    lines.append(f"{len(rows)} launches, every stage identical: {all_same and not skipped}")
    text = "\n".join(lines)
    print(text)
    if a.md:
        Path(a.md).write_text(text + "\n")
    print(json.dumps({"launches": len(rows), "identical": all_same and not skipped}))
    return 0 if all_same and not skipped else 1


if __name__ == "__main__":
    raise SystemExit(main())
