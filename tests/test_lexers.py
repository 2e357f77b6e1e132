"""irscope's Pygments lexers: every real stage lexes without error tokens, and the plugins are registered."""
import subprocess
import sys
from pathlib import Path

import pytest
from pygments.token import Comment, Error, Keyword, Name

from irscope.ir.lexers import AmdgcnLexer, SassLexer, TTGIRLexer, TTIRLexer, get_lexer
from irscope.render.terminal import LEXERS
from irscope.store.snapshot import load_snapshot

ROOT = Path(__file__).resolve().parent.parent


def tokens(lexer, text):
    return [(t, v) for t, v in lexer.get_tokens(text) if v.strip()]


@pytest.mark.parametrize("target,stage,cls", [
    ("sm_90a", "source", TTIRLexer), ("sm_90a", "ttir", TTIRLexer), ("sm_90a", "ttgir", TTGIRLexer),
    ("gfx942", "ttgir", TTGIRLexer), ("sm_90a", "sass", SassLexer), ("gfx942", "amdgcn", AmdgcnLexer),
])
def test_real_stages_lex_without_errors_and_round_trip(compiled, target, stage, cls):
    text = load_snapshot(compiled / "matmul" / "default" / target).read(stage)
    toks = list(cls().get_tokens(text))
    assert [v for t, v in toks if t is Error] == []
    assert "".join(v for _, v in toks).rstrip("\n") == text.rstrip("\n")


def test_mlir_tokens_tell_triton_ops_from_upstream_ops_and_fade_locations():
    toks = dict((v, t) for t, v in tokens(TTGIRLexer(), '%x = tt.load %p : tensor<4x!tt.ptr<f16>> loc(#loc3)\n'
                                                        '%y = arith.addi %a, %b : i32 loc("k.py":3:4)'))
    assert toks["tt.load"] is Name.Builtin and toks["arith.addi"] is Keyword
    assert toks["%x"] is Name.Variable and toks["tensor"] in Keyword.Type
    assert toks["loc("] in Comment and toks["#loc3"] in Comment


def test_sass_tokens():
    toks = tokens(SassLexer(), "        /*0180*/              @!P0 LDG.E.128 R16, desc[UR4][R2.64] ;\n"
                               '\t//## File "/k.py", line 16\n')
    kinds = {v: t for t, v in toks}
    assert kinds["LDG.E.128"] is Keyword and kinds["@!P0"] is Keyword.Pseudo
    assert kinds["R16"] is Name.Variable and kinds["/*0180*/"] in Comment
    assert kinds['//## File "/k.py", line 16'] is Comment.Special


def test_amdgcn_tokens():
    toks = tokens(AmdgcnLexer(), "\tbuffer_load_dwordx4 v[4:7], v1, s[8:11], 0 offen offset:16 ; comment\n")
    kinds = {v: t for t, v in toks}
    assert kinds["buffer_load_dwordx4"] is Keyword and kinds["v[4:7]"] is Name.Variable
    assert kinds["offen"] is Name.Attribute and kinds["; comment"] in Comment


def test_every_stage_alias_in_render_has_a_lexer():
    for stage, alias in LEXERS.items():
        assert get_lexer(alias) is not None, (stage, alias)


def test_pyproject_registers_the_lexers_as_pygments_plugins():
    import tomllib
    entry = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]["pygments.lexers"]
    for alias, cls in (("ttir", TTIRLexer), ("ttgir", TTGIRLexer), ("sass", SassLexer), ("amdgcn", AmdgcnLexer)):
        module, name = entry[alias].split(":")
        assert f"{cls.__module__}:{cls.__name__}" == entry[alias], alias
        assert alias in cls.aliases


def test_installed_plugins_reach_pygmentize_when_irscope_is_installed():
    from importlib.metadata import entry_points
    names = {ep.name for ep in entry_points(group="pygments.lexers")}
    if "ttgir" not in names:
        pytest.skip("irscope is not installed with its entry points in this environment (pip install -e .)")
    out = subprocess.run([sys.executable, "-m", "pygments", "-l", "ttgir", "-f", "raw"],
                         input="%x = tt.load %p : i32\n", capture_output=True, text=True, check=True).stdout
    assert "Token.Name.Builtin\t'tt.load'" in out
    out = subprocess.run([sys.executable, "-m", "pygments", "-l", "nvsass", "-f", "raw"],
                         input="        /*0000*/ EXIT ;\n", capture_output=True, text=True, check=True).stdout
    assert "Token.Keyword\t'EXIT'" in out


def test_get_lexer_prefers_irscope_for_sass_over_the_css_preprocessor():
    assert isinstance(get_lexer("sass"), SassLexer)


def test_line_start_rules_apply_on_every_line_not_just_the_first():
    text = "\ts_mov_b32 s0, 0\n\ts_add_i32 s2, s9, 0xff\n\t.loc\t1 9 0\n"
    kinds = {v: t for t, v in tokens(AmdgcnLexer(), text)}
    assert kinds["s_add_i32"] is Keyword and kinds[".loc"] is Keyword.Pseudo
    sass = '        /*0000*/ EXIT ;\n\t//## File "/k.py", line 9\n\t.section .text\n'
    kinds = {v: t for t, v in tokens(SassLexer(), sass)}
    assert kinds['//## File "/k.py", line 9'] is Comment.Special and kinds[".section"] is Keyword.Pseudo
