"""The real app in a real terminal: tmux runs `irscope tui ROOT`, keys go in, the screen is read back."""
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (apt-get install tmux)")


class Tmux:
    def __init__(self, name: str, cwd: Path):
        self.name, self.cwd = name, cwd

    def start(self, command: str, width: int, height: int) -> None:
        # Without a client attached, tmux may keep its default 80x24 until told otherwise: size the window
        # explicitly, and start the app only once it has its size.
        subprocess.run(["tmux", "new-session", "-d", "-s", self.name, "-x", str(width), "-y", str(height),
                        "-c", str(self.cwd), f"sleep 1; {command}"], check=True)
        subprocess.run(["tmux", "resize-window", "-t", self.name, "-x", str(width), "-y", str(height)],
                       capture_output=True)

    def keys(self, *keys: str, literal: bool = False) -> None:
        subprocess.run(["tmux", "send-keys", "-t", self.name, *(["-l"] if literal else []), *keys], check=True)
        time.sleep(0.3)

    def screen(self) -> str:
        return subprocess.run(["tmux", "capture-pane", "-p", "-t", self.name], capture_output=True, text=True,
                              check=True).stdout

    def wait_for(self, text: str, timeout: float = 60) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            screen = self.screen()
            if text in screen:
                return screen
            time.sleep(0.25)
        raise AssertionError(f"{text!r} never appeared; the screen shows:\n{self.screen()}")

    def kill(self) -> None:
        subprocess.run(["tmux", "kill-session", "-t", self.name], capture_output=True)


@pytest.mark.slow
def test_irscope_tui_in_tmux_opens_matmul_ttgir_and_quits(compiled, tmp_path):
    tmux = Tmux(f"irscope-test-{os.getpid()}", tmp_path)
    env = f"PYTHONPATH={ROOT} TERM=xterm-256color"
    tmux.start(f"env {env} {sys.executable} -m irscope tui {compiled}; echo irscope-exited=$?; sleep 30", 160, 48)
    try:
        tmux.wait_for("14 snapshots in")
        tmux.keys("C-f")
        tmux.keys("matmul sm_90a", literal=True)
        tmux.keys("Enter")
        tmux.keys("Down")
        tmux.keys("Down")
        tmux.keys("Down")
        tmux.keys("Enter")
        screen = tmux.wait_for("4 ttgir")
        screen = tmux.wait_for("1/")  # the status line of the stage on screen
        assert "Hopper" in screen and "module attributes" in screen
        assert "@triton.jit" in screen  # 160 columns: the Python source is beside the stage
        tmux.keys(":", literal=True)  # a person's pause after `:`; a burst of keys can outrun the focus change
        tmux.keys("130", literal=True)
        tmux.keys("Enter")
        screen = tmux.wait_for("130/")
        assert "matmul.py:" in screen.splitlines()[-2]
        tmux.keys("q")
        assert "irscope-exited=0" in tmux.wait_for("irscope-exited=")
    finally:
        tmux.kill()


def test_irscope_tui_refuses_a_missing_root_with_a_hint(cli, tmp_path):
    code, out, err = cli("tui", str(tmp_path / "nope"))
    assert code == 2 and "does not exist" in err and "hint:" in err


def test_irscope_tui_refuses_a_file_for_a_root(cli, tmp_path):
    (tmp_path / "notes.txt").write_text("x")  # it opened an empty browser: "0 snapshots in notes.txt"
    code, out, err = cli("tui", str(tmp_path / "notes.txt"))
    assert code == 2 and "is a file, not a folder of snapshots" in err and "hint:" in err
