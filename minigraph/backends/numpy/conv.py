"""NumPy kernels for grouped 2D convolution and its gradients.

Every kernel works in the canonical layout (NCHW data, OIHW weights), converting NHWC/HWIO on
the way in and out. The loop runs over the kernel taps only: each tap is one strided view of the
padded input and one batched matmul over the channels of each group. float16 is computed in
float32 and rounded once at the end. The helpers at the top are shared with depthwise3d.py and
pooling.py.
"""
from __future__ import annotations

import numpy as np

from ...descriptors import TensorNamedDataLayout
from ...ops.convolution import conv2d_geometry, data_dims, weight_dims
from .registry import numpy_kernel

NCHW, OIHW = TensorNamedDataLayout.NCHW, TensorNamedDataLayout.OIHW


# ------------------------------------------------------------------ shared helpers
def compute_dtype(dt: np.dtype) -> np.dtype:
    """Accumulate float16 in float32 (as GPUs do); other floats in themselves."""
    return np.dtype(np.float32) if dt == np.float16 else dt


def padded_extent(size: int, pb: int, pa: int, out: int, s: int, k: int, d: int) -> int:
    """Padded length that holds the input, its padding and every window tap."""
    return max(size + pb + pa, pb + size, (out - 1) * s + (k - 1) * d + 1, 0)


def pad_trailing(x: np.ndarray, before: tuple, extents: tuple, value, dtype) -> np.ndarray:
    """``x`` placed at offset ``before`` in a new array whose trailing dims have ``extents``."""
    nd = len(before)
    lead = x.shape[: x.ndim - nd]
    out = np.full(lead + tuple(extents), value, dtype=dtype)
    idx = (Ellipsis,) + tuple(slice(b, b + n) for b, n in zip(before, x.shape[x.ndim - nd:]))
    out[idx] = x
    return out


def crop_trailing(x: np.ndarray, before: tuple, sizes: tuple) -> np.ndarray:
    return x[(Ellipsis,) + tuple(slice(b, b + n) for b, n in zip(before, sizes))]


def tap(start: int, out: int, s: int) -> slice:
    """The strided slice that tap at ``start`` reads for ``out`` windows of stride ``s``."""
    return slice(start, start + (out - 1) * s + 1, s)


def to_nchw(x: np.ndarray, layout) -> np.ndarray:
    return x if layout == NCHW else x.transpose(0, 3, 1, 2)


def from_nchw(x: np.ndarray, layout) -> np.ndarray:
    return x if layout == NCHW else x.transpose(0, 2, 3, 1)


def to_oihw(w: np.ndarray, layout) -> np.ndarray:
    return w if layout == OIHW else w.transpose(3, 2, 0, 1)


def from_oihw(w: np.ndarray, layout) -> np.ndarray:
    return w if layout == OIHW else w.transpose(2, 3, 1, 0)


def finish(y: np.ndarray, dtype: np.dtype) -> np.ndarray:
    return np.ascontiguousarray(y, dtype=dtype)


# ------------------------------------------------------------------ geometry of one step
class _Geo:
    """Sizes and padding of one compiled convolution step, in canonical order."""

    def __init__(self, desc, x_shape, w_shape, w_layout=None):
        self.n, self.c, self.h, self.w = data_dims(x_shape, desc.data_layout)
        self.o, self.i, self.kh, self.kw = weight_dims(w_shape, w_layout or desc.weights_layout)
        (self.pt, self.pb, self.oh), (self.pl, self.pr, self.ow) = conv2d_geometry(
            desc, self.h, self.w, self.kh, self.kw)
        self.sy, self.sx = desc.stride_in_y, desc.stride_in_x
        self.dy, self.dx = desc.dilation_rate_in_y, desc.dilation_rate_in_x
        self.groups = getattr(desc, "groups", 1)
        self.hp = padded_extent(self.h, self.pt, self.pb, self.oh, self.sy, self.kh, self.dy)
        self.wp = padded_extent(self.w, self.pl, self.pr, self.ow, self.sx, self.kw, self.dx)

    def taps(self):
        for i in range(self.kh):
            for j in range(self.kw):
                yield i, j, tap(i * self.dy, self.oh, self.sy), tap(j * self.dx, self.ow, self.sx)


# ------------------------------------------------------------------ kernels
def _setup(step, x_shape, w_shape):
    """What every conv kernel factory needs: descriptor, geometry, result and accumulation dtypes,
    and the sizes (batch, groups, out channels per group, in channels per group, positions)."""
    d = step.attrs["descriptor"]
    geo = _Geo(d, x_shape, w_shape)
    out_dt = step.out_types[0].dtype.np_dtype
    return d, geo, out_dt, compute_dtype(out_dt), (geo.n, geo.groups, geo.o // geo.groups, geo.i, geo.oh * geo.ow)


@numpy_kernel("convolution_2d")
def _conv2d(step):
    d, geo, out_dt, acc, (n, g, og, ig, p) = _setup(step, step.in_types[0].shape, step.in_types[1].shape)

    def run(x, w):
        xp = pad_trailing(to_nchw(x, d.data_layout), (geo.pt, geo.pl), (geo.hp, geo.wp), 0, acc)
        wg = to_oihw(w, d.weights_layout).astype(acc).reshape(g, og, ig, geo.kh, geo.kw)
        y = np.zeros((n, g, og, p), acc)
        for i, j, ys, xs in geo.taps():
            cols = xp[:, :, ys, xs].reshape(n, g, ig, p)
            if ig == 1:  # depthwise-like groups: a broadcast product beats a matmul of inner size 1
                y += cols * wg[:, :, 0, i, j][None, :, :, None]
            else:
                y += np.matmul(wg[:, :, :, i, j], cols)
        return finish(from_nchw(y.reshape(n, geo.o, geo.oh, geo.ow), d.data_layout), out_dt)
    return run


@numpy_kernel("convolution_2d_data_gradient")
def _conv2d_data_grad(step):
    d, geo, out_dt, acc, (n, g, og, ig, p) = _setup(step, step.out_types[0].shape, step.in_types[1].shape)

    def run(dy, w):
        dyg = to_nchw(dy, d.data_layout).astype(acc).reshape(n, g, og, p)
        wg = to_oihw(w, d.weights_layout).astype(acc).reshape(g, og, ig, geo.kh, geo.kw)
        dxp = np.zeros((n, geo.c, geo.hp, geo.wp), acc)
        for i, j, ys, xs in geo.taps():
            if ig == 1:
                part = (dyg * wg[:, :, 0, i, j][None, :, :, None]).sum(axis=2)
            else:
                part = np.matmul(wg[:, :, :, i, j].transpose(0, 2, 1), dyg)
            dxp[:, :, ys, xs] += part.reshape(n, geo.c, geo.oh, geo.ow)
        dx = crop_trailing(dxp, (geo.pt, geo.pl), (geo.h, geo.w))
        return finish(from_nchw(dx, d.data_layout), out_dt)
    return run


@numpy_kernel("convolution_2d_weights_gradient")
def _conv2d_weights_grad(step):
    d, geo, out_dt, acc, (n, g, og, ig, p) = _setup(step, step.in_types[1].shape, step.out_types[0].shape)

    def run(dy, x):
        # [g, og, n*p]: each group's output channels against every (batch, position) pair
        dyg = to_nchw(dy, d.data_layout).astype(acc).reshape(n, g, og, p).transpose(1, 2, 0, 3).reshape(g, og, n * p)
        xp = pad_trailing(to_nchw(x, d.data_layout), (geo.pt, geo.pl), (geo.hp, geo.wp), 0, acc)
        dw = np.empty((g, og, ig, geo.kh, geo.kw), acc)
        for i, j, ys, xs in geo.taps():
            # [g, ig, n*p] keeps positions innermost (a cheap copy); BLAS takes the transpose as is
            cols = xp[:, :, ys, xs].reshape(n, g, ig, p).transpose(1, 2, 0, 3).reshape(g, ig, n * p)
            dw[:, :, :, i, j] = np.matmul(dyg, cols.transpose(0, 2, 1))
        return finish(from_oihw(dw.reshape(geo.o, ig, geo.kh, geo.kw), d.weights_layout), out_dt)
    return run
