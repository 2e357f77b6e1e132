"""AMDGPU assembly (AMDGCN) as LLVM's AMDGPU backend prints it for Triton.

Instructions by family (`s_`, `v_`, `buffer_`, `global_`, `ds_`...), registers (`v12`, `s[4:7]`,
`a[0:15]`, `vcc`, `exec`, `m0`), instruction modifiers (`offset:16`, `glc`, `lgkmcnt(0)`), assembler
directives and the `.loc` line information.
"""
from __future__ import annotations

from pygments.lexer import RegexLexer, bygroups
from pygments.token import Comment, Keyword, Name, Number, Operator, Punctuation, String, Text, Whitespace

_INSTR = r"(?:[sv]|buffer|global|flat|ds|scratch|image|exp|tbuffer|smem|s_buffer)_[\w.]+|exp\b"
_MODIFIERS = (r"offset\d?|offen|idxen|addr64|glc|slc|dlc|nt|sc0|sc1|lds|gds|tfe|lwe|row_\w+|bank_mask|"
              r"row_mask|bound_ctrl|clamp|neg_lo|neg_hi|neg|abs|op_sel\w*|vmcnt|lgkmcnt|expcnt|vscnt|cbsz|abid|"
              r"blgp|mul|div|quad_perm|wave_\w+|format|dim|dmask|unorm|a16|d16|sext|swizzle|hwreg|sendmsg")


class AmdgcnLexer(RegexLexer):
    """AMD GCN/CDNA/RDNA assembly (LLVM AMDGPU backend)."""

    name = "AMDGCN"
    aliases = ["amdgcn"]
    filenames = ["*.amdgcn"]

    tokens = {
        "root": [
            (r";;#ASM(?:START|END).*?$", Comment.Special),
            (r";.*?$", Comment.Single),
            (r"//.*?$", Comment.Single),
            (r"^[\w.$]+:", Name.Label),
            (r"^([ \t]*)(\.[\w.]+)", bygroups(Whitespace, Keyword.Pseudo)),
            (r"^([ \t]*)(" + _INSTR + r")", bygroups(Whitespace, Keyword)),
            (r"\n", Whitespace),
            (r"[ \t]+", Whitespace),  # not \s+: a newline eaten with the next indent hides `^` rules
            (r'"(\\\\|\\"|[^"])*"', String.Double),
            (r"\b[svat]\[\d+:\d+\]", Name.Variable),
            (r"\b(?:[sva]\d+|ttmp\d+|ttmp\[\d+:\d+\])\b", Name.Variable),
            (r"\b(?:vcc(?:_lo|_hi)?|exec(?:_lo|_hi)?|m0|scc|vccz|execz|flat_scratch(?:_lo|_hi)?|off|null)\b",
             Name.Variable),
            (r"\b(?:" + _MODIFIERS + r")\b", Name.Attribute),
            (r"\.L[\w.$]+", Name.Label),
            (r"0x[0-9a-fA-F]+", Number.Hex),
            (r"-?\d+\.\d+(?:[eE][+-]?\d+)?", Number.Float),
            (r"-?\d+", Number.Integer),
            (r"@[\w]+", Name.Decorator),
            (r"[A-Za-z_][\w.$]*", Name),
            (r"[-+*/|&^~!<>=]", Operator),
            (r"[,()\[\]{}:]", Punctuation),
            (r".", Text),
        ],
    }
