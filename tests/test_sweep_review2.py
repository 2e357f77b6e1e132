"""Regression tests from a second review of `irscope sweep` (hostile sweep files, --triton, the cluster):
each names the defect it guards."""
import subprocess
import sys
import textwrap

import pytest

from irscope.errors import UsageError
from irscope.sweep import expand, load_sweep


def _write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def test_a_merge_key_bomb_is_read_at_once_not_merged_a_billion_times(cli, tmp_path):
    # Ten lines, each merging the line above ten times: the merges were worked out again for every
    # reference, 10^9 mappings, and `irscope sweep --list` ran for ever.
    lines = ["x-a: &a {k: 1}"]
    for prev, name in zip("abcdefghi", "bcdefghij"):
        lines.append(f"x-{name}: &{name} {{<<: [{', '.join(['*' + prev] * 10)}]}}")
    sweep = _write(tmp_path / "merge.yaml", "\n".join(lines) + "\nkernels: [add]\ntargets: [gfx942]\n")
    proc = subprocess.run([sys.executable, "-m", "irscope", "sweep", str(sweep), "--list"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    # the merges still mean what YAML says
    sweep = _write(tmp_path / "m.yaml", "x-w: &w {num_warps: [2, 4]}\nx-v: &v {<<: [*w, *w]}\nkernels: [add]\n"
                                        "targets: [gfx942]\ngrid: {<<: *v}\n")
    assert len(expand(load_sweep(sweep))) == 2


@pytest.mark.parametrize("value", ["[" * 50000 + "]" * 50000, "{a: " * 30000 + "1" + "}" * 30000])
def test_values_nested_thousands_deep_are_a_usage_error_not_an_internal_error(cli, tmp_path, value):
    sweep = _write(tmp_path / "deep.yaml", "kernels: [add]\ntargets: [gfx942]\ngrid:\n  BLOCK_SIZE: " + value + "\n")
    code, out, err = cli("sweep", sweep, "--list")
    assert code == 2, err
    assert "nested thousands of levels deep" in err and "internal error" not in err, err
    assert err.splitlines()[1].startswith("irscope: hint: ")
