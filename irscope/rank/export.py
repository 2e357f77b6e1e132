"""A ranking as Triton autotune input: the top-k configs as `triton.Config`s, and an early_config_prune.

Triton's `@triton.autotune(..., prune_configs_by={"early_config_prune": f})` calls `f(configs, named_args,
**kwargs)` before timing and times only what it returns. `write_module` writes a small Python file a user
imports next to their kernel; it needs Triton only, not irscope, and holds the ranking as data.
"""
from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Iterable, Mapping

from ..store.output import write_output
from . import Ranked

OPTION_KEYS = ("num_warps", "num_stages")


def config_key(kwargs: dict, num_warps: int | None, num_stages: int | None, num_ctas: int | None = 1,
               maxnreg: int | None = None) -> str:
    """How a config is recognised, in the ranking and in the autotuner: its kwargs, warps, stages, CTAs and
    register cap."""
    return json.dumps({"kwargs": {k: kwargs[k] for k in sorted(kwargs)}, "num_warps": num_warps,
                       "num_stages": num_stages, "num_ctas": num_ctas, "maxnreg": maxnreg}, sort_keys=True)


def launch_options(meta: dict) -> dict:
    """The backend options a snapshot's compile was asked for (maxnreg, num_ctas, AMD's waves_per_eu...), as
    a triton.Config carries them: part of the config, so the export must keep them. Only JSON scalars: the
    snapshot's irscope.json is untrusted."""
    request = meta.get("request")
    asked = request.get("backend_options") if isinstance(request, dict) else None
    if not isinstance(asked, dict):
        return {}
    return {str(k): v for k, v in asked.items() if k not in OPTION_KEYS
            and (v is None or isinstance(v, (bool, int, float, str)))}


def top_configs(ranking: Iterable[Ranked], tuned: Iterable[str], k: int,
                options: Mapping[str, dict] | None = None) -> list[dict]:
    """The k fastest launchable configs, as {kwargs, num_warps, num_stages, num_ctas, maxnreg, predicted_ms,
    bound}; `tuned` names the constexprs that vary over the space (the rest are the kernel's own), `options`
    each label's backend options (launch_options): num_ctas and maxnreg are the Config's own, the rest
    (waves_per_eu...) go in its kwargs, as Triton takes them."""
    tuned = set(tuned)
    out = []
    for r in ranking:
        if not r.estimate.launchable or len(out) >= k:
            continue
        extra = dict((options or {}).get(r.facts.label) or {})
        fields = {"num_ctas": extra.pop("num_ctas", 1), "maxnreg": extra.pop("maxnreg", None)}
        kwargs = {n: v for n, v in r.facts.constexprs.items() if n in tuned}
        kwargs.update(extra)
        out.append({"kwargs": kwargs, "num_warps": r.facts.asked_warps, "num_stages": r.facts.num_stages, **fields,
                    "predicted_ms": round(r.estimate.ms, 6), "bound": r.estimate.bound, "label": r.facts.label})
    return out


HEADER = '"""Autotune configs ranked by irscope without a GPU'
MODULE = HEADER + ''' ({what}).

Use either
    @triton.autotune(configs=CONFIGS, key=[...])
or keep your own list and time only these:
    @triton.autotune(configs=your_configs, key=[...], prune_configs_by={{"early_config_prune": early_config_prune}})
"""
import json

import triton

RANKED = json.loads({data!r})

CONFIGS = [triton.Config(c["kwargs"], num_warps=c["num_warps"], num_stages=c["num_stages"],
                         num_ctas=c.get("num_ctas", 1), maxnreg=c.get("maxnreg")) for c in RANKED]


def _key(kwargs, num_warps, num_stages, num_ctas=1, maxnreg=None):
    # (a value the call passes as a NumPy or torch scalar is its number; anything else JSON lacks, its text)
    return json.dumps({{"kwargs": {{k: kwargs[k] for k in sorted(kwargs)}}, "num_warps": num_warps,
                       "num_stages": num_stages, "num_ctas": num_ctas, "maxnreg": maxnreg}}, sort_keys=True,
                      default=lambda v: v.item() if hasattr(v, "item") else str(v))


_KEEP = {{_key(c["kwargs"], c["num_warps"], c["num_stages"], c.get("num_ctas", 1), c.get("maxnreg")) for c in RANKED}}
_NAMES = {{n for c in RANKED for n in c["kwargs"]}}


def early_config_prune(configs, named_args, **kwargs):
    """The configs of `configs` among the {k} irscope kept (a constexpr a config does not set is the call's,
    as the launch passes it); all of them, with a warning, if none matches."""
    call = {{**kwargs, **named_args}}  # (a constexpr passed by name at the call comes in kwargs)

    def ranked(c):
        values = {{n: call[n] for n in _NAMES if n in call}}
        values.update({{n: v for n, v in c.kwargs.items() if n in _NAMES}})
        return _key(values, c.num_warps, c.num_stages, getattr(c, "num_ctas", 1), getattr(c, "maxnreg", None))

    kept = [c for c in configs if ranked(c) in _KEEP]
    if not kept:
        import warnings
        warnings.warn(f"irscope's ranking kept none of these {{len(configs)}} configs (none has the constexprs, "
                      f"warps and stages of the {k} it ranked first): all of them are timed", stacklevel=2)
    return kept or list(configs)
'''


def is_emitted(path: Path) -> bool:
    """Whether the file at `path` is a module `write_module` wrote (so replacing it loses nothing)."""
    try:  # (not waiting for a pipe's writer: only a regular file can be a module irscope wrote)
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return False
    with os.fdopen(fd, "rb") as f:
        return stat.S_ISREG(os.fstat(fd).st_mode) and f.read(len(HEADER)) == HEADER.encode()


def merged_top(rankings: Iterable[Iterable[Ranked]], tuned: Iterable[str], k: int,
               options: Mapping[str, dict] | None = None) -> list[dict]:
    """The top k of each ranking (one per problem size), each config once, in order of its best place: an
    early_config_prune cannot tell sizes apart unless the autotuner's key does, so it keeps them all."""
    tuned = list(tuned)
    places: dict[str, tuple[tuple[int, int], dict]] = {}
    for index, ranking in enumerate(rankings):
        for place, config in enumerate(top_configs(ranking, tuned, k, options)):
            key = config_key(config["kwargs"], config["num_warps"], config["num_stages"], config["num_ctas"],
                             config["maxnreg"])
            if key not in places or (place, index) < places[key][0]:
                places[key] = ((place, index), config if key not in places else places[key][1])
    return [config for _, config in sorted(places.values(), key=lambda p: p[0])]


def write_module(path: Path, configs: list[dict], what: str) -> None:
    """Write the importable module (atomically, through a temporary file of its own: a half-written
    module, or a user's file of the temporary's name, is never left behind or replaced)."""
    # `what` holds names from the space (a captured launch's argument names): in the docstring they must
    # stay text, whatever quotes or backslashes they hold, so that importing the module runs nothing of them
    what = "".join(c if c.isprintable() and c not in '"\\' else "?" for c in what)
    text = MODULE.format(what=what, data=json.dumps(configs), k=len(configs))
    write_output(path, text)
