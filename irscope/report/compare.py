"""Two or more snapshots: counters and resources side by side with what flipped from the column to the
left, and the normalised diff of every stage that differs, for each neighbouring pair of the same kernel."""
from __future__ import annotations

from html import escape

from ..analyze import analyze
from ..analyze.catalog import grouped
from ..diff.snapshots import diff_snapshots
from ..render.tables import RESOURCE_ROWS, resource_cells, short_labels
from .page import Page
from .runs import Roof, draw, roof_of
from .stages import stage_view


def add_comparison(page: Page, snaps, on_progress=None) -> None:
    analyses = [analyze(s) for s in snaps]
    headers = short_labels(analyses)
    if len(set(headers)) < len(headers):  # the same kernel twice (a golden and its fresh compile): by letter
        headers = [f"{chr(65 + i)}" if i < 26 else str(i) for i in range(len(headers))]
    where = "".join(f"<li><b>{escape(h)}</b> {escape(s.label)} <span class='note'>{escape(str(s.path))}</span></li>"
                    for h, s in zip(headers, snaps))
    parts = [f"<ul>{where}</ul>", _side_by_side(analyses, headers), _roofline(snaps, headers)]
    for i in range(len(snaps) - 1):
        a, b = snaps[i], snaps[i + 1]
        if a.kernel != b.kernel:  # two kernels' stages differ everywhere: a diff as long as both, telling nothing
            parts.append(f"<h3>{escape(headers[i])} → {escape(headers[i + 1])}</h3><p class=\"note\">not diffed: "
                         f"different kernels ({escape(a.kernel)}, {escape(b.kernel)})</p>")
            continue
        if on_progress:
            on_progress(f"diffing {a.label} and {b.label}")
        first = diff_snapshots(a, b)
        parts.append(f"<h3>{escape(headers[i])} → {escape(headers[i + 1])}</h3>")
        if first.equal:
            parts.append('<p class="ok">the same text in every stage (after normalisation)</p>')
        if first.outcome:  # two compiles that failed differently may have no stage that differs
            parts.append(f'<p class="note">the compiles ended differently: {escape(headers[i])} '
                         f'{escape(first.outcome[0])}; {escape(headers[i + 1])} {escape(first.outcome[1])}</p>')
        for stage in first.differing_stages:
            d = first if stage == first.stage else diff_snapshots(a, b, stage=stage)
            text = "\n".join(d.unified)
            ident = page.add_data(stage_view("diff", text, None).as_json(), "diff")
            notes = "; ".join(d.normalisation)
            adds = sum(1 for ln in d.unified if ln.startswith("+") and not ln.startswith("+++"))
            dels = sum(1 for ln in d.unified if ln.startswith("-") and not ln.startswith("---"))
            parts.append(f'<details class="lazy"><summary><b>{escape(stage)}</b> +{adds} −{dels}'
                         f'<span class="note"> ignored: {escape(notes or "nothing")}</span></summary>'
                         f'<div class="vs diff" data-src="{ident}"></div></details>')
        for side, only in (("A", first.only_in_a), ("B", first.only_in_b)):
            if only:
                parts.append(f'<p class="note">only in {side}: {escape(", ".join(only))}</p>')
    page.add_section("comparison: " + " vs ".join(headers), "".join(parts))


def _side_by_side(analyses, headers) -> str:
    head = "<th>counter</th>" + "".join(f'<th class="num">{escape(h)}</th>' for h in headers)
    rows = []

    def row(name: str, values: list[str]) -> str:
        cells = []
        for i, v in enumerate(values):
            flip = i and v != values[i - 1]
            cells.append(f'<td class="num{" flip" if flip else ""}">{escape(v)}</td>')
        changed = len(set(values)) > 1
        return f'<tr{" class=changed" if changed else ""}><td>{escape(name)}</td>{"".join(cells)}</tr>'

    keys = {k for a in analyses for k in a.counters}
    for group, group_keys in grouped(keys):
        rows.append(f'<tr class="group"><td colspan="{len(analyses) + 1}">{escape(group)}</td></tr>')
        for key in group_keys:
            rows.append(row(key, ["-" if a.get(key) is None else f"{a.get(key):,}" for a in analyses]))
    res = [resource_cells(a) for a in analyses]
    rows.append(f'<tr class="group"><td colspan="{len(analyses) + 1}">resources</td></tr>')
    for name in RESOURCE_ROWS:
        if any(name in r for r in res):
            rows.append(row(name, [r.get(name, "-") for r in res]))
    flipped = sum(r.count(" flip") for r in rows)
    out = (f'<p class="note">{flipped} cell(s) differ from the column to their left (highlighted)</p>'
           f'<table class="side"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>')
    problems = [f"{h}: {'; '.join(a.launch.reasons)}" for h, a in zip(headers, analyses) if not a.launch.launchable]
    if problems:
        out += '<p class="bad">cannot launch</p><ul>' + "".join(f"<li>{escape(p)}</li>" for p in problems) + "</ul>"
    return out


def _roofline(snaps, headers) -> str:
    """Every compared snapshot's GPU runs on one roofline, each point named by its column (the 16-wide
    and the 128-wide tile side by side), under the ceilings the first of them measured."""
    from ..errors import SnapshotError
    from ..store import results
    roofs, named = [], []
    for snap, header in zip(snaps, headers):
        try:
            roof = roof_of(results.runs(snap), header)
        except SnapshotError:
            roof = None  # the snapshot's own section says what is wrong with its runs.json
        if roof:
            roofs.append(roof)
            named.append(header)
    if len(roofs) < 2:
        return ""
    first = roofs[0]
    both = Roof(first.copy_gbps, first.matmul_tflops, first.device, tuple(p for r in roofs for p in r.points))
    # (the first snapshot with runs: the first column may have none, and the note named it all the same)
    return ("<h3>GPU runs</h3>" + draw(both, f"compared on {first.device}") +
            f'<p class="note">each snapshot\'s runs, named; the ceilings are those {escape(named[0])}\'s run '
            "measured</p>")
