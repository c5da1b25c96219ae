"""The cumulative product, maximum and minimum (MPSGraphCumulativeOps) and top-k / bottom-k along
any axis (MPSGraphTopKOps) on both backends, against plain Python loops, NumPy (np.cumprod,
np.maximum.accumulate), PyTorch's values and autograd (torch.cumprod, torch.cummax / cummin,
torch.topk) and finite differences.

Their rules (docs/reduction.md): exclusive scans start from the identity (1, the type's lowest
value, -inf for floats, the type's highest value); the maximum and minimum skip NaN, as MPSGraph's
maximum does (a prefix of only NaN gives -inf / +inf); their gradient goes to the element holding
the running extreme, the one the scan reached last on ties (torch.cummax's index). top_k_axis and
bottom_k take the first k of sort's stable order (NaN largest, ties to the lower index).
"""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import minigraph as mg

from gradcheck import central_differences

F32 = np.float32
FLAGS = list(itertools.product((False, True), (False, True)))
OPS = ("cumulative_product", "cumulative_maximum", "cumulative_minimum")


def _run(g, feeds, outs, backend):
    res = g.run(feeds, outs, backend=backend)
    return [res[t] for t in outs]


def _naive(op, row, exclusive, reverse, lowest, highest):
    """The scan of the formula, one element at a time; NaN never wins a comparison."""
    n = len(row)
    order = range(n - 1, -1, -1) if reverse else range(n)
    acc = {"cumulative_product": 1, "cumulative_maximum": lowest, "cumulative_minimum": highest}[op]
    out = [None] * n
    for j in order:
        v = row[j]
        if exclusive:
            out[j] = acc
        if op == "cumulative_product":
            acc = acc * v
        elif op == "cumulative_maximum":
            acc = v if v > acc else acc
        else:
            acc = v if v < acc else acc
        if not exclusive:
            out[j] = acc
    return out


def _rows(a: np.ndarray, axis: int):
    moved = np.moveaxis(a, axis, -1)
    for idx in np.ndindex(*moved.shape[:-1]):
        yield idx, list(moved[idx])


def _specials(rng, shape):
    a = rng.uniform(-2, 2, shape).astype(F32)
    flat = a.reshape(-1)
    flat[::7] = np.nan
    flat[1::9] = np.inf
    flat[2::11] = -np.inf
    flat[3::6] = 0.0
    flat[4::10] = -0.0
    flat[5::8] = 1.5  # ties
    return a


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("exclusive,reverse", FLAGS)
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_scans_match_a_loop(backend, rng, op, exclusive, reverse, axis):
    x = _specials(rng, (3, 4, 5))
    if op == "cumulative_product":
        x = np.where(np.isinf(x), 2.0, x).astype(F32)  # keep products finite (inf * 0 is its own test)
    xi = rng.integers(-(2 ** 31), 2 ** 31 - 1, (3, 4, 5), dtype=np.int64).astype(np.int32)
    g = mg.Graph()
    p, q = g.placeholder(x.shape), g.placeholder(xi.shape, mg.int32)
    got, got_i = _run(g, {p: x, q: xi}, [getattr(g, op)(p, axis, exclusive, reverse),
                                         getattr(g, op)(q, axis, exclusive=exclusive, reverse=reverse)], backend)
    for idx, row in _rows(x, axis):
        want = _naive(op, [float(np.float32(v)) for v in row], exclusive, reverse, -math.inf, math.inf)
        np.testing.assert_allclose(np.moveaxis(got, axis, -1)[idx], np.asarray(want, np.float64), rtol=2e-6,
                                   atol=0, err_msg=f"{op} row {idx}")
    for idx, row in _rows(xi, axis):  # int32 products wrap around
        want = _naive(op, [int(v) for v in row], exclusive, reverse, -2 ** 31, 2 ** 31 - 1)
        want = [((v + 2 ** 31) % 2 ** 32) - 2 ** 31 for v in want]
        np.testing.assert_array_equal(np.moveaxis(got_i, axis, -1)[idx], want)


@pytest.mark.parametrize("dtype", [mg.float16, mg.uint32])
def test_scans_of_float16_and_uint32(backend, rng, dtype):
    npd = dtype.np_dtype
    if dtype == mg.float16:
        x = (rng.uniform(0.5, 1.5, (2, 30)) * rng.choice([-1, 1], (2, 30))).astype(npd)
        x[0, 4] = np.nan
    else:
        x = rng.integers(0, 9, (2, 30)).astype(npd)
    g = mg.Graph()
    p = g.placeholder(x.shape, dtype)
    outs = [getattr(g, op)(p, 1, exclusive=e, reverse=r) for op in OPS for e, r in FLAGS]
    got = _run(g, {p: x}, outs, backend)
    lo, hi = (-math.inf, math.inf) if dtype == mg.float16 else (0, 2 ** 32 - 1)
    for (op, (e, r)), res in zip(itertools.product(OPS, FLAGS), got):
        assert res.dtype == npd
        for i in range(2):
            if dtype == mg.float16:  # float16 products run in float32 and round once
                want = np.asarray(_naive(op, [np.float32(v) for v in x[i]], e, r, np.float32(lo), np.float32(hi)),
                                  np.float32).astype(npd)
                np.testing.assert_array_equal(res[i], want, err_msg=f"{op} {e} {r}")
            else:
                want = [v % 2 ** 32 for v in _naive(op, [int(v) for v in x[i]], e, r, lo, hi)]
                np.testing.assert_array_equal(res[i], want, err_msg=f"{op} {e} {r}")


def test_scans_worked_example(backend):
    """The numbers of docs/reduction.md."""
    g = mg.Graph()
    p = g.placeholder([5])
    x = np.array([2.0, 3.0, np.nan, 1.0, 4.0], F32)
    outs = [g.cumulative_product(p, 0), g.cumulative_maximum(p, 0), g.cumulative_minimum(p, 0, exclusive=True),
            g.cumulative_maximum(p, 0, exclusive=True, reverse=True)]
    got = [r.tolist() for r in _run(g, {p: x}, outs, backend)]
    assert got[0][:2] == [2.0, 6.0] and all(math.isnan(v) for v in got[0][2:])
    assert got[1:] == [[2.0, 3.0, 3.0, 3.0, 4.0], [math.inf, 2.0, 2.0, 2.0, 1.0],
                       [4.0, 4.0, 4.0, 4.0, -math.inf]]


def test_scans_match_numpy(backend, rng):
    x = rng.uniform(-1.5, 1.5, (4, 6, 3)).astype(F32)
    g = mg.Graph()
    p = g.placeholder(x.shape)
    outs = [g.cumulative_product(p, 1), g.cumulative_maximum(p, 0), g.cumulative_minimum(p, -1),
            g.cumulative_maximum(p, 1, reverse=True)]
    got = _run(g, {p: x}, outs, backend)
    np.testing.assert_allclose(got[0], np.cumprod(x.astype(np.float64), axis=1), rtol=1e-5)
    np.testing.assert_array_equal(got[1], np.maximum.accumulate(x, axis=0))
    np.testing.assert_array_equal(got[2], np.minimum.accumulate(x, axis=-1))
    np.testing.assert_array_equal(got[3], np.flip(np.maximum.accumulate(np.flip(x, 1), axis=1), 1))
    # NaN: NumPy's fmax skips it as MPSGraph's maximum does (a prefix of only NaN: fmax keeps NaN, -inf here)
    y = x.copy()
    y[:, ::2, :] = np.nan
    g = mg.Graph()
    p = g.placeholder(y.shape)
    (got_nan,) = _run(g, {p: y}, [g.cumulative_maximum(p, 1)], backend)
    want = np.fmax.accumulate(y, axis=1)
    np.testing.assert_array_equal(got_nan, np.where(np.isnan(want), -np.inf, want))


def test_empty_axis_and_length_one(backend):
    g = mg.Graph()
    e, o = g.placeholder([2, 0, 3]), g.placeholder([2, 1])
    outs = [getattr(g, op)(t, 1, exclusive=ex) for op in OPS for ex in (False, True) for t in (e, o)]
    got = _run(g, {e: np.zeros((2, 0, 3), F32), o: np.array([[5.0], [-1.0]], F32)}, outs, backend)
    got = iter(got)
    for op, ident in zip(OPS, (1.0, -np.inf, np.inf)):
        for ex in (False, True):
            assert next(got).shape == (2, 0, 3)
            np.testing.assert_array_equal(next(got), [[ident], [ident]] if ex else [[5.0], [-1.0]])


def test_scans_match_torch(backend, rng):
    torch = pytest.importorskip("torch", reason="needs torch, in the oracles extra: pip install -e '.[oracles]'")
    x = rng.integers(-3, 4, (3, 7, 4)).astype(F32)  # many ties
    g = mg.Graph()
    p = g.placeholder(x.shape)
    outs = [g.cumulative_product(p, 1), g.cumulative_maximum(p, 1), g.cumulative_minimum(p, 2)]
    got = _run(g, {p: x}, outs, backend)
    t = torch.tensor(x)
    np.testing.assert_array_equal(got[0], torch.cumprod(t, 1).numpy())
    np.testing.assert_array_equal(got[1], torch.cummax(t, 1).values.numpy())
    np.testing.assert_array_equal(got[2], torch.cummin(t, 2).values.numpy())


def _torch_scan(torch, op, t, axis, exclusive, reverse):
    """The same scan built from torch's ops: flips for reverse, a shift for exclusive."""
    v = torch.flip(t, [axis]) if reverse else t
    if op == "cumulative_product":
        y = torch.cumprod(v, axis)
        ident = 1.0
    else:
        y = (torch.cummax if op == "cumulative_maximum" else torch.cummin)(v, axis).values
        ident = -math.inf if op == "cumulative_maximum" else math.inf
    if exclusive:
        first = torch.full_like(y.narrow(axis, 0, 1), ident)
        y = torch.cat([first, y.narrow(axis, 0, y.shape[axis] - 1)], axis)
    return torch.flip(y, [axis]) if reverse else y


def _gradient_vs_torch(backend, op, x, w, axis, exclusive, reverse):
    torch = pytest.importorskip("torch", reason="needs torch, in the oracles extra: pip install -e '.[oracles]'")
    g = mg.Graph()
    p = g.placeholder(x.shape)
    y = getattr(g, op)(p, axis, exclusive, reverse)
    # the -inf / +inf that exclusive scans start from get weight 0 (inf * 0 is NaN in both)
    finite = np.isfinite(_torch_scan(torch, op, torch.tensor(x), axis, exclusive, reverse).numpy())
    w = np.where(finite, w, 0.0)
    loss = g.reduction_sum(g.multiplication(g.select(g.constant(finite), y, g.constant(0.0)), g.constant(w.astype(F32))))
    (got,) = _run(g, {p: x.astype(F32)}, [g.gradients(loss, [p])[p]], backend)
    t = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    s = _torch_scan(torch, op, t, axis, exclusive, reverse)
    (torch.where(torch.tensor(finite), s, 0.0) * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(got, t.grad.numpy(), rtol=1e-5, atol=1e-5, err_msg=f"{op} {exclusive} {reverse}")


@pytest.mark.parametrize("exclusive,reverse", FLAGS)
def test_cumulative_product_gradient_with_zeros_matches_torch(backend, rng, exclusive, reverse):
    x = rng.uniform(-2, 2, (5, 6))
    x[0, 2] = 0.0  # one zero
    x[1, 1] = x[1, 4] = 0.0  # two zeros
    x[2, 0] = 0.0  # a zero first
    x[3, 5] = 0.0  # a zero last
    w = rng.standard_normal((5, 6))
    _gradient_vs_torch(backend, "cumulative_product", x, w, 1, exclusive, reverse)
    _gradient_vs_torch(backend, "cumulative_product", x.T.copy(), w.T.copy(), 0, exclusive, reverse)


@pytest.mark.parametrize("op", ["cumulative_maximum", "cumulative_minimum"])
@pytest.mark.parametrize("exclusive,reverse", FLAGS)
def test_cumulative_extremum_gradient_with_ties_matches_torch(backend, rng, op, exclusive, reverse):
    x = rng.integers(-2, 3, (4, 9)).astype(np.float64)  # many ties: the last one reached gets the gradient
    x[0, 3] = -np.inf
    w = rng.standard_normal((4, 9))
    _gradient_vs_torch(backend, op, x, w, 1, exclusive, reverse)
    _gradient_vs_torch(backend, op, x.T.copy(), w.T.copy(), 0, exclusive, reverse)


def test_cumulative_extremum_gradient_skips_nan(backend):
    """NaN never holds the running maximum; a prefix of only NaN (-inf) sends its gradient nowhere."""
    g = mg.Graph()
    p = g.placeholder([6])
    x = np.array([np.nan, np.nan, 1.0, np.nan, 3.0, 3.0], F32)
    w = np.array([1.0, 2.0, 4.0, 8.0, 16.0, 32.0], F32)
    y = g.cumulative_maximum(p, 0)
    keep = g.constant(np.isfinite(np.array([-np.inf, -np.inf, 1, 1, 3, 3])))
    loss = g.reduction_sum(g.multiplication(g.select(keep, y, g.constant(0.0)), g.constant(w)))
    (got,) = _run(g, {p: x}, [g.gradients(loss, [p])[p]], backend)
    np.testing.assert_array_equal(got, [0.0, 0.0, 12.0, 0.0, 16.0, 32.0])


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("exclusive,reverse", FLAGS)
def test_scan_gradients_match_finite_differences(rng, op, exclusive, reverse):
    x = rng.permutation(np.linspace(-2, 2, 15)).reshape(3, 5)  # distinct values: no ties to break
    if op == "cumulative_product":
        x[1, 2] = 0.0
        x[2, 0] = 0.0
        x[2, 3] = 0.0
    r = rng.uniform(0.5, 1.5, (3, 5))
    g = mg.Graph()
    p = g.placeholder(x.shape, mg.float64)
    y = getattr(g, op)(p, 1, exclusive, reverse)
    edge = 0 if reverse else -1  # exclusive extremum scans start from +-inf: leave that element out
    if exclusive and op != "cumulative_product":
        r[:, (-1 if edge == 0 else 0)] = 0.0
        y = g.select(g.constant(r != 0), y, g.constant(0.0, dtype=mg.float64))
    loss = g.reduction_sum(g.multiplication(y, g.constant(r)))
    got = g.run({p: x}, [g.gradients(loss, [p])[p]])
    (fd,) = central_differences(g, loss, {p: x}, [p])
    np.testing.assert_allclose(list(got.values())[0], fd, rtol=1e-6, atol=1e-7)


def test_integer_scans_have_no_gradient_and_errors_name_the_op():
    g = mg.Graph()
    q = g.placeholder([3, 4], mg.int32)
    f = g.placeholder([3, 4])
    loss = g.reduction_sum(g.multiplication(g.cast(g.cumulative_maximum(q, 1), mg.float32), f))
    assert g.gradients(loss, [f])[f] is not None
    for op in OPS:
        with pytest.raises(mg.DTypeError, match=op):
            getattr(g, op)(g.placeholder([3], mg.bool), 0)
        with pytest.raises(mg.ShapeError, match=op):
            getattr(g, op)(f, 2)
        with pytest.raises(mg.ShapeError, match=f"{op}.*exclusive"):
            getattr(g, op)(f, 0, exclusive="yes")


def test_swift_export_uses_the_cumulative_names():
    g = mg.Graph()
    p = g.placeholder([2, 3], name="p")
    src = g.to_swift(target_tensors=[g.cumulative_product(p, 1, exclusive=True), g.cumulative_maximum(p, 0, reverse=True),
                      g.cumulative_minimum(p, -1)])
    for want in ("cumulativeProduct(", "cumulativeMaximum(", "cumulativeMinimum(", "exclusive: true, reverse: false",
                 "// Needs macOS 13.0 / iOS 16.0 or later"):
        assert want in src, want


# ----------------------------------------------------------------------------- top_k / bottom_k along an axis
def _order_key(v, descending):
    nan = math.isnan(v)
    return (0 if nan else 1, 0.0 if nan else -v) if descending else (1 if nan else 0, 0.0 if nan else v)


def _naive_k(row, k, descending):
    """The first k of the stable order (NaN largest; Python's sort keeps equal keys in index order)."""
    order = sorted(range(len(row)), key=lambda i: _order_key(float(row[i]), descending))[:k]
    return [row[i] for i in order], order


@pytest.mark.parametrize("op", ["top_k_axis", "bottom_k"])
@pytest.mark.parametrize("axis,length", [(0, 6), (1, 5), (-1, 7), (1, 300)])
def test_top_k_and_bottom_k_along_an_axis_match_a_loop(backend, rng, op, axis, length):
    shape = [3, 4, 5]
    shape[axis] = length
    x = _specials(rng, tuple(shape))
    xi = rng.integers(-3, 4, tuple(shape)).astype(np.int32)
    descending = op == "top_k_axis"
    for k in sorted({0, 1, 3, length}):
        g = mg.Graph()
        p, q = g.placeholder(x.shape), g.placeholder(xi.shape, mg.int32)
        v, i = getattr(g, op)(p, axis, k)
        vi, ii = getattr(g, op)(q, axis, k)
        got = _run(g, {p: x, q: xi}, [v, i, vi, ii], backend)
        want_shape = list(shape)
        want_shape[axis] = k
        assert [r.shape for r in got] == [tuple(want_shape)] * 4 and got[1].dtype == np.int32
        for src, gv, gi in ((x, got[0], got[1]), (xi, got[2], got[3])):
            for idx, row in _rows(src, axis):
                wv, wi = _naive_k(row, k, descending)
                np.testing.assert_array_equal(np.moveaxis(gv, axis, -1)[idx], np.asarray(wv, src.dtype))
                np.testing.assert_array_equal(np.moveaxis(gi, axis, -1)[idx], wi, err_msg=f"{op} k={k} {idx}")


def test_top_k_with_an_axis_builds_top_k_axis(backend, rng):
    x = rng.standard_normal((4, 6)).astype(F32)
    g = mg.Graph()
    p = g.placeholder(x.shape)
    last_v, last_i = g.top_k(p, 2)
    ax_v, ax_i = g.top_k(p, 2, axis=1)
    col_v, col_i = g.top_k(p, 3, axis=0)
    assert [last_v.operation.type, ax_v.operation.type, col_v.operation.type] == ["top_k", "top_k_axis", "top_k_axis"]
    got = _run(g, {p: x}, [last_v, last_i, ax_v, ax_i, col_v, col_i], backend)
    np.testing.assert_array_equal(got[0], got[2])
    np.testing.assert_array_equal(got[1], got[3])
    np.testing.assert_array_equal(got[4], -np.sort(-x, axis=0)[:3])
    np.testing.assert_array_equal(got[5], np.argsort(-x, axis=0, kind="stable")[:3])


@pytest.mark.parametrize("dtype", [mg.float16, mg.uint32])
def test_top_k_and_bottom_k_of_float16_and_uint32(backend, rng, dtype):
    x = rng.integers(0, 6, (5, 4)).astype(dtype.np_dtype)
    g = mg.Graph()
    p = g.placeholder(x.shape, dtype)
    outs = [*g.top_k_axis(p, 0, 2), *g.bottom_k(p, 0, 3)]
    got = _run(g, {p: x}, outs, backend)
    for (gv, gi), desc, k in (((got[0], got[1]), True, 2), ((got[2], got[3]), False, 3)):
        assert gv.dtype == x.dtype
        for c in range(4):
            wv, wi = _naive_k([float(v) for v in x[:, c]], k, desc)
            np.testing.assert_array_equal(gv[:, c], np.asarray(wv, x.dtype))
            np.testing.assert_array_equal(gi[:, c], wi)


def test_top_k_and_bottom_k_match_torch(backend, rng):
    torch = pytest.importorskip("torch", reason="needs torch, in the oracles extra: pip install -e '.[oracles]'")
    x = rng.permutation(np.arange(60, dtype=F32)).reshape(3, 4, 5) / 7  # distinct: torch's tie order is unspecified
    g = mg.Graph()
    p = g.placeholder(x.shape)
    outs = [*g.top_k_axis(p, 1, 3), *g.bottom_k(p, 0, 2), *g.bottom_k(p, -1, 4)]
    got = _run(g, {p: x}, outs, backend)
    t = torch.tensor(x)
    for (gv, gi), (dim, k, largest) in zip([(got[0], got[1]), (got[2], got[3]), (got[4], got[5])],
                                           [(1, 3, True), (0, 2, False), (2, 4, False)]):
        tv, ti = torch.topk(t, k, dim=dim, largest=largest, sorted=True)
        np.testing.assert_array_equal(gv, tv.numpy())
        np.testing.assert_array_equal(gi, ti.numpy())
    # with ties the values still agree (the indices follow minigraph's lower-index rule)
    y = rng.integers(-2, 3, (4, 9)).astype(F32)
    g = mg.Graph()
    p = g.placeholder(y.shape)
    gv, _ = _run(g, {p: y}, list(g.bottom_k(p, 1, 5)), backend)
    np.testing.assert_array_equal(gv, torch.topk(torch.tensor(y), 5, dim=1, largest=False).values.numpy())


@pytest.mark.parametrize("op,axis,k", [("top_k_axis", 0, 2), ("top_k_axis", 1, 4), ("bottom_k", 2, 3),
                                       ("bottom_k", -2, 1)])
def test_top_k_and_bottom_k_gradients_match_torch(backend, rng, op, axis, k):
    torch = pytest.importorskip("torch", reason="needs torch, in the oracles extra: pip install -e '.[oracles]'")
    x = rng.permutation(np.arange(60, dtype=np.float64)).reshape(3, 4, 5) / 9
    shape = list(x.shape)
    shape[axis] = k
    w = rng.standard_normal(shape)
    g = mg.Graph()
    p = g.placeholder(x.shape)
    values, _ = getattr(g, op)(p, axis, k)
    loss = g.reduction_sum(g.multiplication(values, g.constant(w.astype(F32))))
    dx = g.gradients(loss, [p])[p]
    grad_op = "top_k_axis_gradient" if op == "top_k_axis" else "bottom_k_gradient"
    assert any(o.type == grad_op for o in g.operations)  # MPSGraph's own gradient op
    (got,) = _run(g, {p: x.astype(F32)}, [dx], backend)
    t = torch.tensor(x, requires_grad=True)
    (torch.topk(t, k, dim=axis, largest=op == "top_k_axis").values * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(got, t.grad.numpy(), rtol=1e-6, atol=1e-6)


def test_bottom_k_gradient_sends_ties_to_the_chosen_positions(backend):
    g = mg.Graph()
    p, dy = g.placeholder([4, 1]), g.placeholder([2, 1])
    x = np.array([[2.0], [1.0], [np.nan], [1.0]], F32)
    (got,) = _run(g, {p: x, dy: np.array([[10.0], [20.0]], F32)}, [g.bottom_k_gradient(dy, p, 0, 2)], backend)
    np.testing.assert_array_equal(got, [[0.0], [10.0], [0.0], [20.0]])


def test_top_k_axis_and_bottom_k_errors_name_the_op_axis_and_valid_range():
    g = mg.Graph()
    p = g.placeholder([3, 5])
    with pytest.raises(mg.ShapeError, match=r"top_k_axis.*k = 4.*axis 0.*0\.\.3"):
        g.top_k_axis(p, 0, 4)
    with pytest.raises(mg.ShapeError, match=r"bottom_k.*k = -1"):
        g.bottom_k(p, 1, -1)
    with pytest.raises(mg.ShapeError, match="bottom_k"):
        g.bottom_k(p, 2, 1)
    with pytest.raises(mg.ShapeError, match="bottom_k"):
        g.bottom_k(g.placeholder([]), 0, 0)
    with pytest.raises(mg.ShapeError, match=r"bottom_k_gradient.*\(3, 2\)"):
        g.bottom_k_gradient(g.placeholder([2, 5]), p, 1, 2)
    with pytest.raises(mg.DTypeError, match="top_k_axis_gradient"):
        g.top_k_axis_gradient(g.placeholder([3, 2], mg.float16), p, 1, 2)


def test_swift_export_of_top_k_axis_and_bottom_k():
    g = mg.Graph()
    p = g.placeholder([2, 3], name="p")
    v, _ = g.top_k(p, 2, axis=0)
    b, _ = g.bottom_k(p, -1, 1)
    src = g.to_swift(target_tensors=[v, b])
    for want in ("topK(", "axis: 0, k: 2", "bottomK(", "axis: 1, k: 1", "// Needs macOS 14.0 / iOS 17.0 or later"):
        assert want in src, want
