"""The session's compile cache (tests/conftest.py): one compile per point, however the point is spelt."""
from irscope.harness.batch import Point
from irscope.spec.kernel import CompileOptions


def test_a_point_asked_for_under_two_spellings_is_compiled_once(compile_cache):
    plain, spelt = compile_cache.outcomes([Point("add", "sm_80"), Point("add", "sm_80", CompileOptions(config="default"))])
    assert plain.ok and plain is spelt
    again = compile_cache("add", "sm_80", config="default")
    assert again.path == plain.path and again.meta["content_key"] == compile_cache.key(Point("add", "sm_80")).split()[0]
    assert [p.parent for p in compile_cache.out.rglob("irscope.json") if "/add/" in p.as_posix()].count(plain.path) == 1


def test_options_the_content_key_leaves_out_still_tell_points_apart(compile_cache):
    base = Point("add", "sm_80")
    for other in (CompileOptions(passes="mlir"), CompileOptions(backend_options=(("maxnreg", 32),)),
                  CompileOptions(name="mine")):
        assert compile_cache.key(Point("add", "sm_80", other)) != compile_cache.key(base), other


def test_a_point_the_irscope_fixture_compiled_is_not_compiled_again(irscope, compile_cache):
    snap = irscope.compile("add", target="sm_80", num_warps=2)
    (o,) = compile_cache.outcomes([Point("add", "sm_80", CompileOptions(num_warps=2))])
    assert o.ok and o.path == snap.path  # the plugin's folder, not one of the cache's own
