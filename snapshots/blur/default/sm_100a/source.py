"""Grayscale plus an 11x11 gaussian blur of an RGB image, two ways (the talk's closing benchmark).

- `blur`: one fused kernel. Each program owns a 16x16 tile of the output and sums the 121 neighbours of
  every pixel, turning each neighbour into luma on the fly: the RGB image is read once per tap, the
  result written once. The library's turf: about as fast as cuDNN's conv2d.
- `blur.gray`, `blur.row`, `blur.col`: the separable path. A gaussian's 2D weights are the outer
  product of a 1D row, so 121 taps become 11 along x then 11 along y. A program cannot read its
  neighbours' on-chip tiles, so the path is three launches with DRAM between them: grayscale, blur
  along x, blur along y. Less work beats fewer launches.

The image is planar fp32 (3, H, W) in [0, 1); pixels outside it count as 0 (what conv2d's zero padding
does). The three separable specs share one workload: checking or timing any of them runs the path,
with the named spec at the chosen config and the other two at their defaults, and compares all three
intermediate images with their references.
"""
import triton
import triton.language as tl

from irscope.spec import Config, KernelSpec, Tensor
from irscope.workload import Workload, cdiv, empty, rand

RADIUS = 5  # 11 taps
SIGMA = 2.0
LUMA = (0.299, 0.587, 0.114)  # ITU-R BT.601


@triton.jit
def blur_fused_kernel(rgb_ptr, w_ptr, out_ptr, H, W, stride_c, stride_h,
                      RADIUS: tl.constexpr, TILE_H: tl.constexpr, TILE_W: tl.constexpr):
    pid_x = tl.program_id(0)
    pid_y = tl.program_id(1)
    ys = pid_y * TILE_H + tl.arange(0, TILE_H)
    xs = pid_x * TILE_W + tl.arange(0, TILE_W)
    acc = tl.zeros((TILE_H, TILE_W), dtype=tl.float32)
    for dy in range(0, 2 * RADIUS + 1):
        wy = tl.load(w_ptr + dy)
        yy = ys + (dy - RADIUS)
        row_ok = (yy >= 0) & (yy < H)
        for dx in range(0, 2 * RADIUS + 1):
            wx = tl.load(w_ptr + dx)
            xx = xs + (dx - RADIUS)
            inside = row_ok[:, None] & ((xx >= 0) & (xx < W))[None, :]
            offs = yy[:, None] * stride_h + xx[None, :]
            r = tl.load(rgb_ptr + offs, mask=inside, other=0.0)
            g = tl.load(rgb_ptr + stride_c + offs, mask=inside, other=0.0)
            b = tl.load(rgb_ptr + 2 * stride_c + offs, mask=inside, other=0.0)
            acc += (wy * wx) * (0.299 * r + 0.587 * g + 0.114 * b)
    out = out_ptr + ys[:, None] * W + xs[None, :]
    tl.store(out, acc, mask=(ys[:, None] < H) & (xs[None, :] < W))


@triton.jit
def gray_kernel(rgb_ptr, gray_ptr, n_pixels, stride_c, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_pixels
    r = tl.load(rgb_ptr + offs, mask=mask)
    g = tl.load(rgb_ptr + stride_c + offs, mask=mask)
    b = tl.load(rgb_ptr + 2 * stride_c + offs, mask=mask)
    tl.store(gray_ptr + offs, 0.299 * r + 0.587 * g + 0.114 * b, mask=mask)


@triton.jit
def blur_row_kernel(src_ptr, w_ptr, dst_ptr, H, W,
                    RADIUS: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_W: tl.constexpr):
    # 11 taps along x; the neighbours' loads overlap this tile's and hit L1.
    ys = tl.program_id(1) * BLOCK_H + tl.arange(0, BLOCK_H)
    xs = tl.program_id(0) * BLOCK_W + tl.arange(0, BLOCK_W)
    row_ok = (ys < H)[:, None]
    acc = tl.zeros((BLOCK_H, BLOCK_W), dtype=tl.float32)
    for dx in tl.static_range(2 * RADIUS + 1):
        xx = xs + (dx - RADIUS)
        v = tl.load(src_ptr + ys[:, None] * W + xx[None, :], mask=row_ok & ((xx >= 0) & (xx < W))[None, :],
                    other=0.0)
        acc += tl.load(w_ptr + dx) * v
    tl.store(dst_ptr + ys[:, None] * W + xs[None, :], acc, mask=row_ok & (xs < W)[None, :])


@triton.jit
def blur_col_kernel(src_ptr, w_ptr, dst_ptr, H, W,
                    RADIUS: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_W: tl.constexpr):
    # 11 taps along y: each tap is a whole row of the tile, shifted.
    ys = tl.program_id(1) * BLOCK_H + tl.arange(0, BLOCK_H)
    xs = tl.program_id(0) * BLOCK_W + tl.arange(0, BLOCK_W)
    col_ok = (xs < W)[None, :]
    acc = tl.zeros((BLOCK_H, BLOCK_W), dtype=tl.float32)
    for dy in tl.static_range(2 * RADIUS + 1):
        yy = ys + (dy - RADIUS)
        v = tl.load(src_ptr + yy[:, None] * W + xs[None, :], mask=((yy >= 0) & (yy < H))[:, None] & col_ok,
                    other=0.0)
        acc += tl.load(w_ptr + dy) * v
    tl.store(dst_ptr + ys[:, None] * W + xs[None, :], acc, mask=(ys < H)[:, None] & col_ok)


def gaussian(radius: int = RADIUS, sigma: float = SIGMA, device="cpu"):
    """The 1D gaussian row (sums to 1); the 2D kernel is its outer product."""
    import torch
    x = torch.arange(-radius, radius + 1, dtype=torch.float64)
    w = torch.exp(-(x * x) / (2 * sigma * sigma))
    return (w / w.sum()).to(device=device, dtype=torch.float32)


SIZES = {"small": {"h": 32, "w": 32}, "ragged": {"h": 19, "w": 37},
         "bench": {"h": 1368, "w": 2048},  # 2.8 megapixels, the talk's photo of Krakow's main square
         "4k": {"h": 2160, "w": 3840}}


def _build_fused(size, gen, device):
    h, w = size["h"], size["w"]
    return {"rgb": rand(gen, (3, h, w), "fp32", device), "w": gaussian(device=device), "out": empty((h, w), "fp32", device)}


def _build_separable(size, gen, device):
    h, w = size["h"], size["w"]
    x = _build_fused(size, gen, device)
    x["gray"] = empty((h, w), "fp32", device)
    x["rows"] = empty((h, w), "fp32", device)
    return x


def _launch_fused(x, size, p):
    h, w = size["h"], size["w"]
    rgb = x["rgb"]
    grid = (cdiv(w, p["TILE_W"]), cdiv(h, p["TILE_H"]))
    return [p.call(grid, rgb, x["w"], x["out"], h, w, rgb.stride(0), rgb.stride(1))]


def _launch_separable(x, size, p):
    h, w = size["h"], size["w"]
    gray, row, col = p.of("blur.gray"), p.of("blur.row"), p.of("blur.col")
    rgb = x["rgb"]
    return [
        gray.call((cdiv(h * w, gray["BLOCK"]),), rgb, x["gray"], h * w, rgb.stride(0)),
        row.call((cdiv(w, row["BLOCK_W"]), cdiv(h, row["BLOCK_H"])), x["gray"], x["w"], x["rows"], h, w),
        col.call((cdiv(w, col["BLOCK_W"]), cdiv(h, col["BLOCK_H"])), x["rows"], x["w"], x["out"], h, w),
    ]


def _luma(rgb):
    return LUMA[0] * rgb[0] + LUMA[1] * rgb[1] + LUMA[2] * rgb[2]


def _reference_steps(x):
    import torch.nn.functional as F
    rgb, w = x["rgb"].double(), x["w"].double()
    gray = _luma(rgb)
    rows = F.conv2d(gray[None, None], w.view(1, 1, 1, -1), padding=(0, RADIUS))
    out = F.conv2d(rows, w.view(1, 1, -1, 1), padding=(RADIUS, 0))
    return gray, rows[0, 0], out[0, 0]


def _reference_fused(x, size):
    import torch
    import torch.nn.functional as F
    gray = _luma(x["rgb"].double())
    w = x["w"].double()
    return {"out": F.conv2d(gray[None, None], torch.outer(w, w)[None, None], padding=RADIUS)[0, 0]}


def _reference_separable(x, size):
    gray, rows, out = _reference_steps(x)
    return {"gray": gray, "rows": rows, "out": out}


# What a user would write instead (issue 7 times these against the kernels).
def _torch_2d_fn(x):
    import torch
    import torch.nn.functional as F
    k2 = torch.outer(x["w"], x["w"])[None, None]

    def blur(rgb):
        return F.conv2d(_luma(rgb)[None, None], k2, padding=RADIUS)
    return blur


def _torch_sep_fn(x):
    import torch.nn.functional as F
    kx, ky = x["w"].view(1, 1, 1, -1), x["w"].view(1, 1, -1, 1)

    def blur(rgb):
        g = _luma(rgb)[None, None]
        return F.conv2d(F.conv2d(g, kx, padding=(0, RADIUS)), ky, padding=(RADIUS, 0))
    return blur


def _timed(make, compiled=False):
    def baseline(x, size):
        import torch
        fn = make(x)
        fn = torch.compile(fn) if compiled else fn
        return lambda: fn(x["rgb"])
    return baseline


BASELINES = {"torch conv2d": _timed(_torch_2d_fn), "torch separable": _timed(_torch_sep_fn),
             "torch.compile conv2d": _timed(_torch_2d_fn, True),
             "torch.compile separable": _timed(_torch_sep_fn, True)}

TAPS = 2 * RADIUS + 1
FUSED = Workload(
    sizes=SIZES, build=_build_fused, outputs=("out",), launch=_launch_fused, reference=_reference_fused,
    # per pixel and tap: luma (3 multiplies, 2 adds) and a multiply-add; read RGB, write luma-blur
    flops=lambda s: s["h"] * s["w"] * TAPS * TAPS * 7, bytes=lambda s: s["h"] * s["w"] * (12 + 4),
    baselines=BASELINES)

SEPARABLE = Workload(
    sizes=SIZES, build=_build_separable, outputs=("gray", "rows", "out"), launch=_launch_separable,
    reference=_reference_separable, kernels=("blur.gray", "blur.row", "blur.col"),
    flops=lambda s: s["h"] * s["w"] * (5 + 2 * 2 * TAPS),
    # read RGB, write gray; read gray, write rows; read rows, write out
    bytes=lambda s: s["h"] * s["w"] * (12 + 4 + 4 + 4 + 4 + 4),
    baselines=BASELINES)

_IMAGE = {"H": 1368, "W": 2048}

SPECS = [
    KernelSpec(name="blur", fn=blur_fused_kernel,
               description="fused grayscale + 11x11 gaussian: 16x16 output tile, 121 taps, luma on the fly",
               args={"rgb_ptr": Tensor("fp32"), "w_ptr": Tensor("fp32"), "out_ptr": Tensor("fp32"), **_IMAGE,
                     "stride_c": 1368 * 2048, "stride_h": 2048},
               constexprs={"RADIUS": RADIUS},
               configs=(Config("default", {"TILE_H": 16, "TILE_W": 16}, num_warps=4, note="the talk's 16x16 tile"),
                        Config("t32x32", {"TILE_H": 32, "TILE_W": 32}, num_warps=4,
                               note="bigger tile: 4x the pixels per program for the same weight loads")),
               workload=FUSED),
    KernelSpec(name="blur.gray", fn=gray_kernel, description="separable path 1/3: RGB -> luma (BT.601)",
               args={"rgb_ptr": Tensor("fp32"), "gray_ptr": Tensor("fp32"), "n_pixels": 1368 * 2048,
                     "stride_c": 1368 * 2048},
               configs=(Config("default", {"BLOCK": 1024}, num_warps=4),
                        Config("b4096", {"BLOCK": 4096}, num_warps=8)),
               workload=SEPARABLE),
    KernelSpec(name="blur.row", fn=blur_row_kernel, description="separable path 2/3: 11 taps along x",
               args={"src_ptr": Tensor("fp32"), "w_ptr": Tensor("fp32"), "dst_ptr": Tensor("fp32"), **_IMAGE},
               constexprs={"RADIUS": RADIUS},
               configs=(Config("default", {"BLOCK_H": 8, "BLOCK_W": 128}, num_warps=4,
                               note="rows of 128 pixels: every tap a coalesced 512-byte run"),
                        Config("h4w256", {"BLOCK_H": 4, "BLOCK_W": 256}, num_warps=4)),
               workload=SEPARABLE),
    KernelSpec(name="blur.col", fn=blur_col_kernel, description="separable path 3/3: 11 taps along y",
               args={"src_ptr": Tensor("fp32"), "w_ptr": Tensor("fp32"), "dst_ptr": Tensor("fp32"), **_IMAGE},
               constexprs={"RADIUS": RADIUS},
               configs=(Config("default", {"BLOCK_H": 16, "BLOCK_W": 64}, num_warps=4,
                               note="16 rows per tile: each loaded row serves up to 11 outputs"),
                        Config("h32w64", {"BLOCK_H": 32, "BLOCK_W": 64}, num_warps=8)),
               workload=SEPARABLE),
]
