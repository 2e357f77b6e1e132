"""LayoutsScreen: a snapshot's encodings as linear layouts (from its layouts.json; no Triton).

On the left, every encoding at every shape it is used at, then every `convert_layout`. On the right,
the chosen layout's bases and its element grid: each cell is the lane:register holding that element,
its background the warp (several owners: the first, marked with `*`); for a shared layout each cell is
the element's offset, coloured by its 4-byte bank, with the bank conflicts of the accesses that use it.
A convert shows its source and destination grids side by side and how the data moves. The grid
scrolls both ways; tiles past MAX_CELLS elements show their top-left corner (the CLI prints all).
"""
from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, ScrollableContainer, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from ...errors import IrscopeError
from ...layouts.cost import swizzle_summary
from ...layouts.gf2 import LinearLayout
from ...layouts.model import Encoding, LayoutSet
from ...layouts.report import AccessReport, ConvertReport, access_reports, convert_reports, load_layouts
from ...render.controls import visible_controls
from ...store.snapshot import Snapshot
from ..model.controls import visible_text
from ..widgets.key_footer import KeyFooter

MAX_CELLS = 64 * 128
# One background a warp (8 warps, then again), readable with light text; one hue a bank group for shared.
WARP_COLOURS = ("#1f4e79", "#7b2c2c", "#2e6b34", "#6b4f1d", "#553c7b", "#1d6b6b", "#6b1d55", "#4a4a4a")
BANK_COLOURS = ("#1f4e79", "#2e6b34", "#6b4f1d", "#553c7b")


@dataclass(frozen=True)
class Item:
    """One entry of the list: an encoding at a shape, or a convert."""

    encoding: Encoding | None = None
    shape: tuple[int, ...] = ()
    convert: ConvertReport | None = None


def grid_text(ll: LinearLayout, elem_bits: int = 16) -> tuple[Text, str]:
    """The element grid as Rich text, and a line saying what part of it is shown."""
    rows, cols = (1, ll.shape[0]) if len(ll.shape) == 1 else (ll.shape[0], ll.shape[1])
    if len(ll.shape) > 2:
        return Text("(no grid for a layout of more than two dims)"), ""
    show_cols = min(cols, 128)
    show_rows = min(rows, max(1, MAX_CELLS // show_cols))
    text = Text(no_wrap=True)
    header = "      " + "".join(f"{j:>7}" for j in range(show_cols))
    text.append(header + "\n", style="bold")
    for i in range(show_rows):
        text.append(f"{i:>5} ", style="bold")
        for j in range(show_cols):
            e = (j,) if len(ll.shape) == 1 else (i, j)
            if ll.is_shared:
                off = ll.offsets.get(e)
                bank = (off * elem_bits // 32) % 32 if off is not None else 0
                text.append(f"{'?' if off is None else off:>6} ", style=f"on {BANK_COLOURS[bank // 8]}")
            else:
                owners = ll.owners.get(e, [])
                if not owners:
                    text.append("     - ")
                    continue
                w, lane, r = owners[0]
                mark = "*" if len(owners) > 1 else " "
                text.append(f"{lane:>2}:{r:<3}{mark}", style=f"#ffffff on {WARP_COLOURS[w % len(WARP_COLOURS)]}")
        text.append("\n")
    shown = "" if (show_rows, show_cols) == (rows, cols) else \
        f"showing rows 0-{show_rows - 1} and columns 0-{show_cols - 1} of {rows}x{cols}"
    return text, shown


def legend(ll: LinearLayout) -> Text:
    t = Text()
    if ll.is_shared:
        t.append("cell = offset; colour = bank ")
        for k, c in enumerate(BANK_COLOURS):
            t.append(f" {8 * k}-{8 * k + 7} ", style=f"on {c}")
        return t
    t.append("cell = lane:register (* = also held by others); colour = warp ")
    for w in range(min(ll.size("warp"), len(WARP_COLOURS))):
        t.append(f" w{w} ", style=f"#ffffff on {WARP_COLOURS[w]}")
    return t


def describe(enc: Encoding, shape: tuple[int, ...], accesses: list[AccessReport]) -> Text:
    # (names and attributes come from layouts.json and the TTGIR: their control characters are shown)
    return visible_text(_describe(enc, shape, accesses))


def _describe(enc: Encoding, shape: tuple[int, ...], accesses: list[AccessReport]) -> Text:
    sl = enc.at(shape)
    t = Text()
    t.append(f"{enc.name}", style="bold")
    t.append(f"  {enc.kind} ({enc.space}) at {'x'.join(map(str, shape))}" + (f", by {sl.by}" if sl.by else "") + "\n")
    if enc.name != enc.attr:
        t.append(enc.attr + "\n", style="dim")
    if sl.layout is None:
        t.append(f"not available: {sl.note}\n", style="yellow")
        return t
    for dim, vecs in sl.layout.bases.items():
        t.append(f"{dim:<8} {[list(v) for v in vecs]}\n")
    if sl.layout.is_shared:
        t.append(f"swizzle: {swizzle_summary(enc.attr, enc.kind)}\n")
        for a in accesses:
            x = a.access
            verdict = a.conflicts.summary() if a.conflicts else "no count"
            t.append(f"line {x.line}: {x.op} ({x.direction}) {x.tensor_name}: {verdict}\n")
    t.append_text(legend(sl.layout))
    return t


class LayoutsScreen(Screen):
    """Every encoding of one snapshot as a linear layout, and its convert_layout ops."""

    BINDINGS = [
        Binding("escape,q", "app.pop_screen", "Back"),
        Binding("tab", "focus_next", "Grid/list", show=False),
    ]
    DEFAULT_CSS = """
    LayoutsScreen #layouts-list { width: 36; max-width: 45%; }
    LayoutsScreen #layouts-info-box { height: auto; max-height: 40%; }
    LayoutsScreen #layouts-info { height: auto; padding: 0 1; }
    LayoutsScreen .layouts-grid { overflow: auto auto; }
    LayoutsScreen .layouts-grid Static { width: auto; height: auto; }
    LayoutsScreen .layouts-side { width: 1fr; }
    LayoutsScreen #layouts-shown { height: auto; color: $text-muted; }
    """

    def __init__(self, snapshot: Snapshot, line: int | None = None):
        super().__init__()
        self.snapshot = snapshot
        self.start_line = line  # a TTGIR line (1-based): preselect what it uses
        self.layouts: LayoutSet | None = None
        self.items: list[Item] = []
        self.accesses: list[AccessReport] = []
        self.problem = ""

    def compose(self) -> ComposeResult:
        with Horizontal():
            yield OptionList(id="layouts-list")
            with Vertical():
                # Scrolled, at most 40% of the screen: a shared layout's accesses ran past a fixed 14 lines
                # (cut, with no scrolling), and on a short screen the description hid the grid.
                with VerticalScroll(id="layouts-info-box", can_focus=False):
                    yield Static(id="layouts-info")
                yield Static(id="layouts-shown")
                with Horizontal(id="layouts-sides"):
                    with ScrollableContainer(classes="layouts-grid layouts-side", id="layouts-left"):
                        yield Static(id="layouts-grid-a")
                    with ScrollableContainer(classes="layouts-grid layouts-side", id="layouts-right"):
                        yield Static(id="layouts-grid-b")
        yield KeyFooter()

    def on_mount(self) -> None:
        self.sub_title = visible_controls(f"layouts of {self.snapshot.label}")
        try:
            self.layouts = load_layouts(self.snapshot)
            text = self.snapshot.read("ttgir") if "ttgir" in self.snapshot.stage_files else ""
        except IrscopeError as e:
            self.problem = f"{e.message}" + (f" ({e.hint})" if e.hint else "")
            text = ""
        if self.layouts is None:
            self.problem = self.problem or (f"{self.snapshot.label} has no layouts.json; compute it with "
                                            f"`irscope layouts {self.snapshot.path} --compute`")
            self.query_one("#layouts-info", Static).update(Text(visible_controls(self.problem), style="yellow"))
            self.query_one("#layouts-right").display = False
            return
        for enc in self.layouts.encodings:
            for sl in enc.layouts:
                self.items.append(Item(enc, sl.shape))
        for c in convert_reports(text, self.layouts):
            self.items.append(Item(convert=c))
        self.accesses = access_reports(text, self.layouts)
        if self.problem:  # the layouts are shown, but without the TTGIR's converts and shared-memory accesses
            self.app.notify(f"no convert_layout or shared-memory access shown: {self.problem}", severity="warning",
                            timeout=10, markup=False)
        if not self.items:  # a kernel without tensors: layouts.json lists no encoding, the TTGIR no convert
            self.query_one("#layouts-info", Static).update(Text(visible_controls(
                f"{self.snapshot.label} uses no layout: its layouts.json lists no encoding"
                + ("" if self.problem else " and its TTGIR has no convert_layout")), style="yellow"))
            self.query_one("#layouts-right").display = False
            return
        options = self.query_one(OptionList)
        for item in self.items:
            options.add_option(Option(self._label(item)))
        start = self._start_index()
        options.highlighted = start
        options.focus()
        self.show(start)

    def _label(self, item: Item) -> Text:
        # Text, not str: an OptionList reads a str prompt as markup, and these names are the snapshot's
        # (an encoding named `[/]` was a MarkupError that ended the app)
        if item.convert is not None:
            c = item.convert
            return Text(visible_controls(f"cvt :{c.op.line} {c.op.src_name} -> {c.op.dst_name}"))
        name = item.encoding.name if len(item.encoding.name) <= 20 else item.encoding.name[:18] + "…"
        return Text(visible_controls(f"{name} {'x'.join(map(str, item.shape))}"))

    def _start_index(self) -> int:
        if self.start_line is None:
            return 0
        for k, item in enumerate(self.items):
            if item.convert is not None and item.convert.op.line == self.start_line:
                return k
        for k, item in enumerate(self.items):
            if item.encoding is not None and self.start_line in item.encoding.lines:
                return k
        return 0

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        if event.option_index is not None and self.items:
            self.show(event.option_index)

    def show(self, index: int) -> None:
        item = self.items[index]
        info = self.query_one("#layouts-info", Static)
        right = self.query_one("#layouts-right")
        if item.convert is None:
            enc = item.encoding
            accesses = [a for a in self.accesses if enc.attr in (a.access.shared, a.access.tensor)]
            info.update(describe(enc, item.shape, accesses))
            ll = enc.at(item.shape).layout
            right.display = False
            self._grid("#layouts-grid-a", ll, _bits(accesses))
            return
        c = item.convert
        t = Text()
        t.append(f"convert_layout at line {c.op.line}", style="bold")
        t.append(f"  {'x'.join(map(str, c.op.shape))}: {c.op.src_name} -> {c.op.dst_name}\n")
        t.append((c.cost.summary() if c.cost else "no cost: a side has no layout") + "\n")
        t.append("left: source; right: destination. ")
        if c.src is not None:
            t.append_text(legend(c.src))
        info.update(visible_text(t))
        right.display = True
        self._grid("#layouts-grid-a", c.src, 16)
        self._grid("#layouts-grid-b", c.dst, 16)

    def _grid(self, selector: str, ll: LinearLayout | None, elem_bits: int) -> None:
        target = self.query_one(selector, Static)
        if ll is None:
            target.update(Text("no layout", style="yellow"))
            self.query_one("#layouts-shown", Static).update("")
            return
        text, shown = grid_text(ll, elem_bits)
        target.update(text)
        self.query_one("#layouts-shown", Static).update(shown)


def _bits(accesses: list[AccessReport]) -> int:
    return accesses[0].access.elem_bits if accesses else 16
