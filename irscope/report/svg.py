"""Plots as inline SVG, drawn here in Python: no plotting library in the page, nothing to load.

Two kinds: `scatter` (points along a labelled axis, one value each, coloured launchable or not, with
optional limit lines) and `roofline` (log-log: arithmetic intensity against achieved rate, under the
measured memory and compute ceilings). Each point carries a <title>, the browser's own tooltip.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from html import escape

W, H = 640, 296
L, R, T, B = 64, 16, 28, 92  # margins: axis labels left and bottom (rotated, up to 22 characters), title on top
OK_COLOUR, BAD_COLOUR, LIMIT_COLOUR = "#2b8a3e", "#c92a2a", "#e67700"
PROTON_COLOUR = "#4263eb"


@dataclass(frozen=True)
class Point:
    x: str  # the point's label along the axis
    y: float | None
    ok: bool = True
    tip: str = ""
    limit: float | None = None  # this point's own limit (its target's), drawn as a dash above or below it


@dataclass(frozen=True)
class Limit:
    value: float
    label: str


def tick_label(text: str, limit: int = 22) -> str:
    """A point's label under the axis: whole when short, else its start and its end around an ellipsis (the
    target and the last axis both tell points apart; the whole label is in the point's tooltip)."""
    if len(text) <= limit:
        return text
    head = (limit - 1) // 2
    return text[:head] + "\u2026" + text[-(limit - 1 - head):]


def _nice_max(v: float, binary: bool = False) -> float:
    if not 0 < v < math.inf:  # (a hostile result's 1e308s sum to infinity: a chart of nothing, not a crash)
        return 1.0
    if binary and v >= 1024:  # bytes and the like: steps of powers of two read as KiB
        p = 2 ** math.ceil(math.log2(v))
        return p * 3 / 4 if p * 3 / 4 >= v else p
    mag = 10 ** math.floor(math.log10(v))
    for m in (1, 2, 2.5, 5, 10):
        if v <= m * mag:
            return m * mag
    return 10 * mag


def _fmt(v: float, binary: bool = False) -> str:
    if binary and v >= 1024 and v % 256 == 0:  # byte counts on a power-of-two scale read better in KiB
        return f"{v / 1024:g}Ki"
    if v >= 1024 * 1024 and v % 1024 == 0:
        return f"{v / 1024 / 1024:g}M"
    if v >= 10_000:
        return f"{v / 1000:g}k"
    return f"{v:g}"


def scatter(title: str, points: list[Point], *, unit: str = "", limits: tuple[Limit, ...] = ()) -> str:
    known = [p.y for p in points if p.y is not None] + [p.limit for p in points if p.limit is not None]
    binary = unit == "bytes"
    top = _nice_max(max(known + [lim.value for lim in limits] + [0.0]) * 1.05, binary)
    pw, ph = W - L - R, H - T - B
    n = max(len(points), 1)

    def px(i: int) -> float:
        return L + (i + 0.5) * pw / n

    def py(v: float) -> float:
        return T + ph - v / top * ph

    out = [f'<svg class="plot" viewBox="0 0 {W} {H}" width="{W}" height="{H}" role="img" '
           f'aria-label="{escape(title)}"><text class="title" x="{L}" y="18">{escape(title)}</text>']
    for k in range(5):
        v = top * k / 4
        y = py(v)
        out.append(f'<line class="grid" x1="{L}" x2="{W - R}" y1="{y:.1f}" y2="{y:.1f}"/>'
                   f'<text class="tick" x="{L - 6}" y="{y + 4:.1f}" text-anchor="end">{_fmt(v, binary)}</text>')
    if unit:
        out.append(f'<text class="tick" x="12" y="{T + ph / 2:.0f}" transform="rotate(-90 12 {T + ph / 2:.0f})" '
                   f'text-anchor="middle">{escape(unit)}</text>')
    for lim in limits:
        y = py(lim.value)
        out.append(f'<line class="limit" x1="{L}" x2="{W - R}" y1="{y:.1f}" y2="{y:.1f}" stroke="{LIMIT_COLOUR}"/>'
                   f'<text class="tick" x="{W - R}" y="{y - 4:.1f}" text-anchor="end" fill="{LIMIT_COLOUR}">'
                   f'{escape(lim.label)}</text>')
    step = max(1, math.ceil(n / 24))  # at most ~24 labels along the bottom
    for i, p in enumerate(points):
        x = px(i)
        if i % step == 0:
            out.append(f'<text class="tick" x="{x:.1f}" y="{T + ph + 12}" text-anchor="end" '
                       f'transform="rotate(-35 {x:.1f} {T + ph + 12})">{escape(tick_label(p.x))}</text>')
        if p.limit is not None:
            out.append(f'<line class="limit" x1="{x - 9:.1f}" x2="{x + 9:.1f}" y1="{py(p.limit):.1f}" '
                       f'y2="{py(p.limit):.1f}" stroke="{LIMIT_COLOUR}"><title>{escape(p.x)}: limit {_fmt(p.limit, binary)}'
                       f'</title></line>')
        if p.y is None:
            continue
        colour = OK_COLOUR if p.ok else BAD_COLOUR
        tip = escape(p.tip or f"{p.x}: {_fmt(p.y, binary)} {unit}")
        out.append(f'<circle class="pt{"" if p.ok else " bad"}" cx="{x:.1f}" cy="{py(p.y):.1f}" r="4" '
                   f'fill="{colour}"><title>{tip}</title></circle>')
    out.append(f'<line class="axis" x1="{L}" x2="{L}" y1="{T}" y2="{T + ph}"/>'
               f'<line class="axis" x1="{L}" x2="{W - R}" y1="{T + ph}" y2="{T + ph}"/></svg>')
    return "".join(out)


_CLIPS = itertools.count(1)


@dataclass(frozen=True)
class RoofPoint:
    intensity: float  # FLOP per byte of the least DRAM traffic
    tflops: float
    tip: str
    by: str = "do_bench"  # which timer: "do_bench" (a circle) or "proton" (a square), drawn apart
    label: str = ""  # written beside the point (a comparison's roofline: which snapshot)


def roofline(title: str, points: list[RoofPoint], copy_gbps: float, matmul_tflops: float) -> str:
    """Log-log roofline: the memory slope (copy bandwidth) and the compute roof (the library's matmul)."""
    ridge = matmul_tflops * 1e3 / copy_gbps  # FLOP/byte where the two ceilings meet
    xs = [p.intensity for p in points if p.intensity > 0] + [ridge]
    ys = [p.tflops for p in points if p.tflops > 0] + [matmul_tflops]
    x0, x1 = 10 ** math.floor(math.log10(min(xs) / 2)), 10 ** math.ceil(math.log10(max(xs) * 2))
    y0, y1 = 10 ** math.floor(math.log10(min(ys) / 2)), 10 ** math.ceil(math.log10(max(ys) * 1.5))
    pw, ph = W - L - R, H - T - B

    def px(v: float) -> float:
        return L + (math.log10(v) - math.log10(x0)) / (math.log10(x1) - math.log10(x0)) * pw

    def py(v: float) -> float:
        return T + ph - (math.log10(v) - math.log10(y0)) / (math.log10(y1) - math.log10(y0)) * ph

    def roof(x: float) -> float:
        return min(matmul_tflops, x * copy_gbps / 1e3)

    clip = f"rf-clip-{next(_CLIPS)}"  # one id a roofline: a page with two had two elements of one id
    out = [f'<svg class="plot roofline" viewBox="0 0 {W} {H}" width="{W}" height="{H}" role="img" '
           f'aria-label="{escape(title)}"><defs><clipPath id="{clip}"><rect x="{L}" y="{T}" width="{pw}" '
           f'height="{ph}"/></clipPath></defs><text class="title" x="{L}" y="18">{escape(title)}</text>']
    for e in range(round(math.log10(x0)), round(math.log10(x1)) + 1):
        x = px(10 ** e)
        out.append(f'<line class="grid" x1="{x:.1f}" x2="{x:.1f}" y1="{T}" y2="{T + ph}"/>'
                   f'<text class="tick" x="{x:.1f}" y="{T + ph + 14}" text-anchor="middle">{_fmt(10 ** e)}</text>')
    for e in range(round(math.log10(y0)), round(math.log10(y1)) + 1):
        y = py(10 ** e)
        out.append(f'<line class="grid" x1="{L}" x2="{W - R}" y1="{y:.1f}" y2="{y:.1f}"/>'
                   f'<text class="tick" x="{L - 6}" y="{y + 4:.1f}" text-anchor="end">{_fmt(10 ** e)}</text>')
    samples = [x0 * (x1 / x0) ** (k / 64) for k in range(65)] + [ridge]
    path = " ".join(f"{'M' if i == 0 else 'L'}{px(x):.1f},{py(max(roof(x), y0 / 10)):.1f}"
                    for i, x in enumerate(sorted(samples)))
    out.append(f'<path class="roof" d="{path}" clip-path="url(#{clip})" fill="none" stroke="{LIMIT_COLOUR}" '
               f'stroke-width="2"/><text class="tick" x="{W - R}" y="{py(matmul_tflops) - 5:.1f}" text-anchor="end" '
               f'fill="{LIMIT_COLOUR}">matmul {matmul_tflops:.0f} TFLOP/s · copy {copy_gbps:.0f} GB/s</text>')
    for p in points:
        if p.intensity > 0 and p.tflops > 0 and p.by == "proton":
            out.append(f'<rect class="pt proton" x="{px(p.intensity) - 4:.1f}" y="{py(p.tflops) - 4:.1f}" '
                       f'width="8" height="8" fill="none" stroke="{PROTON_COLOUR}" stroke-width="2">'
                       f'<title>{escape(p.tip)}</title></rect>')
        elif p.intensity > 0 and p.tflops > 0:
            out.append(f'<circle class="pt" cx="{px(p.intensity):.1f}" cy="{py(p.tflops):.1f}" r="5" '
                       f'fill="{OK_COLOUR}"><title>{escape(p.tip)}</title></circle>')
        if p.label and p.intensity > 0 and p.tflops > 0:
            out.append(f'<text class="tick ptlabel" x="{px(p.intensity) + 8:.1f}" y="{py(p.tflops) + 4:.1f}">'
                       f'{escape(p.label)}</text>')
    if any(p.by == "proton" for p in points):
        out.append(f'<text class="tick legend" x="{L + 6}" y="{T + 12}" fill="{PROTON_COLOUR}">&#9633; Proton '
                   f'<tspan fill="{OK_COLOUR}">&#9679; do_bench</tspan></text>')
    out.append(f'<text class="tick" x="{L + pw / 2:.0f}" y="{H - 8}" text-anchor="middle">FLOP / byte</text>'
               f'<text class="tick" x="12" y="{T + ph / 2:.0f}" transform="rotate(-90 12 {T + ph / 2:.0f})" '
               f'text-anchor="middle">TFLOP/s</text></svg>')
    return "".join(out)


PALETTE = ("#4263eb", "#12b886", "#f59f00", "#e64980", "#7950f2", "#15aabf", "#82c91e", "#fd7e14", "#868e96")


def stacked(title: str, labels: list[str], series: dict[str, list[float]], *, unit: str = "") -> str:
    """One bar a point, split into `series` (e.g. compile time per stage), with a legend."""
    totals = [sum(vals[i] for vals in series.values()) for i in range(len(labels))]
    top = _nice_max(max(totals + [0.0]) * 1.05)
    pw, ph = W - L - R, H - T - B
    n = max(len(labels), 1)
    bw = max(2.0, min(28.0, pw / n * 0.7))
    out = [f'<svg class="plot" viewBox="0 0 {W} {H}" width="{W}" height="{H}" role="img" '
           f'aria-label="{escape(title)}"><text class="title" x="{L}" y="18">{escape(title)}</text>']
    for k in range(5):
        v = top * k / 4
        y = T + ph - v / top * ph
        out.append(f'<line class="grid" x1="{L}" x2="{W - R}" y1="{y:.1f}" y2="{y:.1f}"/>'
                   f'<text class="tick" x="{L - 6}" y="{y + 4:.1f}" text-anchor="end">{_fmt(v)}</text>')
    if unit:
        out.append(f'<text class="tick" x="12" y="{T + ph / 2:.0f}" transform="rotate(-90 12 {T + ph / 2:.0f})" '
                   f'text-anchor="middle">{escape(unit)}</text>')
    step = max(1, math.ceil(n / 24))
    for i, label in enumerate(labels):
        x = L + (i + 0.5) * pw / n
        base = T + ph
        for j, (name, vals) in enumerate(series.items()):
            h = vals[i] / top * ph
            if h > 0:
                out.append(f'<rect x="{x - bw / 2:.1f}" y="{base - h:.1f}" width="{bw:.1f}" height="{h:.1f}" '
                           f'fill="{PALETTE[j % len(PALETTE)]}"><title>{escape(label)} {escape(name)}: '
                           f'{vals[i]:.0f} {escape(unit)}</title></rect>')
                base -= h
        if i % step == 0:
            out.append(f'<text class="tick" x="{x:.1f}" y="{T + ph + 12}" text-anchor="end" '
                       f'transform="rotate(-35 {x:.1f} {T + ph + 12})">{escape(tick_label(label))}</text>')
    lx = L + 8
    for j, name in enumerate(series):
        out.append(f'<rect x="{lx}" y="{T + 2}" width="9" height="9" fill="{PALETTE[j % len(PALETTE)]}"/>'
                   f'<text class="tick" x="{lx + 12}" y="{T + 10}">{escape(name)}</text>')
        lx += 18 + 7 * len(name)
    out.append(f'<line class="axis" x1="{L}" x2="{L}" y1="{T}" y2="{T + ph}"/>'
               f'<line class="axis" x1="{L}" x2="{W - R}" y1="{T + ph}" y2="{T + ph}"/></svg>')
    return "".join(out)
