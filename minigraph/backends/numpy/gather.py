"""NumPy kernels of gather, gather_along_axis, gather_nd, scatter_along_axis, scatter, scatter_nd, their
forms onto data (scatter_with_data, scatter_nd_with_data) and
one_hot (semantics: ops/gather.py).

Every kernel maps coordinates: a gather computes, for each result element, the flat position it
reads in ``updates`` (or none: the index is out of range, the result is 0); a scatter computes,
for each update in row-major order, the flat position it combines into (or none: skipped), then
applies them in that order with ``ufunc.at``, which is sequential, so collisions accumulate in
the order the webgpu kernels use. float16 scatters compute in float32 and round once.
``scatter`` and ``scatter_nd`` combine from the mode's identity, then set every element no
update reached to 0 (Apple: "slices not set by indices are set to 0").
"""
from __future__ import annotations

import numpy as np

from ...descriptors import ScatterMode
from ...ops.gather import identity
from .registry import numpy_kernel

_UFUNC = {ScatterMode.ADD: np.add, ScatterMode.SUB: np.subtract, ScatterMode.MUL: np.multiply,
          ScatterMode.DIV: np.true_divide, ScatterMode.MIN: np.minimum, ScatterMode.MAX: np.maximum}


def wrap(idx: np.ndarray, n) -> tuple[np.ndarray, np.ndarray]:
    """(index made non-negative, in range): ``-n <= i < 0`` counts from the end; others are out."""
    idx = np.asarray(idx).astype(np.int64)
    n = np.asarray(n, np.int64)
    valid = (idx >= -n) & (idx < n)
    return np.where(valid, np.where(idx < 0, idx + n, idx), 0), valid


def _read(u: np.ndarray, coords: list, valid: np.ndarray, out_shape) -> np.ndarray:
    out = np.zeros(out_shape, u.dtype)
    if u.size and out.size:
        flat = np.ravel_multi_index(tuple(np.where(valid, c, 0) for c in coords), u.shape)
        out[...] = np.where(valid, u.reshape(-1)[flat], out)
    return out


def _combine(base: np.ndarray, flat: np.ndarray, valid: np.ndarray, upd: np.ndarray, mode: ScatterMode,
             zero_untouched: bool = False):
    """``base`` (a fresh array) with the updates combined at flat positions, in row-major order;
    with ``zero_untouched``, the elements no update reached are 0."""
    flat, vals = flat.reshape(-1)[valid.reshape(-1)], upd.reshape(-1)[valid.reshape(-1)]
    wide = base.astype(np.float32) if base.dtype == np.float16 else base
    view = wide.reshape(-1)
    if mode == ScatterMode.SET:
        if flat.size:
            last = flat.size - 1 - np.unique(flat[::-1], return_index=True)[1]  # the last write wins
            view[flat[last]] = vals[last]
    else:
        with np.errstate(all="ignore"):
            _UFUNC[mode].at(view, flat, vals.astype(wide.dtype, copy=False))
    if zero_untouched and view.size:
        untouched = np.ones(view.size, bool)
        untouched[flat] = False
        view[untouched] = 0
    return wide.astype(base.dtype) if wide is not base else wide


@numpy_kernel("gather")
def _gather(step):
    axis, b = step.attrs["axis"], step.attrs["batch_dimensions"]
    out_shape = step.out_types[0].shape

    def run(u, i):
        q = i.ndim - b
        c = list(np.indices(out_shape, sparse=True)) if out_shape else []
        idx, valid = wrap(i[tuple(c[:b]) + tuple(c[axis:axis + q])], u.shape[axis])
        return _read(u, c[:axis] + [idx] + c[axis + q:], valid, out_shape)
    return run


@numpy_kernel("gather_along_axis")
def _gather_along_axis(step):
    axis = step.attrs["axis"]

    def run(u, i):
        c = list(np.indices(i.shape, sparse=True))
        idx, valid = wrap(i, u.shape[axis])
        return _read(u, c[:axis] + [idx] + c[axis + 1:], valid, i.shape)
    return run


@numpy_kernel("gather_nd")
def _gather_nd(step):
    b = step.attrs["batch_dimensions"]
    out_shape = step.out_types[0].shape

    def run(u, i):
        k, qi = i.shape[-1], i.ndim - 1
        c = list(np.indices(out_shape, sparse=True)) if out_shape else []
        tup = i[tuple(c[:qi])] if qi else i.reshape((1,) * len(out_shape) + (k,))
        idx, valid = wrap(tup, u.shape[b:b + k])
        return _read(u, c[:b] + [idx[..., j] for j in range(k)] + c[qi:], valid.all(axis=-1), out_shape)
    return run


def _scatter_along(u, i, base, axis, mode, zero_untouched=False):
    c = list(np.indices(u.shape, sparse=True))
    idx, valid = wrap(i, base.shape[axis])
    coords = np.broadcast_arrays(*(c[:axis] + [idx] + c[axis + 1:]))
    flat = np.ravel_multi_index(tuple(coords), base.shape) if base.size else np.zeros(u.shape, np.int64)
    return _combine(base.copy(), flat, np.broadcast_to(valid, u.shape), u, mode, zero_untouched)


@numpy_kernel("scatter_along_axis")
def _scatter_along_axis(step):
    axis, mode = step.attrs["axis"], step.attrs["mode"]
    return lambda u, i, d: _scatter_along(u, i, d, axis, mode)


@numpy_kernel("scatter")
def _scatter(step):
    axis, mode, shape = step.attrs["axis"], step.attrs["mode"], step.out_types[0].shape
    dt = step.out_types[0].dtype.np_dtype

    def run(u, i):
        full = np.broadcast_to(i.reshape((1,) * axis + (-1,) + (1,) * (u.ndim - axis - 1)), u.shape)
        return _scatter_along(u, full, np.full(shape, identity(mode, dt), dt), axis, mode, True)
    return run


@numpy_kernel("scatter_with_data")
def _scatter_with_data(step):
    axis, mode = step.attrs["axis"], step.attrs["mode"]

    def run(d, u, i):
        full = np.broadcast_to(i.reshape((1,) * axis + (-1,) + (1,) * (u.ndim - axis - 1)), u.shape)
        return _scatter_along(u, full, d, axis, mode)
    return run


def _scatter_nd_onto(base, u, i, b, mode, zero_untouched):
    shape = base.shape
    k = i.shape[-1]
    idx, valid = wrap(i, shape[b:b + k])  # [..., K]
    lead = int(np.prod(i.shape[:-1], dtype=np.int64))
    rest = int(np.prod(shape[b + k:], dtype=np.int64))
    bt = np.indices(i.shape[:-1])[:b] if b else []
    cells = np.ravel_multi_index(tuple(bt) + tuple(idx[..., j] for j in range(k)), shape[:b + k]) \
        if base.size else np.zeros(i.shape[:-1], np.int64)
    flat = cells.reshape(lead, 1) * rest + np.arange(rest)
    ok = np.broadcast_to(valid.all(axis=-1).reshape(lead, 1), flat.shape)
    return _combine(base, flat, ok, u.reshape(lead, rest), mode, zero_untouched)


@numpy_kernel("scatter_nd_with_data")
def _scatter_nd_with_data(step):
    b, mode = step.attrs["batch_dimensions"], step.attrs["mode"]
    return lambda d, u, i: _scatter_nd_onto(np.array(d), u, i, b, mode, False)


@numpy_kernel("scatter_nd")
def _scatter_nd(step):
    b, mode, shape = step.attrs["batch_dimensions"], step.attrs["mode"], tuple(step.out_types[0].shape)
    dt = step.out_types[0].dtype.np_dtype

    def run(u, i):
        return _scatter_nd_onto(np.full(shape, identity(mode, dt), dt), u, i, b, mode, True)
    return run


@numpy_kernel("one_hot")
def _one_hot(step):
    a = step.attrs
    dt = step.out_types[0].dtype.np_dtype

    def run(i):
        hot = np.expand_dims(i.astype(np.int64), a["axis"])
        pos = np.arange(a["depth"]).reshape((-1,) + (1,) * (i.ndim - a["axis"]))
        return np.where(hot == pos, np.asarray(a["on_value"]).astype(dt), np.asarray(a["off_value"]).astype(dt))
    return run
