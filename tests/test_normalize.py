from irscope.ir.normalize import normalize

MLIR = '''#loc = loc("/home/u/k.py":3:1)
module {
  tt.func public @k(%x: !tt.ptr<f32> loc("x"(#loc))) attributes {noinline = false} {
    %0 = tt.get_program_id x : i32 loc(#loc2)
    tt.return loc(#loc3)
  } loc(#loc)
} loc(#loc)
#loc2 = loc("/home/u/k.py":4:24)
#loc3 = loc(callsite(#loc4 at #loc5))
'''


def test_mlir_loses_locations_and_keeps_ops():
    text = normalize("ttgir", MLIR)
    assert "loc" not in text
    assert "%0 = tt.get_program_id x : i32\n" in text
    assert "tt.func public @k(%x: !tt.ptr<f32>) attributes {noinline = false} {" in text


LLIR = '''; ModuleID = 'LLVMDialectModule'
source_filename = "LLVMDialectModule"
define void @k(ptr %0) !dbg !4 {
  %2 = add i32 %1, 1, !dbg !12
  #dbg_value(i32 %1, !7, !DIExpression(), !12)
  ret void, !dbg !13
}
!llvm.dbg.cu = !{!0}
!0 = distinct !DICompileUnit(language: DW_LANG_C, file: !1)
!1 = !DIFile(filename: "k.py", directory: "/home/u")
!12 = !DILocation(line: 4, column: 2, scope: !4)
!5 = !{i32 4, !"nvvm-reflect-ftz", i32 1}
'''


def test_llir_loses_debug_info_and_keeps_other_metadata():
    text = normalize("llir", LLIR)
    assert "dbg" not in text and "DI" not in text and "/home/u" not in text
    assert "%2 = add i32 %1, 1\n" in text
    assert "define void @k(ptr %0) {" in text
    assert '!5 = !{i32 4, !"nvvm-reflect-ftz", i32 1}' in text


PTX = '''.file	1 "/home/u/k.py"
.visible .entry k(
)
{
$L__func_begin0:
	.loc	1 3 0
$L__tmp0:
	mov.u32 	%r1, %ctaid.x;
$L__BB0_2:
	ret;
$L__func_end0:
}
	.section	.debug_abbrev
	{
.b8 1
	}
'''


def test_ptx_loses_loc_file_debug_labels_and_sections_but_keeps_branch_labels():
    text = normalize("ptx", PTX)
    assert ".loc" not in text and ".file" not in text and "debug_abbrev" not in text
    assert "$L__tmp0" not in text and "$L__func_begin0" not in text
    assert "$L__BB0_2:" in text and "mov.u32 \t%r1, %ctaid.x;" in text


SASS = '''	//## File "/home/u/k.py", line 7
        /*0020*/                   LDC.64 R4, c[0x0][0x210] ;
        /*0030*/                   S2R R3, SR_CTAID.X ;
'''


def test_sass_loses_line_comments_and_offsets():
    assert normalize("sass", SASS).split() == ["LDC.64", "R4,", "c[0x0][0x210]", ";", "S2R", "R3,", "SR_CTAID.X", ";"]


def test_paths_left_in_unknown_stages_become_file_names():
    assert normalize("other", 'x "/home/user/proj/k.py" y') == 'x "k.py" y'


def test_the_checkout_path_digest_in_a_kernel_files_module_name_is_not_a_difference():
    from irscope.ir.normalize import normalize
    a = 'tt.call @"irscope_kernels.attention_ws_266c4504._consume_blocks__x"(%q) : (i32) -> ()'
    b = 'tt.call @"irscope_kernels.attention_ws_df7fb1eb._consume_blocks__x"(%q) : (i32) -> ()'
    assert normalize("glir", a) == normalize("glir", b) != normalize("glir", b.replace("_consume", "_produce"))
    assert "irscope_kernels.attention_ws._consume_blocks" in normalize("glir", a)
