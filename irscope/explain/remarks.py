"""Remarks: each decision of the base compile, and what each what-if compile changed, with evidence.

Like LLVM's optimisation remarks: `passed` (the fast path was taken), `missed` (it was not; the message
says what would be needed, and a what-if that reaches it is quoted), `analysis` (facts and flips that are
neither). Every remark names the snapshot folder its evidence comes from.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from ..errors import CompileError, IrscopeError, SnapshotError, UsageError, error_summary
from ..spec.kernel import CompileOptions, refused_recorded_option
from .decisions import TIMELINE_PATTERN, deciding_pass, read_decisions
from .facts import Decision, gather, is_gluon
from .whatif import WhatIf, WhatIfResult, plan_whatifs, run_whatifs

DEFAULT_BUDGET = 4
_VERSION_TEXT = re.compile(r"[\w.+-]{1,40}")  # what a hint may quote of an untrusted irscope.json's version


@dataclass(frozen=True)
class Remark:
    """One claim: what was decided (or would be, with `change`), why, the evidence and where it was read."""

    kind: str  # passed, missed, analysis
    decision: Decision
    message: str
    evidence: tuple[str, ...]  # "ptx.wgmma 8 → 0", "ptx.mma.sync 0 → 256", or "ptx.wgmma 8"
    snapshot: str  # the folder the claim was read from (`irscope show` opens it)
    pass_name: str = ""  # the pass that makes the decision
    pass_source: str = ""  # "timeline" (seen on this compile's pass timeline) or "pipeline" (Triton's pass list)
    change: str = ""  # the switch of a what-if remark: "--num-warps 2"

    def as_dict(self) -> dict:
        return {"kind": self.kind, "topic": self.decision.topic, "subject": self.decision.subject,
                "value": self.decision.value, "message": self.message, "evidence": list(self.evidence),
                "snapshot": self.snapshot, "pass": self.pass_name, "pass_source": self.pass_source,
                "change": self.change or None}


@dataclass(frozen=True)
class Explanation:
    """Everything `irscope explain` found for one kernel on one target."""

    kernel: str
    target: str
    snapshot: str  # the base compile's folder
    label: str
    decisions: tuple[Decision, ...]
    remarks: tuple[Remark, ...]
    whatifs: tuple[WhatIfResult, ...]
    skipped: tuple[WhatIf, ...]  # planned but over the budget
    timeline: bool  # whether the base compile has a pass timeline
    gluon: bool = False  # a @gluon.jit kernel: its decisions are the source's, not Triton's passes'

    @property
    def compiled(self) -> int:
        return sum(1 for r in self.whatifs if not r.cached)

    def as_dict(self) -> dict:
        return {"kernel": self.kernel, "target": self.target, "snapshot": self.snapshot, "label": self.label,
                "timeline": self.timeline, "gluon": self.gluon,
                "decisions": [{"topic": d.topic, "subject": d.subject, "value": d.value, "good": d.good,
                               "why": d.why, "evidence": dict(d.evidence)} for d in self.decisions],
                "remarks": [r.as_dict() for r in self.remarks],
                "whatifs": [{"change": r.whatif.change, "topic": r.whatif.topic, "reason": r.whatif.reason,
                             "status": r.status, "snapshot": str(r.folder) if r.folder else None,
                             "cached": r.cached} for r in self.whatifs],
                "skipped": [{"change": w.change, "topic": w.topic, "reason": w.reason} for w in self.skipped]}


def explain(kernel: str | None, target: str | None, options: CompileOptions, out: Path, *,
            snapshot: Path | None = None, budget: int = DEFAULT_BUDGET, passes: bool = False,
            workers: int | None = None, timeout: float | None = 300.0,
            on_progress: Callable | None = None, triton: str = "") -> Explanation:
    """Compile (or read) the base snapshot, read its decisions, compile the what-ifs, and make remarks."""
    from ..analyze import analyze
    from ..store.snapshot import load_snapshot

    if snapshot is not None:
        snap = load_snapshot(snapshot)
        if budget > 0:
            kernel = _builtin_kernel(snap)
            try:
                options = CompileOptions.from_dict(snap.meta["request"]).with_(name=None, passes="")
            except (ValueError, UsageError) as e:  # UsageError: a bad name or tensor dtype
                raise SnapshotError(f"{snap.path / 'irscope.json'}: field 'request' is damaged: "
                                    f"{getattr(e, 'message', e)}",
                                    "explain it without what-ifs (--budget 0), or compile it again") from None
            refused = refused_recorded_option(options.backend_options)
            if refused:
                raise SnapshotError(f"{snap.path / 'irscope.json'}: field 'request' asks for {refused}",
                                    "explain it without what-ifs (--budget 0), or compile the kernel with the "
                                    "option yourself and explain that")
            _check_release(snap, triton)
    else:
        snap = load_snapshot(_compile_base(kernel, target, options, out, passes, workers, timeout, on_progress,
                                               triton))
    if not snap.ok:
        err = snap.error or {}
        said = error_summary(err) if err.get("message") else ""
        raise CompileError(f"{snap.label} did not compile (at {err.get('stage', '?')}"
                           + (f": {said[:300]}" if said else "") + "): nothing to explain",
                           f"irscope show {snap.path} for the log")
    facts = gather(snap, analyze(snap))
    decisions = read_decisions(facts)
    planned, skipped = plan_whatifs(facts, decisions, options, budget)
    results = run_whatifs(kernel, planned, out, workers=workers, timeout=timeout, on_progress=on_progress,
                          triton=triton) \
        if planned else []
    found = _timeline_passes(snap)
    vendor = snap.target.vendor if snap.target else None
    gluon = is_gluon(snap)
    remarks = [_base_remark(d, str(snap.path), found, vendor, gluon) for d in decisions]
    for r in results:
        remarks.extend(_whatif_remarks(decisions, facts.analysis, r, vendor, gluon))
    return Explanation(kernel or snap.kernel, snap.target_name, str(snap.path), snap.label, decisions, tuple(remarks),
                       tuple(results), tuple(skipped), found is not None, gluon)


def _builtin_kernel(snap) -> str:
    """The built-in kernel a snapshot was compiled from, for its what-ifs. A snapshot folder is untrusted
    input: a kernel file it merely names is never imported on its say-so."""
    from ..spec import library
    name = snap.meta.get("kernel") or ""
    if snap.origin != "irscope" or not snap.meta.get("request"):
        raise SnapshotError(f"{snap.label} records no irscope request to start what-if compiles from",
                            "read its decisions only with --budget 0, or explain the kernel: "
                            "irscope explain KERNEL --target T")
    recorded = snap.meta.get("source_file")
    captured = str(snap.meta.get("description") or "").startswith("captured:")
    try:
        spec = library.load_builtin(name)  # never load_kernel: a path-like name would import the file it names
    except IrscopeError:
        spec = None
    # A kernel of another file may share a built-in's name (a captured `add`): its what-ifs are not the built-in's.
    # (source_file is relative to where the compile ran: only its name can be compared)
    if spec is None or captured or (recorded and Path(recorded).name != Path(spec.path or "").name):
        launches = snap.path.parent.parent.parent / "launches.json"  # where `irscope capture --out` puts it
        if captured:
            ref = f"{launches if launches.is_file() else 'LAUNCHES.json'}:{snap.kernel}/{snap.variant}"
            hint = (f"irscope explain {ref} --target {snap.target_name} (the launch file it was compiled from), "
                    "or --budget 0 to read the snapshot's decisions only")
        else:
            hint = (f"irscope explain {recorded or 'FILE.py'}:{snap.fn_name} with its options, or --budget 0 to "
                    "read the snapshot's decisions only")
        raise UsageError(f"{snap.label} is a compile of {recorded or 'a file'}, not of a built-in kernel: its "
                         "what-ifs need the kernel named on the command line", hint)
    return name


def _check_release(snap, triton: str) -> None:
    """A snapshot's what-ifs are set beside it: compiled by another Triton release, every difference of the
    releases would read as the switch's doing. UsageError unless they are compiled by the snapshot's own."""
    from ..harness.envs import normalise_version, running_version
    recorded = str((snap.meta.get("versions") or {}).get("triton") or "")
    wanted = triton or running_version()
    if not recorded:
        return

    def release(text: str) -> str:
        try:
            return normalise_version(text)
        except UsageError:  # (a version that is none, from an untrusted irscope.json; a local build's)
            return text.strip()

    if release(recorded) == release(wanted):
        return
    raise UsageError(f"{snap.label} was compiled by Triton {recorded[:40]}, and its what-ifs would be compiled by "
                     f"Triton {wanted or '(none installed)'}",
                     (f"explain it with --triton {release(recorded)} (the release it was compiled by), or read "
                      if _VERSION_TEXT.fullmatch(release(recorded)) else "read ") + "its decisions only with --budget 0")


def _compile_base(kernel, target, options, out, passes, workers, timeout, on_progress, triton="") -> Path:
    from ..sweep import SweepPoint, plan_points, run_points

    opts = options.with_(passes="mlir") if passes else options
    point = SweepPoint(kernel, target, opts, triton=triton)
    force = False
    if passes:  # the content key leaves the timeline out: a fresh folder without one is compiled again
        folder = plan_points([point], out)[0].folder
        force = not (folder / "passes").is_dir()
    row = run_points([point], out, workers=workers, timeout=timeout, force=force, on_progress=on_progress).rows[0]
    if row.path is None:
        msg = ((row.error or {}).get("message") or row.status).strip().splitlines()
        if row.status == "not-for-target":  # (not a failure to look into: the kernel is written for other targets)
            raise CompileError(f"{row.label}: {msg[0] if msg else 'not for ' + target}",
                               f"explain it for a target it is for: `irscope kernels {kernel}` says which targets "
                               "each config is for" if (row.error or {}).get("declared") else
                               "explain it for a target that has the instructions it uses")
        raise CompileError(f"{row.label}: the compile {row.status}: {msg[0] if msg else ''}",
                           "irscope compile the same kernel and options for the log")
    return row.path


AT_START = "(before the first pass)"  # a topic's pattern is in the IR before the first pass: no pass of this compile made it


def _timeline_passes(snap) -> dict[str, str] | None:
    """topic -> the pass after which its pattern first appears on the snapshot's timeline, or AT_START when
    it is there before the first pass (a Gluon kernel's hand-written wgmma, TMA copies, partitions); None:
    no timeline."""
    from ..passes.blame import find_pattern
    from ..passes.timeline import load_timeline
    try:
        tl = load_timeline(snap)
    except SnapshotError:
        return None
    out = {}
    for topic, pattern in TIMELINE_PATTERN.items():
        try:
            blame = find_pattern(tl, pattern)
        except Exception:  # noqa: BLE001 - a damaged timeline: fall back to Triton's pass list
            continue
        if blame.at_start:  # (a later `appears` is the op coming back, not the pass that made it)
            out[topic] = AT_START
        elif blame.first is not None:
            out[topic] = blame.first.step.label
    return out


def _base_remark(d: Decision, folder: str, found: dict[str, str] | None, vendor: str | None,
                 gluon: bool = False) -> Remark:
    kind = "analysis" if d.good is None else "passed" if d.good else "missed"
    seen = (found or {}).get(d.topic)
    ev = tuple(f"{k} {v:,}" for k, v in d.evidence)
    why = d.why
    if seen == AT_START:  # on the timeline from the start: no pass made it, whatever Triton's pass list says
        if not d.by_hand:
            why += ("; " if why else "") + "in the IR before the first pass"
        return Remark(kind, d, f"{d.subject}: {d.value}" + (f" ({why})" if why else ""), ev, folder, "", "start")
    known = deciding_pass(d.topic, vendor, gluon)
    return Remark(kind, d, f"{d.subject}: {d.value}" + (f" ({why})" if why else ""), ev, folder,
                  seen or known, "timeline" if seen else "pipeline" if known else "")


def _value(analysis, key: str) -> int:
    if key.startswith("resources."):
        return getattr(analysis.resources, key.split(".", 1)[1], 0) or 0
    return analysis.counters.get(key, 0)


def _with(change: str) -> str:
    """`with --num-warps 2`, but `without --option maxnreg` as it stands."""
    return change if change.startswith("without ") else f"with {change}"


def _whatif_remarks(decisions: Sequence[Decision], base, r: WhatIfResult, vendor: str | None,
                    gluon: bool = False) -> list[Remark]:
    w = r.whatif
    folder = str(r.folder) if r.folder else ""
    if r.status != "ok" or r.analysis is None:
        msg = ((r.error or {}).get("message") or r.status).strip().splitlines()
        d = next((d for d in decisions if d.topic == w.topic), None) or Decision(w.topic, "kernel", "?", None)
        return [Remark("analysis", d, f"{_with(w.change)}: the compile {r.status}: {msg[0] if msg else ''}", (),
                       folder, change=w.change)]
    from ..store.snapshot import load_snapshot
    other = {d.key: d for d in read_decisions(gather(load_snapshot(r.folder), r.analysis))}
    # A fix that loses a fast path the base has (--num-stages 1 for shared memory: no pipelining) is advice for
    # the decision it was planned for; what it happens to fix elsewhere is a side effect, not advice
    costly = any(d.good and other.get(d.key) is not None and other[d.key].good is False for d in decisions)
    out, planned_topic_changed = [], False
    for d in decisions:
        after = other.get(d.key)
        if after is None or after.value == d.value:
            continue
        if d.topic != w.topic and bool(d.good) == bool(after.good):
            continue  # a side effect that changes no verdict: left to `irscope diff`
        planned_topic_changed |= d.topic == w.topic
        keys = list(dict.fromkeys([k for k, _ in d.evidence] + [k for k, _ in after.evidence]))
        ev = tuple(f"{k} {_value(base, k):,} → {_value(r.analysis, k):,}" for k in keys
                   if d.topic == "vectors" or _value(base, k) != _value(r.analysis, k))
        if d.topic == "vectors":
            ev = (f"{d.value} → {after.value}",)
        # (a probe that happens to fix it is no advice)
        if d.good is False and after.good and w.fixes and (d.topic == w.topic or not costly):
            kind, verb = "missed", "would be"
        else:
            kind, verb = "analysis", "becomes"
        why = "; ".join(p for p in after.why.split("; ") if p not in d.why.split("; "))  # what differs
        head, _, rest = after.value.partition("; ")
        said = f"{verb} {after.value}"
        if rest and head == d.value.partition("; ")[0]:  # the verdict holds, its details moved: not "becomes"
            said = f"stays {head}; now {rest}"
        known = deciding_pass(d.topic, vendor, gluon)
        out.append(Remark(kind, after, f"{d.subject}: {said} {_with(w.change)}"
                          + (f" ({why})" if why and d.topic != "vectors" else ""), ev, folder,
                          known, "pipeline" if known else "", w.change))
    if not planned_topic_changed:
        d = next((d for d in decisions if d.topic == w.topic), None)
        if d is not None:
            out.insert(0, Remark("analysis", d, f"{d.subject}: unchanged {_with(w.change)} ({w.reason})", (), folder,
                                 change=w.change))
    return out
