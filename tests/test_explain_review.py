"""`irscope explain` regressions found by review: hostile snapshots, Triton cache entries, gfx950's direct-to-LDS
loads, and the command line. Every test reads real compiles (one output folder serves the module).
"""
from __future__ import annotations

import hashlib
import io
import json
import shutil
import subprocess
import sys
import time

import pytest

from irscope.explain import explain
from irscope.spec.kernel import CompileOptions


@pytest.fixture(scope="module")
def out(tmp_path_factory):
    return tmp_path_factory.mktemp("explain-review")


@pytest.fixture(scope="module")
def snaps(out):
    """Real compiles, once: name -> snapshot folder."""
    from irscope.harness.batch import Point, compile_points

    points = {"add_amd": Point("add", "gfx942"), "matmul_80": Point("matmul", "sm_80")}
    done = compile_points(list(points.values()), out)
    assert all(o.ok for o in done), [o.error for o in done]
    return dict(zip(points, (o.path for o in done)))


def _cli(*argv):
    from irscope.cli import main
    buf, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out=buf, err=err)
    return code, buf.getvalue(), err.getvalue()


def _rewrite_stage(folder, stage: str, text: str) -> None:
    """Replace a stage's text and record its hash, size and lines, as a hostile snapshot would."""
    meta_path = folder / "irscope.json"
    meta = json.loads(meta_path.read_text())
    info = meta["stages"][stage]
    data = text.encode()
    (folder / info["file"]).write_bytes(data)
    info.update(sha256=hashlib.sha256(data).hexdigest(), bytes=len(data), lines=text.count("\n"))
    meta_path.write_text(json.dumps(meta))


def test_a_ttgir_of_long_hostile_lines_is_explained_in_seconds_not_hours(snaps, tmp_path):
    """One long line of `tt.dot %a` (the dot's operand type) or of `= tt.load` (AMD's prologue check) made
    explain's regular expressions quadratic: a 1 MB line held `explain --budget 0` for hours."""
    folder = tmp_path / "hostile"
    shutil.copytree(snaps["add_amd"], folder)
    ttgir = (folder / json.loads((folder / "irscope.json").read_text())["stages"]["ttgir"]["file"]).read_text()
    evil = ("    %d = tt.dot %a " + "tt.dot %a " * 100_000 + "\n" +
            "    scf.for %i = %c0 to %c1 step %c1 {\n" + "    %x = tt.load " + "= tt.load " * 100_000 + "\n" +
            "    scf.for %j = %c0 to %c1 step %c1 {\n" * 20_000)
    _rewrite_stage(folder, "ttgir", ttgir.replace("  tt.func public", evil + "  tt.func public", 1))
    start = time.monotonic()
    res = subprocess.run([sys.executable, "-m", "irscope", "explain", str(folder), "--budget", "0", "--json"],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert time.monotonic() - start < 60
    assert json.loads(res.stdout)["decisions"]


def test_a_triton_cache_entry_reads_the_divisibility_its_ttgir_signature_states(snaps, tmp_path):
    """A cache entry records no specialisation: its 16-aligned pointers read as 'divisible by 1', so a load
    that is 16 B wide was said to need 'a_ptr divisible by 16' and --divisibility 16 was the fix offered."""
    entry = tmp_path / "cache" / "5CWQ5QCJZ3M2QXYZ"
    entry.mkdir(parents=True)
    for p in snaps["matmul_80"].glob("matmul_kernel.*"):
        shutil.copy(p, entry / p.name)
    (entry / "__grp__matmul_kernel.json").write_text("{}")
    result = explain(None, None, CompileOptions(), tmp_path, snapshot=entry, budget=0)
    loads = [d for d in result.decisions if d.topic == "vectors" and d.subject.startswith("load of a_ptr")]
    assert loads and "a_ptr divisible by 16" in loads[0].why, [d.why for d in result.decisions]
    pipe = next(d for d in result.decisions if d.topic == "pipelining")
    assert "K divisible by 16" in pipe.why
    assert [w.change for w in result.skipped if w.topic == "vectors"] == ["--divisibility 1"]


def test_gfx950s_direct_to_lds_global_loads_count_as_global_instructions_without_buffer_ops(out):
    """With AMDGCN_USE_BUFFER_OPS=0 gfx950 loads the matmul's tiles with global_load_lds_dwordx4: the remark
    said 'no buffer ops: 8 global instructions', the 8 stores, as if the 18 loads had vanished."""
    from irscope.explain.decisions import read_decisions
    from irscope.explain.facts import gather
    from irscope.explain.whatif import WhatIf, run_whatifs
    from irscope.store.snapshot import load_snapshot

    off = WhatIf("buffer_ops", "AMDGCN_USE_BUFFER_OPS=0", "gfx950", CompileOptions(name="default.no-buffer-ops"),
                 "", (("AMDGCN_USE_BUFFER_OPS", "0"),))
    [r] = run_whatifs("matmul", [off], out)
    assert r.status == "ok", r.error
    c = r.analysis.counters
    assert c.get("amdgcn.global_load_lds", 0) > 0 and not c.get("amdgcn.buffer_load")
    d = next(d for d in read_decisions(gather(load_snapshot(r.folder), r.analysis)) if d.topic == "buffer_ops")
    total = c.get("amdgcn.global_load", 0) + c["amdgcn.global_load_lds"] + c.get("amdgcn.global_store", 0)
    assert d.value == f"no buffer ops: {total} global instructions", d.value
    assert ("amdgcn.global_load_lds", c["amdgcn.global_load_lds"]) in d.evidence


def test_a_snapshot_of_another_triton_release_is_not_set_beside_what_ifs_of_this_one(snaps, tmp_path):
    """A snapshot compiled by Triton 3.6.0 (`--triton 3.6.0`) had its what-ifs compiled by the running release,
    and every difference between the releases read as the switch's doing, without a word."""
    folder = tmp_path / "root" / "matmul" / "default" / "sm_80"
    shutil.copytree(snaps["matmul_80"], folder)
    meta = json.loads((folder / "irscope.json").read_text())
    meta["versions"]["triton"] = "3.6.0"
    (folder / "irscope.json").write_text(json.dumps(meta))
    code, _, err = _cli("explain", str(folder), "--budget", "1", "--out", str(tmp_path / "out"))
    assert code == 2 and "was compiled by Triton 3.6.0" in err, err
    assert "irscope: hint: explain it with --triton 3.6.0" in err and "--budget 0" in err
    assert not (tmp_path / "out" / "matmul").exists()  # nothing compiled
    code, text, err = _cli("explain", str(folder), "--budget", "0", "--out", str(tmp_path / "out"))
    assert code == 0 and "matrix instruction" in text, err


def test_a_builtin_kernels_name_is_the_kernel_even_where_a_folder_has_that_name(snaps, out, tmp_path, monkeypatch):
    """In a snapshot root (every kernel has a folder there) `irscope explain matmul` said 'matmul is a folder
    but not a snapshot folder' and stopped, where compile and compare take the built-in."""
    monkeypatch.chdir(out)
    assert (out / "matmul").is_dir()
    code, text, err = _cli("explain", "matmul", "--target", "sm_80", "--budget", "0", "--out", str(out))
    assert code == 0, err
    assert text.startswith("matmul/default/sm_80")
    (tmp_path / "notakernel").mkdir()
    monkeypatch.chdir(tmp_path)
    code, _, err = _cli("explain", "notakernel", "--budget", "0", "--out", str(out))
    assert code == 4 and "notakernel is a folder but not a snapshot folder" in err, err


def test_passes_with_a_snapshot_folder_is_refused_not_ignored(snaps):
    """`irscope explain SNAPSHOT --passes` recorded nothing (the snapshot is read, not compiled) and ended on
    'add --passes to see them on this compile's timeline', the flag the user had given."""
    code, _, err = _cli("explain", str(snaps["matmul_80"]), "--passes", "--budget", "0")
    assert code == 2 and "--passes with a snapshot folder" in err, err
    code, text, err = _cli("explain", str(snaps["matmul_80"]), "--budget", "0")
    assert code == 0, err
    assert "add --passes" not in text and "irscope explain KERNEL --passes" in text


@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
def test_no_tensor_core_what_if_is_planned_for_an_fma_dot(out, target):
    """The fp32 'ieee' matmul is FMA at any num_warps and on any target, yet '--num-warps 2: does the
    warp-group MMA drop to mma.sync?' (sm_90a) or '--target sm_90a' (sm_80) came first in the plan."""
    result = explain("matmul.fp32", target, CompileOptions(), out, budget=0)
    matrix = next(d for d in result.decisions if d.topic == "matrix")
    assert matrix.value.startswith("FMA") and "input_precision='ieee'" in matrix.why
    assert [w.change for w in result.skipped if w.topic == "matrix"] == []
    assert [w.change for w in result.skipped][:1] == ["--divisibility 1"]


def test_a_narrow_load_names_the_unaligned_integer_that_bounds_its_mask(out):
    """add with n_elements=4095: each load is 4 B because the mask `offs < n_elements` is not 16-aligned, but
    the remark blamed 'the value's layout' (8 fp32 a thread: 32 contiguous bytes) and never named n_elements."""
    result = explain("add", "sm_80", CompileOptions(args=(("n_elements", 4095),)), out, budget=0)
    load = next(d for d in result.decisions if d.topic == "vectors" and d.subject.startswith("load of x_ptr"))
    assert load.value == "4 B per thread (ld.global)"
    assert "n_elements divisible by 1" in load.why and "16 B needs n_elements divisible by 16" in load.why, load.why
    aligned = explain("add", "sm_80", CompileOptions(), out, budget=0)  # (n_elements divisible by 16: not named)
    assert all("n_elements" not in d.why for d in aligned.decisions if d.topic == "vectors")


def test_the_alignment_fix_rounds_up_an_integer_whose_value_is_not_a_multiple_of_16(out):
    """add with x_ptr unaligned and n_elements=1000: the planned fix was `--divisibility 16` alone, which keeps
    n_elements=1000 (a fixed value is as aligned as it is), so every load came back 'unchanged'. The fix now
    also rounds n_elements up to 1008, and the loads become 16 B wide; with the pointers aligned, the
    rounding alone is the fix (the `--divisibility 1` probe changed nothing either)."""
    base = CompileOptions(args=(("n_elements", 1000),), divisibility=(("x_ptr", 1),))
    result = explain("add", "sm_80", base, out, budget=1)
    fix = [r for r in result.remarks if r.change and r.decision.topic == "vectors"]
    assert {r.change for r in fix} == {"--divisibility x_ptr=16 --arg n_elements=1008"}, [r.message for r in fix]
    assert len(fix) == 3 and all(r.kind == "missed" and "would be 16 B per thread" in r.message for r in fix), \
        [r.message for r in fix]
    alone = explain("add", "sm_80", CompileOptions(args=(("n_elements", 1000),)), out, budget=1)
    fix = [r for r in alone.remarks if r.change and r.decision.topic == "vectors"]
    assert {r.change for r in fix} == {"--arg n_elements=1008"} and len(fix) == 3, [r.message for r in fix]
    assert all("would be 16 B per thread" in r.message for r in fix), [r.message for r in fix]


def test_every_json_key_is_documented(snaps):
    """docs/explain.md's JSON section listed every key but `gluon`."""
    import re
    from pathlib import Path

    doc = (Path(__file__).parent.parent / "docs" / "explain.md").read_text()
    section = doc[doc.index("## JSON"):doc.index("## From Python")]
    named = set(re.findall(r"`(\w+)`", section))
    code, text, err = _cli("explain", str(snaps["matmul_80"]), "--budget", "0", "--json")
    assert code == 0, err
    data = json.loads(text)
    keys = set(data) | {k for d in data["decisions"] for k in d} | {k for r in data["remarks"] for k in r}
    assert keys <= named, keys - named


def test_a_base_compile_that_fails_or_is_not_for_the_target_says_why_and_what_to_do(out):
    """A failed base compile said only 'did not compile (at source)'; one not for its target said 'the compile
    not-for-target: ...' with 'irscope compile the same kernel and options for the log' as the hint."""
    code, _, err = _cli("explain", "matmul", "--target", "sm_80", "--constexpr", "BLOCK_K=24", "--out", str(out))
    assert code == 3 and "did not compile (at source: arange's range must be a power of 2)" in err, err
    code, _, err = _cli("explain", "attention_ws", "--target", "sm_100a", "--budget", "0", "--out", str(out))
    assert code == 3 and "attention_ws/default/sm_100a: not for sm_100a" in err, err
    assert "the compile not-for-target" not in err and "irscope kernels attention_ws" in err


def test_gfx950s_buffer_loads_into_lds_are_named_so_not_plain_buffer_loads(out):
    # gfx950's matmul copies its tiles with `buffer_load_dwordx4 ... offen lds` (straight into LDS, the async
    # copy); explain called them `buffer_load`, the register load of gfx942.
    from irscope.harness.batch import Point, compile_points
    (o,) = compile_points([Point("matmul", "gfx950")], out)
    assert o.ok, o.error
    assert any(ln.rstrip().endswith(" lds") for ln in (o.path / "matmul_kernel.amdgcn").read_text().splitlines())
    code, text, err = _cli("explain", str(o.path), "--budget", "0", "--json")
    assert code == 0, err
    remarks = json.loads(text)["remarks"]
    pipelining = next(r for r in remarks if r["topic"] == "pipelining")
    assert "a_ptr buffer_load_lds 16B" in pipelining["value"], pipelining["value"]
    widths = [r for r in remarks if r["topic"] == "vectors" and r["subject"].startswith("load of")]
    assert widths and all("(buffer_load_lds)" in r["value"] for r in widths), [r["value"] for r in widths]


def test_a_tcgen05_dot_names_its_tile_from_the_tensor_memory_accumulator(out):
    """tcgen05's MMA returns nothing (its accumulator is an operand in tensor memory), so the tile read from
    the dot's `-> tensor<MxN>` was missing on Blackwell while wgmma's remark named it."""
    result = explain("matmul", "sm_100a", CompileOptions(), out, budget=0)
    matrix = next(d for d in result.decisions if d.topic == "matrix")
    assert matrix.value == "tcgen05.mma" and "128x256 tile" in matrix.why, matrix.why
    hopper = explain("matmul", "sm_90a", CompileOptions(), out, budget=0)
    assert "128x256 tile" in next(d for d in hopper.decisions if d.topic == "matrix").why
