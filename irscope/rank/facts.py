"""What the cost model needs from a snapshot, read from its stages and nothing else.

`analyze()` gives resources, occupancy, launchability and instruction counters. The work per program is
read here from the TTGIR: every global load and store with its tile's bytes, every matrix product with its
M x N x K, every element-wise op weighted by the elements of its tensor, each counted once per execution
of the region that holds it, the main loop's body separately from the straight-line code around it.
Static counts cannot know a loop's trip count; the model derives it from the workload (docs/rank.md).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..analyze import analyze
from ..store.snapshot import Snapshot
from .records import record_streams
from .strides import ELEMENT_BYTES, access_steps

DOT_DTYPES = {"f16": "fp16", "bf16": "bf16", "f32": "fp32", "tf32": "fp32", "i8": "int8", "f8E4M3FN": "fp8",
              "f8E5M2": "fp8", "f8E4M3FNUZ": "fp8", "f8E5M2FNUZ": "fp8"}
SFU_OPS = ("math.exp", "math.exp2", "math.log", "math.log2", "math.sin", "math.cos", "math.rsqrt", "math.sqrt",
           "math.tanh", "math.erf")
LOADS = ("tt.load", "ttg.async_copy_global_to_local", "tt.descriptor_load", "ttng.async_tma_copy_global_to_local",
         "amdg.buffer_load", "amdg.buffer_load_to_local", "tt.descriptor_gather")
STORES = ("tt.store", "tt.descriptor_store", "ttng.async_tma_copy_local_to_global", "amdg.buffer_store",
          "tt.atomic_rmw", "tt.atomic_cas")
DOTS = ("tt.dot", "ttng.warp_group_dot", "ttng.tc_gen5_mma", "tt.dot_scaled")
ASYNC_LOADS = ("ttg.async_copy_global_to_local", "ttng.async_tma_copy_global_to_local", "tt.descriptor_load",
               # AMD's stream pipeliner prefetches buffer loads num_stages - 1 iterations ahead, into
               # registers or (to_local) shared memory: asynchronous for the loop's purposes.
               "amdg.buffer_load", "amdg.buffer_load_to_local")

_OP = re.compile(r'^\s*(?:%[\w#:]+(?:,\s*%[\w#:]+)*\s*=\s*)?"?([a-z_]+\.[a-z_0-9.]+)"?')
_SHAPE = re.compile(r"(?:tensor|memdesc|tensor_descriptor|tensordesc)<([0-9x]+)x(!tt\.ptr<)?([a-zA-Z0-9]+)")


@dataclass
class Work:
    """The work of one region of a program, per execution of it."""

    load_bytes: int = 0
    store_bytes: int = 0
    dot_flops: int = 0
    elem_ops: int = 0  # element-wise ALU results (arith, math and reduce combines)
    sfu_ops: int = 0  # exp2/log/rsqrt... results
    # The same, as {elements of the op's tensor: how many such ops}: an op on fewer elements than the
    # program has threads still costs every thread an instruction (a replicated layout).
    elem_hist: dict = field(default_factory=dict)
    sfu_hist: dict = field(default_factory=dict)
    smem_bytes: int = 0  # layout conversions through shared memory, and matrix operands read from it
    async_loads: int = 0  # loads the pipeliner made asynchronous (cp.async, TMA)
    sync_loads: int = 0  # loads that block the thread until they land
    # tt.reduce ops whose reduced axis spans warps in their operand's layout: each a shared-memory round
    # trip between barriers (a reduce within a warp is shuffles only)
    warp_reductions: int = 0
    # Model 17: the L1 wavefronts (4 sectors, 128 bytes, each) a global load or store through the registers
    # takes, summed over the warp instructions a program issues for it (_l1_wavefronts): one a clock
    l1_wavefronts: float = 0.0
    # Model 18: the same, each access at its own width (the PTX's at its source location: _access_widths)
    # rather than the kernel's widest, and the warp instructions a program issues for those accesses (facts
    # made before model 18 lack both keys: Facts.own_widths)
    l1_wavefronts_own: float = 0.0
    load_instructions: float = 0.0
    # Model 19: the same as model 18's, each access's lanes as far apart as its pointer's step along the
    # fastest dim says (strides.access_steps: the conv1d's weights, 4 elements apart), rows that repeat an
    # address once, and a warp instruction taking the passes its lanes' words need of the L1's 32 banks
    # (_banks_a_row; facts made before model 19 lack the key: Facts.strided)
    l1_wavefronts_strided: float = 0.0
    # Model 20: the same, each row of lanes taking at least its L1 lines' lookups, L1_LINES_CLK a clock
    # (facts made before model 20 lack the key: Facts.lookups)
    l1_passes: float = 0.0

    def add(self, other: "Work", times: float = 1) -> None:
        for k, v in vars(other).items():
            if isinstance(v, dict):
                mine = getattr(self, k)
                for n, c in v.items():
                    mine[str(n)] = mine.get(str(n), 0) + c * times
            else:
                setattr(self, k, getattr(self, k) + v * times)

    def issue_slots(self, threads: int) -> tuple[float, float]:
        """(element-wise, special-function) results, counting every thread of the program at least once."""
        elem = sum(max(int(n), threads) * c for n, c in self.elem_hist.items())
        sfu = sum(max(int(n), threads) * c for n, c in self.sfu_hist.items())
        return float(elem), float(sfu)

    def as_dict(self) -> dict:
        return dict(vars(self))


@dataclass(frozen=True)
class Facts:
    """A snapshot's compile facts, as the model takes them (JSON round-trips through as_dict/from_dict)."""

    label: str
    target: str
    launchable: bool
    launch_reasons: tuple[str, ...]
    num_warps: int
    num_stages: int
    registers: int
    spill_bytes: int  # ptxas' spill stores + loads, bytes per thread
    shared_bytes: int
    blocks_per_sm: int  # resident programs per SM (NVIDIA) or per CU (AMD: waves/SIMD x SIMDs / warps)
    occupancy_limiter: str
    instruction: str  # wgmma, mma, tcgen05, mfma, wmma or fma: how the matrix products run
    dot_dtype: str  # input type of the matrix products (fp16, bf16, fp32, fp8, int8), "" without any
    loop: dict = field(default_factory=dict)  # Work per iteration of the main loop ({} without a loop)
    straight: dict = field(default_factory=dict)  # Work outside it, once per program
    loops: int = 0  # scf.for loops at the top of the kernel (the main one is the heaviest)
    constexprs: dict = field(default_factory=dict)
    warp_specialized: bool = False  # ttg.warp_specialize partitions: producer and consumer warps overlap
    # The num_warps the config asked for, where the kernel runs more (a warp-specialised kernel's partitions
    # add theirs to num_warps); 0: num_warps is the config's. `asked_warps` gives either.
    config_warps: int = 0
    mma_n: int = 0  # N of the wgmma instruction used most (m64nNk16): small N runs below the peak
    # The 64-row wgmma instructions each warpgroup repeats down M for the heaviest matrix product (the
    # TTGIR's nvidia_mma v3 layout: M / (16 x warpsPerCTA[0])); 0: no wgmma; -1: not read (facts made
    # before model 15, which then prices the products as model 14 does).
    mma_m_reps: int = -1
    # 1 when the main loop's bounds follow the program's id (a causal attention's loop over the keys up to
    # its own rows, a persistent loop starting at its id): the programs of a wave run loops of different
    # lengths. 0: the same bounds in every program; -1: not read (facts made before model 16, which then
    # takes the programs' loops as equal).
    ragged_loop: int = -1
    # Iterations between the main loop issuing an asynchronous copy and waiting for it, from its
    # `ttg.async_wait {num}` over the commit groups an iteration makes (0: not read, e.g. TMA's mbarriers).
    prefetch: int = 0
    # Spilled bytes a thread moves (SASS local loads and stores) per iteration of the main loop, and once
    # outside it; -1: no SASS to read (the model then takes ptxas' static count every iteration).
    loop_spill_bytes: int = -1
    other_spill_bytes: int = 0
    # SASS instructions a warp issues per iteration of the main loop (the same longest backward branch),
    # and outside it; -1: no SASS read (model 11 then keeps model 10's count of the TTGIR's element work).
    loop_instructions: int = -1
    other_instructions: int = -1
    # What ptxas tells those instructions to wait (controls.py): the clocks each stalls its warp before the
    # next issues (at least one), summed in the main loop and outside it, and how many of them wait on a
    # scoreboard (a special function's, a shared-memory or global load's result); -1: no cubin read.
    loop_stall_cycles: int = -1
    other_stall_cycles: int = -1
    loop_waits: int = -1
    other_waits: int = -1
    # Model 18: the global loads (LDG) a warp issues in the SASS's main loop, an iteration of it (-1: no
    # SASS read); against the TTGIR loop's load instructions, how many of its iterations ptxas unrolled
    loop_global_loads: int = -1
    # Model 17: a main loop that only moves data, whose bounds the TTGIR gives without the launch's
    # arguments (a stencil's taps, `for dy in range(0, 2 * RADIUS + 1)`): its iterations a program, loops
    # inside it counted as they run, and the work of one such iteration (-1 and {} where not so)
    bounded_trips: float = -1.0
    bounded_loop: dict = field(default_factory=dict)
    # Model 21: the streams of records its loads read outside loops (records.record_streams: a record's
    # runs and sectors of DRAM, the records a program reads, the program ids they follow); None: not read
    # (facts made before model 21)
    records: list | None = None

    @property
    def own_widths(self) -> bool:
        """Whether the facts count each access at its own width (model 18's l1_wavefronts_own)."""
        return "l1_wavefronts_own" in self.straight

    @property
    def strided(self) -> bool:
        """Whether the facts count each access's lanes at its pointer's step (model 19's l1_wavefronts_strided)."""
        return "l1_wavefronts_strided" in self.straight

    @property
    def lookups(self) -> bool:
        """Whether the facts count each row's L1 line lookups too (model 20's l1_passes)."""
        return "l1_passes" in self.straight

    def newest_model(self) -> int:
        """The newest model these facts hold every fact of: facts stored by an older irscope lack what
        later models read (each property above), and a later model would run an older one's rule on them
        while wearing its own number. Scripts that rescore stored facts check this first."""
        if self.instruction == "wgmma" and self.mma_m_reps < 0:
            return 14
        if (self.loop or {}).get("dot_flops") and self.ragged_loop < 0:
            return 15
        if "l1_wavefronts" not in self.straight:
            return 16
        for model, has in ((17, self.own_widths), (18, self.strided), (19, self.lookups),
                           (20, self.records is not None)):
            if not has:
                return model
        return 22  # (model 22 reads no new fact)

    @property
    def asked_warps(self) -> int:
        """The num_warps of the config (what an autotune config names), not counting partitions' warps."""
        return self.config_warps or self.num_warps

    def as_dict(self) -> dict:
        d = dict(vars(self))
        d["launch_reasons"] = list(self.launch_reasons)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "Facts":
        return cls(**{**d, "launch_reasons": tuple(d.get("launch_reasons", ()))})


def _shapes(text: str) -> list[tuple[int, str]]:
    out = []
    for dims, _ptr, elt in _SHAPE.findall(text):
        n = 1
        for d in dims.split("x"):
            n *= int(d)
        out.append((n, elt))
    return out


def _dims(text: str) -> list[list[int]]:
    return [[int(d) for d in m.group(1).split("x")] for m in _SHAPE.finditer(text)]


def _op_work(op: str, line: str) -> tuple[Work, str]:
    """The work of one TTGIR op line, and the dtype of a matrix product's inputs ("" otherwise)."""
    w = Work()
    types = line.split(" : ", 1)[1] if " : " in line else ""
    types = types.split(" loc(")[0]
    shapes = _shapes(types)
    if op in LOADS and shapes:
        n, elt = shapes[0]
        w.load_bytes = n * ELEMENT_BYTES.get(elt, 4)
        if op in ASYNC_LOADS:
            w.async_loads = 1
        else:
            w.sync_loads = 1
    elif op in STORES and shapes:
        n, elt = shapes[-1] if op == "ttng.async_tma_copy_local_to_global" else shapes[0]
        w.store_bytes = n * ELEMENT_BYTES.get(elt, 4)
    elif op in DOTS:
        dims = _dims(types)
        if len(dims) >= 2 and len(dims[0]) >= 2 and len(dims[1]) >= 2:
            m, k = dims[0][-2], dims[0][-1]
            n = dims[1][-1]
            w.dot_flops = 2 * m * n * k
            elt = _SHAPE.search(types).group(3)
            a_bytes = m * k * ELEMENT_BYTES.get(elt, 2)
            b_bytes = k * n * ELEMENT_BYTES.get(elt, 2)
            # Operands read from shared memory (memdesc) cost its bandwidth; a register operand does not.
            parts = types.split("*")
            w.smem_bytes = (a_bytes if "memdesc" in parts[0] else 0) + (b_bytes if len(parts) > 1 and "memdesc"
                                                                          in parts[1] else 0)
            return w, DOT_DTYPES.get(elt, "")
    elif op == "ttg.convert_layout" and shapes:
        n, elt = shapes[0]
        w.smem_bytes = 2 * n * ELEMENT_BYTES.get(elt, 4)  # written to shared memory and read back
    elif op in ("ttg.local_load", "ttg.local_store") and shapes:
        n, elt = shapes[-1]
        w.smem_bytes = n * ELEMENT_BYTES.get(elt, 4)
    elif op == "tt.reduce" and shapes:
        w.elem_ops = shapes[0][0]
        w.elem_hist = {str(w.elem_ops): 1}
    elif (op.startswith("arith.") or op.startswith("math.")) and shapes and "tensor<" in types:
        n = shapes[-1][0]
        if op.startswith(SFU_OPS):
            w.sfu_ops, w.sfu_hist = n, {str(n): 1}
        elif not op.startswith("arith.constant"):
            w.elem_ops, w.elem_hist = n, {str(n): 1}
    return w, ""


_WAIT_NUM = re.compile(r"ttg\.async_wait\b.*\{num = (\d+)")
_BLOCKED = re.compile(r"^(#\w+) = #(?:ttg|ttng|amdg?)\.\w+<\{.*warpsPerCTA = \[([0-9, ]+)\]")
_AXIS = re.compile(r"\baxis = (\d+)")
# a loop closed with its attributes, among them tt.warp_specialize: `} {tt.num_stages = 3 : i32, tt.warp_specialize}`
_SPLIT_LOOP = re.compile(r"^\}\s*\{[^{}]*\btt\.warp_specialize\b")
# a reduce's first operand's layout, where its region closes: an alias (`#blocked`) or a slice of one,
# which Triton prints inline (`#ttg.slice<{dim = 1, parent = #mma}>`)
_OPERAND_LAYOUT = re.compile(r"^\}\) : \(tensor<[^,>]+, (?:(#\w+)>|#ttg\.slice<\{dim = (\d+), parent = (#\w+)\}>)")


_BLOCKED_FULL = re.compile(r"^(#\w+) = #ttg\.blocked<\{sizePerThread = \[([0-9, ]+)\], threadsPerWarp = \[([0-9, ]+)\], "
                           r"warpsPerCTA = \[([0-9, ]+)\], order = \[([0-9, ]+)\]")
_PTR_TENSOR = re.compile(r"tensor<([0-9x]+)x!tt\.ptr<(\w+)>, (#\w+|#ttg\.slice<\{dim = (\d+), parent = (#\w+)\}>)>")
_SCALAR_PTR = re.compile(r"^\s*!tt\.ptr<\w+>")
_NUM_WARPS = re.compile(r'"ttg\.num-warps" = (\d+)')
LINE, SECTOR = 128, 32  # bytes: the L1's line and sector; it returns 4 sectors a clock (model 17)
BANKS, BANK_BYTES = 32, 4  # the L1's (and shared memory's) banks and their width (model 19)
# Model 20: the L1 lines a clock its tags are looked up at: fitted on our own kernel's loads (benchmarks/
# rank_l1.py, docs/rank/l1-h100.json: 32 lines took 10.1 clocks, 3.9 lines 1.6, where the banks want 1)
L1_LINES_CLK = 3.0
WARP_LANES = 64  # the most lanes a warp has (an AMD wavefront)


def _blocked_layouts(text: str) -> dict[str, tuple[list[int], ...]]:
    """Each #ttg.blocked alias of a TTGIR module: (sizePerThread, threadsPerWarp, warpsPerCTA, order)."""
    out: dict[str, tuple[list[int], ...]] = {}
    for line in text.splitlines():
        if not line.startswith("#"):
            break
        if m := _BLOCKED_FULL.match(line):
            out[m.group(1)] = tuple([int(x) for x in g.split(",")] for g in m.groups()[1:])
    return out


def _row_cost(lanes: int, stride: int, access: int, align: int, cost) -> float:
    """`cost(first byte of each lane's access)` for a warp instruction's row of lanes (`stride` bytes
    apart, each reading `access` bytes), the first lane at each multiple of `align` in a line, averaged
    (the address is not known); 1 at least."""
    offsets = range(0, LINE, max(1, min(align, LINE)))
    return sum(max(1.0, cost([o + lane * stride for lane in range(lanes)])) for o in offsets) / len(offsets)


def _units(starts: list[int], access: int, unit: int) -> set[int]:
    """The `unit`-byte blocks (lines, sectors, words) that accesses of `access` bytes at `starts` touch."""
    return {u for s in starts for u in range(s // unit, (s + access - 1) // unit + 1)}


def _lines_a_row(lanes: int, stride: int, access: int, align: int) -> float:
    """The L1 lines one warp instruction's row of lanes touches (_row_cost): a rule model 19 was checked
    against (benchmarks/rank_l1.py), not the one it takes (_banks_a_row)."""
    return _row_cost(lanes, stride, access, align, lambda starts: len(_units(starts, access, LINE)))


def _banks_a_row(lanes: int, stride: int, access: int, align: int, lines_a_clock: float = 0.0) -> float:
    """Model 19's rule: the L1's data passes one warp instruction's row of lanes takes (_row_cost). The L1
    and shared memory are one array of 32 banks, 4 bytes wide; a pass reads one word from each bank, so it
    takes as many passes as the most distinct words its lanes want from one bank. Contiguous lanes take a
    pass for each 128 bytes wherever they start (a row across two lines is still one: the FIR's unaligned
    taps); 16 lanes 64 bytes apart want 8 words from each of two banks: 8 passes where sectors, 4 a pass,
    say 4 (the conv1d's weights).

    Model 20 (`lines_a_clock`, L1_LINES_CLK): a row takes at least its lines' lookups, that many a clock.
    benchmarks/rank_l1.py measured it (docs/rank/l1-h100.json): 32 lanes 196 bytes apart, one word from
    each bank but 32 lines, took 10 clocks a load, not 1."""
    def passes(starts: list[int]) -> float:
        banks: dict[int, int] = {}
        for word in _units(starts, access, BANK_BYTES):
            banks[word % BANKS] = banks.get(word % BANKS, 0) + 1
        most = max(banks.values(), default=1)
        return max(most, len(_units(starts, access, LINE)) / lines_a_clock) if lines_a_clock > 0 else most
    return _row_cost(lanes, stride, access, align, passes)


def _wavefronts_a_row(lanes: int, stride: int, access: int, align: int) -> float:
    """The L1 wavefronts one warp instruction takes for a row of its lanes (models 17-18; _row_cost): the
    L1 returns 4 sectors (128 bytes) a wavefront, and a row (a line of its own) takes one at least."""
    return _row_cost(lanes, stride, access, align, lambda starts: len(_units(starts, access, SECTOR)) / (LINE // SECTOR))


def _l1_wavefronts(line: str, layouts: dict, num_warps: int, widest: int) -> float:
    """The L1 wavefronts of one global load or store (_access)."""
    return _access(line, layouts, num_warps, widest)[0]


def _access(line: str, layouts: dict, num_warps: int, widest: int, steps: tuple | None = None,
            rule: str = "sectors") -> tuple[float, float]:
    """The L1 wavefronts a program's warp instructions take for one global load or store through the
    registers (model 17): each warp issues an instruction for each `widest`-byte vector (or less, as its
    layout gives a thread contiguous elements) of its elements; one takes, for each row of lanes, the
    wavefronts of the sectors its lanes' addresses touch along the layout's fastest dim, taken as
    contiguous in memory (rows far apart: _wavefronts_a_row). A scalar access (an address the compiler
    could not prove aligned) starts anywhere in a line. (0, 0) for a layout this does not read (a matrix
    unit's, a linear layout) or a damaged one. Returns (wavefronts, warp instructions), a program's.

    Model 19 passes `steps` (strides.access_steps: the elements the address moves a step along each dim,
    None where not known) and `rule`: the lanes then sit `step` times further apart along the fastest dim
    (one address where the step is 0), rows along a dim whose step is 0 read the same addresses once, and
    a row takes the passes its lanes' words need of the L1's banks ("banks": _banks_a_row; "lines":
    _lines_a_row; "sectors", models 17-18's: _wavefronts_a_row); "passes" (model 20): the banks' passes
    or its lines' lookups, whichever is more."""
    types = line.split(" : ", 1)[1].split(" loc(")[0] if " : " in line else ""
    if _SCALAR_PTR.match(types):
        return float(num_warps), float(num_warps)  # one address a warp
    m = _PTR_TENSOR.search(types)
    if not m:
        return 0.0, 0.0
    if any(len(d) > 9 for d in m.group(1).split("x")):
        return 0.0, 0.0  # (a damaged snapshot's shape: no tensor a program holds)
    shape = [int(d) for d in m.group(1).split("x")]
    elem = ELEMENT_BYTES.get(m.group(2), 4)
    if m.group(4) is not None:  # a slice of a blocked layout drops that dim
        parent = layouts.get(m.group(5))
        if parent is None:
            return 0.0, 0.0
        dim = int(m.group(4))
        spt, tpw, wpc = ([v for i, v in enumerate(x) if i != dim] for x in parent[:3])
        order = [o - (o > dim) for o in parent[3] if o != dim]
    else:
        layout = layouts.get(m.group(3))
        if layout is None:
            return 0.0, 0.0
        spt, tpw, wpc, order = layout
    if not (len(spt) == len(tpw) == len(wpc) == len(shape)) or not order or order[0] >= len(shape) or \
            min(spt + tpw + wpc) < 1:
        return 0.0, 0.0
    fast = order[0]
    elements = 1  # a thread's elements of the tensor
    for d, n in enumerate(shape):
        elements *= max(1, min(n, spt[d]) * -(-n // (spt[d] * tpw[d] * wpc[d])))
    run = max(1, min(shape[fast], spt[fast]))  # a thread's contiguous elements
    vector = max(1, min(run, widest // elem))
    lanes = max(1, min(tpw[fast], -(-shape[fast] // run), WARP_LANES))  # distinct lanes along the row
    known = steps if steps is not None and len(steps) == len(shape) else None
    step = known[fast] if known is not None and isinstance(known[fast], int) else 1
    if step != 1:
        vector = 1  # (elements apart in memory are never one vector)
        if step == 0:
            lanes = 1  # every lane of the row reads one address
    rows = 1
    for d, n in enumerate(shape):
        if d != fast and not (known is not None and known[d] == 0):
            rows *= max(1, min(tpw[d], n))
    rows = min(rows, WARP_LANES)  # (a damaged snapshot's layout cannot make a warp wider than a wavefront)
    align = vector * elem  # a vector's alignment is proven; a scalar's address may fall anywhere
    row = (lanes, run * elem * max(1, abs(step)), vector * elem, align)
    if rule == "passes":
        per_instruction = rows * _banks_a_row(*row, lines_a_clock=L1_LINES_CLK)
    else:
        per_instruction = rows * {"banks": _banks_a_row, "lines": _lines_a_row}.get(rule, _wavefronts_a_row)(*row)
    return num_warps * (elements / vector) * per_instruction, num_warps * (elements / vector)


def _warps_per_cta(text: str) -> dict[str, list[int]]:
    """The warps each layout alias of a TTGIR module that says so (blocked, the matrix units' layouts)
    puts along each dim. Linear layouts say it in their bases, not read here: their reduces count 0."""
    warps: dict[str, list[int]] = {}
    for line in text.splitlines():
        if not line.startswith("#"):
            break
        if m := _BLOCKED.match(line):
            warps[m.group(1)] = [int(x) for x in m.group(2).split(",")]
    return warps


def _operand_warps(line: str, warps: dict[str, list[int]]) -> list[int]:
    """The warps along each dim of the layout of the reduce whose region `line` closes ([] if unknown)."""
    m = _OPERAND_LAYOUT.match(line)
    if not m:
        return []
    if m.group(1):
        return warps.get(m.group(1), [])
    parent = list(warps.get(m.group(3), []))
    if int(m.group(2)) < len(parent):
        del parent[int(m.group(2))]  # a slice drops its parent's dim
        return parent
    return []


def _scan(text: str, widest: tuple[int, int] = (16, 16), widths: dict | None = None) -> tuple[Work, Work, int, str, int]:
    """(main loop's work per iteration, straight-line work, top-level loops, matrix input dtype, the main
    loop's prefetch distance in iterations: 0 when it has no async_wait). `widest`: the widest global
    load and store a thread issues, in bytes (the SASS says: _widest_accesses); `widths`: each access's own,
    by its line's index in `text` (_access_widths; those it lacks take `widest`)."""
    main, straight, loops, dtype, prefetch, _, _ = _scan_all(text, widest, widths)[:7]
    return main, straight, loops, dtype, prefetch


def top_loops(text: str) -> tuple[list[Work], int | None]:
    """The work per iteration of each of a TTGIR's top-level scf.for loops (in text order), and which of
    them the model takes as the main one (None without a loop); the others it counts once, with the
    straight-line code."""
    return scan_loops(text)[5:]


def scan_loops(text: str) -> tuple[Work, Work, int, str, int, list[Work], int | None]:
    """_scan's figures, each top-level loop's work per iteration, and the main one's index among them."""
    return _scan_all(text)[:7]


def nested_loops(text: str) -> list[list[Work]]:
    """Per top-level loop (top_loops' order), the work per iteration of each loop directly inside it (a
    persistent kernel's K loop inside its loop over tiles), which the top-level loop's work holds once."""
    return _scan_all(text)[7]


def _scan_all(text: str, widest: tuple[int, int] = (16, 16), widths: dict | None = None):
    straight, loops, dtype = Work(), [], ""
    widths = widths or {}
    steps = access_steps(text)
    layouts = _blocked_layouts(text)
    num_warps = int(m.group(1)) if (m := _NUM_WARPS.search(text)) else 4
    children: list[list[Work]] = []  # per top-level loop: the loops directly inside it
    child_waits: list[list[list[int]]] = []  # their async_wait nums and commit groups, as `waits`
    child: Work | None = None
    waits: list[list[int]] = []  # per top-level loop: the async_wait nums and the commit groups in its body
    stack: list[str] = []  # the regions the current line is in: "func", "for", "reduce", "other"
    current: Work | None = None
    # the top-level loops that are partitions of one loop (automatic warp specialisation), each with the
    # warp_specialize op whose regions hold it (a kernel may split two loops, each with its own op)
    split: dict[int, int] = {}
    ws_op = 0
    warps = _warps_per_cta(text)
    axes: list[int] = []  # the axis of each tt.reduce whose region is open
    for index, line in enumerate(text.splitlines()):
        s = line.strip()
        if not s or s.startswith(("#", "//", "module", "loc", "}")) and not s.startswith("})"):
            if s.startswith("}") and s.endswith("{"):
                continue  # `} else {`: the same op's next region, at the same depth
            if s.startswith("}") and stack:
                kind = stack.pop()
                if kind == "for" and "for" not in stack:
                    current = None
                    if _SPLIT_LOOP.search(s):
                        split[len(loops) - 1] = ws_op
                elif kind == "for" and stack.count("for") == 1:
                    child = None
            continue
        if s.startswith("})"):
            if stack and stack.pop() == "reduce":
                # the reduce's operand types close its region: `}) : (tensor<8192xf32, #blocked>) -> f32`
                axis = axes.pop()
                spans = _operand_warps(s, warps)
                if axis < len(spans) and spans[axis] > 1:
                    (current if "for" in stack else straight).warp_reductions += 1
                    if child is not None:
                        child.warp_reductions += 1
            continue
        m = _OP.match(s)
        op = m.group(1) if m else ""
        if op == "tt.func":
            stack.append("func")
            continue
        if op == "ttg.warp_specialize":
            ws_op += 1
        if op and "func" in stack:
            w, dt = _op_work(op, s)
            dtype = dtype or dt
            if op in ("tt.load", "tt.store"):
                w.l1_wavefronts = _l1_wavefronts(s, layouts, num_warps, widest[op == "tt.store"])
                w.l1_wavefronts_own, instructions = _access(s, layouts, num_warps,
                                                            widths.get(index) or widest[op == "tt.store"])
                width = widths.get(index) or widest[op == "tt.store"]
                w.l1_wavefronts_strided = _access(s, layouts, num_warps, width, steps.get(index), rule="banks")[0]
                w.l1_passes = _access(s, layouts, num_warps, width, steps.get(index), rule="passes")[0]
                if op == "tt.load":
                    w.load_instructions = instructions
            if "for" in stack:
                current.add(w)
                if child is not None:
                    child.add(w)
                for wait in (waits[-1], child_waits[-1][-1] if child is not None else None):
                    if wait is None:
                        continue
                    if op == "ttg.async_wait" and (n := _WAIT_NUM.search(s)):
                        wait[0] = min(wait[0], int(n.group(1)))
                    elif op == "ttg.async_commit_group":
                        wait[1] += 1
            else:
                straight.add(w)
        if s.endswith("{"):
            if op == "scf.for" and "for" not in stack:
                current = Work()
                loops.append(current)
                children.append([])
                child_waits.append([])
                waits.append([1 << 30, 0])
            elif op == "scf.for" and stack.count("for") == 1:
                child = Work()
                children[-1].append(child)
                child_waits[-1].append([1 << 30, 0])
            if op == "tt.reduce":
                axes.append(int(m.group(1)) if (m := _AXIS.search(s)) else 0)
            stack.append("for" if op == "scf.for" else "reduce" if op == "tt.reduce" else "other")
    main = max(loops, key=lambda w: (w.dot_flops, w.load_bytes + w.store_bytes), default=Work())
    index = next((i for i, w in enumerate(loops) if w is main), None)
    # Triton's automatic warp specialisation splits one loop into a loop per partition (each closed by
    # `} {tt.warp_specialize}`), which run iteration for iteration: the main loop's siblings' work is the
    # main loop's, every iteration (their loads are its loads).
    siblings = [i for i, op in split.items() if i != index and op == split[index]] if index in split else []
    merged = Work()
    merged.add(main)
    for i in siblings:
        merged.add(loops[i])
    if siblings:  # and so do the loops inside them (a persistent kernel's K loops, one per partition)
        inner = [Work() for _ in children[index]]
        for i in [index] + siblings:
            if len(children[i]) == len(inner):
                for w, child in zip(inner, children[i]):
                    w.add(child)
                children[i] = []
        children[index] = inner
    prefetch = 0
    for i, (other, (num, groups)) in enumerate(zip(loops, waits)):
        if i in siblings:
            continue
        if other is not main:
            straight.add(other)  # a tail loop runs a few times at most: count it once
        else:
            if children[i]:
                # A loop that holds the pipelined one (a persistent kernel's loop over tiles around its K
                # loop): the heaviest inner loop's waits say how far ahead it copies; the outer body's
                # prologue copies do not.
                kids = children[i]
                j = max(range(len(kids)), key=lambda j: (kids[j].dot_flops, kids[j].load_bytes + kids[j].store_bytes))
                if child_waits[i][j][1]:
                    num, groups = child_waits[i][j]
            if groups:
                # The wait at the top of an iteration lets `num` groups stay in flight: the copies of the
                # num / groups iterations after this one. So a copy is issued that many iterations, plus
                # the one it is issued in, before it is waited for.
                prefetch = (num if num < 1 << 30 else 0) // groups + 1
    if siblings:
        loops = [merged if i == index else Work() if i in siblings else w for i, w in enumerate(loops)]
    return loops[index] if index is not None else main, straight, len(loops), dtype, prefetch, loops, index, children


def instruction_of(counters: dict) -> str:
    """How the matrix products run, from the assembly's counters."""
    get = counters.get
    if get("ptx.tcgen05", 0) or get("ttgir.tcgen05_mma", 0):
        return "tcgen05"
    if get("ptx.wgmma", 0) or get("ttgir.warp_group_dot", 0):
        return "wgmma"
    if get("ptx.mma.sync", 0) or get("sass.HMMA", 0):
        return "mma"
    if any(k.startswith("amdgcn.v_mfma") and v for k, v in counters.items()):
        return "mfma"
    if any(k.startswith("amdgcn.v_wmma") and v for k, v in counters.items()):
        return "wmma"
    return "fma"


_GLOBAL_ACCESS = re.compile(r"\b(LDG|STG)((?:\.\w+)*)")
_WIDTHS = {"128": 16, "64": 8, "U16": 2, "S16": 2, "U8": 1, "S8": 1}


def _widest_accesses(snapshot: Snapshot) -> tuple[int, int]:
    """The widest global load and store a thread issues, in bytes (LDG.E.128: 16), from the SASS; (16, 16)
    without one (AMD, a snapshot without SASS): the widest any thread can."""
    if "sass" not in snapshot.stage_files:
        return 16, 16
    widest = {"LDG": 0, "STG": 0}
    for kind, suffix in _GLOBAL_ACCESS.findall(snapshot.read("sass")):
        width = next((_WIDTHS[p] for p in suffix.split(".") if p in _WIDTHS), 4)
        widest[kind] = max(widest[kind], width)
    return widest["LDG"] or 16, widest["STG"] or 16


def _access_widths(snapshot: Snapshot, ttgir: str) -> dict[int, int]:
    """Model 18: the bytes a thread moves an instruction for each global tt.load and tt.store of the TTGIR,
    by its line's index: the widest PTX ld.global (st.global) of its source expression, as `explain` groups
    them (analyze.vectors.access_groups: by line, and by column where a line has two). {} without PTX;
    lines whose place the PTX does not show are left out (the kernel's widest stands in)."""
    if "ptx" not in snapshot.stage_files:
        return {}
    from ..analyze.vectors import access_groups
    from ..ir.lines import line_map
    widths = {(g.line, g.column, g.kind): g.width for g in access_groups(ttgir, snapshot.read("ptx"), "ptx")
              if g.via in ("ld.global", "st.global") and g.line and g.width}
    locs = line_map("ttgir", ttgir)
    out: dict[int, int] = {}
    for index, text in enumerate(ttgir.splitlines()):
        m = _OP.match(text.strip()) if ("tt.load" in text or "tt.store" in text) else None
        if not m or m.group(1) not in ("tt.load", "tt.store") or (loc := locs.source_of(index)) is None:
            continue
        kind = "load" if m.group(1) == "tt.load" else "store"
        # (a group alone on its line is named by its line: column 0)
        width = widths.get((loc.line, loc.column, kind)) or widths.get((loc.line, 0, kind))
        if width:
            out[index] = width
    return out


def bounded_loop(ttgir: str, widest: tuple[int, int] = (16, 16), widths: dict | None = None) -> tuple[float, Work] | None:
    """(iterations a program runs, the work of one of them) of a main loop that only moves data and whose
    bounds, and those of the loops inside it, are constants of the TTGIR: the same for every program and
    every launch (counted at two grids to make sure). None otherwise: a loop that multiplies (the flops
    count its iterations), or one whose bounds need the launch's arguments."""
    from .trips import loop_counts
    loops, main = top_loops(ttgir)
    if main is None or loops[main].dot_flops:
        return None
    counted = [loop_counts(ttgir, {}, grid) for grid in ((1, 1, 1), (5, 3, 2))]
    (counts, inner_counts), other = counted
    scanned = _scan_all(ttgir, widest, widths)  # (with the L1's wavefronts at these widths)
    loops, main, inner = scanned[5], scanned[6], scanned[7][scanned[6]]
    # (the two readers of the loops disagree only on damaged text: nothing is counted then)
    if counted[0] != other or len(counts) != len(loops) or len(inner_counts) != len(loops) or \
            len(inner_counts[main]) != len(inner) or counts[main] is None or \
            any(n is None for n in inner_counts[main]):
        return None
    trips = counts[main]
    if not trips:
        return None
    runs = Work()
    runs.add(loops[main], trips)
    for w, n in zip(inner, inner_counts[main]):
        runs.add(w, n - trips)  # the main loop's own work holds each inner loop once an iteration
    iteration = Work()
    iteration.add(runs, 1.0 / trips)
    iteration.async_loads, iteration.sync_loads = loops[main].async_loads, loops[main].sync_loads
    iteration.warp_reductions = loops[main].warp_reductions
    return trips, iteration


def facts_of(snapshot: Snapshot) -> Facts:
    """Read a snapshot's facts (its TTGIR, Triton's metadata, the analysis)."""
    a = analyze(snapshot)
    ttgir = snapshot.read("ttgir") if "ttgir" in snapshot.stage_files else None
    widest = _widest_accesses(snapshot)
    widths = _access_widths(snapshot, ttgir) if ttgir is not None else {}
    loop, straight, loops, dtype, prefetch = _scan(ttgir, widest, widths) if ttgir is not None else \
        (Work(), Work(), 0, "", 0)
    bounded = bounded_loop(ttgir, widest, widths) if ttgir is not None and loops else None
    res = a.resources
    occ = a.occupancy
    options = snapshot.meta.get("compile_options") or {}
    blocks = occ.value if occ else 1
    if occ and occ.unit == "waves/SIMD":  # AMD: programs per CU = waves per SIMD x SIMDs / waves per program
        simds = (snapshot.target.simds_per_cu if snapshot.target else 0) or 4
        blocks = max(1, occ.value * simds // max(1, res.num_warps or 1))
    constexprs = {e["name"]: e.get("value") for e in snapshot.meta.get("specialisation") or ()
                  if e.get("kind") == "constexpr"}
    warps = int(res.num_warps or options.get("num_warps") or 4)
    try:
        asked = int(options.get("num_warps") or 0)
    except (TypeError, ValueError):
        asked = 0
    return Facts(
        label=snapshot.label, target=snapshot.target_name, launchable=a.launch.launchable and a.status == "ok",
        launch_reasons=tuple(a.launch.reasons) or (() if a.status == "ok" else ("the compile failed",)),
        num_warps=warps, config_warps=asked if 0 < asked != warps else 0,
        num_stages=int(options.get("num_stages") or 1),
        registers=int(res.registers or 0), spill_bytes=int((res.spill_stores or 0) + (res.spill_loads or 0)),
        shared_bytes=int(res.shared or 0), blocks_per_sm=max(0, int(blocks)),
        occupancy_limiter=occ.limiter if occ else "", instruction=instruction_of(a.counters), dot_dtype=dtype,
        loop=loop.as_dict() if loops else {}, straight=straight.as_dict(), loops=loops, constexprs=constexprs,
        warp_specialized=bool(a.counters.get("ttgir.warp_specialize", 0)), mma_n=_wgmma_n(a.counters),
        mma_m_reps=wgmma_m_reps(ttgir) if ttgir is not None else -1,
        ragged_loop=ragged_main_loop(ttgir) if ttgir is not None else -1,
        prefetch=prefetch, bounded_trips=bounded[0] if bounded else -1.0,
        bounded_loop=bounded[1].as_dict() if bounded else {},
        records=record_streams(ttgir) if ttgir is not None else None, **_sass_facts(snapshot))


def _wgmma_n(counters: dict) -> int:
    shapes = [(v, k) for k, v in counters.items() if k.startswith("ptx.wgmma.m") and v]
    if not shapes:
        return 0
    m = re.match(r"ptx\.wgmma\.m\d+n(\d+)k", max(shapes)[1])
    return int(m.group(1)) if m else 0


_VALUE = re.compile(r"%[\w$.-]+")
_FOR_BOUNDS = re.compile(r"scf\.for %[\w$.-]+ = (%[\w$.#-]+) to (%[\w$.#-]+) step")


def ragged_main_loop(text: str) -> int:
    """1 when the bounds of the TTGIR's main loop (scan_loops' choice among the top-level scf.for loops)
    depend on tt.get_program_id through the ops before it, 0 when not, 0 without a loop. Line by line:
    each op's results depend on the program id when one of its operands does (the text is a snapshot's:
    untrusted, so no pattern that backtracks over a line)."""
    index = scan_loops(text)[6]
    if index is None:
        return 0
    follows: set[str] = set()
    depth, inside, seen = 0, -1, -1  # inside: the depth a top-level loop opened at (-1: in none)
    for line in text.splitlines():
        s = line.strip()
        if s.startswith(("#", "//")):
            continue
        if inside < 0:
            results, rhs = s.split(" = ", 1) if s.startswith("%") and " = " in s else ("", s)
            rhs = rhs.split(" loc(", 1)[0]
            if rhs.startswith("scf.for ") and rhs.endswith("{"):
                seen, inside = seen + 1, depth
                if seen == index:
                    bounds = _FOR_BOUNDS.match(rhs)
                    return int(bool(bounds) and any(b.split("#", 1)[0] in follows for b in bounds.groups()))
            elif results and (rhs.startswith("tt.get_program_id") or
                              any(v.split("#", 1)[0] in follows for v in _VALUE.findall(rhs.split(" : ", 1)[0]))):
                follows.update(r.split(":", 1)[0].strip() for r in results.split(","))
        depth += s.count("{") - s.count("}")
        if 0 <= inside and depth <= inside:
            inside = -1
    return 0


_WARPS_M = re.compile(r"warpsPerCTA = \[(\d+),")
_INSTR_M = re.compile(r"instrShape = \[(\d+),")
_RESULT = re.compile(r"\s*tensor<((?:\d+x)+)[a-z][a-z0-9]*,\s*(#\w+)>")  # a dot's result: dims, layout


def wgmma_m_reps(text: str) -> int:
    """How many 64-row wgmma instructions a warpgroup issues down M, per k-step and N-column, for the
    TTGIR's heaviest warp_group_dot: its M over the rows its layout's warps cover (16 a warp); 0 without
    one. A 256x128 tile at 8 warps is 2 (each warpgroup 128 rows), a 128x256 one 1. Line by line, with
    no pattern that backtracks over a line (the text is a snapshot's: untrusted)."""
    layouts: dict[str, tuple[int, int]] = {}
    dots: list[tuple[list[int], str]] = []
    for line in text.splitlines():
        if line.startswith("#") and " = #ttg.nvidia_mma<{versionMajor = 3," in line:
            warps, instr = _WARPS_M.search(line), _INSTR_M.search(line)
            if warps and instr:
                layouts[line.split(" ", 1)[0]] = (int(warps.group(1)), int(instr.group(1)))
        elif "ttng.warp_group_dot " in line and "->" in line:
            if m := _RESULT.match(line.rsplit("->", 1)[1]):
                dots.append(([int(d) for d in m.group(1).rstrip("x").split("x")], m.group(2)))
    best, reps = 0, 0
    for dims, alias in dots:
        if len(dims) < 2 or alias not in layouts or dims[-2] * dims[-1] <= best:
            continue
        rows, (warps_m, instr_m) = dims[-2], layouts[alias]
        best, reps = rows * dims[-1], max(1, rows // max(1, warps_m * instr_m))
    return reps


_LOCAL = re.compile(r"\b(?:LDL|STL)((?:\.[A-Z0-9]+)*)\b")
_ADDR = re.compile(r"^\s*/\*([0-9a-f]+)\*/")
_BRANCH = re.compile(r"\bBRA\b[^`]*`\(\.(L_x_\d+)\)")
_LABEL = re.compile(r"^\.(L_x_\d+):")
_WIDTH = {"64": 8, "128": 16, "U8": 1, "S8": 1, "U16": 2, "S16": 2}


def _sass_spills(snapshot: Snapshot) -> dict:
    """Spill bytes per thread inside the main loop (the longest backward branch of the SASS) and outside."""
    if "sass" not in snapshot.stage_files:
        return {}
    return split_spills(snapshot.read("sass"))


def _sass_facts(snapshot: Snapshot) -> dict:
    """The SASS read once: its spills (split_spills) and its instructions (split_instructions), each in
    the main loop and outside it; {} without a SASS stage."""
    if "sass" not in snapshot.stage_files:
        return {}
    sass = snapshot.read("sass")
    out = {**split_spills(sass), **split_instructions(sass)}
    function = snapshot.meta.get("function")
    if "cubin" in snapshot.stage_files and isinstance(function, str):
        from .controls import stall_cycles
        out.update(stall_cycles(sass, snapshot.read_bytes("cubin"), function, _main_loop(sass.splitlines())) or {})
    return out


def _main_loop(lines: list[str]) -> tuple[int, int] | None:
    """(first, last) line of the longest backward branch of an nvdisasm listing (the main loop), or None.
    Not a loop: a branch to itself (the `BRA` after a program's `EXIT`), nor a branch that jumps back over
    an unpredicated `EXIT` (the retry blocks Hopper and Blackwell kernels put after it, which wait on an
    mbarrier and go back into the body)."""
    labels: dict[str, int] = {}
    loops: list[tuple[int, int]] = []
    exits: list[int] = []
    for i, line in enumerate(lines):
        if m := _LABEL.match(line):
            labels[m.group(1)] = i
        if _ADDR.match(line) and _EXIT.search(line):
            exits.append(i)
        b = _BRANCH.search(line)
        if b and b.group(1) in labels and any(_ADDR.match(x) for x in lines[labels[b.group(1)]:i]) and \
                not any(labels[b.group(1)] <= e <= i for e in exits):
            loops.append((labels[b.group(1)], i))  # a branch back to a label above it: a loop
    return max(loops, key=lambda r: r[1] - r[0]) if loops else None


_EXIT = re.compile(r"^\s*/\*[0-9a-f]+\*/\s+EXIT\b")  # unpredicated: no @P guard before it
_NOP = re.compile(r"\bNOP\b")
_LDG = re.compile(r"\bLDG\b")


def split_instructions(sass: str) -> dict:
    """{"loop_instructions", "other_instructions", "loop_global_loads"} of an nvdisasm listing: the
    instructions (NOPs aside) inside its longest backward branch, and the rest; and the global loads
    (LDG) inside it. Each is what one warp issues: an iteration's, and the program's once."""
    lines = sass.splitlines()
    issued = [1 if _ADDR.match(line) and not _NOP.search(line) else 0 for line in lines]
    span = _main_loop(lines)
    inside = sum(issued[span[0]:span[1] + 1]) if span else 0
    loads = sum(1 for line in lines[span[0]:span[1] + 1] if _ADDR.match(line) and _LDG.search(line)) if span else 0
    return {"loop_instructions": inside, "other_instructions": sum(issued) - inside, "loop_global_loads": loads}


def split_spills(sass: str) -> dict:
    """{"loop_spill_bytes", "other_spill_bytes"} of an nvdisasm listing: the local loads and stores (LDL,
    STL, by width) inside its main loop (_main_loop), and the rest."""
    lines = sass.splitlines()
    sizes: list[int] = []  # bytes of each line's local load or store (0 for other lines)
    for line in lines:
        m = _LOCAL.search(line) if _ADDR.match(line) else None
        width = 4
        if m:
            for suffix in m.group(1).split(".")[1:]:
                width = _WIDTH.get(suffix, width)
        sizes.append(width if m else 0)
    total = sum(sizes)
    span = _main_loop(lines)
    if span is None:
        return {"loop_spill_bytes": 0, "other_spill_bytes": total}
    inside = sum(sizes[span[0]:span[1] + 1])
    return {"loop_spill_bytes": inside, "other_spill_bytes": total - inside}
