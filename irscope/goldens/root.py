"""Golden snapshots: compare a fresh compile with a committed one, and write goldens on request.

A golden is an ordinary snapshot folder under a golden root (`snapshots/` in this repository, marked by a
`.irscope-goldens` file), plus `golden.json` saying which test wrote it. What is compared (documented in
docs/goldens.md): the text stages after normalisation (`irscope.ir.normalize`), the disassembly of binaries
rather than their bytes, and the counters and resources. Used by the pytest plugin and `irscope snapshot`.
"""
from __future__ import annotations

import dataclasses
import json
import re
import shlex
import shutil
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path, PureWindowsPath

from ..errors import EnvironmentProblem, SnapshotError, UsageError
from ..spec.kernel import CompileOptions, refused_recorded_option
from ..store.schema import MAX_JSON_BYTES, inside, loads
from ..store.snapshot import GOLDEN_MARKER, META_FILE, Snapshot, find_snapshots, load_snapshot
from ..store.folder import write_folder
from .result import GoldenResult, GoldenStatus, compare, triton_release
from .source import refresh_source, source_drift

GOLDEN_FILE = "golden.json"
# Stages compared: result.COMPARED. Binaries are compared through their disassembly (sass); hsaco through
# amdgcn, which is its assembly. Two stages are neither compared nor kept in a golden:
# Triton's `source` (the TTIR before any pass: every change to it shows in ttir) and `llir`, the largest
# stage by far (wgmma's inline-asm operand lists run to 4,000 characters a line) whose every change that
# reaches the GPU shows in ptx or amdgcn. Keeping it would triple a golden's size.
OMITTED = ("source", "llir")
# What golden.json may name as its kernel: a built-in name (`matmul`, `blur.row`), or a .py file inside
# the project with an optional function name. Anything else could make `snapshot check` import a file
# the golden's author chose, so it is refused before anything is imported.
_BUILTIN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*\Z")
_FUNCTION_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


@dataclass(frozen=True)
class KernelSource:
    """The kernel a golden is recompiled from, checked: a built-in name or a .py file inside the project."""

    ref: str  # what `library.load_kernel` is given: `add`, or an absolute `/project/kernels/k.py:fn`
    file: Path | None  # the file that will be imported; None for a built-in kernel
    shown: str  # how to name it to the user: `add (built-in)`, `kernels/k.py`


@dataclass
class GoldenRoot:
    """A folder of goldens: where each lives, which ones a session used."""

    path: Path
    used: set[Path] = field(default_factory=set)

    def folder(self, snap: Snapshot) -> Path:
        """Where the golden of `snap`, for `snap`'s Triton release, lives (or would be written).

        One golden per Triton release (docs/goldens.md): the plain `<kernel>/<variant>/<target>` folder
        holds the release that wrote it first (today's committed goldens: 3.9.0), and another release's
        golden lives beside it in `<target>@triton-<version>`."""
        plain = self._point(snap)
        version = triton_release(snap)
        versioned = self._within(plain.with_name(f"{plain.name}{VERSION_MARK}{version}"))
        if (versioned / META_FILE).is_file():
            return versioned
        held = _folder_version(plain)
        # "?": a damaged golden, whose release cannot be read: compared there (and reported damaged), and
        # mended there by an update, not left beside a new folder
        return plain if held in (None, "?", version) else versioned

    def versions(self, snap: Snapshot) -> dict[str, Path]:
        """Every golden of `snap`'s point, by the Triton release that made it."""
        plain = self._point(snap)
        found = {}
        for folder in [plain, *sorted(plain.parent.glob(f"{plain.name}{VERSION_MARK}*"))]:
            self._within(folder)
            version = _folder_version(folder)
            if version is not None:
                found.setdefault(version, folder)
        return found

    def _point(self, snap: Snapshot) -> Path:
        """The plain folder of `snap`'s point, `<root>/<kernel>/<variant>/<target>`, checked to lie inside the root."""
        return self._within(self.path / snap.kernel / snap.variant / snap.target_name)

    def _within(self, folder: Path) -> Path:
        """`folder`, refused (SnapshotError) when a symlink in the root leads it outside: a golden root is
        untrusted (a pull request can hold `snapshots/scale -> /home/you`), and irscope reads goldens and
        writes them only inside it."""
        root = self.path.resolve()
        try:
            real = folder.resolve()
        except (OSError, RuntimeError) as e:  # RuntimeError: a symlink loop
            raise SnapshotError(f"{folder} cannot be resolved ({e})", "the golden root is damaged") from None
        if real != root and root not in real.parents:
            raise SnapshotError(f"{folder} leads outside the golden root {self.path} (to {real}, through a symlink)",
                                "irscope reads and writes goldens only inside their root; replace the link "
                                "with a folder, or remove it")
        return folder

    def refuse_a_file(self) -> None:
        raise UsageError(f"'{self.path}' is a file, not a folder of golden snapshots",
                         "move it aside, or keep the goldens elsewhere (pytest --irscope-goldens DIR, "
                         "irscope snapshot --goldens DIR)")

    def mark(self) -> None:
        """Make the folder a golden root, so `irscope compile --out` refuses to write there by accident."""
        if self.path.exists() and not self.path.is_dir():
            self.refuse_a_file()
        marker = self.path / GOLDEN_MARKER
        with _writing(self.path):
            self.path.mkdir(parents=True, exist_ok=True)
            if not marker.exists():
                marker.write_text("This folder holds golden snapshots: irscope writes here only with --update-goldens,\n"
                                  "pytest --irscope-update, or irscope snapshot update.\n")

    def compare(self, fresh: Snapshot) -> GoldenResult:
        """Compare a fresh snapshot with its golden, without writing anything."""
        folder = self.folder(fresh)
        self.used.add(folder)
        if not (folder / META_FILE).is_file():
            others = self.versions(fresh)
            if others:  # goldens of other releases only: VERSION_MISMATCH says so, with their version
                return compare(load_snapshot(min(others.values(), key=lambda f: len(f.name))), fresh)
            return GoldenResult(fresh.label, GoldenStatus.MISSING, folder, fresh.path,
                                fresh_version=triton_release(fresh))
        golden = load_snapshot(folder)
        result = compare(golden, fresh)
        if result.status == GoldenStatus.MATCH:
            drift = source_drift(golden, fresh)
            if drift is not None:
                result = dataclasses.replace(result, source=drift)
        return result

    def refresh_source(self, result: GoldenResult, fresh: Snapshot) -> GoldenResult:
        """Rewrite the stale source.py of a matching golden from `fresh`, and nothing else of it."""
        if not result.source_stale or result.golden_path is None:
            return result
        with _writing(result.golden_path):
            refresh_source(self.path, load_snapshot(result.golden_path), fresh)
        return dataclasses.replace(result, status=GoldenStatus.SOURCE_REFRESHED)

    def update(self, fresh: Snapshot, test_id: str | None, kernel_ref: str) -> GoldenResult:
        """Compare `fresh` with its golden and mend what is wrong: write a golden that is missing, differs or
        cannot be read; refresh a stale source.py alone; rewrite a damaged golden.json alone (what
        `--irscope-update` and `snapshot update` do). `test_id` and `kernel_ref` are as for `write`."""
        folder = self.folder(fresh)
        damage, record = None, {}
        try:
            record = _record_at(folder)
        except SnapshotError as e:
            damage = e.message
        try:
            result = self.compare(fresh)
        except SnapshotError:  # a golden irscope cannot read: an update is how it is mended, so write it anew
            result = None
        if result is None or result.status in (GoldenStatus.MISSING, GoldenStatus.MISMATCH,
                                               GoldenStatus.VERSION_MISMATCH):
            result = self.write(fresh, test_id, kernel_ref)
        else:
            if result.source_stale:
                result = self.refresh_source(result, fresh)
            if damage is not None:
                self._write_record(folder, self._record_for(folder, fresh, test_id, kernel_ref))
                if result.status == GoldenStatus.MATCH:
                    result = dataclasses.replace(result, status=GoldenStatus.WRITTEN)
            elif test_id is not None and test_id not in recorded_tests(record):
                # another test compares this golden too: recorded, or the golden would be deleted as unused
                # once the test that wrote it stops using it, while this one still does. Read and written
                # under the folder's lock: two xdist workers adding their tests at once lost one of them.
                from ..store.folder import folder_lock
                with _writing(folder), folder_lock(folder):
                    self._write_record(folder, self._record_for(folder, fresh, test_id, kernel_ref))
        return dataclasses.replace(result, record_mended=damage) if damage is not None else result

    def _record_for(self, folder: Path, fresh: Snapshot, test_id: str | None, kernel_ref: str) -> dict:
        """golden.json for `fresh`: what the old one holds (a damaged one: nothing), with this label and kernel,
        and `test_id` unless it is None (the CLI, which knows no test, keeps the one recorded)."""
        try:
            old = _record_at(folder)
        except SnapshotError:
            old = {}
        record = {"test": None, **old, "label": fresh.label, "kernel": self._portable_ref(kernel_ref)}
        users = recorded_tests(old)
        if test_id is not None and not users:
            record["test"] = test_id
        elif test_id is not None and test_id not in users:  # a golden several tests compare keeps them all
            record["tests"] = users + [test_id]
        return record

    def _write_record(self, folder: Path, record: dict) -> None:
        from ..store.folder import replace_file
        from ..store.schema import inside
        with _writing(folder):
            replace_file(inside(self.path, folder, "golden folder"), GOLDEN_FILE,
                         (json.dumps(record, indent=1) + "\n").encode())

    def write(self, fresh: Snapshot, test_id: str | None, kernel_ref: str) -> GoldenResult:
        """Make `fresh` the golden (atomically replacing any older one). `kernel_ref` is how to compile it
        again: a built-in name, or FILE.py:FUNCTION (stored relative to the folder above the root). `test_id`
        is the test writing it; None (`snapshot update`) keeps the test the old golden.json records, and
        whatever else it holds."""
        self.mark()
        folder = self.folder(fresh)
        self.used.add(folder)
        record = self._record_for(folder, fresh, test_id, kernel_ref)
        files: dict[str, bytes | str] = {}
        skipped = {f"{fresh.fn_name}.{stage}" for stage in OMITTED}
        for p in sorted(fresh.path.rglob("*")):
            if p.is_file() and p.name not in skipped and not p.name.startswith(".irscope-"):
                files[p.relative_to(fresh.path).as_posix()] = p.read_bytes()
        meta = json.loads(files.pop(META_FILE))
        meta["stages"] = {k: v for k, v in meta.get("stages", {}).items() if k not in OMITTED}
        meta["golden"] = {"omitted_stages": list(OMITTED)}
        files[GOLDEN_FILE] = json.dumps(record, indent=1) + "\n"
        files[META_FILE] = json.dumps(meta, indent=1) + "\n"  # written last: a half-copied folder is no snapshot
        with _writing(folder):
            write_folder(folder, files)
        return GoldenResult(fresh.label, GoldenStatus.WRITTEN, folder, fresh.path, fresh_version=triton_release(fresh))

    @property
    def project(self) -> Path:
        """The folder above the golden root: kernel paths in golden.json are relative to it."""
        return self.path.resolve().parent

    def _portable_ref(self, ref: str) -> str:
        path, sep, name = ref.rpartition(":")
        if not sep and ref.endswith(".py"):
            path, name = ref, ""
        elif not sep:
            return ref
        try:
            rel = Path(path).resolve().relative_to(self.project).as_posix()
        except ValueError:
            return ref  # outside the project: kept as given, and `snapshot check` will refuse to run it
        return f"{rel}:{name}" if name else rel

    def kernel_of(self, golden: Snapshot, *, recover: bool = False) -> KernelSource:
        """The kernel that recompiles `golden`, refused (SnapshotError) unless the repository names it.

        Only golden.json's text is read here; nothing is imported, so a tampered golden is refused
        before any of its code could run. With `recover` (`snapshot update`), a golden whose golden.json is
        damaged is recompiled from the kernel its irscope.json names, when `recorded_kernel` can tell it."""
        record_path = golden.path / GOLDEN_FILE
        try:
            record = self.record(golden)
        except SnapshotError:
            recovered = self.recorded_kernel(golden) if recover else None
            if recovered is None:
                raise
            return recovered
        if record.get("kernel"):
            ref, where = record["kernel"], f"{record_path}: field 'kernel'"
        else:  # a golden without golden.json: only a built-in kernel, by the name irscope.json records
            ref, where = golden.meta.get("kernel"), f"{golden.path / META_FILE}: field 'kernel'"
        return self._checked(ref, where)

    def _checked(self, ref, where: str) -> KernelSource:
        hint = (f"a golden recompiles only a built-in kernel or a .py file inside {self.project} (outside the "
                f"golden root); rewrite it with: irscope snapshot update KERNEL --goldens {self.path}")

        def refuse(why: str) -> SnapshotError:
            return SnapshotError(f"{where} {why}; refusing to import it", hint)

        if not isinstance(ref, str) or not ref or not ref.isprintable():
            raise refuse(f"is {ref!r}, not a kernel reference")
        path, sep, name = ref.rpartition(":")
        if not sep and not ref.endswith(".py") and "/" not in ref and "\\" not in ref:
            if not _BUILTIN_NAME.match(ref):
                raise refuse(f"{ref!r} is not a built-in kernel name")
            return KernelSource(ref, None, f"{ref} (built-in)")
        if not sep:
            path, name = ref, ""
        if name and not _FUNCTION_NAME.match(name):
            raise refuse(f"{ref!r} names no Python function after its ':'")
        if not path or Path(path).is_absolute() or PureWindowsPath(path).drive or path.startswith(("/", "\\")):
            raise refuse(f"{ref!r} is an absolute path, not a file of the project")
        if ".." in re.split(r"[/\\]", path):
            raise refuse(f"{ref!r} climbs out with '..'")
        if not path.endswith(".py"):
            raise refuse(f"{ref!r} is not a .py file")
        file = (self.project / path).resolve()  # follows symlinks, so one pointing out is caught below
        if not file.is_relative_to(self.project):
            raise refuse(f"{ref!r} resolves to {file}, outside the project {self.project}")
        if file.is_relative_to(self.path.resolve()):
            raise refuse(f"{ref!r} lies inside the golden root, which holds data, not kernels")
        if not file.is_file():
            raise refuse(f"{ref!r} names no file ({file} does not exist)")
        return KernelSource(f"{file}:{name}" if name else str(file), file, path)

    def record(self, golden: Snapshot) -> dict:
        """golden.json of `golden` ({} when it has none); a damaged one raises SnapshotError naming it, with
        the command that rewrites it."""
        try:
            return _record_at(golden.path)
        except SnapshotError as e:
            raise SnapshotError(e.message, self._mend_hint(golden)) from None

    def recorded_kernel(self, golden: Snapshot) -> KernelSource | None:
        """The kernel `golden` was compiled from by its irscope.json alone (for a damaged golden.json), checked
        as golden.json's kernel is; None when irscope.json does not tell: its `source_file` (relative to
        where the compile ran) is no .py file of the project that defines its `function`, nor a built-in's.

        Nothing is imported: a built-in is known by name, a file of the project by its text."""
        meta = golden.meta
        name, function, file = meta.get("kernel"), meta.get("function"), meta.get("source_file")
        if not all(isinstance(v, str) and v and v.isprintable() for v in (name, function, file)):
            return None
        defines = re.compile(rf"^\s*def\s+{re.escape(function)}\s*\(", re.M)
        try:
            path = Path(file)
            real = (path if path.is_absolute() else self.project / path).resolve()
            builtin = _builtin_file(name)
            if builtin is not None and (real == builtin or (path.is_absolute() and path.name == builtin.name
                                                            and not real.is_relative_to(self.project))):
                source = KernelSource(name, None, f"{name} (built-in)")
                file = builtin
            else:
                rel = real.relative_to(self.project).as_posix() if path.is_absolute() else file
                kernel = name if _FUNCTION_NAME.match(name) else function  # a spec's name picks that spec
                source = self._checked(f"{rel}:{kernel}", f"{golden.path / META_FILE}: field 'source_file'")
                file = source.file
            return source if defines.search(Path(file).read_text(errors="replace")) else None
        except (OSError, ValueError, RuntimeError, SnapshotError):
            return None

    def _mend_hint(self, golden: Snapshot) -> str:
        """What rewrites a golden whose golden.json is damaged: `snapshot update`, once it can tell the kernel."""
        update = f"irscope snapshot update --goldens {shlex.quote(str(self.path))}"
        if self.recorded_kernel(golden) is not None:
            return f"rewrite its golden.json (and recompile it from irscope.json's request): {update}"
        function = golden.meta.get("function") if isinstance(golden.meta.get("function"), str) else "KERNEL"
        record = shlex.quote(json.dumps({"kernel": f"FILE.py:{function}"}))
        compiled = golden.meta.get("source_file")
        where = f" (irscope.json says it was compiled from {compiled!r})" if isinstance(compiled, str) else ""
        return (f"irscope.json does not tell which kernel file to recompile; name it, with FILE.py its path "
                f"relative to {self.project}{where}, and update (or, for a golden a test wrote, run pytest "
                f"--irscope-update): echo {record} > {shlex.quote(str(golden.path / GOLDEN_FILE))} && {update}")

    def point_of(self, golden: Snapshot, *, recover: bool = False):
        """The compile that reproduces a golden: its checked kernel, target and the options it was asked for."""
        from ..harness.batch import Point
        from ..targets import TARGETS
        source = self.kernel_of(golden, recover=recover)
        if golden.target is None:
            raise SnapshotError(f"{golden.path / META_FILE}: field 'target' names no known target "
                                f"({golden.target_name!r})", f"known targets: {', '.join(TARGETS)}")
        request = golden.meta.get("request") or {}
        try:
            options = CompileOptions.from_dict(request)
        except (TypeError, ValueError, AttributeError, UsageError) as e:  # UsageError: a bad request name
            raise SnapshotError(f"{golden.path / META_FILE}: field 'request' is damaged: {getattr(e, 'message', e)}",
                                f"rewrite the golden: irscope snapshot update --goldens {self.path}") from None
        refused = refused_recorded_option(options.backend_options)
        if refused:
            raise SnapshotError(f"{golden.path / META_FILE}: field 'request' asks for {refused}",
                                "a test that gives the option (options={...}) compiles it; irscope snapshot "
                                "check and update do not") from None
        return Point(source.ref, golden.target_name, options)

    def goldens(self) -> list[Snapshot]:
        return find_snapshots(self.path) if self.path.is_dir() else []

    def unused(self, ran: set[str]) -> list[Path]:
        """Goldens that no test of this session used, and whose every recorded test ran in it (one that did not
        run may still use the golden)."""
        out = []
        for snap in self.goldens():
            tests = recorded_tests(self.record(snap))
            if tests and all(t in ran for t in tests) and snap.path not in self.used:
                out.append(snap.path)
        return out

    def remove(self, folder: Path) -> None:
        """Delete an unused golden; refused (UsageError) while it holds a file irscope did not write there."""
        if self.path in folder.parents:
            from ..store.folder import foreign_files
            foreign = foreign_files(folder) if folder.is_dir() and not folder.is_symlink() else []
            if foreign:
                more = f" and {len(foreign) - 3} more" if len(foreign) > 3 else ""
                raise UsageError(f"the unused golden {folder} holds {', '.join(foreign[:3])}{more}: not deleted",
                                 "move those files out of it and run --irscope-update again (or delete the "
                                 "folder yourself)")
            with _writing(folder):
                shutil.rmtree(folder)
                for parent in folder.parents:  # drop variant/kernel folders left empty
                    if parent == self.path or any(parent.iterdir()):
                        break
                    parent.rmdir()


@contextmanager
def _writing(folder: Path):
    """A write into the golden root that the file system refuses (a read-only checkout, a full disk) is one
    error naming the folder, not an OSError traceback."""
    try:
        yield
    except OSError as e:
        raise EnvironmentProblem(f"cannot write the golden {folder}: {e.strerror or e}",
                                 "is the golden root read-only or its disk full? make it writable, or keep the "
                                 "goldens elsewhere (pytest --irscope-goldens DIR, irscope snapshot --goldens DIR)"
                                 ) from None


def _record_at(folder: Path) -> dict:
    """golden.json of the golden in `folder` ({} when it has none); a damaged one raises SnapshotError naming it."""
    path = folder / GOLDEN_FILE
    if not path.is_file():
        return {}
    hint = f"rewrite the golden: irscope snapshot update --goldens {folder.parent.parent.parent}"
    try:
        # never through a link out of the folder (an update would copy what it reads into the new golden.json),
        # nor more than a JSON file of a snapshot may hold
        record = loads(inside(folder, path, GOLDEN_FILE, MAX_JSON_BYTES).read_text())
    except (OSError, ValueError) as e:  # ValueError: bad JSON or bytes that are not UTF-8
        raise SnapshotError(f"{path} is damaged: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}",
                            hint) from None
    if not isinstance(record, dict):
        raise SnapshotError(f"{path} is damaged: a JSON {type(record).__name__}, not an object", hint)
    for key in ("test", "kernel", "label"):
        if record.get(key) is not None and not isinstance(record[key], str):
            raise SnapshotError(f"{path} is damaged: field '{key}' is {record[key]!r}, not a string", hint)
    tests = record.get("tests")
    if tests is not None and not (isinstance(tests, list) and all(isinstance(t, str) for t in tests)):
        raise SnapshotError(f"{path} is damaged: field 'tests' is {str(tests)[:80]!r}, not a list of strings", hint)
    return record


def recorded_tests(record: dict) -> list[str]:
    """The tests golden.json records as comparing its golden: `test`, the one that wrote it, then `tests`, the
    others an update met comparing it too."""
    return list(dict.fromkeys(([record["test"]] if record.get("test") else []) + list(record.get("tests") or ())))


def _builtin_file(name: str) -> Path | None:
    """The file of irscope's built-in kernel `name` (`blur.row` -> kernels/blur.py), or None."""
    from ..spec.library import builtin_dir, builtin_name
    if not builtin_name(name):
        return None
    try:
        file = builtin_dir() / f"{name.split('.')[0]}.py"
    except UsageError:  # the built-in library is missing
        return None
    return file.resolve() if file.is_file() else None


VERSION_MARK = "@triton-"  # `sm_90a@triton-3.6.0`: the golden of another Triton release, beside `sm_90a`


def _folder_version(folder: Path) -> str | None:
    """The Triton release of the golden in `folder` (None when there is none), read through the store."""
    if not (folder / META_FILE).is_file():
        return None
    try:
        return triton_release(load_snapshot(folder))
    except SnapshotError:
        return "?"
