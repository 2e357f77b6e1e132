"""The performance limits of the chips behind each target: what `irscope rank` divides compile facts by.

A target is an instruction set; a chip is what runs it. Every figure here is the vendor's published
peak (datasheet or whitepaper) or a documented architectural constant, never a value fitted to timings:
the ranking's evaluation (docs/rank.md) would mean nothing if the model had seen the measured data. The
few figures no vendor publishes (latencies, the L2-to-SM feed) are set once, from the sources named
beside them, and are the same for every kernel. The calibrations (`Measured`: the H200's, and the H100's
from it) are fitted on timings of benchmarks' kernels of their own, never of the evaluation's.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

from ..errors import UsageError


@dataclass(frozen=True)
class Chip:
    """One GPU's peaks, per SM (NVIDIA) or compute unit (AMD) and per clock unless the name says otherwise."""

    name: str
    target: str  # the compile target whose binaries it runs
    product: str
    sms: int  # SMs or CUs
    clock_ghz: float  # the clock the peak rates below are quoted at
    dram_gbs: float  # DRAM bandwidth, GB/s
    # Dense matrix-unit rate (flops/clock/SM) by input type, for the chip's fastest matrix instruction.
    mma_flops: dict = field(default_factory=dict)
    fp32_flops: int = 256  # non-matrix fp32 flops/clock/SM (an FMA is 2)
    sfu_ops: int = 16  # special-function (exp2, rcp, rsqrt) results/clock/SM
    smem_bytes_clk: int = 128  # shared memory (LDS) bytes/clock/SM: 32 banks x 4 B
    l2_bytes_clk: float = 48.0  # L2 to one SM, bytes/clock
    dram_latency: int = 800  # cycles, a global load that misses L2
    l2_latency: int = 300  # cycles, a global load that hits L2
    launch_us: float = 2.0  # the fixed cost of a launch as CUDA events time it
    # The slower matrix instructions a compile may fall back to, as fractions of `mma_flops`.
    fallback: dict = field(default_factory=dict)
    source: str = ""
    memory_gb: float = 0.0  # DRAM capacity (GB, 10^9 B) as the datasheet gives it; 0: not known
    # Model 2 only: figures measured on the machine by benchmarks/rank_calibrate.py, on kernels of its
    # own (never the evaluation's). None where not measured: model 2 then falls back to model 1's figure.
    measured: "Measured | None" = None
    measured_3: "Measured | None" = None  # model 3's: the second calibration run's figures added
    measured_4: "Measured | None" = None  # model 4's: the third run's added
    measured_5: "Measured | None" = None  # model 5's: the fourth run's added
    measured_6: "Measured | None" = None  # model 6's: the fifth run's L2 feed
    measured_7: "Measured | None" = None  # model 7's: the sixth run's spills in a matrix loop
    measured_8: "Measured | None" = None  # model 8's: the exponent the matrix loops' runs give
    measured_10: "Measured | None" = None  # model 10's: what a one-row program waits for (the rows run)
    measured_11: "Measured | None" = None  # model 11's: model 10's two figures refitted with SASS issue
    measured_12: "Measured | None" = None  # model 12's: the clock a long matrix launch keeps (power)
    measured_13: "Measured | None" = None  # model 13's: model 12's refitted with a launch's copies once
    measured_14: "Measured | None" = None  # model 14's: model 13's and the clocks a scoreboard wait adds
    measured_15: "Measured | None" = None  # model 15's: model 14's and the rate of wgmma repeated down M
    measured_16: "Measured | None" = None  # model 16's: model 15's and what a lockstep wave waits of its stores
    measured_21: "Measured | None" = None  # model 21's: model 16's and what a stream of records costs the DRAM

    def calibration(self, model: int) -> "Measured | None":
        """What model `model` takes from the machine (None for model 1, or a chip never calibrated)."""
        return {2: self.measured, 3: self.measured_3, 4: self.measured_4, 5: self.measured_5, 6: self.measured_6,
                7: self.measured_7, 8: self.measured_8, 9: self.measured_8,  # 9: no new figure
                10: self.measured_10, 11: self.measured_11, 12: self.measured_12, 13: self.measured_13,
                14: self.measured_14, 15: self.measured_15, 16: self.measured_16,
                17: self.measured_16, 18: self.measured_16, 19: self.measured_16,
                20: self.measured_16,  # 17-20: no new figure here (20 fits facts.L1_LINES_CLK)
                21: self.measured_21, 22: self.measured_21}.get(model)  # 22: no new figure

    def mma_rate(self, dtype: str, instruction: str) -> float:
        """flops/clock/SM of `instruction` ("wgmma", "mma", "tcgen05", "mfma", "wmma", "fma") on `dtype` inputs."""
        if instruction == "fma":
            return float(self.fp32_flops)
        base = self.mma_flops.get(dtype) or self.mma_flops.get("fp16", self.fp32_flops)
        return base * self.fallback.get(instruction, 1.0)


@dataclass(frozen=True)
class Measured:
    """What rank_calibrate.py measured on one chip."""

    start_cycles: dict  # num_warps -> cycles an SM spends per program it starts (an almost empty kernel)
    mma_fraction: dict  # "wgmma.n<N>" / "mma" -> fraction of `mma_flops` a compute-bound loop reaches
    l2_bytes_clk: float | None = None  # L2 to one SM, bytes/clock, re-reading an L2-resident buffer
    l1_bytes: int = 256 * 1024  # L1 + shared memory per SM (the datasheet's), where spills live first
    source: str = ""
    # Model 3 (the second calibration run): an asynchronous copy of B bytes from L2 lands
    # `copy_latency + B / copy_bytes_clk` cycles after it is issued; one program streams at most
    # `program_bytes_clk` and an SM at most `l2_bytes_clk`.
    copy_latency: float | None = None
    copy_bytes_clk: float | None = None
    program_bytes_clk: float | None = None
    # ... and a synchronous tile load (a loop the pipeliner left alone) of B bytes takes
    # `load_latency + B / load_bytes_clk`; loads, stores and spills that do not go through cp.async or
    # TMA are fed at most `sync_l2_bytes_clk` per SM.
    load_latency: float | None = None
    load_bytes_clk: float | None = None
    sync_l2_bytes_clk: float | None = None
    # Model 4 (the third run): the same copies and loads when every program streams its own data from
    # DRAM; the DRAM bandwidth the card reached; spills: a warp moves `spill_warp_bytes_clk` of local
    # memory traffic a clock on its own, an SM at most `spill_sm_bytes_clk`.
    dram_copy_latency: float | None = None
    dram_copy_bytes_clk: float | None = None
    dram_load_latency: float | None = None
    dram_load_bytes_clk: float | None = None
    dram_gbs: float | None = None
    spill_warp_bytes_clk: float | None = None
    spill_sm_bytes_clk: float | None = None
    # Model 5 (the fourth run, `loop`: a pipelined matrix loop with both operands copied from L2): such a
    # loop (two or more copies an iteration) waits `loop_copy_latency + B / loop_copy_bytes_clk` for an
    # iteration's B bytes of copies; after its loop a program stores its output at `epilogue_bytes_clk`;
    # a launch costs `launch_us` (CUDA events, L2 flushed before: what do_bench times).
    loop_copy_latency: float | None = None
    loop_copy_bytes_clk: float | None = None
    epilogue_bytes_clk: float | None = None
    launch_us: float | None = None
    # Model 7 (the sixth run, `wspill`): spill traffic inside a loop that multiplies (the accumulator's
    # spills around asynchronous matrix products) moves at this rate a warp, up to the SM's L1 rate.
    loop_dot_spill_warp_bytes_clk: float | None = None
    # Model 8 (fitted on the matrix loops of the `loop`, `feed` and `tiles` runs): a loop that multiplies
    # takes the p-norm of its wave's demands, not their maximum (demands near each other slow each other).
    soft_p: float | None = None
    # Model 10 (fitted on the `rows` run's one-row programs): a program without a loop waits
    # `row_latency + B / dram_load_bytes_clk` for its B bytes of loads from DRAM, and
    # `warp_reduce_cycles` for each reduction across its warps.
    row_latency: float | None = None
    warp_reduce_cycles: float | None = None
    # wgmma N between two measured ones: interpolated in log2(N) (model 3; model 2 takes only exact N)
    interpolate_n: bool = False
    # Model 12 (fitted on the `waves` run and the matrix loops of the `loop`, `feed` and `tiles` runs): a
    # launch that multiplies draws power by its activity A, the flops a second an SM it would do at the
    # table's clock plus `power_bytes_flops` for each byte it copies from L2; the card keeps `boost_ghz`
    # while A <= `power_activity`, beyond it boost x (power_activity / A) ** (1 / `power_exponent`), and
    # a launch reaches that clock over `power_ramp_us` (a short one keeps most of the boost).
    boost_ghz: float | None = None
    power_activity: float | None = None  # GFLOP/s an SM
    power_bytes_flops: float | None = None
    power_exponent: float | None = None
    power_ramp_us: float | None = None
    # Model 14 (fitted on the calibration's row loops and one-row programs): a warp of a kernel without
    # matrix products takes, through its code, the clocks its SASS stalls it plus `wait_cycles` at each
    # wait on a scoreboard (a special function's, a shared-memory or global load's result).
    wait_cycles: float | None = None
    # Model 15 (fitted on the calibration's matrix loops): a warpgroup that repeats its wgmma down M (two
    # 64-row instructions or more a k-step: a 256-row tile at 8 warps, a 128-row one at 4) reaches this
    # fraction of the rate the one-repetition loops measured.
    mma_reps_fraction: float | None = None
    # Model 16: the fraction of a wave's output stores (at `epilogue_bytes_clk`) that each wave of a loop
    # that multiplies waits for before its next programs start
    wave_store_fraction: float | None = None
    # Model 21 (benchmarks/rank_aos.py, docs/rank/aos-h200.json; fitted on its own kernel's rows alone): a
    # stream of records (rank/records.py) takes the DRAM `record_run_ps` for each run of adjacent 32-byte
    # sectors its records touch and `record_sector_ps` for each sector, in picoseconds of the whole chip;
    # its SMs holding x records in flight, x - 1024 over `record_flight` more.
    record_run_ps: float | None = None
    record_sector_ps: float | None = None
    record_flight: float | None = None

    def start(self, warps: int) -> float:
        keys = sorted(int(k) for k in self.start_cycles)
        if not keys:
            return 0.0
        below = [k for k in keys if k <= warps] or keys[:1]
        return float(self.start_cycles[str(below[-1])] if str(below[-1]) in self.start_cycles
                     else self.start_cycles[below[-1]])

    def mma(self, instruction: str, n: int) -> float | None:
        """The measured fraction of the peak, for this instruction (and wgmma N) only; None if not measured."""
        if instruction != "wgmma":
            return self.mma_fraction.get(instruction)
        if not n:
            return None
        exact = self.mma_fraction.get(f"wgmma.n{n}")
        if exact is not None or not self.interpolate_n:
            return exact
        known = sorted((int(k.split(".n")[1]), v) for k, v in self.mma_fraction.items() if k.startswith("wgmma.n"))
        if not known:
            return None
        if n <= known[0][0]:
            return known[0][1]
        if n >= known[-1][0]:
            return known[-1][1]
        for (n0, f0), (n1, f1) in zip(known, known[1:]):
            if n0 < n < n1:
                t = (math.log2(n) - math.log2(n0)) / (math.log2(n1) - math.log2(n0))
                return f0 + t * (f1 - f0)
        return None


_F16 = ("fp16", "bf16")


def _rates(fp16: int, tf32_ratio: float = 0.5, fp8_ratio: float = 2.0, int8_ratio: float = 2.0) -> dict:
    r = {d: fp16 for d in _F16}
    r["fp32"] = int(fp16 * tf32_ratio)  # fp32 inputs run as tf32 on the matrix units
    if fp8_ratio:
        r["fp8"] = int(fp16 * fp8_ratio)
    r["int8"] = int(fp16 * int8_ratio)
    return r


# benchmarks/rank_calibrate.py on the H200 (Triton 3.6.0, torch 2.11, 2026-12-01; docs/rank/calibrate-h200.json).
# The run stopped at its time limit after the first three matrix shapes: the other wgmma shapes and the L2
# feed were not measured, and model 2 keeps model 1's figures for them.
#   program start: 79.8 ns per program per SM at 1, 4 and 8 warps, 118.0 ns at 32 (x 1.83 GHz = cycles)
#   mma.sync (2 warps, 64x128x64 tiles): 575 TFLOP/s = 0.581 of 989.4; at 64x64: 452 (0.457)
#   wgmma m64n16 (4 warps): 347 TFLOP/s = 0.350
H200_MEASURED = Measured(
    start_cycles={"1": 79.8 * 1.83, "4": 79.8 * 1.83, "8": 79.8 * 1.83, "32": 118.0 * 1.83},
    mma_fraction={"mma": 575.3 / 989.4, "wgmma.n16": 346.7 / 989.4},
    source="benchmarks/rank_calibrate.py on the H200, 2026-12-01 (docs/rank/calibrate-h200.json)")

# The second run (Triton 3.6.0, 2026-12-01 15:32 UTC; docs/rank/calibrate-h200-v2.json), for model 3; cycles at
# the table's 1.83 GHz (the card ran at up to 1.98 GHz: the figures are what the model's clock makes of
# them). Model 3 = model 2's program-start cost and mma.sync rate, plus:
#   wgmma, 8 warps, 128-row tiles: n64 834, n128 843, n256 841 TFLOP/s (0.842, 0.852, 0.850 of 989.4);
#     m64n16 at 4 warps 0.350 as before; the 4-warp 64-row n32-n256 loops did not compile within 60 s (N
#     between measured ones is interpolated in log2 N);
#   a pipelined stream of fp16 tiles from L2 (benchmarks/rank_calibrate.py `stream`, one program an SM,
#     copies one iteration ahead): 998, 1171, 1567 and 2347 cycles an iteration for 8, 16, 32 and 64 KB
#     tiles, a straight line of 793 cycles + 1 per 42.3 B (least squares over the five runs);
#   the most an SM pulled from L2 (4 programs, 5 stages, 8 KB tiles): 79.1 B/clk; one program: 56.4 B/clk;
#   the same stream at 1 stage (synchronous loads): 973, 1350, 1973 and 3979 cycles for 8-64 KB: 421 + 1
#     per 19.1 B (least squares over the five runs);
#   synchronous re-reads of a 8 MB buffer by 8 programs an SM (`l2`): at most 8.2 TB/s, 34.0 B/clk an SM.
H200_MEASURED_3 = Measured(
    start_cycles=H200_MEASURED.start_cycles,
    mma_fraction={"mma": 575.3 / 989.4, "wgmma.n16": 346.7 / 989.4, "wgmma.n64": 833.5 / 989.4,
                  "wgmma.n128": 842.6 / 989.4, "wgmma.n256": 840.6 / 989.4},
    l2_bytes_clk=79.1, copy_latency=793.4, copy_bytes_clk=42.26, program_bytes_clk=56.4, interpolate_n=True,
    load_latency=420.5, load_bytes_clk=19.11, sync_l2_bytes_clk=34.0,
    source="benchmarks/rank_calibrate.py on the H200, 2026-12-01, both runs (docs/rank/calibrate-h200*.json)")

# The third run (Triton 3.6.0, 2026-12-01 15:49 UTC; docs/rank/calibrate-h200-v3.json), for model 4, after
# model 3's held-out run; cycles at 1.83 GHz:
#   `dram`: the stream with every program reading its own tiles once (1 GB): at 2 stages (copies one
#     iteration ahead), one program an SM, 1145, 1419 and 2123 cycles an iteration for 8, 16 and 32 KB:
#     793 + 1 per 24.9 B; at 1 stage 1151, 1906, 2340: 934 + 1 per 22.1 B (least squares); at most
#     4,327 GB/s (17.9 B/clk an SM) however deep or wide: 90% of the datasheet's 4,800;
#   `spill`: a persistent row normalisation of 16384 fp32 at 1 warp spills 9,140 B a thread (ptxas), at
#     2 warps 400: the 1-warp program takes 37.6 us a row longer, 3.88 B/clk of spill traffic for one
#     warp on an SM; four such programs on an SM, 8.65 B/clk.
H200_MEASURED_4 = dataclasses.replace(
    H200_MEASURED_3, dram_copy_latency=792.9, dram_copy_bytes_clk=24.85, dram_load_latency=934.1,
    dram_load_bytes_clk=22.10, dram_gbs=4327.0, spill_warp_bytes_clk=3.88, spill_sm_bytes_clk=8.65,
    source="benchmarks/rank_calibrate.py on the H200, 2026-12-01, three runs (docs/rank/calibrate-h200*.json)")

# The fourth run (Triton 3.6.0, 2026-12-01 18:50 UTC; docs/rank/calibrate-h200-v5.json), for model 5, after
# model 4's held-out run; `python3 benchmarks/rank_calibrate.py docs/rank/calibrate-h200-v5.json --fit-loop`
# derives these (cycles at 1.83 GHz):
#   `loop`, one program an SM, BK 64, K 256-4096: 4.97, 6.34 and 7.63 us plus 731, 790 and 1,183 cycles
#     an iteration for 64x128, 128x128 (4 warps) and 128x256 (8 warps) tiles; less the fill (model 3's
#     loaded latency of the first tile), what is left is 3.67 us + the output tile at 12.0 B/clk: the
#     launch as do_bench times it (model 1 guessed 2 us) and the epilogue;
#   `loop` at K 4096, BK 16-128, 7 tile shapes: the 22 loops slower than their matrix work wait
#     1,194 cycles + 1 per 76.7 B of an iteration's copies (copies two iterations ahead, 3 stages);
#     model 3's one-operand stream took 793 + 1 per 42.3 at one ahead, 1,050-1,691 at two.
H200_MEASURED_5 = dataclasses.replace(
    H200_MEASURED_4, loop_copy_latency=1193.8, loop_copy_bytes_clk=76.72, epilogue_bytes_clk=11.97,
    launch_us=3.67, source="benchmarks/rank_calibrate.py on the H200, 2026-12-01, four runs "
                           "(docs/rank/calibrate-h200*.json)")

# The fifth run (Triton 3.6.0, 2026-12-01 19:07 UTC; docs/rank/calibrate-h200-v7.json), for model 6, after
# model 5's held-out run; `rank_calibrate.py docs/rank/calibrate-h200-v7.json --fit-feed`:
#   `feed`: `loop`'s matrix loop with each program copying its own A panel (row stride K, as a matmul's
#     A tiles) of 16 and the shared B, L2-resident, 1-4 programs an SM: at most 52.9 B/clk an SM (64x64x64
#     tiles, 4 programs an SM), 34.6-49.4 at the other shapes. Model 3's 79.1 came from `stream`, where
#     every program walks one contiguous buffer: a tiled loop's copies are not fed at that rate.
H200_MEASURED_6 = dataclasses.replace(
    H200_MEASURED_5, l2_bytes_clk=52.9,
    source="benchmarks/rank_calibrate.py on the H200, 2026-12-01, five runs (docs/rank/calibrate-h200*.json)")

# The sixth run (Triton 3.6.0, 2026-12-01 19:20 UTC; docs/rank/calibrate-h200-v8.json), for model 7, after
# model 6's held-out run; `rank_calibrate.py docs/rank/calibrate-h200-v8.json --fit-wspill`:
#   `wspill`: `loop` at 128x256x64, 256x128x64 and 128x256x32 tiles with 4 warps, which spill 2,048,
#     1,024 and 2,048 B a thread an iteration inside the loop (the SASS), beside the same tiles at 8
#     warps (no spills): 385 vs 49, 233 vs 52, 696 vs 58 us; the spill traffic moved at 6.82, 6.32 and
#     7.19 B/clk a warp, 6.77 on average: 1.7x model 4's 3.88, measured on dependent spills in a loop
#     that does not multiply (which keep that rate).
H200_MEASURED_7 = dataclasses.replace(
    H200_MEASURED_6, loop_dot_spill_warp_bytes_clk=6.77,
    source="benchmarks/rank_calibrate.py on the H200, 2026-12-01, six runs (docs/rank/calibrate-h200*.json)")

# The seventh run (Triton 3.6.0, 2026-12-01 21:44 UTC; docs/rank/calibrate-h200-v9.json), for model 8, after
# model 7's held-out run:
#   `tiles`: `feed`'s loop with both operands each program's own tiles (A panel p % 8, B panel (p // 8) % 32,
#     a grouped matmul's wave), 19 shapes at K 2048: at most 52.4 B/clk an SM (`--fit-tiles`), as `feed`'s
#     52.9: the feed stays. But model 7 predicted its two-program 128x128 loops 7-11% fast, where the
#     tensor core, the L2 feed and a program's chain are near equal (the one-program 128x256x64 loop
#     within 1%; other one-program loops 6-11% fast, their chain well above the rest).
#   Model 8 takes, for a loop that multiplies, the p-norm of the wave's demands (the chain among them when
#     two or more programs share the SM, else a floor): `rank_calibrate.py docs/rank/calibration-facts.json
#     --fit-soft` picks p on a grid of 3-16 by the least RMS log error over the 89 matrix-loop rows of the
#     `loop`, `feed` and `tiles` runs (compiled here under 3.6.0 by `--facts-of`): p = 8.5, 0.0734 against
#     0.0761 with the maximum.
H200_MEASURED_8 = dataclasses.replace(
    H200_MEASURED_7, soft_p=8.5,
    source="benchmarks/rank_calibrate.py on the H200, 2026-12-01, seven runs (docs/rank/calibrate-h200*.json)")

# Model 9 takes no new figure: `Chip.calibration(9)` is model 8's. Its rules for kernels without matrix
# products (model.py) were checked on the row loops of the `spill` run (v3) and of an eighth run (Triton
# 3.6.0, 2026-12-02 01:03 UTC; docs/rank/calibrate-h200-v10.json, `prows`: the loop pipelined 1-3 deep by
# tl.range, 2-16 warps, 1-4 programs an SM): `rank_calibrate.py docs/rank/calibration-facts-rows.json
# --check-chain` gives an RMS log error of 0.139 for model 9, 0.327 for model 8, over those 104 rows.

# The `rows` run (Triton 3.6.0, 2026-12-01 19:02 UTC; docs/rank/calibrate-h200-v6.json: one program a row of
# 2,048 or 8,192 fp32, 16,384 rows, 0-4 chained reductions across 1-32 warps, from DRAM), for model 10,
# after model 9's held-out run:
# `rank_calibrate.py docs/rank/calibration-facts-onerow.json --fit-rows` picks, on a grid (latency 800-2,550
# by 50, a reduction 0-1,575 by 25), the least RMS log error of model 10's time over those 36 rows: a
# program without a loop waits 1,800 cycles + 1 per 22.1 B for its loads from a loaded DRAM (model 4's
# stream waited 934 + 1 per 22.1 on an idle one), and 650 cycles for each reduction across its warps
# (0.050, against model 9's 0.200).
H200_MEASURED_10 = dataclasses.replace(
    H200_MEASURED_8, row_latency=1800.0, warp_reduce_cycles=650.0,
    source="benchmarks/rank_calibrate.py on the H200, 2026-12-01/02, eight runs (docs/rank/calibrate-h200*.json)")

# Model 11 (after model 10's held-out run) prices a warp's own work at no less than the SASS instructions it
# issues (one a clock); under that, `rank_calibrate.py docs/rank/calibration-facts-onerow.json --fit-rows
# --model 11` picks the same grid's 1,800 cycles and 625 cycles a reduction (RMS log error 0.049 over the
# 36 rows; model 10's, with 650, 0.050). No new figure.
H200_MEASURED_11 = dataclasses.replace(
    H200_MEASURED_10, warp_reduce_cycles=625.0,
    source="benchmarks/rank_calibrate.py on the H200, 2026-12-01/02, eight runs (docs/rank/calibrate-h200*.json)")

# Model 12 (after model 11's held-out runs and FlagGems'): long matrix launches run slower than one wave
# of the same programs predicts, because the card lowers its clock under their power. The `waves` run
# (Triton 3.6.0, 2026-12-02 14:11 UTC; docs/rank/calibrate-h200-v14.json: `tiles`' loop launched 1, 4
# and 16 full waves deep, 8 shapes, K 1,024 and 2,048, unmasked and masked) had model 11 at a mean log
# error of -0.015 at one wave, -0.094 at four and -0.171 at sixteen (unmasked); the `clocks` runs (v15,
# v17: nvidia-smi sampling while do_bench timed them) saw the SM clock at 1,980 MHz under one-wave
# launches and 1,455-1,725 MHz under sixteen-wave ones at 600-670 W of a 700 W limit, the two-program
# 128x128 tiles (which copy a third more bytes a flop) 4-5% below the 128x256 ones. Model 11's error on
# those rows in cycles at the sampled clock: -0.063 mean. `rank_calibrate.py
# docs/rank/calibration-facts-waves.json --fit-power docs/rank/calibration-facts.json` picks, on a grid,
# the least RMS log error over the 64 `waves` rows and the 89 earlier matrix loops together:
#   boost 1.98 GHz (v15's one-wave launches); the clock starts to fall at 5,700 GFLOP/s an SM of
#   activity, counting 25 flops for each byte copied, as (5,700 / activity) ** (1 / 1.5); a launch reaches
#   that clock over 100 us: RMS log error 0.0667 over the 153 rows (model 11: 0.0928).
# Model 12 changes only launches that multiply.
H200_MEASURED_12 = dataclasses.replace(
    H200_MEASURED_11, boost_ghz=1.98, power_activity=5700.0, power_bytes_flops=25.0, power_exponent=1.5,
    power_ramp_us=100.0, source="benchmarks/rank_calibrate.py on the H200, 2026-12-01/02, eleven runs "
                                "(docs/rank/calibrate-h200*.json)")

# Model 13 (after model 12's held-out run and a review): model 12 counted the pipeliner's prologue copies
# twice in a launch's bytes (in the straight-line loads and in the loop's iterations, where the rest of
# the model counts them once). Counted once, `rank_calibrate.py docs/rank/calibration-facts-waves.json
# --fit-power docs/rank/calibration-facts.json --power-model 13` picks 25 flops a byte, exponent 1.5, the
# clock falling from 5,500 GFLOP/s an SM, a 150 us ramp: RMS log error 0.0671 over the same 153 rows.
H200_MEASURED_13 = dataclasses.replace(H200_MEASURED_12, power_activity=5500.0, power_ramp_us=150.0)

# Model 14 (after a look at the persistent softmax's 2-warp configs with Proton's PC sampling, which found
# their warps waiting on their own instructions' results, not on memory: docs/rank.md, "Model 14"): a
# warp of a kernel without matrix products takes at least the clocks its SASS stalls it (the control
# bits ptxas writes in every instruction, read from the cubin) plus `wait_cycles` at each wait on a
# scoreboard. `rank_calibrate.py docs/rank/calibration-facts-rows.json --fit-waits
# docs/rank/calibration-facts-frows.json docs/rank/calibration-facts-onerow.json` picks 2 cycles, at the
# least RMS log error over those 210 row kernels of our own: 0.1336 (model 11: 0.1394). The error is flat
# from 0 to 12 cycles (0.1336-0.1345): the gain is the floor at the stall clocks, not this figure.
H200_MEASURED_14 = dataclasses.replace(H200_MEASURED_13, wait_cycles=2.0)

# Model 15 (after model 14: the matmul's 256x128 tiles at 8 warps ran behind the 128x256 ones of the same
# flops, bytes and wgmma rate in 294 of 296 pairs, 3-18% at BLOCK_K 64 and 3 stages; the calibration's own
# two-repetition loops ran slower than model 14 said by 0.046 of log error more than one-repetition ones):
# a warpgroup whose wgmma repeats down M reaches `mma_reps_fraction` of the measured rate. A proxy: the
# evaluation's 4-warp 128-row tiles repeat too and are not slowed (docs/rank.md, "Model 15").
# `rank_calibrate.py docs/rank/calibration-facts-waves.json --fit-reps docs/rank/calibration-facts.json`
# picks it at the least RMS log error over the 153 matrix loops (model 13's power figures kept).
H200_MEASURED_15 = dataclasses.replace(H200_MEASURED_14, mma_reps_fraction=0.935)

# Model 16 (after model 15: the calibration's own matrix loop at K 256 and 512, 4-16 waves deep, ran 8-33%
# longer than model 15 says, the more the shorter the loop and the more at two programs an SM: a fixed
# ~2.5 us a wave at one program an SM and at two alike, where model 15 overlaps the second program's fill
# and epilogue with the first's work): the programs of a wave start and end together, so every wave pays
# the fill, the epilogues and `wave_store_fraction` of its output's stores beside its iterations'
# demands. `rank_calibrate.py docs/rank/calibration-facts-waves.json --fit-lockstep
# docs/rank/calibration-facts.json docs/rank/calibration-facts-swaves.json` picks it at the least RMS log
# error over the 185 matrix loops (model 13's power figures and model 15's fraction kept).
H200_MEASURED_16 = dataclasses.replace(H200_MEASURED_15, wave_store_fraction=0.35)
# Model 21: least squares over benchmarks/rank_aos.py's rows of one record a thread (16-64-word records, 1-8
# fields: 16 rows), and the slope of its 59-word records' 32 rows against the records an SM holds. The
# scripted fit of those rows, `rank_aos.py --fit docs/rank/aos-h200.json --dram-gbs 4327`, gives 10.18 ps,
# 9.30 ps and 24,734 records (worst row 19%); these figures came from an earlier fit of the same rows, not
# kept as a script, and stay: the held-out kernels' rankings were frozen with them (docs/rank.md).
H200_MEASURED_21 = dataclasses.replace(H200_MEASURED_16, record_run_ps=10.1, record_sector_ps=9.4,
                                       record_flight=25000.0,
                                       source="benchmarks/rank_calibrate.py and rank_aos.py on the H200, "
                                              "2026-12-01/06 (docs/rank/calibrate-h200*.json, aos-h200.json)")

# The H100 SXM5: the H200's SMs, clocks and L2 (the same GH100 die, the same 700 W limit) with HBM3 in place
# of HBM3e. Its calibration takes the H200's figures for what runs on the SM and L2 and measures again on
# an H100 what the DRAM sets (NVIDIA H100 80GB HBM3, Triton 3.6.0, torch 2.11.0+cu130, driver 580.159.04,
# 2026-12-06; docs/rank.md, "The H100's calibration"):
#   `dram` (rank_calibrate.py --only dram,rows; docs/rank/calibrate-h100-dram.json), model 4's lines by the
#     H200's method: at 2 stages 620 cycles + 1 per 15.7 B, at 1 stage 813 + 1 per 15.8 B; at most 3,031
#     GB/s (90% of the datasheet's 3,350; the H200 reached 4,327);
#   `rows` (the same file), model 10's and 11's latency of a one-row program and cost of a reduction,
#     `rank_calibrate.py FACTS.json --fit-rows --model M --gpu h100` on its 36 rows' facts;
#   `rank_aos.py --fit docs/rank/aos-h100.json --dram-gbs 3031.4`: model 21's run, sector and flight.
# Not measured on an H100, taken from the H200: program starts, matrix rates, the L2 feed and copies,
# spills, the power model (its clocks under load) and models 14-16's fractions.
H100_DRAM = {"dram_copy_latency": 620.4, "dram_copy_bytes_clk": 15.67, "dram_load_latency": 813.2,
             "dram_load_bytes_clk": 15.84, "dram_gbs": 3031.4}
H100_ROWS_10 = {"row_latency": 2200.0, "warp_reduce_cycles": 525.0}
H100_ROWS_11 = {"row_latency": 2200.0, "warp_reduce_cycles": 500.0}
H100_RECORDS = {"record_run_ps": 15.07, "record_sector_ps": 9.78, "record_flight": 15058.0}


def _on_h100(measured: "Measured", *own: dict) -> "Measured":
    """The H200's figures for one model with the H100's own DRAM figures (and `own`) in their place."""
    mine = dict(H100_DRAM)
    for each in own:
        mine.update(each)
    return dataclasses.replace(measured, **mine, source="the H200's figures (benchmarks/rank_calibrate.py) with the "
                               "H100's DRAM measured again (docs/rank/calibrate-h100-dram.json, aos-h100.json)")


H200_CALIBRATION = {
    "measured": H200_MEASURED, "measured_3": H200_MEASURED_3, "measured_4": H200_MEASURED_4,
    "measured_5": H200_MEASURED_5, "measured_6": H200_MEASURED_6, "measured_7": H200_MEASURED_7,
    "measured_8": H200_MEASURED_8, "measured_10": H200_MEASURED_10, "measured_11": H200_MEASURED_11,
    "measured_12": H200_MEASURED_12, "measured_13": H200_MEASURED_13, "measured_14": H200_MEASURED_14,
    "measured_15": H200_MEASURED_15, "measured_16": H200_MEASURED_16, "measured_21": H200_MEASURED_21}


def _h100_of(key: str, measured: "Measured") -> "Measured":
    """The H100's figures for one of the H200's: its DRAM's from model 4 (the first to measure the DRAM),
    its one-row programs' from model 10, its records' at model 21."""
    model = int(key.split("_")[1]) if "_" in key else 2
    if model < 4:
        return measured
    return _on_h100(measured, *([H100_ROWS_10] if model == 10 else [H100_ROWS_11] if model >= 11 else []),
                    *([H100_RECORDS] if model >= 21 else []))


H100_CALIBRATION = {key: _h100_of(key, m) for key, m in H200_CALIBRATION.items()}

# A100: 312 TFLOP/s fp16 dense at 1.41 GHz on 108 SMs = 2048 flops/clk/SM; L2 5120 B/clk (A100 whitepaper).
# H100/H200 SXM: 989.4 TFLOP/s fp16 dense at 1.83 GHz on 132 SMs = 4096 flops/clk/SM with wgmma; the
# Hopper tuning guide: mma.sync cannot feed the tensor cores at that rate (irscope takes half, the
# A100-era per-SM rate, as the published Ampere figure is what mma.sync was built for).
# B200: 2.25 PFLOP/s fp16 dense, 148 SMs, ~1.86 GHz = 8192 flops/clk/SM with tcgen05.
# RTX 5090: 209.5 TFLOP/s fp16 with fp32 accumulation, 170 SMs, 2.41 GHz = 512 flops/clk/SM.
# MI250X (one GCD, gfx90a): 191.5 TFLOP/s fp16, 110 CUs, 1.7 GHz = 1024; MI300X (gfx942): 1307 TFLOP/s,
# 304 CUs, 2.1 GHz = 2048; MI355X (gfx950): 2.5 PFLOP/s, 256 CUs, 2.4 GHz = 4096 flops/clk/CU.
CHIPS: dict[str, Chip] = {c.name: c for c in (
    Chip("a100", "sm_80", "A100 SXM 80GB", 108, 1.41, 2039, _rates(2048, fp8_ratio=0), fp32_flops=128,
         l2_bytes_clk=5120 / 108, fallback={"mma": 1.0}, memory_gb=80, source="NVIDIA A100 whitepaper, datasheet"),
    Chip("h100", "sm_90a", "H100 SXM5 80GB", 132, 1.83, 3350, _rates(4096), l2_bytes_clk=5120 / 108,
         fallback={"mma": 0.5}, memory_gb=80, source="NVIDIA H100 datasheet and whitepaper", **H100_CALIBRATION),
    Chip("h200", "sm_90a", "H200 SXM 141GB", 132, 1.83, 4800, _rates(4096), l2_bytes_clk=5120 / 108,
         fallback={"mma": 0.5}, memory_gb=141, source="NVIDIA H200 datasheet (H100's SMs, HBM3e)",
         **H200_CALIBRATION),
    Chip("b200", "sm_100a", "B200", 148, 1.86, 8000, _rates(8192), l2_bytes_clk=5120 / 108,
         fallback={"mma": 0.25, "wgmma": 0.5}, memory_gb=180, source="NVIDIA Blackwell datasheet"),
    Chip("rtx5090", "sm_120a", "GeForce RTX 5090", 170, 2.41, 1792, _rates(512), fp32_flops=256,
         l2_bytes_clk=5120 / 108, memory_gb=32, source="NVIDIA RTX Blackwell whitepaper"),
    Chip("mi250x", "gfx90a", "Instinct MI250X (one GCD)", 110, 1.7, 1638, _rates(1024, fp8_ratio=0, int8_ratio=1),
         fp32_flops=256, smem_bytes_clk=128, l2_bytes_clk=64, memory_gb=64, source="AMD CDNA2 whitepaper"),
    Chip("mi300x", "gfx942", "Instinct MI300X", 304, 2.1, 5300, _rates(2048), fp32_flops=256,
         l2_bytes_clk=64, memory_gb=192, source="AMD CDNA3 whitepaper"),
    Chip("mi355x", "gfx950", "Instinct MI355X", 256, 2.4, 8000, _rates(4096), fp32_flops=256,
         l2_bytes_clk=64, memory_gb=288, source="AMD CDNA4 whitepaper"),
)}

DEFAULT_CHIP = {"sm_80": "a100", "sm_90a": "h100", "sm_100a": "b200", "sm_120a": "rtx5090",
                "gfx90a": "mi250x", "gfx942": "mi300x", "gfx950": "mi355x"}


def chip_for(target: str, name: str | None = None) -> Chip:
    """The chip `name`, or the target's usual one; it must run the target's binaries."""
    if name is None:
        if target not in DEFAULT_CHIP:
            # (--gpu cannot help: every chip it names runs another target's binaries)
            known = {}
            for c in CHIPS.values():
                known.setdefault(c.target, []).append(c.name)
            raise UsageError(f"irscope has no chip table for target {target}, so it cannot rank for it",
                             "rank for a target it models: " + ", ".join(f"--target {t} (--gpu {' or '.join(n)})"
                                                                      for t, n in known.items()))
        return CHIPS[DEFAULT_CHIP[target]]
    chip = CHIPS.get(name.lower())
    if chip is None:
        raise UsageError(f"unknown GPU '{name}'", f"choose one of: {', '.join(CHIPS)}")
    if chip.target != target:
        fits = [c.name for c in CHIPS.values() if c.target == target]
        raise UsageError(f"{chip.product} runs {chip.target} binaries, not {target}",
                         f"rank for --target {chip.target}, or pick a GPU of {target}"
                         + (f": --gpu {' or --gpu '.join(fits)}" if fits else " (irscope knows none)"))
    return chip
