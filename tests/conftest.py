"""Shared fixtures: real compiles, each done once per test session and shared by the tests that read them,
and the committed goldens for tests that only read IR (docs/testing.md says which to use when)."""
from __future__ import annotations

import io
import shutil
import signal
from pathlib import Path
from typing import Sequence

import pytest

DATA = Path(__file__).parent / "data"
ROOT = Path(__file__).resolve().parent.parent
GOLDENS = ROOT / "snapshots"
# add and matmul at their defaults: the points most tests read (the `compiled` and `goldens` fixtures)
DEFAULT_KERNELS = ("add", "matmul")


class CompileCache:
    """Real compiles, each done once per session: a point whose content key (irscope.harness.plan: the
    kernel's source, target, options, specialisation, Triton version) was compiled before is not compiled
    again, whoever asked for it and however its options were spelt (`config="default"` is the default).
    Three options are keyed beside the content key because it leaves them out: `passes` (adds passes/,
    same code), `name` (another folder) and `backend_options` (maxnreg changes the code, yet irscope
    computes the same content key with and without it: harness.content_key leaves it out)."""

    def __init__(self, out: Path, plugin_compiles: dict | None = None):
        self.out = out
        self._by_key: dict[str, object] = {}  # content key -> Outcome
        self._folders: dict[Path, str] = {}  # snapshot folder -> the content key compiled into it
        # The `irscope` fixture's own once-a-session compiles ({(kernel, target, options): Outcome}):
        # test_goldens.py compiles every built-in kernel's default there, which test_kernels_compile.py
        # needs again. Read, never written: the plugin's cache stays what the plugin tests check.
        self._plugin = plugin_compiles if plugin_compiles is not None else {}
        self._harvested: set = set()

    def _harvest(self) -> None:
        from irscope.harness.batch import Point
        for (kernel, target, options), o in list(self._plugin.items()):
            if (kernel, target, options) in self._harvested or not o.ok:
                continue
            self._harvested.add((kernel, target, options))
            self._by_key.setdefault(self.key(Point(kernel, target, options)), o)

    def key(self, point) -> str:
        from irscope import harness
        from irscope.spec import library
        from irscope.targets import get_target
        content = harness.plan(library.load_kernel(point.kernel), get_target(point.target), point.options)[0]
        o = point.options
        return f"{content} passes={o.passes!r} name={o.name!r} backend={sorted(o.backend_options)!r}"

    def outcomes(self, points: Sequence, *, workers: int | None = None, timeout: float | None = 600) -> list:
        """The Outcome of every point (irscope.harness.batch.Point), compiling only the keys not seen yet,
        in one parallel batch per output root."""
        from irscope.harness.batch import compile_points, folder_for

        self._harvest()
        keys = [self.key(p) for p in points]
        batches: dict[Path, dict[str, object]] = {}  # root -> {key: point}, the points to compile there
        pending: set[Path] = set()
        for p, k in zip(points, keys):
            if k in self._by_key or any(k in b for b in batches.values()):
                continue
            # Two different keys may name the same folder (two files' kernels of one name): the second
            # goes to another root rather than overwrite the first.
            n = 0
            while folder_for(p, self.out / str(n)) in self._folders or folder_for(p, self.out / str(n)) in pending:
                n += 1
            batches.setdefault(self.out / str(n), {})[k] = p
            pending.add(folder_for(p, self.out / str(n)))
        for root, todo in batches.items():
            done = compile_points(list(todo.values()), root, workers=workers, timeout=timeout)
            for k, o in zip(todo, done):
                self._by_key[k] = o
                self._folders[folder_for(o.point, root)] = k
        return [self._by_key[k] for k in keys]

    def __call__(self, kernel: str, target: str, **options):
        """The snapshot of one point (CompileOptions fields as keywords); a failed compile fails the test."""
        from irscope.harness.batch import Point
        from irscope.spec.kernel import CompileOptions
        from irscope.store.snapshot import load_snapshot

        (o,) = self.outcomes([Point(kernel, target, CompileOptions(**options))])
        assert o.ok, (o.label, o.status, o.error)
        return load_snapshot(o.path)


@pytest.fixture(scope="session")
def compile_cache(tmp_path_factory, pytestconfig) -> CompileCache:
    """`compile_cache(kernel, target, **options) -> Snapshot`, or `.outcomes([Point, ...])` for a batch:
    compiled into a session folder once per content key. A test may read these snapshots but must not
    change them (copy one to change it)."""
    from irscope.goldens import pytest_plugin
    plugin = pytestconfig.stash.get(pytest_plugin._KEY, None)  # absent under -p no:irscope
    return CompileCache(tmp_path_factory.mktemp("compile-cache"), getattr(plugin, "_compiled", None))


def _tree_of(folders: dict[str, Path], out: Path) -> Path:
    """A root of its own holding exactly these snapshot folders (kernel/variant/target -> folder), copied,
    so that tests listing a root see only them."""
    for rel, folder in folders.items():
        shutil.copytree(folder, out / rel)
    return out


@pytest.fixture(scope="session")
def compiled(tmp_path_factory, compile_cache):
    """A root of add and matmul compiled fresh for all seven targets (through `compile_cache`), for the
    tests that check the compile itself or need the stages goldens leave out (source, llir)."""
    from irscope.harness.batch import Point
    from irscope.targets import CORE

    points = [Point(k, t) for k in DEFAULT_KERNELS for t in CORE]
    outcomes = compile_cache.outcomes(points)
    failed = [o for o in outcomes if not o.ok]
    assert not failed, failed
    return _tree_of({o.label: o.path for o in outcomes}, tmp_path_factory.mktemp("compiled"))


@pytest.fixture(scope="session")
def goldens(tmp_path_factory):
    """A copy of the committed goldens of add and matmul at their defaults for all seven targets (real
    Triton compiles, checked in under snapshots/ and kept current by tests/test_goldens.py), laid out as
    `compiled` is: for tests that only read the analysed stages (ttgir, ptx, sass, amdgcn) and need no
    fresh compile. A copy, because analysing a snapshot writes its cache file into the folder."""
    from irscope.targets import CORE

    folders = {f"{k}/default/{t}": GOLDENS / k / "default" / t for k in DEFAULT_KERNELS for t in CORE}
    missing = [rel for rel, f in folders.items() if not (f / "irscope.json").is_file()]
    assert not missing, f"goldens missing under {GOLDENS}: {missing} (pytest --irscope-update writes them)"
    return _tree_of(folders, tmp_path_factory.mktemp("goldens"))


@pytest.fixture
def cli(monkeypatch, tmp_path):
    """Run `irscope ARGS...` in-process; returns (exit code, stdout, stderr). Cwd is a fresh folder."""
    from irscope.cli import main

    monkeypatch.chdir(tmp_path)

    def run(*argv: str) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        code = main([str(a) for a in argv], out=out, err=err)
        return code, out.getvalue(), err.getvalue()

    return run


def sigint_as_in_a_terminal() -> None:
    """Popen's preexec_fn for a test that sends SIGINT as a terminal's Ctrl-C: SIGINT at its default
    disposition. A shell that started this test run in the background (`pytest &`, nohup, CI wrappers)
    gives it SIGINT ignored, and every child inherits that: the Ctrl-C would never arrive."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def pytest_collection_modifyitems(config, items):
    """Tests marked `gpu` run only where torch sees a CUDA GPU; elsewhere they skip, saying why."""
    gpu_items = [item for item in items if "gpu" in item.keywords]
    if not gpu_items:
        return
    try:
        import torch
        have_gpu = torch.cuda.is_available()
    except ImportError:
        have_gpu = False
    if not have_gpu:
        skip = pytest.mark.skip(reason="needs a CUDA GPU: torch.cuda.is_available() is False here")
        for item in gpu_items:
            item.add_marker(skip)
