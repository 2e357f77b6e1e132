"""The GPU runs recorded beside a snapshot (`runs.json`, written by `irscope run`): do_bench's figures,
Proton's (`--profile`), and the roofline they are drawn on, for one snapshot or several compared."""
from __future__ import annotations

from dataclasses import dataclass, replace
from html import escape

from ..errors import SnapshotError
from ..store import results
from ..store.snapshot import Snapshot
from .page import table
from .svg import RoofPoint, roofline


@dataclass(frozen=True)
class Roof:
    """The ceilings a run measured (the roofline's two roofs) and the points drawn under them."""

    copy_gbps: float
    matmul_tflops: float
    device: str
    points: tuple[RoofPoint, ...]


def roof_of(records: list[dict], label: str = "") -> Roof | None:
    """The roofline of some runs: the first run's measured ceilings, a point per timed run (do_bench) and
    per profiled run (Proton). `label` names the snapshot on each point (a comparison's roofline)."""
    ceilings, points = None, []
    name = f"{label} " if label else ""
    for r in records:
        gpu = r.get("gpu") or {}
        if not (_drawable(gpu.get("copy_gbps")) and _drawable(gpu.get("matmul_tflops"))):
            continue
        ceilings = ceilings or (gpu["copy_gbps"], gpu["matmul_tflops"], gpu.get("device", "?"))
        bench = r.get("bench") or {}
        k = bench.get("kernel") or {}
        prof = r.get("profile") or {}
        for by, ms, flops, nbytes in (("do_bench", k.get("ms"), bench.get("flops"), bench.get("bytes")),
                                      ("proton", prof.get("ms"), prof.get("flops"), prof.get("bytes"))):
            if ms and flops and nbytes and _drawable(flops / ms / 1e9) and _drawable(flops / nbytes):
                tflops = flops / ms / 1e9
                points.append(RoofPoint(flops / nbytes, tflops, f"{name}{r.get('size_name', '')}: {ms:.4f} ms, "
                                        f"{tflops:.1f} TFLOP/s, {flops / nbytes:.1f} FLOP/B ({by})", by))
    if label and points:  # named once, at its rightmost point: several sizes' labels would overlap
        i = max(range(len(points)), key=lambda j: points[j].intensity)
        points[i] = replace(points[i], label=label)
    return Roof(*ceilings, tuple(points)) if ceilings and points else None


def _drawable(v) -> bool:
    """Whether a rate or an intensity can be drawn on a log scale: runs.json is read from an untrusted folder,
    and its 1e300 FLOP in 1e-300 ms made the axes infinite (an OverflowError for the whole report)."""
    return v is not None and 1e-12 <= v <= 1e12


def draw(roof: Roof, title: str) -> str:
    return '<div class="plots">' + roofline(title, list(roof.points), roof.copy_gbps, roof.matmul_tflops) + "</div>"


def runs_section(snap: Snapshot) -> str:
    """A snapshot's runs: do_bench's table, Proton's when profiled, the roofline. No run: nothing."""
    try:
        records = results.runs(snap)
    except SnapshotError as e:
        return f'<h3>GPU runs</h3><p class="bad">{escape(e.message)}</p>'
    if not records:
        return ""
    rows, profiles = [], []
    for r in records:
        bench = r.get("bench") or {}
        k = bench.get("kernel") or {}
        gpu = r.get("gpu") or {}
        rows.append([r.get("recorded", ""), gpu.get("device", "?"), r.get("size_name", ""),
                     _check(r), _f(k.get("ms"), "{:.4f}"), _f(k.get("tflops"), "{:.1f}"),
                     _f(k.get("gbps"), "{:.0f}"), _pct(bench.get("copy_fraction")),
                     _pct(bench.get("matmul_fraction"))])
        if r.get("profile"):
            profiles.append(_profile_row(r, r["profile"], k))
    out = "<h3>GPU runs (runs.json)</h3>" + table(
        ["recorded", "device", "size", "check", "ms", "TFLOP/s", "GB/s", "of copy ceiling", "of matmul ceiling"],
        rows, numeric=(4, 5, 6, 7, 8), wrap=(3,), sortable=True)
    if profiles:
        out += ("<h3>Proton profiles (irscope run --profile)</h3>" + table(
            ["recorded", "size", "scope", "kernels", "iterations", "Proton ms", "do_bench ms", "TFLOP/s", "GB/s",
             "of copy ceiling", "of matmul ceiling"], profiles, numeric=(4, 5, 6, 7, 8, 9, 10), sortable=True)
            + '<p class="note">Proton: the kernel records (CUPTI) under the scope irscope entered around the '
              "launches, L2 flushed between iterations; rates from the scope's flops and bytes metrics.</p>")
    roof = roof_of(records)
    if roof:
        out += draw(roof, f"roofline on {roof.device} (ceilings measured in the run)")
    return out


def _profile_row(r: dict, prof: dict, k: dict) -> list[str]:
    if prof.get("error"):
        return [r.get("recorded", ""), str(r.get("size_name", "")), str(prof.get("scope") or ""),
                f"not profiled: {prof['error']}", "-", "-", _f(k.get("ms"), "{:.4f}"), "-", "-", "-", "-"]
    kernels = ", ".join(f"{x.get('name', '?')} x{x.get('calls', '?')}" + (f" ({x['mean_ms']:.4f} ms)"
                        if x.get("mean_ms") is not None else "") for x in prof.get("kernels") or [])
    return [r.get("recorded", ""), str(r.get("size_name", "")), str(prof.get("scope") or ""), kernels,
            _f(prof.get("iterations"), "{}"), _f(prof.get("ms"), "{:.4f}"), _f(k.get("ms"), "{:.4f}"),
            _f(prof.get("tflops"), "{:.1f}"), _f(prof.get("gbps"), "{:.0f}"), _pct(prof.get("copy_fraction")),
            _pct(prof.get("matmul_fraction"))]


def _check(r: dict) -> str:
    """A run's verdict, with why it failed when the record says (a launch that raised: it read 'FAILED' alone)."""
    if r.get("ok"):
        return "ok"
    return f"FAILED: {r['error'][:160]}" if r.get("error") else "FAILED"


def _pct(v) -> str:
    """A fraction as a percentage, with a decimal below 10% (an fp32 kernel's 0.4% of copy is not 0%)."""
    return "-" if v is None else f"{v:.1%}" if abs(v) < 0.1 else f"{v:.0%}"


def _f(v, fmt: str) -> str:
    return "-" if v is None else fmt.format(v)
