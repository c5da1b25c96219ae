"""NumPy kernels for grouped convolution over any number of spatial axes (convolution_2d,
convolution_3d, depthwise_convolution_3d) and its gradients, and the array
helpers every NumPy convolution-family kernel shares.

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
from .threads import get_num_threads, parallel, split


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
# Each kernel splits its work over the backend's thread pool (threads.py) along blocks of its
# output whose arithmetic does not depend on the thread count: the forward and data gradient by
# images (pointwise ones by (image, chunk of POINTWISE_COLUMNS output columns)), the weights
# gradient by kernel taps and chunks of WEIGHTS_ROWS output channels (a pointwise one: one GEMM
# per image read in place, the images summed in order). Every BLAS call has the
# same shape at any thread count, so each result is bit-identical for every thread count.
POINTWISE_COLUMNS = 1024
WEIGHTS_ROWS = 16


def pointwise_products(w3: np.ndarray, src: np.ndarray, out: np.ndarray) -> None:
    """``out[i] = w3 @ src[i]`` for every image ``i`` (``w3 [groups, r, k]``, ``src [N, groups, k, P]``,
    ``out [N, groups, r, P]``), one GEMM per image and chunk of ``POINTWISE_COLUMNS`` columns."""
    n, p = src.shape[0], src.shape[-1]
    cols = POINTWISE_COLUMNS
    nc = max(1, -(-p // cols))

    def items(i0, i1):
        for i in range(i0, i1):
            img, c = divmod(i, nc)
            a, b = c * cols, min(p, (c + 1) * cols)
            np.matmul(w3, src[img, :, :, a:b], out=out[img, :, :, a:b])

    parallel(items, split(n * nc, w3.size * min(p, cols)))
def is_pointwise(geo: ConvGeometry) -> bool:
    """1x1 kernel, stride 1, no padding: the convolution is one matrix product per group."""
    return (all(k == 1 for k in geo.kernel_size) and all(s == 1 for s in geo.strides)
            and not any(geo.padding_before) and geo.padded_size == geo.input_size)


def has_padding(geo: ConvGeometry) -> bool:
    """Whether the taps read outside the source (a padded copy is needed), or the source is
    longer than the windows reach."""
    return any(geo.padding_before) or geo.padded_size != geo.input_size


def padded_source(geo: ConvGeometry, x: np.ndarray, acc: np.dtype, n0: int, n1: int) -> np.ndarray:
    """Images ``n0:n1`` of x as ``[nb, C, *padded]`` in ``acc``: a view of x itself where there is
    no padding and no dtype to change (no copy the geometry does not need)."""
    xs = source_view(geo, x)[n0:n1]
    if not has_padding(geo):
        return xs.astype(acc, copy=False)
    return pad_trailing(xs, geo.padding_before, geo.padded_size, 0, acc)


def _image_parts(geo: ConvGeometry) -> list:
    """Blocks of images, each with enough work for a task of its own."""
    return split(geo.batch, geo.in_channels * max(1, prod(geo.input_size)) * max(1, prod(geo.kernel_size)))


def forward_kernel(geo: ConvGeometry, out_dt: np.dtype, acc: np.dtype):
    """``run(x, w) -> y``: the forward convolution of a geometry."""
    n, groups, og, ig, p = geo.batch, geo.groups, geo.out_per_group, geo.in_per_group, prod(geo.output_size)
    taps = window_taps(geo)
    pointwise = is_pointwise(geo)

    def run(x, w):
        wg = weights_view(geo, w).astype(acc, copy=False)
        y = np.empty((n, groups, og, p), acc)
        if pointwise:  # one GEMM per group and image: [og, ig] @ [ig, P], no tap loop
            xs = source_view(geo, x).astype(acc, copy=False).reshape(n, groups, ig, p)
            pointwise_products(wg.reshape(groups, og, ig), xs, y)
            return finish(to_data_layout(geo, y.reshape((n, geo.out_channels) + geo.output_size)), out_dt)

        def block(n0, n1):
            xp = padded_source(geo, x, acc, n0, n1)
            nb, yb = n1 - n0, y[n0:n1]
            yb[...] = 0
            for t, idx in taps:
                cols = xp[idx].reshape(nb, groups, ig, p)
                wt = wg[(Ellipsis,) + t]  # [groups, og, ig]
                if ig == 1:  # depthwise-like groups: a broadcast product beats a matmul of inner size 1
                    yb += cols * wt[:, :, 0][None, :, :, None]
                else:
                    yb += np.matmul(wt, cols)

        parallel(block, _image_parts(geo))
        return finish(to_data_layout(geo, y.reshape((n, geo.out_channels) + geo.output_size)), out_dt)
    return run


def data_gradient_kernel(geo: ConvGeometry, out_dt: np.dtype, acc: np.dtype):
    """``run(dy, w) -> dx``: the convolution's data gradient (the transposed convolution)."""
    n, groups, og, ig, p = geo.batch, geo.groups, geo.out_per_group, geo.in_per_group, prod(geo.output_size)
    taps = window_taps(geo)
    pointwise, padded = is_pointwise(geo), has_padding(geo)

    def run(dy, w):
        dyg = result_view(geo, dy).astype(acc, copy=False).reshape(n, groups, og, p)
        wg = weights_view(geo, w).astype(acc, copy=False)
        dx = np.empty((n, geo.in_channels) + geo.input_size, acc)
        if pointwise:  # [ig, og] @ [og, P] per group and image
            pointwise_products(wg.reshape(groups, og, ig).transpose(0, 2, 1), dyg, dx.reshape(n, groups, ig, p))
            return finish(to_data_layout(geo, dx), out_dt)

        def block(n0, n1):
            nb = n1 - n0
            dxp = np.zeros((nb, geo.in_channels) + geo.padded_size, acc) if padded else dx[n0:n1]
            if not padded:
                dxp[...] = 0
            for t, idx in taps:
                wt = wg[(Ellipsis,) + t]
                if ig == 1:
                    part = (dyg[n0:n1] * wt[:, :, 0][None, :, :, None]).sum(axis=2)
                else:
                    part = np.matmul(wt.transpose(0, 2, 1), dyg[n0:n1])
                dxp[idx] += part.reshape((nb, geo.in_channels) + geo.output_size)
            if padded:
                dx[n0:n1] = crop_trailing(dxp, geo.padding_before, geo.input_size)

        parallel(block, _image_parts(geo))
        return finish(to_data_layout(geo, dx), out_dt)
    return run


def weights_gradient_kernel(geo: ConvGeometry, out_dt: np.dtype, acc: np.dtype):
    """``run(dy, x) -> dw``: the convolution's weights gradient."""
    n, groups, og, ig, p = geo.batch, geo.groups, geo.out_per_group, geo.in_per_group, prod(geo.output_size)
    taps = window_taps(geo)
    pointwise = is_pointwise(geo)

    def run(dy, x):
        # [groups, og, n*p]: each group's output channels against every (batch, position) pair
        dyv = result_view(geo, dy).astype(acc, copy=False).reshape(n, groups, og, p)
        nrc = -(-og // WEIGHTS_ROWS)
        if pointwise:  # per image [rows, P] @ [P, ig], read in place, summed over the images in order
            xt = source_view(geo, x).astype(acc, copy=False).reshape(n, groups, ig, p).transpose(0, 1, 3, 2)
            dw3 = np.empty((groups, og, ig), acc)

            def pw_rows(c0, c1):
                for c in range(c0, c1):
                    o0, o1 = c * WEIGHTS_ROWS, min(og, (c + 1) * WEIGHTS_ROWS)
                    np.sum(np.matmul(dyv[:, :, o0:o1], xt), axis=0, out=dw3[:, o0:o1])

            parallel(pw_rows, split(nrc, groups * WEIGHTS_ROWS * ig * n * p))
            return finish(to_weights_layout(geo, dw3.reshape((groups, og, ig) + geo.kernel_size)), out_dt)
        if n == 1:
            dyg = dyv.reshape(groups, og, p)
        else:  # the transposing copy, by blocks of images
            dyg = np.empty((groups, og, n, p), acc)
            parallel(lambda a, b: dyg[:, :, a:b].__setitem__(Ellipsis, dyv[a:b].transpose(1, 2, 0, 3)),
                     split(n, groups * og * p))
            dyg = dyg.reshape(groups, og, n * p)
        xp = padded_source(geo, x, acc, 0, n)
        dw = np.empty((groups, og, ig) + geo.kernel_size, acc)

        def columns(idx):
            # [groups, ig, n*p] keeps positions innermost (a cheap copy); BLAS takes the transpose as is
            return xp[idx].reshape(n, groups, ig, p).transpose(1, 2, 0, 3).reshape(groups, ig, n * p)

        def rows(t, cols_t, c0, c1):  # chunks c0:c1 of WEIGHTS_ROWS output channels of tap t
            for c in range(c0, c1):
                o0, o1 = c * WEIGHTS_ROWS, min(og, (c + 1) * WEIGHTS_ROWS)
                dw[(slice(None), slice(o0, o1), Ellipsis) + t] = np.matmul(dyg[:, o0:o1], cols_t)

        def tap_block(t0, t1):
            for t, idx in taps[t0:t1]:
                rows(t, columns(idx).transpose(0, 2, 1), 0, nrc)

        if len(taps) >= get_num_threads() or nrc < 2:
            parallel(tap_block, split(len(taps), groups * og * ig * n * p))
        else:  # fewer taps than threads: chunks of output-channel rows share each tap's columns
            for t, idx in taps:
                cols_t = columns(idx).transpose(0, 2, 1)
                parallel(lambda c0, c1, t=t, cols_t=cols_t: rows(t, cols_t, c0, c1),
                         split(nrc, groups * WEIGHTS_ROWS * ig * n * p))
        return finish(to_weights_layout(geo, dw), out_dt)
    return run


@numpy_kernel("convolution_2d", "convolution_3d", "depthwise_convolution_3d", fresh=True)
def _conv(step):
    return forward_kernel(*setup(step))


@numpy_kernel("convolution_2d_data_gradient", "convolution_3d_data_gradient",
              "depthwise_convolution_3d_data_gradient", fresh=True)
def _conv_data_grad(step):
    return data_gradient_kernel(*setup(step))


@numpy_kernel("convolution_2d_weights_gradient", "convolution_3d_weights_gradient",
              "depthwise_convolution_3d_weights_gradient", fresh=True)
def _conv_weights_grad(step):
    return weights_gradient_kernel(*setup(step))


# ------------------------------------------------------------------ convolution transpose
# T(x, W) = D(x, W), TD(g, W) = F(g, W), TW(g, x) = G(incoming=x, source=g) over the forward
# convolution's geometry (ops/convolution_transpose.py)
def _transpose_setup(step) -> tuple:
    out_dt = step.out_types[0].dtype.np_dtype
    return transpose_geometry(step), out_dt, compute_dtype(out_dt)


@numpy_kernel("convolution_transpose_2d", fresh=True)
def _transpose(step):
    return data_gradient_kernel(*_transpose_setup(step))


@numpy_kernel("convolution_transpose_2d_data_gradient", fresh=True)
def _transpose_data_grad(step):
    return forward_kernel(*_transpose_setup(step))


@numpy_kernel("convolution_transpose_2d_weights_gradient", fresh=True)
def _transpose_weights_grad(step):
    run = weights_gradient_kernel(*_transpose_setup(step))
    return lambda dy, x: run(x, dy)
