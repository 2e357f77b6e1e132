"""A snapshot's section: what it is, its resources and occupancy, its counters, every stage highlighted
beside the kernel's Python source (click a Python line: its IR lines light up in every stage), and the GPU
runs recorded beside it."""
from __future__ import annotations

from collections import Counter
from html import escape

from ..analyze import Analysis, analyze
from ..errors import SnapshotError
from ..render.tables import resource_cells
from ..render.terminal import human_bytes, stage_sizes
from ..store.snapshot import Snapshot
from .page import Page, table
from .stages import mapping_text, maps_and_file, one_row_a_line, shown_part, stage_view
from .runs import runs_section

PREFERRED = ("ttgir", "glir", "ttir", "llir", "ptx", "amdgcn", "sass", "source")


def add_snapshot(page: Page, snap: Snapshot, on_progress=None) -> Analysis:
    a = analyze(snap)
    status = '<span class="ok">ok</span>' if a.status == "ok" else '<span class="bad">FAILED</span>'
    parts = [f'<p>{status} · target <b>{escape(snap.target_name)}</b> · {escape(stage_sizes(snap))}<br>'
             f'<span class="note">{escape(str(snap.path))}</span></p>']
    if snap.error:
        from ..errors import error_summary
        error = f'<pre class="error">{escape(error_summary(snap.error))}</pre>'
        source = "" if snap.text_stages else _source_pane(page, snap)
        # A compile that failed in the frontend left no stage: its Python beside the error is what to read
        parts.append(f'<div class="failed"><div><h3>error</h3>{error}</div><div><h3>python · source.py</h3>'
                     f'{source}</div></div>' if source else error)
    parts.append('<div class="cards">' + _resources(a) + _counters(a) + "</div>")
    parts.append(_viewer(page, snap, on_progress))
    parts.append(runs_section(snap))
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


def _source_pane(page: Page, snap: Snapshot) -> str:
    """The snapshot's own source.py in a pane of its own (drawn by assets/report.js), or "" when it has none."""
    try:
        source = snap.python_source()
    except SnapshotError:
        return ""
    if not source:
        return ""
    return f'<div class="vs py lone" data-src="{page.add_data(stage_view("python", source, None).as_json(), "py")}"></div>'


def _viewer(page: Page, snap: Snapshot, on_progress=None) -> str:
    texts: dict[str, str] = {}
    cuts: dict[str, str] = {}
    mapped_from: dict[str, str] = {}  # what each stage's line map is made of (a cut stage: with its aliases)
    problems = []
    for stage in snap.text_stages:
        try:
            whole = one_row_a_line(snap.read(stage))  # (its line map and its rows count the same lines)
        except SnapshotError as e:
            problems.append(f"{stage}: {e.message}")
            continue
        texts[stage], cuts[stage] = shown_part(whole)
        mapped_from[stage] = mapping_text(whole, texts[stage]) if cuts[stage] else texts[stage]
        del whole  # (the rest of a cut stage is dropped here, before its maps are made)
    if not texts:
        why = " (the compile stopped before its first)" if snap.error and not snap.text_stages else ""
        return f'<p class="note">no text stage to show{why}</p>' + \
            "".join(f"<p class='bad'>{escape(p)}</p>" for p in problems)
    maps, kfile = maps_and_file(mapped_from)
    ids, mapped, counts = {}, set(), {}
    for stage, text in texts.items():
        if on_progress:
            on_progress(f"highlighting {snap.label} {stage}")
        view = stage_view(stage, text, kfile, maps.get(stage), cut=cuts.get(stage, ""))
        mapped.update(view.source_lines)
        ids[stage] = page.add_data(view.as_json(), "stage")
        # Each tab's badge, for every Python line, without parsing the stage itself before its tab opens
        counts[stage] = dict(Counter(ln for ln in view.source_lines if ln))
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
          f'<div class="vs py" tabindex="0" aria-label="Python source: arrows choose a line"></div></div>') if py_id else ""
    note = "" if py_id else '<p class="note">no source.py in the snapshot: no Python beside the stages</p>'
    return (f'<h3>stages</h3>{note}<div class="viewer{"" if py_id else " nopy"}" data-stages="{escape(json.dumps(ids))}" '
            f'data-first="{escape(first)}" data-python="{py_id or ""}" data-counts="{page.add_data(counts, "n")}">{py}<div><div class="tabs">{tabs}</div>'
            f'<div class="vs ir" tabindex="0" aria-label="stage text: arrows choose a line with a Python line"></div><div class="status" aria-live="polite"></div><div class="note"></div></div></div>'
            + "".join(f"<p class='bad'>{escape(p)}</p>" for p in problems))
