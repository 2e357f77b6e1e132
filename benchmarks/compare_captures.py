"""Two captures of one program, launch by launch: did they record the same specialisations?

    python benchmarks/compare_captures.py GPU/launches.json EMULATED/launches.json [--md table.md]

Made for `irscope capture --as TARGET` (capture_emulate.py): run the program once on the GPU (the real
JIT) and once emulated, on the same machine and Triton, then compare. A launch's id (`KERNEL/VARIANT`)
hashes the kernel's source, every argument's specialisation, the constexpr values and the options, so
equal id sets mean the emulated capture recorded exactly the JIT's specialisations; the arguments as
recorded (dtypes, divisibility, descriptor shapes and block shapes, scalar values) and the first
launch's grid are compared too. Launch counts are not: they follow the autotuner's benchmarking.
Exit code 0 when everything matches.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _args(launch: dict) -> list:
    # value_known, and the tensors' shape, strides and alias (which older launch files lack), are left out
    return [{k: v for k, v in a.items() if k != "value_known" and (a["kind"] != "tensor" or
                                                                 k not in ("shape", "strides", "alias"))}
            for a in launch["args"]]


def compare(a: dict, b: dict) -> tuple[list[tuple[str, str, str, str]], bool]:
    """Rows (launch id, in A, in B, what differs) and whether the two captures agree."""
    la = {x["id"]: x for x in a["launches"]}
    lb = {x["id"]: x for x in b["launches"]}
    rows, same = [], True
    for lid in list(la) + [i for i in lb if i not in la]:
        x, y = la.get(lid), lb.get(lid)
        if x is None or y is None:
            same = False
            rows.append((lid, "yes" if x else "no", "yes" if y else "no", "only in one capture"))
            continue
        diffs = []
        if _args(x) != _args(y):
            diffs.append("arguments")
        if x.get("grid") != y.get("grid"):
            diffs.append(f"grid {x.get('grid')} vs {y.get('grid')}")
        if x.get("autotune_config") != y.get("autotune_config"):
            diffs.append("autotune config")
        same &= not diffs
        rows.append((lid, "yes", "yes", ", ".join(diffs) or "same specialisation, arguments and grid"))
    return rows, same


def main() -> int:
    from irscope.store.launches import read_launches

    ap = argparse.ArgumentParser()
    ap.add_argument("a", help="the reference capture (the GPU's)")
    ap.add_argument("b", help="the capture to check (the emulated one)")
    ap.add_argument("--md", metavar="FILE")
    ns = ap.parse_args()
    a, b = read_launches(Path(ns.a)), read_launches(Path(ns.b))
    rows, same = compare(a, b)

    def how(d: dict) -> str:
        em = d.get("emulation")
        v = d.get("versions") or {}
        return (f"{d.get('mode')} mode for {d['captured_for']['name']}"
                f"{' (emulated: --as ' + em['as'] + ')' if em else ''}, Triton {v.get('triton')}, torch {v.get('torch')}")

    lines = [f"A: {how(a)}", f"B: {how(b)}", "",
             "| launch | in A | in B | comparison |", "|---|---|---|---|"]
    lines += [f"| `{i}` | {x} | {y} | {d} |" for i, x, y, d in rows]
    lines += ["", f"{len(a['launches'])} launches in A, {len(b['launches'])} in B, all the same: {same}"]
    text = "\n".join(lines)
    print(text)
    if ns.md:
        Path(ns.md).write_text(text + "\n")
    print(json.dumps({"a": len(a["launches"]), "b": len(b["launches"]), "same": same}))
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
