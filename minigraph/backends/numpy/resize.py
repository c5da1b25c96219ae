"""NumPy kernels for ``resize`` and ``resize_gradient`` (semantics: ``ops/resize.py``).

Separable: the forward resizes the last resized axis first, then the others backwards, each a
gather of the two taps ``(i0, i1, f)`` of ``ops.resize.axis_taps`` (a pass that would copy its
input is skipped); the gradient runs the adjoint passes in reverse order, adding each result
element's gradient into the taps it read (weights of exactly 0 are skipped, as the forward skips
reading them). float16 is computed in float32 and rounded once at the end.
"""
from __future__ import annotations

import numpy as np

from ...ops.resize import axis_taps, is_identity, resized_axes
from .conv import compute_dtype
from .registry import numpy_kernel


def _resize_axis(x: np.ndarray, axis: int, taps: tuple) -> np.ndarray:
    i0, i1, f = taps
    a = np.take(x, i0, axis=axis)
    if not f.any():
        return a
    shape = [1] * x.ndim
    shape[axis] = len(i0)
    fb = f.astype(x.dtype).reshape(shape)
    with np.errstate(invalid="ignore", over="ignore"):  # the lanes where f = 0 are not used
        mixed = a * (x.dtype.type(1) - fb) + np.take(x, i1, axis=axis) * fb
    return np.where(fb == 0, a, mixed)


def _resize_axis_adjoint(dy: np.ndarray, axis: int, in_size: int, taps: tuple) -> np.ndarray:
    i0, i1, f = taps
    g = np.moveaxis(dy, axis, 0)
    out = np.zeros((in_size,) + g.shape[1:], dy.dtype)
    lead = (slice(None),) + (None,) * (g.ndim - 1)
    w0 = (1 - f).astype(dy.dtype)[lead]
    np.add.at(out, i0, g * w0)
    mixed = f > 0
    if mixed.any():
        np.add.at(out, i1[mixed], g[mixed] * f[mixed].astype(dy.dtype)[lead])
    return np.moveaxis(out, 0, axis)


def passes(attrs: dict, in_shape: tuple, out_shape: tuple, dtype) -> list:
    """``(axis, in_size, out_size, taps)`` of the forward passes in order, copies left out."""
    axes = resized_axes(attrs, len(in_shape))
    out = []
    for j in reversed(range(len(axes))):
        a = axes[j]
        t = axis_taps(attrs, j, in_shape[a], out_shape[a], dtype)
        if not is_identity(t[0], t[2], in_shape[a]):
            out.append((a, in_shape[a], out_shape[a], t))
    return out


@numpy_kernel("resize")
def _resize(step):
    attrs = step.attrs
    in_shape, out_shape = step.in_types[0].shape, step.out_types[0].shape
    out_dt = step.out_types[0].dtype.np_dtype

    def run(x):
        t = x.astype(compute_dtype(x.dtype), copy=False)
        for axis, _, _, taps in passes(attrs, in_shape, out_shape, t.dtype):
            t = _resize_axis(t, axis, taps)
        return np.ascontiguousarray(t, dtype=out_dt)
    return run


@numpy_kernel("resize_gradient")
def _resize_gradient(step):
    attrs = step.attrs
    in_shape = step.out_types[0].shape
    out_dt = step.out_types[0].dtype.np_dtype

    def run(dy, x):
        t = dy.astype(compute_dtype(dy.dtype), copy=False)
        for axis, n, _, taps in reversed(passes(attrs, in_shape, dy.shape, t.dtype)):
            t = _resize_axis_adjoint(t, axis, n, taps)
        return np.ascontiguousarray(t, dtype=out_dt)
    return run
