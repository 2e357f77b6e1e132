"""`irscope envs add|list|remove|available`: Triton releases installed side by side (harness/envs.py).

Also the `--triton VERSION[,VERSION...]` option that compile, compare and sweep share, and the step
that makes a missing environment before their compiles start, saying so.
"""
from __future__ import annotations

import argparse

from ..render.terminal import ProgressLine, human_bytes, table


def add_parser(sub) -> None:
    p = sub.add_parser("envs", help="Triton releases installed side by side, for --triton",
                       description="One virtual environment per Triton release under $IRSCOPE_CACHE/envs "
                                   "(default ~/.cache/irscope/envs), made with pip; `--triton X` on compile, "
                                   "compare and sweep, and upgrade-check's --from/--to, compile there "
                                   "(docs/versions.md).")
    actions = p.add_subparsers(dest="action", metavar="ACTION")
    add = actions.add_parser("add", help="install one or more Triton releases (pip, from the package index)")
    add.add_argument("versions", nargs="+", metavar="VERSION", help="e.g. 3.6.0")
    actions.add_parser("list", help="the installed releases, with their folders and sizes")
    rm = actions.add_parser("remove", help="delete a release's environment")
    rm.add_argument("versions", nargs="+", metavar="VERSION")
    actions.add_parser("available", help="the releases pip can install for this Python")
    p.set_defaults(run=run)


def add_triton_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--triton", metavar="VERSION[,VERSION]",
                   help="compile under these Triton releases (each in its own environment, made on first use: "
                        "`irscope envs`); another release's snapshots go to VARIANT.triton-X.Y.Z folders")


def triton_versions(args) -> list[str]:
    """The --triton versions, with their environments made (this process's own Triton needs none)."""
    from ..harness.envs import parse_versions
    text = getattr(args, "triton", None)
    return parse_versions(text) if text is not None else []  # (--triton "" is no release: refused)


def prepare(versions, ui) -> None:
    """Make the environments that are missing, with a progress line; say that it is a first use."""
    from ..harness.envs import ensure_env, find_env, is_running
    for version in versions:
        if is_running(version) or find_env(version) is not None:
            continue
        ui.err.write(f"irscope: Triton {version} is not installed yet: creating its environment (once)\n")
        progress = ProgressLine(ui.err)
        try:
            env, _ = ensure_env(version, progress.update)
        finally:
            progress.close()
        ui.err.write(f"irscope: Triton {version} ready in {env.path}\n")


def run(args, ui) -> int:
    from ..errors import UsageError
    from ..harness import envs

    if args.action is None:
        raise UsageError("`irscope envs` needs an action", "add VERSION, list, remove VERSION or available")
    if args.action == "add":
        versions = [envs.supported_version(v) for v in args.versions]
        for version in versions:
            if envs.is_running(version):
                ui.print(f"Triton {version} is this irscope's own (no environment needed)")
                continue
            existing = envs.find_env(version)
            if existing is not None:
                if existing.problem:
                    raise envs.broken(existing, existing.problem)
                envs.check_env(existing)
                ui.print(f"Triton {version} already installed in {existing.path}")
                continue
            progress = ProgressLine(ui.err)
            try:
                env = envs.create_env(version, progress.update)
            finally:
                progress.close()
            ui.print(f"Triton {version} installed in {env.path} ({human_bytes(env.size_bytes)})")
        return 0
    if args.action == "remove":
        for version in args.versions:
            ui.print(f"removed {envs.remove_env(version)}")
        return 0
    if args.action == "available":
        running = envs.running_version()
        installed = {e.version for e in envs.list_envs()}
        for v in envs.available_versions():
            note = " (running)" if v == running else " (installed)" if v in installed else ""
            if not note and _too_old(envs, v):
                note = f" (older than {envs.MINIMUM}: irscope cannot compile with it)"
            ui.print(v + note)
        return 0
    rows = [[envs.running_version() or "-", "(this irscope's own)", "-"]]
    for e in envs.list_envs():
        note = (f" (broken: {e.problem}; irscope envs remove {e.version} && irscope envs add {e.version})"
                if e.problem else f" (older than {envs.MINIMUM}: not usable)" if _too_old(envs, e.version) else "")
        rows.append([e.version, f"{e.path}{note}", "-" if e.problem else human_bytes(e.size_bytes)])
    ui.print(table(["triton", "environment", "size"], rows, right=(2,)))
    return 0


def _too_old(envs, version: str) -> bool:
    from ..errors import UsageError
    try:
        envs.supported_version(version)
    except UsageError:
        return True
    return False
