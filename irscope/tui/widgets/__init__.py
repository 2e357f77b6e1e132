"""The TUI's widgets, one a file."""
