"""sparse_tensor on every backend: against SciPy's coo / csr / csc matrices (duplicates summed),
out-of-range entries, the descriptor form, the gradient toward the values, and refusals;
non_zero_indices (a data-dependent shape) against naive loops and PyTorch's nonzero."""
from __future__ import annotations

import numpy as np
import pytest

import minigraph as mg

F32 = np.float32


def _run(backend, storage, values, i0, i1, shape, dtype=None):
    g = mg.Graph()
    ins = [g.placeholder(a.shape, mg.as_dtype(a.dtype), name=n) for a, n in ((values, "v"), (i0, "i0"), (i1, "i1"))]
    y = g.sparse_tensor(storage, ins, shape, dtype or mg.as_dtype(values.dtype))
    return g.run(dict(zip(ins, (values, i0, i1))), [y], backend=backend)[y]


@pytest.mark.parametrize("fmt", ["coo", "csr", "csc"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32])
def test_sparse_tensor_matches_scipy(backend, fmt, dtype):
    sp = pytest.importorskip("scipy.sparse", reason="needs SciPy, in the oracles extra: pip install -e '.[oracles]'")
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


# ----------------------------------------------------------------------------- non_zero_indices
def _naive_non_zero(a: np.ndarray) -> np.ndarray:
    """The row-major indices of the elements with ``v != 0``, one loop over every position."""
    rows = [list(i) for i in np.ndindex(a.shape) if a[i] != 0]
    return np.array(rows, np.int32).reshape(len(rows), a.ndim)


def _non_zero(backend, a: np.ndarray, descriptor=None) -> np.ndarray:
    g = mg.Graph()
    x = g.placeholder(a.shape, mg.as_dtype(a.dtype), name="x")
    y = g.non_zero_indices(x, name="nz")
    assert y.shape == (-1, a.ndim) and y.dtype == mg.int32
    exe = g.compile({x: mg.ShapedType(a.shape, mg.as_dtype(a.dtype))}, [y], backend=backend,
                    compilation_descriptor=descriptor)
    (got,) = exe.run({x: a})
    assert got.dtype == np.int32 and got.shape == (int(np.count_nonzero(a)), a.ndim)
    return got


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32, np.bool_])
def test_non_zero_indices_matches_naive_loops_and_torch(backend, dtype):
    torch = pytest.importorskip("torch", reason="needs torch, in the oracles extra: pip install -e '.[oracles]'")
    rng = np.random.default_rng(11)
    for shape in [(), (9,), (4, 5), (2, 3, 4), (2, 3, 1, 4), (0, 3), (3, 0, 2)]:
        for density in (0.0, 0.3, 1.0):
            v = rng.integers(-4, 5, shape) if dtype != np.bool_ else rng.random(shape) < 0.5
            a = np.where(rng.random(shape) < density, v, 0).astype(dtype)
            got = _non_zero(backend, a)
            np.testing.assert_array_equal(got, _naive_non_zero(a))
            np.testing.assert_array_equal(got, torch.nonzero(torch.from_numpy(a.astype(np.float32))).numpy())


def test_non_zero_indices_nan_counts_and_negative_zero_does_not(backend):
    a = np.array([[np.nan, -0.0, 0.0, np.inf], [-np.inf, 1e-30, -np.nan, 0.0]], np.float32)
    want = [[0, 0], [0, 3], [1, 0], [1, 1], [1, 2]]
    np.testing.assert_array_equal(_non_zero(backend, a), want)
    np.testing.assert_array_equal(_non_zero(backend, a.astype(np.float16)), [[0, 0], [0, 3], [1, 0], [1, 2]])  # 1e-30 -> 0
    assert _non_zero(backend, np.zeros((3, 2), np.float32)).shape == (0, 2)  # all zero
    assert _non_zero(backend, np.full((2, 2), -0.0, np.float32)).shape == (0, 2)
    np.testing.assert_array_equal(_non_zero(backend, np.array(np.nan, np.float32)), np.zeros((1, 0)))  # rank 0


def test_non_zero_indices_is_sized_when_it_runs(backend):
    """One executable, static feed shape: every run sizes the result from that run's data; a -1
    feed dimension specialises by shape as usual, the count still comes from the data."""
    g = mg.Graph()
    x = g.placeholder((2, 3), mg.float32, name="x")
    exe = g.compile({x: mg.ShapedType((2, 3))}, [g.non_zero_indices(x)], backend=backend)
    for k in (0, 1, 4, 6):
        a = np.zeros(6, np.float32)
        a[:k] = 1.0
        a = a.reshape(2, 3)
        np.testing.assert_array_equal(exe.run({x: a})[0], np.argwhere(a))
    assert exe.compile_count == 1
    d = g.placeholder((-1, 2), mg.int32, name="d")
    dyn = g.compile({d: mg.ShapedType((-1, 2), mg.int32)}, [g.non_zero_indices(d)], backend=backend)
    for rows in (3, 0, 5):
        a = np.arange(rows * 2, dtype=np.int32).reshape(rows, 2) % 3
        np.testing.assert_array_equal(dyn.run({d: a})[0], np.argwhere(a))


def test_non_zero_indices_of_a_large_input(backend):
    """More elements than a shader loop may visit on lavapipe: the host step has no loop to bound."""
    rng = np.random.default_rng(8)
    a = np.where(rng.random((64, 70, 40)) < 0.01, rng.standard_normal((64, 70, 40)), 0).astype(np.float32)
    got = _non_zero(backend, a)
    np.testing.assert_array_equal(got, np.argwhere(a))
    np.testing.assert_array_equal(a[tuple(got.T)] != 0, True)


def test_non_zero_indices_among_other_targets_fused_and_unfused(backend):
    """Static targets around it come back in order; the elementwise chain before it fuses (the
    op itself never does), and a constant input is not folded: the same results either way."""
    rng = np.random.default_rng(3)
    g = mg.Graph()
    x = g.placeholder((3, 4), mg.float32, name="x")
    s = g.relu(g.subtraction(g.multiplication(x, 2.0), 1.0), name="s")
    nz = g.non_zero_indices(s, name="nz")
    c = g.non_zero_indices(g.constant(np.array([[0, 2], [3, 0]], np.int32)), name="c")
    total = g.reduction_sum(s, axes=None, name="total")
    a = rng.uniform(-1, 2, (3, 4)).astype(np.float32)
    ref = np.maximum(a * 2 - 1, 0)
    results = []
    for desc in (mg.CompilationDescriptor(), mg.CompilationDescriptor(mg.OptimizationLevel.LEVEL0, fusion=False)):
        exe = g.compile({x: mg.ShapedType((3, 4))}, [total, nz, s, c, nz], backend=backend, compilation_descriptor=desc)
        got = exe.run({x: a})
        np.testing.assert_allclose(got[0], ref.sum(), rtol=1e-5)
        np.testing.assert_array_equal(got[1], np.argwhere(ref))
        np.testing.assert_allclose(got[2], ref, rtol=1e-6)
        np.testing.assert_array_equal(got[3], [[0, 1], [1, 0]])
        np.testing.assert_array_equal(got[4], got[1])
        assert got[1] is not got[4]
        kinds = [st.kernel for st in exe.steps]
        assert "non_zero_indices" in kinds and not any(st.fused and "non_zero" in st.kernel for st in exe.steps)
        assert "int32[?,2]" in exe.describe()
        results.append(got)
    assert any(st.fused for st in g.compile({x: mg.ShapedType((3, 4))}, [nz], backend="numpy").steps)
    for f, u in zip(*results):
        np.testing.assert_array_equal(f, u)


def test_non_zero_indices_as_a_target_operation_only(backend):
    g = mg.Graph()
    x = g.placeholder((2, 2), mg.float32, name="x")
    nz = g.non_zero_indices(x, name="nz")
    y = g.negative(x)
    out = g.run({x: np.eye(2, dtype=np.float32)}, [y], [nz.operation], backend=backend)
    np.testing.assert_array_equal(out[y], -np.eye(2))


def test_consuming_non_zero_indices_is_a_plan_error_naming_both_ops(backend):
    g = mg.Graph()
    x = g.placeholder((2, 3), mg.float32, name="x")
    nz = g.non_zero_indices(x, name="nz")
    rows = g.gather_nd(x, nz, name="picked")  # builds: the refusal is the compiler's
    with pytest.raises(mg.PlanError, match=r"gather_nd op 'picked'.*non_zero_indices op 'nz'.*only be a target"):
        g.run({x: np.ones((2, 3), np.float32)}, [rows], backend=backend)
    with pytest.raises(mg.PlanError, match=r"addition op 'plus'.*non_zero_indices op 'nz'"):
        g.compile({x: mg.ShapedType((2, 3))}, [g.addition(nz, 1, name="plus")], backend=backend)
    # inside a block: not a block's result; read by one, it is a capture: an input of the control-flow op
    with pytest.raises(mg.PlanError, match=r"non_zero_indices op '[^']*inner'.*not a block's result"):
        (r,) = g.if_then_else(g.constant(True), lambda: [g.non_zero_indices(x, name="inner")],
                              lambda: [g.non_zero_indices(x, name="inner2")], name="branch")
        g.run({x: np.ones((2, 3), np.float32)}, [r], backend=backend)
    with pytest.raises(mg.PlanError, match=r"if_then_else op 'branch2'.*reads 'nz'.*non_zero_indices op 'nz'"):
        (r,) = g.if_then_else(g.constant(True), lambda: [g.shape_of(nz, name="size")],
                              lambda: [g.constant(np.zeros(2, np.int32))], name="branch2")
        g.run({x: np.ones((2, 3), np.float32)}, [r], backend=backend)


def test_non_zero_indices_saves_loads_and_exports_to_swift(tmp_path):
    g = mg.Graph()
    x = g.placeholder((2, 3), mg.int32, name="x")
    nz = g.non_zero_indices(x, name="nz")
    h = mg.load(g.save(tmp_path / "nz.json"))
    a = np.array([[0, 4, 0], [7, 0, 1]], np.int32)
    hx, hnz = h.tensor("x"), h.tensor("nz")
    assert hnz.shape == (-1, 2) and hnz.dtype == mg.int32
    np.testing.assert_array_equal(h.run({hx: a}, [hnz])[hnz], g.run({x: a}, [nz])[nz])
    swift = g.to_swift()
    assert 'graph.nonZeroIndices(x, name: "nz")' in swift and "macOS 14.0" in swift


def test_non_zero_indices_refusals_and_gradients():
    g = mg.Graph()
    with pytest.raises(mg.MiniGraphError, match="non_zero_indices"):
        g.non_zero_indices("not a tensor", name="bad")
    x = g.placeholder((2, 3), mg.float32, name="x")
    nz = g.non_zero_indices(x, name="nz")
    assert not mg.ops.OPS["non_zero_indices"].differentiable and mg.ops.OPS["non_zero_indices"].data_dependent_shape
    with pytest.raises(mg.DTypeError, match="int32"):  # integer indices: no gradient of them
        g.gradients(g.reduction_sum(nz, axes=None), [x])


def test_plan_check_keeps_data_dependent_results_to_targets():
    """``Plan.check`` refuses a step that reads an unsized result and a dynamic type on any other op."""
    import dataclasses

    g = mg.Graph()
    x = g.placeholder((2, 3), mg.float32, name="x")
    nz = g.non_zero_indices(x, name="nz")
    y = g.negative(x, name="neg")
    plan = g.compile({x: mg.ShapedType((2, 3))}, [nz, y], compilation_descriptor=mg.CompilationDescriptor(
        mg.OptimizationLevel.LEVEL0, fusion=False)).plan
    plan.check()
    steps = list(plan.steps)
    k = next(i for i, st in enumerate(steps) if st.op.type == "negative")
    z = next(i for i, st in enumerate(steps) if st.op.type == "non_zero_indices")
    reads = dataclasses.replace(steps[k], inputs=(steps[z].outputs[0],), in_types=(steps[z].out_types[0],))
    with pytest.raises(mg.PlanError, match="depends on its data: only a target"):
        dataclasses.replace(plan, steps=steps[:k] + [reads] + steps[k + 1:]).check()
    dynamic = dataclasses.replace(steps[k], out_types=(mg.ShapedType((-1, 3)),))
    with pytest.raises(mg.PlanError, match="still dynamic; only a data-dependent-shape op"):
        dataclasses.replace(plan, steps=steps[:k] + [dynamic] + steps[k + 1:]).check()
