"""Loaded at start-up by the test that runs irscope where Triton cannot find ptxas: it stands in for a
Triton installation whose wheel lacks NVIDIA's assembler (a ROCm build, a stripped wheel)."""
import triton.knobs

_from_path = triton.knobs.NvidiaTool.from_path


def _no_ptxas(path):
    return None if "ptxas" in str(path) else _from_path(path)


triton.knobs.NvidiaTool.from_path = staticmethod(_no_ptxas)
