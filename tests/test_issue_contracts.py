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


# ============================================================== issue 4: the demo


# ============================================================== builtins an outsider may catch


