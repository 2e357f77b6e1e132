"""`irscope show SNAPSHOT [--stage S]`: a snapshot's summary, or one of its stages."""
from __future__ import annotations

import json

from ..render.terminal import highlight, human_bytes, resources_line, table, time_split


def add_parser(sub) -> None:
    p = sub.add_parser("show", help="print a snapshot's summary or one stage (coloured on a terminal)")
    p.add_argument("snapshot", metavar="SNAPSHOT", help="a snapshot folder, Triton cache entry or kernel-dump folder")
    p.add_argument("--stage", "-s", help="print this stage: python, source, ttir, ttgir, llir, ptx, amdgcn, sass")
    p.add_argument("--json", action="store_true", help="print the snapshot's metadata as JSON")
    p.set_defaults(run=run)


def run(args, ui) -> int:
    from ..errors import SnapshotError
    from ..store.snapshot import load_snapshot

    from ..errors import UsageError
    from ..ir.stages import STAGES

    if args.stage and args.json:
        raise UsageError("--json prints the snapshot's record, not a stage", "drop --stage, or --json to print "
                         "the stage")
    if args.stage and args.stage.lower() not in (*STAGES, "python"):
        raise UsageError(f"unknown stage '{args.stage}'", f"stages: python, {', '.join(STAGES)}")
    snap = load_snapshot(args.snapshot)
    if args.json:
        ui.print(json.dumps(snap.meta, indent=1, default=str))
        return 0
    if args.stage:
        stage = args.stage.lower()
        if stage == "python":
            text = snap.python_source()
            if text is None:
                raise SnapshotError(f"{snap.label} keeps no Python source",
                                    f"{snap.path} has no source.py (irscope compile writes one)"
                                    if snap.origin == "irscope" else "only irscope snapshots do (irscope compile)")
        elif stage == "sass" and "sass" not in snap.stage_files and "cubin" in snap.stage_files:
            from ..harness.tools import disassemble
            text = disassemble(snap.read_bytes("cubin"))
        else:
            text = snap.read(stage)
        ui.out.write(highlight(text, stage, ui.color))
        return 0
    _summary(snap, ui)
    return 0


def _summary(snap, ui) -> None:
    s = ui.style
    m = snap.meta
    status = s("ok", "green") if snap.ok else s("FAILED", "red", "bold")
    ui.print(f"{s(snap.label, 'bold')}  {status}  ({snap.origin}: {snap.path})")
    if m.get("description"):
        ui.print(f"  {m['description']}")
    if snap.error:
        message = (snap.error.get("message") or "").strip()
        ui.print(f"  {s('error', 'red')} at stage {snap.error.get('stage')}: {message}")
    t = snap.target
    if t:
        ui.print(f"  target   {t.name} ({t.family}: {t.products}), warp {t.warp_size}")
    co = m.get("compile_options") or {}
    if co:
        cx = " ".join(f"{k}={v}" for k, v in (co.get("constexprs") or {}).items())
        ui.print(f"  options  num_warps={co.get('num_warps')} num_stages={co.get('num_stages')} {cx}".rstrip())
    env = m.get("environment")
    if isinstance(env, dict) and env:  # set variables that changed code generation: part of the content key
        ui.print(f"  env      {' '.join(f'{k}={v}' for k, v in env.items())}")
    if (t := snap.target) and t.vendor == "amd" and any((a.get("attrs") or {}).get("tt.pointer_range") == 32
                                                         for a in m.get("specialisation") or [] if isinstance(a, dict)):
        ui.print("  assumes  tensors under 2 GB (tt.pointer_range=32: buffer loads and stores on AMD)")
    ui.print(f"  usage    {resources_line(snap)}")
    spec_rows = []
    for a in m.get("specialisation") or []:
        if a.get("kind") == "constexpr":
            continue
        note = a.get("why", "")
        if a.get("attrs"):
            note = " ".join(f"{k}={v}" for k, v in a["attrs"].items())
        divisibility = a.get("divisibility", "-") if a.get("kind") != "constant" else "const"
        spec_rows.append([a["name"], a["type"], a.get("value", ""), divisibility, note])
    if spec_rows:
        ui.print("\n  specialisation (what a typical launch gives the JIT):")
        ui.print(_indent(table(["argument", "type", "typical value", "divisibility", "note"], spec_rows, style=s)))
    stages = m.get("stages") or {}
    rows = []
    times = m.get("times_ms") or {}
    for stage, path in snap.stage_files.items():
        info = stages.get(stage, {})
        size = path.stat().st_size
        lines = info.get("lines")
        rows.append([stage, path.name, human_bytes(size), "" if lines is None else f"{lines:,}",
                     f"{times[stage]:.0f} ms" if stage in times else ""])
    ui.print("\n  stages:")
    ui.print(_indent(table(["stage", "file", "size", "lines", "compile time"], rows, right=(2, 3, 4), style=s)))
    split = time_split(times)
    if split:
        ui.print(f"  time     {split}")
    damaged = snap.damaged_stages()
    if damaged:
        ui.print(f"  {s('warning', 'red', 'bold')}  {', '.join(damaged)}: the file differs from the sha256 "
                 "irscope.json records (changed or damaged since the compile); --stage refuses to show it")
    v = m.get("versions") or {}
    if v:
        ui.print("\n  versions " + ", ".join(f"{k} {val}" for k, val in v.items() if k != "ptxas_binary"))
    if m.get("content_key"):
        ui.print(f"  key      {m['content_key'][:16]}")
    p = m.get("passes")
    if p:
        ui.print(f"  passes   {p.get('steps')} steps recorded ({p.get('changed')} changed the IR): "
                 f"irscope passes {snap.path}")
    _gpu_results(snap, ui)


def _gpu_results(snap, ui) -> None:
    """What `irscope run` and `irscope verify` recorded on a GPU for this snapshot."""
    from ..store.results import runs, summary, verifications

    records = runs(snap)
    if records:
        ui.print(f"\n  GPU runs ({len(records)}; newest last):")
        for r in records[-5:]:
            ui.print(f"    {r.get('recorded', '')[:16]}  {summary(r)}")
    for v in verifications(snap)[-3:]:
        same = [st["stage"] for st in v.get("stages") or [] if st.get("identical")]
        other = [st["stage"] for st in v.get("stages") or [] if not st.get("identical")]
        verdict = "JIT and device-less identical in " + ", ".join(same) if not other else \
            f"JIT and device-less DIFFER in {', '.join(other)}"
        ui.print(f"  verified {v.get('recorded', '')[:16]} on {v.get('target')}: {verdict} "
                 f"(Triton {(v.get('versions') or {}).get('triton', '?')})")


def _indent(text: str, n: int = 4) -> str:
    return "\n".join(" " * n + line for line in text.splitlines())
