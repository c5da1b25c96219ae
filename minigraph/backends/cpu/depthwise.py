"""Compiled kernels for the depthwise 2D convolution trio (forward, data gradient, weights gradient).

They work on the canonical arrays of the NumPy backend's conv.py: data ``[N, C, H, W]``, weights
``[C, M, kH, kW]``, results and incoming gradients ``[N, C, M, OH, OW]`` (``o = c*M + m``); other
layouts are copied to these once per call. Each loop nest runs in parallel over (image, channel)
pairs, and every output element is summed by one iteration in a fixed order, so the result does
not depend on the thread count. The weights gradient sums each (image, channel) pair into a
partial of its own, then the partials over the images in order (again independent of the threads).
Rows of the output are the innermost loop: contiguous for stride 1, so LLVM vectorizes them.
"""
from __future__ import annotations

from typing import Callable, Optional

import numpy as np

from ...ops.geometry import ConvGeometry, geometry_of
from ..numpy.conv import compute_dtype, finish, result_view, source_view, to_data_layout, weights_view
from .jit import njit_inline, parallel_kernel, prange

FLOATS = (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64))


@njit_inline
def _span(out, size, stride, offset):  # pragma: no cover - compiled
    """Outputs ``[lo, hi)`` whose input index ``o*stride + offset`` lies in ``[0, size)``."""
    return max(0, -(offset // stride)), min(out, (size - 1 - offset) // stride + 1)


@parallel_kernel
def _forward(x, w, y, sh, sw, dh, dw, ph, pw):  # pragma: no cover - compiled
    nb, nc, h, wd = x.shape
    nm, kh, kw = w.shape[1], w.shape[2], w.shape[3]
    oh_, ow_ = y.shape[3], y.shape[4]
    for t in prange(nb * nc):
        n = t // nc
        c = t - n * nc
        xp = x[n, c]
        for m in range(nm):
            yp = y[n, c, m]
            yp[:] = 0
            for i in range(kh):
                offh = i * dh - ph
                lo_h, hi_h = _span(oh_, h, sh, offh)
                for j in range(kw):
                    offw = j * dw - pw
                    lo, hi = _span(ow_, wd, sw, offw)
                    wv = w[c, m, i, j]
                    for oh in range(lo_h, hi_h):
                        ys = yp[oh, lo:hi]  # slices: indices from 0, so no negative-index checks
                        xs = xp[oh * sh + offh, lo * sw + offw:]
                        if sw == 1:
                            for k in range(hi - lo):
                                ys[k] += xs[k] * wv
                        else:
                            for k in range(hi - lo):
                                ys[k] += xs[k * sw] * wv


@parallel_kernel
def _data_gradient(dy, w, dx, sh, sw, dh, dw, ph, pw):  # pragma: no cover - compiled
    nb, nc, h, wd = dx.shape
    nm, kh, kw = w.shape[1], w.shape[2], w.shape[3]
    oh_, ow_ = dy.shape[3], dy.shape[4]
    for t in prange(nb * nc):
        n = t // nc
        c = t - n * nc
        dxp = dx[n, c]
        dxp[:] = 0
        for m in range(nm):
            dyp = dy[n, c, m]
            for i in range(kh):
                offh = i * dh - ph
                lo_h, hi_h = _span(oh_, h, sh, offh)
                for j in range(kw):
                    offw = j * dw - pw
                    lo, hi = _span(ow_, wd, sw, offw)
                    wv = w[c, m, i, j]
                    for oh in range(lo_h, hi_h):
                        dys = dyp[oh, lo:hi]
                        dxs = dxp[oh * sh + offh, lo * sw + offw:]
                        if sw == 1:
                            for k in range(hi - lo):
                                dxs[k] += dys[k] * wv
                        else:
                            for k in range(hi - lo):
                                dxs[k * sw] += dys[k] * wv


@parallel_kernel
def _weights_partials(dy, x, part, sh, sw, dh, dw, ph, pw):  # pragma: no cover - compiled
    """``part[n, c, m, i, j]``: image n's share of dW[c, m, i, j], one (n, c) pair per iteration;
    each tap's products are summed per output column over the rows first (vectorized), then across."""
    nb, nc, h, wd = x.shape
    nm, kh, kw = part.shape[2], part.shape[3], part.shape[4]
    oh_, ow_ = dy.shape[3], dy.shape[4]
    scratch = np.empty((nb * nc, ow_), dy.dtype)  # a row per iteration (an np.empty inside prange is hoisted)
    for t in prange(nb * nc):
        n = t // nc
        c = t - n * nc
        xp = x[n, c]
        buf = scratch[t]
        for m in range(nm):
            dyp = dy[n, c, m]
            for i in range(kh):
                offh = i * dh - ph
                lo_h, hi_h = _span(oh_, h, sh, offh)
                for j in range(kw):
                    offw = j * dw - pw
                    lo, hi = _span(ow_, wd, sw, offw)
                    if hi <= lo or hi_h <= lo_h:
                        part[n, c, m, i, j] = 0
                        continue
                    buf[:] = 0
                    for oh in range(lo_h, hi_h):
                        dys = dyp[oh, lo:hi]
                        xs = xp[oh * sh + offh, lo * sw + offw:]
                        if sw == 1:
                            for k in range(hi - lo):
                                buf[k] += dys[k] * xs[k]
                        else:
                            for k in range(hi - lo):
                                buf[k] += dys[k] * xs[k * sw]
                    s = buf[0]
                    for k in range(1, hi - lo):
                        s += buf[k]
                    part[n, c, m, i, j] = s


@parallel_kernel
def _sum_images(part, out):  # pragma: no cover - compiled
    """``out[c, m, i, j] = sum over n of part[n, c, m, i, j]``, images in order."""
    nb, nc, nm, kh, kw = part.shape
    for c in prange(nc):
        for m in range(nm):
            for i in range(kh):
                for j in range(kw):
                    s = part[0, c, m, i, j]
                    for n in range(1, nb):
                        s += part[n, c, m, i, j]
                    out[c, m, i, j] = s


def _spatial(geo: ConvGeometry) -> tuple:
    (sh, sw), (dh, dw), (ph, pw) = geo.strides, geo.dilations, geo.padding_before
    return sh, sw, dh, dw, ph, pw


def _geometry(step) -> Optional[tuple]:
    """(geometry, result dtype, accumulation dtype), or None where the NumPy kernel stays (a dtype
    other than float16/32/64, or an empty tensor)."""
    out_dt = np.dtype(step.out_types[0].dtype.np_dtype)
    if out_dt not in FLOATS or any(np.dtype(t.dtype.np_dtype) != out_dt for t in step.in_types):
        return None
    geo = geometry_of(step)
    if len(geo.input_size) != 2 or min(geo.source_shape + geo.result_shape + (geo.batch,)) <= 0:
        return None
    return geo, out_dt, compute_dtype(out_dt)


def forward(step) -> Optional[Callable]:
    """``fn(x, w) -> y`` for a ``depthwise_convolution_2d`` step, or None (the NumPy kernel runs)."""
    got = _geometry(step)
    if got is None:
        return None
    geo, out_dt, cdt = got
    spatial = _spatial(geo)
    n, c, m = geo.batch, geo.in_channels, geo.channel_multiplier
    shape = (n, c, m) + geo.output_size

    def run(x, w):
        xc = np.ascontiguousarray(source_view(geo, x), dtype=cdt)
        wc = np.ascontiguousarray(weights_view(geo, w)[:, :, 0], dtype=cdt)
        y = np.empty(shape, cdt)
        _forward(xc, wc, y, *spatial)
        return finish(to_data_layout(geo, y.reshape((n, c * m) + geo.output_size)), out_dt)
    return run


def data_gradient(step) -> Optional[Callable]:
    """``fn(dy, w) -> dx`` for a ``depthwise_convolution_2d_data_gradient`` step, or None."""
    got = _geometry(step)
    if got is None:
        return None
    geo, out_dt, cdt = got
    spatial = _spatial(geo)
    shape = (geo.batch, geo.in_channels) + geo.input_size

    def run(dy, w):
        dyc = np.ascontiguousarray(result_view(geo, dy), dtype=cdt)
        wc = np.ascontiguousarray(weights_view(geo, w)[:, :, 0], dtype=cdt)
        dx = np.empty(shape, cdt)
        _data_gradient(dyc, wc, dx, *spatial)
        return finish(to_data_layout(geo, dx), out_dt)
    return run


def weights_gradient(step) -> Optional[Callable]:
    """``fn(dy, x) -> dW`` for a ``depthwise_convolution_2d_weights_gradient`` step, or None."""
    got = _geometry(step)
    if got is None:
        return None
    geo, out_dt, cdt = got
    spatial = _spatial(geo)
    c, m = geo.in_channels, geo.channel_multiplier
    parts = (geo.batch, c, m) + geo.kernel_size

    def run(dy, x):
        dyc = np.ascontiguousarray(result_view(geo, dy), dtype=cdt)
        xc = np.ascontiguousarray(source_view(geo, x), dtype=cdt)
        part = np.empty(parts, cdt)
        _weights_partials(dyc, xc, part, *spatial)
        dw = np.empty((c, m) + geo.kernel_size, cdt)
        _sum_images(part, dw)
        out = np.empty(geo.weights_shape, out_dt)
        weights_view(geo, out)[:, :, 0] = dw
        return out
    return run


KERNELS = {
    "depthwise_convolution_2d": forward,
    "depthwise_convolution_2d_data_gradient": data_gradient,
    "depthwise_convolution_2d_weights_gradient": weights_gradient,
}
