"""`irscope targets`: the targets irscope compiles for, with the per-block limits analyses use."""
from __future__ import annotations

import json

from ..render.terminal import human_bytes, table


def add_parser(sub) -> None:
    p = sub.add_parser("targets", help="list compile targets with their warp size and per-block limits",
                       description="Every target irscope compiles for, with its vendor, family, warp size and the "
                                   "per-block limits the analyses check against (shared memory or LDS, registers, "
                                   "threads); `*` marks the seven that `--target all` compiles.")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(run=run)


def run(args, ui) -> int:
    from ..targets import ALIASES, CORE, TARGETS

    if args.json:
        ui.print(json.dumps([{**t.__dict__, "backend": t.backend, "core": t.name in CORE,
                              "aliases": sorted(a for a, n in ALIASES.items() if n == t.name)}
                             for t in TARGETS.values()], indent=1))
        return 0
    rows = []
    for t in TARGETS.values():
        regs = f"{t.regs_per_thread} vgpr" if t.vendor == "amd" else f"{t.regs_per_thread}/thread"
        aliases = ", ".join(sorted(a for a, n in ALIASES.items() if n == t.name and a.startswith(("sm", "gfx"))))
        rows.append([t.name + (" *" if t.name in CORE else ""), t.vendor, t.family, t.warp_size,
                     human_bytes(t.shared_per_block), regs, t.max_threads_per_block, aliases, t.products])
    ui.print(table(["target", "vendor", "family", "warp", "smem/LDS per block", "registers", "threads/block",
                    "aliases", "chips"], rows, right=(3, 4, 6), style=ui.style))
    ui.print("\n* in `--target all`")
    return 0
