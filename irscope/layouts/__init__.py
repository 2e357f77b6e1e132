"""Layouts without Triton: the linear layouts a snapshot's layouts.json records, turned into the maps a
person reads (element -> warp/lane/register, the per-thread view, shared offsets), the cost of
`convert_layout` ops and of shared-memory accesses, and the TTGIR text around them.

Triton computes the bases at compile time (irscope/harness/layouts.py); nothing here imports it.
"""
from .gf2 import LinearLayout
from .model import Encoding, LayoutSet, ShapedLayout

__all__ = ["Encoding", "LayoutSet", "LinearLayout", "ShapedLayout"]
