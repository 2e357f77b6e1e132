"""Every encoding of a snapshot's TTGIR as a linear layout, through Triton's bindings (Gluon's builder),
in a child process: several of those calls abort the interpreter on input they do not expect, and a
crash must cost the layouts file, not the snapshot or the caller.

The path (Triton 3.6 and 3.9): parse the TTGIR with `ir.parse_mlir_module`, take each tensor or memdesc
result's encoding as a Gluon layout object (`GluonOpBuilder.get_gluon_layout_from_tensor/_memdesc`),
and convert it at the shape it is used at (`to_linear_layout`). Shapes come from the type text (3.6 has
no `value.get_shape`). Inputs known to abort (a shape not a power of two, an nvmma_shared tile narrower
than its swizzle, any padded_shared) are refused before the call. Where a binding is missing or fails,
irscope converts the common encodings itself (irscope/layouts/fallback.py) and records the rest as not
available. An abort on an input not known to abort costs that one layout: the child records which
layout it is converting, and the parent converts the rest again in a new child without it.
"""
from __future__ import annotations

import dataclasses
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
from ..store.layouts import MAX_BITS
from .workers import JobStatus, Progress, run_jobs

TIMEOUT = 60.0
RETRIES = 4  # children started again per TTGIR after aborts, each without the layout that aborted
_FALLBACK_KINDS = "blocked, slice, linear, padded_shared and swizzled_shared"


def triton_present() -> bool:
    """Whether Triton is installed here (without importing it)."""
    import importlib.util
    return importlib.util.find_spec("triton") is not None


def compute_layouts(ttgir: str, skip: dict[int, str] | None = None,
                    on_step: Callable[[int], None] | None = None) -> LayoutSet:
    """The layouts of a TTGIR module, converted in this process (it may abort: call it in a child).
    Layouts are numbered in use order (each encoding's shapes in turn); `on_step(k)` is called before
    Triton converts layout k, and the layouts in `skip` (k -> why) get irscope's own conversion instead."""
    uses = encoding_uses(ttgir)
    skip = skip or {}
    try:
        from triton._C.libtriton import gluon_ir, ir  # noqa: F401
        import triton
        version = f"triton {triton.__version__}"
        if not hasattr(gluon_ir, "GluonOpBuilder") or not hasattr(gluon_ir.GluonOpBuilder, "to_linear_layout"):
            raise ImportError("no GluonOpBuilder.to_linear_layout")
    except ImportError as e:
        return fallback_layouts(ttgir, f"Triton's layout bindings are missing ({e}); irscope converted "
                                       f"{_FALLBACK_KINDS} itself", why="Triton's layout bindings are missing")
    gl_layouts, errors, builder = _gluon_layouts(ttgir, {u.attr for u in uses})
    context = fallback.module_context(ttgir)
    encodings, k = [], 0
    for u in uses:
        layouts = []
        for shape in u.shapes:
            if k in skip:
                layouts.append(_fallback(u, shape, skip[k], context))
            elif u.attr in gl_layouts:
                if on_step is not None:
                    on_step(k)
                layouts.append(_convert(builder, gl_layouts[u.attr], u, shape, context))
            else:
                layouts.append(_fallback(u, shape, errors.get(u.attr, "Triton gave no layout object for it"),
                                         context))
            k += 1
        encodings.append(_encoding(u, layouts))
    return LayoutSet(tuple(encodings), version)


def fallback_layouts(ttgir: str, note: str, why: str | None = None) -> LayoutSet:
    """Every encoding through irscope's own conversion, the rest marked not available (each with `why`
    Triton's is missing, `note` by default); no Triton."""
    uses = encoding_uses(ttgir)
    context = fallback.module_context(ttgir)
    return LayoutSet(tuple(_encoding(u, [_fallback(u, s, why or note, context) for s in u.shapes]) for u in uses),
                     "irscope", note)


def _encoding(u: EncodingUse, layouts: list[ShapedLayout]) -> Encoding:
    return Encoding(u.name, u.attr, u.kind, space_of(u.kind), tuple(_bounded(sl) for sl in layouts), u.lines)


def _too_large(shape: tuple[int, ...]) -> str | None:
    """Why a layout at `shape` is not recorded: the reader (store/layouts.py) refuses more than
    2**MAX_BITS positions, so the writer does not write them."""
    n = 1
    for s in shape:
        n *= s
    if n > 1 << MAX_BITS:
        return (f"shape {'x'.join(map(str, shape))} has {n:,} elements, more than irscope records "
                f"({1 << MAX_BITS:,})")
    return None


def _bounded(sl: ShapedLayout) -> ShapedLayout:
    if sl.layout is None:
        return sl
    bits = sum(len(v) for v in sl.layout.bases.values())
    if bits > MAX_BITS:
        return ShapedLayout(sl.shape, LayoutStatus.NOT_AVAILABLE,
                            note=f"its layout has 2**{bits} hardware positions, more than irscope records "
                                 f"(2**{MAX_BITS})")
    return sl


def _fallback(u: EncodingUse, shape: tuple[int, ...], why: str, context=None) -> ShapedLayout:
    big = _too_large(shape)
    if big:
        return ShapedLayout(shape, LayoutStatus.NOT_AVAILABLE, note=big)
    try:
        ll, note = fallback.convert_noted(u.attr, shape, context)
    except fallback.Unsupported as e:  # said once where irscope refuses it for the reason Triton would abort on
        return ShapedLayout(shape, LayoutStatus.NOT_AVAILABLE, note=why if str(e) in why else f"{why}; {e}")
    return ShapedLayout(shape, LayoutStatus.OK, "irscope", f"{why}; irscope's own conversion" + (f": {note}" if note else ""),
                        ll)


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
    big = _too_large(shape)
    if big:
        return big
    if u.kind == "padded_shared":
        return "Triton has no linear layout for padded_shared (to_linear_layout aborts on it)"
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


def _convert(builder, gl_layout, u: EncodingUse, shape: tuple[int, ...], context=None) -> ShapedLayout:
    if u.kind.endswith("shared") and shape and all(s == 1 for s in shape):
        # a buffer of one element (an mbarrier's word): one offset, nothing to lay out. Triton's conversion
        # refuses it ("offset_bases must not be empty").
        return ShapedLayout(shape, LayoutStatus.OK, "irscope", "one element (an mbarrier, say): nothing to lay out",
                            LinearLayout.of({"offset": [], "block": []}, shape))
    why = _refuse(u, shape)
    if why:
        return _fallback(u, shape, why, context)
    try:
        pyll = builder.to_linear_layout(gl_layout._to_ir(builder), list(shape))
    except Exception as e:  # noqa: BLE001 - a Python-side refusal (an empty barrier buffer, TMEM)
        return _fallback(u, shape, f"Triton could not convert it ({type(e).__name__}: {e})", context)
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

def _job(job: tuple[str, str, dict[int, str], str]) -> dict:
    # LLVM writes its abort message and nanobind its leak report straight to fds 1 and 2: keep them off
    # the user's terminal (the parent reports a crash from the exit status).
    ttgir, scratch, skip, marker = job
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    # The parser takes a path: its file goes in the parent's scratch folder, which the parent removes
    # even when an abort in Triton's conversion kills this child before its own clean-up runs.
    tempfile.tempdir = scratch
    fd = os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)

    def mark(k: int) -> None:  # which layout Triton is converting: an abort leaves it in the file
        os.pwrite(fd, f"{k:>12}".encode(), 0)

    try:
        return compute_layouts(ttgir, skip, mark).to_json()
    finally:
        os.close(fd)


def _marked(marker: str) -> int | None:
    try:
        return int(Path(marker).read_text().strip())
    except (OSError, ValueError):
        return None  # it died before converting a layout (parsing the module)


def _layout_name(ttgir: str, k: int) -> str:
    n = 0
    for u in encoding_uses(ttgir):
        for shape in u.shapes:
            if n == k:
                return f"{u.name if len(u.name) < 48 else u.name[:45] + '...'} at {'x'.join(map(str, shape))}"
            n += 1
    return f"layout {k}"


def layouts_of(ttgir_texts: Sequence[str], *, workers: int | None = None, timeout: float = TIMEOUT,
               on_progress: Callable[[Progress], None] | None = None,
               start_method: str | None = None) -> list[LayoutSet]:
    """The layouts of each TTGIR text, each converted in a child process. A child that crashes, hangs or
    raises gives irscope's own conversion, with a note saying what happened to Triton's."""
    scratch = tempfile.mkdtemp(prefix="irscope-layouts-")
    skips: list[dict[int, str]] = [{} for _ in ttgir_texts]
    results: list = [None] * len(ttgir_texts)
    try:
        todo = list(range(len(ttgir_texts)))
        for attempt in range(RETRIES + 1):
            jobs = [(ttgir_texts[i], scratch, {k: f"Triton's layout conversion {what} on it"
                                               for k, what in skips[i].items()},
                     os.path.join(scratch, f"at-{i}-{attempt}")) for i in todo]
            done = run_jobs(jobs, _job, workers=workers, timeout=timeout,
                            on_progress=on_progress if attempt == 0 else None, start_method=start_method)
            again = []
            for i, job, r in zip(todo, jobs, done):
                results[i] = r
                k = _marked(job[3]) if r.status == JobStatus.CRASHED else None
                if k is not None and k not in skips[i] and attempt < RETRIES:
                    skips[i][k] = r.message.replace("the compiler process ", "")  # was killed by signal ...
                    again.append(i)
            todo = again
            if not todo:
                break
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    out = []
    for text, r, skip in zip(ttgir_texts, results, skips):
        aborted = "; ".join(f"{_layout_name(text, k)} ({what})" for k, what in skip.items())
        if r.status == JobStatus.OK:
            ls = LayoutSet.from_json(r.value)
            if skip:
                ls = dataclasses.replace(ls, note=f"Triton's layout conversion died on {aborted}; the other layouts "
                                                  "are Triton's (from a new process), those irscope's own where "
                                                  "it has a conversion")
            out.append(ls)
        else:
            what = r.message.replace("the compiler process", "Triton's layout conversion")
            if skip:
                what += f" (after dying on {aborted})"
            out.append(fallback_layouts(text, f"{what}; irscope converted {_FALLBACK_KINDS} itself", why=what))
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
