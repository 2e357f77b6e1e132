"""`irscope capture` of Gluon kernels (`@gluon.jit`): a descriptor's shared layout is recorded and compiled
as it was, a kernel defined inside a function is made again as a Gluon kernel, and the interpreter, which
cannot run Gluon, is refused rather than skipped."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from irscope.store.launches import read_launches

PROGRAMS = Path(__file__).parent / "capture_programs"
GLUON = PROGRAMS / "gluon_launches.py"


def _lines(err: str, kind: str) -> list[str]:
    return [ln for ln in err.splitlines() if ln.startswith(f"irscope: {kind}: ")]


@pytest.fixture(scope="module")
def gluon_capture(tmp_path_factory):
    from irscope.cli import main
    import io

    out = tmp_path_factory.mktemp("gluon-capture")
    stdout, stderr = io.StringIO(), io.StringIO()
    code = main(["capture", "--no-compile", "--target", "sm_90a", "--out", str(out), "--", "python", str(GLUON)],
                out=stdout, err=stderr)
    assert code == 0, stderr.getvalue()
    return out / "launches.json"


def _launch(path: Path, function: str) -> dict:
    data = read_launches(path)
    return next(la for la in data["launches"] if data["kernels"][la["kernel"]]["function"] == function)


def test_a_gluon_descriptors_shared_layout_is_recorded_and_compiled_as_it_was(gluon_capture, tmp_path):
    # The layout was dropped: a swizzle of 64 (not Gluon's default, 128, for the block) was "not compiled:
    # device-less specialisation [...] differs from the captured", and a transposed one could not be said.
    from irscope.harness.batch import compile_points
    from irscope.harness.launches import launch_points
    from irscope.targets import get_target

    narrow = {a["name"]: a for a in _launch(gluon_capture, "tma_roundtrip")["args"]}
    assert narrow["src_desc"]["layout"] == {"kind": "NVMMASharedLayout", "swizzle_byte_width": 64,
                                            "element_bitwidth": 16, "rank": 2, "transposed": False,
                                            "fp4_padded": False, "cga_layout": []}
    k_major = {a["name"]: a for a in _launch(gluon_capture, "through_shared")["args"]}["layout_desc"]
    assert k_major["layout"]["transposed"] is True and k_major["layout"]["swizzle_byte_width"] == 128
    wanted = {_launch(gluon_capture, f)["id"] for f in ("tma_roundtrip", "through_shared")}
    points, skipped = launch_points(gluon_capture, [get_target("sm_90a")], only=wanted)
    assert skipped == [] and len(points) == 2
    done = compile_points(points, tmp_path / "snaps")
    assert all(o.ok for o in done), [o.error for o in done]
    for o in done:
        meta = json.loads((o.path / "irscope.json").read_text())
        types = {e["name"]: e["type"] for e in meta["specialisation"]}
        if "src_desc" in types:
            assert "swizzle_byte_width=64" in types["src_desc"] and "swizzle_byte_width=64" in types["dst_desc"]
        else:
            assert "swizzle_byte_width=128" in types["layout_desc"] and "transposed=True" in types["layout_desc"]


def test_every_field_of_a_gluon_descriptors_layout_can_be_given_and_round_trips_through_its_text():
    from irscope.errors import UsageError
    from irscope.harness.specialise import specialise
    from irscope.spec import CompileOptions, TensorDesc
    from irscope.spec.kernel import parse_tensor_desc
    from irscope.spec.library import load_kernel
    from irscope.targets import get_target
    from tests.conftest import DATA

    spec = load_kernel(f"{DATA / 'gluon_kernels.py'}:gluon_tma_roundtrip")
    cases = [("desc:fp16[4096,64]/[64,64]/swizzle=32", "sm_90a", "swizzle_byte_width=32, element_bitwidth=16"),
             ("desc:fp16[4096,64]/[64,64]/transposed", "sm_90a", "swizzle_byte_width=128, element_bitwidth=16, "
                                                                 "rank=2, transposed=True"),
             ("desc:fp16[4096,64]/[64,64]/strides[64,1]/swizzle=64/transposed", "sm_90a",
              "swizzle_byte_width=64, element_bitwidth=16, rank=2, transposed=True"),
             ("desc:u8[4096,128]/[64,128]/fp4_padded", "sm_100a", "swizzle_byte_width=128, element_bitwidth=8, "
                                                                  "rank=2, transposed=False, fp4_padded=True"),
             ("desc:fp16[4096,64]/[64,64]/swizzle=128/cga[[1,0]]", "sm_90a", "cga_layout=[[1, 0]]")]
    for text, target, want in cases:
        desc = parse_tensor_desc(text)
        assert str(desc) == text and parse_tensor_desc(str(desc)) == desc
        # what a snapshot's request records and a recompile reads back
        opts = CompileOptions(args=(("src_desc", desc), ("dst_desc", desc)))
        assert CompileOptions.from_dict(opts.to_dict()).args == opts.args
        signature = specialise(spec, get_target(target), opts)[2]
        assert want in signature["src_desc"], signature["src_desc"]
    assert TensorDesc("fp16", (64, 64), (64, 64), cga_layout=[[1, 0]]).cga_layout == ((1, 0),)  # from JSON lists
    for bad, says in (("desc:fp16[4096,64]/[64,64]/fp4_padded", "fp4-padded layout takes 8-bit elements"),
                      ("desc:u8[4096,64]/[64,64]/swizzle=64/fp4_padded", "and a 128-byte swizzle"),
                      ("desc:fp16[4096,64]/[64,64]/cga[[1]]", "each 2 non-negative integers"),
                      ("desc:fp16[4096,64]/[64,64]/transposed/transposed", "given twice"),
                      ("desc:fp16[4096,64]/[64,64]/swizzled", "is not a layout field")):
        with pytest.raises(UsageError, match=says):
            parse_tensor_desc(bad)


def test_a_gluon_kernel_defined_inside_a_function_is_made_again_as_a_gluon_kernel(gluon_capture, tmp_path):
    # Made again from its `src` as a plain JITFunction, it failed at `source` with "'TritonSemantic' object
    # has no attribute 'num_warps'"; the launch file did not say the kernel was Gluon.
    from irscope.harness.batch import compile_points
    from irscope.harness.launches import _rejit, launch_points, load_launch_kernel
    from irscope.store import load_snapshot
    from irscope.targets import get_target

    data = read_launches(gluon_capture)
    inner = _launch(gluon_capture, "inner_add")
    assert data["kernels"][inner["kernel"]]["jit"]["gluon"] is True
    spec, _ = load_launch_kernel(f"{gluon_capture}:{inner['id']}")
    assert spec.fn.is_gluon() and "<irscope-launch" in spec.fn.fn.__code__.co_filename  # made from its src
    assert _rejit(spec.fn, spec.fn.fn).is_gluon()  # (a helper made again with its home module's globals)
    points, skipped = launch_points(gluon_capture, [get_target("sm_90a")], only={inner["id"]})
    assert skipped == []
    [done] = compile_points(points, tmp_path / "snaps")
    assert done.ok, done.error
    assert load_snapshot(done.path).stages[:2] == ("source", "glir")


def test_a_gluon_launch_under_execute_is_refused_naming_the_kernel_and_keeps_the_last_capture(
        cli, tmp_path, capfd, gluon_capture):
    # The interpreter cannot run Gluon (gluon.jit ignores TRITON_INTERPRET): the launch got a stub, the program
    # went on with the torch.empty output it never wrote ("max err 5.55") and the capture said mode: interpret.
    (tmp_path / "snaps").mkdir()
    last = (tmp_path / "snaps" / "launches.json")
    last.write_text(gluon_capture.read_text())
    code, out, err = cli("capture", "--execute", "--no-compile", "--out", "snaps", "--", "python", str(GLUON))
    assert code == 2, err
    [error], [hint] = _lines(err, "error"), _lines(err, "hint")
    assert "interpreter does not run Gluon kernels" in error and "make_add.<locals>.inner_add" in error
    assert "gluon_launches.py:" in error and "without --execute" in hint and "Traceback" not in err
    assert "gluon program done" not in capfd.readouterr().out  # stopped at the launch, not run on a stub
    assert last.read_text() == gluon_capture.read_text()
    assert sorted(p.name for p in (tmp_path / "snaps").iterdir()) == ["launches.json"]
    # A program that catches the error and goes on (a fallback) is refused all the same.
    (tmp_path / "fallback.py").write_text(
        f"import sys, torch\nsys.path.insert(0, {str(PROGRAMS)!r})\nfrom gluon_launches import make_add\n"
        "x, y = torch.randn(4096), torch.empty(4096)\n"
        "try:\n    make_add()[(4,)](x, y, 4096, BLOCK=1024, num_warps=4)\n"
        "except RuntimeError as e:\n    print('fell back:', e)\n")
    code, out, err = cli("capture", "--execute", "--no-compile", "--out", "snaps", "--", "python", "fallback.py")
    assert code == 2 and "interpreter does not run Gluon kernels" in err
    assert "fell back: Triton's interpreter does not run Gluon kernels" in capfd.readouterr().out
    assert last.read_text() == gluon_capture.read_text()


@pytest.mark.parametrize("field, value", [("swizzle_byte_width", 100), ("cga_layout", [[1]]), ("transposed", "x")])
def test_a_damaged_descriptor_layout_in_a_launch_file_is_the_files_fault_not_the_users(gluon_capture, tmp_path,
                                                                                       field, value):
    """A launch file's swizzle of 100 said "give swizzle=0, 32, 64 or 128": an option the user never gave."""
    from irscope.errors import SnapshotError
    from irscope.harness.launches import load_launch_kernel
    data = json.loads(gluon_capture.read_text())
    launch = next(la for la in data["launches"] if any(a.get("layout") for a in la["args"]))
    next(a for a in launch["args"] if a.get("layout"))["layout"][field] = value
    damaged = tmp_path / "launches.json"
    damaged.write_text(json.dumps(data))
    with pytest.raises(SnapshotError) as e:
        load_launch_kernel(f"{damaged}:{launch['id']}")
    assert "is damaged" in e.value.message and "capture it again" in e.value.hint
    assert "give swizzle" not in e.value.hint
