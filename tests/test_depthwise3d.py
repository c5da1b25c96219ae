"""Depthwise 3D convolution family (docs/mpsgraph-spec.md §5): forward, data gradient, weights gradient.

References: the naive loops of ``naive_conv3d_pool`` (canonical [B, C, D, H, W], weights
[C*M, kD, kH, kW]), per-axis padding from ``naive_conv.pads_for``, the adjoint identity, finite
differences, and PyTorch ``conv3d(groups=C)`` / JAX ``conv_general_dilated`` when installed.
"""
from __future__ import annotations


import numpy as np
import pytest

import minigraph as mg
from minigraph.descriptors import DepthwiseConvolution3DOpDescriptor, PaddingStyle
from minigraph.ops.registry import OPS

import naive_conv as nv
from gradcheck import check_gradients, uniform_inputs
import naive_conv3d_pool as n3

D3 = DepthwiseConvolution3DOpDescriptor
P = PaddingStyle
STYLES = ("EXPLICIT", "TF_VALID", "TF_SAME", "ONNX_SAME_LOWER")


def f32(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def to_cdi(a, cdi):
    """Canonical (channel at -4) -> channel at ``cdi`` within the last 4 axes."""
    return np.ascontiguousarray(np.moveaxis(a, -4, cdi))


def from_cdi(a, cdi):
    return np.moveaxis(a, cdi, -4)


def ref_pads(style, sizes, kernel, strides, dil, pads):
    """6 paddings (before, after per axis) that the style implies, from naive_conv's §3 table."""
    out = []
    for a in range(3):
        pb, pa, _ = nv.pads_for(style, sizes[a], kernel[a], strides[a], dil[a], pads[2 * a], pads[2 * a + 1])
        out += [pb, pa]
    return tuple(out)


def precision(backend):
    """float64 and tight tolerances on numpy; float32 elsewhere (MPSGraph has no float64)."""
    if backend == "numpy":
        return mg.float64, dict(rtol=1e-10, atol=1e-10)
    return mg.float32, dict(rtol=1e-4, atol=1e-4)


def run_all(x, w, dy, desc, backend="numpy", dtype=None, lead=None):
    """Forward, data and weights gradients in one graph. ``x``/``dy`` canonical [B, C, ...] (``lead``
    reshapes B into several batch axes, or drops it when ()), ``w`` [C*M, kD, kH, kW]."""
    dtype = dtype or precision(backend)[0]
    cdi = desc.channel_dimension_index

    def data(a):
        a = a.reshape(tuple(lead) + a.shape[1:]) if lead is not None else a
        return to_cdi(a, cdi)

    xa, wa, dya = data(x), to_cdi(w, cdi), data(dy)
    g = mg.Graph()
    xp, wp, dyp = (g.placeholder(a.shape, dtype) for a in (xa, wa, dya))
    y = g.depthwise_convolution_3d(xp, wp, descriptor=desc, name="dw3")
    dx = g.depthwise_convolution_3d_data_gradient(dyp, wp, output_shape=xa.shape, descriptor=desc)
    dw = g.depthwise_convolution_3d_weights_gradient(dyp, xp, output_shape=wa.shape, descriptor=desc)
    npd = dtype.np_dtype
    r = g.run({xp: xa.astype(npd), wp: wa.astype(npd), dyp: dya.astype(npd)}, [y, dx, dw], backend=backend)

    def back(a, like):
        a = from_cdi(a, cdi)
        return a.reshape(like.shape[:1] + a.shape[-4:]) if lead is not None else a
    return back(r[y], dy), back(r[dx], x), from_cdi(r[dw], cdi)


# (sizes D, H, W; kernel; strides; dilations; explicit pads; B; C; lead batch axes)
GEOMETRIES = {
    "plain": ((3, 4, 5), (2, 2, 2), (1, 1, 1), (1, 1, 1), (1, 0, 0, 1, 1, 1), 2, 2, None),
    "strided_dilated": ((5, 6, 4), (2, 3, 2), (2, 1, 3), (1, 2, 1), (0, 2, 1, 1, 2, 0), 1, 3, None),
    "no_batch_axis": ((5, 3, 6), (3, 1, 2), (1, 2, 2), (2, 1, 1), (2, 1, 0, 0, 1, 2), 1, 2, ()),
    "two_batch_axes": ((3, 5, 5), (1, 2, 3), (2, 2, 1), (1, 1, 2), (1, 1, 0, 1, 2, 2), 6, 2, (2, 3)),
}


# every geometry x style x multiplier; the channel index rotates, so that it meets every style,
# geometry and multiplier
MATRIX = [(geo, style, M, (-4, -3, -2, -1)[(i + j + k) % 4]) for i, geo in enumerate(GEOMETRIES)
          for j, style in enumerate(STYLES) for k, M in enumerate((1, 2))]


@pytest.mark.parametrize("geo,style,M,cdi", MATRIX, ids=[f"{a}-{b}-M{c}-cdi{d}" for a, b, c, d in MATRIX])
def test_matches_naive_loops(backend, geo, style, M, cdi):
    sizes, kernel, strides, dil, pads, B, C, lead = GEOMETRIES[geo]
    rng = np.random.default_rng(abs(hash((geo, style, cdi, M))) % 2**32)
    x = rng.standard_normal((B, C) + sizes)
    w = rng.standard_normal((C * M,) + kernel)
    rp = ref_pads(style, sizes, kernel, strides, dil, pads)
    y_ref = n3.dw3d_forward(x, w, strides, dil, rp)
    dy = rng.standard_normal(y_ref.shape)
    desc = D3(strides=strides, dilation_rates=dil, padding_values=pads, padding_style=P[style],
              channel_dimension_index=cdi)
    y, dx, dw = run_all(x, w, dy, desc, backend, lead=lead)
    tol = precision(backend)[1]
    np.testing.assert_allclose(y, y_ref, **tol)
    np.testing.assert_allclose(dx, n3.dw3d_data_grad(dy, w, x.shape, strides, dil, rp), **tol)
    np.testing.assert_allclose(dw, n3.dw3d_weights_grad(dy, x, w.shape, strides, dil, rp), **tol)


@pytest.mark.parametrize("cdi", [-4, -1])
@pytest.mark.parametrize("style", STYLES)
def test_adjoint_identity(backend, style, cdi):
    rng = np.random.default_rng(17)
    x = rng.standard_normal((2, 3, 5, 5, 6))
    w = rng.standard_normal((6, 2, 3, 2))
    desc = D3(strides=(2, 1, 2), dilation_rates=(1, 2, 1), padding_values=(1, 0, 2, 1, 0, 1),
              padding_style=P[style], channel_dimension_index=cdi)
    g = mg.Graph()
    ys = g.depthwise_convolution_3d(g.placeholder(to_cdi(x, cdi).shape, mg.float64),
                                    g.placeholder(to_cdi(w, cdi).shape, mg.float64), desc).shape
    dy = from_cdi(rng.standard_normal(ys), cdi)
    y, dx, dw = run_all(x, w, dy, desc, backend)
    a = np.vdot(dy, y)
    assert abs(a) > 1e-3
    np.testing.assert_allclose([np.vdot(dx, x), np.vdot(dw, w)], [a, a], rtol=precision(backend)[1]["rtol"])


# ----------------------------------------------------------------------------- oracles
@pytest.mark.parametrize("M", [1, 3])
@pytest.mark.parametrize("style", STYLES)
def test_pytorch_oracle(backend, style, M):
    """torch conv3d with groups = C and weights [C*M, 1, kD, kH, kW]: forward and autograd."""
    torch = pytest.importorskip("torch", reason="needs torch, in the oracles extra: pip install -e '.[oracles]'")
    F = torch.nn.functional
    rng = np.random.default_rng(21)
    C, sizes, kernel, strides, dil, pads = 2, (5, 6, 5), (2, 3, 2), (2, 1, 2), (1, 2, 1), (1, 1, 0, 2, 1, 0)
    x = rng.standard_normal((2, C) + sizes)
    w = rng.standard_normal((C * M,) + kernel)
    rp = ref_pads(style, sizes, kernel, strides, dil, pads)
    tx = torch.tensor(x, requires_grad=True)
    tw = torch.tensor(w, requires_grad=True)
    ty = F.conv3d(F.pad(tx, (rp[4], rp[5], rp[2], rp[3], rp[0], rp[1])), tw[:, None], stride=strides,
                  dilation=dil, groups=C)
    dy = rng.standard_normal(tuple(ty.shape))
    ty.backward(torch.tensor(dy))
    desc = D3(strides=strides, dilation_rates=dil, padding_values=pads, padding_style=P[style])
    y, dx, dw = run_all(x, w, dy, desc, backend)
    tol = precision(backend)[1]
    np.testing.assert_allclose(y, ty.detach().numpy(), **tol)
    np.testing.assert_allclose(dx, tx.grad.numpy(), **tol)
    np.testing.assert_allclose(dw, tw.grad.numpy(), **tol)


@pytest.mark.parametrize("style,jpad", [("TF_SAME", "SAME"), ("ONNX_SAME_LOWER", "SAME_LOWER"), ("TF_VALID", "VALID")])
def test_jax_oracle(backend, style, jpad):
    """JAX's own SAME / SAME_LOWER / VALID padding, feature_group_count = C and vjp; NDHWC (cdi -1)."""
    jax = pytest.importorskip("jax", reason="needs jax, in the oracles extra: pip install -e '.[oracles]'")
    from jax import lax

    rng = np.random.default_rng(23)
    C, M = 3, 2
    x = rng.standard_normal((2, 5, 5, 6, C)).astype(np.float32)  # NDHWC
    w = rng.standard_normal((2, 3, 2, C * M)).astype(np.float32)  # minigraph weights [kD, kH, kW, C*M]

    def f(a, b):
        return lax.conv_general_dilated(a, b[:, :, :, None, :], (2, 1, 3), jpad, rhs_dilation=(1, 2, 1),
                                        dimension_numbers=("NDHWC", "DHWIO", "NDHWC"), feature_group_count=C)

    jy, vjp = jax.vjp(f, x, w)
    dy = rng.standard_normal(jy.shape).astype(np.float32)
    jdx, jdw = vjp(dy)
    desc = D3(strides=(2, 1, 3), dilation_rates=(1, 2, 1), padding_style=P[style], channel_dimension_index=-1)
    g = mg.Graph()
    xp, wp, dyp = (g.placeholder(a.shape, mg.float32) for a in (x, w, dy))
    y = g.depthwise_convolution_3d(xp, wp, desc)
    dx = g.depthwise_convolution_3d_data_gradient(dyp, wp, x.shape, desc)
    dw = g.depthwise_convolution_3d_weights_gradient(dyp, xp, w.shape, desc)
    r = g.run({xp: x, wp: w, dyp: dy}, [y, dx, dw], backend=backend)
    for got, want in ((r[y], jy), (r[dx], jdx), (r[dw], jdw)):
        assert got.shape == want.shape
        np.testing.assert_allclose(got, np.asarray(want), rtol=1e-4, atol=1e-4)


def test_2d_lowering_trick(backend):
    """§5: NCHW rank 4 with channel_dimension_index -3 and weights [1, C*M, kH, kW] is depthwise 2D
    (N acts as a depth axis with kernel 1); checked against grouped conv2d."""
    rng = np.random.default_rng(29)
    N, C, M, H, W = 2, 3, 2, 7, 6
    dt, tol = precision(backend)
    x = rng.standard_normal((N, C, H, W)).astype(dt.np_dtype)
    w = rng.standard_normal((1, C * M, 3, 2)).astype(dt.np_dtype)
    d3 = D3(strides=(1, 2, 1), dilation_rates=(1, 1, 2), padding_values=(0, 0, 1, 2, 1, 0),
            channel_dimension_index=-3)
    d2 = mg.Convolution2DOpDescriptor(stride_in_y=2, dilation_rate_in_x=2, padding_top=1, padding_bottom=2,
                                      padding_left=1, groups=C)
    g = mg.Graph()
    xt, wt = g.constant(x), g.constant(w)
    a = g.depthwise_convolution_3d(xt, wt, d3)
    b = g.convolution_2d(xt, g.reshape(wt, [C * M, 1, 3, 2]), d2)
    r = g.run({}, [a, b], backend=backend)
    np.testing.assert_allclose(r[a], r[b], **tol)
    np.testing.assert_allclose(r[a], nv.conv2d_forward(x, w.reshape(C * M, 1, 3, 2), (2, 1), (1, 2), (1, 2, 1, 0), C),
                               **tol)


@pytest.mark.parametrize("cdi", [-4, -1])
def test_float16_close_to_float32(backend, cdi):
    rng = np.random.default_rng(31)
    x = rng.standard_normal((2, 3, 4, 5, 6))
    w = rng.standard_normal((6, 2, 2, 3)) * 0.5
    desc = D3(strides=(1, 2, 1), padding_style=P.TF_SAME, channel_dimension_index=cdi)
    g = mg.Graph()
    ys = g.depthwise_convolution_3d(g.placeholder(to_cdi(x, cdi).shape, mg.float32),
                                    g.placeholder(to_cdi(w, cdi).shape, mg.float32), desc).shape
    dy = from_cdi(rng.standard_normal(ys), cdi)
    x, w, dy = (a.astype(np.float16).astype(np.float64) for a in (x, w, dy))
    r32 = run_all(x, w, dy, desc, backend, mg.float32)
    r16 = run_all(x, w, dy, desc, backend, mg.float16)
    for a, b in zip(r16, r32):
        assert a.dtype == np.float16
        np.testing.assert_allclose(a.astype(np.float32), b, rtol=2e-2, atol=2e-2 * np.abs(b).max())


# ----------------------------------------------------------------------------- graph-level behaviour
def test_data_gradient_without_output_shape():
    """MPSGraph's outputShape is nullable: minigraph then assumes M = 1 and the conventional size
    ((O-1)*s + K - pads for EXPLICIT/TF_VALID, O*s for the SAME styles)."""
    g = mg.Graph()
    dy = g.placeholder([2, 4, 3, 5, 2], mg.float32)
    w = g.placeholder([4, 3, 2, 2], mg.float32)
    d = D3(strides=(2, 1, 3), padding_values=(1, 0, 0, 1, 0, 0))
    assert g.depthwise_convolution_3d_data_gradient(dy, w, None, d).shape == (2, 4, 6, 5, 5)
    d.padding_style = P.TF_SAME
    assert g.depthwise_convolution_3d_data_gradient(dy, w, None, d).shape == (2, 4, 6, 5, 6)
    # the result equals the data gradient with that output_shape given
    rng = np.random.default_rng(3)
    d = D3(strides=(2, 1, 2), padding_style=P.TF_VALID)
    dyv, wv = rng.standard_normal((1, 4, 3, 5, 2)), rng.standard_normal((4, 3, 2, 2))
    g = mg.Graph()
    a = g.depthwise_convolution_3d_data_gradient(g.constant(dyv), g.constant(wv), None, d)
    assert a.shape == (1, 4, 7, 6, 4)
    b = g.depthwise_convolution_3d_data_gradient(g.constant(dyv), g.constant(wv), a.shape, d)
    r = g.run({}, [a, b])
    np.testing.assert_array_equal(r[a], r[b])
    np.testing.assert_allclose(r[a], n3.dw3d_data_grad(dyv, wv, a.shape, (2, 1, 2), (1, 1, 1), (0,) * 6), rtol=1e-6,
                               atol=1e-6)


@pytest.mark.parametrize("style,stride,dilation,pads", [
    ("EXPLICIT", 1, 1, (1, 2)), ("EXPLICIT", 3, 2, (2, 1)), ("EXPLICIT", 2, 1, (0, 3)), ("TF_VALID", 2, 2, (0, 0)),
    ("TF_SAME", 3, 1, (0, 0)), ("ONNX_SAME_LOWER", 2, 2, (0, 0))])
def test_data_gradient_without_output_shape_size_is_extreme(backend, style, stride, dilation, pads):
    """Per axis the assumed size is, among the input sizes whose forward output has O elements,
    the smallest (EXPLICIT, TF_VALID) or the largest (SAME styles), found here by building the
    forward op for every size; the gradient equals the one with that output_shape given."""
    k, O = 2, 3
    d = D3(strides=(1, 1, stride), dilation_rates=(1, 1, dilation), padding_values=(0, 0, 0, 0) + pads,
           padding_style=P[style])
    g = mg.Graph()
    giving_o = []
    for n in range(1, 20):
        try:
            y = g.depthwise_convolution_3d(g.placeholder([1, 2, 1, 1, n]), g.placeholder([2, 1, 1, k]), d)
        except mg.ShapeError:
            continue
        if y.shape[-1] == O:
            giving_o.append(n)
    want = min(giving_o) if style in ("EXPLICIT", "TF_VALID") else max(giving_o)
    dt, tol = precision(backend)
    rng = np.random.default_rng(5)
    dyv, wv = rng.standard_normal((1, 2, 1, 1, O)), rng.standard_normal((2, 1, 1, k))
    a = g.depthwise_convolution_3d_data_gradient(g.placeholder(dyv.shape, dt), g.placeholder(wv.shape, dt), None, d)
    assert a.shape == (1, 2, 1, 1, want), (giving_o, a.shape)
    feeds = {a.operation.inputs[0]: dyv.astype(dt.np_dtype), a.operation.inputs[1]: wv.astype(dt.np_dtype)}
    before, after, _ = nv.pads_for(style, want, k, stride, dilation, *pads)
    np.testing.assert_allclose(g.run(feeds, [a], backend=backend)[a],
                               n3.dw3d_data_grad(dyv, wv, a.shape, (1, 1, stride), (1, 1, dilation),
                                                 (0, 0, 0, 0, before, after)), **tol)


@pytest.mark.parametrize("pads,size", [((1, 0), 0), ((2, 0), -1), ((1, 1), -1), ((3, 1), -3)])
def test_data_gradient_without_output_shape_rejects_padding_that_leaves_no_size(pads, size):
    """(O-1)*s + K - pads <= 0 is not a size: -1 among them, which must not read as "unknown"."""
    g = mg.Graph()
    d = D3(padding_values=(0, 0, 0, 0) + pads)
    with pytest.raises(mg.ShapeError) as info:
        g.depthwise_convolution_3d_data_gradient(g.placeholder([1, 2, 1, 1, 1]), g.placeholder([2, 1, 1, 1]),
                                                 None, d, name="dx")
    msg = str(info.value)
    for part in ("depthwise_convolution_3d_data_gradient op 'dx'", "along W", f"= {size} is not a size",
                 "pass output_shape"):
        assert part in msg, (part, msg)


def test_dynamic_batch_and_stride_one_inversion(backend):
    rng = np.random.default_rng(37)
    d = D3(strides=(1, 1, 1), padding_values=(1, 1, 0, 0, 1, 0))
    dt, tol = precision(backend)
    g = mg.Graph()
    x = g.placeholder([-1, 2, 4, 3, 5], dt)
    w = g.placeholder([4, 2, 2, 2], dt)
    y = g.depthwise_convolution_3d(x, w, d)
    assert y.shape == (-1, 4, 5, 2, 5)
    dx = g.depthwise_convolution_3d_data_gradient(y, w, x.shape, d)
    dw = g.depthwise_convolution_3d_weights_gradient(y, x, w.shape, d)
    assert dx.shape == (-1, 2, 4, 3, 5) and dw.shape == (4, 2, 2, 2)
    # a dynamic spatial size in output_shape is recovered when the stride is 1
    assert g.depthwise_convolution_3d_data_gradient(y, w, [-1, 2, -1, 3, -1], d).shape == (-1, 2, 4, 3, 5)
    wv = rng.standard_normal((4, 2, 2, 2)).astype(dt.np_dtype)
    for n in (1, 3):
        xv = rng.standard_normal((n, 2, 4, 3, 5)).astype(dt.np_dtype)
        r = g.run({x: xv, w: wv}, [y, dx, dw], backend=backend)
        yv = n3.dw3d_forward(xv, wv, (1, 1, 1), (1, 1, 1), (1, 1, 0, 0, 1, 0))
        np.testing.assert_allclose(r[y], yv, **tol)
        np.testing.assert_allclose(r[dx], n3.dw3d_data_grad(yv, wv, xv.shape, (1, 1, 1), (1, 1, 1),
                                                            (1, 1, 0, 0, 1, 0)), **tol)
        np.testing.assert_allclose(r[dw], n3.dw3d_weights_grad(yv, xv, wv.shape, (1, 1, 1), (1, 1, 1),
                                                               (1, 1, 0, 0, 1, 0)), **tol)


def test_descriptor_defaults_and_copy():
    d = D3()
    assert (d.strides, d.dilation_rates, d.padding_values, d.padding_style, d.channel_dimension_index) == \
        ((1, 1, 1), (1, 1, 1), (0,) * 6, P.EXPLICIT, -4)
    rng = np.random.default_rng(41)
    x, w = rng.standard_normal((2, 4, 4, 4)), rng.standard_normal((2, 2, 2, 2))
    g = mg.Graph()
    y = g.depthwise_convolution_3d(g.constant(x), g.constant(w), d)
    d.strides, d.channel_dimension_index = (2, 2, 2), -1
    assert y.shape == (2, 3, 3, 3)
    np.testing.assert_allclose(g.run({}, [y])[y][None], n3.dw3d_forward(x[None], w, (1, 1, 1), (1, 1, 1), (0,) * 6))


def test_keyword_descriptor_three_ops_and_the_adjoint(rng):
    """Defaults, every field by keyword, rank-4 weights [C*M, kD, kH, kW], the forward op against
    the naive loop, both gradients through the adjoint identity, EXPLICIT_OFFSET refused."""
    d = mg.DepthwiseConvolution3DOpDescriptor()
    assert tuple(d.strides) == (1, 1, 1) and tuple(d.dilation_rates) == (1, 1, 1)
    assert tuple(d.padding_values) == (0,) * 6 and d.padding_style == mg.PaddingStyle.EXPLICIT
    assert d.channel_dimension_index == -4
    desc = mg.DepthwiseConvolution3DOpDescriptor(strides=[1, 1, 1], dilation_rates=[1, 1, 1],
                                                 padding_values=[0, 0, 1, 1, 1, 1],
                                                 padding_style=mg.PaddingStyle.EXPLICIT,
                                                 channel_dimension_index=-4)
    g = mg.Graph()
    C, M = 2, 2
    xv = f32(rng, 1, C, 3, 4, 4)
    wv = f32(rng, C * M, 2, 3, 3)  # rank 4: [C*M, kD, kH, kW] (channel_dimension_index -4)
    x = g.placeholder(list(xv.shape), mg.float32, name="x")
    w = g.placeholder(list(wv.shape), mg.float32, name="w")
    y = g.depthwise_convolution_3d(x, w, descriptor=desc)
    assert y.shape == (1, C * M, 2, 4, 4)
    dyv = f32(rng, *y.shape)
    dyp = g.placeholder(list(y.shape), mg.float32, name="dy")
    dx = g.depthwise_convolution_3d_data_gradient(dyp, w, output_shape=x.shape, descriptor=desc)
    dw = g.depthwise_convolution_3d_weights_gradient(dyp, x, output_shape=w.shape, descriptor=desc)
    r = g.run({x: xv, w: wv, dyp: dyv}, [y, dx, dw])
    # the naive loop: output channel o reads input channel o // M
    ref = n3.dw3d_forward(xv, wv, (1, 1, 1), (1, 1, 1), (0, 0, 1, 1, 1, 1))
    assert ref.shape == y.shape
    np.testing.assert_allclose(r[y], ref, rtol=1e-4, atol=1e-4)
    lhs = float(np.sum(dyv * ref))
    assert abs(float(np.sum(r[dx] * xv)) - lhs) < 1e-3 * (1 + abs(lhs))
    assert abs(float(np.sum(r[dw] * wv)) - lhs) < 1e-3 * (1 + abs(lhs))
    with pytest.raises(mg.MiniGraphError):
        bad = mg.DepthwiseConvolution3DOpDescriptor(padding_style=mg.PaddingStyle.EXPLICIT_OFFSET)
        g.depthwise_convolution_3d(x, w, descriptor=bad)


def test_autodiff_emits_the_gradient_ops(backend):
    rng = np.random.default_rng(43)
    dt, tol = precision(backend)
    g = mg.Graph()
    x = g.placeholder([2, 2, 3, 4, 4], dt)
    w = g.placeholder([4, 2, 2, 2], dt)
    d = D3(strides=(1, 2, 1), padding_style=P.TF_SAME)
    y = g.depthwise_convolution_3d(x, w, d, name="dw3")
    loss = g.reduction_sum(g.square(y), axes=None)
    grads = g.gradients(loss, [x, w], name="grad")
    assert grads[x].operation.type == "depthwise_convolution_3d_data_gradient"
    assert grads[w].operation.type == "depthwise_convolution_3d_weights_gradient"
    xv = rng.standard_normal((2, 2, 3, 4, 4)).astype(dt.np_dtype)
    wv = rng.standard_normal((4, 2, 2, 2)).astype(dt.np_dtype)
    r = g.run({x: xv, w: wv}, [grads[x], grads[w]], backend=backend)
    rp = ref_pads("TF_SAME", (3, 4, 4), (2, 2, 2), (1, 2, 1), (1, 1, 1), (0,) * 6)
    dy = 2 * n3.dw3d_forward(xv, wv, (1, 2, 1), (1, 1, 1), rp)
    np.testing.assert_allclose(r[grads[x]], n3.dw3d_data_grad(dy, wv, xv.shape, (1, 2, 1), (1, 1, 1), rp), **tol)
    np.testing.assert_allclose(r[grads[w]], n3.dw3d_weights_grad(dy, xv, wv.shape, (1, 2, 1), (1, 1, 1), rp), **tol)
    assert not OPS["depthwise_convolution_3d_weights_gradient"].differentiable
    with pytest.raises(mg.NotDifferentiableError, match="depthwise_convolution_3d_weights_gradient op"):
        g.gradients(g.reduction_sum(grads[w], axes=None), [x])


def _fd(build, shapes, seed=0):
    """Central finite differences of sum(build(...) * r) against g.gradients, for every input."""
    values, rng = uniform_inputs(shapes, seed)
    check_gradients(build, values, rng)


FD_CASES = [(-4, "EXPLICIT", 2), (-1, "TF_SAME", 1), (-2, "ONNX_SAME_LOWER", 2), (-3, "TF_VALID", 1)]


@pytest.mark.parametrize("cdi,style,M", FD_CASES, ids=str)
def test_finite_differences(cdi, style, M):
    """The forward op's rule and the data-gradient op's rule (to dy and to W)."""
    d = D3(strides=(2, 1, 1), dilation_rates=(1, 1, 2), padding_values=(1, 0, 0, 1, 1, 1), padding_style=P[style],
           channel_dimension_index=cdi)
    xs = to_cdi(np.zeros((1, 2, 3, 3, 4)), cdi).shape
    ws = to_cdi(np.zeros((2 * M, 2, 2, 2)), cdi).shape
    _fd(lambda g, x, w: g.depthwise_convolution_3d(x, w, d), [xs, ws])
    g = mg.Graph()
    ys = g.depthwise_convolution_3d(g.placeholder(xs, mg.float64), g.placeholder(ws, mg.float64), d).shape
    _fd(lambda g, dy, w: g.depthwise_convolution_3d_data_gradient(dy, w, xs, d), [ys, ws], seed=1)


# ----------------------------------------------------------------------------- validation
def _ph(g, shape, dtype=mg.float32):
    return g.placeholder(shape, dtype)


def _fwd(xs, ws, desc=None, xdt=mg.float32, wdt=mg.float32):
    g = mg.Graph()
    return g.depthwise_convolution_3d(_ph(g, xs, xdt), _ph(g, ws, wdt), desc, name="bad")


def _data(dys, ws, out, desc=None):
    g = mg.Graph()
    return g.depthwise_convolution_3d_data_gradient(_ph(g, dys), _ph(g, ws), out, desc, name="bad")


def _weights(dys, xs, out, desc=None):
    g = mg.Graph()
    return g.depthwise_convolution_3d_weights_gradient(_ph(g, dys), _ph(g, xs), out, desc, name="bad")


T, TD, TW = ("depthwise_convolution_3d", "depthwise_convolution_3d_data_gradient",
             "depthwise_convolution_3d_weights_gradient")
ERRORS = [
    ("source_rank", T, lambda: _fwd([2, 4, 4], [2, 1, 1, 1]), mg.ShapeError, ["rank >= 4", "(2, 4, 4)"]),
    ("weights_rank", T, lambda: _fwd([1, 2, 4, 4, 4], [2, 1, 1]), mg.ShapeError, ["weights", "rank 4"]),
    ("weights_rank5", T, lambda: _fwd([1, 2, 4, 4, 4], [1, 2, 1, 1, 1]), mg.ShapeError, ["rank 4"]),
    ("channels_not_multiple", T, lambda: _fwd([1, 2, 4, 4, 4], [3, 2, 2, 2]), mg.ShapeError,
     ["3 channels", "multiple", "2 channels"]),
    ("dtype_mismatch", T, lambda: _fwd([1, 2, 4, 4, 4], [2, 2, 2, 2], None, mg.float32, mg.float16), mg.DTypeError,
     ["float16"]),
    ("int_dtype", T, lambda: _fwd([1, 2, 4, 4, 4], [2, 2, 2, 2], None, mg.int32, mg.int32), mg.DTypeError, ["int32"]),
    ("explicit_offset", T, lambda: _fwd([1, 2, 4, 4, 4], [2, 2, 2, 2], D3(padding_style=P.EXPLICIT_OFFSET)),
     mg.DescriptorError, ["EXPLICIT_OFFSET"]),
    ("stride_zero", T, lambda: _fwd([1, 2, 4, 4, 4], [2, 2, 2, 2], D3(strides=(1, 0, 1))), mg.DescriptorError,
     ["strides[1]=0"]),
    ("stride_count", T, lambda: _fwd([1, 2, 4, 4, 4], [2, 2, 2, 2], D3(strides=(1, 1))), mg.DescriptorError,
     ["strides", "3 values"]),
    ("dilation_zero", T, lambda: _fwd([1, 2, 4, 4, 4], [2, 2, 2, 2], D3(dilation_rates=(0, 1, 1))),
     mg.DescriptorError, ["dilation_rates[0]=0"]),
    ("negative_padding", T, lambda: _fwd([1, 2, 4, 4, 4], [2, 2, 2, 2], D3(padding_values=(0, 0, -1, 0, 0, 0))),
     mg.DescriptorError, ["padding_values[2]=-1"]),
    ("channel_index", T, lambda: _fwd([1, 2, 4, 4, 4], [2, 2, 2, 2], D3(channel_dimension_index=-5)),
     mg.DescriptorError, ["channel_dimension_index=-5"]),
    ("wrong_descriptor_class", T, lambda: _fwd([1, 2, 4, 4, 4], [2, 2, 2, 2], mg.Convolution2DOpDescriptor()),
     mg.DescriptorError, ["DepthwiseConvolution3DOpDescriptor"]),
    ("output_empty", T, lambda: _fwd([1, 2, 4, 1, 4], [2, 2, 2, 2]), mg.ShapeError, ["H", "size 1"]),
    ("data_rank_mismatch", TD, lambda: _data([1, 2, 3, 3, 3], [2, 2, 2, 2], [2, 4, 4, 4]), mg.ShapeError,
     ["rank of incoming_gradient"]),
    ("data_dy_channels", TD, lambda: _data([1, 3, 3, 3, 3], [2, 2, 2, 2], [1, 2, 4, 4, 4]), mg.ShapeError,
     ["3 channels", "C*M"]),
    ("data_output_channels", TD, lambda: _data([1, 4, 3, 3, 3], [4, 2, 2, 2], [1, 3, 4, 4, 4]), mg.ShapeError,
     ["4 channels", "multiple", "3 channels"]),
    ("data_wrong_spatial", TD, lambda: _data([1, 2, 3, 3, 3], [2, 2, 2, 2], [1, 2, 4, 5, 4]), mg.ShapeError,
     ["(3, 3, 3)", "(3, 4, 3)"]),
    ("data_batch", TD, lambda: _data([2, 2, 3, 3, 3], [2, 2, 2, 2], [1, 2, 4, 4, 4]), mg.ShapeError, ["batch"]),
    ("data_cannot_infer", TD, lambda: _data([1, 2, 1, 3, 3], [2, 3, 2, 2], None, D3(padding_values=(3, 3, 0, 0, 0, 0))),
     mg.ShapeError, ["cannot infer", "pass output_shape"]),
    ("weights_output_rank", TW, lambda: _weights([1, 2, 3, 3, 3], [1, 2, 4, 4, 4], [2, 2, 2]), mg.ShapeError,
     ["exactly 4"]),
    ("weights_wrong_kernel", TW, lambda: _weights([1, 2, 3, 3, 3], [1, 2, 4, 4, 4], [2, 2, 3, 2]), mg.ShapeError,
     ["(3, 3, 3)", "(3, 2, 3)", "kernel (2, 3, 2)"]),
    ("weights_channels", TW, lambda: _weights([1, 2, 3, 3, 3], [1, 2, 4, 4, 4], [4, 2, 2, 2]), mg.ShapeError,
     ["2 channels", "4 weight channels"]),
    ("weights_source_channels", TW, lambda: _weights([1, 4, 3, 3, 3], [1, 3, 4, 4, 4], [4, 2, 2, 2]),
     mg.ShapeError, ["not a multiple", "3 channels"]),
    ("weights_rank_mismatch", TW, lambda: _weights([2, 3, 3, 3], [1, 2, 4, 4, 4], [2, 2, 2, 2]), mg.ShapeError,
     ["same rank"]),
]


@pytest.mark.parametrize("op_type,build,err,parts", [e[1:] for e in ERRORS], ids=[e[0] for e in ERRORS])
def test_validation_errors(op_type, build, err, parts):
    with pytest.raises(err) as info:
        build()
    msg = str(info.value)
    assert f"{op_type} op 'bad'" in msg, msg
    for p in parts:
        assert p in msg, (p, msg)
