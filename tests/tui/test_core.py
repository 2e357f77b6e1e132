"""The TUI's plain-code parts (no Textual): documents, alignment, compare axes, the catalog, facts."""
import json
import subprocess
import sys
import time
from pathlib import Path

from irscope.store.snapshot import load_snapshot
from irscope.diff.align import align, change_starts, summarise, unified
from irscope.tui.model.axes import differing_axes, next_sibling, siblings
from irscope.tui.model.entries import default_roots, matches, scan
from irscope.tui.model.document import Document
from irscope.tui.model.facts import deltas, facts_of


def test_the_plain_modules_of_the_tui_do_not_import_textual():
    code = ("import sys, irscope.tui.model.document, irscope.diff.align, irscope.tui.model.axes, irscope.tui.model.entries, "
            "irscope.tui.model.facts, irscope.ir.lines, irscope.ir.outline, irscope.ir.lexers; "
            "sys.exit(any(m in sys.modules for m in ('textual', 'triton')))")
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_document_expands_tabs_searches_with_smart_case_and_highlights_lazily():
    doc = Document("\tmov.u32 %r1, 0x0;\n\tADD.F32 R1, R2;\nld.global %r2\n", "ptx")
    assert doc.lines[0].startswith("        mov.u32") and doc.width == len(doc.lines[0])
    assert doc.find("add") == [1] and doc.find("ADD") == [1] and doc.find("Add") == []
    assert doc.spans(0, "r1") == [(17, 19)]
    assert doc._cache == {}
    assert doc.text(0).spans and len(doc._cache) == 1


def test_a_line_of_megabytes_is_handed_out_and_searched_only_as_far_as_shown():
    """A 50 MB line (hostile, or LLVM's inline asm gone wild) was made into one Text and searched whole on
    every repaint: seconds a keystroke with a search active. The viewer gets what is on screen, plus a margin."""
    line = "%x = add i32 1, 2; " * 100_000  # 1.9 MB, 100k hits for "add"
    doc = Document(line + "\n", "llir")
    shown = doc.text(0, 100)
    assert 100 <= len(shown) <= 300 and shown.plain == line[:len(shown)] and shown.spans  # highlighted, not whole
    assert len(doc.text(0, 5000)) >= 5000  # scrolled right: read that far
    assert doc.spans(0, "add", 0, 40) == [(5, 8), (24, 27)]
    assert all(1_000_000 - 3 < a < 1_000_040 for a, _ in doc.spans(0, "add", 1_000_000, 1_000_040))
    assert len(doc.spans(0, "add", 0, 40)) == 2 and len(doc.spans(0, "add")) == 100_000  # (whole when asked)
    wide = Document("é" + "a" * 1_000_000 + "\n", "llir")
    assert len(wide.text(0, 120)) < 1000


def test_python_documents_are_lexed_whole_for_multiline_strings():
    doc = Document('"""doc\nstill doc"""\nx = 1\n', "python")
    styles_line1 = {str(s.style) for s in doc.text(1).spans}
    styles_line2 = {str(s.style) for s in doc.text(2).spans}
    assert styles_line1 and styles_line1 != styles_line2  # line 2 of the docstring is still a string


def test_alignment_pairs_every_line_once_in_order():
    a = ["x", "a", "b", "c", "d", "y"]
    b = ["x", "a", "B", "c", "e", "f", "y"]
    rows = align(a, b)
    assert [r.left for r in rows if r.left is not None] == list(range(len(a)))
    assert [r.right for r in rows if r.right is not None] == list(range(len(b)))
    assert all(a[r.left] == b[r.right] for r in rows if r.kind == "equal")
    s = summarise(rows)
    assert (s.equal, s.changed, s.deleted, s.inserted) == (4, 2, 0, 1)
    flat = unified(rows)
    assert all(r.kind in ("equal", "delete", "insert") for r in flat) and len(flat) >= len(rows)
    assert change_starts(rows) == [2, 4]


def test_alignment_of_two_20k_line_texts_is_fast_and_exact():
    a = [f"%v{i} = add i32 %v{i - 1}, {i % 7}" for i in range(20000)]
    b = list(a)
    del b[5000:5100]
    b[12000:12000] = [f"%new{i} = mul i32 %x, 2" for i in range(60)]
    b[15000] = "changed"
    started = time.perf_counter()
    rows = align(a, b)
    elapsed = time.perf_counter() - started
    s = summarise(rows)
    assert (s.deleted, s.inserted, s.changed) == (100, 60, 1)
    assert elapsed < 5  # generous for a loaded CI machine; benchmarks/tui_speed.py measures properly


def test_siblings_differ_in_one_axis_only(compiled, tui_variants):
    snaps = [e.snapshot for e in scan([compiled, tui_variants])]
    base = next(s for s in snaps if s.label == "matmul/default/sm_90a")
    targets = [s.target_name for s in siblings(snaps, base, "target")]
    assert targets == ["sm_80", "sm_100a", "sm_120a", "gfx90a", "gfx942", "gfx950"]
    warps = siblings(snaps, base, "num_warps")
    assert [s.label for s in warps] == ["matmul/default.w4/sm_90a"]
    assert differing_axes(base, warps[0]) == ["num_warps"]
    assert next_sibling(snaps, base, "target", current=targets and next(
        s for s in snaps if s.label == "matmul/default/gfx950")).target_name == "sm_80"  # cycles
    assert next_sibling(snaps, base, "alignment") is None


def test_catalog_default_root_filter_and_damage(compiled, tmp_path):
    (tmp_path / "irscope-snapshots").mkdir()
    assert default_roots([], cwd=tmp_path) == [tmp_path / "irscope-snapshots"]
    assert default_roots([str(compiled)], cwd=tmp_path)[1] == compiled
    entries = scan([compiled])
    assert [e.label for e in entries if matches(e, "MATMUL gfx9")] == \
        ["matmul/default/gfx90a", "matmul/default/gfx942", "matmul/default/gfx950"]
    bad = tmp_path / "bad" / "k" / "v" / "sm_90a"
    bad.mkdir(parents=True)
    (bad / "irscope.json").write_text(json.dumps({"format": 99, "function": "k"}))
    [entry] = scan([tmp_path / "bad"])
    assert not entry.ok and "newer irscope" in entry.error


def test_facts_and_deltas_come_from_the_snapshot(compiled):
    a = load_snapshot(Path(compiled) / "matmul" / "default" / "sm_90a")
    b = load_snapshot(Path(compiled) / "matmul" / "default" / "gfx942")
    fa, fb = facts_of(a), facts_of(b)
    assert fa.resources == a.resources
    by_name = {d.name: d for d in deltas(fa, fb)}
    assert by_name["registers"].change == b.resources.registers - a.resources.registers
    assert by_name["shared"].is_bytes and "KiB" in by_name["shared"].show(by_name["shared"].a)


def test_partner_prefers_the_marked_snapshot_then_the_first_axis_with_a_sibling(compiled):
    from irscope.tui.model.axes import partner
    snaps = [e.snapshot for e in scan([compiled])]
    by = {s.label: s for s in snaps}
    current = by["add/default/gfx942"]
    assert partner(snaps, current, by["matmul/default/sm_90a"]) == (by["matmul/default/sm_90a"], current)
    assert partner(snaps, current, current) == (current, by["add/default/sm_80"])  # marking itself: ignored
    assert partner([current], current) is None


def test_irscope_tui_takes_its_default_root_from_irscope_out(monkeypatch, tmp_path):
    # `irscope tui` with no ROOT: the folder compiles go to by default ($IRSCOPE_OUT), as the CLI says.
    import io

    from irscope.cli import main
    from irscope.tui.app import IrscopeApp

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "irscope-snapshots").mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("IRSCOPE_OUT", str(elsewhere))
    seen = []
    monkeypatch.setattr(IrscopeApp, "run", lambda self: seen.append((self.roots, self.out)))

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    assert main(["tui"], out=Terminal(), err=io.StringIO()) == 0
    assert seen == [([elsewhere], elsewhere)]
    monkeypatch.delenv("IRSCOPE_OUT")
    assert main(["tui"], out=Terminal(), err=io.StringIO()) == 0
    assert seen[-1] == ([tmp_path / "irscope-snapshots"], Path("irscope-snapshots"))
