"""NumPy kernels of im_to_col and col_to_im (semantics and layouts: ops/image.py): one fancy-index
read of the zero-padded image per window position, and its scatter-add (``np.add.at``) back."""
from __future__ import annotations

import numpy as np

from ...descriptors import TensorNamedDataLayout
from ...ops.image import geometry
from .registry import numpy_kernel


def _plan(d, image):
    """(pad widths, index of the padded image giving [N, C, kH, kW, oH, oW] or [N, kH, kW, oH, oW, C])."""
    n, c, h, w, oh, ow = geometry(d, image)
    rows = (np.arange(d.kernel_height) * d.dilation_rate_in_y)[:, None, None, None] + \
        (np.arange(oh) * d.stride_in_y)[None, None, :, None]
    cols = (np.arange(d.kernel_width) * d.dilation_rate_in_x)[None, :, None, None] + \
        (np.arange(ow) * d.stride_in_x)[None, None, None, :]
    hw = ((d.padding_top, d.padding_bottom), (d.padding_left, d.padding_right))
    if d.data_layout == TensorNamedDataLayout.NCHW:
        return ((0, 0), (0, 0)) + hw, (slice(None), slice(None), rows, cols)
    return ((0, 0),) + hw + ((0, 0),), (slice(None), rows, cols)


def _to_columns(patches, d):
    s = patches.shape
    if d.data_layout == TensorNamedDataLayout.NCHW:  # [N, C, kH, kW, oH, oW]
        return patches.reshape(s[0], s[1] * s[2] * s[3], s[4] * s[5])
    # [N, kH, kW, oH, oW, C] -> [N, oH, oW, kH, kW, C]
    return patches.transpose(0, 3, 4, 1, 2, 5).reshape(s[0], s[3] * s[4], s[1] * s[2] * s[5])


@numpy_kernel("im_to_col")
def _im_to_col(step):
    d = step.attrs["descriptor"]
    pad, index = _plan(d, step.in_types[0].shape)
    return lambda x: np.ascontiguousarray(_to_columns(np.pad(x, pad)[index], d))


@numpy_kernel("col_to_im")
def _col_to_im(step):
    d = step.attrs["descriptor"]
    out = step.out_types[0]
    shape = out.shape
    pad, index = _plan(d, shape)
    n, c, h, w, oh, ow = geometry(d, shape)
    kh, kw = d.kernel_height, d.kernel_width
    acc = np.float32 if out.dtype.np_dtype == np.float16 else out.dtype.np_dtype

    def run(cols):
        padded = np.zeros(tuple(s + lo + hi for s, (lo, hi) in zip(shape, pad)), acc)
        if d.data_layout == TensorNamedDataLayout.NCHW:
            patches = cols.reshape(n, c, kh, kw, oh, ow)
        else:
            patches = cols.reshape(n, oh, ow, kh, kw, c).transpose(0, 3, 4, 1, 2, 5)
        np.add.at(padded, index, patches.astype(acc))
        inner = tuple(slice(lo, lo + s) for s, (lo, _) in zip(shape, pad))
        return padded[inner].astype(out.dtype.np_dtype)
    return run
