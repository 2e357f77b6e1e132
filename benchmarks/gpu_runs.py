"""What the GPU scripts of benchmarks/ that time a grid of their own kernel share (rank_l1.py, rank_aos.py,
rank_order.py): a run's header, its rows kept as they come (a run stopped half way keeps what it timed), and
the `OUT.json | --summary OUT.json` command line."""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path


def header(**extra) -> dict:
    """The versions, the command and the start of this run, then `extra`, then its `rows` (empty)."""
    import torch
    import triton
    return {"versions": {"torch": torch.__version__, "triton": triton.__version__, "gpu": torch.cuda.get_device_name()},
            "command": " ".join(sys.argv), "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            **extra, "rows": []}


def keep(doc: dict, row: dict, out: Path) -> None:
    """One more row: printed, and the whole file written again."""
    doc["rows"].append(row)
    print(json.dumps(row), flush=True)
    out.write_text(json.dumps(doc, indent=1))


def parser(description: str) -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("out", nargs="?")
    ap.add_argument("--summary")
    return ap


def run_or_summary(ap: argparse.ArgumentParser, args, run, summary) -> int:
    """`--summary FILE` prints a run here; else OUT.json is a run to make (on the GPU machine)."""
    if args.summary:
        summary(Path(args.summary))
        return 0
    if not args.out:
        ap.error("give OUT.json, or --summary OUT.json")
    run(Path(args.out))
    return 0
