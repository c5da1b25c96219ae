"""im_to_col and col_to_im on every backend: against naive loops written from the layouts in
ops/image.py, PyTorch's unfold / fold, the adjoint identity and finite differences. stencil
against a naive loop over np.pad, and PyTorch's conv3d for a SUM window; non-maximum suppression
against a naive greedy loop (torchvision's nms semantics) and its edge cases."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import minigraph as mg

try:
    import torch
    F = torch.nn.functional
except ImportError:
    torch = F = None
needs_torch = pytest.mark.skipif(torch is None, reason="needs torch, in the oracles extra: pip install -e '.[oracles]'")
F32 = np.float32

GEOMETRIES = [  # kh, kw, sy, sx, dy, dx, top, bottom, left, right
    (3, 2, 1, 2, 1, 1, 1, 0, 2, 1), (2, 2, 2, 2, 2, 1, 0, 1, 0, 0), (1, 1, 1, 1, 1, 1, 0, 0, 0, 0),
    (2, 3, 3, 1, 1, 2, 2, 2, 1, 0)]


def desc(geo, layout="NCHW"):
    kh, kw, sy, sx, dy, dx, t, b, le, r = geo
    return mg.ImToColOpDescriptor(kernel_width=kw, kernel_height=kh, stride_in_x=sx, stride_in_y=sy,
                                  dilation_rate_in_x=dx, dilation_rate_in_y=dy, padding_left=le, padding_right=r,
                                  padding_top=t, padding_bottom=b, data_layout=layout)


def naive_im_to_col(x, geo, layout):
    """Loop over windows and window positions: row c*kH*kW + i*kW + j (NCHW, [N, rows, L]) or
    column (i*kW + j)*C + c (NHWC, [N, L, cols]); padding reads 0."""
    kh, kw, sy, sx, dy, dx, t, b, le, r = geo
    img = x if layout == "NCHW" else x.transpose(0, 3, 1, 2)
    n, c, h, w = img.shape
    oh, ow = (h + t + b - dy * (kh - 1) - 1) // sy + 1, (w + le + r - dx * (kw - 1) - 1) // sx + 1
    out = np.zeros((n, c, kh, kw, oh, ow), x.dtype)
    for ni, ci, i, j, oy, ox in itertools.product(range(n), range(c), range(kh), range(kw), range(oh), range(ow)):
        y, xx = oy * sy + i * dy - t, ox * sx + j * dx - le
        if 0 <= y < h and 0 <= xx < w:
            out[ni, ci, i, j, oy, ox] = img[ni, ci, y, xx]
    if layout == "NCHW":
        return out.reshape(n, c * kh * kw, oh * ow)
    return out.transpose(0, 4, 5, 2, 3, 1).reshape(n, oh * ow, kh * kw * c)


def run(build, feeds, backend):
    g = mg.Graph()
    phs = {k: g.placeholder(v.shape, mg.as_dtype(v.dtype), name=k) for k, v in feeds.items()}
    outs = build(g, **phs)
    r = g.run({phs[k]: v for k, v in feeds.items()}, outs, backend=backend)
    return [r[t] for t in outs]


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("geo", GEOMETRIES)
def test_im_to_col_matches_a_naive_loop(geo, layout, backend):
    x = np.random.default_rng(1).standard_normal((2, 5, 7, 4)).astype(F32)
    (got,) = run(lambda g, x: [g.im_to_col(x, desc(geo, layout))], {"x": x}, backend)
    np.testing.assert_array_equal(got, naive_im_to_col(x, geo, layout))


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("geo", GEOMETRIES)
def test_col_to_im_is_the_adjoint_of_im_to_col(geo, layout, backend):
    """<im_to_col(x), c> = <x, col_to_im(c)> for random x and c: col_to_im sums every copy back."""
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 5, 7, 4))
    cols = naive_im_to_col(x, geo, layout)
    c = rng.standard_normal(cols.shape).astype(F32)
    (back,) = run(lambda g, c: [g.col_to_im(c, list(x.shape), desc(geo, layout))], {"c": c}, backend)
    assert back.shape == x.shape
    np.testing.assert_allclose((cols * c).sum(), (x * back).sum(), rtol=1e-5)
    # each element: the sum of the column entries copied from it (an indicator image per element)
    for flat in (0, 17, x.size - 1):
        e = np.zeros(x.size)
        e[flat] = 1
        want = (naive_im_to_col(e.reshape(x.shape), geo, layout) * c).sum()
        np.testing.assert_allclose(back.reshape(-1)[flat], want, rtol=1e-5, atol=1e-6)


@needs_torch
@pytest.mark.parametrize("geo", GEOMETRIES)
def test_nchw_is_torch_unfold_and_fold(geo, backend):
    kh, kw, sy, sx, dy, dx, t, b, le, r = geo
    x = np.random.default_rng(3).standard_normal((2, 3, 8, 6)).astype(F32)
    cols, back = run(lambda g, x: [c := g.im_to_col(x, desc(geo)), g.col_to_im(c, list(x.shape), desc(geo))],
                     {"x": x}, backend)
    xt = F.pad(torch.tensor(x), (le, r, t, b))
    want = F.unfold(xt, (kh, kw), dilation=(dy, dx), stride=(sy, sx))
    np.testing.assert_allclose(cols, want.numpy())
    folded = F.fold(want, (8 + t + b, 6 + le + r), (kh, kw), dilation=(dy, dx), stride=(sy, sx))
    np.testing.assert_allclose(back, folded[:, :, t:t + 8, le:le + 6].numpy(), rtol=1e-6, atol=1e-6)


def test_gradients_are_each_others_op(backend):
    rng = np.random.default_rng(4)
    d = desc(GEOMETRIES[0])
    x = rng.standard_normal((1, 2, 6, 5)).astype(F32)
    w = rng.standard_normal(naive_im_to_col(x, GEOMETRIES[0], "NCHW").shape).astype(F32)
    g = mg.Graph()
    xp, wp = g.placeholder(x.shape, name="x"), g.placeholder(w.shape, name="w")
    y = g.im_to_col(xp, d)
    gx = g.gradients(g.reduction_sum(g.multiplication(y, wp), axes=None), [xp])[xp]
    assert gx.operation.type == "col_to_im"
    r = g.run({xp: x, wp: w}, [gx], backend=backend)
    (want,) = run(lambda g, w: [g.col_to_im(w, list(x.shape), d)], {"w": w}, backend)
    np.testing.assert_allclose(r[gx], want)


def test_dtypes_and_empty_batch(backend):
    d = desc(GEOMETRIES[1], "NHWC")
    xi = np.arange(2 * 5 * 4 * 3, dtype=np.int32).reshape(2, 5, 4, 3)
    xh = np.random.default_rng(5).standard_normal((1, 5, 4, 3)).astype(np.float16)
    xe = np.zeros((0, 5, 4, 3), F32)
    a, h, e = run(lambda g, xi, xh, xe: [g.im_to_col(xi, d), g.im_to_col(xh, d), g.im_to_col(xe, d)],
                  {"xi": xi, "xh": xh, "xe": xe}, backend)
    np.testing.assert_array_equal(a, naive_im_to_col(xi, GEOMETRIES[1], "NHWC"))
    np.testing.assert_array_equal(h, naive_im_to_col(xh, GEOMETRIES[1], "NHWC"))
    assert e.shape == (0,) + a.shape[1:]


@pytest.mark.parametrize("call, err, match", [
    (lambda g, x: g.im_to_col(g.reshape(x, [2, 3, 24]), mg.ImToColOpDescriptor()), mg.ShapeError, "rank 4"),
    (lambda g, x: g.im_to_col(x, mg.ImToColOpDescriptor(kernel_height=9)), mg.ShapeError, "spans 9"),
    (lambda g, x: g.im_to_col(x, mg.ImToColOpDescriptor(stride_in_x=0)), mg.DescriptorError, "stride_in_x=0"),
    (lambda g, x: g.im_to_col(x, mg.ImToColOpDescriptor(data_layout="NCDHW")), mg.DescriptorError, "NCHW or NHWC"),
    (lambda g, x: g.col_to_im(g.reshape(x, [2, 12, 6]), [2, 3, 4, 6], mg.ImToColOpDescriptor()), mg.ShapeError,
     "not the columns of an image"),
    (lambda g, x: g.col_to_im(g.reshape(x, [2, 3, 24]), [2, 3, 4], mg.ImToColOpDescriptor()), mg.ShapeError,
     "4 sizes"),
    (lambda g, x: g.col_to_im(g.cast(g.reshape(x, [2, 3, 24]), mg.bool), [2, 3, 4, 6], mg.ImToColOpDescriptor()),
     mg.DTypeError, "not defined for bool"),
])
def test_errors_name_the_op(call, err, match):
    g = mg.Graph()
    x = g.placeholder([2, 3, 4, 6], name="x")
    with pytest.raises(err, match=match) as e:
        call(g, x)
    assert "op '" in str(e.value)


# ----------------------------------------------------------------------------- sample_grid
P, R, L = mg.PaddingMode, mg.ResizeMode, mg.TensorNamedDataLayout
N = mg.ResizeNearestRoundingMode
TORCH_PAD = {"zeros": lambda ac: P.ZERO, "border": lambda ac: P.CLAMP_TO_EDGE,
             "reflection": lambda ac: P.REFLECT if ac else P.SYMMETRIC}


def _reflect(p, lo, hi):
    """Mirror p into [lo, hi] (a scalar loop, written from the definition)."""
    span = hi - lo
    if span == 0:
        return 0.0
    q = abs(p - lo)
    flips = int(q // span)
    extra = q - flips * span
    return lo + (span - extra if flips % 2 else extra)


def _round(p, rounding):
    fl = np.floor(p)
    frac = p - fl
    if rounding == N.FLOOR:
        return fl
    if rounding == N.CEIL:
        return np.ceil(p)
    if frac != 0.5:
        return fl + (frac > 0.5)
    return {N.ROUND_PREFER_CEIL: fl + 1, N.ROUND_PREFER_FLOOR: fl, N.ROUND_TO_EVEN: fl + (fl % 2),
            N.ROUND_TO_ODD: fl + 1 - (fl % 2)}[rounding]


def naive_sample_grid(src, coords, layout, normalize, relative, ac, pad, mode, value=0.0,
                      rounding=N.ROUND_PREFER_CEIL):
    """Scalar loops over result pixels, from the steps of ops/sample_grid.py, in float64."""
    img = src.astype(np.float64) if layout == "NHWC" else src.astype(np.float64).transpose(0, 2, 3, 1)
    n, h, w, c = img.shape
    _, ho, wo, _ = coords.shape
    out = np.zeros((n, ho, wo, c))
    fill = value if pad == P.CONSTANT else 0.0

    def position(cv, j, size, out_size):
        if relative:
            b = 0.0 if out_size == 1 else (-1 + 2 * j / (out_size - 1) if ac else (2 * j + 1) / out_size - 1)
            if not normalize:
                b = (b + 1) / 2 * (size - 1) if ac else ((b + 1) * size - 1) / 2
            cv = cv + b
        p = ((cv + 1) / 2 * (size - 1) if ac else ((cv + 1) * size - 1) / 2) if normalize else cv
        if pad == P.CLAMP_TO_EDGE:
            p = min(max(p, 0), size - 1)
        elif pad in (P.REFLECT, P.SYMMETRIC):
            p = _reflect(p, 0, size - 1) if pad == P.REFLECT else _reflect(p, -0.5, size - 0.5)
            p = min(max(p, 0), size - 1)
        if mode == R.NEAREST:
            return [(_round(p, rounding), 1.0)]
        i0 = np.floor(p)
        return [(i0, 1 - (p - i0)), (i0 + 1, p - i0)]

    for b, i, j in itertools.product(range(n), range(ho), range(wo)):
        for iy, wy in position(float(coords[b, i, j, 1]), i, h, ho):
            for ix, wx in position(float(coords[b, i, j, 0]), j, w, wo):
                if wx * wy == 0:
                    continue
                inside = 0 <= ix <= w - 1 and 0 <= iy <= h - 1
                out[b, i, j] += wx * wy * (img[b, int(iy), int(ix)] if inside else fill)
    return out if layout == "NHWC" else out.transpose(0, 3, 1, 2)


def _sample(backend, src, coords, *args, dtype=None, **kw):
    g = mg.Graph()
    s = g.placeholder(src.shape, dtype or mg.float32)
    c = g.placeholder(coords.shape, dtype or mg.float32)
    y = g.sample_grid(s, c, *args, **kw)
    return g.run({s: src, c: coords}, [y], backend=backend)[y]


def _grid(rng, n, ho, wo, lo=-1.4, hi=1.4):
    return rng.uniform(lo, hi, (n, ho, wo, 2)).astype(F32)


@pytest.mark.parametrize("layout", ["NHWC", "NCHW"])
@pytest.mark.parametrize("mode", [R.BILINEAR, R.NEAREST])
@pytest.mark.parametrize("pad", [P.CONSTANT, P.ZERO, P.CLAMP_TO_EDGE, P.REFLECT, P.SYMMETRIC])
def test_sample_grid_matches_the_naive_loops(backend, layout, mode, pad):
    rng = np.random.default_rng(int(mode) * 10 + int(pad))
    src = rng.standard_normal((2, 4, 5, 3) if layout == "NHWC" else (2, 3, 4, 5)).astype(F32)
    for normalize, relative, ac in itertools.product((True, False), (False, True), (False, True)):
        coords = _grid(rng, 2, 3, 6) * (1 if normalize else 4)
        y = _sample(backend, src, coords, getattr(L, layout), normalize, relative, ac, pad, mode, 2.5)
        ref = naive_sample_grid(src, coords, layout, normalize, relative, ac, pad, mode, 2.5)
        np.testing.assert_allclose(y, ref, rtol=2e-5, atol=2e-5, err_msg=str((normalize, relative, ac)))


@needs_torch
@pytest.mark.parametrize("tmode,mode", [("bilinear", R.BILINEAR), ("nearest", R.NEAREST)])
@pytest.mark.parametrize("tpad", list(TORCH_PAD))
@pytest.mark.parametrize("ac", [False, True])
def test_sample_grid_is_torch_grid_sample(backend, tmode, mode, tpad, ac):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 3, 5, 7)).astype(F32)
    grid = _grid(rng, 2, 4, 6)
    kw = dict(nearest_rounding_mode=N.ROUND_TO_EVEN) if mode == R.NEAREST else {}
    ref = F.grid_sample(torch.from_numpy(x), torch.from_numpy(grid), mode=tmode, padding_mode=tpad,
                        align_corners=ac).numpy()
    y = _sample(backend, x, grid, L.NCHW, True, False, ac, TORCH_PAD[tpad](ac), mode, **kw)
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-5)
    y = _sample(backend, x.transpose(0, 2, 3, 1).copy(), grid, L.NHWC, True, False, ac, TORCH_PAD[tpad](ac), mode,
                **kw)
    np.testing.assert_allclose(y, ref.transpose(0, 2, 3, 1), rtol=1e-5, atol=1e-5)


@needs_torch
@pytest.mark.parametrize("ac", [False, True])
def test_relative_coordinates_are_offsets_from_the_identity_grid(backend, ac):
    """relative: torch's grid is affine_grid(identity) + the offsets."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((1, 2, 6, 5)).astype(F32)
    offsets = rng.uniform(-0.3, 0.3, (1, 4, 7, 2)).astype(F32)
    ident = F.affine_grid(torch.eye(2, 3)[None], [1, 2, 4, 7], align_corners=ac)
    ref = F.grid_sample(torch.from_numpy(x), ident + torch.from_numpy(offsets), mode="bilinear",
                        padding_mode="border", align_corners=ac).numpy()
    y = _sample(backend, x, offsets, L.NCHW, True, True, ac, P.CLAMP_TO_EDGE, R.BILINEAR)
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-5)
    # zero offsets with as many results as pixels read every pixel back
    same = _sample(backend, x, np.zeros((1, 6, 5, 2), F32), L.NCHW, True, True, ac, P.ZERO, R.BILINEAR)
    np.testing.assert_allclose(same, x, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("rounding", list(N))
def test_sample_grid_nearest_rounding_modes(backend, rounding):
    x = np.arange(4, dtype=F32).reshape(1, 1, 4, 1)  # NHWC, W = 4: pixel k holds k
    pos = np.array([-0.5, 0.25, 0.5, 1.0, 1.5, 2.5, 2.75, 3.5], F32)
    coords = np.stack([pos, np.zeros_like(pos)], -1).reshape(1, 1, 8, 2)
    y = _sample(backend, x, coords, L.NHWC, False, False, False, P.CONSTANT, R.NEAREST, -1.0,
                nearest_rounding_mode=rounding)
    want = [_round(float(p), rounding) for p in pos]
    assert y.reshape(-1).tolist() == [w if 0 <= w <= 3 else -1.0 for w in want]


def test_sample_grid_constant_nan_and_edges(backend):
    x = np.arange(1, 7, dtype=F32).reshape(1, 2, 3, 1)
    coords = np.array([[[[np.nan, 0.0], [-5.0, 0.0], [0.0, 1.0], [2.0, 0.5]]]], F32)  # pixels
    y = _sample(backend, x, coords, L.NHWC, False, False, False, P.CONSTANT, R.BILINEAR, 9.0).reshape(-1)
    assert np.isnan(y[0]) and y[1] == 9.0 and y[2] == 4.0 and y[3] == pytest.approx(4.5)
    x[0, 0, 2, 0] = np.inf  # a weight-0 tap reads nothing: no inf * 0
    y = _sample(backend, x, np.array([[[[1.0, 0.0]]]], F32), L.NHWC, False, False, False, P.ZERO, R.BILINEAR)
    assert y.reshape(-1).tolist() == [2.0]
    one = _sample(backend, np.full((1, 1, 1, 2), 3.0, F32), _grid(np.random.default_rng(0), 1, 2, 2), L.NHWC, True,
                  False, True, P.REFLECT, R.BILINEAR)
    assert (one == 3.0).all()  # a 1x1 image reflects everything onto its pixel


def test_sample_grid_float16(backend):
    rng = np.random.default_rng(6)
    x = rng.uniform(-2, 2, (1, 4, 4, 2)).astype(np.float16)
    coords = _grid(rng, 1, 3, 3).astype(np.float16)
    y = _sample(backend, x, coords, L.NHWC, True, False, False, P.ZERO, R.BILINEAR, dtype=mg.float16)
    assert y.dtype == np.float16
    ref = naive_sample_grid(x, coords.astype(np.float64), "NHWC", True, False, False, P.ZERO, R.BILINEAR)
    np.testing.assert_allclose(y, ref, rtol=3e-3, atol=3e-3)


@needs_torch
@pytest.mark.parametrize("tmode,mode", [("bilinear", R.BILINEAR), ("nearest", R.NEAREST)])
@pytest.mark.parametrize("tpad", list(TORCH_PAD))
def test_sample_grid_source_gradient_is_torch_autograd(tmode, mode, tpad):
    rng = np.random.default_rng(7)
    x, grid, dy = rng.standard_normal((2, 3, 5, 7)), rng.uniform(-1.4, 1.4, (2, 4, 6, 2)), \
        rng.standard_normal((2, 3, 4, 6))
    for ac in (False, True):
        g = mg.Graph()
        xp, gp, dyp = (g.placeholder(v.shape, mg.float64) for v in (x, grid, dy))
        kw = dict(nearest_rounding_mode=N.ROUND_TO_EVEN) if mode == R.NEAREST else {}
        y = g.sample_grid(xp, g.stop_gradient(gp), L.NCHW, True, False, ac, TORCH_PAD[tpad](ac), mode, **kw)
        dx = g.gradients(g.reduction_sum(y * dyp, axes=None), [xp])[xp]
        got = g.run({xp: x, gp: grid, dyp: dy}, [dx])[dx]
        xt = torch.from_numpy(x).requires_grad_()
        F.grid_sample(xt, torch.from_numpy(grid), mode=tmode, padding_mode=tpad,
                      align_corners=ac).backward(torch.from_numpy(dy))
        np.testing.assert_allclose(got, xt.grad.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("layout", ["NHWC", "NCHW"])
def test_sample_grid_source_gradient_finite_differences(layout):
    from gradcheck import check_gradients
    rng = np.random.default_rng(8)
    coords = rng.uniform(-1.3, 1.3, (2, 3, 4, 2))
    shape = (2, 4, 5, 3) if layout == "NHWC" else (2, 3, 4, 5)
    for pad in (P.CONSTANT, P.SYMMETRIC):
        check_gradients(lambda g, s: g.sample_grid(s, g.constant(coords), getattr(L, layout), True, True, False,
                                                   pad, R.BILINEAR, 0.5),
                        [rng.uniform(-1, 1, shape)], rng)


@needs_torch
@pytest.mark.parametrize("tpad", list(TORCH_PAD))
def test_sample_grid_coordinate_gradient_is_torch_autograd(tpad):
    rng = np.random.default_rng(9)
    x, grid, dy = rng.standard_normal((2, 3, 5, 7)), rng.uniform(-1.4, 1.4, (2, 4, 6, 2)), \
        rng.standard_normal((2, 3, 4, 6))
    for ac, (tmode, mode) in itertools.product((False, True), (("bilinear", R.BILINEAR), ("nearest", R.NEAREST))):
        g = mg.Graph()
        xp, gp, dyp = (g.placeholder(v.shape, mg.float64) for v in (x, grid, dy))
        y = g.sample_grid(xp, gp, L.NCHW, True, False, ac, TORCH_PAD[tpad](ac), mode)
        dg = g.gradients(g.reduction_sum(y * dyp, axes=None), [gp])[gp]
        got = g.run({xp: x, gp: grid, dyp: dy}, [dg])[dg]
        gt = torch.from_numpy(grid).requires_grad_()
        F.grid_sample(torch.from_numpy(x), gt, mode=tmode, padding_mode=tpad,
                      align_corners=ac).backward(torch.from_numpy(dy))
        np.testing.assert_allclose(got, gt.grad.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("pad", [P.CONSTANT, P.CLAMP_TO_EDGE, P.REFLECT, P.SYMMETRIC])
def test_sample_grid_coordinate_gradient_finite_differences(pad):
    """Pixel and relative coordinates too (away from the kinks at whole pixels and edges)."""
    from gradcheck import check_gradients
    rng = np.random.default_rng(10)
    src = rng.standard_normal((1, 4, 5, 2))
    coords = np.round(rng.uniform(-2, 6, (1, 3, 4, 2)) * 4) / 4 + 0.0625  # off whole and half pixels
    for normalize, relative in ((False, False), (False, True)):
        check_gradients(lambda g, c: g.sample_grid(g.constant(src), c, L.NHWC, normalize, relative, False, pad,
                                                   R.BILINEAR, 0.5), [coords], rng)


def test_sample_grid_declaration_and_swift_export():
    from minigraph.ops.registry import OPS
    d = OPS["sample_grid"]
    assert d.swift == ("sampleGrid(withSourceTensor:coordinateTensor:layout:normalizeCoordinates:relativeCoordinates:"
                       "alignCorners:paddingMode:samplingMode:constantValue:name:)")
    assert d.since == ("13.2", "16.3")
    g = mg.Graph()
    s, c = g.placeholder([1, 3, 3, 1], name="img"), g.placeholder([1, 2, 2, 2], name="xy")
    g.sample_grid(s, c, L.NHWC, True, False, True, P.REFLECT, R.BILINEAR, name="a")
    g.sample_grid(s, c, L.NCHW, False, True, False, P.CONSTANT, R.NEAREST, 2.5,
                  nearest_rounding_mode=N.ROUND_TO_EVEN, name="b")
    swift = g.to_swift()
    assert ('graph.sampleGrid(withSourceTensor: img, coordinateTensor: xy, layout: .NHWC, normalizeCoordinates: '
            'true, relativeCoordinates: false, alignCorners: true, paddingMode: .reflect, samplingMode: .bilinear, '
            'constantValue: 0.0, name: "a")') in swift
    assert ('layout: .NCHW, normalizeCoordinates: false, relativeCoordinates: true, alignCorners: false, '
            'paddingMode: .constant, nearestRoundingMode: .roundToEven, constantValue: 2.5, name: "b")') in swift


@pytest.mark.parametrize("call,err,match", [
    (lambda g: g.sample_grid(g.placeholder([1, 3, 3]), g.placeholder([1, 2, 2, 2]), L.NHWC, True, False, False,
                             P.ZERO, R.BILINEAR), mg.ShapeError, "needs rank 4"),
    (lambda g: g.sample_grid(g.placeholder([1, 3, 3, 1]), g.placeholder([1, 2, 2, 3]), L.NHWC, True, False, False,
                             P.ZERO, R.BILINEAR), mg.ShapeError, r"\[N, Hout, Wout, 2\]"),
    (lambda g: g.sample_grid(g.placeholder([2, 3, 3, 1]), g.placeholder([1, 2, 2, 2]), L.NHWC, True, False, False,
                             P.ZERO, R.BILINEAR), mg.ShapeError, "differ in N"),
    (lambda g: g.sample_grid(g.placeholder([1, 3, 3, 1]), g.placeholder([1, 2, 2, 2]), L.CHW, True, False, False,
                             P.ZERO, R.BILINEAR), mg.DescriptorError, "NHWC or NCHW"),
    (lambda g: g.sample_grid(g.placeholder([1, 3, 3, 1]), g.placeholder([1, 2, 2, 2]), L.NHWC, True, False, False,
                             P.PERIODIC, R.BILINEAR), mg.DescriptorError, "padding_mode"),
    (lambda g: g.sample_grid(g.placeholder([1, 3, 3, 1]), g.placeholder([1, 2, 2, 2]), L.NHWC, True, False, False,
                             P.ZERO, R.BILINEAR, nearest_rounding_mode=N.FLOOR), mg.DescriptorError,
     "sampling_mode=NEAREST"),
    (lambda g: g.sample_grid(g.placeholder([1, 3, 3, 1]), g.placeholder([1, 2, 2, 2]), L.NHWC, 1, False, False,
                             P.ZERO, R.BILINEAR), mg.DescriptorError, "must be a bool"),
    (lambda g: g.sample_grid(g.placeholder([1, 3, 3, 1], mg.int32), g.placeholder([1, 2, 2, 2]), L.NHWC, True, False,
                             False, P.ZERO, R.BILINEAR), mg.DTypeError, "int32"),
    (lambda g: g.sample_grid(g.placeholder([1, 0, 3, 1]), g.placeholder([1, 2, 2, 2]), L.NHWC, True, False, False,
                             P.ZERO, R.BILINEAR), mg.ShapeError, "empty H or W"),
])
def test_sample_grid_errors_name_the_op(call, err, match):
    g = mg.Graph()
    with pytest.raises(err, match=match) as e:
        call(g)
    assert "sample_grid" in str(e.value)

# ----------------------------------------------------------------------------- stencil
ST = mg.StencilOpDescriptor
_NP_MODES = {mg.PaddingMode.ZERO: "constant", mg.PaddingMode.CONSTANT: "constant", mg.PaddingMode.REFLECT: "reflect",
             mg.PaddingMode.SYMMETRIC: "symmetric", mg.PaddingMode.CLAMP_TO_EDGE: "edge"}


def naive_stencil(x, w, d):
    """The formula of ops/stencil.py, one window position at a time, in float64."""
    n4, k4 = x.shape[-4:], w.shape
    lo, hi, start, out = [], [], [], []
    for a in range(4):
        s, dl, n, k = d.strides[a], d.dilation_rates[a], n4[a], k4[a]
        e = dl * (k - 1) + 1
        if d.padding_style in (mg.PaddingStyle.EXPLICIT, mg.PaddingStyle.EXPLICIT_OFFSET):
            l, h = d.explicit_padding[2 * a], d.explicit_padding[2 * a + 1]
        elif d.padding_style == mg.PaddingStyle.TF_VALID:
            l = h = 0
        else:
            total = max((-(-n // s) - 1) * s + e - n, 0)
            l = total // 2 if d.padding_style == mg.PaddingStyle.TF_SAME else total - total // 2
            h = total - l
        o = d.offsets[a] if d.padding_style == mg.PaddingStyle.EXPLICIT_OFFSET else 0
        lo.append(l), hi.append(h), start.append(o), out.append((n + l + h - o - e) // s + 1)
    pads = [(0, 0)] * (x.ndim - 4) + list(zip(lo, hi))
    mode = _NP_MODES[mg.PaddingMode(d.boundary_mode)]
    kw = {"constant_values": d.padding_constant if d.boundary_mode == mg.PaddingMode.CONSTANT else 0.0} \
        if mode == "constant" else {}
    xp = np.pad(x.astype(np.float64), pads, mode=mode, **kw)
    red = mg.ReductionMode(d.reduction_mode)
    res = np.zeros(x.shape[:-4] + tuple(out), np.float64)
    for b in np.ndindex(*x.shape[:-4]):
        for i in np.ndindex(*out):
            vals = [xp[b + tuple(st + ii * s + jj * dl for st, ii, jj, s, dl in
                                 zip(start, i, j, d.strides, d.dilation_rates))] * w[j] for j in np.ndindex(*k4)]
            res[b + i] = {mg.ReductionMode.SUM: np.sum, mg.ReductionMode.PRODUCT: np.prod, mg.ReductionMode.MIN: np.min,
                          mg.ReductionMode.MAX: np.max, mg.ReductionMode.ARGUMENT_MIN: np.argmin,
                          mg.ReductionMode.ARGUMENT_MAX: np.argmax}[red](vals)
    return res


STENCILS = [  # reduction, style, boundary, strides, dilations, padding, offsets
    ("SUM", "EXPLICIT", "REFLECT", (1, 1, 2, 1), (1, 1, 1, 2), (1, 0, 0, 1, 1, 1, 0, 2), (0, 0, 0, 0)),
    ("PRODUCT", "TF_SAME", "CONSTANT", (1, 2, 1, 2), (1, 1, 1, 1), (0,) * 8, (0, 0, 0, 0)),
    ("MIN", "EXPLICIT_OFFSET", "SYMMETRIC", (1, 1, 1, 1), (1, 2, 1, 1), (0, 1, 2, 2, 0, 0, 1, 0), (0, 1, 0, 1)),
    ("MAX", "ONNX_SAME_LOWER", "CLAMP_TO_EDGE", (2, 1, 2, 1), (1, 1, 2, 1), (0,) * 8, (0, 0, 0, 0)),
    ("ARGUMENT_MIN", "TF_VALID", "ZERO", (1, 1, 1, 1), (1, 1, 1, 1), (0,) * 8, (0, 0, 0, 0)),
    ("ARGUMENT_MAX", "EXPLICIT", "ZERO", (1, 2, 1, 1), (1, 1, 1, 1), (1, 1, 1, 1, 1, 1, 1, 1), (0, 0, 0, 0)),
]


@pytest.mark.parametrize("case", STENCILS, ids=[c[0].lower() + "-" + c[1].lower() for c in STENCILS])
def test_stencil_matches_a_naive_loop(backend, case):
    red, style, boundary, strides, dil, pad, offs = case
    rng = np.random.default_rng(7)
    d = ST(reduction_mode=mg.ReductionMode[red], padding_style=mg.PaddingStyle[style],
           boundary_mode=mg.PaddingMode[boundary], strides=strides, dilation_rates=dil,
           explicit_padding=pad, offsets=offs, padding_constant=0.75)
    for shape in [(2, 3, 4, 5, 4), (3, 4, 3, 5)]:
        xv = (rng.uniform(0.5, 1.5, shape) * rng.choice([-1, 1], shape)).astype(F32)
        wv = rng.uniform(0.5, 1.5, (2, 1, 3, 2)).astype(F32)
        g = mg.Graph()
        x, w = g.placeholder(shape, name="x"), g.placeholder(wv.shape, name="w")
        y = g.stencil(x, w, d)
        got = g.run({x: xv, w: wv}, [y], backend=backend)[y]
        want = naive_stencil(xv, wv, d)
        assert got.shape == want.shape
        if red.startswith("ARGUMENT"):
            assert got.dtype == np.int32
            np.testing.assert_array_equal(got, want)
        else:
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@needs_torch
def test_stencil_sum_is_a_cross_correlation():
    """SUM with zero padding over a source [1, A, B, C, D] is conv3d over channels A with the
    window's first dimension spanning them: torch agrees."""
    rng = np.random.default_rng(3)
    xv = rng.standard_normal((2, 3, 6, 5, 7)).astype(F32)
    wv = rng.standard_normal((3, 2, 3, 2)).astype(F32)
    d = ST(strides=(1, 2, 1, 2), dilation_rates=(1, 1, 2, 1), explicit_padding=(0, 0, 1, 1, 0, 2, 1, 0))
    g = mg.Graph()
    y = g.stencil(g.constant(xv), g.constant(wv), d)
    got = g.run(target_tensors=[y])[y]
    xp = np.pad(xv, [(0, 0), (0, 0), (1, 1), (0, 2), (1, 0)])
    want = F.conv3d(torch.tensor(xp), torch.tensor(wv)[None], stride=(2, 1, 2), dilation=(1, 2, 1)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_stencil_nan_and_infinities(backend):
    xv = np.array([1.0, np.nan, -np.inf, 2.0, np.inf, -0.0], F32).reshape(1, 1, 1, 6)
    wv = np.ones((1, 1, 1, 2), F32)
    g = mg.Graph()
    x = g.placeholder(xv.shape, name="x")
    outs = [g.stencil(x, g.constant(wv), ST(reduction_mode=r)) for r in ("MIN", "MAX", "ARGUMENT_MAX", "SUM")]
    got = g.run({x: xv}, outs, backend=backend)
    np.testing.assert_array_equal(got[outs[0]].ravel(), [np.nan, np.nan, -np.inf, 2.0, -0.0])
    np.testing.assert_array_equal(got[outs[1]].ravel(), [np.nan, np.nan, 2.0, np.inf, np.inf])
    np.testing.assert_array_equal(got[outs[2]].ravel(), [1, 0, 1, 1, 0])
    np.testing.assert_array_equal(got[outs[3]].ravel(), [np.nan, np.nan, -np.inf, np.inf, np.inf])


def test_stencil_gradient_of_sum_and_refusals():
    g = mg.Graph()
    x = g.placeholder([1, 2, 3, 4], name="x")
    w = g.constant(np.ones((1, 1, 2, 2), F32))
    y = g.stencil(x, w, ST(reduction_mode="MAX"))
    with pytest.raises(mg.NotDifferentiableError, match=r"stencil op .*MAX has no gradient; only SUM"):
        g.gradients(g.reduction_sum(y), [x])
    with pytest.raises(mg.ShapeError, match=r"stencil op 'bad': source must have rank >= 4"):
        g.stencil(g.placeholder([3, 4], name="s"), w, name="bad")
    with pytest.raises(mg.ShapeError, match=r"stencil op .*weights must have rank 4"):
        g.stencil(x, g.constant(np.ones((2, 2), F32)))
    with pytest.raises(mg.DTypeError, match=r"stencil op .*floating type"):
        g.stencil(g.placeholder([1, 1, 2, 2], mg.int32, name="i"), g.constant(np.ones((1, 1, 1, 1), np.int32)))
    with pytest.raises(mg.ShapeError, match=r"stencil op .*shorter than the window"):
        g.stencil(x, g.constant(np.ones((1, 1, 5, 1), F32)))
    with pytest.raises(mg.ShapeError, match=r"stencil op .*REFLECT padding"):
        g.stencil(x, w, ST(explicit_padding=(0, 0, 0, 0, 3, 0, 0, 0), boundary_mode="REFLECT"))
    with pytest.raises(mg.DescriptorError, match=r"stencil op .*explicit_padding must be a list of 8 ints"):
        g.stencil(x, w, ST(explicit_padding=(1, 1)))
    with pytest.raises(mg.DescriptorError, match=r"stencil op .*strides=\[1, 0, 1, 1\] must hold values >= 1"):
        g.stencil(x, w, ST(strides=(1, 0, 1, 1)))


def test_stencil_descriptor_defaults_and_raw_values():
    d = ST()
    assert (d.reduction_mode, d.boundary_mode, d.padding_style) == (mg.ReductionMode.SUM, mg.PaddingMode.ZERO,
                                                                     mg.PaddingStyle.EXPLICIT)
    assert tuple(d.strides) == (1, 1, 1, 1) and tuple(d.explicit_padding) == (0,) * 8 and d.padding_constant == 0
    assert [m.value for m in mg.ReductionMode] == [0, 1, 2, 3, 4, 5]


# ----------------------------------------------------------------------------- non-maximum suppression
CM = mg.NonMaximumSuppressionCoordinateMode


def naive_nms(boxes, score, cls, iou_thr, score_thr, per_class):
    """Greedy NMS over [x0, y0, x1, y1] boxes in float64 (torchvision's ``nms`` / ``batched_nms``)."""
    cand = sorted((i for i in range(len(score)) if score[i] > score_thr), key=lambda i: (-score[i], i))
    kept = []
    for i in cand:
        for j in kept:
            if per_class and cls[i] != cls[j]:
                continue
            a, b = boxes[i].astype(float), boxes[j].astype(float)
            iw = max(min(a[2], b[2]) - max(a[0], b[0]), 0)
            ih = max(min(a[3], b[3]) - max(a[1], b[1]), 0)
            union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - iw * ih
            if union > 0 and iw * ih / union > iou_thr:
                break
        else:
            kept.append(i)
    return kept + [-1] * (len(score) - len(kept))


def _in_mode(xyxy, mode):
    x0, y0, x1, y1 = np.moveaxis(xyxy, -1, 0)
    return np.stack({CM.CORNERS_WIDTH_FIRST: [x0, y0, x1, y1], CM.CORNERS_HEIGHT_FIRST: [y1, x1, y0, x0],
                     CM.CENTERS_HEIGHT_FIRST: [(y0 + y1) / 2, (x0 + x1) / 2, y1 - y0, x1 - x0],
                     CM.CENTERS_WIDTH_FIRST: [(x0 + x1) / 2, (y0 + y1) / 2, x1 - x0, y1 - y0]}[mode], -1)


@pytest.mark.parametrize("mode", list(CM), ids=[m.name.lower() for m in CM])
@pytest.mark.parametrize("per_class", [False, True])
def test_nms_matches_a_naive_greedy_loop(backend, mode, per_class):
    rng = np.random.default_rng(11)
    for b, k in [(1, 1), (17, 3), (60, 5)]:
        xy = rng.integers(0, 20, (2, b, 2)) / 2
        xyxy = np.concatenate([xy, xy + rng.integers(1, 8, (2, b, 2)) / 2], -1).astype(F32)  # exact in float32
        scores = (rng.permutation(2 * b * k).reshape(2, b, k) / (2 * b * k)).astype(F32)
        g = mg.Graph()
        bx, sc = g.placeholder(xyxy.shape, name="b"), g.placeholder(scores.shape, name="s")
        y = g.non_maximum_suppression(bx, sc, 0.35, 0.25, per_class, mode)
        got = g.run({bx: _in_mode(xyxy, mode).astype(F32), sc: scores}, [y], backend=backend)[y]
        assert got.dtype == np.int32 and got.shape == (2, b)
        for n in range(2):
            want = naive_nms(xyxy[n], scores[n].max(1), scores[n].argmax(1), 0.35, 0.25, per_class)
            assert list(got[n]) == want


def test_nms_with_class_indices_and_edges(backend):
    boxes = np.array([[[0, 0, 2, 2], [0, 0, 2, 2], [0, 0, 2, 2], [5, 5, 6, 6], [5, 5, 5, 5]]], F32)
    scores = np.array([[[0.9], [0.8], [0.7], [np.nan], [0.95]]], F32)
    classes = np.array([[0, 1, 0, 0, 0]], np.int32)
    g = mg.Graph()
    b, s, c = (g.placeholder(v.shape, mg.as_dtype(v.dtype), name=n) for v, n in ((boxes, "b"), (scores, "s"),
                                                                                  (classes, "c")))
    outs = [g.non_maximum_suppression_with_class_indices(b, s, c, 0.5, 0.0, per, CM.CORNERS_WIDTH_FIRST)
            for per in (False, True)]
    outs.append(g.non_maximum_suppression(b, s, 0.5, 1.0, False))  # nothing above the score threshold
    outs.append(g.non_maximum_suppression(b, s, 1.0, float("-inf"), False))  # IoU 1 suppresses nothing
    got = g.run({b: boxes, s: scores, c: classes}, outs, backend=backend)
    # the empty box (area 0) has IoU 0 with everything; the NaN score is dropped
    assert list(got[outs[0]][0]) == [4, 0, -1, -1, -1]
    assert list(got[outs[1]][0]) == [4, 0, 1, -1, -1]
    assert list(got[outs[2]][0]) == [-1] * 5
    assert list(got[outs[3]][0]) == [4, 0, 1, 2, -1]


def test_nms_refuses_bad_inputs():
    g = mg.Graph()
    b, s = g.placeholder([1, 3, 4], name="b"), g.placeholder([1, 3, 2], name="s")
    with pytest.raises(mg.DescriptorError, match=r"non_maximum_suppression op .*iou_threshold 1.5 is outside"):
        g.non_maximum_suppression(b, s, 1.5, 0.0, False)
    with pytest.raises(mg.ShapeError, match=r"non_maximum_suppression op .*boxes must have shape \[N, B, 4\]"):
        g.non_maximum_suppression(g.placeholder([1, 3, 5], name="b5"), s, 0.5, 0.0, False)
    with pytest.raises(mg.ShapeError, match=r"differ in dimension 1"):
        g.non_maximum_suppression(b, g.placeholder([1, 4, 2], name="s4"), 0.5, 0.0, False)
    with pytest.raises(mg.DTypeError, match=r"non_maximum_suppression op .*float32"):
        g.non_maximum_suppression(b, g.placeholder([1, 3, 2], mg.float16, name="h"), 0.5, 0.0, False)
    with pytest.raises(mg.ShapeError, match=r"with class indices the scores must have shape \[N, B, 1\]"):
        g.non_maximum_suppression_with_class_indices(b, s, g.placeholder([1, 3], mg.int32, name="c"), 0.5, 0.0, True)
    with pytest.raises(mg.DescriptorError, match=r"coordinate_mode=7 is not a NonMaximumSuppressionCoordinateMode"):
        g.non_maximum_suppression(b, s, 0.5, 0.0, False, 7)
    assert [m.value for m in CM] == [0, 1, 2, 3]
    from minigraph.ops import OPS
    assert not OPS["non_maximum_suppression"].differentiable  # an index result
    assert not OPS["non_maximum_suppression_with_class_indices"].differentiable
