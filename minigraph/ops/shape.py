"""Shape ops: reshape, transpose, permute, slice, concat, broadcast, expand_dims, squeeze
(MPSGraphTensorShapeOps)."""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from ..errors import ShapeError
from ..types import ShapedType, as_shape, num_elements
from ._util import broadcast_shapes, normalize_axes, same_dtype, unbroadcast
from .registry import defop, gradient, renamed


def _label(type: str, name) -> str:
    return f"{type} op {(name or type)!r}"


def _is_int(x) -> bool:
    """Ints and NumPy ints; bools, floats, strings and tensors are mistakes, not sizes or axes."""
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def _int(v, what: str, label: str) -> int:
    if not _is_int(v):
        raise ShapeError(f"{label}: {what} must be an int, got {v!r}")
    return int(v)


def _int_list(v, what: str, label: str = "") -> tuple:
    pre = f"{label}: " if label else ""
    if hasattr(v, "shape") and hasattr(v, "graph"):
        raise ShapeError(f"{pre}{what} must be a list of ints, not a tensor")
    items = [v] if _is_int(v) else v
    try:
        items = list(items)
    except TypeError:
        items = None
    if items is None or isinstance(v, (str, bytes)) or not all(_is_int(x) for x in items):
        raise ShapeError(f"{pre}{what} must be an int or a list of ints, got {v!r}")
    return tuple(int(x) for x in items)


def _infer_reshape(in_types, attrs):
    t = in_types[0]
    shape = list(attrs["shape"])
    if shape.count(-1) > 1:
        raise ShapeError(f"new shape {tuple(shape)} has more than one -1")
    if any(d < -1 for d in shape):
        raise ShapeError(f"new shape {tuple(shape)} has a negative size")
    if -1 in t.shape:
        return [ShapedType(shape, t.dtype)]
    n = num_elements(t.shape)
    if -1 in shape:
        rest = num_elements([d for d in shape if d != -1])
        if rest == 0 or n % rest:
            raise ShapeError(f"cannot reshape {t.shape} ({n} elements) to {tuple(shape)}: "
                             f"{n} is not a multiple of {rest}")
        shape[shape.index(-1)] = n // rest
    if num_elements(shape) != n:
        raise ShapeError(f"cannot reshape {t.shape} ({n} elements) to {tuple(shape)} "
                         f"({num_elements(shape)} elements)")
    return [ShapedType(shape, t.dtype)]


@defop("reshape", swift="reshape(_:shape:name:)", objc="reshapeTensor:withShape:name:",
       inputs=("tensor",), infer=_infer_reshape, family="shape", kind="view", attrs=("shape",))
def reshape(g, tensor, shape: Sequence[int], name: Optional[str] = None):
    """Same elements, new shape; one -1 is inferred (MPSGraph ``reshape(_:shape:name:)``)."""
    label = _label("reshape", name)
    return g.add_op("reshape", [g.as_tensor(tensor, label)], {"shape": _int_list(shape, "shape", label)}, name).output


@gradient("reshape")
def _reshape_gradient(g, op, dy, wanted):
    return [g.reshape(dy, op.inputs[0].shape)]


def _infer_permute(in_types, attrs):
    t = in_types[0]
    perm = attrs["permutation"]
    if sorted(perm) != list(range(len(t.shape))):
        raise ShapeError(f"permutation {list(perm)} is not a permutation of 0..{len(t.shape) - 1} "
                         f"for a tensor of shape {t.shape}")
    return [ShapedType(tuple(t.shape[p] for p in perm), t.dtype)]


@defop("permute", swift="transpose(_:permutation:name:)", objc="transposeTensor:permutation:name:",
       inputs=("tensor",), infer=_infer_permute, family="shape", attrs=("permutation",), since=("13.0", "16.0"))
def permute(g, tensor, permutation: Sequence[int], name: Optional[str] = None):
    """Reorder axes: output axis i is input axis ``permutation[i]``
    (MPSGraph ``transpose(_:permutation:name:)``)."""
    label = _label("permute", name)
    tensor = g.as_tensor(tensor, label)
    perm = _int_list(permutation, "permutation", label)
    r = len(tensor.shape)
    perm = tuple(p % r if -r <= p < r else p for p in perm) if r else perm
    return g.add_op("permute", [tensor], {"permutation": perm}, name).output


@gradient("permute")
def _permute_gradient(g, op, dy, wanted):
    perm = op.attrs["permutation"]
    inv = [0] * len(perm)
    for i, p in enumerate(perm):
        inv[p] = i
    return [g.permute(dy, inv)]


def _infer_transpose(in_types, attrs):
    t = in_types[0]
    r = len(t.shape)
    a, b = normalize_axes(attrs["dimension"], r, "dimension")[0], normalize_axes(attrs["with_dimension"], r, "with_dimension")[0]
    s = list(t.shape)
    s[a], s[b] = s[b], s[a]
    return [ShapedType(s, t.dtype)]


@defop("transpose", swift="transposeTensor(_:dimension:withDimension:name:)",
       objc="transposeTensor:dimension:withDimension:name:", inputs=("tensor",), infer=_infer_transpose,
       family="shape", attrs=("dimension", "with_dimension"))
def transpose(g, tensor, dimension: int, with_dimension: int, name: Optional[str] = None):
    """Swap two axes (MPSGraph ``transposeTensor(_:dimension:withDimension:name:)``)."""
    label = _label("transpose", name)
    return g.add_op("transpose", [g.as_tensor(tensor, label)],
                   {"dimension": _int(dimension, "dimension", label),
                    "with_dimension": _int(with_dimension, "with_dimension", label)}, name).output


@gradient("transpose")
def _transpose_gradient(g, op, dy, wanted):
    return [g.transpose(dy, op.attrs["dimension"], op.attrs["with_dimension"])]


def _infer_slice(in_types, attrs):
    t = in_types[0]
    (d,) = normalize_axes(attrs["dimension"], len(t.shape), "dimension")
    size, start, length = t.shape[d], attrs["start"], attrs["length"]
    if length < 0:
        raise ShapeError(f"length must be >= 0, got {length}")
    if size != -1:
        s = start + size if start < 0 else start
        if s < 0 or s + length > size:
            raise ShapeError(f"slice [start={start}, length={length}] is outside dimension {d} of size {size} "
                             f"(need 0 <= start and start + length <= {size}; negative start counts from the end)")
    shape = list(t.shape)
    shape[d] = length
    return [ShapedType(shape, t.dtype)]


@defop("slice", swift="sliceTensor(_:dimension:start:length:name:)",
       objc="sliceTensor:dimension:start:length:name:", inputs=("tensor",), infer=_infer_slice,
       family="shape", attrs=("dimension", "start", "length"))
def slice(g, tensor, dimension: int, start: int, length: int, name: Optional[str] = None):
    """``length`` elements from ``start`` along ``dimension`` (negative start counts from the end)
    (MPSGraph ``sliceTensor(_:dimension:start:length:name:)``)."""
    label = _label("slice", name)
    return g.add_op("slice", [g.as_tensor(tensor, label)],
                   {"dimension": _int(dimension, "dimension", label), "start": _int(start, "start", label),
                    "length": _int(length, "length", label)}, name).output


def _infer_slice_grad(in_types, attrs):
    t = in_types[0]
    shape = attrs["input_shape"]
    (d,) = normalize_axes(attrs["dimension"], len(shape), "dimension")
    want = list(shape)
    want[d] = attrs["length"]
    if len(t.shape) != len(want) or any(a != b and -1 not in (a, b) for a, b in zip(t.shape, want)):  # -1: checked at compile
        raise ShapeError(f"incoming gradient shape {t.shape} does not match the slice's output {tuple(want)}")
    # a dynamic (-1) size of input_shape off the sliced dimension is the incoming gradient's (a batch size)
    return [ShapedType([t.shape[i] if s == -1 and i != d else s for i, s in enumerate(shape)], t.dtype)]


@defop("slice_gradient", swift="sliceGradientTensor(_:fwdInShapeTensor:starts:ends:strides:name:)",
       objc="sliceGradientTensor:fwdInShapeTensor:starts:ends:strides:name:", inputs=("incoming_gradient",),
       infer=_infer_slice_grad, family="shape", attrs=("input_shape", "dimension", "start", "length"))
def slice_gradient(g, incoming_gradient, input_shape, dimension: int, start: int, length: int,
                   name: Optional[str] = None):
    """Zeros of ``input_shape`` with ``incoming_gradient`` placed where ``slice`` read
    (MPSGraph ``sliceGradientTensor(_:fwdInShapeTensor:starts:ends:strides:name:)``)."""
    label = _label("slice_gradient", name)
    try:
        shape = as_shape(input_shape, "input_shape")
    except ShapeError as e:
        raise ShapeError(f"{label}: {e}") from None
    return g.add_op("slice_gradient", [g.as_tensor(incoming_gradient, label)],
                   {"input_shape": shape, "dimension": _int(dimension, "dimension", label),
                    "start": _int(start, "start", label), "length": _int(length, "length", label)}, name).output


@gradient("slice")
def _slice_gradient(g, op, dy, wanted):
    a = op.attrs
    return [g.slice_gradient(dy, op.inputs[0].shape, a["dimension"], a["start"], a["length"])]


@gradient("slice_gradient")
def _slice_gradient_gradient(g, op, dy, wanted):
    a = op.attrs
    return [g.slice(dy, a["dimension"], a["start"], a["length"])]


def _infer_concat(in_types, attrs):
    same_dtype(in_types, "concatenated tensors")
    r = len(in_types[0].shape)
    if any(len(t.shape) != r for t in in_types):
        raise ShapeError(f"tensors must have one rank, got shapes {[t.shape for t in in_types]}")
    (d,) = normalize_axes(attrs["dimension"], r, "dimension")
    shape = list(in_types[0].shape)
    for t in in_types[1:]:
        for i in range(r):
            if i != d and t.shape[i] != shape[i] and -1 not in (t.shape[i], shape[i]):
                raise ShapeError(f"shapes {[t.shape for t in in_types]} differ outside dimension {d}")
    sizes = [t.shape[d] for t in in_types]
    shape[d] = -1 if -1 in sizes else sum(sizes)
    return [ShapedType(shape, in_types[0].dtype)]


@defop("concat", swift="concatTensors(_:dimension:name:)", objc="concatTensors:dimension:name:",
       inputs=("tensors",), infer=_infer_concat, family="shape", attrs=("dimension",))
def concat(g, tensors, dimension: int, name: Optional[str] = None):
    """Join tensors along ``dimension`` (MPSGraph ``concatTensors(_:dimension:name:)``)."""
    label = _label("concat", name)
    if hasattr(tensors, "graph") or not isinstance(tensors, (list, tuple)) or not tensors:
        raise ShapeError(f"{label}: needs a non-empty list of tensors, got {tensors!r:.80}")
    ts = [g.as_tensor(t, label) for t in tensors]
    return g.add_op("concat", ts, {"dimension": _int(dimension, "dimension", label)}, name).output


@gradient("concat")
def _concat_gradient(g, op, dy, wanted):
    d = op.attrs["dimension"]
    out, start = [], 0
    for t, want in zip(op.inputs, wanted):
        n = t.shape[normalize_axes(d, len(t.shape))[0]]
        out.append(g.slice(dy, d, start, n) if want else None)
        start += n
    return out


def _infer_broadcast(in_types, attrs):
    t = in_types[0]
    shape = attrs["shape"]
    if len(shape) < len(t.shape):
        raise ShapeError(f"cannot broadcast {t.shape} to the lower-rank shape {shape}")
    try:
        got = broadcast_shapes(t.shape, shape)
    except ShapeError as e:
        raise ShapeError(f"cannot broadcast {t.shape} to {shape}: {e}") from None
    if any(a != b and -1 not in (a, b) for a, b in zip(got, shape)):  # -1: checked again at compile
        raise ShapeError(f"cannot broadcast {t.shape} to {shape}")
    return [ShapedType(shape, t.dtype)]


@defop("broadcast", swift="broadcast(_:shape:name:)", objc="broadcastTensor:toShape:name:",
       inputs=("tensor",), infer=_infer_broadcast, family="shape", attrs=("shape",), since=("12.0", "15.0"))
def broadcast(g, tensor, shape: Sequence[int], name: Optional[str] = None):
    """Repeat along size-1 (and new leading) axes to ``shape`` (MPSGraph ``broadcast(_:shape:name:)``)."""
    label = _label("broadcast", name)
    if hasattr(shape, "graph"):
        raise ShapeError(f"{label}: shape must be a list of ints, not a tensor")
    try:
        shape = as_shape(shape)
    except ShapeError as e:
        raise ShapeError(f"{label}: {e}") from None
    return g.add_op("broadcast", [g.as_tensor(tensor, label)], {"shape": shape}, name).output


@gradient("broadcast")
def _broadcast_gradient(g, op, dy, wanted):
    return [unbroadcast(g, dy, op.inputs[0].shape)]


def _infer_expand(in_types, attrs):
    t = in_types[0]
    axes = attrs["axes"]
    r = len(t.shape) + len(axes)
    norm = normalize_axes(axes, r, "axes")
    shape = list(t.shape)
    for a in norm:
        shape.insert(a, 1)
    return [ShapedType(shape, t.dtype)]


@defop("expand_dims", swift="expandDims(_:axes:name:)", objc="expandDimsOfTensor:axes:name:",
       inputs=("tensor",), infer=_infer_expand, family="shape", kind="view", attrs=("axes",), since=("12.3", "15.4"))
def expand_dims(g, tensor, axes=None, name: Optional[str] = None, *, axis=None):
    """Insert size-1 axes at ``axes`` (an int or list, positions in the output)
    (MPSGraph ``expandDims(_:axes:name:)``; an int is ``expandDims(_:axis:name:)``)."""
    label = _label("expand_dims", name)
    axes = renamed(label, "axis", "axes", axis, axes, ShapeError)
    if axes is None:
        raise ShapeError(f"{label}: give the axes to insert")
    return g.add_op("expand_dims", [g.as_tensor(tensor, label)], {"axes": _int_list(axes, "axes", label)}, name).output


def _infer_squeeze(in_types, attrs):
    t = in_types[0]
    axes = attrs["axes"]
    if axes is None:
        norm = tuple(i for i, d in enumerate(t.shape) if d == 1)
    else:
        norm = normalize_axes(axes, len(t.shape), "axes")
        bad = [a for a in norm if t.shape[a] not in (1, -1)]
        if bad:
            raise ShapeError(f"cannot squeeze axes {bad} of shape {t.shape}: their size is not 1")
    return [ShapedType([d for i, d in enumerate(t.shape) if i not in norm], t.dtype)]


@defop("squeeze", swift="squeeze(_:axes:name:)", objc="squeezeTensor:axes:name:",
       inputs=("tensor",), infer=_infer_squeeze, family="shape", kind="view", attrs=("axes",), since=("12.3", "15.4"))
def squeeze(g, tensor, axes=None, name: Optional[str] = None, *, axis=None):
    """Remove size-1 axes (MPSGraph ``squeeze(_:axes:name:)``).

    ``axes=None`` removes every size-1 axis; on a tensor with dynamic (-1) dims it removes the axes
    known to be 1 when the op is built, so a dynamic dim that turns out to be 1 is kept.
    """
    label = _label("squeeze", name)
    axes = renamed(label, "axis", "axes", axis, axes, ShapeError)
    if isinstance(axes, int):  # MPSGraph's squeeze(_:axis:name:)
        axes = [axes]
    tensor = g.as_tensor(tensor, label)
    if axes is None and -1 in tensor.shape:  # dynamic dims are kept: squeeze the dims known to be 1 now,
        axes = [i for i, d in enumerate(tensor.shape) if d == 1]  # so build-time and run-time ranks agree
    return g.add_op("squeeze", [tensor], {"axes": None if axes is None else _int_list(axes, "axes", label)}, name).output


def _reshape_back(g, op, dy, wanted):
    return [g.reshape(dy, op.inputs[0].shape)]


gradient("expand_dims")(_reshape_back)
gradient("squeeze")(_reshape_back)
