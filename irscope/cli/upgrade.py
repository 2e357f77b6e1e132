"""`irscope upgrade-check --from 3.6.0 --to 3.9.0 [KERNEL...|SWEEP.yaml]`: compile every kernel, config
and target under two Triton releases and list what changed, worst first; exit 1 when something regressed.

Each point pair is judged in this order (docs/versions.md): does it still compile, can it still launch,
does it keep its matrix instruction (wgmma, mma.sync, tcgen05, MFMA, WMMA, and their shapes and
versions), its pipelining (async copies, TMA, shared-memory buffers), no new spills, then registers and
shared memory (a regression where they lower occupancy, else a change). A point that compiles under --to
and failed under --from with the kernel's own compile error is an improvement; one that crashed, timed out
or was interrupted under --from, or that fails under both, cannot be compared: it is listed as such, and
the exit status is 3 when nothing regressed but some point could not be compared. A point whose spec
declares it not for its target (either side `not-for-target`) is listed as nothing to compare.
"""
from __future__ import annotations

import enum
import json
from dataclasses import dataclass
from pathlib import Path

from ..errors import ExitCode
from ..render.terminal import plural
from .envs import prepare
from .options import add_compile_options, options_from_args, positive_int, positive_seconds

MATRIX = ("ptx.wgmma", "ptx.mma", "ptx.mma.sync", "ptx.tcgen05.mma", "sass.HGMMA", "sass.HMMA", "sass.UTCHMMA",
          "amdgcn.v_mfma", "amdgcn.v_wmma")
MATRIX_VERSIONS = ("ttgir.nvidia_mma.version", "ttgir.amd_mfma.version", "ttgir.amd_wmma.version")
# Asynchronous loads into shared memory, the ways one stage writes them: losing one kind while another
# remains (cp.async for TMA, as a newer release may choose) still pipelines, so it is a change; losing
# every kind is the regression. TMA stores are not pipelining, so .tensor.load and not .tensor.
PIPELINE = (("ttgir.async_copy", "ttgir.tma_load"), ("ptx.cp.async", "ptx.cp.async.bulk.tensor.load"),
            ("ptx.cp.async.bulk",), ("sass.LDGSTS", "sass.UTMALDG"))


class Kind(enum.StrEnum):
    REGRESSION = "regression"
    NOT_COMPARED = "not compared"  # no snapshot under --from to compare with (or under neither)
    CHANGE = "change"
    IMPROVEMENT = "improvement"


# A failure under --from that is the kernel's own (the compiler rejected it, or the spec says it is not for
# this target): compiling under --to is then an improvement. A crash, timeout or interruption is not.
KERNEL_ERRORS = ("failed", "not-for-target")
CATEGORIES = ("compile", "launch", "matrix", "pipelining", "spills", "registers", "shared", "counters")


@dataclass(frozen=True)
class Finding:
    """One thing that differs between the two releases for one point."""

    kind: Kind
    category: str  # one of CATEGORIES, worst first
    text: str

    def rank(self) -> tuple[int, int]:
        return list(Kind).index(self.kind), CATEGORIES.index(self.category)


@dataclass(frozen=True)
class PointReport:
    label: str  # kernel/variant/target, without the version
    old: object  # SweepRow
    new: object
    findings: tuple[Finding, ...]

    @property
    def regressed(self) -> bool:
        return any(f.kind == Kind.REGRESSION for f in self.findings)

    @property
    def compared(self) -> bool:
        return not any(f.kind == Kind.NOT_COMPARED for f in self.findings)


def add_parser(sub) -> None:
    p = sub.add_parser("upgrade-check", help="what a Triton upgrade changes in your kernels (exit 1 on a regression)",
                       description="Compile every kernel, config and target under two Triton releases (each in its "
                                   "own environment: `irscope envs`) and list what changed, worst first: "
                                   "compile failures, launchability, matrix instructions, pipelining and async "
                                   "copies, spills, registers, shared memory. Exit status 1 when something "
                                   "regressed, else 3 when some point could not be compared (it did not compile "
                                   "under --from, or under neither), so it can gate an upgrade in CI.")
    p.add_argument("kernels", nargs="*", metavar="KERNEL|SWEEP.yaml",
                   help="built-in kernels, FILE.py:FUNCTION, or one sweep file (default: every built-in kernel)")
    p.add_argument("--from", dest="old", required=True, metavar="VERSION", help="the Triton release you have")
    p.add_argument("--to", dest="new", required=True, metavar="VERSION", help="the release you move to")
    p.add_argument("--target", "-t", default="sm_90a", help="targets: sm_90a,gfx942 or all (default: sm_90a)")
    add_compile_options(p)  # --config (or all), and for a FILE.py:NAME without a KernelSpec, --arg and the rest
    p.add_argument("--out", "-o", metavar="DIR", help="snapshot root (default: $IRSCOPE_OUT or ./irscope-snapshots)")
    p.add_argument("--jobs", "-j", type=positive_int, metavar="N", help="compiles at once (default: one per CPU core)")
    p.add_argument("--timeout", type=positive_seconds, default=300.0, metavar="SECONDS", help="per compile (default: 300)")
    p.add_argument("--all", action="store_true", help="also list points where nothing changed")
    p.add_argument("--json", action="store_true", help="the findings as JSON")
    p.set_defaults(run=run)


def _points(args, old: str, new: str):
    from ..spec import CompileOptions
    from ..spec.library import builtin_specs, config_choices
    from ..sweep import SweepPoint, load_sweep
    from ..targets import parse_targets

    options = options_from_args(args)
    sweeps = [k for k in args.kernels if k.endswith((".yaml", ".yml"))]
    if sweeps and len(args.kernels) > 1:
        from ..errors import UsageError
        raise UsageError(f"upgrade-check takes one sweep file at a time, and no kernels beside it (got "
                         f"{' '.join(args.kernels)})", "run it once per sweep file, or list its kernels instead")
    if len(args.kernels) == 1 and args.kernels[0].endswith((".yaml", ".yml")):
        if options != CompileOptions():  # (--no-line-info too: a sweep file says line_info: itself)
            from ..errors import UsageError
            raise UsageError("compile options do not apply to a sweep file: its points say their own",
                             "set them in the sweep file (`set:` or `grid:`), or name the kernels instead")
        from .sweep import expand_within
        base = expand_within(load_sweep(args.kernels[0]), releases=2, flag=False)
    else:
        kernels = args.kernels or [s.name for s in builtin_specs()]
        base = [SweepPoint(k, t.name, options.with_(config=c)) for k in kernels
                for c in config_choices(k, options.config) for t in parse_targets(args.target)]
    # A kernel or target named twice is one point (it was compared, listed and counted twice).
    base = list({(p.kernel, p.target, p.options): p for p in base}.values())
    pairs = [(SweepPoint(p.kernel, p.target, p.options, p.axes, p.where, triton=old),
              SweepPoint(p.kernel, p.target, p.options, p.axes, p.where, triton=new)) for p in base]
    return pairs


def run(args, ui) -> int:
    from ..errors import UsageError
    from ..harness.envs import supported_version
    from ..render.terminal import ProgressLine
    from ..store.roots import default_out, ensure_root
    from ..sweep import run_points

    old, new = supported_version(args.old), supported_version(args.new)
    if old == new:
        raise UsageError(f"--from and --to are both {old}", "name two different Triton releases")
    pairs = _points(args, old, new)
    out = Path(args.out) if args.out else default_out()
    ensure_root(out)  # before installing anything: an unwritable root would fail every compile
    prepare([old, new], ui)
    progress = ProgressLine(ui.err)

    def on_progress(p) -> None:
        if p.phase == "compiling":
            progress.update(f"[{p.done}/{p.total}] compiling {', '.join(p.running[:3])}".rstrip())

    try:
        result = run_points([p for pair in pairs for p in pair], out, workers=args.jobs, timeout=args.timeout,
                            on_progress=on_progress)
    finally:
        progress.close()
    rows = result.rows
    reports = [compare_rows(rows[2 * i], rows[2 * i + 1]) for i in range(len(pairs))]
    reports.sort(key=lambda r: (min((f.rank() for f in r.findings), default=(9, 9)), r.label))
    if args.json:
        ui.print(json.dumps(to_json(old, new, reports), indent=1))
    else:
        ui.print(render(old, new, reports, ui, show_all=args.all))
    return exit_status(reports)


def exit_status(reports) -> int:
    """1 when a point regressed, else 3 (as compile and sweep use for failed compiles) when some point
    could not be compared, else 0."""
    if any(r.regressed for r in reports):
        return int(ExitCode.FAILED)
    return int(ExitCode.COMPILE) if any(not r.compared for r in reports) else int(ExitCode.OK)


def _label(row) -> str:
    parts = row.label.split("/")
    if len(parts) == 3:
        parts[1] = parts[1].split(".triton-")[0]
    return "/".join(parts)


def compare_rows(old, new) -> PointReport:
    """What changed from `old` (a SweepRow under the old release) to `new`."""
    label = _label(new)
    old_ok = old.status == "ok" and old.analysis is not None
    new_ok = new.status == "ok" and new.analysis is not None
    if not (old_ok and new_ok):
        findings = []
        if old_ok:
            findings.append(Finding(Kind.REGRESSION, "compile", f"compiles no more: {new.status}: {new.reason}"))
        elif new_ok and old.status in KERNEL_ERRORS:
            findings.append(Finding(Kind.IMPROVEMENT, "compile", f"compiles now (was {old.status}: {old.reason})"))
        elif new_ok:  # a crash, a timeout or an interrupted compile says nothing about the kernel under --from
            findings.append(Finding(Kind.NOT_COMPARED, "compile", f"compiles now, but under --from it did not "
                                                                  f"compile ({old.status}: {old.reason})"))
        elif "not-for-target" not in (old.status, new.status):  # (else the spec said so: nothing to compare)
            findings.append(Finding(Kind.NOT_COMPARED, "compile",
                                    f"fails under both ({old.status}: {old.reason} / {new.status}: {new.reason})"))
        return PointReport(label, old, new, tuple(findings))
    return PointReport(label, old, new, tuple(sorted(compare_analyses(old.analysis, new.analysis),
                                                     key=Finding.rank)))


def _has(counters: dict, key: str) -> int:
    return counters.get(key, 0)


def compare_analyses(a, b) -> list[Finding]:
    """The findings between two analyses of the same point (old release `a`, new release `b`)."""
    out: list[Finding] = []
    ca, cb = a.counters, b.counters
    if a.launch.launchable and not b.launch.launchable:
        out.append(Finding(Kind.REGRESSION, "launch", "cannot launch any more: " + "; ".join(b.launch.reasons)))
    elif not a.launch.launchable and b.launch.launchable:
        out.append(Finding(Kind.IMPROVEMENT, "launch", "launches now (was: " + "; ".join(a.launch.reasons) + ")"))
    for key in MATRIX:
        va, vb = _has(ca, key), _has(cb, key)
        if va and not vb:
            out.append(Finding(Kind.REGRESSION, "matrix", f"{key} lost ({va:,} → 0)"))
        elif vb and not va:
            out.append(Finding(Kind.IMPROVEMENT, "matrix", f"{key} gained (0 → {vb:,})"))
        shapes_a = {k for k in ca if k.startswith(key + ".") and ca[k]}
        shapes_b = {k for k in cb if k.startswith(key + ".") and cb[k]}
        if va and vb and shapes_a != shapes_b:
            out.append(Finding(Kind.CHANGE, "matrix", f"{key} shape {', '.join(sorted(shapes_a)) or '-'} → "
                                                      f"{', '.join(sorted(shapes_b)) or '-'}"))
    for key in MATRIX_VERSIONS:
        va, vb = ca.get(key), cb.get(key)
        if va is not None and vb is not None and va != vb:
            out.append(Finding(Kind.REGRESSION if vb < va else Kind.IMPROVEMENT, "matrix", f"{key} {va} → {vb}"))
    for group in PIPELINE:
        before = [k for k in group if _has(ca, k)]
        after = [k for k in group if _has(cb, k)]
        for key in group:
            va, vb = _has(ca, key), _has(cb, key)
            if va and not vb:
                kind, beside = (Kind.CHANGE, f" (still {', '.join(after)})") if after else (Kind.REGRESSION, "")
                out.append(Finding(kind, "pipelining", f"{key} lost ({va:,} → 0){beside}"))
            elif vb and not va:
                kind, beside = (Kind.CHANGE, f" (was {', '.join(before)})") if before else (Kind.IMPROVEMENT, "")
                out.append(Finding(kind, "pipelining", f"{key} gained (0 → {vb:,}){beside}"))
    ba, bb = ca.get("ttgir.shared.buffers"), cb.get("ttgir.shared.buffers")
    if ba is not None and bb is not None and ba != bb:
        out.append(Finding(Kind.REGRESSION if bb < ba else Kind.CHANGE, "pipelining",
                           f"shared-memory buffers {ba} → {bb}"))
    ra, rb = a.resources, b.resources
    amd = _is_amd(b.target)
    sa, sb = (ra.spill_stores or 0) + (ra.spill_loads or 0), (rb.spill_stores or 0) + (rb.spill_loads or 0)
    spill_unit = " VGPRs" if amd else " B"  # LLVM's vgpr_spill_count on AMD, ptxas's bytes on NVIDIA
    if sb > sa:
        out.append(Finding(Kind.REGRESSION, "spills", f"spills {sa:,} → {sb:,}{spill_unit}"))
    elif sb < sa:
        out.append(Finding(Kind.IMPROVEMENT, "spills", f"spills {sa:,} → {sb:,}{spill_unit}"))
    occ_a = a.occupancy.value if a.occupancy else None
    occ_b = b.occupancy.value if b.occupancy else None
    lower = occ_a is not None and occ_b is not None and occ_b < occ_a
    occ = f", occupancy {occ_a} → {occ_b} {a.occupancy.unit}" if lower else ""
    # The occupancy limiter each resource causes (analyze/limits.py): only that one is blamed on it.
    causes = {"registers": "vgprs" if amd else "registers", "shared": "lds" if amd else "shared memory"}
    for category, name, va, vb, unit in (("registers", "registers", ra.registers, rb.registers, "/thread"),
                                         ("shared", "shared memory", ra.shared, rb.shared, " B")):
        if va is None or vb is None or va == vb:
            continue
        limiter = b.occupancy.limiter if b.occupancy else ""
        worse = vb > va and lower and limiter == causes[category]
        kind = Kind.REGRESSION if worse else Kind.IMPROVEMENT if vb < va else Kind.CHANGE
        out.append(Finding(kind, category, f"{name} {va:,} → {vb:,}{unit}" + (occ if worse else "")))
    changed = [k for k in sorted(set(ca) | set(cb)) if ca.get(k, 0) != cb.get(k, 0)]
    if changed:
        shown = ", ".join(f"{k} {ca.get(k, 0):,} → {cb.get(k, 0):,}" for k in changed[:4])
        more = f" (+{len(changed) - 4} more)" if len(changed) > 4 else ""
        noun = "counter differs" if len(changed) == 1 else "counters differ"
        out.append(Finding(Kind.CHANGE, "counters", f"{len(changed)} {noun}: {shown}{more}"))
    return out


def _is_amd(target: str) -> bool:
    from ..errors import IrscopeError
    from ..targets import get_target
    try:
        return get_target(target).vendor == "amd"
    except IrscopeError:
        return target.startswith("gfx")


def render(old: str, new: str, reports, ui, *, show_all: bool = False) -> str:
    s = ui.style
    colour = {Kind.REGRESSION: "red", Kind.NOT_COMPARED: "red", Kind.CHANGE: "yellow", Kind.IMPROVEMENT: "green"}
    lines = [s(f"Triton {old} → {new}: {plural(len(reports), 'point')}", "bold"), ""]
    listed = 0
    for r in reports:
        if not r.findings and not show_all:
            continue
        listed += 1
        lines.append(s(r.label, "bold") + ("" if r.findings else "  unchanged"))
        for f in r.findings:
            lines.append(f"  {s(f'{f.kind:<12}', colour[f.kind])} {f.category:<10} {f.text}")
    counts = {k: sum(1 for r in reports for f in r.findings if f.kind == k) for k in Kind}
    same = sum(1 for r in reports if not r.findings)
    regressed = sum(1 for r in reports if r.regressed)
    uncompared = sum(1 for r in reports if not r.compared)
    if not listed:
        lines.append("no point changed")  # (a blank page said nothing)
    lines += ["", f"{regressed} of {plural(len(reports), 'point')} regressed; "
                  f"{plural(counts[Kind.REGRESSION], 'regression')}, {plural(counts[Kind.CHANGE], 'change')}, "
                  f"{plural(counts[Kind.IMPROVEMENT], 'improvement')}; {same} unchanged"
                  + ("" if show_all or not same else " (--all lists them)")]
    if uncompared:
        lines.append(f"{plural(uncompared, 'point')} could not be compared: no snapshot under {old}, or under "
                     "neither (listed as `not compared`)")
    return "\n".join(lines)


def to_json(old: str, new: str, reports) -> dict:
    return {"from": old, "to": new, "regressed": any(r.regressed for r in reports),
            "not_compared": sum(1 for r in reports if not r.compared),
            "points": [{"point": r.label, "from": str(r.old.path or ""), "to": str(r.new.path or ""),
                        "regressed": r.regressed, "compared": r.compared,
                        "findings": [{"kind": str(f.kind), "category": f.category, "text": f.text}
                                     for f in r.findings]} for r in reports]}
