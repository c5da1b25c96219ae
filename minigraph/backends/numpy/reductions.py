"""NumPy kernels of the product, logical and arg reductions, the scans, top-k and the
sorts (semantics: ops/reduction.py, ops/cumulative.py, ops/sort.py).

One order for the sorts and top-k: NaN is larger than every number, equal elements keep their
index order. NumPy's stable argsort puts NaN last; a descending order with the lower index first
among equals is the stable ascending order of the reversed row, reversed back.
"""
from __future__ import annotations

import numpy as np

from ...ops._util import normalize_axes
from .registry import numpy_kernel


def _axes(step) -> tuple:
    return normalize_axes(step.attrs["axes"], len(step.in_types[0].shape))


def _axis(step) -> int:
    return normalize_axes(step.attrs["axis"], len(step.in_types[0].shape), "axis")[0]


@numpy_kernel("reduction_product")
def _product(step):
    """Floats multiply in float64 and round once (the webgpu kernel's f32 tree stays close to
    that); integers wrap."""
    axes = _axes(step)
    dt = step.out_types[0].dtype.np_dtype
    acc = np.float64 if dt.kind == "f" else dt
    return lambda x: np.asarray(np.prod(x, axis=axes, keepdims=True, dtype=acc), dtype=dt)


def _logical(fn):
    def factory(step):
        axes = _axes(step)
        return lambda x: np.asarray(fn(x != 0, axis=axes, keepdims=True), dtype=np.bool_)  # NaN != 0
    return factory


numpy_kernel("reduction_and")(_logical(np.all))
numpy_kernel("reduction_or")(_logical(np.any))


def _arg(highest: bool):
    """MPSGraph's reductionArgMaximum/Minimum skip NaN, as reduction_maximum/minimum do (so
    ``x[argmax(x)]`` is their result); a slice of only NaN gives -1, ties the first index."""
    def factory(step):
        axis = _axis(step)
        fn = np.argmax if highest else np.argmin  # the first extreme (for floats, the first NaN)
        fill = -np.inf if highest else np.inf

        def run(x):
            if x.dtype.kind != "f":
                return np.expand_dims(fn(x, axis=axis), axis).astype(np.int32)
            nan = np.isnan(x)
            # NaN replaced by the value that loses every comparison; among equal values (fill
            # itself, -inf for the maximum) argmax still picks the first, whose index then stands
            at = fn(np.where(nan, fill, x), axis=axis)
            # a fill chosen at a NaN position: the first non-NaN at -inf (+inf), if any, else -1
            picked_nan = np.take_along_axis(nan, np.expand_dims(at, axis), axis).squeeze(axis)
            if picked_nan.any():
                keep = ~nan & (x == fill)
                first = np.argmax(keep, axis=axis)
                at = np.where(picked_nan, np.where(keep.any(axis=axis), first, -1), at)
            return np.expand_dims(at, axis).astype(np.int32)
        return run
    return factory


numpy_kernel("reduction_arg_maximum")(_arg(True))
numpy_kernel("reduction_arg_minimum")(_arg(False))


def _scan(step, combine, identity):
    """An in-order scan along the op's axis, ``exclusive`` starting from ``identity(dtype)``."""
    axis = _axis(step)
    exclusive, reverse = bool(step.attrs["exclusive"]), bool(step.attrs["reverse"])
    dt = step.out_types[0].dtype.np_dtype
    acc = np.float32 if dt == np.float16 else dt

    def run(x):
        v = np.moveaxis(x, axis, -1)
        if reverse:
            v = v[..., ::-1]
        y = combine(v.astype(acc, copy=False))
        if exclusive:
            shifted = np.full_like(y, identity(acc))
            shifted[..., 1:] = y[..., :-1]
            y = shifted
        if reverse:
            y = y[..., ::-1]
        return np.ascontiguousarray(np.moveaxis(y, -1, axis), dtype=dt)
    return run


def _lowest(dt):
    return -np.inf if np.dtype(dt).kind == "f" else np.iinfo(dt).min


def _highest(dt):
    return np.inf if np.dtype(dt).kind == "f" else np.iinfo(dt).max


def _skip_nan(ufunc, start):
    """A running max / min that skips NaN: NaN replaced by the value that loses every comparison."""
    def combine(v):
        if v.dtype.kind == "f":
            v = np.where(np.isnan(v), start(v.dtype), v)
        return ufunc.accumulate(v, axis=-1) if v.shape[-1] else v.copy()
    return combine


@numpy_kernel("cumulative_sum")
def _cumulative_sum(step):
    """An in-order running sum in the tensor's dtype (float16 in float32, rounded once)."""
    return _scan(step, lambda v: np.cumsum(v, axis=-1, dtype=v.dtype), lambda dt: 0)


@numpy_kernel("cumulative_product")
def _cumulative_product(step):
    """An in-order running product in the tensor's dtype (float16 in float32); integers wrap."""
    return _scan(step, lambda v: np.cumprod(v, axis=-1, dtype=v.dtype), lambda dt: 1)


@numpy_kernel("cumulative_maximum")
def _cumulative_maximum(step):
    """The running NaN-ignoring maximum; exclusive starts from -inf (the integer minimum)."""
    return _scan(step, _skip_nan(np.maximum, _lowest), _lowest)


@numpy_kernel("cumulative_minimum")
def _cumulative_minimum(step):
    """The running NaN-ignoring minimum; exclusive starts from +inf (the integer maximum)."""
    return _scan(step, _skip_nan(np.minimum, _highest), _highest)


def sort_indices(x: np.ndarray, axis: int, descending: bool) -> np.ndarray:
    """The stable order along ``axis``: NaN last ascending, first descending; ties by index."""
    if not descending:
        return np.argsort(x, axis=axis, kind="stable")
    n = x.shape[axis]
    back = np.argsort(np.flip(x, axis), axis=axis, kind="stable")
    return np.flip(n - 1 - back, axis)


def _sort(values: bool):
    def factory(step):
        axis = _axis(step)
        descending = bool(step.attrs["descending"])

        def run(x):
            idx = sort_indices(x, axis, descending)
            return np.take_along_axis(x, idx, axis) if values else idx.astype(np.int32)
        return run
    return factory


numpy_kernel("sort")(_sort(True))
numpy_kernel("arg_sort")(_sort(False))


def _first_k(step, descending: bool, axis=None):
    """(k, axis, the indices of the first k of the order along the axis)."""
    k = int(step.attrs["k"])
    rank = len(step.in_types[-1].shape)
    axis = rank - 1 if axis is None else normalize_axes(axis, rank, "axis")[0]

    def idx(x):
        return np.take(sort_indices(x, axis, descending), np.arange(k), axis=axis)
    return axis, idx


def _k_values(descending: bool, along_axis: bool):
    def factory(step):
        axis, first = _first_k(step, descending, step.attrs["axis"] if along_axis else None)

        def run(x):
            idx = first(x)
            return np.take_along_axis(x, idx, axis), idx.astype(np.int32)
        return run
    return factory


def _k_gradient(descending: bool, along_axis: bool):
    def factory(step):
        axis, first = _first_k(step, descending, step.attrs["axis"] if along_axis else None)
        dt = step.out_types[0].dtype.np_dtype

        def run(dy, x):
            dx = np.zeros(x.shape, dt)
            np.put_along_axis(dx, first(x), dy.astype(dt, copy=False), axis)  # the k positions are distinct
            return dx
        return run
    return factory


numpy_kernel("top_k")(_k_values(True, False))
numpy_kernel("top_k_gradient")(_k_gradient(True, False))
numpy_kernel("top_k_axis")(_k_values(True, True))
numpy_kernel("top_k_axis_gradient")(_k_gradient(True, True))
numpy_kernel("bottom_k")(_k_values(False, True))
numpy_kernel("bottom_k_gradient")(_k_gradient(False, True))
