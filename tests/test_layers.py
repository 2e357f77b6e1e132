"""The layer rules of docs/architecture.md, checked on the package itself."""
import ast
import subprocess
import sys
from pathlib import Path

import irscope

PKG = Path(irscope.__file__).parent

# Modules that read snapshots must work where Triton is not installed (a laptop browsing a GPU box's
# snapshots) and stay quick to import.
READERS = ["irscope.store", "irscope.normalize", "irscope.resources", "irscope.render", "irscope.targets",
           "irscope.analyze", "irscope.diff", "irscope.passes", "irscope.passes.record",
           "irscope.spec", "irscope.errors", "irscope.cli", "irscope.lines", "irscope.outline", "irscope.lexers",
           "irscope.tui", "irscope.tui.document", "irscope.tui.align", "irscope.tui.axes", "irscope.tui.catalog",
           "irscope.tui.facts", "irscope.tui.steps", "irscope.cli.tui"]


def test_readers_import_neither_triton_nor_textual():
    code = (f"import sys; import {', '.join(READERS)}; "
            "bad = [m for m in ('triton', 'textual', 'torch') if m in sys.modules]; print(bad); sys.exit(bool(bad))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_runner_and_workload_import_neither_torch_nor_triton():
    # torch is a test extra and Triton the compiler: both are imported inside the functions that run kernels.
    code = ("import sys; import irscope.workload, irscope.runner, irscope.cli.run; "
            "bad = [m for m in ('triton', 'torch') if m in sys.modules]; print(bad); sys.exit(bool(bad))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _module_level_imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_only_the_harness_and_its_gpu_side_import_triton_and_only_inside_functions():
    offenders = [p.relative_to(PKG) for p in PKG.rglob("*.py") if "triton" in _module_level_imports(p)]
    assert offenders == []
    mentions = sorted(str(p.relative_to(PKG)) for p in PKG.rglob("*.py")
                      if "from triton" in p.read_text() or "import triton" in p.read_text())
    # harness.py: the compiler. device.py: its counterpart on the GPU (the JIT's compile of a launch,
    # Triton's loader for a snapshot's cubin, do_bench). runner.py: the interpreter check's process
    # patches the interpreter's bf16 tl.dot (triton#11584). Kernels launch through the JIT from
    # workload.jit_launch without importing Triton.
    assert mentions == ["device.py", "harness.py", "runner.py"], mentions


def test_core_modules_never_print():
    presenters = {"cli", "tui", "render.py", "pytest_plugin.py"}
    for p in PKG.rglob("*.py"):
        if p.relative_to(PKG).parts[0] in presenters:
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
