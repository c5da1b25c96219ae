"""resize and resize_gradient (MPSGraphResizeOps): the coordinate transforms of docs/resize.md.

References share no code with the kernels: naive loops over exact fractions written from
Apple's description (direct scaling, centred, corners aligned; nearest rounds half toward
+inf, MPSGraph's RoundPreferCeil), torch.nn.functional.interpolate where it has the same
transform (bilinear with align_corners False / True, "nearest-exact"), torch autograd, the
adjoint identity and finite differences.
"""
from __future__ import annotations

import itertools
import re
from fractions import Fraction
from math import floor

import numpy as np
import pytest

import minigraph as mg
from minigraph.ops.registry import OPS

from gradcheck import check_gradients, uniform_inputs

L = mg.TensorNamedDataLayout
R = mg.ResizeMode
FLAGS = list(itertools.product((R.NEAREST, R.BILINEAR), (False, True), (False, True)))
SPATIAL = {"NCHW": (2, 3), "NHWC": (1, 2), "CHW": (1, 2), "HWC": (0, 1), "HW": (0, 1)}


# ----------------------------------------------------------------------------- the reference
def source_coordinate(o: int, n: int, m: int, center_result: bool, align_corners: bool) -> Fraction:
    if align_corners:
        return Fraction(o * (n - 1), m - 1) if m > 1 else Fraction(0)
    if center_result:
        return (o + Fraction(1, 2)) * Fraction(n, m) - Fraction(1, 2)
    return o * Fraction(n, m)


def axis_weights(n: int, m: int, mode, center_result: bool, align_corners: bool) -> list:
    """Per result index, {source index: weight}."""
    out = []
    for o in range(m):
        s = source_coordinate(o, n, m, center_result, align_corners)
        if mode == R.NEAREST:
            out.append({min(max(floor(s + Fraction(1, 2)), 0), n - 1): 1.0})
            continue
        s = min(max(s, Fraction(0)), Fraction(n - 1))
        i0 = floor(s)
        f = s - i0
        out.append({i0: 1.0} if f == 0 else {i0: float(1 - f), i0 + 1: float(f)})
    return out


def naive_resize(x: np.ndarray, size, mode, center_result, align_corners, layout: str) -> np.ndarray:
    """Loops over [..., H, W] images (the layout's spatial axes moved last)."""
    h, w = SPATIAL[layout]
    img = np.moveaxis(x.astype(np.float64), (h, w), (-2, -1))
    wh = axis_weights(img.shape[-2], size[0], mode, center_result, align_corners)
    ww = axis_weights(img.shape[-1], size[1], mode, center_result, align_corners)
    out = np.zeros(img.shape[:-2] + tuple(size))
    for oh, ow in np.ndindex(*size):
        acc = 0.0
        for ih, a in wh[oh].items():
            for iw, b in ww[ow].items():
                acc = acc + a * b * img[..., ih, iw]
        out[..., oh, ow] = acc
    return np.moveaxis(out, (-2, -1), (h, w))


def naive_resize_gradient(dy: np.ndarray, in_shape, mode, center_result, align_corners, layout: str) -> np.ndarray:
    h, w = SPATIAL[layout]
    g = np.moveaxis(dy.astype(np.float64), (h, w), (-2, -1))
    n_h, n_w = in_shape[h], in_shape[w]
    wh = axis_weights(n_h, g.shape[-2], mode, center_result, align_corners)
    ww = axis_weights(n_w, g.shape[-1], mode, center_result, align_corners)
    dx = np.zeros(g.shape[:-2] + (n_h, n_w))
    for oh, ow in np.ndindex(*g.shape[-2:]):
        for ih, a in wh[oh].items():
            for iw, b in ww[ow].items():
                dx[..., ih, iw] += a * b * g[..., oh, ow]
    return np.moveaxis(dx, (-2, -1), (h, w))


def _run(x, size, mode, cr, ac, layout, backend, dy=None):
    g = mg.Graph()
    xp = g.placeholder(x.shape, x.dtype)
    y = g.resize(xp, size, mode, cr, ac, layout)
    targets = [y]
    feeds = {xp: x}
    if dy is not None:
        dyp = g.placeholder(dy.shape, x.dtype)
        targets.append(g.resize_gradient(dyp, xp, mode, cr, ac, layout))
        feeds[dyp] = dy
    before = {k: v.copy() for k, v in feeds.items()}
    r = g.run(feeds, targets, backend=backend)
    for k, v in feeds.items():
        np.testing.assert_array_equal(v, before[k])
    return [r[t] for t in targets]


def _tol(backend):
    return dict(rtol=1e-12, atol=1e-12) if backend == "numpy" else dict(rtol=1e-5, atol=1e-5)


def _dtype(backend):
    return np.float64 if backend == "numpy" else np.float32


# ----------------------------------------------------------------------------- every transform, every layout
SHAPES = {"NCHW": (2, 3, 4, 5), "NHWC": (1, 5, 4, 2), "CHW": (2, 3, 6), "HWC": (4, 4, 3), "HW": (6, 3)}
SIZES = [(7, 7), (2, 3), (1, 1), (4, 9)]


@pytest.mark.parametrize("layout", list(SHAPES))
@pytest.mark.parametrize("mode,cr,ac", FLAGS, ids=lambda v: str(v))
def test_matches_the_naive_loops(backend, layout, mode, cr, ac):
    rng = np.random.default_rng(abs(hash((layout, int(mode), cr, ac))) % 2 ** 32)
    x = rng.standard_normal(SHAPES[layout]).astype(_dtype(backend))
    for size in SIZES:
        out_shape = list(x.shape)
        h, w = SPATIAL[layout]
        out_shape[h], out_shape[w] = size
        dy = rng.standard_normal(out_shape).astype(x.dtype)
        y, dx = _run(x, size, mode, cr, ac, getattr(L, layout), backend, dy)
        assert y.shape == tuple(out_shape) and y.dtype == x.dtype and dx.shape == x.shape
        np.testing.assert_allclose(y, naive_resize(x, size, mode, cr, ac, layout), **_tol(backend))
        np.testing.assert_allclose(dx, naive_resize_gradient(dy, x.shape, mode, cr, ac, layout), **_tol(backend))
        # adjoint: <dy, resize(x)> = <resize_gradient(dy), x>
        scale = np.abs(dy).sum() * np.abs(x).max()
        np.testing.assert_allclose(np.vdot(dy, y), np.vdot(dx, x), rtol=1e-5, atol=1e-6 * scale)


# ----------------------------------------------------------------------------- PyTorch where it agrees
TORCH = [  # (mode, center_result, align_corners, torch mode, torch align_corners)
    (R.BILINEAR, True, False, "bilinear", False),
    (R.BILINEAR, False, True, "bilinear", True),
    (R.BILINEAR, True, True, "bilinear", True),  # align_corners makes center_result irrelevant
    (R.NEAREST, True, False, "nearest-exact", None),
]


@pytest.mark.parametrize("mode,cr,ac,tmode,tac", TORCH, ids=lambda v: str(v))
@pytest.mark.parametrize("size", [(7, 7), (3, 2), (9, 13), (1, 4)], ids=str)
def test_matches_torch_interpolate_forward_and_autograd(backend, mode, cr, ac, tmode, tac, size):
    torch = pytest.importorskip("torch", reason="needs torch, in the oracles extra: pip install -e '.[oracles]'")
    F = torch.nn.functional
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 3, 4, 5)).astype(_dtype(backend))
    tx = torch.tensor(x, requires_grad=True)
    kw = {} if tac is None else {"align_corners": tac}
    ty = F.interpolate(tx, size=size, mode=tmode, **kw)
    dy = rng.standard_normal(tuple(ty.shape)).astype(x.dtype)
    ty.backward(torch.tensor(dy))
    y, dx = _run(x, size, mode, cr, ac, L.NCHW, backend, dy)
    tol = dict(rtol=1e-6, atol=1e-6) if backend == "numpy" else dict(rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(y, ty.detach().numpy(), **tol)
    np.testing.assert_allclose(dx, tx.grad.numpy(), **tol)


def test_nearest_without_centring_rounds_half_up_unlike_torch_nearest():
    """Direct scaling, 2 -> 4: o = 1 reads 0.5, which RoundPreferCeil takes to 1 (torch's
    "nearest" floors it to 0); 2 -> 3: o = 1 reads 2/3 -> 1 (torch: 0)."""
    x = np.array([[10.0, 20.0]])
    assert _run(x, (1, 4), R.NEAREST, False, False, L.HW, "numpy")[0].tolist() == [[10, 20, 20, 20]]
    assert _run(x, (1, 3), R.NEAREST, False, False, L.HW, "numpy")[0].tolist() == [[10, 20, 20]]
    # centred: 2 -> 4 reads -0.25, 0.25, 0.75, 1.25: rounds to 0, 0, 1, 1
    assert _run(x, (1, 4), R.NEAREST, True, False, L.HW, "numpy")[0].tolist() == [[10, 10, 20, 20]]


def test_worked_bilinear_numbers():
    """[0, 10, 20, 30] resized to 7 along W, each transform (docs/resize.md)."""
    x = np.array([[0.0, 10.0, 20.0, 30.0]])
    got = {(cr, ac): _run(x, (1, 7), R.BILINEAR, cr, ac, L.HW, "numpy")[0][0]
           for cr, ac in ((True, False), (False, True), (False, False))}
    np.testing.assert_allclose(got[(False, True)], [0, 5, 10, 15, 20, 25, 30])
    np.testing.assert_allclose(got[(False, False)], np.minimum(np.arange(7) * 40 / 7, 30))
    half = np.clip((np.arange(7) + 0.5) * 4 / 7 - 0.5, 0, 3) * 10
    np.testing.assert_allclose(got[(True, False)], half)


def test_infinities_and_nan_stay_where_their_weight_is_not_zero(backend):
    x = np.ones((4, 4), _dtype(backend))
    x[1, 1] = np.inf
    x[2, 3] = np.nan
    for mode in (R.NEAREST, R.BILINEAR):
        y = _run(x, (7, 7), mode, False, True, L.HW, backend)[0]
        ref = naive_resize(np.where(np.isfinite(x), x, 0), (7, 7), mode, False, True, "HW")
        touched_inf = naive_resize(np.isinf(x).astype(float), (7, 7), mode, False, True, "HW") > 0
        touched_nan = naive_resize(np.isnan(x).astype(float), (7, 7), mode, False, True, "HW") > 0
        assert np.isposinf(y[touched_inf & ~touched_nan]).all()
        assert np.isnan(y[touched_nan]).all()
        clean = ~touched_inf & ~touched_nan
        assert clean.sum() > 20
        np.testing.assert_allclose(y[clean], ref[clean], rtol=1e-6)


def test_align_corners_ignores_center_result_and_keeps_the_corners(backend):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((1, 5, 6, 2)).astype(np.float32)
    for mode in (R.NEAREST, R.BILINEAR):
        a = _run(x, (9, 4), mode, False, True, L.NHWC, backend)[0]
        b = _run(x, (9, 4), mode, True, True, L.NHWC, backend)[0]
        np.testing.assert_array_equal(a, b)
        for i, j in ((0, 0), (0, -1), (-1, 0), (-1, -1)):
            np.testing.assert_allclose(a[0, i, j], x[0, i, j], rtol=1e-6)


def test_float16_close_to_float32(backend):
    rng = np.random.default_rng(9)
    x = rng.uniform(-2, 2, (1, 2, 5, 4)).astype(np.float16)
    dy = rng.uniform(-2, 2, (1, 2, 8, 3)).astype(np.float16)
    y, dx = _run(x, (8, 3), R.BILINEAR, True, False, L.NCHW, backend, dy)
    assert y.dtype == np.float16 and dx.dtype == np.float16
    np.testing.assert_allclose(y, naive_resize(x, (8, 3), R.BILINEAR, True, False, "NCHW"), rtol=3e-3, atol=3e-3)
    np.testing.assert_allclose(dx, naive_resize_gradient(dy, x.shape, R.BILINEAR, True, False, "NCHW"),
                               rtol=3e-3, atol=3e-3)


# ----------------------------------------------------------------------------- gradients
def test_autodiff_emits_resize_gradient_and_its_rule_resizes():
    g = mg.Graph()
    x = g.placeholder([1, 2, 3, 4], mg.float64, name="x")
    y = g.resize(x, [5, 6], R.BILINEAR, True, False, L.NCHW, name="up")
    gx = g.gradients(g.reduction_sum(g.square(y), axes=None), [x], name="g")[x]
    assert gx.operation.type != "resize"
    ops = {o.type for o in g.operations}
    assert "resize_gradient" in ops
    rg = next(o for o in g.operations if o.type == "resize_gradient")
    assert rg.name == "g/up/resize_gradient"
    assert (rg.attrs["mode"], rg.attrs["center_result"], rg.attrs["align_corners"], rg.attrs["layout"]) == \
        (R.BILINEAR, True, False, L.NCHW)
    g2 = g.gradients(g.reduction_sum(g.square(gx), axes=None), [x], name="g2")[x]
    assert g2.shape == (1, 2, 3, 4)
    assert sum(o.type == "resize" for o in g.operations) >= 2


@pytest.mark.parametrize("mode,cr,ac", FLAGS, ids=lambda v: str(v))
def test_finite_differences(mode, cr, ac):
    values, rng = uniform_inputs([(1, 3, 4, 2)], seed=1)
    check_gradients(lambda g, x: g.resize(x, [5, 3], mode, cr, ac, L.NHWC), values, rng)


# ----------------------------------------------------------------------------- declarations and errors
def test_declarations_and_swift_export():
    r, rg = OPS["resize"], OPS["resize_gradient"]
    assert r.swift == "resize(_:size:mode:centerResult:alignCorners:layout:name:)"
    assert r.objc == "resizeTensor:size:mode:centerResult:alignCorners:layout:name:"
    assert rg.swift == "resize(withGradientTensor:input:mode:centerResult:alignCorners:layout:name:)"
    assert rg.objc == "resizeWithGradientTensor:input:mode:centerResult:alignCorners:layout:name:"
    assert r.since == rg.since == ("11.0", "14.0")
    assert (rg.role, rg.forward) == ("data_gradient", "resize")
    g = mg.Graph()
    x = g.placeholder([1, 4, 4, 3], name="img")
    y = g.resize(x, [7, 7], "nearest", True, False, "NHWC", name="up")
    g.gradients(g.reduction_sum(y, axes=None), [x])
    swift = g.to_swift()
    assert ('graph.resize(img, size: [7, 7], mode: .nearest, centerResult: true, alignCorners: false, '
            'layout: .NHWC, name: "up")') in swift
    assert "graph.resize(withGradientTensor: " in swift


@pytest.mark.parametrize("build,err,part", [
    (lambda g: g.resize(g.placeholder([1, 2, 3, 4]), [5, 5], R.BILINEAR, True, False, L.NCDHW),
     mg.DescriptorError, "layout"),
    (lambda g: g.resize(g.placeholder([2, 3, 4]), [5, 5], R.BILINEAR, True, False, L.NCHW),
     mg.ShapeError, "layout NCHW needs rank 4"),
    (lambda g: g.resize(g.placeholder([1, 2, 3, 4]), [5, 0], R.BILINEAR, True, False, L.NCHW),
     mg.ShapeError, "two ints >= 1"),
    (lambda g: g.resize(g.placeholder([1, 2, 3, 4]), [5], R.BILINEAR, True, False, L.NCHW),
     mg.ShapeError, "[newHeight, newWidth]"),
    (lambda g: g.resize(g.placeholder([1, 2, 3, 4]), [5, 5], "bicubic", True, False, L.NCHW),
     mg.DescriptorError, "not an MPSGraphResizeMode"),
    (lambda g: g.resize(g.placeholder([1, 2, 3, 4]), [5, 5], R.BILINEAR, 1, False, L.NCHW),
     mg.DescriptorError, "center_result must be a bool"),
    (lambda g: g.resize(g.placeholder([1, 2, 3, 4], mg.int32), [5, 5], R.NEAREST, True, False, L.NCHW),
     mg.DTypeError, "int32"),
    (lambda g: g.resize(g.placeholder([1, 2, 0, 4]), [5, 5], R.NEAREST, True, False, L.NCHW),
     mg.ShapeError, "H = 0"),
    (lambda g: g.resize_gradient(g.placeholder([1, 3, 5, 5]), g.placeholder([1, 2, 3, 4]), R.NEAREST, True, False,
                                 L.NCHW), mg.ShapeError, "differ on axis 1"),
    (lambda g: g.resize_gradient(g.placeholder([1, 5, 5]), g.placeholder([1, 2, 3, 4]), R.NEAREST, True, False,
                                 L.NCHW), mg.ShapeError, "incoming_gradient has shape (1, 5, 5) of rank 3"),
])
def test_validation_errors_name_the_op(build, err, part):
    g = mg.Graph()
    with pytest.raises(err) as e:
        build(g)
    assert "resize" in str(e.value) and part in str(e.value), str(e.value)


@pytest.mark.parametrize("n,m,cr,ac,want", [
    (4, 7, True, False, [0, 0, 1, 2, 2, 3, 3]),      # o = 3 reads exactly 1.5 -> 2 (float32 math could give 1)
    (3, 5, False, True, [0, 1, 1, 2, 2]),            # o/2: 0.5 -> 1 and 1.5 -> 2
    (2, 4, False, False, [0, 1, 1, 1]),              # o/2: 0.5 -> 1
    (6, 4, True, False, [0, 2, 3, 5]),               # (o + 0.5) * 1.5 - 0.5: 0.25, 1.75, 3.25, 4.75
])
def test_nearest_ties_round_up_exactly_on_every_backend(backend, n, m, cr, ac, want):
    x = np.arange(n, dtype=np.float32)[None, :]
    assert _run(x, (1, m), R.NEAREST, cr, ac, L.HW, backend)[0][0].tolist() == want


# ----------------------------------------------------------------------------- rounding modes, scale-offset, no layout
N = mg.ResizeNearestRoundingMode
HALF = Fraction(1, 2)


def round_mode(s: Fraction, rounding) -> int:
    """MPSGraphResizeNearestRoundingMode as Apple's header words each case."""
    fl, frac = floor(s), s - floor(s)
    nearest = fl + (frac > HALF)
    if frac != HALF:
        return {N.CEIL: -floor(-s), N.FLOOR: fl}.get(rounding, nearest)
    return {N.ROUND_PREFER_CEIL: fl + 1, N.ROUND_PREFER_FLOOR: fl, N.CEIL: fl + 1, N.FLOOR: fl,
            N.ROUND_TO_EVEN: fl + (fl % 2), N.ROUND_TO_ODD: fl + 1 - (fl % 2)}[rounding]


def general_weights(n, m, mode, cr=False, ac=False, rounding=N.ROUND_PREFER_CEIL, scale=None, offset=0.0) -> list:
    """Per result index, {source index: weight}; ``scale`` given: src = (o - offset) / scale, in
    float32 as docs/resize.md says (then exact)."""
    out = []
    f32 = np.float32
    for o in range(m):
        s = source_coordinate(o, n, m, cr, ac) if scale is None else \
            Fraction(float((f32(o) - f32(offset)) / f32(scale)))
        if mode == R.NEAREST:
            out.append({min(max(round_mode(s, rounding), 0), n - 1): 1.0})
            continue
        s = min(max(s, Fraction(0)), Fraction(n - 1))
        i0 = floor(s)
        f = s - i0
        out.append({i0: 1.0} if f == 0 else {i0: float(1 - f), i0 + 1: float(f)})
    return out


def naive_nd(x: np.ndarray, out_shape, axes, weights, adjoint=False) -> np.ndarray:
    """Apply per-axis weights (``weights[j][o] = {i: w}`` for axis ``axes[j]``) one axis at a time,
    or their adjoint (``x`` then has the result's shape, ``out_shape`` the input's)."""
    t = x.astype(np.float64)
    for a, wts in zip(axes, weights):
        shape = list(t.shape)
        shape[a] = out_shape[a]
        out = np.zeros(shape)
        src = np.moveaxis(t, a, 0)
        dst = np.moveaxis(out, a, 0)
        for o, ws in enumerate(wts):
            for i, w in ws.items():
                if adjoint:
                    dst[i] += w * src[o]
                else:
                    dst[o] += w * src[i]
        t = out
    return t


def _run_kw(x, size, mode, backend, dy=None, **kw):
    g = mg.Graph()
    xp = g.placeholder(x.shape, x.dtype)
    targets = [g.resize(xp, size, mode, **kw)]
    feeds = {xp: x}
    if dy is not None:
        dyp = g.placeholder(dy.shape, x.dtype)
        targets.append(g.resize_gradient(dyp, xp, mode, **kw))
        feeds[dyp] = dy
    r = g.run(feeds, targets, backend=backend)
    return [r[t] for t in targets]


@pytest.mark.parametrize("rounding", list(N))
@pytest.mark.parametrize("cr,ac", [(False, False), (True, False), (False, True)])
def test_rounding_modes_match_the_naive_loops(backend, rounding, cr, ac):
    rng = np.random.default_rng(int(rounding) * 7 + 2 * cr + ac)
    x = rng.standard_normal((1, 5, 4, 2)).astype(_dtype(backend))
    for size in [(7, 7), (2, 3), (10, 8), (1, 1)]:
        dy = rng.standard_normal((1,) + size + (2,)).astype(x.dtype)
        y, dx = _run_kw(x, size, R.NEAREST, backend, dy, center_result=cr, align_corners=ac, layout=L.NHWC,
                        nearest_rounding_mode=rounding)
        wts = [general_weights(x.shape[a], s, R.NEAREST, cr, ac, rounding) for a, s in zip((1, 2), size)]
        out_shape = (1,) + size + (2,)
        np.testing.assert_allclose(y, naive_nd(x, out_shape, (1, 2), wts), **_tol(backend))
        np.testing.assert_allclose(dx, naive_nd(dy, x.shape, (1, 2), wts, adjoint=True), **_tol(backend))


@pytest.mark.parametrize("rounding,want", [
    (N.ROUND_PREFER_CEIL, [0, 1, 1, 2, 2, 3, 3, 3]), (N.ROUND_PREFER_FLOOR, [0, 0, 1, 1, 2, 2, 3, 3]),
    (N.CEIL, [0, 1, 1, 2, 2, 3, 3, 3]), (N.FLOOR, [0, 0, 1, 1, 2, 2, 3, 3]),
    (N.ROUND_TO_EVEN, [0, 0, 1, 2, 2, 2, 3, 3]), (N.ROUND_TO_ODD, [0, 1, 1, 1, 2, 3, 3, 3]),
])
def test_rounding_modes_on_the_halves(backend, rounding, want):
    """4 pixels to 8, direct scaling: result o reads o / 2 (every other one a tie)."""
    x = np.arange(4, dtype=np.float32)[None, :]
    y = _run_kw(x, (1, 8), R.NEAREST, backend, layout=L.HW, nearest_rounding_mode=rounding)[0]
    assert y[0].tolist() == want


def test_floor_rounding_is_torch_nearest(backend):
    torch = pytest.importorskip("torch", reason="needs torch, in the oracles extra: pip install -e '.[oracles]'")
    x = np.random.default_rng(3).standard_normal((2, 3, 5, 7)).astype(np.float32)
    for size in [(8, 3), (11, 14), (2, 2)]:
        y = _run_kw(x, size, R.NEAREST, backend, layout=L.NCHW, nearest_rounding_mode=N.FLOOR)[0]
        ref = torch.nn.functional.interpolate(torch.from_numpy(x), size=size, mode="nearest").numpy()
        np.testing.assert_array_equal(y, ref)


SCALES = [([1.5, 0.75], [0.25, -0.1]), ([2.0, 0.5], [0.5, 0.0]), ([-1.25, 3.0], [4.0, 1.5]), ([0.3, 1.7], [-2.0, 0.9])]


@pytest.mark.parametrize("mode", [R.NEAREST, R.BILINEAR])
@pytest.mark.parametrize("scale,offset", SCALES)
def test_scale_offset_matches_the_formula(backend, mode, scale, offset):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 3, 5, 4)).astype(_dtype(backend))
    roundings = [N.ROUND_PREFER_CEIL, N.ROUND_TO_ODD] if mode == R.NEAREST else [N.ROUND_PREFER_CEIL]
    for rounding in roundings:
        for size in [(7, 6), (3, 2)]:
            out_shape = (2, 3) + size
            dy = rng.standard_normal(out_shape).astype(x.dtype)
            y, dx = _run_kw(x, size, mode, backend, dy, layout=L.NCHW, scale=scale, offset=offset,
                            nearest_rounding_mode=rounding)
            wts = [general_weights(x.shape[a], m, mode, rounding=rounding, scale=s, offset=o)
                   for a, m, s, o in zip((2, 3), size, scale, offset)]
            np.testing.assert_allclose(y, naive_nd(x, out_shape, (2, 3), wts), **_tol(backend))
            np.testing.assert_allclose(dx, naive_nd(dy, x.shape, (2, 3), wts, adjoint=True), **_tol(backend))


def test_scale_offset_of_half_pixel_centres_is_center_result(backend):
    """Apple's dst = src * scale + offset with scale = m / n and offset = (scale - 1) / 2 places the
    samples at half-pixel centres."""
    x = np.random.default_rng(6).standard_normal((1, 4, 8, 2)).astype(np.float32)
    size = (8, 2)
    sc = [size[0] / 4, size[1] / 8]
    a = _run_kw(x, size, R.BILINEAR, backend, layout=L.NHWC, scale=sc, offset=[(s - 1) / 2 for s in sc])[0]
    b = _run_kw(x, size, R.BILINEAR, backend, center_result=True, layout=L.NHWC)[0]
    np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("mode", [R.NEAREST, R.BILINEAR])
@pytest.mark.parametrize("cr,ac", [(False, False), (True, False), (False, True)])
def test_without_a_layout_every_axis_is_resized(backend, mode, cr, ac):
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 3, 4)).astype(_dtype(backend))
    for size in [(3, 5, 4), (1, 3, 7), (4, 1, 2)]:
        dy = rng.standard_normal(size).astype(x.dtype)
        y, dx = _run_kw(x, size, mode, backend, dy, center_result=cr, align_corners=ac)
        wts = [general_weights(n, m, mode, cr, ac) for n, m in zip(x.shape, size)]
        np.testing.assert_allclose(y, naive_nd(x, size, (0, 1, 2), wts), **_tol(backend))
        np.testing.assert_allclose(dx, naive_nd(dy, x.shape, (0, 1, 2), wts, adjoint=True), **_tol(backend))


def test_without_a_layout_matches_torch_trilinear(backend):
    torch = pytest.importorskip("torch", reason="needs torch, in the oracles extra: pip install -e '.[oracles]'")
    x = np.random.default_rng(8).standard_normal((1, 2, 3, 4, 5)).astype(np.float32)
    for ac in (False, True):
        y = _run_kw(x, (1, 2, 5, 3, 7), R.BILINEAR, backend, center_result=True, align_corners=ac)[0]
        ref = torch.nn.functional.interpolate(torch.from_numpy(x), size=(5, 3, 7), mode="trilinear",
                                              align_corners=ac).numpy()
        np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-5)


def test_scale_offset_without_a_layout(backend):
    rng = np.random.default_rng(9)
    x = rng.standard_normal((3, 4, 2)).astype(_dtype(backend))
    scale, offset, size = [1.0, 1.5, 2.0], [0.5, -0.25, 0.0], (2, 6, 3)
    for mode in (R.NEAREST, R.BILINEAR):
        dy = rng.standard_normal(size).astype(x.dtype)
        y, dx = _run_kw(x, size, mode, backend, dy, scale=scale, offset=offset)
        wts = [general_weights(n, m, mode, scale=s, offset=o) for n, m, s, o in zip(x.shape, size, scale, offset)]
        np.testing.assert_allclose(y, naive_nd(x, size, (0, 1, 2), wts), **_tol(backend))
        np.testing.assert_allclose(dx, naive_nd(dy, x.shape, (0, 1, 2), wts, adjoint=True), **_tol(backend))


@pytest.mark.parametrize("kw", [
    dict(layout=L.NHWC, scale=[1.5, 0.7], offset=[0.2, -0.3]),
    dict(scale=[1.0, 1.5, 0.7, 1.0], offset=[0.0, 0.2, -0.3, 0.0]),
    dict(center_result=True),
    dict(align_corners=True, layout=L.NHWC),
], ids=["scale-offset", "scale-offset-no-layout", "no-layout", "corners"])
def test_finite_differences_of_the_new_forms(kw):
    values, rng = uniform_inputs([(1, 3, 4, 2)], seed=2)
    size = [5, 3] if "layout" in kw else [2, 5, 3, 3]
    check_gradients(lambda g, x: g.resize(x, size, R.BILINEAR, **kw), values, rng)
    dy_shape = (1, 5, 3, 2) if "layout" in kw else (2, 5, 3, 3)
    dy = uniform_inputs([dy_shape], seed=3)[0][0]
    check_gradients(lambda g, dy, x: g.resize_gradient(dy, x, R.BILINEAR, **kw), [dy, values[0]], rng)


def test_new_forms_export_to_their_swift_methods():
    g = mg.Graph()
    x = g.placeholder([1, 4, 5, 3], name="x")
    a = g.resize(x, [7, 3], R.NEAREST, True, False, L.NHWC, nearest_rounding_mode=N.ROUND_TO_EVEN, name="a")
    g.resize(x, [2, 7, 3, 3], R.BILINEAR, name="b")
    c = g.resize(x, [7, 3], R.BILINEAR, layout=L.NHWC, scale=[1.5, 0.75], offset=[0.25, -0.1], name="c")
    d = g.resize(x, [2, 7, 3, 3], R.NEAREST, scale=[2, 1.5, 0.75, 1], offset=[0, 0.25, -0.1, 0],
                 nearest_rounding_mode=N.FLOOR, name="d")
    g.resize_gradient(a, x, R.NEAREST, True, False, L.NHWC, nearest_rounding_mode=N.ROUND_TO_EVEN, name="ga")
    g.resize_gradient(c, x, R.BILINEAR, layout=L.NHWC, scale=[1.5, 0.75], offset=[0.25, -0.1], name="gc")
    g.resize_gradient(d, x, R.NEAREST, scale=[2, 1.5, 0.75, 1], offset=[0, 0.25, -0.1, 0], name="gd")
    swift = re.sub(r'Data\(base64Encoded: "[^"]*"\)!', "D", g.to_swift())
    si = 'graph.constant(D, shape: [{}], dataType: .int32)'
    sf = 'graph.constant(D, shape: [{}], dataType: .float32)'
    assert (f'graph.resizeNearest(x, sizeTensor: {si.format(2)}, nearestRoundingMode: .roundToEven, '
            'centerResult: true, alignCorners: false, layout: .NHWC, name: "a")') in swift
    assert (f'graph.resize(x, sizeTensor: {si.format(4)}, mode: .bilinear, centerResult: false, '
            'alignCorners: false, name: "b")') in swift
    assert (f'graph.resize(x, sizeTensor: {si.format(2)}, scaleOffsetTensor: {sf.format(4)}, mode: .bilinear, '
            'layout: .NHWC, name: "c")') in swift
    assert (f'graph.resizeNearest(x, sizeTensor: {si.format(4)}, scaleTensor: {sf.format(4)}, '
            f'offsetTensor: {sf.format(4)}, nearestRoundingMode: .floor, name: "d")') in swift
    assert ('graph.resizeNearest(withGradientTensor: a, input: x, nearestRoundingMode: .roundToEven, '
            'centerResult: true, alignCorners: false, layout: .NHWC, name: "ga")') in swift
    assert (f'graph.resize(withGradientTensor: c, input: x, scaleOffsetTensor: {sf.format(4)}, mode: .bilinear, '
            'layout: .NHWC, name: "gc")') in swift
    assert (f'graph.resize(withGradientTensor: d, input: x, scale: {sf.format(4)}, offsetTensor: {sf.format(4)}, '
            'mode: .nearest, name: "gd")') in swift
    g2 = mg.Graph()
    x2 = g2.placeholder([2, 3], name="x")
    g2.resize_gradient(g2.placeholder([4, 5]), x2, R.BILINEAR)
    with pytest.raises(mg.SwiftExportError, match="no resize gradient without a layout"):
        g2.to_swift()


@pytest.mark.parametrize("build,err,part", [
    (lambda g: g.resize(g.placeholder([1, 2, 3, 4]), [5, 5], R.BILINEAR, layout=L.NCHW,
                        nearest_rounding_mode=N.FLOOR), mg.DescriptorError, "is for mode=NEAREST"),
    (lambda g: g.resize(g.placeholder([1, 2, 3, 4]), [5, 5], R.NEAREST, layout=L.NCHW, nearest_rounding_mode=9),
     mg.DescriptorError, "not an MPSGraphResizeNearestRoundingMode"),
    (lambda g: g.resize(g.placeholder([1, 2, 3, 4]), [5, 5], R.NEAREST, layout=L.NCHW, scale=[1, 1]),
     mg.DescriptorError, "scale and offset go together"),
    (lambda g: g.resize(g.placeholder([1, 2, 3, 4]), [5, 5], R.NEAREST, True, layout=L.NCHW, scale=[1, 1],
                        offset=[0, 0]), mg.DescriptorError, "must be False with scale and offset"),
    (lambda g: g.resize(g.placeholder([1, 2, 3, 4]), [5, 5], R.NEAREST, layout=L.NCHW, scale=[1, 0],
                        offset=[0, 0]), mg.DescriptorError, "nonzero"),
    (lambda g: g.resize(g.placeholder([1, 2, 3, 4]), [5, 5], R.NEAREST, layout=L.NCHW, scale=[1, 1, 1, 1],
                        offset=[0, 0, 0, 0]), mg.ShapeError, "resizes 2 axes"),
    (lambda g: g.resize(g.placeholder([1, 2, 3, 4]), [5, 5], R.NEAREST, layout=L.NCHW, scale=[1, float("nan")],
                        offset=[0, 0]), mg.DescriptorError, "finite"),
    (lambda g: g.resize(g.placeholder([1, 2, 3, 4]), [5, 5, 5], R.NEAREST), mg.ShapeError, "result shape"),
    (lambda g: g.resize(g.placeholder([1, 0, 3]), [1, 2, 3], R.NEAREST), mg.ShapeError, "axis 1 = 0"),
])
def test_errors_of_the_new_forms_name_the_op(build, err, part):
    g = mg.Graph()
    with pytest.raises(err) as e:
        build(g)
    assert "resize" in str(e.value) and part in str(e.value), str(e.value)
