"""Scans (MPSGraphCumulativeOps): running sums along one axis, inclusive or exclusive, forward or
reverse."""
from __future__ import annotations

from typing import Optional

import numpy as np

from ..errors import DTypeError, ShapeError
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
    if isinstance(axis, np.integer):
        axis = int(axis)
    attrs = {"axis": axis, "exclusive": bool(exclusive) if isinstance(exclusive, np.bool_) else exclusive,
             "reverse": bool(reverse) if isinstance(reverse, np.bool_) else reverse}
    return g.add_op("cumulative_sum", [tensor], attrs, name).output


@gradient("cumulative_sum")
def _cumulative_sum_gradient(g, op, dy, wanted):
    """Each x[j] is added into the outputs that come after it (or before it, reversed), so its
    gradient is the same scan of dy run the other way."""
    x = op.inputs[0]
    if not x.dtype.is_floating:
        return [None]
    a = op.attrs
    return [g.cumulative_sum(dy, a["axis"], exclusive=a["exclusive"], reverse=not a["reverse"])]
