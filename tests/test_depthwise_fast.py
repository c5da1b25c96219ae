"""The fast depthwise algorithms (backends/numpy/depthwise_fast) against naive loops.

The references are written from docs/mpsgraph-spec.md §4.1 and share nothing with the algorithms:
``dW[m, c, i, j] = sum_{n,oh,ow} dy[n, c*M+m, oh, ow] * x[n, c, oh*sY + i*dY - pT, ow*sX + j*dX - pL]``,
zero outside x. Every weights-gradient algorithm is forced on every geometry (including ones it
was not chosen for), with strides, dilations, asymmetric and oversized padding, multiplier > 1,
NHWC views, float16/float64, threads, repeated calls (reused frames) and concurrent calls.
``"direct"`` is the kernel's exact loop (backends/numpy/depthwise.py), which the kernel also
runs when a plan's result is not finite.
"""
from __future__ import annotations

import threading

import numpy as np
import pytest

import minigraph as mg
from minigraph.backends.numpy import depthwise_fast as F
from minigraph.backends.numpy.depthwise import exact_weights_gradient
from minigraph.ops.geometry import ConvGeometry

ALGOS = ("direct", "dot_nc", "dot_cn", "acc")


def geometry(n, c, m, h, w, kh, kw, s=(1, 1), d=(1, 1), p=(0, 0, 0, 0)) -> ConvGeometry:
    """The ConvGeometry of a depthwise op with explicit padding (top, bottom, left, right)."""
    desc = mg.DepthwiseConvolution2DOpDescriptor(stride_in_y=s[0], stride_in_x=s[1], dilation_rate_in_y=d[0],
                                                 dilation_rate_in_x=d[1], padding_top=p[0], padding_bottom=p[1],
                                                 padding_left=p[2], padding_right=p[3])
    return ConvGeometry.for_depthwise_2d(desc, (n, c, h, w), (m, c, kh, kw))


def weights_gradient(geo, algorithm, dtype, threads, dy, x):
    """What the kernel computes with ``algorithm``: the plan's result, or the exact loop."""
    if algorithm == "direct":
        return exact_weights_gradient(geo, dy, x, dtype)
    got = F.WeightsGradientPlan(geo, dtype, algorithm, threads)(dy, x)
    return exact_weights_gradient(geo, dy, x, dtype) if got is None else got


def naive(dy5, x, kh, kw, s=(1, 1), d=(1, 1), p=(0, 0, 0, 0)):
    """dy5 [N, C, M, OH, OW], x [N, C, H, W] -> [C, M, kH, kW], float64, plain loops."""
    _, c, m, _, _ = dy5.shape
    out = np.zeros((c, m, kh, kw))
    with np.errstate(all="ignore"):  # inf * 0 in the non-finite cases is the point there
        _naive_loop(out, dy5, x, kh, kw, s, d, p)
    return out


def _naive_loop(out, dy5, x, kh, kw, s, d, p):
    _, _, _, oh_, ow_ = dy5.shape
    _, _, h, w = x.shape
    for i in range(kh):
        for j in range(kw):
            for oh in range(oh_):
                ih = oh * s[0] + i * d[0] - p[0]
                if not 0 <= ih < h:
                    continue
                for ow in range(ow_):
                    iw = ow * s[1] + j * d[1] - p[2]
                    if 0 <= iw < w:
                        out[:, :, i, j] += np.einsum("ncm,nc->cm", dy5[:, :, :, oh, ow].astype(np.float64),
                                                     x[:, :, ih, iw].astype(np.float64))


def naive_of(geo, dy5, x):
    """``naive`` with the geometry's kernel, strides, dilations and padding."""
    (top, left), (bottom, right) = geo.padding_before, geo.padding_after
    return naive(dy5, x, *geo.kernel_size, geo.strides, geo.dilations, (top, bottom, left, right))


# (N, C, M, H, W, kh, kw, strides, dilations, (top, bottom, left, right))
CASES = [
    (2, 3, 1, 7, 6, 3, 3, (1, 1), (1, 1), (1, 1, 1, 1)),      # "same"
    (2, 3, 2, 7, 6, 3, 2, (2, 1), (1, 2), (1, 0, 2, 1)),      # multiplier 2, mixed
    (1, 4, 1, 9, 9, 3, 3, (2, 2), (1, 1), (1, 1, 1, 1)),      # stride 2, odd size
    (2, 2, 3, 8, 11, 5, 3, (3, 2), (2, 1), (0, 3, 1, 2)),     # stride 3, dilation 2, asymmetric
    (2, 5, 1, 6, 6, 1, 1, (1, 1), (1, 1), (0, 0, 0, 0)),      # 1x1
    (2, 3, 1, 10, 10, 3, 3, (1, 1), (2, 2), (2, 2, 2, 2)),    # dilated "same"
    (3, 4, 1, 5, 5, 3, 3, (1, 1), (1, 1), (0, 0, 0, 0)),      # valid
    (2, 3, 2, 12, 9, 4, 4, (2, 3), (3, 1), (4, 4, 0, 5)),     # even kernel, padding > kernel
    (2, 3, 1, 14, 14, 3, 3, (2, 2), (1, 1), (0, 1, 0, 1)),    # TF_SAME stride 2 split
    (1, 2, 1, 4, 5, 5, 5, (1, 1), (1, 1), (4, 4, 4, 4)),      # taps wholly in the padding
    (2, 6, 1, 8, 8, 5, 5, (2, 2), (1, 1), (2, 2, 2, 2)),      # 5x5 stride 2
    (1, 3, 1, 3, 17, 3, 3, (1, 4), (1, 1), (1, 1, 0, 0)),     # stride > kernel width
]


def _inputs(case, rng, dtype=np.float32):
    n, c, m, h, w, kh, kw, s, d, p = case
    geo = geometry(n, c, m, h, w, kh, kw, s, d, p)
    x = rng.standard_normal((n, c, h, w)).astype(dtype)
    dy = rng.standard_normal((n, c, m) + geo.output_size).astype(dtype)
    return geo, x, dy


@pytest.mark.parametrize("algorithm", ALGOS)
@pytest.mark.parametrize("case", CASES, ids=lambda c: "N{}C{}M{}_{}x{}_k{}x{}_s{}_d{}_p{}".format(*c))
def test_matches_naive(case, algorithm, rng):
    geo, x, dy = _inputs(case, rng)
    ref = naive_of(geo, dy, x)
    for threads in (1, 2):
        plan = None if algorithm == "direct" else F.WeightsGradientPlan(geo, np.float32, algorithm, threads)
        for _ in range(2):  # the second call reuses the frames: their borders must still be zero
            got = plan(dy, x) if plan else exact_weights_gradient(geo, dy, x, np.float32)
            assert got.shape == (geo.in_channels, geo.channel_multiplier) + geo.kernel_size
            assert got.dtype == np.float32
            np.testing.assert_allclose(got, ref, rtol=2e-5, atol=2e-5 * np.abs(ref).max())
        x2, dy2 = x * -0.5 + 1.0, dy[::-1].copy()  # new data through the same workspaces
        got = plan(dy2, x2) if plan else exact_weights_gradient(geo, dy2, x2, np.float32)
        np.testing.assert_allclose(got, naive_of(geo, dy2, x2), rtol=2e-5, atol=1e-4)


def test_random_geometries_every_algorithm(rng):
    """A seeded sweep beyond the hand-picked cases."""
    r = np.random.default_rng(7)
    done = 0
    while done < 25:
        kh, kw = int(r.integers(1, 6)), int(r.integers(1, 6))
        sh, sw, dh, dw = (int(v) for v in r.integers(1, 4, size=4))
        h, w = int(r.integers(1, 13)), int(r.integers(1, 13))
        pads = tuple(int(v) for v in r.integers(0, 5, size=4))
        n, c, m = int(r.integers(1, 4)), int(r.integers(1, 6)), int(r.integers(1, 3))
        try:
            geo = geometry(n, c, m, h, w, kh, kw, (sh, sw), (dh, dw), pads)
        except mg.ShapeError:  # an empty output
            continue
        done += 1
        x = rng.standard_normal((n, c, h, w)).astype(np.float32)
        dy = rng.standard_normal((n, c, m) + geo.output_size).astype(np.float32)
        ref = naive(dy, x, kh, kw, (sh, sw), (dh, dw), pads)
        for algorithm in ALGOS:
            got = weights_gradient(geo, algorithm, np.float32, 2, dy, x)
            np.testing.assert_allclose(got, ref, rtol=2e-5, atol=1e-4, err_msg=f"{geo} {algorithm}")


@pytest.mark.parametrize("algorithm", ALGOS)
def test_nhwc_views_and_strided_inputs(algorithm, rng):
    """x and dy given as views of NHWC arrays (what the op passes for dataLayout NHWC)."""
    geo, x, dy = _inputs(CASES[0], rng)
    n, c, m, (oh, ow) = geo.batch, geo.in_channels, geo.channel_multiplier, geo.output_size
    x_nhwc = np.ascontiguousarray(x.transpose(0, 2, 3, 1))
    dy_nhwc = np.ascontiguousarray(dy.reshape(n, c * m, oh, ow).transpose(0, 2, 3, 1))
    xv = x_nhwc.transpose(0, 3, 1, 2)
    dyv = dy_nhwc.reshape(n, oh, ow, c, m).transpose(0, 3, 4, 1, 2)
    got = weights_gradient(geo, algorithm, np.float32, 2, dyv, xv)
    np.testing.assert_allclose(got, naive(dy, x, 3, 3, p=(1, 1, 1, 1)), rtol=2e-5, atol=1e-4)


@pytest.mark.parametrize("dtype,tol", [(np.float16, 2e-2), (np.float64, 1e-12)])
def test_dtypes(dtype, tol, rng):
    geo, x, dy = _inputs(CASES[2], rng, dtype)
    ref = naive_of(geo, dy, x)
    for algorithm in ALGOS:
        got = weights_gradient(geo, algorithm, dtype, 2, dy, x)
        assert got.dtype == dtype
        np.testing.assert_allclose(got.astype(np.float64), ref, rtol=tol, atol=tol * np.abs(ref).max())


@pytest.mark.parametrize("algorithm", ALGOS[1:])
def test_nonfinite_values_the_formula_never_reads_do_not_leak(algorithm, rng):
    """The flat tricks multiply unread x values by zero (or mask them out after summing): an
    inf there would give NaN, so the plan says None and the kernel runs its exact loop."""
    geo = geometry(2, 3, 1, 8, 8, 3, 3)  # valid: the last row/col is read...
    x = rng.standard_normal((2, 3, 8, 8)).astype(np.float32)
    dy = rng.standard_normal((2, 3, 1) + geo.output_size).astype(np.float32)
    geo2 = geometry(2, 3, 1, 8, 8, 3, 3, (2, 2))  # ...stride 2 skips column 7
    dy2 = rng.standard_normal((2, 3, 1) + geo2.output_size).astype(np.float32)
    x_inf = x.copy()
    x_inf[:, :, :, 7] = np.inf  # never read with stride 2, k3, valid, W=8 (reads 0..6)
    ref = naive(dy2, x_inf, 3, 3, (2, 2))
    assert np.isfinite(ref).all()
    got = weights_gradient(geo2, algorithm, np.float32, 1, dy2, x_inf)
    np.testing.assert_allclose(got, ref, rtol=2e-5, atol=1e-4)
    geo3 = geometry(2, 3, 1, 8, 8, 3, 3, p=(1, 1, 1, 1))  # "same": tap j=0 never reads column 7
    dy3 = rng.standard_normal((2, 3, 1, 8, 8)).astype(np.float32)
    ref = naive(dy3, x_inf, 3, 3, p=(1, 1, 1, 1))
    assert np.isfinite(ref[:, :, :, 0]).all() and not np.isfinite(ref[:, :, :, 1]).all()
    assert F.WeightsGradientPlan(geo3, np.float32, algorithm, 1)(dy3, x_inf) is None
    got = weights_gradient(geo3, algorithm, np.float32, 1, dy3, x_inf)
    np.testing.assert_allclose(got[:, :, :, 0], ref[:, :, :, 0], rtol=2e-5, atol=1e-4)
    assert not np.isfinite(got[:, :, :, 1]).all()
    x_nan = x.copy()
    x_nan[0, 1, 3, 3] = np.nan  # read: NaN must come out for channel 1 only
    got = weights_gradient(geo, algorithm, np.float32, 1, dy, x_nan)
    assert np.isnan(got[1]).all() and np.isfinite(got[[0, 2]]).all()


def test_concurrent_calls_use_separate_workspaces(rng):
    geo, x, dy = _inputs(CASES[3], rng)
    plan = F.WeightsGradientPlan(geo, np.float32, "dot_cn", 1)
    data = [(dy * (k + 1), x + k) for k in range(4)]
    refs = [naive_of(geo, a, b) for a, b in data]
    errors = []

    def work(k):
        for _ in range(20):
            got = plan(*data[k])
            if not np.allclose(got, refs[k], rtol=1e-4, atol=1e-3):
                errors.append(k)

    ts = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors


def test_algorithm_choice_and_refusals(rng):
    x = rng.standard_normal((2, 4, 9, 9)).astype(np.float32)
    dy = rng.standard_normal((2, 8, 9, 9)).astype(np.float32)  # M = 2 as [N, C*M, OH, OW]
    geo = geometry(2, 4, 2, 9, 9, 3, 3, p=(1, 1, 1, 1))
    algorithm = F.choose_algorithm(geo)
    got = weights_gradient(geo, algorithm, np.float32, None, dy.reshape(2, 4, 2, 9, 9), x)
    np.testing.assert_allclose(got, naive(dy.reshape(2, 4, 2, 9, 9), x, 3, 3, p=(1, 1, 1, 1)), rtol=2e-5, atol=1e-4)
    assert F.choose_algorithm(geometry(8, 32, 1, 112, 112, 3, 3, p=(1, 1, 1, 1))) in ALGOS
    with pytest.raises(ValueError, match="algorithm"):
        F.WeightsGradientPlan(geometry(1, 1, 1, 3, 3, 3, 3), np.float32, "nope")
    with pytest.raises(ValueError, match="batch 0"):
        F.WeightsGradientPlan(geometry(0, 1, 1, 3, 3, 3, 3), np.float32, "dot_nc")
    with pytest.raises(mg.ShapeError, match="empty"):
        geometry(1, 1, 1, 2, 2, 3, 3)


# ----------------------------------------------------------------------------- forward / data gradient
def naive_forward(x, w, geo):
    """y[n, c, m, oh, ow] = sum_{i,j} x[n, c, oh*sY + i*dY - pT, ow*sX + j*dX - pL] * W[c, m, i, j]."""
    (h, wd), (kh, kw), (sh, sw), (dh, dw), (pt, pl) = (geo.input_size, geo.kernel_size, geo.strides,
                                                       geo.dilations, geo.padding_before)
    y = np.zeros((geo.batch, geo.in_channels, geo.channel_multiplier) + geo.output_size)
    for i in range(kh):
        for j in range(kw):
            for oh in range(geo.output_size[0]):
                ih = oh * sh + i * dh - pt
                for ow in range(geo.output_size[1]):
                    iw = ow * sw + j * dw - pl
                    if 0 <= ih < h and 0 <= iw < wd:
                        y[:, :, :, oh, ow] += x[:, :, None, ih, iw] * w[None, :, :, i, j]
    return y


def naive_data_gradient(dy, w, geo):
    """dx[n, c, h, w] = sum over (m, i, j, oh, ow) reading (h, w) of dy[n, c, m, oh, ow] * W[c, m, i, j]."""
    (h, wd), (kh, kw), (sh, sw), (dh, dw), (pt, pl) = (geo.input_size, geo.kernel_size, geo.strides,
                                                       geo.dilations, geo.padding_before)
    dx = np.zeros((geo.batch, geo.in_channels, h, wd))
    for i in range(kh):
        for j in range(kw):
            for oh in range(geo.output_size[0]):
                ih = oh * sh + i * dh - pt
                for ow in range(geo.output_size[1]):
                    iw = ow * sw + j * dw - pl
                    if 0 <= ih < h and 0 <= iw < wd:
                        dx[:, :, ih, iw] += (dy[:, :, :, oh, ow] * w[None, :, :, i, j]).sum(axis=2)
    return dx


# stride 1 with an output plane equal to the input plane: (N, C, M, H, W, kh, kw, dilation, pads)
SAME = [(2, 3, 1, 7, 6, 3, 3, (1, 1), (1, 1, 1, 1)),
        (2, 3, 2, 7, 6, 3, 3, (1, 1), (1, 1, 1, 1)),
        (2, 4, 1, 9, 8, 4, 2, (1, 1), (1, 2, 0, 1)),   # even kernel: asymmetric "same"
        (1, 3, 3, 10, 10, 3, 3, (2, 2), (2, 2, 2, 2)),  # dilated, M = 3
        (3, 5, 1, 6, 6, 5, 5, (1, 1), (2, 2, 2, 2)),
        (2, 40, 1, 30, 30, 3, 3, (1, 1), (1, 1, 1, 1))]  # several channel chunks


@pytest.mark.parametrize("case", SAME, ids=lambda c: "N{}C{}M{}_{}x{}_k{}x{}_d{}_p{}".format(*c))
def test_forward_and_data_gradient_match_naive(case, rng):
    n, c, m, h, w, kh, kw, d, p = case
    geo = geometry(n, c, m, h, w, kh, kw, (1, 1), d, p)
    assert geo.output_size == (h, w)
    x = rng.standard_normal((n, c, h, w)).astype(np.float32)
    wt = rng.standard_normal((c, m, kh, kw)).astype(np.float32)
    dy = rng.standard_normal((n, c, m, h, w)).astype(np.float32)
    ref_y, ref_dx = naive_forward(x, wt, geo), naive_data_gradient(dy, wt, geo)
    for threads in (1, 2):
        fp, dp = F.ForwardPlan(geo, np.float32, threads), F.DataGradientPlan(geo, np.float32, threads)
        for _ in range(2):
            np.testing.assert_allclose(fp(x, wt), ref_y, rtol=2e-5, atol=2e-5 * np.abs(ref_y).max())
            np.testing.assert_allclose(dp(dy, wt), ref_dx, rtol=2e-5, atol=2e-5 * np.abs(ref_dx).max())
    # NHWC views, as the op passes them
    xv = np.ascontiguousarray(x.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
    dyv = np.ascontiguousarray(dy.reshape(n, c * m, h, w).transpose(0, 2, 3, 1)).reshape(n, h, w, c, m)
    dyv = dyv.transpose(0, 3, 4, 1, 2)
    np.testing.assert_allclose(F.ForwardPlan(geo)(xv, wt), ref_y, rtol=2e-5, atol=1e-4)
    np.testing.assert_allclose(F.DataGradientPlan(geo)(dyv, wt), ref_dx, rtol=2e-5, atol=1e-4)


def test_forward_and_data_gradient_adjoint(rng):
    """<F(x, W), dy> == <x, D(dy, W)>: the two plans are each other's transpose."""
    geo = geometry(2, 6, 2, 11, 9, 3, 5, (1, 1), (2, 1), (2, 2, 2, 2))
    x = rng.standard_normal((2, 6, 11, 9))
    wt = rng.standard_normal((6, 2, 3, 5))
    dy = rng.standard_normal((2, 6, 2, 11, 9))
    lhs = np.vdot(F.ForwardPlan(geo, np.float64)(x, wt), dy)
    rhs = np.vdot(x, F.DataGradientPlan(geo, np.float64)(dy, wt))
    assert abs(lhs - rhs) < 1e-9 * abs(lhs)


def test_forward_float16_and_nonfinite(rng):
    geo = geometry(2, 3, 1, 6, 6, 3, 3, p=(1, 1, 1, 1))
    x = rng.standard_normal((2, 3, 6, 6)).astype(np.float16)
    wt = rng.standard_normal((3, 1, 3, 3)).astype(np.float16)
    y = F.ForwardPlan(geo, np.float16)(x, wt)
    assert y.dtype == np.float16
    np.testing.assert_allclose(y.astype(np.float64),
                               naive_forward(x.astype(np.float64), wt.astype(np.float64), geo), rtol=2e-2, atol=2e-2)
    x32 = x.astype(np.float32)
    x32[0, 0, 2, 5] = np.inf  # an inf read across a row end would leak NaN: the plan says None
    assert F.ForwardPlan(geo)(x32, wt.astype(np.float32)) is None


def test_forward_plan_refuses_other_geometries():
    with pytest.raises(ValueError, match="same"):
        F.ForwardPlan(geometry(1, 2, 1, 8, 8, 3, 3, (2, 2)))  # stride 2, valid: 3x3, not ceil(8/2)
    with pytest.raises(ValueError, match="same"):
        F.DataGradientPlan(geometry(1, 2, 1, 8, 8, 3, 3))  # valid padding: 6x6 output


# strided "same"-like geometries (OH = ceil(H/sY), OW = ceil(W/sX)):
# (N, C, M, H, W, kh, kw, strides, dilations, pads)
STRIDED_SAME = [(2, 3, 1, 14, 14, 3, 3, (2, 2), (1, 1), (0, 1, 0, 1)),   # TF_SAME, even size
                (2, 3, 1, 7, 9, 3, 3, (2, 2), (1, 1), (1, 1, 1, 1)),     # odd sizes
                (2, 2, 2, 14, 12, 5, 5, (2, 2), (1, 1), (1, 2, 1, 2)),   # 5x5, M = 2
                (1, 3, 1, 9, 9, 3, 3, (3, 3), (1, 1), (0, 0, 0, 0)),     # stride 3
                (2, 3, 1, 10, 10, 3, 3, (2, 2), (2, 2), (1, 2, 1, 2)),   # stride 2, dilation 2
                (1, 3, 3, 8, 9, 3, 2, (2, 1), (1, 1), (0, 1, 0, 1)),     # mixed strides, M = 3
                (2, 40, 1, 28, 28, 3, 3, (2, 2), (1, 1), (0, 1, 0, 1))]  # several chunks


@pytest.mark.parametrize("case", STRIDED_SAME, ids=lambda c: "N{}C{}M{}_{}x{}_k{}x{}_s{}_d{}_p{}".format(*c))
def test_strided_forward_and_data_gradient_match_naive(case, rng):
    n, c, m, h, w, kh, kw, s, d, p = case
    geo = geometry(n, c, m, h, w, kh, kw, s, d, p)
    assert F.is_same_like(geo), geo
    x = rng.standard_normal((n, c, h, w)).astype(np.float32)
    wt = rng.standard_normal((c, m, kh, kw)).astype(np.float32)
    dy = rng.standard_normal((n, c, m) + geo.output_size).astype(np.float32)
    ref_y, ref_dx = naive_forward(x, wt, geo), naive_data_gradient(dy, wt, geo)
    for threads in (1, 2):
        fp, dp = F.ForwardPlan(geo, np.float32, threads), F.DataGradientPlan(geo, np.float32, threads)
        for _ in range(2):
            np.testing.assert_allclose(fp(x, wt), ref_y, rtol=2e-5, atol=2e-5 * np.abs(ref_y).max())
            np.testing.assert_allclose(dp(dy, wt), ref_dx, rtol=2e-5, atol=2e-5 * np.abs(ref_dx).max())


@pytest.mark.parametrize("algorithm", ["dot_nc", "dot_cn"])
def test_two_threads_many_calls_stay_exact(algorithm, rng):
    """Chunks next to a thread boundary read a few values of the other thread's frames (wrapped
    columns, added then subtracted): those are filled before the threads start. A stress run:
    the race this guards against showed up about once in 600 calls, so this may miss it."""
    for case in [(2, 64, 1, 14, 14, 3, 3, (2, 2), (1, 1), (0, 1, 0, 1)),
                 (2, 200, 1, 6, 6, 3, 3, (1, 1), (1, 1), (1, 1, 1, 1))]:
        geo, _, _ = _inputs(case, rng)
        plan = F.WeightsGradientPlan(geo, np.float32, algorithm, 2)
        for r in range(60):
            x = rng.standard_normal((geo.batch, geo.in_channels) + geo.input_size).astype(np.float32)
            dy = rng.standard_normal((geo.batch, geo.in_channels, 1) + geo.output_size).astype(np.float32)
            got = plan(dy, x)
            ref = naive_of(geo, dy, x) if r % 20 == 0 else exact_weights_gradient(geo, dy, x, np.float32)
            np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-3)
