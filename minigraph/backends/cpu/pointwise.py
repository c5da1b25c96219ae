"""Compiled kernels for pointwise convolutions (1x1 kernel, stride 1, no padding): ``convolution_2d``
and its data and weights gradients, any groups and layout.

On the NumPy backend these are one GEMM per image through BLAS, split over the Python thread pool:
at 16 threads that kept only a few cores busy, and the pool's threads and Numba's took the cores
from each other. Here they run on Numba's threads like the depthwise kernels. On the canonical
arrays of ``numpy/conv.py`` (data ``[N, groups, channels, P]``, weights ``[groups, out, in]``):

* forward ``y[n, g, o, :] = sum_i w[g, o, i] * x[n, g, i, :]`` and data gradient (the same with
  ``w`` transposed): one (image, group, block of ``ROWS`` output rows) per iteration, each row a
  sum of scaled input rows, four at a time, ``i`` in order (the rows are contiguous, so LLVM
  vectorizes them);
* weights gradient ``dw[g, o, i] = sum_n sum_p dy[n, g, o, p] * x[n, g, i, p]``: one (group,
  4 x 4 block of ``dw``) per iteration, its 16 dot products kept in registers over the images in
  order (the positions summed in the vectorized order of ``jit.reassociating_kernel``).

Every output element is summed by one iteration in an order fixed by the code, so the bits do not
depend on the thread count; they differ from BLAS's (another summation order) within float rounding.
"""
from __future__ import annotations

from typing import Callable, Optional

import numpy as np

from ...ops.geometry import ConvGeometry, geometry_of
from ..numpy.conv import (compute_dtype, finish, is_pointwise, result_view, source_view, to_data_layout,
                          to_weights_layout, weights_view)
from .jit import parallel_kernel, prange, reassociating_kernel

FLOATS = (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64))
ROWS = 4  # output rows (channels) per iteration: each input row read once serves this many
COLUMNS = 512  # positions per pass over the rows, so a block's rows stay in the L1 cache


@parallel_kernel
def _products(w, x, y):  # pragma: no cover - compiled
    """``y[n, g] = w[g] @ x[n, g]`` for ``w [G, O, I]``, ``x [N, G, I, P]``, ``y [N, G, O, P]``; four
    input rows at a time (a row of ``y`` is loaded and stored once per four)."""
    nb, ng, ni, p = x.shape
    no = w.shape[1]
    nob = (no + ROWS - 1) // ROWS
    i4 = ni - ni % 4
    for t in prange(nb * ng * nob):
        n = t // (ng * nob)
        r = t - n * ng * nob
        g = r // nob
        o0 = (r - g * nob) * ROWS
        o1 = min(no, o0 + ROWS)
        for q0 in range(0, p, COLUMNS):
            q1 = min(p, q0 + COLUMNS)
            for o in range(o0, o1):
                yr = y[n, g, o, q0:q1]
                yr[:] = 0
            for i in range(0, i4, 4):
                x0, x1 = x[n, g, i, q0:q1], x[n, g, i + 1, q0:q1]
                x2, x3 = x[n, g, i + 2, q0:q1], x[n, g, i + 3, q0:q1]
                for o in range(o0, o1):
                    w0, w1, w2, w3 = w[g, o, i], w[g, o, i + 1], w[g, o, i + 2], w[g, o, i + 3]
                    yr = y[n, g, o, q0:q1]
                    for k in range(q1 - q0):
                        yr[k] += (w0 * x0[k] + w1 * x1[k]) + (w2 * x2[k] + w3 * x3[k])
            for i in range(i4, ni):
                xr = x[n, g, i, q0:q1]
                for o in range(o0, o1):
                    wv = w[g, o, i]
                    yr = y[n, g, o, q0:q1]
                    for k in range(q1 - q0):
                        yr[k] += wv * xr[k]


@reassociating_kernel
def _weights(dy, x, dw):  # pragma: no cover - compiled
    """``dw[g, o, i] = sum_n dot(dy[n, g, o], x[n, g, i])`` for ``dy [N, G, O, P]``, ``x [N, G, I, P]``:
    one (group, 4 output channels, 4 input channels) block per iteration, its 16 sums in registers
    over the images in order."""
    nb, ng, no, p = dy.shape
    ni = x.shape[2]
    nob = (no + 3) // 4
    nib = (ni + 3) // 4
    zero = dw.dtype.type(0)
    for t in prange(ng * nob * nib):
        g = t // (nob * nib)
        r = t - g * nob * nib
        ob = r // nib
        o0, i0 = ob * 4, (r - ob * nib) * 4
        if o0 + 4 <= no and i0 + 4 <= ni:
            a00 = a01 = a02 = a03 = a10 = a11 = a12 = a13 = zero
            a20 = a21 = a22 = a23 = a30 = a31 = a32 = a33 = zero
            for n in range(nb):
                d0, d1, d2, d3 = dy[n, g, o0], dy[n, g, o0 + 1], dy[n, g, o0 + 2], dy[n, g, o0 + 3]
                x0, x1, x2, x3 = x[n, g, i0], x[n, g, i0 + 1], x[n, g, i0 + 2], x[n, g, i0 + 3]
                for k in range(p):
                    e0, e1, e2, e3 = d0[k], d1[k], d2[k], d3[k]
                    f0, f1, f2, f3 = x0[k], x1[k], x2[k], x3[k]
                    a00 += e0 * f0
                    a01 += e0 * f1
                    a02 += e0 * f2
                    a03 += e0 * f3
                    a10 += e1 * f0
                    a11 += e1 * f1
                    a12 += e1 * f2
                    a13 += e1 * f3
                    a20 += e2 * f0
                    a21 += e2 * f1
                    a22 += e2 * f2
                    a23 += e2 * f3
                    a30 += e3 * f0
                    a31 += e3 * f1
                    a32 += e3 * f2
                    a33 += e3 * f3
            dw[g, o0, i0], dw[g, o0, i0 + 1], dw[g, o0, i0 + 2], dw[g, o0, i0 + 3] = a00, a01, a02, a03
            dw[g, o0 + 1, i0], dw[g, o0 + 1, i0 + 1], dw[g, o0 + 1, i0 + 2], dw[g, o0 + 1, i0 + 3] = a10, a11, a12, a13
            dw[g, o0 + 2, i0], dw[g, o0 + 2, i0 + 1], dw[g, o0 + 2, i0 + 2], dw[g, o0 + 2, i0 + 3] = a20, a21, a22, a23
            dw[g, o0 + 3, i0], dw[g, o0 + 3, i0 + 1], dw[g, o0 + 3, i0 + 2], dw[g, o0 + 3, i0 + 3] = a30, a31, a32, a33
        else:  # an edge block: one sum at a time
            for o in range(o0, min(no, o0 + 4)):
                for i in range(i0, min(ni, i0 + 4)):
                    s = zero
                    for n in range(nb):
                        dr, xr = dy[n, g, o], x[n, g, i]
                        for k in range(p):
                            s += dr[k] * xr[k]
                    dw[g, o, i] = s


def _geometry(step) -> Optional[tuple]:
    """(geometry, result dtype, accumulation dtype) of a pointwise float convolution step, or None
    where the NumPy kernel stays (another kernel shape, another dtype, an empty tensor)."""
    out_dt = np.dtype(step.out_types[0].dtype.np_dtype)
    if out_dt not in FLOATS or any(np.dtype(t.dtype.np_dtype) != out_dt for t in step.in_types):
        return None
    geo: ConvGeometry = geometry_of(step)
    if len(geo.input_size) != 2 or not is_pointwise(geo) or \
            min(geo.source_shape + geo.result_shape + (geo.batch,)) <= 0:
        return None
    return geo, out_dt, compute_dtype(out_dt)


def _rows(geo: ConvGeometry, a: np.ndarray, result: bool, cdt: np.dtype) -> np.ndarray:
    """``[N, groups, channels, P]`` of a data-layout array, C-contiguous in ``cdt``."""
    if result:
        v = result_view(geo, a).reshape(geo.batch, geo.groups, geo.out_per_group, -1)
    else:
        v = source_view(geo, a).reshape(geo.batch, geo.groups, geo.in_per_group, -1)
    return np.ascontiguousarray(v, dtype=cdt)


def _matrices(geo: ConvGeometry, w: np.ndarray, cdt: np.dtype) -> np.ndarray:
    """``[groups, out, in]`` of the weights, C-contiguous in ``cdt``."""
    return np.ascontiguousarray(weights_view(geo, w).reshape(geo.groups, geo.out_per_group, geo.in_per_group),
                                dtype=cdt)


def forward(step) -> Optional[Callable]:
    """``fn(x, w) -> y`` for a pointwise ``convolution_2d`` step, or None (the NumPy kernel runs)."""
    got = _geometry(step)
    if got is None:
        return None
    geo, out_dt, cdt = got
    shape = (geo.batch, geo.groups, geo.out_per_group, int(np.prod(geo.output_size)))

    def run(x, w):
        y = np.empty(shape, cdt)
        _products(_matrices(geo, w, cdt), _rows(geo, x, False, cdt), y)
        return finish(to_data_layout(geo, y.reshape((geo.batch, geo.out_channels) + geo.output_size)), out_dt)
    return run


def data_gradient(step) -> Optional[Callable]:
    """``fn(dy, w) -> dx`` for a pointwise ``convolution_2d_data_gradient`` step, or None."""
    got = _geometry(step)
    if got is None:
        return None
    geo, out_dt, cdt = got
    shape = (geo.batch, geo.groups, geo.in_per_group, int(np.prod(geo.input_size)))

    def run(dy, w):
        dx = np.empty(shape, cdt)
        wt = np.ascontiguousarray(_matrices(geo, w, cdt).transpose(0, 2, 1))
        _products(wt, _rows(geo, dy, True, cdt), dx)
        return finish(to_data_layout(geo, dx.reshape((geo.batch, geo.in_channels) + geo.input_size)), out_dt)
    return run


def weights_gradient(step) -> Optional[Callable]:
    """``fn(dy, x) -> dW`` for a pointwise ``convolution_2d_weights_gradient`` step, or None."""
    got = _geometry(step)
    if got is None:
        return None
    geo, out_dt, cdt = got

    def run(dy, x):
        dw = np.empty((geo.groups, geo.out_per_group, geo.in_per_group), cdt)
        _weights(_rows(geo, dy, True, cdt), _rows(geo, x, False, cdt), dw)
        return finish(to_weights_layout(geo, dw.reshape(dw.shape + geo.kernel_size)), out_dt)
    return run


KERNELS = {
    "convolution_2d": forward,
    "convolution_2d_data_gradient": data_gradient,
    "convolution_2d_weights_gradient": weights_gradient,
}
