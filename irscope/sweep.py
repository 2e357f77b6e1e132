"""Many compiles at once: a sweep file (kernels x targets x an option grid), a content-keyed cache, and
the results as analyses.

    sweep = load_sweep("docs/examples/matmul-autotune.yaml")
    result = run_points(expand(sweep), sweep.out, workers=2)
    result.rows[0].analysis.launch.launchable, result.summary()

A point is fresh when its snapshot folder already holds a compile with the content key `harness.plan`
gives now (kernel source with the jit functions it calls, target, options, specialisation, Triton
version): re-running an unchanged sweep compiles nothing. The format is documented in docs/sweep.md.
"""
from __future__ import annotations

import difflib
import itertools
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import yaml

from .errors import IrscopeError, UsageError
from .spec import CompileOptions, parse_divisibility, parse_value, variant_name

TOP_KEYS = ("name", "description", "kernels", "targets", "config", "grid", "set", "out", "jobs", "timeout",
            "line_info", "columns")
KERNEL_KEYS = ("kernel", "config", "grid", "set")
RESERVED_AXES = ("num_warps", "num_stages", "divisibility", "config")


# -- the file -------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class KernelEntry:
    """One kernel of a sweep file, with the grids that apply to it."""

    ref: str  # `matmul` or an absolute `path/to/file.py:name`
    grids: tuple[tuple[tuple[str, tuple[Any, ...]], ...], ...]  # union of products; each axis -> values
    fixed: tuple[tuple[str, Any], ...]  # `set:` values, applied to every point
    config: str | None
    line: int  # where the entry is, for errors


@dataclass(frozen=True)
class Sweep:
    """A sweep file, checked and resolved."""

    path: Path
    name: str
    kernels: tuple[KernelEntry, ...]
    targets: tuple[str, ...]
    out: Path | None  # None: the default snapshot root
    jobs: int | None
    timeout: float
    line_info: bool
    columns: tuple[str, ...]
    lines: dict = field(default_factory=dict, compare=False)  # "targets" -> line, for errors later


@dataclass(frozen=True)
class SweepPoint:
    """One compile of a sweep: kernel, target and options, plus the grid values that chose it."""

    kernel: str
    target: str
    options: CompileOptions
    axes: tuple[tuple[str, Any], ...] = ()
    where: str = ""  # "file:line" of the entry it came from, for errors

    def pipeline_point(self):
        from .pipeline import Point
        return Point(self.kernel, self.target, self.options)


class _Map(dict):
    line = 0

    def __init__(self) -> None:
        super().__init__()
        self.lines: dict = {}


class _Seq(list):
    line = 0

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[int] = []


class _Loader(yaml.SafeLoader):
    """SafeLoader that remembers where every mapping value and list item is."""


def _construct_mapping(loader: _Loader, node: yaml.MappingNode) -> _Map:
    loader.flatten_mapping(node)
    out = _Map()
    out.line = node.start_mark.line + 1
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if not isinstance(key, (str, int, float, bool)):
            raise _FileError(key_node.start_mark.line + 1, "keys must be plain names")
        if key in out:
            raise _FileError(key_node.start_mark.line + 1, f"'{key}' is given twice")
        out[key] = loader.construct_object(value_node, deep=True)
        out.lines[key] = value_node.start_mark.line + 1
    return out


def _construct_sequence(loader: _Loader, node: yaml.SequenceNode) -> _Seq:
    out = _Seq()
    out.line = node.start_mark.line + 1
    for item in node.value:
        out.append(loader.construct_object(item, deep=True))
        out.lines.append(item.start_mark.line + 1)
    return out


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, _construct_sequence)


class _FileError(Exception):
    def __init__(self, line: int, message: str, hint: str | None = None):
        super().__init__(message)
        self.line, self.message, self.hint = line, message, hint


def load_sweep(path: Path | str) -> Sweep:
    """Read and check a sweep file. Any problem is a UsageError `FILE:LINE: message` with a hint."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as e:
        raise UsageError(f"cannot read sweep file '{path}': {e.strerror}", "give the path to a .yaml file") from None
    try:
        return _parse(path, text)
    except _FileError as e:
        raise UsageError(f"{path}:{e.line}: {e.message}", e.hint or "see docs/sweep.md for the format") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None) or getattr(e, "context_mark", None)
        line = f":{mark.line + 1}" if mark else ""
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise UsageError(f"{path}{line}: not valid YAML: {problem}", "check the indentation and the quoting "
                         "near that line") from None


def _parse(path: Path, text: str) -> Sweep:
    data = yaml.load(text, Loader=_Loader)  # noqa: S506 - _Loader is a SafeLoader
    if not isinstance(data, _Map):
        raise _FileError(1, "a sweep file is a mapping with at least `kernels`, `targets` and `grid`")
    _check_keys(data, TOP_KEYS, "sweep file")
    for key in ("kernels", "targets"):
        if key not in data:
            raise _FileError(data.line, f"missing `{key}:`", f"add e.g. `{key}: " +
                             ("[matmul]`" if key == "kernels" else "[sm_90a]`"))
    base = path.parent
    top_grids = _grids(data, "grid")
    top_fixed = _fixed(data, "set")
    top_config = _str(data, "config")
    kernels = []
    for item, line in _items(data, "kernels"):
        if isinstance(item, str):
            kernels.append(KernelEntry(_kernel_ref(item, base, line), top_grids, top_fixed, top_config, line))
        elif isinstance(item, _Map):
            _check_keys(item, KERNEL_KEYS, "kernel entry")
            if "kernel" not in item:
                raise _FileError(item.line, "a kernel entry needs `kernel:` (a built-in name or FILE.py:NAME)")
            ref = item["kernel"]
            if not isinstance(ref, str):
                raise _FileError(item.lines["kernel"], "`kernel:` takes a name such as matmul or FILE.py:NAME")
            grids = _grids(item, "grid") if "grid" in item else top_grids
            fixed = top_fixed + _fixed(item, "set")
            config = _str(item, "config") if "config" in item else top_config
            kernels.append(KernelEntry(_kernel_ref(ref, base, item.lines["kernel"]), grids, fixed, config, item.line))
        else:
            raise _FileError(line, "each kernel is a name (matmul, FILE.py:NAME) or a mapping with `kernel:`")
    if not kernels:
        raise _FileError(data.lines["kernels"], "`kernels:` is empty")
    targets = _targets(data)
    out = data.get("out")
    if out is not None and not isinstance(out, str):
        raise _FileError(data.lines["out"], "`out:` takes a folder path")
    jobs = data.get("jobs")
    if jobs is not None and (not isinstance(jobs, int) or isinstance(jobs, bool) or jobs < 1):
        raise _FileError(data.lines["jobs"], "`jobs:` takes a positive integer (compiles at once)")
    timeout = data.get("timeout", 300)
    if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or timeout <= 0:
        raise _FileError(data.lines["timeout"], "`timeout:` takes a positive number of seconds")
    line_info = data.get("line_info", True)
    if not isinstance(line_info, bool):
        raise _FileError(data.lines["line_info"], "`line_info:` takes true or false")
    columns = tuple(str(c) for c, _ in _items(data, "columns")) if "columns" in data else ()
    name = str(data.get("name") or path.stem)
    return Sweep(path, name, tuple(kernels), targets, (base / out) if out else None, jobs, float(timeout), line_info,
                 columns, {"targets": data.lines["targets"]})


def _check_keys(m: _Map, known: Sequence[str], what: str) -> None:
    for key in m:
        if key not in known:
            close = difflib.get_close_matches(str(key), known, n=1)
            hint = f"did you mean `{close[0]}`? " if close else ""
            raise _FileError(m.lines[key], f"unknown key `{key}` in the {what}",
                             hint + f"known keys: {', '.join(known)}")


def _items(m: _Map, key: str) -> list[tuple[Any, int]]:
    value = m[key]
    if isinstance(value, _Seq):
        return list(zip(value, value.lines))
    if isinstance(value, str):
        return [(v.strip(), m.lines[key]) for v in value.split(",") if v.strip()]
    raise _FileError(m.lines[key], f"`{key}:` takes a list")


def _str(m: _Map, key: str) -> str | None:
    value = m.get(key)
    if value is not None and not isinstance(value, str):
        raise _FileError(m.lines[key], f"`{key}:` takes a name")
    return value


def _kernel_ref(ref: str, base: Path, line: int) -> str:
    ref = ref.strip()
    path_part, sep, name = ref.rpartition(":")
    file_part = path_part if sep else ref
    if file_part.endswith(".py") or "/" in file_part:
        resolved = (base / file_part).resolve()
        if not resolved.is_file():
            raise _FileError(line, f"kernel file '{file_part}' does not exist (paths are relative to the sweep file)")
        return f"{resolved}:{name}" if sep else str(resolved)
    return ref


def _targets(data: _Map) -> tuple[str, ...]:
    from .targets import parse_targets
    line = data.lines["targets"]
    names = [str(v) for v, _ in _items(data, "targets")]
    try:
        return tuple(t.name for t in parse_targets(",".join(names)))
    except UsageError as e:
        raise _FileError(line, e.message, e.hint) from None


def _scalar_ok(v: Any) -> bool:
    return isinstance(v, (int, float, str, bool))


def _grids(m: _Map, key: str) -> tuple[tuple[tuple[str, tuple[Any, ...]], ...], ...]:
    if key not in m:
        return ((),)
    value = m[key]
    blocks = list(zip(value, value.lines)) if isinstance(value, _Seq) else [(value, m.lines[key])]
    grids = []
    for block, line in blocks:
        if not isinstance(block, _Map):
            raise _FileError(line, f"`{key}:` maps option names to lists of values (or is a list of such mappings)",
                             "e.g. grid: {num_warps: [4, 8], BLOCK_K: [32, 64]}")
        axes = []
        for name, values in block.items():
            name = str(name)
            _check_axis_name(name, block.lines[name])
            vals = list(values) if isinstance(values, _Seq) else [values]
            if not vals:
                raise _FileError(block.lines[name], f"axis `{name}` has no values")
            for v in vals:
                if not _scalar_ok(v):
                    raise _FileError(block.lines[name], f"axis `{name}`: values must be numbers, strings or booleans")
            axes.append((name, tuple(vals)))
        grids.append(tuple(axes))
    return tuple(grids)


def _fixed(m: _Map, key: str) -> tuple[tuple[str, Any], ...]:
    if key not in m:
        return ()
    value = m[key]
    if not isinstance(value, _Map):
        raise _FileError(m.lines[key], f"`{key}:` maps option names to one value each")
    out = []
    for name, v in value.items():
        _check_axis_name(str(name), value.lines[name])
        if not _scalar_ok(v):
            raise _FileError(value.lines[name], f"`{name}` takes one number, string or boolean")
        out.append((str(name), v))
    return tuple(out)


def _check_axis_name(name: str, line: int) -> None:
    import re
    if not re.match(r"^(?:arg\.|option\.)?[A-Za-z_][A-Za-z0-9_]*$", name):
        raise _FileError(line, f"bad option name `{name}`", "use num_warps, num_stages, divisibility, config, a "
                         "constexpr name, arg.NAME or option.NAME")


# -- points ---------------------------------------------------------------------------------------------

def expand(sweep: Sweep) -> list[SweepPoint]:
    """Every point of the sweep (kernels x targets x grid), without repeats, checked against each kernel."""
    from . import library
    points: list[SweepPoint] = []
    seen = set()
    for entry in sweep.kernels:
        where = f"{sweep.path}:{entry.line}"
        try:
            spec = library.load_kernel(entry.ref)
        except IrscopeError as e:
            raise UsageError(f"{where}: {e.message}", e.hint) from None
        _check_names(spec, entry, where)
        for grid in entry.grids:
            names = [n for n, _ in grid]
            for combo in itertools.product(*[vals for _, vals in grid]):
                axes = tuple(zip(names, combo))
                try:
                    options = options_for(dict(entry.fixed) | dict(axes), entry.config, sweep.line_info)
                except UsageError as e:
                    raise UsageError(f"{where}: {e.message}", e.hint) from None
                for target in sweep.targets:
                    point = SweepPoint(entry.ref, target, options, axes, where)
                    key = (point.kernel, point.target, point.options)
                    if key not in seen:
                        seen.add(key)
                        points.append(point)
    return points


def _check_names(spec, entry: KernelEntry, where: str) -> None:
    params = list(getattr(spec.fn, "params", ()))
    constexprs = [p.name for p in params if p.is_constexpr]
    args = [p.name for p in params if not p.is_constexpr]
    names = [n for n, _ in entry.fixed] + [n for grid in entry.grids for n, _ in grid]
    for name in names:
        if name in RESERVED_AXES or name.startswith("option."):
            continue
        known, bare = (args, name[4:]) if name.startswith("arg.") else (constexprs, name)
        if bare not in known:
            close = difflib.get_close_matches(bare, known, n=1)
            what = "argument" if name.startswith("arg.") else "constexpr"
            raise UsageError(f"{where}: {spec.fn_name} has no {what} `{bare}`",
                             (f"did you mean `{close[0]}`? " if close else "") +
                             f"{what}s: {', '.join(known) or '(none)'}; or num_warps, num_stages, divisibility, "
                             "config, option.NAME")


def options_for(values: dict[str, Any], config: str | None, line_info: bool = True) -> CompileOptions:
    """CompileOptions from sweep-file names: num_warps, num_stages, divisibility, config, arg.X, option.X,
    and constexpr names."""
    constexprs, args, backend = [], [], []
    num_warps = num_stages = None
    divisibility: tuple = ()
    for name, v in values.items():
        if name == "num_warps":
            num_warps = _positive_int(name, v)
        elif name == "num_stages":
            num_stages = _positive_int(name, v)
        elif name == "divisibility":
            divisibility = parse_divisibility([str(v)])
        elif name == "config":
            config = str(v)
        elif name.startswith("arg."):
            args.append((name[4:], parse_value(v) if isinstance(v, str) else v))
        elif name.startswith("option."):
            backend.append((name[7:], v))
        else:
            constexprs.append((name, v))
    return CompileOptions(config=config, num_warps=num_warps, num_stages=num_stages, constexprs=tuple(constexprs),
                          backend_options=tuple(backend), divisibility=divisibility, args=tuple(args),
                          line_info=line_info)


def _positive_int(name: str, v: Any) -> int:
    if not isinstance(v, int) or isinstance(v, bool) or v < 1:
        raise UsageError(f"`{name}` takes positive integers, not {v!r}", f"e.g. {name}: [2, 4, 8]")
    return v


# -- running --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class SweepRow:
    """What became of one point: compiled now or found fresh, its snapshot and its analysis."""

    point: SweepPoint
    status: str  # "ok", "failed" (the compiler rejected it), "crashed", "timeout"
    cached: bool
    path: Path | None
    label: str
    content_key: str
    analysis: Any = None  # irscope.analyze.Analysis when a snapshot exists
    times_ms: dict = field(default_factory=dict)
    error: dict | None = None

    @property
    def launchable(self) -> bool:
        return bool(self.analysis and self.analysis.launch.launchable)

    @property
    def triton_ms(self) -> float:
        """Time in Triton's own passes: the frontend and every lowering up to PTX / AMDGCN."""
        return sum(v for k, v in self.times_ms.items() if k in ("frontend", "ttir", "ttgir", "llir", "ptx", "amdgcn"))

    @property
    def assembler_ms(self) -> float:
        """ptxas (cubin) or the AMD assembler and linker (hsaco)."""
        return sum(v for k, v in self.times_ms.items() if k in ("cubin", "hsaco"))

    @property
    def disassembly_ms(self) -> float:
        return self.times_ms.get("sass", 0.0)


@dataclass(frozen=True)
class TargetSummary:
    target: str
    points: int
    ok: int
    failed: int  # compile failures, crashes and timeouts
    unlaunchable: int  # compiled, but over a per-block limit
    reasons: tuple[str, ...]  # the distinct kinds of launch problem, e.g. "shared memory"


@dataclass(frozen=True)
class SweepResult:
    rows: tuple[SweepRow, ...]
    compiled: int  # points compiled by this run
    cached: int  # points found fresh
    wall_seconds: float
    cpu_seconds: float  # this process and its children (compiles, ptxas, disassembly), this run
    out: Path

    def summary(self) -> tuple[TargetSummary, ...]:
        out = []
        for target in dict.fromkeys(r.point.target for r in self.rows):
            rows = [r for r in self.rows if r.point.target == target]
            ok = [r for r in rows if r.status == "ok"]
            bad = [r for r in ok if not r.launchable]
            kinds = sorted({_reason_kind(reason) for r in bad for reason in r.analysis.launch.reasons})
            out.append(TargetSummary(target, len(rows), len(ok), len(rows) - len(ok), len(bad), tuple(kinds)))
        return tuple(out)

    @property
    def recorded_ms(self) -> dict[str, float]:
        """Compile time recorded in the snapshots of every point (what the sweep costs cold), by part; the
        total is Triton's compile (its passes and ptxas) plus irscope's disassembly of the cubin."""
        return {"triton": sum(r.triton_ms for r in self.rows), "assembler": sum(r.assembler_ms for r in self.rows),
                "disassembly": sum(r.disassembly_ms for r in self.rows),
                "total": sum(r.times_ms.get("total", 0.0) + r.disassembly_ms for r in self.rows)}


def _reason_kind(reason: str) -> str:
    for kind in ("shared memory", "LDS", "threads", "registers", "tensor memory", "did not compile"):
        if kind in reason:
            return kind
    return reason


@dataclass(frozen=True)
class SweepProgress:
    phase: str  # "planning" or "compiling"
    done: int
    total: int
    running: tuple[str, ...] = ()  # labels of the compiles in flight


def run_points(points: Sequence[SweepPoint], out: Path, *, workers: int | None = None, timeout: float | None = 300.0,
               force: bool = False, on_progress: Callable[[SweepProgress], None] | None = None) -> SweepResult:
    """Compile the points whose snapshot is missing or stale (in parallel, crash-isolated), and analyse all."""
    from . import harness, library
    from .pipeline import compile_points
    from .store import META_FILE, check_writable, snapshot_dir
    from .targets import get_target

    out = Path(out)
    started, cpu0 = time.perf_counter(), _cpu()
    planned = []
    for i, p in enumerate(points):
        try:
            spec = library.load_kernel(p.kernel)
            target = get_target(p.target)
            key = harness.plan(spec, target, p.options)[0]
        except IrscopeError as e:
            where = f"{p.where}: " if p.where else ""
            raise type(e)(f"{where}{e.message}", e.hint) from None
        folder = snapshot_dir(out, spec.name, variant_name(spec, p.options), target.name)
        fresh = not force and _recorded_key(folder / META_FILE) == key
        planned.append((p, key, folder, fresh))
        if on_progress and (i + 1) % 25 == 0:
            on_progress(SweepProgress("planning", i + 1, len(points)))
    stale = [(p, key, folder) for p, key, folder, fresh in planned if not fresh]
    outcomes = {}
    if stale:
        for _, _, folder in stale:
            check_writable(folder, False)
        harness.warm_up(sorted({get_target(p.target) for p, _, _ in stale}, key=lambda t: t.name))

        def progress(pr) -> None:
            if on_progress:
                on_progress(SweepProgress("compiling", pr.done, pr.total,
                                          tuple(_point_label(pt) for pt, _ in pr.running)))

        results = compile_points([p.pipeline_point() for p, _, _ in stale], out, workers=workers, timeout=timeout,
                                 on_progress=progress)
        outcomes = {id(p): o for (p, _, _), o in zip(stale, results)}
    rows = [_row(p, key, folder, fresh, outcomes.get(id(p)), out) for p, key, folder, fresh in planned]
    return SweepResult(tuple(rows), len(stale), len(planned) - len(stale), time.perf_counter() - started,
                       _cpu() - cpu0, out)


def _row(p: SweepPoint, key: str, folder: Path, fresh: bool, outcome, out: Path) -> SweepRow:
    from .analyze import analyze
    from .store import load_snapshot

    label = folder.relative_to(out).as_posix()
    if outcome is not None and outcome.path is None:  # crashed or timed out: no folder was written
        return SweepRow(p, outcome.status, False, None, label, key, error=outcome.error)
    snap = load_snapshot(folder)
    status = "ok" if snap.ok else "failed"
    return SweepRow(p, status, fresh, folder, label, key, analyze(snap), dict(snap.meta.get("times_ms") or {}),
                    snap.error)


def _recorded_key(meta_file: Path) -> str | None:
    try:
        return json.loads(meta_file.read_text()).get("content_key")
    except (OSError, ValueError, AttributeError):
        return None


def _cpu() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _point_label(point) -> str:
    name = point.kernel.rpartition(":")[2] or Path(point.kernel).stem
    return f"{name} {point.target}"
