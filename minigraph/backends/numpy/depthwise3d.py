"""NumPy kernels for the depthwise 3D convolution family.

Depthwise 3D is a grouped ``ConvGeometry`` with ``groups = C``: data is viewed as
``[B, C, D, H, W]`` (the batch axes flattened), weights as ``[C, M, kD, kH, kW]`` (the C*M weight
channels split as ``o = c*M + m``). The loop runs over the kernel taps only.
"""
from __future__ import annotations

from math import prod

import numpy as np

from .conv import (crop_trailing, finish, pad_trailing, result_view, setup, source_view, to_data_layout,
                   to_weights_layout, weights_view, window_taps)
from .registry import numpy_kernel


@numpy_kernel("depthwise_convolution_3d")
def _dw3d(step):
    geo, out_dt, acc = setup(step)
    b, c, m, p = geo.batch, geo.in_channels, geo.channel_multiplier, prod(geo.output_size)

    def run(x, w):
        xp = pad_trailing(source_view(geo, x), geo.padding_before, geo.padded_size, 0, acc)
        wc = weights_view(geo, w).astype(acc)[:, :, 0]  # [C, M, kD, kH, kW]
        y = np.zeros((b, c, m, p), acc)
        for t, idx in window_taps(geo):
            y += xp[idx].reshape(b, c, 1, p) * wc[(Ellipsis,) + t][None, :, :, None]
        return finish(to_data_layout(geo, y.reshape((b, c * m) + geo.output_size)), out_dt)
    return run


@numpy_kernel("depthwise_convolution_3d_data_gradient")
def _dw3d_data_grad(step):
    geo, out_dt, acc = setup(step)
    b, c, m, p = geo.batch, geo.in_channels, geo.channel_multiplier, prod(geo.output_size)

    def run(dy, w):
        dyc = result_view(geo, dy).astype(acc).reshape(b, c, m, p)
        wc = weights_view(geo, w).astype(acc)[:, :, 0]
        dxp = np.zeros((b, c) + geo.padded_size, acc)
        for t, idx in window_taps(geo):
            wt = wc[(Ellipsis,) + t]
            part = dyc[:, :, 0] * wt[None, :, 0, None] if m == 1 else (dyc * wt[None, :, :, None]).sum(axis=2)
            dxp[idx] += part.reshape((b, c) + geo.output_size)
        return finish(to_data_layout(geo, crop_trailing(dxp, geo.padding_before, geo.input_size)), out_dt)
    return run


@numpy_kernel("depthwise_convolution_3d_weights_gradient")
def _dw3d_weights_grad(step):
    geo, out_dt, acc = setup(step)
    b, c, m, p = geo.batch, geo.in_channels, geo.channel_multiplier, prod(geo.output_size)

    def run(dy, x):
        # [C, M, B*P] @ [C, B*P, 1]: per channel, the multiplier filters against every position
        dyt = result_view(geo, dy).astype(acc).reshape(b, c, m, p).transpose(1, 2, 0, 3).reshape(c, m, b * p)
        xp = pad_trailing(source_view(geo, x), geo.padding_before, geo.padded_size, 0, acc)
        dw = np.empty((c, m, 1) + geo.kernel_size, acc)
        for t, idx in window_taps(geo):
            cols = xp[idx].reshape(b, c, p).transpose(1, 0, 2).reshape(c, b * p, 1)
            dw[(Ellipsis,) + t] = np.matmul(dyt, cols)
        return finish(to_weights_layout(geo, dw), out_dt)
    return run
