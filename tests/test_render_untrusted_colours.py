"""Colour escape sequences in untrusted text (a snapshot's fields and stages) never reach the terminal as
colours: only irscope's own styling (Style, highlight) may emit SGR, with colour on or off."""
import io

from irscope.cli import main
from irscope.render.terminal import SafeStream, Style, highlight, table


def _through(text: str) -> str:
    out = io.StringIO()
    SafeStream(out, carriage_returns=False).write(text)
    return out.getvalue()


def test_a_colour_from_a_file_is_escaped_and_irscopes_own_is_kept():
    hostile = "#mma\x1b[31mRED\x1b[0m"
    assert _through(hostile) == "#mma\\x1b[31mRED\\x1b[0m"
    assert _through(Style(True)("title", "bold") + " " + hostile) == "\x1b[1mtitle\x1b[0m #mma\\x1b[31mRED\\x1b[0m"
    assert _through(Style(False)("title", "bold")) == "title"


def test_highlighting_keeps_its_colours_but_not_the_stages():
    text = highlight("// a \x1b[31mred comment\n%0 = tt.load %p : tensor<4xf32>\n", "ttgir", True)
    shown = _through(text)
    assert "\x1b[31mred" not in shown and "\\x1b[31mred" in shown
    assert "\x1b[36mtt.load" in shown  # its own colours kept


def test_a_table_measures_an_escaped_cell_as_printed():
    shown = _through(table(["a", "b"], [["x\x1b[31m", "1"], ["yy", "2"]]))
    rows = shown.splitlines()
    assert rows[1].rindex("1") == rows[2].rindex("2")


def test_an_encoding_name_with_a_colour_prints_escaped_with_color_never(tmp_path):
    import json
    import shutil
    from pathlib import Path
    src = Path(__file__).resolve().parent.parent / "snapshots" / "add" / "default" / "sm_80"
    snap = tmp_path / "add" / "default" / "sm_80"
    shutil.copytree(src, snap)
    layouts = {"format": 1, "computed_by": "x", "encodings": [
        {"name": "#b\x1b[31mRED", "attr": "#ttg.blocked<{}>", "kind": "blocked", "space": "distributed",
         "layouts": [{"shape": [4], "status": "not-available", "note": "n\x1b[2J"}]}]}
    (snap / "layouts.json").write_text(json.dumps(layouts))
    for mode in ("never", "always"):
        out, err = io.StringIO(), io.StringIO()
        assert main(["--color", mode, "layouts", str(snap)], out=out, err=err) == 0, err.getvalue()
        assert "#b\\x1b[31mRED" in out.getvalue() and "\x1b[31mRED" not in out.getvalue()
        assert "n\\x1b[2J" in out.getvalue()


def test_bidirectional_controls_are_shown_escaped_not_obeyed():
    """U+202E (right-to-left override) and the isolates reached the terminal and the TUI raw: a terminal that
    honours them shows a line's characters in another order than they are ("Trojan Source")."""
    from irscope.render.controls import escaped, visible_controls
    hostile = "tt.load \u202e%evil\u202c ok \u2066x\u2069"
    assert _through(hostile) == "tt.load \\u202e%evil\\u202c ok \\u2066x\\u2069"
    assert escaped(hostile) == "tt.load \\u202e%evil\\u202c ok \\u2066x\\u2069"
    shown = visible_controls(hostile)
    assert len(shown) == len(hostile) and not any(c in shown for c in "\u202e\u202c\u2066\u2069")
    rows = _through(table(["a", "b"], [["x\u202e", "1"], ["yy", "2"]])).splitlines()
    assert rows[1].rindex("1") == rows[2].rindex("2")
