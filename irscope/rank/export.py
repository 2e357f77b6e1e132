"""A ranking as Triton autotune input: the top-k configs as `triton.Config`s, and an early_config_prune.

Triton's `@triton.autotune(..., prune_configs_by={"early_config_prune": f})` calls `f(configs, named_args,
**kwargs)` before timing and times only what it returns. `write_module` writes a small Python file a user
imports next to their kernel; it needs Triton only, not irscope, and holds the ranking as data.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable

from . import Ranked

OPTION_KEYS = ("num_warps", "num_stages")


def config_key(kwargs: dict, num_warps: int | None, num_stages: int | None) -> str:
    """How a config is recognised, in the ranking and in the autotuner: its kwargs, warps and stages."""
    return json.dumps({"kwargs": {k: kwargs[k] for k in sorted(kwargs)}, "num_warps": num_warps,
                       "num_stages": num_stages}, sort_keys=True)


def top_configs(ranking: Iterable[Ranked], tuned: Iterable[str], k: int) -> list[dict]:
    """The k fastest launchable configs, as {kwargs, num_warps, num_stages, predicted_ms, bound}; `tuned`
    names the constexprs that vary over the space (the rest are the kernel's own)."""
    tuned = set(tuned)
    out = []
    for r in ranking:
        if not r.estimate.launchable or len(out) >= k:
            continue
        kwargs = {n: v for n, v in r.facts.constexprs.items() if n in tuned}
        out.append({"kwargs": kwargs, "num_warps": r.facts.asked_warps, "num_stages": r.facts.num_stages,
                    "predicted_ms": round(r.estimate.ms, 6), "bound": r.estimate.bound, "label": r.facts.label})
    return out


MODULE = '''"""Autotune configs ranked by irscope without a GPU ({what}).

Use either
    @triton.autotune(configs=CONFIGS, key=[...])
or keep your own list and time only these:
    @triton.autotune(configs=your_configs, key=[...], prune_configs_by={{"early_config_prune": early_config_prune}})
"""
import json

import triton

RANKED = json.loads({data!r})

CONFIGS = [triton.Config(c["kwargs"], num_warps=c["num_warps"], num_stages=c["num_stages"]) for c in RANKED]


def _key(kwargs, num_warps, num_stages):
    return json.dumps({{"kwargs": {{k: kwargs[k] for k in sorted(kwargs)}}, "num_warps": num_warps,
                       "num_stages": num_stages}}, sort_keys=True)


_KEEP = {{_key(c["kwargs"], c["num_warps"], c["num_stages"]) for c in RANKED}}


def early_config_prune(configs, named_args, **kwargs):
    """The configs of `configs` that irscope ranked in its top {k}; all of them if none matches."""
    names = set(RANKED[0]["kwargs"]) if RANKED else set()
    kept = [c for c in configs
            if _key({{n: v for n, v in c.kwargs.items() if n in names}}, c.num_warps, c.num_stages) in _KEEP]
    return kept or list(configs)
'''


def write_module(path: Path, configs: list[dict], what: str) -> None:
    """Write the importable module (atomically: a half-written file is never left)."""
    text = MODULE.format(what=what, data=json.dumps(configs), k=len(configs))
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    tmp.replace(path)
