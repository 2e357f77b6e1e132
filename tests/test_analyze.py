"""Counters, layouts, buffers, occupancy and launchability, checked on IR that Triton really compiled for
the targets that exhibit each thing (plus a few pure-text cases for the parsers' edge cases). add and matmul
at their defaults are read from the committed goldens (snapshots/, which tests/test_goldens.py keeps equal
to a fresh compile); the other points are compiled fresh, once a session."""
import json
import os
import time
from pathlib import Path

import pytest

from irscope.analyze import ANALYZED_STAGES, analyze, count_ops
from irscope.analyze.catalog import CATALOG, info
from irscope.errors import UsageError
from irscope.store.snapshot import load_snapshot
from tests.conftest import DATA

ROOT = Path(__file__).resolve().parent.parent
SMALL = "m64n32k32.w2.s5"  # a small matmul config: fast to compile, 2 warps
TMA = f"{DATA / 'analyze_kernels.py'}:tma_matmul"


@pytest.fixture(scope="module")
def extra(compile_cache):
    """Fresh compiles of points the goldens do not hold, each chosen to exhibit one thing (through the
    session's compile cache: tests/test_kernels_compile.py compiles some of the same points)."""
    from irscope.harness.batch import Point
    from irscope.spec.kernel import CompileOptions as O

    points = {
        "hopper_w2": Point("matmul", "sm_90a", O(config=SMALL)),  # below a warpgroup: mma.sync on Hopper
        "hopper_div1": Point("matmul", "sm_90a", O(config=SMALL, num_warps=4, divisibility=((None, 1),))),
        "ampere_div4": Point("matmul", "sm_80", O(config=SMALL, divisibility=((None, 4),))),
        "ampere_div8": Point("matmul", "sm_80", O(config=SMALL, divisibility=((None, 8),))),
        "ampere_div16": Point("matmul", "sm_80", O(config=SMALL)),
        "spills": Point("matmul", "sm_90a", O(config=SMALL, backend_options=(("maxnreg", 32),))),
        "ws_tma": Point(TMA, "sm_90a", O(config="ws")),
        "rdna": Point("matmul", "gfx1100", O(config=SMALL)),
        "over_limit": Point("matmul", "sm_120a", O(num_stages=4)),
    }
    outcomes = compile_cache.outcomes(list(points.values()))
    assert all(o.ok for o in outcomes), [o.error for o in outcomes if not o.ok]
    return {name: load_snapshot(o.path) for name, o in zip(points, outcomes)}


def _snap(goldens, kernel, target, variant="default"):
    return load_snapshot(goldens / kernel / variant / target)


# -- NVIDIA: which matrix instruction, and how operands travel --------------------------------------------

def test_hopper_matmul_uses_wgmma_fed_by_16_byte_cp_async(goldens):
    a = analyze(_snap(goldens, "matmul", "sm_90a"))
    c = a.counters
    assert c["ptx.wgmma"] > 0 and c["ptx.wgmma.m64n256k16"] == c["ptx.wgmma"]
    assert a.get("ptx.mma.sync") == 0 and a.get("ptx.tcgen05") == 0
    assert c["ptx.cp.async"] == c["ptx.cp.async.16B"] == c["ptx.cp.async.cg"] > 0
    assert c["ptx.fence.proxy.async"] >= 1 and c["ptx.bar"] >= 1 and c["ptx.ldmatrix"] > 0
    assert c["ptx.st.global.16B"] == c["ptx.st.global"] > 0
    assert c["sass.HGMMA"] == c["ptx.wgmma"] and c["sass.HGMMA.64x256x16"] == c["sass.HGMMA"]
    assert c["sass.LDGSTS"] == c["ptx.cp.async"] and c["sass.LDSM"] > 0 and c["sass.BAR"] > 0
    assert a.get("sass.HMMA") == 0 and a.get("sass.LDL") == 0
    assert c["ttgir.warp_group_dot"] == 1 and c["ttgir.nvidia_mma.version"] == 3
    assert c["ttgir.async_copy"] > 0


def test_hopper_below_four_warps_falls_back_to_mma_sync(extra):
    a = analyze(extra["hopper_w2"])
    assert a.get("ptx.wgmma") == 0 and a.get("sass.HGMMA") == 0
    assert a.counters["ptx.mma.sync"] > 0 and a.counters["ptx.mma.sync.m16n8k16"] == a.counters["ptx.mma.sync"]
    assert a.counters["sass.HMMA"] == a.counters["ptx.mma.sync"]
    assert a.counters["ttgir.nvidia_mma.version"] == 2 and a.get("ttgir.warp_group_dot") == 0
    assert a.counters["ttgir.dot"] == 1


def test_ampere_and_blackwell_consumer_use_mma_sync(goldens):
    for target in ("sm_80", "sm_120a"):
        a = analyze(_snap(goldens, "matmul", target))
        assert a.counters["ptx.mma.sync"] > 0 and a.get("ptx.wgmma") == 0 and a.get("ptx.tcgen05") == 0, target
        assert a.counters["sass.HMMA"] > 0, target


def test_blackwell_datacenter_uses_tcgen05_and_tensor_memory(goldens):
    a = analyze(_snap(goldens, "matmul", "sm_100a"))
    c = a.counters
    assert c["ptx.tcgen05.mma"] > 0 and c["ptx.tcgen05"] > c["ptx.tcgen05.mma"]
    assert c["ptx.tcgen05.alloc"] == 1 and c["ptx.mbarrier"] > 0
    assert a.get("ptx.wgmma") == 0 and a.get("ptx.mma.sync") == 0
    assert c["sass.UTCHMMA"] > 0 and c["sass.UTC"] >= c["sass.UTCHMMA"]
    assert c["ttgir.tcgen05_mma"] >= 1 and c["ttgir.layout.tensor_memory_encoding"] == 1
    assert c["ttgir.tmem.bytes"] > 0 and a.resources.tensor_memory > 0


def test_divisibility_gates_and_widens_cp_async(extra):
    """The seed's ramp: no cp.async without alignment, then 4, 8, 16 bytes per copy, fewer copies each time."""
    none = analyze(extra["hopper_div1"])
    assert none.get("ptx.cp.async") == 0 and none.get("sass.LDGSTS") == 0 and none.get("ttgir.async_copy") == 0
    assert none.counters["ptx.ld.global.2B"] == none.counters["ptx.ld.global"] > 0
    assert none.counters["ttgir.shared.buffers"] == 1
    counts = {}
    for d in (4, 8, 16):
        c = analyze(extra[f"ampere_div{d}"]).counters
        assert c["ptx.cp.async"] == c[f"ptx.cp.async.{d}B"] > 0, d
        assert c["sass.LDGSTS"] == c[f"sass.LDGSTS.{d}B"], d
        counts[d] = c["ptx.cp.async"]
    assert counts[4] == 2 * counts[8] == 4 * counts[16]
    assert analyze(extra["ampere_div4"]).counters["ptx.cp.async.ca"] == counts[4]  # 4-byte copies cache in L1


def test_warp_specialised_tma_kernel(extra):
    a = analyze(extra["ws_tma"])
    c = a.counters
    assert c["ptx.cp.async.bulk.tensor"] == c["ptx.cp.async.bulk.tensor.load"] + c["ptx.cp.async.bulk.tensor.store"]
    assert c["ptx.cp.async.bulk.tensor.load"] > 0 and c["ptx.cp.async.bulk.tensor.store"] > 0
    assert c["ptx.setmaxnreg"] == c["ptx.setmaxnreg.inc"] + c["ptx.setmaxnreg.dec"] > 0
    assert c["ptx.mbarrier.init"] > 0 and c["ptx.mbarrier.try_wait"] > 0 and c["ptx.stmatrix"] > 0
    assert c["ptx.wgmma"] > 0 and c["ptx.tensormap"] > 0
    assert c["sass.UTMALDG"] > 0 and c["sass.UTMASTG"] > 0 and c["sass.USETMAXREG"] > 0 and c["sass.SYNCS"] > 0
    assert c["ttgir.warp_specialize"] == 1 and c["ttgir.warp_specialize.partitions"] >= 2
    assert c["ttgir.tma_load"] > 0 and c["ttgir.tma_store"] > 0 and c["ttgir.mbarriers"] > 0


def test_spills_show_as_local_memory_traffic(extra):
    a = analyze(extra["spills"])
    assert a.resources.registers <= 32 and a.resources.spill_stores > 0
    assert a.counters["sass.STL"] > 0 and a.counters["sass.LDL"] > 0


# -- AMD ------------------------------------------------------------------------------------------------

def test_cdna3_issues_twice_the_mfma_of_cdna4(goldens):
    gfx942 = analyze(_snap(goldens, "matmul", "gfx942")).counters
    gfx950 = analyze(_snap(goldens, "matmul", "gfx950")).counters
    assert gfx942["amdgcn.v_mfma"] == 2 * gfx950["amdgcn.v_mfma"] > 0
    assert gfx942["amdgcn.v_mfma.f32_32x32x8_f16"] == gfx942["amdgcn.v_mfma"]
    assert gfx950["amdgcn.v_mfma.f32_32x32x16_f16"] == gfx950["amdgcn.v_mfma"]
    for c in (gfx942, gfx950):
        assert c["amdgcn.buffer_load.16B"] > 0 and c["amdgcn.s_waitcnt"] > 0 and c["amdgcn.ds_read"] > 0
    assert gfx942["amdgcn.ds_write"] > 0 and sum(v for k, v in gfx942.items() if k.startswith("amdgcn.ds_write.")) \
        == gfx942["amdgcn.ds_write"]
    assert gfx950["amdgcn.load_to_lds"] > 0  # gfx950 copies global to LDS directly
    assert gfx942["ttgir.amd_mfma.version"] == 3 and gfx950["ttgir.amd_mfma.version"] == 4


def test_rdna_uses_wmma_and_gfx11_lds_spellings(extra):
    c = analyze(extra["rdna"]).counters
    assert c["amdgcn.v_wmma"] > 0 and "amdgcn.v_mfma" not in c
    assert c["amdgcn.ds_read"] > 0 and c["amdgcn.ds_write"] > 0  # ds_load_* / ds_store_* on gfx11
    assert c["ttgir.layout.amd_wmma"] == 1


def test_layout_census_matches_the_seed(goldens):
    """gfx942 gets amd_rotating_shared, which no other target uses; gfx950 a padded shared layout."""
    kinds = {t: {k.split(".")[2] for k in analyze(_snap(goldens, "matmul", t)).counters if k.startswith("ttgir.layout.")}
             for t in ("gfx90a", "gfx942", "gfx950", "sm_90a", "sm_80")}
    assert {"blocked", "dot_op", "shared_memory", "slice", "swizzled_shared", "amd_mfma"} <= kinds["gfx90a"]
    assert "amd_rotating_shared" in kinds["gfx942"] and "linear" in kinds["gfx942"]
    assert all("amd_rotating_shared" not in kinds[t] for t in ("gfx90a", "gfx950", "sm_90a", "sm_80"))
    assert "nvmma_shared" in kinds["sm_90a"] and "nvidia_mma" in kinds["sm_80"]


def test_layouts_carry_their_parameters(goldens):
    a = analyze(_snap(goldens, "matmul", "sm_90a"))
    mma = next(lay for lay in a.layouts if lay.kind == "nvidia_mma")
    assert mma.param("versionMajor") == "3" and mma.param("warpsPerCTA") == "[8, 1]"
    assert mma.param("instrShape") == "[16, 256, 16]" and mma.alias == "mma"
    blocked = [lay for lay in a.layouts if lay.kind == "blocked"]
    assert blocked and all(lay.param("sizePerThread") and lay.param("order") for lay in blocked)
    amd = analyze(_snap(goldens, "matmul", "gfx942"))
    mfma = next(lay for lay in amd.layouts if lay.kind == "amd_mfma")
    assert mfma.param("instrShape") == "[32, 32, 8]" and mfma.param("version") == "3"


def test_shared_allocations_follow_num_stages(goldens):
    """matmul default: num_stages=3 on Hopper keeps 3 copies of the A and B tiles; together they are the
    kernel's shared memory."""
    a = analyze(_snap(goldens, "matmul", "sm_90a"))
    data = [al for al in a.allocations if al.space == "shared" and not al.barrier]
    assert [al.shape for al in data] == [(3, 128, 64), (3, 64, 256)]
    assert all(al.buffers == 3 and al.dtype == "f16" for al in data)
    assert a.counters["ttgir.shared.bytes"] == sum(al.bytes for al in data) == (128 * 64 + 64 * 256) * 2 * 3
    assert a.counters["ttgir.shared.buffers"] == 3
    assert a.resources.shared == a.counters["ttgir.shared.bytes"]


# -- resources, occupancy, launchability --------------------------------------------------------------------

def test_over_the_shared_memory_limit_is_flagged(extra):
    a = analyze(extra["over_limit"])
    assert a.status == "ok"  # it compiles...
    assert not a.launch.launchable and a.launch.checked  # ...but cannot launch
    assert a.resources.shared > 99 * 1024
    assert any("shared memory" in r and "sm_120a" in r for r in a.launch.reasons)
    assert a.occupancy.value == 0 and a.occupancy.limiter == "shared memory"


def test_amd_lds_counts_what_triton_requests_at_launch(goldens):
    """The listing's group segment is 0 (Triton's LDS is dynamic); the launch needs Triton's `shared`."""
    snap = _snap(goldens, "matmul", "gfx942")
    tmeta = json.loads((snap.path / "matmul_kernel.json").read_text())
    a = analyze(snap)
    assert a.resources.shared == tmeta["shared"] > 64 * 1024
    assert not a.launch.launchable and "LDS" in a.launch.reasons[0]
    assert analyze(_snap(goldens, "matmul", "gfx950")).launch.launchable  # 160 KiB of LDS there


def test_occupancy_estimates(goldens):
    hopper = analyze(_snap(goldens, "matmul", "sm_90a")).occupancy
    assert hopper.unit == "blocks/SM" and hopper.value == 1 and hopper.warps == 8 and hopper.max_warps == 64
    add = analyze(_snap(goldens, "add", "sm_90a")).occupancy
    assert add.value == 16 and add.limiter == "warps" and add.fraction == 1.0
    amd = analyze(_snap(goldens, "add", "gfx942"))
    assert amd.occupancy.unit == "waves/SIMD" and amd.occupancy.value == amd.resources.occupancy


# -- API, keys, cache -----------------------------------------------------------------------------------

def test_every_counter_produced_is_documented(goldens, extra):
    snaps = [load_snapshot(p.parent) for p in goldens.rglob("irscope.json")] + list(extra.values())
    keys = {k for s in snaps for k in analyze(s).counters}
    assert {k for k in keys if info(k) is None} == set()
    doc = (ROOT / "docs" / "analyzers.md").read_text()
    assert [c.pattern for c in CATALOG if f"`{c.pattern}`" not in doc] == []


def test_count_ops_reads_one_stage_of_text(goldens):
    snap = _snap(goldens, "matmul", "sm_90a")
    assert count_ops("ptx", snap.read("ptx"))["ptx.wgmma"] == analyze(snap).counters["ptx.wgmma"]
    assert count_ops("llir", "anything") == {}
    with pytest.raises(UsageError):
        count_ops("sas", "")


def test_parsers_on_text_edge_cases():
    ptx = ("waitLoop:\n\t@!complete bra.uni waitLoop;\n\t@%p1 ld.global.nc.v2.b32 { %r1, %r2 }, [ %rd1 + 0 ];\n"
           "\tcp.async.ca.shared.global [ %r9 + 0 ], [ %rd3 + 0 ], 0x8, %r4;\n\t// cp.async.cg comment\n"
           "\t.loc 1 2 3\n\tbar.warp.sync -1;\n")
    c = count_ops("ptx", ptx)
    assert c["ptx.ld.global.8B"] == 1 and c["ptx.cp.async.8B"] == c["ptx.cp.async.ca"] == 1
    assert c["ptx.bar.warp"] == 1 and "ptx.bar" not in c and c["ptx.instructions"] == 4
    sass = "        /*0040*/  @!P0 LDG.E.64 R2, desc[UR4][R2.64] ;\n        /*0050*/  STL [R1], R0 ;\n"
    assert count_ops("sass", sass) == {"sass.instructions": 2, "sass.LDG": 1, "sass.LDG.8B": 1, "sass.STL": 1}
    amd = ("\tds_read2st64_b64 v[0:3], v1 offset1:1\n\tds_store_2addr_b32 v1, v2, v3\n.LBB0_1:\n\t.p2align 4\n"
           "\tglobal_load_dwordx4 v[4:7], v0, s[2:3]\n\tbuffer_load_dword v0, s[8:11], 0 offen lds\n"
           "\tv_mfma_f32_16x16x16_bf16 v[0:3], v[4:5], v[6:7], v[0:3]\n\ts_waitcnt vmcnt(0)\n")
    c = count_ops("amdgcn", amd)
    assert c["amdgcn.ds_read.16B"] == 1 and c["amdgcn.ds_write.8B"] == 1 and c["amdgcn.instructions"] == 6
    assert c["amdgcn.global_load.16B"] == 1 and c["amdgcn.buffer_load.4B"] == 1 and c["amdgcn.load_to_lds"] == 1
    assert c["amdgcn.v_mfma.f32_16x16x16_bf16"] == 1 and c["amdgcn.s_waitcnt"] == 1


def test_stage_results_are_cached_in_the_snapshot_and_refreshed_when_the_stage_changes(goldens, tmp_path):
    import shutil
    folder = tmp_path / "snap"
    shutil.copytree(goldens / "add" / "default" / "sm_80", folder)
    first = analyze(load_snapshot(folder))
    cache = folder / ".irscope-analysis.json"
    data = json.loads(cache.read_text())
    assert set(data["stages"]) == {"ttgir", "ptx", "sass"}
    data["stages"]["ptx"]["counters"]["ptx.instructions"] = -7  # a sentinel only the cache can return
    cache.write_text(json.dumps(data))
    assert analyze(load_snapshot(folder)).counters["ptx.instructions"] == -7
    ptx = folder / "add_kernel.ptx"
    os.utime(ptx, ns=(time.time_ns(), time.time_ns() + 10**9))  # the file changed: the entry is stale
    assert analyze(load_snapshot(folder)).counters["ptx.instructions"] == first.counters["ptx.instructions"]


def test_analysis_is_read_from_text_for_every_analysed_stage(goldens):
    a = analyze(_snap(goldens, "matmul", "sm_80"), cache=False)
    assert a.stages == ("ttgir", "ptx", "sass") and set(ANALYZED_STAGES) >= set(a.stages)
    d = a.as_dict()
    assert {"counters", "resources", "occupancy", "launch", "layouts", "allocations", "label"} <= set(d)
    assert d["launch"] == {"launchable": True, "reasons": [], "checked": True}
    groups = dict(a.groups)
    assert "ptx.mma.sync" in groups["PTX · matrix"] and "ttgir.layout.blocked" in groups["TTGIR · layouts"]


# -- the stats command ------------------------------------------------------------------------------------

def test_stats_table_json_and_csv(cli, goldens):
    code, out, err = cli("stats", goldens / "matmul" / "default" / "sm_90a")
    assert code == 0, err
    assert "PTX · matrix" in out and "ptx.wgmma" in out and "nvidia_mma versionMajor=3" in out
    assert "3x128x64xf16" in out and "launchable  yes" in out
    code, out, err = cli("stats", goldens / "matmul", "--json", "--only", "ptx.wgmma,amdgcn.v_mfma")
    rows = json.loads(out)
    assert len(rows) == 7 and {r["target"] for r in rows} == {"sm_80", "sm_90a", "sm_100a", "sm_120a", "gfx90a",
                                                               "gfx942", "gfx950"}
    by = {r["target"]: r for r in rows}
    assert by["sm_90a"]["counters"] == {"ptx.wgmma": 4} and by["gfx942"]["launch"]["launchable"] is False
    code, out, err = cli("stats", goldens / "matmul" / "default" / "gfx950", goldens / "matmul" / "default" / "sm_90a",
                         "--csv")
    lines = out.splitlines()
    header = lines[0].split(",")
    assert header[:6] == ["path", "label", "kernel", "variant", "target", "status"] and "res.shared" in header
    gfx, hopper = (dict(zip(header, row.split(","))) for row in lines[1:3])  # no quoted commas in these rows
    assert hopper["ptx.wgmma"] == "4" and gfx["ptx.wgmma"] == "" and gfx["amdgcn.v_mfma"] == "48"


def test_stats_side_by_side_names_columns_by_what_differs(cli, goldens):
    code, out, err = cli("stats", goldens / "matmul" / "default" / "sm_80", goldens / "matmul" / "default" / "gfx942")
    assert code == 0, err
    assert out.splitlines()[0].split()[1:] == ["sm_80", "gfx942"]
    assert "cannot launch" in out and "gfx942: LDS" in out


def test_stats_on_a_missing_folder_is_a_one_line_error(cli, tmp_path):
    code, out, err = cli("stats", tmp_path / "nope")
    assert code == 4 and err.startswith("irscope: error: ") and "Traceback" not in err
