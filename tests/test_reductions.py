"""Product, logical and arg reductions, the cumulative sum, top-k and the sorts, on both backends,
against references written here (plain Python loops) and PyTorch's autograd.

The order every sort-like op shares (docs/reduction.md): NaN is larger than every number (last
ascending, first descending), equal elements keep their index order, -0.0 equals +0.0.
"""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import minigraph as mg
from minigraph.backends.webgpu import sort as webgpu_sort

from gradcheck import central_differences

F32 = np.float32


def _run(g, feeds, outs, backend):
    res = g.run(feeds, outs, backend=backend)
    return [res[t] for t in outs]


def _rows(a: np.ndarray, axis: int):
    """Each 1-D slice along ``axis``, with the index tuple of its first element."""
    moved = np.moveaxis(a, axis, -1)
    for idx in np.ndindex(*moved.shape[:-1]):
        yield idx, list(moved[idx])


def _key(v, descending: bool):
    """The sort key of one element: NaN largest."""
    nan = isinstance(v, float) and math.isnan(v)
    if descending:
        return (0 if nan else 1, 0.0 if nan else -v)
    return (1 if nan else 0, 0.0 if nan else v)


def _naive_order(row, descending: bool) -> list:
    # Python's sort is stable: equal keys keep their index order
    return sorted(range(len(row)), key=lambda i: _key(float(row[i]) if isinstance(row[i], (float, np.floating))
                                                      else int(row[i]), descending))


def _specials(rng, shape):
    a = rng.integers(-3, 4, shape).astype(F32)
    flat = a.reshape(-1)
    flat[::5] = np.nan
    flat[1::7] = np.inf
    flat[2::11] = -np.inf
    flat[4::6] = -0.0
    return a


# ----------------------------------------------------------------------------- reduction_product
@pytest.mark.parametrize("axes", [[0], [1, 2], None, [-1]])
def test_reduction_product_matches_a_loop(backend, rng, axes):
    x = rng.uniform(-1.5, 1.5, (3, 4, 5)).astype(F32)
    x[0, 1, :] = 0.0
    x[2, 0, 3] = np.nan
    g = mg.Graph()
    p = g.placeholder(x.shape)
    (got,) = _run(g, {p: x}, [g.reduction_product(p, axes)], backend)
    red = tuple(range(3)) if axes is None else tuple(a % 3 for a in axes)
    want = np.ones(tuple(1 if i in red else d for i, d in enumerate(x.shape)))
    for idx in np.ndindex(*x.shape):
        out = tuple(0 if i in red else j for i, j in enumerate(idx))
        want[out] *= float(x[idx])
    assert got.shape == want.shape and got.dtype == F32
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)


def test_reduction_product_of_empty_slices_is_one_and_integers_wrap(backend):
    g = mg.Graph()
    e = g.placeholder([2, 0])
    i = g.placeholder([1, 3], mg.int32)
    big = np.array([[65536, 65536, 3]], np.int32)
    got_e, got_i = _run(g, {e: np.zeros((2, 0), F32), i: big}, [g.reduction_product(e, [1]),
                                                                g.reduction_product(i, [1])], backend)
    np.testing.assert_array_equal(got_e, np.ones((2, 1), F32))
    np.testing.assert_array_equal(got_i, [[(65536 * 65536 * 3) % (1 << 32)]])  # 2^32 * 3 wraps to 0


def _torch_prod_grad(x: np.ndarray, axis: int, w: np.ndarray) -> np.ndarray:
    torch = pytest.importorskip("torch", reason="needs torch, in the oracles extra: pip install -e '.[oracles]'")
    t = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    (torch.prod(t, dim=axis, keepdim=True) * torch.tensor(w, dtype=torch.float64)).sum().backward()
    return t.grad.numpy()


@pytest.mark.parametrize("axis", [0, 1])
def test_reduction_product_gradient_with_zeros_matches_torch(backend, rng, axis):
    """Slices with no zero, one zero, two zeros and all zeros."""
    x = rng.uniform(0.5, 2.0, (4, 5)) * rng.choice([-1, 1], (4, 5))
    x[1, 2] = 0.0
    x[2, 0] = x[2, 3] = 0.0
    x[3, :] = 0.0
    x[0, 4] = -0.0
    w = rng.uniform(0.5, 1.5, (1, 5) if axis == 0 else (4, 1))
    g = mg.Graph()
    p = g.placeholder(x.shape)
    wt = g.constant(w.astype(F32))
    loss = g.reduction_sum(g.multiplication(g.reduction_product(p, [axis]), wt))
    (got,) = _run(g, {p: x.astype(F32)}, [g.gradients(loss, [p])[p]], backend)
    np.testing.assert_allclose(got, _torch_prod_grad(x, axis, w), rtol=1e-5, atol=1e-6)


def test_reduction_product_gradient_over_several_axes_matches_finite_differences(rng):
    """float64 on numpy: the product is a polynomial, so central differences are exact up to
    rounding, zeros included."""
    x = rng.uniform(-2, 2, (2, 3, 3))
    x[0, 1, 1] = 0.0
    x[1, 0, 0] = x[1, 2, 2] = 0.0
    g = mg.Graph()
    p = g.placeholder(x.shape, mg.float64)
    w = rng.uniform(0.5, 1.5, (1, 3, 1))
    loss = g.reduction_sum(g.multiplication(g.reduction_product(p, [0, 2]), g.constant(w)))
    grad = g.run({p: x}, [g.gradients(loss, [p])[p]])
    got = list(grad.values())[0]
    (fd,) = central_differences(g, loss, {p: x}, [p])
    np.testing.assert_allclose(got, fd, rtol=1e-6, atol=1e-8)
    torch = pytest.importorskip("torch", reason="needs torch, in the oracles extra: pip install -e '.[oracles]'")
    t = torch.tensor(x, requires_grad=True)
    (t.permute(1, 0, 2).reshape(3, -1).prod(dim=1) * torch.tensor(w.reshape(3))).sum().backward()
    np.testing.assert_allclose(got, t.grad.numpy(), rtol=1e-10, atol=1e-12)


# ----------------------------------------------------------------------------- reduction_and / or
def test_reduction_and_or_match_python_all_any(backend, rng):
    x = rng.integers(0, 3, (3, 4, 5)).astype(F32)
    x[0, 0, :] = 1.0
    x[1, 1, 2] = np.nan  # NaN is true
    x[2, 2, :] = -0.0  # -0.0 is false
    g = mg.Graph()
    p = g.placeholder(x.shape)
    b = g.placeholder([2, 0], mg.bool)
    outs = [g.reduction_and(p, [2]), g.reduction_or(p, [2]), g.reduction_and(p, [0, 1]), g.reduction_or(p, None),
            g.reduction_and(b, [1]), g.reduction_or(b, [1])]
    got = _run(g, {p: x, b: np.zeros((2, 0), bool)}, outs, backend)

    def truth(v):
        return bool(v != 0) or math.isnan(v)
    want_and = [[all(truth(v) for v in x[i, j]) for j in range(4)] for i in range(3)]
    want_or = [[any(truth(v) for v in x[i, j]) for j in range(4)] for i in range(3)]
    assert all(r.dtype == np.bool_ for r in got)
    np.testing.assert_array_equal(got[0][..., 0], want_and)
    np.testing.assert_array_equal(got[1][..., 0], want_or)
    np.testing.assert_array_equal(got[2][0, 0], [all(truth(x[i, j, k]) for i in range(3) for j in range(4))
                                                for k in range(5)])
    assert got[3].shape == (1, 1, 1) and bool(got[3].item()) is any(truth(v) for v in x.reshape(-1))
    np.testing.assert_array_equal(got[4], [[True], [True]])  # an empty AND is true
    np.testing.assert_array_equal(got[5], [[False], [False]])  # an empty OR is false


# ----------------------------------------------------------------------------- arg reductions
def _naive_arg(row, sign: int) -> int:
    """MPSGraph's rule: NaN skipped, the first extreme on ties, -1 for a slice of only NaN."""
    live = [k for k, v in enumerate(row) if not (isinstance(v, (float, np.floating)) and math.isnan(v))]
    if not live:
        return -1
    best = max(sign * row[k] for k in live)
    return next(k for k in live if sign * row[k] == best)


@pytest.mark.parametrize("op", ["reduction_arg_maximum", "reduction_arg_minimum"])
@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_arg_reductions_skip_nan_and_take_the_first_index_on_ties(backend, rng, op, axis):
    x = _specials(rng, (4, 5, 6))
    x[1, 2, :] = np.nan  # a slice of only NaN along the last axis
    x[:, 3, 4] = np.nan  # ... along the first
    x[2, :, 1] = np.nan  # ... along the second
    xi = rng.integers(-2, 3, (4, 5, 6)).astype(np.int32)
    g = mg.Graph()
    p, q = g.placeholder(x.shape), g.placeholder(xi.shape, mg.int32)
    got, got_i = _run(g, {p: x, q: xi}, [getattr(g, op)(p, axis), getattr(g, op)(q, axis)], backend)
    assert got.dtype == np.int32 and got.shape == tuple(1 if i == axis % 3 else d for i, d in enumerate(x.shape))
    sign = 1 if op == "reduction_arg_maximum" else -1
    for arr, res in ((x, got), (xi, got_i)):
        for idx, row in _rows(arr, axis):
            assert np.moveaxis(res, axis, -1)[idx][0] == _naive_arg(row, sign), (idx, row)
    assert (got == -1).any()


@pytest.mark.parametrize("dtype", [mg.float32, mg.float16])
def test_arg_reductions_index_the_nan_skipping_maximum_and_minimum(backend, rng, dtype):
    """x[argmax(x)] == reduction_maximum(x) (both skip NaN, as MPSGraph's do), ±inf included; a
    slice of only NaN gives -1 (and the maximum its seed, -inf)."""
    if dtype == mg.float16 and backend == "webgpu" and not mg.get_backend("webgpu").context.has_f16:
        pytest.skip("the adapter has no shader-f16")
    x = rng.standard_normal((7, 9)).astype(dtype.np_dtype)
    x[rng.random(x.shape) < 0.3] = np.nan
    x[0, 4], x[1, [2, 6]], x[2, [1, 8]] = np.inf, -np.inf, [-np.inf, np.inf]
    x[3] = np.nan
    x[4] = [np.nan, -np.inf, np.nan, -np.inf, np.nan, np.nan, np.nan, np.nan, np.nan]
    x[5, :] = 1.0
    g = mg.Graph()
    p = g.placeholder(x.shape, dtype)
    am, an, mx, mn = _run(g, {p: x}, [g.reduction_arg_maximum(p, 1), g.reduction_arg_minimum(p, 1),
                                      g.reduction_maximum(p, [1]), g.reduction_minimum(p, [1])], backend)
    rows = np.arange(7)
    live = ~np.isnan(x).all(axis=1)
    np.testing.assert_array_equal(x[rows[live], am[live, 0]], mx[live, 0])
    np.testing.assert_array_equal(x[rows[live], an[live, 0]], mn[live, 0])
    assert am[3, 0] == an[3, 0] == -1 and mx[3, 0] == -np.inf and mn[3, 0] == np.inf
    assert am[0, 0] == 4 and an[1, 0] == 2 and (am[2, 0], an[2, 0]) == (8, 1) and am[4, 0] == an[4, 0] == 1
    assert am[5, 0] == an[5, 0] == 0  # ties: the first index


def test_arg_reductions_worked_example(backend):
    g = mg.Graph()
    v = g.placeholder([2, 5], name="v")
    data = np.array([[3.0, np.nan, 1.0, 3.0, -np.inf], [np.nan] * 5], np.float32)
    got = _run(g, {v: data}, [g.reduction_arg_maximum(v, 1), g.reduction_arg_minimum(v, 1)], backend)
    assert [a.ravel().tolist() for a in got] == [[0, -1], [4, -1]]


def test_arg_reductions_match_jax_nanargmax(backend, rng):
    """JAX's nanargmax/nanargmin skip NaN and give -1 for a slice of only NaN, as minigraph does."""
    jax = pytest.importorskip("jax", reason="needs the oracles extra: pip install -e '.[oracles]'")
    jnp = jax.numpy
    x = _specials(rng, (6, 8))
    x[2] = np.nan
    g = mg.Graph()
    p = g.placeholder(x.shape)
    got = _run(g, {p: x}, [g.reduction_arg_maximum(p, 1), g.reduction_arg_minimum(p, 0)], backend)
    np.testing.assert_array_equal(got[0][:, 0], np.asarray(jnp.nanargmax(jnp.asarray(x), axis=1)))
    np.testing.assert_array_equal(got[1][0], np.asarray(jnp.nanargmin(jnp.asarray(x), axis=0)))


def test_arg_maximum_matches_torch_without_ties(backend, rng):
    torch = pytest.importorskip("torch", reason="needs torch, in the oracles extra: pip install -e '.[oracles]'")
    x = rng.standard_normal((3, 7, 4)).astype(F32)
    g = mg.Graph()
    p = g.placeholder(x.shape)
    got = _run(g, {p: x}, [g.reduction_arg_maximum(p, 1), g.reduction_arg_minimum(p, 2)], backend)
    np.testing.assert_array_equal(got[0], torch.argmax(torch.tensor(x), dim=1, keepdim=True).numpy())
    np.testing.assert_array_equal(got[1], torch.argmin(torch.tensor(x), dim=2, keepdim=True).numpy())


def test_arg_reductions_refuse_an_empty_axis_bool_and_several_axes():
    g = mg.Graph()
    e = g.placeholder([3, 0])
    with pytest.raises(mg.ShapeError, match=r"reduction_arg_maximum.*empty"):
        g.reduction_arg_maximum(e, 1)
    with pytest.raises(mg.DTypeError, match="reduction_arg_minimum"):
        g.reduction_arg_minimum(g.placeholder([3], mg.bool), 0)
    with pytest.raises(mg.ShapeError, match="one int"):
        g.reduction_arg_maximum(g.placeholder([3, 2]), [0, 1])
    with pytest.raises(mg.MiniGraphError, match="out of range"):
        g.reduction_arg_maximum(g.placeholder([3, 2]), 2)
    with pytest.raises(mg.DTypeError, match="reduction_product"):
        g.reduction_product(g.placeholder([3], mg.bool), [0])


# ----------------------------------------------------------------------------- cumulative_sum
def _naive_cumsum(row, exclusive, reverse, acc=float):
    n = len(row)
    order = range(n - 1, -1, -1) if reverse else range(n)
    out = [None] * n
    s = acc(0)
    for j in order:
        if exclusive:
            out[j] = s
            s = s + row[j]
        else:
            s = s + row[j]
            out[j] = s
    return out


@pytest.mark.parametrize("exclusive,reverse", list(itertools.product((False, True), (False, True))))
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_cumulative_sum_matches_a_loop(backend, rng, exclusive, reverse, axis):
    x = rng.uniform(-2, 2, (3, 4, 5)).astype(F32)
    xi = rng.integers(-(2 ** 31), 2 ** 31 - 1, (3, 4, 5), dtype=np.int64).astype(np.int32)
    g = mg.Graph()
    p, q = g.placeholder(x.shape), g.placeholder(xi.shape, mg.int32)
    got, got_i = _run(g, {p: x, q: xi}, [g.cumulative_sum(p, axis, exclusive, reverse),
                                         g.cumulative_sum(q, axis, exclusive=exclusive, reverse=reverse)], backend)
    for idx, row in _rows(x, axis):
        want = _naive_cumsum([float(v) for v in row], exclusive, reverse)
        np.testing.assert_allclose(np.moveaxis(got, axis, -1)[idx], want, rtol=1e-5, atol=1e-5)
    for idx, row in _rows(xi, axis):  # int32 wraps around
        want = [((v + 2 ** 31) % 2 ** 32) - 2 ** 31 for v in _naive_cumsum([int(v) for v in row], exclusive, reverse, int)]
        np.testing.assert_array_equal(np.moveaxis(got_i, axis, -1)[idx], want)


def test_cumulative_sum_worked_example(backend):
    """The numbers of docs/reduction.md."""
    g = mg.Graph()
    p = g.placeholder([4])
    outs = [g.cumulative_sum(p, 0, exclusive=e, reverse=r) for e in (False, True) for r in (False, True)]
    got = _run(g, {p: np.array([1, 2, 3, 4], F32)}, outs, backend)
    assert [r.tolist() for r in got] == [[1, 3, 6, 10], [10, 9, 7, 4], [0, 1, 3, 6], [9, 7, 4, 0]]


def test_cumulative_sum_gradient_matches_torch(backend, rng):
    torch = pytest.importorskip("torch", reason="needs torch, in the oracles extra: pip install -e '.[oracles]'")
    x = rng.standard_normal((3, 6))
    w = rng.standard_normal((3, 6))
    for exclusive, reverse in itertools.product((False, True), (False, True)):
        g = mg.Graph()
        p = g.placeholder(x.shape)
        loss = g.reduction_sum(g.multiplication(g.cumulative_sum(p, 1, exclusive, reverse), g.constant(w.astype(F32))))
        (got,) = _run(g, {p: x.astype(F32)}, [g.gradients(loss, [p])[p]], backend)
        t = torch.tensor(x, requires_grad=True)
        s = torch.flip(torch.cumsum(torch.flip(t, [1]), 1), [1]) if reverse else torch.cumsum(t, 1)
        if exclusive:
            s = s - t
        (s * torch.tensor(w)).sum().backward()
        np.testing.assert_allclose(got, t.grad.numpy(), rtol=1e-5, atol=1e-5)


# ----------------------------------------------------------------------------- sort / arg_sort
@pytest.mark.parametrize("length", [0, 1, 2, 3, 5, 8, 17, 33])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_and_arg_sort_stable_nan_last_any_length(backend, rng, length, descending):
    x = _specials(rng, (3, length))
    xi = rng.integers(-2, 3, (length, 2)).astype(np.int32)
    g = mg.Graph()
    p, q = g.placeholder(x.shape), g.placeholder(xi.shape, mg.int32)
    outs = [g.sort(p, 1, descending=descending), g.arg_sort(p, -1, descending=descending),
            g.sort(q, 0, descending=descending), g.arg_sort(q, 0, descending=descending)]
    s, a, si, ai = _run(g, {p: x, q: xi}, outs, backend)
    assert a.dtype == np.int32 and ai.dtype == np.int32 and s.dtype == F32
    for r in range(3):
        order = _naive_order(list(x[r]), descending)
        np.testing.assert_array_equal(a[r], order)
        np.testing.assert_array_equal(s[r], x[r][order])  # NaN where NaN, -0.0 kept as stored
        np.testing.assert_array_equal(np.signbit(s[r]), np.signbit(x[r][order]))
    for c in range(2):
        order = _naive_order(list(xi[:, c]), descending)
        np.testing.assert_array_equal(ai[:, c], order)
        np.testing.assert_array_equal(si[:, c], xi[:, c][order])


def test_sort_worked_example(backend):
    """The numbers of docs/reduction.md."""
    g = mg.Graph()
    p = g.placeholder([6])
    x = np.array([3.0, np.nan, 1.0, 3.0, -0.0, 0.0], F32)
    got = _run(g, {p: x}, [g.sort(p, 0), g.arg_sort(p, 0), g.sort(p, 0, descending=True),
                           g.arg_sort(p, 0, descending=True)], backend)
    np.testing.assert_array_equal(got[0], [-0.0, 0.0, 1.0, 3.0, 3.0, np.nan])
    assert got[1].tolist() == [4, 5, 2, 0, 3, 1]
    np.testing.assert_array_equal(got[2], [np.nan, 3.0, 3.0, 1.0, -0.0, 0.0])
    assert got[3].tolist() == [1, 0, 3, 2, 4, 5]


def test_sort_matches_torch_stable_sort(backend, rng):
    torch = pytest.importorskip("torch", reason="needs torch, in the oracles extra: pip install -e '.[oracles]'")
    x = rng.integers(-4, 5, (4, 3, 9)).astype(F32)
    x[0, 0, 3] = np.nan
    g = mg.Graph()
    p = g.placeholder(x.shape)
    for axis, desc in itertools.product((0, 1, 2), (False, True)):
        s, a = _run(g, {p: x}, [g.sort(p, axis, descending=desc), g.arg_sort(p, axis, descending=desc)], backend)
        ts, ta = torch.sort(torch.tensor(x), dim=axis, descending=desc, stable=True)
        np.testing.assert_array_equal(s, ts.numpy())
        np.testing.assert_array_equal(a, ta.numpy())


@pytest.mark.parametrize("axis,descending", [(0, False), (1, True), (-1, False)])
def test_sort_gradient_matches_torch(backend, rng, axis, descending):
    """Each output's gradient goes back to the element sorted there (ties: the stable order)."""
    torch = pytest.importorskip("torch", reason="needs torch, in the oracles extra: pip install -e '.[oracles]'")
    x = rng.integers(-3, 4, (4, 6)).astype(F32)  # many ties
    w = rng.standard_normal((4, 6)).astype(F32)
    g = mg.Graph()
    p = g.placeholder(x.shape)
    loss = g.reduction_sum(g.multiplication(g.sort(p, axis, descending=descending), g.constant(w)))
    (got,) = _run(g, {p: x}, [g.gradients(loss, [p])[p]], backend)
    t = torch.tensor(x, requires_grad=True)
    (torch.sort(t, dim=axis, descending=descending, stable=True)[0] * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(got, t.grad.numpy(), rtol=1e-6)


# ----------------------------------------------------------------------------- top_k
@pytest.mark.parametrize("k", [0, 1, 3, 7])
def test_top_k_values_and_indices(backend, rng, k):
    x = _specials(rng, (2, 3, 7))
    g = mg.Graph()
    p = g.placeholder(x.shape)
    out = g.top_k(p, k)
    assert isinstance(out, tuple) and len(out) == 2
    values, indices = _run(g, {p: x}, list(out), backend)
    assert values.shape == (2, 3, k) and indices.dtype == np.int32 and values.dtype == F32
    for idx in np.ndindex(2, 3):
        order = _naive_order(list(x[idx]), True)[:k]
        np.testing.assert_array_equal(indices[idx], order)
        np.testing.assert_array_equal(values[idx], x[idx][order])


def test_top_k_matches_torch_and_its_gradient(backend, rng):
    torch = pytest.importorskip("torch", reason="needs torch, in the oracles extra: pip install -e '.[oracles]'")
    x = rng.standard_normal((3, 4, 10)).astype(F32)
    w = rng.standard_normal((3, 4, 4)).astype(F32)
    g = mg.Graph()
    p = g.placeholder(x.shape)
    values, indices = g.top_k(p, 4)
    loss = g.reduction_sum(g.multiplication(values, g.constant(w)))
    grad = g.gradients(loss, [p])[p]
    assert any(o.type == "top_k_gradient" for o in g.operations)  # MPSGraph's own gradient op
    got_v, got_i, got_g = _run(g, {p: x}, [values, indices, grad], backend)
    t = torch.tensor(x, requires_grad=True)
    tv, ti = torch.topk(t, 4, dim=-1)
    (tv * torch.tensor(w)).sum().backward()
    np.testing.assert_array_equal(got_v, tv.detach().numpy())
    np.testing.assert_array_equal(got_i, ti.numpy())
    np.testing.assert_allclose(got_g, t.grad.numpy(), rtol=1e-6)


def test_top_k_gradient_sends_ties_to_the_chosen_positions(backend):
    g = mg.Graph()
    p = g.placeholder([1, 5])
    dy = g.placeholder([1, 2])
    x = np.array([[2.0, 5.0, 5.0, 5.0, 1.0]], F32)
    (got,) = _run(g, {p: x, dy: np.array([[10.0, 20.0]], F32)}, [g.top_k_gradient(dy, p, 2)], backend)
    np.testing.assert_array_equal(got, [[0.0, 10.0, 20.0, 0.0, 0.0]])


def test_top_k_errors_name_the_op_and_the_valid_range():
    g = mg.Graph()
    p = g.placeholder([2, 5])
    with pytest.raises(mg.ShapeError, match=r"top_k.*k = 6.*0\.\.5"):
        g.top_k(p, 6)
    with pytest.raises(mg.ShapeError, match="top_k"):
        g.top_k(p, -1)
    with pytest.raises(mg.ShapeError, match="scalar"):
        g.top_k(g.placeholder([]), 0)
    with pytest.raises(mg.ShapeError, match=r"top_k_gradient.*\(2, 3\)"):
        g.top_k_gradient(g.placeholder([2, 2]), p, 3)


# ----------------------------------------------------------------------------- Swift and reference
def test_swift_export_uses_mpsgraph_names_and_availability():
    g = mg.Graph()
    p = g.placeholder([2, 5], name="x")
    values, _ = g.top_k(p, 2)
    outs = [g.reduction_product(p, [1]), g.reduction_and(p, [1]), g.reduction_or(p, [0]),
            g.reduction_arg_maximum(p, 1), g.reduction_arg_minimum(p, 0),
            g.cumulative_sum(p, 1, exclusive=True), g.sort(p, 1, descending=True), g.arg_sort(p, 0), values,
            g.gradients(g.reduction_sum(values), [p])[p]]
    src = g.to_swift(target_tensors=outs)
    for piece in ("reductionProduct(with:", "reductionAnd(with:", "reductionOr(with:", "reductionArgMaximum(with:",
                  "reductionArgMinimum(with:", "cumulativeSum(", "exclusive: true, reverse: false",
                  "sort(", "descending: true", "argSort(", "topK(", "k: 2", "topKGradient("):
        assert piece in src, piece
    assert "macOS 13" in src


# ----------------------------------------------------------------------------- long rows
def test_long_rows_take_the_chunked_paths(backend, rng):
    """Rows longer than one kernel chunk (the webgpu loops are bounded; several passes combine)."""
    n = 40000
    bits = np.ones((2, n), np.float32)
    bits[1, rng.integers(0, n)] = 0.0
    ints_ = np.ones((1, n), np.int32)
    ints_[0, [5, 17000, 39999]] = [3, -2, 5]
    scan_in = rng.integers(-3, 4, (1, 9000)).astype(F32)
    sort_in = rng.integers(-50, 50, (1, 4500)).astype(F32)
    g = mg.Graph()
    b, i, s, q = (g.placeholder(bits.shape), g.placeholder(ints_.shape, mg.int32), g.placeholder(scan_in.shape),
                  g.placeholder(sort_in.shape))
    outs = [g.reduction_and(b, [1]), g.reduction_or(g.subtraction(b, 1.0), [1]), g.reduction_product(i, [1]),
            g.cumulative_sum(s, 1, reverse=True), g.arg_sort(q, 1, descending=True), g.reduction_arg_minimum(q, 1)]
    got = _run(g, {b: bits, i: ints_, s: scan_in, q: sort_in}, outs, backend)
    assert got[0].ravel().tolist() == [True, False] and got[1].ravel().tolist() == [False, True]
    assert got[2].item() == -30
    np.testing.assert_array_equal(got[3][0], _naive_cumsum([float(v) for v in scan_in[0]], False, True))
    np.testing.assert_array_equal(got[4][0], _naive_order(list(sort_in[0]), True))
    assert got[5].item() == int(np.flatnonzero(sort_in[0] == sort_in[0].min())[0])


@pytest.mark.parametrize("rank_max", [0, 10_000])
def test_webgpu_merge_sort_and_rank_sort_both_keep_the_order(webgpu, rng, monkeypatch, rank_max):
    """Rows longer than RANK_MAX take the merge sort: forced here for every length (and the rank
    sort forced for long ones), against the Python reference."""
    monkeypatch.setattr(webgpu_sort, "RANK_MAX", rank_max)
    for length, descending in itertools.product((0, 1, 2, 3, 5, 8, 17, 33, 300), (False, True)):
        x = _specials(rng, (length, 3))
        k = min(length, 4)
        dy = rng.standard_normal((3, k)).astype(F32)
        g = mg.Graph()
        p, r, d = g.placeholder(x.shape), g.placeholder((3, length)), g.placeholder(dy.shape)
        values, indices = g.top_k(r, k)
        outs = [g.sort(p, 0, descending=descending), g.arg_sort(p, 0, descending=descending), values, indices,
                g.top_k_gradient(d, r, k)]
        s, a, v, i, dx = _run(g, {p: x, r: np.ascontiguousarray(x.T), d: dy}, outs, webgpu)
        for c in range(3):
            order = _naive_order(list(x[:, c]), descending)
            np.testing.assert_array_equal(a[:, c], order)
            np.testing.assert_array_equal(s[:, c], x[order, c])
            top = _naive_order(list(x[:, c]), True)[:k]
            np.testing.assert_array_equal(i[c], top)
            np.testing.assert_array_equal(v[c], x[top, c])
            want = np.zeros(length, F32)
            want[top] = dy[c]
            np.testing.assert_array_equal(dx[c], want)


def test_top_k_sorts_scans_and_products_match_jax(backend, rng):
    """JAX puts NaN first in top_k and descending argsort, and last ascending, as minigraph does;
    its nanargmax skips NaN as minigraph's arg max does."""
    jax = pytest.importorskip("jax", reason="needs jax, in the oracles extra: pip install -e '.[oracles]'")
    jnp = jax.numpy
    x = _specials(rng, (4, 9))
    y = rng.uniform(-2, 2, (3, 7)).astype(F32)
    g = mg.Graph()
    p, q = g.placeholder(x.shape), g.placeholder(y.shape)
    values, indices = g.top_k(p, 4)
    outs = [values, indices, g.arg_sort(p, 1), g.arg_sort(p, 1, descending=True), g.reduction_arg_maximum(p, 1),
            g.cumulative_sum(q, 1, reverse=True), g.reduction_product(q, [0])]
    got = _run(g, {p: x, q: y}, outs, backend)
    jv, ji = jax.lax.top_k(jnp.asarray(x), 4)
    np.testing.assert_array_equal(got[0], np.asarray(jv))
    np.testing.assert_array_equal(got[1], np.asarray(ji))
    np.testing.assert_array_equal(got[2], np.asarray(jnp.argsort(x, axis=1, stable=True)))
    np.testing.assert_array_equal(got[3], np.asarray(jnp.argsort(x, axis=1, stable=True, descending=True)))
    np.testing.assert_array_equal(got[4][:, 0], np.asarray(jnp.nanargmax(x, axis=1)))  # NaN skipped
    np.testing.assert_allclose(got[5], np.asarray(jax.lax.cumsum(jnp.asarray(y), axis=1, reverse=True)),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[6], np.asarray(jnp.prod(y, axis=0, keepdims=True)), rtol=1e-5)
