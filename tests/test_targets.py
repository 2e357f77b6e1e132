import pytest

from irscope.errors import UsageError
from irscope.targets import CORE, TARGETS, get_target, parse_targets


def test_all_means_the_seven_core_targets_in_order():
    assert [t.name for t in parse_targets("all")] == list(CORE)
    assert list(CORE) == ["sm_80", "sm_90a", "sm_100a", "sm_120a", "gfx90a", "gfx942", "gfx950"]


def test_plain_names_users_type_map_to_what_triton_compiles():
    assert get_target("sm_90").name == "sm_90a"
    assert get_target("SM90").name == "sm_90a"
    assert get_target("sm_100").name == "sm_100a"
    assert get_target("sm_86").arch == 86
    assert get_target("mi300x").name == "gfx942"


def test_warp_size_is_32_on_nvidia_and_64_on_cdna():
    assert {TARGETS[n].warp_size for n in CORE if n.startswith("sm")} == {32}
    assert {TARGETS[n].warp_size for n in CORE if n.startswith("gfx")} == {64}
    assert TARGETS["gfx1100"].warp_size == 32


def test_per_block_shared_memory_limits():
    assert TARGETS["sm_90a"].shared_per_block == 232448  # the H100/H200 227 KiB opt-in limit
    assert TARGETS["sm_80"].shared_per_block == 166912
    assert TARGETS["sm_120a"].shared_per_block == 101376
    assert TARGETS["gfx942"].shared_per_block == 65536
    assert TARGETS["gfx950"].shared_per_block == 163840


def test_comma_list_keeps_order_and_drops_repeats():
    assert [t.name for t in parse_targets("gfx942,sm_80,sm_90,sm_90a")] == ["gfx942", "sm_80", "sm_90a"]


def test_unknown_target_suggests_close_names_and_lists_all():
    with pytest.raises(UsageError) as e:
        get_target("sm_91a")
    assert "unknown target 'sm_91a'" in e.value.message
    assert "sm_90a" in e.value.hint and "gfx950" in e.value.hint


def test_stage_names_follow_triton():
    assert TARGETS["sm_90a"].stages == ("ttir", "ttgir", "llir", "ptx", "cubin", "sass")
    assert TARGETS["gfx942"].stages == ("ttir", "ttgir", "llir", "amdgcn", "hsaco")
