"""Compile under another Triton release: `<env>/bin/python -m irscope.harness.remote JOB.json RESULT.json`.

The parent (batch.py's worker, in its crash-isolated child) writes a job: the point (kernel, target,
options), the snapshot root and the variant folder to use; this process, running the env's Triton,
compiles it exactly as `compile_one` does,
writes the snapshot folder, and writes the outcome as JSON. A crash here is a non-zero exit status that
the parent reports as this point's crash. `--plan` instead writes the content keys of a list of points
under this Triton (no compile), so that sweeps can tell which folders are fresh.

The child is `python -I -c BOOT`: isolated, so neither the current directory (a `triton/` folder
there), PYTHONPATH nor the user's site-packages come before the env's own packages, and BOOT loads the
irscope package from its folder alone. Putting that folder's parent on the path instead would, for an
installed irscope, put the parent's whole site-packages, its Triton included, before the env's. Before
any job it checks that `import triton` works and gives the release the parent asked for
(IRSCOPE_TRITON): a mismatch is an error naming both, never a snapshot filed under the wrong release.

The job is JSON made by irscope, not a pickle: the two processes may run different Pythons' pickles of
different irscope objects, and JSON keeps the boundary plain.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path

from ..spec.kernel import CompileOptions, Tensor, TensorDesc


def options_to_json(options: CompileOptions) -> dict:
    data = asdict(options)
    # A tensor or descriptor argument is a dataclass that asdict would flatten into a plain dict, which
    # the other side would read as a word: keep what it was.
    data["args"] = [[name, _value_to_json(value)] for name, value in options.args]
    return data


def options_from_json(data: dict) -> CompileOptions:
    fields = dict(data)
    for name in ("constexprs", "backend_options", "divisibility", "args"):
        if name in fields and fields[name] is not None:
            fields[name] = tuple(tuple(x) if isinstance(x, list) else x for x in fields[name])
    if fields.get("args"):
        fields["args"] = tuple((name, _value_from_json(value)) for name, value in fields["args"])
    return CompileOptions(**fields)


def _value_to_json(value):
    if isinstance(value, Tensor):
        return {"tensor": asdict(value)}
    if isinstance(value, TensorDesc):
        return {"descriptor": asdict(value)}
    return value


def _value_from_json(value):
    if isinstance(value, dict) and "tensor" in value:
        return Tensor(**value["tensor"])
    if isinstance(value, dict) and "descriptor" in value:
        d = dict(value["descriptor"])
        for name in ("shape", "block_shape", "strides"):
            d[name] = tuple(d.get(name) or ())
        return TensorDesc(**d)
    return value


# Loads irscope from its package folder (argv[1]) without putting anything else on sys.path.
BOOT = ("import importlib.util, sys\n"
        "pkg = sys.argv[1]\n"
        "spec = importlib.util.spec_from_file_location('irscope', pkg + '/__init__.py', "
        "submodule_search_locations=[pkg])\n"
        "module = importlib.util.module_from_spec(spec)\n"
        "sys.modules['irscope'] = module\n"
        "spec.loader.exec_module(module)\n"
        "from irscope.harness.remote import main\n"
        "sys.exit(main(sys.argv[2:]))\n")


def child_command(python: Path, *args: str) -> list[str]:
    """The command line that runs main(args) in `python`, isolated, with this irscope package alone."""
    return [str(python), "-I", "-c", BOOT, str(Path(__file__).resolve().parents[1]), *args]


def check_triton(python: Path, env_vars: dict[str, str]) -> dict:
    """What `python` imports as triton: {"status": "ok", "triton": version} or why it cannot."""
    import shutil
    import tempfile
    workdir = Path(tempfile.mkdtemp(prefix="irscope-check-"))
    try:
        return run_remote(python, env_vars, {"mode": "check"}, timeout=120, workdir=workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def run_remote(python: Path, env_vars: dict[str, str], job: dict, *, timeout: float | None, workdir: Path) -> dict:
    """Run one job in the env's interpreter and return its result dict; a crash or timeout is a result
    too ({"status": "crashed"|"timeout", "message": ...})."""
    job_file, result_file, log_file = workdir / "job.json", workdir / "result.json", workdir / "stderr.log"
    job_file.write_text(json.dumps(job, default=str))
    started = time.monotonic()
    # Its output goes to a file, of which only the end is read: a process that prints megabytes, or bytes
    # that are no text, costs no memory here and is no decoding error.
    with open(log_file, "wb") as log:
        try:
            proc = subprocess.run(child_command(python, str(job_file), str(result_file)), env=env_vars,
                                  stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log, timeout=timeout)
        except subprocess.TimeoutExpired:
            return {"status": "timeout", "message": f"killed after {timeout:g} s"}
    result = _read_result(result_file, job)
    if result is not None:
        return result
    if proc.returncode < 0:
        try:
            what = f"was killed by signal {signal.Signals(-proc.returncode).name}"
        except ValueError:
            what = f"was killed by signal {-proc.returncode}"
    elif result_file.exists():
        what = "wrote a result irscope cannot read"
    else:
        what = f"exited with status {proc.returncode}"
    tail = [ln for ln in _tail(log_file).splitlines() if ln.strip()][-1:]
    return {"status": "crashed", "message": f"the compiler process {what}" + (f": {tail[0][:300]}" if tail else ""),
            "seconds": time.monotonic() - started}


_RESULT_LIMIT = 64 << 20  # a plan of a huge sweep is a few MB of keys
_STATUSES = ("ok", "failed", "usage", "crashed", "timeout", "broken")


def _read_result(path: Path, job: dict) -> dict | None:
    """The child's result, or None when it wrote none, or one that is not what main() writes (a python
    at the env's place that is not the env's, a child killed while writing)."""
    try:
        if path.stat().st_size > _RESULT_LIMIT:
            return None
        result = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None
    if not isinstance(result, dict) or result.get("status") not in _STATUSES:
        return None
    for key in ("message", "hint", "triton"):
        if key in result and not isinstance(result[key], str):
            return None
    if result["status"] not in ("ok", "failed") and "message" not in result:
        return None
    if job.get("mode") in (None, "compile") and result["status"] in ("ok", "failed"):
        if not all(isinstance(result.get(k), str) for k in ("path", "variant", "label")):
            return None
        if not all(isinstance(result.get(k, 0), (int, float)) for k in ("seconds", "cpu_seconds")):
            return None
        if not isinstance(result.get("error"), (dict, type(None))):
            return None
    return result


def _tail(path: Path, size: int = 8192) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(max(0, f.seek(0, os.SEEK_END) - size))
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


def plan_keys(version: str, points: list[tuple[str, str, CompileOptions]]) -> list[str | None]:
    """The content keys of (kernel, target, options) points under Triton `version`, computed by that
    version's interpreter in one process (no compile); None where a point could not be planned."""
    import shutil
    import tempfile
    from .envs import child_environment, ensure_env

    env, _ = ensure_env(version)
    workdir = Path(tempfile.mkdtemp(prefix="irscope-plan-"))
    try:
        job = {"mode": "plan", "points": [{"kernel": k, "target": t, "options": options_to_json(o)}
                                          for k, t, o in points]}
        r = run_remote(env.python, child_environment(env), job, timeout=600, workdir=workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    keys = r.get("keys") if r.get("status") == "ok" else None
    return list(keys) if isinstance(keys, list) and len(keys) == len(points) else [None] * len(points)


def _die_with_parent() -> None:
    if sys.platform.startswith("linux"):
        try:
            import ctypes
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass


def _compile(job: dict) -> dict:
    from . import compile_kernel
    from ..errors import IrscopeError
    from .batch import load_kernel
    from ..store.folder import snapshot_dir, write_folder
    from ..store.writer import snapshot_files
    from ..targets import get_target

    started = time.perf_counter()
    try:
        spec = load_kernel(job["kernel"])
        target = get_target(job["target"])
        log = Path(job["log"]) if job.get("log") else None
        result = compile_kernel(spec, target, options_from_json(job["options"]), capture_fds=True, log_path=log)
    except IrscopeError as e:
        return {"status": "usage", "message": e.message, "hint": e.hint or ""}
    if result.not_cached:  # the machine's fault, not the kernel's (a ptxas killed from outside): no folder
        return {"status": "crashed", "message": f"{result.not_cached} (not cached: compiled again next run)",
                "not_cached": result.not_cached, "seconds": time.perf_counter() - started}
    result.variant = result.variant + job.get("suffix", "")
    out = Path(job["out"])
    folder = snapshot_dir(out, spec.name, result.variant, target.name)
    write_folder(folder, snapshot_files(result))
    t = os.times()
    return {"status": "ok" if result.ok else "failed", "path": str(folder), "variant": result.variant,
            "error": result.error, "seconds": time.perf_counter() - started, "cpu_seconds": t.user + t.system,
            "label": folder.relative_to(out).as_posix()}


def _plan(job: dict) -> dict:
    from . import plan
    from .batch import load_kernel
    from ..targets import get_target

    keys = []
    for p in job["points"]:
        try:
            keys.append(plan(load_kernel(p["kernel"]), get_target(p["target"]),
                             options_from_json(p["options"]))[0])
        except Exception:  # noqa: BLE001 - that point is then compiled, and its error reported there
            keys.append(None)
    return {"status": "ok", "keys": keys}


def _triton() -> dict:
    """This process's Triton, imported: {"status": "ok", "triton": version}, or "broken" with the reason."""
    try:
        import triton
    except BaseException as e:  # noqa: BLE001 - a missing libtriton.so is an ImportError, a bad one may be anything
        lines = [ln for ln in str(e).splitlines() if ln.strip()]
        return {"status": "broken", "message": f"{type(e).__name__}: {lines[-1] if lines else ''}"[:300]}
    return {"status": "ok", "triton": str(getattr(triton, "__version__", "?"))}


def _environment_problem() -> dict | None:
    """A usage result when this is not the Triton the parent asked for (IRSCOPE_TRITON), else None."""
    expected = os.environ.get("IRSCOPE_TRITON", "")
    found = _triton()
    hint = f"irscope envs remove {expected} && irscope envs add {expected}"
    if found["status"] != "ok":
        return {"status": "usage", "message": f"the Triton {expected or '?'} environment is broken: its python "
                                              f"cannot import triton: {found['message']}", "hint": hint}
    if expected and found["triton"] != expected:
        return {"status": "usage", "message": f"the Triton {expected} environment runs Triton {found['triton']}, "
                                              f"not {expected}", "hint": hint}
    return None


def main(argv: list[str]) -> int:
    _die_with_parent()
    job = json.loads(Path(argv[0]).read_text())
    if job.get("mode") == "check":
        result = _triton()
    else:
        result = _environment_problem() or (_plan(job) if job.get("mode") == "plan" else _compile(job))
    tmp = Path(argv[1] + ".part")
    tmp.write_text(json.dumps(result))
    tmp.replace(argv[1])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
