"""Across Triton releases: one other release (3.6.0, the GPU machine's) installed beside the running one,
the built-in `add` and `matmul` compiled under both, and what irscope reports checked against the stages.

The environment lives in irscope's cache (`$IRSCOPE_CACHE/envs`, default ~/.cache/irscope/envs): CI keeps
that folder between runs, so only the first run downloads Triton (about 200 MB, 20 s here).
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from irscope.cli import main
from irscope.harness import envs

pytestmark = pytest.mark.slow

OTHER = "3.6.0"
RUNNING = envs.running_version()


def run_cli(*argv):
    import io
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def snaps(tmp_path_factory):
    """add and matmul for sm_90a and gfx942 under 3.6.0 and the running release, through `irscope compile`."""
    if RUNNING == OTHER:
        pytest.skip(f"this machine runs Triton {OTHER} itself")
    out = tmp_path_factory.mktemp("versions")
    code, stdout, stderr = run_cli("compile", "add", "matmul", "--target", "sm_90a,gfx942", "--triton",
                                   f"{OTHER},{RUNNING}", "--out", str(out), "--jobs", "2")
    assert code == 0, stderr + stdout
    return out


def test_another_release_compiles_into_its_own_variant_folder_and_records_its_version(snaps):
    from irscope.store.snapshot import load_snapshot
    for kernel, fn in (("add", "add_kernel"), ("matmul", "matmul_kernel")):
        for target in ("sm_90a", "gfx942"):
            old = load_snapshot(snaps / kernel / f"default.triton-{OTHER}" / target)
            new = load_snapshot(snaps / kernel / "default" / target)  # the running release keeps today's folder
            assert old.ok and new.ok
            assert old.meta["versions"]["triton"] == OTHER and new.meta["versions"]["triton"] == RUNNING
            assert old.variant == f"default.triton-{OTHER}"
            assert ("sass" if target == "sm_90a" else "amdgcn") in old.stage_files
    assert envs.find_env(OTHER) is not None and envs.find_env(OTHER).path.parent == envs.cache_root()


def test_compare_across_releases_reports_only_counters_whose_stage_text_differs(snaps):
    from irscope.ir.normalize import normalize
    from irscope.store.snapshot import load_snapshot
    code, out, err = run_cli("compare", "matmul", "add", "--target", "sm_90a", "--triton", f"{OTHER},{RUNNING}",
                             "--out", str(snaps), "--json")
    assert code == 0, err
    points = json.loads(out)
    assert [p["axes"]["triton"] for p in points] == [OTHER, RUNNING, OTHER, RUNNING]
    for old, new in ((points[0], points[1]), (points[2], points[3])):
        assert old["path"].endswith(f"default.triton-{OTHER}/sm_90a") and new["path"].endswith("default/sm_90a")
        a, b = load_snapshot(old["path"]), load_snapshot(new["path"])
        differing = {k for k in set(old["counters"]) | set(new["counters"])
                     if old["counters"].get(k, 0) != new["counters"].get(k, 0)}
        for key in differing:
            stage = key.split(".")[0]
            assert normalize(stage, a.read(stage)) != normalize(stage, b.read(stage)), key
    matmul_differs = {k for k in set(points[0]["counters"]) | set(points[1]["counters"])
                      if points[0]["counters"].get(k) != points[1]["counters"].get(k)}
    assert matmul_differs, "3.6.0 and the running release emit the same matmul counters: nothing was compared"


def test_compare_table_names_the_release_that_flips(snaps):
    code, out, err = run_cli("compare", "matmul", "--target", "sm_90a", "--triton", f"{OTHER},{RUNNING}",
                             "--out", str(snaps), "--color", "never")
    assert code == 0, err
    assert f"triton {OTHER}" in out and f"triton {RUNNING}" in out
    assert "2 points (0 compiled, 2 from the cache)" in out  # each release's folder is cached by its own key


def test_diff_of_two_releases_ignores_version_lines_unless_raw(snaps):
    a = snaps / "add" / f"default.triton-{OTHER}" / "sm_90a"
    b = snaps / "add" / "default" / "sm_90a"
    assert ".version" in (a / "add_kernel.ptx").read_text()
    raw_versions = {ln for p in (a, b) for ln in (p / "add_kernel.ptx").read_text().splitlines()
                    if ln.startswith(".version")}
    assert len(raw_versions) == 2, "the two releases write the same PTX ISA version: the test proves nothing"
    code, out, err = run_cli("diff", str(a), str(b), "--stage", "ptx", "--color", "never")
    assert not any(ln[1:].startswith(".version") for ln in out.splitlines() if ln[:1] in "+-"), out
    code, out, err = run_cli("diff", str(a), str(b), "--stage", "ptx", "--raw", "--color", "never")
    assert any(ln[1:].startswith(".version") for ln in out.splitlines() if ln[:1] in "+-"), out


def test_upgrade_check_lists_changes_consistent_with_the_stages_and_exits_by_regression(snaps):
    from irscope.store.snapshot import load_snapshot
    code, out, err = run_cli("upgrade-check", "--from", OTHER, "--to", RUNNING, "add", "matmul",
                             "--target", "sm_90a,gfx942", "--out", str(snaps), "--json")
    report = json.loads(out)
    assert code == (1 if report["regressed"] else 0), err
    assert len(report["points"]) == 4
    for point in report["points"]:
        a, b = load_snapshot(point["from"]), load_snapshot(point["to"])
        assert a.meta["versions"]["triton"] == OTHER and b.meta["versions"]["triton"] == RUNNING
        for f in point["findings"]:
            if f["category"] == "registers":
                assert a.resources.registers != b.resources.registers
            if f["category"] == "counters":
                assert any(a.read(s) != b.read(s) for s in ("ttgir", "ptx", "sass", "amdgcn") if s in a.stage_files)
    assert any(p["findings"] for p in report["points"])
    code, text, err = run_cli("upgrade-check", "--from", OTHER, "--to", RUNNING, "matmul", "--target", "gfx942",
                              "--out", str(snaps), "--color", "never")
    assert f"Triton {OTHER} → {RUNNING}" in text and "matmul/default/gfx942" in text


def test_goldens_keep_one_snapshot_per_release_side_by_side(snaps, tmp_path):
    from irscope.goldens.root import GoldenRoot
    from irscope.store.snapshot import load_snapshot
    root = GoldenRoot(tmp_path / "snapshots")
    new = load_snapshot(snaps / "add" / "default" / "sm_90a")
    old = load_snapshot(snaps / "add" / f"default.triton-{OTHER}" / "sm_90a")
    assert root.write(new, "t", "add").golden_path == tmp_path / "snapshots/add/default/sm_90a"
    # Only the running release's golden exists: a compile under 3.6.0 is told it has none, not a diff.
    assert root.compare(_as_plain_variant(old, tmp_path)).status == "version-mismatch"
    written = root.write(_as_plain_variant(old, tmp_path), "t", "add")
    assert written.golden_path == tmp_path / f"snapshots/add/default/sm_90a@triton-{OTHER}"
    assert root.compare(new).status == "match"  # the running release's golden is untouched
    assert root.compare(_as_plain_variant(old, tmp_path)).status == "match"
    assert set(root.versions(new)) == {RUNNING, OTHER}


def _as_plain_variant(snap, tmp_path):
    """The 3.6.0 snapshot as a golden run under 3.6.0 would see it: variant `default` (a run compiles in
    its own release, without the `.triton-X` suffix that `--triton` adds to keep folders apart)."""
    import shutil
    from irscope.store.snapshot import META_FILE, load_snapshot
    copy = tmp_path / "as-run-under-other" / "add" / "default" / "sm_90a"
    if not copy.exists():
        shutil.copytree(snap.path, copy)
        meta = json.loads((copy / META_FILE).read_text())
        meta["variant"] = "default"
        (copy / META_FILE).write_text(json.dumps(meta, indent=1))
    return load_snapshot(copy)


def test_a_release_pip_does_not_have_is_one_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv("IRSCOPE_CACHE", str(tmp_path))
    code, out, err = run_cli("envs", "add", "9.9.9")
    assert code == 5, err
    lines = err.strip().splitlines()
    assert lines[0] == "irscope: error: pip has no Triton 9.9.9 for this Python (3.11.7)".replace(
        "3.11.7", envs._python_version())
    assert "pip index versions triton" in lines[1]
    assert not (tmp_path / "envs" / "triton-9.9.9").exists()  # a failed install leaves nothing behind


def test_envs_list_shows_the_running_release_and_the_installed_one(snaps):
    code, out, err = run_cli("envs", "list", "--color", "never")
    assert code == 0 and RUNNING in out and OTHER in out and str(envs.env_path(OTHER)) in out


def test_offline_is_one_clear_error(tmp_path, monkeypatch):
    # An index nobody listens on, and none of this machine's local wheel folders: what pip sees offline.
    for name, value in (("IRSCOPE_CACHE", str(tmp_path)), ("PIP_INDEX_URL", "http://127.0.0.1:9/simple"),
                        ("PIP_EXTRA_INDEX_URL", " "), ("PIP_FIND_LINKS", " "), ("PIP_RETRIES", "0"),
                        ("PIP_DEFAULT_TIMEOUT", "5"), ("PIP_CONFIG_FILE", "/dev/null")):
        monkeypatch.setenv(name, value)
    code, out, err = run_cli("envs", "add", "3.7.0")
    assert code == 5
    assert err.splitlines()[0] == ("irscope: error: could not download Triton 3.7.0: pip reached no package index "
                                   "that has Triton (offline?)")
    assert not (tmp_path / "envs" / "triton-3.7.0").exists()


def test_a_user_kernels_typed_arguments_reach_the_other_release(tmp_path):
    """`--arg x_ptr=*fp16` under `--triton`: the tensor argument crosses to the other release's process as
    a tensor (it used to arrive as a dict, refused there as a word), and the other release specialises it:
    its TTIR takes an f16 pointer."""
    from irscope.harness.remote import options_from_json, options_to_json
    from irscope.spec.kernel import CompileOptions, Tensor, TensorDesc
    opts = CompileOptions(args=(("x_ptr", Tensor("fp16")), ("k_ptr", Tensor("fp32", const=True)), ("n", 4096),
                                ("d", TensorDesc("fp16", (64, 64), ("BLOCK", 64)))))
    assert options_from_json(json.loads(json.dumps(options_to_json(opts)))) == opts

    if RUNNING == OTHER:
        pytest.skip(f"this machine runs Triton {OTHER} itself")
    src = tmp_path / "scale.py"
    src.write_text("import triton\nimport triton.language as tl\n\n\n@triton.jit\n"
                   "def scale(x_ptr, n, BLOCK: tl.constexpr):\n"
                   "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
                   "    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)\n")
    out = tmp_path / "snaps"
    code, stdout, stderr = run_cli("compile", f"{src}:scale", "--arg", "x_ptr=*fp16", "--arg", "n=4096",
                                   "--constexpr", "BLOCK=256", "--triton", OTHER, "--no-layouts", "--out", str(out))
    assert code == 0, stderr + stdout
    ttir = next(out.glob(f"scale/*triton-{OTHER}*/sm_90a/*.ttir")).read_text()
    assert "!tt.ptr<f16>" in ttir


def test_an_installed_irscope_run_from_anywhere_compiles_with_the_environments_triton(snaps, tmp_path):
    """irscope installed as pip installs it (its package beside the running Triton in one site-packages),
    run from a folder that holds a `triton/` of its own: `--triton 3.6.0` still compiles with 3.6.0. The
    child used to get the whole site-packages on PYTHONPATH (the running Triton won) and the current
    folder first on sys.path (`python -m`)."""
    import os
    import shutil
    import subprocess
    import sys

    import irscope
    import triton
    site = tmp_path / "site-packages"
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(Path(irscope.__file__).parent, site / "irscope", ignore=ignore)
    if not (site / "irscope" / "kernels").exists():  # a wheel carries the built-in kernels inside the package
        shutil.copytree(Path(irscope.__file__).parents[1] / "kernels", site / "irscope" / "kernels", ignore=ignore)
    os.symlink(Path(triton.__file__).parent, site / "triton")
    here = tmp_path / "here"
    (here / "triton").mkdir(parents=True)
    (here / "triton" / "__init__.py").write_text("raise ImportError('the triton/ of the current folder')\n")
    out = tmp_path / "out"
    script = "import sys; sys.path.insert(0, sys.argv[1]); from irscope.cli import main; sys.exit(main(sys.argv[2:]))"
    proc = subprocess.run([sys.executable, "-c", script, str(site), "compile", "add", "--triton", OTHER,
                           "--no-layouts", "-o", str(out)], cwd=here, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": ""})
    assert proc.returncode == 0, proc.stderr
    meta = json.loads((out / "add" / f"default.triton-{OTHER}" / "sm_90a" / "irscope.json").read_text())
    assert meta["versions"]["triton"] == OTHER


def test_upgrade_check_exits_3_when_no_point_could_be_compared(tmp_path):
    """A kernel that fails to compile under both releases: nothing was compared, which is no pass."""
    if RUNNING == OTHER:
        pytest.skip(f"this machine runs Triton {OTHER} itself")
    src = tmp_path / "bad.py"
    src.write_text("import triton\nimport triton.language as tl\n\n\n@triton.jit\n"
                   "def bad(x_ptr):\n    tl.store(x_ptr + tl.arange(0, 3), 1.0)\n")  # arange needs a power of 2
    code, out, err = run_cli("upgrade-check", "--from", OTHER, "--to", RUNNING, f"{src}:bad", "--arg", "x_ptr=*fp32",
                             "--out", str(tmp_path / "snaps"), "--color", "never")
    assert code == 3, err + out
    assert "not compared" in out and "1 point could not be compared" in out


def test_a_point_for_another_release_is_checked_by_that_release_not_by_the_running_one(snaps, tmp_path):
    """This Triton cannot find ptxas (tests/data/no_ptxas), the 3.6.0 environment can: `--triton 3.6.0`
    compiles there, while a point for this Triton is still refused up front with exit 5. Before, the
    running release's check refused the other release's points too."""
    import os
    import subprocess
    import sys
    data = Path(__file__).parent / "data"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(data / "no_ptxas"), str(Path(__file__).parent.parent)]))
    cmd = [sys.executable, "-m", "irscope", "compile", "add", "--target", "sm_90a", "--out", str(tmp_path)]
    other = subprocess.run(cmd + ["--triton", OTHER], env=env, capture_output=True, text=True)
    assert other.returncode == 0, other.stderr
    assert (tmp_path / "add" / f"default.triton-{OTHER}" / "sm_90a" / "irscope.json").is_file()
    here = subprocess.run(cmd + ["--triton", RUNNING], env=env, capture_output=True, text=True)
    assert here.returncode == 5 and "cannot run ptxas for sm_90a" in here.stderr, here.stderr
