"""`irscope explain`: what the compiler decided for a kernel, and what would change it.

Modelled on LLVM's optimisation remarks (-Rpass, -Rpass-missed, -Rpass-analysis): every remark names the
decision, the pass that makes it, the evidence (counters before and after) and the snapshot folder it was
read from, so `irscope show` can open it.

    facts.py      Snapshot -> Facts, and the Decision type
    decisions.py  Facts -> Decision, one reader a topic (what this compile shows)
    gluon.py      a Gluon kernel's decisions, made by its source rather than a pass
    whatif.py     which alternative compiles flip which decision, within a budget; running them (cached)
    remarks.py    Decision + what-if results -> Remark (passed / missed / analysis); explain()
"""
from .decisions import read_decisions
from .facts import Decision
from .remarks import Explanation, Remark, explain
from .whatif import WhatIf, plan_whatifs

__all__ = ["Decision", "Explanation", "Remark", "WhatIf", "explain", "plan_whatifs", "read_decisions"]
