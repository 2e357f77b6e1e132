"""A sweep's section, from the JSON `irscope sweep --json` writes: plots of what matters across the space
(shared memory against the target's limit, registers and spills, occupancy, compile time per stage), each
point coloured launchable or not, and a sortable table of every point."""
from __future__ import annotations

import stat
from html import escape
from pathlib import Path

from ..errors import UsageError
from ..store.schema import (BOOL, MAX_JSON_BYTES, NUM, SCALAR, STR, _Invalid, list_of, loads, map_of, obj, opt,
                            read_given)
from ..targets import TARGETS
from .page import Page, table
from .svg import Point, scatter, stacked

# A browser took 5 s to open a page of 5,000 points and did not open one of 100,000 in two minutes (the
# loaded 2-core development machine); past 2,000 points the plots are a smear at 640 px anyway.
PLOT_LIMIT = 2_000  # points
TABLE_LIMIT = 5_000  # rows
AXES_LIMIT = 64  # distinct axes across a result's points (a column each)
STAGE_TIMES = ("frontend", "ttir", "ttgir", "llir", "ptx", "amdgcn", "cubin", "hsaco", "disassembly")


# What the report reads of each point: a file given to it may come from anyone, so a field of another type
# is refused naming it, never met as a TypeError halfway through the page.
_POINT = obj(
    status=opt(STR), target=opt(STR), axes=opt(map_of(SCALAR)), times_ms=opt(map_of(opt(NUM))),
    error=opt(obj(message=opt(SCALAR), summary=opt(SCALAR))),
    analysis=opt(obj(resources=opt(map_of(opt(NUM))), occupancy=opt(obj(value=opt(NUM))),
                     launch=opt(obj(launchable=opt(BOOL), reasons=opt(list_of(STR)))))))
SWEEP_RESULT = obj(("points",), sweep=opt(obj(name=opt(SCALAR))), points=list_of(_POINT))


def read_sweep(path: Path | str) -> dict:
    """A sweep result as `irscope sweep --json` writes it (UsageError when it is not one)."""
    path = Path(path)
    try:
        # A named pipe that nothing writes to held the read forever, and /dev/zero filled memory
        raw, mode = read_given(path, MAX_JSON_BYTES)
        if not raw and stat.S_ISFIFO(mode):
            raise UsageError(f"{path} is a named pipe that nothing writes to",
                             "give the file `irscope sweep FILE --json > RESULT.json` wrote")
        if len(raw) > MAX_JSON_BYTES:
            raise UsageError(f"{path} is larger than any sweep result irscope reads ({MAX_JSON_BYTES >> 20} MiB)",
                             "give the JSON `irscope sweep FILE --json` wrote")
        data = loads(raw.decode("utf-8"))
    except OSError as e:
        raise UsageError(f"cannot read {path}: {e.strerror}", "write one with `irscope sweep FILE --json > RESULT.json`")
    except ValueError as e:
        raise UsageError(f"{path} is not JSON: {e}", "write one with `irscope sweep FILE --json > RESULT.json` "
                         "(the report reads the JSON; the CSV `--csv` writes is for spreadsheets)")
    if not isinstance(data, dict) or not isinstance(data.get("points"), list):
        raise UsageError(f"{path} is not a sweep result (no 'points' list)",
                         "write one with `irscope sweep FILE --json > RESULT.json`; CSV output is for spreadsheets")
    try:
        SWEEP_RESULT(data, "")
    except _Invalid as e:
        raise UsageError(f"{path} is not a sweep result irscope wrote: {e}",
                         "write one with `irscope sweep FILE --json > RESULT.json`") from None
    axes = len(dict.fromkeys(k for p in data["points"] for k in (p.get("axes") or {})))
    if axes > AXES_LIMIT:  # a column each in a table of thousands of rows: a 756 KiB file made a 45 MiB page
        raise UsageError(f"{path} names {axes:,} axes; a sweep result has a column for each, and irscope reports up "
                         f"to {AXES_LIMIT}", "give the JSON `irscope sweep FILE --json` wrote (a sweep's grid varies "
                                             "a handful of options)")
    return data


def _varying_axes(points: list[dict]) -> list[str]:
    """The axes whose value is not the same at every point (a point without one has None), else every axis; in
    one pass over the points: one pass per axis took hours for a hostile file of many axes and many points."""
    values: dict[str, set] = {}
    count: dict[str, int] = {}
    for p in points:
        for k, v in (p.get("axes") or {}).items():
            seen = values.setdefault(k, set())
            count[k] = count.get(k, 0) + 1
            if len(seen) < 2:
                seen.add(str(v))
    for k, n in count.items():
        if n < len(points):
            values[k].add(str(None))
    return [k for k, seen in values.items() if len(seen) > 1] or list(values)


def _res(p: dict, key: str):
    a = p.get("analysis") or {}
    return (a.get("resources") or {}).get(key)


def _launchable(p: dict) -> bool:
    a = p.get("analysis") or {}
    return p.get("status") == "ok" and bool((a.get("launch") or {}).get("launchable"))


def _name(p: dict, axes: list[str], with_target: bool = True) -> str:
    ax = p.get("axes") or {}
    inner = ",".join(f"{k}={ax[k]}" for k in axes if k in ax)
    return f"{p.get('target') or '?' if with_target else ''} {inner}".strip()


def add_sweep(page: Page, data: dict, source: str) -> None:
    points = [p for p in data["points"] if isinstance(p, dict)]
    axes = _varying_axes(points)
    several = len({p.get("target") for p in points}) > 1  # (the target in a point's name only then)
    # Named only as far as the table lists them (the plots draw fewer): every point's name of a million was time
    names = [_name(p, axes, several) or p.get("target") or "?" for p in points[:TABLE_LIMIT]]  # (null: no target)
    # Under the plots' axes, each point by its values alone (the names, in tooltips and the table, are long)
    ticks = [" ".join(([p.get("target") or "?"] if several else []) +
                      [",".join(str((p.get("axes") or {}).get(k, "-")) for k in axes)]).strip() or n
             for n, p in zip(names, points)]
    along = " ".join((["target"] if several else []) + [",".join(axes)]).strip()
    bad = sum(not _launchable(p) for p in points)
    info = data.get("sweep") or {}
    parts = [f'<p>{len(points)} point(s) from <b>{escape(str(info.get("name") or source))}</b>, {bad} not launchable '
             f'<span class="legend"><i style="background:#2b8a3e"></i>launchable<i style="background:#c92a2a"></i>'
             f'not launchable or failed</span></p>'] + \
        ([f'<p class="dim">along each plot\'s axis: {escape(along)} (a point\'s tooltip names it whole)</p>']
         if along else [])
    def pts(value, unit_tip=""):
        return [Point(t, value(p), _launchable(p), f"{n}: {value(p)}{unit_tip}") for t, n, p in zip(ticks, names, points)]

    def limit(p: dict) -> float | None:
        target = TARGETS.get(p.get("target"))
        return None if target is None else target.shared_per_block

    shared = [Point(t, _res(p, "shared"), _launchable(p), f"{n}: {_res(p, 'shared')} B of {limit(p)} B", limit(p))
              for t, n, p in zip(ticks, names, points)]
    plots = [] if len(points) > PLOT_LIMIT else [
        scatter("shared memory / LDS per block (dashes: the target's limit)", shared, unit="bytes"),
        scatter("registers per thread", pts(lambda p: _res(p, "registers")), unit="registers"),
        scatter("spilled bytes (stores)", pts(lambda p: _res(p, "spill_stores")), unit="bytes"),
        scatter("occupancy", pts(lambda p: ((p.get("analysis") or {}).get("occupancy") or {}).get("value")),
                unit="blocks/SM or waves/SIMD"),
    ]
    stages = [s for s in STAGE_TIMES if any((p.get("times_ms") or {}).get(s) for p in points)]
    if stages and len(points) <= PLOT_LIMIT:
        series = {s: [float((p.get("times_ms") or {}).get(s) or 0) for p in points] for s in stages}
        plots.append(stacked("compile time per stage (as recorded when each point was compiled)", ticks, series,
                             unit="ms"))
    parts.append('<div class="plots">' + "".join(plots) + "</div>" if plots else
                 f'<p class="note">{len(points):,} points: not plotted (the plots draw up to {PLOT_LIMIT:,}, one '
                 "by one); the table below lists them</p>")
    # "why not" beside "launchable", not after the stage times: on a laptop's width it is then on screen
    headers = ["point", "status"] + axes + ["registers", "spills", "shared", "occupancy", "launchable", "why not"] + \
        [f"{s} ms" for s in stages]
    rows = []
    for n, p in zip(names[:TABLE_LIMIT], points):
        ax = p.get("axes") or {}
        occ = ((p.get("analysis") or {}).get("occupancy") or {}).get("value")
        launch = (p.get("analysis") or {}).get("launch") or {}
        why = "; ".join(launch.get("reasons") or []) if p.get("status") == "ok" else _error(p)
        rows.append([n, p.get("status", "?")] + [ax.get(k, "") for k in axes] +
                    [_n(_res(p, "registers")), _n(_res(p, "spill_stores")), _n(_res(p, "shared")), _n(occ),
                     "yes" if _launchable(p) else "NO", why] +
                    [_n((p.get("times_ms") or {}).get(s)) for s in stages])
    numeric = tuple(range(2 + len(axes), 2 + len(axes) + 4)) + tuple(range(8 + len(axes), 8 + len(axes) + len(stages)))
    shown = ("every point" if len(points) <= TABLE_LIMIT else
             f"the first {TABLE_LIMIT:,} of {len(points):,} points (the rest are in {Path(source).name})")
    parts.append(f"<h3>{escape(shown)} (click a column to sort)</h3>" + '<div class="wide">' + table(
        headers, rows, numeric=numeric, sortable=True, cls="points", wrap=(7 + len(axes),),
        row_class=lambda i: "" if _launchable(points[i]) else "unlaunchable") + "</div>")
    page.add_section(f"sweep {info.get('name') or Path(source).name}", "".join(parts))


def _error(p: dict) -> str:
    err = p.get("error") or {}
    return str(err.get("message") or err.get("summary") or p.get("status") or "")[:160]


def _n(v) -> str:
    if v is None:
        return "-"
    return f"{v:.1f}" if isinstance(v, float) else str(v)
