"""Scans (MPSGraphCumulativeOps): running sums, products, maxima and minima along one axis,
inclusive or exclusive, forward or reverse."""
from __future__ import annotations

from typing import Optional

import numpy as np

from ..descriptors import ScatterMode
from ..errors import DTypeError, ShapeError
from ..types import int32
from ._dynamic import ones_like, zeros_like
from ._util import normalize_axes
from .reduction import _one_axis
from .registry import defop, gradient


def _infer_cumulative(in_types, attrs):
    t = in_types[0]
    _one_axis(attrs["axis"])
    normalize_axes(attrs["axis"], len(t.shape), "axis")
    for flag in ("exclusive", "reverse"):
        if not isinstance(attrs[flag], (bool, np.bool_)):
            raise ShapeError(f"{flag} must be True or False, got {attrs[flag]!r}")
    if t.dtype.is_bool:
        raise DTypeError("is not defined for bool tensors; cast to int32 or a float type first")
    return [t]


@defop("cumulative_sum", swift="cumulativeSum(_:axis:exclusive:reverse:name:)",
       objc="cumulativeSumWithTensor:axis:exclusive:reverse:name:", inputs=("tensor",),
       infer=_infer_cumulative, family="cumulative", attrs=("axis", "exclusive", "reverse"),
       since=("13.0", "16.0"))
def cumulative_sum(g, tensor, axis: int, exclusive: bool = False, reverse: bool = False,
                   name: Optional[str] = None):
    """Running sum along ``axis``: ``y[i] = x[0] + ... + x[i]``. ``exclusive`` leaves out ``x[i]``
    itself (``y[0] = 0``); ``reverse`` sums from the end (``y[i] = x[i] + ... + x[n-1]``)
    (MPSGraph ``cumulativeSum(_:axis:exclusive:reverse:name:)``)."""
    tensor = g.as_tensor(tensor, f"cumulative_sum op {name or 'cumulative_sum'!r}")
    return g.add_op("cumulative_sum", [tensor], _attrs(axis, exclusive, reverse), name).output


@gradient("cumulative_sum")
def _cumulative_sum_gradient(g, op, dy, wanted):
    """Each x[j] is added into the outputs that come after it (or before it, reversed), so its
    gradient is the same scan of dy run the other way."""
    x = op.inputs[0]
    if not x.dtype.is_floating:
        return [None]
    a = op.attrs
    return [g.cumulative_sum(dy, a["axis"], exclusive=a["exclusive"], reverse=not a["reverse"])]


def _attrs(axis, exclusive, reverse) -> dict:
    return {"axis": int(axis) if isinstance(axis, np.integer) else axis,
            "exclusive": bool(exclusive) if isinstance(exclusive, np.bool_) else exclusive,
            "reverse": bool(reverse) if isinstance(reverse, np.bool_) else reverse}


@defop("cumulative_product", swift="cumulativeProduct(_:axis:exclusive:reverse:name:)",
       objc="cumulativeProductWithTensor:axis:exclusive:reverse:name:", inputs=("tensor",),
       infer=_infer_cumulative, family="cumulative", attrs=("axis", "exclusive", "reverse"),
       since=("13.0", "16.0"))
def cumulative_product(g, tensor, axis: int, exclusive: bool = False, reverse: bool = False,
                       name: Optional[str] = None):
    """Running product along ``axis``: ``y[i] = x[0] * ... * x[i]``; ``exclusive`` leaves out
    ``x[i]`` (``y[0] = 1``, the identity), ``reverse`` runs from the end; integers wrap (MPSGraph
    ``cumulativeProduct(_:axis:exclusive:reverse:name:)``,
    https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraph/cumulativeproduct(_:axis:exclusive:reverse:name:)).

    The gradient is exact at zeros (no division by a zero, as in ``torch.cumprod``): see
    docs/reduction.md.
    """
    tensor = g.as_tensor(tensor, f"cumulative_product op {name or 'cumulative_product'!r}")
    return g.add_op("cumulative_product", [tensor], _attrs(axis, exclusive, reverse), name).output


@defop("cumulative_maximum", swift="cumulativeMaximum(_:axis:exclusive:reverse:name:)",
       objc="cumulativeMaximumWithTensor:axis:exclusive:reverse:name:", inputs=("tensor",),
       infer=_infer_cumulative, family="cumulative", attrs=("axis", "exclusive", "reverse"),
       since=("13.0", "16.0"))
def cumulative_maximum(g, tensor, axis: int, exclusive: bool = False, reverse: bool = False,
                       name: Optional[str] = None):
    """Running maximum along ``axis``: ``y[i] = max(x[0], ..., x[i])``, with MPSGraph's
    NaN-ignoring ``maximum``, so ``y[i]`` is ``reduction_maximum`` of the prefix (a prefix of only
    NaN gives -inf). ``exclusive`` starts from the type's lowest value (Apple), -inf for floats
    and the minimum for integers; ``reverse`` runs from the end (MPSGraph
    ``cumulativeMaximum(_:axis:exclusive:reverse:name:)``,
    https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraph/cumulativemaximum(_:axis:exclusive:reverse:name:)).

    The gradient goes to the element that holds the running maximum; among equal values the one
    the scan reached last (``torch.cummax``'s index).
    """
    tensor = g.as_tensor(tensor, f"cumulative_maximum op {name or 'cumulative_maximum'!r}")
    return g.add_op("cumulative_maximum", [tensor], _attrs(axis, exclusive, reverse), name).output


@defop("cumulative_minimum", swift="cumulativeMinimum(_:axis:exclusive:reverse:name:)",
       objc="cumulativeMinimumWithTensor:axis:exclusive:reverse:name:", inputs=("tensor",),
       infer=_infer_cumulative, family="cumulative", attrs=("axis", "exclusive", "reverse"),
       since=("13.0", "16.0"))
def cumulative_minimum(g, tensor, axis: int, exclusive: bool = False, reverse: bool = False,
                       name: Optional[str] = None):
    """Running minimum along ``axis`` with the NaN-ignoring ``minimum`` (a prefix of only NaN
    gives +inf); ``exclusive`` starts from the type's highest value (+inf for floats), ``reverse``
    runs from the end (MPSGraph ``cumulativeMinimum(_:axis:exclusive:reverse:name:)``,
    https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraph/cumulativeminimum(_:axis:exclusive:reverse:name:)).
    The gradient goes to the element holding the running minimum, the last one reached on ties.
    """
    tensor = g.as_tensor(tensor, f"cumulative_minimum op {name or 'cumulative_minimum'!r}")
    return g.add_op("cumulative_minimum", [tensor], _attrs(axis, exclusive, reverse), name).output


@gradient("cumulative_product")
def _cumulative_product_gradient(g, op, dy, wanted):
    """``dx[j] = sum over later i of dy[i] * (the product of y[i]'s factors but x[j])``. Before the
    first zero (in scan order) that is ``S(dy * y) / x[j]``, ``S`` the sum scan run the other way;
    at the first zero it is ``S(dy * Y(x'))`` with that zero replaced by 1 in ``x'``; after it, 0."""
    x = op.inputs[0]
    if not x.dtype.is_floating:
        return [None]
    a = op.attrs
    axis, exclusive, reverse = a["axis"], a["exclusive"], a["reverse"]
    zero, one = g.constant(np.asarray(0, x.dtype.np_dtype)), g.constant(np.asarray(1, x.dtype.np_dtype))
    is_zero = g.equal(x, zero)
    zeros_so_far = g.cumulative_sum(g.cast(is_zero, x.dtype), axis, reverse=reverse)
    before = g.equal(zeros_so_far, zero)
    first = g.logical_and(is_zero, g.equal(zeros_so_far, one))

    def back(v):
        return g.cumulative_sum(v, axis, exclusive=exclusive, reverse=not reverse)

    part_before = g.division(back(g.multiplication(dy, op.output)), g.select(before, x, one))
    y_skip = g.cumulative_product(g.select(first, one, x), axis, exclusive=exclusive, reverse=reverse)
    part_first = back(g.multiplication(dy, y_skip))
    return [g.select(before, part_before, g.select(first, part_first, zero))]


def _extremum_gradient(highest: bool):
    def rule(g, op, dy, wanted):
        """``dy[i]`` goes to the element holding ``y[i]``: the last element, in scan order, at
        least (at most) every one before it, found by a running maximum of such positions (a
        minimum when reversed), and added there with a scatter; a prefix of only NaN has none
        (its index is out of range and the scatter skips it)."""
        x = op.inputs[0]
        if not x.dtype.is_floating:
            return [None]
        a = op.attrs
        axis, exclusive, reverse = a["axis"], a["exclusive"], a["reverse"]
        scan = g.cumulative_maximum if highest else g.cumulative_minimum
        inclusive = scan(x, axis, reverse=reverse) if exclusive else op.output
        holds = g.equal(x, inclusive)  # x[j] is the running extreme at j (NaN never is)
        pos = g.cumulative_sum(g.cast(ones_like(g, x), int32), axis, exclusive=True)
        none = g.constant(np.asarray(np.iinfo(np.int32).max if reverse else np.iinfo(np.int32).min, np.int32))
        marked = g.select(holds, pos, none)
        where = (g.cumulative_minimum if reverse else g.cumulative_maximum)(marked, axis, exclusive=exclusive,
                                                                             reverse=reverse)
        return [g.scatter_along_axis(dy, where, zeros_like(g, x), axis, ScatterMode.ADD)]
    return rule


gradient("cumulative_maximum")(_extremum_gradient(True))
gradient("cumulative_minimum")(_extremum_gradient(False))
