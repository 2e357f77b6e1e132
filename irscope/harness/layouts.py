"""Every encoding of a snapshot's TTGIR as a linear layout, through Triton's bindings (Gluon's builder),
in a child process: several of those calls abort the interpreter on input they do not expect, and a
crash must cost the layouts file, not the snapshot or the caller.

The path (Triton 3.6 and 3.9): parse the TTGIR with `ir.parse_mlir_module`, take each tensor or memdesc
result's encoding as a Gluon layout object (`GluonOpBuilder.get_gluon_layout_from_tensor/_memdesc`),
and convert it at the shape it is used at (`to_linear_layout`). Shapes come from the type text (3.6 has
no `value.get_shape`). Inputs known to abort (a shape not a power of two, an nvmma_shared tile narrower
than its swizzle) are refused before the call. Where a binding is missing or fails, irscope converts
the common encodings itself (irscope/layouts/fallback.py) and records the rest as not available.
"""
from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Callable, Sequence

from ..layouts import fallback
from ..layouts.model import Encoding, LayoutSet, LayoutStatus, ShapedLayout
from ..layouts.text import EncodingUse, encoding_uses, space_of, types_in
from ..layouts.gf2 import LinearLayout
from .workers import JobStatus, Progress, run_jobs

TIMEOUT = 60.0


def triton_present() -> bool:
    """Whether Triton is installed here (without importing it)."""
    import importlib.util
    return importlib.util.find_spec("triton") is not None


def compute_layouts(ttgir: str) -> LayoutSet:
    """The layouts of a TTGIR module, converted in this process (it may abort: call it in a child)."""
    uses = encoding_uses(ttgir)
    try:
        from triton._C.libtriton import gluon_ir, ir  # noqa: F401
        import triton
        version = f"triton {triton.__version__}"
        if not hasattr(gluon_ir, "GluonOpBuilder") or not hasattr(gluon_ir.GluonOpBuilder, "to_linear_layout"):
            raise ImportError("no GluonOpBuilder.to_linear_layout")
    except ImportError as e:
        return fallback_layouts(ttgir, f"Triton's layout bindings are missing ({e}); irscope converted "
                                       "blocked, slice, linear and swizzled_shared itself")
    gl_layouts, errors, builder = _gluon_layouts(ttgir, {u.attr for u in uses})
    encodings = []
    for u in uses:
        layouts = []
        for shape in u.shapes:
            if u.attr in gl_layouts:
                layouts.append(_convert(builder, gl_layouts[u.attr], u, shape))
            else:
                layouts.append(_fallback(u, shape, errors.get(u.attr, "Triton gave no layout object for it")))
        encodings.append(_encoding(u, layouts))
    return LayoutSet(tuple(encodings), version)


def fallback_layouts(ttgir: str, note: str) -> LayoutSet:
    """Every encoding through irscope's own conversion, the rest marked not available; no Triton."""
    uses = encoding_uses(ttgir)
    return LayoutSet(tuple(_encoding(u, [_fallback(u, s, note) for s in u.shapes]) for u in uses), "irscope", note)


def _encoding(u: EncodingUse, layouts: list[ShapedLayout]) -> Encoding:
    return Encoding(u.name, u.attr, u.kind, space_of(u.kind), tuple(layouts), u.lines)


def _fallback(u: EncodingUse, shape: tuple[int, ...], why: str) -> ShapedLayout:
    try:
        return ShapedLayout(shape, LayoutStatus.OK, "irscope", "", fallback.convert(u.attr, shape))
    except fallback.Unsupported as e:
        return ShapedLayout(shape, LayoutStatus.NOT_AVAILABLE, note=f"{why}; {e}")


def _gluon_layouts(ttgir: str, wanted: set[str]):
    """attr -> Gluon layout object for every wanted encoding some op result has, and attr -> error."""
    from triton._C.libtriton import gluon_ir, ir
    ctx = ir.context()
    ir.load_dialects(ctx)
    from triton._C import libtriton
    for backend in ("nvidia", "amd"):  # their ttng.* and amdg.* ops
        if hasattr(getattr(libtriton, backend, None), "load_dialects"):
            getattr(libtriton, backend).load_dialects(ctx)
    fd, path = tempfile.mkstemp(suffix=".ttgir")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(ttgir)
        module = ir.parse_mlir_module(path, ctx)  # it takes a path, not text
    finally:
        Path(path).unlink(missing_ok=True)
    builder = gluon_ir.GluonOpBuilder(ctx)
    ops = []
    module.walk(lambda op: ops.append(op))
    found, errors = {}, {}
    for op in ops:
        for i in range(op.get_num_results()):
            value = op.get_result(i)
            ts = str(value.get_type())
            memdesc = ts.startswith("!ttg.memdesc<")
            if not (memdesc or ts.startswith("tensor<")):
                continue  # a scalar: get_gluon_layout_from_tensor would crash on it
            parsed = types_in(ts)
            if not parsed or not parsed[0].encoding or parsed[0].encoding not in wanted:
                continue
            attr = parsed[0].encoding
            if attr in found:
                continue
            try:
                found[attr] = (builder.get_gluon_layout_from_memdesc(value) if memdesc
                               else builder.get_gluon_layout_from_tensor(value))
            except Exception as e:  # noqa: BLE001 - e.g. amd_rotating_shared: "Unhandled encoding encountered"
                errors[attr] = f"Triton cannot read it ({type(e).__name__}: {e})"
    found["__module__"] = (ctx, module)  # keep the context and module alive while their layouts are used
    return found, errors, builder


def _refuse(u: EncodingUse, shape: tuple[int, ...]) -> str | None:
    """Why converting would abort the process, for the inputs known to (docs/layouts.md)."""
    if any(s <= 0 or s & (s - 1) for s in shape):
        return f"shape {'x'.join(map(str, shape))} is not a power of two in every dim (Triton would abort)"
    if u.kind == "nvmma_shared":
        width = re.search(r"swizzlingByteWidth\s*=\s*(\d+)", u.attr)
        bits = re.search(r"elementBitWidth\s*=\s*(\d+)", u.attr)
        trans = "transposed = true" in u.attr
        if len(shape) < 2:
            return "a 1-D nvmma_shared buffer (Triton would abort)"
        if width and bits and int(width.group(1)):
            row = shape[-2] if trans else shape[-1]
            if row * int(bits.group(1)) // 8 < int(width.group(1)):
                return f"the tile's rows are narrower than its {width.group(1)}-byte swizzle (Triton would abort)"
    return None


def _convert(builder, gl_layout, u: EncodingUse, shape: tuple[int, ...]) -> ShapedLayout:
    why = _refuse(u, shape)
    if why:
        return ShapedLayout(shape, LayoutStatus.NOT_AVAILABLE, note=why)
    try:
        pyll = builder.to_linear_layout(gl_layout._to_ir(builder), list(shape))
    except Exception as e:  # noqa: BLE001 - a Python-side refusal (an empty barrier buffer, TMEM)
        return _fallback(u, shape, f"Triton could not convert it ({type(e).__name__}: {e})")
    if hasattr(pyll, "reg_bases"):
        bases = {"register": pyll.reg_bases, "lane": pyll.lane_bases, "warp": pyll.warp_bases,
                 "block": pyll.block_bases}
    elif hasattr(pyll, "offset_bases"):
        bases = {"offset": pyll.offset_bases, "block": pyll.block_bases}
    else:
        return ShapedLayout(shape, LayoutStatus.NOT_AVAILABLE,
                            note=f"Triton gives {type(pyll).__name__} for it, which has no register/lane bases")
    return ShapedLayout(shape, LayoutStatus.OK, "triton", "",
                        LinearLayout.of({k: [list(v) for v in vs] for k, vs in bases.items()}, shape))


# -- in child processes ----------------------------------------------------------------------------------

def _job(job: tuple[str, str]) -> dict:
    # LLVM writes its abort message and nanobind its leak report straight to fds 1 and 2: keep them off
    # the user's terminal (the parent reports a crash from the exit status).
    ttgir, scratch = job
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    # The parser takes a path: its file goes in the parent's scratch folder, which the parent removes
    # even when an abort in Triton's conversion kills this child before its own clean-up runs.
    tempfile.tempdir = scratch
    return compute_layouts(ttgir).to_json()


def layouts_of(ttgir_texts: Sequence[str], *, workers: int | None = None, timeout: float = TIMEOUT,
               on_progress: Callable[[Progress], None] | None = None,
               start_method: str | None = None) -> list[LayoutSet]:
    """The layouts of each TTGIR text, each converted in a child process. A child that crashes, hangs or
    raises gives irscope's own conversion, with a note saying what happened to Triton's."""
    scratch = tempfile.mkdtemp(prefix="irscope-layouts-")
    try:
        results = run_jobs([(t, scratch) for t in ttgir_texts], _job, workers=workers, timeout=timeout,
                           on_progress=on_progress, start_method=start_method)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    out = []
    for text, r in zip(ttgir_texts, results):
        if r.status == JobStatus.OK:
            out.append(LayoutSet.from_json(r.value))
        else:
            what = r.message.replace("the compiler process", "Triton's layout conversion")
            out.append(fallback_layouts(text, f"{what}; irscope converted blocked, slice, linear and "
                                              "swizzled_shared itself"))
    return out


def compute_for_snapshots(snapshots, *, workers: int | None = None, timeout: float = TIMEOUT,
                          start_method: str | None = None) -> list[LayoutSet | None]:
    """Compute and store layouts.json for each snapshot that has a TTGIR stage (None for the others)."""
    from ..store.layouts import write_layouts
    from ..store.snapshot import keeps_caches
    todo = [s for s in snapshots if "ttgir" in s.stage_files]
    sets = layouts_of([s.read("ttgir") for s in todo], workers=workers, timeout=timeout,
                      start_method=start_method) if todo else []
    by_path = {}
    for snap, ls in zip(todo, sets):
        if keeps_caches(snap):  # never into goldens, a Triton cache entry or a dump folder
            write_layouts(snap.path, ls.to_json())
        by_path[snap.path] = ls
    return [by_path.get(s.path) for s in snapshots]
