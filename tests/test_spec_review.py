"""Regression tests from the review of getting kernels in: kernel files, the FILE.py:NAME form, and
specialisation being exactly what Triton's JIT does for the same launch."""
import json
import subprocess
import sys
import textwrap

import pytest

KERNEL = '''
import triton
import triton.language as tl


@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, 1.0, mask=offs < n)
'''


def _write(folder, name, text):
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def _error(err):
    lines = [ln for ln in err.splitlines() if ln.startswith("irscope: ")]
    assert lines and lines[0].startswith("irscope: error: ") and lines[1].startswith("irscope: hint: "), err
    assert "Traceback" not in err
    return lines[0], lines[1]


@pytest.mark.parametrize("exit_call", ["sys.exit(0)", "sys.exit('bye')", "raise SystemExit(3)"])
def test_a_kernel_file_that_exits_on_import_is_a_usage_error_not_a_silent_exit(cli, tmp_path, exit_call):
    path = _write(tmp_path, "exits.py", KERNEL + f"\nimport sys\n{exit_call}\n")
    code, out, err = cli("compile", f"{path}:k", "--arg", "x_ptr=*fp32", "--arg", "n=64", "--constexpr",
                         "BLOCK=16", "--no-layouts")
    first, hint = _error(err)
    assert code == 2 and "sys.exit" in first and "__main__" in hint
    assert not (tmp_path / "irscope-snapshots").exists()


def test_what_a_kernel_file_prints_on_import_stays_out_of_the_json(tmp_path):
    path = _write(tmp_path, "chatty.py", "print('hello from the module')\n" + KERNEL)
    proc = subprocess.run([sys.executable, "-m", "irscope", "kernels", f"{path}:k", "--json"], capture_output=True,
                          text=True, cwd=tmp_path, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["function"] == "k"
    assert "hello from the module" in proc.stderr
