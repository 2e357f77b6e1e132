"""The diff engine (irscope.diff.unified) against difflib.unified_diff, side by side in one run.

    python benchmarks/diff_engine.py [--lines 20000] [--repeat 5] [--corpus]

Inputs, all from the committed goldens under snapshots/ (no compile):
  ttgir 20k   matmul's TTGIR for sm_90a against gfx942, each grown to --lines lines the way
              benchmarks/tui_speed.py grows them (the body repeated, SSA names renamed per copy)
  ptx         matmul default against default.w2 on sm_90a, normalised (num_warps 4 -> 2: most lines move)
  sass        matmul default.s1 against default.w2 on sm_90a, normalised (repetitive, few unique lines)
For each: the median time of --repeat runs of difflib.unified_diff(n=3) and of the engine's unified_diff,
their ratio, and the +/- lines each prints. --corpus adds every pair of goldens of one kernel, every
text stage that differs (normalised): total time each way, and how many diffs got shorter or longer.
"""
from __future__ import annotations

import argparse
import difflib
import itertools
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from irscope.diff.unified import unified_diff  # noqa: E402
from irscope.ir.normalize import normalize  # noqa: E402
from irscope.store.snapshot import find_snapshots, load_snapshot  # noqa: E402
from tui_speed import grow  # noqa: E402

GOLDENS = ROOT / "snapshots"


def _stage(folder: str, stage: str) -> str:
    return load_snapshot(GOLDENS / folder).read(stage)


def inputs(lines: int) -> list[tuple[str, list[str], list[str]]]:
    a = grow(_stage("matmul/default/sm_90a", "ttgir"), lines).splitlines()
    b = grow(_stage("matmul/default/gfx942", "ttgir"), lines).splitlines()
    out = [(f"ttgir {lines // 1000}k", a, b)]
    for stage, x, y in (("ptx", "matmul/default/sm_90a", "matmul/default.w2/sm_90a"),
                        ("sass", "matmul/default.s1/sm_90a", "matmul/default.w2/sm_90a")):
        out.append((stage, normalize(stage, _stage(x, stage)).splitlines(),
                    normalize(stage, _stage(y, stage)).splitlines()))
    return out


def _difflib(a, b) -> list[str]:
    return list(difflib.unified_diff(a, b, "A", "B", lineterm="", n=3))


def _engine(a, b) -> list[str]:
    return unified_diff(a, b, "A", "B", 3)


def _changed(diff: list[str]) -> int:
    return sum(line[:1] in "+-" for line in diff[2:])


def _median(fn, a, b, repeat: int) -> tuple[float, list[str]]:
    times, out = [], []
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn(a, b)
        times.append(time.perf_counter() - t)
    return statistics.median(times), out


def corpus() -> None:
    snaps = find_snapshots(GOLDENS)
    by_kernel: dict[str, list] = {}
    for s in snaps:
        by_kernel.setdefault(s.kernel, []).append(s)
    t_lib = t_eng = 0.0
    pairs = shorter = longer = 0
    for group in by_kernel.values():
        for x, y in itertools.combinations(group, 2):
            for stage in ("ttir", "ttgir", "ptx", "amdgcn", "sass"):
                if stage not in x.stage_files or stage not in y.stage_files:
                    continue
                a, b = normalize(stage, x.read(stage)).splitlines(), normalize(stage, y.read(stage)).splitlines()
                if a == b:
                    continue
                pairs += 1
                t = time.perf_counter()
                old = _difflib(a, b)
                t_lib += time.perf_counter() - t
                t = time.perf_counter()
                new = _engine(a, b)
                t_eng += time.perf_counter() - t
                shorter += _changed(new) < _changed(old)
                longer += _changed(new) > _changed(old)
    print(f"corpus: {pairs} differing stage pairs of {len(snaps)} goldens; difflib {t_lib:.2f} s, engine "
          f"{t_eng:.2f} s (x{t_eng / t_lib:.2f}); engine diff shorter in {shorter}, longer in {longer}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=20000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--corpus", action="store_true")
    args = ap.parse_args()
    print(f"{'input':<10} {'lines A/B':>13} {'difflib':>9} {'engine':>9} {'ratio':>6}  {'+/- difflib':>11} "
          f"{'+/- engine':>10}")
    for name, a, b in inputs(args.lines):
        t_lib, old = _median(_difflib, a, b, args.repeat)
        t_eng, new = _median(_engine, a, b, args.repeat)
        print(f"{name:<10} {len(a):>6}/{len(b):<6} {t_lib * 1000:>7.0f}ms {t_eng * 1000:>7.0f}ms "
              f"{t_eng / t_lib:>6.2f}  {_changed(old):>11} {_changed(new):>10}")
    if args.corpus:
        corpus()


if __name__ == "__main__":
    main()
