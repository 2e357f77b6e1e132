"""The GPU times recorded beside a space's snapshots (`runs.json`, written by `irscope run`), matched to a
ranking's configs at one size: what `irscope rank --measured` scores its ranking against.

A config's time is the latest run recorded at exactly that size on the chosen GPU: do_bench's median
when the run was checked and timed, None when it failed (a launch the GPU refused, a wrong result).
No torch, no Triton: the records are data, read through the store's schema check.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterable, Mapping

from ..errors import SnapshotError, UsageError
from ..store import results


@dataclass(frozen=True)
class Measured:
    """One GPU's recorded times for a space's configs at one size."""

    device: str  # the GPU the times were recorded on, as torch names it
    times: Mapping[str, float | None]  # snapshot label -> ms; None: the run failed there
    errors: Mapping[str, str] = field(default_factory=dict)  # label -> why its run failed
    sources: Mapping[str, int] = field(default_factory=dict)  # "snapshot" (its cubin) / "jit" -> configs

    @property
    def timed(self) -> int:
        return sum(1 for v in self.times.values() if v is not None)


def measured_at(snapshots: Iterable, size: Mapping[str, int], gpu: str | None = None) -> Measured | None:
    """The latest run of each snapshot at `size`, on one GPU: the one whose name holds `gpu` (a chip's
    short name, `h200`) when runs from several GPUs were recorded. None when no run matches the size."""
    want = dict(size)
    found: dict[str, dict[str, dict]] = {}  # device -> label -> latest record
    for snap in snapshots:
        for record in _runs(snap):
            if _size(record) != want or not (_failed(record) or _ms(record)):
                continue  # another size, or a run checked and not timed (`--check`): it says nothing of time
            found.setdefault(_device(record), {})[snap.label] = record  # oldest first: the latest wins
    if not found:
        return None
    devices = sorted(found)
    if len(devices) > 1:
        chosen = [d for d in devices if gpu and names_chip(d, gpu)]
        if len(chosen) != 1:
            raise UsageError(f"runs at this size were recorded on {len(devices)} GPUs ({', '.join(devices)}), and "
                             f"{'none' if not chosen else 'more than one'} of them is the modelled chip "
                             f"({gpu or '?'})", "pass --gpu for the chip the runs were made on, "
                                                "or move the other GPU's records aside (runs.json)")
        devices = chosen
    device = devices[0]
    times, errors, sources = {}, {}, {}
    for label, record in found[device].items():
        if _failed(record):
            times[label] = None
            # untrusted text: its first line, without control characters
            first = (str(record.get("error") or "its results were wrong").splitlines() or [""])[0]
            errors[label] = "".join(c for c in first if c.isprintable())[:300]
        else:
            times[label] = _ms(record)
        source = str(record.get("source") or "?")
        sources[source] = sources.get(source, 0) + 1
    return Measured(device, times, errors, sources)


def names_chip(device: str, chip: str) -> bool:
    """Whether a GPU's name as torch gives it ('NVIDIA H200', 'NVIDIA GeForce RTX 5090') is of the chip
    irscope calls `chip` ('h200', 'rtx5090')."""
    return chip.lower() in re.sub(r"[^a-z0-9]", "", device.lower())


def recorded_devices(snapshots: Iterable) -> set[str]:
    """Every GPU a run of these snapshots was recorded on."""
    return {_device(r) for snap in snapshots for r in _runs(snap)}


def damaged_runs(snapshots: Iterable) -> list[str]:
    """Why each snapshot's runs.json cannot be read (its runs then count as never made)."""
    out = []
    for snap in snapshots:
        try:
            results.runs(snap)
        except SnapshotError as e:
            out.append(e.message)
    return out


def _runs(snap) -> list[dict]:
    """A snapshot's runs; none when its runs.json is damaged (damaged_runs says so): one bad record file
    must not stop the scoring of a whole space."""
    try:
        return results.runs(snap)
    except SnapshotError:
        return []


def _device(record: Mapping) -> str:
    """The GPU a run was recorded on, as torch names it."""
    return str((record.get("gpu") or {}).get("device") or record.get("device") or "?")


def _size(record: Mapping) -> dict | None:
    size = record.get("size")  # the store's schema: an object of integers, or absent
    return dict(size) if isinstance(size, Mapping) else None


def _failed(record: Mapping) -> bool:
    return record.get("ok") is False or bool(record.get("error"))


def _ms(record: Mapping) -> float | None:
    ms = ((record.get("bench") or {}).get("kernel") or {}).get("ms")  # positive and finite, by the schema
    return float(ms) if ms is not None else None


def no_runs_error(size_name: str, kernel: str, root: str, menu: bool) -> UsageError:
    """What `--measured` says when no config of the space has a timed (or failed) run recorded at a size
    (`kernel` as the user typed it: a built-in's name, or FILE.py:NAME)."""
    import shlex
    how = (f"irscope run {shlex.quote(kernel)} --config all --size {shlex.quote(size_name)} --out {shlex.quote(root)}"
           if menu else
           f"irscope run --snapshot DIR... --size {size_name}, one DIR a config of the space (under {root})")
    return UsageError(f"no GPU time of these configs is recorded at size {size_name} (runs.json beside each snapshot)",
                      f"time them on a GPU first ({how}), then rank again with --measured (docs/rank.md)")
