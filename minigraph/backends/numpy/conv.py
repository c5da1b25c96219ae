"""NumPy kernels for grouped 2D convolution and its gradients, and the array helpers every NumPy
convolution-family kernel shares.

Kernels read their ``ConvGeometry`` from the step (``geometry_of``) and work on canonical views:
data ``[N, C, *spatial]``, results ``[N, groups, out_per_group, *spatial]`` and weights
``[groups, out_per_group, in_per_group, *kernel]``, whatever the layouts. The loop runs over the
kernel taps only: each tap is one strided view of the padded input and one batched matmul over
the channels of each group. float16 is computed in float32 and rounded once at the end.
"""
from __future__ import annotations

import functools
import itertools
from math import prod

import numpy as np

from ...ops.convolution_transpose import transpose_geometry
from ...ops.geometry import ConvGeometry, geometry_of
from .registry import numpy_kernel


# ------------------------------------------------------------------ shared helpers
def compute_dtype(dt: np.dtype) -> np.dtype:
    """Accumulate float16 in float32 (as GPUs do); other floats in themselves."""
    return np.dtype(np.float32) if dt == np.float16 else dt


def source_view(geo: ConvGeometry, a: np.ndarray) -> np.ndarray:
    """``[N, C, *spatial]`` of an array in the data layout (x or dx)."""
    return a.transpose(geo.data_permutation).reshape((geo.batch,) + tuple(a.shape[ax] for ax in geo.data_axes))


def result_view(geo: ConvGeometry, a: np.ndarray) -> np.ndarray:
    """``[N, groups, out_per_group, *spatial]`` of a result-layout array (y or dy)."""
    return a.transpose(geo.data_permutation).reshape(
        (geo.batch, geo.groups, geo.out_per_group) + tuple(a.shape[ax] for ax in geo.data_axes[1:]))


def weights_view(geo: ConvGeometry, a: np.ndarray) -> np.ndarray:
    """``[groups, out_per_group, in_per_group, *kernel]`` of a weights-layout array (W or dW)."""
    return a.transpose(geo.weights_permutation).reshape(
        (geo.groups, geo.out_per_group, geo.in_per_group) + geo.kernel_size)


def to_data_layout(geo: ConvGeometry, a: np.ndarray) -> np.ndarray:
    """A canonical ``[N, C, *spatial]`` array in the data layout (a view)."""
    return a.reshape(geo.batch_shape + a.shape[1:]).transpose(np.argsort(geo.data_permutation))


def to_weights_layout(geo: ConvGeometry, a: np.ndarray) -> np.ndarray:
    """A canonical ``[groups, out_per_group, in_per_group, *kernel]`` array in the weights layout (a view)."""
    permuted = tuple(geo.weights_shape[ax] for ax in geo.weights_permutation)
    return a.reshape(permuted).transpose(np.argsort(geo.weights_permutation))


def pad_trailing(x: np.ndarray, before: tuple, extents: tuple, value, dtype) -> np.ndarray:
    """``x`` placed at offset ``before`` in a new array whose trailing dims have ``extents``."""
    nd = len(before)
    lead = x.shape[: x.ndim - nd]
    out = np.full(lead + tuple(extents), value, dtype=dtype)
    idx = (Ellipsis,) + tuple(slice(b, b + n) for b, n in zip(before, x.shape[x.ndim - nd:]))
    out[idx] = x
    return out


def crop_trailing(x: np.ndarray, before: tuple, sizes: tuple) -> np.ndarray:
    """The part of ``x``'s trailing dims at offset ``before`` with ``sizes``."""
    return x[(Ellipsis,) + tuple(slice(b, b + n) for b, n in zip(before, sizes))]


def tap(start: int, out: int, s: int) -> slice:
    """The strided slice that tap at ``start`` reads for ``out`` windows of stride ``s``."""
    return slice(start, start + (out - 1) * s + 1, s)


@functools.lru_cache(maxsize=256)
def window_taps(geo: ConvGeometry) -> tuple:
    """``(tap, index)`` per kernel tap, row-major: ``index`` selects, in the trailing spatial axes
    of the padded input, what the tap reads for every output position (made once per geometry)."""
    return tuple((t, (Ellipsis,) + tuple(tap(i * d, o, s) for i, d, o, s in
                                         zip(t, geo.dilations, geo.output_size, geo.strides)))
                 for t in itertools.product(*(range(k) for k in geo.kernel_size)))


def finish(y: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """A C-contiguous copy (or ``y`` itself) of ``dtype``."""
    return np.ascontiguousarray(y, dtype=dtype)


def setup(step) -> tuple:
    """What every convolution-family kernel factory needs: the geometry, the result's dtype and
    the accumulation dtype."""
    out_dt = step.out_types[0].dtype.np_dtype
    return geometry_of(step), out_dt, compute_dtype(out_dt)


# ------------------------------------------------------------------ kernels
def forward_kernel(geo: ConvGeometry, out_dt: np.dtype, acc: np.dtype):
    """``run(x, w) -> y``: the forward convolution of a geometry."""
    n, groups, og, ig, p = geo.batch, geo.groups, geo.out_per_group, geo.in_per_group, prod(geo.output_size)

    def run(x, w):
        xp = pad_trailing(source_view(geo, x), geo.padding_before, geo.padded_size, 0, acc)
        wg = weights_view(geo, w).astype(acc)
        y = np.zeros((n, groups, og, p), acc)
        for t, idx in window_taps(geo):
            cols = xp[idx].reshape(n, groups, ig, p)
            wt = wg[(Ellipsis,) + t]  # [groups, og, ig]
            if ig == 1:  # depthwise-like groups: a broadcast product beats a matmul of inner size 1
                y += cols * wt[:, :, 0][None, :, :, None]
            else:
                y += np.matmul(wt, cols)
        return finish(to_data_layout(geo, y.reshape((n, geo.out_channels) + geo.output_size)), out_dt)
    return run


def data_gradient_kernel(geo: ConvGeometry, out_dt: np.dtype, acc: np.dtype):
    """``run(dy, w) -> dx``: the convolution's data gradient (the transposed convolution)."""
    n, groups, og, ig, p = geo.batch, geo.groups, geo.out_per_group, geo.in_per_group, prod(geo.output_size)

    def run(dy, w):
        dyg = result_view(geo, dy).astype(acc).reshape(n, groups, og, p)
        wg = weights_view(geo, w).astype(acc)
        dxp = np.zeros((n, geo.in_channels) + geo.padded_size, acc)
        for t, idx in window_taps(geo):
            wt = wg[(Ellipsis,) + t]
            if ig == 1:
                part = (dyg * wt[:, :, 0][None, :, :, None]).sum(axis=2)
            else:
                part = np.matmul(wt.transpose(0, 2, 1), dyg)
            dxp[idx] += part.reshape((n, geo.in_channels) + geo.output_size)
        dx = crop_trailing(dxp, geo.padding_before, geo.input_size)
        return finish(to_data_layout(geo, dx), out_dt)
    return run


def weights_gradient_kernel(geo: ConvGeometry, out_dt: np.dtype, acc: np.dtype):
    """``run(dy, x) -> dw``: the convolution's weights gradient."""
    n, groups, og, ig, p = geo.batch, geo.groups, geo.out_per_group, geo.in_per_group, prod(geo.output_size)

    def run(dy, x):
        # [groups, og, n*p]: each group's output channels against every (batch, position) pair
        dyg = result_view(geo, dy).astype(acc).reshape(n, groups, og, p).transpose(1, 2, 0, 3).reshape(groups, og, n * p)
        xp = pad_trailing(source_view(geo, x), geo.padding_before, geo.padded_size, 0, acc)
        dw = np.empty((groups, og, ig) + geo.kernel_size, acc)
        for t, idx in window_taps(geo):
            # [groups, ig, n*p] keeps positions innermost (a cheap copy); BLAS takes the transpose as is
            cols = xp[idx].reshape(n, groups, ig, p).transpose(1, 2, 0, 3).reshape(groups, ig, n * p)
            dw[(Ellipsis,) + t] = np.matmul(dyg, cols.transpose(0, 2, 1))
        return finish(to_weights_layout(geo, dw), out_dt)
    return run


@numpy_kernel("convolution_2d")
def _conv2d(step):
    return forward_kernel(*setup(step))


@numpy_kernel("convolution_2d_data_gradient")
def _conv2d_data_grad(step):
    return data_gradient_kernel(*setup(step))


@numpy_kernel("convolution_2d_weights_gradient")
def _conv2d_weights_grad(step):
    return weights_gradient_kernel(*setup(step))


# ------------------------------------------------------------------ convolution transpose
# T(x, W) = D(x, W), TD(g, W) = F(g, W), TW(g, x) = G(incoming=x, source=g) over the forward
# convolution's geometry (ops/convolution_transpose.py)
def _transpose_setup(step) -> tuple:
    out_dt = step.out_types[0].dtype.np_dtype
    return transpose_geometry(step), out_dt, compute_dtype(out_dt)


@numpy_kernel("convolution_transpose_2d")
def _transpose(step):
    return data_gradient_kernel(*_transpose_setup(step))


@numpy_kernel("convolution_transpose_2d_data_gradient")
def _transpose_data_grad(step):
    return forward_kernel(*_transpose_setup(step))


@numpy_kernel("convolution_transpose_2d_weights_gradient")
def _transpose_weights_grad(step):
    run = weights_gradient_kernel(*_transpose_setup(step))
    return lambda dy, x: run(x, dy)
