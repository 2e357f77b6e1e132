"""Triton releases side by side: one virtual environment per version under irscope's cache.

Like Compiler Explorer's one-install-per-compiler, `irscope envs add 3.6.0` makes
`$IRSCOPE_CACHE/envs/triton-3.6.0` (default `~/.cache/irscope/envs/triton-3.6.0`) holding only
`triton==3.6.0` and irscope's light dependencies (pyyaml). irscope itself is never installed there: a
child process of the env's python loads this irscope package by its folder (remote.py), and nothing
else of the parent's, so the env cannot drift from the irscope that drives it, and the parent's own
Triton (in the same site-packages as an installed irscope) cannot stand in for the env's.

An environment counts only once its marker file (`irscope-env.json`) exists, written after pip
succeeded, so an interrupted install is redone instead of half-used. irscope removes only folders it
started itself (`irscope-env.started`, written before the venv): a folder someone made by hand is
adopted when it holds the right Triton, else left alone. A lock file keeps two irscope processes from
installing, or removing, the same version at once; lock files stay (removing one while another process
waits on it would let a third lock a new file beside it).
"""
from __future__ import annotations

import errno
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from ..errors import EnvironmentProblem, UsageError

MARKER = "irscope-env.json"
STARTED = "irscope-env.started"
LIGHT_DEPENDENCIES = ("pyyaml>=6",)
# The oldest release the harness compiles with (docs/versions.md): 3.4 lacks what harness/specialise.py
# drives (JITFunction._pack_args), 3.0-3.3 lack triton.knobs altogether.
MINIMUM = "3.5.0"
_VERSION = re.compile(r"^(\d+)\.(\d+)(?:\.(\d+))?((?:a|b|rc|\.post|\.dev)\d+)?$")


@dataclass(frozen=True)
class TritonEnv:
    """One installed Triton release: its version, folder and interpreter; `problem` says why it cannot
    be used (a damaged marker, a missing python), "" when it can."""

    version: str
    path: Path
    python: Path
    installed_at: str = ""
    size_bytes: int = 0
    problem: str = ""


def cache_root() -> Path:
    """Where environments live: $IRSCOPE_CACHE/envs, else ~/.cache/irscope/envs."""
    base = os.environ.get("IRSCOPE_CACHE")
    return (Path(base) if base else Path.home() / ".cache" / "irscope") / "envs"


def normalise_version(text: str) -> str:
    """`3.6` -> `3.6.0`; anything that is not a release number is a usage error."""
    v = text.strip()
    if v.startswith(("triton==", "triton-")):
        v = v[7:] if v.startswith("triton-") else v[8:]
    m = _VERSION.match(v)
    if not m:
        raise UsageError(f"'{text}' is not a Triton version", "write it like 3.6.0; `irscope envs available` lists them")
    # As pip reads it (PEP 440): 03.6 and 3.06.0 are 3.6.0, 3.6rc1 is 3.6.0rc1. Kept as typed, one
    # release would get two folders (an env named triton-03.6.0 that "runs 3.6.0, not 03.6.0").
    major, minor, patch, suffix = m.groups()
    suffix = re.sub(r"\d+$", lambda d: str(int(d.group())), suffix or "")
    return f"{int(major)}.{int(minor)}.{int(patch or 0)}{suffix}"


def supported_version(text: str) -> str:
    """normalise_version, refusing releases older than MINIMUM (they install, then every compile fails)."""
    v = normalise_version(text)
    if _sort_key(v)[:3] < _sort_key(MINIMUM)[:3]:
        raise UsageError(f"Triton {v} is older than {MINIMUM}, the oldest release irscope compiles with",
                         f"name {MINIMUM} or newer (docs/versions.md says why)")
    return v


def parse_versions(text: str) -> list[str]:
    """`--triton 3.6.0,3.9.0`: the versions in order, each once."""
    versions = [supported_version(v) for v in text.split(",") if v.strip()]
    if not versions:
        raise UsageError("--triton needs a version", "e.g. --triton 3.6.0 or --triton 3.6.0,3.9.0")
    return list(dict.fromkeys(versions))


def running_version() -> str:
    """The Triton of this process, read from its metadata (no import of triton)."""
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version("triton")
    except PackageNotFoundError:
        return ""


def is_running(version: str) -> bool:
    return normalise_version(version) == running_version()


def variant_for(variant: str, version: str | None) -> str:
    """The variant folder of a compile under `version`: unchanged for the running Triton (so today's
    folders and goldens stay where they are), `default.triton-3.6.0` for another one."""
    if not version or is_running(version):
        return variant
    return f"{variant}.triton-{normalise_version(version)}"


def env_path(version: str) -> Path:
    return cache_root() / f"triton-{normalise_version(version)}"


def _python_of(path: Path) -> Path:
    return path / ("Scripts/python.exe" if sys.platform == "win32" else "bin/python")


def broken(env: TritonEnv, why: str) -> EnvironmentProblem:
    v = env.version
    return EnvironmentProblem(f"the Triton {v} environment is broken ({env.path}): {why}",
                              f"irscope envs remove {v} && irscope envs add {v}")


def find_env(version: str) -> TritonEnv | None:
    """The environment of `version` whose install finished (its marker exists), or None. One whose
    marker is damaged or whose python is gone comes back with its `problem` said."""
    version = normalise_version(version)
    path = env_path(version)
    try:
        text = (path / MARKER).read_text()
    except OSError:
        return None
    python = _python_of(path)
    try:
        meta = json.loads(text)
        installed_at, size = meta.get("installed_at", ""), meta.get("size_bytes", 0)
        if not isinstance(installed_at, str) or not isinstance(size, int) or isinstance(size, bool):
            raise ValueError
    except (ValueError, AttributeError):
        return TritonEnv(version, path, python, problem=f"its marker {MARKER} is damaged")
    if not python.exists():
        return TritonEnv(version, path, python, installed_at, size, problem=f"its python ({python}) is missing")
    return TritonEnv(version, path, python, installed_at, size)


def list_envs() -> list[TritonEnv]:
    root = cache_root()
    found = []
    try:
        children = sorted(root.iterdir()) if root.is_dir() else []
    except OSError:
        children = []
    for child in children:
        if child.name.startswith("triton-") and child.is_dir():
            try:
                version = normalise_version(child.name[len("triton-"):])
            except UsageError:  # a folder whose name is no version: not irscope's
                continue
            if child.name != f"triton-{version}":  # (triton-03.6.0 is not the folder of 3.6.0: not irscope's)
                continue
            env = find_env(version)
            if env is not None:
                found.append(env)
    return sorted(found, key=lambda e: _sort_key(e.version))


def _sort_key(version: str) -> tuple:
    return tuple(int(p) if p.isdigit() else 0 for p in re.split(r"[.]", version))


def _cache_problem(e: OSError) -> EnvironmentProblem:
    return EnvironmentProblem(f"cannot use the environment cache {cache_root()}: {e.strerror or e}",
                              "set IRSCOPE_CACHE to a folder you can write (default ~/.cache/irscope)")


@contextmanager
def _locked(version: str, *, wait: bool, on_wait: Callable[[str], None] | None = None) -> Iterator[None]:
    """The install lock of `version`; without `wait`, a usage error while another irscope holds it; with
    it, `on_wait` hears that this one waits (pip may take minutes: silence would look like a hang)."""
    import fcntl
    root = cache_root()
    try:
        root.mkdir(parents=True, exist_ok=True)
        # Never truncated, never followed: a link there to a file of the user's is not ours to write.
        fd = os.open(root / f"triton-{version}.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
        lock = os.fdopen(fd, "r+")  # noqa: SIM115 - closed below
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise EnvironmentProblem(f"cannot use the environment cache {root}: its lock file {e.filename} is a link, "
                                     "which irscope does not follow", f"remove the link (rm {shlex.quote(str(e.filename))})"
                                     " or set IRSCOPE_CACHE to another folder") from None
        raise _cache_problem(e) from None
    with lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if not wait:
                raise UsageError(f"another irscope is installing Triton {version} right now",
                                 "wait for it to finish, then try again") from None
            if on_wait:
                on_wait(f"waiting for another irscope that is installing Triton {version}")
            fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _not_made_by_irscope(path: Path) -> str:
    """Why irscope did not make the folder at `path` (so never deletes it), or "" when it did. A link
    is never irscope's, whatever the folder it leads to holds."""
    if path.is_symlink():
        return f"it is a link to {os.readlink(path)}"
    if (path / MARKER).exists() or (path / STARTED).exists():
        return ""
    return f"it has no {MARKER}"


def remove_env(version: str) -> Path:
    version = normalise_version(version)
    path = env_path(version)
    if is_running(version):
        raise UsageError(f"Triton {version} is the running Triton (this irscope's own), not an environment irscope "
                         "made", "remove it with pip if you mean to; `irscope envs list` shows the installed ones")
    if not path.exists() and not path.is_symlink():
        raise UsageError(f"no environment for Triton {version} under {cache_root()}",
                         "`irscope envs list` shows the installed ones")
    with _locked(version, wait=False):
        why = _not_made_by_irscope(path)
        if why.startswith("it is a link"):
            raise UsageError(f"{path} was not made by irscope ({why}): irscope leaves it alone",
                             f"remove the link yourself if you mean to (rm {shlex.quote(str(path))})")
        if why:
            raise UsageError(f"{path} was not made by irscope ({why}): irscope leaves it alone",
                             f"delete it yourself if you mean to (rm -rf {shlex.quote(str(path))}); an install an "
                             "earlier irscope left unfinished looks the same")
        shutil.rmtree(path)
    return path


def ensure_env(version: str, on_progress: Callable[[str], None] | None = None) -> tuple[TritonEnv, bool]:
    """The environment of `version`, created first if missing, checked to run that Triton: (env, created)."""
    version = supported_version(version)
    env = find_env(version)
    if env is not None:
        if env.problem:
            raise broken(env, env.problem)
        check_env(env)
        return env, False
    return create_env(version, on_progress), True


_checked: set[tuple[str, float]] = set()


def check_env(env: TritonEnv) -> None:
    """Run the env's python once as a compile would (remote.py's check): its `import triton` must work
    and give `env.version`. Once a process per env (about half a second)."""
    try:
        stamp = (str(env.path), (env.path / MARKER).stat().st_mtime)
    except OSError:
        stamp = (str(env.path), 0.0)
    if stamp in _checked:
        return
    problem = _run_problem(env)
    if problem:
        raise broken(env, problem)
    _checked.add(stamp)


def _run_problem(env: TritonEnv) -> str:
    """Why `env`'s python cannot compile for irscope under its release, or ""."""
    from .remote import check_triton
    r = check_triton(env.python, child_environment(env))
    if r.get("status") == "broken":
        return f"its python cannot import triton: {r.get('message', '')}"
    if r.get("status") != "ok":
        message = str(r.get("message", "")).replace("the compiler process ", "it ")
        return f"its python cannot run irscope's compile process ({message})"
    found = str(r.get("triton", ""))
    try:
        same = normalise_version(found) == env.version
    except UsageError:
        same = found == env.version
    return "" if same else f"it runs Triton {found}, not {env.version}"


def create_env(version: str, on_progress: Callable[[str], None] | None = None) -> TritonEnv:
    """Make the environment of `version` with pip from the package index; `on_progress` gets one short
    line per step (pip's output condensed: collecting, downloading, installing). A folder there that
    irscope did not start is adopted when it runs that Triton, else refused, never deleted."""
    version = supported_version(version)
    path = env_path(version)
    say = on_progress or (lambda _line: None)
    with _locked(version, wait=True, on_wait=say):  # a second irscope waits here, then finds the env made
        env = find_env(version)
        if env is not None:
            if env.problem:
                raise broken(env, env.problem)
            check_env(env)
            return env
        why = _not_made_by_irscope(path) if path.exists() or path.is_symlink() else ""
        if why:
            return _adopt(version, path, say, why)
        try:
            if path.exists():
                shutil.rmtree(path)  # an install irscope started and did not finish: start again
            path.mkdir(parents=True)
            (path / STARTED).write_text(f"{os.getpid()}\n")
        except OSError as e:
            raise _cache_problem(e) from None
        started = time.perf_counter()
        try:  # whatever stops it (pip's error, Ctrl-C in either step) leaves no half-made folder behind
            say(f"creating a virtual environment for Triton {version} in {path}")
            proc = subprocess.run([sys.executable, "-m", "venv", str(path)], capture_output=True, text=True)
            if proc.returncode != 0:
                raise EnvironmentProblem(f"could not create a virtual environment in {path}: "
                                         f"{_last_line(proc.stderr or proc.stdout)}",
                                         "check that the folder is writable (or set IRSCOPE_CACHE) and that "
                                         "python's venv module is installed")
            _pip_install(_python_of(path), version, say)
        except BaseException:
            shutil.rmtree(path, ignore_errors=True)
            raise
        size = _size(path)
        _write_marker(path, {"triton": version, "python": _python_version(), "installed_at": _now(),
                             "seconds": round(time.perf_counter() - started, 1), "size_bytes": size})
        (path / STARTED).unlink(missing_ok=True)
        say(f"Triton {version} installed in {time.perf_counter() - started:.0f} s")
        env = find_env(version)
        assert env is not None
        check_env(env)
    return env


def _adopt(version: str, path: Path, say: Callable[[str], None], why: str) -> TritonEnv:
    """A folder made by hand at the env's place: used (its marker written) when its python runs
    triton==version, else an error that leaves it as it is."""
    refused = EnvironmentProblem(
        f"{path} was not made by irscope ({why}) and cannot be used, so irscope leaves it alone",
        f"make it a virtual environment holding triton=={version} and pyyaml (python -m venv {path}; {path}/bin/pip "
        f"install triton=={version} pyyaml) and run `irscope envs add {version}` again to use it; if it is an "
        f"install an earlier irscope left unfinished, remove it (rm -rf {shlex.quote(str(path))}) and add it again")
    python = _python_of(path)
    problem = _run_problem(TritonEnv(version, path, python)) if python.exists() else f"it has no {python}"
    if problem:
        raise EnvironmentProblem(f"{refused.message}: {problem}", refused.hint)
    say(f"using the environment made by hand in {path}")
    _write_marker(path, {"triton": version, "installed_at": _now(), "size_bytes": _size(path), "adopted": True})
    env = find_env(version)
    assert env is not None
    return env


def _size(path: Path) -> int:
    """The bytes of the files under `path` (links not followed: they are not the env's own)."""
    total = 0
    for f in path.rglob("*"):
        try:
            if f.is_file() and not f.is_symlink():
                total += f.stat().st_size
        except OSError:
            pass
    return total


def _write_marker(path: Path, meta: dict) -> None:
    tmp = path / (MARKER + ".part")
    tmp.write_text(json.dumps(meta, indent=1) + "\n")
    tmp.replace(path / MARKER)


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _python_version() -> str:
    return ".".join(map(str, sys.version_info[:3]))


_STEP = re.compile(r"^\s*(Collecting|Downloading|Processing|Installing collected packages|Successfully installed)\b")


def _pip_install(python: Path, version: str, say: Callable[[str], None]) -> None:
    cmd = [str(python), "-m", "pip", "install", "--progress-bar", "off", "--disable-pip-version-check",
           f"triton=={version}", *LIGHT_DEPENDENCIES]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1,
                            env={**os.environ, "PIP_NO_INPUT": "1", "PYTHONPATH": ""})
    tail: list[str] = []
    assert proc.stdout is not None
    for line in proc.stdout:
        line = line.rstrip()
        tail = (tail + [line])[-40:]
        if _STEP.match(line):
            say(f"pip: {line.strip()[:100]}")
    code = proc.wait()
    if code != 0:
        raise _pip_problem(version, "\n".join(tail))


def _pip_problem(version: str, log: str) -> EnvironmentProblem:
    lowered = log.lower()
    if any(w in lowered for w in ("network is unreachable", "connection", "name or service", "temporary failure",
                                  "max retries", "offline", "could not fetch url", "(from versions: none)")):
        # pip words an unreachable index as "no version (from versions: none)": a reachable one lists some
        return EnvironmentProblem(f"could not download Triton {version}: pip reached no package index that has "
                                  "Triton (offline?)",
                                  "connect to the network (or configure pip's index), then run `irscope envs add "
                                  f"{version}` again")
    if "no matching distribution" in lowered or "could not find a version" in lowered:
        return EnvironmentProblem(f"pip has no Triton {version} for this Python ({_python_version()})",
                                  "`irscope envs available` (pip index versions triton) lists the versions it has")
    return EnvironmentProblem(f"pip could not install Triton {version}: {_last_line(log)}",
                              f"run `irscope envs add {version}` to see pip's progress, or make the environment by "
                              f"hand (python -m venv {env_path(version)}, then pip install triton=={version} pyyaml "
                              f"there) and run `irscope envs add {version}` to use it")


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.lower().startswith("error")]
    return (errors or lines or ["no output"])[-1][:200]


INDEX_TIMEOUT = 120.0  # seconds for `pip index versions`: an index that accepts and never answers


def available_versions() -> list[str]:
    """What pip can install for this Python (`pip index versions triton`)."""
    try:
        proc = subprocess.run([sys.executable, "-m", "pip", "index", "versions", "triton",
                               "--disable-pip-version-check"], capture_output=True, text=True, errors="replace",
                              timeout=INDEX_TIMEOUT)
    except subprocess.TimeoutExpired:
        raise EnvironmentProblem(f"pip found no answer from the package index in {INDEX_TIMEOUT:g} s "
                                 "(`pip index versions triton`)",
                                 "check the network and pip's index (pip config list), then try again") from None
    m = re.search(r"Available versions:\s*(.+)", proc.stdout)
    if proc.returncode != 0 or not m:
        raise _pip_problem("(any)", proc.stderr + proc.stdout)
    return [v.strip() for v in m.group(1).split(",") if v.strip()]


def child_environment(env: TritonEnv) -> dict[str, str]:
    """The environment variables of a process that runs irscope's code under `env`'s Triton: none of
    the parent's Triton overrides for tools it ships itself, and the release it must find
    (IRSCOPE_TRITON, checked by remote.py). The child runs isolated (`python -I`, remote.py): no
    PYTHONPATH, no current directory, no user site-packages reach its imports."""
    variables = {k: v for k, v in os.environ.items()
                 if not k.startswith("TRITON_") or k in ("TRITON_CACHE_DIR", "TRITON_HOME")}
    variables.pop("PYTHONPATH", None)
    variables.pop("PYTHONHOME", None)
    variables["IRSCOPE_TRITON"] = env.version
    return variables
