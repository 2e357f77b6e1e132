"""`irscope run --profile`: a checked run's launches under Triton's Proton profiler, and what irscope reads
back from Proton's output.

Proton writes a tree in hatchet's JSON literal format: a list whose first element is the ROOT frame and
whose second is the devices (`{"CUDA": {"0": {"arch", "num_sms", "clock_rate", ...}}}`). Every frame is
`{"frame": {"name", "type"}, "metrics": {...}, "children": [...]}`; a kernel's frame has `time (ns)`,
`count`, `device_id`, `device_type`; a scope's frame has the metrics it was entered with (`flops`,
`bytes`). irscope reads that file itself, with `json` (Proton's viewer needs llnl-hatchet and pandas),
and treats it as untrusted: bounded size and depth, every field type-checked, nothing run.

From the scope irscope opened around the workload's launches it derives the time per iteration (the sum
of the kernel records under the scope, over the iterations), each kernel's calls and mean time, and the
achieved TFLOP/s and GB/s of the scope's own flops and bytes, with their fractions of the ceilings
measured in the same run. torch and Triton are imported inside functions (through irscope.harness).
"""
from __future__ import annotations

import json
import math
import os
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Mapping

from ..errors import EnvironmentProblem

MAX_FILE_BYTES = 64 << 20  # a workload's tree is a few KiB; anything this big is not one irscope wrote
MAX_DEPTH = 256
MAX_NODES = 200_000
TARGET_MS = 200.0  # kernel time to profile per run: enough iterations to average, few enough to be quick
MIN_ITERATIONS, MAX_ITERATIONS = 3, 200
COUNT_KEY = "count"
_TIME_UNITS_MS = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}


class ProfileFormatError(ValueError):
    """A Proton output file that does not fit the hatchet format irscope reads."""


@dataclass(frozen=True)
class Frame:
    """One frame of Proton's tree: a scope, a kernel or ROOT."""

    name: str
    metrics: Mapping[str, Any]
    children: tuple["Frame", ...] = ()

    @property
    def is_kernel(self) -> bool:
        return self.time_ms is not None and _is_num(self.metrics.get(COUNT_KEY)) and "device_id" in self.metrics

    @property
    def time_ms(self) -> float | None:
        """The frame's `time (ns)` in ms (another unit Proton might write, `time (us)`, converted)."""
        for key, value in self.metrics.items():
            base, _, unit = key.partition("(")
            if base.strip().lower() == "time" and unit.rstrip(")").strip() in _TIME_UNITS_MS and _is_num(value):
                return float(value) * _TIME_UNITS_MS[unit.rstrip(")").strip()]
        return None

    def metric(self, name: str) -> float | None:
        """A numeric metric by name, exact or with a unit after it (`bytes` matches `bytes (B)`)."""
        if _is_num(self.metrics.get(name)):
            return float(self.metrics[name])
        return next((float(v) for k, v in self.metrics.items()
                     if k.partition("(")[0].strip().lower() == name and _is_num(v)), None)

    def walk(self):
        """Every frame below and including this one, depth first, without recursion."""
        stack = [self]
        while stack:
            f = stack.pop()
            yield f
            stack.extend(reversed(f.children))


@dataclass(frozen=True)
class ProtonTree:
    """A Proton output file read back: its ROOT frame and the devices it recorded."""

    root: Frame
    devices: Mapping[str, Mapping[str, Mapping[str, Any]]] = field(default_factory=dict)

    def scope(self, name: str) -> Frame | None:
        """The first frame called `name` (a scope irscope opened), or None."""
        return next((f for f in self.root.walk() if f.name == name and f is not self.root), None)


@dataclass(frozen=True)
class KernelTime:
    """One kernel as Proton recorded it under a scope: how often it ran and for how long."""

    name: str
    calls: int
    total_ms: float

    @property
    def mean_ms(self) -> float:
        return self.total_ms / self.calls if self.calls else 0.0


@dataclass(frozen=True)
class Profile:
    """What a Proton profile says about one run: time per iteration, its kernels, rates, fractions."""

    scope: str
    iterations: int
    ms: float  # kernel time per iteration: the kernels recorded under the scope, summed, over iterations
    kernels: tuple[KernelTime, ...]
    flops: float | None = None  # per iteration, from the scope's `flops` metric
    bytes: float | None = None  # per iteration, from the scope's `bytes` metric
    metrics_summed: bool | None = None  # whether Proton summed the scope's metrics over its entries
    tflops: float | None = None
    gbps: float | None = None
    copy_fraction: float | None = None
    matmul_fraction: float | None = None
    file: str = ""
    proton: str = ""  # the Triton release whose Proton wrote the file
    device: Mapping[str, Any] = field(default_factory=dict)  # Proton's record of the GPU (arch, SMs, clocks)

    def as_dict(self) -> dict:
        d = asdict(self)
        d["kernels"] = [{**asdict(k), "mean_ms": k.mean_ms} for k in self.kernels]
        return d


# --- reading Proton's file ------------------------------------------------------------------------------

def read_profile(path: Path) -> ProtonTree:
    """Proton's hatchet JSON file as a ProtonTree; ProfileFormatError when it is not one."""
    path = Path(path)
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise ProfileFormatError(f"{path} is {size:,} bytes, more than the {MAX_FILE_BYTES:,} irscope reads")
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise ProfileFormatError(f"{path} cannot be read: {e}") from None
    except UnicodeDecodeError:
        raise ProfileFormatError(f"{path} is not UTF-8 text: not Proton's hatchet JSON "
                                 "(a .hatchet_msgpack file? irscope asks Proton for JSON)") from None
    return parse_profile(text, str(path))


def parse_profile(text: str, where: str = "the profile") -> ProtonTree:
    """Hatchet JSON text (what Proton writes for data="tree") as a ProtonTree."""
    try:
        data = json.loads(text)
    except RecursionError:
        raise ProfileFormatError(f"{where} nests deeper than Python's JSON reader allows") from None
    except ValueError as e:
        raise ProfileFormatError(f"{where} is not JSON: {e}") from None
    if not isinstance(data, list) or not data:
        raise ProfileFormatError(f"{where} is not a hatchet list (ROOT frame, then devices)")
    root = _frame(data[0], where)
    devices = data[1] if len(data) > 1 else {}
    if not isinstance(devices, dict) or not all(isinstance(v, dict) and all(isinstance(d, dict) for d in v.values())
                                                for v in devices.values()):
        raise ProfileFormatError(f"{where}: its second element must map device types to devices")
    return ProtonTree(root, {str(k): {str(i): _plain(d) for i, d in v.items()} for k, v in devices.items()})


def _frame(raw: object, where: str) -> Frame:
    # Walked with an explicit stack, then built bottom-up: a hostile file cannot exhaust Python's recursion.
    pending = [(raw, 0, None)]  # (raw node, depth, the children list of its parent)
    order = []  # pre-order: (name, metrics, its own children list, its parent's)
    while pending:
        node, depth, parent = pending.pop()
        if len(order) >= MAX_NODES:
            raise ProfileFormatError(f"{where} has more than {MAX_NODES:,} frames")
        if depth > MAX_DEPTH:
            raise ProfileFormatError(f"{where} nests deeper than {MAX_DEPTH} frames")
        if not isinstance(node, dict):
            raise ProfileFormatError(f"{where}: a frame must be an object, not {type(node).__name__}")
        frame, metrics, children = node.get("frame"), node.get("metrics", {}), node.get("children", [])
        if not isinstance(frame, dict) or not isinstance(frame.get("name"), str):
            raise ProfileFormatError(f"{where}: a frame lacks frame.name")
        if not isinstance(metrics, dict) or not isinstance(children, list):
            raise ProfileFormatError(f"{where}: frame '{frame['name'][:60]}' has malformed metrics or children")
        bad = [k for k, v in metrics.items() if not _metric_value(v)]
        if bad:
            raise ProfileFormatError(f"{where}: metric '{str(bad[0])[:40]}' of frame '{frame['name'][:60]}' is "
                                     "not a number, a string or a list of numbers")
        kids: list = []
        order.append((frame["name"], metrics, kids, parent))
        for child in reversed(children):
            pending.append((child, depth + 1, kids))
    # Reversed pre-order reaches every frame after all of its descendants (siblings last to first).
    frame = None
    for name, metrics, kids, parent in reversed(order):
        frame = Frame(name, _plain(metrics), tuple(reversed(kids)))
        if parent is not None:
            parent.append(frame)
    return frame


def _metric_value(v: object) -> bool:
    if isinstance(v, bool):
        return False
    if isinstance(v, (int, float, str)):
        return True
    return isinstance(v, list) and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in v)


def _plain(d: Mapping) -> dict:
    return {str(k): v for k, v in d.items() if isinstance(v, (int, float, str, list)) and not isinstance(v, bool)}


# --- what a profile says --------------------------------------------------------------------------------

def summarise(tree: ProtonTree, scope: str, iterations: int, *, expected: Mapping[str, float] | None = None,
              ceilings=None, file: str = "", proton: str = "") -> Profile:
    """The figures of `scope`, entered `iterations` times, from a Proton tree.

    Proton sums a scope's metrics over its entries in the releases irscope knows (its viewer divides them
    by the summed time); `expected`, the flops and bytes irscope passed each entry, tells whether this
    file holds the sum or one entry's value, so the figures are per iteration either way."""
    frame = tree.scope(scope)
    if frame is None:
        raise ProfileFormatError(f"{file or 'the profile'} has no scope '{scope}': Proton recorded no launch there")
    kernels: dict[str, list] = {}
    for f in frame.walk():
        if f is not frame and f.is_kernel:
            k = kernels.setdefault(f.name, [0, 0.0])
            k[0] += int(_num(f.metrics[COUNT_KEY]))
            k[1] += f.time_ms or 0.0
    if not kernels:
        raise ProfileFormatError(f"{file or 'the profile'}: scope '{scope}' holds no kernel records (did CUPTI "
                                 "record the launches?)")
    times = tuple(KernelTime(n, c, t) for n, (c, t) in kernels.items())
    ms = sum(k.total_ms for k in times) / max(iterations, 1)
    summed = _summed(frame, expected or {}, iterations)
    per = iterations if summed else 1
    flops, nbytes = (v / per if v is not None else None for v in (frame.metric("flops"), frame.metric("bytes")))
    tflops = flops / ms / 1e9 if flops and ms > 0 else None
    gbps = nbytes / ms / 1e6 if nbytes and ms > 0 else None
    copy_f = gbps / ceilings.copy_gbps if gbps and ceilings is not None and ceilings.copy_gbps else None
    mm_f = tflops / ceilings.matmul_tflops if tflops and ceilings is not None and ceilings.matmul_tflops else None
    device = next((d for by_type in tree.devices.values() for d in by_type.values()), {})
    return Profile(scope=scope, iterations=iterations, ms=ms, kernels=times, flops=flops, bytes=nbytes,
                   metrics_summed=summed, tflops=tflops, gbps=gbps, copy_fraction=copy_f, matmul_fraction=mm_f,
                   file=file, proton=proton, device=dict(device))


def _summed(scope: Frame, expected: Mapping[str, float], iterations: int) -> bool | None:
    """Whether the scope's metrics are the sum over `iterations` entries (None: cannot tell, or no matter)."""
    if iterations <= 1:
        return None
    for key in ("flops", "bytes"):
        got, want = scope.metric(key), expected.get(key)
        if got is not None and want and got > 0:
            # Whichever of one entry's value and all entries' sum the file is closer to (in log space).
            ratio = math.log(got / want)
            return abs(ratio - math.log(iterations)) < abs(ratio)
    return None


def _is_num(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _num(v) -> float:
    return float(v) if _is_num(v) else 0.0


# --- running under Proton -------------------------------------------------------------------------------

def iterations_for(ms: float | None) -> int:
    """How many times to run a workload whose one run takes `ms` (do_bench's median; None: unknown)."""
    if not ms or ms <= 0:
        return 20
    return max(MIN_ITERATIONS, min(MAX_ITERATIONS, round(TARGET_MS / ms)))


def scope_name(prepared, source: str) -> str:
    return f"{prepared.spec.name}/{prepared.config}/{prepared.size_name}/{source}"


def file_stem(folder: Path, kernel: str, config: str, size_name: str, source: str, taken: set[str]) -> Path:
    """A file name (without Proton's ".hatchet") for one run's profile in `folder`, unique within `taken`
    and new in `folder`: Proton would overwrite a file already there, and a profile it failed to write
    would leave an earlier run's file to be read back as this run's."""
    # No dots: Proton appends ".hatchet" to the name it is given, and a dot would read as an extension.
    base = re.sub(r"[^A-Za-z0-9_-]+", "_", f"{kernel}-{config}-{size_name}-{source}")
    folder = Path(folder).resolve()
    name, n = base, 2
    while name in taken or any(os.path.lexists(folder / f) for f in (name, f"{name}.hatchet")) \
            or not _claim(folder / f"{name}.hatchet"):
        name, n = f"{base}-{n}", n + 1
    taken.add(name)
    return folder / name


def _claim(path: Path) -> bool:
    """Make `path` empty and ours, unless it exists (another irscope run took the name between the look and
    now: two runs profiling into one folder). Proton then writes over our empty file; an empty file after
    Proton is a profile it did not write. A folder that cannot be made claims nothing: Proton says why."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
    except FileExistsError:
        return False
    except OSError:
        pass
    return True


def profile_prepared(prepared, run, *, folder: Path, source: str, ceilings=None, ms: float | None = None,
                     taken: set[str] | None = None) -> Profile:
    """Run a checked run's launches under Proton (scope metrics: the workload's flops and least bytes), read
    Proton's file back, and derive the figures. `ms` (do_bench's time, when timed) sizes the iterations."""
    from ..harness import proton

    w = prepared.workload
    flops, nbytes = float(w.flops(prepared.size) or 0), float(w.bytes(prepared.size) or 0)
    metrics = {k: v for k, v in (("flops", flops), ("bytes", nbytes)) if v}
    iterations = iterations_for(ms)
    scope = scope_name(prepared, source)

    def launch() -> None:
        for call in prepared.calls:
            run(call)

    stem = file_stem(folder, prepared.spec.name, prepared.config, prepared.size_name, source,
                     taken if taken is not None else set())
    try:
        path = proton.profile_iterations(launch, stem=stem, scope=scope, metrics=metrics, iterations=iterations)
    except BaseException:
        claimed = stem.with_name(stem.name + ".hatchet")
        if claimed.is_file() and not claimed.stat().st_size:  # no empty file of ours left behind
            claimed.unlink(missing_ok=True)
        raise
    try:
        tree = read_profile(path)
        return summarise(tree, scope, iterations, expected=metrics, ceilings=ceilings, file=str(path),
                         proton=proton.proton_version())
    except ProfileFormatError as e:
        raise EnvironmentProblem(f"Proton's output could not be read: {e}",
                                 "keep the file and report it: irscope reads Proton's hatchet JSON") from None
