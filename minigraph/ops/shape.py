"""Shape ops: reshape, transpose, permute, slice, concat, broadcast, expand_dims, squeeze
(MPSGraphTensorShapeOps)."""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from ..errors import ShapeError
from ..types import ShapedType, as_shape, int32, num_elements
from ._dynamic import zeros_like
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


@defop("reshape", four_bit=True, swift="reshape(_:shape:name:)", objc="reshapeTensor:withShape:name:",
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
    interleave = attrs.get("interleave", False)
    if not isinstance(interleave, (bool, np.bool_)):
        raise ShapeError(f"interleave must be True or False, got {interleave!r}")
    shape = list(in_types[0].shape)
    for t in in_types[1:]:
        for i in range(r):
            if (i != d or interleave) and t.shape[i] != shape[i] and -1 not in (t.shape[i], shape[i]):
                where = "" if interleave else f" outside dimension {d}"
                need = " (interleaved tensors need one shape)" if interleave else ""
                raise ShapeError(f"shapes {[t.shape for t in in_types]} differ{where}{need}")
    sizes = [t.shape[d] for t in in_types]
    shape[d] = -1 if -1 in sizes else sum(sizes)
    return [ShapedType(shape, in_types[0].dtype)]


@defop("concat", swift="concatTensors(_:dimension:interleave:name:)", objc="concatTensors:dimension:interleave:name:",
       inputs=("tensors",), infer=_infer_concat, family="shape", attrs=("dimension", "interleave"))
def concat(g, tensors, dimension: int, interleave: bool = False, name: Optional[str] = None):
    """Join tensors along ``dimension`` (MPSGraph ``concatTensors(_:dimension:interleave:name:)``;
    without interleave, ``concatTensors(_:dimension:name:)``).

    ``interleave=True`` alternates the tensors' elements along ``dimension``: Apple's example,
    ``[1, 2, 3]`` and ``[4, 5, 6]`` give ``[1, 4, 2, 5, 3, 6]``; the tensors then need one shape.
    https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraph/concattensors(_:dimension:interleave:name:)
    """
    label = _label("concat", name)
    if hasattr(tensors, "graph") or not isinstance(tensors, (list, tuple)) or not tensors:
        raise ShapeError(f"{label}: needs a non-empty list of tensors, got {tensors!r:.80}")
    if not isinstance(interleave, (bool, np.bool_)):
        raise ShapeError(f"{label}: interleave must be True or False, got {interleave!r}")
    ts = [g.as_tensor(t, label) for t in tensors]
    return g.add_op("concat", ts, {"dimension": _int(dimension, "dimension", label),
                                   "interleave": bool(interleave)}, name).output


@gradient("concat")
def _concat_gradient(g, op, dy, wanted):
    """Each piece's slice of dy: a contiguous window, or every K-th element when interleaved."""
    d = op.attrs["dimension"]
    if op.attrs.get("interleave", False):
        k, r = len(op.inputs), len(dy.shape)
        (a,) = normalize_axes(d, r)
        starts, ends, strides = [0] * (a + 1), [0] * (a + 1), [1] * (a + 1)
        strides[a] = k
        mask = (1 << a) - 1  # the axes before a are taken whole
        out = []
        for i, want in enumerate(wanted):
            starts[a] = i
            out.append(g.slice_tensor(dy, starts, ends, strides, start_mask=mask, end_mask=mask | 1 << a)
                       if want else None)
        return out
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


# ------------------------------------------------------------------------------- shape_of, coordinates
def _infer_shape_of(in_types, attrs):
    return [ShapedType((len(in_types[0].shape),), int32)]


@defop("shape_of", swift="shapeOf(_:name:)", objc="shapeOfTensor:name:", inputs=("tensor",),
       infer=_infer_shape_of, family="shape", differentiable=False, since=("12.0", "15.0"))
def shape_of(g, tensor, name: Optional[str] = None):
    """The shape of ``tensor`` as an int32 rank-1 tensor (MPSGraph ``shapeOf(_:name:)``: "the
    values of the static shape of the input tensor",
    https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraph/shapeof(_:name:)).

    A constant of the compiled graph: the values are fixed when the graph is compiled for its
    feeds (a -1 dimension of a placeholder is the size fed then); nothing of ``tensor`` is read.
    """
    label = _label("shape_of", name)
    return g.add_op("shape_of", [g.as_tensor(tensor, label)], {}, name).output


def _infer_coordinate(in_types, attrs):
    return [ShapedType(attrs["with_shape"], int32)]


@defop("coordinate_along_axis", swift="coordinate(alongAxis:withShape:name:)",
       objc="coordinateAlongAxis:withShape:name:", inputs=(), infer=_infer_coordinate, family="shape",
       differentiable=False, attrs=("axis", "with_shape"), since=("12.3", "15.4"))
def coordinate_along_axis(g, axis: int, with_shape: Sequence[int], name: Optional[str] = None):
    """An int32 tensor of shape ``with_shape`` whose element ``[i_0, ..., i_N]`` is ``i_axis``
    (MPSGraph ``coordinate(alongAxis:withShape:name:)``; a negative axis counts from the end,
    https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraph/coordinate(alongaxis:withshape:name:)).

    ``coordinate_along_axis(0, [3, 2])`` is ``[[0, 0], [1, 1], [2, 2]]``. The shape is static.
    """
    label = _label("coordinate_along_axis", name)
    shape = _int_list(with_shape, "with_shape", label)
    if any(d < 0 for d in shape):
        raise ShapeError(f"{label}: with_shape {list(shape)} must hold sizes >= 0 (a static shape)")
    a = _int(axis, "axis", label)
    r = len(shape)
    if not -r <= a < r:
        raise ShapeError(f"{label}: axis {a} is out of range for the shape {list(shape)} "
                         f"(valid: {-r} to {r - 1})" if r else f"{label}: a scalar shape has no axis {a}")
    return g.add_op("coordinate_along_axis", [], {"axis": a % r, "with_shape": shape}, name).output


# ------------------------------------------------------------------------------- strided slices
_MASKS = ("start_mask", "end_mask", "squeeze_mask")
_SLICE_ATTRS = ("starts", "ends", "strides") + _MASKS


def strided_slice(shape, attrs) -> list:
    """Per axis of ``shape``: ``(begin, stride, size, squeezed)``, as TensorFlow's StridedSlice
    (Apple: "Semantics based on TensorFlow Strided Slice Op"). A -1 dimension gives size -1.

    Axes past ``len(starts)`` are taken whole. A squeezed axis takes the one element at its start
    (negative counts from the end; out of range is an error; the start and end masks are ignored
    there, the stride must be > 0). Otherwise a start or end is counted from the end when negative
    and clamped into the axis (to ``[0, n]`` for a positive stride, ``[-1, n - 1]`` for a negative
    one), a masked one is the axis's first or last position in the stride's direction, and the
    size is ``ceil((end - begin) / stride)`` or 0: NumPy's basic slicing ``x[begin:end:stride]``.
    """
    out: list = []
    for d, n in enumerate(shape):
        if d >= len(attrs["starts"]):
            out.append((0, 1, n, False))
            continue
        b, e, s = attrs["starts"][d], attrs["ends"][d], attrs["strides"][d]
        bit = 1 << d
        if s == 0:
            raise ShapeError(f"strides {list(attrs['strides'])}: stride {d} is 0 (it must not be)")
        if attrs["squeeze_mask"] & bit:
            if s < 0:
                raise ShapeError(f"axis {d} is squeezed (squeeze_mask) and needs a positive stride, got {s}")
            if n == -1:
                if b < 0:
                    raise ShapeError(f"axis {d} is squeezed at {b} from the end but its size is known only at "
                                     "run time")
                out.append((b, 1, 1, True))
                continue
            i = b + n if b < 0 else b
            if not 0 <= i < n:
                raise ShapeError(f"axis {d} of size {n} is squeezed at index {b}, outside it "
                                 f"(valid: {-n} to {n - 1})")
            out.append((i, 1, 1, True))
            continue
        if n == -1:
            out.append((None, s, -1, False))
            continue
        lo, hi = (0, n) if s > 0 else (-1, n - 1)

        def canon(x, masked, first):
            if masked:
                return lo if (s > 0) == first else hi
            x = x + n if x < 0 else x
            return min(max(x, lo), hi)
        begin = canon(b, attrs["start_mask"] & bit, True)
        end = canon(e, attrs["end_mask"] & bit, False)
        span = end - begin
        size = 0 if span == 0 or (span > 0) != (s > 0) else span // s + (span % s != 0)
        out.append((begin, s, size, False))
    return out


def strided_slice_shape(shape, attrs) -> tuple:
    """The result shape of ``slice_tensor`` on ``shape`` (squeezed axes left out)."""
    return tuple(size for _, _, size, sq in strided_slice(shape, attrs) if not sq)


def _slice_attrs(label, rank, starts, ends, strides, start_mask, end_mask, squeeze_mask) -> dict:
    a: dict = {"starts": _int_list(starts, "starts", label), "ends": _int_list(ends, "ends", label),
               "strides": _int_list(strides, "strides", label)}
    if not len(a["starts"]) == len(a["ends"]) == len(a["strides"]):
        raise ShapeError(f"{label}: starts, ends and strides need one entry per axis, got {len(a['starts'])}, "
                         f"{len(a['ends'])} and {len(a['strides'])} entries")
    if len(a["starts"]) > rank:
        raise ShapeError(f"{label}: {len(a['starts'])} starts for a tensor of rank {rank} (at most one per axis)")
    for m, v in zip(_MASKS, (start_mask, end_mask, squeeze_mask)):
        v = _int(v, m, label)
        if not 0 <= v < 2 ** 32:
            raise ShapeError(f"{label}: {m} must be a UInt32 bit mask (0 to 2**32 - 1), got {v}")
        a[m] = v
    return a


def _infer_slice_tensor(in_types, attrs):
    t = in_types[0]
    return [ShapedType(strided_slice_shape(t.shape, attrs), t.dtype)]


@defop("slice_tensor", swift="sliceTensor(_:starts:ends:strides:startMask:endMask:squeezeMask:name:)",
       objc="sliceTensor:starts:ends:strides:startMask:endMask:squeezeMask:name:", inputs=("tensor",),
       infer=_infer_slice_tensor, family="shape", attrs=_SLICE_ATTRS)
def slice_tensor(g, tensor, starts: Sequence[int], ends: Sequence[int], strides: Sequence[int],
                 start_mask: int = 0, end_mask: int = 0, squeeze_mask: int = 0, name: Optional[str] = None):
    """A strided slice: from ``starts`` up to (not including) ``ends`` by ``strides`` per axis
    (MPSGraph ``sliceTensor(_:starts:ends:strides:startMask:endMask:squeezeMask:name:)``,
    TensorFlow's StridedSlice semantics; bit ``i`` of a mask is axis ``i``).

    A start or end whose ``start_mask`` / ``end_mask`` bit is set is ignored (the whole axis in the
    stride's direction); ``squeeze_mask`` axes take one element and leave the result. Negative
    starts and ends count from the end, out-of-range ones are clamped, as NumPy's
    ``x[start:end:stride]``; a negative stride walks backwards.
    """
    label = _label("slice_tensor", name)
    tensor = g.as_tensor(tensor, label)
    attrs = _slice_attrs(label, len(tensor.shape), starts, ends, strides, start_mask, end_mask, squeeze_mask)
    return g.add_op("slice_tensor", [tensor], attrs, name).output


def _infer_slice_gradient_tensor(in_types, attrs):
    t = in_types[0]
    shape = list(attrs["input_shape"])
    plan = strided_slice(shape, attrs)
    want = strided_slice_shape(shape, attrs)
    if len(t.shape) != len(want) or any(a != b and -1 not in (a, b) for a, b in zip(t.shape, want)):
        raise ShapeError(f"incoming gradient shape {t.shape} does not match the strided slice's result "
                         f"{want} of input_shape {tuple(shape)}")
    k = 0
    for d, (begin, s, size, sq) in enumerate(plan):
        if not sq:
            if shape[d] == -1:  # known at run time when the axis is read whole, in order
                whole = d >= len(attrs["starts"]) or (s == 1 and attrs["start_mask"] >> d & 1
                                                      and attrs["end_mask"] >> d & 1)
                if not whole:
                    raise ShapeError(f"input_shape {tuple(shape)}: axis {d} is dynamic (-1) and not read whole "
                                     "(start and end masked, stride 1): its size cannot follow from the gradient")
                shape[d] = t.shape[k]
            k += 1
    return [ShapedType(shape, t.dtype)]


@defop("slice_gradient_tensor",
       swift="sliceGradientTensor(_:fwdInShapeTensor:starts:ends:strides:startMask:endMask:squeezeMask:name:)",
       objc="sliceGradientTensor:fwdInShapeTensor:starts:ends:strides:startMask:endMask:squeezeMask:name:",
       inputs=("incoming_gradient",), infer=_infer_slice_gradient_tensor, family="shape",
       attrs=("input_shape",) + _SLICE_ATTRS)
def slice_gradient_tensor(g, incoming_gradient, input_shape, starts: Sequence[int], ends: Sequence[int],
                          strides: Sequence[int], start_mask: int = 0, end_mask: int = 0, squeeze_mask: int = 0,
                          name: Optional[str] = None):
    """Zeros of ``input_shape`` with ``incoming_gradient`` where ``slice_tensor`` with the same
    arguments read (MPSGraph
    ``sliceGradientTensor(_:fwdInShapeTensor:starts:ends:strides:startMask:endMask:squeezeMask:name:)``;
    its ``fwdInShapeTensor`` is given here as the shape itself, a list of ints or a tensor's ``.shape``).
    """
    label = _label("slice_gradient_tensor", name)
    try:
        shape = as_shape(input_shape, "input_shape")
    except ShapeError as e:
        raise ShapeError(f"{label}: {e}") from None
    dy = g.as_tensor(incoming_gradient, label)
    attrs = {"input_shape": shape,
             **_slice_attrs(label, len(shape), starts, ends, strides, start_mask, end_mask, squeeze_mask)}
    return g.add_op("slice_gradient_tensor", [dy], attrs, name).output


def _infer_slice_update(in_types, attrs):
    same_dtype(in_types, "data_tensor and update")
    t, u = in_types
    want = strided_slice_shape(t.shape, attrs)
    if len(u.shape) != len(want) or any(a != b and -1 not in (a, b) for a, b in zip(u.shape, want)):
        raise ShapeError(f"update shape {u.shape} does not match the strided slice {want} of data_tensor "
                         f"shape {t.shape} it replaces (squeezed axes left out)")
    return [t]


@defop("slice_update_data_tensor",
       swift="sliceUpdateDataTensor(_:update:starts:ends:strides:startMask:endMask:squeezeMask:name:)",
       objc="sliceUpdateDataTensor:updateTensor:starts:ends:strides:startMask:endMask:squeezeMask:name:",
       inputs=("data_tensor", "update"), infer=_infer_slice_update, family="shape", attrs=_SLICE_ATTRS,
       since=("14.4", "17.4"))
def slice_update_data_tensor(g, data_tensor, update, starts: Sequence[int], ends: Sequence[int],
                             strides: Sequence[int], start_mask: int = 0, end_mask: int = 0,
                             squeeze_mask: int = 0, name: Optional[str] = None):
    """``data_tensor`` with the strided slice that ``slice_tensor`` would read replaced by
    ``update`` (MPSGraph
    ``sliceUpdateDataTensor(_:update:starts:ends:strides:startMask:endMask:squeezeMask:name:)``).

    ``update`` has exactly the slice's shape (squeezed axes left out; no broadcasting) and
    ``data_tensor``'s dtype; the result has ``data_tensor``'s type. Same slicing rules as
    ``slice_tensor``.
    """
    label = _label("slice_update_data_tensor", name)
    data = g.as_tensor(data_tensor, label)
    upd = g.as_tensor(update, label)
    attrs = _slice_attrs(label, len(data.shape), starts, ends, strides, start_mask, end_mask, squeeze_mask)
    return g.add_op("slice_update_data_tensor", [data, upd], attrs, name).output


def _slice_args(a) -> tuple:
    return a["starts"], a["ends"], a["strides"], a["start_mask"], a["end_mask"], a["squeeze_mask"]


@gradient("slice_tensor")
def _slice_tensor_gradient(g, op, dy, wanted):
    """MPSGraph's slice_gradient_tensor; where the input's shape holds -1 (known when the graph
    runs) dy is written into zeros shaped like the input instead, the same values."""
    x = op.inputs[0]
    if -1 in x.shape:
        return [g.slice_update_data_tensor(zeros_like(g, x), dy, *_slice_args(op.attrs))]
    return [g.slice_gradient_tensor(dy, x.shape, *_slice_args(op.attrs))]


@gradient("slice_gradient_tensor")
def _slice_gradient_tensor_gradient(g, op, dy, wanted):
    return [g.slice_tensor(dy, *_slice_args(op.attrs))]


@gradient("slice_update_data_tensor")
def _slice_update_gradient(g, op, dy, wanted):
    """The data's gradient is dy with the replaced slice zeroed; the update's is that slice of dy."""
    a = _slice_args(op.attrs)
    d_data = g.slice_update_data_tensor(dy, zeros_like(g, op.inputs[1]), *a) if wanted[0] else None
    d_update = g.slice_tensor(dy, *a) if wanted[1] else None
    return [d_data, d_update]
