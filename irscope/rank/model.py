"""The cost model: a config's time at a problem size, from its compile facts and the chip's peaks.

Every program of the launch is a sequence of the work its TTGIR says (facts.py), repeated over the main
loop's iterations; `B` programs share an SM at once (the occupancy the compile allows) and the launch
runs in waves of `SMs x B` programs. One wave takes as long as its slowest demand on the SM:

    core          matrix products (dot flops / the instruction's rate) + issue (element-wise results /
                  128 lanes + exp2-like results / the SFU rate) + spills (spilled bytes x threads / the
                  L1 rate), summed (x B programs): without warp specialisation a program's softmax or
                  epilogue does not overlap its matrix products, and resident programs take turns (the
                  reason FlashAttention-2 reaches ~35% of an H100, per the FlashAttention-3 paper). A
                  warp-specialised kernel overlaps them: max(matrix, issue) + spills.
    shared memory layout conversions and matrix operands read from it / 128 B per clock
    L2            global bytes loaded and stored / the L2-to-SM feed
    memory        the program's share of the least DRAM traffic / the SM's share of DRAM bandwidth
    latency       one program's own chain: every iteration waits for its loads unless the pipeliner
                  issued them `num_stages - 1` iterations ahead (models 3-8: as far ahead as the TTGIR's
                  async_wait says, and a copy takes a latency that grows with its bytes, calibrated;
                  models 5-8: plus the pipeline's fill, the first tile's latency in full)

Model 8 softens "slowest" for a loop that multiplies: its wave takes the p-norm of the demands (p
calibrated, 8.5 on the H200), the chain among them when two or more programs share the SM, else a floor.
Model 9 changes kernels without matrix products only, where one program's chain shows once too few
programs share an SM to hide it (a persistent grid's second wave of one): its own element-wise work
issues on the schedulers its warps occupy, a loop that stores every iteration waits for its stores
(model 5's epilogue rate), and a pipelined copy lands at its bytes over one program's rate after a fixed
latency that only the iterations between its issue and its use hide (model 4's DRAM stream figures).
Model 10 adds, for such kernels without a loop (one row, one block of a vector): a program's chain is
its start, its loads at the latency a loaded DRAM gives them, its work and each reduction across its
warps (both figures fitted on the `rows` run's one-row programs), and its programs stream through the
SM's slots rather than run in waves: the busiest SM's programs at the slots' rate, then the last
program's chain beyond its share. Model 11 keeps model 10 and has such a program's own work take at least
the SASS instructions each of its warps issues (one a clock), where the TTGIR's element count leaves out
the masks, the address arithmetic and the range checks around its special functions. Model 12 keeps
model 11 and runs a launch that multiplies at the clock the card keeps under its power: its flops a
second an SM plus a weight for each byte its programs copy, above a threshold, lower the clock (as a
power of the load), reached over a ramp of the launch's length (fitted on the `waves` run: the same
programs launched 1-16 waves deep, and the earlier matrix loops). Model 13 is model 12 with a launch's
copies counted once (model 12 counted the pipeliner's prologue twice), refitted. Model 14 is model 13
with a kernel without matrix products' own work floored at the clocks its SASS stalls each warp (the
control bits ptxas writes in every instruction, read from the cubin: controls.py) plus a few at each wait
on a scoreboard, where model 11 took one clock an instruction: a warp that no other warps hide waits on
its own results (Proton's PC sampling saw the persistent softmax's 2-warp programs do so). Model 15 is
model 14 with a warpgroup that repeats its wgmma down M at a fraction of the measured rate. Model 16 is
model 15 with a loop that multiplies run in lockstep waves: a wave's programs start and end together,
so each wave pays their fill and epilogues (and part of their output's stores) beside the p-norm of its
iterations' demands, except where the programs' loops differ in length (ragged_loop). Model 17 is model
16 with a loop that only moves data and whose bounds are constants run as they say, and the L1 one more
demand: a wavefront a clock for each 4 sectors a warp's global access touches. Model 18 is model 17 with
each access at its own width (the PTX's at its source location), a loop ptxas unrolled waiting once for
the loads of the iterations it unrolled (all of them where the SASS has no loop left), and the SASS a
kernel without matrix products issues as a throughput demand: its warps' instructions on the SM's four
schedulers, one a clock each. Model 19 is model 18 with each access's lanes as far apart in memory as its
pointer's step along the fastest dim says (read from the TTGIR's offsets: rank/strides.py), and a warp
instruction taking as many passes of the L1 as the most distinct 4-byte words its lanes want from one of
its 32 banks (contiguous lanes: one a 128 bytes, aligned or not; lanes 64 bytes apart: twice the sectors).
Model 20 is model 19 with a warp instruction taking at least the lookups of the L1 lines its lanes touch,
three a clock (benchmarks/rank_l1.py measured both on a kernel of our own).

The time is the sum over waves (the last one holds what is left: wave quantisation) plus a launch's
fixed cost (models 5-8: and the drain of the last wave's output stores). The demand that dominates
the fullest wave is the estimate's bound (`core` is named by its largest part: tensor core, issue or
spills). No constant here is fitted to the evaluation's timings: docs/rank.md gives the derivation
and names the structural choices made after looking at in-sample timings, and every constant is in
chips.py with its source. Models 2-8 add figures measured on the H200 by
benchmarks/rank_calibrate.py, on kernels of their own (chips.py says which run gave which; the H100
takes them with its DRAM's measured again).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from .chips import Chip
from .facts import Facts, Work
from .reason import reason_for

INF = float("inf")


@dataclass(frozen=True)
class Estimate:
    """A config's predicted time at one size, and why."""

    label: str
    ms: float  # inf: it cannot launch
    bound: str  # tensor core, issue, shared memory, L2, memory, spills, latency, launchability
    reason: str  # the bound in words, with the numbers behind it
    waves: int = 0
    wave_fill: float = 0.0  # programs / (waves x SMs x blocks per SM)
    terms_us: dict | None = None  # each demand of the fullest wave, microseconds
    # Model 22: how hard the fullest wave's demands crowd its bound (their p-norm over the largest, less
    # one), which orders configs predicted to the same time; 0 before model 22 (ties then go by label)
    crowding: float = 0.0

    @property
    def launchable(self) -> bool:
        return math.isfinite(self.ms)

    @property
    def key(self) -> tuple[float, float]:
        """What a ranking sorts by: the time, then (model 22) the crowding of configs predicted alike."""
        return (self.ms, self.crowding)

    def as_dict(self) -> dict:
        return {"label": self.label, "ms": self.ms if self.launchable else None, "bound": self.bound,
                "reason": self.reason, "waves": self.waves, "wave_fill": round(self.wave_fill, 4),
                "terms_us": self.terms_us, "crowding": self.crowding}


def _work(d: dict) -> Work:
    return Work(**{k: (dict(v) if isinstance(v, dict) else v) for k, v in d.items()}) if d else Work()


def iterations(facts: Facts, flops: float, min_bytes: float, programs: int) -> float:
    """The main loop's trip count per program: the work the launch must do, per program, over the work
    one iteration does (matrix flops when the loop multiplies, else bytes moved)."""
    if not facts.loop:
        return 0.0
    loop, straight = _work(facts.loop), _work(facts.straight)
    if loop.dot_flops:
        return max(0.0, (flops / programs - straight.dot_flops) / loop.dot_flops)
    moved = loop.load_bytes + loop.store_bytes
    if moved:
        return max(0.0, (min_bytes / programs - straight.load_bytes - straight.store_bytes) / moved)
    return 1.0


MODELS = (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22)
SCHEDULERS = 4  # model 18: an SM's warp schedulers, each issuing an instruction a clock (NVIDIA's SM since Volta)
L1_WAVEFRONTS_CLK = 1.0  # model 17: wavefronts (up to 4 sectors, 128 bytes) the L1 serves an SM a clock
DEFAULT_MODEL = 21  # docs/rank.md ("Model 21 the default"): the latest model whose held-out runs bore it out


def effective_model(chip: Chip, model: int) -> int:
    """The model `estimate` runs for `model` on `chip`: on a chip calibrated fewer times, the latest model
    its figures allow (a chip never calibrated runs model 2's rules on model 1's figures)."""
    while model > 2 and chip.calibration(model) is None:
        model -= 1
    return model


def estimate(facts: Facts, problem, chip: Chip, model: int = DEFAULT_MODEL) -> Estimate:
    """Predict `facts`' time for `problem` (a spec.problem.Problem) on `chip`. Model 1 uses published peaks
    only; model 2 adds what rank_calibrate.py measured on the chip (`chip.measured`): the cost of starting
    a program, the matrix instructions' rate per tile shape, the L2 feed, and spills that outgrow L1.
    Model 3 takes the second calibration run's figures (`chip.measured_3`) and charges a pipelined
    loop's copies what they take on a busy SM: a latency that grows with the tile's bytes, waited for
    over the prefetch distance the TTGIR's `async_wait` shows; and one program's stream is capped.
    Model 4 (`chip.measured_4`) adds the DRAM bandwidth the card reaches, loops that stream from DRAM,
    and spill traffic at what a warp and an SM move of it. Model 5 (`chip.measured_5`) counts the
    pipeliner's prologue copies once, charges a matrix loop's copies what the calibration's two-operand
    loops waited, every program its pipeline's fill and the launch its last wave's drain. Model 6
    (`chip.measured_6`) is model 5 with the L2 feed a tiled matrix loop's copies reached. Model 7
    (`chip.measured_7`) prices spills inside a loop that multiplies at what a matrix loop's spills moved.
    Model 8 (`chip.measured_8`) combines such a loop's demands on the SM as a p-norm, p calibrated.
    Model 9 (model 8's figures) changes kernels without matrix products: a program's own work issues on
    its own warps' schedulers, a loop that stores every iteration waits for those stores, and its
    pipelined copies' bytes arrive in turn with them (checked on the `spill` and `prows` row loops).
    Model 10 (`chip.measured_10`) prices such a kernel's programs without a loop as a stream of chains:
    start, loads at a loaded DRAM's latency, work, reductions across warps (fitted on the `rows` run).
    Model 11 (`chip.measured_11`: model 10's two figures refitted under it) floors such a kernel's own
    work at the SASS instructions a warp issues, one a clock (the main loop's an iteration, the rest once).
    Model 12 (`chip.measured_12`) is model 11 at the clock a launch that multiplies keeps under its power;
    model 13 (`chip.measured_13`) the same with the launch's copies counted once, refitted. Model 14
    (`chip.measured_14`) is model 13 with such a kernel's own work floored at the clocks its SASS stalls
    a warp, and `wait_cycles` more at each wait on a scoreboard (fitted on the calibration's row kernels).
    Model 15 (`chip.measured_15`) is model 14 with a warpgroup that repeats its wgmma down M (a 256-row
    tile at 8 warps) at `mma_reps_fraction` of the rate (fitted on the calibration's matrix loops).
    Model 16 (`chip.measured_16`) is model 15 with a loop that multiplies run in waves whose programs fill
    and drain together: each wave pays its programs' fill, epilogues and `wave_store_fraction` of their
    output's stores beside its iterations' demands (fitted on the calibration's matrix loops, its short
    ones among them), except where the programs' loops differ in length (`ragged_loop`). Model 17 (no new
    figure) adds a data-moving loop run as its constant bounds say and the L1's wavefronts; model 18 (no new
    figure) each access at its own width, unrolled loops and the SASS issued as a demand."""
    model = effective_model(chip, model)
    if model >= 17:
        # Model 17: model 16, a loop that only moves data run as its constant bounds say, and the L1's
        # lines a clock as one more demand of the SM. Model 18: each access at its own width, a loop ptxas
        # unrolled waiting once for the loads of the iterations it unrolled, and the SASS a kernel without
        # matrix products issues as a throughput demand of its SM (four schedulers, an instruction a clock
        # each). Model 19: each access's lanes as far apart as its pointer's step says, and the passes of
        # the L1's 32 banks their words need (facts.l1_wavefronts_strided). Model 20: each row of lanes
        # taking at least its L1 lines' lookups, a few a clock (fitted on our own kernel: rank_l1.py).
        # Model 21: a stream of records at the DRAM's runs and sectors it touches (rank_aos.py).
        # Model 22: model 21, configs predicted to the same time ordered by how hard their demands crowd
        # the bound (model 8's p-norm of the fullest wave's demands, its calibrated p): a memory-bound
        # space's configs all reach the DRAM's time, and the one whose other demands come nearest to it
        # is the likeliest to fall short of it (docs/rank.md, "Ties, and model 22").
        base = _estimate(facts, problem, chip, 11, wait_cycles=chip.calibration(14).wait_cycles,
                         reps_fraction=chip.calibration(15).mma_reps_fraction,
                         wave_stores=chip.calibration(16).wave_store_fraction, l1=True, own=model >= 18,
                         strided=model >= 19, lookups=model >= 20,
                         records=chip.calibration(21) if model >= 21 else None,
                         crowding_p=chip.calibration(22).soft_p if model >= 22 else None)
        return power_capped(base, facts, problem, chip, chip.calibration(13), once=True)
    if model >= 16:
        # Model 16: model 15, a loop that multiplies run in waves whose programs fill and drain together
        base = _estimate(facts, problem, chip, 11, wait_cycles=chip.calibration(14).wait_cycles,
                         reps_fraction=chip.calibration(15).mma_reps_fraction,
                         wave_stores=chip.calibration(16).wave_store_fraction)
        return power_capped(base, facts, problem, chip, chip.calibration(13), once=True)
    if model >= 15:
        # Model 15: model 14, a warpgroup's wgmma repeated down M at the fraction of the rate it reached
        base = _estimate(facts, problem, chip, 11, wait_cycles=chip.calibration(14).wait_cycles,
                         reps_fraction=chip.calibration(15).mma_reps_fraction)
        return power_capped(base, facts, problem, chip, chip.calibration(13), once=True)
    if model >= 14:
        # Model 14: model 13, its kernels without matrix products' own work floored at the clocks ptxas
        # tells their warps to wait (and each wait on a scoreboard), not at one clock an instruction
        base = _estimate(facts, problem, chip, 11, wait_cycles=chip.calibration(14).wait_cycles)
        return power_capped(base, facts, problem, chip, chip.calibration(13), once=True)
    if model >= 12:
        return power_capped(_estimate(facts, problem, chip, 11), facts, problem, chip, chip.calibration(model),
                            once=model >= 13)
    return _estimate(facts, problem, chip, model)


def _estimate(facts: Facts, problem, chip: Chip, model: int, wait_cycles: float | None = None,
              reps_fraction: float | None = None, wave_stores: float | None = None, l1: bool = False,
              own: bool = False, strided: bool = False, lookups: bool = False,
              records: "Measured | None" = None, crowding_p: float | None = None) -> Estimate:
    """Models 1-11's estimate (`estimate` runs models 12-16 on model 11's); `wait_cycles`: model 14's
    floor of a kernel without matrix products' own work, what each wait on a scoreboard adds to the
    clocks its SASS stalls a warp (none: model 11's, one clock an instruction); `reps_fraction`: model
    15's rate of a wgmma a warpgroup repeats down M, of the rate measured (none: the rate measured);
    `wave_stores`: model 16's waves of a loop that multiplies, whose programs fill and drain together,
    each paying this fraction of its output's stores at the epilogue rate (none: model 8's waves); `l1`:
    model 17's loops run as their constant bounds say and the L1's wavefronts; `own`: model 18's (the
    L1's wavefronts of each access at its own width, unrolled loops, the SASS issued as a demand);
    `strided`: model 19's (the passes of the L1's banks each access's lanes need at its pointer's step);
    `lookups`: model 20's (those passes, or the lanes' L1 lines' lookups where they take longer);
    `records`: model 21's figures for streams of records (facts.records: _record_seconds); `crowding_p`:
    model 22's p of the crowding (Estimate.crowding) that orders configs predicted alike."""
    measured = chip.calibration(model) if model >= 2 else None
    if not facts.launchable or facts.blocks_per_sm < 1:
        why = facts.launch_reasons[0] if facts.launch_reasons else "no program fits on an SM"
        return Estimate(facts.label, INF, "launchability", f"cannot launch: {why}")
    programs = max(1, problem.programs)
    n, loop, straight = _trips(facts, problem, programs, bounded=l1)
    total = Work()
    total.add(straight)
    total.add(loop, n)
    pipelined = loop.async_loads > 0 and loop.sync_loads == 0 and facts.num_stages >= 2
    ahead = (facts.prefetch or facts.num_stages - 1) if model >= 3 else facts.num_stages - 1
    if model >= 5:
        total.load_bytes -= _prologue_bytes(facts, n, loop, straight)

    mma = chip.mma_rate(facts.dot_dtype, facts.instruction)
    if measured is not None and measured.mma(facts.instruction, facts.mma_n):
        mma = chip.mma_rate(facts.dot_dtype, "wgmma" if facts.instruction == "mma" else facts.instruction) * \
            measured.mma(facts.instruction, facts.mma_n)
    # Model 15: the calibration measured wgmma's rate with each warpgroup issuing one 64-row instruction a
    # k-step; one that repeats it down M (two accumulators or more) ran slower, at this fraction
    repeated = reps_fraction if reps_fraction is not None and facts.instruction == "wgmma" and \
        facts.mma_m_reps >= 2 else None
    if repeated:
        mma *= repeated
    l2_rate = measured.l2_bytes_clk if measured is not None and measured.l2_bytes_clk else chip.l2_bytes_clk
    lanes = chip.fp32_flops / 2
    dram_gbs = measured.dram_gbs if model >= 4 and measured.dram_gbs else chip.dram_gbs
    dram_clk = dram_gbs * 1e9 / (chip.sms * chip.clock_ghz * 1e9)
    threads = facts.num_warps * (32 if chip.target.startswith("sm_") else 64)

    # Throughput demands of one program on its SM, in cycles.
    sync_rate = measured.sync_l2_bytes_clk if model >= 3 and measured.sync_l2_bytes_clk else l2_rate
    spills, own_spills = _spills(facts, n, threads, chip, measured, model, sync_rate, loop.dot_flops > 0)
    parts = {
        "tensor core": total.dot_flops / mma,
        "issue": _issue(total, threads, lanes, chip),
        "spills": spills,
    }
    # Model 18: how many of the main loop's iterations one pass of the SASS's loop runs (ptxas unrolled
    # them: its loop issues that many iterations' loads), all of them where the SASS has no loop left
    unrolled = _unrolled(facts, loop, n) if own else 1.0
    issued = 0.0  # model 18: the SASS instructions a warp issues, where they set the issue work
    if own and model >= 11 and not loop.dot_flops and not straight.dot_flops and facts.instruction == "fma" and \
            facts.loop_instructions >= 0 and chip.target.startswith("sm_"):
        # Model 18: every warp of the program issues its SASS on one of the SM's four schedulers, an
        # instruction a clock each, whatever the TTGIR's element count says (the masks, the addresses,
        # the conversions and the loads themselves issue too)
        warp_instructions = (facts.loop_instructions / unrolled * n if facts.loop else 0.0) + facts.other_instructions
        if warp_instructions * facts.num_warps / SCHEDULERS > parts["issue"]:
            parts["issue"], issued = warp_instructions * facts.num_warps / SCHEDULERS, warp_instructions
    if facts.warp_specialized:
        core = max(parts["tensor core"], parts["issue"]) + parts["spills"]
    else:
        core = sum(parts.values())
    moved = total.load_bytes + total.store_bytes
    if l1 and n and facts.bounded_trips >= 0 and facts.loop and getattr(problem, "trips", None) is None:
        # Model 17: a loop run as its bounds say re-reads what it read (a stencil's taps); its SM's L1
        # serves those (the L1 demand below prices them), and the L2 feeds the bytes the launch needs:
        # the least traffic's iterations, as models 1-16 count the loop
        least = iterations(facts, problem.flops, problem.min_bytes, programs)
        fed = Work()
        fed.add(straight)
        fed.add(_work(facts.loop), least)
        moved = min(moved, fed.load_bytes + fed.store_bytes)
    if model >= 3:
        # cp.async and TMA copies are fed faster than what goes through the registers
        copied = loop.load_bytes * n if pipelined else 0.0
        l2 = copied / l2_rate + (moved - copied) / sync_rate
    else:
        l2 = moved / l2_rate
    demand = {
        "core": core,
        "shared memory": total.smem_bytes / chip.smem_bytes_clk,
        "L2": l2,
        "memory": problem.min_bytes / programs / dram_clk,
    }
    in_records = ""
    if records is not None and records.record_run_ps and facts.records:
        # Model 21: the bytes its streams of records use come out of the least bytes, and the streams take
        # the DRAM their runs and sectors cost, each an SM's share of the chip's time
        used, seconds = _record_seconds(facts, problem, records)
        s = max(facts.records, key=lambda r: r["records"] * (r["runs"] * records.record_run_ps +
                                                             r["sectors"] * records.record_sector_ps))
        flight = facts.blocks_per_sm * s["records"]
        plural_s = {k: "s" if s[k] != 1 else "" for k in ("sectors", "runs")}
        in_records = (f"memory: records {s['stride']} bytes apart, {s['used']} bytes used of {s['sectors']:.3g} "
                      f"sector{plural_s['sectors']} in {s['runs']:.2g} run{plural_s['runs']} of DRAM each, "
                      f"{flight:,} in flight an SM" +
                      (f" (+{(flight - 1024) / records.record_flight:.0%})" if flight > 1024 else ""))
        demand["memory"] = (max(0.0, problem.min_bytes - used) / programs / dram_clk +
                            seconds * chip.clock_ghz * 1e9 * chip.sms / programs)
    if l1 and chip.target.startswith("sm_"):
        # Model 17: a warp's global load or store takes the L1 a wavefront for each 4 sectors its lanes
        # touch, at least one a row of lanes (facts._l1_wavefronts), one a clock an SM: 128 B/clk. Model
        # 18 counts each access at its own width (a 2-byte load is not a pair because a 4-byte one is).
        wavefronts = total.l1_wavefronts_own if own and facts.own_widths else total.l1_wavefronts
        if strided and facts.strided:
            # 19: lanes as far apart as the pointer says, a pass of the L1's 32 banks for the most words
            # the lanes want from one bank (the conv1d's weights: 8 passes where sectors said 4)
            wavefronts = total.l1_wavefronts_strided
        if lookups and facts.lookups:
            # 20: or the lookups of the lines its lanes touch, L1_LINES_CLK a clock (the dwconv's filters)
            wavefronts = total.l1_passes
        demand["L1"] = wavefronts / L1_WAVEFRONTS_CLK
    if measured is not None:
        demand["program starts"] = measured.start(facts.num_warps)
    looped_demand = None
    if wave_stores is not None and loop.dot_flops and facts.loop and facts.ragged_loop != 1:
        # Model 16: the demands of the main loop's iterations alone (its copies less the prologue's, which
        # the fill waits for), for waves whose programs fill and drain together (below). Not where the
        # programs' loops differ in length (ragged_loop: a causal attention's, a persistent loop's).
        looped = Work()
        looped.add(loop, n)
        looped.load_bytes -= _prologue_bytes(facts, n, loop, straight)
        issue = _issue(looped, threads, lanes, chip)
        mine = {"tensor core": looped.dot_flops / mma, "issue": issue, "spills": spills}
        copied = looped.load_bytes if pipelined else 0.0
        looped_demand = {
            **demand,
            "core": max(mine["tensor core"], issue) + spills if facts.warp_specialized else sum(mine.values()),
            "shared memory": looped.smem_bytes / chip.smem_bytes_clk,
            "L2": copied / l2_rate + (looped.load_bytes + looped.store_bytes - copied) / sync_rate,
        }
    # One program's own chain. Loads that re-read what other programs read hit L2.
    share = problem.min_bytes / programs
    latency = chip.l2_latency if total.load_bytes > 2 * share else chip.dram_latency
    # One program's matrix products use one warp's share of the tensor cores per warp it has (mma.sync),
    # or all four with a warpgroup (wgmma, tcgen05).
    own_mma = mma * (min(1.0, facts.num_warps / 4) if facts.instruction == "mma" else 1.0)
    # Model 9, for a kernel with no matrix products: its own element-wise work issues on the schedulers
    # its warps occupy (a warp each, four an SM), and a loop that stores every iteration waits for its
    # stores, at what the calibration's epilogues reached a program (model 5's figure). Checked on the
    # `spill` and `prows` runs' row loops (rank_calibrate.py --check-chain), not fitted to them.
    streams = model >= 9 and not loop.dot_flops and not straight.dot_flops
    own_share = min(1.0, facts.num_warps / 4) if streams else 1.0
    store_rate = measured.epilogue_bytes_clk if streams and measured.epilogue_bytes_clk else None

    # Model 11, for such a kernel: a warp issues one instruction a clock at most, so its own work takes at
    # least the SASS instructions it runs (the masks, address arithmetic and range checks of its special
    # functions that the TTGIR's element count leaves out), however many of the SM's lanes it could use.
    # (facts.instruction: a matrix loop whose products the TTGIR did not show, e.g. a TMA matmul, is no stream)
    sass = model >= 11 and streams and facts.loop_instructions >= 0 and facts.instruction == "fma"
    loop_floor, other_floor = facts.loop_instructions, facts.other_instructions
    if wait_cycles is not None and facts.loop_stall_cycles >= 0:
        # Model 14: a warp alone waits, after each instruction, the clocks ptxas encoded in it (a dependent
        # result's fixed latency), and at each scoreboard wait for a special function's or a load's result
        # `wait_cycles` more (fitted on the calibration's row loops); where few warps share a scheduler
        # nothing hides that (the persistent softmax's 2-warp programs: docs/rank.md, "Model 14")
        loop_floor = facts.loop_stall_cycles + facts.loop_waits * wait_cycles
        other_floor = facts.other_stall_cycles + facts.other_waits * wait_cycles
    if unrolled > 1 and loop_floor > 0:
        loop_floor = loop_floor / unrolled  # (model 18: the SASS loop's body is that many iterations)

    def compute(w: Work, instructions: int = 0) -> float:
        issue = _issue(w, threads, lanes, chip, own_share)
        return max(w.dot_flops / own_mma, w.smem_bytes / chip.smem_bytes_clk) + \
            (max(issue, float(instructions)) if sass else issue)

    stores = loop.store_bytes / store_rate if store_rate else 0.0
    loop_latency = _loop_latency(loop, latency, pipelined, chip, measured, model)
    if unrolled > 1 and not pipelined:
        # Model 18: an unrolled loop issues its iterations' loads together and waits for them once
        many = Work()
        many.add(loop, unrolled)
        loop_latency = _loop_latency(many, latency, pipelined, chip, measured, model) / unrolled
    if facts.loop:
        if pipelined and streams and measured.copy_bytes_clk and measured.dram_copy_bytes_clk:
            # A copy lands at a fixed latency plus its bytes at one program's rate; the program's copies,
            # work and stores go through its own warps in turn, and a copy issued `ahead` iterations
            # early hides only its fixed latency, behind the iterations between (none at 2 stages).
            fixed, rate = ((measured.dram_copy_latency, measured.dram_copy_bytes_clk) if latency == chip.dram_latency
                           else (measured.copy_latency, measured.copy_bytes_clk))
            work = compute(loop, loop_floor) + stores + loop.load_bytes / rate
            per_iter = work + max(0.0, fixed - (ahead - 1) * work)
        elif pipelined:
            per_iter = max(compute(loop, loop_floor) + stores, loop_latency / ahead)
            if model >= 3 and measured.program_bytes_clk:
                per_iter = max(per_iter, loop.load_bytes / measured.program_bytes_clk)
        else:
            per_iter = compute(loop, loop_floor) + stores + (loop_latency if loop.load_bytes else 0.0)
        chain = n * per_iter
    else:
        per_iter, chain = 0.0, 0.0
    drain, first_tile, epilogue = 0.0, 0.0, 0.0
    if model >= 5 and facts.loop and measured.epilogue_bytes_clk:
        # Every program waits for its first tile in full before its pipelined loop starts (the fill, as
        # the calibration's one-wave loops paid it); other straight-line loads are waited for once. Its
        # output's stores do not hold it (they are asynchronous: the next program starts), but the launch
        # ends when the last wave's have landed, at what the calibration's epilogues reached: the drain,
        # once a launch.
        first_tile, epilogue = (loop_latency if pipelined else 0.0), compute(straight, other_floor)
        chain += first_tile + epilogue + \
            (latency if straight.sync_loads else 0.0) + own_spills
        drain = straight.store_bytes / measured.epilogue_bytes_clk
    else:
        wait = latency if straight.load_bytes else 0.0
        if model >= 10 and streams and measured.row_latency is not None:
            # Model 10: a program without a loop (one row, one block of a vector) is its start, its loads
            # from DRAM at the latency a loaded DRAM gives them, its work and its reductions across warps
            if straight.load_bytes and latency == chip.dram_latency:
                wait = measured.row_latency + straight.load_bytes / measured.dram_load_bytes_clk
            wait += measured.start(facts.num_warps) + straight.warp_reductions * measured.warp_reduce_cycles
        chain += compute(straight, other_floor) + wait + own_spills

    blocks = facts.blocks_per_sm
    slots = chip.sms * blocks
    waves = math.ceil(programs / slots)
    last = programs - (waves - 1) * slots
    per_sm_last = math.ceil(last / chip.sms)

    soft = measured.soft_p if model >= 8 and loop.dot_flops > 0 and measured.soft_p else None

    def wave_fixed(b: int) -> float:
        # Model 16: what a wave of b programs in lockstep pays beside its iterations (its fill, their
        # epilogues, `wave_stores` of their output's stores)
        output = straight.store_bytes / measured.epilogue_bytes_clk if measured.epilogue_bytes_clk else 0.0
        return first_tile + b * (epilogue + (wave_stores or 0.0) * output)

    def wave(b: int) -> tuple[float, str]:
        terms = {k: b * v for k, v in demand.items()}
        terms["latency"] = chain
        # A chain no longer than the core work it holds is that work, not waiting: name the work.
        bound = max(terms, key=lambda k: terms[k] * (0.999 if k == "latency" else 1.0))
        if soft:
            # Model 8: a loop that multiplies takes the p-norm of its demands, not the largest: copies,
            # matrix products and the epilogue share the SM's ports, and near each other they interfere.
            # With two programs or more an SM, a program's chain is one more demand (its waits overlap the
            # others' work imperfectly); with one, the chain holds the program's own work: a floor.
            if looped_demand is not None:
                # Model 16: a wave's programs start together and end together (they do the same work),
                # so they wait for their first tiles at once and run their epilogues at once: each wave
                # pays the fill, the b epilogues' work and `wave_stores` of their output's stores at the
                # epilogue rate, beside the p-norm of the iterations' demands, one program's chain the
                # floor. (The calibration's launches 4-16 waves deep at K 256-2,048 showed ~2.5 us a wave
                # beyond the iterations, at one program an SM and at two alike: rank_calibrate.py
                # --check-short-k; the fraction is --fit-lockstep's.)
                looped_terms = [b * v for v in looped_demand.values()]
                return max(wave_fixed(b) + sum(v ** soft for v in looped_terms) ** (1.0 / soft), chain), bound
            shared = [v for k, v in terms.items() if k != "latency" or b >= 2]
            return max(sum(v ** soft for v in shared) ** (1.0 / soft), chain), bound
        return terms[bound], bound

    full, bound = wave(blocks)
    if model >= 9 and waves == 1:
        bound = wave(per_sm_last)[1]  # one wave: its demands, not a full SM's, say what bounds it
    full_bound = bound
    if bound == "latency" and facts.loop and n >= 1 and per_iter <= compute(loop, loop_floor) * 1.0001:
        # The chain is the program's own work, never waiting for a copy: name that work.
        bound = "core"
    if bound == "core":
        bound = max(parts, key=parts.get)
    last, last_bound = wave(per_sm_last)
    cycles = (waves - 1) * full + last + drain
    stream = model >= 10 and streams and not facts.loop and measured.row_latency is not None
    if stream:
        # Model 10: programs without a loop stream through their SM's slots, each starting when one
        # frees, not in waves: the busiest SM's programs at the slots' rate, then the last program's
        # chain beyond its share of that (the launch's drain of in-flight work). In one wave too: the
        # programs then share the SM's slots in turn (no loop, no drain of stores: model 5's is a loop's).
        each = full / blocks
        cycles = math.ceil(programs / chip.sms) * each + max(0.0, chain - each)
        last_bound = full_bound
    launch_us = measured.launch_us if model >= 5 and measured.launch_us else chip.launch_us
    ms = cycles / (chip.clock_ghz * 1e9) * 1e3 + launch_us / 1e3
    fill = programs / (waves * slots)
    # The fullest wave's demands: a launch of one partial wave has per_sm_last programs an SM, not a full SM's,
    # and its bound (above) is read from those; its terms say the same.
    fullest = blocks if waves > 1 or model < 9 else per_sm_last
    terms_us = {k: round(fullest * v / (chip.clock_ghz * 1e3), 3) for k, v in {**parts, **demand}.items()}
    terms_us["latency"] = round(chain / (chip.clock_ghz * 1e3), 3)
    reason = reason_for(bound, facts, chip, programs, waves, 1.0 if stream else fill, n, pipelined, loop_latency,
                        per_iter, compute(loop, loop_floor) if facts.loop else 0.0, parts, ahead, stores,
                        straight.warp_reductions if stream else 0,
                        round(loop_floor) if sass and facts.loop and
                        loop_floor > _issue(loop, threads, lanes, chip, own_share) else 0,
                        stalls=wait_cycles is not None and facts.loop_stall_cycles >= 0,
                        reps=repeated, issued=issued, memory=in_records)
    if model >= 9 and waves > 1 and full_bound != "latency" and last_bound == "latency" and \
            last - full * per_sm_last / blocks > 0.03 * cycles:
        # A thin last wave that one program's own chain paces (a persistent grid's second wave of one):
        # what the "wave quantisation" words alone would not say.
        reason += (f"; its last wave, {per_sm_last} program{'s' if per_sm_last != 1 else ''}/SM, waits on one "
                   f"program's own chain ({last / (chip.clock_ghz * 1e3):.1f} us)")
    if soft:
        b = blocks if waves > 1 else per_sm_last  # the fullest wave the launch has
        combined, largest = wave(b)[0], max(max(b * v for v in demand.values()), chain)
        if looped_demand is not None:
            looped_terms = [b * v for v in looped_demand.values()]
            combined, largest = sum(v ** soft for v in looped_terms) ** (1.0 / soft), max(looped_terms)
            together = f" (its {b} programs start and end together)" if b > 1 else ""
            reason += (f"; each wave: {wave_fixed(b) / (chip.clock_ghz * 1e3):.1f} us of fill and "
                       f"epilogue{'s' if b > 1 else ''} beside its iterations{together}")
        if combined > 1.03 * largest:
            reason += f"; demands near each other: {combined / largest - 1:.0%} over the largest alone"
    crowding = 0.0
    if crowding_p:
        # Model 22: the fullest wave's demands and one program's chain among them: their p-norm over the
        # largest alone, less one (how far the others add to the bound; waves of other sizes compare alike)
        crowded = [max(0.0, fullest * v) for v in demand.values()] + [max(0.0, chain)]
        top = max(crowded)
        if top > 0 and math.isfinite(top):
            crowding = sum((v / top) ** crowding_p for v in crowded) ** (1.0 / crowding_p) - 1.0
    return Estimate(facts.label, ms, bound, reason, waves, fill, terms_us, crowding)


def _record_seconds(facts: Facts, problem, m) -> tuple[float, float]:
    """(bytes the launch's streams of records use, seconds the DRAM takes for them) under model 21: each
    stream's records are its program's times the programs along the axes its address follows (the others
    read the same records again, from L2); a run of sectors costs `m.record_run_ps`, a sector
    `m.record_sector_ps`, and the whole stream slows by the records its SMs hold in flight past 1,024
    (rank_aos.py: 59-word records at 1 warp and 1 a thread, 16 a thread and 4 warps twice as long)."""
    grid = tuple(problem.grid) + (1, 1, 1)
    used = seconds = 0.0
    for s in facts.records or ():
        n = s["records"] * math.prod(max(1, int(grid["xyz".index(a)])) for a in s["pids"] if a in "xyz")
        flight = facts.blocks_per_sm * s["records"]
        slower = 1 + max(0.0, flight - 1024) / m.record_flight
        used += n * s["used"]
        seconds += n * (s["runs"] * m.record_run_ps + s["sectors"] * m.record_sector_ps) * 1e-12 * slower
    return used, seconds


def _unrolled(facts: Facts, loop: Work, n: float) -> float:
    """Model 18: the main loop's iterations one pass of the SASS's loop body runs: its global loads (LDG)
    over those the TTGIR's iteration issues (load_instructions, a program's, over its warps); all `n`
    where the SASS has no loop but the TTGIR loads in one (ptxas unrolled it whole). 1 where not read."""
    if not facts.loop or facts.loop_global_loads < 0 or loop.load_instructions <= 0 or n <= 1:
        return 1.0
    per_warp = loop.load_instructions / max(1, facts.num_warps)
    if facts.loop_instructions == 0:
        return float(n)
    return float(min(n, max(1, round(facts.loop_global_loads / per_warp))))


def _trips(facts: Facts, problem, programs: int, bounded: bool = False) -> tuple[float, Work, Work]:
    """(the main loop's iterations a program, the loop's work an iteration, the work outside it).
    `bounded` (model 17): a loop that only moves data and whose bounds are constants runs as they say
    (facts.bounded_loop), not the least bytes' worth of iterations."""
    if bounded and facts.bounded_trips >= 0 and facts.loop and getattr(problem, "trips", None) is None:
        return facts.bounded_trips, _work(facts.bounded_loop), _work(facts.straight)
    # A captured launch's problem knows its trip count (its loop bounds, evaluated: captured.py)
    n = problem.trips if getattr(problem, "trips", None) is not None and facts.loop else \
        iterations(facts, problem.flops, problem.min_bytes, programs)
    # (a captured launch may know the main loop's iteration better: loops inside it counted as they run)
    return n, _work(getattr(problem, "loop", None) or facts.loop), _work(facts.straight)


def _prologue_bytes(facts: Facts, n: float, loop: Work, straight: Work) -> float:
    """The bytes a program's straight-line loads and its loop's iterations both count (models 5 on): the
    pipeliner's prologue copies the first `ahead` iterations' tiles before the loop, and the loop's last
    `ahead` iterations copy nothing (their copies are masked off), so those tiles load once."""
    pipelined = loop.async_loads > 0 and loop.sync_loads == 0 and facts.num_stages >= 2
    if not pipelined or straight.async_loads < loop.async_loads:
        return 0.0
    ahead = facts.prefetch or facts.num_stages - 1
    return min(n, ahead, straight.async_loads // loop.async_loads) * loop.load_bytes


def activity(facts: Facts, problem, chip: Chip, ms: float, bytes_flops: float, once: bool = False) -> float | None:
    """Model 12's load of a launch that multiplies, if it took `ms`: the flops it does a second an SM
    plus `bytes_flops` for each byte its programs load (copies from L2), in GFLOP/s an SM; None for a
    launch without matrix products. Model 12 counts the pipeliner's prologue copies twice (in the
    straight-line loads and in the loop's iterations: found after its held-out run); model 13 (`once`)
    once, as the rest of the model does."""
    programs = max(1, problem.programs)
    n, loop, straight = _trips(facts, problem, programs)
    if not (loop.dot_flops or straight.dot_flops) or not problem.flops or not ms:
        return None
    copied = straight.load_bytes + loop.load_bytes * n - (_prologue_bytes(facts, n, loop, straight) if once else 0.0)
    return (problem.flops + bytes_flops * copied * programs) / (ms * 1e-3) / chip.sms / 1e9


def clock_factor(load: float | None, ms: float, m) -> tuple[float, float]:
    """(how much longer model 12 takes a launch than model 11, the clock it runs at): the card keeps
    `m.boost_ghz` up to `m.power_activity`, beyond it drops as (activity / load) ** (1 / exponent), and a
    launch of `ms` reaches that clock over `m.power_ramp_us` (an exponential ramp)."""
    if load is None or load <= m.power_activity:
        return 1.0, m.boost_ghz
    clock = m.boost_ghz * (m.power_activity / load) ** (1.0 / m.power_exponent)
    reached = 1.0 - math.exp(-ms * 1e3 / m.power_ramp_us)
    return 1.0 + reached * (m.boost_ghz / clock - 1.0), clock


def power_capped(base: Estimate, facts: Facts, problem, chip: Chip, m, once: bool = False) -> Estimate:
    """Models 12 and 13: model 11's estimate of a launch that multiplies, at the clock the card keeps under
    it (13: its copies counted once)."""
    if not base.launchable:
        return base
    factor, clock = clock_factor(activity(facts, problem, chip, base.ms, m.power_bytes_flops, once), base.ms, m)
    if factor == 1.0:
        return base
    # (an effective clock, against model 11's times, which hold what the one-wave calibration ran at)
    reason = base.reason + (f"; power: +{factor - 1:.0%} at the lower clock the card keeps under this "
                            f"launch's load" if factor > 1.005 else "")
    return Estimate(base.label, base.ms * factor, base.bound, reason, base.waves, base.wave_fill, base.terms_us,
                    base.crowding)


def _spills(facts: Facts, n: float, threads: int, chip: Chip, measured, model: int, sync_rate: float,
            loop_multiplies: bool = False):
    """(the spill traffic's demand on the SM per program, one program's own time for it), in cycles."""
    demand = facts.spill_bytes * threads * max(1.0, n) / chip.smem_bytes_clk
    if measured is not None and facts.spill_bytes:
        # Spilled values live in L1 while they fit beside the shared memory the programs take; beyond
        # that they go to L2 and back.
        room = measured.l1_bytes - facts.blocks_per_sm * facts.shared_bytes
        if facts.blocks_per_sm * threads * facts.spill_bytes > room:
            demand = facts.spill_bytes * threads * max(1.0, n) / sync_rate
    if not (model >= 4 and facts.spill_bytes and measured.spill_warp_bytes_clk):
        return demand, 0.0
    # Spill traffic is a warp's dependent local loads and stores: what one warp moves a clock, times the
    # warps on the SM, up to what an SM was measured to move (the calibration's spilling rows). Where the
    # SASS says the spill code is: in the main loop it runs every iteration, else once.
    spilled = threads * (facts.loop_spill_bytes * max(1.0, n) + facts.other_spill_bytes
                         if facts.loop_spill_bytes >= 0 else facts.spill_bytes * max(1.0, n))
    warp, cap = measured.spill_warp_bytes_clk, measured.spill_sm_bytes_clk
    warps_on_sm = facts.num_warps * max(1, facts.blocks_per_sm)
    if model >= 7 and loop_multiplies and facts.loop_spill_bytes > 0 and measured.loop_dot_spill_warp_bytes_clk:
        # A loop that multiplies spills its accumulator's pieces around the matrix products, in bulk:
        # that traffic moves at what the calibration's spilling matrix loops moved a warp, up to the
        # SM's L1 rate; the rest of the spill code at the dependent spills' rate, as in model 4.
        in_loop = threads * facts.loop_spill_bytes * max(1.0, n)
        rest = threads * facts.other_spill_bytes
        fast = measured.loop_dot_spill_warp_bytes_clk
        l1 = chip.smem_bytes_clk
        return (in_loop / min(fast * warps_on_sm, l1) + rest / min(warp * warps_on_sm, cap),
                in_loop / min(fast * facts.num_warps, l1) + rest / min(warp * facts.num_warps, cap))
    return (spilled / min(warp * warps_on_sm, cap),
            spilled / min(warp * facts.num_warps, cap))


def _loop_latency(loop: Work, latency: float, pipelined: bool, chip: Chip, measured, model: int) -> float:
    """How long the main loop waits for one iteration's loads, before any prefetching hides it."""
    if model < 3 or not loop.load_bytes:
        return latency
    from_dram = latency == chip.dram_latency
    if model >= 5 and pipelined and loop.async_loads >= 2 and not from_dram and measured.loop_copy_latency:
        # A matrix loop copying two operands or more an iteration: what the calibration's such loops
        # waited for an iteration's copies (two iterations ahead, both operands from L2).
        return measured.loop_copy_latency + loop.load_bytes / measured.loop_copy_bytes_clk
    if model >= 4 and from_dram and measured.dram_copy_latency is not None:
        # The program streams its own data: the two latencies below, measured on a stream from DRAM.
        if pipelined:
            return measured.dram_copy_latency + loop.load_bytes / measured.dram_copy_bytes_clk
        return measured.dram_load_latency + loop.load_bytes / measured.dram_load_bytes_clk
    if pipelined and measured.copy_latency is not None:
        # A copy lands when its last byte does: the loaded latency of a tile this size, calibrated on a
        # stream of the same copies from L2.
        return measured.copy_latency + loop.load_bytes / measured.copy_bytes_clk
    if not pipelined and not from_dram and measured.load_latency is not None:
        # A loop the pipeliner left alone waits for each tile it loads from L2, as long as the same
        # stream took at one stage.
        return measured.load_latency + loop.load_bytes / measured.load_bytes_clk
    return latency


def _issue(w: Work, threads: int, lanes: float, chip: Chip, share: float = 1.0) -> float:
    """Cycles to issue `w`'s element-wise and special-function results on `share` of an SM's lanes."""
    elem, sfu = w.issue_slots(threads)
    return elem / (lanes * share) + sfu / (chip.sfu_ops * share)
