"""Grouped 2D convolution: forward, data gradient, weights gradient (docs/mpsgraph-spec.md §3, §6).

References share no code with the kernels: the naive loops of ``naive_conv`` (written from the
formulas), the adjoint identity, finite differences, and PyTorch / JAX when installed.
"""
from __future__ import annotations


import numpy as np
import pytest

import minigraph as mg
from minigraph.descriptors import Convolution2DOpDescriptor, PaddingStyle, TensorNamedDataLayout
from minigraph.ops.registry import OPS

import naive_conv as nv
from gradcheck import check_gradients, uniform_inputs

C2 = Convolution2DOpDescriptor
P = PaddingStyle
L = TensorNamedDataLayout
STYLES = ("EXPLICIT", "TF_VALID", "TF_SAME", "ONNX_SAME_LOWER")
LAYOUTS = [("NCHW", "OIHW"), ("NCHW", "HWIO"), ("NHWC", "OIHW"), ("NHWC", "HWIO")]


def f32(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


# ----------------------------------------------------------------------------- test-side layout helpers
def to_data(a, layout):
    return np.ascontiguousarray(a if layout == "NCHW" else a.transpose(0, 2, 3, 1))


def from_data(a, layout):
    return a if layout == "NCHW" else a.transpose(0, 3, 1, 2)


def to_weights(w, layout):
    """OIHW [Cout, Cin/g, kH, kW] -> layout (HWIO [kH, kW, Cin/g, Cout])."""
    return np.ascontiguousarray(w if layout == "OIHW" else w.transpose(2, 3, 1, 0))


def from_weights(w, layout):
    return w if layout == "OIHW" else w.transpose(3, 2, 0, 1)


def make_desc(style="EXPLICIT", stride=(1, 1), dilation=(1, 1), pads=(0, 0, 0, 0), groups=1,
              layouts=("NCHW", "OIHW")):
    """pads = (top, bottom, left, right), as in naive_conv."""
    t, b, lft, r = pads
    return C2(stride_in_x=stride[1], stride_in_y=stride[0], dilation_rate_in_x=dilation[1],
              dilation_rate_in_y=dilation[0], padding_left=lft, padding_right=r, padding_top=t,
              padding_bottom=b, padding_style=P[style], data_layout=L[layouts[0]],
              weights_layout=L[layouts[1]], groups=groups)


def ref_pads(style, H, W, kH, kW, stride, dilation, pads):
    """(top, bottom, left, right) that the style implies, from naive_conv's §3 table."""
    t, b, _ = nv.pads_for(style, H, kH, stride[0], dilation[0], pads[0], pads[1])
    lft, r, _ = nv.pads_for(style, W, kW, stride[1], dilation[1], pads[2], pads[3])
    return t, b, lft, r


def precision(backend):
    """float64 and tight tolerances on numpy; float32 elsewhere (MPSGraph has no float64)."""
    if backend == "numpy":
        return mg.float64, dict(rtol=1e-10, atol=1e-10)
    return mg.float32, dict(rtol=1e-4, atol=1e-4)


def run_all(x, w, dy, desc, backend="numpy", dtype=None):
    """Forward, data gradient and weights gradient in one graph fed from placeholders; inputs and
    results in canonical NCHW/OIHW. ``dtype`` defaults to the backend's ``precision``."""
    dtype = dtype or precision(backend)[0]
    dl, wl = desc.data_layout.name, desc.weights_layout.name
    xa, wa, dya = to_data(x, dl), to_weights(w, wl), to_data(dy, dl)
    g = mg.Graph()
    xp = g.placeholder(xa.shape, dtype, name="x")
    wp = g.placeholder(wa.shape, dtype, name="w")
    dyp = g.placeholder(dya.shape, dtype, name="dy")
    y = g.convolution_2d(xp, wp, descriptor=desc, name="conv")
    dx = g.convolution_2d_data_gradient(dyp, wp, output_shape=xa.shape, descriptor=desc, name="dx")
    dw = g.convolution_2d_weights_gradient(dyp, xp, output_shape=wa.shape, descriptor=desc, name="dw")
    npd = dtype.np_dtype
    feeds = {xp: xa.astype(npd), wp: wa.astype(npd), dyp: dya.astype(npd)}
    before = [a.copy() for a in feeds.values()]
    r = g.run(feeds, [y, dx, dw], backend=backend)
    for a, b in zip(feeds.values(), before):  # feeds are never mutated
        np.testing.assert_array_equal(a, b)
    return from_data(r[y], dl), from_data(r[dx], dl), from_weights(r[dw], wl)


# (H, W, kH, kW, stride, dilation, explicit pads (t, b, l, r), N)
GEOMETRIES = {
    "plain": (5, 6, 3, 3, (1, 1), (1, 1), (1, 1, 1, 1), 2),
    "strided_dilated_asym": (7, 8, 3, 2, (2, 1), (1, 2), (2, 0, 1, 3), 1),
    "stride_gt_kernel": (9, 7, 2, 2, (3, 3), (1, 1), (0, 1, 1, 0), 2),
    "one_by_one": (4, 5, 1, 1, (2, 1), (1, 1), (0, 0, 0, 0), 1),
    "big_dilation_even": (8, 6, 2, 3, (1, 2), (3, 2), (1, 2, 0, 0), 1),
}
# (Cin, Cout, groups): plain, grouped, depthwise (groups = Cin) with multiplier 2
GROUPS = {"g1": (3, 4, 1), "g2": (4, 6, 2), "gC": (4, 8, 4)}


# every geometry x style x groups; the four layout pairs rotate over them, so every layout pair
# meets every style, geometry and groups value
MATRIX = [(geo, style, grp, LAYOUTS[(i + j + k) % 4]) for i, geo in enumerate(GEOMETRIES)
          for j, style in enumerate(STYLES) for k, grp in enumerate(GROUPS)]


@pytest.mark.parametrize("geo,style,groups,layouts", MATRIX,
                         ids=["-".join((a, b, c, "/".join(d))) for a, b, c, d in MATRIX])
def test_matches_naive_loops(backend, geo, style, groups, layouts):
    H, W, kH, kW, stride, dil, pads, N = GEOMETRIES[geo]
    cin, cout, grp = GROUPS[groups]
    seed = abs(hash((geo, style, layouts, groups))) % 2**32
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((N, cin, H, W))
    w = rng.standard_normal((cout, cin // grp, kH, kW))
    rp = ref_pads(style, H, W, kH, kW, stride, dil, pads)
    y_ref = nv.conv2d_forward(x, w, stride, dil, rp, grp)
    dy = rng.standard_normal(y_ref.shape)
    desc = make_desc(style, stride, dil, pads, grp, layouts)
    y, dx, dw = run_all(x, w, dy, desc, backend)
    tol = precision(backend)[1]
    np.testing.assert_allclose(y, y_ref, **tol)
    np.testing.assert_allclose(dx, nv.conv2d_data_grad(dy, w, x.shape, stride, dil, rp, grp), **tol)
    np.testing.assert_allclose(dw, nv.conv2d_weights_grad(dy, x, w.shape, stride, dil, rp, grp), **tol)


@pytest.mark.parametrize("layouts", LAYOUTS, ids=lambda p: "/".join(p))
@pytest.mark.parametrize("style", STYLES)
def test_adjoint_identity(backend, style, layouts):
    """<dy, F(x, W)> = <D(dy, W), x> = <G(dy, x), W> on random data."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 6, 7, 6))
    w = rng.standard_normal((9, 2, 3, 2))
    desc = make_desc(style, (2, 1), (1, 2), (1, 2, 2, 0), 3, layouts)
    g = mg.Graph()
    y_shape = g.convolution_2d(g.placeholder(to_data(x, layouts[0]).shape, mg.float64),
                               g.placeholder(to_weights(w, layouts[1]).shape, mg.float64), desc).shape
    dy = from_data(rng.standard_normal(y_shape), layouts[0])
    y, dx, dw = run_all(x, w, dy, desc, backend)
    a, b, c = np.vdot(dy, y), np.vdot(dx, x), np.vdot(dw, w)
    assert abs(a) > 1e-3
    np.testing.assert_allclose([b, c], [a, a], rtol=precision(backend)[1]["rtol"])


def test_worked_padding_example_same_styles():
    """H = 6, k = 3, s = 2 (docs/mpsgraph-spec.md §3): TF_SAME pads (0, 1), ONNX_SAME_LOWER (1, 0), both O = 3."""
    x = np.arange(6, dtype=np.float64).reshape(1, 1, 1, 6) + 1
    w = np.array([1.0, 10.0, 100.0]).reshape(1, 1, 1, 3)
    got = {}
    for style in ("TF_SAME", "ONNX_SAME_LOWER"):
        g = mg.Graph()
        y = g.convolution_2d(g.constant(x), g.constant(w), make_desc(style, stride=(1, 2)))
        got[style] = g.run({}, [y])[y].ravel()
    # TF_SAME windows start at -0, 2, 4: [1,2,3], [3,4,5], [5,6,0]
    np.testing.assert_array_equal(got["TF_SAME"], [321, 543, 65])
    # ONNX_SAME_LOWER windows start at -1, 1, 3: [0,1,2], [2,3,4], [4,5,6]
    np.testing.assert_array_equal(got["ONNX_SAME_LOWER"], [210, 432, 654])


# ----------------------------------------------------------------------------- oracles
@pytest.mark.parametrize("layouts", [("NCHW", "OIHW"), ("NHWC", "HWIO")], ids=lambda p: "/".join(p))
@pytest.mark.parametrize("groups", list(GROUPS))
@pytest.mark.parametrize("style", STYLES)
def test_pytorch_oracle(backend, style, groups, layouts):
    torch = pytest.importorskip("torch", reason="needs torch, in the oracles extra: pip install -e '.[oracles]'")
    F = torch.nn.functional
    rng = np.random.default_rng(11)
    cin, cout, grp = GROUPS[groups]
    H, W, kH, kW, stride, dil, pads = 8, 7, 3, 2, (2, 1), (1, 2), (1, 0, 2, 1)
    x = rng.standard_normal((2, cin, H, W))
    w = rng.standard_normal((cout, cin // grp, kH, kW))
    t, b, lft, r = ref_pads(style, H, W, kH, kW, stride, dil, pads)
    tx = torch.tensor(x, requires_grad=True)
    tw = torch.tensor(w, requires_grad=True)
    ty = F.conv2d(F.pad(tx, (lft, r, t, b)), tw, stride=stride, dilation=dil, groups=grp)
    dy = rng.standard_normal(tuple(ty.shape))
    ty.backward(torch.tensor(dy))
    y, dx, dw = run_all(x, w, dy, make_desc(style, stride, dil, pads, grp, layouts), backend)
    tol = precision(backend)[1]
    np.testing.assert_allclose(y, ty.detach().numpy(), **tol)
    np.testing.assert_allclose(dx, tx.grad.numpy(), **tol)
    np.testing.assert_allclose(dw, tw.grad.numpy(), **tol)
    if t == b and lft == r:  # torch.nn.grad's helpers take symmetric padding only
        ci = torch.nn.grad.conv2d_input(x.shape, tw.detach(), torch.tensor(dy), stride=stride, padding=(t, lft),
                                        dilation=dil, groups=grp)
        cw = torch.nn.grad.conv2d_weight(tx.detach(), w.shape, torch.tensor(dy), stride=stride, padding=(t, lft),
                                         dilation=dil, groups=grp)
        np.testing.assert_allclose(dx, ci.numpy(), **tol)
        np.testing.assert_allclose(dw, cw.numpy(), **tol)


def test_pytorch_nn_grad_helpers(backend):
    """torch.nn.grad.conv2d_input / conv2d_weight with symmetric padding, groups 2 and stride 2."""
    torch = pytest.importorskip("torch", reason="needs torch, in the oracles extra: pip install -e '.[oracles]'")
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 4, 9, 8))
    w = rng.standard_normal((6, 2, 3, 3))
    desc = make_desc("EXPLICIT", (2, 2), (1, 1), (1, 1, 2, 2), 2)
    g = mg.Graph()
    y_shape = g.convolution_2d(g.placeholder(x.shape, mg.float64), g.placeholder(w.shape, mg.float64), desc).shape
    dy = rng.standard_normal(y_shape)
    _, dx, dw = run_all(x, w, dy, desc, backend)
    ci = torch.nn.grad.conv2d_input(x.shape, torch.tensor(w), torch.tensor(dy), stride=2, padding=(1, 2), groups=2)
    cw = torch.nn.grad.conv2d_weight(torch.tensor(x), w.shape, torch.tensor(dy), stride=2, padding=(1, 2), groups=2)
    np.testing.assert_allclose(dx, ci.numpy(), **precision(backend)[1])
    np.testing.assert_allclose(dw, cw.numpy(), **precision(backend)[1])


@pytest.mark.parametrize("style,jpad", [("TF_SAME", "SAME"), ("ONNX_SAME_LOWER", "SAME_LOWER"), ("TF_VALID", "VALID")])
def test_jax_oracle(backend, style, jpad):
    """JAX's own SAME / SAME_LOWER / VALID padding (not ours), feature_group_count and vjp; NHWC/HWIO."""
    jax = pytest.importorskip("jax", reason="needs jax, in the oracles extra: pip install -e '.[oracles]'")
    from jax import lax

    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 7, 6, 4)).astype(np.float32)  # NHWC
    w = rng.standard_normal((3, 2, 2, 6)).astype(np.float32)  # HWIO, Cin/g = 2, groups = 2

    def f(a, b):
        return lax.conv_general_dilated(a, b, (2, 1), jpad, rhs_dilation=(1, 2),
                                        dimension_numbers=("NHWC", "HWIO", "NHWC"), feature_group_count=2)

    jy, vjp = jax.vjp(f, x, w)
    dy = rng.standard_normal(jy.shape).astype(np.float32)
    jdx, jdw = vjp(dy)
    desc = make_desc(style, (2, 1), (1, 2), (0, 0, 0, 0), 2, ("NHWC", "HWIO"))
    g = mg.Graph()
    xp, wp, dyp = (g.placeholder(a.shape, mg.float32) for a in (x, w, dy))
    y = g.convolution_2d(xp, wp, desc)
    dx = g.convolution_2d_data_gradient(dyp, wp, x.shape, desc)
    dw = g.convolution_2d_weights_gradient(dyp, xp, w.shape, desc)
    r = g.run({xp: x, wp: w, dyp: dy}, [y, dx, dw], backend=backend)
    for got, want in ((r[y], jy), (r[dx], jdx), (r[dw], jdw)):
        assert got.shape == want.shape
        np.testing.assert_allclose(got, np.asarray(want), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("layouts", [("NCHW", "OIHW"), ("NHWC", "HWIO")], ids=lambda p: "/".join(p))
def test_float16_close_to_float32(backend, layouts):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 4, 7, 6))
    w = rng.standard_normal((6, 2, 3, 3)) * 0.5
    desc = make_desc("TF_SAME", (2, 1), (1, 1), (0, 0, 0, 0), 2, layouts)
    g = mg.Graph()
    y_shape = g.convolution_2d(g.placeholder(to_data(x, layouts[0]).shape, mg.float32),
                               g.placeholder(to_weights(w, layouts[1]).shape, mg.float32), desc).shape
    dy = from_data(rng.standard_normal(y_shape), layouts[0])
    x, w, dy = (a.astype(np.float16).astype(np.float64) for a in (x, w, dy))  # same inputs for both
    r32 = run_all(x, w, dy, desc, backend, mg.float32)
    r16 = run_all(x, w, dy, desc, backend, mg.float16)
    for a, b in zip(r16, r32):
        assert a.dtype == np.float16
        np.testing.assert_allclose(a.astype(np.float32), b, rtol=2e-2, atol=2e-2 * np.abs(b).max())


# ----------------------------------------------------------------------------- graph-level behaviour
def test_shapes_and_op_declarations():
    g = mg.Graph()
    x = g.placeholder([2, 9, 8, 6], mg.float32)  # NHWC, Cin 6
    w = g.placeholder([3, 2, 2, 12], mg.float32)  # HWIO, Cin/g 2, Cout 12, groups 3
    d = make_desc("TF_SAME", (2, 3), (1, 1), (0, 0, 0, 0), 3, ("NHWC", "HWIO"))
    y = g.convolution_2d(x, w, d)
    assert y.shape == (2, 5, 3, 12) and y.dtype == mg.float32
    assert g.convolution_2d_data_gradient(y, w, x.shape, d).shape == x.shape
    assert g.convolution_2d_weights_gradient(y, x, w.shape, d).shape == w.shape
    od = OPS["convolution_2d_data_gradient"]
    assert "forwardConvolutionDescriptor" in od.swift and od.differentiable
    assert not OPS["convolution_2d_weights_gradient"].differentiable
    assert OPS["convolution_2d"].objc == "convolution2DWithSourceTensor:weightsTensor:descriptor:name:"


def test_forward_convolution_descriptor_label():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 2, 5, 5))
    w = rng.standard_normal((2, 2, 3, 3))
    d = make_desc("EXPLICIT", pads=(1, 1, 1, 1))
    g = mg.Graph()
    dy = g.constant(rng.standard_normal((1, 2, 5, 5)))
    a = g.convolution_2d_data_gradient(dy, g.constant(w), x.shape, forward_convolution_descriptor=d)
    b = g.convolution_2d_data_gradient(dy, g.constant(w), x.shape, descriptor=d)
    r = g.run({}, [a, b])
    np.testing.assert_array_equal(r[a], r[b])
    with pytest.raises(mg.DescriptorError, match="not both"):
        g.convolution_2d_data_gradient(dy, g.constant(w), x.shape, descriptor=d, forward_convolution_descriptor=d)


def test_descriptor_is_copied_when_the_op_is_built():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1, 2, 6, 6))
    w = rng.standard_normal((2, 1, 3, 3))
    d = make_desc("EXPLICIT", groups=2)
    g = mg.Graph()
    y = g.convolution_2d(g.constant(x), g.constant(w), d)
    d.stride_in_x, d.groups = 2, 1
    d.set_explicit_padding(1, 1, 1, 1)
    assert y.shape == (1, 2, 4, 4)
    np.testing.assert_allclose(g.run({}, [y])[y], nv.conv2d_forward(x, w, (1, 1), (1, 1), (0, 0, 0, 0), 2))


def test_default_descriptor_is_nchw_oihw_unit_stride():
    rng = np.random.default_rng(4)
    x, w = rng.standard_normal((1, 3, 5, 4)), rng.standard_normal((2, 3, 2, 2))
    g = mg.Graph()
    y = g.convolution_2d(g.constant(x), g.constant(w))
    np.testing.assert_allclose(g.run({}, [y])[y], nv.conv2d_forward(x, w, (1, 1), (1, 1), (0, 0, 0, 0)))


def test_dynamic_batch(backend):
    rng = np.random.default_rng(6)
    d = make_desc("TF_SAME", (2, 2), groups=2)
    dt, tol = precision(backend)
    g = mg.Graph()
    x = g.placeholder([-1, 4, 7, 7], dt)
    w = g.placeholder([4, 2, 3, 3], dt)
    y = g.convolution_2d(x, w, d)
    assert y.shape == (-1, 4, 4, 4)
    dx = g.convolution_2d_data_gradient(y, w, x.shape, d)
    dw = g.convolution_2d_weights_gradient(y, x, w.shape, d)
    assert dx.shape == (-1, 4, 7, 7) and dw.shape == (4, 2, 3, 3)
    wv = rng.standard_normal((4, 2, 3, 3)).astype(dt.np_dtype)
    rp = ref_pads("TF_SAME", 7, 7, 3, 3, (2, 2), (1, 1), (0, 0, 0, 0))
    for n in (1, 3):
        xv = rng.standard_normal((n, 4, 7, 7)).astype(dt.np_dtype)
        r = g.run({x: xv, w: wv}, [y, dx, dw], backend=backend)
        yv = nv.conv2d_forward(xv, wv, (2, 2), (1, 1), rp, 2)
        np.testing.assert_allclose(r[y], yv, **tol)
        np.testing.assert_allclose(r[dx], nv.conv2d_data_grad(yv, wv, xv.shape, (2, 2), (1, 1), rp, 2), **tol)
        np.testing.assert_allclose(r[dw], nv.conv2d_weights_grad(yv, xv, wv.shape, (2, 2), (1, 1), rp, 2), **tol)


def test_autodiff_emits_the_gradient_ops_and_stops_at_weights_gradient(backend):
    rng = np.random.default_rng(8)
    dt, tol = precision(backend)
    g = mg.Graph()
    x = g.placeholder([1, 4, 5, 5], dt, name="x")
    w = g.placeholder([4, 2, 3, 3], dt, name="w")
    d = make_desc("TF_SAME", groups=2)
    y = g.convolution_2d(x, w, d, name="conv")
    loss = g.reduction_sum(g.square(y), axes=None)
    grads = g.gradients(loss, [x, w], name="grad")
    assert grads[x].operation.type == "convolution_2d_data_gradient"
    assert grads[w].operation.type == "convolution_2d_weights_gradient"
    assert grads[w].operation.name.startswith("grad/conv/")
    xv = rng.standard_normal((1, 4, 5, 5)).astype(dt.np_dtype)
    wv = rng.standard_normal((4, 2, 3, 3)).astype(dt.np_dtype)
    r = g.run({x: xv, w: wv}, [grads[x], grads[w]], backend=backend)
    rp = ref_pads("TF_SAME", 5, 5, 3, 3, (1, 1), (1, 1), (0, 0, 0, 0))
    dy = 2 * nv.conv2d_forward(xv, wv, (1, 1), (1, 1), rp, 2)
    np.testing.assert_allclose(r[grads[x]], nv.conv2d_data_grad(dy, wv, xv.shape, (1, 1), (1, 1), rp, 2), **tol)
    np.testing.assert_allclose(r[grads[w]], nv.conv2d_weights_grad(dy, xv, wv.shape, (1, 1), (1, 1), rp, 2), **tol)
    # second order through the weights gradient is not defined (MPSGraph has no rule either)
    gl = g.reduction_sum(g.square(grads[w]), axes=None)
    with pytest.raises(mg.NotDifferentiableError, match=r"convolution_2d_weights_gradient op 'grad/conv/"):
        g.gradients(gl, [x])


# ----------------------------------------------------------------------------- finite differences (float64)
def _fd(build, shapes, seed=0):
    """Central finite differences of sum(build(...) * r) against g.gradients, for every input."""
    values, rng = uniform_inputs(shapes, seed)
    check_gradients(build, values, rng)


FD_CASES = [  # (layouts, style, groups, Cin, Cout)
    (("NCHW", "OIHW"), "EXPLICIT", 1, 2, 3),
    (("NHWC", "HWIO"), "TF_SAME", 2, 4, 2),
    (("NCHW", "HWIO"), "ONNX_SAME_LOWER", 3, 3, 6),
    (("NHWC", "OIHW"), "TF_VALID", 2, 2, 4),
]


@pytest.mark.parametrize("layouts,style,groups,cin,cout", FD_CASES, ids=lambda v: str(v))
def test_finite_differences_forward(layouts, style, groups, cin, cout):
    d = make_desc(style, (2, 1), (1, 2), (1, 0, 0, 2), groups, layouts)
    xs = to_data(np.zeros((1, cin, 5, 5)), layouts[0]).shape
    ws = to_weights(np.zeros((cout, cin // groups, 2, 2)), layouts[1]).shape
    _fd(lambda g, x, w: g.convolution_2d(x, w, d), [xs, ws])


@pytest.mark.parametrize("layouts,style,groups,cin,cout", FD_CASES, ids=lambda v: str(v))
def test_finite_differences_data_gradient(layouts, style, groups, cin, cout):
    """The data-gradient op's own rule (to dy: forward conv; to W: weights gradient)."""
    d = make_desc(style, (2, 1), (1, 2), (1, 0, 0, 2), groups, layouts)
    xs = to_data(np.zeros((1, cin, 5, 5)), layouts[0]).shape
    ws = to_weights(np.zeros((cout, cin // groups, 2, 2)), layouts[1]).shape
    g = mg.Graph()
    ys = g.convolution_2d(g.placeholder(xs, mg.float64), g.placeholder(ws, mg.float64), d).shape
    _fd(lambda g, dy, w: g.convolution_2d_data_gradient(dy, w, xs, d), [ys, ws])


# ----------------------------------------------------------------------------- depthwise-separable block
def test_depthwise_separable_block(backend):
    """Depthwise 3x3 (multiplier 2) then pointwise 1x1, with ReLU and a loss, forward and both
    weight gradients compiled and run in one graph; checked against PyTorch autograd."""
    torch = pytest.importorskip("torch", reason="needs torch, in the oracles extra: pip install -e '.[oracles]'")
    F = torch.nn.functional
    rng = np.random.default_rng(9)
    N, C, H, W, M, Cout = 2, 3, 8, 7, 2, 5
    dt, tol = precision(backend)
    x = rng.standard_normal((N, C, H, W)).astype(dt.np_dtype)
    wd = rng.standard_normal((M, C, 3, 3)).astype(dt.np_dtype)  # MPSGraph depthwise OIHW [M, C, kH, kW]
    wp = rng.standard_normal((Cout, C * M, 1, 1)).astype(dt.np_dtype)
    g = mg.Graph()
    xt = g.placeholder(x.shape, dt, name="x")
    wdt = g.placeholder(wd.shape, dt, name="w_dw")
    wpt = g.placeholder(wp.shape, dt, name="w_pw")
    if hasattr(g, "depthwise_convolution_2d"):
        dd = mg.DepthwiseConvolution2DOpDescriptor(stride_in_x=2, stride_in_y=2, padding_style=P.TF_SAME)
        h = g.depthwise_convolution_2d(xt, wdt, descriptor=dd, name="dw")
    else:  # grouped convolution with groups = C needs weights [C*M, 1, kH, kW]
        wg = g.reshape(g.transpose(wdt, 0, 1), [C * M, 1, 3, 3])
        h = g.convolution_2d(xt, wg, make_desc("TF_SAME", (2, 2), groups=C), name="dw")
    h = g.relu(h)
    y = g.convolution_2d(h, wpt, make_desc("EXPLICIT"), name="pw")
    loss = g.mean(g.square(y), axes=None, name="loss")
    grads = g.gradients(loss, [wdt, wpt, xt])
    exe = g.compile({xt: mg.ShapedType(x.shape, dt), wdt: mg.ShapedType(wd.shape, dt),
                     wpt: mg.ShapedType(wp.shape, dt)},
                    [loss, y, grads[wdt], grads[wpt], grads[xt]], backend=backend)
    lv, yv, gwd, gwp, gx = exe.run({xt: x, wdt: wd, wpt: wp})

    tx, twd, twp = (torch.tensor(a.astype(np.float64), requires_grad=True) for a in (x, wd, wp))
    tw_groups = twd.transpose(0, 1).reshape(C * M, 1, 3, 3)  # PyTorch [C*M, 1, kH, kW]
    rp = ref_pads("TF_SAME", H, W, 3, 3, (2, 2), (1, 1), (0, 0, 0, 0))
    th = F.relu(F.conv2d(F.pad(tx, (rp[2], rp[3], rp[0], rp[1])), tw_groups, stride=2, groups=C))
    ty = F.conv2d(th, twp)
    tl = (ty ** 2).mean()
    tl.backward()
    np.testing.assert_allclose(yv, ty.detach().numpy(), **tol)
    np.testing.assert_allclose(lv, tl.item(), rtol=tol["rtol"])
    for got, want in ((gwd, twd), (gwp, twp), (gx, tx)):
        np.testing.assert_allclose(got, want.grad.numpy(), rtol=tol["rtol"], atol=tol["atol"] * 1e-2)


def test_grouped_convolution_three_ops_and_a_separable_block(backend, rng):
    """groups=2 with TF_SAME: forward against the naive loop, both gradients through the adjoint
    identity; then a depthwise-separable block (depthwise, then a 1x1 convolution) builds and runs."""
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
    ref = nv.conv2d_forward(xv, wv, (1, 1), (1, 1), (1, 1, 1, 1), groups=2)  # TF_SAME, 3x3, stride 1
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


# ----------------------------------------------------------------------------- validation
def _g():
    return mg.Graph()


def _ph(g, shape, dtype=mg.float32):
    return g.placeholder(shape, dtype)


def _conv(x_shape, w_shape, desc=None, xdt=mg.float32, wdt=mg.float32):
    g = _g()
    return g.convolution_2d(_ph(g, x_shape, xdt), _ph(g, w_shape, wdt), desc, name="bad")


def _data(dy_shape, w_shape, out_shape, desc=None):
    g = _g()
    return g.convolution_2d_data_gradient(_ph(g, dy_shape), _ph(g, w_shape), out_shape, desc, name="bad")


def _weights(dy_shape, x_shape, out_shape, desc=None):
    g = _g()
    return g.convolution_2d_weights_gradient(_ph(g, dy_shape), _ph(g, x_shape), out_shape, desc, name="bad")


T, TD, TW = "convolution_2d", "convolution_2d_data_gradient", "convolution_2d_weights_gradient"
ERRORS = [
    ("source_rank", T, lambda: _conv([2, 3, 5], [2, 3, 1, 1]), mg.ShapeError, ["rank 4", "(2, 3, 5)"]),
    ("weights_rank", T, lambda: _conv([1, 3, 5, 5], [2, 3, 1]), mg.ShapeError, ["weights", "rank 4"]),
    ("channels_vs_groups", T, lambda: _conv([1, 6, 5, 5], [4, 2, 3, 3], C2(groups=2)), mg.ShapeError,
     ["6 channels", "groups=2", "need 4"]),
    ("cout_not_multiple", T, lambda: _conv([1, 4, 5, 5], [3, 2, 3, 3], C2(groups=2)), mg.ShapeError,
     ["Cout=3", "groups=2"]),
    ("dtype_mismatch", T, lambda: _conv([1, 2, 5, 5], [2, 2, 3, 3], None, mg.float32, mg.float16), mg.DTypeError,
     ["float32", "float16"]),
    ("int_dtype", T, lambda: _conv([1, 2, 5, 5], [2, 2, 3, 3], None, mg.int32, mg.int32), mg.DTypeError,
     ["int32"]),
    ("explicit_offset", T, lambda: _conv([1, 2, 5, 5], [2, 2, 3, 3], C2(padding_style=P.EXPLICIT_OFFSET)),
     mg.DescriptorError, ["EXPLICIT_OFFSET"]),
    ("stride_zero", T, lambda: _conv([1, 2, 5, 5], [2, 2, 3, 3], C2(stride_in_y=0)), mg.DescriptorError,
     ["stride_in_y=0"]),
    ("dilation_zero", T, lambda: _conv([1, 2, 5, 5], [2, 2, 3, 3], C2(dilation_rate_in_x=0)), mg.DescriptorError,
     ["dilation_rate_in_x=0"]),
    ("negative_padding", T, lambda: _conv([1, 2, 5, 5], [2, 2, 3, 3], C2(padding_left=-1)), mg.DescriptorError,
     ["padding_left=-1"]),
    ("groups_zero", T, lambda: _conv([1, 2, 5, 5], [2, 2, 3, 3], C2(groups=0)), mg.DescriptorError, ["groups=0"]),
    ("bad_data_layout", T, lambda: _conv([1, 2, 5, 5], [2, 2, 3, 3], C2(data_layout=L.NCDHW)), mg.DescriptorError,
     ["NCDHW", "NCHW or NHWC"]),
    ("bad_weights_layout", T, lambda: _conv([1, 2, 5, 5], [2, 2, 3, 3], C2(weights_layout=L.OIDHW)),
     mg.DescriptorError, ["OIDHW", "OIHW or HWIO"]),
    ("wrong_descriptor_class", T, lambda: _conv([1, 2, 5, 5], [2, 2, 3, 3], mg.DepthwiseConvolution3DOpDescriptor()),
     mg.DescriptorError, ["Convolution2DOpDescriptor"]),
    ("output_too_small", T, lambda: _conv([1, 2, 2, 5], [2, 2, 3, 3]), mg.ShapeError, ["H", "size 2"]),
    ("zero_kernel", T, lambda: _conv([1, 2, 5, 5], [2, 2, 0, 3]), mg.ShapeError, ["kernel"]),
    ("data_output_shape_len", TD, lambda: _data([1, 2, 3, 3], [2, 2, 3, 3], [1, 2, 5]), mg.ShapeError,
     ["exactly 4", "[1, 2, 5]"]),
    ("data_wrong_channels", TD, lambda: _data([1, 2, 3, 3], [2, 2, 3, 3], [1, 3, 5, 5]), mg.ShapeError,
     ["3 channels", "need 2"]),
    ("data_dy_channels", TD, lambda: _data([1, 4, 3, 3], [2, 2, 3, 3], [1, 2, 5, 5]), mg.ShapeError,
     ["4 channels", "Cout=2"]),
    ("data_wrong_spatial", TD, lambda: _data([1, 2, 4, 3], [2, 2, 3, 3], [1, 2, 5, 5]), mg.ShapeError,
     ["(4, 3)", "(3, 3)"]),
    ("data_wrong_batch", TD, lambda: _data([2, 2, 3, 3], [2, 2, 3, 3], [1, 2, 5, 5]), mg.ShapeError,
     ["batch 2", "batch 1"]),
    ("data_tensor_shape", TD, lambda: (lambda g: g.convolution_2d_data_gradient(
        _ph(g, [1, 2, 3, 3]), _ph(g, [2, 2, 3, 3]), _ph(g, [4]), name="bad"))(_g()), mg.ShapeError,
     ["sequence of ints"]),
    ("weights_wrong_kernel", TW, lambda: _weights([1, 2, 3, 3], [1, 2, 5, 5], [2, 2, 2, 2]), mg.ShapeError,
     ["(3, 3)", "(4, 4)", "kernel (2, 2)"]),
    ("weights_wrong_channels", TW, lambda: _weights([1, 2, 3, 3], [1, 2, 5, 5], [3, 2, 3, 3]), mg.ShapeError,
     ["2 channels", "Cout=3"]),
    ("weights_source_channels", TW, lambda: _weights([1, 2, 3, 3], [1, 4, 5, 5], [2, 2, 3, 3]), mg.ShapeError,
     ["4 channels", "need 2"]),
    ("weights_rank", TW, lambda: _weights([1, 2, 3], [1, 2, 5, 5], [2, 2, 3, 3]), mg.ShapeError,
     ["incoming_gradient", "rank 4"]),
]


@pytest.mark.parametrize("op_type,build,err,parts", [e[1:] for e in ERRORS], ids=[e[0] for e in ERRORS])
def test_validation_errors(op_type, build, err, parts):
    with pytest.raises(err) as info:
        build()
    msg = str(info.value)
    assert f"{op_type} op 'bad'" in msg, msg
    for p in parts:
        assert p in msg, (p, msg)


def test_validation_without_name_names_the_type():
    g = _g()
    with pytest.raises(mg.ShapeError, match=r"convolution_2d op 'convolution_2d': .*groups=1"):
        g.convolution_2d(_ph(g, [1, 3, 5, 5]), _ph(g, [2, 2, 3, 3]))


def test_compile_time_shape_error_names_the_op():
    """A dynamic size that turns out too small is caught when the plan is built, naming the op."""
    g = _g()
    x = _ph(g, [1, 2, -1, 5])
    y = g.convolution_2d(x, _ph(g, [2, 2, 3, 3]), name="late")
    assert y.shape == (1, 2, -1, 3)
    with pytest.raises(mg.ShapeError, match=r"convolution_2d op 'late'.*size 2"):
        g.compile({x: mg.ShapedType([1, 2, 2, 5], mg.float32), g.placeholders[1]: mg.ShapedType([2, 2, 3, 3])},
                  [y])


# ----------------------------------------------------------------------------- convolution transpose
# The transpose T(x, W) is the data gradient of the forward convolution with the same descriptor
# and weights (O = x's channels); references: torch.nn.functional.conv_transpose2d, whose
# output_padding follows from output_shape, and the naive loops of naive_conv.

# (id, source NCHW, O, I/groups, kernel, stride, dilation, pads (t, b, l, r), groups, style, result HW)
TRANSPOSES = [
    ("s2-p1", (2, 4, 3, 3), 4, 3, (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), 1, "EXPLICIT", (5, 5)),
    ("s2-p1-outpad", (2, 4, 3, 3), 4, 3, (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), 1, "EXPLICIT", (6, 6)),
    ("s3x2-dil-groups", (1, 6, 3, 4), 6, 1, (2, 3), (3, 2), (2, 1), (0, 0, 1, 1), 2, "EXPLICIT", (10, 8)),
    ("asym-pads-depthwise", (2, 3, 4, 3), 3, 2, (3, 2), (2, 1), (1, 2), (2, 0, 0, 1), 3, "EXPLICIT", (8, 4)),
    ("valid", (1, 2, 3, 2), 2, 3, (2, 2), (2, 2), (1, 1), (0, 0, 0, 0), 1, "TF_VALID", (7, 5)),
    ("same", (1, 4, 3, 3), 4, 2, (3, 3), (2, 3), (1, 1), (0, 0, 0, 0), 2, "TF_SAME", (6, 8)),
    ("onnx-same-lower", (2, 2, 2, 3), 2, 2, (2, 3), (2, 2), (1, 2), (0, 0, 0, 0), 1, "ONNX_SAME_LOWER", (3, 6)),
]


def _transpose_pads(style, res_hw, k, stride, dil, pads):
    """(t, b, l, r) of the forward convolution over the transpose's result."""
    return ref_pads(style, res_hw[0], res_hw[1], k[0], k[1], stride, dil, pads)


def _torch_transpose(torch, x, w, stride, dil, rp, groups, res_hw, requires_grad=False):
    """conv_transpose2d with no padding, then the forward padding cropped off (and zeros past the
    end where output_shape asks for more than the taps reach: PyTorch's output_padding)."""
    F = torch.nn.functional
    full = F.conv_transpose2d(x, w, stride=stride, dilation=dil, groups=groups)
    t, _, lft, _ = rp
    extra_h = max(0, t + res_hw[0] - full.shape[2])
    extra_w = max(0, lft + res_hw[1] - full.shape[3])
    full = F.pad(full, (0, extra_w, 0, extra_h))
    return full[:, :, t:t + res_hw[0], lft:lft + res_hw[1]]


def _transpose_desc(style, stride, dil, pads, groups, layouts):
    return make_desc(style, stride, dil, pads, groups, layouts)


@pytest.mark.parametrize("layouts", LAYOUTS, ids=lambda p: "/".join(p))
@pytest.mark.parametrize("spec", TRANSPOSES, ids=[t[0] for t in TRANSPOSES])
def test_transpose_matches_torch_forward_and_autograd(backend, spec, layouts):
    torch = pytest.importorskip("torch", reason="needs torch, in the oracles extra: pip install -e '.[oracles]'")
    cid, src, o, i, k, stride, dil, pads, groups, style, res_hw = spec
    rng = np.random.default_rng(abs(hash((cid, layouts))) % 2 ** 32)
    dt, tol = precision(backend)
    x = rng.standard_normal(src)
    w = rng.standard_normal((o, i) + k)
    rp = _transpose_pads(style, res_hw, k, stride, dil, pads)
    tx, tw = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
    ty = _torch_transpose(torch, tx, tw, stride, dil, rp, groups, res_hw)
    dy = rng.standard_normal(tuple(ty.shape))
    ty.backward(torch.tensor(dy))

    dl, wl = layouts
    desc = _transpose_desc(style, stride, dil, pads, groups, layouts)
    g = mg.Graph()
    xp = g.placeholder(to_data(x, dl).shape, dt, name="x")
    wp = g.placeholder(to_weights(w, wl).shape, dt, name="w")
    dyp = g.placeholder(to_data(dy, dl).shape, dt, name="dy")
    res_shape = to_data(np.zeros((src[0], i * groups) + res_hw), dl).shape
    y = g.convolution_transpose_2d(xp, wp, res_shape, desc, name="up")
    loss = g.reduction_sum(g.multiplication(y, dyp), axes=None)
    grads = g.gradients(loss, [xp, wp], name="grad")
    assert grads[xp].operation.type == "convolution_transpose_2d_data_gradient"
    assert grads[wp].operation.type == "convolution_transpose_2d_weights_gradient"
    npd = dt.np_dtype
    feeds = {xp: to_data(x, dl).astype(npd), wp: to_weights(w, wl).astype(npd), dyp: to_data(dy, dl).astype(npd)}
    r = g.run(feeds, [y, grads[xp], grads[wp]], backend=backend)
    np.testing.assert_allclose(from_data(r[y], dl), ty.detach().numpy(), **tol)
    np.testing.assert_allclose(from_data(r[grads[xp]], dl), tx.grad.numpy(), **tol)
    np.testing.assert_allclose(from_weights(r[grads[wp]], wl), tw.grad.numpy(), **tol)


@pytest.mark.parametrize("spec", TRANSPOSES, ids=[t[0] for t in TRANSPOSES])
def test_transpose_ops_match_the_naive_convolution_loops(backend, spec):
    """T = naive data gradient, TD = naive forward, TW(g, x) = naive weights gradient(dy=x, src=g)."""
    cid, src, o, i, k, stride, dil, pads, groups, style, res_hw = spec
    rng = np.random.default_rng(3)
    dt, tol = precision(backend)
    x = rng.standard_normal(src)
    w = rng.standard_normal((o, i) + k)
    res = (src[0], i * groups) + res_hw
    gy = rng.standard_normal(res)
    rp = _transpose_pads(style, res_hw, k, stride, dil, pads)
    desc = _transpose_desc(style, stride, dil, pads, groups, ("NCHW", "OIHW"))
    g = mg.Graph()
    xp, wp, gp = (g.placeholder(a.shape, dt) for a in (x, w, gy))
    t = g.convolution_transpose_2d(xp, wp, res, desc)
    td = g.convolution_transpose_2d_data_gradient(gp, wp, src, desc)
    tw = g.convolution_transpose_2d_weights_gradient(gp, xp, w.shape, desc)
    feeds = {xp: x.astype(dt.np_dtype), wp: w.astype(dt.np_dtype), gp: gy.astype(dt.np_dtype)}
    r = g.run(feeds, [t, td, tw], backend=backend)
    np.testing.assert_allclose(r[t], nv.conv2d_data_grad(x, w, res, stride, dil, rp, groups), **tol)
    np.testing.assert_allclose(r[td], nv.conv2d_forward(gy, w, stride, dil, rp, groups), **tol)
    np.testing.assert_allclose(r[tw], nv.conv2d_weights_grad(x, gy, w.shape, stride, dil, rp, groups), **tol)


def test_transpose_is_the_convolution_data_gradient_bit_for_bit(backend):
    rng = np.random.default_rng(4)
    desc = make_desc("EXPLICIT", (2, 2), (1, 1), (1, 0, 0, 1), 2, ("NHWC", "HWIO"))
    x = rng.standard_normal((2, 3, 4, 6)).astype(np.float32)
    w = rng.standard_normal((3, 3, 2, 6)).astype(np.float32)
    g = mg.Graph()
    xp, wp = g.placeholder(x.shape, mg.float32), g.placeholder(w.shape, mg.float32)
    t = g.convolution_transpose_2d(xp, wp, (2, 7, 8, 4), desc)
    d = g.convolution_2d_data_gradient(xp, wp, (2, 7, 8, 4), desc)
    r = g.run({xp: x, wp: w}, [t, d], backend=backend)
    np.testing.assert_array_equal(r[t], r[d])


def test_transpose_output_shape_picks_among_the_sizes_that_convolve_back():
    """Stride 2, kernel 3, padding 1: results of 5 and 6 both convolve back to 3; 6 adds one row
    and column that only the last taps reach. 4 and 7 are refused with the valid range."""
    desc = make_desc("EXPLICIT", (2, 2), (1, 1), (1, 1, 1, 1))
    x = np.ones((1, 1, 3, 3))
    w = np.ones((1, 1, 3, 3))
    out = {}
    for n in (5, 6):
        g = mg.Graph()
        y = g.convolution_transpose_2d(g.constant(x), g.constant(w), (1, 1, n, n), desc)
        out[n] = g.run({}, [y])[y][0, 0]
    np.testing.assert_array_equal(out[6][:5, :5], out[5])
    np.testing.assert_array_equal(out[6][5], [1, 2, 1, 2, 1, 1])
    for n in (4, 7):
        g = mg.Graph()
        with pytest.raises(mg.ShapeError, match=r"convolution_transpose_2d op .*output_shape has H=%d.* H = 5 to 6" % n):
            g.convolution_transpose_2d(g.constant(x), g.constant(w), (1, 1, n, 5), desc)
    g = mg.Graph()
    with pytest.raises(mg.ShapeError, match=r"H as -1, but 2 sizes \(5 to 6\)"):
        g.convolution_transpose_2d(g.constant(x), g.constant(w), (1, 1, -1, 5), desc)
    y = g.convolution_transpose_2d(g.constant(x), g.constant(w), (-1, -1, 6, 5), desc)
    assert y.shape == (1, 1, 6, 5)
    y = g.convolution_transpose_2d(g.constant(x), g.constant(w), (1, 1, -1, -1), make_desc(pads=(1, 1, 1, 1)))
    assert y.shape == (1, 1, 3, 3)  # stride 1: one size only


@pytest.mark.parametrize("build,err,parts", [
    (lambda g: g.convolution_transpose_2d(g.placeholder([1, 3, 4, 4]), g.placeholder([4, 2, 3, 3]), [1, 2, 6, 6],
                                          make_desc()),
     mg.ShapeError, ["source (1, 3, 4, 4) (NCHW) has 3 channels", "O=4"]),
    (lambda g: g.convolution_transpose_2d(g.placeholder([1, 4, 4, 4]), g.placeholder([4, 2, 3, 3]), [1, 3, 6, 6],
                                          make_desc()),
     mg.ShapeError, ["output_shape [1, 3, 6, 6] has 3 channels", "groups=1"]),
    (lambda g: g.convolution_transpose_2d(g.placeholder([1, 6, 4, 4]), g.placeholder([6, 1, 3, 3]), [1, 4, 6, 6],
                                          make_desc(groups=4)),
     mg.ShapeError, ["O=6", "groups=4 does not divide"]),
    (lambda g: g.convolution_transpose_2d(g.placeholder([1, 4, 4]), g.placeholder([4, 2, 3, 3]), [1, 2, 6, 6],
                                          make_desc()),
     mg.ShapeError, ["source must be rank 4"]),
    (lambda g: g.convolution_transpose_2d(g.placeholder([1, 4, 4, 4]), g.placeholder([4, 2, 3, 3]), [1, 2, 6],
                                          make_desc()),
     mg.ShapeError, ["output_shape must have exactly 4 entries"]),
    (lambda g: g.convolution_transpose_2d(g.placeholder([1, 4, 4, 4]), g.placeholder([4, 2, 3, 3], mg.float16),
                                          [1, 2, 6, 6], make_desc()),
     mg.DTypeError, ["float32 but weights is float16"]),
    (lambda g: g.convolution_transpose_2d_data_gradient(g.placeholder([1, 2, 6, 6]), g.placeholder([4, 2, 3, 3]),
                                                        [1, 4, 5, 5], make_desc()),
     mg.ShapeError, ["the transpose's source shape", "[1, 4, 4, 4]"]),
    (lambda g: g.convolution_transpose_2d_weights_gradient(g.placeholder([1, 2, 6, 6]), g.placeholder([1, 4, 3, 3]),
                                                           [4, 2, 3, 3], make_desc()),
     mg.ShapeError, ["convolves to spatial size (4, 4)", "(3, 3)"]),
])
def test_transpose_validation_errors(build, err, parts):
    g = mg.Graph()
    with pytest.raises(err) as e:
        build(g)
    assert "convolution_transpose_2d" in str(e.value)
    for p in parts:
        assert p in str(e.value), (p, str(e.value))


def test_transpose_declarations_and_second_order():
    t, td, tw = (OPS[n] for n in ("convolution_transpose_2d", "convolution_transpose_2d_data_gradient",
                                  "convolution_transpose_2d_weights_gradient"))
    assert t.swift == "convolutionTranspose2D(_:weights:outputShape:descriptor:name:)"
    assert td.objc == ("convolutionTranspose2DDataGradientWithIncomingGradientTensor:weightsTensor:outputShape:"
                       "forwardConvolutionDescriptor:name:")
    assert tw.swift == "convolutionTranspose2DWeightsGradient(_:weights:outputShape:forwardConvolutionDescriptor:name:)"
    assert tw.objc.startswith("convolutionTranspose2DWeightsGradientWithIncomingGradientTensor:sourceTensor:")
    assert (t.role, td.role, tw.role) == ("forward", "data_gradient", "weights_gradient")
    assert t.since == td.since == tw.since == ("11.0", "14.0") and not tw.differentiable
    g = mg.Graph()
    x, w = g.placeholder([1, 2, 3, 3]), g.placeholder([2, 1, 3, 3])
    y = g.convolution_transpose_2d(x, w, [1, 1, 5, 5], make_desc(stride=(2, 2), pads=(1, 1, 1, 1)), name="up")
    gx = g.gradients(g.reduction_sum(g.square(y), axes=None), [x], name="g1")[x]
    assert gx.operation.type == "convolution_transpose_2d_data_gradient"
    types = {o.type for o in g.gradients(g.reduction_sum(g.square(gx), axes=None), [x, w], name="g2")[x]
             .operation.graph.operations}
    assert {"convolution_transpose_2d", "convolution_transpose_2d_weights_gradient"} <= types
    swift = g.to_swift()
    assert "graph.convolutionTranspose2D(" in swift and "convolutionTranspose2DDataGradient(" in swift and "convolutionTranspose2DWeightsGradient(" in swift


@pytest.mark.parametrize("layouts,style,groups,cin,cout", FD_CASES, ids=lambda v: str(v))
def test_finite_differences_transpose(layouts, style, groups, cin, cout):
    """The transpose's rule (TD, TW) and the rule of its data gradient (T, TW), in float64."""
    d = make_desc(style, (2, 1), (1, 2), (1, 0, 0, 2), groups, layouts)
    res = to_data(np.zeros((1, cin, 5, 5)), layouts[0]).shape
    ws = to_weights(np.zeros((cout, cin // groups, 2, 2)), layouts[1]).shape
    g = mg.Graph()
    src = g.convolution_2d(g.placeholder(res, mg.float64), g.placeholder(ws, mg.float64), d).shape
    _fd(lambda g, x, w: g.convolution_transpose_2d(x, w, res, d), [src, ws])
    _fd(lambda g, dy, w: g.convolution_transpose_2d_data_gradient(dy, w, src, d), [res, ws])
