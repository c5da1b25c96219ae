"""NumPy kernels for ``resize`` and ``resize_gradient`` (semantics: ``ops/resize.py``).

Separable: the forward resizes W, then H, each a gather of the two taps ``(i0, i1, f)`` of
``ops.resize.taps``; the gradient runs the adjoint passes in reverse order (H, then W), adding
each result element's gradient into the taps it read (weights of exactly 0 are skipped, as the
forward skips reading them). float16 is computed in float32 and rounded once at the end.
"""
from __future__ import annotations

import numpy as np

from ...ops.resize import SPATIAL_AXES, taps
from .conv import compute_dtype
from .registry import numpy_kernel


def _resize_axis(x: np.ndarray, axis: int, out_size: int, attrs: dict) -> np.ndarray:
    i0, i1, f = taps(x.shape[axis], out_size, attrs["mode"], attrs["center_result"], attrs["align_corners"], x.dtype)
    a = np.take(x, i0, axis=axis)
    if not f.any():
        return a
    shape = [1] * x.ndim
    shape[axis] = out_size
    fb = f.astype(x.dtype).reshape(shape)
    with np.errstate(invalid="ignore", over="ignore"):  # the lanes where f = 0 are not used
        mixed = a * (x.dtype.type(1) - fb) + np.take(x, i1, axis=axis) * fb
    return np.where(fb == 0, a, mixed)


def _resize_axis_adjoint(dy: np.ndarray, axis: int, in_size: int, attrs: dict) -> np.ndarray:
    i0, i1, f = taps(in_size, dy.shape[axis], attrs["mode"], attrs["center_result"], attrs["align_corners"],
                     dy.dtype)
    g = np.moveaxis(dy, axis, 0)
    out = np.zeros((in_size,) + g.shape[1:], dy.dtype)
    lead = (slice(None),) + (None,) * (g.ndim - 1)
    w0 = (1 - f).astype(dy.dtype)[lead]
    np.add.at(out, i0, g * w0)
    mixed = f > 0
    if mixed.any():
        np.add.at(out, i1[mixed], g[mixed] * f[mixed].astype(dy.dtype)[lead])
    return np.moveaxis(out, 0, axis)


@numpy_kernel("resize")
def _resize(step):
    attrs = step.attrs
    h, w = SPATIAL_AXES[attrs["layout"]][1]
    out_h, out_w = attrs["size"]
    out_dt = step.out_types[0].dtype.np_dtype

    def run(x):
        t = _resize_axis(x.astype(compute_dtype(x.dtype), copy=False), w, out_w, attrs)
        return np.ascontiguousarray(_resize_axis(t, h, out_h, attrs), dtype=out_dt)
    return run


@numpy_kernel("resize_gradient")
def _resize_gradient(step):
    attrs = step.attrs
    h, w = SPATIAL_AXES[attrs["layout"]][1]
    in_shape = step.out_types[0].shape
    out_dt = step.out_types[0].dtype.np_dtype

    def run(dy, x):
        t = _resize_axis_adjoint(dy.astype(compute_dtype(dy.dtype), copy=False), h, in_shape[h], attrs)
        return np.ascontiguousarray(_resize_axis_adjoint(t, w, in_shape[w], attrs), dtype=out_dt)
    return run
