"""The layer rules of docs/architecture.md, checked on the package itself.

The table below is the rule: each layer (a top-level package or module of irscope) and the layers it may
import. Every import in every module, at module level or inside a function, is checked against it.
"""
import ast
import subprocess
import sys
from pathlib import Path

import irscope

PKG = Path(irscope.__file__).parent

_BASE = {"errors", "targets"}
# Reading the table top to bottom is reading the data's path: spec -> harness -> store -> ir/analyze -> diff
# -> presenters. The GPU runner sits beside the harness; goldens compare what the harness compiles.
LAYERS: dict[str, set[str]] = {
    "errors": set(),
    "targets": {"errors"},
    "spec": _BASE,
    "ir": _BASE,
    "store": _BASE | {"ir", "spec"},
    "layouts": _BASE | {"ir", "store"},
    "passes": _BASE | {"ir", "store", "diff"},  # the pass timeline prints its diffs with the diff engine
    "harness": _BASE | {"spec", "ir", "store", "passes", "layouts"},
    "analyze": _BASE | {"ir", "store"},
    "diff": _BASE | {"ir", "store", "analyze"},
    "sweep": _BASE | {"spec", "ir", "store", "harness", "analyze"},
    "gpu": _BASE | {"spec", "store", "harness"},
    # (render: the plugin writes a golden's text to pytest's output with its control characters escaped)
    "goldens": _BASE | {"spec", "ir", "store", "harness", "analyze", "diff", "render", "report"},
    "explain": _BASE | {"spec", "ir", "store", "harness", "passes", "analyze", "diff", "sweep"},
    "render": _BASE | {"ir", "store", "analyze", "diff"},
    "report": _BASE | {"ir", "store", "analyze", "diff", "render"},
    # Ranking reads snapshots (analyze) and plans launches on the meta device (spec); its CLI compiles.
    "rank": _BASE | {"spec", "ir", "store", "analyze", "gpu"},
    "cli": _BASE | {"spec", "ir", "store", "passes", "harness", "analyze", "diff", "sweep", "gpu", "goldens",
                    "explain", "render", "report", "tui", "layouts", "rank"},
    "tui": _BASE | {"spec", "ir", "store", "passes", "harness", "analyze", "diff", "sweep", "render", "layouts"},
    # The package itself, `python -m irscope`, and two old import paths kept as one-line aliases.
    "__init__": set(),
    "__main__": {"cli"},
    "workload": {"spec"},
    "pytest_plugin": {"goldens"},
}
# Third-party packages that only some layers may import (anywhere else they would load on every command).
ONLY_IN = {"triton": {"harness"}, "textual": {"tui"}, "torch": {"harness", "gpu", "spec"}}


def _modules() -> list[Path]:
    return sorted(p for p in PKG.rglob("*.py") if "__pycache__" not in p.parts)


def _layer(path: Path) -> str:
    return path.relative_to(PKG).with_suffix("").parts[0]


def _module_name(path: Path) -> list[str]:
    parts = list(path.relative_to(PKG.parent).with_suffix("").parts)
    return parts[:-1] if parts[-1] == "__init__" else parts


def _imports(path: Path):
    """(absolute module, line, at module level) for every import statement in the file."""
    tree = ast.parse(path.read_text())
    top = set(map(id, tree.body))
    here = _module_name(path)
    package = here if path.name == "__init__.py" else here[:-1]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield a.name, node.lineno, id(node) in top
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            if mod == "irscope":  # `from irscope import errors`: names that are modules
                for a in node.names:
                    is_module = (PKG / a.name).is_dir() or (PKG / f"{a.name}.py").is_file()
                    yield f"irscope.{a.name}" if is_module else "irscope", node.lineno, id(node) in top
            else:
                yield mod, node.lineno, id(node) in top


def test_the_layer_table_covers_every_module():
    missing = sorted({_layer(p) for p in _modules()} - set(LAYERS))
    assert missing == [], f"add these to LAYERS (and docs/architecture.md): {missing}"


def test_every_import_follows_the_layer_table():
    bad = []
    for path in _modules():
        layer = _layer(path)
        for mod, line, _ in _imports(path):
            parts = mod.split(".")
            if parts[0] != "irscope" or len(parts) < 2:
                continue
            target = parts[1]
            if target != layer and target not in LAYERS[layer] and target != "__init__":
                bad.append(f"{path.relative_to(PKG)}:{line} imports {mod} ({layer} may import "
                           f"{', '.join(sorted(LAYERS[layer])) or 'nothing'})")
    assert bad == [], "\n".join(bad)


def test_triton_textual_and_torch_are_imported_only_by_their_layers_and_only_inside_functions():
    bad = []
    for path in _modules():
        layer = _layer(path)
        for mod, line, at_top in _imports(path):
            root = mod.split(".")[0]
            if root not in ONLY_IN:
                continue
            if layer not in ONLY_IN[root]:
                bad.append(f"{path.relative_to(PKG)}:{line} imports {root}: only {sorted(ONLY_IN[root])} may")
            elif at_top and root != "textual":
                bad.append(f"{path.relative_to(PKG)}:{line} imports {root} at module level: import it inside "
                           "the function that needs it")
    assert bad == [], "\n".join(bad)


def _fresh_import(modules: list[str], forbidden: tuple[str, ...]) -> subprocess.CompletedProcess:
    code = (f"import sys; import {', '.join(modules)}; "
            f"bad = [m for m in {forbidden!r} if m in sys.modules]; print(bad); sys.exit(bool(bad))")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)


def test_snapshot_readers_import_neither_triton_nor_textual_nor_torch():
    # A snapshot folder copied from a GPU box must open where Triton is not installed, and quickly.
    readers = ["irscope." + ".".join(_module_name(p)[1:]) for p in _modules()
               if _layer(p) in ("store", "ir", "analyze", "diff", "render", "passes", "spec", "errors", "targets")]
    readers += ["irscope.cli", "irscope.cli.tui", "irscope.tui.model.entries", "irscope.tui.model.document",
                "irscope.tui.model.axes", "irscope.tui.model.facts", "irscope.tui.model.steps",
                "irscope.tui.model.stages"]
    proc = _fresh_import(sorted(set(readers)), ("triton", "textual", "torch"))
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_pytest_plugin_loads_neither_triton_nor_textual():
    # Registered through pytest11, it is imported by every pytest run of every project that installs irscope.
    proc = _fresh_import(["irscope.goldens.pytest_plugin", "irscope.pytest_plugin"], ("triton", "textual", "torch"))
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_gpu_runner_imports_neither_torch_nor_triton():
    # torch is a test extra and Triton the compiler: both are imported inside the functions that run kernels.
    proc = _fresh_import(["irscope.spec.workload", "irscope.gpu.runner", "irscope.cli.run"], ("triton", "torch"))
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_core_modules_never_print():
    presenters = {"cli", "tui", "render"}
    for p in _modules():
        if _layer(p) in presenters:
            continue
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "print":
                raise AssertionError(f"{p.relative_to(PKG)}:{node.lineno} prints; core modules return or raise")


def test_every_package_is_in_the_wheel():
    """pyproject lists packages explicitly (kernels/ installs as irscope.kernels): a new one must be added."""
    import tomllib
    listed = set(tomllib.loads((PKG.parent / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {".".join(p.parent.relative_to(PKG.parent).parts) for p in PKG.rglob("__init__.py")}
    assert found | {"irscope.kernels"} == listed
