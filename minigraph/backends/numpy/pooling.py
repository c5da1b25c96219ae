"""NumPy kernels for 2D max and average pooling and their gradients (semantics: ops/pooling.py).

NCHW is the canonical layout. The loop runs over the window taps only; per axis, ``valid[i, o]``
says whether tap ``i`` of window ``o`` lands inside the input, so padding never takes part in
a maximum, and average divisors are outer products of per-axis counts.
"""
from __future__ import annotations

import numpy as np

from ...ops.convolution import data_dims
from ...ops.pooling import pool_geometry
from .conv import compute_dtype, crop_trailing, finish, from_nchw, pad_trailing, padded_extent, tap, to_nchw
from .registry import numpy_kernel


class _PoolGeo:
    def __init__(self, desc, x_shape):
        self.n, self.c, self.h, self.w = data_dims(x_shape, desc.data_layout)
        (self.pt, self.pb, self.oh), (self.pl, self.pr, self.ow) = pool_geometry(desc, self.h, self.w)
        self.kh, self.kw = desc.kernel_height, desc.kernel_width
        self.sy, self.sx = desc.stride_in_y, desc.stride_in_x
        self.dy, self.dx = desc.dilation_rate_in_y, desc.dilation_rate_in_x
        self.hp = padded_extent(self.h, self.pt, self.pb, self.oh, self.sy, self.kh, self.dy)
        self.wp = padded_extent(self.w, self.pl, self.pr, self.ow, self.sx, self.kw, self.dx)
        # [k, out] positions of each tap, relative to the input's first element
        pos_y = np.arange(self.oh)[None, :] * self.sy + np.arange(self.kh)[:, None] * self.dy - self.pt
        pos_x = np.arange(self.ow)[None, :] * self.sx + np.arange(self.kw)[:, None] * self.dx - self.pl
        self.valid_y = (pos_y >= 0) & (pos_y < self.h)
        self.valid_x = (pos_x >= 0) & (pos_x < self.w)
        self.padded_y = (pos_y >= -self.pt) & (pos_y < self.h + self.pb)
        self.padded_x = (pos_x >= -self.pl) & (pos_x < self.w + self.pr)

    def taps(self):
        for i in range(self.kh):
            for j in range(self.kw):
                yield i, j, (slice(None), slice(None), tap(i * self.dy, self.oh, self.sy),
                             tap(j * self.dx, self.ow, self.sx))

    def divisor(self, include_pad: bool, dtype) -> np.ndarray:
        vy, vx = (self.padded_y, self.padded_x) if include_pad else (self.valid_y, self.valid_x)
        return np.outer(vy.sum(axis=0), vx.sum(axis=0)).astype(dtype)  # [OH, OW]


def _max_forward(geo, xc):
    """(result, padded source) in NCHW; padding is -inf and never wins against an input element."""
    xp = pad_trailing(xc, (geo.pt, geo.pl), (geo.hp, geo.wp), -np.inf, xc.dtype)
    y = None
    for i, j, idx in geo.taps():
        y = xp[idx].copy() if y is None else np.maximum(y, xp[idx])  # np.maximum propagates NaN
    return y, xp


@numpy_kernel("max_pooling_2d")
def _max_pool(step):
    d = step.attrs["descriptor"]
    geo = _PoolGeo(d, step.in_types[0].shape)
    out_dt = step.out_types[0].dtype.np_dtype

    def run(x):
        y, _ = _max_forward(geo, to_nchw(x, d.data_layout))
        return finish(from_nchw(y, d.data_layout), out_dt)
    return run


@numpy_kernel("max_pooling_2d_gradient")
def _max_pool_grad(step):
    d = step.attrs["descriptor"]
    geo = _PoolGeo(d, step.in_types[1].shape)
    out_dt = step.out_types[0].dtype.np_dtype
    acc = compute_dtype(out_dt)

    no_padding_taps = geo.valid_y.all() and geo.valid_x.all()

    def run(dy, x):
        y, xp = _max_forward(geo, to_nchw(x, d.data_layout))
        dyc = to_nchw(dy, d.data_layout).astype(acc)
        dxp = np.zeros((geo.n, geo.c, geo.hp, geo.wp), acc)
        y_nan = np.isnan(y)
        if y_nan.any() or (not no_padding_taps and np.isneginf(y).any()):
            _scatter_careful(geo, xp, y, y_nan, dyc, dxp)
        else:
            # fast path: the maximum is a number and padding cannot equal it. ``open_`` holds each
            # window's maximum until its first occurrence is found, then NaN (equal to nothing).
            open_ = y.copy()
            nan = open_.dtype.type(np.nan)
            for i, j, idx in geo.taps():
                hit = xp[idx] == open_
                view = dxp[idx]
                view += dyc * hit  # branch-free: masked ufuncs are slower on mixed masks
                open_ = np.where(hit, nan, open_)
        return finish(from_nchw(crop_trailing(dxp, (geo.pt, geo.pl), (geo.h, geo.w)), d.data_layout), out_dt)
    return run


def _scatter_careful(geo, xp, y, y_nan, dyc, dxp):
    """The general tie rule: NaN counts as maximal, and padding taps never match (they matter
    when a window's maximum is -inf)."""
    taken = np.zeros(y.shape, bool)  # windows whose first maximal element has been found
    for i, j, idx in geo.taps():
        xs = xp[idx]
        hit = ((xs == y) | (np.isnan(xs) & y_nan)) & ~taken
        hit &= np.outer(geo.valid_y[i], geo.valid_x[j])
        taken |= hit
        np.add(dxp[idx], dyc, out=dxp[idx], where=hit)


@numpy_kernel("avg_pooling_2d")
def _avg_pool(step):
    d = step.attrs["descriptor"]
    geo = _PoolGeo(d, step.in_types[0].shape)
    out_dt = step.out_types[0].dtype.np_dtype
    acc = compute_dtype(out_dt)
    div = geo.divisor(d.include_zero_pad_to_average, acc)

    def run(x):
        xp = pad_trailing(to_nchw(x, d.data_layout), (geo.pt, geo.pl), (geo.hp, geo.wp), 0, acc)
        s = np.zeros((geo.n, geo.c, geo.oh, geo.ow), acc)
        for i, j, idx in geo.taps():
            s += xp[idx]
        return finish(from_nchw(s / div, d.data_layout), out_dt)
    return run


@numpy_kernel("avg_pooling_2d_gradient")
def _avg_pool_grad(step):
    d = step.attrs["descriptor"]
    geo = _PoolGeo(d, step.in_types[1].shape)
    out_dt = step.out_types[0].dtype.np_dtype
    acc = compute_dtype(out_dt)
    div = geo.divisor(d.include_zero_pad_to_average, acc)

    def run(dy, x):
        share = to_nchw(dy, d.data_layout).astype(acc) / div
        dxp = np.zeros((geo.n, geo.c, geo.hp, geo.wp), acc)
        for i, j, idx in geo.taps():
            dxp[idx] += share
        return finish(from_nchw(crop_trailing(dxp, (geo.pt, geo.pl), (geo.h, geo.w)), d.data_layout), out_dt)
    return run
