"""Top-k and sorting (MPSGraphTopKOps, MPSGraphSortOps).

One order for all of them: ascending puts NaN last (NumPy's rule), descending puts NaN first,
and equal elements keep their original order (a stable sort: the lower index comes first, in
either direction). ``-0.0`` and ``+0.0`` are equal. ``top_k`` takes the first k of the descending
order along the last axis (``top_k_axis`` along any axis), ``bottom_k`` the first k of the
ascending order.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from ..errors import DTypeError, ShapeError
from ..types import ShapedType, int32
from ._util import normalize_axes
from .reduction import _one_axis
from .registry import defop, gradient


def _check_k(t: ShapedType, k, axis=-1) -> int:
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)):
        raise ShapeError(f"k must be an int, got {k!r}")
    if not t.shape:
        raise ShapeError("needs a tensor of rank >= 1 (it works along the last axis), got a scalar")
    n = t.shape[axis]
    where = "the last axis" if axis == -1 else f"axis {axis}"
    if k < 0 or (n >= 0 and k > n):
        raise ShapeError(f"k = {k} is out of range for {where} of shape {t.shape} (valid: 0..{n})")
    return int(k)


def _axis_k(t: ShapedType, attrs) -> tuple[int, int]:
    """The normalized axis and the checked k of an op along one axis."""
    _one_axis(attrs["axis"])
    if not t.shape:
        raise ShapeError("needs a tensor of rank >= 1, got a scalar")
    axis = normalize_axes(attrs["axis"], len(t.shape), "axis")[0]
    return axis, _check_k(t, attrs["k"], axis)


def _infer_top_k(in_types, attrs):
    t = in_types[0]
    k = _check_k(t, attrs["k"])
    shape = t.shape[:-1] + (k,)
    return [ShapedType(shape, t.dtype), ShapedType(shape, int32)]


@defop("top_k", swift="topK(_:k:name:)", objc="topKWithSourceTensor:k:name:", inputs=("tensor",),
       infer=_infer_top_k, family="top_k", attrs=("k",), since=("12.0", "15.0"))
def top_k(g, tensor, k: int, name: Optional[str] = None, *, axis: Optional[int] = None) -> tuple:
    """The ``k`` largest values along the last axis, largest first, and their int32 indices:
    ``(values, indices)``. Ties go to the lower index; NaN counts as the largest value
    (MPSGraph ``topK(_:k:name:)``). With ``axis``, along that axis: the op ``top_k_axis``
    (MPSGraph ``topK(_:axis:k:name:)``, macOS 14)."""
    if axis is not None:
        return g.top_k_axis(tensor, axis, k, name)
    tensor = g.as_tensor(tensor, f"top_k op {name or 'top_k'!r}")
    op = g.add_op("top_k", [tensor], {"k": int(k) if isinstance(k, np.integer) else k}, name)
    return op.outputs[0], op.outputs[1]


@gradient("top_k")
def _top_k_gradient(g, op, dy, wanted):
    dvalues = dy[0]
    if dvalues is None or not op.inputs[0].dtype.is_floating:
        return [None]
    return [g.top_k_gradient(dvalues, op.inputs[0], op.attrs["k"])]


def _infer_top_k_gradient(in_types, attrs):
    dy, src = in_types
    k = _check_k(src, attrs["k"])
    if dy.dtype != src.dtype:
        raise DTypeError(f"incoming_gradient is {dy.dtype.name} but source is {src.dtype.name}; they must match")
    want = src.shape[:-1] + (k,)
    if len(dy.shape) != len(want) or any(a != b and -1 not in (a, b) for a, b in zip(dy.shape, want)):
        raise ShapeError(f"incoming_gradient has shape {dy.shape}; top_k of a source of shape {src.shape} "
                         f"with k = {k} gives {want}")
    return [src]


@defop("top_k_gradient", swift="topKGradient(_:input:k:name:)", objc="topKWithGradientTensor:source:k:name:",
       inputs=("incoming_gradient", "source"), infer=_infer_top_k_gradient, family="top_k",
       role="data_gradient", forward="top_k", differentiable=False, attrs=("k",))
def top_k_gradient(g, incoming_gradient, source, k: int, name: Optional[str] = None):
    """Gradient of top_k's values: ``incoming_gradient[..., j]`` goes to the position of the j-th
    largest element of ``source`` (found again, with top_k's order), zero elsewhere
    (MPSGraph ``topKGradient(_:input:k:name:)``)."""
    label = f"top_k_gradient op {name or 'top_k_gradient'!r}"
    source = g.as_tensor(source, label)
    incoming_gradient = g.as_tensor(incoming_gradient, label, like=source)
    return g.add_op("top_k_gradient", [incoming_gradient, source],
                    {"k": int(k) if isinstance(k, np.integer) else k}, name).output


# ----------------------------------------------------------------------------- along any axis
def _infer_k_axis(in_types, attrs):
    t = in_types[0]
    axis, k = _axis_k(t, attrs)
    shape = t.shape[:axis] + (k,) + t.shape[axis + 1:]
    return [ShapedType(shape, t.dtype), ShapedType(shape, int32)]


def _infer_k_axis_gradient(in_types, attrs):
    dy, src = in_types
    axis, k = _axis_k(src, attrs)
    if dy.dtype != src.dtype:
        raise DTypeError(f"incoming_gradient is {dy.dtype.name} but source is {src.dtype.name}; they must match")
    want = src.shape[:axis] + (k,) + src.shape[axis + 1:]
    if len(dy.shape) != len(want) or any(a != b and -1 not in (a, b) for a, b in zip(dy.shape, want)):
        raise ShapeError(f"incoming_gradient has shape {dy.shape}; a source of shape {src.shape} with axis = "
                         f"{attrs['axis']} and k = {k} gives {want}")
    return [src]


def _k_axis_attrs(axis, k) -> dict:
    return {"axis": int(axis) if isinstance(axis, np.integer) else axis, "k": int(k) if isinstance(k, np.integer) else k}


@defop("top_k_axis", swift="topK(_:axis:k:name:)", objc="topKWithSourceTensor:axis:k:name:", inputs=("tensor",),
       infer=_infer_k_axis, family="top_k", attrs=("axis", "k"), since=("14.0", "17.0"))
def top_k_axis(g, tensor, axis: int, k: int, name: Optional[str] = None) -> tuple:
    """The ``k`` largest values along ``axis``, largest first, and their int32 indices along it:
    ``(values, indices)``, in top_k's order (NaN largest, ties to the lower index) (MPSGraph
    ``topK(_:axis:k:name:)``,
    https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraph/topk(_:axis:k:name:)).
    ``g.top_k(tensor, k, axis=axis)`` builds the same op."""
    tensor = g.as_tensor(tensor, f"top_k_axis op {name or 'top_k_axis'!r}")
    op = g.add_op("top_k_axis", [tensor], _k_axis_attrs(axis, k), name)
    return op.outputs[0], op.outputs[1]


@defop("bottom_k", swift="bottomK(_:axis:k:name:)", objc="bottomKWithSourceTensor:axis:k:name:",
       inputs=("tensor",), infer=_infer_k_axis, family="top_k", attrs=("axis", "k"), since=("14.0", "17.0"))
def bottom_k(g, tensor, axis: int, k: int, name: Optional[str] = None) -> tuple:
    """The ``k`` smallest values along ``axis``, smallest first, and their int32 indices:
    ``(values, indices)``, the first k of sort's ascending order (NaN largest, so last; ties to the
    lower index) (MPSGraph ``bottomK(_:axis:k:name:)``,
    https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraph/bottomk(_:axis:k:name:))."""
    tensor = g.as_tensor(tensor, f"bottom_k op {name or 'bottom_k'!r}")
    op = g.add_op("bottom_k", [tensor], _k_axis_attrs(axis, k), name)
    return op.outputs[0], op.outputs[1]


def _k_axis_gradient_rule(grad_op: str):
    def rule(g, op, dy, wanted):
        dvalues = dy[0]
        if dvalues is None or not op.inputs[0].dtype.is_floating:
            return [None]
        return [getattr(g, grad_op)(dvalues, op.inputs[0], op.attrs["axis"], op.attrs["k"])]
    return rule


gradient("top_k_axis")(_k_axis_gradient_rule("top_k_axis_gradient"))
gradient("bottom_k")(_k_axis_gradient_rule("bottom_k_gradient"))


@defop("top_k_axis_gradient", swift="topKGradient(_:source:axis:k:name:)",
       objc="topKWithGradientTensor:source:axis:k:name:", inputs=("incoming_gradient", "source"),
       infer=_infer_k_axis_gradient, family="top_k", role="data_gradient", forward="top_k_axis",
       differentiable=False, attrs=("axis", "k"), since=("14.0", "17.0"))
def top_k_axis_gradient(g, incoming_gradient, source, axis: int, k: int, name: Optional[str] = None):
    """Gradient of top_k_axis's values: ``incoming_gradient`` at position j along ``axis`` goes to
    the j-th largest element of ``source`` along it, zero elsewhere (MPSGraph
    ``topKGradient(_:source:axis:k:name:)``,
    https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraph/topkgradient(_:source:axis:k:name:))."""
    label = f"top_k_axis_gradient op {name or 'top_k_axis_gradient'!r}"
    source = g.as_tensor(source, label)
    incoming_gradient = g.as_tensor(incoming_gradient, label, like=source)
    return g.add_op("top_k_axis_gradient", [incoming_gradient, source], _k_axis_attrs(axis, k), name).output


@defop("bottom_k_gradient", swift="bottomKGradient(_:source:axis:k:name:)",
       objc="bottomKWithGradientTensor:source:axis:k:name:", inputs=("incoming_gradient", "source"),
       infer=_infer_k_axis_gradient, family="top_k", role="data_gradient", forward="bottom_k",
       differentiable=False, attrs=("axis", "k"), since=("14.0", "17.0"))
def bottom_k_gradient(g, incoming_gradient, source, axis: int, k: int, name: Optional[str] = None):
    """Gradient of bottom_k's values: ``incoming_gradient`` at position j along ``axis`` goes to
    the j-th smallest element of ``source``, zero elsewhere (MPSGraph
    ``bottomKGradient(_:source:axis:k:name:)``, the ``axis:k:`` sibling of
    https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraph/bottomkgradient(_:source:axistensor:ktensor:name:))."""
    label = f"bottom_k_gradient op {name or 'bottom_k_gradient'!r}"
    source = g.as_tensor(source, label)
    incoming_gradient = g.as_tensor(incoming_gradient, label, like=source)
    return g.add_op("bottom_k_gradient", [incoming_gradient, source], _k_axis_attrs(axis, k), name).output


def _infer_sort(index: bool):
    def infer(in_types, attrs):
        t = in_types[0]
        _one_axis(attrs["axis"])
        normalize_axes(attrs["axis"], len(t.shape), "axis")
        if not isinstance(attrs["descending"], (bool, np.bool_)):
            raise ShapeError(f"descending must be True or False, got {attrs['descending']!r}")
        return [ShapedType(t.shape, int32) if index else t]
    return infer


def _sort_attrs(axis, descending) -> dict:
    return {"axis": int(axis) if isinstance(axis, np.integer) else axis,
            "descending": bool(descending) if isinstance(descending, np.bool_) else descending}


@defop("sort", swift="sort(_:axis:descending:name:)", objc="sortWithTensor:axis:descending:name:",
       inputs=("tensor",), infer=_infer_sort(False), family="sort", attrs=("axis", "descending"),
       since=("13.0", "16.0"))
def sort(g, tensor, axis: int, descending: bool = False, name: Optional[str] = None):
    """The elements sorted along ``axis``: ascending with NaN last, or descending with NaN first;
    stable (MPSGraph ``sort(_:axis:descending:name:)``).

    MPSGraph has no sort gradient op; the gradient rule sends each output's gradient back to
    the element that landed there: ``dx = gather_along_axis(dy, rank)``, where ``rank``, the
    inverse of the ``arg_sort`` permutation, is the ``arg_sort`` of those indices.
    """
    tensor = g.as_tensor(tensor, f"sort op {name or 'sort'!r}")
    return g.add_op("sort", [tensor], _sort_attrs(axis, descending), name).output


@gradient("sort")
def _sort_gradient(g, op, dy, wanted):
    x = op.inputs[0]
    if not x.dtype.is_floating:
        return [None]
    a = op.attrs
    order = g.arg_sort(x, a["axis"], descending=a["descending"])
    rank = g.arg_sort(order, a["axis"])  # the inverse permutation: where each element went
    return [g.gather_along_axis(dy, rank, a["axis"])]


@defop("arg_sort", swift="argSort(_:axis:descending:name:)", objc="argSortWithTensor:axis:descending:name:",
       inputs=("tensor",), infer=_infer_sort(True), family="sort", attrs=("axis", "descending"),
       differentiable=False, since=("13.0", "16.1"))
def arg_sort(g, tensor, axis: int, descending: bool = False, name: Optional[str] = None):
    """The int32 indices that sort ``tensor`` along ``axis`` (the order of ``sort``: NaN last
    ascending, first descending; equal elements keep their order) (MPSGraph
    ``argSort(_:axis:descending:name:)``)."""
    tensor = g.as_tensor(tensor, f"arg_sort op {name or 'arg_sort'!r}")
    return g.add_op("arg_sort", [tensor], _sort_attrs(axis, descending), name).output
