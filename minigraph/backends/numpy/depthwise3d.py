"""NumPy kernels for the depthwise 3D convolution family.

Depthwise 3D is a grouped ``ConvGeometry`` with ``groups = C``: data is viewed as
``[B, C, D, H, W]`` (the batch axes flattened), weights as ``[C, M, kD, kH, kW]`` (the C*M weight
channels split as ``o = c*M + m``). The loop runs over the kernel taps only. The forward op and
the data gradient split their work over the thread pool by blocks of images, the weights
gradient by blocks of channels (each channel's sum over the images stays whole).
"""
from __future__ import annotations

from math import prod

import numpy as np

from .conv import (crop_trailing, finish, has_padding, padded_source, result_view, setup, to_data_layout,
                   to_weights_layout, weights_view, window_taps)
from .registry import numpy_kernel
from .threads import parallel, split


@numpy_kernel("depthwise_convolution_3d", fresh=True)
def _dw3d(step):
    geo, out_dt, acc = setup(step)
    b, c, m, p = geo.batch, geo.in_channels, geo.channel_multiplier, prod(geo.output_size)
    taps = window_taps(geo)

    def run(x, w):
        wc = weights_view(geo, w).astype(acc, copy=False)[:, :, 0]  # [C, M, kD, kH, kW]
        y = np.empty((b, c, m, p), acc)

        def block(n0, n1):
            xp = padded_source(geo, x, acc, n0, n1)
            yb = y[n0:n1]
            yb[...] = 0
            for t, idx in taps:
                yb += xp[idx].reshape(n1 - n0, c, 1, p) * wc[(Ellipsis,) + t][None, :, :, None]

        parallel(block, split(b, c * m * p * len(taps)))
        return finish(to_data_layout(geo, y.reshape((b, c * m) + geo.output_size)), out_dt)
    return run


@numpy_kernel("depthwise_convolution_3d_data_gradient", fresh=True)
def _dw3d_data_grad(step):
    geo, out_dt, acc = setup(step)
    b, c, m, p = geo.batch, geo.in_channels, geo.channel_multiplier, prod(geo.output_size)
    taps = window_taps(geo)
    padded = has_padding(geo)

    def run(dy, w):
        dyc = result_view(geo, dy).astype(acc, copy=False).reshape(b, c, m, p)
        wc = weights_view(geo, w).astype(acc, copy=False)[:, :, 0]
        dx = np.empty((b, c) + geo.input_size, acc)

        def block(n0, n1):
            nb = n1 - n0
            dxp = np.zeros((nb, c) + geo.padded_size, acc) if padded else dx[n0:n1]
            if not padded:
                dxp[...] = 0
            for t, idx in taps:
                wt = wc[(Ellipsis,) + t]
                d = dyc[n0:n1]
                part = d[:, :, 0] * wt[None, :, 0, None] if m == 1 else (d * wt[None, :, :, None]).sum(axis=2)
                dxp[idx] += part.reshape((nb, c) + geo.output_size)
            if padded:
                dx[n0:n1] = crop_trailing(dxp, geo.padding_before, geo.input_size)

        parallel(block, split(b, c * m * p * len(taps)))
        return finish(to_data_layout(geo, dx), out_dt)
    return run


@numpy_kernel("depthwise_convolution_3d_weights_gradient", fresh=True)
def _dw3d_weights_grad(step):
    geo, out_dt, acc = setup(step)
    b, c, m, p = geo.batch, geo.in_channels, geo.channel_multiplier, prod(geo.output_size)
    taps = window_taps(geo)

    def run(dy, x):
        dyv = result_view(geo, dy).astype(acc, copy=False).reshape(b, c, m, p)
        xp = padded_source(geo, x, acc, 0, b)
        dw = np.empty((c, m, 1) + geo.kernel_size, acc)

        def block(c0, c1):
            # [cb, M, B*P] @ [cb, B*P, 1]: per channel, the multiplier filters against every position
            cb = c1 - c0
            dyt = dyv[:, c0:c1].transpose(1, 2, 0, 3).reshape(cb, m, b * p)
            for t, idx in taps:
                cols = xp[(slice(None), slice(c0, c1)) + idx[1:]].reshape(b, cb, p).transpose(1, 0, 2).reshape(
                    cb, b * p, 1)
                dw[(slice(c0, c1), Ellipsis) + t] = np.matmul(dyt, cols)

        parallel(block, split(c, b * m * p * len(taps)))
        return finish(to_weights_layout(geo, dw), out_dt)
    return run
