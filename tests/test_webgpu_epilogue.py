"""Epilogues on the webgpu backend (minigraph/backends/webgpu/epilogue.py).

A ``fused_epilogue`` step computes a convolution, matmul or ``normalize`` and its elementwise
tail in one kernel: the tail is applied where the GEMM stores (or where a split product's pieces
are summed, or where the normalized value is stored).
Each case runs the fused plan on webgpu and checks it against the same graph compiled with
``fusion=False`` on the numpy backend (within float32 rounding), that the tail really joined its
anchor (one fused step) and that the plan records fewer dispatches than the unfused one.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

import minigraph as mg
from minigraph.backends.webgpu import gemm
from minigraph.backends.webgpu.epilogue import EPILOGUE_FACTORIES, broadcast_index
from minigraph.descriptors import Convolution2DOpDescriptor

UNFUSED = mg.CompilationDescriptor(fusion=False)


@pytest.fixture(autouse=True)
def _on_webgpu(webgpu):
    """Every test here runs the webgpu backend: skipped where it does not work (the webgpu extra)."""


def _tail(kind, g, y, c):
    """The elementwise tail ``kind`` on ``y``; ``c`` is the anchor's output channel count."""
    if kind == "relu":
        return g.relu(y), {}
    if kind == "bias_relu6":
        b = g.placeholder((c, 1, 1) if y.shape[-1] != c else (c,), mg.float32, name="bias")
        return g.clamp(g.addition(y, b), g.constant(0.0), g.constant(6.0)), {"bias": b}
    if kind == "mask":
        m = g.placeholder(y.shape, mg.float32, name="m")
        return g.select(g.greater_than(m, g.constant(0.0)), y, g.constant(0.0)), {"m": m}
    if kind == "sgd":
        w = g.placeholder(y.shape, mg.float32, name="w")
        return g.subtraction(w, g.multiplication(g.constant(0.125), y)), {"w": w}
    raise ValueError(kind)


def _check(g, feeds, target, anchor):
    desc_types = {t: mg.ShapedType(v.shape, mg.float32) for t, v in feeds.items()}
    exe = g.compile(desc_types, [target], backend="webgpu")
    kinds = [s.kernel for s in exe.steps if s.fused]
    assert len(kinds) == 1 and kinds[0].startswith(f"fused_epilogue({anchor}+"), kinds
    unf = g.compile(desc_types, [target], backend="webgpu", compilation_descriptor=UNFUSED)
    got = g.run(feeds, [target], backend="webgpu")[target]
    ref = g.run(feeds, [target], backend="numpy", compilation_descriptor=UNFUSED)[target]
    got, ref = np.asarray(got, np.float64), np.asarray(ref, np.float64)
    scale = np.abs(ref).max() + 1
    assert np.abs(got - ref).max() <= 1e-5 * scale
    assert len(exe._runner.dispatches) < len(unf._runner.dispatches)


def _data(rng, shape):
    return rng.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("kind", ["relu", "bias_relu6", "mask", "sgd"])
@pytest.mark.parametrize("mkn", [(64, 96, 80), (8, 40, 12), (33, 1100, 70)])
def test_matmul_epilogue(kind, mkn):
    M, K, N = mkn
    rng = np.random.default_rng(M + K)
    g = mg.Graph()
    a = g.placeholder((M, K), mg.float32, name="a")
    b = g.placeholder((K, N), mg.float32, name="b")
    y, extra = _tail(kind, g, g.matrix_multiplication(a, b), N)
    feeds = {a: _data(rng, (M, K)), b: _data(rng, (K, N))}
    feeds.update({t: _data(rng, t.shape) for t in extra.values()})
    _check(g, feeds, y, "matrix_multiplication")


@pytest.mark.parametrize("kind", ["relu", "bias_relu6", "mask"])
@pytest.mark.parametrize("shape", [(2, 24, 16, 9, 9), (8, 960, 32, 7, 7)])  # N, Cin, Cout, H, W (K = 960 split)
def test_pointwise_forward_and_data_gradient(kind, shape):
    n, ci, co, h, w = shape
    rng = np.random.default_rng(ci)
    for direction in ("forward", "data_gradient"):
        g = mg.Graph()
        wt = g.placeholder((co, ci, 1, 1), mg.float32, name="wt")
        d = Convolution2DOpDescriptor()
        if direction == "forward":
            x = g.placeholder((n, ci, h, w), mg.float32, name="x")
            y, c, anchor = g.convolution_2d(x, wt, d), co, "convolution_2d"
        else:
            x = g.placeholder((n, co, h, w), mg.float32, name="x")
            y, c, anchor = g.convolution_2d_data_gradient(x, wt, (n, ci, h, w), d), ci, "convolution_2d_data_gradient"
        y, extra = _tail(kind, g, y, c)
        feeds = {x: _data(rng, x.shape), wt: _data(rng, wt.shape)}
        feeds.update({t: _data(rng, t.shape) for t in extra.values()})
        _check(g, feeds, y, anchor)


@pytest.mark.parametrize("kind", ["sgd", "relu"])
@pytest.mark.parametrize("shape", [(2, 24, 16, 9, 9), (2, 96, 96, 16, 16)])
def test_pointwise_weights_gradient(kind, shape):
    n, ci, co, h, w = shape
    rng = np.random.default_rng(co)
    g = mg.Graph()
    dy = g.placeholder((n, co, h, w), mg.float32, name="dy")
    x = g.placeholder((n, ci, h, w), mg.float32, name="x")
    y, extra = _tail(kind, g, g.convolution_2d_weights_gradient(dy, x, (co, ci, 1, 1), Convolution2DOpDescriptor()), co)
    feeds = {dy: _data(rng, dy.shape), x: _data(rng, x.shape)}
    feeds.update({t: _data(rng, t.shape) for t in extra.values()})
    _check(g, feeds, y, "convolution_2d_weights_gradient")


def test_registered_anchor_types():
    for t in ("matrix_multiplication", "convolution_2d", "convolution_2d_data_gradient",
              "convolution_2d_weights_gradient", "depthwise_convolution_2d", "depthwise_convolution_2d_data_gradient",
              "normalize"):
        assert t in EPILOGUE_FACTORIES


@pytest.mark.parametrize("in_shape,out_shape", [((3, 1, 1), (2, 3, 4, 5)), ((5,), (2, 3, 4, 5)),
                                                ((2, 1, 4, 1), (2, 3, 4, 5)), ((1,), (7, 2)), ((7, 2), (7, 2))])
def test_broadcast_index_matches_numpy(in_shape, out_shape):
    n = int(np.prod(out_shape))
    src = np.arange(int(np.prod(in_shape))).reshape(in_shape)
    want = np.broadcast_to(src, out_shape).reshape(-1)
    expr = broadcast_index(in_shape, out_shape, "i")
    py = expr.replace("u", "").replace("/", "//")
    got = np.array([eval(py, {"i": i}) for i in range(n)])  # noqa: S307 (our own arithmetic)
    np.testing.assert_array_equal(got, want)


def test_split_product_applies_the_epilogue_at_the_sum():
    """A long K over few output tiles is split; the tail is applied once, at the pieces' sum."""
    assert gemm.pieces_of(gemm.Gemm(32, 32, 2048, (2048, 1, 0), (32, 0, 1), (32, 1))) > 1
    old = dict(gemm.TILING)
    gemm.TILING["mode"] = "always"
    try:
        rng = np.random.default_rng(5)
        g = mg.Graph()
        a = g.placeholder((32, 2048), mg.float32, name="a")
        b = g.placeholder((2048, 32), mg.float32, name="b")
        y, extra = _tail("bias_relu6", g, g.matrix_multiplication(a, b), 32)
        feeds = {a: _data(rng, a.shape), b: _data(rng, b.shape), extra["bias"]: _data(rng, (32,))}
        _check(g, feeds, y, "matrix_multiplication")
    finally:
        gemm.TILING.update(old)


def test_float16_epilogue_rounds_as_the_unfused_plan():
    """float16: the anchor's result and each intermediate rounded to float16 where the unfused
    plan stores them, so the fused result equals the unfused webgpu plan's."""
    from minigraph.backends.webgpu.device import get_context
    if not get_context().has_f16:
        pytest.skip("the adapter has no shader-f16")
    rng = np.random.default_rng(3)
    g = mg.Graph()
    a = g.placeholder((40, 24), mg.float16, name="a")
    b = g.placeholder((24, 72), mg.float16, name="b")
    bias = g.placeholder((72,), mg.float16, name="bias")
    y = g.relu(g.multiplication(g.addition(g.matrix_multiplication(a, b), bias), g.constant(0.3, mg.float16)))
    feeds = {a: rng.standard_normal((40, 24)).astype(np.float16), b: rng.standard_normal((24, 72)).astype(np.float16),
             bias: rng.standard_normal(72).astype(np.float16)}
    types = {t: mg.ShapedType(v.shape, mg.float16) for t, v in feeds.items()}
    exe = g.compile(types, [y], backend="webgpu")
    assert [s.kernel for s in exe.steps if s.fused] == ["fused_epilogue(matrix_multiplication+addition+multiplication+relu)"]
    got = g.run(feeds, [y], backend="webgpu")[y]
    unfused = g.run(feeds, [y], backend="webgpu", compilation_descriptor=UNFUSED)[y]
    np.testing.assert_array_equal(np.asarray(got), np.asarray(unfused))
    ref = g.run(feeds, [y], backend="numpy", compilation_descriptor=UNFUSED)[y]
    np.testing.assert_allclose(np.asarray(got, np.float32), np.asarray(ref, np.float32), rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("direction", ["forward", "data_gradient", "weights_gradient", "matmul"])
def test_long_reductions_split_in_every_direction(direction):
    """K = 960 over 7x7 images (MobileNetV2's last 1x1 layers) is cut into pieces in every
    direction; the pieces are summed in a fixed order (equal bits on every run) and the result
    matches NumPy in float64."""
    rng = np.random.default_rng(11)
    g = mg.Graph()
    d = Convolution2DOpDescriptor()
    n, h, w, big, small = 8, 7, 7, 960, 32
    if direction == "forward":
        x, wt = g.placeholder((n, big, h, w), mg.float32), g.placeholder((small, big, 1, 1), mg.float32)
        y = g.convolution_2d(x, wt, d)
        M, N, K, batch = small, h * w, big, n
    elif direction == "data_gradient":
        x, wt = g.placeholder((n, big, h, w), mg.float32), g.placeholder((big, small, 1, 1), mg.float32)
        y = g.convolution_2d_data_gradient(x, wt, (n, small, h, w), d)
        M, N, K, batch = small, h * w, big, n
    elif direction == "weights_gradient":
        x, wt = g.placeholder((1, 48, h, w), mg.float32), g.placeholder((1, 40, h, w), mg.float32)
        y = g.convolution_2d_weights_gradient(x, wt, (48, 40, 1, 1), d)
        M, N, K, batch = 48, 40, h * w, 1
    else:
        x, wt = g.placeholder((8, big), mg.float32), g.placeholder((big, 70), mg.float32)
        y = g.matrix_multiplication(x, wt)
        M, N, K, batch = 8, 70, big, 1
    if direction == "matmul":
        assert gemm.split_length(K, -(-M // 16) * -(-N // 16) * batch, 16 * 1024)[0] > 1
    elif direction != "weights_gradient":
        assert gemm.pieces_of(gemm.Gemm(M, N, K, (0, 0, 0), (0, 0, 0), (0, 0), ((batch, 0, 0, 0),))) > 1
    feeds = {x: _data(rng, x.shape), wt: _data(rng, wt.shape)}
    before = gemm.RECORDED["gemm"]
    got = np.asarray(g.run(feeds, [y], backend="webgpu")[y])
    again = np.asarray(g.run(feeds, [y], backend="webgpu")[y])
    if direction in ("forward", "data_gradient"):
        assert gemm.RECORDED["gemm"] > before  # the tiled GEMM took it
    np.testing.assert_array_equal(got, again)
    a, b = (feeds[x].astype(np.float64), feeds[wt].astype(np.float64))
    if direction == "forward":
        ref = np.einsum("nchw,oc->nohw", a, b[:, :, 0, 0])
    elif direction == "data_gradient":
        ref = np.einsum("nohw,oc->nchw", a, b[:, :, 0, 0])
    elif direction == "weights_gradient":
        ref = np.einsum("nohw,nchw->oc", a, b)[:, :, None, None]
    else:
        ref = a @ b
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4 * np.abs(ref).max())


@pytest.mark.parametrize("kind", ["relu", "bias_relu6", "mask"])
@pytest.mark.parametrize("direction", ["forward", "data_gradient"])
def test_tiled_3x3_convolution_epilogue(kind, direction):
    """A 3x3 convolution (stride 2, padded) takes the tiled kernel, which applies the tail."""
    from minigraph.backends.webgpu import tiled_conv
    rng = np.random.default_rng(7)
    n, ci, co, h = 2, 6, 10, 33
    d = Convolution2DOpDescriptor(stride_in_x=2, stride_in_y=2, padding_left=1, padding_right=1, padding_top=1,
                                  padding_bottom=1)
    g = mg.Graph()
    wt = g.placeholder((co, ci, 3, 3), mg.float32, name="wt")
    if direction == "forward":
        x = g.placeholder((n, ci, h, h), mg.float32, name="x")
        y, c, anchor = g.convolution_2d(x, wt, d), co, "convolution_2d"
    else:
        x = g.placeholder((n, co, 17, 17), mg.float32, name="x")
        y, c, anchor = g.convolution_2d_data_gradient(x, wt, (n, ci, h, h), d), ci, "convolution_2d_data_gradient"
    y, extra = _tail(kind, g, y, c)
    feeds = {x: _data(rng, x.shape), wt: _data(rng, wt.shape)}
    feeds.update({t: _data(rng, t.shape) for t in extra.values()})
    before = tiled_conv.RECORDED[direction]
    _check(g, feeds, y, anchor)
    assert tiled_conv.RECORDED[direction] > before


@pytest.mark.parametrize("kind", ["relu", "bias_relu6", "mask"])
@pytest.mark.parametrize("direction", ["forward", "data_gradient"])
@pytest.mark.parametrize("stride", [1, 2])
def test_depthwise_convolution_epilogue(kind, direction, stride):
    """A depthwise 3x3 convolution (and its data gradient) applies the tail in its tiled kernel,
    as the six-block step's ReLU and its gradient's mask."""
    from minigraph.backends.webgpu import tiled_conv
    from minigraph.descriptors import DepthwiseConvolution2DOpDescriptor
    rng = np.random.default_rng(11)
    n, c, h = 2, 12, 19
    o = (h + 2 - 3) // stride + 1
    d = DepthwiseConvolution2DOpDescriptor(stride_in_x=stride, stride_in_y=stride, padding_left=1, padding_right=1,
                                           padding_top=1, padding_bottom=1)
    g = mg.Graph()
    wt = g.placeholder((1, c, 3, 3), mg.float32, name="wt")
    if direction == "forward":
        x = g.placeholder((n, c, h, h), mg.float32, name="x")
        y, anchor = g.depthwise_convolution_2d(x, wt, d), "depthwise_convolution_2d"
    else:
        x = g.placeholder((n, c, o, o), mg.float32, name="x")
        y = g.depthwise_convolution_2d_data_gradient(x, wt, (n, c, h, h), d)
        anchor = "depthwise_convolution_2d_data_gradient"
    y, extra = _tail(kind, g, y, c)
    feeds = {x: _data(rng, x.shape), wt: _data(rng, wt.shape)}
    feeds.update({t: _data(rng, t.shape) for t in extra.values()})
    before = tiled_conv.RECORDED[direction]
    _check(g, feeds, y, anchor)
    assert tiled_conv.RECORDED[direction] > before


# ------------------------------------------------------------------------- normalize as the anchor
BN_LAYOUTS = {"NCHW": ((2, 5, 7, 9), [0, 2, 3], (1, 5, 1, 1)), "NHWC": ((2, 7, 9, 37), [0, 1, 2], (37,))}


def _has_f16() -> bool:
    from minigraph.backends.webgpu.device import get_context
    return get_context().has_f16


def _batch_norm(g, x, axes, pshape, dtype, name="bn"):
    """normalize(x, mean, variance, gamma, beta) over ``axes``, gamma and beta placeholders."""
    gamma = g.placeholder(pshape, dtype, name=f"{name}_gamma")
    beta = g.placeholder(pshape, dtype, name=f"{name}_beta")
    y = g.normalize(x, g.mean(x, axes), g.variance(x, axes), gamma, beta, 1e-5, name=name)
    return y, gamma, beta


def _naive_batch_norm(x, axes, gamma, beta):
    """The batch norm in float64 from its formula."""
    x = x.astype(np.float64)
    m = x.mean(axis=tuple(axes), keepdims=True)
    v = ((x - m) ** 2).mean(axis=tuple(axes), keepdims=True)
    return (x - m) / np.sqrt(v + 1e-5) * gamma.astype(np.float64) + beta.astype(np.float64)


def _epilogue_kernels(exe) -> list:
    return [s.kernel for s in exe.steps if s.type == "fused_epilogue"]


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("layout", list(BN_LAYOUTS))
def test_normalize_relu6_epilogue(layout, dtype):
    """Batch norm + ReLU6: one fused_epilogue(normalize+clamp) step (two dispatches in all, the
    statistics' and its own), the unfused webgpu plan's values (float32: within rounding; float16: the same
    bits, the anchor's result rounded where the unfused plan stores it), NumPy's and the formula's."""
    if dtype == "float16" and not _has_f16():
        pytest.skip("the adapter has no shader-f16")
    shape, axes, pshape = BN_LAYOUTS[layout]
    dt, np_dt = getattr(mg, dtype), np.dtype(dtype)
    rng = np.random.default_rng(len(shape) + shape[-1])
    g = mg.Graph()
    x = g.placeholder(shape, dt, name="x")
    y, gamma, beta = _batch_norm(g, x, axes, pshape, dt)
    out = g.clamp(y, g.constant(0.0, dt), g.constant(6.0, dt))
    feeds = {x: (3 * rng.standard_normal(shape) + 1).astype(np_dt),
             gamma: rng.uniform(0.5, 4.0, pshape).astype(np_dt), beta: rng.uniform(-1, 3, pshape).astype(np_dt)}
    types = {t: mg.ShapedType(v.shape, dt) for t, v in feeds.items()}
    exe = g.compile(types, [out], backend="webgpu")
    assert _epilogue_kernels(exe) == ["fused_epilogue(normalize+clamp)"]
    unf = g.compile(types, [out], backend="webgpu", compilation_descriptor=UNFUSED)
    assert len(exe._runner.dispatches) == 2  # the statistics, then normalize and clamp
    got = np.asarray(exe.run(feeds)[0], np.float64)
    plain = np.asarray(unf.run(feeds)[0], np.float64)
    ref = np.asarray(g.run(feeds, [out], backend="numpy", compilation_descriptor=UNFUSED)[out], np.float64)
    want = np.clip(_naive_batch_norm(feeds[x], axes, feeds[gamma], feeds[beta]), 0, 6)
    assert 0 < (got == 0).mean() < 1 and 0 < (got == 6).mean() < 1  # both bounds are met
    if dtype == "float16":
        np.testing.assert_array_equal(got, plain)
        np.testing.assert_allclose(got, ref, atol=2e-2)
        np.testing.assert_allclose(got, want, atol=4e-2)
    else:
        np.testing.assert_allclose(got, plain, atol=1e-5)
        np.testing.assert_allclose(got, ref, atol=1e-5)
        np.testing.assert_allclose(got, want, atol=1e-5)


@pytest.mark.parametrize("residual", ["full", "per_channel", "scalar"])
@pytest.mark.parametrize("layout", list(BN_LAYOUTS))
def test_normalize_epilogue_with_a_second_input(layout, residual):
    """A tail that reads another tensor, broadcast to the output (a residual addition, a
    per-channel shift, a scalar), and a leaky_relu (its alpha a uniform word): the epilogue's
    bindings follow the normalize kernel's own."""
    shape, axes, pshape = BN_LAYOUTS[layout]
    rng = np.random.default_rng(shape[1])
    g = mg.Graph()
    x = g.placeholder(shape, mg.float32, name="x")
    y, gamma, beta = _batch_norm(g, x, axes, pshape, mg.float32)
    r_shape = {"full": shape, "per_channel": pshape, "scalar": ()}[residual]
    r = g.placeholder(r_shape, mg.float32, name="r")
    out = g.leaky_relu(g.addition(y, r), 0.25)
    feeds = {x: _data(rng, shape), gamma: rng.uniform(0.5, 1.5, pshape).astype(np.float32),
             beta: _data(rng, pshape), r: _data(rng, r_shape)}
    types = {t: mg.ShapedType(v.shape, mg.float32) for t, v in feeds.items()}
    exe = g.compile(types, [out], backend="webgpu")
    assert _epilogue_kernels(exe) == ["fused_epilogue(normalize+addition+leaky_relu)"]
    got = np.asarray(exe.run(feeds)[0], np.float64)
    plain = np.asarray(g.run(feeds, [out], backend="webgpu", compilation_descriptor=UNFUSED)[out], np.float64)
    ref = np.asarray(g.run(feeds, [out], backend="numpy", compilation_descriptor=UNFUSED)[out], np.float64)
    s = _naive_batch_norm(feeds[x], axes, feeds[gamma], feeds[beta]) + feeds[r].astype(np.float64)
    want = np.where(s >= 0, s, 0.25 * s)
    for other in (plain, ref, want):
        np.testing.assert_allclose(got, other, atol=1e-5 * (np.abs(want).max() + 1))


def test_normalize_epilogue_with_the_normalized_value_read_twice():
    """A tail that reads the anchor's result twice (y * y + y) and one whose result is a target
    besides: neither changes what the normalize step computes."""
    shape, axes, pshape = BN_LAYOUTS["NCHW"]
    rng = np.random.default_rng(2)
    g = mg.Graph()
    x = g.placeholder(shape, mg.float32, name="x")
    y, gamma, beta = _batch_norm(g, x, axes, pshape, mg.float32)
    out = g.addition(g.multiplication(y, y), y)
    feeds = {x: _data(rng, shape), gamma: _data(rng, pshape), beta: _data(rng, pshape)}
    types = {t: mg.ShapedType(v.shape, mg.float32) for t, v in feeds.items()}
    exe = g.compile(types, [out], backend="webgpu")
    assert _epilogue_kernels(exe) == ["fused_epilogue(normalize+multiplication+addition)"]
    n = _naive_batch_norm(feeds[x], axes, feeds[gamma], feeds[beta])
    np.testing.assert_allclose(np.asarray(exe.run(feeds)[0], np.float64), n * n + n, atol=1e-5 * (n * n).max())
    both = g.compile(types, [out, y], backend="webgpu")  # the normalized value is a target: no epilogue
    assert _epilogue_kernels(both) == []
    got, got_y = both.run(feeds)
    np.testing.assert_allclose(np.asarray(got_y, np.float64), n, atol=1e-5 * np.abs(n).max())


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("layout", list(BN_LAYOUTS))
def test_normalize_epilogue_keeps_the_normalized_value_for_later_readers(layout, dtype):
    """The normalized value read by the ReLU6 and by a later step (a reduction here, the ReLU6's
    gradient in training): one fused_epilogue(normalize+clamp) step of two outputs, the clamped
    and the normalized values, and no normalize step of its own; both equal the unfused plan's."""
    if dtype == "float16" and not _has_f16():
        pytest.skip("the adapter has no shader-f16")
    shape, axes, pshape = BN_LAYOUTS[layout]
    dt, np_dt = getattr(mg, dtype), np.dtype(dtype)
    rng = np.random.default_rng(shape[-1])
    g = mg.Graph()
    x = g.placeholder(shape, dt, name="x")
    y, gamma, beta = _batch_norm(g, x, axes, pshape, dt)
    out = g.clamp(y, g.constant(0.0, dt), g.constant(6.0, dt))
    later = g.reduction_maximum(g.cast(y, mg.float32), axes)
    feeds = {x: (3 * rng.standard_normal(shape) + 1).astype(np_dt),
             gamma: rng.uniform(2.0, 4.0, pshape).astype(np_dt), beta: rng.uniform(1, 3, pshape).astype(np_dt)}
    types = {t: mg.ShapedType(v.shape, dt) for t, v in feeds.items()}
    exe = g.compile(types, [out, later], backend="webgpu")
    (st,) = [s for s in exe.steps if s.type == "fused_epilogue"]
    assert st.kernel == "fused_epilogue(normalize+clamp)" and len(st.outputs) == 2
    assert "normalize" not in [s.kernel for s in exe.steps]
    assert any(st.outputs[1] in s.inputs for s in exe.steps)  # the later reader reads the kept value
    from minigraph.listing import describe_executable
    assert re.search(r"free: (.*, )?bn\b", describe_executable(exe))  # the listing names the kept value
    got, got_later = (np.asarray(a, np.float64) for a in exe.run(feeds))
    plain, plain_later = (np.asarray(a, np.float64) for a in
                          g.compile(types, [out, later], backend="webgpu", compilation_descriptor=UNFUSED).run(feeds))
    n = _naive_batch_norm(feeds[x], axes, feeds[gamma], feeds[beta])
    want, want_later = np.clip(n, 0, 6), n.max(axis=tuple(axes), keepdims=True)
    assert 0 < (got == 0).mean() < 1 and 0 < (got == 6).mean() < 1
    if dtype == "float16":
        np.testing.assert_array_equal(got, plain)
        np.testing.assert_array_equal(got_later, plain_later)
        atol = 4e-2
    else:
        np.testing.assert_allclose(got, plain, atol=1e-5)
        np.testing.assert_allclose(got_later, plain_later, atol=1e-5)
        atol = 1e-5 * np.abs(n).max()
    np.testing.assert_allclose(got, want, atol=atol)
    np.testing.assert_allclose(got_later, want_later, atol=atol)


def test_a_declined_keeping_epilogue_runs_the_anchor_into_its_kept_output(monkeypatch):
    """Where the anchor's epilogue kernel declines, the anchor's own kernel writes the kept
    output and the tail runs over it: two dispatches, both outputs the unfused plan's."""
    shape, axes, pshape = BN_LAYOUTS["NHWC"]
    rng = np.random.default_rng(8)
    g = mg.Graph()
    x = g.placeholder(shape, mg.float32, name="x")
    y, gamma, beta = _batch_norm(g, x, axes, pshape, mg.float32)
    out = g.clamp(y, g.constant(0.0), g.constant(1.0))
    later = g.reduction_sum(y, axes)
    feeds = {x: _data(rng, shape), gamma: _data(rng, pshape), beta: _data(rng, pshape)}
    types = {t: mg.ShapedType(v.shape, mg.float32) for t, v in feeds.items()}
    fused = g.compile(types, [out, later], backend="webgpu")
    monkeypatch.setitem(EPILOGUE_FACTORIES, "normalize", lambda step, kb, epi: False)
    declined = g.compile(types, [out, later], backend="webgpu")
    assert [len(s.outputs) for s in declined.steps if s.type == "fused_epilogue"] == [2]
    assert len(declined._runner.dispatches) == len(fused._runner.dispatches) + 1
    plain = g.compile(types, [out, later], backend="webgpu", compilation_descriptor=UNFUSED).run(feeds)
    for exe in (fused, declined):
        for a, p in zip(exe.run(feeds), plain):
            np.testing.assert_allclose(np.asarray(a), np.asarray(p), atol=1e-5 * (np.abs(np.asarray(p)).max() + 1))


@pytest.mark.parametrize("layout", list(BN_LAYOUTS))
def test_mobilenet_like_residual_block_through_autodiff(layout):
    """conv 1x1 -> batch norm -> ReLU6 -> depthwise 3x3 -> batch norm -> + the block's input (an
    inverted residual), a loss and its gradients: the first batch norm and its ReLU6 are one
    fused_epilogue step that keeps the normalized value for the ReLU6's gradient, the second
    batch norm, the residual addition and the loss's subtraction another, and the loss and gradients agree with the
    numpy backend's and with the webgpu plan without fusion within float32 rounding."""
    shape, axes, _ = BN_LAYOUTS[layout]
    shape = (2, 6, 12, 12) if layout == "NCHW" else (2, 12, 12, 6)
    c = 6
    pshape = (1, c, 1, 1) if layout == "NCHW" else (c,)
    dl = mg.TensorNamedDataLayout.NCHW if layout == "NCHW" else mg.TensorNamedDataLayout.NHWC
    rng = np.random.default_rng(21)
    g = mg.Graph()
    x = g.placeholder(list(shape), name="x")
    w1 = g.variable(rng.standard_normal((c, c, 1, 1)).astype(np.float32), name="w1")
    wd = g.variable(rng.standard_normal((1, c, 3, 3)).astype(np.float32), name="wd")
    params = [w1, wd]

    def bn(h, k):
        gamma = g.variable(rng.uniform(0.5, 1.5, pshape).astype(np.float32), name=f"gamma{k}")
        beta = g.variable(rng.standard_normal(pshape).astype(np.float32), name=f"beta{k}")
        params.extend([gamma, beta])
        return g.normalize(h, g.mean(h, axes), g.variance(h, axes), gamma, beta, 1e-5, name=f"bn{k}")
    h = g.convolution_2d(x, w1, mg.Convolution2DOpDescriptor(data_layout=dl, weights_layout=mg.TensorNamedDataLayout.OIHW))
    h = g.clamp(bn(h, 1), g.constant(np.float32(0)), g.constant(np.float32(6)))
    h = g.depthwise_convolution_2d(h, wd, mg.DepthwiseConvolution2DOpDescriptor(
        padding_left=1, padding_right=1, padding_top=1, padding_bottom=1, data_layout=dl,
        weights_layout=mg.TensorNamedDataLayout.OIHW))
    y = g.addition(bn(h, 2), x)
    target = g.constant(rng.standard_normal(y.shape).astype(np.float32))
    loss = g.reduction_sum(g.square(g.subtraction(y, target)))
    grads = g.gradients(loss, params + [x])
    ts = [loss] + [grads[p] for p in params + [x]]
    feeds = {x: rng.standard_normal(shape).astype(np.float32)}
    types = {x: mg.ShapedType(shape)}
    exe = g.compile(types, ts, backend="webgpu")
    kinds = _epilogue_kernels(exe)
    assert "fused_epilogue(normalize+addition+subtraction)" in kinds  # and the loss's
    (relu6,) = [s for s in exe.steps if s.kernel == "fused_epilogue(normalize+clamp)"]
    assert len(relu6.outputs) == 2  # the normalized value kept for the ReLU6's gradient
    got = exe.run(feeds)
    ref = g.compile(types, ts, backend="numpy").run(feeds)
    plain = g.compile(types, ts, backend="webgpu", compilation_descriptor=UNFUSED).run(feeds)
    rtol = 8 * 2.0 ** -24 * np.sqrt(2 * 12 * 12 * 9)  # float32 rounding of the longest sums
    for a, b, p, t in zip(got, ref, plain, ts):
        want = np.asarray(b, np.float64)
        atol = rtol * float(np.abs(want).max())
        np.testing.assert_allclose(np.asarray(a, np.float64), want, rtol=rtol, atol=atol, err_msg=t.name)
        np.testing.assert_allclose(np.asarray(p, np.float64), want, rtol=rtol, atol=atol, err_msg=t.name)
