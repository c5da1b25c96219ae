"""sparse_tensor on every backend: against SciPy's coo / csr / csc matrices (duplicates summed),
out-of-range entries, the descriptor form, the gradient toward the values, and refusals."""
from __future__ import annotations

import numpy as np
import pytest

import minigraph as mg

sp = pytest.importorskip("scipy.sparse")
F32 = np.float32


def _run(backend, storage, values, i0, i1, shape, dtype=None):
    g = mg.Graph()
    ins = [g.placeholder(a.shape, mg.as_dtype(a.dtype), name=n) for a, n in ((values, "v"), (i0, "i0"), (i1, "i1"))]
    y = g.sparse_tensor(storage, ins, shape, dtype or mg.as_dtype(values.dtype))
    return g.run(dict(zip(ins, (values, i0, i1))), [y], backend=backend)[y]


@pytest.mark.parametrize("fmt", ["coo", "csr", "csc"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32])
def test_sparse_tensor_matches_scipy(backend, fmt, dtype):
    rng = np.random.default_rng(5)
    for rows, cols, density in [(4, 5, 0.5), (7, 3, 0.9), (1, 6, 0.0)]:
        m = sp.random(rows, cols, density=density, format=fmt, random_state=rng,
                      data_rvs=lambda n: rng.integers(-8, 8, n))
        if fmt == "coo":
            i0, i1 = m.row, m.col
        else:
            i0, i1 = m.indices, m.indptr
        got = _run(backend, fmt.upper(), m.data.astype(dtype), i0.astype(np.int32), i1.astype(np.int32), [rows, cols])
        assert got.dtype == dtype and got.shape == (rows, cols)
        np.testing.assert_array_equal(got, m.toarray().astype(dtype))


def test_duplicates_add_and_out_of_range_entries_are_dropped(backend):
    v = np.array([1.0, 2.0, 4.0, 8.0, 16.0, 32.0], F32)
    r = np.array([0, 0, 3, -1, 1, 2], np.int32)
    c = np.array([1, 1, 0, 0, 5, 2], np.int32)
    want = np.zeros((3, 4), F32)
    want[0, 1], want[2, 2] = 3.0, 32.0  # (3, 0), (-1, 0) and (1, 5) fall outside [3, 4]
    np.testing.assert_array_equal(_run(backend, "COO", v, r, c, [3, 4]), want)
    # uint32 indices past int32's range are outside too
    ru = np.where(r < 0, 2**32 - 1, r).astype(np.uint32)
    np.testing.assert_array_equal(_run(backend, mg.SparseStorageType.COO, v, ru, c.astype(np.uint32), [3, 4]), want)
    # CSR: row starts clipped to [0, nnz]; a decreasing pair is an empty row; a column past the shape drops
    cols = np.array([1, 1, 0, 3, 9, 2], np.int32)
    starts = np.array([-2, 2, 1, 7], np.int32)  # rows [0, 2), [2, 1) = empty, [1, 6)
    want = np.zeros((3, 4), F32)
    want[0, 1] = 3.0
    want[2, 1], want[2, 0], want[2, 3] = 2.0, 4.0, 8.0
    want[2, 2] = 32.0
    np.testing.assert_array_equal(_run(backend, "CSR", v, cols, starts, [3, 4]), want)
    np.testing.assert_array_equal(_run(backend, "CSC", v, cols, starts, [4, 3]), want.T)


def test_descriptor_form_and_raw_values():
    assert [m.value for m in mg.SparseStorageType] == [0, 1, 2]
    g = mg.Graph()
    t = [g.constant(np.array([5.0], F32)), g.constant(np.array([1], np.int32)), g.constant(np.array([0, 0, 1], np.int32))]
    d = mg.CreateSparseOpDescriptor(sparse_storage_type=mg.SparseStorageType.CSR, dtype=mg.float32)
    y = g.sparse_tensor(d, t, [2, 2])
    np.testing.assert_array_equal(g.run(target_tensors=[y])[y], [[0, 0], [0, 5]])
    z = g.sparse_tensor(2, t, [2, 2], "float32")  # the raw value of CSR
    np.testing.assert_array_equal(g.run(target_tensors=[z])[z], [[0, 0], [0, 5]])


def test_gradient_toward_the_values(backend):
    """Each value's gradient is dy at its position(s): summed where a CSR value sits in two ranges
    of starts, 0 where it is dropped."""
    g = mg.Graph()
    v = g.placeholder([4], name="v")
    dyv = np.arange(12, dtype=F32).reshape(3, 4)
    coo = g.sparse_tensor("COO", [v, g.constant(np.array([0, 2, 3, 2], np.int32)),
                                  g.constant(np.array([1, 3, 0, 3], np.int32))], [3, 4], mg.float32)
    csr = g.sparse_tensor("CSR", [v, g.constant(np.array([1, 3, 0, 7], np.int32)),
                                  g.constant(np.array([0, 2, 1, 4], np.int32))], [3, 4], mg.float32)
    grads = [g.gradients(g.reduction_sum(g.multiplication(y, g.constant(dyv))), [v])[v] for y in (coo, csr)]
    got = g.run({v: np.ones(4, F32)}, grads, backend=backend)
    np.testing.assert_array_equal(got[grads[0]], [1, 11, 0, 11])
    # rows: [0, 2) -> values 0, 1; [2, 1) empty; [1, 4) -> values 1, 2, 3 (column 7 drops)
    np.testing.assert_array_equal(got[grads[1]], [1, 3 + 11, 8, 0])


def test_refusals_name_the_op():
    g = mg.Graph()
    v, i = g.placeholder([3], name="v"), g.placeholder([3], mg.int32, name="i")
    with pytest.raises(mg.DTypeError, match=r"sparse_tensor op 's': the values are float32 but dtype is float16"):
        g.sparse_tensor("COO", [v, i, i], [2, 2], mg.float16, name="s")
    with pytest.raises(mg.ShapeError, match=r"sparse_tensor op .*index tensor 1 \(the rows' starts\) has 3 entries"):
        g.sparse_tensor("CSR", [v, i, i], [4, 2], mg.float32)
    with pytest.raises(mg.ShapeError, match=r"sparse_tensor op .*shape must be a static \[rows, columns\]"):
        g.sparse_tensor("COO", [v, i, i], [2, 2, 2], mg.float32)
    with pytest.raises(mg.ShapeError, match=r"sparse_tensor op .*\[values, index0, index1\] \(3 tensors\)"):
        g.sparse_tensor("COO", [v, i], [2, 2], mg.float32)
    with pytest.raises(mg.DTypeError, match=r"sparse_tensor op .*index tensor 0 must be int32 or uint32"):
        g.sparse_tensor("COO", [v, v, i], [2, 2], mg.float32)
    with pytest.raises(mg.DescriptorError, match=r"sparse_tensor op .*'DIA' is not a SparseStorageType"):
        g.sparse_tensor("DIA", [v, i, i], [2, 2], mg.float32)
    with pytest.raises(mg.DTypeError, match=r"sparse_tensor op .*bool has no sum"):
        b = g.placeholder([3], mg.bool, name="b")
        g.sparse_tensor("COO", [b, i, i], [2, 2], mg.bool)
