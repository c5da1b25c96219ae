"""The cpu backend's compiled batch-norm kernels (minigraph/backends/cpu/normalization.py): mean,
variance, normalize and its three gradient ops against exact per-channel sums (math.fsum) and the
NumPy backend, over NCHW, NHWC and layer-norm axes; ``normalize`` and ``normalization_gradient``
with the NumPy backend's bits; the same bits at 1 and 2 threads; the steps the NumPy kernel keeps.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import minigraph as mg

EPS = 1e-3
OPS = ("mean", "variance", "normalize", "normalization_gamma_gradient", "normalization_beta_gradient",
       "normalization_gradient")


@pytest.fixture
def numba():
    return pytest.importorskip("numba", reason="needs the 'cpu' extra")


@pytest.fixture
def threads_restored():
    before = mg.get_num_threads()
    yield
    mg.set_num_threads(before)


def _kept(shape, axes):
    return tuple(1 if i in axes else d for i, d in enumerate(shape))


def _graph(shape, axes, dtype, given_statistics: bool):
    """A batch norm's six ops; with ``given_statistics`` the mean, variance and the gamma and beta
    gradients that normalize and normalization_gradient read are placeholders (their NumPy bits then
    do not depend on how the statistics were summed)."""
    g = mg.Graph()
    dt = mg.as_dtype(dtype)
    k = _kept(shape, axes)
    px, pdy = g.placeholder(shape, dtype=dt, name="x"), g.placeholder(shape, dtype=dt, name="dy")
    gamma, beta = g.placeholder(k, dtype=dt, name="gamma"), g.placeholder(k, dtype=dt, name="beta")
    ax = list(axes)
    m, v = g.mean(px, axes=ax), g.variance(px, axes=ax)
    gg, bg = g.normalization_gamma_gradient(pdy, px, m, v, ax, EPS), g.normalization_beta_gradient(pdy, px, ax)
    if given_statistics:
        m, v, gg, bg = (g.placeholder(k, dtype=dt, name=n) for n in ("m", "v", "gg", "bg"))
    y = g.normalize(px, m, v, gamma, beta, EPS)
    dx = g.normalization_gradient(pdy, px, m, v, gamma, gg, bg, ax, EPS)
    return g, {p.name: p for p in g.placeholders}, y, dx


def _feeds(places, shape, axes, dtype, rng):
    k = _kept(shape, axes)
    got = {"x": rng.standard_normal(shape) * 3 + 1.5, "dy": rng.standard_normal(shape),
           "gamma": rng.standard_normal(k), "beta": rng.standard_normal(k),
           "m": rng.standard_normal(k), "v": rng.uniform(0.1, 4, k), "gg": rng.standard_normal(k) * 9,
           "bg": rng.standard_normal(k) * 9}
    return {places[n]: a.astype(dtype) for n, a in got.items() if n in places}


def _compile(g, feeds, targets, backend):
    return g.compile({p: mg.ShapedType(a.shape, mg.as_dtype(a.dtype)) for p, a in feeds.items()}, targets,
                     backend=backend)


def _exact(shape, axes, x, dy, gamma, eps):
    """(mean, variance, gamma gradient, beta gradient, dx) from the formulas, every sum by math.fsum
    over one channel's elements, in float64."""
    k = _kept(shape, axes)
    x, dy = x.astype(np.float64), dy.astype(np.float64)
    g = np.broadcast_to(gamma.astype(np.float64), k)
    out = [np.empty(k) for _ in range(4)]
    dx = np.empty(shape)
    for idx in np.ndindex(*k):
        sl = tuple(slice(None) if i in axes else j for i, j in enumerate(idx))
        xs, ds = x[sl].ravel(), dy[sl].ravel()
        n = xs.size
        m = math.fsum(xs) / n
        var = math.fsum((xs - m) ** 2) / n
        r = 1.0 / math.sqrt(var + eps)
        xhat = (xs - m) * r
        gg, bg = math.fsum(ds * xhat), math.fsum(ds)
        for o, val in zip(out, (m, var, gg, bg)):
            o[idx] = val
        dx[sl] = (g[idx] * r * (ds - bg / n - xhat * gg / n)).reshape(x[sl].shape)
    return (*out, dx)


# (shape, reduction axes): NCHW and NHWC batch norms, channels-last rows over several blocks of
# partials, a layer norm over the trailing axes, one channel, a 1-D tensor
CASES = [((2, 3, 5, 4), (0, 2, 3)), ((2, 5, 4, 3), (0, 1, 2)), ((3, 20, 20, 2), (0, 1, 2)),
         ((4, 6, 5), (1, 2)), ((3, 1, 7, 6), (0, 2, 3)), ((33,), (0,)), ((2, 3, 4, 5), (0, 1))]


@pytest.mark.parametrize("shape,axes", CASES)
def test_batch_norm_ops_match_exact_sums_and_numpy(numba, rng, shape, axes):
    g, places, y, dx = _graph(shape, axes, np.float32, given_statistics=False)
    feeds = _feeds(places, shape, axes, np.float32, rng)
    ops = {o.type: o.outputs[0] for o in g.operations if o.type in OPS}
    targets = [ops[t] for t in OPS]
    exe = _compile(g, feeds, targets, "cpu")
    assert set(OPS) <= set(exe._runner.compiled)
    got = [np.asarray(r) for r in exe.run(feeds)]
    want_numpy = [np.asarray(r) for r in _compile(g, feeds, targets, "numpy").run(feeds)]
    x, dy, gamma = feeds[places["x"]], feeds[places["dy"]], feeds[places["gamma"]]
    m, var, gg, bg, dxe = _exact(shape, axes, x, dy, gamma, EPS)
    n = math.prod(shape) // math.prod(_kept(shape, axes))
    dy_sums = np.abs(dy.astype(np.float64)).sum(axis=axes, keepdims=True)
    for op, a in zip(OPS, got):
        assert a.dtype == np.float32 and a.shape == want_numpy[OPS.index(op)].shape
    # one float32 rounding, plus float64 rounding over n terms (far below it)
    for op, want, scale in (("mean", m, np.abs(x).max()), ("variance", var, var.max()),
                            ("normalization_beta_gradient", bg, dy_sums.max())):
        a = got[OPS.index(op)].astype(np.float64)
        np.testing.assert_allclose(a, want, rtol=1.2e-7, atol=n * 1e-15 * scale, err_msg=op)
    # the gamma gradient reads the float32 mean and variance: their roundings move each term
    r = 1 / np.sqrt(var + EPS)
    a = got[OPS.index("normalization_gamma_gradient")].astype(np.float64)
    assert (np.abs(a - gg) <= 1.2e-7 * (np.abs(gg) + 2 * np.abs(m) * r * dy_sums + dy_sums) + 1e-12).all()
    # y and dx read float32 statistics rounded from the exact ones: a few float32 ulps of the terms
    np.testing.assert_allclose(got[OPS.index("normalization_gradient")], dxe, rtol=0,
                               atol=1e-5 * np.abs(dxe).max() + 1e-6 * np.abs(dy).max() * np.abs(gamma).max())
    for op, a, b in zip(OPS, got, want_numpy):  # NumPy's float32 mean is a float32 pairwise sum
        np.testing.assert_allclose(a, b, rtol=2e-6, atol=2e-6 * max(np.abs(b).max(), 1.0), err_msg=op)


@pytest.mark.parametrize("shape,axes", CASES[:4])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_normalize_and_its_gradient_have_numpy_bits(numba, rng, shape, axes, dtype):
    g, places, y, dx = _graph(shape, axes, dtype, given_statistics=True)
    feeds = _feeds(places, shape, axes, dtype, rng)
    exe = _compile(g, feeds, [y, dx], "cpu")
    assert {"normalize", "normalization_gradient"} <= set(exe._runner.compiled)
    got = [np.asarray(r) for r in exe.run(feeds)]
    want = [np.asarray(r) for r in _compile(g, feeds, [y, dx], "numpy").run(feeds)]
    for a, b in zip(got, want):
        assert a.dtype == b.dtype == dtype and np.array_equal(a.view(np.uint8), b.view(np.uint8))


@pytest.mark.parametrize("dtype", [np.float16, np.float64])
def test_statistics_in_other_float_dtypes_match_numpy(numba, rng, dtype):
    shape, axes = (3, 4, 6, 5), (0, 2, 3)
    g, places, y, dx = _graph(shape, axes, dtype, given_statistics=False)
    feeds = _feeds(places, shape, axes, dtype, rng)
    ops = {o.type: o.outputs[0] for o in g.operations if o.type in OPS}
    targets = [ops[t] for t in OPS]
    exe = _compile(g, feeds, targets, "cpu")
    assert set(OPS) <= set(exe._runner.compiled)
    got = [np.asarray(r) for r in exe.run(feeds)]
    want = [np.asarray(r) for r in _compile(g, feeds, targets, "numpy").run(feeds)]
    tol = 2e-3 if dtype == np.float16 else 1e-12
    for op, a, b in zip(OPS, got, want):
        assert a.dtype == b.dtype == dtype
        b64 = b.astype(np.float64)
        np.testing.assert_allclose(a.astype(np.float64), b64, rtol=tol, atol=tol * max(np.abs(b64).max(), 1.0),
                                   err_msg=op)


def test_edge_values_propagate_as_numpy(numba, rng):
    """NaN and infinities in the source, -0, a zero and a negative variance: the NaN and inf
    positions (and the finite values) of the NumPy backend."""
    shape, axes = (2, 4, 3, 5), (0, 2, 3)
    g, places, y, dx = _graph(shape, axes, np.float32, given_statistics=False)
    feeds = _feeds(places, shape, axes, np.float32, rng)
    x = feeds[places["x"]]
    x[:, 0] = 2.0                   # a constant channel: variance 0
    x[0, 1, 0, 0] = np.nan
    x[1, 2, 1, 1] = np.inf
    x[0, 3] = -0.0
    ops = {o.type: o.outputs[0] for o in g.operations if o.type in OPS}
    targets = [ops[t] for t in OPS]
    got = [np.asarray(r) for r in _compile(g, feeds, targets, "cpu").run(feeds)]
    want = [np.asarray(r) for r in _compile(g, feeds, targets, "numpy").run(feeds)]
    for op, a, b in zip(OPS, got, want):
        np.testing.assert_array_equal(np.isnan(a), np.isnan(b), err_msg=op)
        np.testing.assert_array_equal(np.isinf(a), np.isinf(b), err_msg=op)
        np.testing.assert_allclose(a, b, rtol=2e-6, atol=2e-6 * np.nanmax(np.abs(np.where(np.isinf(b), 0, b))),
                                   err_msg=op)
    g2, places2, y2, dx2 = _graph(shape, axes, np.float32, given_statistics=True)
    feeds2 = _feeds(places2, shape, axes, np.float32, rng)
    feeds2[places2["v"]][0, 1, 0, 0] = -5.0  # variance + epsilon < 0: NaN, as NumPy's
    feeds2[places2["v"]][0, 2, 0, 0] = -EPS  # 1 / sqrt(0): inf
    got = [np.asarray(r) for r in _compile(g2, feeds2, [y2, dx2], "cpu").run(feeds2)]
    want = [np.asarray(r) for r in _compile(g2, feeds2, [y2, dx2], "numpy").run(feeds2)]
    for a, b in zip(got, want):
        assert np.isnan(a[:, 1]).all()
        np.testing.assert_array_equal(a, b)  # NaN in the same places, every other value equal


@pytest.mark.parametrize("shape,axes", [((4, 16, 64, 66), (0, 2, 3)), ((4, 64, 66, 16), (0, 1, 2))])
def test_bits_do_not_depend_on_the_thread_count(numba, rng, threads_restored, shape, axes):
    from minigraph.backends.cpu.normalization import PARALLEL_ELEMENTS

    assert math.prod(shape) >= PARALLEL_ELEMENTS  # the parallel variants run
    g, places, y, dx = _graph(shape, axes, np.float32, given_statistics=False)
    feeds = _feeds(places, shape, axes, np.float32, rng)
    ops = {o.type: o.outputs[0] for o in g.operations if o.type in OPS}
    exe = _compile(g, feeds, [ops[t] for t in OPS], "cpu")
    runs = []
    for t in (1, 2, 1, 2):
        mg.set_num_threads(t)
        runs.append([np.asarray(r).copy() for r in exe.run(feeds)])
        assert numba.get_num_threads() == min(t, numba.config.NUMBA_NUM_THREADS)
    for other in runs[1:]:
        for a, b in zip(runs[0], other):
            assert np.array_equal(a.view(np.uint8), b.view(np.uint8))


def test_nil_gradients_are_summed_in_the_kernel(numba, rng):
    shape, axes = (3, 4, 6, 5), (0, 2, 3)
    g = mg.Graph()
    px, pdy = g.placeholder(shape), g.placeholder(shape)
    m, v = g.mean(px, axes=list(axes)), g.variance(px, axes=list(axes))
    dx = g.normalization_gradient(pdy, px, m, v, None, None, None, list(axes), EPS)
    x, dy = rng.standard_normal(shape).astype(np.float32), rng.standard_normal(shape).astype(np.float32)
    exe = _compile(g, {px: x, pdy: dy}, [dx], "cpu")
    assert "normalization_gradient" in exe._runner.compiled
    got = np.asarray(exe.run({px: x, pdy: dy})[0])
    want = _exact(shape, axes, x, dy, np.ones(1, np.float32), EPS)[-1]
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-5 * np.abs(want).max())


def test_other_axes_and_broadcasts_keep_the_numpy_kernel(numba, rng):
    """Kept axes that are not consecutive, statistics that vary along a reduced axis, a tensor the
    statistics broadcast: the NumPy kernel runs, with its results."""
    x = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    g = mg.Graph()
    px = g.placeholder(x.shape)
    split = [g.mean(px, axes=[0, 2]), g.variance(px, axes=[0, 2])]        # keeps axes 1 and 3
    mean_w = g.mean(px, axes=[0, 1, 2])                                      # varies along W ...
    per_row = g.normalization_beta_gradient(px, px, [3])                     # ... reduced here:
    gg = g.normalization_gamma_gradient(px, px, mean_w, mean_w, [0, 2, 3], EPS)  # not per channel
    small = g.placeholder((4, 5))
    wide = g.normalize(small, g.constant(np.zeros((2, 3, 1, 1), np.float32)), 1.0, None, None, EPS)
    targets = split + [per_row, gg, wide]
    feeds = {px: x, small: rng.standard_normal((4, 5)).astype(np.float32)}
    exe = _compile(g, feeds, targets, "cpu")
    assert exe._runner.compiled.count("mean") == 1 and "variance" not in exe._runner.compiled  # mean_w only
    assert "normalization_gamma_gradient" not in exe._runner.compiled
    assert "normalize" not in exe._runner.compiled
    assert "normalization_beta_gradient" in exe._runner.compiled  # one block kept: axes 0-2
    got = [np.asarray(r) for r in exe.run(feeds)]
    want = [np.asarray(r) for r in _compile(g, feeds, targets, "numpy").run(feeds)]
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)


def test_serial_and_parallel_variants_give_the_same_bits(numba, rng, threads_restored):
    """Small tensors run each kernel's serial variant: the same arithmetic as the parallel one."""
    from minigraph.backends.cpu import normalization as nz

    mg.set_num_threads(2)
    x3, d3 = rng.standard_normal((3, 5, 7)), rng.standard_normal((3, 5, 7)).astype(np.float32)
    x3 = x3.astype(np.float32)
    m, r, p = rng.standard_normal(5), rng.uniform(0.5, 2, 5), rng.standard_normal(5)
    for kind in (nz.VALUE, nz.SQUARED_DEVIATION, nz.GRADIENT, nz.GRADIENT_XHAT):
        for fn, x, d, shape in ((nz.VARIANTS["_row_partials"], x3, d3, (3, 5)),
                                (nz.VARIANTS["_block_partials"], x3.reshape(-1, 5), d3.reshape(-1, 5), (1, 5))):
            parts = [np.empty(shape), np.empty(shape)]
            for variant, part in zip(fn, parts):
                variant(kind, d, x, m, r, part)
            assert np.array_equal(parts[0].view(np.uint8), parts[1].view(np.uint8))
    for fn, x, d in ((nz.VARIANTS["_normalize"], x3, d3), (nz.VARIANTS["_normalize_rows"], x3.reshape(-1, 5), d3.reshape(-1, 5))):
        ys = [np.empty(x.shape), np.empty(x.shape)]
        for variant, y in zip(fn, ys):
            variant(x, m, r, p, p, y)
        assert np.array_equal(ys[0], ys[1]) and not np.isnan(ys[0]).any()
    for fn, x, d in ((nz.VARIANTS["_gradient"], x3, d3), (nz.VARIANTS["_gradient_rows"], x3.reshape(-1, 5), d3.reshape(-1, 5))):
        dxs = [np.empty(x.shape), np.empty(x.shape)]
        for variant, dx in zip(fn, dxs):
            variant(d, x, m, r, p, p, p, 21.0, dx)
        assert np.array_equal(dxs[0], dxs[1]) and not np.isnan(dxs[0]).any()
