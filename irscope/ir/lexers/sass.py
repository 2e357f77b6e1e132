"""NVIDIA SASS as `nvdisasm` and `cuobjdump -sass` print it.

Instruction offsets (`/*0a40*/`) and encodings are comments; `//## File "...", line N` line information
is a special comment; the opcode of each instruction, its predicate, registers (R, UR, P, UP, SR_, B),
constant-bank operands (`c[0x0][0x210]`) and branch labels each get their own token.
"""
from __future__ import annotations

from pygments.lexer import RegexLexer, bygroups
from pygments.token import Comment, Keyword, Name, Number, Operator, Punctuation, String, Text, Whitespace

_REGISTER = (r"-?!?\|?(?:U?R\d+|U?RZ|U?P\d+|U?PT|SR_[\w.]+|SRZ|B\d+|TR\d+|UB\d+)\|?"
             r"(?:\.(?:reuse|64|128|H0|H1|B\d|X4|F32|U32|S32|F16x2|BF16x2|H0_H0|H1_H1|ROW|COL))*")


class SassLexer(RegexLexer):
    """NVIDIA SASS assembly."""

    name = "NVIDIA SASS"
    # Pygments' own `sass` is the CSS preprocessor and wins `get_lexer_by_name("sass")`; `nvsass` is
    # unambiguous for pygmentize, and irscope.ir.lexers.get_lexer("sass") finds this one first.
    aliases = ["sass", "nvsass", "nvidia-sass"]
    filenames = ["*.sass"]

    tokens = {
        "root": [
            (r"^([ \t]*)(//##.*?)$", bygroups(Whitespace, Comment.Special)),
            (r"/\*[0-9a-fA-F]{4,}\*/", Comment.Hashbang, "instruction"),
            (r"/\*\s*0x[0-9a-fA-F]+\s*\*/", Comment.Multiline),
            (r"//.*?$", Comment.Single),
            (r"^[\w.$]+:", Name.Label),
            (r"^([ \t]*)(\.[\w]+)", bygroups(Whitespace, Keyword.Pseudo)),
            (r'"(\\\\|\\"|[^"])*"', String.Double),
            (r"@\"[^\"]*\"", String.Double),
            (r"0x[0-9a-fA-F]+", Number.Hex),
            (r"-?\d+", Number.Integer),
            (r"[\w.$]+", Name),
            (r"\n", Whitespace),
            (r"[ \t]+", Whitespace),  # not \s+: a newline eaten with the next indent hides `^` rules
            (r"[,()\[\]{}]", Punctuation),
            (r"[-+=@]", Operator),
            (r".", Text),
        ],
        "instruction": [
            (r"[ \t]+", Whitespace),
            (r"\{", Punctuation),
            (r"@!?U?P(?:T|\d+)", Keyword.Pseudo),
            (r"[A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*", Keyword, "operands"),
            (r"\n", Whitespace, "#pop"),
            (r"", Text, "#pop"),
        ],
        "operands": [
            (r";", Punctuation, "#pop:2"),
            (r"\n", Whitespace, "#pop:2"),
            (r"[ \t]+", Whitespace),
            (r"`\([\w.$]+\)", Name.Label),
            (r"c\[0x[0-9a-fA-F]+\]\[0x[0-9a-fA-F]+\]", Name.Constant),
            (r"\b(?:desc|gdesc)(?=\[)", Name.Builtin),
            (_REGISTER + r"(?![\w])", Name.Variable),
            (r"-?0x[0-9a-fA-F]+", Number.Hex),
            (r"-?\d+\.\d+(?:e[+-]?\d+)?|-?(?:INF|QNAN|NAN)\b", Number.Float),
            (r"-?\d+", Number.Integer),
            (r"[A-Za-z_][\w.]*", Name.Attribute),
            (r"[,()\[\]{}|~!+-]", Punctuation),
            (r".", Text),
        ],
    }
