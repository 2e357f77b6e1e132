"""Golden snapshots: root.py (compare, write, unused), expect.py (property expectations) and the pytest
plugin (pytest_plugin.py, registered through the `pytest11` entry point)."""
