"""Pack the binaries of ranked spaces for the GPU machine: per config, its irscope.json (stages cut down to
the cubin), Triton's metadata and the cubin. A few MB instead of the snapshots' hundreds.

    python benchmarks/rank_bundle.py SNAPSHOT_ROOT OUT_DIR
"""
from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path


def bundle(root: Path, out: Path) -> int:
    n = 0
    for meta_file in sorted(root.rglob("irscope.json")):
        src = meta_file.parent
        meta = json.loads(meta_file.read_text())
        if meta.get("status") != "ok" or "cubin" not in meta.get("stages", {}):
            continue
        rel = src.relative_to(root)
        dst = out / "__".join(rel.parts)
        dst.mkdir(parents=True, exist_ok=True)
        fn = meta["function"]
        meta["stages"] = {"cubin": meta["stages"]["cubin"]}
        (dst / "irscope.json").write_text(json.dumps(meta))
        for name in (f"{fn}.json", f"{fn}.cubin"):
            shutil.copyfile(src / name, dst / name)
        n += 1
    return n


if __name__ == "__main__":
    print(bundle(Path(sys.argv[1]), Path(sys.argv[2])), "configs bundled")
