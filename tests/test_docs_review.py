"""What the docs say, checked against what the code does: paths the docs name, the Python examples they
show, counts and JSON shapes they state. A doc that says something false is a defect like any other."""
from __future__ import annotations

import ast
import builtins
import json
import re
from pathlib import Path

from tests.conftest import GOLDENS, ROOT

# Pages other reviews own (docs/explain.md, report.md, rank.md) are left to their own tests.
PAGES = [ROOT / "README.md"] + sorted(p for p in (ROOT / "docs").glob("*.md")
                                      if p.name not in {"explain.md", "report.md", "rank.md"})


def _text(page: Path) -> str:
    return page.read_text(encoding="utf-8")


def test_every_irscope_source_path_the_docs_name_exists():
    missing = []
    for page in PAGES:
        for path in set(re.findall(r"`(irscope/[\w/.-]+)`", _text(page))):
            if "NAME" in path:  # a placeholder: `irscope/cli/NAME.py`
                continue
            if not (ROOT / path.rstrip("/")).exists():
                missing.append(f"{page.name}: {path}")
    assert not missing, missing


def _undefined_names(code: str) -> set[str]:
    tree = ast.parse(code)
    defined = set(dir(builtins))
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            defined.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            defined.add(node.name)
        elif isinstance(node, ast.arg):
            defined.add(node.arg)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            defined.add(node.id)
    return {n.id for n in ast.walk(tree)
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id not in defined}


def test_python_examples_in_the_docs_define_every_name_they_use():
    """A reader pastes an example and runs it: a name it never imports is a NameError on the first try."""
    bad = []
    for page in PAGES:
        for block in re.findall(r"```python\n(.*?)```", _text(page), re.S):
            if undefined := _undefined_names(block):
                bad.append(f"{page.name}: {sorted(undefined)} in {block.splitlines()[0]!r}")
    assert not bad, bad


def test_goldens_page_counts_the_committed_goldens():
    said = re.search(r"`snapshots/` holds (\d+) goldens", _text(ROOT / "docs" / "goldens.md"))
    assert said, "docs/goldens.md no longer says how many goldens snapshots/ holds"
    held = sum(1 for _ in GOLDENS.rglob("golden.json"))
    assert int(said.group(1)) == held


def _table_row(page: str, key: str) -> str:
    rows = [line for line in _text(ROOT / "docs" / page).splitlines() if line.startswith(f"| `{key}` |")]
    assert rows, f"docs/{page} has no row for `{key}`"
    return rows[0]


def test_diff_json_normalisation_is_the_list_the_docs_show(cli):
    a, b = GOLDENS / "add" / "default" / "sm_80", GOLDENS / "add" / "default" / "sm_90a"
    code, out, err = cli("diff", a, b, "--json")
    assert code == 1, err
    emitted = json.loads(out)["normalisation"]
    example = re.search(r"\(`(\[.*?\])`\)", _table_row("cli.md", "normalisation"))
    assert example, "docs/cli.md's normalisation row shows no example value"
    shown = json.loads(example.group(1))
    assert isinstance(emitted, list) and emitted and all(isinstance(s, str) for s in emitted)
    assert type(shown) is type(emitted) and all(isinstance(s, str) for s in shown)


def test_stats_json_counters_row_says_zeros_are_kept(cli):
    code, out, err = cli("stats", GOLDENS / "add" / "default" / "sm_90a", "--json")
    assert code == 0, err
    counters = json.loads(out)[0]["counters"]
    assert 0 in counters.values(), "stats --json keeps no zero counters: the stable schema is gone"
    row = _table_row("analyzers.md", "counters")
    assert "non-zero counters only" not in row and "`0` when absent" in row
