"""Gather, scatter and one-hot (MPSGraphGatherOps, MPSGraphGatherAlongAxisOps, MPSGraphScatterOps,
MPSGraphScatterNDOps, MPSGraphScatterAlongAxisOps, MPSGraphOneHotOps).

Index rules, the same on every backend (docs/gather.md):

- indices are int32, int64, uint32 (or another integer type); a negative index ``-n <= i < 0``
  counts from the end of its axis, as in NumPy;
- an index out of ``[-n, n)`` found at run time gives 0 in a gather (Apple documents this for
  ``gatherAlongAxis``; minigraph applies it to all three gathers) and is skipped by a scatter
  (Apple documents this for ``scatterAlongAxis``; minigraph applies it to all three scatters);
  indices that are constants are checked when the op is built, and an index out of range is an
  error naming the op, the index, where it is and the valid range;
- ``one_hot``: an index outside ``[0, depth)``, negative ones included, gives a row of
  ``off_value`` (TensorFlow's rule);
- a scatter applies its updates in row-major order of ``updates`` (for ``scatter_nd``, of the
  index tuples); colliding updates combine one after the other in that order (ADD accumulates,
  SET keeps the last), so both backends give the same bits. MIN and MAX propagate NaN. float16
  accumulates in float32 and rounds once.
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from ..descriptors import ScatterMode
from ..errors import DescriptorError, DTypeError, NotDifferentiableError, ShapeError
from ..types import ShapedType, as_dtype, as_shape, float32, num_elements
from .registry import defop, gradient

_FAMILY = "gather"


def _label(type: str, name) -> str:
    return f"{type} op {(name or type)!r}"


def _int_attr(v: Any, what: str, label: str) -> int:
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
        raise ShapeError(f"{label}: {what} must be an int, got {v!r}")
    return int(v)


def _axis(v: Any, rank: int, label: str, what: str = "axis") -> int:
    a = _int_attr(v, what, label)
    if not -rank <= a < rank:
        raise ShapeError(f"{label}: {what} {a} is out of range for a tensor of rank {rank} "
                         f"(valid: {-rank}..{rank - 1})")
    return a % rank


def _mode(v: Any, label: str) -> ScatterMode:
    if isinstance(v, ScatterMode):
        return v
    if isinstance(v, str) and v.upper() in ScatterMode.__members__:
        return ScatterMode[v.upper()]
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool) and int(v) in {m.value for m in ScatterMode}:
        return ScatterMode(int(v))
    raise ShapeError(f"{label}: mode must be an mg.ScatterMode ({', '.join(ScatterMode.__members__)}), got {v!r}")


def _check_indices(t: ShapedType, what: str = "indices") -> None:
    if not t.dtype.is_integer:
        raise DTypeError(f"{what} must be an integer tensor (int32 or int64, as MPSGraph takes), got {t.dtype.name}")


def _check_updates(t: ShapedType, mode: Optional[ScatterMode] = None) -> None:
    if mode is None or mode == ScatterMode.SET:
        return
    if t.dtype.is_bool:
        raise DTypeError(f"scatter mode {mode.name} needs numbers; bool tensors take only ScatterMode.SET")
    if mode == ScatterMode.DIV and not t.dtype.is_floating:
        raise DTypeError(f"scatter mode DIV needs a floating-point tensor (got {t.dtype.name}), as g.division does")


def _dims_match(a: Sequence[int], b: Sequence[int]) -> bool:
    return len(a) == len(b) and all(x == y or -1 in (x, y) for x, y in zip(a, b))


def _same_dtype(a: ShapedType, b: ShapedType, what: str) -> None:
    if a.dtype != b.dtype:
        raise DTypeError(f"{what} have different dtypes {a.dtype.name} and {b.dtype.name}; cast one with g.cast(...)")


def identity(mode: ScatterMode, dtype: np.dtype):
    """What ``mode`` leaves unchanged: the value the updates aimed at one element combine from."""
    if mode in (ScatterMode.MUL, ScatterMode.DIV):
        return 1
    if mode in (ScatterMode.MIN, ScatterMode.MAX):
        if dtype.kind == "f":
            return np.inf if mode == ScatterMode.MIN else -np.inf
        info = np.iinfo(dtype)
        return info.max if mode == ScatterMode.MIN else info.min
    return 0



# ----------------------------------------------------------------------------- constant indices
def check_constant_indices(indices, sizes, label: str, what: str = "indices") -> None:
    """Raise when ``indices`` is a constant holding an index outside ``[-n, n)``; ``sizes`` gives
    ``n`` per element: an int, or per last-axis coordinate a tuple (gather_nd / scatter_nd)."""
    op = indices.operation
    if op.type != "constant" or -1 in ((sizes,) if isinstance(sizes, int) else tuple(sizes)):
        return
    arr = np.asarray(op.attrs["value"]).astype(np.int64)
    n = np.asarray(sizes, np.int64)
    bad = (arr < -n) | (arr >= n)
    if bad.any():
        pos = tuple(int(i) for i in np.argwhere(bad)[0])
        size = int(n if n.ndim == 0 else n[pos[-1]])
        raise ShapeError(f"{label}: {what} {pos} holds {int(arr[pos])}, outside the valid range "
                         f"{-size}..{size - 1} of an axis of size {size} (negative indices count from the end)")


# ----------------------------------------------------------------------------- gather
def _infer_gather(in_types, attrs):
    u, i = in_types
    _check_indices(i)
    axis, b = attrs["axis"], attrs["batch_dimensions"]
    ur, ir = len(u.shape), len(i.shape)
    if not 0 <= b <= min(axis, ir):
        raise ShapeError(f"batch_dimensions {b} must be between 0 and min(axis {axis}, indices rank {ir})")
    if not _dims_match(u.shape[:b], i.shape[:b]):
        raise ShapeError(f"the first {b} (batch) dimensions of updates {u.shape} and indices {i.shape} must be equal")
    if axis >= ur:
        raise ShapeError(f"axis {axis} is out of range for updates of rank {ur}")
    return [ShapedType(tuple(u.shape[:axis]) + tuple(i.shape[b:]) + tuple(u.shape[axis + 1:]), u.dtype)]


@defop("gather", swift="gather(withUpdatesTensor:indicesTensor:axis:batchDimensions:name:)",
       objc="gatherWithUpdatesTensor:indicesTensor:axis:batchDimensions:name:", inputs=("updates", "indices"),
       infer=_infer_gather, family=_FAMILY, attrs=("axis", "batch_dimensions"))
def gather(g, updates, indices, axis: int, batch_dimensions: int = 0, name: Optional[str] = None):
    """Slices of ``updates`` along ``axis`` at ``indices``; the result's shape is
    ``updates.shape[:axis] + indices.shape[batch_dimensions:] + updates.shape[axis+1:]``. With
    batch dimensions B, the first B axes of updates and indices pair up (each batch reads its own
    indices). Negative indices count from the end; out of range at run time gives 0
    (MPSGraph ``gather(withUpdatesTensor:indicesTensor:axis:batchDimensions:name:)``)."""
    label = _label("gather", name)
    updates = g.as_tensor(updates, label)
    indices = g.as_tensor(indices, label, dtype=as_dtype("int32") if not hasattr(indices, "graph") else None)
    if updates.rank == 0:
        raise ShapeError(f"{label}: updates must have rank >= 1 (got a scalar)")
    a = _axis(axis, updates.rank, label)
    b = _int_attr(batch_dimensions, "batch_dimensions", label)
    check_constant_indices(indices, updates.shape[a], label)
    return g.add_op("gather", [updates, indices], {"axis": a, "batch_dimensions": b}, name).output


@gradient("gather")
def _gather_gradient(g, op, dy, wanted):
    if not wanted[0]:
        return [None, None]
    u, i = op.inputs
    axis, b = op.attrs["axis"], op.attrs["batch_dimensions"]
    n = num_elements(i.shape[b:])
    rows = list(u.shape[:axis]) + [n] + list(u.shape[axis + 1:])
    dy_rows = g.reshape(dy, rows)
    if b == 0:
        return [g.scatter(dy_rows, g.reshape(i, [n]), u.shape, axis, ScatterMode.ADD), None]
    # batch dimensions: each row's index, broadcast over the other axes, scattered along the axis
    ones = [1] * (axis - b)
    idx = g.reshape(i, list(i.shape[:b]) + ones + [n] + [1] * (u.rank - axis - 1))
    idx = g.select(dy_rows, idx, idx)  # broadcast to dy's shape, known or not until run time
    return [g.scatter_along_axis(dy_rows, idx, _zeros(g, u), axis, ScatterMode.ADD), None]


def _filled(g, like, value):
    """A tensor of ``like``'s shape (known or not until run time) and dtype holding ``value``."""
    c = g.constant(np.asarray(value, like.dtype.np_dtype))
    return g.select(like, c, c)


def _zeros(g, like):
    return _filled(g, like, 0)


# ----------------------------------------------------------------------------- gather along axis
def _infer_gather_along_axis(in_types, attrs):
    u, i = in_types
    _check_indices(i)
    axis = attrs["axis"]
    if len(u.shape) != len(i.shape):
        raise ShapeError(f"updates {u.shape} and indices {i.shape} must have the same rank")
    for d, (x, y) in enumerate(zip(u.shape, i.shape)):
        if d != axis and x != y and -1 not in (x, y):
            raise ShapeError(f"updates {u.shape} and indices {i.shape} must have equal sizes except at axis {axis} "
                             f"(they differ at axis {d})")
    return [ShapedType(i.shape, u.dtype)]


@defop("gather_along_axis", swift="gatherAlongAxis(_:updates:indices:name:)",
       objc="gatherAlongAxis:withUpdatesTensor:indicesTensor:name:", inputs=("updates", "indices"),
       infer=_infer_gather_along_axis, family=_FAMILY, attrs=("axis",), since=("12.3", "15.4"))
def gather_along_axis(g, updates, indices, axis: int, name: Optional[str] = None):
    """``result[..., j, ...] = updates[..., indices[..., j, ...], ...]`` along ``axis``, as
    ``np.take_along_axis`` and ``torch.gather``; the result has the shape of ``indices``. Negative
    indices count from the end; out of range at run time gives 0, as Apple documents
    (MPSGraph ``gatherAlongAxis(_:updates:indices:name:)``)."""
    label = _label("gather_along_axis", name)
    updates = g.as_tensor(updates, label)
    indices = g.as_tensor(indices, label, dtype=as_dtype("int32") if not hasattr(indices, "graph") else None)
    if updates.rank == 0:
        raise ShapeError(f"{label}: updates must have rank >= 1 (got a scalar)")
    a = _axis(axis, updates.rank, label)
    check_constant_indices(indices, updates.shape[a], label)
    return g.add_op("gather_along_axis", [updates, indices], {"axis": a}, name).output


@gradient("gather_along_axis")
def _gather_along_axis_gradient(g, op, dy, wanted):
    if not wanted[0]:
        return [None, None]
    u, i = op.inputs
    return [g.scatter_along_axis(dy, i, _zeros(g, u), op.attrs["axis"], ScatterMode.ADD), None]


# ----------------------------------------------------------------------------- gather nd
def _nd_parts(shape_u, shape_i, b: int, what: str = "updates"):
    """(K, the result shape of gather_nd) after checking the shapes."""
    if len(shape_i) < 1:
        raise ShapeError("indices must have rank >= 1 (its last axis holds the index tuples)")
    k = shape_i[-1]
    if k == -1:
        raise ShapeError("the last axis of indices (the length of each index tuple) must be known when the op is built")
    if not 0 <= b < len(shape_i):
        raise ShapeError(f"batch_dimensions {b} must be between 0 and indices rank - 1 ({len(shape_i) - 1})")
    if not 1 <= k <= len(shape_u) - b:
        raise ShapeError(f"index tuples of length {k} (indices.shape[-1]) must have 1 to {len(shape_u) - b} entries "
                         f"for {what} of shape {tuple(shape_u)} with {b} batch dimensions")
    if not _dims_match(shape_u[:b], shape_i[:b]):
        raise ShapeError(f"the first {b} (batch) dimensions of {what} {tuple(shape_u)} and indices {tuple(shape_i)} "
                         "must be equal")
    return k, tuple(shape_i[:-1]) + tuple(shape_u[b + k:])


def _infer_gather_nd(in_types, attrs):
    u, i = in_types
    _check_indices(i)
    _, shape = _nd_parts(u.shape, i.shape, attrs["batch_dimensions"])
    return [ShapedType(shape, u.dtype)]


@defop("gather_nd", swift="gatherND(withUpdatesTensor:indicesTensor:batchDimensions:name:)",
       objc="gatherNDWithUpdatesTensor:indicesTensor:batchDimensions:name:", inputs=("updates", "indices"),
       infer=_infer_gather_nd, family=_FAMILY, attrs=("batch_dimensions",))
def gather_nd(g, updates, indices, batch_dimensions: int = 0, name: Optional[str] = None):
    """Slices of ``updates`` at the index tuples along the last axis of ``indices`` (length K,
    indexing axes B..B+K-1 after B batch axes); the result's shape is
    ``indices.shape[:-1] + updates.shape[B+K:]``. Negative indices count from the end; an index
    tuple with an entry out of range at run time gives a slice of 0
    (MPSGraph ``gatherND(withUpdatesTensor:indicesTensor:batchDimensions:name:)``)."""
    label = _label("gather_nd", name)
    updates = g.as_tensor(updates, label)
    indices = g.as_tensor(indices, label, dtype=as_dtype("int32") if not hasattr(indices, "graph") else None)
    b = _int_attr(batch_dimensions, "batch_dimensions", label)
    if indices.rank and indices.shape[-1] != -1 and 0 <= b and indices.shape[-1] <= updates.rank - b:
        check_constant_indices(indices, tuple(updates.shape[b:b + indices.shape[-1]]), label)
    return g.add_op("gather_nd", [updates, indices], {"batch_dimensions": b}, name).output


@gradient("gather_nd")
def _gather_nd_gradient(g, op, dy, wanted):
    if not wanted[0]:
        return [None, None]
    u, i = op.inputs
    return [g.scatter_nd(dy, i, u.shape, op.attrs["batch_dimensions"], ScatterMode.ADD), None]


# ----------------------------------------------------------------------------- scatter along axis
def _infer_scatter_along_axis(in_types, attrs):
    u, i, d = in_types
    _check_indices(i)
    _same_dtype(u, d, "updates and data")
    _check_updates(d, attrs["mode"])
    axis = attrs["axis"]
    if not _dims_match(u.shape, i.shape):
        raise ShapeError(f"updates {u.shape} and indices {i.shape} must have the same shape")
    if len(d.shape) != len(u.shape):
        raise ShapeError(f"data {d.shape} and updates {u.shape} must have the same rank")
    for k, (x, y) in enumerate(zip(d.shape, u.shape)):
        if k != axis and x != y and -1 not in (x, y):
            raise ShapeError(f"data {d.shape} and updates {u.shape} must have equal sizes except at axis {axis} "
                             f"(they differ at axis {k})")
    return [d]


@defop("scatter_along_axis", swift="scatterAlongAxis(_:data:updates:indices:mode:name:)",
       objc="scatterAlongAxis:withDataTensor:updatesTensor:indicesTensor:mode:name:",
       inputs=("updates", "indices", "data"), infer=_infer_scatter_along_axis, family=_FAMILY,
       attrs=("axis", "mode"), since=("12.3", "15.4"))
def scatter_along_axis(g, updates, indices, data: Optional[Any], axis: int, mode: Any, name: Optional[str] = None,
                       shape: Optional[Sequence[int]] = None):
    """``data`` with each ``updates[..., j, ...]`` combined (``mode``) into
    ``data[..., indices[..., j, ...], ...]`` along ``axis``, as ``torch.Tensor.scatter_reduce``;
    collisions combine in row-major order of ``updates``; out-of-range indices are skipped, as
    Apple documents (MPSGraph ``scatterAlongAxis(_:data:updates:indices:mode:name:)``).

    With ``shape`` and ``data=None`` (MPSGraph ``scatterAlongAxis(_:updates:indices:shape:mode:name:)``)
    the result is a tensor of ``shape`` and ``updates``' dtype "initialized with an initial value
    corresponding to mode" (Apple's header): ``mode``'s identity (0 for ADD, SUB and SET, 1 for MUL
    and DIV, +inf / -inf, or the integer type's largest / smallest value, for MIN / MAX), which
    the elements no update reaches keep.

    Args:
        updates: A tensor of this graph (the values scattered), of ``indices``' shape.
        indices: An int32 or int64 tensor of ``updates``' shape: positions along ``axis``.
        data: The tensor scattered onto; None with ``shape``.
        axis: One axis; a negative value counts from the end.
        mode: A ``ScatterMode`` (or its name): how an update combines with its element.
        name: The op's name (MPSGraph's ``name:``).
        shape: The result's shape (static ints) for the form without ``data``.

    Returns:
        Tensor: ``data``'s shape and dtype (or ``shape`` and ``updates``' dtype).

    Raises:
        MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit,
            both or neither of ``data`` and ``shape`` given; the message names the op.
    """
    label = _label("scatter_along_axis", name)
    if shape is not None:
        if data is not None:
            raise DescriptorError(f"{label}: give data or shape, not both (shape= is the form that "
                                  "scatters into a fresh tensor)")
        return _scatter_along_axis_into(g, updates, indices, shape, axis, mode, name, label)
    if data is None:
        raise DescriptorError(f"{label}: data is None; give a data tensor, or shape= for the form that "
                              "scatters into a fresh tensor of that shape")
    data = g.as_tensor(data, label)
    updates = g.as_tensor(updates, label, like=data)
    indices = g.as_tensor(indices, label, dtype=as_dtype("int32") if not hasattr(indices, "graph") else None)
    if data.rank == 0:
        raise ShapeError(f"{label}: data must have rank >= 1 (got a scalar)")
    a = _axis(axis, data.rank, label)
    check_constant_indices(indices, data.shape[a], label)
    return g.add_op("scatter_along_axis", [updates, indices, data], {"axis": a, "mode": _mode(mode, label)},
                    name).output


def _scatter_along_axis_into(g, updates, indices, shape, axis, mode, name, label):
    """The shape form: the data-form scatter onto a constant of ``mode``'s identity."""
    updates = g.as_tensor(updates, label)
    try:
        out_shape = tuple(as_shape(shape, "shape"))
    except ShapeError as e:
        raise ShapeError(f"{label}: {e}") from None
    if not out_shape or -1 in out_shape:
        raise ShapeError(f"{label}: shape {list(out_shape)} must be static with rank >= 1 (the result's shape)")
    m = _mode(mode, label)
    dt = updates.dtype.np_dtype
    with g.name_scope(name or "scatter_along_axis"):
        base = g.constant(np.asarray(identity(m, dt), dt), shape=out_shape, name="initial")
        return g.scatter_along_axis(updates, indices, base, axis, m)


def _not_differentiable(op) -> NotDifferentiableError:
    return NotDifferentiableError(
        f"{op.type} op {op.name!r} (built at {op.location}): scatter mode {op.attrs['mode'].name} has no gradient "
        "rule; ADD, SUB and SET do")


@gradient("scatter_along_axis")
def _scatter_along_axis_gradient(g, op, dy, wanted):
    """ADD/SUB: the updates' gradient is dy gathered back where they went; data's is dy. SET:
    data's positions that were overwritten get 0; the updates' gradient assumes no two updates
    hit one element (each then gets dy of its target)."""
    mode = op.attrs["mode"]
    if mode not in (ScatterMode.ADD, ScatterMode.SUB, ScatterMode.SET):
        raise _not_differentiable(op)
    u, i, d = op.inputs
    axis = op.attrs["axis"]
    du = dd = None
    if wanted[0]:
        du = g.gather_along_axis(dy, i, axis)
        du = g.negative(du) if mode == ScatterMode.SUB else du
    if wanted[2]:
        dd = dy
        if mode == ScatterMode.SET:
            ones = _filled(g, d, 1)
            kept = g.scatter_along_axis(_zeros(g, u), i, ones, axis, ScatterMode.SET)
            dd = g.multiplication(dy, kept)
    return [du, None, dd]


# ----------------------------------------------------------------------------- scatter
def _infer_scatter(in_types, attrs):
    u, i = in_types
    _check_indices(i)
    _check_updates(u, attrs["mode"])
    shape, axis = tuple(attrs["shape"]), attrs["axis"]
    if len(i.shape) != 1:
        raise ShapeError(f"indices must have rank 1 (got shape {i.shape})")
    if len(u.shape) != len(shape):
        raise ShapeError(f"updates {u.shape} must have the rank of the result shape {shape}")
    want = shape[:axis] + (i.shape[0],) + shape[axis + 1:]
    if not _dims_match(u.shape, want):
        raise ShapeError(f"updates {u.shape} must have shape {want}: the result shape {shape} with axis {axis} "
                         f"of the length of indices ({i.shape[0]})")
    return [ShapedType(tuple(d if d != -1 or k == axis else u.shape[k] for k, d in enumerate(shape)), u.dtype)]


@defop("scatter", swift="scatter(_:indices:shape:axis:mode:name:)",
       objc="scatterWithUpdatesTensor:indicesTensor:shape:axis:mode:name:", inputs=("updates", "indices"),
       infer=_infer_scatter, family=_FAMILY, attrs=("shape", "axis", "mode"), since=("12.0", "15.0"))
def scatter(g, updates, indices, shape: Sequence[int], axis: int, mode: Any, name: Optional[str] = None):
    """A tensor of ``shape`` where each slice ``updates[..., k, ...]`` along ``axis`` is combined
    into slice ``indices[k]`` (from ``mode``'s identity: the updates' sum, product, minimum, ...)
    and every element no update reaches is 0, in every mode; the transpose of ``gather`` with ADD.
    ``shape`` may hold -1 on the axes other than ``axis``: their sizes come from ``updates``
    (MPSGraph ``scatter(_:indices:shape:axis:mode:name:)``)."""
    label = _label("scatter", name)
    updates = g.as_tensor(updates, label)
    indices = g.as_tensor(indices, label, dtype=as_dtype("int32") if not hasattr(indices, "graph") else None)
    try:
        out_shape = as_shape(shape, "shape")
    except ShapeError as e:
        raise ShapeError(f"{label}: {e}") from None
    if not out_shape:
        raise ShapeError(f"{label}: shape must have rank >= 1")
    a = _axis(axis, len(out_shape), label)
    if out_shape[a] == -1:
        raise ShapeError(f"{label}: the size of the scattered axis {a} must be known (shape {tuple(out_shape)}; "
                         "-1 is allowed only on the other axes, whose sizes come from updates)")
    check_constant_indices(indices, out_shape[a], label)
    return g.add_op("scatter", [updates, indices], {"shape": tuple(out_shape), "axis": a,
                                                    "mode": _mode(mode, label)}, name).output


def _gathered_back(gather_back):
    """The rule of a scatter into a fresh tensor: each update's gradient is dy read back where it
    went (``gather_back(g, dy, op)``), negated for SUB; MUL, DIV, MIN and MAX are not differentiable."""
    def rule(g, op, dy, wanted):
        mode = op.attrs["mode"]
        if mode not in (ScatterMode.ADD, ScatterMode.SUB, ScatterMode.SET):
            raise _not_differentiable(op)
        if not wanted[0]:
            return [None, None]
        du = gather_back(g, dy, op)
        return [g.negative(du) if mode == ScatterMode.SUB else du, None]
    return rule


gradient("scatter")(_gathered_back(lambda g, dy, op: g.gather(dy, op.inputs[1], op.attrs["axis"])))


# ----------------------------------------------------------------------------- scatter nd
def _infer_scatter_nd(in_types, attrs):
    u, i = in_types
    _check_indices(i)
    _check_updates(u, attrs["mode"])
    shape, b = tuple(attrs["shape"]), attrs["batch_dimensions"]
    k, want = _nd_parts(shape, i.shape, b, "the result shape")
    if not _dims_match(u.shape, want):
        raise ShapeError(f"updates {u.shape} must have shape {want} (indices.shape[:-1] + shape[B+K:])")
    known = tuple(i.shape[:b]) + tuple(shape[b:b + k]) + tuple(u.shape[len(i.shape) - 1:])
    return [ShapedType(tuple(d if d != -1 else known[j] for j, d in enumerate(shape)), u.dtype)]


@defop("scatter_nd", swift="scatterND(withUpdatesTensor:indicesTensor:shape:batchDimensions:mode:name:)",
       objc="scatterNDWithUpdatesTensor:indicesTensor:shape:batchDimensions:mode:name:",
       inputs=("updates", "indices"), infer=_infer_scatter_nd, family=_FAMILY,
       attrs=("shape", "batch_dimensions", "mode"))
def scatter_nd(g, updates, indices, shape: Sequence[int], batch_dimensions: int = 0,
               mode: Any = None, name: Optional[str] = None):
    """A tensor of ``shape`` where each slice of ``updates`` is combined at the index tuple along
    the last axis of ``indices`` (from ``mode``'s identity) and every slice no update reaches is 0,
    in every mode; the transpose of ``gather_nd`` with ADD; ``mode=None`` is ADD, as MPSGraph's
    scatterND without ``mode:`` sums collisions. ``shape`` may hold -1 on the batch and trailing
    axes (their sizes come from indices and updates)
    (MPSGraph ``scatterND(withUpdatesTensor:indicesTensor:shape:batchDimensions:mode:name:)``)."""
    label = _label("scatter_nd", name)
    updates = g.as_tensor(updates, label)
    indices = g.as_tensor(indices, label, dtype=as_dtype("int32") if not hasattr(indices, "graph") else None)
    try:
        out_shape = as_shape(shape, "shape")
    except ShapeError as e:
        raise ShapeError(f"{label}: {e}") from None
    b = _int_attr(batch_dimensions, "batch_dimensions", label)
    if indices.rank and indices.shape[-1] != -1 and 0 <= b and indices.shape[-1] <= len(out_shape) - b:
        indexed = tuple(out_shape[b:b + indices.shape[-1]])
        if -1 in indexed:
            raise ShapeError(f"{label}: the sizes of the indexed axes {b}..{b + len(indexed) - 1} must be known "
                             f"(shape {tuple(out_shape)}; -1 is allowed only on the batch and trailing axes)")
        check_constant_indices(indices, indexed, label)
    return g.add_op("scatter_nd", [updates, indices], {"shape": tuple(out_shape), "batch_dimensions": b,
                                                       "mode": _mode(ScatterMode.ADD if mode is None else mode, label)},
                    name).output


gradient("scatter_nd")(_gathered_back(lambda g, dy, op: g.gather_nd(dy, op.inputs[1], op.attrs["batch_dimensions"])))


# ----------------------------------------------------------------------------- scatters onto data
def _with_data(infer_fresh):
    """The infer rule of a scatter onto ``data`` (inputs data, updates, indices): the fresh
    scatter's rule with ``data``'s shape as the result shape; the result has ``data``'s type."""
    def infer(in_types, attrs):
        d, u, i = in_types
        _same_dtype(u, d, "updates and data")
        (out,) = infer_fresh([u, i], {**attrs, "shape": tuple(d.shape)})
        if not _dims_match(out.shape, d.shape):
            raise ShapeError(f"updates {u.shape} and indices {i.shape} do not fit data {d.shape}")
        return [d]
    return infer


def _data_inputs(g, data, updates, indices, label):
    data = g.as_tensor(data, label)
    updates = g.as_tensor(updates, label, like=data)
    indices = g.as_tensor(indices, label, dtype=as_dtype("int32") if not hasattr(indices, "graph") else None)
    if data.rank == 0:
        raise ShapeError(f"{label}: data must have rank >= 1 (got a scalar)")
    return data, updates, indices


@defop("scatter_with_data", swift="scatterWithData(_:updates:indices:axis:mode:name:)",
       objc="scatterWithDataTensor:updatesTensor:indicesTensor:axis:mode:name:",
       inputs=("data", "updates", "indices"), infer=_with_data(_infer_scatter), family=_FAMILY,
       attrs=("axis", "mode"), since=("12.0", "15.0"))
def scatter_with_data(g, data, updates, indices, axis: int, mode: Any, name: Optional[str] = None):
    """``scatter`` onto a copy of ``data`` instead of zeros: each slice ``updates[..., k, ...]``
    along ``axis`` is combined (``mode``) into ``data``'s slice ``indices[k]``; slices no index
    names keep ``data``'s values (MPSGraph ``scatterWithData(_:updates:indices:axis:mode:name:)``,
    https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraph/scatterwithdata(_:updates:indices:axis:mode:name:))."""
    label = _label("scatter_with_data", name)
    data, updates, indices = _data_inputs(g, data, updates, indices, label)
    a = _axis(axis, data.rank, label)
    check_constant_indices(indices, data.shape[a], label)
    return g.add_op("scatter_with_data", [data, updates, indices], {"axis": a, "mode": _mode(mode, label)},
                    name).output


@defop("scatter_nd_with_data", swift="scatterNDWithData(_:updates:indices:batchDimensions:mode:name:)",
       objc="scatterNDWithDataTensor:updatesTensor:indicesTensor:batchDimensions:mode:name:",
       inputs=("data", "updates", "indices"), infer=_with_data(_infer_scatter_nd), family=_FAMILY,
       attrs=("batch_dimensions", "mode"), since=("12.0", "15.0"))
def scatter_nd_with_data(g, data, updates, indices, batch_dimensions: int = 0, mode: Any = None,
                         name: Optional[str] = None):
    """``scatter_nd`` onto a copy of ``data``: each slice of ``updates`` is combined (``mode``;
    None is ADD) at the index tuple along the last axis of ``indices``; the rest keeps ``data``
    (MPSGraph ``scatterNDWithData(_:updates:indices:batchDimensions:mode:name:)``,
    https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraph/scatterndwithdata(_:updates:indices:batchdimensions:mode:name:))."""
    label = _label("scatter_nd_with_data", name)
    data, updates, indices = _data_inputs(g, data, updates, indices, label)
    b = _int_attr(batch_dimensions, "batch_dimensions", label)
    if indices.rank and indices.shape[-1] != -1 and 0 <= b and indices.shape[-1] <= data.rank - b:
        check_constant_indices(indices, tuple(data.shape[b:b + indices.shape[-1]]), label)
    return g.add_op("scatter_nd_with_data", [data, updates, indices],
                    {"batch_dimensions": b, "mode": _mode(ScatterMode.ADD if mode is None else mode, label)},
                    name).output


def _onto_data(gather_back, fresh):
    """The rule of a scatter onto data: the updates' gradient is dy read back where they went
    (negated for SUB); data's is dy, zeroed where SET overwrote it (``fresh`` rebuilds the op with
    other data and updates)."""
    def rule(g, op, dy, wanted):
        mode = op.attrs["mode"]
        if mode not in (ScatterMode.ADD, ScatterMode.SUB, ScatterMode.SET):
            raise _not_differentiable(op)
        d, u, _ = op.inputs
        dd = du = None
        if wanted[0]:
            dd = dy if mode != ScatterMode.SET else g.multiplication(dy, fresh(g, op, _filled(g, d, 1), _zeros(g, u)))
        if wanted[1]:
            du = gather_back(g, dy, op)
            du = g.negative(du) if mode == ScatterMode.SUB else du
        return [dd, du, None]
    return rule


gradient("scatter_with_data")(_onto_data(
    lambda g, dy, op: g.gather(dy, op.inputs[2], op.attrs["axis"]),
    lambda g, op, d, u: g.scatter_with_data(d, u, op.inputs[2], op.attrs["axis"], ScatterMode.SET)))
gradient("scatter_nd_with_data")(_onto_data(
    lambda g, dy, op: g.gather_nd(dy, op.inputs[2], op.attrs["batch_dimensions"]),
    lambda g, op, d, u: g.scatter_nd_with_data(d, u, op.inputs[2], op.attrs["batch_dimensions"], ScatterMode.SET)))


# ----------------------------------------------------------------------------- one hot
def _infer_one_hot(in_types, attrs):
    (i,) = in_types
    _check_indices(i)
    axis, depth = attrs["axis"], attrs["depth"]
    shape = list(i.shape)
    shape.insert(axis, depth)
    return [ShapedType(shape, attrs["dtype"])]


@defop("one_hot", swift="oneHot(withIndicesTensor:depth:axis:dataType:onValue:offValue:name:)",
       objc="oneHotWithIndicesTensor:depth:axis:dataType:onValue:offValue:name:", inputs=("indices",),
       infer=_infer_one_hot, family=_FAMILY, differentiable=False,
       attrs=("depth", "axis", "dtype", "on_value", "off_value"))
def one_hot(g, indices, depth: int, axis: int = -1, dtype: Any = float32, on_value: float = 1.0,
            off_value: float = 0.0, name: Optional[str] = None):
    """A new axis of length ``depth`` at ``axis`` (-1: last) holding ``on_value`` at each index
    and ``off_value`` elsewhere; an index outside ``[0, depth)`` gives only ``off_value``
    (MPSGraph ``oneHot(withIndicesTensor:depth:axis:dataType:onValue:offValue:name:)``).
    Not differentiable (its input is integer)."""
    label = _label("one_hot", name)
    indices = g.as_tensor(indices, label, dtype=as_dtype("int32") if not hasattr(indices, "graph") else None)
    d = _int_attr(depth, "depth", label)
    if d < 0:
        raise ShapeError(f"{label}: depth must be >= 0, got {d}")
    r = indices.rank + 1
    a = _int_attr(axis, "axis", label)
    if not -r <= a < r:
        raise ShapeError(f"{label}: axis {a} is out of range for the result of rank {r} (valid: {-r}..{r - 1})")
    dt = as_dtype(dtype)
    values = []
    for what, v in (("on_value", on_value), ("off_value", off_value)):
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)):
            raise ShapeError(f"{label}: {what} must be a number, got {v!r}")
        if not dt.is_floating and (not np.isfinite(v) or np.asarray(v).astype(dt.np_dtype) != v):
            raise ShapeError(f"{label}: {what} {v!r} is not a value of {dt.name}")
        values.append(float(v))
    return g.add_op("one_hot", [indices], {"depth": d, "axis": a % r, "dtype": dt, "on_value": values[0],
                                           "off_value": values[1]}, name).output
