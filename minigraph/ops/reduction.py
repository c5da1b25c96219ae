"""Reductions that keep the reduced axes as size 1 (MPSGraph's rule), and softmax."""
from __future__ import annotations

from typing import Optional

import numpy as np

from ..errors import DTypeError, ShapeError
from ..types import ShapedType, bool_, int32
from ._dynamic import broadcast_like, element_count
from ._util import normalize_axes
from .registry import defop, gradient, renamed


def _infer_reduce(kind: str):
    def infer(in_types, attrs):
        t = in_types[0]
        axes = normalize_axes(attrs["axes"], len(t.shape))
        if kind == "float" and not t.dtype.is_floating:
            raise DTypeError(f"needs a floating-point tensor, got {t.dtype.name}; cast it first")
        if kind in ("ordered", "mean") and t.dtype.is_bool:
            raise DTypeError("is not defined for bool tensors; cast first")
        if kind == "product" and t.dtype.is_bool:
            raise DTypeError("is not defined for bool tensors (reduction_and is); cast first")
        shape = tuple(1 if i in axes else d for i, d in enumerate(t.shape))
        dtype = int32 if (t.dtype.is_bool and kind == "sum") else t.dtype  # MPSGraph casts bool to int32
        if kind == "logical":
            dtype = bool_
        return [ShapedType(shape, dtype)]
    return infer


def _as_set(axes: tuple, rank: int) -> tuple:
    """MPSGraph's axes are a set: drop an axis named again (``[0, 0]``, or ``[1, -1]`` at rank 2),
    keeping the first spelling; what is not a valid axis is left for the infer rule to reject."""
    out, seen = [], set()
    for a in axes:
        key = a % rank if isinstance(a, int) and not isinstance(a, bool) and -rank <= a < rank else object()
        if key not in seen:
            seen.add(key)
            out.append(a)
    return tuple(out)


def _reduction(type: str, swift: str, objc: str, kind: str, doc: str, since: tuple = ("11.0", "14.0")):
    def builder(g, tensor, axes=None, name: Optional[str] = None, *, axis=None):
        tensor = g.as_tensor(tensor, f"{type} op {name or type!r}")
        axes = renamed(f"{type} op {name or type!r}", "axis", "axes", axis, axes, ShapeError)
        if isinstance(axes, (np.integer, np.ndarray)) and np.ndim(axes) == 0 and axes.dtype.kind in "iu":
            axes = int(axes)  # a NumPy integer scalar: store a plain int
        if axes is not None and not isinstance(axes, int):
            try:
                axes = _as_set(tuple(int(a) if isinstance(a, np.integer) else a for a in axes), len(tensor.shape))
            except TypeError:
                pass
        return g.add_op(type, [tensor], {"axes": axes}, name).output

    builder.__name__ = builder.__qualname__ = type
    builder.__doc__ = (f"{doc} over ``axes`` (an int, a list, or None for all), keeping them as size 1 "
                       f"(MPSGraph ``{swift}``).")
    defop(type, swift=swift, objc=objc, inputs=("tensor",), infer=_infer_reduce(kind),
          family="reduction", attrs=("axes",), since=since,
          differentiable=kind not in ("logical",))(builder)


_reduction("reduction_sum", "reductionSum(with:axes:name:)", "reductionSumWithTensor:axes:name:", "sum", "Sum")
_reduction("reduction_maximum", "reductionMaximum(with:axes:name:)", "reductionMaximumWithTensor:axes:name:",
           "ordered", "Maximum skipping NaN (a slice of only NaN, or an empty one, gives -inf)")
_reduction("reduction_minimum", "reductionMinimum(with:axes:name:)", "reductionMinimumWithTensor:axes:name:",
           "ordered", "Minimum skipping NaN (a slice of only NaN, or an empty one, gives +inf)")
_reduction("reduction_maximum_propagate_nan", "reductionMaximumPropagateNaN(with:axes:name:)",
           "reductionMaximumPropagateNaNWithTensor:axes:name:", "ordered",
           "Maximum, NaN where the slice holds a NaN (an empty slice gives -inf)")
_reduction("reduction_minimum_propagate_nan", "reductionMinimumPropagateNaN(with:axes:name:)",
           "reductionMinimumPropagateNaNWithTensor:axes:name:", "ordered",
           "Minimum, NaN where the slice holds a NaN (an empty slice gives +inf)")
_reduction("mean", "mean(of:axes:name:)", "meanOfTensor:axes:name:", "mean",
           "Arithmetic mean (of an integer tensor, the quotient truncated toward zero, as MPSGraph)")
_reduction("reduction_product", "reductionProduct(with:axes:name:)", "reductionProductWithTensor:axes:name:",
           "product", "Product (an empty slice gives 1; integers wrap around)")
_reduction("reduction_and", "reductionAnd(with:axes:name:)", "reductionAndWithTensor:axes:name:", "logical",
           "Logical AND, a bool result (a nonzero or NaN element is true; an empty slice gives true)",
           since=("12.2", "15.3"))
_reduction("reduction_or", "reductionOr(with:axes:name:)", "reductionOrWithTensor:axes:name:", "logical",
           "Logical OR, a bool result (a nonzero or NaN element is true; an empty slice gives false)",
           since=("12.2", "15.3"))


def _count(op) -> float:
    x = op.inputs[0]
    axes = normalize_axes(op.attrs["axes"], len(x.shape))
    n = 1
    for a in axes:
        n *= x.shape[a]
    return float(n)


@gradient("reduction_sum")
def _reduction_sum_gradient(g, op, dy, wanted):
    x = op.inputs[0]
    if not x.dtype.is_floating:
        return [None]
    return [broadcast_like(g, dy, x)]


@gradient("mean")
def _mean_gradient(g, op, dy, wanted):
    x = op.inputs[0]
    if not x.dtype.is_floating:
        return [None]
    n = element_count(g, x, normalize_axes(op.attrs["axes"], len(x.shape)))  # a tensor for dynamic axes
    return [broadcast_like(g, g.division(dy, max(n, 1.0) if isinstance(n, float) else g.maximum(n, 1.0)), x)]


@gradient("reduction_product")
def _reduction_product_gradient(g, op, dy, wanted):
    """d prod / d x_i is the product of the other elements of x_i's slice, found without dividing
    by zero (torch.prod's rule): with no zero in the slice prod / x_i; with one zero, the product
    of the nonzero elements at the zero and 0 elsewhere; with several zeros, 0 everywhere."""
    x = op.inputs[0]
    if not x.dtype.is_floating:
        return [None]
    axes = op.attrs["axes"]
    is_zero = g.equal(x, 0.0)
    nonzero = g.select(is_zero, 1.0, x)
    product = g.reduction_product(nonzero, axes=axes)  # of the nonzero elements
    zeros = g.reduction_sum(g.cast(is_zero, x.dtype), axes=axes)
    at_zero = g.select(g.equal(zeros, 1.0), product, 0.0)
    elsewhere = g.select(g.equal(zeros, 0.0), g.division(product, nonzero), 0.0)
    return [g.multiplication(g.select(is_zero, at_zero, elsewhere), dy)]


def _extremum(g, op, dy, wanted):
    """Split the gradient evenly between tied extreme elements (as torch.amax does); a slice with
    no element equal to the result (empty, or only NaN) gets none."""
    x, y = op.inputs[0], op.outputs[0]
    if not x.dtype.is_floating:
        return [None]
    mask = g.cast(g.equal(x, y), x.dtype)
    ties = g.maximum(g.reduction_sum(mask, axes=op.attrs["axes"]), 1.0)
    return [g.multiplication(mask, g.division(dy, ties))]


for _t in ("reduction_maximum", "reduction_minimum", "reduction_maximum_propagate_nan",
           "reduction_minimum_propagate_nan"):
    gradient(_t)(_extremum)


def _one_axis(axis) -> None:
    """MPSGraph takes one NSInteger axis; a list or None would reach the kernel as several axes."""
    if not isinstance(axis, (int, np.integer)) or isinstance(axis, (bool, np.bool_)):
        raise ShapeError(f"axis must be one int, got {axis!r}")


def _infer_arg(in_types, attrs):
    t = in_types[0]
    _one_axis(attrs["axis"])
    axis = normalize_axes(attrs["axis"], len(t.shape), "axis")[0]
    if t.dtype.is_bool:
        raise DTypeError("is not defined for bool tensors; cast first")
    if t.shape[axis] == 0:
        raise ShapeError(f"axis {attrs['axis']} of shape {t.shape} is empty: an empty slice has no index "
                         "to return (give a tensor with at least one element along the axis)")
    return [ShapedType(tuple(1 if i == axis else d for i, d in enumerate(t.shape)), int32)]


def _arg_reduction(type: str, swift: str, objc: str, doc: str):
    def builder(g, tensor, axis: int, name: Optional[str] = None):
        tensor = g.as_tensor(tensor, f"{type} op {name or type!r}")
        if isinstance(axis, np.integer):
            axis = int(axis)
        return g.add_op(type, [tensor], {"axis": axis}, name).output

    builder.__name__ = builder.__qualname__ = type
    builder.__doc__ = (f"{doc} along ``axis``, as int32, the axis kept as size 1; the first index "
                       f"on ties (MPSGraph ``{swift}``).")
    defop(type, swift=swift, objc=objc, inputs=("tensor",), infer=_infer_arg, family="reduction",
          attrs=("axis",), differentiable=False, since=("12.0", "15.0"))(builder)


_arg_reduction("reduction_arg_maximum", "reductionArgMaximum(with:axis:name:)",
               "reductionArgMaximumWithTensor:axis:name:",
               "The index of the maximum (NaN skipped, as by reduction_maximum; -1 for a slice of only NaN)")
_arg_reduction("reduction_arg_minimum", "reductionArgMinimum(with:axis:name:)",
               "reductionArgMinimumWithTensor:axis:name:",
               "The index of the minimum (NaN skipped, as by reduction_minimum; -1 for a slice of only NaN)")


def _infer_softmax(in_types, attrs):
    t = in_types[0]
    _one_axis(attrs["axis"])
    normalize_axes(attrs["axis"], len(t.shape), "axis")
    if not t.dtype.is_floating:
        raise DTypeError(f"needs a floating-point tensor, got {t.dtype.name}")
    return [t]


@defop("softmax", swift="softMax(with:axis:name:)", objc="softMaxWithTensor:axis:name:",
       inputs=("tensor",), infer=_infer_softmax, family="activation", attrs=("axis",))
def softmax(g, tensor, axis: int = -1, name: Optional[str] = None):
    """exp(x) / sum(exp(x)) along ``axis``, computed stably (MPSGraph ``softMax(with:axis:name:)``)."""
    return g.add_op("softmax", [g.as_tensor(tensor, f"softmax op {name or 'softmax'!r}")], {"axis": axis}, name).output


@gradient("softmax")
def _softmax_gradient(g, op, dy, wanted):
    """MPSGraph's own gradient op, of the input."""
    return [g.softmax_gradient(dy, op.inputs[0], op.attrs["axis"])]


def _infer_softmax_gradient(in_types, attrs):
    dy, x = in_types
    _infer_softmax([x], attrs)
    if dy.dtype != x.dtype:
        raise DTypeError(f"incoming_gradient is {dy.dtype.name} but source is {x.dtype.name}; they must match")
    if len(dy.shape) != len(x.shape) or any(a != b and -1 not in (a, b) for a, b in zip(dy.shape, x.shape)):
        raise ShapeError(f"incoming_gradient shape {dy.shape} and source shape {x.shape} must be equal")
    return [x]


@defop("softmax_gradient", swift="softMaxGradient(withIncomingGradient:sourceTensor:axis:name:)",
       objc="softMaxGradientWithIncomingGradient:sourceTensor:axis:name:", inputs=("incoming_gradient", "source"),
       infer=_infer_softmax_gradient, family="activation", role="data_gradient", forward="softmax", attrs=("axis",))
def softmax_gradient(g, incoming_gradient, source, axis: int = -1, name: Optional[str] = None):
    """The gradient of ``softmax`` toward its input ``source`` (Apple: "the input tensor"):
    ``y * (dy - sum(dy * y, axis))`` with ``y = softmax(source, axis)`` (MPSGraph
    ``softMaxGradient(withIncomingGradient:sourceTensor:axis:name:)``,
    https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraph/softmaxgradient(withincominggradient:sourcetensor:axis:name:))."""
    label = f"softmax_gradient op {name or 'softmax_gradient'!r}"
    source = g.as_tensor(source, label)
    incoming_gradient = g.as_tensor(incoming_gradient, label, like=source)
    return g.add_op("softmax_gradient", [incoming_gradient, source], {"axis": axis}, name).output


@gradient("softmax_gradient")
def _softmax_gradient_gradient(g, op, ddx, wanted):
    """``dx = y * (dy - sum(dy * y))`` is linear in dy (toward it: the same op of ddx); toward the
    source, the cotangent of y, ``ddx * (dy - s) - dy * sum(ddx * y)``, through softmax's own."""
    dy, x = op.inputs
    axis = op.attrs["axis"]
    ddy = g.softmax_gradient(ddx, x, axis) if wanted[0] else None
    dsrc = None
    if wanted[1]:
        y = g.softmax(x, axis=axis)
        s = g.reduction_sum(g.multiplication(dy, y), axes=[axis])
        # dx = y * (dy - s): the cotangent toward y is ddx * (dy - s) - dy * sum(ddx * y)
        dyy = g.subtraction(g.multiplication(ddx, g.subtraction(dy, s)),
                            g.multiplication(dy, g.reduction_sum(g.multiplication(ddx, y), axes=[axis])))
        dsrc = g.softmax_gradient(dyy, x, axis)
    return [ddy, dsrc]


def _infer_sce(in_types, attrs):
    x, labels = in_types
    if x.dtype != labels.dtype:
        raise DTypeError(f"source is {x.dtype.name} but labels are {labels.dtype.name}; they must match")
    if not x.dtype.is_floating:
        raise DTypeError(f"needs floating-point logits, got {x.dtype.name}")
    if len(x.shape) != len(labels.shape) or any(a != b and -1 not in (a, b) for a, b in zip(x.shape, labels.shape)):
        raise ShapeError(f"source shape {x.shape} and labels shape {labels.shape} must be equal")
    _one_axis(attrs["axis"])
    axis = normalize_axes(attrs["axis"], len(x.shape), "axis")[0]
    red = attrs["reduction"]
    if red == "none":
        shape = tuple(1 if i == axis else d for i, d in enumerate(x.shape))
    elif red in ("sum", "mean"):
        shape = tuple(1 for _ in x.shape)
    else:
        raise ShapeError(f"reduction must be 'none', 'sum' or 'mean', got {red!r}")
    return [ShapedType(shape, x.dtype)]


@defop("softmax_cross_entropy", swift="softMaxCrossEntropy(_:labels:axis:reuctionType:name:)",
       objc="softMaxCrossEntropyWithSourceTensor:labelsTensor:axis:reductionType:name:",
       inputs=("source", "labels"), infer=_infer_sce, family="loss", attrs=("axis", "reduction"))
def softmax_cross_entropy(g, source, labels, axis: int = -1, reduction: str = "mean",
                          name: Optional[str] = None):
    """Cross entropy of softmax(source) against ``labels`` (probabilities) along ``axis``.

    ``reduction``: ``"none"`` keeps every row (axis as size 1), ``"sum"`` and ``"mean"`` (over
    rows) give a tensor of ones-shape (MPSGraph
    ``softMaxCrossEntropy(_:labels:axis:reuctionType:name:)``; its Swift label really is spelled
    ``reuctionType``).
    """
    label = f"softmax_cross_entropy op {name or 'softmax_cross_entropy'!r}"
    source = g.as_tensor(source, label)
    labels = g.as_tensor(labels, label, like=source)
    return g.add_op("softmax_cross_entropy", [source, labels], {"axis": axis, "reduction": reduction}, name).output


@gradient("softmax_cross_entropy")
def _softmax_cross_entropy_gradient(g, op, dy, wanted):
    x, labels = op.inputs
    axis = op.attrs["axis"]
    scale = dy
    if op.attrs["reduction"] == "mean":
        ax = normalize_axes(axis, len(x.shape))[0]
        rows = element_count(g, x, [i for i in range(len(x.shape)) if i != ax])  # a tensor for a dynamic batch
        scale = g.division(dy, rows)
    dx = dlabels = None
    if wanted[0]:  # MPSGraph's own gradient op
        dx = g.softmax_cross_entropy_gradient(dy, x, labels, axis, op.attrs["reduction"])
    if wanted[1]:
        lsm = g.subtraction(x, g.logarithm(g.reduction_sum(g.exponent(
            g.subtraction(x, g.reduction_maximum(x, axes=[axis]))), axes=[axis])))
        lsm = g.subtraction(lsm, g.reduction_maximum(x, axes=[axis]))
        dlabels = g.negative(g.multiplication(lsm, scale))
    return [dx, dlabels]


def _infer_sce_gradient(in_types, attrs):
    dy, x, labels = in_types
    (want,) = _infer_sce([x, labels], attrs)
    if dy.dtype != x.dtype:
        raise DTypeError(f"incoming_gradient is {dy.dtype.name} but source is {x.dtype.name}; they must match")
    if len(dy.shape) != len(want.shape) or any(a != b and -1 not in (a, b) for a, b in zip(dy.shape, want.shape)):
        raise ShapeError(f"incoming_gradient has shape {dy.shape}; the loss of a source of shape {x.shape} with "
                         f"reduction {attrs['reduction']!r} has shape {want.shape}")
    return [x]


@defop("softmax_cross_entropy_gradient", swift="softMaxCrossEntropyGradient(_:source:labels:axis:reuctionType:name:)",
       objc="softMaxCrossEntropyGradientWithIncomingGradientTensor:sourceTensor:labelsTensor:axis:reductionType:name:",
       inputs=("incoming_gradient", "source", "labels"), infer=_infer_sce_gradient, family="loss",
       role="data_gradient", forward="softmax_cross_entropy", attrs=("axis", "reduction"))
def softmax_cross_entropy_gradient(g, incoming_gradient, source, labels, axis: int = -1, reduction: str = "mean",
                                   name: Optional[str] = None):
    """The gradient of ``softmax_cross_entropy`` toward ``source``:
    ``(softmax(source) * sum(labels, axis) - labels) * incoming_gradient``, the incoming gradient
    (the loss's shape, often ones) divided by the number of rows for ``"mean"`` (MPSGraph
    ``softMaxCrossEntropyGradient(_:source:labels:axis:reuctionType:name:)``,
    https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraph/softmaxcrossentropygradient(_:source:labels:axis:reuctiontype:name:))."""
    label = f"softmax_cross_entropy_gradient op {name or 'softmax_cross_entropy_gradient'!r}"
    source = g.as_tensor(source, label)
    labels = g.as_tensor(labels, label, like=source)
    incoming_gradient = g.as_tensor(incoming_gradient, label, like=source)
    return g.add_op("softmax_cross_entropy_gradient", [incoming_gradient, source, labels],
                    {"axis": axis, "reduction": reduction}, name).output


@gradient("softmax_cross_entropy_gradient")
def _sce_gradient_gradient(g, op, ddx, wanted):
    """From the formula: linear in the incoming gradient and in the labels; toward the source
    through softmax."""
    dy, x, labels = op.inputs
    axis, red = op.attrs["axis"], op.attrs["reduction"]
    scale = dy
    if red == "mean":
        ax = normalize_axes(axis, len(x.shape))[0]
        scale = g.division(dy, element_count(g, x, [i for i in range(len(x.shape)) if i != ax]))
    p = g.softmax(x, axis=axis)
    sl = g.reduction_sum(labels, axes=[axis])
    out = [None, None, None]
    if wanted[0]:  # summed over what dy broadcast along: the axis, or everything for sum and mean
        d = g.multiplication(ddx, g.subtraction(g.multiplication(p, sl), labels))
        if red == "mean":
            ax = normalize_axes(axis, len(x.shape))[0]
            d = g.division(d, element_count(g, x, [i for i in range(len(x.shape)) if i != ax]))
        out[0] = g.reduction_sum(d, axes=[axis] if red == "none" else None)
    if wanted[1]:
        out[1] = g.softmax_gradient(g.multiplication(g.multiplication(ddx, sl), scale), x, axis)
    if wanted[2]:  # each label enters its row's sum and its own term
        t = g.multiplication(ddx, scale)
        out[2] = g.subtraction(g.reduction_sum(g.multiplication(t, p), axes=[axis]), t)
    return out
