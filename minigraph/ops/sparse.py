"""Sparse storage to dense (MPSGraphSparseOps): sparse_tensor.

Apple's op takes ``[sparseVals, indexTensor0, indexTensor1]`` and a shape and "creates a sparse
tensor representation", a tensor other MPSGraph ops read as the matrix it stands for; minigraph
has no sparse tensor type, so the result is that matrix, dense, of ``shape`` (rank 2, ``[rows,
columns]``). The three storage types (``SparseStorageType``), with ``nnz`` values:

* COO: index 0 and index 1 hold each value's row and column (``[nnz]`` each; Apple's header
  calls them the x and y index; the first index is the row, as in SciPy's ``coo_matrix`` and
  PyTorch's ``sparse_coo_tensor``);
* CSR: index 0 the column of each value (``[nnz]``), index 1 the row starts (``[rows + 1]``):
  row ``r`` holds the values ``rowStarts[r] .. rowStarts[r + 1] - 1``;
* CSC: index 0 the row of each value (``[nnz]``), index 1 the column starts (``[columns + 1]``).

Positions named more than once add up (SciPy's and PyTorch's ``to_dense``), in the order of the
values; positions no value names are 0; a value whose row or column falls outside ``shape`` (or
outside every row's / column's range of starts) is dropped, as are start ranges outside
``[0, nnz]`` clipped to it. The values' dtype must be ``dtype``; indices are int32 or uint32. The
gradient toward the values is the dense gradient gathered at each value's position (summed over
the positions a value was added to; 0 for a dropped one); the indices have none.
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

from ..descriptors import CreateSparseOpDescriptor, SparseStorageType, _enum
from ..errors import DescriptorError, DTypeError, NotDifferentiableError, ShapeError
from ..types import ShapedType, as_dtype, as_shape
from .registry import defop, gradient


def _label(type: str, name) -> str:
    return f"{type} op {name or type!r}"


def _infer(in_types, attrs):
    vals, i0, i1 = in_types
    st, shape, dt = attrs["sparse_storage_type"], attrs["shape"], attrs["dtype"]
    if dt.is_bool:
        raise DTypeError("positions named more than once add up; bool has no sum (use int32 or a float type)")
    if vals.dtype != dt:
        raise DTypeError(f"the values are {vals.dtype.name} but dtype is {dt.name}; cast the values with g.cast")
    for t, what in ((i0, "index tensor 0"), (i1, "index tensor 1")):
        if t.dtype.name not in ("int32", "uint32"):
            raise DTypeError(f"{what} must be int32 or uint32, got {t.dtype.name}")
        if len(t.shape) != 1:
            raise ShapeError(f"{what} must have rank 1, got shape {t.shape}")
    if len(vals.shape) != 1:
        raise ShapeError(f"the values must have rank 1 ([nnz]), got shape {vals.shape}")
    nnz = vals.shape[0]
    if nnz != -1 and i0.shape[0] not in (-1, nnz):
        raise ShapeError(f"index tensor 0 has {i0.shape[0]} entries for {nnz} values; {st.name} needs one per value")
    if st == SparseStorageType.COO:
        if nnz != -1 and i1.shape[0] not in (-1, nnz):
            raise ShapeError(f"index tensor 1 has {i1.shape[0]} entries for {nnz} values; COO needs one per value")
    else:
        n = shape[0] if st == SparseStorageType.CSR else shape[1]
        what = "rows" if st == SparseStorageType.CSR else "columns"
        if i1.shape[0] not in (-1, n + 1):
            raise ShapeError(f"index tensor 1 (the {what}' starts) has {i1.shape[0]} entries; {st.name} of shape "
                             f"{list(shape)} needs {n + 1} ({what} + 1)")
    return [ShapedType(shape, dt)]


@defop("sparse_tensor", swift="sparseTensor(sparseTensorWithType:tensors:shape:dataType:name:)",
       objc="sparseTensorWithType:tensors:shape:dataType:name:",
       inputs=("tensors",), infer=_infer, family="sparse",
       attrs=("sparse_storage_type", "shape", "dtype"), since=("12.0", "15.0"))
def sparse_tensor(g, sparse_storage_type: Any, tensors: Sequence, shape: Sequence[int], dtype: Any = None,
                  name: Optional[str] = None):
    """The dense ``shape`` matrix that the storage ``tensors = [values, index0, index1]`` describe
    (MPSGraph ``sparseTensor(sparseTensorWithType:tensors:shape:dataType:name:)``; storage types,
    duplicates and out-of-range indices: module docstring). ``sparse_storage_type`` may also be a
    ``CreateSparseOpDescriptor`` (MPSGraph's ``sparseTensorWithDescriptor:`` form), which gives the
    dtype.
    https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraph/sparsetensor(sparsetensorwithtype:tensors:shape:datatype:name:)

    Args:
        sparse_storage_type: A ``SparseStorageType`` (its name or raw value), or a
            ``CreateSparseOpDescriptor`` (storage type and dtype).
        tensors: ``[values, index0, index1]``: the values ``[nnz]`` and the two index tensors.
        shape: The dense result's shape ``[rows, columns]`` (static).
        dtype: The result's data type (the values' dtype); taken from the descriptor when one is given.
        name: The op's name (MPSGraph's ``name:``).
    """
    label = _label("sparse_tensor", name)
    if isinstance(sparse_storage_type, CreateSparseOpDescriptor):
        desc = sparse_storage_type.copy()
        try:
            desc.validate()
        except DescriptorError as e:
            raise DescriptorError(f"{label}: {e}") from None
        if dtype is not None and as_dtype(dtype) != desc.dtype:
            raise DTypeError(f"{label}: dtype {as_dtype(dtype).name} differs from the descriptor's {desc.dtype.name}")
        storage, dt = desc.sparse_storage_type, desc.dtype
    else:
        try:
            storage = _enum(SparseStorageType, sparse_storage_type, "sparse_storage_type")
        except DescriptorError as e:
            raise DescriptorError(f"{label}: {e}") from None
        if dtype is None:
            raise DTypeError(f"{label}: give dtype (MPSGraph's dataType:)")
        dt = as_dtype(dtype)
    try:
        items = list(tensors)
    except TypeError:
        raise ShapeError(f"{label}: tensors must be a list [values, index0, index1], got {tensors!r}") from None
    if len(items) != 3:
        raise ShapeError(f"{label}: tensors must be [values, index0, index1] (3 tensors), got {len(items)}")
    try:
        shp = as_shape(shape, "shape")
    except ShapeError as e:
        raise ShapeError(f"{label}: {e}") from None
    if len(shp) != 2 or -1 in shp:
        raise ShapeError(f"{label}: shape must be a static [rows, columns], got {list(shp)}")
    ins = [g.as_tensor(t, label) for t in items]
    return g.add_op("sparse_tensor", ins, {"sparse_storage_type": storage, "shape": shp, "dtype": dt}, name).output


@gradient("sparse_tensor")
def _sparse_gradient(g, op, dy, wanted):
    """Each value's gradient is dy at each position it was added to (0 where it was dropped): the
    dense result is linear in the values. COO gathers dy at (row, column); CSR and CSC sum
    ``dy[r, column]`` (``dy[row, c]``) over the rows (columns) whose range of starts holds the value,
    a [nnz, rows] mask times the gathered rows of dy."""
    if not wanted[0]:
        return [None, None, None]
    vals, i0, i1 = op.inputs
    st = op.attrs["sparse_storage_type"]
    rows, cols = op.attrs["shape"]
    nnz = vals.shape[0]
    if nnz == -1:
        raise NotDifferentiableError(f"sparse_tensor op {op.name!r} (built at {op.location}): the gradient needs "
                                     "a static number of values")
    if nnz == 0:
        return [g.constant(0.0, dtype=dy.dtype, shape=[0]), None, None]
    i32 = as_dtype("int32")

    def index(t, size):
        t = g.cast(t, i32) if t.dtype != i32 else t
        ok = g.logical_and(g.greater_than_or_equal_to(t, g.constant(0, dtype=i32)),
                           g.less_than(t, g.constant(size, dtype=i32)))
        return g.select(ok, t, g.constant(0, dtype=i32)), ok

    if st == SparseStorageType.COO:
        r, ok_r = index(i0, rows)
        c, ok_c = index(i1, cols)
        picked = g.gather_nd(dy, g.stack([r, c], 1))
        return [g.multiplication(picked, g.cast(g.logical_and(ok_r, ok_c), dy.dtype)), None, None]
    inner_size, outer = (cols, rows) if st == SparseStorageType.CSR else (rows, cols)
    inner, ok = index(i0, inner_size)
    # dy's lines along the compressed axis, read at each value's inner index: [nnz, outer]
    lines = g.gather(g.transpose(dy, 0, 1) if st == SparseStorageType.CSR else dy, inner, 0)
    starts = g.cast(i1, i32) if i1.dtype != i32 else i1
    starts = g.clamp(starts, g.constant(0, dtype=i32), g.constant(nnz, dtype=i32))
    lo = g.reshape(g.slice(starts, 0, 0, outer), [1, outer])
    hi = g.reshape(g.slice(starts, 0, 1, outer), [1, outer])
    k = g.coordinate_along_axis(0, [nnz, outer])
    held = g.logical_and(g.greater_than_or_equal_to(k, lo), g.less_than(k, hi))
    total = g.reduction_sum(g.multiplication(lines, g.cast(held, dy.dtype)), axes=[1])
    return [g.multiplication(g.reshape(total, [nnz]), g.cast(ok, dy.dtype)), None, None]
