"""Pointwise (1x1, stride 1, no padding) convolutions as the tiled GEMM of ``gemm.py``.

With a 1x1 kernel, stride 1 and no padding, a convolution is a product per image and group:
``y[n, g, og, p] = sum_ci w[g, og, ci] * x[n, g, ci, p]`` over the pixels p. The forward, data
and weights gradients are GEMMs over the geometry's strides, so every data layout (NCHW, NHWC)
and weights layout (OIHW, HWIO), and any group count, read in place:

- forward: rows = output channels and columns = pixels when the result's pixels are contiguous
  (NCHW: W[Cout, Cin] x X[n][Cin, H*W]), else rows = pixels of every image (NHWC: X[N*H*W, Cin]
  x W^T); data gradient likewise with the weights transposed;
- weights gradient: ``dW[g][og, ci] = sum_{n, p} dy[n, g, og, p] * x[n, g, ci, p]``, K = N*H*W
  walked as one axis (two strides when images are not adjacent, NCHW).

Each recorder returns False when the geometry is not pointwise (or the product is too small
for the tiled kernel, ``gemm.use_tiled``): the caller then records its general kernel. A
``fused_epilogue`` step of a pointwise convolution applies its tail where the GEMM stores
(epilogue.py), and so does the tiled kernel of another geometry (``tiled_conv.py``) where it
takes it; else the convolution's own kernel runs and the tail after it.
"""
from __future__ import annotations

from math import prod
from typing import Optional

from ...ops.geometry import ConvGeometry, geometry_of
from .conv_constants import constants, reach
from .epilogue import epilogue_kernel
from . import tiled_conv
from .gemm import TILING, Gemm, fits, record_gemm, use_tiled
from .loops import LOOP_MAX, nested_iterations


class _Layout:
    """Strides of one data tensor: image n, channel c, pixel p (H and W walked as one axis)."""

    def __init__(self, geo: ConvGeometry, shape, channels: int):
        n, c, *spatial = geo.data_strides(shape)
        self.n, self.c, self.p = n, c, spatial[-1]
        sizes = tuple(geo.input_size)
        # the pixel axes must step as one: each axis' stride is the next one's times its size
        self.flat = all(spatial[i] == spatial[i + 1] * sizes[i + 1] for i in range(len(spatial) - 1))
        self.pixels = prod(sizes)
        self.channels = channels
        self.images_adjacent = n == self.pixels * self.p  # images follow each other along the pixel axis


def is_pointwise(geo: ConvGeometry) -> bool:
    """A 1x1 kernel, stride 1, no padding (so output pixels are input pixels)."""
    return (all(k == 1 for k in geo.kernel_size) and all(s == 1 for s in geo.strides)
            and not any(geo.padding_before) and not any(geo.padding_after)
            and tuple(geo.output_size) == tuple(geo.input_size) and len(geo.batch_shape) == 1)


def _layouts(geo: ConvGeometry) -> Optional[tuple]:
    if not geo.weights_axes or not is_pointwise(geo):
        return None
    src = _Layout(geo, geo.source_shape, geo.in_channels)
    res = _Layout(geo, geo.result_shape, geo.out_channels)
    if not (src.flat and res.flat):
        return None
    return src, res


def _product(geo: ConvGeometry, data: _Layout, out: _Layout, w_rows: int, w_cols: int, rows: int, K: int,
             w_stride_g: int) -> tuple:
    """``out[n, g, r, p] = sum_k Wt[g][r, k] * data[n, g, k, p]`` with Wt's strides (w_rows, w_cols):
    (the GEMM, whether its A operand is the weights)."""
    G, batch, P = geo.groups, geo.batch, data.pixels
    if out.p == 1 or not (data.images_adjacent and out.images_adjacent):
        # rows: channels, columns: pixels; batch over images and groups
        return Gemm(rows, P, K, (w_rows, w_cols, 0), (data.c, 0, data.p), (out.c, out.p),
                    ((batch, 0, data.n, out.n), (G, w_stride_g, K * data.c, rows * out.c)),
                    c_total=batch * G * rows * P), True
    # rows: pixels of every image (images adjacent), columns: channels; batch over groups
    return Gemm(batch * P, rows, K, (data.p, data.c, 0), (w_cols, 0, w_rows), (out.p, out.c),
                ((G, K * data.c, w_stride_g, rows * out.c),), c_total=batch * G * rows * P), False


@epilogue_kernel("convolution_2d", "convolution_2d_data_gradient", "convolution_2d_weights_gradient")
def _epilogue(step, kb, epi) -> bool:
    """A pointwise convolution with the step's tail applied where the GEMM stores (False for
    another geometry: the caller runs the convolution's own kernel, then the tail)."""
    geo = geometry_of(epi.anchor_step)
    record = {"forward": record_forward, "data_gradient": record_data_gradient,
              "weights_gradient": record_weights_gradient}[epi.anchor.opdef.role]
    role = epi.anchor.opdef.role
    x, w, dt = epi.input(0), epi.input(1), epi.anchor_type.dtype.name
    if record(kb, geo, x, w, kb.output(), dt, epi):
        return True
    if role != "weights_gradient" and geo.weights_axes and not _long_loops(geo, role):
        return tiled_conv.record(kb, geo, role, x, w, kb.output(), dt, epi)
    return False


def _long_loops(geo: ConvGeometry, role: str) -> bool:
    """Whether the convolution's own kernels would cut the reduction into parts (then they run)."""
    c = constants(geo) if role == "forward" else dict(constants(geo), **reach(geo))
    if role == "forward":
        return nested_iterations(c["CI"], c["KD"], c["KH"], c["KW"]) > LOOP_MAX
    return nested_iterations(c["OG"], c["NKD"], c["NKH"], c["NKW"]) > LOOP_MAX


def record_forward(kb, geo: ConvGeometry, x, w, y, dtype: str, epi=None) -> bool:
    """``y = F(x, w)`` as a GEMM, if the geometry is pointwise and large enough."""
    got = _layouts(geo)
    if got is None:
        return False
    src, res = got
    sg, sog, sci = geo.weights_strides()[:3]
    g, weights_first = _product(geo, src, res, sog, sci, geo.out_per_group, geo.in_per_group, sg)
    return _record(kb, g, w, x, y, dtype, weights_first, epi)


def record_data_gradient(kb, geo: ConvGeometry, dy, w, dx, dtype: str, epi=None) -> bool:
    """``dx = D(dy, w)`` (the weights transposed) as a GEMM, if the geometry is pointwise."""
    got = _layouts(geo)
    if got is None:
        return False
    src, res = got
    sg, sog, sci = geo.weights_strides()[:3]
    g, weights_first = _product(geo, res, src, sci, sog, geo.in_per_group, geo.out_per_group, sg)
    return _record(kb, g, w, dy, dx, dtype, weights_first, epi)


def _worth_it(g: Gemm, epi) -> bool:
    """Whether to take the tiled GEMM: ``use_tiled``, or any size with an epilogue (the other
    path is two dispatches and a pass over the result) unless the GEMM path is switched off."""
    if epi is not None and TILING["mode"] != "never":
        return True
    return use_tiled(g.M, g.N, prod(size for size, *_ in g.batch))


def _record(kb, g: Gemm, w, data, out, dtype: str, weights_first: bool, epi=None) -> bool:
    if not _worth_it(g, epi) or not fits(kb, g):
        return False
    a, b = (w, data) if weights_first else (data, w)
    record_gemm(kb, g, a, b, out, dtype, epi)
    return True


def record_weights_gradient(kb, geo: ConvGeometry, dy, x, dw, dtype: str, epi=None) -> bool:
    """``dw = G(dy, x)``: per group, dy[og, (n, p)] x x[(n, p), ci], if the geometry is pointwise."""
    got = _layouts(geo)
    if got is None:
        return False
    src, res = got
    sg, sog, sci = geo.weights_strides()[:3]
    OG, CI, G, P = geo.out_per_group, geo.in_per_group, geo.groups, src.pixels
    adjacent = src.images_adjacent and res.images_adjacent
    g = Gemm(OG, CI, geo.batch * P, (res.c, res.p, res.n), (src.p, src.n, src.c), (sog, sci),
             ((G, OG * res.c, CI * src.c, sg),), k_inner=0 if adjacent else P, c_total=G * OG * CI)
    if not _worth_it(g, epi) or not fits(kb, g):
        return False
    record_gemm(kb, g, dy, x, dw, dtype, epi)
    return True
