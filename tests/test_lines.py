"""Debug locations to Python lines: small hand-written IR for each format, then real compiled stages."""
import pytest

from irscope.ir.lines import SourceLoc, kernel_file, line_map, same_file
from irscope.ir.outline import outline
from irscope.store.snapshot import load_snapshot

MLIR = '''#loc = loc("/home/u/k.py":3:1)
module {
  tt.func public @k(%x: !tt.ptr<f32> loc("x"(#loc))) attributes {noinline = false} {
    %0 = tt.get_program_id x : i32 loc(#loc2)
    %1 = scf.for %i = %c0 to %c4 step %c1 iter_args(%a = %0) -> (i32) : i32 {
      %2 = arith.addi %a, %i : i32 loc(#loc3)
      scf.yield %2 : i32 loc(#loc3)
    } loc(#loc6)
    tt.return loc(#loc)
  } loc(#loc)
} loc(#loc)
#loc2 = loc("/home/u/k.py":4:24)
#loc3 = loc(callsite(#loc4 at #loc5))
#loc4 = loc("/lib/triton/language/standard.py":43:12)
#loc5 = loc("pid"(#loc7))
#loc6 = loc("/home/u/k.py":6:5)
#loc7 = loc("/home/u/k.py":7:9)
'''


def test_mlir_locations_resolve_aliases_names_and_call_sites():
    m = line_map("ttgir", MLIR)
    assert m.locs[3] == SourceLoc("/home/u/k.py", 4, 24)
    inlined = m.locs[5]
    assert (inlined.file, inlined.line) == ("/lib/triton/language/standard.py", 43)
    assert inlined.inlined_at == SourceLoc("/home/u/k.py", 7, 9)
    assert m.source_of(5, "k.py").line == 7  # the frame in the kernel's file
    assert m.locs[0] is None and m.locs[-1] is None  # #loc definitions are not code


def test_mlir_region_opener_takes_the_location_after_its_closing_brace():
    m = line_map("ttir", MLIR)
    assert m.locs[4] == SourceLoc("/home/u/k.py", 6, 5)  # `scf.for ... {` gets `} loc(#loc6)`
    assert m.lines_for(6, "/home/u/k.py") == [4, 7]


def test_lines_for_follows_inlining_to_the_call_site():
    m = line_map("ttgir", MLIR)
    assert m.lines_for(7, "/home/u/k.py") == [5, 6]
    assert m.lines_for(43, "standard.py") == [5, 6]


LLIR = '''define void @k(ptr %0) !dbg !4 {
  %2 = add i32 %1, 1, !dbg !12
  %3 = add i32 %2, 1, !dbg !13
  ret void
}
!1 = !DIFile(filename: "k.py", directory: "/home/u")
!4 = distinct !DISubprogram(name: "k", scope: !1, file: !1, line: 3, unit: !0)
!12 = !DILocation(line: 4, column: 2, scope: !4)
!13 = !DILocation(line: 43, column: 12, scope: !14, inlinedAt: !16)
!14 = distinct !DISubprogram(name: "cdiv", scope: !15, file: !15, line: 30, unit: !0)
!15 = !DIFile(filename: "standard.py", directory: "/lib/triton/language")
!16 = !DILocation(line: 9, column: 5, scope: !4)
'''


def test_llir_debug_locations_with_inlining():
    m = line_map("llir", LLIR)
    assert m.locs[0] == SourceLoc("/home/u/k.py", 3, 0)
    assert m.locs[1] == SourceLoc("/home/u/k.py", 4, 2)
    assert m.locs[2].file == "/lib/triton/language/standard.py"
    assert m.locs[2].inlined_at == SourceLoc("/home/u/k.py", 9, 5)
    assert m.locs[3] is None and m.locs[6] is None


PTX = '''.visible .entry k(
)
{
\t.loc\t1 13 9
\t// begin inline asm
\t.loc\t1 13 9
\tmov.u32 %r1, 0x0;
\t.loc\t1 14 9
\tmov.u32 %r2, 0x0;
\t// end inline asm
\t.loc\t2 43 13, function_name $L__info_string0, inlined_at 1 15 15 // standard.py:43:13
\tadd.s32 %r3, %r1, 127;
$L__tmp1:
\tret;
}
\t.file\t1 "/home/u/k.py"
\t.file\t2 "/lib/triton/language/standard.py"
'''


def test_ptx_inline_asm_keeps_the_location_it_opened_under():
    m = line_map("ptx", PTX)
    assert m.locs[6].line == 13 and m.locs[8].line == 13  # not 14: LLVM numbers inline asm lines
    assert m.locs[11].file.endswith("standard.py") and m.locs[11].inlined_at.line == 15
    assert m.locs[12] is None  # a label
    assert m.lines_for(15, "k.py") == [10, 11, 13]


AMDGCN = '''k:
\t.file\t1 "/home/u" "k.py"
\t.loc\t1 9 0 prologue_end              ; k.py:9:0
\ts_load_dwordx2 s[2:3], s[0:1], 0x0
\t.loc\t1 0 0 is_stmt 0                 ; :0:0
\ts_mov_b64 s[24:25], s[2:3]
\t.file\t2 "/lib/triton/language" "standard.py"
\t.loc\t2 43 13 is_stmt 1               ; standard.py:43:13 @[ k.py:15:15 ]
\ts_add_i32 s2, s9, 0xff
.Lfunc_end0:
\t.section\t.AMDGPU.csdata
'''


def test_amdgcn_locations_line_zero_and_inlined_comments():
    m = line_map("amdgcn", AMDGCN)
    assert m.locs[3] == SourceLoc("/home/u/k.py", 9, 0)
    assert m.locs[5] is None  # `.loc 1 0 0`: compiler-made code
    assert m.locs[8].inlined_at == SourceLoc("/home/u/k.py", 15, 15)
    assert m.locs[10] is None


SASS = '''k:
\t//## File "/home/u/k.py", line 9
        /*0000*/                   LDC R1, c[0x0][0x28] ;
\t//## File "/lib/triton/language/standard.py", line 43 inlined at "/home/u/k.py", line 14
        /*0010*/                   LDC.64 R2, c[0x0][0x228] ;
.L_x_0:
        /*0020*/                   EXIT ;
'''


def test_sass_line_comments_with_and_without_inlining():
    m = line_map("sass", SASS)
    assert m.locs[2] == SourceLoc("/home/u/k.py", 9, 0)
    assert m.locs[4].inlined_at == SourceLoc("/home/u/k.py", 14, 0)
    assert m.locs[5] is None and m.locs[6].file.endswith("standard.py")


def test_same_file_matches_trailing_path_parts_only():
    assert same_file("/work/kernels/matmul.py", "kernels/matmul.py")
    assert same_file("matmul.py", "/a/b/matmul.py")
    assert not same_file("/a/matmul.py", "/a/add.py")
    assert not same_file("/x/kernels/matmul.py", "other/matmul.py")


# -- real compiled stages ---------------------------------------------------------------------------------

@pytest.mark.parametrize("target", ["sm_90a", "gfx942"])
def test_every_stage_of_a_real_matmul_maps_back_to_its_source(compiled, target):
    snap = load_snapshot(compiled / "matmul" / "default" / target)
    maps = {stage: line_map(stage, snap.read(stage)) for stage in snap.text_stages}
    kfile = kernel_file(list(maps.values()))
    assert kfile is not None and kfile.endswith("matmul.py")
    source = snap.python_source().splitlines()
    load_a = next(i + 1 for i, ln in enumerate(source) if "a = tl.load(a_ptrs" in ln)
    dot = next(i + 1 for i, ln in enumerate(source) if "tl.dot(a, b, acc)" in ln)
    for stage, m in maps.items():
        assert m.lines_for(load_a, kfile), f"{stage}: tl.load of A left no trace"
        if stage in ("ttgir", "llir"):
            text = snap.read(stage).splitlines()
            lines = m.lines_for(dot, kfile)
            assert any(w in text[i] for i in lines for w in ("dot", "mma", "mfma")), stage
    # The loop's opening line in TTGIR maps to the Python `for`.
    ttgir = snap.read("ttgir").splitlines()
    for_line = next(i + 1 for i, ln in enumerate(source) if ln.strip().startswith("for k in range"))
    loop = next(i for i, ln in enumerate(ttgir) if "scf.for" in ln)
    assert maps["ttgir"].source_of(loop, kfile).line == for_line


def test_real_stages_have_functions_and_loops(compiled):
    for target in ("sm_90a", "gfx942"):
        snap = load_snapshot(compiled / "matmul" / "default" / target)
        for stage in snap.text_stages:
            marks = outline(stage, snap.read(stage))
            kinds = {m.kind for m in marks}
            assert "function" in kinds, (target, stage)
            assert "loop" in kinds, (target, stage)
            assert any(m.name == "matmul_kernel" for m in marks if m.kind == "function"), (target, stage)
        py = outline("python", snap.python_source())
        assert [m.name for m in py if m.kind == "function"][0] == "matmul_kernel"


def test_python_landmarks_after_a_form_feed_are_on_their_own_lines():
    """str.splitlines breaks at a form feed, which Python does not: f/F jumped one line late after one."""
    from irscope.ir.outline import outline
    text = "import triton\n\x0c\n@triton.jit\ndef kernel(x):\n    for i in range(3):\n        pass\n"
    marks = outline("python", text)
    lines = text.split("\n")
    assert [(m.kind, m.name) for m in marks] == [("function", "kernel"), ("loop", "for")]
    assert lines[marks[0].line].startswith("def kernel") and lines[marks[1].line].lstrip().startswith("for ")
