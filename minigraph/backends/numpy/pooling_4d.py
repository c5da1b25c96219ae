"""NumPy kernels for 4-D pooling, max pooling with indices and the gradients from indices
(semantics: ops/pooling_4d.py).

The source is viewed as ``[B, N0, N1, N2, N3]`` (B: the leading axes), padded per axis so every
tap of every window is an index; the loops run over the window's taps in row-major order, each
a strided view ``[B, O0, O1, O2, O3]``. ``inside`` masks say which taps land in the source, so
padding never takes part in a maximum. Max-pooling gradients go through each window's chosen
tap (its argmax, or the tap its index names; -1 for none).
"""
from __future__ import annotations

import itertools

import numpy as np

from ...descriptors import PoolingReturnIndicesMode
from ...ops.pooling_4d import Window, covered_axes, is_local, window_of
from .conv import compute_dtype
from .registry import numpy_kernel


def _window(step) -> Window:
    """The window of the step's op: over its ``output_shape`` (gradients from indices) or its source."""
    return window_of(step.attrs["descriptor"], step.attrs.get("output_shape") or step.in_types[-1].shape)


def _padded_shape(w: Window) -> tuple:
    return tuple(max(n + b + a, (o - 1) * s + (k - 1) * d + 1) for n, b, a, o, s, k, d in zip(
        w.input_size, w.before, w.after, w.output, w.strides, w.kernel, w.dilations))


def _pad(w: Window, x: np.ndarray, fill, dtype) -> np.ndarray:
    xp = np.full((w.batch,) + _padded_shape(w), fill, dtype)
    xp[(slice(None),) + tuple(slice(b, b + n) for b, n in zip(w.before, w.input_size))] = \
        x.reshape((w.batch,) + w.input_size)
    return xp


def _crop(w: Window, xp: np.ndarray) -> np.ndarray:
    return xp[(slice(None),) + tuple(slice(b, b + n) for b, n in zip(w.before, w.input_size))]


def _taps(w: Window):
    """``(flat tap, tap multi-index, view index)`` in row-major tap order."""
    for t, i in enumerate(itertools.product(*(range(k) for k in w.kernel))):
        yield t, i, (slice(None),) + tuple(slice(ia * d, ia * d + (o - 1) * s + 1, s) for ia, d, o, s in zip(
            i, w.dilations, w.output, w.strides))


def _positions(w: Window, axis: int) -> np.ndarray:
    """``[kernel, out]``: the source position of tap i of window o along one axis."""
    return (np.arange(w.output[axis])[None, :] * w.strides[axis]
            + np.arange(w.kernel[axis])[:, None] * w.dilations[axis] - w.before[axis])


def _inside(w: Window, axis: int, with_padding: bool = False) -> np.ndarray:
    pos = _positions(w, axis)
    lo, hi = (-w.before[axis], w.input_size[axis] + w.after[axis]) if with_padding else (0, w.input_size[axis])
    return (pos >= lo) & (pos < hi)


def _tap_mask(inside, i) -> np.ndarray:
    m = inside[0][i[0]][:, None, None, None] & inside[1][i[1]][None, :, None, None]
    return m & inside[2][i[2]][None, None, :, None] & inside[3][i[3]][None, None, None, :]


def _outer(vectors) -> np.ndarray:
    a, b, c, d = vectors
    return a[:, None, None, None] * b[None, :, None, None] * c[None, None, :, None] * d[None, None, None, :]


def max_and_arg(w: Window, x: np.ndarray):
    """Per window its maximum and the flat tap of its first maximal element (NaN maximal)."""
    xp = _pad(w, x, -np.inf, x.dtype)
    inside = [_inside(w, a) for a in range(4)]
    best = np.full((w.batch,) + w.output, -np.inf, x.dtype)
    arg = np.full(best.shape, -1, np.int64)
    for t, i, idx in _taps(w):
        v = xp[idx]
        take = _tap_mask(inside, i) & ((arg < 0) | (v > best) | (np.isnan(v) & ~np.isnan(best)))
        best = np.where(take, v, best)
        arg = np.where(take, t, arg)
    return best, arg


def encode(w: Window, arg: np.ndarray, mode: PoolingReturnIndicesMode) -> np.ndarray:
    """The index of ``mode`` of each window's chosen flat tap."""
    n = covered_axes(mode)
    taps = np.unravel_index(np.maximum(arg, 0), w.kernel)
    if is_local(mode):
        coords, sizes = taps, w.kernel
    else:
        grids = np.meshgrid(*(np.arange(o) for o in w.output), indexing="ij")
        coords = tuple(g[None] * s - b + t * d for g, s, b, t, d in zip(grids, w.strides, w.before, taps, w.dilations))
        sizes = w.input_size
    index = np.zeros(arg.shape, np.int64)
    for a in range(4 - n, 4):
        index = index * sizes[a] + coords[a]
    return index


def decode(w: Window, index: np.ndarray, mode: PoolingReturnIndicesMode) -> np.ndarray:
    """The flat tap each index names within its own window, -1 where it names none inside the source."""
    n = covered_axes(mode)
    index = index.astype(np.int64).reshape((w.batch,) + w.output)
    sizes = w.kernel if is_local(mode) else w.input_size
    ok = (index >= 0) & (index < int(np.prod(sizes[4 - n:])))
    rest = np.where(ok, index, 0)
    coords = [np.zeros(index.shape, np.int64) for _ in range(4)]
    for a in range(3, 3 - n, -1):
        coords[a] = rest % sizes[a]
        rest = rest // sizes[a]
    grids = np.meshgrid(*(np.arange(o) for o in w.output), indexing="ij")
    tap = np.zeros(index.shape, np.int64)
    for a in range(4):
        start = grids[a][None] * w.strides[a] - w.before[a]
        if is_local(mode) or a < 4 - n:
            i = coords[a] if a >= 4 - n else np.zeros(index.shape, np.int64)
            pos = start + i * w.dilations[a]
        else:
            pos = coords[a]
            off = pos - start
            i = off // w.dilations[a]
            ok &= off % w.dilations[a] == 0
        ok &= (i >= 0) & (i < w.kernel[a]) & (pos >= 0) & (pos < w.input_size[a])
        tap = tap * w.kernel[a] + i
    return np.where(ok, tap, -1)


def scatter_taps(w: Window, arg: np.ndarray, dy: np.ndarray, acc) -> np.ndarray:
    """``[B, N0..N3]``: each window's gradient added to the element of its chosen tap."""
    dyc = dy.reshape(arg.shape).astype(acc, copy=False)
    dxp = np.zeros((w.batch,) + _padded_shape(w), acc)
    for t, _, idx in _taps(w):
        hit = arg == t
        if hit.any():
            dxp[idx] += np.where(hit, dyc, 0)
    return _crop(w, dxp)


def _sum(w: Window, x: np.ndarray, acc, square: bool = False) -> np.ndarray:
    xp = _pad(w, x.astype(acc, copy=False), 0, acc)
    s = np.zeros((w.batch,) + w.output, acc)
    for _, _, idx in _taps(w):
        v = xp[idx]
        s += v * v if square else v
    return s


def _divisor(w: Window, include_pad: bool, acc) -> np.ndarray:
    return _outer([_inside(w, a, include_pad).sum(axis=0).astype(acc) for a in range(4)])


def _spread(w: Window, share: np.ndarray, acc) -> np.ndarray:
    """``[B, N0..N3]``: the sum, over the windows holding each element, of their ``share``."""
    dxp = np.zeros((w.batch,) + _padded_shape(w), acc)
    for _, _, idx in _taps(w):
        dxp[idx] += share
    return _crop(w, dxp)


def _out(w: Window, y: np.ndarray, shape, dtype) -> np.ndarray:
    return np.ascontiguousarray(y.reshape(shape), dtype=dtype)


@numpy_kernel("max_pooling_4d", fresh=True)
def _max(step):
    w, dt = _window(step), step.out_types[0].dtype.np_dtype

    def run(x):
        return _out(w, max_and_arg(w, x)[0], w.result_shape, dt)
    return run


def _return_indices(step):
    w, dt = _window(step), step.out_types[0].dtype.np_dtype
    mode = step.attrs["descriptor"].return_indices_mode

    def run(x):
        y, arg = max_and_arg(w, x)
        return _out(w, y, w.result_shape, dt), _out(w, encode(w, arg, mode), w.result_shape, np.int32)
    return run


numpy_kernel("max_pooling_2d_return_indices", fresh=True)(_return_indices)
numpy_kernel("max_pooling_4d_return_indices", fresh=True)(_return_indices)


@numpy_kernel("avg_pooling_4d", fresh=True)
def _avg(step):
    w, dt = _window(step), step.out_types[0].dtype.np_dtype
    acc = compute_dtype(dt)
    div = _divisor(w, step.attrs["descriptor"].include_zero_pad_to_average, acc)

    def run(x):
        return _out(w, _sum(w, x, acc) / div, w.result_shape, dt)
    return run


@numpy_kernel("l2_norm_pooling_4d", fresh=True)
def _l2(step):
    w, dt = _window(step), step.out_types[0].dtype.np_dtype
    acc = compute_dtype(dt)

    def run(x):
        return _out(w, np.sqrt(_sum(w, x, acc, square=True)), w.result_shape, dt)
    return run


@numpy_kernel("max_pooling_4d_gradient", fresh=True)
def _max_grad(step):
    w, dt = _window(step), step.out_types[0].dtype.np_dtype
    acc = compute_dtype(dt)

    def run(dy, x):
        return _out(w, scatter_taps(w, max_and_arg(w, x)[1], dy, acc), w.source_shape, dt)
    return run


@numpy_kernel("avg_pooling_4d_gradient", fresh=True)
def _avg_grad(step):
    w, dt = _window(step), step.out_types[0].dtype.np_dtype
    acc = compute_dtype(dt)
    div = _divisor(w, step.attrs["descriptor"].include_zero_pad_to_average, acc)

    def run(dy, x):
        share = dy.reshape((w.batch,) + w.output).astype(acc, copy=False) / div
        return _out(w, _spread(w, share, acc), w.source_shape, dt)
    return run


@numpy_kernel("l2_norm_pooling_4d_gradient", fresh=True)
def _l2_grad(step):
    w, dt = _window(step), step.out_types[0].dtype.np_dtype
    acc = compute_dtype(dt)

    def run(dy, x):
        y = np.sqrt(_sum(w, x, acc, square=True))
        dyc = dy.reshape(y.shape).astype(acc, copy=False)
        with np.errstate(divide="ignore", invalid="ignore"):
            share = np.where(y > 0, dyc / np.where(y > 0, y, 1), 0)
        s = _spread(w, share.astype(acc), acc)
        return _out(w, x.reshape(s.shape).astype(acc, copy=False) * s, w.source_shape, dt)
    return run


def _grad_indices(step):
    w, dt = _window(step), step.out_types[0].dtype.np_dtype
    acc = compute_dtype(dt)
    mode = step.attrs["descriptor"].return_indices_mode

    def run(dy, indices):
        return _out(w, scatter_taps(w, decode(w, indices, mode), dy, acc), w.source_shape, dt)
    return run


numpy_kernel("max_pooling_2d_gradient_with_indices", fresh=True)(_grad_indices)
numpy_kernel("max_pooling_4d_gradient_with_indices", fresh=True)(_grad_indices)
