"""band_part against a loop from Apple's formula and torch's triu/tril; its gradient by torch autograd."""
from __future__ import annotations

import numpy as np
import pytest

import minigraph as mg

SHAPES = [(4, 4), (3, 5), (2, 3, 6, 4), (5, 2), (0, 3), (2, 0, 4), (1, 1)]
BANDS = [(0, 0), (1, -1), (-1, 0), (2, 1), (-1, -1), (0, 7), (9, 0)]


def _band_loop(x, lo, up):
    out = np.zeros_like(x)
    for idx in np.ndindex(*x.shape):
        i, j = idx[-2], idx[-1]
        if (lo < 0 or i - j <= lo) and (up < 0 or j - i <= up):
            out[idx] = x[idx]
    return out


def _run(fn, arrays, backend="numpy"):
    g = mg.Graph()
    ps = [g.placeholder(a.shape, dtype=a.dtype) for a in arrays]
    outs = fn(g, *ps)
    outs = outs if isinstance(outs, list) else [outs]
    res = g.run(dict(zip(ps, arrays)), outs, backend=backend)
    return [np.asarray(res[o]) for o in outs]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("band", BANDS)
def test_band_part_matches_formula(shape, band):
    rng = np.random.default_rng(abs(hash((shape, band))) % 2**32)
    x = rng.standard_normal(shape).astype(np.float32)
    (y,) = _run(lambda g, a: g.band_part(a, *band), [x])
    np.testing.assert_array_equal(y, _band_loop(x, *band))


def test_band_part_dtypes_and_special_values():
    x = np.array([[np.nan, np.inf, 1], [-np.inf, 2, np.nan], [3, 4, 5]], np.float16)
    (y,) = _run(lambda g, a: g.band_part(a, 0, 1), [x])
    np.testing.assert_array_equal(y, _band_loop(x, 0, 1))
    assert y.dtype == np.float16
    i = np.arange(24, dtype=np.int32).reshape(2, 3, 4) - 7
    (yi,) = _run(lambda g, a: g.band_part(a, 1, 0), [i])
    np.testing.assert_array_equal(yi, _band_loop(i, 1, 0))


def test_band_part_against_torch():
    torch = pytest.importorskip("torch", reason="oracles extra: torch")
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 5, 6)).astype(np.float32)
    for lo, up in [(0, -1), (-1, 0), (2, 3)]:
        t = torch.from_numpy(x)
        ref = t
        if up >= 0:
            ref = torch.tril(ref, up)
        if lo >= 0:
            ref = torch.triu(ref, -lo)
        (y,) = _run(lambda g, a: g.band_part(a, lo, up), [x])
        np.testing.assert_array_equal(y, ref.numpy())


def test_band_part_gradient_against_torch():
    torch = pytest.importorskip("torch", reason="oracles extra: torch")
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 4, 5)).astype(np.float32)
    w = rng.standard_normal((2, 4, 5)).astype(np.float32)
    g = mg.Graph()
    p = g.placeholder(x.shape)
    loss = g.reduction_sum(g.multiplication(g.band_part(p, 1, 2), g.constant(w)), None)
    dxt = g.gradients(loss, [p])[p]
    dx = np.asarray(g.run({p: x}, [dxt])[dxt])
    t = torch.from_numpy(x).requires_grad_()
    (torch.triu(torch.tril(t, 2), -1) * torch.from_numpy(w)).sum().backward()
    np.testing.assert_allclose(dx, t.grad.numpy(), rtol=0, atol=0)


def test_band_part_webgpu_matches_numpy():
    if "webgpu" not in mg.available_backends():
        pytest.skip("webgpu backend not available")
    rng = np.random.default_rng(5)
    for shape, dt in [((2, 3, 4), np.float32), ((5, 3), np.float16), ((3, 3), np.int32)]:
        x = (rng.standard_normal(shape) * 10).astype(dt)
        fn = lambda g, a: [g.band_part(a, 1, 0), g.band_part(a, -1, 1), g.band_part(a, 0, -1)]  # noqa: E731
        for want, got in zip(_run(fn, [x]), _run(fn, [x], "webgpu")):
            np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("bad, err", [((lambda g, a: g.band_part(g.constant(np.ones(3, np.float32)), 0, 0)),
                                       mg.ShapeError),
                                      ((lambda g, a: g.band_part(a, 1.5, 0)), mg.ShapeError),
                                      ((lambda g, a: g.band_part(a, 0, "x")), mg.ShapeError)])
def test_band_part_errors_name_the_op(bad, err):
    g = mg.Graph()
    a = g.placeholder((3, 3))
    with pytest.raises(err, match="band_part"):
        bad(g, a)


# ----------------------------------------------------------------------------- hamming_distance
def _hamming_loop(a, b, dt):
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a2, b2 = np.broadcast_to(a, batch + a.shape[-2:]), np.broadcast_to(b, batch + b.shape[-2:])
    width = a.dtype.itemsize * 8
    out = np.zeros(batch + (a.shape[-2], b.shape[-2]), dt)
    for idx in np.ndindex(*out.shape):
        *bi, m, n = idx
        s = 0
        for k in range(a.shape[-1]):
            x = (int(a2[tuple(bi) + (m, k)]) ^ int(b2[tuple(bi) + (n, k)])) & ((1 << width) - 1)
            s += bin(x).count("1")
        out[idx] = s
    return out


HAMMING = [((3, 4), (5, 4), np.int32), ((2, 3, 6), (1, 2, 6), np.uint32), ((4, 1, 2, 3), (3, 4, 3), np.int32),
           ((2, 5), (3, 5), np.int8), ((2, 3), (4, 3), np.uint64), ((0, 3), (2, 3), np.int32),
           ((2, 0), (3, 0), np.int16)]


@pytest.mark.parametrize("sa, sb, dt", HAMMING)
@pytest.mark.parametrize("result", [mg.uint32, mg.uint16])
def test_hamming_distance_matches_bit_loop(sa, sb, dt, result):
    rng = np.random.default_rng(len(sa) * 31 + len(sb) + np.dtype(dt).itemsize)
    info = np.iinfo(dt)
    a = rng.integers(info.min, info.max, sa, dtype=dt, endpoint=True)
    b = rng.integers(info.min, info.max, sb, dtype=dt, endpoint=True)
    (y,) = _run(lambda g, p, q: g.hamming_distance(p, q, result), [a, b])
    want = _hamming_loop(a, b, result.np_dtype)
    assert y.dtype == want.dtype and y.shape == want.shape
    np.testing.assert_array_equal(y, want)


def test_hamming_distance_extremes():
    a = np.array([[-1, 0, np.iinfo(np.int32).min]], np.int32)
    b = np.array([[0, 0, 0], [-1, -1, -1]], np.int32)
    (y,) = _run(lambda g, p, q: g.hamming_distance(p, q, mg.uint32), [a, b])
    np.testing.assert_array_equal(y, [[33, 63]])


def test_hamming_distance_webgpu_matches_numpy():
    if "webgpu" not in mg.available_backends():
        pytest.skip("webgpu backend not available")
    rng = np.random.default_rng(9)
    for sa, sb, dt in [((3, 4), (5, 4), np.int32), ((2, 3, 6), (1, 2, 6), np.uint32),
                       ((4, 1, 2, 3), (3, 4, 3), np.int32), ((2, 0), (3, 0), np.int32)]:
        info = np.iinfo(dt)
        a = rng.integers(info.min, info.max, sa, dtype=dt, endpoint=True)
        b = rng.integers(info.min, info.max, sb, dtype=dt, endpoint=True)
        fn = lambda g, p, q: g.hamming_distance(p, q, mg.uint32)  # noqa: E731
        np.testing.assert_array_equal(_run(fn, [a, b], "webgpu")[0], _run(fn, [a, b])[0])


def test_hamming_distance_is_not_differentiable():
    g = mg.Graph()
    a = g.placeholder((2, 3), dtype=mg.int32)
    assert not mg.ops.OPS["hamming_distance"].differentiable
    with pytest.raises(mg.MiniGraphError):
        g.gradients(g.cast(g.hamming_distance(a, a, mg.uint32), mg.float32), [a])


@pytest.mark.parametrize("sa, da, sb, db, result, err", [
    ((2, 3), mg.int32, (2, 4), mg.int32, mg.uint32, mg.ShapeError),
    ((3,), mg.int32, (2, 3), mg.int32, mg.uint32, mg.ShapeError),
    ((2, 2, 3), mg.int32, (3, 2, 3), mg.int32, mg.uint32, mg.ShapeError),
    ((2, 3), mg.float32, (2, 3), mg.float32, mg.uint32, mg.DTypeError),
    ((2, 3), mg.int32, (2, 3), mg.uint32, mg.uint32, mg.DTypeError),
    ((2, 3), mg.int32, (2, 3), mg.int32, mg.int32, mg.DTypeError),
    ((2, 3), mg.int32, (2, 3), mg.int32, mg.float32, mg.DTypeError)])
def test_hamming_distance_errors_name_the_op(sa, da, sb, db, result, err):
    g = mg.Graph()
    with pytest.raises(err, match="hamming_distance"):
        g.hamming_distance(g.placeholder(sa, dtype=da), g.placeholder(sb, dtype=db), result)


# ----------------------------------------------------------------------------- inverse
def _well_conditioned(rng, shape, dtype=np.float32):
    n = shape[-1]
    return (rng.standard_normal(shape) + 2 * n * np.eye(n) * rng.choice([-1, 1], shape[:-2] + (1, 1))
            if n else np.zeros(shape)).astype(dtype)


@pytest.mark.parametrize("shape", [(1, 1), (3, 3), (2, 4, 4), (2, 3, 5, 5), (0, 2, 2), (3, 0, 0), (7, 7)])
def test_inverse_matches_numpy_linalg(shape):
    rng = np.random.default_rng(sum(shape) + len(shape))
    a = rng.standard_normal(shape).astype(np.float32)
    (y,) = _run(lambda g, p: g.inverse(p), [a])
    assert y.shape == a.shape and y.dtype == np.float32
    want = np.linalg.inv(a.astype(np.float64)) if a.size else a
    cond = np.linalg.cond(a.astype(np.float64)) if a.size else np.ones(1)
    np.testing.assert_allclose(y, want, rtol=0, atol=1e-5 * float(np.max(cond)) * max(1.0, float(np.abs(want).max()
                                                                                             if a.size else 1)))


def test_inverse_pivots_and_float16():
    p = np.array([[0, 1, 0], [0, 0, 2], [4, 0, 0]], np.float32)  # needs row exchanges
    (y,) = _run(lambda g, q: g.inverse(q), [p])
    np.testing.assert_allclose(y, np.linalg.inv(p), rtol=1e-6)
    rng = np.random.default_rng(1)
    h = _well_conditioned(rng, (2, 3, 3), np.float16)
    (yh,) = _run(lambda g, q: g.inverse(q), [h])
    assert yh.dtype == np.float16
    np.testing.assert_allclose(yh, np.linalg.inv(h.astype(np.float64)).astype(np.float16), rtol=2e-3, atol=1e-4)


def test_inverse_of_a_singular_matrix_is_nan():
    sing = np.array([[[1, 2], [2, 4]], [[0, 0], [1, 3]], [[2, 1], [1, 1]]], np.float32)
    (y,) = _run(lambda g, q: g.inverse(q), [sing])
    assert np.isnan(y[0]).all() and np.isnan(y[1]).all()
    np.testing.assert_allclose(y[2], np.linalg.inv(sing[2]), rtol=1e-6)
    inf = np.array([[np.inf, 1], [1, 1]], np.float32)
    (yi,) = _run(lambda g, q: g.inverse(q), [inf])
    assert np.isnan(yi).all()


def test_inverse_gradient_against_torch():
    torch = pytest.importorskip("torch", reason="oracles extra: torch")
    rng = np.random.default_rng(6)
    a = _well_conditioned(rng, (2, 4, 4))
    w = rng.standard_normal((2, 4, 4)).astype(np.float32)
    g = mg.Graph()
    p = g.placeholder(a.shape)
    loss = g.reduction_sum(g.multiplication(g.inverse(p), g.constant(w)), None)
    dxt = g.gradients(loss, [p])[p]
    dx = np.asarray(g.run({p: a}, [dxt])[dxt])
    t = torch.from_numpy(a.astype(np.float64)).requires_grad_()
    (torch.linalg.inv(t) * torch.from_numpy(w.astype(np.float64))).sum().backward()
    np.testing.assert_allclose(dx, t.grad.numpy(), rtol=1e-4, atol=1e-6)


def test_inverse_webgpu_matches_numpy():
    if "webgpu" not in mg.available_backends():
        pytest.skip("webgpu backend not available")
    rng = np.random.default_rng(7)
    sing = np.array([[[1, 2], [2, 4]], [[2, 1], [1, 1]]], np.float32)
    for a in [_well_conditioned(rng, (2, 3, 5, 5)), _well_conditioned(rng, (4, 4), np.float16), sing,
              np.array([[0, 1, 0], [0, 0, 2], [4, 0, 0]], np.float32), np.zeros((2, 0, 0), np.float32)]:
        fn = lambda g, q: g.inverse(q)  # noqa: E731
        got, want = _run(fn, [a], "webgpu")[0], _run(fn, [a])[0]
        tol = 2e-3 if a.dtype == np.float16 else 1e-5
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


@pytest.mark.parametrize("shape, dt, err", [((3,), mg.float32, mg.ShapeError), ((2, 3), mg.float32, mg.ShapeError),
                                            ((2, 4, 3), mg.float32, mg.ShapeError), ((2, 2), mg.int32, mg.DTypeError)])
def test_inverse_errors_name_the_op(shape, dt, err):
    g = mg.Graph()
    with pytest.raises(err, match="inverse"):
        g.inverse(g.placeholder(shape, dtype=dt))
