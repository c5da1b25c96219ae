"""The NumPy weights gradient of depthwise 3D convolution.

Depthwise 3D is a grouped ``ConvGeometry`` with ``groups = C``: data is viewed as
``[B, C, D, H, W]`` (the batch axes flattened), weights as ``[C, M, kD, kH, kW]`` (the C*M weight
channels split as ``o = c*M + m``). The forward op and the data gradient run the generic
convolution kernels of ``conv.py`` (bit for bit what a depthwise-only loop gives). The weights
gradient keeps its own loop, split by blocks of channels (each channel's sum over the images
stays whole): the generic one sums in another order where the channels are innermost and
there are several images, so its float32 results differ in the last bits.
"""
from __future__ import annotations

from math import prod

import numpy as np

from .conv import finish, padded_source, result_view, setup, to_weights_layout, window_taps
from .registry import numpy_kernel
from .threads import parallel, split


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
