"""`irscope explain`: what the compiler decided for a kernel, and what would change it.

Modelled on LLVM's optimisation remarks (-Rpass, -Rpass-missed, -Rpass-analysis): every remark names the
decision, the pass that makes it, the evidence (counters before and after) and the snapshot folder it was
read from, so `irscope show` can open it.

    decisions.py  Snapshot -> Facts -> Decision (what this compile shows)
    whatif.py     which alternative compiles flip which decision, within a budget; running them (cached)
    remarks.py    Decision + what-if results -> Remark (passed / missed / analysis); explain()
"""
from .decisions import Decision, read_decisions
from .remarks import Explanation, Remark, explain
from .whatif import WhatIf, plan_whatifs

__all__ = ["Decision", "Explanation", "Remark", "WhatIf", "explain", "plan_whatifs", "read_decisions"]
