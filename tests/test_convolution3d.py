"""Grouped 3D convolution: forward, data gradient, weights gradient (MPSGraph convolution3D...).

References: PyTorch's ``conv3d`` and its autograd (explicit zero padding from the test-side
padding table ``naive_conv.pads_for``), the adjoint identity, finite differences.
"""
from __future__ import annotations

import numpy as np
import pytest

import minigraph as mg
from minigraph.descriptors import Convolution3DOpDescriptor, PaddingStyle, TensorNamedDataLayout

import naive_conv as nv
from gradcheck import check_gradients, uniform_inputs

torch = pytest.importorskip("torch", reason="needs torch, in the oracles extra: pip install -e '.[oracles]'")
F = torch.nn.functional

C3 = Convolution3DOpDescriptor
P = PaddingStyle
L = TensorNamedDataLayout
STYLES = ("EXPLICIT", "TF_VALID", "TF_SAME", "ONNX_SAME_LOWER")
LAYOUTS = [("NCDHW", "OIDHW"), ("NCDHW", "DHWIO"), ("NDHWC", "OIDHW"), ("NDHWC", "DHWIO")]


# ----------------------------------------------------------------------------- test-side layouts
def to_data(a, layout):
    return np.ascontiguousarray(a if layout == "NCDHW" else a.transpose(0, 2, 3, 4, 1))


def from_data(a, layout):
    return a if layout == "NCDHW" else a.transpose(0, 4, 1, 2, 3)


def to_weights(w, layout):
    """OIDHW [Cout, Cin/g, kD, kH, kW] -> layout (DHWIO [kD, kH, kW, Cin/g, Cout])."""
    return np.ascontiguousarray(w if layout == "OIDHW" else w.transpose(2, 3, 4, 1, 0))


def from_weights(w, layout):
    return w if layout == "OIDHW" else w.transpose(4, 3, 0, 1, 2)


def make_desc(style="EXPLICIT", stride=(1, 1, 1), dilation=(1, 1, 1), pads=(0,) * 6, groups=1,
              layouts=("NCDHW", "OIDHW")):
    """stride, dilation: (D, H, W); pads: (front, back, top, bottom, left, right)."""
    return C3(stride_in_z=stride[0], stride_in_y=stride[1], stride_in_x=stride[2],
              dilation_rate_in_z=dilation[0], dilation_rate_in_y=dilation[1], dilation_rate_in_x=dilation[2],
              padding_front=pads[0], padding_back=pads[1], padding_top=pads[2], padding_bottom=pads[3],
              padding_left=pads[4], padding_right=pads[5], padding_style=P[style],
              data_layout=L[layouts[0]], weights_layout=L[layouts[1]], groups=groups)


def ref_pads(style, sizes, kernel, stride, dilation, pads):
    """(front, back, top, bottom, left, right) that the style implies (naive_conv's §3 table)."""
    out: list = []
    for a in range(3):
        before, after, _ = nv.pads_for(style, sizes[a], kernel[a], stride[a], dilation[a], pads[2 * a],
                                       pads[2 * a + 1])
        out += [before, after]
    return tuple(out)


def torch_all(x, w, dy, stride, dilation, pads, groups):
    """PyTorch's forward and its autograd (dx, dW), on float64 copies."""
    xt = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    wt = torch.tensor(w, dtype=torch.float64, requires_grad=True)
    f, b, t, bo, le, r = pads
    y = F.conv3d(F.pad(xt, (le, r, t, bo, f, b)), wt, stride=stride, dilation=dilation, groups=groups)
    y.backward(torch.tensor(dy, dtype=torch.float64))
    return y.detach().numpy(), xt.grad.numpy(), wt.grad.numpy()


def precision(backend):
    """float64 and tight tolerances on numpy; float32 elsewhere (MPSGraph has no float64)."""
    if backend == "numpy":
        return mg.float64, dict(rtol=1e-10, atol=1e-10)
    return mg.float32, dict(rtol=1e-4, atol=1e-4)


def run_all(x, w, dy, desc, backend="numpy", dtype=None):
    """Forward, data gradient and weights gradient in one graph; canonical NCDHW/OIDHW in and out."""
    dtype = dtype or precision(backend)[0]
    dl, wl = desc.data_layout.name, desc.weights_layout.name
    xa, wa, dya = to_data(x, dl), to_weights(w, wl), to_data(dy, dl)
    g = mg.Graph()
    xp = g.placeholder(xa.shape, dtype, name="x")
    wp = g.placeholder(wa.shape, dtype, name="w")
    dyp = g.placeholder(dya.shape, dtype, name="dy")
    y = g.convolution_3d(xp, wp, descriptor=desc, name="conv")
    dx = g.convolution_3d_data_gradient(dyp, wp, output_shape=xa.shape, descriptor=desc, name="dx")
    dw = g.convolution_3d_weights_gradient(dyp, xp, output_shape=wa.shape, descriptor=desc, name="dw")
    npd = dtype.np_dtype
    r = g.run({xp: xa.astype(npd), wp: wa.astype(npd), dyp: dya.astype(npd)}, [y, dx, dw], backend=backend)
    return from_data(r[y], dl), from_data(r[dx], dl), from_weights(r[dw], wl)


# (D, H, W, kernel, stride, dilation, explicit pads (front, back, top, bottom, left, right), N)
GEOMETRIES = {
    "plain": (4, 5, 6, (3, 3, 3), (1, 1, 1), (1, 1, 1), (1, 1, 1, 1, 1, 1), 2),
    "strided_dilated_asym": (7, 5, 8, (2, 3, 2), (2, 1, 3), (1, 2, 1), (0, 2, 1, 0, 2, 1), 1),
    "stride_gt_kernel": (6, 7, 5, (2, 1, 2), (3, 2, 3), (1, 1, 1), (1, 0, 0, 1, 0, 2), 2),
    "one_by_one": (3, 4, 5, (1, 1, 1), (1, 1, 1), (1, 1, 1), (0,) * 6, 2),
    "big_dilation": (5, 6, 7, (2, 2, 3), (1, 2, 1), (3, 2, 2), (1, 1, 0, 2, 1, 0), 1),
}
# (Cin, Cout, groups): plain, grouped, depthwise-like (groups = Cin) with multiplier 2
GROUPS = {"g1": (3, 4, 1), "g2": (4, 6, 2), "gC": (3, 6, 3)}

MATRIX = [(geo, style, grp, LAYOUTS[(i + j + k) % 4]) for i, geo in enumerate(GEOMETRIES)
          for j, style in enumerate(STYLES) for k, grp in enumerate(GROUPS)]


@pytest.mark.parametrize("geo,style,groups,layouts", MATRIX,
                         ids=["-".join((a, b, c, "/".join(d))) for a, b, c, d in MATRIX])
def test_matches_torch(backend, geo, style, groups, layouts):
    D, H, W, kernel, stride, dil, pads, N = GEOMETRIES[geo]
    cin, cout, grp = GROUPS[groups]
    rng = np.random.default_rng(sum(map(ord, geo + style + groups + layouts[0] + layouts[1])))
    x = rng.standard_normal((N, cin, D, H, W))
    w = rng.standard_normal((cout, cin // grp) + kernel)
    rp = ref_pads(style, (D, H, W), kernel, stride, dil, pads)
    xt = F.pad(torch.tensor(x), (rp[4], rp[5], rp[2], rp[3], rp[0], rp[1]))
    y_shape = F.conv3d(xt, torch.tensor(w), stride=stride, dilation=dil, groups=grp).shape
    dy = rng.standard_normal(tuple(y_shape))
    y_ref, dx_ref, dw_ref = torch_all(x, w, dy, stride, dil, rp, grp)
    y, dx, dw = run_all(x, w, dy, make_desc(style, stride, dil, pads, grp, layouts), backend)
    tol = precision(backend)[1]
    np.testing.assert_allclose(y, y_ref, **tol)
    np.testing.assert_allclose(dx, dx_ref, **tol)
    np.testing.assert_allclose(dw, dw_ref, **tol)


def test_same_styles_put_the_odd_pad_where_they_say():
    """TF_SAME pads the odd element after the input, ONNX_SAME_LOWER before it (per axis)."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, 2, 4, 5, 6))
    w = rng.standard_normal((3, 2, 2, 2, 2))
    for style, pads in (("TF_SAME", (0, 1, 0, 1, 0, 1)), ("ONNX_SAME_LOWER", (1, 0, 1, 0, 1, 0))):
        y, _, _ = run_all(x, w, np.zeros((1, 3, 4, 5, 6)), make_desc(style))
        np.testing.assert_allclose(y, torch_all(x, w, np.zeros((1, 3, 4, 5, 6)), (1, 1, 1), (1, 1, 1), pads, 1)[0],
                                   rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("layouts", LAYOUTS, ids=lambda p: "/".join(p))
def test_gradients_are_torch_autograd(backend, layouts):
    """g.gradients of a loss through convolution_3d equals PyTorch's autograd."""
    rng = np.random.default_rng(11)
    x = rng.standard_normal((2, 4, 5, 4, 6))
    w = rng.standard_normal((6, 2, 2, 3, 2))
    desc = make_desc("EXPLICIT", (2, 1, 2), (1, 2, 1), (1, 0, 2, 1, 0, 1), 2, layouts)
    dtype, tol = precision(backend)
    g = mg.Graph()
    xp = g.placeholder(to_data(x, layouts[0]).shape, dtype, name="x")
    wp = g.placeholder(to_weights(w, layouts[1]).shape, dtype, name="w")
    y = g.convolution_3d(xp, wp, descriptor=desc, name="c3")
    loss = g.reduction_sum(g.square(y), axes=None)
    grads = g.gradients(loss, [xp, wp])
    assert grads[xp].operation.type == "convolution_3d_data_gradient"
    assert grads[wp].operation.type == "convolution_3d_weights_gradient"
    npd = dtype.np_dtype
    r = g.run({xp: to_data(x, layouts[0]).astype(npd), wp: to_weights(w, layouts[1]).astype(npd)},
              [grads[xp], grads[wp]], backend=backend)
    xt = torch.tensor(x, requires_grad=True)
    wt = torch.tensor(w, requires_grad=True)
    yt = F.conv3d(F.pad(xt, (0, 1, 2, 1, 1, 0)), wt, stride=(2, 1, 2), dilation=(1, 2, 1), groups=2)
    (yt ** 2).sum().backward()
    np.testing.assert_allclose(from_data(r[grads[xp]], layouts[0]), xt.grad.numpy(), **tol)
    np.testing.assert_allclose(from_weights(r[grads[wp]], layouts[1]), wt.grad.numpy(),
                               rtol=tol["rtol"], atol=max(tol["atol"], 1e-3 if backend != "numpy" else 0))


def test_adjoint_identity():
    """<dy, F(x, W)> = <D(dy, W), x> = <G(dy, x), W> on random data."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 6, 5, 4, 6))
    w = rng.standard_normal((9, 2, 3, 2, 2))
    desc = make_desc("TF_SAME", (2, 1, 2), (1, 2, 1), groups=3)
    y, _, _ = run_all(x, w, np.zeros((2, 9, 3, 4, 3)), desc)
    dy = rng.standard_normal(y.shape)
    _, dx, dw = run_all(x, w, dy, desc)
    a = float(np.sum(dy * y))
    assert np.isclose(a, float(np.sum(dx * x)), rtol=1e-10)
    assert np.isclose(a, float(np.sum(dw * w)), rtol=1e-10)


def test_finite_differences():
    """Second-order: the data gradient's own gradients (F and G) against finite differences."""
    desc = make_desc("EXPLICIT", (1, 2, 1), (1, 1, 2), (1, 0, 0, 1, 1, 1), 2)
    fn = lambda g, dy, w: g.convolution_3d_data_gradient(dy, w, output_shape=[1, 4, 3, 4, 5], descriptor=desc)
    values, rng = uniform_inputs([(1, 2, 4, 2, 5), (2, 2, 1, 2, 2)], seed=5)
    check_gradients(fn, values, rng)


def test_float16_accumulates_in_float32(backend):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((1, 8, 3, 4, 5)).astype(np.float16)
    w = rng.standard_normal((4, 8, 2, 2, 2)).astype(np.float16)
    g = mg.Graph()
    y = g.convolution_3d(g.constant(x), g.constant(w), descriptor=make_desc("TF_SAME"))
    out = g.run({}, [y], backend=backend)[y]
    assert out.dtype == np.float16
    ref = F.conv3d(F.pad(torch.tensor(x, dtype=torch.float64), (0, 1, 0, 1, 0, 1)), torch.tensor(w, dtype=torch.float64))
    np.testing.assert_allclose(out.astype(np.float64), ref.numpy(), rtol=2e-3, atol=2e-2)


def test_nan_and_inf_reach_exactly_the_windows_that_read_them(backend):
    x = np.ones((1, 1, 4, 4, 4), np.float32)
    x[0, 0, 1, 2, 3] = np.nan
    x[0, 0, 3, 0, 0] = np.inf
    w = np.ones((1, 1, 2, 2, 2), np.float32)
    w[0, 0, 1, 1, 1] = -0.0
    g = mg.Graph()
    y = g.convolution_3d(g.constant(x), g.constant(w))
    out = g.run({}, [y], backend=backend)[y]
    ref = F.conv3d(torch.tensor(x), torch.tensor(w)).numpy()
    np.testing.assert_array_equal(np.isnan(out), np.isnan(ref))
    np.testing.assert_allclose(out, ref, equal_nan=True)


def test_empty_batch(backend):
    g = mg.Graph()
    x = g.placeholder((0, 2, 3, 3, 3), name="x")
    y = g.convolution_3d(x, g.constant(np.ones((4, 2, 2, 2, 2), np.float32)))
    assert y.shape == (0, 4, 2, 2, 2)
    assert g.run({x: np.zeros((0, 2, 3, 3, 3), np.float32)}, [y], backend=backend)[y].shape == (0, 4, 2, 2, 2)


# ----------------------------------------------------------------------------- descriptor
def test_descriptor_defaults_and_layout_values():
    d = C3()
    assert (d.stride_in_x, d.stride_in_y, d.stride_in_z) == (1, 1, 1)
    assert (d.dilation_rate_in_x, d.dilation_rate_in_y, d.dilation_rate_in_z) == (1, 1, 1)
    assert (d.padding_left, d.padding_right, d.padding_top, d.padding_bottom, d.padding_front,
            d.padding_back) == (0,) * 6
    assert d.padding_style == P.EXPLICIT and d.groups == 1
    assert (d.data_layout, d.weights_layout) == (L.NCDHW, L.OIDHW)
    assert (int(L.NCDHW), int(L.NDHWC), int(L.OIDHW), int(L.DHWIO)) == (7, 8, 9, 10)
    d.padding_style = P.TF_SAME
    d.set_explicit_padding(1, 2, 3, 4, 5, 6)
    assert d.padding_style == P.EXPLICIT
    assert (d.padding_left, d.padding_right, d.padding_top, d.padding_bottom, d.padding_front,
            d.padding_back) == (1, 2, 3, 4, 5, 6)


def test_descriptor_is_copied():
    d = C3(stride_in_x=2)
    g = mg.Graph()
    y = g.convolution_3d(g.placeholder((1, 1, 4, 4, 4)), g.placeholder((1, 1, 1, 1, 1)), descriptor=d)
    d.stride_in_x = 1
    assert y.shape == (1, 1, 4, 4, 2)


@pytest.mark.parametrize("fields,match", [
    (dict(data_layout=L.NCHW), "data_layout NCHW.*NCDHW or NDHWC"),
    (dict(weights_layout=L.HWIO), "weights_layout HWIO.*OIDHW or DHWIO"),
    (dict(stride_in_z=0), "stride_in_z=0"),
    (dict(padding_back=-1), "padding_back=-1"),
    (dict(groups=0), "groups=0"),
    (dict(padding_style=P.EXPLICIT_OFFSET), "EXPLICIT_OFFSET"),
])
def test_bad_descriptor(fields, match):
    g = mg.Graph()
    with pytest.raises(mg.DescriptorError, match=match):
        g.convolution_3d(g.placeholder((1, 1, 4, 4, 4)), g.placeholder((1, 1, 1, 1, 1)), descriptor=C3(**fields))


# ----------------------------------------------------------------------------- errors
def _conv(xs, ws, desc=None, dtype=mg.float32, wdtype=None):
    g = mg.Graph()
    return g.convolution_3d(g.placeholder(xs, dtype), g.placeholder(ws, wdtype or dtype), descriptor=desc, name="c")


@pytest.mark.parametrize("xs,ws,desc,err,match", [
    ((1, 2, 4, 4), (3, 2, 1, 1, 1), None, mg.ShapeError, r"convolution_3d op 'c'.*source must be rank 5"),
    ((1, 2, 4, 4, 4), (3, 2, 1, 1), None, mg.ShapeError, r"weights must be rank 5"),
    ((1, 2, 4, 4, 4), (3, 3, 1, 1, 1), None, mg.ShapeError, r"2 channels.*\[Cout, Cin/groups, kD, kH, kW\]"),
    ((1, 4, 4, 4, 4), (3, 2, 1, 1, 1), C3(groups=2), mg.ShapeError, r"Cout=3.*groups=2"),
    ((1, 4, 4, 4, 4), (1, 1, 1, 2, 4), C3(weights_layout=L.DHWIO), mg.ShapeError,
     r"\[kD, kH, kW, Cin/groups, Cout\]"),
    ((1, 2, 4, 4, 4), (3, 2, 0, 1, 1), None, mg.ShapeError, r"zero kernel size; kD, kH, kW must be >= 1"),
    ((1, 2, 2, 4, 4), (3, 2, 3, 1, 1), None, mg.ShapeError, r"D: input size 2.*dilated kernel 3"),
])
def test_shape_errors(xs, ws, desc, err, match):
    with pytest.raises(err, match=match):
        _conv(xs, ws, desc)


def test_dtype_errors():
    with pytest.raises(mg.DTypeError, match=r"convolution_3d op 'c'.*int32"):
        _conv((1, 2, 4, 4, 4), (3, 2, 1, 1, 1), dtype=mg.int32)
    with pytest.raises(mg.DTypeError, match=r"float32 but weights is float16"):
        _conv((1, 2, 4, 4, 4), (3, 2, 1, 1, 1), wdtype=mg.float16)


def test_gradient_errors_name_the_op():
    g = mg.Graph()
    dy = g.placeholder((1, 3, 4, 4, 4))
    w = g.placeholder((3, 2, 1, 1, 1))
    with pytest.raises(mg.ShapeError, match=r"convolution_3d_data_gradient op 'dx'.*exactly 5 entries"):
        g.convolution_3d_data_gradient(dy, w, output_shape=[1, 2, 4, 4], name="dx")
    with pytest.raises(mg.ShapeError, match=r"convolution_3d_data_gradient op 'dx'.*spatial size"):
        g.convolution_3d_data_gradient(dy, w, output_shape=[1, 2, 5, 4, 4], name="dx")
    with pytest.raises(mg.ShapeError, match=r"convolution_3d_weights_gradient op 'dw'.*output_shape must be the "
                                            r"forward weights shape"):
        g.convolution_3d_weights_gradient(dy, g.placeholder((1, 2, 4, 4, 4)), output_shape=[3, 2, 2, 1, 1],
                                          name="dw")
    with pytest.raises(mg.DescriptorError, match="not both"):
        g.convolution_3d_data_gradient(dy, w, [1, 2, 4, 4, 4], C3(), forward_convolution_descriptor=C3())


def test_data_gradient_infers_sizes_known_only_at_run_time():
    """-1 entries of output_shape come from the other inputs where only one size fits (stride 1)."""
    g = mg.Graph()
    dx = g.convolution_3d_data_gradient(g.placeholder((2, 3, 4, 4, 4)), g.placeholder((3, 2, 2, 1, 1)),
                                        output_shape=[-1, -1, -1, 4, 4])
    assert dx.shape == (2, 2, 5, 4, 4)


def test_descriptor_of_the_other_rank_is_refused():
    g = mg.Graph()
    with pytest.raises(mg.DescriptorError, match=r"convolution_3d op 'c'.*must be a Convolution3DOpDescriptor"):
        g.convolution_3d(g.placeholder((1, 1, 4, 4, 4)), g.placeholder((1, 1, 1, 1, 1)),
                         descriptor=mg.Convolution2DOpDescriptor(), name="c")
    with pytest.raises(mg.DescriptorError, match=r"convolution_2d op 'c'.*must be a Convolution2DOpDescriptor"):
        g.convolution_2d(g.placeholder((1, 1, 4, 4)), g.placeholder((1, 1, 1, 1)),
                         descriptor=mg.Convolution3DOpDescriptor(), name="c")


def test_elementwise_tail_fuses_on_numpy():
    """A relu tail runs in the convolution's step on numpy (epilogue fusion), with the same values."""
    rng = np.random.default_rng(4)
    g = mg.Graph()
    x = g.placeholder((1, 2, 4, 4, 4), mg.float32, name="x")
    w = g.constant(rng.standard_normal((3, 2, 2, 2, 2)).astype(np.float32))
    y = g.relu(g.convolution_3d(x, w, descriptor=make_desc("TF_SAME")))
    feeds = {x: rng.standard_normal((1, 2, 4, 4, 4)).astype(np.float32)}
    exe = g.compile({x: mg.ShapedType(x.shape, mg.float32)}, [y])
    fused = [s for s in exe.plan.steps if s.anchor is not None]
    assert len(fused) == 1 and fused[0].anchor.type == "convolution_3d" and [o.type for o in fused[0].ops] == [
        "convolution_3d", "relu"]
    ref = F.conv3d(F.pad(torch.tensor(feeds[x]), (0, 1, 0, 1, 0, 1)), torch.tensor(np.asarray(w.operation.attrs["value"])))
    np.testing.assert_allclose(exe.run(feeds)[0], np.maximum(ref.numpy(), 0), rtol=1e-5, atol=1e-5)
