"""The old import path of `irscope.spec.workload`, kept for kernel files that import from it."""
import sys

from .spec import workload as _workload

sys.modules[__name__] = _workload
