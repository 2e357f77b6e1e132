"""The sweep file: YAML read with the line of every value, checked, and resolved into value types.

Errors are UsageErrors reading `FILE:LINE: what is wrong`, with a hint; the format is in docs/sweep.md.
"""
from __future__ import annotations

import difflib
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import yaml

from ..errors import UsageError
from ..spec.kernel import CompileOptions, parse_divisibility, parse_value
from ..store.schema import read_given

TOP_KEYS = ("name", "description", "kernels", "targets", "config", "grid", "set", "out", "jobs", "timeout",
            "line_info", "columns", "max_points")
# A sweep of more points than this is refused unless `max_points:` (or --max-points) raises it: a typo in a
# grid (one axis too many) planned 14,000 points and started about 20 hours of compiles.
DEFAULT_MAX_POINTS = 2000
# A sweep file is a few hundred bytes; this reads a generous one and refuses a device or a log file.
MAX_FILE_BYTES = 1024 * 1024
KERNEL_KEYS = ("kernel", "config", "grid", "set")
RESERVED_AXES = ("num_warps", "num_stages", "divisibility", "config")


@dataclass(frozen=True)
class KernelEntry:
    """One kernel of a sweep file, with the grids that apply to it."""

    ref: str  # `matmul` or an absolute `path/to/file.py:name`
    grids: tuple[tuple[tuple[str, tuple[Any, ...]], ...], ...]  # union of products; each axis -> values
    fixed: tuple[tuple[str, Any], ...]  # `set:` values, applied to every point
    config: str | None
    line: int  # where the entry is, for errors
    axis_lines: tuple[tuple[str, int], ...] = ()  # option name -> the line that sets it
    value_lines: tuple[tuple[str, Any, int], ...] = ()  # (option name, value, the line that gives it)
    config_line: int = 0  # the line of its `config:`, when one gives it

    def line_of(self, name: str, value: Any) -> int:
        """The line of the file that gives `name` the value `value` (else the entry's line)."""
        for n, v, line in self.value_lines:
            if n == name and type(v) is type(value) and v == value:
                return line
        return dict(self.axis_lines).get(name, self.line)


@dataclass(frozen=True)
class Sweep:
    """A sweep file, checked and resolved (kernel paths made absolute)."""

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
    max_points: int = DEFAULT_MAX_POINTS

class _Map(dict):
    line = 0

    def __init__(self) -> None:
        super().__init__()
        self.lines: dict = {}  # key -> line of its value
        self.key_lines: dict = {}  # key -> line of the key itself


    @staticmethod
    def without(m: "_Map", drop) -> "_Map":
        out = _Map()
        out.line, out.lines, out.key_lines = m.line, m.lines, m.key_lines
        out.update({k: v for k, v in m.items() if not drop(k)})
        return out


class _Seq(list):
    line = 0

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[int] = []


class _Loader(yaml.SafeLoader):
    """SafeLoader that remembers where every mapping value and list item is."""

    def __init__(self, stream) -> None:
        super().__init__(stream)
        self.pairs: dict = {}  # id(mapping node) -> its pairs, merges applied (_pairs)


_MERGE = "tag:yaml.org,2002:merge"


def _construct_mapping(loader: _Loader, node: yaml.MappingNode) -> _Map:
    out = _Map()
    out.line = node.start_mark.line + 1
    for key, (key_node, value_node) in _pairs(loader, node).items():
        out[key] = loader.construct_object(value_node, deep=True)
        out.lines[key] = value_node.start_mark.line + 1
        out.key_lines[key] = key_node.start_mark.line + 1
    return out


def _pairs(loader: _Loader, node: yaml.MappingNode) -> dict:
    """key -> (key node, value node) of a mapping with its merges (`<<: *base`, `<<: [*a, *b]`) applied as
    YAML says: the mapping's own keys win, and among merged mappings the earlier one. Done here, not by
    PyYAML's flatten_mapping, whose order for a list of merges differs between its releases. A key the
    mapping itself gives twice is refused. Each mapping's pairs are worked out once a load: ten lines of
    `<<: [*a, *a, ...]` merging the line above merged 10^9 mappings and held the command forever."""
    if id(node) in loader.pairs:
        return loader.pairs[id(node)]
    pairs: dict = {}
    for key_node, value_node in node.value:
        if key_node.tag != _MERGE:
            continue
        subs = [value_node] if isinstance(value_node, yaml.MappingNode) else \
            value_node.value if isinstance(value_node, yaml.SequenceNode) else None
        if subs is None or not all(isinstance(sub, yaml.MappingNode) for sub in subs):
            raise _FileError(value_node.start_mark.line + 1, "`<<:` merges a mapping or a list of mappings")
        for sub in subs:
            for key, pair in _pairs(loader, sub).items():
                pairs.setdefault(key, pair)
    given: set = set()
    for key_node, value_node in node.value:
        if key_node.tag == _MERGE:
            continue
        key = loader.construct_object(key_node, deep=True)
        if not isinstance(key, (str, int, float, bool)):
            raise _FileError(key_node.start_mark.line + 1, "keys must be plain names")
        if key in given:
            raise _FileError(key_node.start_mark.line + 1, f"'{key}' is given twice")
        given.add(key)
        pairs[key] = (key_node, value_node)
    loader.pairs[id(node)] = pairs
    return pairs


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
        data, mode = read_given(path, MAX_FILE_BYTES)  # /dev/zero or a log given by mistake: never read it all
        if not data and stat.S_ISFIFO(mode):
            raise UsageError(f"sweep file '{path}' is a named pipe that nothing writes to",
                             "give the path to a .yaml file")
        if len(data) > MAX_FILE_BYTES:
            raise UsageError(f"sweep file '{path}' is over {MAX_FILE_BYTES // 1024} KiB: not a sweep file",
                             "a sweep file is a short YAML text (docs/sweep.md); check the path")
        text = data.decode("utf-8")
    except OSError as e:
        raise UsageError(f"cannot read sweep file '{path}': {e.strerror}", "give the path to a .yaml file") from None
    except UnicodeDecodeError as e:
        line = data[:e.start].count(b"\n") + 1
        raise UsageError(f"{path}:{line}: not a text file (byte {e.object[e.start]:#04x} is not UTF-8)",
                         "a sweep file is YAML text; see docs/sweep.md for the format") from None
    if "\x00" in text:
        raise UsageError(f"{path}:{text[:text.index(chr(0))].count(chr(10)) + 1}: not a text file (it holds NUL bytes)",
                         "a sweep file is YAML text; see docs/sweep.md for the format")
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
    except RecursionError:  # PyYAML composes a nested value recursively: `[[[[...]]]]` 50,000 deep
        raise UsageError(f"{path}: not a sweep file: its values are nested thousands of levels deep",
                         "a sweep file nests a few levels (docs/sweep.md); check the brackets") from None


def _parse(path: Path, text: str) -> Sweep:
    data = yaml.load(text, Loader=_Loader)  # noqa: S506 - _Loader is a SafeLoader
    if not isinstance(data, _Map):
        raise _FileError(1, "a sweep file is a mapping with at least `kernels` and `targets` (and, to vary "
                         "options, `grid`)")
    # `x-` keys are the file's own (a compose file's convention): a place for YAML anchors to share.
    _check_keys(_Map.without(data, lambda k: isinstance(k, str) and k.startswith("x-")), TOP_KEYS, "sweep file")
    for key in ("kernels", "targets"):
        if key not in data:
            raise _FileError(data.line, f"missing `{key}:`", f"add e.g. `{key}: " +
                             ("[matmul]`" if key == "kernels" else "[sm_90a]`"))
    base = path.parent
    top_grids = _grids(data, "grid")
    top_fixed = _fixed(data, "set")
    top_config = _str(data, "config")
    top_config_line = data.lines["config"] if "config" in data else 0
    kernels = []
    for item, line in _items(data, "kernels"):
        if isinstance(item, str):
            kernels.append(KernelEntry(_kernel_ref(item, base, line), top_grids, top_fixed, top_config, line,
                                       _axis_lines(data), _value_lines(data), top_config_line))
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
            kernels.append(KernelEntry(_kernel_ref(ref, base, item.lines["kernel"]), grids, fixed, config, item.line,
                                       _axis_lines(data) + _axis_lines(item), _value_lines(item) + _value_lines(data),
                                       item.lines["config"] if "config" in item else top_config_line))
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
    if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or not 0 < timeout < float("inf"):
        raise _FileError(data.lines["timeout"], "`timeout:` takes a positive number of seconds",
                         "e.g. timeout: 600 (.nan and .inf are not numbers of seconds)")
    max_points = data.get("max_points", DEFAULT_MAX_POINTS)
    if not isinstance(max_points, int) or isinstance(max_points, bool) or max_points < 1:
        raise _FileError(data.lines["max_points"], "`max_points:` takes a positive integer (the most points a run "
                         "may have)")
    line_info = data.get("line_info", True)
    if not isinstance(line_info, bool):
        raise _FileError(data.lines["line_info"], "`line_info:` takes true or false")
    # Text fields are checked, never str()-ed: a YAML alias that nests shared lists a few levels deep is a
    # few lines but expands to gigabytes as text.
    columns = tuple(_text(c, line, "columns", "a counter name or glob") for c, line in _items(data, "columns")) \
        if "columns" in data else ()
    for key in ("name", "description"):
        if data.get(key) is not None:
            _text(data[key], data.lines[key], key, "free text")
    name = data.get("name") or path.stem
    return Sweep(path, name, tuple(kernels), targets, (base / out) if out else None, jobs, float(timeout), line_info,
                 columns, {"targets": data.lines["targets"]}, max_points)


def _blocks(m: _Map) -> list[_Map]:
    """The mappings of `set:` and `grid:`, each once: `grid: [*g, *g, ...]` names one mapping 200,000 times
    in 800 KB, and its lines made 18 million tuples (3 GB) before the points were counted."""
    out: dict[int, _Map] = {}
    for key in ("set", "grid"):
        value = m.get(key)
        for block in value if isinstance(value, _Seq) else [value]:
            if isinstance(block, _Map):
                out.setdefault(id(block), block)
    return list(out.values())


def _axis_lines(m: _Map) -> tuple[tuple[str, int], ...]:
    return tuple((str(k), block.key_lines[k]) for block in _blocks(m) for k in block)


def _value_lines(m: _Map) -> tuple[tuple[str, Any, int], ...]:
    return tuple((str(k), item, line) for block in _blocks(m) for k in block for item, line in _values(block, k))


def _values(block: _Map, name: Any) -> list[tuple[Any, int]]:
    """An axis's values, each with its own line (a block list puts each on a line of its own)."""
    values = block[name]
    if isinstance(values, _Seq):
        return list(zip(values, values.lines))
    return [(values, block.lines[name])]


def _check_keys(m: _Map, known: Sequence[str], what: str) -> None:
    for key in m:
        if key not in known:
            close = difflib.get_close_matches(str(key), known, n=1)
            hint = f"did you mean `{close[0]}`? " if close else ""
            raise _FileError(m.key_lines[key], f"unknown key `{key}` in the {what}",
                             hint + f"known keys: {', '.join(known)}")


def _items(m: _Map, key: str) -> list[tuple[Any, int]]:
    value = m[key]
    if isinstance(value, _Seq):
        return list(zip(value, value.lines))
    if isinstance(value, str):
        return [(v.strip(), m.lines[key]) for v in value.split(",") if v.strip()]
    raise _FileError(m.lines[key], f"`{key}:` takes a list")


def _text(value: Any, line: int, key: str, what: str) -> str:
    if not isinstance(value, str):
        raise _FileError(line, f"`{key}:` takes {what}, not {_kind(value)}", "quote it if it is meant as text")
    return value


def _kind(value: Any) -> str:
    """A YAML value's kind in the file's words (never a Python class name)."""
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if value is None:
        return "an empty value"
    return f"a {type(value).__name__} value"


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
    from ..targets import parse_targets
    names: list[str] = []
    for value, line in _items(data, "targets"):
        _text(value, line, "targets", "target names")
        try:
            names += [t.name for t in parse_targets(value) if t.name not in names]
        except UsageError as e:
            raise _FileError(line, e.message, e.hint) from None
    if not names:
        raise _FileError(data.lines["targets"], "`targets:` is empty", "e.g. targets: [sm_90a, gfx942] or all")
    return tuple(names)


def _scalar_ok(v: Any) -> bool:
    return isinstance(v, (int, float, str, bool))


def _grids(m: _Map, key: str) -> tuple[tuple[tuple[str, tuple[Any, ...]], ...], ...]:
    if key not in m:
        return ((),)
    value = m[key]
    empty_hint = ("give option names with lists of values, e.g. grid: {num_warps: [4, 8], BLOCK_K: [32, 64]}, "
                  "or leave `grid:` out to compile each kernel's config once")
    if isinstance(value, _Seq) and not value:
        raise _FileError(m.lines[key], f"`{key}:` is empty: it gives no points to compile", empty_hint)
    blocks = list(zip(value, value.lines)) if isinstance(value, _Seq) else [(value, m.lines[key])]
    # one mapping named twice (`grid: [*g, *g]`) gives the same points twice: it is one grid
    first: dict[int, tuple] = {}
    for block, line in blocks:
        first.setdefault(id(block), (block, line))
    grids = []
    for block, line in first.values():
        if not isinstance(block, _Map):
            raise _FileError(line, f"`{key}:` maps option names to lists of values (or is a list of such mappings)",
                             "e.g. grid: {num_warps: [4, 8], BLOCK_K: [32, 64]}")
        if not block:
            raise _FileError(line, f"`{key}:` has an empty mapping: it names no option to vary", empty_hint)
        axes = []
        for name, values in block.items():
            _check_axis_name(str(name), block.key_lines[name])
            vals = _values(block, name)
            if not vals:
                raise _FileError(block.lines[name], f"axis `{name}` has no values",
                                 f"give at least one, e.g. {name}: [4, 8], or remove the axis")
            for v, v_line in vals:
                _check_value(str(name), v, v_line)
            # a value given twice is one point (and counted once against the limit)
            axes.append((str(name), tuple({(type(v), v): v for v, _ in vals}.values())))
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
        _check_axis_name(str(name), value.key_lines[name])
        _check_value(str(name), v, value.lines[name])
        out.append((str(name), v))
    return tuple(out)


def _check_value(name: str, v: Any, line: int) -> None:
    if not _scalar_ok(v):
        raise _FileError(line, f"`{name}`: values must be numbers, strings or booleans, not {_kind(v)}")
    try:
        if name in ("num_warps", "num_stages"):
            _positive_int(name, v)
        elif name == "divisibility":
            parse_divisibility([str(v)])
    except UsageError as e:
        raise _FileError(line, e.message, e.hint) from None


def _check_axis_name(name: str, line: int) -> None:
    if not re.match(r"^(?:arg\.|option\.)?[A-Za-z_][A-Za-z0-9_]*$", name):
        raise _FileError(line, f"bad option name `{name}`", "use num_warps, num_stages, divisibility, config, a "
                         "constexpr name, arg.NAME or option.NAME")

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
