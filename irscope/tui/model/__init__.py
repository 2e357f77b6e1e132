"""What the TUI shows, computed without Textual: entries, documents, axes, facts, stages, steps."""
