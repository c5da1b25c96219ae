"""Gradient-rule helpers for dynamic (-1) dimensions: sizes known only when the graph runs.

A rule may not read a count off a shape that holds -1 (``-1 * 4`` is no batch size), nor build a
constant or a broadcast of that shape. These helpers build, from the tensor itself, the ones and
counts that the run fills in; with a static shape they give the plain constant or number.
"""
from __future__ import annotations

from typing import Sequence, Union

from ..types import is_static


def _ones_small(g, x, keep: Sequence[int]):
    """Ones of ``x``'s dtype, shaped as ``x`` with every axis not in ``keep`` sliced to length 1.

    ``equal(v, v) or not_equal(v, v)`` is true for every value, NaN and inf included, so the
    ones come from ``x``'s (sliced, small) elements without depending on their values.
    """
    t = g.stop_gradient(x)
    for i, d in enumerate(x.shape):
        if i not in keep and d != 1:
            t = g.slice(t, i, 0, 1)
    return g.addition(g.cast(g.equal(t, t), x.dtype), g.cast(g.not_equal(t, t), x.dtype))


def ones_like(g, x):
    """Ones of ``x``'s shape and dtype, whether its shape is static or dynamic."""
    if is_static(x.shape):
        return g.constant(1.0, dtype=x.dtype, shape=x.shape)
    dyn = [i for i, d in enumerate(x.shape) if d == -1]
    small = _ones_small(g, x, dyn)
    static = [1 if d == -1 else d for d in x.shape]
    return small if all(d == 1 for d in static) else g.multiplication(small, g.constant(1.0, dtype=x.dtype, shape=static))


def zeros_like(g, x):
    """Zeros of ``x``'s shape and dtype, whether its shape is static or dynamic."""
    if is_static(x.shape):
        return g.constant(0.0, dtype=x.dtype, shape=x.shape)
    return g.multiplication(ones_like(g, x), g.constant(0.0, dtype=x.dtype))


def broadcast_like(g, t, like):
    """``t`` broadcast to the shape of ``like`` (``g.broadcast`` when that shape is static)."""
    if is_static(like.shape):
        return g.broadcast(t, like.shape)
    return g.multiplication(t, ones_like(g, like))


def element_count(g, x, axes: Sequence[int]) -> Union[float, object]:
    """How many elements of ``x`` the (normalized) ``axes`` span: a number when they are static,
    else a tensor of ``x``'s rank with every dimension 1, computed when the graph runs."""
    static = 1.0
    for a in axes:
        if x.shape[a] != -1:
            static *= x.shape[a]
    dyn = [a for a in axes if x.shape[a] == -1]
    if not dyn or static == 0:
        return static
    count = g.reduction_sum(_ones_small(g, x, dyn), axes=dyn)
    return count if static == 1 else g.multiplication(count, static)
