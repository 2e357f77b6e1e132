"""`irscope capture` in the places a real program puts it: a folder with modules of its own, a program that
forks or is interrupted, an output folder that already holds files; and launch files that name files
elsewhere. Each keeps the user's files and records what the program launched."""
from __future__ import annotations

import json
from pathlib import Path

PROGRAMS = Path(__file__).parent / "capture_programs"
SMALL = PROGRAMS / "small.py"


def _lines(err: str, kind: str) -> list[str]:
    return [ln for ln in err.splitlines() if ln.startswith(f"irscope: {kind}: ")]


def test_modules_in_the_users_folder_do_not_shadow_irscope_or_triton(cli, tmp_path, capfd):
    # The child ran as `python -m irscope.harness.capture_boot`, which puts the current folder first on
    # sys.path: a triton.py there replaced Triton (an internal error) and an irscope.py ran instead of
    # irscope (exit 1, blamed on os._exit). `python prog.py` never imports from the current folder.
    (tmp_path / "triton.py").write_text("print('SHADOW triton')\nraise ImportError('shadow')\n")
    (tmp_path / "irscope.py").write_text("print('SHADOW irscope')\n")
    code, out, err = cli("capture", "--no-compile", "--out", "snaps", "--", "python", str(SMALL))
    child = capfd.readouterr()
    assert code == 0, err + child.err
    assert "SHADOW" not in child.out and "small program done" in child.out
    assert "4 specialisations of 2 kernels" in out


def test_a_module_run_with_dash_m_is_still_found_in_the_current_folder(cli, tmp_path, capfd):
    (tmp_path / "mymod.py").write_text("print('mymod ran')\n")
    code, out, err = cli("capture", "--no-compile", "--out", "snaps", "--", "-m", "mymod")
    assert code == 0, err
    assert capfd.readouterr().out.startswith("mymod ran")
