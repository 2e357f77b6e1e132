"""Streams of records: loads that read a few fields of each of many records laid one after another (model 21,
docs/rank.md "What records cost").

A kernel that reads 8 of each 3-D Gaussian's 59 fp32 parameters (the gscov) moves far more through the DRAM
than the 32 bytes a Gaussian it uses: the DRAM reads whole 32-byte sectors, and a run of sectors that starts
away from the last one costs a start of its own (benchmarks/rank_aos.py: one word of each 59-word record runs
at about 47 billion records a second, where its bytes alone would take a fifth of the time). So the loads of
one record are found from the pointer reader's sums (strides.access_forms): loads whose addresses differ only
in a constant, with the same steps, read the same records; the fields they read, laid out at the records'
stride, give the sectors a record touches and the runs those sectors make.

Only loads outside loops (scf.for's, scf.while's) are taken (a record read once a program, as the gscov's),
and only where each program id in the address is one the reader follows; a load the reader does
not follow, a pointer with a runtime step, and a stream whose records share their sectors (a contiguous
row: fewer than `SPARSE` runs a record), and one whose records' other fields other programs read (a program
id that moves the address by less than a record) are left to the other models' rules.
"""
from __future__ import annotations

import re

from .strides import ELEMENT_BYTES, access_forms

WINDOW = 256  # records laid out to count the sectors and runs a record takes
SECTOR = 32
SPARSE = 0.25  # runs a record from which a stream is one of records (a contiguous row has about none)
_LOAD = re.compile(r"^(?:%[\w.$-]+ = )?tt\.load ")
_SHAPE = re.compile(r"tensor<(\d{1,7}(?:x\d{1,7})*)x!tt\.ptr<(\w+)>")
GROUPS, WORDS = 64, 512  # streams a module may have, words a record's fields (beyond: not a few fields)


def _in_loops(lines: list[str]) -> set[int]:
    """The indexes of the lines inside a loop's body (an scf.for's, either region of an scf.while's)."""
    stack: list[bool] = []
    loops = 0  # the loops among the open regions
    inside: set[int] = set()
    for index, line in enumerate(lines):
        s = line.strip()
        if s.startswith("}"):
            if stack:
                loops -= stack.pop()
            if s.endswith("{"):
                stack.append(s.split()[1:2] == ["do"])  # (`} do {`: a while's body; `} else {`: not a loop)
                loops += stack[-1]
            continue
        if loops:
            inside.add(index)
        if s.endswith("{"):
            stack.append(" scf.for " in f" {s}" or "scf.while" in s)
            loops += stack[-1]
    return inside


def layout_of(stride: int, offsets: list[int]) -> tuple[float, float]:
    """(sectors, runs of adjacent sectors) a record takes on average, its fields at byte `offsets` (each
    [start, end)) and records `stride` bytes apart."""
    touched: set[int] = set()
    for j in range(WINDOW):
        for start, end in offsets:
            first, last = (j * stride + start) // SECTOR, (j * stride + end - 1) // SECTOR
            touched.update(range(first, last + 1))
    runs = sum(1 for s in touched if s - 1 not in touched)
    return len(touched) / WINDOW, runs / WINDOW


def record_streams(ttgir: str) -> list[dict]:
    """The streams of records a program's loads read outside loops: for each, `records` (a program reads,
    one a lane element along the records' dim), `stride` (bytes between records), `used` (bytes of a record
    its loads read), `sectors` and `runs` (a record takes, layout_of), `loads` (the tt.load ops) and `pids`
    (the program-id axes its address follows: the programs along other axes read the same records)."""
    lines = ttgir.splitlines()
    loops = _in_loops(lines)
    functions = [i for i, line in enumerate(lines) if line.lstrip().startswith("tt.func")]
    groups: dict[tuple, dict] = {}
    for index, form in access_forms(ttgir).items():
        s = lines[index].strip()
        if form is None or index in loops or not _LOAD.match(s):
            continue
        steps, lin = form
        m = _SHAPE.search(s.split(" : ", 1)[-1].split(" loc(", 1)[0])  # (the op's type, not its attributes)
        if lin is None or not m or any(not isinstance(v, int) for v in steps) or not any(steps):
            continue
        if any(n.startswith("pid?") for n, _ in lin[1]):
            continue  # (made from a program id in a way the reader does not follow: whose records, unknown)
        shape = [int(d) for d in m.group(1).split("x")]
        elem = ELEMENT_BYTES.get(m.group(2))
        if elem is None or len(shape) != len(steps) or not all(0 < d <= 1 << 20 for d in shape):
            continue
        r = max(range(len(steps)), key=lambda d: abs(steps[d]))
        if any(n.startswith("pid:") and 0 < abs(k) < abs(steps[r]) for n, k in lin[1]):
            continue  # (a program id moving the address within a record: other programs read its other fields)
        others = [(steps[d], shape[d]) for d in range(len(steps)) if d != r and steps[d]]
        fields = {0}
        for step, extent in others:
            if len(fields) * extent > WORDS:
                break
            fields = {f + step * i for f in fields for i in range(extent)}
        else:
            function = sum(1 for f in functions if f < index)
            key = (function, lin[1], steps, elem)
            if key not in groups and len(groups) >= GROUPS:
                continue
            g = groups.setdefault(key, {"records": shape[r], "stride": abs(steps[r]) * elem, "elem": elem,
                                        "fields": set(), "loads": 0,
                                        "pids": sorted(n.split(":", 1)[1] for n, _ in lin[1] if n.startswith("pid:"))})
            g["fields"].update(lin[0] + f for f in fields)
            g["loads"] += 1
    out = []
    for g in groups.values():
        words = sorted(g.pop("fields"))
        if not words or len(words) > WORDS:
            continue
        low = words[0]
        offsets = [((w - low) * g["elem"], (w - low + 1) * g["elem"]) for w in words]
        if g["stride"] <= 0 or offsets[-1][1] > g["stride"] * 64:
            continue  # (fields far beyond a record: not one record's)
        start = (low * g["elem"]) % max(1, g["stride"])
        sectors, runs = layout_of(g["stride"], [(a + start, b + start) for a, b in offsets])
        if runs < SPARSE:
            continue
        out.append({"records": g["records"], "stride": g["stride"], "used": len(words) * g["elem"],
                    "sectors": round(sectors, 4), "runs": round(runs, 4), "loads": g["loads"], "pids": g["pids"]})
    return out
