from irscope.ir.resources import Resources, parse_amdgcn, parse_ptxas_log, parse_res_usage

PTXAS = """ptxas-blackwell info    : Compiling entry function 'matmul_kernel' for 'sm_90a'
ptxas-blackwell info    : Function properties for matmul_kernel
    8 bytes stack frame, 88 bytes spill stores, 96 bytes spill loads
ptxas-blackwell info    : Used 255 registers, used 1 barriers
"""


def test_ptxas_log_gives_registers_spills_stack_and_barriers():
    r = parse_ptxas_log(PTXAS)
    assert (r.registers, r.spill_stores, r.spill_loads, r.stack, r.barriers) == (255, 88, 96, 8, 1)


def test_res_usage_gives_registers_stack_and_local_memory():
    r = parse_res_usage(" Function k:\n  REG:28 STACK:16 SHARED:1024 LOCAL:24 CONSTANT[0]:576 TEXTURE:0\n")
    assert (r.registers, r.stack, r.local) == (28, 16, 24)


AMDGCN = """; NumVgprs: 120
; Occupancy: 4
	.amdgpu_metadata
---
amdhsa.kernels:
  - .agpr_count:     64
    .group_segment_fixed_size: 32768
    .name:           k
    .private_segment_fixed_size: 16
    .sgpr_count:     40
    .vgpr_count:     184
    .vgpr_spill_count: 3
amdhsa.target:   amdgcn-amd-amdhsa--gfx942
...
	.end_amdgpu_metadata
"""


def test_amdgcn_metadata_gives_vgprs_agprs_sgprs_lds_and_scratch():
    r = parse_amdgcn(AMDGCN)
    assert (r.registers, r.agprs, r.sgprs, r.shared, r.scratch, r.spill_stores, r.occupancy) == \
        (120, 64, 40, 32768, 16, 3, 4)


def test_merging_fills_only_gaps():
    a = Resources(registers=10)
    assert a.merged(Resources(registers=99, shared=5)) == Resources(registers=10, shared=5)


def test_nothing_known_from_text_without_reports():
    assert parse_ptxas_log("") == Resources() and parse_amdgcn("v_add") == Resources()


def test_an_amd_kernels_registers_are_its_own_not_those_of_a_noinline_function_it_calls():
    """A `noinline` callee is listed first, with a "; NumVgprs:" of its own: that was read as the kernel's
    (32 VGPRs for a kernel whose own "; Kernel info:" block and .vgpr_count say 54)."""
    from pathlib import Path
    from irscope.ir.resources import parse_amdgcn
    listing = (Path(__file__).resolve().parent.parent / "snapshots" / "add" / "default" / "gfx942"
               / "add_kernel.amdgcn").read_text()
    own = parse_amdgcn(listing)
    callee = ("\t.p2align\t2\nhelper:\n\ts_setpc_b64 s[30:31]\n; NumVgprs: 3\n; NumAgprs: 0\n"
              "; TotalNumVgprs: 3\n; Occupancy: 1\n")
    with_callee = parse_amdgcn(callee + listing)
    assert own.registers and own.registers != 3 and own.occupancy and own.occupancy != 1
    assert (with_callee.registers, with_callee.occupancy) == (own.registers, own.occupancy)
