"""The NumPy kernel of sparse_tensor (semantics: ops/sparse.py): every (value,
position) pair the storage names, then one scatter-add (``np.add.at``) in the order of the values."""
from __future__ import annotations

import numpy as np

from ...descriptors import SparseStorageType
from .registry import numpy_kernel


def pairs(storage: SparseStorageType, i0, i1, shape) -> tuple:
    """(value index, row, column) arrays of every position the storage names inside ``shape``."""
    i0 = np.asarray(i0).astype(np.int64)
    i1 = np.asarray(i1).astype(np.int64)
    rows, cols = shape
    nnz = i0.size
    if storage == SparseStorageType.COO:
        k, r, c = np.arange(nnz), i0, i1
    else:
        starts = np.clip(i1, 0, nnz)
        lo, hi = starts[:-1], np.maximum(starts[1:], starts[:-1])
        outer = np.repeat(np.arange(lo.size), hi - lo)
        k = np.concatenate([np.arange(a, b) for a, b in zip(lo, hi)]) if lo.size else np.zeros(0, np.int64)
        k = k.astype(np.int64)
        inner = i0[k]
        r, c = (outer, inner) if storage == SparseStorageType.CSR else (inner, outer)
    keep = (r >= 0) & (r < rows) & (c >= 0) & (c < cols)
    return k[keep], r[keep], c[keep]


@numpy_kernel("sparse_tensor")
def _sparse(step):
    out = step.out_types[0]
    st = step.attrs["sparse_storage_type"]
    dt = out.dtype.np_dtype
    acc = np.float32 if dt == np.float16 else dt

    def run(values, i0, i1):
        k, r, c = pairs(st, i0, i1, out.shape)
        dense = np.zeros(out.shape, acc)
        np.add.at(dense, (r, c), np.asarray(values).astype(acc)[k])
        return dense.astype(dt)
    return run
