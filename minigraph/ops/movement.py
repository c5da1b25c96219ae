"""Data movement: tile (+ gradient), split, stack, flatten_2d, reverse (MPSGraphTensorShapeOps)."""
from __future__ import annotations

from typing import Optional, Sequence

from ..errors import AxisError, ShapeError
from ..types import ShapedType, num_elements
from ._dynamic import zeros_like
from ._util import broadcast_shapes, normalize_axes, same_dtype, unbroadcast
from .registry import defop, gradient
from .shape import _int, _int_list, _label


# ----------------------------------------------------------------------------- tile
def _check_multiplier(shape, multiplier, label) -> None:
    if len(multiplier) != len(shape):
        raise ShapeError(f"{label}: multiplier {list(multiplier)} needs one entry per dimension of shape "
                         f"{tuple(shape)} ({len(shape)})")
    if any(m < 0 for m in multiplier):
        raise ShapeError(f"{label}: multiplier {list(multiplier)} has a negative entry (each is a count of copies, >= 0)")


def _infer_tile(in_types, attrs):
    t = in_types[0]
    m = attrs["multiplier"]
    _check_multiplier(t.shape, m, "tile")
    return [ShapedType([-1 if d == -1 else d * k for d, k in zip(t.shape, m)], t.dtype)]


@defop("tile", swift="tileTensor(_:withMultiplier:name:)", objc="tileTensor:withMultiplier:name:",
       inputs=("tensor",), infer=_infer_tile, family="shape", attrs=("multiplier",))
def tile(g, tensor, multiplier: Sequence[int], name: Optional[str] = None):
    """``multiplier[d]`` copies of the tensor one after another along each dimension d: ``[1 2]``
    tiled by ``[3]`` is ``[1 2 1 2 1 2]`` (MPSGraph ``tileTensor(_:withMultiplier:name:)``)."""
    label = _label("tile", name)
    return g.add_op("tile", [g.as_tensor(tensor, label)],
                    {"multiplier": _int_list(multiplier, "multiplier", label)}, name).output


def _infer_tile_grad(in_types, attrs):
    dy, src = in_types
    m = attrs["multiplier"]
    _check_multiplier(src.shape, m, "tile_gradient")
    want = [-1 if d == -1 else d * k for d, k in zip(src.shape, m)]
    if len(dy.shape) != len(want) or any(a != b and -1 not in (a, b) for a, b in zip(dy.shape, want)):
        raise ShapeError(f"incoming gradient shape {dy.shape} is not the tiled shape {tuple(want)} of the source "
                         f"{src.shape} with multiplier {list(m)}")
    return [ShapedType(src.shape, dy.dtype)]


@defop("tile_gradient", swift="tileGradient(withIncomingGradientTensor:sourceTensor:withMultiplier:name:)",
       objc="tileGradientWithIncomingGradientTensor:sourceTensor:withMultiplier:name:",
       inputs=("incoming_gradient", "source"), infer=_infer_tile_grad, family="shape", attrs=("multiplier",))
def tile_gradient(g, incoming_gradient, source, multiplier: Sequence[int], name: Optional[str] = None):
    """The gradient of ``tile`` toward its source: the sum of the incoming gradient over the copies
    (MPSGraph ``tileGradient(withIncomingGradientTensor:sourceTensor:withMultiplier:name:)``)."""
    label = _label("tile_gradient", name)
    return g.add_op("tile_gradient", [g.as_tensor(incoming_gradient, label), g.as_tensor(source, label)],
                    {"multiplier": _int_list(multiplier, "multiplier", label)}, name).output


@gradient("tile")
def _tile_gradient(g, op, dy, wanted):
    return [g.tile_gradient(dy, op.inputs[0], op.attrs["multiplier"])]


@gradient("tile_gradient")
def _tile_gradient_gradient(g, op, dy, wanted):
    return [g.tile(dy, op.attrs["multiplier"]) if wanted[0] else None, None]


# ----------------------------------------------------------------------------- split
def _infer_split(in_types, attrs):
    t = in_types[0]
    (d,) = normalize_axes(attrs["axis"], len(t.shape), "axis")
    n, sizes = attrs["num_splits"], attrs.get("split_sizes")
    size = t.shape[d]
    if sizes is not None:
        if not sizes or any(k < 0 for k in sizes):
            raise ShapeError(f"split sizes {list(sizes)} must be a non-empty list of sizes >= 0")
        if size != -1 and sum(sizes) != size:
            raise ShapeError(f"split sizes {list(sizes)} add up to {sum(sizes)}, but dimension {d} of shape "
                             f"{t.shape} has {size} elements (MPSGraph's split(_:splitSizes:axis:) needs them equal)")
    else:
        if n < 1:
            raise ShapeError(f"num_splits must be >= 1, got {n}")
        if size != -1 and size % n:
            raise ShapeError(f"dimension {d} of shape {t.shape} has {size} elements, which {n} splits cannot share "
                             f"equally (MPSGraph's split(_:numSplits:axis:) needs the size divisible by numSplits; "
                             "give a list of sizes for uneven pieces)")
        sizes = [-1 if size == -1 else size // n] * n
    out = []
    for k in sizes:
        shape = list(t.shape)
        shape[d] = k
        out.append(ShapedType(shape, t.dtype))
    return out


@defop("split", swift="split(_:numSplits:axis:name:)", objc="splitTensor:numSplits:axis:name:",
       inputs=("tensor",), infer=_infer_split, family="shape", attrs=("num_splits", "axis", "split_sizes"),
       since=("12.3", "15.4"))
def split(g, tensor, num_splits, axis: int, name: Optional[str] = None) -> list:
    """Pieces along ``axis``, as a list of tensors (one op with several outputs). ``num_splits``
    an int: that many equal pieces (MPSGraph ``split(_:numSplits:axis:name:)``, which needs the
    size divisible by it); a list of ints: pieces of those sizes, which add up to the size
    (MPSGraph ``split(_:splitSizes:axis:name:)``)."""
    label = _label("split", name)
    sizes = None if isinstance(num_splits, int) or not isinstance(num_splits, (list, tuple)) else \
        _int_list(num_splits, "split sizes", label)
    attrs = {"num_splits": len(sizes) if sizes is not None else _int(num_splits, "num_splits", label),
             "axis": _int(axis, "axis", label), "split_sizes": sizes}
    return list(g.add_op("split", [g.as_tensor(tensor, label)], attrs, name).outputs)


@gradient("split")
def _split_gradient(g, op, dy, wanted):
    """The pieces' gradients joined back; a piece no gradient reached contributes zeros."""
    dys = dy if isinstance(dy, (list, tuple)) else [dy]
    parts = [d if d is not None else zeros_like(g, t) for d, t in zip(dys, op.outputs)]
    return [parts[0] if len(parts) == 1 else g.concat(parts, op.attrs["axis"])]


# ----------------------------------------------------------------------------- stack
def _stack_axis(axis: int, rank: int) -> int:
    """``axis`` as a position in the result (rank + 1 axes); negative counts from the end."""
    if not -(rank + 1) <= axis <= rank:
        raise AxisError(f"stack axis {axis} is out of range for tensors of rank {rank} "
                        f"(valid: {-(rank + 1)}..{rank})")
    return axis % (rank + 1)


def _infer_stack(in_types, attrs):
    same_dtype(in_types, "stacked tensors")
    try:
        shape = broadcast_shapes(*[t.shape for t in in_types])
    except ShapeError as e:
        raise ShapeError(f"stacked tensors must broadcast to one shape: {e}") from None
    d = _stack_axis(attrs["axis"], len(shape))
    out = list(shape)
    out.insert(d, len(in_types))
    return [ShapedType(out, in_types[0].dtype)]


@defop("stack", swift="stack(_:axis:name:)", objc="stackTensors:axis:name:", inputs=("tensors",),
       infer=_infer_stack, family="shape", attrs=("axis",), since=("12.3", "15.4"))
def stack(g, tensors, axis: int, name: Optional[str] = None):
    """Join tensors along a new axis ``axis`` of the result (rank + 1; negative counts from its end);
    the tensors broadcast to one shape first (MPSGraph ``stack(_:axis:name:)``)."""
    label = _label("stack", name)
    if hasattr(tensors, "graph") or not isinstance(tensors, (list, tuple)) or not tensors:
        raise ShapeError(f"{label}: needs a non-empty list of tensors, got {tensors!r:.80}")
    ts = [g.as_tensor(t, label) for t in tensors]
    try:  # kept as a position in the result, which Swift export writes as it is
        d = _stack_axis(_int(axis, "axis", label), max(len(t.shape) for t in ts))
    except AxisError as e:
        raise AxisError(f"{label}: {e}") from None
    return g.add_op("stack", ts, {"axis": d}, name).output


@gradient("stack")
def _stack_gradient(g, op, dy, wanted):
    d = _stack_axis(op.attrs["axis"], len(op.output.shape) - 1)
    return [unbroadcast(g, g.squeeze(g.slice(dy, d, k, 1), [d]), t.shape) if want else None
            for k, (t, want) in enumerate(zip(op.inputs, wanted))]


# ----------------------------------------------------------------------------- flatten_2d
def _flatten_axis(axis: int, rank: int) -> int:
    if not -rank <= axis <= rank:
        raise AxisError(f"flatten_2d axis {axis} is out of range for a tensor of rank {rank} "
                        f"(valid: {-rank}..{rank}; {rank} puts every dimension in the second)")
    return axis + rank if axis < 0 else axis


def _infer_flatten(in_types, attrs):
    t = in_types[0]
    d = _flatten_axis(attrs["axis"], len(t.shape))
    head, tail = t.shape[:d], t.shape[d:]
    return [ShapedType([-1 if -1 in head else num_elements(head), -1 if -1 in tail else num_elements(tail)], t.dtype)]


@defop("flatten_2d", swift="flatten2D(_:axis:name:)", objc="flatten2DTensor:axis:name:", inputs=("tensor",),
       infer=_infer_flatten, family="shape", kind="view", attrs=("axis",), since=("12.0", "15.0"))
def flatten_2d(g, tensor, axis: int, name: Optional[str] = None):
    """A rank-2 tensor: the dimensions before ``axis`` multiplied into the first, the others into the
    second; a shape ``[2, 3, 4]`` with axis 1 gives ``[2, 12]`` (MPSGraph ``flatten2D(_:axis:name:)``)."""
    label = _label("flatten_2d", name)
    tensor = g.as_tensor(tensor, label)
    try:  # kept non-negative: axis == rank is valid, so Swift export writes it as it is
        d = _flatten_axis(_int(axis, "axis", label), len(tensor.shape))
    except AxisError as e:
        raise AxisError(f"{label}: {e}") from None
    return g.add_op("flatten_2d", [tensor], {"axis": d}, name).output


@gradient("flatten_2d")
def _flatten_gradient(g, op, dy, wanted):
    return [g.reshape(dy, op.inputs[0].shape)]


# ----------------------------------------------------------------------------- reverse
def _infer_reverse(in_types, attrs):
    t = in_types[0]
    normalize_axes(attrs["axes"], len(t.shape), "axes")
    return [t]


@defop("reverse", swift="reverse(_:axes:name:)", objc="reverseTensor:axes:name:", inputs=("tensor",),
       infer=_infer_reverse, family="shape", attrs=("axes",), since=("12.0", "15.0"))
def reverse(g, tensor, axes, name: Optional[str] = None):
    """The elements in reverse order along each of ``axes`` (unique; None: every axis), as
    TensorFlow's reverse (MPSGraph ``reverse(_:axes:name:)``)."""
    label = _label("reverse", name)
    return g.add_op("reverse", [g.as_tensor(tensor, label)],
                    {"axes": None if axes is None else _int_list(axes, "axes", label)}, name).output


@gradient("reverse")
def _reverse_gradient(g, op, dy, wanted):
    return [g.reverse(dy, op.attrs["axes"])]
