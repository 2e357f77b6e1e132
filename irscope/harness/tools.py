"""NVIDIA's binary tools shipped inside Triton's wheel (nvdisasm, cuobjdump), found without importing Triton.

Readers of snapshots use these to disassemble a cubin from a Triton cache folder; the harness uses them
for every NVIDIA compile.
"""
from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from ..errors import EnvironmentProblem

TOOL_ENV = {"nvdisasm": "TRITON_NVDISASM_PATH", "cuobjdump": "TRITON_CUOBJDUMP_PATH", "ptxas": "TRITON_PTXAS_PATH",
            "ptxas-blackwell": "TRITON_PTXAS_BLACKWELL_PATH"}


def find_tool(name: str) -> Path | None:
    """The path of one of NVIDIA's tools: Triton's env override, Triton's wheel, then PATH."""
    env = os.environ.get(TOOL_ENV.get(name, ""), "")
    if env and Path(env).is_file():
        return Path(env)
    spec = importlib.util.find_spec("triton")
    if spec is not None and spec.submodule_search_locations:
        for location in spec.submodule_search_locations:
            candidate = Path(location) / "backends" / "nvidia" / "bin" / name
            if candidate.is_file():
                return candidate
    found = shutil.which(name)
    return Path(found) if found else None


def require_tool(name: str) -> Path:
    path = find_tool(name)
    if path is None:
        raise EnvironmentProblem(f"NVIDIA's {name} was not found",
                                 "install triton (its wheel ships it) or set " + TOOL_ENV.get(name, "PATH"))
    return path


def _run_on_cubin(args: list[str], cubin: bytes) -> str:
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        proc = subprocess.run([*args, f.name], capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        raise EnvironmentProblem(f"{Path(args[0]).name} failed on the cubin: {proc.stderr.strip()[:300]}",
                                 "the cubin may be for an architecture this tool does not know")
    return proc.stdout


def disassemble(cubin: bytes) -> str:
    """SASS for a cubin: nvdisasm with line information (and the inlining chain) where the cubin carries it,
    else cuobjdump."""
    try:
        return _run_on_cubin([str(require_tool("nvdisasm")), "-c", "-gi"], cubin)
    except EnvironmentProblem:
        return _run_on_cubin([str(require_tool("cuobjdump")), "-sass"], cubin)


def resource_usage(cubin: bytes) -> str:
    """cuobjdump's resource-usage report for a cubin (REG, STACK, SHARED, LOCAL per function)."""
    return _run_on_cubin([str(require_tool("cuobjdump")), "-res-usage"], cubin)
