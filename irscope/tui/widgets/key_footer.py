"""KeyFooter: the key bindings of what has focus, as one line drawn by one widget.

Textual's `Footer` rebuilds a widget per key whenever focus moves (a search moves it twice: into the
query box and back), which costs tens of milliseconds of style work per move on a full screen. This
footer keeps the list of keys it shows, repaints only when that list changed, and never asks for a new
layout. A click on a key presses it, as Footer's keys do.
"""
from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual import events
from textual.widget import Widget


@dataclass(frozen=True)
class Key:
    key: str
    display: str
    description: str
    enabled: bool


class KeyFooter(Widget, can_focus=False):
    """The shown bindings of the focused widget and its ancestors, screen and app, in Footer's order."""

    ALLOW_SELECT = False
    COMPONENT_CLASSES = {"key-footer--key", "key-footer--description", "key-footer--disabled",
                         "key-footer--separator"}
    DEFAULT_CSS = """
    KeyFooter {
        dock: bottom;
        height: 1;
        width: 1fr;
        color: $footer-foreground;
        background: $footer-background;
    }
    KeyFooter > .key-footer--key {
        color: $footer-key-foreground;
        background: $footer-key-background;
        text-style: bold;
    }
    KeyFooter > .key-footer--description {
        color: $footer-description-foreground;
        background: $footer-description-background;
    }
    KeyFooter > .key-footer--disabled { text-style: dim; }
    KeyFooter > .key-footer--separator { color: $foreground 20%; }
    """

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.keys: tuple[Key, ...] = ()
        self.palette: Key | None = None
        self._spans: list[tuple[int, int, Key]] = []  # (start column, end column, key) as last drawn

    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, self._bindings_changed)
        self._bindings_changed(self.screen)

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    def _bindings_changed(self, screen) -> None:
        if not self.is_attached or screen is not self.screen:
            return
        active = screen.active_bindings
        keys: dict[str, Key] = {}  # one key per action, the first bound (as Footer shows them)
        for _node, binding, enabled, _tooltip in active.values():
            if binding.show and binding.action not in keys:
                keys[binding.action] = Key(binding.key, self.app.get_key_display(binding),
                                           binding.description, enabled)
        palette = None
        if self.app.ENABLE_COMMAND_PALETTE and self.app.COMMAND_PALETTE_BINDING in active:
            _node, binding, enabled, _tooltip = active[self.app.COMMAND_PALETTE_BINDING]
            palette = Key(binding.key, self.app.get_key_display(binding), binding.description, enabled)
        shown = tuple(keys.values())
        if shown != self.keys or palette != self.palette:
            self.keys, self.palette = shown, palette
            self.refresh()

    def _key_text(self, key: Key) -> Text:
        text = Text()
        text.append(f" {key.display} ", self.get_component_rich_style("key-footer--key"))
        if key.description:
            text.append(f"{key.description} ", self.get_component_rich_style("key-footer--description"))
        if not key.enabled:
            text.stylize(self.get_component_rich_style("key-footer--disabled"))
        return text

    def render(self) -> Text:
        line, spans = Text(no_wrap=True, overflow="crop", end=""), []
        for key in self.keys:
            part = self._key_text(key)
            spans.append((line.cell_len, line.cell_len + part.cell_len, key))
            line.append_text(part)
        if self.palette is not None:  # on the right, after a rule, as Footer draws it
            key, part = self.palette, Text("▏", self.get_component_rich_style("key-footer--separator"))
            part.append(key.display, self.get_component_rich_style("key-footer--key"))
            part.append(f" {key.description}", self.get_component_rich_style("key-footer--description"))
            part.append(" ")
            start = max(0, self.size.width - part.cell_len)
            if line.cell_len > start:  # a narrow screen: the palette key covers the keys' end, as in Footer
                line.truncate(start)
                spans = [(a, min(b, start), k) for a, b, k in spans if a < start]
            line.append(" " * (start - line.cell_len))
            spans.append((start, start + part.cell_len, key))
            line.append_text(part)
        self._spans = spans
        return line

    def key_at(self, x: int) -> Key | None:
        """The key drawn at column `x`, if any."""
        return next((key for start, end, key in self._spans if start <= x < end), None)

    def on_click(self, event: events.Click) -> None:
        key = self.key_at(event.x)
        if key is None:
            return
        if key.enabled:
            self.app.simulate_key(key.key)
        else:
            self.app.bell()
