"""irscope's occupancy, registers and launchability against the CUDA driver's own answers, on the GPU machine.

    python3 benchmarks/gpu_occupancy.py OUT.json BUNDLE...     # bundles by benchmarks/rank_bundle.py

irscope works these out without a GPU (irscope/analyze/limits.py: the occupancy calculator's rules, a
per-block reservation of 1 KiB of shared memory, 128-byte allocation units; registers from cuobjdump). Here
the driver answers for the same cubins:

- the device's limits (cuDeviceGetAttribute) against irscope's target table;
- for every config of the bundles: the registers and local memory (stack frame included) the driver reads
  from the cubin, whether it accepts the config's dynamic shared memory (cuFuncSetAttribute), and its
  resident blocks per SM (cuOccupancyMaxActiveBlocksPerMultiprocessor at the block's threads and Triton's
  shared memory), each against irscope's;
- the rule itself: one cubin's blocks per SM at every dynamic shared size from 0 to the opt-in limit in
  steps of 32 bytes, against irscope's rule at each.

Nothing is launched. Needs torch (for the context) and irscope on PYTHONPATH.
"""
from __future__ import annotations

import ctypes
import json
import sys
from pathlib import Path

CU_FUNC = {"max_threads": 0, "static_shared": 1, "local": 3, "registers": 4, "binary_version": 6,
           "max_dynamic_shared": 8}
CU_DEVICE = {"sms": 16, "max_shared_per_block_optin": 97, "shared_per_sm": 81, "registers_per_sm": 82,
             "max_threads_per_sm": 39, "max_blocks_per_sm": 106, "reserved_shared_per_block": 111,
             "registers_per_block": 12, "cc_major": 75, "cc_minor": 76}


class Driver:
    def __init__(self) -> None:
        import torch
        torch.zeros(1, device="cuda")  # the primary context, current on this thread
        self.cu = ctypes.CDLL("libcuda.so.1")
        self.device = torch.cuda.current_device()

    def check(self, rc: int, what: str) -> None:
        if rc:
            raise RuntimeError(f"{what}: CUresult {rc}")

    def device_attribute(self, attr: int) -> int:
        v = ctypes.c_int()
        self.check(self.cu.cuDeviceGetAttribute(ctypes.byref(v), attr, self.device), "cuDeviceGetAttribute")
        return v.value

    def load(self, cubin: bytes, name: str):
        mod, fn = ctypes.c_void_p(), ctypes.c_void_p()
        self.check(self.cu.cuModuleLoadData(ctypes.byref(mod), ctypes.c_char_p(cubin)), "cuModuleLoadData")
        self.check(self.cu.cuModuleGetFunction(ctypes.byref(fn), mod, name.encode()), "cuModuleGetFunction")
        return mod, fn

    def unload(self, mod) -> None:
        self.cu.cuModuleUnload(mod)

    def attribute(self, fn, attr: int) -> int:
        v = ctypes.c_int()
        self.check(self.cu.cuFuncGetAttribute(ctypes.byref(v), attr, fn), "cuFuncGetAttribute")
        return v.value

    def allow_shared(self, fn, nbytes: int) -> bool:
        return self.cu.cuFuncSetAttribute(fn, CU_FUNC["max_dynamic_shared"], nbytes) == 0

    def blocks_per_sm(self, fn, threads: int, shared: int) -> int | None:
        v = ctypes.c_int()
        rc = self.cu.cuOccupancyMaxActiveBlocksPerMultiprocessor(ctypes.byref(v), fn, threads, ctypes.c_size_t(shared))
        return v.value if rc == 0 else None


def configs(bundles: list[Path]):
    for bundle in bundles:
        for meta_file in sorted(bundle.rglob("irscope.json")):
            meta = json.loads(meta_file.read_text())
            fn = meta["function"]
            triton_meta = json.loads((meta_file.parent / f"{fn}.json").read_text())
            yield meta_file.parent.relative_to(bundle).as_posix(), meta, triton_meta, \
                (meta_file.parent / f"{fn}.cubin").read_bytes()


def main(out: Path, bundles: list[Path]) -> int:
    from irscope.analyze.limits import launch, occupancy
    from irscope.ir.resources import Resources
    from irscope.targets import get_target

    import platform
    import time
    import torch
    import triton
    drv = Driver()
    device = {k: drv.device_attribute(v) for k, v in CU_DEVICE.items()}
    version = ctypes.c_int()
    drv.cu.cuDriverGetVersion(ctypes.byref(version))
    versions = {"gpu": torch.cuda.get_device_name(), "cuda_driver_api": version.value, "torch": torch.__version__,
                "triton": triton.__version__, "python": platform.python_version(),
                "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    target = get_target(f"sm_{device['cc_major']}{device['cc_minor']}")
    table = {"shared_per_block": target.shared_per_block, "shared_per_sm": target.shared_per_sm,
             "regs_per_sm": target.regs_per_sm, "max_warps_per_sm": target.max_warps_per_sm}
    rows, first = [], None
    for label, meta, tmeta, cubin in configs(bundles):
        res = Resources.from_dict(meta["resources"])
        shared, warps = int(tmeta["shared"]), int(tmeta["num_warps"])
        mod, fn = drv.load(cubin, tmeta["name"])
        try:
            row = {"config": label, "warps": warps, "shared": shared,
                   "irscope": {"registers": res.registers, "stack": res.stack, "local": res.local, "shared": res.shared},
                   "driver": {k: drv.attribute(fn, CU_FUNC[k]) for k in ("registers", "local", "static_shared")}}
            accepted = shared <= 49152 or drv.allow_shared(fn, shared)
            blocks = drv.blocks_per_sm(fn, warps * 32, shared) if accepted else 0
            occ = occupancy(res, target)
            row["driver"].update(accepts_shared=accepted, blocks_per_sm=blocks)
            row["irscope"].update(launchable=launch(res, target).launchable, blocks_per_sm=occ.value if occ else None,
                                  limiter=occ.limiter if occ else None)
            if accepted and res.registers and (first is None or (warps, res.registers) < (first[2], first[1].registers)):
                first = (label, res, warps, tmeta["name"], cubin)  # the smallest block: shared memory limits most
        finally:
            drv.unload(mod)
        rows.append(row)
    sweep = None
    if first:
        mod, fn = drv.load(first[4], first[3])
        try:
            sweep = rule_sweep(drv, fn, first[2], first[1], target, device["max_shared_per_block_optin"], occupancy)
        finally:
            drv.unload(mod)
    agree = {
        "registers": sum(r["irscope"]["registers"] == r["driver"]["registers"] for r in rows),
        # The driver's local memory a thread is cuobjdump's STACK plus its LOCAL (arrays outside the stack)
        "stack + local": sum((r["irscope"]["stack"] or 0) + (r["irscope"]["local"] or 0) == r["driver"]["local"]
                             for r in rows),
        "shared accepted = irscope launchable": sum(r["irscope"]["launchable"] == r["driver"]["accepts_shared"]
                                                    for r in rows),
        "blocks_per_sm": sum(r["irscope"]["blocks_per_sm"] == r["driver"]["blocks_per_sm"] for r in rows),
    }
    result = {"versions": versions, "device": device, "target": target.name, "table": table, "configs": len(rows), "agree": agree,
              "rule_sweep": sweep, "rule_kernel": first[0] if first else None,
              "disagree": [r for r in rows if r["irscope"]["blocks_per_sm"] != r["driver"]["blocks_per_sm"]
                           or r["irscope"]["registers"] != r["driver"]["registers"]],
              "rows": rows}
    out.write_text(json.dumps(result, indent=1))
    print(versions)
    print("device", device)
    print("target table", target.name, table)
    print(f"{len(rows)} configs; agree: {agree}")
    if first:
        print(f"rule sweep on {first[0]}: {sweep['agree']} of {sweep['points']} shared sizes agree;"
              f" first disagreements: {sweep['disagree'][:5]}")
    return 0


def rule_sweep(drv: Driver, fn, warps: int, res, target, optin: int, occupancy) -> dict:
    """The driver's blocks per SM at every dynamic shared size (32-byte steps) against irscope's rule."""
    import dataclasses
    drv.allow_shared(fn, optin)
    points, agree, disagree, steps = 0, 0, [], []
    for shared in range(0, optin + 1, 32):
        theirs = drv.blocks_per_sm(fn, warps * 32, shared)
        occ = occupancy(dataclasses.replace(res, shared=shared), target)
        ours = occ.value if occ else None
        points += 1
        if not steps or steps[-1][1] != theirs:
            steps.append([shared, theirs])  # the driver's answer from this size on, up to the next step
        if theirs == ours:
            agree += 1
        else:
            disagree.append({"shared": shared, "driver": theirs, "irscope": ours})
    return {"points": points, "step": 32, "last": optin, "warps": warps, "registers": res.registers,
            "agree": agree, "disagree": disagree, "driver_steps": steps}


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    sys.exit(main(Path(sys.argv[1]), [Path(p) for p in sys.argv[2:]]))
