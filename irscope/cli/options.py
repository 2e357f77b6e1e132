"""Compile options shared by the commands that compile (compile, compare, sweep, snapshot)."""
from __future__ import annotations

import argparse

from ..spec.kernel import CompileOptions, parse_assignment, parse_divisibility


def positive_int(text: str) -> int:
    """argparse type: a whole number above zero (--jobs); argparse names the option in its message."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"takes a positive integer, not '{text}'") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"takes a positive integer, not {value}")
    return value


def positive_seconds(text: str) -> float:
    """argparse type: a number of seconds above zero (--timeout)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"takes a positive number of seconds, not '{text}'") from None
    if not value > 0 or value != value or value == float("inf"):
        raise argparse.ArgumentTypeError(f"takes a positive number of seconds, not {text}")
    return value


def add_compile_options(p: argparse.ArgumentParser, *, single_values: bool = True) -> None:
    """--config, --num-warps, --num-stages, --constexpr, --arg, --option, --divisibility, line info."""
    g = p.add_argument_group("compile options")
    g.add_argument("--config", metavar="NAME", help="a named config from the kernel's menu (`irscope kernels KERNEL`); "
                                                    "compile and compare also take all (every config)")
    if single_values:
        g.add_argument("--num-warps", type=int, metavar="N", help="warps per program (a power of two)")
        g.add_argument("--num-stages", type=int, metavar="N", help="software-pipelining depth of loops")
        g.add_argument("--divisibility", action="append", default=[], metavar="D|ARG=D",
                       help="assumed divisibility of pointers and integers: 16 (default, what the JIT infers for "
                            "16-byte-aligned tensors), 1 (none), or per argument: x_ptr=4. Repeatable.")
    g.add_argument("--constexpr", action="append", default=[], metavar="NAME=VALUE",
                   help="set a tl.constexpr parameter, e.g. BLOCK_M=128. Repeatable.")
    g.add_argument("--arg", action="append", default=[], metavar="NAME=VALUE",
                   help="a typical launch value for an argument (K=4096, x_ptr=*fp16, a host-side tensor descriptor "
                        "a_desc=desc:fp16[4096,4096]/[64,64]); decides the JIT's "
                        "specialisation (divisible by 16, equal to 1). Repeatable.")
    g.add_argument("--option", action="append", default=[], metavar="NAME=VALUE",
                   help="a Triton backend option, e.g. maxnreg=128, enable_fp_fusion=false, kpack=2. Repeatable.")
    g.add_argument("--large-tensors", action="store_true",
                   help="specialise for tensors of 2 GB or more: on AMD the JIT then drops tt.pointer_range=32 "
                        "(buffer loads and stores); irscope otherwise assumes tensors under 2 GB, as most are")
    line = g.add_mutually_exclusive_group()
    line.add_argument("--line-info", dest="line_info", action="store_true", default=True,
                      help="keep source line information in every stage (default)")
    line.add_argument("--no-line-info", dest="line_info", action="store_false",
                      help="compile as TRITON_DISABLE_LINE_INFO=1 does: no debug locations")


def options_from_args(args: argparse.Namespace) -> CompileOptions:
    return CompileOptions(
        config=args.config,
        num_warps=getattr(args, "num_warps", None),
        num_stages=getattr(args, "num_stages", None),
        constexprs=tuple(parse_assignment(c, "constexpr") for c in args.constexpr),
        backend_options=tuple(parse_assignment(o, "option") for o in args.option),
        divisibility=parse_divisibility(getattr(args, "divisibility", [])),
        args=tuple(parse_assignment(a, "argument") for a in args.arg),
        line_info=args.line_info,
        large_tensors=getattr(args, "large_tensors", False),
        name=getattr(args, "name", None),
    )
