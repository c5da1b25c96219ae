"""NumPy kernels for the depthwise 3D convolution family.

Canonical form: the channel axis moved to position -4 and the batch axes flattened, so data is
``[B, C, D, H, W]`` and weights ``[C, M, kD, kH, kW]`` (the C*M weight channels split as
``o = c*M + m``). The loop runs over the kernel taps only.
"""
from __future__ import annotations

import itertools
from math import prod

import numpy as np

from ...ops.depthwise3d import geometry_3d, split_axes
from .conv import compute_dtype, crop_trailing, finish, pad_trailing, padded_extent, tap
from .registry import numpy_kernel


class _Geo3:
    """Sizes and padding of one compiled step, in canonical order."""

    def __init__(self, desc, x_shape, w_shape):
        cdi = desc.channel_dimension_index
        self.cdi = cdi
        rank = len(x_shape)
        ca, sp = split_axes(rank, cdi)
        wa, wsp = split_axes(4, cdi)
        self.lead = tuple(x_shape[: rank - 4])
        self.b = prod(self.lead)
        self.c, self.cw = x_shape[ca], w_shape[wa]
        self.m = self.cw // self.c
        self.size = [x_shape[a] for a in sp]
        self.kernel = [w_shape[a] for a in wsp]
        geo = geometry_3d(desc, self.size, self.kernel)
        self.before = tuple(pb for pb, _, _ in geo)
        self.out = [o for _, _, o in geo]
        self.p = prod(self.out)
        self.ext = tuple(padded_extent(n, pb, pa, o, s, k, d) for n, (pb, pa, o), s, k, d in
                         zip(self.size, geo, desc.strides, self.kernel, desc.dilation_rates))
        self.strides, self.dil = desc.strides, desc.dilation_rates

    def canon(self, x, channels):
        x = np.moveaxis(x, self.cdi, -4)
        return x.reshape((self.b, channels) + x.shape[-3:])

    def uncanon(self, y):
        y = y.reshape(self.lead + y.shape[1:])
        return np.moveaxis(y, -4, self.cdi)

    def canon_w(self, w, dtype):
        return np.moveaxis(w, 4 + self.cdi, 0).astype(dtype).reshape((self.c, self.m) + tuple(self.kernel))

    def uncanon_w(self, w):
        return np.moveaxis(w.reshape((self.cw,) + tuple(self.kernel)), 0, 4 + self.cdi)

    def taps(self):
        for t in itertools.product(*(range(k) for k in self.kernel)):
            yield t, (slice(None), slice(None)) + tuple(
                tap(i * d, o, s) for i, d, o, s in zip(t, self.dil, self.out, self.strides))


@numpy_kernel("depthwise_convolution_3d")
def _dw3d(step):
    geo = _Geo3(step.attrs["descriptor"], step.in_types[0].shape, step.in_types[1].shape)
    out_dt = step.out_types[0].dtype.np_dtype
    acc = compute_dtype(out_dt)
    b, c, m, p = geo.b, geo.c, geo.m, geo.p

    def run(x, w):
        xp = pad_trailing(geo.canon(x, c), geo.before, geo.ext, 0, acc)
        wc = geo.canon_w(w, acc)
        y = np.zeros((b, c, m, p), acc)
        for t, idx in geo.taps():
            y += xp[idx].reshape(b, c, 1, p) * wc[(slice(None), slice(None)) + t][None, :, :, None]
        return finish(geo.uncanon(y.reshape((b, c * m) + tuple(geo.out))), out_dt)
    return run


@numpy_kernel("depthwise_convolution_3d_data_gradient")
def _dw3d_data_grad(step):
    geo = _Geo3(step.attrs["descriptor"], step.out_types[0].shape, step.in_types[1].shape)
    out_dt = step.out_types[0].dtype.np_dtype
    acc = compute_dtype(out_dt)
    b, c, m, p = geo.b, geo.c, geo.m, geo.p

    def run(dy, w):
        dyc = geo.canon(dy, c * m).astype(acc).reshape(b, c, m, p)
        wc = geo.canon_w(w, acc)
        dxp = np.zeros((b, c) + geo.ext, acc)
        for t, idx in geo.taps():
            wt = wc[(slice(None), slice(None)) + t]
            part = dyc[:, :, 0] * wt[None, :, 0, None] if m == 1 else (dyc * wt[None, :, :, None]).sum(axis=2)
            dxp[idx] += part.reshape((b, c) + tuple(geo.out))
        return finish(geo.uncanon(crop_trailing(dxp, geo.before, tuple(geo.size))), out_dt)
    return run


@numpy_kernel("depthwise_convolution_3d_weights_gradient")
def _dw3d_weights_grad(step):
    geo = _Geo3(step.attrs["descriptor"], step.in_types[1].shape, step.out_types[0].shape)
    out_dt = step.out_types[0].dtype.np_dtype
    acc = compute_dtype(out_dt)
    b, c, m, p = geo.b, geo.c, geo.m, geo.p

    def run(dy, x):
        # [C, M, B*P] @ [C, B*P, 1]: per channel, the multiplier filters against every position
        dyt = geo.canon(dy, c * m).astype(acc).reshape(b, c, m, p).transpose(1, 2, 0, 3).reshape(c, m, b * p)
        xp = pad_trailing(geo.canon(x, c), geo.before, geo.ext, 0, acc)
        dw = np.empty((c, m) + tuple(geo.kernel), acc)
        for t, idx in geo.taps():
            cols = xp[idx].reshape(b, c, p).transpose(1, 0, 2).reshape(c, b * p, 1)
            dw[(slice(None), slice(None)) + t] = np.matmul(dyt, cols)[:, :, 0]
        return finish(geo.uncanon_w(dw), out_dt)
    return run
