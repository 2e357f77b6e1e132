"""`irscope tui`: a Textual application for reading and comparing snapshots.

`app.py` is the thin `App`; each widget lives in its own module and declares the messages it sends.
The modules without widgets (`document`, `catalog`, `axes`, `align`, `facts`) import neither Textual
nor Triton, so they are tested as plain code. Importing this package imports nothing heavy.
"""
