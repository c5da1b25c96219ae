"""im_to_col and col_to_im on every backend: against naive loops written from the layouts in
ops/image.py, PyTorch's unfold / fold, the adjoint identity and finite differences."""
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
