"""Flash attention, forward, for Hopper in Gluon: warp-specialised, TMA-fed, wgmma (FlashAttention-3's design).

A tile is 2 * BLOCK_M query rows of one (batch, head); a program takes one tile, or with PERSISTENT (one
program an SM) loops over tiles. `gl.warp_specialize` splits a program three ways:

- a loader partition (one warp, few registers) issues TMA loads: both halves of Q once, then K and V
  block by block into a ring of NUM_BUFFERS shared buffers. Each buffer has a `ready` mbarrier (the TMA
  transaction count completes it) and an `empty` one (both consumers arrive when done with it);
- two consumer partitions (one warpgroup each, most of the registers through `setmaxnreg`) own BLOCK_M
  rows each. Per key block a consumer issues S = Q K^T for the block and P V for the previous block as
  asynchronous wgmma, then does the online softmax of S while the tensor cores still run P V: the
  softmax of one block overlaps the matrix products of the next. With PINGPONG the two warpgroups take
  turns to issue their products (an mbarrier each), so one's softmax also fills the other's products.

Scores are scaled by log2(e) once, so the exponentials are exp2. Q, K, V and O are contiguous
(Z, H, N_CTX, HEAD_DIM) fp16 tensors seen as (Z*H, N_CTX, HEAD_DIM) by host-side tensor descriptors
whose box is one head's [1, rows, HEAD_DIM]: TMA reads rows past a head's end as zeros and clips the
stores there, so any N_CTX works (keys past the end are masked in the last block).

The Gluon API moved between Triton 3.6 (the H200's) and 3.9 (irscope's): the TMA copies were renamed
(`async_copy_global_to_shared` -> `async_load`, `async_copy_shared_to_global` -> `async_store`), so the
kernel calls them through the names picked below; everything else it uses is spelt the same in both.
"""
import math

from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (fence_async_shared, mbarrier, tma, warpgroup_mma,
                                                               warpgroup_mma_wait)

from irscope.spec import Config, KernelSpec, TensorDesc
from irscope.spec.attention import attention_workload

_tma_load = tma.async_load if hasattr(tma, "async_load") else tma.async_copy_global_to_shared
_tma_store = tma.async_store if hasattr(tma, "async_store") else tma.async_copy_shared_to_global

LOG2E = 1.4426950408889634


@gluon.jit
def _tile(tile, n_m, N_CTX, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, IS_CAUSAL: gl.constexpr):
    """A tile's (batch*head, first query row, key blocks). Consecutive tiles share a head, so the programs
    running at once read the same K and V (from L2); causal: each head's longest rows first."""
    bh = tile // n_m
    m = tile % n_m
    if IS_CAUSAL:
        m = n_m - 1 - m
    first_row = m * (2 * BLOCK_M)
    n_blocks = gl.cdiv(N_CTX, BLOCK_N)
    if IS_CAUSAL:
        n_blocks = gl.minimum((first_row + 2 * BLOCK_M) // BLOCK_N, n_blocks)
    return bh, first_row, n_blocks


@gluon.jit
def _load_tile(q_desc, k_desc, v_desc, q_smem, k_smem, v_smem, q_bar, q_empty, k_ready, k_empty, v_ready, v_empty,
               tile, it, c, n_m, N_CTX, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, HEAD_DIM: gl.constexpr,
               NUM_BUFFERS: gl.constexpr, IS_CAUSAL: gl.constexpr):
    """One tile's Q, K and V; `it` tiles and `c` K/V blocks came before it. Returns the new block count."""
    q_bytes: gl.constexpr = BLOCK_M * HEAD_DIM * 2
    kv_bytes: gl.constexpr = BLOCK_N * HEAD_DIM * 2
    bh, first_row, n_blocks = _tile(tile, n_m, N_CTX, BLOCK_M, BLOCK_N, IS_CAUSAL)
    for j in range(n_blocks):
        slot = (c + j) % NUM_BUFFERS
        # A fresh barrier counts as having completed the phase before 0, so the first lap does not wait.
        phase = (((c + j) // NUM_BUFFERS) & 1) ^ 1
        mbarrier.wait(k_empty.index(slot), phase)
        mbarrier.expect(k_ready.index(slot), kv_bytes)
        _tma_load(k_desc, [bh, j * BLOCK_N, 0], k_ready.index(slot), k_smem.index(slot))
        if j == 0:
            # After the tile's first K (which may go in while the consumers finish the last tile): Q, once
            # the O of the tile that last used its buffer has left through it (a fresh barrier passes).
            QB: gl.constexpr = q_smem.shape[0] // 2  # Q buffers a half: 2 lets Q in a tile ahead
            for half in gl.static_range(2):
                qi = (it % QB) * 2 + half
                mbarrier.wait(q_empty.index(qi), ((it // QB) & 1) ^ 1)
                mbarrier.expect(q_bar.index(qi), q_bytes)
                _tma_load(q_desc, [bh, first_row + half * BLOCK_M, 0], q_bar.index(qi), q_smem.index(qi))
        mbarrier.wait(v_empty.index(slot), phase)
        mbarrier.expect(v_ready.index(slot), kv_bytes)
        _tma_load(v_desc, [bh, j * BLOCK_N, 0], v_ready.index(slot), v_smem.index(slot))
    return c + n_blocks


@gluon.jit
def _load_partition(q_desc, k_desc, v_desc, q_smem, k_smem, v_smem, q_bar, q_empty, k_ready, k_empty, v_ready,
                    v_empty, n_m, n_tiles, N_CTX, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr,
                    HEAD_DIM: gl.constexpr, NUM_BUFFERS: gl.constexpr, IS_CAUSAL: gl.constexpr,
                    PERSISTENT: gl.constexpr):
    if PERSISTENT:
        c = 0  # K/V blocks loaded so far, over every tile: the ring's position and phase
        for tile in range(gl.program_id(0), n_tiles, gl.num_programs(0)):
            it = (tile - gl.program_id(0)) // gl.num_programs(0)  # tiles so far
            c = _load_tile(q_desc, k_desc, v_desc, q_smem, k_smem, v_smem, q_bar, q_empty, k_ready, k_empty,
                           v_ready, v_empty, tile, it, c, n_m, N_CTX, BLOCK_M, BLOCK_N, HEAD_DIM, NUM_BUFFERS,
                           IS_CAUSAL)
    else:
        _load_tile(q_desc, k_desc, v_desc, q_smem, k_smem, v_smem, q_bar, q_empty, k_ready, k_empty, v_ready,
                   v_empty, gl.program_id(0), 0, 0, n_m, N_CTX, BLOCK_M, BLOCK_N, HEAD_DIM, NUM_BUFFERS, IS_CAUSAL)


@gluon.jit
def _softmax_step(s, m_i, l_i, rows, cols, n_ctx, qk_scale, MASKED: gl.constexpr, IS_CAUSAL: gl.constexpr):
    """Online softmax of one block of scores: the probabilities, the rescale of what came before, m, l.
    Masked: keys past the sequence's end (the descriptor read them as zeros) and, causal, past the row."""
    if MASKED:
        keep = cols[None, :] < n_ctx
        if IS_CAUSAL:
            keep = keep & (cols[None, :] <= rows[:, None])
        s = gl.where(keep, s, -float("inf"))
    m_new = gl.maximum(m_i, gl.max(s, 1) * qk_scale)
    p = gl.exp2(s * qk_scale - m_new[:, None])
    alpha = gl.exp2(m_i - m_new)
    l_i = l_i * alpha + gl.sum(p, 1)
    return p, alpha, m_new, l_i


@gluon.jit
def _consume_blocks(q_s, k_smem, v_smem, k_ready, k_empty, v_ready, v_empty, turn, acc, p, m_i, l_i, lo, hi, c,
                    turns, rows, n_ctx, qk_scale, IS_CAUSAL: gl.constexpr, s_layout: gl.constexpr,
                    o_layout: gl.constexpr, p_layout: gl.constexpr, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr,
                    NUM_BUFFERS: gl.constexpr, MASKED: gl.constexpr, HALF: gl.constexpr, PINGPONG: gl.constexpr):
    """Key blocks lo..hi-1 of the tile whose block 0 is the ring's c-th: S_j = Q K_j^T and P_{j-1} V_{j-1}
    are in flight together, and the softmax of S_j runs while P_{j-1} V_{j-1} is still on the tensor cores.

    PINGPONG: the two warpgroups take turns to issue their matrix products (an mbarrier each says whose
    turn it is; `turns` counts the turns taken before this tile), so one's softmax runs while the other's
    products have the tensor cores."""
    zero_s = gl.zeros([BLOCK_M, BLOCK_N], gl.float32, s_layout)
    offs_n = gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, s_layout))
    for j in range(lo, hi):
        slot = (c + j) % NUM_BUFFERS
        phase = ((c + j) // NUM_BUFFERS) & 1
        prev = (c + j - 1) % NUM_BUFFERS
        prev_phase = ((c + j - 1) // NUM_BUFFERS) & 1
        mbarrier.wait(k_ready.index(slot), phase)
        if PINGPONG:
            # Warpgroup 0 goes first: a fresh barrier passes a wait on parity 1 at once.
            mbarrier.wait(turn.index(HALF), ((turns + j - 1) & 1) ^ (1 - HALF))
        k_t = k_smem.index(slot).reshape([BLOCK_N, k_smem.shape[3]]).permute((1, 0))
        s_tok = warpgroup_mma(q_s, k_t, zero_s, use_acc=False, is_async=True)
        mbarrier.wait(v_ready.index(prev), prev_phase)
        p16 = gl.convert_layout(p.to(gl.float16), p_layout)
        o_tok = warpgroup_mma(p16, v_smem.index(prev).reshape([BLOCK_N, v_smem.shape[3]]), acc, is_async=True)
        if PINGPONG:
            mbarrier.arrive(turn.index(1 - HALF), count=1)
        s = warpgroup_mma_wait(1, deps=[s_tok])
        mbarrier.arrive(k_empty.index(slot), count=1)
        p, alpha, m_i, l_i = _softmax_step(s, m_i, l_i, rows, j * BLOCK_N + offs_n, n_ctx, qk_scale, MASKED,
                                           IS_CAUSAL)
        acc = warpgroup_mma_wait(0, deps=[o_tok])
        mbarrier.arrive(v_empty.index(prev), count=1)
        acc = acc * gl.convert_layout(alpha, gl.SliceLayout(1, o_layout))[:, None]
    return acc, p, m_i, l_i


@gluon.jit
def _consume_tile(o_desc, q_smem, k_smem, v_smem, q_bar, q_empty, k_ready, k_empty, v_ready, v_empty, turn,
                  tile, it, c, n_m, N_CTX, qk_scale, HALF: gl.constexpr, BLOCK_M: gl.constexpr,
                  BLOCK_N: gl.constexpr, HEAD_DIM: gl.constexpr, NUM_BUFFERS: gl.constexpr,
                  IS_CAUSAL: gl.constexpr, PINGPONG: gl.constexpr):
    """This warpgroup's half of one tile; `it` tiles and `c` K/V blocks came before it (and c - it turns:
    one a block after each tile's first). Returns the new block count."""
    warps: gl.constexpr = gl.num_warps()
    s_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[warps, 1],
                                                       instr_shape=[16, BLOCK_N, 16])
    o_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[warps, 1],
                                                       instr_shape=[16, HEAD_DIM, 16])
    p_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=o_layout, k_width=2)
    row_layout: gl.constexpr = gl.SliceLayout(1, s_layout)
    QB: gl.constexpr = q_smem.shape[0] // 2  # Q buffers a half (the loader takes turns the same way)
    qi = (it % QB) * 2 + HALF
    q_tma = q_smem.index(qi)  # [1, BLOCK_M, HEAD_DIM]: the descriptor's box, one head
    q_s = q_tma.reshape([BLOCK_M, HEAD_DIM])
    turns = c - it
    bh, first_row, n_blocks = _tile(tile, n_m, N_CTX, BLOCK_M, BLOCK_N, IS_CAUSAL)
    my_first = first_row + HALF * BLOCK_M  # this warpgroup's first query row within the sequence
    rows = my_first + gl.arange(0, BLOCK_M, layout=row_layout)
    m_i = gl.full([BLOCK_M], -float("inf"), gl.float32, row_layout)
    l_i = gl.zeros([BLOCK_M], gl.float32, row_layout)
    acc = gl.zeros([BLOCK_M, HEAD_DIM], gl.float32, o_layout)

    mbarrier.wait(q_bar.index(qi), (it // QB) & 1)
    # Block 0 alone: nothing is in flight yet. Causal: it may hold the diagonal (the first tile's).
    slot = c % NUM_BUFFERS
    mbarrier.wait(k_ready.index(slot), (c // NUM_BUFFERS) & 1)
    s = warpgroup_mma(q_s, k_smem.index(slot).reshape([BLOCK_N, HEAD_DIM]).permute((1, 0)),
                      gl.zeros([BLOCK_M, BLOCK_N], gl.float32, s_layout), use_acc=False)
    mbarrier.arrive(k_empty.index(slot), count=1)
    offs_n = gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, s_layout))
    p, alpha, m_i, l_i = _softmax_step(s, m_i, l_i, rows, offs_n, N_CTX, qk_scale, True, IS_CAUSAL)

    # Key blocks wholly inside the sequence (and, causal, wholly below this warpgroup's first row) need
    # no mask; the rest (the diagonal, the first half's view of the second half's, a partial last block) do.
    if IS_CAUSAL:
        n_full = gl.minimum(my_first, N_CTX) // BLOCK_N
    else:
        n_full = N_CTX // BLOCK_N
    n_full = gl.maximum(gl.minimum(n_full, n_blocks), 1)
    acc, p, m_i, l_i = _consume_blocks(q_s, k_smem, v_smem, k_ready, k_empty, v_ready, v_empty, turn, acc, p,
                                       m_i, l_i, 1, n_full, c, turns, rows, N_CTX, qk_scale, IS_CAUSAL,
                                       s_layout, o_layout, p_layout, BLOCK_M, BLOCK_N, NUM_BUFFERS, False,
                                       HALF, PINGPONG)
    acc, p, m_i, l_i = _consume_blocks(q_s, k_smem, v_smem, k_ready, k_empty, v_ready, v_empty, turn, acc, p,
                                       m_i, l_i, n_full, n_blocks, c, turns, rows, N_CTX, qk_scale, IS_CAUSAL,
                                       s_layout, o_layout, p_layout, BLOCK_M, BLOCK_N, NUM_BUFFERS, True,
                                       HALF, PINGPONG)

    last = (c + n_blocks - 1) % NUM_BUFFERS
    mbarrier.wait(v_ready.index(last), ((c + n_blocks - 1) // NUM_BUFFERS) & 1)
    acc = warpgroup_mma(gl.convert_layout(p.to(gl.float16), p_layout),
                        v_smem.index(last).reshape([BLOCK_N, HEAD_DIM]), acc)
    mbarrier.arrive(v_empty.index(last), count=1)
    acc = acc / gl.convert_layout(l_i, gl.SliceLayout(1, o_layout))[:, None]
    # Q's buffer is free once the last S is computed: O leaves through it (rows past the end are clipped),
    # and the loader refills it with the next tile's Q once the store has read it.
    q_s.store(acc.to(gl.float16))
    fence_async_shared()
    _tma_store(o_desc, [bh, my_first, 0], q_tma)
    tma.store_wait(0)
    mbarrier.arrive(q_empty.index(qi), count=1)
    return c + n_blocks


@gluon.jit
def _consumer_partition(o_desc, q_smem, k_smem, v_smem, q_bar, q_empty, k_ready, k_empty, v_ready, v_empty, turn,
                        n_m, n_tiles, N_CTX, qk_scale, HALF: gl.constexpr, BLOCK_M: gl.constexpr,
                        BLOCK_N: gl.constexpr, HEAD_DIM: gl.constexpr, NUM_BUFFERS: gl.constexpr,
                        IS_CAUSAL: gl.constexpr, PINGPONG: gl.constexpr, PERSISTENT: gl.constexpr):
    if PERSISTENT:
        c = 0  # K/V blocks consumed so far, over every tile (the loader counts the same way)
        for tile in range(gl.program_id(0), n_tiles, gl.num_programs(0)):
            it = (tile - gl.program_id(0)) // gl.num_programs(0)
            c = _consume_tile(o_desc, q_smem, k_smem, v_smem, q_bar, q_empty, k_ready, k_empty, v_ready, v_empty,
                              turn, tile, it, c, n_m, N_CTX, qk_scale, HALF, BLOCK_M, BLOCK_N, HEAD_DIM,
                              NUM_BUFFERS, IS_CAUSAL, PINGPONG)
    else:
        _consume_tile(o_desc, q_smem, k_smem, v_smem, q_bar, q_empty, k_ready, k_empty, v_ready, v_empty, turn,
                      gl.program_id(0), 0, 0, n_m, N_CTX, qk_scale, HALF, BLOCK_M, BLOCK_N, HEAD_DIM, NUM_BUFFERS,
                      IS_CAUSAL, PINGPONG)


# N_CTX and ZH only bound loops and masks: not specialised on divisibility, so one binary (a snapshot's cubin
# too) runs every size, ragged ones included.
@gluon.jit(do_not_specialize=["N_CTX", "ZH"])
def attention_ws_kernel(q_desc, k_desc, v_desc, o_desc, sm_scale, N_CTX, ZH,
                        HEAD_DIM: gl.constexpr, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr,
                        NUM_BUFFERS: gl.constexpr, IS_CAUSAL: gl.constexpr, PINGPONG: gl.constexpr,
                        PERSISTENT: gl.constexpr, Q_BUFFERS: gl.constexpr, CONSUMER_REGS: gl.constexpr,
                        LOADER_REGS: gl.constexpr):
    """One tile a program (the grid is the tile count), or with PERSISTENT (the grid is the SM count,
    `grid()`) the tiles program_id, program_id + num_programs, ...: the loader then runs into the next
    tile's K and V while the consumers finish this one, and with Q_BUFFERS=2 its Q too."""
    gl.static_assert((2 * BLOCK_M) % BLOCK_N == 0, "the causal split needs BLOCK_N to divide 2 * BLOCK_M")
    n_m = gl.cdiv(N_CTX, 2 * BLOCK_M)
    n_tiles = n_m * ZH
    qk_scale = sm_scale * 1.4426950408889634  # log2(e): exp(x) = exp2(x * log2(e))

    q_layout: gl.constexpr = q_desc.layout
    kv_layout: gl.constexpr = k_desc.layout
    q_smem = gl.allocate_shared_memory(gl.float16, [2 * Q_BUFFERS, 1, BLOCK_M, HEAD_DIM], q_layout)
    k_smem = gl.allocate_shared_memory(gl.float16, [NUM_BUFFERS, 1, BLOCK_N, HEAD_DIM], kv_layout)
    v_smem = gl.allocate_shared_memory(gl.float16, [NUM_BUFFERS, 1, BLOCK_N, HEAD_DIM], kv_layout)
    q_bar = gl.allocate_shared_memory(gl.int64, [2 * Q_BUFFERS, 1], mbarrier.MBarrierLayout())
    q_empty = gl.allocate_shared_memory(gl.int64, [2 * Q_BUFFERS, 1], mbarrier.MBarrierLayout())
    k_ready = gl.allocate_shared_memory(gl.int64, [NUM_BUFFERS, 1], mbarrier.MBarrierLayout())
    k_empty = gl.allocate_shared_memory(gl.int64, [NUM_BUFFERS, 1], mbarrier.MBarrierLayout())
    v_ready = gl.allocate_shared_memory(gl.int64, [NUM_BUFFERS, 1], mbarrier.MBarrierLayout())
    v_empty = gl.allocate_shared_memory(gl.int64, [NUM_BUFFERS, 1], mbarrier.MBarrierLayout())
    turn = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(2 * Q_BUFFERS):
        mbarrier.init(q_bar.index(i), count=1)
        mbarrier.init(q_empty.index(i), count=1)
    for half in gl.static_range(2):
        mbarrier.init(turn.index(half), count=1)
    for i in gl.static_range(NUM_BUFFERS):
        mbarrier.init(k_ready.index(i), count=1)
        mbarrier.init(v_ready.index(i), count=1)
        mbarrier.init(k_empty.index(i), count=2)  # one arrival from each consumer warpgroup
        mbarrier.init(v_empty.index(i), count=2)

    gl.warp_specialize([
        (_consumer_partition, (o_desc, q_smem, k_smem, v_smem, q_bar, q_empty, k_ready, k_empty, v_ready, v_empty,
                               turn, n_m, n_tiles, N_CTX, qk_scale, 0, BLOCK_M, BLOCK_N, HEAD_DIM, NUM_BUFFERS,
                               IS_CAUSAL, PINGPONG, PERSISTENT)),
        (_consumer_partition, (o_desc, q_smem, k_smem, v_smem, q_bar, q_empty, k_ready, k_empty, v_ready, v_empty,
                               turn, n_m, n_tiles, N_CTX, qk_scale, 1, BLOCK_M, BLOCK_N, HEAD_DIM, NUM_BUFFERS,
                               IS_CAUSAL, PINGPONG, PERSISTENT)),
        (_load_partition, (q_desc, k_desc, v_desc, q_smem, k_smem, v_smem, q_bar, q_empty, k_ready, k_empty,
                           v_ready, v_empty, n_m, n_tiles, N_CTX, BLOCK_M, BLOCK_N, HEAD_DIM, NUM_BUFFERS,
                           IS_CAUSAL, PERSISTENT)),
    ], [4, 1], [CONSUMER_REGS, LOADER_REGS])


def descriptors(q, k, v, o, block_m, block_n):
    """Gluon's host-side descriptors over (Z*H, N_CTX, HEAD_DIM) views, one head a box, with the default
    NVMMA swizzle: TMA reads rows past a head's end as zeros and clips stores there."""
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor
    n, d = q.shape[-2], q.shape[-1]
    out = []
    for t, rows in ((q, block_m), (k, block_n), (v, block_n), (o, block_m)):
        flat = t.view(-1, n, d)
        layout = gl.NVMMASharedLayout.get_default_for([1, rows, d], gl.float16)
        out.append(TensorDescriptor(flat, list(flat.shape), list(flat.stride()), [1, rows, d], layout))
    return out


def _launch(x, size, p):
    n, d = size["n"], size["d"]
    bm, bn = p["BLOCK_M"], p["BLOCK_N"]
    descs = descriptors(x["q"], x["k"], x["v"], x["o"], bm, bn)
    zh = size["z"] * size["h"]
    return [p.call(grid(n, zh, bm, p["PERSISTENT"], x["q"].device), *descs, 1.0 / math.sqrt(d), n, zh, HEAD_DIM=d)]


def grid(n, zh, block_m, persistent, device):
    """One program a tile of 2 * BLOCK_M rows, or (persistent) one a streaming multiprocessor."""
    tiles = (n + 2 * block_m - 1) // (2 * block_m) * zh
    if not persistent:
        return (tiles,)
    import torch
    sms = torch.cuda.get_device_properties(device).multi_processor_count if device.type == "cuda" else 132
    return (min(tiles, sms),)


def _sizes():
    sizes = {"small": {"z": 1, "h": 2, "n": 512, "d": 128}, "ragged": {"z": 1, "h": 3, "n": 300, "d": 128},
             "bench": {"z": 4, "h": 32, "n": 4096, "d": 128}}
    for n in (1024, 2048, 4096, 8192):
        sizes[f"n{n}"] = {"z": 4, "h": 32, "n": n, "d": 128}
    return sizes


_SHAPE = (4 * 32, 4096, 128)  # (Z*H, N_CTX, HEAD_DIM) of the typical launch (z 4, h 32, n 4096)
# The descriptors' block shapes follow the config: a name in block_shape is the constexpr's value.
_ARGS = {"q_desc": TensorDesc("fp16", _SHAPE, (1, "BLOCK_M", "HEAD_DIM")),
         "k_desc": TensorDesc("fp16", _SHAPE, (1, "BLOCK_N", "HEAD_DIM")),
         "v_desc": TensorDesc("fp16", _SHAPE, (1, "BLOCK_N", "HEAD_DIM")),
         "o_desc": TensorDesc("fp16", _SHAPE, (1, "BLOCK_M", "HEAD_DIM")),
         "sm_scale": 1.0 / math.sqrt(128), "N_CTX": 4096, "ZH": 4 * 32}

_HOPPER = "a Hopper kernel: TMA, mbarriers, wgmma and setmaxnreg (sm_90a only)"
_NOT_FOR = {t: _HOPPER for t in ("sm_80", "sm_100a", "sm_120a", "gfx90a", "gfx942", "gfx950")}


def _cfg(m, n, buffers, pingpong=True, persistent=False, q_buffers=1, regs=240, note="", name=None):
    return Config(name or f"m{m}n{n}.b{buffers}" + ("" if pingpong else ".nopp") + (".persistent" if persistent else "")
                  + ("" if q_buffers == 1 else f".q{q_buffers}") + ("" if regs == 240 else f".r{regs}"),
                  {"BLOCK_M": m, "BLOCK_N": n, "NUM_BUFFERS": buffers, "PINGPONG": pingpong, "PERSISTENT": persistent,
                   "Q_BUFFERS": q_buffers, "CONSUMER_REGS": regs}, num_warps=4, note=note, not_for=_NOT_FOR)


DEFAULT = _cfg(64, 128, 2, name="default", note="two warpgroups of 64 query rows; K and V double-buffered (160 KiB)")
CONFIGS = (DEFAULT,
           _cfg(64, 128, 2, persistent=True, note="one program an SM, looping over tiles: the loader runs into "
                "the next tile while the consumers finish this one"),
           _cfg(64, 128, 2, persistent=True, q_buffers=2, note="persistent, and Q double-buffered: the next "
                "tile's Q comes in while this one runs (192 KiB)"),
           _cfg(64, 128, 2, pingpong=False, note="the warpgroups issue their products when ready, without turns"),
           _cfg(64, 128, 2, pingpong=False, persistent=True, note="persistent, without turns"),
           _cfg(64, 128, 3, note="K and V triple-buffered: 224 KiB of the 227 a block may have"),
           _cfg(64, 64, 4, note="narrower key blocks, four buffers: more in flight, more rescales"))
# Not in the menu: two warpgroups of 128 rows (m128n64.b2) spill about 1 KB at 240 registers (O alone is
# 128 of them), measured device-less with `irscope compile attention_ws --target sm_90a --constexpr ...`.

SPECS = [KernelSpec(name="attention_ws" + (".causal" if causal else ""), fn=attention_ws_kernel,
                    description=f"warp-specialised Gluon flash attention forward for Hopper, fp16, d 128, "
                                f"{'causal' if causal else 'non-causal'} (TMA loader + two wgmma consumers)",
                    args=_ARGS, constexprs={"HEAD_DIM": 128, "IS_CAUSAL": causal, "LOADER_REGS": 24},
                    configs=CONFIGS,
                    workload=attention_workload(sizes=_sizes(), dtype="fp16", causal=causal, launch=_launch,
                                                check_sizes=("small", "ragged")))
         for causal in (False, True)]
