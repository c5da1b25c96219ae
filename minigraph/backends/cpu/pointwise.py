"""Compiled kernels for pointwise convolutions (1x1 kernel, stride 1, no padding): ``convolution_2d``
and its data and weights gradients, any groups and layout.

On the NumPy backend these are one GEMM per image through BLAS, split over the Python thread pool:
at 16 threads that kept only a few cores busy, and the pool's threads and Numba's took the cores
from each other. Here they run on Numba's threads like the depthwise kernels. On the canonical
arrays of ``numpy/conv.py`` (data ``[N, groups, channels, P]``, weights ``[groups, out, in]``):

* forward ``y[n, g, o, :] = sum_i w[g, o, i] * x[n, g, i, :]`` and data gradient (the same with
  ``w`` transposed): one (image, group, block of ``ROWS`` output rows) per iteration, each row a
  sum of scaled input rows, ``i`` in order (the rows are contiguous, so LLVM vectorizes them);
* weights gradient ``dw[g, o, i] = sum_n sum_p dy[n, g, o, p] * x[n, g, i, p]``: one (group,
  block of ``ROWS`` output channels) per iteration, summing scaled rows of the transposed source
  over the images and positions in order.

Every output element is summed by one iteration in a fixed order, so the bits do not depend on
the thread count; they differ from BLAS's (another summation order) within float rounding.
"""
from __future__ import annotations

from typing import Callable, Optional

import numpy as np

from ...ops.geometry import ConvGeometry, geometry_of
from ..numpy.conv import (compute_dtype, finish, is_pointwise, result_view, source_view, to_data_layout,
                          to_weights_layout, weights_view)
from .jit import parallel_kernel, prange

FLOATS = (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64))
ROWS = 4  # output rows (channels) per iteration: each input row read once serves this many
COLUMNS = 512  # positions per pass over the rows, so a block's rows stay in the L1 cache


@parallel_kernel
def _products(w, x, y):  # pragma: no cover - compiled
    """``y[n, g] = w[g] @ x[n, g]`` for ``w [G, O, I]``, ``x [N, G, I, P]``, ``y [N, G, O, P]``."""
    nb, ng, ni, p = x.shape
    no = w.shape[1]
    nob = (no + ROWS - 1) // ROWS
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
            for i in range(ni):
                xr = x[n, g, i, q0:q1]
                for o in range(o0, o1):
                    wv = w[g, o, i]
                    yr = y[n, g, o, q0:q1]
                    for k in range(q1 - q0):
                        yr[k] += wv * xr[k]


@parallel_kernel
def _transpose_rows(x, xt):  # pragma: no cover - compiled
    """``xt[n, g, p, i] = x[n, g, i, p]``, one (image, group) per iteration."""
    nb, ng, ni, p = x.shape
    for t in prange(nb * ng):
        n = t // ng
        g = t - n * ng
        for i in range(ni):
            for q in range(p):
                xt[n, g, q, i] = x[n, g, i, q]


@parallel_kernel
def _weights(dy, xt, dw):  # pragma: no cover - compiled
    """``dw[g] = sum_n dy[n, g] @ xt[n, g]`` for ``dy [N, G, O, P]``, ``xt [N, G, P, I]``."""
    nb, ng, no, p = dy.shape
    ni = xt.shape[3]
    nob = (no + ROWS - 1) // ROWS
    for t in prange(ng * nob):
        g = t // nob
        o0 = (t - g * nob) * ROWS
        o1 = min(no, o0 + ROWS)
        for o in range(o0, o1):
            dr = dw[g, o]
            dr[:] = 0
        for n in range(nb):
            for q in range(p):
                xr = xt[n, g, q]
                for o in range(o0, o1):
                    dv = dy[n, g, o, q]
                    dr = dw[g, o]
                    for i in range(ni):
                        dr[i] += dv * xr[i]


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
    p = int(np.prod(geo.input_size))

    def run(dy, x):
        xt = np.empty((geo.batch, geo.groups, p, geo.in_per_group), cdt)
        _transpose_rows(_rows(geo, x, False, cdt), xt)
        dw = np.empty((geo.groups, geo.out_per_group, geo.in_per_group), cdt)
        _weights(_rows(geo, dy, True, cdt), xt, dw)
        return finish(to_weights_layout(geo, dw.reshape(dw.shape + geo.kernel_size)), out_dt)
    return run


KERNELS = {
    "convolution_2d": forward,
    "convolution_2d_data_gradient": data_gradient,
    "convolution_2d_weights_gradient": weights_gradient,
}
