"""The TUI's screens: compare, compile, help and the pass timeline."""
