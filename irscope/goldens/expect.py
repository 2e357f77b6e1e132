"""Expectations about a snapshot that survive compiler upgrades: properties rather than exact text.

    Expectation(snap).uses("wgmma.mma_async").no_spills().shared_below(100_000).launchable()
    Expectation(snap).filecheck("ttgir", "CHECK: ttg.async_copy_global_to_local")

Each method raises AssertionError with a message naming the snapshot, and returns the expectation so
calls chain. Each sets `__tracebackhide__`, so pytest shows a failed expectation as the test's own line. CHECK patterns run through the `filecheck` package (a Python FileCheck), so every LLVM
FileCheck directive it supports works: CHECK, CHECK-NEXT, CHECK-NOT, CHECK-SAME, CHECK-DAG, CHECK-COUNT-n,
CHECK-LABEL, {{regex}} and [[VAR:...]] captures.
"""
from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from pathlib import Path

from ..errors import EnvironmentProblem
from ..render.controls import escaped
from ..store.snapshot import Snapshot

# A FileCheck run past this is killed and the expectation fails (a pattern can backtrack without end).
FILECHECK_TIMEOUT_S = 120.0


class Expectation:
    """Chainable assertions about one snapshot."""

    def __init__(self, snapshot: Snapshot):
        self.snap = snapshot

    def _stage(self, stage: str | None) -> str:
        __tracebackhide__ = True
        if stage is not None:
            return stage
        target = self.snap.target
        return target.asm_stage if target else ("ptx" if "ptx" in self.snap.stages else "amdgcn")

    def _fail(self, what: str) -> None:
        __tracebackhide__ = True
        raise AssertionError(escaped(f"{self.snap.label}: {what}"))

    def count(self, op: str, stage: str | None = None) -> int:
        """How many lines of a stage hold the instruction or op `op` (a mnemonic prefix: `wgmma`, `mma.sync`,
        `cp.async`, `v_mfma`, `ttg.local_alloc`)."""
        __tracebackhide__ = True
        stage = self._stage(stage)
        pattern = re.compile(r"(?:^|[\s@!}{=])" + re.escape(op) + r"(?=[\s.,;_(]|$)", re.M)
        return len(pattern.findall(self.snap.read(stage)))

    def uses(self, op: str, stage: str | None = None, at_least: int = 1) -> "Expectation":
        __tracebackhide__ = True
        n = self.count(op, stage)
        if n < at_least:
            self._fail(f"expected {op} in {self._stage(stage)} at least {at_least} time(s), found {n}")
        return self

    def lacks(self, op: str, stage: str | None = None) -> "Expectation":
        __tracebackhide__ = True
        n = self.count(op, stage)
        if n:
            self._fail(f"expected no {op} in {self._stage(stage)}, found {n}")
        return self

    def counter(self, name: str, *, at_least: int | None = None, at_most: int | None = None,
                exactly: int | None = None) -> "Expectation":
        """A counter of `irscope stats` (see docs/analyzers.md), e.g. `ptx.wgmma`, `ttgir.async_copy`."""
        __tracebackhide__ = True
        from ..analyze import analyze
        counters = analyze(self.snap).counters
        value = counters.get(name, 0)
        if name not in counters and not any(k.startswith(name.split(".")[0] + ".") for k in counters):
            self._fail(f"no counter '{name}' (counters: {', '.join(sorted(counters)[:12])} ...)")
        if exactly is not None and value != exactly:
            self._fail(f"expected {name} == {exactly}, got {value}")
        if at_least is not None and value < at_least:
            self._fail(f"expected {name} >= {at_least}, got {value}")
        if at_most is not None and value > at_most:
            self._fail(f"expected {name} <= {at_most}, got {value}")
        return self

    def no_spills(self) -> "Expectation":
        __tracebackhide__ = True
        r = self.snap.resources
        spills = (r.spill_stores or 0) + (r.spill_loads or 0)
        if spills:
            self._fail(f"expected no spills, got {r.spill_stores} B stored / {r.spill_loads} B loaded")
        return self

    def shared_below(self, limit: int) -> "Expectation":
        __tracebackhide__ = True
        shared = self.snap.resources.shared
        if shared is None or shared >= limit:
            self._fail(f"expected shared memory under {limit:,} bytes, got {shared}")
        return self

    def registers_at_most(self, limit: int) -> "Expectation":
        __tracebackhide__ = True
        regs = self.snap.resources.registers
        if regs is None or regs > limit:
            self._fail(f"expected at most {limit} registers per thread, got {regs}")
        return self

    def launchable(self) -> "Expectation":
        __tracebackhide__ = True
        from ..analyze import analyze
        launch = analyze(self.snap).launch
        if not launch.launchable:
            self._fail("cannot launch: " + "; ".join(launch.reasons))
        return self

    def filecheck(self, stage: str, checks: str) -> "Expectation":
        """Run FileCheck-style CHECK lines over a stage's text."""
        __tracebackhide__ = True
        text = self.snap.read(stage)
        with tempfile.TemporaryDirectory() as tmp:
            check_file = Path(tmp) / "checks"
            check_file.write_text(checks)
            input_file = Path(tmp) / f"{self.snap.fn_name}.{stage}"
            input_file.write_text(text)
            try:
                proc = subprocess.run([sys.executable, "-m", "filecheck", str(check_file), "--input-file",
                                       str(input_file)], capture_output=True, text=True,
                                      timeout=FILECHECK_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                proc = None
            except OSError as e:
                raise EnvironmentProblem(f"cannot run filecheck: {e}", "pip install filecheck") from None
        if proc is None:
            self._fail(f"FileCheck over {stage} did not finish in {FILECHECK_TIMEOUT_S:g} s (was killed): "
                       "a CHECK pattern that backtracks on a long line?")
        if "No module named filecheck" in proc.stderr:
            raise EnvironmentProblem("the filecheck package is not installed", "pip install filecheck")
        if proc.returncode != 0:
            self._fail(f"FileCheck over {stage} failed:\n{(proc.stdout + proc.stderr).strip()[:3000]}")
        return self
