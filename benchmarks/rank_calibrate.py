"""Microbenchmarks that measure the H200 figures irscope rank's models 2 and 3 take from the machine instead
of a datasheet, on kernels of their own (none of the evaluation's spaces): what an SM pays per program it
starts, what the matrix instructions reach per tile shape, the L2-to-SM feed, and how long a pipelined
copy from L2 takes when the SM is busy (the loaded latency model 3 charges), the same from DRAM, what
spilling costs, what an iteration of a pipelined matrix loop costs beyond its work (`loop`, model 5),
what a program holding one row waits for (`rows`), the L2 feed a tiled matrix loop gets (`feed`), what
spills inside a matrix loop cost (`wspill`), the L2 feed when both operands are each program's own
tiles (`tiles`), `spill`'s row loop pipelined at one to four programs an SM (`prows`), and the row
loop at few rows a program, with and without an exp2 of every value (`frows`), with more instructions
a value (`hrows`) and at other row lengths (`hwidths`; both kept as `frows` rows), what a warp's
instruction costs as a loop's body outgrows the instruction caches (`icache`), `tiles`' loop launched
1-16 waves deep (`waves`; at shorter K: `swaves`; storing into a row-major C: `cwaves`), and the SM
clock and power nvidia-smi samples while such launches are timed (`clocks`, `clocks16`; model 12).

    python3 benchmarks/rank_calibrate.py OUT.json [--only start,...,prows,frows,hrows,hwidths,icache] [--budget 300]
    python3 benchmarks/rank_calibrate.py OUT.json --fit-dram     # model 4's DRAM figures from the dram rows
    python3 benchmarks/rank_calibrate.py OUT.json --fit-loop     # model 5's figures from the loop rows
    python3 benchmarks/rank_calibrate.py OUT.json --fit-feed     # model 6's L2 feed from the feed rows
    python3 benchmarks/rank_calibrate.py OUT.json --fit-wspill   # model 7's spill rate in a matrix loop
    python3 benchmarks/rank_calibrate.py OUT.json --fit-tiles    # the most L2 feed the tiles rows reached
    python3 benchmarks/rank_calibrate.py FACTS.json --facts-of RUN.json...  # the runs' matrix loops' facts
    python3 benchmarks/rank_calibrate.py FACTS.json --fit-soft   # model 8's exponent from those rows
    python3 benchmarks/rank_calibrate.py FACTS.json --facts-of RUN.json... --kinds spill,prows  # the row loops' facts
    python3 benchmarks/rank_calibrate.py FACTS.json --check-chain  # models 8-11 on those rows
    python3 benchmarks/rank_calibrate.py FACTS.json --facts-of calibrate-h200-v6.json --kinds rows  # one-row programs
    python3 benchmarks/rank_calibrate.py FACTS.json --fit-rows [--model 11] [--gpu h100]  # model 10's (11's) figures from those rows
    python3 benchmarks/rank_calibrate.py FACTS.json --facts-of calibrate-h200-v1[123].json --kinds frows  # few rows a program
    python3 benchmarks/rank_calibrate.py FACTS.json --facts-of calibrate-h200-v14.json --kinds waves   # many waves
    python3 benchmarks/rank_calibrate.py FACTS.json --check-waves calibrate-h200-v15.json calibrate-h200-v17.json
    python3 benchmarks/rank_calibrate.py WAVES_FACTS.json --fit-power calibration-facts.json [--power-model 13]
    python3 benchmarks/rank_calibrate.py WAVES_FACTS.json --fit-lockstep calibration-facts.json SWAVES_FACTS.json

On the GPU machine, through Triton's JIT. The measurements run in a child process; one that makes no progress for
60 s is killed and the next child goes on after it (a compile that hangs costs that measurement, not the
run), and OUT.json is rewritten after each.
"""
from __future__ import annotations

import argparse
import json
import os
import select
import subprocess
import sys
import time

HERE = os.path.abspath(__file__)

MMA_SHAPES = [(2, 64, 64), (2, 64, 128), (4, 64, 16), (4, 64, 32), (4, 64, 64), (4, 64, 128), (4, 64, 256),
              (4, 128, 128), (8, 128, 64), (8, 128, 128), (8, 128, 256), (8, 256, 128)]
# The stream: (warps, BM, BK, programs per SM, stages). A tile of BM x BK fp16 a program an iteration, from
# an L2-resident buffer, feeding a small dot so that the pipeliner makes the load asynchronous as it does
# for a matmul's operands.
STREAM = [(4, bm, bk, b, s) for (bm, bk) in ((64, 64), (128, 64), (128, 128), (256, 64), (256, 128))
          for b in (1, 2, 4) for s in (1, 2, 3, 4, 5) if b * (s + 1) * bm * bk * 2 <= 200 * 1024]

# The same stream from DRAM (each program its own tiles, read once), and spills: (warps, row length in
# fp32, programs per SM) of a persistent row normalisation that spills at few warps and long rows.
DRAM = [(4, bm, 64, b, s) for bm in (64, 128, 256) for b in (1, 2, 4) for s in (1, 2, 3, 4)
        if b * (s + 1) * bm * 64 * 2 <= 200 * 1024]
SPILL = [(w, c, b) for c in (2048, 4096, 8192, 16384) for w in (1, 2, 4, 8) for b in (1, 4)]

# What an iteration of a pipelined matrix loop costs beyond its work: (warps, BM, BN, BK, stages, programs
# per SM). Every program runs the same K = LOOP_K through both operands streamed from L2, so that at one
# shape the flops and bytes are the same at every BK and the time's growth with K / BK is the loop's own
# cost per iteration (waiting for the copies, the barrier, the matrix instruction's wait, the next copies).
LOOP_K = 4096
LOOP = [(w, bm, bn, bk, s, b, LOOP_K) for (w, bm, bn) in ((4, 64, 128), (4, 128, 64), (4, 128, 128), (8, 128, 128),
                                                          (8, 128, 256), (8, 256, 128), (4, 64, 64))
        for bk in (16, 32, 64, 128) for s in (3,) for b in (1, 2) if b * s * (bm + bn) * bk * 2 <= 220 * 1024]
# Row programs: (warps, row length in fp32, reductions). One program a row, 16,384 rows from DRAM: the
# row's load, R chained reductions across the program's warps, the store; what a program that holds
# one row waits for, by warps and reductions.
ROWS = [(w, c, r) for w in (1, 2, 4, 8, 16, 32) for c in (2048, 8192) for r in (0, 1, 4)]
# and (`mrows`, after model 16) masked: a row of N fp32 in a block of B (the next power of two), 0 or 2
# chained reductions, so that a program's chain meets its memory demand (the row softmax's 32 warps run
# 4-11% behind at 6,144-7,680 columns, level at 8,192): (warps, N, B, reductions). 4,096 and 8,192 are
# unmasked; 6,144 and 7,168 are masked in a block of 8,192.
MROWS = [(w, n, b, r) for r in (0, 2) for (n, b) in ((4096, 4096), (6144, 8192), (7168, 8192), (8192, 8192))
         for w in (4, 8, 16, 32)]
# `spill`'s row loop pipelined by tl.range (warps, row length in fp32, programs launched per SM, stages;
# `range` with a launch's num_stages is left alone by the pipeliner, as a first run showed): what one
# program's copies, work and stores take when too few programs share an SM to hide them (4 an SM where
# only 3 fit, rows of 8,192 at 3 stages: a second wave of one).
PROWS = [(w, c, b, s) for w in (2, 4, 8, 16) for c in (4096, 8192) for b in (1, 3, 4) for s in (1, 2, 3)]
# Few rows a program (`frows`): the row loop, unpipelined, at 4 programs launched an SM doing 2 to 16 rows
# each (a persistent grid over a short problem, where a program's first load and its last row's work
# and stores are a larger part of it), 2-32 warps, without and with an exp2 of every value (`spill_rows`,
# `exp_rows`): (warps, row length in fp32, programs per SM, rows a program, exp2).
FROWS = [(w, 8192, 4, r, e) for e in (0, 1) for r in (2, 4, 8, 16) for w in (2, 4, 8, 16, 32)]
# and (exp2 = 2, a later run) `heavy_rows`: more SASS a value (masks, the natural exp, two divisions).
FROWS_HEAVY = [(w, 8192, 4, r, 2) for r in (2, 4, 8, 16) for w in (2, 4, 8, 16, 32)]
# and at other row lengths (8 rows a program): is it the warps, or the values (and SASS) a warp holds?
FROWS_WIDTHS = [(w, c, 4, 8, 2) for c in (4096, 16384) for w in (2, 4, 8, 16, 32)]
# What a warp's instruction costs as its loop's body outgrows the instruction caches (`icache`): (warps,
# unrolled steps N: 4 N fused multiply-adds a body), one program an SM.
ICACHE = [(w, n) for w in (4, 8) for n in (16, 64, 128, 256, 384, 512, 640, 768, 1024, 1536, 2048, 3072)]
# The L2 feed as a tiled matrix loop sees it: `mma_stream`'s loop, each program copying its own A panel
# (row stride K: BM rows of BK elements, as a matmul's A tile) out of 16 panels and the shared B, all
# L2-resident, with several programs an SM: (warps, BM, BN, BK, stages, programs per SM).
FEED = [(4, 64, 64, 64, 3, 4), (4, 64, 64, 32, 4, 4), (4, 64, 64, 64, 3, 2), (4, 128, 64, 64, 3, 2),
        (4, 64, 128, 64, 3, 2), (4, 128, 64, 32, 4, 3), (4, 128, 128, 64, 3, 2), (4, 128, 128, 32, 4, 2),
        (8, 128, 128, 64, 3, 2), (8, 128, 256, 64, 3, 1), (4, 64, 64, 64, 3, 1), (4, 128, 128, 64, 3, 1)]
FEED_PANELS = 16
# The L2 feed when both operands are a program's own tiles (`mma_tiles`): program p reads A panel p % 8
# and B panel (p // 8) % 32 of an L2-resident pair (K 2048: 2-8 MB of A, 8-32 MB of B), as a wave of a
# grouped matmul (GROUP_M 8) reads its tiles: (warps, BM, BN, BK, stages, programs per SM).
TILES = FEED + [(4, 128, 128, 32, 3, 2), (4, 128, 128, 64, 4, 1), (8, 128, 256, 32, 4, 1),
                (8, 256, 128, 64, 3, 1), (8, 256, 128, 32, 4, 1), (4, 64, 128, 64, 3, 3), (4, 128, 64, 64, 3, 3)]
TILES_K, TILES_PANELS = 2048, (8, 32)
# Spills inside a matrix loop: `loop` at shapes whose accumulator 4 warps cannot hold (ptxas spills it
# in the loop), beside the same shapes at 8 warps, which do not spill: (warps, BM, BN, BK, stages,
# programs per SM, K).
WSPILL = [(w, bm, bn, bk, 3, 1, LOOP_K) for (bm, bn, bk) in ((128, 256, 64), (256, 128, 64), (128, 256, 32))
          for w in (4, 8)]
# Many waves (`waves`): `tiles`' loop launched 1, 4 or 16 full waves deep at K 1,024 and 2,048 (every
# operand L2-resident: at most 40 MB), unmasked and with its loads masked along K: what a program's start,
# fill and epilogue cost in a long launch's steady state, beside the SM's other programs, where every
# calibration row before it ran one wave: (warps, BM, BN, BK, stages, programs per SM, waves, K, masked).
WAVES = [(w, bm, bn, bk, s, b, wv, k, m) for (w, bm, bn, bk, s, b) in (
    (4, 128, 128, 64, 3, 2), (4, 128, 128, 32, 4, 2), (8, 128, 128, 64, 3, 2), (8, 128, 256, 64, 3, 1),
    (8, 256, 128, 64, 3, 1), (8, 128, 256, 32, 4, 1), (8, 256, 128, 32, 4, 1), (4, 64, 128, 64, 3, 3))
    for k in (1024, 2048) for wv in (1, 4, 16) for m in (0, 1) if m == 0 or wv == 16]
# `waves`' unmasked shapes at shorter K, 4 and 16 waves deep (`swaves`, kept as `waves` rows): 4-8
# iterations a program, where the evaluation's matmul at 8,192^2 x 512 ran its two-program tiles 20-25%
# slower than model 15 says and its one-program tiles 7-12% (a question to our own kernels: do they?).
SWAVES = [(w, bm, bn, bk, s, b, wv, k, 0) for (w, bm, bn, bk, s, b) in sorted({r[:6] for r in WAVES})
          for k in (256, 512) for wv in (4, 16)]
# And, timed beside them in one run (`--only waves,swaves,cwaves`), the same shapes at K 512 and 1,024,
# 16 waves, each output tile stored where a row-major C 8,192 columns wide keeps it (`cwaves`; measured
# only, no facts): does a matmul's strided output cost narrow tiles more, as the evaluation's suggests?
CWAVES = [(w, bm, bn, bk, s, b, 16, k, 0) for (w, bm, bn, bk, s, b) in sorted({r[:6] for r in WAVES})
          for k in (512, 1024)]
# The SM clock under `waves`' launches of 1 to 16 waves (`clocks`): is the steady state's slower
# iteration the card's clock?
CLOCKS = [(8, 128, 256, 64, 3, 1, wv, 2048, 0) for wv in (1, 4, 16)] + \
    [(4, 128, 128, 64, 3, 2, 16, 1024, 0), (8, 128, 256, 64, 3, 1, 16, 1024, 0), (4, 64, 128, 64, 3, 3, 16, 2048, 0)]
# and every `waves` shape at 16 waves (a second run): does the clock each keeps order them?
CLOCKS_ALL = [r for r in WAVES if r[6] == 16 and not r[8]]
# and at shorter K (one program an SM, BK 64): what a program pays once, beyond its iterations.
LOOP += [(w, bm, bn, 64, 3, 1, k) for (w, bm, bn) in ((4, 64, 128), (4, 128, 128), (8, 128, 256)) for k in (256, 512, 1024, 2048)]


def _kernels():
    import triton
    import triton.language as tl

    @triton.jit
    def start_only(out_ptr):
        # A program that does nothing but exist (one store, so that it is not empty): the cost of starting it.
        tl.store(out_ptr + tl.program_id(0), 1)

    @triton.jit
    def mma_loop(a_ptr, b_ptr, c_ptr, ITERS: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
        rm = tl.arange(0, BM)
        rn = tl.arange(0, BN)
        rk = tl.arange(0, BK)
        a = tl.load(a_ptr + rm[:, None] * BK + rk[None, :])
        b = tl.load(b_ptr + rk[:, None] * BN + rn[None, :])
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for _ in range(ITERS):
            acc = tl.dot(a, b, acc)  # chained through the accumulator: nothing to hoist
        tl.store(c_ptr + tl.program_id(0) * BM * BN + rm[:, None] * BN + rn[None, :], acc)

    @triton.jit
    def l2_read(x_ptr, out_ptr, span, ITERS: tl.constexpr, BLOCK: tl.constexpr):
        # Every program re-reads the same few MB (L2-resident) in BLOCK-element tiles, synchronously.
        offs = tl.arange(0, BLOCK)
        acc = tl.zeros((BLOCK,), dtype=tl.float32)
        base = (tl.program_id(0) * BLOCK) % span
        for i in range(ITERS):
            acc += tl.load(x_ptr + (base + i * BLOCK) % span + offs)
        tl.store(out_ptr + tl.program_id(0) * BLOCK + offs, acc)

    @triton.jit
    def stream(x_ptr, w_ptr, out_ptr, iters, BM: tl.constexpr, BK: tl.constexpr, BN: tl.constexpr):
        # Each iteration copies the next BM x BK tile of a few MB that every program re-reads (L2-resident),
        # its pointers advanced as a matmul's are, and multiplies it by a BK x BN tile loaded once (BN 16:
        # little work): a matmul's operand stream, which the pipeliner makes asynchronous.
        rm = tl.arange(0, BM)
        rk = tl.arange(0, BK)
        rn = tl.arange(0, BN)
        w = tl.load(w_ptr + rk[:, None] * BN + rn[None, :])
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        a_ptrs = x_ptr + (tl.program_id(0) % iters) * BM * BK + rm[:, None] * BK + rk[None, :]
        for _ in range(iters):
            a = tl.load(a_ptrs)
            acc = tl.dot(a, w, acc)
            a_ptrs += BM * BK
        tl.store(out_ptr + tl.program_id(0) * BM * BN + rm[:, None] * BN + rn[None, :], acc)

    @triton.jit
    def dram_stream(x_ptr, w_ptr, out_ptr, iters, BM: tl.constexpr, BK: tl.constexpr, BN: tl.constexpr):
        # `stream`, but every program reads tiles of its own, once: from DRAM.
        rm = tl.arange(0, BM)
        rk = tl.arange(0, BK)
        rn = tl.arange(0, BN)
        w = tl.load(w_ptr + rk[:, None] * BN + rn[None, :])
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        a_ptrs = x_ptr + tl.program_id(0).to(tl.int64) * iters * BM * BK + rm[:, None] * BK + rk[None, :]
        for _ in range(iters):
            a = tl.load(a_ptrs)
            acc = tl.dot(a, w, acc)
            a_ptrs += BM * BK
        tl.store(out_ptr + tl.program_id(0) * BM * BN + rm[:, None] * BN + rn[None, :], acc)

    @triton.jit
    def spill_rows(x_ptr, out_ptr, n_rows, COLS: tl.constexpr):
        # A persistent row normalisation: every value of a row is live across two reductions, so a row
        # longer than a program's registers hold spills to local memory, in the row loop.
        cols = tl.arange(0, COLS)
        for row in range(tl.program_id(0), n_rows, tl.num_programs(0)):
            x = tl.load(x_ptr + row.to(tl.int64) * COLS + cols)
            d = x - tl.sum(x, 0) / COLS
            v = tl.sum(d * d, 0) / COLS
            tl.store(out_ptr + row.to(tl.int64) * COLS + cols, d * tl.rsqrt(v + 1e-5))

    @triton.jit
    def mma_stream(a_ptr, b_ptr, c_ptr, K: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
        # A matrix loop of its own: both operands' tiles copied from a few MB every program re-reads
        # (L2-resident), pointers advanced as a matmul's, one product an iteration into one accumulator.
        rm = tl.arange(0, BM)
        rn = tl.arange(0, BN)
        rk = tl.arange(0, BK)
        a_ptrs = a_ptr + rm[:, None] * K + rk[None, :]
        b_ptrs = b_ptr + rk[:, None] * BN + rn[None, :]
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for _ in range(K // BK):
            acc = tl.dot(tl.load(a_ptrs), tl.load(b_ptrs), acc)
            a_ptrs += BK
            b_ptrs += BK * BN
        tl.store(c_ptr + tl.program_id(0) * BM * BN + rm[:, None] * BN + rn[None, :], acc.to(tl.float16))

    @triton.jit
    def row_chain(x_ptr, out_ptr, COLS: tl.constexpr, R: tl.constexpr):
        # One row a program: load it, R reductions each depending on the last, store it.
        cols = tl.arange(0, COLS)
        x = tl.load(x_ptr + tl.program_id(0).to(tl.int64) * COLS + cols)
        for _ in tl.static_range(R):
            x = x - tl.sum(x, 0) * (1.0 / COLS)
        tl.store(out_ptr + tl.program_id(0).to(tl.int64) * COLS + cols, x)

    @triton.jit
    def masked_row_chain(x_ptr, out_ptr, n_cols, COLS: tl.constexpr, R: tl.constexpr):
        # `row_chain` over a row of n_cols <= COLS: the loads and the store masked past its end
        cols = tl.arange(0, COLS)
        mask = cols < n_cols
        row = tl.program_id(0).to(tl.int64) * n_cols
        x = tl.load(x_ptr + row + cols, mask=mask, other=0.0)
        for _ in tl.static_range(R):
            x = x - tl.sum(x, 0) / n_cols
        tl.store(out_ptr + row + cols, x, mask=mask)

    @triton.jit
    def mma_feed(a_ptr, b_ptr, c_ptr, K: tl.constexpr, G: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr,
                 BK: tl.constexpr):
        # `mma_stream`, but program p reads A panel p % G (BM x K, row stride K) of G: different programs
        # copy different lines at once, as a matmul's do.
        rm = tl.arange(0, BM)
        rn = tl.arange(0, BN)
        rk = tl.arange(0, BK)
        a_ptrs = a_ptr + (tl.program_id(0) % G) * BM * K + rm[:, None] * K + rk[None, :]
        b_ptrs = b_ptr + rk[:, None] * BN + rn[None, :]
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for _ in range(K // BK):
            acc = tl.dot(tl.load(a_ptrs), tl.load(b_ptrs), acc)
            a_ptrs += BK
            b_ptrs += BK * BN
        tl.store(c_ptr + tl.program_id(0) * BM * BN + rm[:, None] * BN + rn[None, :], acc.to(tl.float16))

    @triton.jit
    def mma_tiles(a_ptr, b_ptr, c_ptr, K: tl.constexpr, GA: tl.constexpr, GB: tl.constexpr, BM: tl.constexpr,
                  BN: tl.constexpr, BK: tl.constexpr):
        # `mma_feed` with both operands a program's own: program p multiplies A panel p % GA (BM x K, row
        # stride K) by B panel (p // GA) % GB (K x BN out of a K x GB*BN matrix, row stride GB*BN), the
        # tiles a grouped matmul's wave of programs copies (GA rows of tiles, consecutive B columns).
        rm = tl.arange(0, BM)
        rn = tl.arange(0, BN)
        rk = tl.arange(0, BK)
        pid = tl.program_id(0)
        a_ptrs = a_ptr + (pid % GA) * BM * K + rm[:, None] * K + rk[None, :]
        b_ptrs = b_ptr + ((pid // GA) % GB) * BN + rk[:, None] * (GB * BN) + rn[None, :]
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for _ in range(K // BK):
            acc = tl.dot(tl.load(a_ptrs), tl.load(b_ptrs), acc)
            a_ptrs += BK
            b_ptrs += BK * GB * BN
        tl.store(c_ptr + pid * BM * BN + rm[:, None] * BN + rn[None, :], acc.to(tl.float16))

    @triton.jit
    def mma_tiles_masked(a_ptr, b_ptr, c_ptr, K, GA: tl.constexpr, GB: tl.constexpr, BM: tl.constexpr,
                         BN: tl.constexpr, BK: tl.constexpr):
        # `mma_tiles` with K a run-time value and both loads masked along K every iteration (other=0), as
        # a matmul guarding K's tail masks them: what the masks' predicates and address arithmetic add.
        rm = tl.arange(0, BM)
        rn = tl.arange(0, BN)
        rk = tl.arange(0, BK)
        pid = tl.program_id(0)
        a_ptrs = a_ptr + (pid % GA) * BM * K + rm[:, None] * K + rk[None, :]
        b_ptrs = b_ptr + ((pid // GA) % GB) * BN + rk[:, None] * (GB * BN) + rn[None, :]
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, tl.cdiv(K, BK)):
            a = tl.load(a_ptrs, mask=rk[None, :] < K - k * BK, other=0.0)
            b = tl.load(b_ptrs, mask=rk[:, None] < K - k * BK, other=0.0)
            acc = tl.dot(a, b, acc)
            a_ptrs += BK
            b_ptrs += BK * GB * BN
        tl.store(c_ptr + pid * BM * BN + rm[:, None] * BN + rn[None, :], acc.to(tl.float16))

    @triton.jit
    def piped_rows(x_ptr, out_ptr, n_rows, COLS: tl.constexpr, STAGES: tl.constexpr):
        # `spill_rows` with its row loop software-pipelined STAGES deep (the next rows' loads copied to
        # shared memory while this one is reduced and stored).
        cols = tl.arange(0, COLS)
        for row in tl.range(tl.program_id(0), n_rows, tl.num_programs(0), num_stages=STAGES):
            x = tl.load(x_ptr + row.to(tl.int64) * COLS + cols)
            d = x - tl.sum(x, 0) / COLS
            v = tl.sum(d * d, 0) / COLS
            tl.store(out_ptr + row.to(tl.int64) * COLS + cols, d * tl.rsqrt(v + 1e-5))

    @triton.jit
    def exp_rows(x_ptr, out_ptr, n_rows, COLS: tl.constexpr):
        # `spill_rows` with an exp2 of every value between its two reductions (a row's special-function
        # work as well as its element-wise work): y = e / sum(e), e = exp2(x - mean(x)).
        cols = tl.arange(0, COLS)
        for row in range(tl.program_id(0), n_rows, tl.num_programs(0)):
            x = tl.load(x_ptr + row.to(tl.int64) * COLS + cols)
            e = tl.math.exp2(x - tl.sum(x, 0) / COLS)
            tl.store(out_ptr + row.to(tl.int64) * COLS + cols, e / tl.sum(e, 0))

    @triton.jit
    def heavy_rows(x_ptr, out_ptr, n_rows, n_cols, COLS: tl.constexpr):
        # `exp_rows` with more instructions a value: masked columns (n_cols at run time), the natural exp
        # (its range checks around the exp2) and two divisions a value: y = s / sum(s), s = e / (1 + e),
        # e = exp(x - mean(x)).
        cols = tl.arange(0, COLS)
        mask = cols < n_cols
        for row in range(tl.program_id(0), n_rows, tl.num_programs(0)):
            x = tl.load(x_ptr + row.to(tl.int64) * n_cols + cols, mask=mask, other=0.0)
            e = tl.exp(x - tl.sum(x, 0) / n_cols)
            s = e / (1.0 + e)
            tl.store(out_ptr + row.to(tl.int64) * n_cols + cols, s / tl.sum(tl.where(mask, s, 0.0), 0), mask=mask)

    @triton.jit
    def icache(x_ptr, out_ptr, iters, N: tl.constexpr, BLOCK: tl.constexpr):
        # A loop of 4 x N independent fused multiply-adds (four chains, N unrolled steps each) on one value
        # a thread, no memory inside: its body's SASS grows with N, its work a warp an instruction stays.
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        a = tl.load(x_ptr + offs)
        b = a * 0.5
        c = a * 0.25
        d = a * 0.125
        for _ in range(iters):
            for _j in tl.static_range(N):
                a = a * 0.999 + 0.5
                b = b * 0.998 + 0.25
                c = c * 0.997 + 0.125
                d = d * 0.996 + 0.0625
        tl.store(out_ptr + offs, a + b + c + d)

    @triton.jit
    def mma_tiles_strided(a_ptr, b_ptr, c_ptr, K: tl.constexpr, GA: tl.constexpr, GB: tl.constexpr, BM: tl.constexpr,
                          BN: tl.constexpr, BK: tl.constexpr, CN: tl.constexpr):
        # `mma_tiles` storing its tile where a row-major C of CN columns keeps it (tile row pid // (CN/BN),
        # tile column pid % (CN/BN)), as a matmul does: BN x 2 bytes a row segment, CN x 2 bytes apart,
        # where `mma_tiles` writes each tile contiguously.
        rm = tl.arange(0, BM)
        rn = tl.arange(0, BN)
        rk = tl.arange(0, BK)
        pid = tl.program_id(0)
        a_ptrs = a_ptr + (pid % GA) * BM * K + rm[:, None] * K + rk[None, :]
        b_ptrs = b_ptr + ((pid // GA) % GB) * BN + rk[:, None] * (GB * BN) + rn[None, :]
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for _ in range(K // BK):
            acc = tl.dot(tl.load(a_ptrs), tl.load(b_ptrs), acc)
            a_ptrs += BK
            b_ptrs += BK * GB * BN
        tm, tn = pid // (CN // BN), pid % (CN // BN)
        tl.store(c_ptr + (tm * BM + rm[:, None]).to(tl.int64) * CN + tn * BN + rn[None, :], acc.to(tl.float16))

    return (start_only, mma_loop, l2_read, stream, dram_stream, spill_rows, mma_stream, row_chain, mma_feed, mma_tiles,
            piped_rows, exp_rows, heavy_rows, icache, mma_tiles_masked, mma_tiles_strided, masked_row_chain)


def _ptxas_spills(ptx: str) -> tuple[int, int]:
    """(spill store bytes, spill load bytes) as ptxas -v reports them, as irscope's facts read them."""
    import re
    import tempfile
    from triton.backends.nvidia.compiler import get_ptxas
    arch = re.search(r"\.target\s+(sm_\w+)", ptx).group(1)
    tool = get_ptxas(int(re.match(r"sm_(\d+)", arch).group(1)))
    ptxas = tool.path if hasattr(tool, "path") else tool[0]
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "k.ptx")
        with open(src, "w") as f:
            f.write(ptx)
        out = subprocess.run([ptxas, "-v", f"--gpu-name={arch}", src, "-o", os.path.join(d, "k.o")],
                             capture_output=True, text=True).stderr
    m = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", out)
    return (int(m.group(1)), int(m.group(2))) if m else (-1, -1)


def _spills_of(k) -> dict:
    """ptxas' spill counts of a compiled kernel and where its SASS has them (irscope's own reading)."""
    import tempfile
    from irscope.rank.facts import split_spills
    from triton.backends.nvidia.compiler import get_ptxas
    tool = get_ptxas(90)
    nvdisasm = os.path.join(os.path.dirname(tool.path if hasattr(tool, "path") else tool[0]), "nvdisasm")
    with tempfile.TemporaryDirectory() as d:
        cubin = os.path.join(d, "k.cubin")
        with open(cubin, "wb") as f:
            f.write(k.asm["cubin"])
        sass = subprocess.run([nvdisasm, "-c", "-gi", cubin], capture_output=True, text=True).stdout
    stores, loads = _ptxas_spills(k.asm["ptx"])
    return {"spill_stores": stores, "spill_loads": loads, **split_spills(sass)}


def _bench(fn) -> float:
    import triton
    return float(triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median"))


def one(kind: str, params: list[int]) -> dict:
    """One measurement, in this (child) process."""
    import torch
    (start_only, mma_loop, l2_read, stream, dram_stream, spill_rows, mma_stream, row_chain, mma_feed,
     mma_tiles, piped_rows, exp_rows, heavy_rows, icache, mma_tiles_masked, mma_tiles_strided,
     masked_row_chain) = _kernels()
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    if kind == "start":
        (w,) = params
        n = 1 << 20
        out = torch.empty(n, dtype=torch.int32, device="cuda")
        ms = _bench(lambda: start_only[(n,)](out, num_warps=w))
        return {"warps": w, "ms": ms, "ns_per_program_per_sm": ms * 1e6 * sms / n}
    if kind == "mma":
        warps, bm, bn = params
        bk, iters = 64, 256
        a = torch.randn(bm * bk, device="cuda", dtype=torch.float16)
        b = torch.randn(bk * bn, device="cuda", dtype=torch.float16)
        progs = sms * 4
        c = torch.empty(progs * bm * bn, device="cuda", dtype=torch.float32)
        k = mma_loop.warmup(a, b, c, iters, bm, bn, bk, grid=(progs,), num_warps=warps, num_stages=1)
        ptx = k.asm["ptx"]
        kind_ = "wgmma" if "wgmma" in ptx else ("mma.sync" if "mma.sync" in ptx else "fma")
        ms = _bench(lambda: mma_loop[(progs,)](a, b, c, iters, bm, bn, bk, num_warps=warps, num_stages=1))
        flops = 2 * bm * bn * bk * iters * progs
        return {"warps": warps, "bm": bm, "bn": bn, "bk": bk, "instruction": kind_, "ms": ms,
                "tflops": flops / ms / 1e9, "regs": getattr(k, "n_regs", None)}
    if kind == "l2":
        w, block = params
        span = 2 * 1024 * 1024
        x = torch.randn(span, device="cuda", dtype=torch.float32)
        progs, iters = sms * 8, 512
        o = torch.empty(progs * block, device="cuda", dtype=torch.float32)
        ms = _bench(lambda: l2_read[(progs,)](x, o, span, iters, block, num_warps=w))
        return {"warps": w, "block": block, "ms": ms, "gbs": progs * iters * block * 4 / ms / 1e6}
    if kind == "stream":
        warps, bm, bk, per_sm, stages = params
        bn, tile = 16, bm * bk * 2
        iters = max(64, (8 << 20) // tile)  # 8 MB a program, from a 16 MB buffer: L2-resident on an H100/H200
        x = torch.randn(2 * iters * bm * bk, device="cuda", dtype=torch.float16)
        w_ = torch.randn(bk * bn, device="cuda", dtype=torch.float16)
        progs = sms * per_sm
        o = torch.empty(progs * bm * bn, device="cuda", dtype=torch.float32)
        k = stream.warmup(x, w_, o, iters, bm, bk, bn, grid=(progs,), num_warps=warps, num_stages=stages)
        ttgir = k.asm["ttgir"]
        waits = [line.split("num = ")[1].split(" ")[0] for line in ttgir.splitlines()
                 if "ttg.async_wait" in line and "num = " in line]
        ms = _bench(lambda: stream[(progs,)](x, w_, o, iters, bm, bk, bn, num_warps=warps, num_stages=stages))
        return {"warps": warps, "bm": bm, "bk": bk, "tile_bytes": tile, "programs_per_sm": per_sm,
                "stages": stages, "iters": iters, "ms": ms, "shared": k.metadata.shared,
                "regs": getattr(k, "n_regs", None), "async_wait_num": waits,
                "async_copies": ttgir.count("ttg.async_copy_global_to_local"),
                "ns_per_iteration": ms * 1e6 / iters, "gbs": progs * iters * tile / ms / 1e6}
    if kind == "dram":
        warps, bm, bk, per_sm, stages = params
        bn, tile = 16, bm * bk * 2
        progs = sms * per_sm
        iters = max(16, (1 << 30) // (progs * tile))  # 1 GB in all, each byte read once
        x = torch.randn(progs * iters * bm * bk, device="cuda", dtype=torch.float16)
        w_ = torch.randn(bk * bn, device="cuda", dtype=torch.float16)
        o = torch.empty(progs * bm * bn, device="cuda", dtype=torch.float32)
        k = dram_stream.warmup(x, w_, o, iters, bm, bk, bn, grid=(progs,), num_warps=warps, num_stages=stages)
        ms = _bench(lambda: dram_stream[(progs,)](x, w_, o, iters, bm, bk, bn, num_warps=warps, num_stages=stages))
        return {"warps": warps, "bm": bm, "bk": bk, "tile_bytes": tile, "programs_per_sm": per_sm,
                "stages": stages, "iters": iters, "ms": ms, "shared": k.metadata.shared,
                "ns_per_iteration": ms * 1e6 / iters, "gbs": progs * iters * tile / ms / 1e6}
    if kind in ("spill", "prows"):
        warps, cols, per_sm, stages = (*params, 1) if kind == "spill" else params
        progs = sms * per_sm
        rows = progs * 16
        x = torch.randn(rows * cols, device="cuda", dtype=torch.float32)
        o = torch.empty_like(x)
        if kind == "spill":
            k = spill_rows.warmup(x, o, rows, cols, grid=(progs,), num_warps=warps, num_stages=1)
            ms = _bench(lambda: spill_rows[(progs,)](x, o, rows, cols, num_warps=warps, num_stages=1))
        else:
            k = piped_rows.warmup(x, o, rows, cols, stages, grid=(progs,), num_warps=warps)
            ms = _bench(lambda: piped_rows[(progs,)](x, o, rows, cols, stages, num_warps=warps))
        stores, loads = _ptxas_spills(k.asm["ptx"])
        extra = {"stages": stages, "shared": k.metadata.shared} if kind == "prows" else {}
        return {"warps": warps, "cols": cols, "programs_per_sm": per_sm, "rows": rows, "ms": ms, **extra,
                "regs": getattr(k, "n_regs", None), "local_bytes": getattr(k, "n_spills", None),
                "spill_stores": stores, "spill_loads": loads, "ns_per_row_per_program": ms * 1e6 / 16,
                "gbs": 2 * rows * cols * 4 / ms / 1e6}
    if kind == "frows":
        warps, cols, per_sm, per_program, exp = params
        progs = sms * per_sm
        rows = progs * per_program
        x = torch.randn(rows * cols, device="cuda", dtype=torch.float32)
        o = torch.empty_like(x)
        fn = (spill_rows, exp_rows, heavy_rows)[exp]
        args = (x, o, rows, cols, cols) if exp == 2 else (x, o, rows, cols)
        k = fn.warmup(*args, grid=(progs,), num_warps=warps, num_stages=1)
        ms = _bench(lambda: fn[(progs,)](*args, num_warps=warps, num_stages=1))
        return {"warps": warps, "cols": cols, "programs_per_sm": per_sm, "rows_per_program": per_program,
                "exp": exp, "rows": rows, "ms": ms, "regs": getattr(k, "n_regs", None),
                "local_bytes": getattr(k, "n_spills", None), "gbs": 2 * rows * cols * 4 / ms / 1e6}
    if kind == "icache":
        warps, n = params
        block = 32 * warps
        iters = max(8, (1 << 20) // (4 * n))  # about 1M instructions a warp whatever the body
        x = torch.rand(sms * block, device="cuda", dtype=torch.float32)
        o = torch.empty_like(x)
        k = icache.warmup(x, o, iters, n, block, grid=(sms,), num_warps=warps, num_stages=1)
        ms = _bench(lambda: icache[(sms,)](x, o, iters, n, block, num_warps=warps, num_stages=1))
        return {"warps": warps, "n": n, "iters": iters, "ms": ms, "regs": getattr(k, "n_regs", None),
                "ns_per_iteration": ms * 1e6 / iters}
    if kind in ("loop", "wspill"):
        warps, bm, bn, bk, stages, per_sm, kk = params
        iters = kk // bk
        a = torch.randn(bm * kk, device="cuda", dtype=torch.float16)
        b = torch.randn(kk * bn, device="cuda", dtype=torch.float16)
        progs = sms * per_sm
        c = torch.empty(progs * bm * bn, device="cuda", dtype=torch.float16)
        k = mma_stream.warmup(a, b, c, kk, bm, bn, bk, grid=(progs,), num_warps=warps, num_stages=stages)
        ttgir, ptx = k.asm["ttgir"], k.asm["ptx"]
        ms = _bench(lambda: mma_stream[(progs,)](a, b, c, kk, bm, bn, bk, num_warps=warps, num_stages=stages))
        return {"warps": warps, "bm": bm, "bn": bn, "bk": bk, "stages": stages, "programs_per_sm": per_sm,
                "k": kk, "iters": iters, "ms": ms, "shared": k.metadata.shared, "regs": getattr(k, "n_regs", None),
                "instruction": "wgmma" if "wgmma" in ptx else ("mma.sync" if "mma.sync" in ptx else "fma"),
                "async_copies": ttgir.count("ttg.async_copy_global_to_local"),
                "tflops": 2 * bm * bn * kk * progs / ms / 1e9,
                **(_spills_of(k) if kind == "wspill" else {})}
    if kind == "rows":
        warps, cols, reductions = params
        rows = 16384
        x = torch.randn(rows * cols, device="cuda", dtype=torch.float32)
        o = torch.empty_like(x)
        k = row_chain.warmup(x, o, cols, reductions, grid=(rows,), num_warps=warps, num_stages=1)
        ms = _bench(lambda: row_chain[(rows,)](x, o, cols, reductions, num_warps=warps, num_stages=1))
        return {"warps": warps, "cols": cols, "reductions": reductions, "rows": rows, "ms": ms,
                "regs": getattr(k, "n_regs", None), "local_bytes": getattr(k, "n_spills", None),
                "shared": k.metadata.shared, "gbs": 2 * rows * cols * 4 / ms / 1e6}
    if kind == "mrows":
        warps, n, block, reductions = params
        rows = 16384
        x = torch.randn(rows * n, device="cuda", dtype=torch.float32)
        o = torch.empty_like(x)
        want = x.view(rows, n).clone()
        for _ in range(reductions):
            want = want - want.sum(1, keepdim=True) / n
        k = masked_row_chain.warmup(x, o, n, block, reductions, grid=(rows,), num_warps=warps, num_stages=1)
        masked_row_chain[(rows,)](x, o, n, block, reductions, num_warps=warps, num_stages=1)
        torch.cuda.synchronize()
        err = (o.view(rows, n) - want).abs().max().item()
        ms = _bench(lambda: masked_row_chain[(rows,)](x, o, n, block, reductions, num_warps=warps, num_stages=1))
        return {"warps": warps, "cols": n, "block": block, "reductions": reductions, "rows": rows, "ms": ms,
                "max_abs_err": err, "regs": getattr(k, "n_regs", None), "local_bytes": getattr(k, "n_spills", None),
                "shared": k.metadata.shared, "gbs": 2 * rows * n * 4 / ms / 1e6}
    if kind == "waves":
        # `tiles` (or its masked twin) launched `waves` full waves deep: a program's start, fill and
        # epilogue beside the other programs' loops in the steady state of a many-wave launch
        warps, bm, bn, bk, stages, per_sm, waves, kk, masked = params
        fn = mma_tiles_masked if masked else mma_tiles
        a = torch.randn(TILES_PANELS[0] * bm * kk, device="cuda", dtype=torch.float16)
        b = torch.randn(kk * TILES_PANELS[1] * bn, device="cuda", dtype=torch.float16)
        progs = sms * per_sm * waves
        c = torch.empty(progs * bm * bn, device="cuda", dtype=torch.float16)
        run = (a, b, c, kk, *TILES_PANELS, bm, bn, bk)
        k = fn.warmup(*run, grid=(progs,), num_warps=warps, num_stages=stages)
        ms = _bench(lambda: fn[(progs,)](*run, num_warps=warps, num_stages=stages))
        return {"warps": warps, "bm": bm, "bn": bn, "bk": bk, "stages": stages, "programs_per_sm": per_sm,
                "waves": waves, "k": kk, "masked": masked, "panels": list(TILES_PANELS), "ms": ms,
                "shared": k.metadata.shared, "regs": getattr(k, "n_regs", None),
                "async_copies": k.asm["ttgir"].count("ttg.async_copy_global_to_local"),
                "tflops": 2 * bm * bn * kk * progs / ms / 1e9}
    if kind == "cwaves":
        # a `swaves` row with the output stored into a row-major C 8,192 columns wide (mma_tiles_strided)
        warps, bm, bn, bk, stages, per_sm, waves, kk, _ = params
        cn = 8192
        a = torch.randn(TILES_PANELS[0] * bm * kk, device="cuda", dtype=torch.float16)
        b = torch.randn(kk * TILES_PANELS[1] * bn, device="cuda", dtype=torch.float16)
        progs = sms * per_sm * waves
        rows = -(-progs // (cn // bn)) * bm
        c = torch.empty(rows * cn, device="cuda", dtype=torch.float16)
        run = (a, b, c, kk, *TILES_PANELS, bm, bn, bk, cn)
        k = mma_tiles_strided.warmup(*run, grid=(progs,), num_warps=warps, num_stages=stages)
        ms = _bench(lambda: mma_tiles_strided[(progs,)](*run, num_warps=warps, num_stages=stages))
        return {"warps": warps, "bm": bm, "bn": bn, "bk": bk, "stages": stages, "programs_per_sm": per_sm,
                "waves": waves, "k": kk, "c_columns": cn, "panels": list(TILES_PANELS), "ms": ms,
                "shared": k.metadata.shared, "regs": getattr(k, "n_regs", None),
                "tflops": 2 * bm * bn * kk * progs / ms / 1e9}
    if kind == "clocks":
        # A `waves` row timed as do_bench times it (L2 flushed between launches) for 1.5 s, while
        # nvidia-smi samples the SM clock and the board's power every 20 ms: the clock a launch of that
        # length keeps under load, against the table's 1.83 GHz
        warps, bm, bn, bk, stages, per_sm, waves, kk, masked = params
        a = torch.randn(TILES_PANELS[0] * bm * kk, device="cuda", dtype=torch.float16)
        b = torch.randn(kk * TILES_PANELS[1] * bn, device="cuda", dtype=torch.float16)
        progs = sms * per_sm * waves
        c = torch.empty(progs * bm * bn, device="cuda", dtype=torch.float16)
        run = (a, b, c, kk, *TILES_PANELS, bm, bn, bk)
        mma_tiles.warmup(*run, grid=(progs,), num_warps=warps, num_stages=stages)
        import triton
        smi = subprocess.Popen(["nvidia-smi", "--query-gpu=clocks.sm,power.draw,temperature.gpu",
                                "--format=csv,noheader,nounits", "-lms", "20"], stdout=subprocess.PIPE, text=True)
        time.sleep(0.3)
        ms = float(triton.testing.do_bench(lambda: mma_tiles[(progs,)](*run, num_warps=warps, num_stages=stages),
                                           warmup=200, rep=1500, return_mode="median"))
        smi.terminate()
        out, _ = smi.communicate()
        samples = [[float(x) for x in line.split(",")] for line in out.splitlines() if line.count(",") == 2]
        busy = [s for s in samples[15:]] or samples  # after the first 0.3 s (idle) on
        mhz = sorted(s[0] for s in busy)
        watts = sorted(s[1] for s in busy)
        return {"warps": warps, "bm": bm, "bn": bn, "bk": bk, "stages": stages, "programs_per_sm": per_sm,
                "waves": waves, "k": kk, "ms": ms, "samples": len(busy), "idle_mhz": samples[0][0] if samples else None,
                "sm_mhz_median": mhz[len(mhz) // 2] if mhz else None, "sm_mhz_min": mhz[0] if mhz else None,
                "power_w_median": watts[len(watts) // 2] if watts else None,
                "temperature_c_last": busy[-1][2] if busy else None}
    if kind in ("feed", "tiles"):
        # feed: A panel p % 16 and one shared B; tiles: A panel p % 8 and B panel (p // 8) % 32
        warps, bm, bn, bk, stages, per_sm = params
        fn, kk, panels = (mma_feed, LOOP_K, (FEED_PANELS,)) if kind == "feed" else (mma_tiles, TILES_K, TILES_PANELS)
        a = torch.randn(panels[0] * bm * kk, device="cuda", dtype=torch.float16)
        b = torch.randn(kk * (panels[1] if kind == "tiles" else 1) * bn, device="cuda", dtype=torch.float16)
        progs = sms * per_sm
        c = torch.empty(progs * bm * bn, device="cuda", dtype=torch.float16)
        k = fn.warmup(a, b, c, kk, *panels, bm, bn, bk, grid=(progs,), num_warps=warps, num_stages=stages)
        ms = _bench(lambda: fn[(progs,)](a, b, c, kk, *panels, bm, bn, bk, num_warps=warps, num_stages=stages))
        copied = progs * kk * (bm + bn) * 2
        return {"warps": warps, "bm": bm, "bn": bn, "bk": bk, "stages": stages, "programs_per_sm": per_sm,
                "k": kk, "panels": panels[0] if kind == "feed" else list(panels), "ms": ms,
                "shared": k.metadata.shared, "regs": getattr(k, "n_regs", None),
                "async_copies": k.asm["ttgir"].count("ttg.async_copy_global_to_local"),
                "tflops": 2 * bm * bn * kk * progs / ms / 1e9, "gbs": copied / ms / 1e6,
                "bytes_per_clk_per_sm_at_1.83": copied / (ms * 1e-3) / sms / 1.83e9}
    raise ValueError(kind)


def serve(items: list[list]) -> None:
    """Child: measure each (kind, params...) in turn, one RESULT line each, as they finish."""
    for kind, *params in items:
        try:
            row = one(kind, [int(v) for v in params])
        except Exception as e:  # noqa: BLE001 - a shape that fails is a result
            row = {"params": params, "error": f"{type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}"}
        print("RESULT " + json.dumps({"kind": kind, **row}), flush=True)


def _line(xs: list[float], ys: list[float]) -> tuple[float, float]:
    """Least squares: (intercept, slope)."""
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    return my - slope * mx, slope


def fit_dram(doc: dict) -> dict:
    """Model 4's DRAM figures from a run's `dram` rows (cycles at the table's 1.83 GHz): one program an SM,
    the time an iteration against its tile's bytes, a line each at 2 stages (copies one iteration ahead:
    `dram_copy_latency` + bytes / `dram_copy_bytes_clk`) and at 1 (synchronous loads: `dram_load_*`), and
    the most GB/s any row reached (`dram_gbs`)."""
    rows = [r for r in doc.get("dram", []) if "error" not in r]
    out = {"gpu": doc.get("gpu"), "rows": len(rows)}
    for stages, name in ((2, "copy"), (1, "load")):
        one = [r for r in rows if r["programs_per_sm"] == 1 and r["stages"] == stages]
        latency, slope = _line([r["tile_bytes"] for r in one], [r["ns_per_iteration"] * 1.83 for r in one])
        out[f"dram_{name}_latency"], out[f"dram_{name}_bytes_clk"] = round(latency, 1), round(1 / slope, 2)
    out["dram_gbs"] = round(max(r["gbs"] for r in rows), 1)
    return out


def fit_loop(doc: dict) -> dict:
    """Model 5's figures from a run's `loop` rows (cycles at the table's clock):

    - per shape at BK 64, one program an SM: time = a + iterations x b (least squares over K 256-4096);
      the intercept a is what a launch and a program pay once: the launch, the pipeline's fill (the first
      tile's copy, at model 3's loaded latency) and the epilogue (the output tile's store);
      `a - fill = launch + output bytes / epilogue rate` over the shapes gives both (least squares);
    - at K 4096, one program an SM, every BK: an iteration's time beyond that fixed part; where it is
      over 1.15x the matrix work (at model 3's wgmma rates), the loop waits for its copies, two
      iterations ahead at 3 stages: latency = 2 x the iteration's time, a straight line in the tile's
      bytes (least squares).
    The model-3 figures and the clock are chips.py's own (this runs here, where irscope is installed)."""
    from irscope.rank.chips import CHIPS, H200_MEASURED_3 as m3
    h200 = CHIPS["h200"]
    clk = h200.clock_ghz * 1e3  # cycles a microsecond
    copy = (m3.copy_latency, m3.copy_bytes_clk)
    rows = [r for r in doc.get("loop", []) if "error" not in r]
    shapes: dict = {}
    for r in rows:
        if r["programs_per_sm"] == 1 and r["bk"] == 64:
            shapes.setdefault((r["warps"], r["bm"], r["bn"]), []).append((r["iters"], r["ms"] * 1e3))
    xs, ys = [], []
    for (_, bm, bn), pts in sorted(shapes.items()):
        if len(pts) >= 3:
            a, _ = _line([p[0] for p in pts], [p[1] for p in pts])
            xs.append(bm * bn * 2)
            ys.append(a - (copy[0] + (bm + bn) * 64 * 2 / copy[1]) / clk)
    launch_us, us_per_byte = _line(xs, ys)
    epilogue = 1.0 / (us_per_byte * clk)

    waits = []
    for r in rows:
        if r["programs_per_sm"] != 1 or r["k"] != LOOP_K:
            continue
        bm, bn, bk = r["bm"], r["bn"], r["bk"]
        tile = (bm + bn) * bk * 2
        fixed = launch_us + (copy[0] + tile / copy[1]) / clk + bm * bn * 2 / epilogue / clk
        per = (r["ms"] * 1e3 - fixed) * clk / r["iters"]
        if per > 1.15 * 2 * bm * bn * bk / (h200.mma_rate("fp16", "wgmma") * m3.mma("wgmma", bn)):
            waits.append((tile, 2 * per))
    lat, per_byte = _line([w[0] for w in waits], [w[1] for w in waits])
    return {"launch_us": round(launch_us, 2), "epilogue_bytes_clk": round(epilogue, 2),
            "loop_copy_latency": round(lat, 1), "loop_copy_bytes_clk": round(1.0 / per_byte, 2),
            "latency_rows": len(waits), "shapes": len(xs)}


def _most_fed(doc: dict, kind: str) -> dict:
    """The most bytes a clock an SM that a run's `kind` rows' copies reached (cycles at 1.83 GHz)."""
    rows = [r for r in doc.get(kind, []) if "error" not in r]
    best = max(rows, key=lambda r: r["bytes_per_clk_per_sm_at_1.83"])
    return {"l2_bytes_clk": round(best["bytes_per_clk_per_sm_at_1.83"], 1), "rows": len(rows),
            "at": [best[k] for k in ("warps", "bm", "bn", "bk", "stages", "programs_per_sm")]}


def fit_feed(doc: dict) -> dict:
    """Model 6's L2 feed: the most the `feed` rows' copies reached, as model 3's 79.1 was the most the
    one-buffer `stream` reached."""
    return _most_fed(doc, "feed")


def fit_tiles(doc: dict) -> dict:
    """The most bytes a clock an SM that the `tiles` rows' copies reached (cycles at the table's 1.83 GHz),
    the rule model 6 applied to the `feed` rows, where every program shared B (52.4 here, 52.9 there:
    a wave of distinct tiles is fed no slower at best, and model 8 keeps model 6's figure)."""
    return _most_fed(doc, "tiles")


def _matrix_point(kind: str, r: dict) -> tuple[dict, tuple]:
    ce = {"K": r["k"], "BM": r["bm"], "BN": r["bn"], "BK": r["bk"]}
    if kind == "feed":
        ce["G"] = r["panels"]
    if kind in ("tiles", "waves"):
        ce["GA"], ce["GB"] = r["panels"]
    from irscope.spec.kernel import Tensor
    ptrs = tuple((n, Tensor("fp16")) for n in ("a_ptr", "b_ptr", "c_ptr"))
    if r.get("masked"):  # mma_tiles_masked: K is a run-time argument
        return {k: v for k, v in ce.items() if k != "K"}, ptrs + (("K", r["k"]),)
    return ce, ptrs


def _matrix_problem(kind: str, r: dict, sms: int) -> dict:
    programs = sms * r["programs_per_sm"] * r.get("waves", 1)
    tiled = kind in ("tiles", "waves")
    ga, gb = r["panels"] if tiled else (r.get("panels", 1), 1)
    # the panels the programs touch: A's p % ga, B's (p // ga) % gb (feed and loop: one B)
    ga, gb = min(ga, programs), min(gb, -(-programs // ga)) if tiled else gb
    least = ga * r["bm"] * r["k"] * 2 + r["k"] * gb * r["bn"] * 2 + programs * r["bm"] * r["bn"] * 2
    return {"programs": programs, "flops": 2 * r["bm"] * r["bn"] * r["k"] * programs, "min_bytes": least}


def _rows_point(kind: str, r: dict) -> tuple[dict, tuple]:
    # spill_rows(x_ptr, out_ptr, n_rows, COLS), exp_rows (the same), heavy_rows(..., n_rows, n_cols, COLS)
    # and piped_rows(..., STAGES): fp32 rows, n_rows as the run launched it
    from irscope.spec.kernel import Tensor
    ce = {"COLS": r["cols"], **({"STAGES": r["stages"]} if kind == "prows" else {})}
    cols = (("n_cols", r["cols"]),) if r.get("exp") == 2 else ()  # heavy_rows: the row length at run time
    return ce, (("x_ptr", Tensor("fp32")), ("out_ptr", Tensor("fp32")), ("n_rows", r["rows"])) + cols


def _rows_problem(kind: str, r: dict, sms: int) -> dict:
    # spill, prows and frows: a persistent grid of programs_per_sm an SM; rows: one program a row
    programs = r["rows"] if kind in ("rows", "mrows") else sms * r["programs_per_sm"]
    return {"programs": programs, "flops": 0.0, "min_bytes": 2 * r["rows"] * r["cols"] * 4}


def _mchain_point(kind: str, r: dict) -> tuple[dict, tuple]:
    # masked_row_chain(x_ptr, out_ptr, n_cols, COLS, R): one fp32 row of n_cols in a block of COLS
    from irscope.spec.kernel import Tensor
    return {"COLS": r["block"], "R": r["reductions"]}, (("x_ptr", Tensor("fp32")), ("out_ptr", Tensor("fp32")),
                                                       ("n_cols", r["cols"]))


def _chain_point(kind: str, r: dict) -> tuple[dict, tuple]:
    # row_chain(x_ptr, out_ptr, COLS, R): one fp32 row a program, R chained reductions
    from irscope.spec.kernel import Tensor
    return {"COLS": r["cols"], "R": r["reductions"]}, (("x_ptr", Tensor("fp32")), ("out_ptr", Tensor("fp32")))


MATRIX_LOOPS = {"loop": "mma_stream", "feed": "mma_feed", "tiles": "mma_tiles"}
# (not a default --kinds: the `waves` run came after model 11; --kinds waves reads it)
WAVES_PARAMS = ("warps", "bm", "bn", "bk", "stages", "programs_per_sm", "waves", "k", "masked")
WAVES_KERNEL = lambda r: "mma_tiles_masked" if r.get("masked") else "mma_tiles"  # noqa: E731
# The calibration kernels whose facts a model can be checked on: kind -> (kernel, point, problem).
FACT_KINDS = {**{k: (fn, _matrix_point, _matrix_problem) for k, fn in MATRIX_LOOPS.items()},
              "spill": ("spill_rows", _rows_point, _rows_problem), "prows": ("piped_rows", _rows_point, _rows_problem),
              "rows": ("row_chain", _chain_point, _rows_problem),
              "mrows": ("masked_row_chain", _mchain_point, _rows_problem),
              "waves": (WAVES_KERNEL, _matrix_point, _matrix_problem),
              "frows": (lambda r: ("spill_rows", "exp_rows", "heavy_rows")[r["exp"]], _rows_point, _rows_problem)}
# The num_stages each kind's kernels were launched with (prows: the launch's default; tl.range sets its loop's)
LAUNCH_STAGES = {"spill": 1, "prows": 3, "frows": 1}


def write_kernel_module(path: str) -> str:
    """The calibration's kernels as a module of top-level @triton.jit functions at `path` (`irscope
    compile PATH:mma_tiles` compiles one here, as the device's JIT compiled it); returns `path`."""
    with open(path, "w") as f:
        f.write("import triton\nimport triton.language as tl\n\n")
        for k in _kernels():
            f.write("\n@triton.jit\n" + k.src.strip() + "\n")
    return path


SOFT_GRID = [x / 2 for x in range(6, 33)]  # exponents 3, 3.5, ... 16


def facts_of_runs(runs: list[dict], workdir: str, kinds=tuple(MATRIX_LOOPS)) -> dict:
    """Every row of these calibration runs of the given kinds (the matrix loops `loop`, `feed` and `tiles`
    by default; `spill` and `prows`, the persistent row normalisation unpipelined and pipelined; `rows`,
    the one-row programs) with its compile facts: each kernel compiled
    here by irscope for sm_90a under the Triton release the run used (so the facts are those of the
    binary that was timed), with the problem it ran (programs, flops, least bytes)."""
    from irscope.harness.batch import Point, compile_points
    from irscope.rank import facts_of
    from irscope.spec.kernel import CompileOptions
    from irscope.store.snapshot import load_snapshot

    src = write_kernel_module(os.path.join(workdir, "calibration_kernels.py"))
    rows = []
    for run in runs:
        for kind in kinds:
            fn, point_of, _ = FACT_KINDS[kind]
            for r in run.get(kind, []):
                if "error" in r:
                    continue
                ce, args = point_of(kind, r)
                opts = CompileOptions(num_warps=r["warps"], num_stages=LAUNCH_STAGES.get(kind, r.get("stages", 1)),
                                      constexprs=tuple(ce.items()), args=args)
                name = fn(r) if callable(fn) else fn
                rows.append((run, kind, r, Point(f"{src}:{name}", "sm_90a", opts, run["triton"])))
    points = list(dict.fromkeys(p for *_, p in rows))
    outcomes = {o.point: o for o in compile_points(points, os.path.join(workdir, "snapshots"))}
    out = []
    for run, kind, r, point in rows:
        o = outcomes[point]
        if o.path is None:
            raise SystemExit(f"rank_calibrate: {kind} {r} did not compile: {o.error}")
        out.append({"kind": kind, "run": run["started"], "ms": r["ms"], "facts": facts_of(load_snapshot(o.path)).as_dict(),
                    "problem": FACT_KINDS[kind][2](kind, r, run["sms"]),
                    **({"params": {k: v for k, v in r.items() if k in WAVES_PARAMS}} if kind == "waves" else {})})
    chips = {"h100" if "H100" in run.get("gpu", "") else "h200" for run in runs}
    if len(chips) != 1:
        raise SystemExit(f"rank_calibrate: runs of {len(chips) or 'no'} chips ({', '.join(sorted(chips))}): one at a time")
    return {"gpu": chips.pop(), "target": "sm_90a", "runs": [run["started"] for run in runs], "rows": out}


def fit_soft(doc: dict) -> dict:
    """Model 8's exponent: the p of the grid (3 to 16 by 0.5) at which model 8 predicts the calibration's
    matrix loops best (least root-mean-square log error of the time, over every row of a facts file that
    `--facts-of` made from the `loop`, `feed` and `tiles` runs)."""
    import dataclasses
    import math

    from irscope.rank import estimate
    from irscope.rank.chips import CHIPS
    from irscope.rank.facts import Facts
    from irscope.spec.problem import Problem

    h200 = CHIPS["h200"]
    rows = [(Facts.from_dict(r["facts"]), Problem("calibration", "", {}, (r["problem"]["programs"],),
                                                  r["problem"]["flops"], r["problem"]["min_bytes"]), r["ms"])
            for r in doc["rows"]]

    def rms(p):
        chip = dataclasses.replace(h200, measured_8=dataclasses.replace(h200.measured_8, soft_p=p))
        errs = [math.log(estimate(f, pr, chip, 8).ms / ms) for f, pr, ms in rows]
        return math.sqrt(sum(e * e for e in errs) / len(errs))

    each = {p: rms(p) for p in SOFT_GRID}
    best = min(each, key=each.get)
    return {"soft_p": best, "rms_log_error": round(each[best], 5), "rms_log_error_hard_max": round(rms(None), 5),
            "rows": len(rows)}


def check_chain(doc: dict) -> dict:
    """Models 8 to 11 on the row loops of a --facts-of file (--kinds spill,prows: the persistent row
    normalisation, 1-16 warps, 1-4 programs an SM, rows of 2,048-16,384 fp32, its loop at 1-3 stages;
    --kinds frows: 2-16 rows a program): the root-mean-square log error of the predicted time, over all
    rows and over those with one program an SM, where a program's own chain sets the pace (model 9
    counts its stores, its copies' bytes and its own warps' issue there, and hides a copy's fixed
    latency only behind the iterations between; model 11 its warps' SASS instructions)."""
    import math

    from irscope.rank import estimate
    from irscope.rank.chips import CHIPS
    from irscope.rank.facts import Facts
    from irscope.spec.problem import Problem

    h200 = CHIPS["h200"]
    rows = [r for r in doc["rows"] if r["kind"] in ("spill", "prows", "frows")]

    def rms(model, which):
        errs = []
        for r in which:
            p = r["problem"]
            problem = Problem("calibration", "", {}, (p["programs"],), p["flops"], p["min_bytes"])
            errs.append(math.log(estimate(Facts.from_dict(r["facts"]), problem, h200, model).ms / r["ms"]))
        return round(math.sqrt(sum(e * e for e in errs) / len(errs)), 4) if errs else None

    alone = [r for r in rows if r["problem"]["programs"] == h200.sms]
    out = {"rows": len(rows), "one_program_an_sm": len(alone)}
    for model in (8, 9, 10, 11):
        out[f"rms_log_error_{model}"] = rms(model, rows)
        out[f"rms_log_error_{model}_alone"] = rms(model, alone)
    return out


def check_short_k(docs: list[dict], model: int = 15) -> dict:
    """`model` on the unmasked `waves` rows of --facts-of files (--kinds waves: the `waves` run's K 1,024
    and 2,048, the `swaves` run's 256 and 512), launched 4 or 16 waves deep: the mean log error (measured
    over predicted) by K and programs an SM (positive: the GPU took longer than the model says), and per
    shape what a 16-wave launch pays a wave beyond its iterations, on the GPU and in the model."""
    import math

    from irscope.rank import estimate
    from irscope.rank.chips import CHIPS
    from irscope.rank.facts import Facts
    from irscope.spec.problem import Problem

    h200 = CHIPS["h200"]
    groups: dict = {}
    per_wave: dict = {}  # (shape): {K: (GPU us a wave, model us a wave)} at 16 waves
    for doc in docs:
        for r in doc["rows"]:
            q = r.get("params", {})
            if r["kind"] != "waves" or q.get("masked") or q.get("waves", 1) < 4:
                continue
            p, f = r["problem"], Facts.from_dict(r["facts"])
            problem = Problem("calibration", "", {}, (p["programs"],), p["flops"], p["min_bytes"])
            ms = estimate(f, problem, h200, model).ms
            per_sm = q["programs_per_sm"]
            name = f"K={q['k']}, {per_sm} program{'s' if per_sm != 1 else ''}/SM"
            groups.setdefault((q["k"], per_sm), (name, []))[1].append(math.log(r["ms"] / ms))
            if q["waves"] == 16:
                shape = (per_sm, q["warps"], q["bm"], q["bn"], q["bk"], q["stages"])
                per_wave.setdefault(shape, {})[q["k"]] = (r["ms"] * 1e3 / 16, ms * 1e3 / 16)
    out = {name: {"rows": len(e), "mean_log_error": round(sum(e) / len(e), 4)}
           for _, (name, e) in sorted(groups.items())}
    # What a wave pays beyond its iterations: the intercept of its time, a straight line through K 256
    # and 512 (16 waves deep), on the GPU and in the model
    out["fixed_us_a_wave"] = {
        f"w{w}.s{st}.{bm}x{bn}x{bk}, {b}/SM": {"gpu": round(2 * t[256][0] - t[512][0], 2),
                                               "model": round(2 * t[256][1] - t[512][1], 2)}
        for (b, w, bm, bn, bk, st), t in sorted(per_wave.items()) if 256 in t and 512 in t}
    return out


def strided_outputs(run: dict) -> dict:
    """A run of `--only waves,swaves,cwaves`: per shape and K, the time of the tile stored into a row-major C
    (`cwaves`) over the same launch storing it contiguously (`waves`/`swaves` rows of that run)."""
    def key(r: dict) -> tuple:
        return tuple(r[k] for k in ("warps", "bm", "bn", "bk", "stages", "programs_per_sm", "waves", "k"))

    contiguous = {key(r): r["ms"] for r in run.get("waves", []) if "ms" in r and not r.get("masked")}
    out = {}
    for r in run.get("cwaves", []):
        if "ms" in r and key(r) in contiguous:
            name = f"w{r['warps']}.s{r['stages']}.{r['bm']}x{r['bn']}x{r['bk']} K={r['k']}"
            out[name] = round(r["ms"] / contiguous[key(r)], 3)
    return out


def check_waves(doc: dict, clocks: list[dict]) -> dict:
    """Model 11 on the `waves` rows of a --facts-of file (--kinds waves): the mean and root-mean-square
    log error of the predicted time by the launch's waves (1, 4, 16), and on the rows of `clocks` runs
    (their times with the SM clock nvidia-smi sampled while they ran), the same error in cycles: each
    row's time at the clock it kept against the model's at the table's clock."""
    import math

    from irscope.rank import estimate
    from irscope.rank.chips import CHIPS
    from irscope.rank.facts import Facts
    from irscope.spec.problem import Problem

    h200 = CHIPS["h200"]

    def key(r: dict) -> tuple:
        return tuple(r[k] for k in ("warps", "bm", "bn", "bk", "stages", "programs_per_sm", "waves", "k"))

    predicted, by_waves = {}, {}
    for r in doc["rows"]:
        if r["kind"] != "waves":
            continue
        p, f = r["problem"], Facts.from_dict(r["facts"])
        ms = estimate(f, Problem("calibration", "", {}, (p["programs"],), p["flops"], p["min_bytes"]), h200, 11).ms
        if not r["params"]["masked"]:
            predicted[key(r["params"])] = ms
        w = r["params"]["waves"]
        name = f"{w}_waves_masked" if r["params"]["masked"] else f"{w}_waves"
        by_waves.setdefault(name, []).append(math.log(ms / r["ms"]))

    def figures(errs: list[float]) -> dict:
        return {"rows": len(errs), "mean_log_error": round(sum(errs) / len(errs), 4),
                "rms_log_error": round(math.sqrt(sum(e * e for e in errs) / len(errs)), 4)}

    out = {w: figures(e) for w, e in sorted(by_waves.items(), key=lambda kv: (len(kv[0]), kv[0]))}
    clock_ghz = h200.clock_ghz
    timed, cycles = [], []
    for run in clocks:
        for r in run.get("clocks", []):
            if "error" in r or key(r) not in predicted:
                continue
            ms = predicted[key(r)]
            timed.append(math.log(ms / r["ms"]))
            cycles.append(math.log(ms * clock_ghz * 1e3 / (r["ms"] * r["sm_mhz_median"])))
    if timed:
        out["clocked_rows_in_time"] = figures(timed)
        out["clocked_rows_in_cycles"] = figures(cycles)
    return out


POWER_GRID = {"power_bytes_flops": (0, 5, 10, 15, 20, 25, 30, 40, 60),
              "power_exponent": (1.0, 1.25, 1.5, 2.0, 2.5, 3.0, 4.0),
              "power_activity": tuple(range(3000, 8000, 100)),
              "power_ramp_us": (10, 25, 50, 75, 100, 150, 200, 300, 500)}
BOOST_GHZ = 1.98  # the SM clock nvidia-smi saw under one-wave launches (docs/rank/calibrate-h200-v15.json)


def fit_power(docs: list[dict], model: int = 12) -> dict:
    """Model 12's figures (or 13's: the same with a launch's copies counted once): on POWER_GRID, the
    least root-mean-square log error of the model's time over the matrix-loop rows of these --facts-of
    files (the `waves` run's and the `loop`, `feed` and `tiles` runs'): model 11's estimate of each, at the
    clock the model gives its launch."""
    import dataclasses
    import itertools
    import math

    from irscope.rank import estimate
    from irscope.rank.chips import CHIPS
    from irscope.rank.facts import Facts
    from irscope.rank.model import activity, clock_factor
    from irscope.spec.problem import Problem

    h200 = CHIPS["h200"]
    rows = []
    for doc in docs:
        for r in doc["rows"]:
            p, f = r["problem"], Facts.from_dict(r["facts"])
            problem = Problem("calibration", "", {}, (p["programs"],), p["flops"], p["min_bytes"])
            ms = estimate(f, problem, h200, 11).ms
            once = model >= 13
            flops, per_byte = activity(f, problem, h200, ms, 0.0, once), activity(f, problem, h200, ms, 1.0, once)
            rows.append((ms, flops, per_byte - flops, r["ms"]))

    def rms(m) -> float:
        errs = [math.log(ms * clock_factor(a + m.power_bytes_flops * b, ms, m)[0] / t) for ms, a, b, t in rows]
        return math.sqrt(sum(e * e for e in errs) / len(errs))

    base = dataclasses.replace(h200.measured_11, boost_ghz=BOOST_GHZ)
    best, best_rms = None, float("inf")
    for values in itertools.product(*POWER_GRID.values()):
        m = dataclasses.replace(base, **dict(zip(POWER_GRID, values)))
        e = rms(m)
        if e < best_rms:
            best, best_rms = m, e
    model_11 = math.sqrt(sum(math.log(ms / t) ** 2 for ms, _, _, t in rows) / len(rows))
    return {**{k: getattr(best, k) for k in POWER_GRID}, "boost_ghz": BOOST_GHZ, "rows": len(rows),
            "rms_log_error": round(best_rms, 4), "rms_log_error_11": round(model_11, 4)}


WAIT_GRID = range(0, 61)  # cycles a scoreboard wait adds (model 14)


def fit_waits(docs: list[dict]) -> dict:
    """Model 14's figure: on WAIT_GRID, the clocks a wait on a scoreboard adds to what a warp's SASS
    stalls it, at the least root-mean-square log error of model 14's time over the row kernels of these
    --facts-of files (the `spill`, `prows` and `frows` row loops and the `rows` run's one-row programs:
    kernels of our own, none of the evaluation's), with model 11's error beside it."""
    import dataclasses
    import math

    from irscope.rank import estimate
    from irscope.rank.chips import CHIPS
    from irscope.rank.facts import Facts
    from irscope.spec.problem import Problem

    h200 = CHIPS["h200"]
    rows = []
    for doc in docs:
        for r in doc["rows"]:
            if r["kind"] not in ("spill", "prows", "frows", "rows"):
                continue
            p, f = r["problem"], Facts.from_dict(r["facts"])
            if f.loop_stall_cycles < 0:
                raise SystemExit(f"rank_calibrate: {f.label} has no stall cycles: its facts predate model 14 "
                                 f"(make them again with --facts-of)")
            rows.append((f, Problem("calibration", "", {}, (p["programs"],), p["flops"], p["min_bytes"]), r["ms"]))

    def rms(chip, model) -> float:
        errs = [math.log(estimate(f, problem, chip, model).ms / ms) for f, problem, ms in rows]
        return math.sqrt(sum(e * e for e in errs) / len(errs))

    best, best_rms = None, float("inf")
    for w in WAIT_GRID:
        chip = dataclasses.replace(h200, measured_14=dataclasses.replace(h200.measured_13, wait_cycles=float(w)))
        e = rms(chip, 14)
        if e < best_rms:
            best, best_rms = w, e
    return {"wait_cycles": best, "rows": len(rows), "rms_log_error": round(best_rms, 4),
            "rms_log_error_11": round(rms(h200, 11), 4)}


REPS_GRID = [x / 200 for x in range(140, 201)]  # the fraction of wgmma's rate, 0.70 to 1.00 (model 15)
MATRIX_KINDS = ("loop", "feed", "tiles", "waves")


def fit_reps(docs: list[dict]) -> dict:
    """Model 15's figure: on REPS_GRID, the fraction of wgmma's measured rate a warpgroup reaches when it
    repeats its instruction down M, at the least root-mean-square log error of model 15's time over the
    matrix loops of these --facts-of files (the `loop`, `feed`, `tiles` and `waves` runs: kernels of our
    own, none of the evaluation's), with model 14's error beside it and each model's mean log error
    (measured over predicted) over the rows of one repetition and of two."""
    import dataclasses
    import math

    from irscope.rank import estimate
    from irscope.rank.chips import CHIPS
    from irscope.rank.facts import Facts
    from irscope.spec.problem import Problem

    h200 = CHIPS["h200"]
    rows = []
    for doc in docs:
        for r in doc["rows"]:
            if r["kind"] not in MATRIX_KINDS:
                continue
            p, f = r["problem"], Facts.from_dict(r["facts"])
            if f.instruction == "wgmma" and f.mma_m_reps < 1:
                raise SystemExit(f"rank_calibrate: {f.label} has no wgmma repetitions: its facts predate model 15 "
                                 f"(make them again with --facts-of)")
            rows.append((f, Problem("calibration", "", {}, (p["programs"],), p["flops"], p["min_bytes"]), r["ms"]))

    def errors(chip, model) -> list[float]:
        return [math.log(ms / estimate(f, problem, chip, model).ms) for f, problem, ms in rows]

    def rms(errs) -> float:
        return math.sqrt(sum(e * e for e in errs) / len(errs))

    best, best_rms = None, float("inf")
    for x in REPS_GRID:
        chip = dataclasses.replace(h200, measured_15=dataclasses.replace(h200.measured_14, mma_reps_fraction=x))
        e = rms(errors(chip, 15))
        if e < best_rms:
            best, best_rms = x, e
    chip = dataclasses.replace(h200, measured_15=dataclasses.replace(h200.measured_14, mma_reps_fraction=best))
    by_reps = {}
    for model, errs in ((14, errors(h200, 14)), (15, errors(chip, 15))):
        for reps in sorted({f.mma_m_reps for f, _, _ in rows}):
            mine = [e for e, (f, _, _) in zip(errs, rows) if f.mma_m_reps == reps]
            by_reps[f"model {model}, {reps} repetition{'s' if reps != 1 else ''}"] = \
                {"rows": len(mine), "mean_log_error": round(sum(mine) / len(mine), 4)}
    return {"mma_reps_fraction": best, "rows": len(rows), "rms_log_error": round(best_rms, 4),
            "rms_log_error_14": round(rms(errors(h200, 14)), 4), "by_repetitions": by_reps}


LOCKSTEP_GRID = [x / 20 for x in range(0, 21)]  # the fraction of a wave's output stores it waits for (model 16)


def fit_lockstep(docs: list[dict]) -> dict:
    """Model 16's figure: on LOCKSTEP_GRID, the fraction of a wave's output stores (at the epilogue rate)
    that each wave of a loop that multiplies waits for, at the least root-mean-square log error of model
    16's time over the matrix loops of these --facts-of files (the `loop`, `feed`, `tiles`, `waves` and
    `swaves` runs: kernels of our own), with model 15's error beside it, over all of them and over the
    short ones (K 256 and 512, the `swaves` run)."""
    import dataclasses
    import math

    from irscope.rank import estimate
    from irscope.rank.chips import CHIPS
    from irscope.rank.facts import Facts
    from irscope.spec.problem import Problem

    h200 = CHIPS["h200"]
    rows = []
    for doc in docs:
        for r in doc["rows"]:
            if r["kind"] not in MATRIX_KINDS:
                continue
            p, f = r["problem"], Facts.from_dict(r["facts"])
            short = r.get("params", {}).get("k", 4096) <= 512
            rows.append((f, Problem("calibration", "", {}, (p["programs"],), p["flops"], p["min_bytes"]), r["ms"], short))

    def rms(chip, model, only_short=False) -> float:
        errs = [math.log(estimate(f, problem, chip, model).ms / ms) for f, problem, ms, short in rows
                if short or not only_short]
        return math.sqrt(sum(e * e for e in errs) / len(errs))

    def chip_at(x: float):
        return dataclasses.replace(h200, measured_16=dataclasses.replace(h200.measured_15, wave_store_fraction=x))

    best, best_rms = None, float("inf")
    for x in LOCKSTEP_GRID:
        e = rms(chip_at(x), 16)
        if e < best_rms:
            best, best_rms = x, e
    return {"wave_store_fraction": best, "rows": len(rows), "short_rows": sum(r[3] for r in rows),
            "rms_log_error": round(best_rms, 4), "rms_log_error_15": round(rms(h200, 15), 4),
            "short_rms_log_error": round(rms(chip_at(best), 16, True), 4),
            "short_rms_log_error_15": round(rms(h200, 15, True), 4)}


ROW_LATENCY_GRID = range(800, 2600, 50)  # cycles
WARP_REDUCE_GRID = range(0, 1600, 25)  # cycles


def fit_rows(doc: dict, model: int = 10, gpu: str = "h200") -> dict:
    """Model 10's two figures (or model 11's, the same two under its SASS issue): the latency a program
    without a loop waits for its loads from DRAM, and what each reduction across its warps costs it, at
    the grid point where the model predicts the `rows` run's one-row programs best (least RMS log error
    of the time over the rows of a --facts-of --kinds rows file); the model before's error beside it.
    `gpu`: the chip the run was on, whose other figures (its DRAM's) the fit keeps."""
    import dataclasses
    import math

    from irscope.rank import estimate
    from irscope.rank.chips import CHIPS
    from irscope.rank.facts import Facts
    from irscope.spec.problem import Problem

    h200 = CHIPS[gpu]  # (the H200 unless --gpu says otherwise)
    rows = [(Facts.from_dict(r["facts"]), Problem("calibration", "", {}, (r["problem"]["programs"],),
                                                  r["problem"]["flops"], r["problem"]["min_bytes"]), r["ms"])
            for r in doc["rows"] if r["kind"] == "rows"]

    def rms(chip, model):
        errs = [math.log(estimate(f, p, chip, model).ms / ms) for f, p, ms in rows]
        return math.sqrt(sum(e * e for e in errs) / len(errs))

    def with_(latency, reduce):
        return dataclasses.replace(h200, **{f"measured_{model}": dataclasses.replace(
            h200.measured_8, row_latency=float(latency), warp_reduce_cycles=float(reduce))})

    each = {(lat, red): rms(with_(lat, red), model) for lat in ROW_LATENCY_GRID for red in WARP_REDUCE_GRID}
    (lat, red), err = min(each.items(), key=lambda kv: (kv[1], kv[0]))
    return {"row_latency": float(lat), "warp_reduce_cycles": float(red), "rms_log_error": round(err, 5),
            f"rms_log_error_{model - 1}": round(rms(h200, model - 1), 5), "rows": len(rows)}


def _rows_chip(doc: dict, asked: str | None) -> str:
    """The chip a --facts-of file's rows ran on (its `gpu`), which --gpu may name but not contradict."""
    own = doc.get("gpu", "h200")
    if asked and asked != own:
        raise SystemExit(f"rank_calibrate: the rows ran on the {own.upper()}, not the {asked.upper()} (--gpu)")
    return own


def fit_wspill(doc: dict) -> dict:
    """Model 7's rate of spill traffic inside a matrix loop: per spilling shape (4 warps), the time an
    iteration takes beyond the same shape's at 8 warps (no spills), over the loop's spill bytes (the
    SASS's local loads and stores in the loop, x threads); a warp's rate, the mean over the shapes."""
    from irscope.rank.chips import CHIPS
    clock_ghz = CHIPS["h200"].clock_ghz
    rows = [r for r in doc.get("wspill", []) if "error" not in r]
    clean = {(r["bm"], r["bn"], r["bk"]): r for r in rows if r["warps"] == 8 and r["loop_spill_bytes"] == 0}
    rates = []
    for r in rows:
        base = clean.get((r["bm"], r["bn"], r["bk"]))
        if r["warps"] == 8 or base is None or r["loop_spill_bytes"] <= 0:
            continue
        extra = (r["ms"] - base["ms"]) * 1e6 * clock_ghz / r["iters"]  # cycles an iteration
        rates.append(r["loop_spill_bytes"] * 32 * r["warps"] / extra / r["warps"])
    return {"loop_dot_spill_warp_bytes_clk": round(sum(rates) / len(rates), 2), "shapes": len(rates),
            "each": [round(x, 2) for x in rates]}


def _read_docs(paths: list[str]) -> list[dict]:
    docs = []
    for path in paths:
        with open(path) as f:
            docs.append(json.load(f))
    return docs


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--only", default="start,mma,l2,stream,dram,spill,loop,rows,feed,wspill,tiles,prows",
                    help="kinds to measure (also frows, hrows, hwidths, icache, waves, swaves, cwaves, clocks, "
                         "clocks16)")
    ap.add_argument("--budget", type=float, default=300.0, help="seconds for the whole run")
    ap.add_argument("--serve", help=argparse.SUPPRESS)
    ap.add_argument("--fit-loop", action="store_true", help="print model 5's figures from OUT.json's loop rows")
    ap.add_argument("--fit-dram", action="store_true", help="print model 4's DRAM figures from OUT.json's dram rows")
    ap.add_argument("--fit-feed", action="store_true", help="print model 6's L2 feed from OUT.json's feed rows")
    ap.add_argument("--fit-wspill", action="store_true", help="print model 7's spill rate from OUT.json's wspill rows")
    ap.add_argument("--fit-tiles", action="store_true", help="print the most L2 feed OUT.json's tiles rows reached")
    ap.add_argument("--facts-of", nargs="+", metavar="RUN.json",
                    help="compile these runs' matrix loops here and write their facts to OUT.json (needs irscope)")
    ap.add_argument("--kinds", default=",".join(MATRIX_LOOPS),
                    help="with --facts-of: which rows (loop,feed,tiles by default; spill,prows: the row normalisation; rows: row_chain)")
    ap.add_argument("--fit-soft", action="store_true", help="print model 8's exponent from OUT.json, a --facts-of file")
    ap.add_argument("--fit-rows", action="store_true",
                    help="print model 10's figures from OUT.json's one-row programs, a --facts-of --kinds rows file")
    ap.add_argument("--model", type=int, default=10, choices=(10, 11),
                    help="with --fit-rows: whose figures (10, or 11: the same two with SASS issue)")
    ap.add_argument("--gpu", choices=("h200", "h100"),
                    help="with --fit-rows: the chip the rows ran on, whose DRAM figures are kept (default: the "
                         "file's own `gpu`)")
    ap.add_argument("--fit-power", nargs="*", metavar="FACTS.json",
                    help="print model 12's figures from OUT.json's rows and these --facts-of files' (matrix loops)")
    ap.add_argument("--power-model", type=int, default=12, choices=(12, 13),
                    help="with --fit-power: whose figures (12, or 13: a launch's copies counted once)")
    ap.add_argument("--fit-waits", nargs="*", metavar="FACTS.json",
                    help="print model 14's wait cycles from OUT.json and these --facts-of files' row kernels")
    ap.add_argument("--fit-reps", nargs="*", metavar="FACTS.json",
                    help="print model 15's wgmma repetition rate from OUT.json and these --facts-of files' matrix loops")
    ap.add_argument("--fit-lockstep", nargs="*", metavar="FACTS.json",
                    help="print model 16's figure from OUT.json's and these --facts-of files' matrix loops")
    ap.add_argument("--check-short-k", nargs="*", metavar="FACTS.json",
                    help="print models 15's and 16's mean error on OUT.json's and these --facts-of files' waves rows "
                         "by K and programs an SM, and what a wave pays beyond its iterations")
    ap.add_argument("--strided", action="store_true",
                    help="print OUT.json's (a waves,swaves,cwaves run) strided over contiguous output times")
    ap.add_argument("--check-waves", nargs="*", metavar="CLOCKS.json",
                    help="print model 11's error on OUT.json's waves rows (a --facts-of --kinds waves file), and in "
                         "cycles on these clocks runs' rows")
    ap.add_argument("--check-chain", action="store_true",
                    help="print models 8-11's error on OUT.json's row loops, a --facts-of --kinds spill,prows (or frows) file")
    args = ap.parse_args()
    if args.facts_of:
        import tempfile
        runs = []
        for path in args.facts_of:
            with open(path) as f:
                runs.append(json.load(f))
        with tempfile.TemporaryDirectory(prefix="irscope-calibration-") as work:
            doc = facts_of_runs(runs, work, tuple(args.kinds.split(",")))
        with open(args.out, "w") as f:
            json.dump(doc, f, indent=1, sort_keys=True)
        print(f"{len(doc['rows'])} calibration rows' facts -> {args.out}")
        return 0
    # the fits over OUT.json and more --facts-of files
    if args.fit_power is not None:
        print(json.dumps(fit_power(_read_docs([args.out, *args.fit_power]), args.power_model)))
        return 0
    if args.fit_waits is not None:
        print(json.dumps(fit_waits(_read_docs([args.out, *args.fit_waits]))))
        return 0
    if args.fit_reps is not None:
        print(json.dumps(fit_reps(_read_docs([args.out, *args.fit_reps]))))
        return 0
    if args.fit_lockstep is not None:
        print(json.dumps(fit_lockstep(_read_docs([args.out, *args.fit_lockstep]))))
        return 0
    if args.check_short_k is not None:
        docs = _read_docs([args.out, *args.check_short_k])
        print(json.dumps({f"model {m}": check_short_k(docs, m) for m in (15, 16)}, indent=1))
        return 0
    if args.strided:
        print(json.dumps(strided_outputs(_read_docs([args.out])[0]), indent=1))
        return 0
    if args.check_waves is not None:
        with open(args.out) as f:
            doc = json.load(f)
        runs = []
        for path in args.check_waves:
            with open(path) as f:
                runs.append(json.load(f))
        print(json.dumps(check_waves(doc, runs)))
        return 0
    fit = (fit_loop if args.fit_loop else fit_dram if args.fit_dram else fit_feed if args.fit_feed else fit_wspill if args.fit_wspill
           else fit_tiles if args.fit_tiles else fit_soft if args.fit_soft else check_chain if args.check_chain
           else (lambda doc: fit_rows(doc, args.model, _rows_chip(doc, args.gpu))) if args.fit_rows else None)
    if fit is not None:
        with open(args.out) as f:
            print(json.dumps(fit(json.load(f))))
        return 0
    if args.serve:
        serve(json.loads(args.serve))
        return 0
    import torch
    import triton
    res = {"gpu": torch.cuda.get_device_name(), "sms": torch.cuda.get_device_properties(0).multi_processor_count,
           "triton": triton.__version__, "torch": torch.__version__, "command": " ".join(sys.argv),
           "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    plan = {"start": [[w] for w in (1, 4, 8, 32)], "mma": [list(s) for s in MMA_SHAPES],
            "l2": [[4, 1024], [8, 2048], [8, 4096]], "stream": [list(s) for s in STREAM],
            "dram": [list(s) for s in DRAM], "spill": [list(s) for s in SPILL], "prows": [list(s) for s in PROWS],
            "frows": [list(s) for s in FROWS], "hrows": [list(s) for s in FROWS_HEAVY],
            "icache": [list(s) for s in ICACHE], "hwidths": [list(s) for s in FROWS_WIDTHS],
            "loop": [list(s) for s in LOOP], "rows": [list(s) for s in ROWS], "feed": [list(s) for s in FEED],
            "mrows": [list(s) for s in MROWS],
            "tiles": [list(s) for s in TILES],
            "wspill": [list(s) for s in WSPILL], "waves": [list(s) for s in WAVES],
            "swaves": [list(s) for s in SWAVES], "cwaves": [list(s) for s in CWAVES],
            "clocks": [list(s) for s in CLOCKS], "clocks16": [list(s) for s in CLOCKS_ALL]}
    # hrows, hwidths: more frows rows (heavy_rows), measured and kept as frows; clocks16: more clocks rows;
    # swaves: more waves rows
    kept_as = {"hrows": "frows", "hwidths": "frows", "clocks16": "clocks", "swaves": "waves"}
    todo = [[kept_as.get(kind, kind), *p] for kind in args.only.split(",")
            for p in plan[kind]]
    began = time.time()
    # One child measures the items in turn; one that makes no progress for 60 s is killed and the next
    # child starts after the item it was on.
    while todo:
        left = args.budget - (time.time() - began)
        if left < 5:
            for kind, *params in todo:
                res.setdefault(kind, []).append({"params": params, "error": "skipped: the run's time budget was spent"})
            break
        child = subprocess.Popen([sys.executable, HERE, args.out, "--serve", json.dumps(todo)],
                                 stdout=subprocess.PIPE, text=True)
        done = 0
        while done < len(todo):
            ready, _, _ = select.select([child.stdout], [], [], min(60.0, max(1.0, args.budget - (time.time() - began))))
            line = child.stdout.readline() if ready else ""
            if not line:
                break
            if not line.startswith("RESULT "):
                continue
            row = json.loads(line[7:])
            res.setdefault(row.pop("kind"), []).append(row)
            print(line[7:].strip(), flush=True)
            done += 1
            res["seconds"] = round(time.time() - began, 1)
            with open(args.out, "w") as f:
                json.dump(res, f, indent=1)
        if done < len(todo):
            kind, *params = todo[done]
            res.setdefault(kind, []).append({"params": params, "error": "no result within 60 s (killed)"})
            child.kill()
            done += 1
        child.wait()
        todo = todo[done:]
    res["seconds"] = round(time.time() - began, 1)
    with open(args.out, "w") as f:
        json.dump(res, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
