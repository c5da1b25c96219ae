"""Contract tests written from the text of issues 2, 3 and 4 alone (an outsider's reading).

Every name, keyword and return type here is the one the issue states; the references (NumPy
one-liners, a naive depthwise loop from the formula of MPSGRAPH.md §4.1, central differences)
share no code with minigraph's kernels.
"""
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import minigraph as mg

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def f32(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


# ============================================================== issue 2: packaging


def test_readme_example_runs():
    """The README's example block runs as written."""
    text = open(os.path.join(ROOT, "README.md")).read()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert blocks
    ns = {}
    exec(compile(blocks[0], "README.md", "exec"), ns)


# ============================================================== issue 2: graph API


# ------------------------------------------------------------------ variables


# ------------------------------------------------------------------ ops vs NumPy


# ------------------------------------------------------------------ compile and run


# ============================================================== issue 3: depthwise
def naive_depthwise(x, w, sy, sx, dy_, dx_, pads, nhwc=False, hwio=False):
    """From MPSGRAPH.md §4.1: y[n, c*M+m, oh, ow] = sum_ij x[n,c,ih,iw] W[m,c,i,j]."""
    if nhwc:
        x = x.transpose(0, 3, 1, 2)
    if hwio:
        w = w.transpose(3, 2, 0, 1)
    N, C, H, W = x.shape
    M, _, KH, KW = w.shape
    pt, pb, pl, pr = pads
    OH = (H + pt + pb - ((KH - 1) * dy_ + 1)) // sy + 1
    OW = (W + pl + pr - ((KW - 1) * dx_ + 1)) // sx + 1
    y = np.zeros((N, C * M, OH, OW), np.float64)
    for n in range(N):
        for c in range(C):
            for m in range(M):
                for oh in range(OH):
                    for ow in range(OW):
                        acc = 0.0
                        for i in range(KH):
                            for j in range(KW):
                                ih, iw = oh * sy + i * dy_ - pt, ow * sx + j * dx_ - pl
                                if 0 <= ih < H and 0 <= iw < W:
                                    acc += x[n, c, ih, iw] * w[m, c, i, j]
                        y[n, c * M + m, oh, ow] = acc
    return y.transpose(0, 2, 3, 1) if nhwc else y


def same_pads(size, k, s, d, lower):
    out = -(-size // s)
    total = max((out - 1) * s + (k - 1) * d + 1 - size, 0)
    small, big = total // 2, total - total // 2
    return (big, small) if lower else (small, big)


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


def test_op_copies_descriptor(rng):
    g = mg.Graph()
    x = g.placeholder([1, 2, 5, 5], mg.float32, name="x")
    w = g.constant(f32(rng, 1, 2, 3, 3))
    desc = mg.DepthwiseConvolution2DOpDescriptor()
    y = g.depthwise_convolution_2d(x, w, descriptor=desc, name="dw")
    desc.set_explicit_padding(1, 1, 1, 1)
    desc.stride_in_x = 2
    assert y.shape == (1, 2, 3, 3)
    y2 = g.depthwise_convolution_2d(x, w, descriptor=desc, name="dw2")
    assert y2.shape == (1, 2, 5, 3)
    xv = f32(rng, 1, 2, 5, 5)
    r = g.run({x: xv}, [y])[y]
    assert r.shape == (1, 2, 3, 3)


STYLES = ["EXPLICIT", "TF_VALID", "TF_SAME", "ONNX_SAME_LOWER"]


@pytest.mark.parametrize("style", STYLES)
@pytest.mark.parametrize("nhwc,hwio", [(False, False), (True, True), (False, True), (True, False)])
@pytest.mark.parametrize("M,s,d,H,W", [(1, (1, 1), (1, 1), 6, 5), (3, (2, 3), (1, 2), 7, 8)])
def test_depthwise_three_ops_against_naive(backend, style, nhwc, hwio, M, s, d, H, W):
    rng = np.random.default_rng(hash((style, nhwc, hwio, M)) % 2**32)
    N, C, KH, KW = 2, 3, 3, 2
    L = mg.TensorNamedDataLayout
    desc = mg.DepthwiseConvolution2DOpDescriptor(
        stride_in_x=s[1], stride_in_y=s[0], dilation_rate_in_x=d[1], dilation_rate_in_y=d[0],
        padding_style=mg.PaddingStyle[style],
        data_layout=L.NHWC if nhwc else L.NCHW, weights_layout=L.HWIO if hwio else L.OIHW)
    if style == "EXPLICIT":
        desc.set_explicit_padding(2, 0, 1, 3)  # asymmetric
        pads = (1, 3, 2, 0)
    elif style == "TF_VALID":
        pads = (0, 0, 0, 0)
    else:
        lower = style == "ONNX_SAME_LOWER"
        pads = same_pads(H, KH, s[0], d[0], lower) + same_pads(W, KW, s[1], d[1], lower)
    xv = f32(rng, N, C, H, W)
    wv = f32(rng, M, C, KH, KW)
    if nhwc:
        xv = np.ascontiguousarray(xv.transpose(0, 2, 3, 1))
    if hwio:
        wv = np.ascontiguousarray(wv.transpose(2, 3, 1, 0))
    yref = naive_depthwise(xv.astype(np.float64), wv.astype(np.float64), s[0], s[1], d[0], d[1], pads, nhwc, hwio)
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
    # dW against central... the definition: dW = sum dy * x(window) -> compare with the naive
    # forward's linearity in W: G(dy, x)[m,c,i,j] = <dy, F(x, e_{mcij})>
    basis = np.zeros_like(wv, dtype=np.float64)
    idx = (0, 0, 0, 0)
    basis[idx] = 1.0
    ref = float(np.sum(dyv * naive_depthwise(xv.astype(np.float64), basis, s[0], s[1], d[0], d[1], pads, nhwc, hwio)))
    assert abs(r[dw][idx] - ref) <= 1e-3 * (1 + abs(ref))


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


@pytest.mark.parametrize("style,H,k,s,pads,out", [
    ("EXPLICIT", 6, 3, 2, (1, 1), 3),
    ("TF_VALID", 6, 3, 2, (0, 0), 2),
    ("TF_SAME", 6, 3, 2, (0, 1), 3),
    ("ONNX_SAME_LOWER", 6, 3, 2, (1, 0), 3),
    ("TF_SAME", 6, 2, 1, (0, 1), 6),
    ("ONNX_SAME_LOWER", 6, 2, 1, (1, 0), 6),
    ("TF_SAME", 7, 3, 2, (1, 1), 4),
])
def test_padding_worked_examples(style, H, k, s, pads, out):
    """Worked examples of MPSGRAPH.md §3, seen through the output values with a kernel of ones
    on a ramp input: the first output tells the padding before."""
    desc = mg.DepthwiseConvolution2DOpDescriptor(stride_in_y=s, padding_style=mg.PaddingStyle[style])
    if style == "EXPLICIT":
        desc.padding_top, desc.padding_bottom = pads
    g = mg.Graph()
    xv = np.arange(1, H + 1, dtype=np.float32).reshape(1, 1, H, 1)
    y = g.depthwise_convolution_2d(g.constant(xv), g.constant(np.ones((1, 1, k, 1), np.float32)), descriptor=desc)
    assert y.shape == (1, 1, out, 1)
    r = g.run({}, [y])[y].reshape(-1)
    xp = np.concatenate([np.zeros(pads[0]), np.arange(1, H + 1), np.zeros(pads[1])])
    want = [xp[o * s:o * s + k].sum() for o in range(out)]
    np.testing.assert_allclose(r, want)


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


def test_gradient_ops_recompute_padding_from_forward_geometry(rng):
    """Stride 2: input sizes 7 and 8 give the same output size; output_shape picks one."""
    desc = mg.DepthwiseConvolution2DOpDescriptor(stride_in_x=2, stride_in_y=2,
                                                 padding_style=mg.PaddingStyle.TF_SAME)
    for H in (7, 8):
        g = mg.Graph()
        dy = g.placeholder([1, 2, 4, 4], mg.float32, name="dy")
        w = g.placeholder([1, 2, 3, 3], mg.float32, name="w")
        dx = g.depthwise_convolution_2d_data_gradient(dy, w, output_shape=[1, 2, H, H], descriptor=desc)
        assert dx.shape == (1, 2, H, H)


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


def test_depthwise_float16_close_to_float32(backend, rng):
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


def test_depthwise_3d_family(rng):
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
    # naive: output channel o reads input channel o // M
    xp = np.pad(xv.astype(np.float64), [(0, 0), (0, 0), (0, 0), (1, 1), (1, 1)])
    ref = np.zeros(y.shape)
    for o in range(C * M):
        for a in range(2):
            for b in range(4):
                for c_ in range(4):
                    ref[0, o, a, b, c_] = np.sum(xp[0, o // M, a:a + 2, b:b + 3, c_:c_ + 3] * wv[o])
    np.testing.assert_allclose(r[y], ref, rtol=1e-4, atol=1e-4)
    lhs = float(np.sum(dyv * ref))
    assert abs(float(np.sum(r[dx] * xv)) - lhs) < 1e-3 * (1 + abs(lhs))
    assert abs(float(np.sum(r[dw] * wv)) - lhs) < 1e-3 * (1 + abs(lhs))
    with pytest.raises(mg.MiniGraphError):
        bad = mg.DepthwiseConvolution3DOpDescriptor(padding_style=mg.PaddingStyle.EXPLICIT_OFFSET)
        g.depthwise_convolution_3d(x, w, descriptor=bad)


def test_grouped_convolution_and_separable_net(backend, rng):
    desc = mg.Convolution2DOpDescriptor(groups=2, padding_style=mg.PaddingStyle.TF_SAME)
    assert mg.Convolution2DOpDescriptor().groups == 1
    g = mg.Graph()
    xv, wv = f32(rng, 2, 4, 5, 5), f32(rng, 6, 2, 3, 3)
    x = g.placeholder([2, 4, 5, 5], mg.float32, name="x")
    w = g.placeholder([6, 2, 3, 3], mg.float32, name="w")
    y = g.convolution_2d(x, w, descriptor=desc, name="conv")
    assert y.shape == (2, 6, 5, 5)
    dyp = g.placeholder([2, 6, 5, 5], mg.float32, name="dy")
    dx = g.convolution_2d_data_gradient(dyp, w, output_shape=x.shape, descriptor=desc)
    dw = g.convolution_2d_weights_gradient(dyp, x, output_shape=w.shape, descriptor=desc)
    dyv = f32(rng, 2, 6, 5, 5)
    r = g.run({x: xv, w: wv, dyp: dyv}, [y, dx, dw], backend=backend)
    xp = np.pad(xv.astype(np.float64), [(0, 0), (0, 0), (1, 1), (1, 1)])
    ref = np.zeros((2, 6, 5, 5))
    for o in range(6):
        grp = o // 3
        for i in range(5):
            for j in range(5):
                ref[:, o, i, j] = np.sum(xp[:, grp * 2:grp * 2 + 2, i:i + 3, j:j + 3] * wv[o], axis=(1, 2, 3))
    np.testing.assert_allclose(r[y], ref, rtol=1e-4, atol=1e-4)
    lhs = float(np.sum(dyv * ref))
    assert abs(float(np.sum(r[dx] * xv)) - lhs) < 1e-3 * (1 + abs(lhs))
    assert abs(float(np.sum(r[dw] * wv)) - lhs) < 1e-3 * (1 + abs(lhs))
    # depthwise-separable: depthwise then 1x1 pointwise
    g2 = mg.Graph()
    x2 = g2.placeholder([1, 3, 6, 6], mg.float32, name="x")
    h = g2.depthwise_convolution_2d(x2, g2.constant(f32(rng, 2, 3, 3, 3)),
                                    descriptor=mg.DepthwiseConvolution2DOpDescriptor(
                                        padding_style=mg.PaddingStyle.TF_SAME))
    out = g2.convolution_2d(h, g2.constant(f32(rng, 4, 6, 1, 1)), descriptor=mg.Convolution2DOpDescriptor())
    assert out.shape == (1, 4, 6, 6)
    assert g2.run({x2: f32(rng, 1, 3, 6, 6)}, [out], backend=backend)[out].shape == (1, 4, 6, 6)


def test_pooling_and_gradients(backend, rng):
    desc = mg.Pooling2DOpDescriptor(kernel_width=2, kernel_height=2, stride_in_x=2, stride_in_y=2)
    g = mg.Graph()
    xv = f32(rng, 2, 3, 4, 6)
    x = g.placeholder([2, 3, 4, 6], mg.float32, name="x")
    mp = g.max_pooling_2d(x, descriptor=desc)
    ap = g.avg_pooling_2d(x, descriptor=desc)
    assert mp.shape == ap.shape == (2, 3, 2, 3)
    loss = g.reduction_sum(g.addition(g.square(mp), ap), axes=None)
    grads = g.gradients(loss, [x], name="grad")
    r = g.run({x: xv}, [mp, ap, grads[x]], backend=backend)
    blocks = xv.reshape(2, 3, 2, 2, 3, 2)
    np.testing.assert_allclose(r[mp], blocks.max(axis=(3, 5)), rtol=1e-6)
    np.testing.assert_allclose(r[ap], blocks.mean(axis=(3, 5)), rtol=1e-5)
    mx = blocks.max(axis=(3, 5), keepdims=True)
    want = ((blocks == mx) * 2 * mx + 0.25).reshape(2, 3, 4, 6)
    np.testing.assert_allclose(r[grads[x]], want, rtol=1e-5, atol=1e-6)
    assert any(o.type == "max_pooling_2d_gradient" for o in g.operations)
    assert any(o.type == "avg_pooling_2d_gradient" for o in g.operations)


def test_docs_have_descriptor_table_and_padding_examples():
    text = "".join(open(os.path.join(ROOT, "docs", f)).read() for f in os.listdir(os.path.join(ROOT, "docs"))
                   if f.endswith(".md"))
    for field in ("stride_in_x", "dilation_rate_in_y", "padding_style", "weights_layout"):
        assert f"| `{field}`" in text
    assert "ONNX_SAME_LOWER" in text and "TF_SAME" in text


# ============================================================== issue 4: autodiff and training


def _dw_graph(rng, layout="NCHW"):
    g = mg.Graph()
    x = g.placeholder([2, 3, 6, 6], mg.float32, name="x")
    w = g.variable(f32(rng, 2, 3, 3, 3), name="w")
    desc = mg.DepthwiseConvolution2DOpDescriptor(padding_style=mg.PaddingStyle.TF_SAME)
    y = g.depthwise_convolution_2d(x, w, descriptor=desc, name="dw")
    loss = g.reduction_sum(g.square(y), axes=None, name="loss")
    return g, x, w, y, loss, desc


def test_depthwise_weights_gradient_matches_finite_differences():
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
    exe = g.compile({x: mg.ShapedType([1, 2, 5, 5], mg.float64), w: mg.ShapedType([2, 2, 3, 3], mg.float64)},
                    [loss])
    fd = np.zeros_like(wv)
    eps = 1e-6
    for idx in np.ndindex(*wv.shape):
        p, m_ = wv.copy(), wv.copy()
        p[idx] += eps
        m_[idx] -= eps
        fd[idx] = (exe.run({x: xv, w: p})[0].item() - exe.run({x: xv, w: m_})[0].item()) / (2 * eps)
    np.testing.assert_allclose(auto, fd, rtol=1e-5, atol=1e-7)


def test_weights_gradient_op_not_differentiable_error_names_it(rng):
    g, x, w, y, loss, desc = _dw_graph(rng)
    gw = g.gradients(loss, [w], name="grad")[w]
    second = g.reduction_sum(g.square(gw), axes=None)
    with pytest.raises(mg.MiniGraphError) as ei:
        g.gradients(second, [x], name="grad2")
    assert isinstance(ei.value, mg.NotDifferentiableError)
    assert "depthwise_convolution_2d_weights_gradient" in str(ei.value)
    assert "grad/dw/depthwise_convolution_2d_weights_gradient" in str(ei.value)


# ============================================================== issue 4: the demo


# ============================================================== builtins an outsider may catch


@pytest.mark.parametrize("style", ["TF_VALID", "TF_SAME", "EXPLICIT"])
def test_depthwise_against_torch(style):
    torch = pytest.importorskip("torch")
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
        ph = same_pads(H, k, 1, 2, False)
        pw = same_pads(W, k, 2, 1, False)
        txp = torch.nn.functional.pad(tx, (pw[0], pw[1], ph[0], ph[1]))
    ty = torch.nn.functional.conv2d(txp, tw, stride=(1, 2), dilation=(2, 1), groups=C)
    np.testing.assert_allclose(r[y], ty.detach().numpy(), rtol=1e-10, atol=1e-10)
    ty.backward(torch.tensor(dyv))
    np.testing.assert_allclose(r[dx], tx.grad.numpy(), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(r[dw], tw.grad.numpy().reshape(C, M, k, k).transpose(1, 0, 2, 3),
                               rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("padding", ["SAME", "VALID"])
def test_depthwise_against_jax_nhwc_hwio(padding):
    jax = pytest.importorskip("jax")
    before = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    try:
        _jax_check(jax, padding)
    finally:
        jax.config.update("jax_enable_x64", before)


def _jax_check(jax, padding):
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


