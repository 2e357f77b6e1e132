"""irscope's pytest plugin: golden snapshots and compile-time expectations for Triton kernels.

    def test_matmul_codegen(irscope):
        irscope.assert_golden("matmul", target=["sm_90a", "gfx942"])
        snap = irscope.compile("matmul", target="sm_90a", num_warps=2)
        irscope.expect(snap).uses("ptx.mma").no_spills().shared_below(100_000)

Options (one group, one prefix): `--irscope-update` writes or rewrites goldens (and deletes goldens that a
test which ran and passed no longer uses); `--irscope-goldens DIR` (ini `irscope_goldens`, default `snapshots`);
`--irscope-version-mismatch skip|fail` (ini `irscope_version_mismatch`, default skip) for points whose
goldens were all made under other Triton releases; `--irscope-stale-source warn|fail` (ini
`irscope_stale_source`, default warn) for goldens whose IR matches but whose source.py is not the kernel
file's text (`--irscope-update` rewrites that source.py alone). A golden set holds one golden per release
(`<target>` and `<target>@triton-X.Y.Z` beside it, root.py); a run compares with the running release's. Registered through the `pytest11` entry point; importing it is cheap (irscope's
compiler modules load on first use).

Kernel paths in tests are relative to pytest's rootdir, wherever pytest was started. Fresh snapshots go
under pytest's own basetemp (`tmp_path_factory`), which pytest prunes to its last few runs. A failure
reports as the test's own: irscope's frames are hidden and an IrscopeError (an unknown kernel, a bad
option) is one line, not a traceback through irscope.
"""
from __future__ import annotations

import functools
import os
import shlex
import sys
from pathlib import Path
from typing import Any, Sequence

import pytest

from ..errors import IrscopeError, UsageError
from ..render.controls import escaped

_KEY = pytest.StashKey["IrscopeSession"]()


def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    if pluginmanager.get_name(sys.modules[__name__]) != "irscope":
        # `-p irscope.pytest_plugin` (or this module's own path) registered it before pytest loads the
        # `irscope` entry point, which is this same module: pluggy refuses a second name (a ValueError before
        # any test), so that entry point is skipped, as `-p no:irscope` would skip it.
        pluginmanager.set_blocked("irscope")
    group = parser.getgroup("irscope", "irscope golden snapshots")
    group.addoption("--irscope-update", action="store_true", default=False,
                    help="write or rewrite golden snapshots, and delete those the tests that ran and passed no longer use")
    group.addoption("--irscope-goldens", metavar="DIR", default=None,
                    help="folder of golden snapshots (default: ini irscope_goldens, else 'snapshots')")
    group.addoption("--irscope-version-mismatch", choices=("skip", "fail"), default=None,
                    help="when a golden was made under another Triton version: skip (default) or fail")
    group.addoption("--irscope-report", metavar="DIR", default=None,
                    help="write an HTML report (irscope report) of each failing golden into DIR, e.g. for CI artifacts")
    group.addoption("--irscope-stale-source", choices=("warn", "fail"), default=None,
                    help="when a golden matches but its source.py is not the kernel file's text: warn (default) "
                         "or fail the test (--irscope-update rewrites that source.py alone)")
    parser.addini("irscope_goldens", "folder of golden snapshots, relative to the rootdir", default="snapshots")
    parser.addini("irscope_version_mismatch", "skip or fail on goldens made under another Triton", default="skip")
    parser.addini("irscope_stale_source", "warn or fail on a matching golden whose source.py is stale",
                  default="warn")


def pytest_configure(config: pytest.Config) -> None:
    session = IrscopeSession(config)
    config.stash[_KEY] = session
    config.pluginmanager.register(session, "irscope-session")


class IrscopeSession:
    """State across the tests of one pytest session (registered as a plugin for its hooks): the golden
    root, the tests that ran, what each compared, and what the summary reports."""

    def __init__(self, config: pytest.Config):
        self.config = config
        goldens = config.getoption("--irscope-goldens") or config.getini("irscope_goldens")
        self.root_path = Path(goldens) if Path(goldens).is_absolute() else Path(config.rootpath) / goldens
        self.update = bool(config.getoption("--irscope-update"))
        self.on_version_mismatch = config.getoption("--irscope-version-mismatch") or \
            config.getini("irscope_version_mismatch")
        self.on_stale_source = config.getoption("--irscope-stale-source") or config.getini("irscope_stale_source")
        if self.on_stale_source not in ("warn", "fail"):
            raise pytest.UsageError(f"ini irscope_stale_source is {self.on_stale_source!r}; use warn or fail")
        if self.on_version_mismatch not in ("skip", "fail"):  # else a typo (`fial`) silently meant fail
            raise pytest.UsageError(f"ini irscope_version_mismatch is {self.on_version_mismatch!r}; use skip or fail")
        if not str(goldens).strip():  # else the rootdir itself, the whole project, would be the golden root
            raise pytest.UsageError("ini irscope_goldens is empty; name the folder of golden snapshots "
                                    "(default: snapshots)")
        self.here: set[str] = set()  # tests set up in this process
        self.ran: set[str] = set()  # of those, the ones that passed
        self.results: list[Any] = []
        self.version_notes: set[str] = set()
        self.unused: list[Path] = []
        self.problem: IrscopeError | None = None  # a damaged golden met while looking for unused ones
        # pytest-xdist: a worker hands what it ran and compared to the controller, which alone decides what is
        # unused (a golden a test on one worker stopped using may be compared by a test on another)
        self.worker = hasattr(config, "workerinput")
        self.worker_rows: list[dict] = []  # the controller's: the results the workers reported, as _row gives
        self.worker_outs: list[str] = []
        self.workers_lost = 0  # workers that went down without saying what they ran
        self.project = Path(config.rootpath)
        self.tmp_path_factory: pytest.TempPathFactory | None = None  # set by the first `irscope` fixture
        self._root = None
        self._out: Path | None = None
        self._compiled: dict[tuple, Any] = {}

    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        self.here.add(item.nodeid)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        # Only a test that passed reached every assert_golden of its body: one that failed or skipped midway
        # (an expectation, a compile error, a version-mismatch skip) left later goldens unused by no choice
        # of its own, and --irscope-update would delete them. And only a test run in this process: a
        # pytest-xdist controller gets every worker's reports but none of their goldens' uses, so to it
        # every golden would look unused (and --irscope-update would delete them all).
        if report.when == "call" and report.passed and report.nodeid in self.here:
            self.ran.add(report.nodeid)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item):
        # An IrscopeError raised in a test's body (an expectation on a stage the snapshot lacks, a
        # load_snapshot of a bad folder) is the user's input problem: one line, like the CLI's. (No
        # __tracebackhide__ here: a failure whose every frame is hidden gets pytest's second line, "All
        # traceback entries are hidden..."; with pytrace=False no frame is shown anyway.)
        try:
            return (yield)
        except IrscopeError as e:
            failure = one_line(e)
        pytest.fail(failure, pytrace=False)  # outside the except: no "during handling of..." chain

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node, error) -> None:
        """pytest-xdist's controller: a worker finished; take the tests it ran and the goldens they used."""
        data = (getattr(node, "workeroutput", None) or {}).get("irscope")
        if error is not None or not isinstance(data, dict):
            self.workers_lost += 1
            return
        self.ran.update(data["ran"])
        if data["used"]:
            self.root.used.update(Path(p) for p in data["used"])
        self.worker_rows += data["results"]
        self.version_notes.update(data["notes"])
        self.worker_outs += [data["out"]] if data["out"] else []

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if self.worker:  # xdist sends this to the controller after every worker's sessionfinish
            failing = any(not r.ok and r.status != "version-mismatch" for r in self.results)
            self.config.workeroutput["irscope"] = {
                "ran": sorted(self.ran), "used": sorted(str(p) for p in (self._root.used if self._root else ())),
                "results": [_row(r) for r in self.results], "notes": sorted(self.version_notes),
                "out": str(self._out) if failing and self._out is not None else ""}
            return
        if not self.ran:
            return
        if self.workers_lost:  # its tests may have used any golden: none is called unused, none deleted
            return
        if self._root is None and not (self.root_path / ".irscope-goldens").is_file():
            # no test compared a golden and there is no golden root (store.snapshot.GOLDEN_MARKER): a suite
            # that does not use irscope pays nothing. Where there is one, a test that ran and no longer calls
            # assert_golden at all has left its goldens unused all the same.
            return
        try:
            # Only this Triton's goldens can be unused: another release's are kept for runs under it.
            self.unused = [f for f in self.root.unused(self.ran) if _golden_version(f) in (None, _running_triton())]
        except IrscopeError as e:  # a damaged golden.json: say which, and fail the run
            self.problem = e
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
            return
        if self.update:
            removed, kept = [], []
            try:
                for folder in self.unused:
                    try:
                        self.root.remove(folder)
                        removed.append(folder)
                    except UsageError as e:  # a file of the user's in it: that one is kept, the others deleted
                        kept.append(e)
            except IrscopeError as e:  # a read-only golden root: say so, and list only what was deleted
                self.problem = e
            if kept and self.problem is None:
                more = f" (and {len(kept) - 1} more unused golden(s) holding files of their own)" if len(kept) > 1 else ""
                self.problem = UsageError(kept[0].message + more, kept[0].hint)
            if self.problem is not None:
                session.exitstatus = pytest.ExitCode.TESTS_FAILED
            self.unused = removed
        elif self.unused and session.exitstatus == 0:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter, exitstatus: int, config: pytest.Config) -> None:
        rows = [_row(r) for r in self.results] + self.worker_rows
        if not rows and not self.unused and self.problem is None and not (self.workers_lost and self.ran):
            return
        counts: dict[str, int] = {}
        for r in rows:
            counts[r["status"]] = counts.get(r["status"], 0) + 1
        tr = terminalreporter
        tr.section("irscope goldens")
        tr.write_line(", ".join(f"{n} {status}" for status, n in sorted(counts.items())) or "none compared")
        for note in sorted(self.version_notes):
            tr.write_line(escaped(note))
        refreshed = [r for r in rows if r["status"] == "source-refreshed"]
        if refreshed:
            tr.write_line(f"{len(refreshed)} golden(s) with source.py refreshed (their IR matched; no other file "
                          f"rewritten):", green=True)
            for r in refreshed:
                tr.write_line(escaped(f"  {r['golden']}: {r['source']}"))
        stale = [r for r in rows if r["stale"]]
        if stale:
            strict = self.on_stale_source == "fail"
            tr.write_line(f"irscope: {len(stale)} matching golden(s) keep a stale source.py (not the kernel file "
                          f"their IR is compiled from){'' if strict else '; a warning, not a failure'}:",
                          yellow=not strict, red=strict)
            for r in stale:
                tr.write_line(escaped(f"  {r['golden']}: {r['source']}"))
            tr.write_line("refresh source.py alone with: pytest --irscope-update (or irscope snapshot update)")
        outs = ([str(self._out)] if self._out is not None and any(not r.ok and r.status != "version-mismatch"
                                                                   for r in self.results) else []) + self.worker_outs
        for out in outs:
            tr.write_line(f"fresh snapshots of this run: {out} (under pytest's basetemp, which pytest "
                          f"prunes to the last runs: tmp_path_retention_count)")
        if self.workers_lost and self.ran:
            tr.write_line(f"irscope: {self.workers_lost} pytest-xdist worker(s) went down without saying which goldens "
                          "their tests used: no golden is reported unused, nor deleted, in this run", yellow=True)
        if self.unused:
            verb = "deleted" if self.update else "unused by the tests that wrote them"
            tr.write_line(f"{len(self.unused)} golden(s) {verb}:", red=not self.update)
            for folder in self.unused:
                tr.write_line(escaped(f"  {folder}"))
            if not self.update:
                tr.write_line(f"irscope: {len(self.unused)} unused golden(s) make this run fail; "
                              f"delete them with pytest --irscope-update", red=True, bold=True)
        if self.problem is not None:
            tr.write_line(one_line(self.problem, "irscope: this run fails: "), red=True, bold=True)

    @property
    def root(self):
        if self._root is None:
            from .root import GoldenRoot
            self._root = GoldenRoot(self.root_path)
        return self._root

    @property
    def out(self) -> Path:
        # Under pytest's basetemp rather than a mkdtemp of our own: pytest prunes it (the last
        # tmp_path_retention_count runs, or per tmp_path_retention_policy), honours --basetemp, and the
        # fresh snapshot a failure report points at is still there after the run.
        if self._out is None:
            assert self.tmp_path_factory is not None, "the irscope fixture sets tmp_path_factory first"
            self._out = self.tmp_path_factory.mktemp("irscope", numbered=True)
        return self._out

    def update_command(self, nodeid: str) -> str:
        """`pytest --irscope-update TEST` to paste where pytest was started: the test's file relative to that
        folder (a node id is relative to the rootdir), quoted for the shell (`test_k[sm_80]` is a glob)."""
        path, sep, rest = nodeid.partition("::")
        try:
            path = os.path.relpath(self.project / path, self.config.invocation_params.dir)
        except ValueError:  # another drive (Windows): the rootdir-relative id
            pass
        return f"pytest --irscope-update {shlex.quote(path + sep + rest)}"

    def resolve_kernel(self, kernel: str) -> str:
        """A kernel reference with its file made absolute against the project root (pytest's rootdir),
        so a test passes wherever pytest was started from. Built-in names and absolute paths stay."""
        path, sep, name = kernel.rpartition(":")
        if not (sep and path and not (len(path) == 1 and path.isalpha())):  # the parse of library.load_kernel
            if not (kernel.endswith(".py") or os.sep in kernel or "/" in kernel):
                return kernel
            path, name = kernel, None
        given = Path(path).expanduser()
        file = given if given.is_absolute() else self.project / given
        if not given.is_absolute() and not file.is_file():  # an absolute one is library.load_kernel's to report
            raise UsageError(f"kernel file '{path}' not found under the project root {self.project}",
                             "kernel paths in tests are relative to pytest's rootdir; or give an absolute path")
        return f"{file}:{name}" if name is not None else str(file)

    def compile(self, kernel: str, targets: Sequence[str], options) -> list:
        """Compile (kernel, options) for every target, in parallel, once per session."""
        __tracebackhide__ = True
        from ..errors import CompileError, error_summary
        from ..harness.batch import Point, compile_points
        from ..store.snapshot import load_snapshot

        todo = [t for t in targets if (kernel, t, options) not in self._compiled]
        if todo:
            outcomes = compile_points([Point(kernel, t, options) for t in todo], self.out)
            for t, o in zip(todo, outcomes):
                self._compiled[(kernel, t, options)] = o
        snaps = []
        for t in targets:
            o = self._compiled[(kernel, t, options)]
            if not o.ok:
                hint = (f"the failed compile's record (irscope.json's 'error', logs/) is in {o.path}" if o.path
                        else "compile it with: irscope compile")
                failed = CompileError(f"{o.label} failed to compile ({o.status}): {error_summary(o.error or {})}",
                                      hint)
                # Triton's own message names the kernel's line and points at it with a caret: shown below the line
                failed.detail = str((o.error or {}).get("message") or "").strip()
                raise failed
            snaps.append(load_snapshot(o.path))
        return snaps

    def compiled_from(self, snap) -> str | None:
        """The kernel reference this session compiled `snap` from (None for a snapshot it did not compile)."""
        for (kernel, _, _), o in self._compiled.items():
            if o.path is not None and Path(o.path) == Path(snap.path):
                return kernel
        return None


def _row(result) -> dict:
    """What the summary shows of a GoldenResult, in the plain types pytest-xdist carries from a worker."""
    return {"status": str(result.status), "golden": str(result.golden_path),
            "source": result.source.summary if result.source is not None else None,
            "stale": result.source_stale}


def _running_triton() -> str:
    from ..harness.envs import running_version
    return running_version()


def _golden_version(folder: Path) -> str | None:
    from ..store.schema import loads
    try:
        return (loads((folder / "irscope.json").read_text()).get("versions") or {}).get("triton")
    except (OSError, ValueError, AttributeError):
        return None


def one_line(e: IrscopeError, prefix: str = "irscope: ") -> str:
    """An IrscopeError as the one line a failing test shows: irscope: message (hint: ...)."""
    lines = e.message.strip().splitlines()
    return escaped(f"{prefix}{lines[0] if lines else type(e).__name__}" + (f" (hint: {e.hint})" if e.hint else ""))


def _reported(method):
    """Fixture methods report an IrscopeError as one line, and hide irscope's frames from tracebacks."""
    @functools.wraps(method)
    def wrapper(*args, **kwargs):
        __tracebackhide__ = True
        try:
            return method(*args, **kwargs)
        except IrscopeError as e:
            failure = one_line(e)
            detail = getattr(e, "detail", "").splitlines()
            if len(detail) > 1:  # a compile error's source line and caret (one line says no more than the first)
                shown = detail[:DETAIL_LINES] + ([f"... {len(detail) - DETAIL_LINES} more lines"]
                                                 if len(detail) > DETAIL_LINES else [])
                failure += "\n" + escaped("\n".join("    " + line for line in shown))
        pytest.fail(failure, pytrace=False)  # outside the except: no "during handling of..." chain
    return wrapper


DETAIL_LINES = 40  # of a failed compile's message under its one line


OPTION_NAMES = ("config", "num_warps", "num_stages", "divisibility", "constexprs", "args", "options", "line_info")


def _options(**given):
    unknown = sorted(set(given) - set(OPTION_NAMES))
    if unknown:
        raise UsageError(f"unknown compile option {', '.join(map(repr, unknown))}",
                         f"options are {', '.join(OPTION_NAMES)} (docs/goldens.md)")
    options = compile_options_of(**given)
    try:
        hash(options)  # the key of the session's compile cache
    except TypeError:
        values = [(f"{k}[{n!r}]", v) for k in ("constexprs", "args", "options") for n, v in (given.get(k) or {}).items()]
        bad = next((f"{name} is {v!r}, a {type(v).__name__}" for name, v in values if not _hashable(v)),
                   "holds a list, dict or set")
        raise UsageError(f"compile option {bad}; values must be numbers, strings, bools or tuples",
                         "give a tuple instead of a list (a constexpr tuple: (1, 2))") from None
    return options


def _hashable(value) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


def compile_options_of(config=None, num_warps=None, num_stages=None, divisibility=None, constexprs=None, args=None,
                     options=None, line_info=True):
    from ..spec.kernel import CompileOptions, parse_divisibility, parse_value

    if isinstance(divisibility, (int, str)):
        divisibility = [divisibility]
    div = parse_divisibility([str(d) if not isinstance(d, tuple) else f"{d[0]}={d[1]}" for d in divisibility or ()])
    typed_args = tuple((k, parse_value(v) if isinstance(v, str) and v.startswith("*") else v)
                       for k, v in (args or {}).items())
    return CompileOptions(config=config, num_warps=num_warps, num_stages=num_stages, divisibility=div,
                          constexprs=tuple((constexprs or {}).items()), args=typed_args,
                          backend_options=tuple((options or {}).items()), line_info=line_info)


class IrscopeFixture:
    """What a test gets from the `irscope` fixture."""

    def __init__(self, session: IrscopeSession, request: pytest.FixtureRequest):
        self._session = session
        self._request = request

    @_reported
    def compile(self, kernel: str, target: str = "sm_90a", **options):
        """Compile a kernel (built-in name or FILE.py:FUNCTION, relative to the rootdir) for one target;
        returns its Snapshot."""
        __tracebackhide__ = True
        s = self._session
        return s.compile(s.resolve_kernel(kernel), [target], _options(**options))[0]

    @_reported
    def compile_all(self, kernel: str, targets: Sequence[str], **options) -> list:
        __tracebackhide__ = True
        s = self._session
        return s.compile(s.resolve_kernel(kernel), list(targets), _options(**options))

    @_reported
    def assert_golden(self, kernel, target: str | Sequence[str] | None = None, **options) -> list:
        """Compile for each target and compare with the goldens; with --irscope-update, write them instead.
        `kernel` may also be a snapshot `irscope.compile` returned (or a list of them): that compile is the one
        compared, with the kernel, target and options it was made with."""
        __tracebackhide__ = True
        from .result import describe
        from ..store.snapshot import Snapshot
        from ..targets import parse_targets

        s = self._session
        given = [kernel] if isinstance(kernel, Snapshot) else list(kernel) if isinstance(kernel, (list, tuple)) else None
        if given is not None:
            if not given or not all(isinstance(x, Snapshot) for x in given) or target is not None or options:
                raise UsageError("assert_golden takes a kernel with its targets and options, or snapshots that "
                                 "irscope.compile returned, alone",
                                 "irscope.assert_golden(snap), or irscope.assert_golden(\"kern.py:fn\", target=...)")
            refs = [s.compiled_from(x) for x in given]
            if None in refs:
                raise UsageError(f"{given[refs.index(None)].label} was not compiled by this test session's "
                                 "irscope.compile, so there is no kernel to record for its golden",
                                 "compile it with irscope.compile(...) and pass what that returns")
            snaps, kernels = given, refs
        else:
            target = "sm_90a" if target is None else target
            if not target:
                raise UsageError(f"assert_golden got no target ({target!r})",
                                 "give one (target=\"sm_90a\"), a list (target=[\"sm_90a\", \"gfx942\"]) or \"all\"")
            names = [t.name for t in parse_targets(target if isinstance(target, str) else ",".join(target))]
            kernel = s.resolve_kernel(kernel)
            snaps = s.compile(kernel, names, _options(**options))
            kernels = [kernel] * len(snaps)
        failures, skipped = [], []
        for snap, kernel in zip(snaps, kernels):
            if s.update:  # writes what differs, refreshes a stale source.py, mends a damaged golden.json
                result = s.root.update(snap, self._request.node.nodeid, kernel)
            else:
                result = s.root.compare(snap)
            s.results.append(result)
            if result.status == "version-mismatch":
                line = (describe(result, update_hint="") + f": there is no golden for Triton {result.fresh_version} "
                        f"yet (pytest --irscope-update writes one beside it, {s.root.folder(snap).name}; "
                        "docs/goldens.md)")
                s.version_notes.add(f"Triton {result.fresh_version} here, goldens made with {result.golden_version}")
                (skipped if s.on_version_mismatch == "skip" else failures).append(line)
            elif not result.ok:
                failures.append(describe(result, update_hint=s.update_command(self._request.node.nodeid)))
            elif result.source_stale and s.on_stale_source == "fail":
                failures.append(f"{result.label} matches its golden ({result.golden_path}), but its "
                                f"{result.source.summary} (--irscope-stale-source=fail)\nrefresh source.py alone "
                                f"with: {s.update_command(self._request.node.nodeid)}")
        failing = [r for r in s.results[-len(snaps):] if not r.ok]
        if failing and s.config.getoption("--irscope-report"):  # a stale source.py alone has no IR to report
            failures.append(_write_report(Path(s.config.getoption("--irscope-report")), self._request.node.nodeid,
                                          failing))
        if failures:
            pytest.fail(escaped("\n\n".join(failures)), pytrace=False)
        if skipped:
            pytest.skip(escaped(skipped[0] + " (--irscope-version-mismatch=fail to fail instead)"))
        return snaps

    def expect(self, snapshot):
        from .expect import Expectation
        return Expectation(snapshot)


def _write_report(folder: Path, nodeid: str, results) -> str:
    """One HTML file for a test's failing goldens: each golden against its fresh compile, then the fresh one."""
    import re

    from ..report import build_report, write_report
    from ..store.snapshot import load_snapshot
    pairs = [(load_snapshot(r.golden_path), load_snapshot(r.fresh_path)) for r in results
             if r.golden_path and r.fresh_path and r.golden_path.is_dir() and r.fresh_path.is_dir()]
    if not pairs:
        return "irscope: no report: no failing golden has both a golden and a fresh snapshot"
    name = re.sub(r"[^\w.-]+", "_", nodeid).strip("_") + ".html"
    html = build_report([fresh for _, fresh in pairs], comparisons=pairs, title=f"goldens failing: {nodeid}")
    try:
        return f"irscope: report {write_report(folder / name, html)}"
    except OSError as e:  # the report is extra: the failure's own diff above must still be shown
        return f"irscope: no report: cannot write {folder / name}: {e.strerror or e} (--irscope-report DIR)"


@pytest.fixture
def irscope(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> IrscopeFixture:
    """Compile kernels, compare them with golden snapshots, assert properties of what the compiler emitted."""
    session = request.config.stash[_KEY]
    if session.tmp_path_factory is None:
        session.tmp_path_factory = tmp_path_factory
    return IrscopeFixture(session, request)
