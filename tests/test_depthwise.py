"""Depthwise 2D convolution family: forward, data gradient, weights gradient (docs/mpsgraph-spec.md §2-§4).

References share no code with the kernels: ``naive_conv`` loops written from §4.1, padding tables
from §3 typed in by hand, finite differences, the adjoint identity, and PyTorch / JAX when
installed.
"""
from __future__ import annotations

import functools

import numpy as np
import pytest

import minigraph as mg
from minigraph.descriptors import (Convolution2DOpDescriptor, DepthwiseConvolution2DOpDescriptor,
                                   PaddingStyle, TensorNamedDataLayout)
from minigraph.ops.registry import OPS

import naive_conv as nv
from gradcheck import central_differences

D = DepthwiseConvolution2DOpDescriptor
P = PaddingStyle
L = TensorNamedDataLayout
STYLES = ("EXPLICIT", "TF_VALID", "TF_SAME", "ONNX_SAME_LOWER")
LAYOUTS = [("NCHW", "OIHW"), ("NCHW", "HWIO"), ("NHWC", "OIHW"), ("NHWC", "HWIO")]


def f32(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


# ----------------------------------------------------------------------------- layout helpers (test-side)
def to_data(a, layout):
    """NCHW array -> layout."""
    return np.ascontiguousarray(a if layout == "NCHW" else a.transpose(0, 2, 3, 1))


def from_data(a, layout):
    return a if layout == "NCHW" else a.transpose(0, 3, 1, 2)


def to_weights(w, layout):
    """OIHW [M, C, kH, kW] -> layout (HWIO [kH, kW, C, M])."""
    return np.ascontiguousarray(w if layout == "OIHW" else w.transpose(2, 3, 1, 0))


def from_weights(w, layout):
    return w if layout == "OIHW" else w.transpose(3, 2, 0, 1)


def shape_in(layout, nchw):
    n, c, h, w = nchw
    return {"NCHW": (n, c, h, w), "NHWC": (n, h, w, c), "OIHW": (n, c, h, w), "HWIO": (h, w, c, n)}[layout]


def make_desc(style, stride=(1, 1), dilation=(1, 1), pads=(0, 0, 0, 0), layouts=("NCHW", "OIHW")):
    """pads = (top, bottom, left, right) as in naive_conv."""
    t, b, lft, r = pads
    return D(stride_in_x=stride[1], stride_in_y=stride[0], dilation_rate_in_x=dilation[1],
             dilation_rate_in_y=dilation[0], padding_left=lft, padding_right=r, padding_top=t,
             padding_bottom=b, padding_style=P[style], data_layout=L[layouts[0]], weights_layout=L[layouts[1]])


def ref_pads(style, H, W, kH, kW, stride, dilation, pads):
    pt, pb, oh = nv.pads_for(style, H, kH, stride[0], dilation[0], pads[0], pads[1])
    pl, pr, ow = nv.pads_for(style, W, kW, stride[1], dilation[1], pads[2], pads[3])
    return (pt, pb, pl, pr), (oh, ow)


def run_family(backend, desc, x, w, dy, layouts):
    """All three ops in one graph fed from placeholders; arrays in the given layouts."""
    g = mg.Graph()
    px = g.placeholder(x.shape, mg.as_dtype(x.dtype), name="x")
    pw = g.placeholder(w.shape, mg.as_dtype(w.dtype), name="w")
    pdy = g.placeholder(dy.shape, mg.as_dtype(dy.dtype), name="dy")
    y = g.depthwise_convolution_2d(px, pw, descriptor=desc, name="fwd")
    dx = g.depthwise_convolution_2d_data_gradient(pdy, pw, output_shape=px.shape, descriptor=desc, name="dx")
    dw = g.depthwise_convolution_2d_weights_gradient(pdy, px, output_shape=pw.shape, descriptor=desc, name="dw")
    assert y.shape == dy.shape and dx.shape == x.shape and dw.shape == w.shape
    before = [a.copy() for a in (x, w, dy)]
    r = g.run({px: x, pw: w, pdy: dy}, [y, dx, dw], backend=backend)
    for a, b in zip((x, w, dy), before):  # feeds are never mutated
        np.testing.assert_array_equal(a, b)
    return r[y], r[dx], r[dw]


# ----------------------------------------------------------------------------- the naive matrix
# (N, C, H, W, kH, kW, stride, dilation, explicit pads (top, bottom, left, right)); the explicit pads
# are also set (and must be ignored) for the other styles.
CASES = {
    "odd-3x3": (2, 3, 5, 7, 3, 3, (1, 1), (1, 1), (1, 1, 1, 1)),
    "even-asym-stride-dil": (2, 2, 6, 8, 3, 2, (2, 1), (1, 2), (0, 2, 1, 0)),
    "stride>kernel": (2, 3, 7, 9, 2, 2, (3, 4), (1, 1), (1, 0, 0, 2)),
    "1x1-stride2": (2, 3, 5, 6, 1, 1, (2, 2), (1, 1), (1, 0, 0, 1)),
    "dilated": (2, 2, 8, 7, 3, 2, (1, 1), (2, 3), (2, 1, 0, 3)),
    "batch1": (1, 2, 9, 5, 2, 3, (2, 2), (3, 1), (3, 3, 0, 1)),
}


@functools.lru_cache(maxsize=None)
def naive_case(case, style, M):
    """Random NCHW/OIHW data and the naive results, cached so every backend and layout shares them."""
    N, C, H, W, kH, kW, stride, dilation, epads = CASES[case]
    pads, (OH, OW) = ref_pads(style, H, W, kH, kW, stride, dilation, epads)
    rng = np.random.default_rng(abs(hash((case, style, M))) % 2**32)
    x = rng.standard_normal((N, C, H, W)).astype(np.float32)
    w = rng.standard_normal((M, C, kH, kW)).astype(np.float32)
    dy = rng.standard_normal((N, C * M, OH, OW)).astype(np.float32)
    y = nv.depthwise_forward(x, w, stride, dilation, pads)
    dx = nv.depthwise_data_grad(dy, w, x.shape, stride, dilation, pads)
    dw = nv.depthwise_weights_grad(dy, x, w.shape, stride, dilation, pads)
    return x, w, dy, y, dx, dw


@pytest.mark.parametrize("M", [1, 3])
@pytest.mark.parametrize("layouts", LAYOUTS, ids=lambda p: "/".join(p))
@pytest.mark.parametrize("style", STYLES)
@pytest.mark.parametrize("case", list(CASES))
def test_matches_naive_loops(backend, case, style, layouts, M):
    N, C, H, W, kH, kW, stride, dilation, epads = CASES[case]
    x, w, dy, y_ref, dx_ref, dw_ref = naive_case(case, style, M)
    desc = make_desc(style, stride, dilation, epads, layouts)
    dl, wl = layouts
    y, dx, dw = run_family(backend, desc, to_data(x, dl), to_weights(w, wl), to_data(dy, dl), layouts)
    tol = dict(rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(from_data(y, dl), y_ref, **tol)
    np.testing.assert_allclose(from_data(dx, dl), dx_ref, **tol)
    np.testing.assert_allclose(from_weights(dw, wl), dw_ref, **tol)
    assert y.dtype == dx.dtype == dw.dtype == np.float32


@pytest.mark.parametrize("style", STYLES)
@pytest.mark.parametrize("nhwc,hwio", [(False, False), (True, True), (False, True), (True, False)])
@pytest.mark.parametrize("M,s,d,H,W", [(1, (1, 1), (1, 1), 6, 5), (3, (2, 3), (1, 2), 7, 8)])
def test_forward_against_naive_and_gradients_through_the_adjoint(backend, style, nhwc, hwio, M, s, d, H, W):
    """The forward op against the naive loop; both gradient ops through the adjoint identity with
    that naive forward, and the weights gradient at one tap as <dy, F(x, e_tap)>."""
    rng = np.random.default_rng(hash((style, nhwc, hwio, M)) % 2**32)
    N, C, KH, KW = 2, 3, 3, 2
    dl, wl = ("NHWC" if nhwc else "NCHW"), ("HWIO" if hwio else "OIHW")
    desc = D(stride_in_x=s[1], stride_in_y=s[0], dilation_rate_in_x=d[1], dilation_rate_in_y=d[0],
             padding_style=P[style], data_layout=L[dl], weights_layout=L[wl])
    if style == "EXPLICIT":
        desc.set_explicit_padding(2, 0, 1, 3)  # asymmetric
    pads, _ = ref_pads(style, H, W, KH, KW, s, d, (1, 3, 2, 0))
    xv = to_data(f32(rng, N, C, H, W), dl)
    wv = to_weights(f32(rng, M, C, KH, KW), wl)

    def naive(weights):  # the naive forward in the test's layouts
        return to_data(nv.depthwise_forward(from_data(xv, dl), from_weights(weights, wl), s, d, pads), dl)

    yref = naive(wv)
    g = mg.Graph()
    x = g.placeholder(shape=list(xv.shape), dtype=mg.float32, name="x")
    w = g.placeholder(shape=list(wv.shape), dtype=mg.float32, name="w")
    dyp = g.placeholder(shape=list(yref.shape), dtype=mg.float32, name="dy")
    y = g.depthwise_convolution_2d(x, w, descriptor=desc, name="dw")
    assert y.shape == yref.shape
    dx = g.depthwise_convolution_2d_data_gradient(dyp, w, output_shape=x.shape, descriptor=desc)
    dw = g.depthwise_convolution_2d_weights_gradient(dyp, x, output_shape=w.shape, descriptor=desc)
    assert dx.shape == x.shape and dw.shape == w.shape
    dyv = f32(rng, *yref.shape)
    r = g.run({x: xv, w: wv, dyp: dyv}, [y, dx, dw], backend=backend)
    np.testing.assert_allclose(r[y], yref, rtol=1e-4, atol=1e-4)
    # adjoint identity against the naive forward: <dy, F(x, W)> = <D(dy, W), x> = <G(dy, x), W>
    lhs = float(np.sum(dyv.astype(np.float64) * yref))
    assert abs(float(np.sum(r[dx] * xv)) - lhs) <= 1e-3 * (1 + abs(lhs))
    assert abs(float(np.sum(r[dw] * wv)) - lhs) <= 1e-3 * (1 + abs(lhs))
    # F is linear in W, so G(dy, x)[tap] = <dy, F(x, e_tap)>
    basis = np.zeros_like(wv, dtype=np.float64)
    idx = (0, 0, 0, 0)
    basis[idx] = 1.0
    ref = float(np.sum(dyv * naive(basis)))
    assert abs(r[dw][idx] - ref) <= 1e-3 * (1 + abs(ref))


@pytest.mark.parametrize("style,stride,layout", [
    (mg.PaddingStyle.TF_SAME, 2, mg.TensorNamedDataLayout.NCHW),
    (mg.PaddingStyle.TF_VALID, 1, mg.TensorNamedDataLayout.NHWC),
    (mg.PaddingStyle.EXPLICIT, 1, mg.TensorNamedDataLayout.NCHW),
])
def test_forward_and_autodiff_gradients_agree_with_the_numpy_backend(backend, rng, style, stride, layout):
    """The forward op and the gradients autodiff inserts give the numpy backend's results on every
    backend, in float32; the forward also matches the naive loop, with sizes and paddings worked
    out by hand here."""
    nchw = layout == mg.TensorNamedDataLayout.NCHW
    n, c, h, w_ = 2, 3, 7, 6
    desc = D(stride_in_x=stride, stride_in_y=stride, padding_style=style, data_layout=layout, weights_layout=L.OIHW)
    if style == mg.PaddingStyle.EXPLICIT:
        desc.padding_left, desc.padding_right, desc.padding_top, desc.padding_bottom = 1, 0, 2, 1
    xv = f32(rng, n, c, h, w_)
    wv = f32(rng, 1, c, 3, 3)
    g = mg.Graph()
    x = g.placeholder(shape=xv.shape if nchw else (n, h, w_, c), dtype=mg.float32, name="x")
    w = g.placeholder(shape=wv.shape, dtype=mg.float32, name="w")
    y = g.depthwise_convolution_2d(x, w, descriptor=desc, name="dw")
    loss = g.reduction_sum(g.multiplication(y, y), axes=None, name="loss")
    gr = g.gradients(loss, [x, w])
    outs = [y, gr[x], gr[w]]
    feeds = {x: xv if nchw else np.ascontiguousarray(xv.transpose(0, 2, 3, 1)), w: wv}
    got = g.run(feeds, outs, backend=backend)
    ref = g.run(feeds, outs, backend="numpy")
    for t in outs:
        np.testing.assert_allclose(got[t], ref[t], rtol=1e-4, atol=1e-4)
        assert got[t].dtype == np.float32
    # the forward op against the naive loop
    if style == mg.PaddingStyle.TF_SAME:
        oh, ow = -(-h // stride), -(-w_ // stride)
        pt = max((oh - 1) * stride + 3 - h, 0) // 2
        pl = max((ow - 1) * stride + 3 - w_, 0) // 2
    elif style == mg.PaddingStyle.TF_VALID:
        oh, ow, pt, pl = (h - 3) // stride + 1, (w_ - 3) // stride + 1, 0, 0
    else:
        oh, ow, pt, pl = (h + 3 - 3) // stride + 1, (w_ + 1 - 3) // stride + 1, 2, 1
    top, bottom, out_h = nv.pads_for(style.name, h, 3, stride, 1, 2, 1)
    left, right, out_w = nv.pads_for(style.name, w_, 3, stride, 1, 1, 0)
    assert (out_h, out_w, top, left) == (oh, ow, pt, pl)
    yn = nv.depthwise_forward(xv, wv, (stride, stride), (1, 1), (top, bottom, left, right))
    gy = got[outs[0]] if nchw else got[outs[0]].transpose(0, 3, 1, 2)
    np.testing.assert_allclose(gy, yn, rtol=1e-5, atol=1e-5)


def test_output_channel_is_c_times_M_plus_m():
    g = mg.Graph()
    C, M = 2, 3
    xv = np.zeros((1, C, 1, 1), np.float32)
    xv[0, :, 0, 0] = [10, 20]
    wv = np.arange(M * C, dtype=np.float32).reshape(M, C, 1, 1) + 1  # W[m, c]
    y = g.depthwise_convolution_2d(g.constant(xv), g.constant(wv),
                                   descriptor=mg.DepthwiseConvolution2DOpDescriptor())
    assert y.shape == (1, C * M, 1, 1)
    r = g.run({}, [y])[y].reshape(-1)
    want = [xv[0, c, 0, 0] * wv[m, c, 0, 0] for c in range(C) for m in range(M)]
    np.testing.assert_allclose(r, want)


def test_oihw_o_is_the_channel_multiplier():
    """OIHW 'O' is the multiplier: [M, C, kH, kW]; PyTorch-shaped [C*M, 1, kH, kW] is refused, naming the op."""
    g = mg.Graph()
    x = g.placeholder([1, 2, 6, 6])
    y = g.depthwise_convolution_2d(x, g.placeholder([3, 2, 3, 3]))
    assert y.shape == (1, 6, 4, 4)
    with pytest.raises(mg.MiniGraphError) as e:
        g.depthwise_convolution_2d(x, g.placeholder([6, 1, 3, 3]), name="trap")
    assert "trap" in str(e.value) and "depthwise_convolution_2d" in str(e.value)


@pytest.mark.parametrize("layouts", [("NCHW", "OIHW"), ("NHWC", "HWIO")], ids=lambda p: "/".join(p))
def test_taps_entirely_in_padding(backend, layouts):
    """Large dilation and padding: some taps never read the input (their dW is 0, their rows of y too)."""
    rng = np.random.default_rng(8)
    N, C, M, H, W, kH, kW = 2, 2, 2, 2, 3, 3, 2
    stride, dilation, pads = (1, 2), (5, 3), (6, 6, 3, 1)
    _, (OH, OW) = ref_pads("EXPLICIT", H, W, kH, kW, stride, dilation, pads)
    x = rng.standard_normal((N, C, H, W)).astype(np.float32)
    w = rng.standard_normal((M, C, kH, kW)).astype(np.float32)
    dy = rng.standard_normal((N, C * M, OH, OW)).astype(np.float32)
    dl, wl = layouts
    y, dx, dw = run_family(backend, make_desc("EXPLICIT", stride, dilation, pads, layouts),
                           to_data(x, dl), to_weights(w, wl), to_data(dy, dl), layouts)
    tol = dict(rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(from_data(y, dl), nv.depthwise_forward(x, w, stride, dilation, pads), **tol)
    np.testing.assert_allclose(from_data(dx, dl), nv.depthwise_data_grad(dy, w, x.shape, stride, dilation, pads), **tol)
    dw_ref = nv.depthwise_weights_grad(dy, x, w.shape, stride, dilation, pads)
    assert (dw_ref == 0).any() and (dw_ref != 0).any()
    np.testing.assert_allclose(from_weights(dw, wl), dw_ref, **tol)


# ----------------------------------------------------------------------------- §3 worked examples
# H = 6, k = 3, s = 2, d = 1 (and the two extra lines of §3), typed in from the spec's table.
WORKED = [
    ("EXPLICIT", 6, 3, 2, (1, 1), (1, 1), 3),
    ("TF_VALID", 6, 3, 2, (1, 1), (0, 0), 2),
    ("TF_SAME", 6, 3, 2, (0, 0), (0, 1), 3),
    ("ONNX_SAME_LOWER", 6, 3, 2, (0, 0), (1, 0), 3),
    ("TF_SAME", 6, 2, 1, (0, 0), (0, 1), 6),
    ("ONNX_SAME_LOWER", 6, 2, 1, (0, 0), (1, 0), 6),
    ("TF_SAME", 7, 3, 2, (0, 0), (1, 1), 4),
    ("ONNX_SAME_LOWER", 7, 3, 2, (0, 0), (1, 1), 4),
    ("TF_VALID", 7, 3, 2, (0, 0), (0, 0), 3),
]


@pytest.mark.parametrize("style,H,k,s,given,want_pads,want_out", WORKED)
def test_worked_padding_examples(style, H, k, s, given, want_pads, want_out):
    """The op's output size and the padding it uses (seen through the numbers) match §3's table."""
    assert nv.pads_for(style, H, k, s, 1, *given) == (*want_pads, want_out)
    rng = np.random.default_rng(H * 10 + k)
    x = rng.standard_normal((1, 2, H, H)).astype(np.float32)
    w = rng.standard_normal((1, 2, k, k)).astype(np.float32)
    g = mg.Graph()
    desc = make_desc(style, (s, s), (1, 1), (given[0], given[1], given[0], given[1]))
    y = g.depthwise_convolution_2d(x, w, descriptor=desc)
    assert y.shape == (1, 2, want_out, want_out)
    pads = (want_pads[0], want_pads[1], want_pads[0], want_pads[1])
    want = nv.depthwise_forward(x, w, (s, s), (1, 1), pads)
    np.testing.assert_allclose(g.run({}, [y])[y], want, rtol=1e-5, atol=1e-5)
    # the geometry the kernels use agrees too
    from minigraph.ops.geometry import ConvGeometry

    geo = ConvGeometry.for_depthwise_2d(desc.copy(), x.shape, w.shape)
    assert (geo.padding_before[0], geo.padding_after[0], geo.output_size[0]) == (*want_pads, want_out)
    # a ramp through a kernel of ones along H only (stride along H only): the first output tells
    # the padding before, the last the padding after
    d1 = D(stride_in_y=s, padding_style=P[style])
    if style == "EXPLICIT":
        d1.padding_top, d1.padding_bottom = given
    ramp = np.arange(1, H + 1, dtype=np.float32).reshape(1, 1, H, 1)
    y1 = g.depthwise_convolution_2d(g.constant(ramp), g.constant(np.ones((1, 1, k, 1), np.float32)), descriptor=d1)
    assert y1.shape == (1, 1, want_out, 1)
    xp = np.concatenate([np.zeros(want_pads[0]), np.arange(1, H + 1), np.zeros(want_pads[1])])
    np.testing.assert_allclose(g.run({}, [y1])[y1].reshape(-1), [xp[o * s:o * s + k].sum() for o in range(want_out)])
    # and the width does not matter (stride 1 along W, a k x 1 kernel on 4 columns)
    d2 = D(stride_in_y=s, stride_in_x=1, padding_style=P[style])
    if style == "EXPLICIT":
        d2.padding_top, d2.padding_bottom = given
    y2 = g.depthwise_convolution_2d(g.placeholder([1, 1, H, 4]), g.placeholder([1, 1, k, 1]), descriptor=d2)
    assert y2.shape[2] == want_out


def test_same_styles_put_the_odd_padding_on_opposite_ends(backend):
    x = np.arange(1, 7, dtype=np.float32).reshape(1, 1, 6, 1)
    ones = np.ones((1, 1, 2, 1), np.float32)
    got = {}
    for style in ("TF_SAME", "ONNX_SAME_LOWER"):
        g = mg.Graph()
        d = mg.DepthwiseConvolution2DOpDescriptor(padding_style=mg.PaddingStyle[style])
        xp = g.placeholder([1, 1, 6, 1], mg.float32)
        y = g.depthwise_convolution_2d(xp, g.constant(ones), descriptor=d)
        got[style] = g.run({xp: x}, [y], backend=backend)[y].ravel()
    np.testing.assert_allclose(got["TF_SAME"], [3, 5, 7, 9, 11, 6])
    np.testing.assert_allclose(got["ONNX_SAME_LOWER"], [1, 3, 5, 7, 9, 11])


def test_explicit_offset_rejected_with_reason():
    g = mg.Graph()
    x = g.placeholder([1, 2, 5, 5], mg.float32, name="x")
    w = g.placeholder([1, 2, 3, 3], mg.float32, name="w")
    with pytest.raises(mg.MiniGraphError) as ei:
        desc = mg.DepthwiseConvolution2DOpDescriptor(padding_style=mg.PaddingStyle.EXPLICIT_OFFSET)
        g.depthwise_convolution_2d(x, w, descriptor=desc, name="dw_off")
    m = str(ei.value)
    assert "EXPLICIT_OFFSET" in m and "dw_off" in m
    assert len(m) > 60  # says why, not just "invalid"


def test_output_shape_is_needed_for_stride():
    """With stride 2, inputs of size 5 and 6 both give 3 outputs: only output_shape tells dx's size."""
    g = mg.Graph()
    desc = make_desc("TF_SAME", (2, 2))
    w = np.random.default_rng(0).standard_normal((1, 1, 3, 3)).astype(np.float32)
    dy = np.random.default_rng(1).standard_normal((1, 1, 3, 3)).astype(np.float32)
    for H in (5, 6):
        dx = g.depthwise_convolution_2d_data_gradient(dy, w, output_shape=[1, 1, H, H], descriptor=desc)
        assert dx.shape == (1, 1, H, H)
        pads, _ = ref_pads("TF_SAME", H, H, 3, 3, (2, 2), (1, 1), (0, 0, 0, 0))
        want = nv.depthwise_data_grad(dy, w, (1, 1, H, H), (2, 2), (1, 1), pads)
        np.testing.assert_allclose(g.run({}, [dx])[dx], want, rtol=1e-5, atol=1e-5)
    # the forward op: both sizes give the same output size
    d = D(stride_in_x=2, stride_in_y=2, padding_style=P.TF_SAME)
    g = mg.Graph()
    outs = {H: g.depthwise_convolution_2d(g.placeholder([1, 1, H, H]), g.placeholder([1, 1, 3, 3]),
                                          descriptor=d).shape for H in (5, 6)}
    assert outs[5] == outs[6] == (1, 1, 3, 3)
    dyp, wp = g.placeholder([1, 1, 3, 3]), g.placeholder([1, 1, 3, 3])
    for H in (5, 6):
        assert g.depthwise_convolution_2d_data_gradient(dyp, wp, output_shape=[1, 1, H, H], descriptor=d).shape \
            == (1, 1, H, H)
    # 7 and 8 -> 4, with two channels
    for H in (7, 8):
        g = mg.Graph()
        dyp = g.placeholder([1, 2, 4, 4], mg.float32, name="dy")
        wp = g.placeholder([1, 2, 3, 3], mg.float32, name="w")
        dx = g.depthwise_convolution_2d_data_gradient(dyp, wp, output_shape=[1, 2, H, H], descriptor=d)
        assert dx.shape == (1, 2, H, H)


# ----------------------------------------------------------------------------- adjoint identity
@pytest.mark.parametrize("layouts", LAYOUTS, ids=lambda p: "/".join(p))
@pytest.mark.parametrize("style", STYLES)
def test_adjoint_identity(backend, style, layouts):
    """<dy, F(x,W)> = <D(dy,W), x> = <G(dy,x), W> on random data."""
    rng = np.random.default_rng(7)
    N, C, M, H, W, kH, kW = 2, 3, 2, 9, 8, 3, 2
    stride, dilation, epads = (2, 1), (1, 2), (2, 0, 1, 3)
    _, (OH, OW) = ref_pads(style, H, W, kH, kW, stride, dilation, epads)
    dl, wl = layouts
    x = rng.standard_normal(shape_in(dl, (N, C, H, W))).astype(np.float32)
    w = rng.standard_normal(shape_in(wl, (M, C, kH, kW))).astype(np.float32)
    dy = rng.standard_normal(shape_in(dl, (N, C * M, OH, OW))).astype(np.float32)
    y, dx, dw = run_family(backend, make_desc(style, stride, dilation, epads, layouts), x, w, dy, layouts)
    a = np.vdot(dy.astype(np.float64), y)
    b = np.vdot(dx.astype(np.float64), x)
    c = np.vdot(dw.astype(np.float64), w)
    scale = np.abs(dy).sum() * np.abs(x).max() * np.abs(w).max() * 1e-6
    assert abs(a - b) < scale and abs(a - c) < scale, (a, b, c)
    assert abs(a) > 1.0  # the identity is not satisfied trivially


# ----------------------------------------------------------------------------- PyTorch oracle
@pytest.mark.parametrize("M", [1, 2])
@pytest.mark.parametrize("style", STYLES)
def test_pytorch_oracle(backend, style, M):
    torch = pytest.importorskip("torch", reason="needs torch, in the oracles extra: pip install -e '.[oracles]'")
    F = torch.nn.functional
    rng = np.random.default_rng(11 + M)
    N, C, H, W, kH, kW = 2, 3, 8, 7, 3, 2
    stride, dilation, epads = (2, 1), (1, 2), (0, 2, 3, 1)
    pads, (OH, OW) = ref_pads(style, H, W, kH, kW, stride, dilation, epads)
    x = rng.standard_normal((N, C, H, W)).astype(np.float32)
    w = rng.standard_normal((M, C, kH, kW)).astype(np.float32)
    dy = rng.standard_normal((N, C * M, OH, OW)).astype(np.float32)
    y, dx, dw = run_family(backend, make_desc(style, stride, dilation, epads), x, w, dy, ("NCHW", "OIHW"))
    # PyTorch weights [C*M, 1, kH, kW] are OIHW [M, C, kH, kW] with axes 0 and 1 swapped
    wt = torch.from_numpy(np.ascontiguousarray(w.transpose(1, 0, 2, 3)).reshape(C * M, 1, kH, kW))
    pt, pb, pl, pr = pads
    xp = F.pad(torch.from_numpy(x), (pl, pr, pt, pb))  # torch pads symmetrically only: pre-pad
    kw = dict(stride=stride, padding=0, dilation=dilation, groups=C)
    y_t = F.conv2d(xp, wt, **kw)
    dyt = torch.from_numpy(dy)
    dxp = torch.nn.grad.conv2d_input(xp.shape, wt, dyt, **kw)
    dw_t = torch.nn.grad.conv2d_weight(xp, wt.shape, dyt, **kw)
    tol = dict(rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(y, y_t.numpy(), **tol)
    np.testing.assert_allclose(dx, dxp.numpy()[:, :, pt:pt + H, pl:pl + W], **tol)
    np.testing.assert_allclose(dw, dw_t.numpy().reshape(C, M, kH, kW).transpose(1, 0, 2, 3), **tol)


@pytest.mark.parametrize("style", ["TF_VALID", "TF_SAME", "EXPLICIT"])
def test_pytorch_autograd_oracle_float64(style):
    torch = pytest.importorskip("torch", reason="needs torch, in the oracles extra: pip install -e '.[oracles]'")
    rng = np.random.default_rng(3)
    N, C, M, H, W, k = 2, 3, 2, 7, 6, 3
    xv, wv, = rng.standard_normal((N, C, H, W)), rng.standard_normal((M, C, k, k))
    desc = mg.DepthwiseConvolution2DOpDescriptor(stride_in_x=2, stride_in_y=1, dilation_rate_in_x=1,
                                                 dilation_rate_in_y=2, padding_style=mg.PaddingStyle[style])
    if style == "EXPLICIT":
        desc.set_explicit_padding(1, 2, 2, 0)
    g = mg.Graph()
    x = g.placeholder(list(xv.shape), mg.float64, name="x")
    w = g.placeholder(list(wv.shape), mg.float64, name="w")
    y = g.depthwise_convolution_2d(x, w, descriptor=desc, name="dw")
    dyv = rng.standard_normal(y.shape)
    dyp = g.placeholder(list(y.shape), mg.float64, name="dy")
    dx = g.depthwise_convolution_2d_data_gradient(dyp, w, output_shape=x.shape, descriptor=desc)
    dw = g.depthwise_convolution_2d_weights_gradient(dyp, x, output_shape=w.shape, descriptor=desc)
    r = g.run({x: xv, w: wv, dyp: dyv}, [y, dx, dw])
    # torch weights [C*M, 1, kH, kW] with channel c*M + m  <->  OIHW [M, C, kH, kW]
    tw = torch.tensor(wv.transpose(1, 0, 2, 3).reshape(C * M, 1, k, k), requires_grad=True)
    tx = torch.tensor(xv, requires_grad=True)
    if style == "EXPLICIT":
        txp = torch.nn.functional.pad(tx, (1, 2, 2, 0))
    elif style == "TF_VALID":
        txp = tx
    else:
        ph = nv.pads_for("TF_SAME", H, k, 1, 2)[:2]
        pw = nv.pads_for("TF_SAME", W, k, 2, 1)[:2]
        txp = torch.nn.functional.pad(tx, (pw[0], pw[1], ph[0], ph[1]))
    ty = torch.nn.functional.conv2d(txp, tw, stride=(1, 2), dilation=(2, 1), groups=C)
    np.testing.assert_allclose(r[y], ty.detach().numpy(), rtol=1e-10, atol=1e-10)
    ty.backward(torch.tensor(dyv))
    np.testing.assert_allclose(r[dx], tx.grad.numpy(), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(r[dw], tw.grad.numpy().reshape(C, M, k, k).transpose(1, 0, 2, 3),
                               rtol=1e-10, atol=1e-10)


# ----------------------------------------------------------------------------- JAX oracle
@pytest.mark.parametrize("layouts", [("NCHW", "OIHW"), ("NHWC", "HWIO")], ids=lambda p: "/".join(p))
@pytest.mark.parametrize("style", ["TF_VALID", "TF_SAME", "ONNX_SAME_LOWER", "EXPLICIT"])
def test_jax_oracle(backend, style, layouts):
    jax = pytest.importorskip("jax", reason="needs jax, in the oracles extra: pip install -e '.[oracles]'")
    lax = jax.lax
    rng = np.random.default_rng(23)
    N, C, M, H, W, kH, kW = 2, 3, 2, 7, 8, 2, 3
    stride, dilation, epads = (2, 3), (2, 1), (1, 2, 0, 1)
    pads, (OH, OW) = ref_pads(style, H, W, kH, kW, stride, dilation, epads)
    dl, wl = layouts
    x = rng.standard_normal(shape_in(dl, (N, C, H, W))).astype(np.float32)
    w = rng.standard_normal(shape_in(wl, (M, C, kH, kW))).astype(np.float32)
    dy = rng.standard_normal(shape_in(dl, (N, C * M, OH, OW))).astype(np.float32)
    y, dx, dw = run_family(backend, make_desc(style, stride, dilation, epads, layouts), x, w, dy, layouts)
    padding = {"TF_VALID": "VALID", "TF_SAME": "SAME", "ONNX_SAME_LOWER": "SAME_LOWER",
               "EXPLICIT": [(pads[0], pads[1]), (pads[2], pads[3])]}[style]
    if dl == "NCHW":  # JAX's grouped OIHW is [C*M, 1, kH, kW]: swap MPSGraph's M and C axes
        to_jax = lambda w_: w_.transpose(1, 0, 2, 3).reshape(C * M, 1, kH, kW)  # noqa: E731
        dn = ("NCHW", "OIHW", "NCHW")
    else:  # MPSGraph HWIO [kH, kW, C, M] flattens row-major to JAX's [kH, kW, 1, C*M] (o = c*M + m)
        to_jax = lambda w_: w_.reshape(kH, kW, 1, C * M)  # noqa: E731
        dn = ("NHWC", "HWIO", "NHWC")

    def f(x_, w_):
        return lax.conv_general_dilated(x_, to_jax(w_), window_strides=stride, padding=padding,
                                        rhs_dilation=dilation, dimension_numbers=dn, feature_group_count=C)

    y_j, vjp = jax.vjp(f, x, w)
    dx_j, dw_j = vjp(dy)
    tol = dict(rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(y, np.asarray(y_j), **tol)
    np.testing.assert_allclose(dx, np.asarray(dx_j), **tol)
    np.testing.assert_allclose(dw, np.asarray(dw_j), **tol)  # vjp went through to_jax: MPSGraph layout


@pytest.mark.parametrize("padding", ["SAME", "VALID"])
def test_jax_vjp_oracle_float64_nhwc_hwio(padding):
    jax = pytest.importorskip("jax", reason="needs jax, in the oracles extra: pip install -e '.[oracles]'")
    before = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    try:
        _jax_vjp_check(jax, padding)
    finally:
        jax.config.update("jax_enable_x64", before)


def _jax_vjp_check(jax, padding):
    from jax import lax
    rng = np.random.default_rng(4)
    N, C, M, H, W = 1, 2, 3, 6, 5
    xv = rng.standard_normal((N, H, W, C))
    wv = rng.standard_normal((2, 3, C, M))  # HWIO [kH, kW, C, M]
    desc = mg.DepthwiseConvolution2DOpDescriptor(
        stride_in_x=2, stride_in_y=2, padding_style=mg.PaddingStyle.TF_SAME if padding == "SAME" else mg.PaddingStyle.TF_VALID,
        data_layout=mg.TensorNamedDataLayout.NHWC, weights_layout=mg.TensorNamedDataLayout.HWIO)
    g = mg.Graph()
    x = g.placeholder(list(xv.shape), mg.float64, name="x")
    w = g.variable(wv, name="w")
    y = g.depthwise_convolution_2d(x, w, descriptor=desc, name="dw")
    loss = g.reduction_sum(g.sin(y), axes=None)
    grads = g.gradients(loss, [x, w], name="grad")
    r = g.run({x: xv}, [y, grads[x], grads[w]])
    # JAX HWIO with feature_group_count=C: rhs [kH, kW, 1, C*M], output channel c*M + m
    rhs = wv.reshape(2, 3, 1, C * M)

    def f(a, b):
        return lax.conv_general_dilated(a, b, (2, 2), padding, dimension_numbers=("NHWC", "HWIO", "NHWC"),
                                        feature_group_count=C)
    jy = np.asarray(f(xv, rhs))
    np.testing.assert_allclose(r[y], jy, rtol=1e-10, atol=1e-10)
    _, vjp = jax.vjp(f, xv, rhs)
    jdx, jdw = vjp(np.cos(jy))
    np.testing.assert_allclose(r[grads[x]], np.asarray(jdx), rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(r[grads[w]], np.asarray(jdw).reshape(2, 3, C, M), rtol=1e-9, atol=1e-10)


# ----------------------------------------------------------------------------- float16
@pytest.mark.parametrize("layouts", [("NCHW", "OIHW"), ("NHWC", "HWIO")], ids=lambda p: "/".join(p))
def test_float16_close_to_float32(backend, layouts):
    rng = np.random.default_rng(5)
    N, C, M, H, W, k = 2, 4, 2, 10, 9, 3
    dl, wl = layouts
    desc = make_desc("TF_SAME", (2, 1), (1, 2), layouts=layouts)
    _, (OH, OW) = ref_pads("TF_SAME", H, W, k, k, (2, 1), (1, 2), (0, 0, 0, 0))
    x = rng.standard_normal(shape_in(dl, (N, C, H, W))).astype(np.float16)
    w = rng.standard_normal(shape_in(wl, (M, C, k, k))).astype(np.float16)
    dy = rng.standard_normal(shape_in(dl, (N, C * M, OH, OW))).astype(np.float16)
    r16 = run_family(backend, desc, x, w, dy, layouts)
    r32 = run_family(backend, desc, x.astype(np.float32), w.astype(np.float32), dy.astype(np.float32), layouts)
    for a, b in zip(r16, r32):
        assert a.dtype == np.float16
        # float16 keeps 11 significant bits; allow a few ulps of the largest magnitude
        np.testing.assert_allclose(a.astype(np.float32), b, rtol=4e-3, atol=4e-3 * np.abs(b).max())


def test_float16_forward_close_to_float32(backend, rng):
    xv, wv = f32(rng, 1, 2, 6, 6), f32(rng, 2, 2, 3, 3)
    desc = mg.DepthwiseConvolution2DOpDescriptor(padding_style=mg.PaddingStyle.TF_SAME)
    res = {}
    for dt in (mg.float32, mg.float16):
        g = mg.Graph()
        x = g.placeholder(list(xv.shape), dt, name="x")
        w = g.placeholder(list(wv.shape), dt, name="w")
        y = g.depthwise_convolution_2d(x, w, descriptor=desc)
        npd = dt.np_dtype
        try:
            res[dt.name] = g.run({x: xv.astype(npd), w: wv.astype(npd)}, [y], backend=backend)[y]
        except mg.MiniGraphError as e:  # e.g. an adapter without shader-f16
            pytest.skip(str(e))
    assert res["float16"].dtype == np.float16
    np.testing.assert_allclose(res["float16"].astype(np.float32), res["float32"], rtol=2e-2, atol=2e-2)


# ----------------------------------------------------------------------------- validation errors
def _x(g, shape=(2, 3, 6, 6), dtype=mg.float32):
    return g.placeholder(shape, dtype, name="x")


def _build_errors():
    """(id, builder(g), error class, substrings the message must contain)."""
    F, DG, WG = ("depthwise_convolution_2d", "depthwise_convolution_2d_data_gradient",
                 "depthwise_convolution_2d_weights_gradient")

    def fwd(xs=(2, 3, 6, 6), ws=(1, 3, 3, 3), desc=None, xd=mg.float32, wd=mg.float32):
        def b(g):
            return g.depthwise_convolution_2d(g.placeholder(xs, xd), g.placeholder(ws, wd), descriptor=desc, name="bad")
        return b

    def dgrad(dys=(2, 6, 4, 4), ws=(2, 3, 3, 3), out=(2, 3, 6, 6), desc=None):
        def b(g):
            return g.depthwise_convolution_2d_data_gradient(g.placeholder(dys), g.placeholder(ws), output_shape=out,
                                                            descriptor=desc, name="bad")
        return b

    def wgrad(dys=(2, 6, 4, 4), xs=(2, 3, 6, 6), out=(2, 3, 3, 3), desc=None, dd=mg.float32):
        def b(g):
            return g.depthwise_convolution_2d_weights_gradient(g.placeholder(dys, dd), g.placeholder(xs),
                                                               output_shape=out, descriptor=desc, name="bad")
        return b

    E = mg.ShapeError
    return [
        ("fwd-rank-source", F, fwd(xs=(3, 6, 6)), E, ["rank 4", "(3, 6, 6)"]),
        ("fwd-rank-weights", F, fwd(ws=(3, 3, 3)), E, ["weights must be rank 4"]),
        ("fwd-channels", F, fwd(ws=(3, 2, 3, 3)), E, ["C=3", "C=2", "channel multiplier"]),
        ("fwd-channels-hwio", F, fwd(ws=(3, 3, 2, 3), desc=D(weights_layout=L.HWIO)), E, ["[kH, kW, 3, M]"]),
        ("fwd-dtype-mismatch", F, fwd(wd=mg.float16), mg.DTypeError, ["float32", "float16"]),
        ("fwd-int", F, fwd(xd=mg.int32, wd=mg.int32), mg.DTypeError, ["floating", "int32"]),
        ("fwd-stride0", F, fwd(desc=D(stride_in_x=0)), mg.DescriptorError, ["stride_in_x=0", ">= 1"]),
        ("fwd-dilation0", F, fwd(desc=D(dilation_rate_in_y=0)), mg.DescriptorError, ["dilation_rate_in_y=0"]),
        ("fwd-neg-pad", F, fwd(desc=D(padding_top=-1)), mg.DescriptorError, ["padding_top=-1", ">= 0"]),
        ("fwd-layout", F, fwd(desc=D(data_layout=L.CHW)), mg.DescriptorError, ["CHW", "NCHW or NHWC"]),
        ("fwd-wlayout", F, fwd(desc=D(weights_layout=L.NCHW)), mg.DescriptorError, ["weights_layout NCHW", "OIHW or HWIO"]),
        ("fwd-explicit-offset", F, fwd(desc=D(padding_style=P.EXPLICIT_OFFSET)), mg.DescriptorError,
         ["EXPLICIT_OFFSET", "stencil"]),
        ("fwd-empty-out", F, fwd(ws=(1, 3, 7, 3), desc=D(padding_style=P.TF_VALID)), E, ["H", "kernel 7", "empty"]),
        ("fwd-empty-dilated", F, fwd(ws=(1, 3, 3, 3), desc=D(dilation_rate_in_x=3)), E, ["W", "dilated", "7"]),
        ("fwd-zero-multiplier", F, fwd(ws=(0, 3, 3, 3)), E, ["multiplier M", ">= 1"]),
        ("fwd-bad-descriptor", F, fwd(desc="NCHW"), mg.DescriptorError, ["DepthwiseConvolution2DOpDescriptor"]),
        ("fwd-conv-descriptor", F, fwd(desc=Convolution2DOpDescriptor(groups=3)), mg.DescriptorError, ["groups"]),
        ("dg-len", DG, dgrad(out=(2, 3, 6)), E, ["exactly 4", "[2, 3, 6]"]),
        ("dg-non-int", DG, dgrad(out=(2, 3, 6.0, 6)), E, ["ints"]),
        ("dg-none", DG, dgrad(out=None), E, ["sequence of 4 ints"]),
        ("dg-neg", DG, dgrad(out=(2, 3, -4, 6)), E, ["negative size -4"]),
        ("dg-channels", DG, dgrad(out=(2, 4, 6, 6)), E, ["C=4", "C=3"]),
        ("dg-dy-channels", DG, dgrad(dys=(2, 5, 4, 4)), E, ["5 channels", "C*M = 6"]),
        ("dg-dy-batch", DG, dgrad(dys=(3, 6, 4, 4)), E, ["batch 3", "batch 2"]),
        ("dg-wrong-input-size", DG, dgrad(out=(2, 3, 9, 6)), E, ["(4, 4)", "(7, 4)", "input (9, 6)"]),
        ("dg-dynamic-h", DG, dgrad(out=(2, 3, -1, 6)), E, ["H and W", "stride > 1"]),
        ("dg-rank", DG, dgrad(dys=(6, 4, 4)), E, ["incoming_gradient must be rank 4"]),
        ("wg-kernel", WG, wgrad(out=(2, 3, 2, 3)), E, ["(4, 4)", "(5, 4)", "kernel (2, 3)"]),
        ("wg-kernel-zero", WG, wgrad(out=(2, 3, 0, 3)), E, ["output_shape", "kernel (0, 3)", ">= 1"]),
        ("wg-channels", WG, wgrad(out=(2, 4, 3, 3)), E, ["C=4", "C=3"]),
        ("wg-multiplier", WG, wgrad(out=(3, 3, 3, 3)), E, ["6 channels", "C*M = 9"]),
        ("wg-batch", WG, wgrad(dys=(1, 6, 4, 4)), E, ["batch 1", "batch 2"]),
        ("wg-dtype", WG, wgrad(dd=mg.float16), mg.DTypeError, ["float16", "float32"]),
        ("wg-explicit-offset", WG, wgrad(desc=D(padding_style=P.EXPLICIT_OFFSET)), mg.DescriptorError, ["stencil"]),
        ("wg-rank", WG, wgrad(xs=(2, 3, 6)), E, ["source must be rank 4"]),
    ]


ERRORS = _build_errors()


@pytest.mark.parametrize("op_type,build,err,parts", [e[1:] for e in ERRORS], ids=[e[0] for e in ERRORS])
def test_validation_errors(op_type, build, err, parts):
    g = mg.Graph()
    with pytest.raises(err) as info:
        build(g)
    msg = str(info.value)
    assert isinstance(info.value, mg.MiniGraphError)
    assert f"{op_type} op 'bad'" in msg, msg
    for p in parts:
        assert p in msg, (p, msg)


def test_validation_without_name_names_type():
    g = mg.Graph()
    with pytest.raises(mg.ShapeError, match=r"depthwise_convolution_2d op 'depthwise_convolution_2d'"):
        g.depthwise_convolution_2d(_x(g), g.placeholder((1, 2, 3, 3)))


class TestDepthwiseValidation:
    def setup_method(self):
        self.g = g = mg.Graph()
        self.x = g.placeholder([2, 3, 6, 6], mg.float32, name="x")
        self.w = g.placeholder([2, 3, 3, 3], mg.float32, name="w")
        self.desc = mg.DepthwiseConvolution2DOpDescriptor()

    def _err(self, fn, *parts, base=ValueError):
        with pytest.raises(mg.MiniGraphError) as ei:
            fn()
        assert isinstance(ei.value, base), type(ei.value)
        for p in parts:
            assert p in str(ei.value), (p, str(ei.value))
        return str(ei.value)

    def test_rank(self):
        x3 = self.g.placeholder([3, 6, 6], mg.float32, name="x3")
        self._err(lambda: self.g.depthwise_convolution_2d(x3, self.w, descriptor=self.desc, name="r"),
                  "depthwise_convolution_2d", "'r'", "(3, 6, 6)")

    def test_channel_mismatch(self):
        w = self.g.placeholder([2, 4, 3, 3], mg.float32, name="w4")
        self._err(lambda: self.g.depthwise_convolution_2d(self.x, w, descriptor=self.desc, name="c"),
                  "'c'", "(2, 4, 3, 3)")

    def test_dy_channels_must_be_C_times_M(self):
        dy = self.g.placeholder([2, 5, 4, 4], mg.float32, name="dy")
        self._err(lambda: self.g.depthwise_convolution_2d_weights_gradient(
            dy, self.x, output_shape=[2, 3, 3, 3], descriptor=self.desc, name="wg"),
            "depthwise_convolution_2d_weights_gradient", "'wg'", "6")
        self._err(lambda: self.g.depthwise_convolution_2d_data_gradient(
            dy, self.w, output_shape=[2, 3, 6, 6], descriptor=self.desc, name="dg"),
            "depthwise_convolution_2d_data_gradient", "'dg'", "6")

    def test_output_shape_wrong_kernel_for_dy(self):
        dy = self.g.placeholder([2, 6, 4, 4], mg.float32, name="dy")
        self._err(lambda: self.g.depthwise_convolution_2d_weights_gradient(
            dy, self.x, output_shape=[2, 3, 5, 5], descriptor=self.desc, name="wk"), "'wk'")

    def test_output_shape_wrong_channels(self):
        dy = self.g.placeholder([2, 6, 4, 4], mg.float32, name="dy")
        self._err(lambda: self.g.depthwise_convolution_2d_data_gradient(
            dy, self.w, output_shape=[2, 4, 6, 6], descriptor=self.desc, name="dc"), "'dc'")
        self._err(lambda: self.g.depthwise_convolution_2d_weights_gradient(
            dy, self.x, output_shape=[2, 4, 3, 3], descriptor=self.desc, name="wc"), "'wc'")

    @pytest.mark.parametrize("field", ["stride_in_x", "stride_in_y", "dilation_rate_in_x", "dilation_rate_in_y"])
    def test_zero_stride_or_dilation(self, field):
        with pytest.raises(mg.MiniGraphError) as ei:
            d = mg.DepthwiseConvolution2DOpDescriptor(**{field: 0})
            self.g.depthwise_convolution_2d(self.x, self.w, descriptor=d, name="z")
        assert field in str(ei.value) and isinstance(ei.value, ValueError)

    def test_negative_padding(self):
        with pytest.raises(mg.MiniGraphError) as ei:
            d = mg.DepthwiseConvolution2DOpDescriptor(padding_left=-1)
            self.g.depthwise_convolution_2d(self.x, self.w, descriptor=d, name="z")
        assert "padding_left" in str(ei.value)

    def test_unsupported_layout(self):
        with pytest.raises(mg.MiniGraphError) as ei:
            d = mg.DepthwiseConvolution2DOpDescriptor(data_layout=mg.TensorNamedDataLayout.CHW)
            self.g.depthwise_convolution_2d(self.x, self.w, descriptor=d, name="z")
        assert "CHW" in str(ei.value)
        with pytest.raises(mg.MiniGraphError):
            d = mg.DepthwiseConvolution2DOpDescriptor(weights_layout=mg.TensorNamedDataLayout.NCHW)
            self.g.depthwise_convolution_2d(self.x, self.w, descriptor=d, name="z")

    def test_output_size_not_positive(self):
        w = self.g.placeholder([1, 3, 9, 9], mg.float32, name="big")
        d = mg.DepthwiseConvolution2DOpDescriptor(padding_style=mg.PaddingStyle.TF_VALID)
        self._err(lambda: self.g.depthwise_convolution_2d(self.x, w, descriptor=d, name="o"), "'o'")

    def test_dtype_mismatch(self):
        w = self.g.placeholder([2, 3, 3, 3], mg.float16, name="wh")
        m = self._err(lambda: self.g.depthwise_convolution_2d(self.x, w, descriptor=self.desc, name="dt"),
                      "float16", "float32", base=TypeError)
        assert "'dt'" in m


def test_output_shape_accepts_lists_tuples_arrays_and_shapes():
    g = mg.Graph()
    dy, w, x = g.placeholder((2, 6, 4, 4)), g.placeholder((2, 3, 3, 3)), _x(g)
    for out in ([2, 3, 6, 6], (2, 3, 6, 6), np.array([2, 3, 6, 6]), x.shape):
        t = g.depthwise_convolution_2d_data_gradient(dy, w, output_shape=out)
        assert t.shape == (2, 3, 6, 6) and t.operation.attrs["output_shape"] == (2, 3, 6, 6)
        assert all(type(d) is int for d in t.operation.attrs["output_shape"])
    for out in ([2, 3, 3, 3], w.shape):
        assert g.depthwise_convolution_2d_weights_gradient(dy, x, output_shape=out).shape == (2, 3, 3, 3)
    with pytest.raises(mg.ShapeError, match="pass its .shape"):
        g.depthwise_convolution_2d_data_gradient(dy, w, output_shape=x)


def test_dynamic_batch():
    """A -1 batch flows through all three ops (output_shape=x.shape holds the -1); the compiler
    resolves it from the feeds."""
    rng = np.random.default_rng(3)
    g = mg.Graph()
    x = g.placeholder((-1, 3, 6, 5), name="x")
    w = g.placeholder((2, 3, 3, 2), name="w")
    dy = g.placeholder((-1, 6, 3, 5), name="dy")
    desc = make_desc("ONNX_SAME_LOWER", (2, 1), (1, 2))
    y = g.depthwise_convolution_2d(x, w, descriptor=desc, name="dw")
    dx = g.depthwise_convolution_2d_data_gradient(dy, w, output_shape=x.shape, descriptor=desc)
    dw = g.depthwise_convolution_2d_weights_gradient(dy, x, output_shape=w.shape, descriptor=desc)
    assert y.shape == (-1, 6, 3, 5) and dx.shape == (-1, 3, 6, 5) and dw.shape == (2, 3, 3, 2)
    xv = rng.standard_normal((4, 3, 6, 5)).astype(np.float32)
    wv = rng.standard_normal((2, 3, 3, 2)).astype(np.float32)
    dyv = rng.standard_normal((4, 6, 3, 5)).astype(np.float32)
    r = g.run({x: xv, w: wv, dy: dyv}, [y, dx, dw])
    pads, _ = ref_pads("ONNX_SAME_LOWER", 6, 5, 3, 2, (2, 1), (1, 2), (0, 0, 0, 0))
    tol = dict(rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(r[y], nv.depthwise_forward(xv, wv, (2, 1), (1, 2), pads), **tol)
    np.testing.assert_allclose(r[dx], nv.depthwise_data_grad(dyv, wv, xv.shape, (2, 1), (1, 2), pads), **tol)
    np.testing.assert_allclose(r[dw], nv.depthwise_weights_grad(dyv, xv, wv.shape, (2, 1), (1, 2), pads), **tol)
    with pytest.raises(mg.ShapeError, match="H and W"):  # H, W cannot be inferred from dy
        g.depthwise_convolution_2d_data_gradient(dy, w, output_shape=(-1, 3, -1, 5), descriptor=desc)


def test_autodiff_emits_the_gradient_ops(backend):
    """g.gradients through the forward op inserts the data- and weights-gradient ops (§4.2)."""
    rng = np.random.default_rng(4)
    g = mg.Graph()
    x = g.placeholder((2, 6, 5, 3), name="x")
    w = g.placeholder((3, 2, 3, 2), name="w")  # HWIO [kH, kW, C, M]
    desc = make_desc("TF_SAME", (2, 1), (1, 2), layouts=("NHWC", "HWIO"))
    y = g.depthwise_convolution_2d(x, w, descriptor=desc, name="dw")
    loss = g.reduction_sum(g.square(y), axes=None)
    grads = g.gradients(loss, [x, w], name="grad")
    types = {op.name: op.type for op in g.operations}
    assert types.get("grad/dw/depthwise_convolution_2d_data_gradient") == "depthwise_convolution_2d_data_gradient"
    assert types.get("grad/dw/depthwise_convolution_2d_weights_gradient") == "depthwise_convolution_2d_weights_gradient"
    xv = rng.standard_normal((2, 6, 5, 3)).astype(np.float32)
    wv = rng.standard_normal((3, 2, 3, 2)).astype(np.float32)
    r = g.run({x: xv, w: wv}, [y, grads[x], grads[w]], backend=backend)
    pads, _ = ref_pads("TF_SAME", 6, 5, 3, 2, (2, 1), (1, 2), (0, 0, 0, 0))
    xn, wn = from_data(xv, "NHWC"), from_weights(wv, "HWIO")
    y_ref = nv.depthwise_forward(xn, wn, (2, 1), (1, 2), pads)
    tol = dict(rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(from_data(r[y], "NHWC"), y_ref, **tol)
    np.testing.assert_allclose(from_data(r[grads[x]], "NHWC"),
                               nv.depthwise_data_grad(2 * y_ref, wn, xn.shape, (2, 1), (1, 2), pads), **tol)
    np.testing.assert_allclose(from_weights(r[grads[w]], "HWIO"),
                               nv.depthwise_weights_grad(2 * y_ref, xn, wn.shape, (2, 1), (1, 2), pads), **tol)


# ----------------------------------------------------------------------------- descriptor semantics
def test_descriptor_is_copied_when_the_op_is_built():
    rng = np.random.default_rng(9)
    x = rng.standard_normal((1, 2, 6, 6)).astype(np.float32)
    w = rng.standard_normal((1, 2, 3, 3)).astype(np.float32)
    g = mg.Graph()
    desc = D()
    y1 = g.depthwise_convolution_2d(x, w, descriptor=desc)
    desc.stride_in_x = desc.stride_in_y = 2
    desc.set_explicit_padding(1, 1, 1, 1)
    y2 = g.depthwise_convolution_2d(x, w, descriptor=desc)
    desc.stride_in_x = 0  # an invalid edit after building breaks nothing either
    assert y1.operation.attrs["descriptor"] is not desc
    assert y1.shape == (1, 2, 4, 4) and y2.shape == (1, 2, 3, 3)
    r = g.run({}, [y1, y2])
    np.testing.assert_allclose(r[y1], nv.depthwise_forward(x, w, (1, 1), (1, 1), (0, 0, 0, 0)), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(r[y2], nv.depthwise_forward(x, w, (2, 2), (1, 1), (1, 1, 1, 1)), rtol=1e-5, atol=1e-5)
    # from placeholders: the shapes follow the descriptor as it was at each build
    g = mg.Graph()
    xp = g.placeholder([1, 2, 5, 5], mg.float32, name="x")
    wc = g.constant(f32(rng, 1, 2, 3, 3))
    desc = D()
    y = g.depthwise_convolution_2d(xp, wc, descriptor=desc, name="dw")
    desc.set_explicit_padding(1, 1, 1, 1)
    desc.stride_in_x = 2
    assert y.shape == (1, 2, 3, 3)
    y2 = g.depthwise_convolution_2d(xp, wc, descriptor=desc, name="dw2")
    assert y2.shape == (1, 2, 5, 3)
    assert g.run({xp: f32(rng, 1, 2, 5, 5)}, [y])[y].shape == (1, 2, 3, 3)


def test_enums_members():
    assert {m.name for m in mg.PaddingStyle} >= {"EXPLICIT", "TF_VALID", "TF_SAME", "EXPLICIT_OFFSET",
                                                 "ONNX_SAME_LOWER"}
    for n in ("NCHW", "NHWC", "OIHW", "HWIO", "CHW", "HWC", "HW", "NCDHW", "NDHWC", "OIDHW", "DHWIO"):
        assert hasattr(mg.TensorNamedDataLayout, n)


def test_descriptor_defaults_and_fields():
    d = mg.DepthwiseConvolution2DOpDescriptor()
    assert (d.stride_in_x, d.stride_in_y, d.dilation_rate_in_x, d.dilation_rate_in_y) == (1, 1, 1, 1)
    assert (d.padding_left, d.padding_right, d.padding_top, d.padding_bottom) == (0, 0, 0, 0)
    assert d.padding_style == mg.PaddingStyle.EXPLICIT
    assert d.data_layout == mg.TensorNamedDataLayout.NCHW and d.weights_layout == mg.TensorNamedDataLayout.OIHW
    d2 = mg.DepthwiseConvolution2DOpDescriptor(
        stride_in_x=1, stride_in_y=1, dilation_rate_in_x=1, dilation_rate_in_y=1,
        padding_left=0, padding_right=0, padding_top=0, padding_bottom=0,
        padding_style=mg.PaddingStyle.EXPLICIT,
        data_layout=mg.TensorNamedDataLayout.NCHW, weights_layout=mg.TensorNamedDataLayout.OIHW)
    d2.padding_style = mg.PaddingStyle.TF_SAME
    d2.set_explicit_padding(1, 2, 3, 4)
    assert d2.padding_style == mg.PaddingStyle.EXPLICIT
    assert (d2.padding_left, d2.padding_right, d2.padding_top, d2.padding_bottom) == (1, 2, 3, 4)


def test_set_explicit_padding_forces_explicit():
    desc = D(padding_style=P.TF_SAME, stride_in_x=2, stride_in_y=2)
    desc.set_explicit_padding(2, 0, 1, 0)  # left, right, top, bottom
    assert desc.padding_style == P.EXPLICIT
    assert (desc.padding_left, desc.padding_right, desc.padding_top, desc.padding_bottom) == (2, 0, 1, 0)
    rng = np.random.default_rng(2)
    x = rng.standard_normal((1, 1, 5, 5)).astype(np.float32)
    w = rng.standard_normal((1, 1, 3, 3)).astype(np.float32)
    g = mg.Graph()
    y = g.depthwise_convolution_2d(x, w, descriptor=desc)
    assert y.shape == (1, 1, 2, 3)  # TF_SAME would give 3x3
    np.testing.assert_allclose(g.run({}, [y])[y], nv.depthwise_forward(x, w, (2, 2), (1, 1), (1, 0, 2, 0)),
                               rtol=1e-5, atol=1e-5)


def test_op_declarations():
    f, dg, wg = (OPS[t] for t in ("depthwise_convolution_2d", "depthwise_convolution_2d_data_gradient",
                                  "depthwise_convolution_2d_weights_gradient"))
    assert f.swift == "depthwiseConvolution2D(_:weights:descriptor:name:)"
    assert dg.objc == ("depthwiseConvolution2DDataGradientWithIncomingGradientTensor:weightsTensor:"
                       "outputShape:descriptor:name:")
    assert wg.objc == ("depthwiseConvolution2DWeightsGradientWithIncomingGradientTensor:sourceTensor:"
                       "outputShape:descriptor:name:")
    assert f.differentiable and dg.differentiable and f.grad and dg.grad
    assert not wg.differentiable and wg.grad is None
    assert {f.family, dg.family, wg.family} == {"convolution"}
    assert (f.role, dg.role, wg.role) == ("forward", "data_gradient", "weights_gradient")
    assert dg.forward == wg.forward == "depthwise_convolution_2d" and f.kind == "compute"


def test_weights_gradient_is_not_differentiable():
    g = mg.Graph()
    dy, x = g.placeholder((1, 2, 4, 4)), g.placeholder((1, 2, 6, 6))
    dw = g.depthwise_convolution_2d_weights_gradient(dy, x, output_shape=(1, 2, 3, 3))
    with pytest.raises(mg.NotDifferentiableError, match="depthwise_convolution_2d_weights_gradient"):
        g.gradients(g.reduction_sum(dw, axes=None), [x])
    # the one autodiff inserted: the error names its type and its name
    rng = np.random.default_rng(0)
    g = mg.Graph()
    x = g.placeholder([2, 3, 6, 6], mg.float32, name="x")
    w = g.variable(f32(rng, 2, 3, 3, 3), name="w")
    y = g.depthwise_convolution_2d(x, w, descriptor=D(padding_style=P.TF_SAME), name="dw")
    gw = g.gradients(g.reduction_sum(g.square(y), axes=None, name="loss"), [w], name="grad")[w]
    second = g.reduction_sum(g.square(gw), axes=None)
    with pytest.raises(mg.MiniGraphError) as ei:
        g.gradients(second, [x], name="grad2")
    assert isinstance(ei.value, mg.NotDifferentiableError)
    assert "depthwise_convolution_2d_weights_gradient" in str(ei.value)
    assert "grad/dw/depthwise_convolution_2d_weights_gradient" in str(ei.value)


# ----------------------------------------------------------------------------- finite differences (float64)
def _fd_check(g, loss, params, values):
    """Compare g.gradients(loss) with central differences for every element of every param."""
    grads = g.gradients(loss, params)
    feeds = dict(zip(params, values))
    got = g.run(feeds, [grads[p] for p in params])
    for p, fd in zip(params, central_differences(g, loss, feeds, params)):
        np.testing.assert_allclose(got[grads[p]], fd, rtol=1e-6, atol=1e-7, err_msg=p.name)


@pytest.mark.parametrize("M", [1, 2])
@pytest.mark.parametrize("layouts,style", [(("NCHW", "OIHW"), "EXPLICIT"), (("NHWC", "HWIO"), "TF_SAME"),
                                           (("NHWC", "OIHW"), "ONNX_SAME_LOWER")], ids=str)
def test_finite_differences_forward(layouts, style, M):
    rng = np.random.default_rng(M)
    N, C, H, W, kH, kW = 1, 2, 5, 4, 2, 3
    stride, dilation, epads = (2, 1), (1, 2), (1, 0, 0, 2)
    dl, wl = layouts
    _, (OH, OW) = ref_pads(style, H, W, kH, kW, stride, dilation, epads)
    g = mg.Graph()
    x = g.placeholder(shape_in(dl, (N, C, H, W)), mg.float64, name="x")
    w = g.placeholder(shape_in(wl, (M, C, kH, kW)), mg.float64, name="w")
    y = g.depthwise_convolution_2d(x, w, descriptor=make_desc(style, stride, dilation, epads, layouts))
    r = g.constant(rng.standard_normal(y.shape))
    loss = g.reduction_sum(g.multiplication(g.tanh(y), r), axes=None)  # nonlinear, so FD is a real check
    _fd_check(g, loss, [x, w], [rng.standard_normal(x.shape), rng.standard_normal(w.shape)])
    assert (OH, OW) == ((y.shape[2], y.shape[3]) if dl == "NCHW" else (y.shape[1], y.shape[2]))


@pytest.mark.parametrize("M", [1, 2])
@pytest.mark.parametrize("layouts,style", [(("NCHW", "OIHW"), "TF_SAME"), (("NHWC", "HWIO"), "EXPLICIT")], ids=str)
def test_finite_differences_data_gradient(layouts, style, M):
    """The data-gradient op's own rule: d/d dy = F(u, W), d/dW = G(incoming=dy, source=u)."""
    rng = np.random.default_rng(10 + M)
    N, C, H, W, kH, kW = 2, 2, 5, 4, 3, 2
    stride, dilation, epads = (1, 2), (2, 1), (2, 1, 0, 1)
    dl, wl = layouts
    _, (OH, OW) = ref_pads(style, H, W, kH, kW, stride, dilation, epads)
    g = mg.Graph()
    dy = g.placeholder(shape_in(dl, (N, C * M, OH, OW)), mg.float64, name="dy")
    w = g.placeholder(shape_in(wl, (M, C, kH, kW)), mg.float64, name="w")
    dx = g.depthwise_convolution_2d_data_gradient(dy, w, output_shape=shape_in(dl, (N, C, H, W)),
                                                  descriptor=make_desc(style, stride, dilation, epads, layouts))
    r = g.constant(rng.standard_normal(dx.shape))
    loss = g.reduction_sum(g.multiplication(g.tanh(dx), r), axes=None)
    _fd_check(g, loss, [dy, w], [rng.standard_normal(dy.shape), rng.standard_normal(w.shape)])
    grad_types = {op.type for op in g.operations if op.name.startswith("gradients/")}
    assert {"depthwise_convolution_2d", "depthwise_convolution_2d_weights_gradient"} <= grad_types


def test_autodiff_weights_gradient_matches_finite_differences():
    rng = np.random.default_rng(7)
    g = mg.Graph()
    xv = rng.standard_normal((1, 2, 5, 5))
    wv = rng.standard_normal((2, 2, 3, 3))
    x = g.placeholder([1, 2, 5, 5], mg.float64, name="x")
    w = g.placeholder([2, 2, 3, 3], mg.float64, name="w")
    desc = mg.DepthwiseConvolution2DOpDescriptor(stride_in_x=2, padding_style=mg.PaddingStyle.ONNX_SAME_LOWER)
    y = g.depthwise_convolution_2d(x, w, descriptor=desc, name="dw")
    loss = g.reduction_sum(g.sin(y), axes=None)
    gw = g.gradients(loss, [w], name="grad")[w]
    auto = g.run({x: xv, w: wv}, [gw])[gw]
    (fd,) = central_differences(g, loss, {x: xv, w: wv}, [w])
    np.testing.assert_allclose(auto, fd, rtol=1e-5, atol=1e-7)
