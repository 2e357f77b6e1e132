"""Second review of `irscope diff`, `compare`, `stats` and `show`: each test fails without its fix."""
import hashlib
import json
import shutil

from irscope.diff.snapshots import diff_snapshots
from irscope.store.snapshot import load_snapshot


def _copy_with_stage(src, dest, stage: str, data: bytes):
    """A copy of snapshot `src` whose `stage` file holds `data`, its sha256 recorded (so it loads as intact)."""
    shutil.copytree(src, dest)
    meta = json.loads((dest / "irscope.json").read_text())
    (dest / meta["stages"][stage]["file"]).write_bytes(data)
    meta["stages"][stage]["sha256"] = hashlib.sha256(data).hexdigest()
    (dest / "irscope.json").write_text(json.dumps(meta))
    return dest


def test_compare_names_what_failed_not_the_at_line_col_that_opens_tritons_message(cli, tmp_path):
    # Triton's CompilationError begins "at 14:32:" and the source it quotes; what went wrong is its last line
    code, out, err = cli("compare", "add", "--target", "sm_80", "--constexpr", "BLOCK_SIZE=3,1024", "-o", tmp_path)
    assert code == 3, out + err
    first = next(line for line in err.splitlines() if line.startswith("irscope: error:"))
    assert "arange's range must be a power of 2" in first, first
    assert not first.rstrip().endswith(":"), first


def test_nvidia_spilled_bytes_and_amd_spilled_vgprs_are_two_rows_never_one_change(goldens):
    # ptxas counts spill stores in bytes, the AMD listing in VGPRs: 2,032 bytes -> 0 VGPRs is no -2,032
    a = load_snapshot(goldens / "matmul" / "default" / "sm_90a")
    b = load_snapshot(goldens / "matmul" / "default" / "gfx942")
    rows = {d.key: (d.a, d.b, d.change) for d in diff_snapshots(a, b).resources}
    assert "spill_stores" not in rows and "spill_loads" not in rows, rows
    assert rows["spill_stores (bytes)"] == (a.resources.spill_stores, None, None), rows
    assert rows["spill_stores (VGPRs)"] == (None, b.resources.spill_stores, None), rows
    # two NVIDIA targets keep the one row of one unit
    c = load_snapshot(goldens / "matmul" / "default" / "sm_80")
    keys = {d.key for d in diff_snapshots(a, c).resources}
    assert not any("(bytes)" in k or "(VGPRs)" in k for k in keys), keys


def test_counting_what_normalisation_removes_does_not_hold_every_match_in_memory():
    # a hostile stage of 2M `loc(` (8 MB): findall's list of 2M strings took ~120 MB; a 200 MB one, 4 GB
    import tracemalloc

    from irscope.diff.snapshots import _normalisation_notes
    raw = "loc(" * 2_000_000
    tracemalloc.start()
    try:
        notes = _normalisation_notes("ttgir", raw, "", False)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert notes == ("debug locations: 2,000,000 in A, 0 in B",), notes
    assert peak < 20 << 20, f"{peak >> 20} MiB to count matches in an 8 MB text"


def test_diff_stat_does_not_build_the_unified_diff_it_does_not_print(cli, goldens, tmp_path):
    # 500k lines inserted: the unified diff's rows took ~20 s and 1 GB at 5M lines under --stat, which prints none
    import tracemalloc
    src = goldens / "matmul" / "default" / "sm_90a"
    text = (src / "matmul_kernel.ttgir").read_bytes()
    big = _copy_with_stage(src, tmp_path / "big", "ttgir", text + b"x\n" * 500_000)
    a, b = load_snapshot(src), load_snapshot(big)
    tracemalloc.start()
    try:
        d = diff_snapshots(a, b, stage="ttgir", lines=False)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert not d.equal and d.unified == () and d.differing_stages == ("ttgir",)
    assert peak < 40 << 20, f"{peak >> 20} MiB for a diff --stat of a 1 MB stage"
    code, out, err = cli("diff", src, big, "--stat", "--json")
    assert code == 1 and json.loads(out)["unified"] is None, err


def test_a_stage_differing_only_in_its_final_newline_is_one_verdict_with_or_without_stage(cli, goldens, tmp_path):
    # --raw: 'stages that differ: ttgir' (exit 1) yet 'ttgir: identical', and with --stage ttgir exit 0, equal
    src = goldens / "matmul" / "default" / "sm_90a"
    text = (src / "matmul_kernel.ttgir").read_bytes()
    assert text.endswith(b"\n")
    cut = _copy_with_stage(src, tmp_path / "cut", "ttgir", text.rstrip(b"\n"))
    code, out, err = cli("diff", src, cut, "--raw", "--stage", "ttgir", "--json")
    assert code == 1 and json.loads(out)["equal"] is False, out + err
    code, out, err = cli("diff", src, cut, "--raw")
    assert code == 1 and "stages that differ: ttgir" in out
    assert "identical" not in out and "line ends" in out, out
