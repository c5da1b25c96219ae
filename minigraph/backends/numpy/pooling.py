"""NumPy kernels for 2D max and average pooling and their gradients (semantics: ops/pooling.py).

Pooling is a depthwise ``ConvGeometry`` without weights, so the kernels work on the canonical
``[N, C, H, W]`` views of conv.py. The loop runs over the window taps only; per axis,
``inside[i, o]`` says whether tap ``i`` of window ``o`` lands inside the input, so padding never
takes part in a maximum, and average divisors are outer products of per-axis counts. Every
kernel splits its work over the thread pool by blocks of images (bit-identical for any count).
"""
from __future__ import annotations

import numpy as np

from ...ops.geometry import ConvGeometry
from .conv import crop_trailing, finish, has_padding, pad_trailing, padded_source, setup, source_view, to_data_layout, window_taps
from .registry import numpy_kernel
from .threads import parallel, split


def _inside(geo: ConvGeometry, axis: int, with_padding: bool = False) -> np.ndarray:
    """``[kernel, out]``: whether tap ``i`` of window ``o`` lands inside the input (or, with
    ``with_padding``, inside the input and its padding) along one spatial axis."""
    size, before, after = geo.input_size[axis], geo.padding_before[axis], geo.padding_after[axis]
    pos = (np.arange(geo.output_size[axis])[None, :] * geo.strides[axis]
           + np.arange(geo.kernel_size[axis])[:, None] * geo.dilations[axis] - before)
    low, high = (-before, size + after) if with_padding else (0, size)
    return (pos >= low) & (pos < high)


def _divisor(geo: ConvGeometry, include_pad: bool, dtype) -> np.ndarray:
    """``[OH, OW]``: how many taps of each window an average divides by."""
    rows, cols = (_inside(geo, axis, include_pad).sum(axis=0) for axis in (0, 1))
    return np.outer(rows, cols).astype(dtype)


def _images(geo: ConvGeometry, run) -> None:
    """``run(n0, n1)`` over blocks of images on the thread pool."""
    parallel(run, split(geo.batch, geo.in_channels * max(1, np.prod(geo.output_size)) * max(1, len(window_taps(geo)))))


def _max_forward(geo: ConvGeometry, xc):
    """(result, padded source) in NCHW; padding is -inf and never wins against an input element."""
    xp = pad_trailing(xc, geo.padding_before, geo.padded_size, -np.inf, xc.dtype) if has_padding(geo) else xc
    y = None
    for _, idx in window_taps(geo):
        y = xp[idx].copy() if y is None else np.maximum(y, xp[idx])  # np.maximum propagates NaN
    return y, xp


@numpy_kernel("max_pooling_2d", fresh=True)
def _max_pool(step):
    geo, out_dt, _ = setup(step)

    def run(x):
        xc = source_view(geo, x)
        y = np.empty((geo.batch, geo.in_channels) + geo.output_size, xc.dtype)

        def block(n0, n1):
            y[n0:n1] = _max_forward(geo, xc[n0:n1])[0]

        _images(geo, block)
        return finish(to_data_layout(geo, y), out_dt)
    return run


@numpy_kernel("max_pooling_2d_gradient", fresh=True)
def _max_pool_grad(step):
    geo, out_dt, acc = setup(step)
    inside = (_inside(geo, 0), _inside(geo, 1))
    no_padding_taps = inside[0].all() and inside[1].all()

    def run(dy, x):
        xc, dyv = source_view(geo, x), source_view(geo, dy)
        dx = np.empty((geo.batch, geo.in_channels) + geo.input_size, acc)

        def block(n0, n1):
            y, xp = _max_forward(geo, xc[n0:n1])
            dyc = dyv[n0:n1].astype(acc, copy=False)
            dxp = np.zeros((n1 - n0, geo.in_channels) + geo.padded_size, acc)
            y_nan = np.isnan(y)
            if y_nan.any() or (not no_padding_taps and np.isneginf(y).any()):
                _scatter_careful(geo, inside, xp, y, y_nan, dyc, dxp)
            else:
                # fast path: the maximum is a number and padding cannot equal it. ``open_`` holds each
                # window's maximum until its first occurrence is found, then NaN (equal to nothing).
                open_ = y.copy()
                nan = open_.dtype.type(np.nan)
                for _, idx in window_taps(geo):
                    hit = xp[idx] == open_
                    view = dxp[idx]
                    view += dyc * hit  # branch-free: masked ufuncs are slower on mixed masks
                    open_ = np.where(hit, nan, open_)
            dx[n0:n1] = crop_trailing(dxp, geo.padding_before, geo.input_size)

        _images(geo, block)
        return finish(to_data_layout(geo, dx), out_dt)
    return run


def _scatter_careful(geo, inside, xp, y, y_nan, dyc, dxp):
    """The general tie rule: NaN counts as maximal, and padding taps never match (they matter
    when a window's maximum is -inf)."""
    taken = np.zeros(y.shape, bool)  # windows whose first maximal element has been found
    for (i, j), idx in window_taps(geo):
        xs = xp[idx]
        hit = ((xs == y) | (np.isnan(xs) & y_nan)) & ~taken
        hit &= np.outer(inside[0][i], inside[1][j])
        taken |= hit
        np.add(dxp[idx], dyc, out=dxp[idx], where=hit)


@numpy_kernel("avg_pooling_2d", fresh=True)
def _avg_pool(step):
    geo, out_dt, acc = setup(step)
    div = _divisor(geo, step.attrs["descriptor"].include_zero_pad_to_average, acc)

    def run(x):
        s = np.empty((geo.batch, geo.in_channels) + geo.output_size, acc)

        def block(n0, n1):
            xp = padded_source(geo, x, acc, n0, n1)
            sb = s[n0:n1]
            sb[...] = 0
            for _, idx in window_taps(geo):
                sb += xp[idx]
            sb /= div

        _images(geo, block)
        return finish(to_data_layout(geo, s), out_dt)
    return run


@numpy_kernel("avg_pooling_2d_gradient", fresh=True)
def _avg_pool_grad(step):
    geo, out_dt, acc = setup(step)
    div = _divisor(geo, step.attrs["descriptor"].include_zero_pad_to_average, acc)

    def run(dy, x):
        dyv = source_view(geo, dy)
        dx = np.empty((geo.batch, geo.in_channels) + geo.input_size, acc)

        def block(n0, n1):
            share = dyv[n0:n1].astype(acc, copy=False) / div
            dxp = np.zeros((n1 - n0, geo.in_channels) + geo.padded_size, acc)
            for _, idx in window_taps(geo):
                dxp[idx] += share
            dx[n0:n1] = crop_trailing(dxp, geo.padding_before, geo.input_size)

        _images(geo, block)
        return finish(to_data_layout(geo, dx), out_dt)
    return run
