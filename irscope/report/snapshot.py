"""A snapshot's section: what it is, its resources and occupancy, its counters, every stage highlighted
beside the kernel's Python source (click a Python line: its IR lines light up in every stage), and the GPU
runs recorded beside it."""
from __future__ import annotations

from html import escape

from ..analyze import Analysis, analyze
from ..errors import SnapshotError
from ..render.tables import resource_cells
from ..render.terminal import human_bytes, stage_sizes
from ..store import results
from ..store.snapshot import Snapshot
from .page import Page, table
from .stages import maps_and_file, stage_view
from .svg import RoofPoint, roofline

PREFERRED = ("ttgir", "glir", "ttir", "llir", "ptx", "amdgcn", "sass", "source")


def add_snapshot(page: Page, snap: Snapshot, on_progress=None) -> Analysis:
    a = analyze(snap)
    status = '<span class="ok">ok</span>' if a.status == "ok" else '<span class="bad">FAILED</span>'
    parts = [f'<p>{status} · target <b>{escape(snap.target_name)}</b> · {escape(stage_sizes(snap))}<br>'
             f'<span class="note">{escape(str(snap.path))}</span></p>']
    if snap.error:
        from ..errors import error_summary
        parts.append(f'<pre class="error">{escape(error_summary(snap.error))}</pre>')
    parts.append('<div class="cards">' + _resources(a) + _counters(a) + "</div>")
    parts.append(_viewer(page, snap, on_progress))
    parts.append(_runs(snap))
    page.add_section(snap.label, "".join(parts))
    return a


def _resources(a: Analysis) -> str:
    cells = resource_cells(a, detailed=True)
    rows = list(cells.items())
    out = "<div><h3>resources and occupancy</h3>" + table(["", ""], rows)
    if not a.launch.launchable:
        out += f'<p class="bad">cannot launch: {escape("; ".join(a.launch.reasons))}</p>'
    elif not a.launch.checked and a.launch.reasons:
        out += f'<p class="note">{escape("; ".join(a.launch.reasons))}</p>'
    return out + "</div>"


def _counters(a: Analysis) -> str:
    if not a.groups:
        return ""
    rows, classes = [], []
    for group, keys in a.groups:
        rows.append([group, ""])
        classes.append("group")
        for k in keys:
            rows.append([k, f"{a.counters[k]:,}"])
            classes.append("")
    out = f"<div class=\"counters\"><h3>counters (from {escape(', '.join(a.stages))})</h3>"
    out += table(["counter", "value"], rows, numeric=(1,), row_class=lambda i: classes[i])
    if a.allocations:
        arows = [[al.name, al.space, "x".join(map(str, al.shape)) + "x" + al.dtype, al.buffers, human_bytes(al.bytes)]
                 for al in a.allocations]
        out += "<h3>buffers</h3>" + table(["name", "memory", "shape", "buffers", "bytes"], arows, numeric=(3, 4))
    return out + "</div>"


def _viewer(page: Page, snap: Snapshot, on_progress=None) -> str:
    texts: dict[str, str] = {}
    problems = []
    for stage in snap.text_stages:
        try:
            texts[stage] = snap.read(stage)
        except SnapshotError as e:
            problems.append(f"{stage}: {e.message}")
    if not texts:
        return '<p class="note">no text stage to show</p>' + "".join(f"<p class='bad'>{escape(p)}</p>" for p in problems)
    maps, kfile = maps_and_file(texts)
    ids, mapped = {}, set()
    for stage, text in texts.items():
        if on_progress:
            on_progress(f"highlighting {snap.label} {stage}")
        view = stage_view(stage, text, kfile, maps.get(stage))
        mapped.update(view.source_lines)
        ids[stage] = page.add_data(view.as_json(), "stage")
    try:
        source = snap.python_source()  # the snapshot's own source.py: never a path it names
    except SnapshotError:
        source = None
    py_id = None
    if source:  # a Python row's "source line" is itself where some stage has lines from it: drawn as clickable
        view = stage_view("python", source, None).as_json()
        view["src"] = [i + 1 if i + 1 in mapped else 0 for i in range(len(view["rows"]))]
        py_id = page.add_data(view, "py")
    first = next((s for s in PREFERRED if s in texts), next(iter(texts)))
    tabs = "".join(f'<button data-stage="{escape(s)}"{" class=on" if s == first else ""}>{escape(s)}'
                   f'<span class="badge"></span></button>' for s in texts)
    import json
    py = (f'<div><div class="pane-head">python · source.py · click a line to see what it became</div>'
          f'<div class="vs py"></div></div>') if py_id else ""
    note = "" if py_id else '<p class="note">no source.py in the snapshot: no Python beside the stages</p>'
    return (f'<h3>stages</h3>{note}<div class="viewer{"" if py_id else " nopy"}" data-stages="{escape(json.dumps(ids))}" '
            f'data-first="{escape(first)}" data-python="{py_id or ""}">{py}<div><div class="tabs">{tabs}</div>'
            f'<div class="vs ir"></div><div class="status"></div><div class="note"></div></div></div>'
            + "".join(f"<p class='bad'>{escape(p)}</p>" for p in problems))


def _runs(snap: Snapshot) -> str:
    try:
        records = results.runs(snap)
    except SnapshotError as e:
        return f'<h3>GPU runs</h3><p class="bad">{escape(e.message)}</p>'
    if not records:
        return ""
    rows, points, roof, profiles = [], [], None, []
    for r in records:
        bench = r.get("bench") or {}
        k = bench.get("kernel") or {}
        gpu = r.get("gpu") or {}
        cf, mf = bench.get("copy_fraction"), bench.get("matmul_fraction")
        rows.append([r.get("recorded", ""), gpu.get("device", "?"), r.get("size_name", ""),
                     "ok" if r.get("ok") else "FAILED", _f(k.get("ms"), "{:.4f}"), _f(k.get("tflops"), "{:.1f}"),
                     _f(k.get("gbps"), "{:.0f}"), _pct(cf), _pct(mf)])
        if gpu.get("copy_gbps") and gpu.get("matmul_tflops"):
            roof = roof or (gpu["copy_gbps"], gpu["matmul_tflops"], gpu.get("device", "?"))
            flops, nbytes = bench.get("flops") or 0, bench.get("bytes") or 0
            if k.get("ms") and flops and nbytes:
                tflops = flops / (k["ms"] * 1e-3) / 1e12
                points.append(RoofPoint(flops / nbytes, tflops, f"{r.get('size_name', '')}: {k['ms']:.4f} ms, "
                                        f"{tflops:.1f} TFLOP/s, {flops / nbytes:.1f} FLOP/B (do_bench)"))
        prof = r.get("profile") or {}
        if prof:
            profiles.append(_profile_row(r, prof, k))
            p_flops, p_bytes, p_ms = prof.get("flops") or 0, prof.get("bytes") or 0, prof.get("ms")
            if roof and p_ms and p_flops and p_bytes:
                tflops = p_flops / (p_ms * 1e-3) / 1e12
                points.append(RoofPoint(p_flops / p_bytes, tflops, f"{r.get('size_name', '')}: {p_ms:.4f} ms, "
                                        f"{tflops:.1f} TFLOP/s, {p_flops / p_bytes:.1f} FLOP/B (Proton)", "proton"))
    out = "<h3>GPU runs (runs.json)</h3>" + table(
        ["recorded", "device", "size", "check", "ms", "TFLOP/s", "GB/s", "of copy ceiling", "of matmul ceiling"],
        rows, numeric=(4, 5, 6, 7, 8), sortable=True)
    if profiles:
        out += ("<h3>Proton profiles (irscope run --profile)</h3>" + table(
            ["recorded", "size", "scope", "kernels", "iterations", "Proton ms", "do_bench ms", "TFLOP/s", "GB/s",
             "of copy ceiling", "of matmul ceiling"], profiles, numeric=(4, 5, 6, 7, 8, 9, 10), sortable=True)
            + '<p class="note">Proton: the kernel records (CUPTI) under the scope irscope entered around the '
              "launches, L2 flushed between iterations; rates from the scope's flops and bytes metrics.</p>")
    if roof and points:
        out += '<div class="plots">' + roofline(f"roofline on {roof[2]} (ceilings measured in the run)", points,
                                                roof[0], roof[1]) + "</div>"
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


def _pct(v) -> str:
    """A fraction as a percentage, with a decimal below 10% (an fp32 kernel's 0.4% of copy is not 0%)."""
    return "-" if v is None else f"{v:.1%}" if abs(v) < 0.1 else f"{v:.0%}"


def _f(v, fmt: str) -> str:
    return "-" if v is None else fmt.format(v)
