"""`irscope tui [ROOT...]`: browse, read and compare snapshots in the terminal (Textual)."""
from __future__ import annotations

from pathlib import Path


def add_parser(sub) -> None:
    p = sub.add_parser("tui", help="browse and compare snapshots in a terminal UI",
                       description="Read every stage of your snapshots with highlighting, follow a Python line "
                                   "into the IR and back, compare two snapshots, compile new ones. Opens "
                                   "$IRSCOPE_OUT (else ./irscope-snapshots) if it exists, plus every ROOT "
                                   "given (Triton cache folders too); a ROOT that is one snapshot folder "
                                   "opens straight in the reader.")
    p.add_argument("roots", nargs="*", metavar="ROOT", help="folders of snapshots, snapshot folders or Triton caches")
    p.add_argument("--out", "-o", metavar="DIR",
                   help="where compiles started from the UI go (default: $IRSCOPE_OUT or ./irscope-snapshots)")
    p.set_defaults(run=run)


def run(args, ui) -> int:
    from ..errors import EnvironmentProblem, UsageError
    from ..spec.library import builtin_files
    from ..store.roots import default_out
    from ..tui.model.entries import default_roots

    roots = default_roots(args.roots, default=default_out())
    missing = [r for r in roots if not r.exists()]
    if missing:
        raise UsageError(f"'{missing[0]}' does not exist", "give folders of snapshots (irscope compile writes them)")
    files = [r for r in roots if not r.is_dir()]
    if files:  # it opened an empty browser ("0 snapshots in passwd")
        raise UsageError(f"'{files[0]}' is a file, not a folder of snapshots",
                         "give a snapshot folder or a folder of them (irscope compile writes them)")
    if not ui.out.isatty():
        raise UsageError("irscope tui needs a terminal", "run it in a terminal, not with its output redirected")
    try:
        from ..tui.app import IrscopeApp
    except ImportError as e:
        raise EnvironmentProblem(f"the TUI needs Textual: {e}", "pip install 'textual>=1.0'") from None
    out = Path(args.out) if args.out else default_out()
    app = IrscopeApp(roots, out, kernels=[p.stem for p in builtin_files()])
    app.run()
    return int(app.return_code or 0)
