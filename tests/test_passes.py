"""The pass timeline from dump text alone: parsing Triton's dump formats, the after-pass semantics,
storage and reading back, op counting, patterns. No Triton import (tests/test_passes_compile.py
compiles real kernels)."""
import io
from pathlib import Path

import pytest

from irscope.errors import UsageError
from irscope.passes.dump import final_marker, parse_pipeline, pipeline_marker, stage_marker
from irscope.passes.record import PassRecorder
from irscope.passes import Timeline, compile_pattern, count_ops, find_pattern, line_origin, normalize_line

# Module text as Triton prints it before each pass (MLIR_ENABLE_DUMP=1, Triton 3.9), with locations.
KERNEL_V0 = """\
module {
  tt.func public @k(%x_ptr: !tt.ptr<f32> loc("x_ptr"(#loc))) attributes {noinline = false} {
    %pid = tt.get_program_id x : i32 loc(#loc2)
    %pid_0 = tt.get_program_id x : i32 loc(#loc3)
    %sum = arith.addi %pid, %pid_0 : i32 loc(#loc4)
    tt.return loc(#loc5)
  } loc(#loc)
} loc(#loc)
#loc = loc("/home/u/k.py":3:0)
#loc2 = loc("/home/u/k.py":4:10)
#loc3 = loc("/home/u/k.py":5:10)
#loc4 = loc("/home/u/k.py":6:10)
#loc5 = loc("/home/u/k.py":6:4)
"""
KERNEL_V1 = KERNEL_V0.replace("    %pid_0 = tt.get_program_id x : i32 loc(#loc3)\n", "").replace("%pid_0", "%pid")
KERNEL_V2 = KERNEL_V1.replace("#loc2 = loc(\"/home/u/k.py\":4:10)", "#loc2 = loc(\"/home/u/k.py\":4:11)")


def header(cls: str, arg: str, op: str = "builtin.module", sym: str = "") -> str:
    where = f"('{op}' operation{': @' + sym if sym else ''})"
    return f"// -----// IR Dump Before {cls}: {arg} {where} //----- //\n"


def stream(*parts) -> io.BytesIO:
    return io.BytesIO(b"".join(p if isinstance(p, bytes) else p.encode() for p in parts))


def record(*parts, level="mlir"):
    rec = PassRecorder(level)
    log = rec.read(stream(*parts))
    return rec.capture(), log


def timeline(capture, tmp_path: Path) -> Timeline:
    for name, data in capture.files().items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    import json
    return Timeline(tmp_path / "passes", json.loads((tmp_path / "passes/index.json").read_text()), "k")


def test_each_step_holds_the_ir_after_its_pass():
    cap, log = record(stage_marker("ttir"), header("CSEPass", "cse"), KERNEL_V0,
                      header("SymbolDCEPass", "symbol-dce"), KERNEL_V1, final_marker("ttir", KERNEL_V1))
    cse, dce = cap.steps
    assert (cse["name"], cse["stage"], dce["name"]) == ("cse", "ttir", "symbol-dce")
    # before-dumps: the IR after cse is the dump before symbol-dce; after the last pass, the stage's module
    assert cse["before"] == cap.initial and cse["after"] == dce["before"] != cse["before"]
    assert dce["after"] == dce["before"] and not dce["changed"]
    assert cse["changed"] and cse["ops"] == {"tt.get_program_id": -1}
    assert (cse["added"], cse["removed"]) == (1, 2)  # one op renamed, one gone; #loc lines do not count
    assert log == ""


def test_a_change_of_locations_only_is_told_apart(tmp_path):
    cap, _ = record(header("CSEPass", "cse"), KERNEL_V1, final_marker("ttir", KERNEL_V2))
    tl = timeline(cap, tmp_path)
    (step,) = tl.steps
    assert step.changed and step.status == "debug info only"
    assert tl.diff(step) == [] and tl.diff(step, raw=True)  # normalised: nothing; raw: the #loc2 line


def test_function_level_runs_inside_a_pass_fold_into_it_and_module_level_ones_nest():
    pipeline = "any(inline{default-pipeline=canonicalize max-iterations=4 },optimize{x=1},cse)"
    cap, _ = record(pipeline_marker(pipeline),
                    header("InlinerPass", "inline{default-pipeline=canonicalize max-iterations=4 }"), KERNEL_V0,
                    header("CanonicalizerPass", "canonicalize{max-iterations=10}", "tt.func", "helper"), KERNEL_V0,
                    header("Optimize", "optimize{x=1}"), KERNEL_V0,
                    header("CanonicalizerPass", "canonicalize{max-iterations=10}"), KERNEL_V0,
                    header("CSEPass", "cse"), KERNEL_V1, final_marker("ttir", KERNEL_V1))
    names = [(s["name"], s.get("within", ""), s.get("nested", [])) for s in cap.steps]
    assert names == [("inline", "", ["canonicalize on @helper"]), ("optimize", "", []),
                     ("canonicalize", "optimize", []), ("cse", "", [])]


def test_pipeline_strings_give_each_pass_and_its_anchor():
    text = "any(inline{default-pipeline=canonicalize opts={a b}},llvm.func(canonicalize-llvm-ir),cse)"
    assert parse_pipeline(text) == [("inline", "any"), ("canonicalize-llvm-ir", "llvm.func"), ("cse", "any")]


def test_intermediate_dumps_of_a_pass_become_its_parts():
    internal = "// -----// SoftwarePipeliner internal IR Dump After: LowerLoops\n"
    cap, _ = record(header("TritonGPUPipeline", "tritongpu-pipeline{num-stages=3}"), KERNEL_V0,
                    internal, KERNEL_V1.replace("loc(#loc2)", ""),
                    header("CSEPass", "cse"), KERNEL_V1, final_marker("ttgir", KERNEL_V1))
    parts = [(s["name"], s.get("part")) for s in cap.steps]
    assert parts == [("tritongpu-pipeline", "LowerLoops"), ("tritongpu-pipeline", "finish"), ("cse", None)]
    assert cap.irs[cap.steps[0]["after"]]["style"] == "internal"
    assert cap.steps[0]["ops"] == {"tt.get_program_id": -1}


LL_MODULE = """\
; ModuleID = 'LLVMDialectModule'
source_filename = "LLVMDialectModule"

define ptx_kernel void @k(ptr addrspace(1) %0) !dbg !4 {
  %2 = tail call i32 @llvm.nvvm.read.ptx.sreg.tid.x(), !dbg !7
  %3 = add i32 %2, 1, !dbg !8
  %4 = add i32 %2, 1, !dbg !8
  tail call void asm sideeffect "@$2 st.global.b32 [ $1 + 0 ], { $0 };", "r,l,b"(i32 %3, ptr addrspace(1) %0, i1 true), !dbg !9
  ret void, !dbg !10
}

declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
!4 = distinct !DISubprogram(name: "k", scope: !1, file: !1, line: 3)
"""
LL_FUNCTION = LL_MODULE.split("\n\n")[1].replace("  %4 = add i32 %2, 1, !dbg !8\n", "")


def test_llvm_function_dumps_are_spliced_into_the_module(tmp_path):
    cap, log = record(stage_marker("llir"), "Running pass: AnnotationPass on [module]\n",
                      "; *** IR Dump After AnnotationPass on [module] ***\n", LL_MODULE,
                      "Running pass: EarlyCSEPass on k\n",
                      "; *** IR Dump After EarlyCSEPass on k ***\n", LL_FUNCTION, level="all")
    first, cse = cap.steps
    assert first["form"] == "llvm" and "changed" not in first  # the first LLVM IR: nothing to compare with
    assert cse["name"] == "EarlyCSEPass" and cse["scope"] == "function k"
    assert cse["ops"] == {"add": -1} and log == ""
    tl = timeline(cap, tmp_path)
    after = tl.text(tl.steps[1].after)
    assert "declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()" in after and "%4 = add" not in after
    assert tl.irs[tl.steps[1].after].ops["asm st.global.b32"] == 1


def test_lines_that_are_not_dumps_stay_in_the_log():
    cap, log = record("warning: something odd\n", header("CSEPass", "cse"), KERNEL_V0, final_marker("ttir", KERNEL_V0))
    assert log == "warning: something odd\n" and len(cap.steps) == 1


def test_the_stream_is_read_line_by_line_never_whole():
    class LinesOnly:  # no read(): the recorder must iterate
        def __init__(self, data: bytes):
            self.lines = data.splitlines(keepends=True)

        def __iter__(self):
            return iter(self.lines)

    data = (header("CSEPass", "cse") + KERNEL_V0 + header("SymbolDCEPass", "symbol-dce") + KERNEL_V1).encode()
    rec = PassRecorder()
    rec.read(LinesOnly(data))
    assert [s["name"] for s in rec.capture().steps] == ["cse", "symbol-dce"]


def test_identical_irs_are_stored_once(tmp_path):
    parts = [header("CSEPass", "cse"), KERNEL_V0]
    for i in range(30):
        parts += [header("SymbolDCEPass", "symbol-dce"), KERNEL_V0]
    cap, _ = record(*parts, final_marker("ttir", KERNEL_V0))
    assert len(cap.steps) == 31 and len(cap.irs) == 1
    tl = timeline(cap, tmp_path)
    assert tl.text(tl.steps[-1].after) == KERNEL_V0


def test_blame_finds_where_a_pattern_appears_and_disappears(tmp_path):
    v_add = KERNEL_V1.replace("tt.return", "tt.print\n    tt.return")
    cap, _ = record(header("A", "a"), KERNEL_V1, header("B", "b"), v_add, header("C", "c"), v_add,
                    final_marker("ttgir", KERNEL_V1))
    tl = timeline(cap, tmp_path)
    blame = find_pattern(tl, "tt.print")
    assert blame.first.step.name == "a" and blame.gone.step.name == "c" and blame.at_start == 0
    assert find_pattern(tl, "tt.get_program_id").at_start == 1
    assert line_origin(tl, tl.steps[1], "tt.print").name == "a"


def test_an_op_name_matches_whole_names_only_and_bad_regexes_are_usage_errors():
    p = compile_pattern("tt.load")
    assert p.search("%0 = tt.load %p") and not p.search("ttg.local_load") and not p.search("tt.load_x")
    assert compile_pattern(r"cp\.async\w*").search("cp.async.cg.shared.global")
    with pytest.raises(UsageError) as e:
        compile_pattern("tt.load(")
    assert "bad pattern" in e.value.message


def test_ops_are_counted_per_form():
    assert count_ops("mlir", KERNEL_V0) == {"tt.get_program_id": 2, "arith.addi": 1, "tt.return": 1, "tt.func": 1}
    ll = count_ops("llvm", LL_MODULE)
    assert ll["add"] == 2 and ll["call llvm.nvvm.read.ptx.sreg.tid.x"] == 1 and ll["ret"] == 1
    assert count_ops("mir", "16B\t  %4:b32 = nuw ADDi32rr %1, %2\n  Return debug-location !6") == {"ADDi32rr": 1,
                                                                                                  "Return": 1}
    assert normalize_line("mlir", '#loc2 = loc("/home/u/k.py":4:10)') is None
    assert normalize_line("mlir", "    %pid = tt.get_program_id x : i32 loc(#loc2)") == "    %pid = tt.get_program_id x : i32"


def test_the_recompile_hint_names_the_kernel_file_options_and_folder():
    """The hint said `irscope compile weird_kernel --target sm_80 --passes`: an unknown kernel (it is a
    FILE.py kernel), without its --out, constexprs or --arg."""
    from types import SimpleNamespace
    from irscope.passes.timeline import recompile_command
    meta = {"kernel": "weird_kernel", "function": "weird_kernel", "source_file": "my dir/weird.py",
            "request": {"config": None, "line_info": True, "constexprs": {"N": 16}, "args": {"a_ptr": "*fp16"},
                        "num_warps": 4, "passes": "mlir"}}
    snap = SimpleNamespace(meta=meta, origin="irscope", target_name="sm_80", variant="v1",
                           path=Path("/r/weird_kernel/v1/sm_80"))
    assert recompile_command(snap) == ("irscope compile 'my dir/weird.py:weird_kernel' --target sm_80 --num-warps 4 "
                                       "--constexpr N=16 --arg 'a_ptr=*fp16' --out /r --passes")
    meta.update(kernel="matmul", function="matmul_kernel", source_file="/x/kernels/matmul.py", request={})
    snap.path = Path("/elsewhere/sm_80")
    assert recompile_command(snap) == "irscope compile matmul --target sm_80 --passes"
    # a dotted built-in is its file's (matmul.bf16 is in matmul.py): it compiled the fp16 matmul instead
    meta.update(kernel="matmul.bf16")
    assert recompile_command(snap) == "irscope compile matmul.bf16 --target sm_80 --passes"
    # another Triton release's snapshot is compiled again by that release
    snap.variant, snap.path = "default.triton-3.6.0", Path("/r/matmul.bf16/default.triton-3.6.0/sm_80")
    assert recompile_command(snap) == ("irscope compile matmul.bf16 --target sm_80 --triton 3.6.0 --out /r "
                                       "--passes")
    snap.variant, snap.path = "default.triton-3.5.0.post1", Path("/r/matmul.bf16/default.triton-3.5.0.post1/sm_80")
    assert "--triton 3.5.0.post1 --out /r" in recompile_command(snap)  # a post release was dropped


def test_a_pass_that_failed_says_so_even_when_its_dump_changed_the_ir(tmp_path):
    """A pass whose 'IR Dump After X Failed' differed from the IR before it read '+2 -1', as a pass that ran."""
    from irscope.cli.passes import describe
    cap, _ = record(stage_marker("ttir"), header("CSEPass", "cse"), KERNEL_V0, header("SymbolDCEPass", "symbol-dce"),
                    KERNEL_V1, "// -----// IR Dump After SymbolDCEPass Failed: symbol-dce ('builtin.module' operation)"
                    " //----- //\n", KERNEL_V0)
    tl = timeline(cap, tmp_path)
    failed = tl.steps[-1]
    assert failed.failed and failed.status == "changed"
    assert describe(failed).endswith("the pass failed") and describe(failed).startswith("+")
    assert "failed" not in describe(tl.steps[0])


def test_the_tuis_step_list_says_a_failed_pass_that_changed_the_ir_failed(tmp_path):
    """The TUI's timeline read such a step '+2 -1' as the CLI did (its change_text had the same gap)."""
    from irscope.tui.model.steps import change_text
    cap, _ = record(stage_marker("ttir"), header("CSEPass", "cse"), KERNEL_V0, header("SymbolDCEPass", "symbol-dce"),
                    KERNEL_V1, "// -----// IR Dump After SymbolDCEPass Failed: symbol-dce ('builtin.module' operation)"
                    " //----- //\n", KERNEL_V0)
    tl = timeline(cap, tmp_path)
    assert change_text(tl.steps[-1]).startswith("+") and change_text(tl.steps[-1]).endswith("· failed")
    assert "failed" not in change_text(tl.steps[0])
