"""Every built-in kernel and every config compiles for all seven targets, or its spec says why not.

A config that a target cannot take (the compile fails, or it needs more shared memory than a block may
have there, so it would never launch) must be listed in that config's `not_for` with the reason; the
test checks exactly that list, so a limit is neither hidden nor claimed when it no longer holds.
"""
import pytest

from irscope.spec import library
from irscope.analyze import launch_resources
from irscope.harness.batch import Point
from irscope.spec.kernel import CompileOptions
from irscope.store.snapshot import load_snapshot
from irscope.targets import CORE, get_target

pytestmark = pytest.mark.slow  # compiles every built-in kernel for all seven targets (docs/testing.md)

SPECS = library.builtin_specs()
POINTS = [(s.name, c.name) for s in SPECS for c in s.configs]


@pytest.fixture(scope="module")
def outcomes(compile_cache):
    """(kernel, config, target) -> (Outcome, Snapshot or None), compiled two at a time (through the
    session's compile cache: a default config is the point `compiled` and others compile too)."""
    points = [Point(k, t, CompileOptions(config=c)) for k, c in POINTS for t in CORE]
    done = compile_cache.outcomes(points, workers=2, timeout=600)
    # Keyed by the point asked for: a reused compile may spell the default config as None.
    return {(p.kernel, p.options.config, p.target): (o, load_snapshot(o.path) if o.path else None)
            for p, o in zip(points, done)}


def _fits(outcome, snap, target) -> tuple[bool, str]:
    if not outcome.ok:
        return False, f"{outcome.status} at {(outcome.error or {}).get('stage')}: {(outcome.error or {}).get('message', '')[:200]}"
    shared = launch_resources(snap).shared or 0  # what the launch asks for (AMD: Triton's dynamic LDS)
    if shared > target.shared_per_block:
        return False, f"shared memory {shared} B over the per-block limit {target.shared_per_block} B"
    return True, ""


@pytest.mark.parametrize("kernel,config", POINTS, ids=[f"{k}-{c}" for k, c in POINTS])
def test_config_compiles_for_every_target_it_is_meant_for(outcomes, kernel, config):
    cfg = library.load_kernel(kernel).config(config)
    unknown = set(cfg.not_for) - set(CORE)
    assert not unknown, f"not_for names targets outside the seven: {unknown}"
    problems = []
    for name in CORE:
        outcome, snap = outcomes[(kernel, config, name)]
        fits, why = _fits(outcome, snap, get_target(name))
        if name in cfg.not_for:
            assert cfg.not_for[name].strip(), f"{kernel} {config}: not_for[{name}] gives no reason"
            if fits:
                problems.append(f"{name}: listed in not_for ({cfg.not_for[name]}) but compiles and fits")
        elif not fits:
            problems.append(f"{name}: {why} (list it in the config's not_for, with the reason, or fix it)")
    assert not problems, f"{kernel} {config}:\n" + "\n".join(problems)
