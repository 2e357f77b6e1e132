"""Output for terminals: styles, tables, sizes, highlighting and progress lines."""
