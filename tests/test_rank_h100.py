"""The H100's calibration (irscope/rank/chips.py, docs/rank.md "The H100's calibration"): the H200's figures for
the SMs and L2 both chips share, and the H100's own DRAM figures, each what the committed runs give by the
scripts' own fits."""
import dataclasses
import importlib.util
import json
from pathlib import Path

import pytest

from irscope.rank.chips import CHIPS, H100_DRAM, H100_RECORDS, H100_ROWS_10, H100_ROWS_11
from irscope.rank.model import DEFAULT_MODEL, effective_model

ROOT = Path(__file__).resolve().parents[1]
RANK = ROOT / "docs" / "rank"


def _script(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_dram_figures_of_both_chips_are_what_fit_dram_gives_their_runs():
    cal = _script("rank_calibrate")
    h200 = cal.fit_dram(json.loads((RANK / "calibrate-h200-v3.json").read_text()))
    h100 = cal.fit_dram(json.loads((RANK / "calibrate-h100-dram.json").read_text()))
    assert "H100" in h100["gpu"] and "H200" in h200["gpu"] and h100["rows"] == h200["rows"] == 28
    for key, value in H100_DRAM.items():
        assert h100[key] == pytest.approx(value, abs=0.05), key
        assert h200[key] == pytest.approx(getattr(CHIPS["h200"].calibration(4), key), abs=0.15), key  # (4,327.05)
    assert CHIPS["h100"].calibration(21).dram_gbs == 3031.4 < CHIPS["h200"].calibration(21).dram_gbs


def test_the_one_row_figures_are_what_fit_rows_gives_the_h100s_rows():
    cal = _script("rank_calibrate")
    doc = json.loads((RANK / "calibration-facts-onerow-h100.json").read_text())
    assert doc["gpu"] == "h100" and len(doc["rows"]) == 36
    for model, figures in ((10, H100_ROWS_10), (11, H100_ROWS_11)):
        fit = cal.fit_rows(doc, model, "h100")
        assert {k: fit[k] for k in figures} == figures
        assert fit["rms_log_error"] < 0.05
    # the H200's own rows under the same script still give its figures (1,800 cycles, 625 a reduction)
    h200 = cal.fit_rows(json.loads((RANK / "calibration-facts-onerow.json").read_text()), 11)
    assert (h200["row_latency"], h200["warp_reduce_cycles"]) == (1800.0, 625.0)


def test_the_records_figures_are_what_rank_aos_fit_gives_each_chips_run():
    aos = _script("rank_aos")
    h100 = aos.fit(json.loads((RANK / "aos-h100.json").read_text()), H100_DRAM["dram_gbs"])
    assert {k: h100[k] for k in H100_RECORDS} == {k: pytest.approx(v, abs=0.5) for k, v in H100_RECORDS.items()}
    # the H200's committed figures (10.1, 9.4, 25,000) came from an earlier fit of the same rows; the script
    # lands within 2% of each
    h200 = aos.fit(json.loads((RANK / "aos-h200.json").read_text()), 4327.0)
    m = CHIPS["h200"].calibration(21)
    for key in H100_RECORDS:
        assert h200[key] == pytest.approx(getattr(m, key), rel=0.02), key


def test_everything_else_is_the_h200s():
    """Only the DRAM's figures, the one-row programs' (which wait on the DRAM) and the records' differ."""
    h100, h200 = CHIPS["h100"], CHIPS["h200"]
    for model in range(2, 22):
        a, b = h100.calibration(model), h200.calibration(model)
        assert (a is None) == (b is None), model
        if a is None:
            continue
        differ = {f.name for f in dataclasses.fields(a) if getattr(a, f.name) != getattr(b, f.name)}
        own = ((set(H100_DRAM) | {"source"} if model >= 4 else set()) | (set(H100_ROWS_11) if model >= 10 else set())
               | (set(H100_RECORDS) if model >= 21 else set()))
        assert differ == own, (model, differ ^ own)
        for figures in ((H100_DRAM,) if model >= 4 else ()) + ((H100_ROWS_10 if model == 10 else H100_ROWS_11,)
                                                                if model >= 10 else ()):
            assert all(getattr(a, k) == v for k, v in figures.items()), model
    assert effective_model(h100, DEFAULT_MODEL) == DEFAULT_MODEL == 21


def test_rank_on_the_default_chip_of_sm_90a_runs_the_calibrated_model(cli):
    """`irscope rank` without --gpu ranks sm_90a for the H100: model 21, no longer model 2's published peaks."""
    code, out, err = cli("rank", "add", "--target", "sm_90a", "--size", "bench", "--out", "s", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert (data["gpu"], data["model"], data["model_run"]) == ("h100", 21, 21)
    assert "the H100's DRAM measured again" in data["calibration"]
    code, out, err = cli("rank", "add", "--target", "sm_90a", "--size", "bench", "--out", "s", "--top", "1")
    assert code == 0 and "(model 21; docs/rank.md)" in out and "no calibration" not in out, out


def test_the_frozen_h100_predictions_are_what_the_stored_facts_give():
    """docs/rank/h100/predictions.json, frozen before the H100 timed those rows: recomputed from the facts."""
    ev = _script("rank_eval")
    frozen = json.loads((RANK / "h100" / "predictions.json").read_text())
    again = ev.on_chip(json.loads((RANK / "facts.json").read_text()), "h100", ev.HELDOUT_H100)
    assert again == json.loads(json.dumps(frozen))
    assert set(frozen["variants"]) == {"model 21 (h100 calibration)", "model 21 (h200 figures)",
                                       "model 2 (h100 uncalibrated)"}
    assert sum(len(sizes) for sizes in frozen["sizes"].values()) == 13


def test_the_h100_runs_figures_are_what_the_committed_timings_give():
    """The 13 rows timed on an H100 after the freeze (docs/rank/h100/README.md): the H100 calibration meets
    both goals at 11 with a median error of 14.0%; the H200's figures at 13, their times further off
    (18.8%); model 2 without a calibration, what `irscope rank` gave an H100 before, at none."""
    ev = _script("rank_eval")
    frozen = json.loads((RANK / "h100" / "predictions.json").read_text())
    times = [json.loads((RANK / "h100" / f"rank-times-h100-{x}.json").read_text()) for x in "ab"]
    assert all("H100" in t["versions"]["gpu"] and t["versions"]["triton"] == "3.6.0" for t in times)
    figures = ev.score_on_chip(frozen, times)
    assert figures == json.loads((RANK / "h100" / "evaluation.json").read_text())
    counts = {name: (f["rows"], f["both_goals"], f["median_error"]) for name, f in figures.items()}
    assert counts == {"model 21 (h100 calibration)": (13, 11, 0.1398), "model 21 (h200 figures)": (13, 13, 0.1875),
                      "model 2 (h100 uncalibrated)": (13, 0, 0.2121)}


def test_the_figures_the_h100_takes_from_the_h200_hold_on_an_h100():
    """A check run on an H100 after the calibration's own check (docs/rank/calibrate-h100-check.json: the
    `loop`, `feed`, `wspill`, `waves` and `clocks` kinds): the SM's and the L2's figures the H100 takes from the
    H200, fitted from it by the same scripts, are within 7% of the H200's; a launch's fixed cost and the
    epilogue's store rate are not (16% and 25% apart, and kept: docs/rank.md, "The H100's calibration"); and
    model 21 on the H100 predicts its 64 `waves` rows (1-16 waves, where the card's clock falls under its
    power) at an RMS log error of 0.072, against 0.056 for the H200's on the H200."""
    import math

    from irscope.rank import estimate
    from irscope.rank.facts import Facts
    from irscope.spec.problem import Problem
    cal = _script("rank_calibrate")
    h100 = json.loads((RANK / "calibrate-h100-check.json").read_text())
    assert "H100" in h100["gpu"]
    h200 = {k: json.loads((RANK / f"calibrate-h200-v{v}.json").read_text()) for k, v in (("loop", 5), ("feed", 7), ("wspill", 8))}
    pairs = {**{k: (v, cal.fit_loop(h200["loop"])[k]) for k, v in cal.fit_loop(h100).items()},
             "l2_bytes_clk": (cal.fit_feed(h100)["l2_bytes_clk"], cal.fit_feed(h200["feed"])["l2_bytes_clk"]),
             "loop_dot_spill_warp_bytes_clk": (cal.fit_wspill(h100)["loop_dot_spill_warp_bytes_clk"],
                                               cal.fit_wspill(h200["wspill"])["loop_dot_spill_warp_bytes_clk"])}
    apart = {k: round(a / b - 1, 2) for k, (a, b) in pairs.items() if k not in ("latency_rows", "shapes")}
    assert apart == {"launch_us": 0.16, "epilogue_bytes_clk": 0.25, "loop_copy_latency": -0.06,
                     "loop_copy_bytes_clk": 0.05, "l2_bytes_clk": -0.04, "loop_dot_spill_warp_bytes_clk": -0.06}
    keys = ("warps", "bm", "bn", "bk", "stages", "programs_per_sm", "waves", "k", "masked")
    times = {tuple(r[k] for k in keys): r["ms"] for r in h100["waves"]}
    errors = []
    for r in json.loads((RANK / "calibration-facts-waves.json").read_text())["rows"]:
        p = r["problem"]
        problem = Problem("calibration", "", {}, (p["programs"],), p["flops"], p["min_bytes"])
        ms = estimate(Facts.from_dict(r["facts"]), problem, CHIPS["h100"], 21).ms
        errors.append(math.log(ms / times[tuple(r["params"][k] for k in keys)]))
    assert len(errors) == 64 and round(math.sqrt(sum(e * e for e in errors) / len(errors)), 3) == 0.072


def test_the_launch_orders_figures_are_what_the_committed_run_gives():
    """docs/rank.md, "The launch order, measured and not modelled": kernels/matmul.py at GROUP_M 1-64 on an
    H100 (docs/rank/order-h100.json). The DRAM count of an order is the script's own arithmetic, checked here
    on the matmul_kernel's mapping: GROUP_M 1 walks a row of tiles, a group of 8 goes down 8 rows first."""
    order = _script("rank_order")
    assert [order.tile_of(p, 64, 32, 1) for p in (0, 1, 32)] == [(0, 0), (0, 1), (1, 0)]
    assert [order.tile_of(p, 64, 32, 8) for p in (0, 1, 8)] == [(0, 0), (1, 0), (0, 1)]
    doc = json.loads((RANK / "order-h100.json").read_text())
    assert "H100" in doc["versions"]["gpu"] and len(doc["rows"]) == 63
    groups: dict = {}
    for r in doc["rows"]:
        assert r["max_abs_error"] < 0.2  # fp16 outputs of K-long sums, checked against torch
        assert r["wave_dram_bytes"] == order.wave_bytes(r["m"], r["n"], r["k"], r["bm"], r["bn"], r["group"],
                                                        doc["sms"] * r["programs_an_sm"])
        groups.setdefault((r["m"], r["n"], r["k"], r["bm"], r["bn"]), {})[r["group"]] = r["ms"]
    worst = sorted(round(max(g.values()) / min(g.values()) - 1, 2) for g in groups.values())
    eight = sorted(round(g[8] / min(g.values()) - 1, 2) for g in groups.values())
    assert (worst[0], worst[-1], eight[0], eight[-1]) == (0.08, 0.92, 0.0, 0.14)
    assert sorted(min(g, key=g.get) for g in groups.values()) == [1, 16, 16, 16, 16, 16, 32, 64, 64]
