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
