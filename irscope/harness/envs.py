"""Triton releases side by side: one virtual environment per version under irscope's cache.

Like Compiler Explorer's one-install-per-compiler, `irscope envs add 3.6.0` makes
`$IRSCOPE_CACHE/envs/triton-3.6.0` (default `~/.cache/irscope/envs/triton-3.6.0`) holding only
`triton==3.6.0` and irscope's light dependencies (pyyaml). irscope itself is never installed there: a
child process of the env's python reaches this checkout's code through PYTHONPATH (remote.py), so the
env cannot drift from the irscope that drives it.

An environment counts only once its marker file (`irscope-env.json`) exists, written after pip
succeeded, so an interrupted install is redone instead of half-used. A lock file keeps two irscope
processes from installing the same version at once.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ..errors import EnvironmentProblem, UsageError

MARKER = "irscope-env.json"
LIGHT_DEPENDENCIES = ("pyyaml>=6",)
_VERSION = re.compile(r"^\d+\.\d+(?:\.\d+)?(?:(?:a|b|rc|\.post|\.dev)\d+)?$")


@dataclass(frozen=True)
class TritonEnv:
    """One installed Triton release: its version, folder and interpreter."""

    version: str
    path: Path
    python: Path
    installed_at: str = ""
    size_bytes: int = 0


def cache_root() -> Path:
    """Where environments live: $IRSCOPE_CACHE/envs, else ~/.cache/irscope/envs."""
    base = os.environ.get("IRSCOPE_CACHE")
    return (Path(base) if base else Path.home() / ".cache" / "irscope") / "envs"


def normalise_version(text: str) -> str:
    """`3.6` -> `3.6.0`; anything that is not a release number is a usage error."""
    v = text.strip()
    if v.startswith(("triton==", "triton-")):
        v = v[7:] if v.startswith("triton-") else v[8:]
    if not _VERSION.match(v):
        raise UsageError(f"'{text}' is not a Triton version", "write it like 3.6.0; `irscope envs available` lists them")
    if v.count(".") == 1:
        v += ".0"
    return v


def parse_versions(text: str) -> list[str]:
    """`--triton 3.6.0,3.9.0`: the versions in order, each once."""
    versions = [normalise_version(v) for v in text.split(",") if v.strip()]
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


def find_env(version: str) -> TritonEnv | None:
    """The complete environment of `version`, or None."""
    path = env_path(version)
    try:
        meta = json.loads((path / MARKER).read_text())
    except (OSError, ValueError):
        return None
    python = _python_of(path)
    if not python.exists():
        return None
    return TritonEnv(normalise_version(version), path, python, str(meta.get("installed_at", "")),
                     int(meta.get("size_bytes", 0)))


def list_envs() -> list[TritonEnv]:
    root = cache_root()
    found = []
    if root.is_dir():
        for child in sorted(root.iterdir()):
            if child.name.startswith("triton-") and child.is_dir():
                env = find_env(child.name[len("triton-"):])
                if env is not None:
                    found.append(env)
    return sorted(found, key=lambda e: _sort_key(e.version))


def _sort_key(version: str) -> tuple:
    return tuple(int(p) if p.isdigit() else 0 for p in re.split(r"[.]", version))


def remove_env(version: str) -> Path:
    path = env_path(version)
    if not path.exists():
        raise UsageError(f"no environment for Triton {normalise_version(version)} under {cache_root()}",
                         "`irscope envs list` shows the installed ones")
    shutil.rmtree(path)
    return path


def ensure_env(version: str, on_progress: Callable[[str], None] | None = None) -> tuple[TritonEnv, bool]:
    """The environment of `version`, created first if missing: (env, created)."""
    env = find_env(version)
    if env is not None:
        return env, False
    return create_env(version, on_progress), True


def create_env(version: str, on_progress: Callable[[str], None] | None = None) -> TritonEnv:
    """Make the environment of `version` with pip from the package index; `on_progress` gets one short
    line per step (pip's output condensed: collecting, downloading, installing)."""
    import fcntl

    version = normalise_version(version)
    path = env_path(version)
    path.parent.mkdir(parents=True, exist_ok=True)
    say = on_progress or (lambda _line: None)
    with open(path.parent / f"triton-{version}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # a second irscope waits here, then finds the env made
        env = find_env(version)
        if env is not None:
            return env
        if path.exists():
            shutil.rmtree(path)  # an interrupted install: start again
        started = time.perf_counter()
        say(f"creating a virtual environment for Triton {version} in {path}")
        proc = subprocess.run([sys.executable, "-m", "venv", str(path)], capture_output=True, text=True)
        if proc.returncode != 0:
            shutil.rmtree(path, ignore_errors=True)
            raise EnvironmentProblem(f"could not create a virtual environment in {path}: "
                                     f"{_last_line(proc.stderr or proc.stdout)}",
                                     "check that the folder is writable (or set IRSCOPE_CACHE) and that python's "
                                     "venv module is installed")
        try:
            _pip_install(_python_of(path), version, say)
        except BaseException:
            shutil.rmtree(path, ignore_errors=True)
            raise
        size = sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink())
        meta = {"triton": version, "python": _python_version(), "installed_at": time.strftime("%Y-%m-%dT%H:%M:%SZ",
                time.gmtime()), "seconds": round(time.perf_counter() - started, 1), "size_bytes": size}
        (path / MARKER).write_text(json.dumps(meta, indent=1) + "\n")
        say(f"Triton {version} installed in {time.perf_counter() - started:.0f} s")
    env = find_env(version)
    assert env is not None
    return env


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
                              f"run `irscope envs add {version}` to see pip's progress, or install by hand into "
                              f"{env_path(version)}")


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.lower().startswith("error")]
    return (errors or lines or ["no output"])[-1][:200]


def available_versions() -> list[str]:
    """What pip can install for this Python (`pip index versions triton`)."""
    proc = subprocess.run([sys.executable, "-m", "pip", "index", "versions", "triton", "--disable-pip-version-check"],
                          capture_output=True, text=True, timeout=120)
    m = re.search(r"Available versions:\s*(.+)", proc.stdout)
    if proc.returncode != 0 or not m:
        raise _pip_problem("(any)", proc.stderr + proc.stdout)
    return [v.strip() for v in m.group(1).split(",") if v.strip()]


def child_environment(env: TritonEnv) -> dict[str, str]:
    """The environment variables of a process that runs irscope's code under `env`'s Triton: this
    checkout on PYTHONPATH, none of the parent's Triton overrides for tools it ships itself."""
    root = str(Path(__file__).resolve().parents[2])
    variables = {k: v for k, v in os.environ.items()
                 if not k.startswith("TRITON_") or k in ("TRITON_CACHE_DIR", "TRITON_HOME")}
    variables["PYTHONPATH"] = root
    variables.pop("PYTHONHOME", None)
    return variables
