"""NumPy kernels for padding and data movement: pad_tensor, pad_gradient, tile, tile_gradient,
split, stack, flatten_2d, reverse, and the space/depth/batch rearrangements (semantics:
ops/padding.py, ops/movement.py, ops/space.py).

A pad is one gather per axis with the axis's index map (``ops.padding.axis_map``); its gradient
is the matching scatter-add per axis, so reflected, clamped and periodic positions add up.
"""
from __future__ import annotations

import numpy as np

from ...ops._util import normalize_axes
from ...ops.padding import axis_map, fill_value
from ...ops.space import copy_plan
from .registry import numpy_kernel


def _maps(step, shape):
    a = step.attrs
    return [axis_map(a["padding_mode"], n, lo, hi) for n, lo, hi in zip(shape, a["left_padding"], a["right_padding"])]


@numpy_kernel("pad_tensor")
def _pad(step):
    dt = step.out_types[0].dtype.np_dtype
    fill = fill_value(step.attrs["padding_mode"], step.attrs["constant_value"], dt)
    maps = _maps(step, step.in_types[0].shape)

    def run(x):
        y = np.asarray(x)
        for d, (idx, sign) in enumerate(maps):
            inside = idx >= 0
            if y.shape[d] == 0:  # an empty axis: every position is the constant
                y = np.full(y.shape[:d] + (idx.size,) + y.shape[d + 1:], fill, dt)
                continue
            y = np.take(y, np.where(inside, idx, 0), axis=d)
            view = [1] * y.ndim
            view[d] = idx.size
            if not inside.all():
                y = np.where(inside.reshape(view), y, fill)
            if (sign < 0).any():
                y = y * sign.reshape(view).astype(dt)
        return np.asarray(y, dtype=dt)
    return run


@numpy_kernel("pad_gradient")
def _pad_grad(step):
    dt = step.out_types[0].dtype.np_dtype
    shape = step.out_types[0].shape
    maps = _maps(step, shape)

    def run(dy, _source):
        g = np.asarray(dy)
        for d, (idx, sign) in enumerate(maps):
            keep = idx >= 0
            moved = np.moveaxis(g, d, 0)[keep]
            view = [-1] + [1] * (moved.ndim - 1)
            moved = moved * sign[keep].reshape(view).astype(dt)
            acc = np.zeros((shape[d],) + moved.shape[1:], dt)
            np.add.at(acc, idx[keep], moved)
            g = np.moveaxis(acc, 0, d)
        return np.ascontiguousarray(g, dtype=dt)
    return run


@numpy_kernel("tile")
def _tile(step):
    m = tuple(step.attrs["multiplier"])
    return lambda x: np.tile(x, m) if m else np.array(x, copy=True)


@numpy_kernel("tile_gradient")
def _tile_grad(step):
    m = step.attrs["multiplier"]
    shape = step.out_types[0].shape
    dt = step.out_types[0].dtype.np_dtype

    def run(dy, _source):
        split = [v for k, n in zip(m, shape) for v in (k, n)]
        return np.asarray(dy).reshape(split).sum(axis=tuple(range(0, 2 * len(m), 2)), dtype=dt).reshape(shape)
    return run


@numpy_kernel("split")
def _split(step):
    axis = step.attrs["axis"]
    d = axis % len(step.in_types[0].shape)
    cuts = np.cumsum([t.shape[d] for t in step.out_types])[:-1]
    if len(step.out_types) == 1:  # one output: the kernel returns it, not a tuple
        return lambda x: x
    return lambda x: tuple(np.split(x, cuts, axis=axis))


@numpy_kernel("stack")
def _stack(step):
    d = step.attrs["axis"]
    return lambda *xs: np.stack(np.broadcast_arrays(*xs), axis=d)


@numpy_kernel("flatten_2d")
def _flatten(step):
    shape = step.out_types[0].shape
    return lambda x: x.reshape(shape)


@numpy_kernel("reverse")
def _reverse(step):
    axes = normalize_axes(step.attrs["axes"], len(step.in_types[0].shape))
    return lambda x: np.flip(x, axis=axes) if axes else x


def _space_copy(step):
    split, perm, out = copy_plan(step.type, step.attrs, step.in_types[0].shape)
    return lambda x: np.ascontiguousarray(np.asarray(x).reshape(split).transpose(perm)).reshape(out)


for _t in ("space_to_depth_2d", "depth_to_space_2d", "space_to_batch", "batch_to_space"):
    numpy_kernel(_t)(_space_copy)
