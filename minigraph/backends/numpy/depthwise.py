"""NumPy kernels for the depthwise 2D convolution family (spec §4.1).

Every array is handled through the canonical views of conv.py, with ``groups = C``: data as
``[N, C, H, W]``, weights as ``[C, M, 1, kH, kW]`` (used as ``[C, M, kH, kW]``), dy and y as
``[N, C, M, OH, OW]`` (``o = c*M + m``). Results are allocated in the op's own layout and
written through such a view, so NCHW/NHWC × OIHW/HWIO cost no copies. The loop runs over the
kH*kW taps only; for each tap the factory has already worked out which output rows/columns read
inside the source (so padding is never materialised and taps that fall wholly into padding are
skipped). These loops are exact for any input; the fast algorithms of ``depthwise_fast`` take
over on the shapes they suit and hand back to them when a result is not finite.
"""
from __future__ import annotations

import functools
from math import prod

import numpy as np

from ...ops.geometry import ConvGeometry
from .conv import compute_dtype, finish, result_view, setup, source_view, to_data_layout, weights_view
from .depthwise_fast import DataGradientPlan, ForwardPlan, WeightsGradientPlan, choose_algorithm
from .depthwise_fast.workers import MAX_TASKS
from .registry import numpy_kernel
from .threads import parallel, split


def _inside(out: int, size: int, stride: int, dilation: int, before: int, k: int):
    """For tap ``k``: output slice ``[lo, hi)`` whose input index ``o*stride + k*dilation - before``
    lies in ``[0, size)``, and the matching strided input slice; None if no output reads inside."""
    offset = k * dilation - before
    lo = max(0, -(offset // stride))  # ceil(-offset / stride): first o with o*stride + offset >= 0
    hi = min(out, (size - 1 - offset) // stride + 1)  # one past the last o reading inside
    if hi <= lo:
        return None
    start = lo * stride + offset
    return slice(lo, hi), slice(start, start + (hi - lo - 1) * stride + 1, stride)


def _work_per_image(geo: ConvGeometry) -> int:
    return geo.in_channels * geo.channel_multiplier * prod(geo.output_size) * prod(geo.kernel_size)


@functools.lru_cache(maxsize=256)
def taps_inside(geo: ConvGeometry) -> tuple:
    """[(i, j, out_rows, out_cols, in_rows, in_cols)] for every tap that reads inside the source
    (made once per geometry)."""
    rows, cols = ([_inside(geo.output_size[a], geo.input_size[a], geo.strides[a], geo.dilations[a],
                           geo.padding_before[a], k) for k in range(geo.kernel_size[a])] for a in (0, 1))
    return tuple((i, j, r[0], c[0], r[1], c[1]) for i, r in enumerate(rows) if r is not None
                 for j, c in enumerate(cols) if c is not None)


def exact_weights_gradient(geo: ConvGeometry, dy: np.ndarray, x: np.ndarray, dtype) -> np.ndarray:
    """``dW`` as ``[C, M, kH, kW]`` of ``dtype`` from ``dy [N, C, M, OH, OW]`` and ``x [N, C, H, W]``:
    one einsum per tap over the window it reads, accumulated in float32 for float16."""
    cdt = compute_dtype(np.dtype(dtype))
    dy, x = dy.astype(cdt, copy=False), x.astype(cdt, copy=False)
    out = np.zeros((geo.in_channels, geo.channel_multiplier) + geo.kernel_size, cdt)
    taps = taps_inside(geo)

    c = geo.in_channels
    grain = max(1, -(-c // MAX_TASKS))  # channels per einsum: the same at every thread count
    chunks = -(-c // grain)

    def block(k0, k1):  # chunks of channels: each sum over the images stays whole
        for k in range(k0, k1):
            c0, c1 = k * grain, min(c, (k + 1) * grain)
            for i, j, oh, ow, ih, iw in taps:
                out[c0:c1, :, i, j] = np.einsum("ncmhw,nchw->cm", dy[:, c0:c1, :, oh, ow], x[:, c0:c1, ih, iw])

    parallel(block, split(chunks, grain * geo.batch * geo.channel_multiplier * prod(geo.output_size) * len(taps)))
    return out.astype(dtype, copy=False)


@numpy_kernel("depthwise_convolution_2d", fresh=True)
def _forward(step):
    geo, out_dt, cdt = setup(step)
    taps = taps_inside(geo)
    work = _work_per_image(geo)

    def run(x, w):
        xv = source_view(geo, x)
        wv = weights_view(geo, w.astype(cdt, copy=False))[:, :, 0]  # [C, M, kH, kW]
        y = np.zeros(geo.result_shape, cdt)
        yv = result_view(geo, y)  # [N, C, M, OH, OW]

        def block(n0, n1):
            for i, j, oh, ow, ih, iw in taps:
                xs = xv[n0:n1, :, None, ih, iw]  # [nb, C, 1, h, w]
                yv[n0:n1, :, :, oh, ow] += xs * wv[None, :, :, i, j, None, None]

        parallel(block, split(geo.batch, work))
        return y.astype(out_dt, copy=False)

    # Fast path (depthwise_fast): "same"-like layers as flat einsums over long vectors; other
    # geometries, and non-finite results, use `run` above.
    try:
        plan = ForwardPlan(geo, out_dt)
    except ValueError:
        return run

    def fast(x, w):
        y = plan(source_view(geo, x), weights_view(geo, w)[:, :, 0])  # [N, C, M, OH, OW] or None
        if y is None:
            return run(x, w)
        return finish(to_data_layout(geo, y.reshape((geo.batch, geo.out_channels) + geo.output_size)), out_dt)
    return fast


@numpy_kernel("depthwise_convolution_2d_data_gradient", fresh=True)
def _data_gradient(step):
    geo, out_dt, cdt = setup(step)
    taps = taps_inside(geo)
    m = geo.channel_multiplier
    work = _work_per_image(geo)

    def run(dy, w):
        dyv = result_view(geo, dy)  # [N, C, M, OH, OW]
        wv = weights_view(geo, w.astype(cdt, copy=False))[:, :, 0]
        dx = np.zeros(geo.source_shape, cdt)
        dxv = source_view(geo, dx)

        def block(n0, n1):
            for i, j, oh, ow, ih, iw in taps:
                ds = dyv[n0:n1, :, :, oh, ow]
                if m == 1:
                    dxv[n0:n1, :, ih, iw] += ds[:, :, 0] * wv[None, :, 0, i, j, None, None]
                else:
                    dxv[n0:n1, :, ih, iw] += np.einsum("ncmhw,cm->nchw", ds, wv[:, :, i, j], dtype=cdt)

        parallel(block, split(geo.batch, work))
        return dx.astype(out_dt, copy=False)

    # Fast path (depthwise_fast), as for the forward op.
    try:
        plan = DataGradientPlan(geo, out_dt)
    except ValueError:
        return run

    def fast(dy, w):
        dx = plan(result_view(geo, dy), weights_view(geo, w)[:, :, 0])  # [N, C, H, W] or None
        if dx is None:
            return run(dy, w)
        return finish(to_data_layout(geo, dx), out_dt)
    return fast


@numpy_kernel("depthwise_convolution_2d_weights_gradient", fresh=True)
def _weights_gradient(step):
    geo, out_dt, _ = setup(step)

    def run(dy, x):
        dw = np.empty(geo.weights_shape, out_dt)
        weights_view(geo, dw)[:, :, 0] = exact_weights_gradient(geo, result_view(geo, dy), source_view(geo, x),
                                                                 out_dt)
        return dw

    # Fast path (depthwise_fast, see docs/performance.md): the same sums through polyphase frames
    # and BLAS dot products; `run` above for tiny or empty problems and non-finite results.
    algorithm = choose_algorithm(geo)
    if algorithm == "direct":
        return run
    try:
        plan = WeightsGradientPlan(geo, out_dt, algorithm)
    except ValueError:
        return run

    def fast(dy, x):
        dw = plan(result_view(geo, dy), source_view(geo, x))  # [C, M, kH, kW] or None
        if dw is None:
            return run(dy, x)
        out = np.empty(geo.weights_shape, out_dt)
        weights_view(geo, out)[:, :, 0] = dw
        return out
    return fast
