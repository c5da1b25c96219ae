"""2D max and average pooling and their gradients (semantics: minigraph/ops/pooling.py); at the
end, 4-D pooling, max pooling returning indices and the gradients from indices (ops/pooling_4d.py).

References: ``naive_conv.pool2d`` (forward) and the gradient loops of ``naive_conv3d_pool``, the
adjoint identity of the average-pooling pair, finite differences, and PyTorch ``max_pool2d`` /
``avg_pool2d`` with autograd, and JAX ``reduce_window``, when installed.
"""
from __future__ import annotations


import numpy as np
import pytest

import minigraph as mg
from minigraph.descriptors import PaddingStyle, Pooling2DOpDescriptor, TensorNamedDataLayout
from minigraph.ops.registry import OPS

import naive_conv as nv
import naive_conv3d_pool as n3
from gradcheck import check_gradients

P2 = Pooling2DOpDescriptor
P = PaddingStyle
L = TensorNamedDataLayout
STYLES = ("EXPLICIT", "TF_VALID", "TF_SAME", "ONNX_SAME_LOWER")


def f32(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def to_data(a, layout):
    return np.ascontiguousarray(a if layout == "NCHW" else a.transpose(0, 2, 3, 1))


def from_data(a, layout):
    return a if layout == "NCHW" else a.transpose(0, 3, 1, 2)


def make_desc(kernel, stride=(1, 1), dilation=(1, 1), pads=(0, 0, 0, 0), style="EXPLICIT", layout="NCHW",
              ceil_mode=False, include_pad=False):
    """kernel = (kH, kW); pads = (top, bottom, left, right)."""
    t, b, lft, r = pads
    return P2(kernel_height=kernel[0], kernel_width=kernel[1], stride_in_y=stride[0], stride_in_x=stride[1],
              dilation_rate_in_y=dilation[0], dilation_rate_in_x=dilation[1], padding_top=t, padding_bottom=b,
              padding_left=lft, padding_right=r, padding_style=P[style], data_layout=L[layout], ceil_mode=ceil_mode,
              include_zero_pad_to_average=include_pad)


def reference(kind, x, dy_fn, kernel, stride, dilation, pads, style, ceil_mode, include_pad):
    """(y, dy, dx) from the naive loops, with the style's padding and (ceil-mode) output size."""
    H, W = x.shape[2:]
    t, b, _ = nv.pads_for(style, H, kernel[0], stride[0], dilation[0], pads[0], pads[1])
    lft, r, _ = nv.pads_for(style, W, kernel[1], stride[1], dilation[1], pads[2], pads[3])
    rp = (t, b, lft, r)
    if style in ("TF_SAME", "ONNX_SAME_LOWER"):
        out = (-(-H // stride[0]), -(-W // stride[1]))
    else:
        out = (n3.pool_out_size(H, kernel[0], stride[0], dilation[0], t, b, ceil_mode),
               n3.pool_out_size(W, kernel[1], stride[1], dilation[1], lft, r, ceil_mode))
    y = nv.pool2d(x, kernel, stride, dilation, rp, kind, out_hw=out, include_pad=include_pad)
    dy = dy_fn(y.shape)
    if kind == "max":
        dx = n3.max_pool2d_grad(dy, x, kernel, stride, dilation, rp)
    else:
        dx = n3.avg_pool2d_grad(dy, x.shape, kernel, stride, dilation, rp, include_pad)
    return y, dy, dx


def precision(backend):
    """float64 and tight tolerances on numpy; float32 elsewhere (MPSGraph has no float64)."""
    if backend == "numpy":
        return mg.float64, dict(rtol=1e-12, atol=1e-12)
    return mg.float32, dict(rtol=1e-5, atol=1e-5)


def run_pool(kind, x, dy, desc, backend="numpy", dtype=None):
    """Pooling and its gradient op in one graph; arrays in NCHW."""
    dtype = dtype or precision(backend)[0]
    layout = desc.data_layout.name
    xa, dya = to_data(x, layout), to_data(dy, layout)
    g = mg.Graph()
    xp = g.placeholder(xa.shape, dtype, name="x")
    dyp = g.placeholder(dya.shape, dtype, name="dy")
    y = getattr(g, f"{kind}_pooling_2d")(xp, desc, name="pool")
    dx = getattr(g, f"{kind}_pooling_2d_gradient")(dyp, xp, desc, name="pool_grad")
    npd = dtype.np_dtype
    r = g.run({xp: xa.astype(npd), dyp: dya.astype(npd)}, [y, dx], backend=backend)
    return from_data(r[y], layout), from_data(r[dx], layout)


# (H, W, kernel, stride, dilation, explicit pads, ceil_mode, include_pad)
GEOMETRIES = {
    "k2s2": (6, 7, (2, 2), (2, 2), (1, 1), (0, 0, 0, 0), False, False),
    "k3s1_pad_asym": (5, 6, (3, 3), (1, 1), (1, 1), (1, 0, 1, 2), False, False),
    "k3s2_pad_incl": (7, 6, (3, 2), (2, 1), (1, 1), (1, 1, 0, 1), False, True),
    "dilated_strided": (8, 7, (2, 3), (2, 2), (2, 2), (1, 0, 2, 1), False, False),
    "ceil": (7, 8, (3, 2), (2, 3), (1, 1), (1, 0, 0, 1), True, False),
    "ceil_incl": (6, 7, (2, 3), (3, 2), (1, 1), (1, 1, 1, 0), True, True),
    "stride_gt_kernel": (9, 8, (2, 1), (3, 3), (1, 1), (0, 1, 0, 0), False, True),
}


# every kind x geometry x style; the layout alternates, so it meets every kind, geometry and style
MATRIX = [(kind, geo, style, ("NCHW", "NHWC")[(h + i + j) % 2]) for h, kind in enumerate(("max", "avg"))
          for i, geo in enumerate(GEOMETRIES) for j, style in enumerate(STYLES)]


@pytest.mark.parametrize("kind,geo,style,layout", MATRIX, ids=["-".join(m) for m in MATRIX])
def test_matches_naive_loops(backend, kind, geo, style, layout):
    H, W, kernel, stride, dil, pads, ceil_mode, incl = GEOMETRIES[geo]
    rng = np.random.default_rng(abs(hash((kind, geo, style, layout))) % 2**32)
    x = rng.standard_normal((2, 3, H, W))
    y_ref, dy, dx_ref = reference(kind, x, rng.standard_normal, kernel, stride, dil, pads, style, ceil_mode, incl)
    y, dx = run_pool(kind, x, dy, make_desc(kernel, stride, dil, pads, style, layout, ceil_mode, incl), backend)
    tol = precision(backend)[1]
    np.testing.assert_allclose(y, y_ref, **tol)
    np.testing.assert_allclose(dx, dx_ref, **tol)


def test_avg_pooling_adjoint_identity(backend):
    """<dy, A x> = <A^T dy, x>: the gradient op is the transpose of the averaging map."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 2, 7, 8))
    for incl in (False, True):
        d = make_desc((3, 2), (2, 3), (1, 2), (1, 2, 1, 0), ceil_mode=True, include_pad=incl)
        g = mg.Graph()
        ys = g.avg_pooling_2d(g.placeholder(x.shape, mg.float64), d).shape
        dy = rng.standard_normal(ys)
        y, dx = run_pool("avg", x, dy, d, backend)
        np.testing.assert_allclose(np.vdot(dy, y), np.vdot(dx, x), rtol=precision(backend)[1]["rtol"])


# ----------------------------------------------------------------------------- chosen semantics
def test_max_gradient_goes_to_the_first_maximal_element(backend):
    """Ties: row-major tap order (kernel row, then column) picks the first; overlaps add up."""
    x = np.array([[5., 1., 5.],
                  [5., 5., 2.],
                  [0., 5., 5.]]).reshape(1, 1, 3, 3)
    d = make_desc((2, 2), (1, 1))
    y, dx = run_pool("max", x, np.array([1., 10., 100., 1000.]).reshape(1, 1, 2, 2), d, backend)
    np.testing.assert_array_equal(y.ravel(), [5, 5, 5, 5])
    # window (0,0) reads 5,1,5,5 -> x[0,0]; (0,1) reads 1,5,5,2 -> x[0,2]; (1,0) reads 5,5,0,5 -> x[1,0];
    # (1,1) reads 5,2,5,5 -> x[1,1]
    want = np.zeros((3, 3))
    want[0, 0] += 1
    want[0, 2] += 10
    want[1, 0] += 100
    want[1, 1] += 1000
    np.testing.assert_array_equal(dx[0, 0], want)


def test_max_ignores_padding_and_handles_minus_inf(backend):
    """Padding never wins, even against -inf inputs, and never receives gradient."""
    x = np.full((1, 1, 2, 2), -np.inf)
    x[0, 0, 1, 1] = -3.0
    d = make_desc((2, 2), (1, 1), pads=(1, 1, 1, 1))
    y, dx = run_pool("max", x, np.arange(1., 10.).reshape(1, 1, 3, 3), d, backend)
    want_y = np.array([[-np.inf, -np.inf, -np.inf], [-np.inf, -3, -3], [-np.inf, -3, -3]])
    np.testing.assert_array_equal(y[0, 0], want_y)
    # every window's gradient lands on an input element: the total is conserved
    assert dx.sum() == 45.0
    np.testing.assert_array_equal(dx[0, 0], [[1 + 2 + 4, 3], [7, 5 + 6 + 8 + 9]])


def test_max_nan_propagates_and_takes_the_gradient(backend):
    x = np.array([[1., np.nan, 3.], [4., 5., 6.]]).reshape(1, 1, 2, 3)
    d = make_desc((2, 2), (1, 1))
    y, dx = run_pool("max", x, np.array([1., 10.]).reshape(1, 1, 1, 2), d, backend)
    assert np.isnan(y).all()
    np.testing.assert_array_equal(dx[0, 0], [[0, 11, 0], [0, 0, 0]])


def test_avg_divisors():
    """Only input elements count, unless include_zero_pad_to_average; the ceil-mode overhang never."""
    x = np.ones((1, 1, 3, 3))
    g = mg.Graph()
    xt = g.constant(x)
    a = g.avg_pooling_2d(xt, make_desc((2, 2), (2, 2), pads=(1, 0, 1, 0)))
    b = g.avg_pooling_2d(xt, make_desc((2, 2), (2, 2), pads=(1, 0, 1, 0), include_pad=True))
    c = g.avg_pooling_2d(xt, make_desc((2, 2), (2, 2), ceil_mode=True, include_pad=True))
    r = g.run({}, [a, b, c])
    np.testing.assert_array_equal(r[a][0, 0], np.ones((2, 2)))
    np.testing.assert_array_equal(r[b][0, 0], [[0.25, 0.5], [0.5, 1.0]])
    np.testing.assert_array_equal(r[c][0, 0], np.ones((2, 2)))  # overhang windows divide by 2 and 1


def test_windows_of_only_padding():
    g = mg.Graph()
    x = g.placeholder([1, 1, 1, 1], mg.float32)
    d = make_desc((2, 1), (1, 1), (5, 1), style="TF_SAME")  # K = 6 on H = 1: pads (2, 3), taps at -2, 3
    with pytest.raises(mg.ShapeError, match=r"max_pooling_2d op 'm'.*window 0.*no element"):
        g.max_pooling_2d(x, d, name="m")
    with pytest.raises(mg.ShapeError, match=r"avg_pooling_2d op 'a'.*include_zero_pad_to_average"):
        g.avg_pooling_2d(x, d, name="a")
    d.include_zero_pad_to_average = True
    y = g.avg_pooling_2d(x, d)
    np.testing.assert_array_equal(g.run({x: np.ones((1, 1, 1, 1), np.float32)}, [y])[y], [[[[0.0]]]])


@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize("pads,axis,window", [((0, 2, 0, 0), "H", 3), ((0, 0, 0, 2), "W", 3),
                                              ((0, 3, 0, 0), "H", 3), ((0, 0, 1, 4), "W", 4)])
def test_windows_of_only_trailing_padding(backend, kind, pads, axis, window):
    """padding_bottom / padding_right that hold a whole window are rejected like the leading
    side, naming the op, the axis and the window; with include_zero_pad_to_average the average
    of such a window is 0, as the naive loops give."""
    g = mg.Graph()
    x = g.placeholder([1, 2, 3, 3], mg.float32, name="x")
    with pytest.raises(mg.ShapeError) as info:
        getattr(g, f"{kind}_pooling_2d")(x, make_desc((2, 2), pads=pads), name="p")
    msg = str(info.value)
    for part in (f"{kind}_pooling_2d op 'p'", f"{axis}: window {window}", "no element", "size 3"):
        assert part in msg, (part, msg)
    with pytest.raises(mg.ShapeError, match=f"{kind}_pooling_2d_gradient op 'pg'.*window {window}"):
        getattr(g, f"{kind}_pooling_2d_gradient")(g.placeholder([1, 2, 4, 4]), x, make_desc((2, 2), pads=pads),
                                                  name="pg")
    if kind == "avg":
        xv = np.random.default_rng(1).standard_normal((1, 2, 3, 3))
        d = make_desc((2, 2), pads=pads, include_pad=True)
        dy = np.ones(g.avg_pooling_2d(x, d).shape)
        y, _ = run_pool("avg", xv, dy, d, backend)
        want = nv.pool2d(xv, (2, 2), (1, 1), (1, 1), pads, "avg", include_pad=True)
        np.testing.assert_allclose(y, want, **precision(backend)[1])
        assert (want[..., window:] == 0).all() if axis == "W" else (want[..., window:, :] == 0).all()


def _brute_empty_window(size, k, s, d, pb, out):
    """The first window none of whose taps lands in [0, size), by looking at every tap."""
    for o in range(out):
        if not any(0 <= o * s - pb + i * d < size for i in range(k)):
            return o
    return None


def test_empty_windows_found_on_every_side(backend):
    """Random geometries (every style, ceil mode, dilation, stride): the op is rejected exactly
    when a window reads no input element, and what is accepted runs to finite values."""
    rng = np.random.default_rng(7)
    seen = {"rejected": 0, "accepted": 0}
    for _ in range(150):
        size, k, s, d = (int(v) for v in (rng.integers(1, 6), rng.integers(1, 4), rng.integers(1, 4),
                                          rng.integers(1, 4)))
        style = STYLES[int(rng.integers(0, 4))]
        before, after = (int(v) for v in rng.integers(0, 7, 2))
        ceil_mode = style in ("EXPLICIT", "TF_VALID") and bool(rng.integers(0, 2))
        pb, pa, out = nv.pads_for(style, size, k, s, d, before, after)
        if size + pb + pa < (k - 1) * d + 1 or out <= 0:
            continue  # the output would be empty: another error
        if ceil_mode:
            out = n3.pool_out_size(size, k, s, d, pb, pa, True)
        empty = _brute_empty_window(size, k, s, d, pb, out)
        desc = make_desc((k, 1), (s, 1), (d, 1), (before, after, 0, 0), style, ceil_mode=ceil_mode)
        g = mg.Graph()
        x = g.placeholder([1, 1, size, 2], mg.float32)
        if empty is not None:
            seen["rejected"] += 1
            with pytest.raises(mg.ShapeError, match=rf"H: window {empty} has its taps"):
                g.max_pooling_2d(x, desc)
            continue
        seen["accepted"] += 1
        y = g.max_pooling_2d(x, desc)
        z = g.avg_pooling_2d(x, desc)
        assert y.shape[2] == out
        r = g.run({x: np.random.default_rng(0).standard_normal((1, 1, size, 2)).astype(np.float32)}, [y, z],
                  backend=backend)
        assert np.isfinite(r[y]).all() and np.isfinite(r[z]).all()
    assert min(seen.values()) > 10, seen


# ----------------------------------------------------------------------------- oracles
@pytest.mark.parametrize("ceil_mode", [False, True])
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_pytorch_max_pool(backend, layout, ceil_mode):
    torch = pytest.importorskip("torch", reason="needs torch, in the oracles extra: pip install -e '.[oracles]'")
    rng = np.random.default_rng(13)
    x = rng.standard_normal((2, 3, 9, 8))
    tx = torch.tensor(x, requires_grad=True)
    ty = torch.nn.functional.max_pool2d(tx, (3, 2), stride=(2, 3), padding=(1, 1), dilation=(2, 1),
                                        ceil_mode=ceil_mode)
    dy = rng.standard_normal(tuple(ty.shape))
    ty.backward(torch.tensor(dy))
    d = make_desc((3, 2), (2, 3), (2, 1), (1, 1, 1, 1), layout=layout, ceil_mode=ceil_mode)
    y, dx = run_pool("max", x, dy, d, backend)
    tol = precision(backend)[1]
    np.testing.assert_allclose(y, ty.detach().numpy(), **tol)
    np.testing.assert_allclose(dx, tx.grad.numpy(), **tol)


@pytest.mark.parametrize("include_pad", [False, True])
@pytest.mark.parametrize("ceil_mode", [False, True])
def test_pytorch_avg_pool(backend, ceil_mode, include_pad):
    torch = pytest.importorskip("torch", reason="needs torch, in the oracles extra: pip install -e '.[oracles]'")
    rng = np.random.default_rng(17)
    x = rng.standard_normal((2, 3, 8, 9))
    tx = torch.tensor(x, requires_grad=True)
    ty = torch.nn.functional.avg_pool2d(tx, (3, 2), stride=(2, 3), padding=(1, 1), ceil_mode=ceil_mode,
                                        count_include_pad=include_pad)
    dy = rng.standard_normal(tuple(ty.shape))
    ty.backward(torch.tensor(dy))
    d = make_desc((3, 2), (2, 3), (1, 1), (1, 1, 1, 1), ceil_mode=ceil_mode, include_pad=include_pad)
    y, dx = run_pool("avg", x, dy, d, backend)
    tol = precision(backend)[1]
    np.testing.assert_allclose(y, ty.detach().numpy(), **tol)
    np.testing.assert_allclose(dx, tx.grad.numpy(), **tol)


@pytest.mark.parametrize("style,jpad", [("TF_SAME", "SAME"), ("TF_VALID", "VALID")])
def test_jax_reduce_window(backend, style, jpad):
    """JAX's own SAME/VALID window padding: max (with vjp) and the average over valid elements."""
    jax = pytest.importorskip("jax", reason="needs jax, in the oracles extra: pip install -e '.[oracles]'")
    from jax import lax
    import jax.numpy as jnp

    rng = np.random.default_rng(19)
    x = rng.standard_normal((2, 7, 6, 3)).astype(np.float32)  # NHWC
    win, strides = (1, 3, 2, 1), (1, 2, 2, 1)

    def jmax(a):
        return lax.reduce_window(a, -jnp.inf, lax.max, win, strides, jpad)

    jy, vjp = jax.vjp(jmax, x)
    dy = rng.standard_normal(jy.shape).astype(np.float32)
    (jdx,) = vjp(dy)
    sums = lax.reduce_window(x, 0.0, lax.add, win, strides, jpad)
    counts = lax.reduce_window(jnp.ones_like(x), 0.0, lax.add, win, strides, jpad)
    d = make_desc((3, 2), (2, 2), style=style, layout="NHWC")
    g = mg.Graph()
    xp, dyp = g.placeholder(x.shape, mg.float32), g.placeholder(dy.shape, mg.float32)
    y = g.max_pooling_2d(xp, d)
    dx = g.max_pooling_2d_gradient(dyp, xp, d)
    a = g.avg_pooling_2d(xp, d)
    r = g.run({xp: x, dyp: dy}, [y, dx, a], backend=backend)
    np.testing.assert_array_equal(r[y], np.asarray(jy))
    np.testing.assert_allclose(r[dx], np.asarray(jdx), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(r[a], np.asarray(sums / counts), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kind", ["max", "avg"])
def test_float16_close_to_float32(backend, kind):
    rng = np.random.default_rng(23)
    x = rng.standard_normal((2, 3, 9, 7)).astype(np.float16).astype(np.float64)
    d = make_desc((3, 3), (2, 2), (1, 1), (1, 1, 1, 1), ceil_mode=True)
    g = mg.Graph()
    ys = getattr(g, f"{kind}_pooling_2d")(g.placeholder(x.shape, mg.float32), d).shape
    dy = rng.standard_normal(ys).astype(np.float16).astype(np.float64)
    r32 = run_pool(kind, x, dy, d, backend, mg.float32)
    r16 = run_pool(kind, x, dy, d, backend, mg.float16)
    for a, b in zip(r16, r32):
        assert a.dtype == np.float16
        np.testing.assert_allclose(a.astype(np.float32), b, rtol=1e-2, atol=1e-2 * np.abs(b).max())


# ----------------------------------------------------------------------------- autodiff
def _fd(build, shape, seed=0, lo=-1.0, hi=1.0):
    rng = np.random.default_rng(seed)
    v = rng.permutation(np.linspace(lo, hi, int(np.prod(shape)))).reshape(shape)  # distinct: no ties
    check_gradients(build, [v], rng)


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_finite_differences(layout):
    shape = (1, 2, 5, 6) if layout == "NCHW" else (1, 5, 6, 2)
    d = make_desc((2, 3), (2, 1), (1, 2), (1, 0, 1, 1), layout=layout, ceil_mode=True)
    _fd(lambda g, x: g.max_pooling_2d(x, d), shape)
    _fd(lambda g, x: g.avg_pooling_2d(x, d), shape, seed=1)
    di = make_desc((3, 2), (1, 2), (1, 1), (0, 0, 0, 0), "ONNX_SAME_LOWER", layout, include_pad=True)
    _fd(lambda g, x: g.avg_pooling_2d(x, di), shape, seed=2)
    # the gradient op's own rule: avg_pooling_2d_gradient is linear in its gradient input
    g0 = mg.Graph()
    ys = g0.avg_pooling_2d(g0.placeholder(shape, mg.float64), d).shape
    src = np.ones(shape)
    _fd(lambda g, dy: g.avg_pooling_2d_gradient(dy, g.constant(src), d), ys, seed=3)


def test_gradient_op_declarations():
    assert OPS["max_pooling_2d"].swift == "maxPooling2D(withSourceTensor:descriptor:name:)"
    assert OPS["avg_pooling_2d_gradient"].objc == "avgPooling2DGradientWithGradientTensor:sourceTensor:descriptor:name:"
    assert OPS["avg_pooling_2d_gradient"].differentiable
    assert not OPS["max_pooling_2d_gradient"].differentiable
    g = mg.Graph()
    x = g.placeholder([1, 1, 4, 4], mg.float64)
    d = make_desc((2, 2), (2, 2))
    gm = g.gradients(g.reduction_sum(g.max_pooling_2d(x, d, name="mp"), axes=None), [x], name="grad")[x]
    assert gm.operation.type == "max_pooling_2d_gradient" and gm.operation.name.startswith("grad/mp/")
    with pytest.raises(mg.NotDifferentiableError, match="max_pooling_2d_gradient op"):
        g.gradients(g.reduction_sum(g.square(gm), axes=None), [x])


def test_small_cnn_against_pytorch(backend):
    """conv -> relu -> max pool -> conv -> avg pool (TF_SAME) -> loss; every gradient vs autograd."""
    torch = pytest.importorskip("torch", reason="needs torch, in the oracles extra: pip install -e '.[oracles]'")
    F = torch.nn.functional
    rng = np.random.default_rng(29)
    dt, tol = precision(backend)
    x = rng.standard_normal((2, 3, 10, 9)).astype(dt.np_dtype)
    w1 = (rng.standard_normal((6, 3, 3, 3)) * 0.5).astype(dt.np_dtype)
    w2 = (rng.standard_normal((6, 2, 3, 3)) * 0.5).astype(dt.np_dtype)
    g = mg.Graph()
    xt, w1t, w2t = (g.placeholder(a.shape, dt) for a in (x, w1, w2))
    h = g.relu(g.convolution_2d(xt, w1t, mg.Convolution2DOpDescriptor(padding_left=1, padding_right=1,
                                                                       padding_top=1, padding_bottom=1)))
    h = g.max_pooling_2d(h, make_desc((2, 2), (2, 2), ceil_mode=True))
    h = g.convolution_2d(h, w2t, mg.Convolution2DOpDescriptor(groups=3, padding_style=P.TF_SAME))
    h = g.avg_pooling_2d(h, make_desc((2, 2), (2, 2), style="TF_SAME"))
    loss = g.mean(g.square(h), axes=None)
    grads = g.gradients(loss, [xt, w1t, w2t])
    r = g.run({xt: x, w1t: w1, w2t: w2}, [loss] + [grads[t] for t in (xt, w1t, w2t)], backend=backend)

    tx, tw1, tw2 = (torch.tensor(a.astype(np.float64), requires_grad=True) for a in (x, w1, w2))
    th = F.max_pool2d(F.relu(F.conv2d(tx, tw1, padding=1)), 2, 2, ceil_mode=True)  # 10x9 -> 5x5
    th = F.conv2d(th, tw2, padding=1, groups=3)  # TF_SAME with k=3, s=1 pads (1, 1)
    th = F.avg_pool2d(F.pad(th, (0, 1, 0, 1)), 2, 2)  # TF_SAME on 5: pads (0, 1); divisor 2 where padded
    # avg over valid elements only: rescale the windows that touch the zero pad
    count = F.avg_pool2d(F.pad(torch.ones(1, 1, 5, 5, dtype=th.dtype), (0, 1, 0, 1)), 2, 2)
    th = th / count
    tl = (th ** 2).mean()
    tl.backward()
    np.testing.assert_allclose(r[loss], tl.item(), rtol=tol["rtol"] * 10)
    for t, tt in ((xt, tx), (w1t, tw1), (w2t, tw2)):
        np.testing.assert_allclose(r[grads[t]], tt.grad.numpy(), rtol=tol["rtol"] * 10, atol=tol["atol"] * 1e-2)


def test_max_and_avg_pooling_and_the_gradients_autodiff_inserts(backend, rng):
    """2x2 windows, stride 2: both forwards against NumPy block reductions, and the input gradient
    of a loss through both (max: to the maximum of each window; avg: a quarter to each element)."""
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


def test_descriptor_is_copied():
    d = make_desc((2, 2), (2, 2))
    g = mg.Graph()
    x = g.constant(np.arange(16.).reshape(1, 1, 4, 4))
    y = g.max_pooling_2d(x, d)
    d.kernel_width, d.stride_in_x = 1, 1
    assert y.shape == (1, 1, 2, 2)
    np.testing.assert_array_equal(g.run({}, [y])[y].ravel(), [5, 7, 13, 15])


# ----------------------------------------------------------------------------- validation
def _pool(kind, shape, desc, dtype=mg.float32):
    g = mg.Graph()
    return getattr(g, f"{kind}_pooling_2d")(g.placeholder(shape, dtype), desc, name="bad")


def _pool_grad(kind, dy_shape, shape, desc):
    g = mg.Graph()
    return getattr(g, f"{kind}_pooling_2d_gradient")(g.placeholder(dy_shape), g.placeholder(shape), desc,
                                                      name="bad")


K2 = make_desc((2, 2), (2, 2))
ERRORS = [
    ("rank", "max_pooling_2d", lambda: _pool("max", [1, 4, 4], K2), mg.ShapeError, ["rank 4", "(1, 4, 4)"]),
    ("int_dtype", "avg_pooling_2d", lambda: _pool("avg", [1, 1, 4, 4], K2, mg.int32), mg.DTypeError, ["int32"]),
    ("no_descriptor", "max_pooling_2d", lambda: _pool("max", [1, 1, 4, 4], None), mg.DescriptorError,
     ["Pooling2DOpDescriptor"]),
    ("wrong_class", "avg_pooling_2d", lambda: _pool("avg", [1, 1, 4, 4], mg.Convolution2DOpDescriptor()),
     mg.DescriptorError, ["Pooling2DOpDescriptor"]),
    ("kernel_zero", "max_pooling_2d", lambda: _pool("max", [1, 1, 4, 4], P2(kernel_width=0)), mg.DescriptorError,
     ["kernel_width=0"]),
    ("stride_zero", "max_pooling_2d", lambda: _pool("max", [1, 1, 4, 4], P2(kernel_width=2, stride_in_y=0)),
     mg.DescriptorError, ["stride_in_y=0"]),
    ("negative_padding", "avg_pooling_2d", lambda: _pool("avg", [1, 1, 4, 4], P2(padding_top=-2)),
     mg.DescriptorError, ["padding_top=-2"]),
    ("bad_layout", "max_pooling_2d", lambda: _pool("max", [1, 1, 4, 4], P2(data_layout=L.OIHW)),
     mg.DescriptorError, ["OIHW", "NCHW or NHWC"]),
    ("explicit_offset", "max_pooling_2d", lambda: _pool("max", [1, 1, 4, 4], P2(padding_style=P.EXPLICIT_OFFSET)),
     mg.DescriptorError, ["EXPLICIT_OFFSET"]),
    ("output_empty", "avg_pooling_2d", lambda: _pool("avg", [1, 1, 2, 4], make_desc((3, 1))), mg.ShapeError,
     ["H", "size 2"]),
    ("only_padding", "max_pooling_2d", lambda: _pool("max", [1, 1, 4, 4], make_desc((2, 2), pads=(2, 0, 0, 0))),
     mg.ShapeError, ["window 0", "no element"]),
    ("grad_shape", "max_pooling_2d_gradient", lambda: _pool_grad("max", [1, 1, 3, 2], [1, 1, 4, 4], K2),
     mg.ShapeError, ["(1, 1, 3, 2)", "(1, 1, 2, 2)"]),
    ("grad_rank", "avg_pooling_2d_gradient", lambda: _pool_grad("avg", [1, 2, 2], [1, 1, 4, 4], K2),
     mg.ShapeError, ["gradient", "rank 4"]),
]


@pytest.mark.parametrize("op_type,build,err,parts", [e[1:] for e in ERRORS], ids=[e[0] for e in ERRORS])
def test_validation_errors(op_type, build, err, parts):
    with pytest.raises(err) as info:
        build()
    msg = str(info.value)
    assert f"{op_type} op 'bad'" in msg, msg
    for p in parts:
        assert p in msg, (p, msg)


# ============================================================================= 4-D pooling and indices
# (semantics: minigraph/ops/pooling_4d.py). References: the naive loops below, straight from the
# window formula, PyTorch's max_pool3d/max_pool2d (return_indices), avg_pool3d and lp_pool3d (p=2)
# with autograd, and finite differences (tests/test_autodiff.py).
P4 = mg.Pooling4DOpDescriptor
M = mg.PoolingReturnIndicesMode


def naive4(kind, x, kernel, strides, dil, pads, ceil_mode=False, include_pad=False, dy=None):
    """(y, flat argmax tap, dx) of pooling the four innermost axes of ``x``, one window and one tap at
    a time; pads = 8 numbers, (before, after) per axis; explicit padding only."""
    lead, sizes = x.shape[:-4], x.shape[-4:]
    xb = x.reshape((-1,) + sizes)
    outs = [n3.pool_out_size(n, k, s, d, pads[2 * a], pads[2 * a + 1], ceil_mode)
            for a, (n, k, s, d) in enumerate(zip(sizes, kernel, strides, dil))]
    y = np.zeros((xb.shape[0],) + tuple(outs))
    arg = np.full(y.shape, -1)
    dx = np.zeros(xb.shape)
    dyb = None if dy is None else dy.reshape(y.shape)
    taps = list(np.ndindex(*kernel))
    for b in range(xb.shape[0]):
        for o in np.ndindex(*outs):
            vals, where, count = [], [], 0
            for t, i in enumerate(taps):
                p = [o[a] * strides[a] - pads[2 * a] + i[a] * dil[a] for a in range(4)]
                inside_pad = all(-pads[2 * a] <= p[a] < sizes[a] + pads[2 * a + 1] for a in range(4))
                count += inside_pad
                if all(0 <= p[a] < sizes[a] for a in range(4)):
                    vals.append(xb[(b, *p)])
                    where.append((t, tuple(p)))
            if kind == "max":
                best = None
                for j, v in enumerate(vals):
                    if best is None or v > vals[best] or (np.isnan(v) and not np.isnan(vals[best])):
                        best = j
                y[(b, *o)] = vals[best]
                arg[(b, *o)] = where[best][0]
                if dyb is not None:
                    dx[(b, *where[best][1])] += dyb[(b, *o)]
            elif kind == "avg":
                n = count if include_pad else len(vals)
                y[(b, *o)] = sum(vals) / n
                if dyb is not None:
                    for _, p in where:
                        dx[(b, *p)] += dyb[(b, *o)] / n
            else:
                y[(b, *o)] = np.sqrt(sum(v * v for v in vals))
                if dyb is not None and y[(b, *o)] > 0:
                    for _, p in where:
                        dx[(b, *p)] += dyb[(b, *o)] * xb[(b, *p)] / y[(b, *o)]
    return y.reshape(lead + tuple(outs)), arg.reshape(lead + tuple(outs)), dx.reshape(x.shape)


def run4(kind, x, dy, desc, backend, dtype=None):
    """The 4-D op and its gradient op in one graph."""
    dtype = dtype or precision(backend)[0]
    g = mg.Graph()
    xp, dyp = g.placeholder(x.shape, dtype), g.placeholder(dy.shape, dtype)
    y = getattr(g, f"{kind}_pooling_4d")(xp, desc)
    dx = getattr(g, f"{kind}_pooling_4d_gradient")(dyp, xp, desc)
    r = g.run({xp: x.astype(dtype.np_dtype), dyp: dy.astype(dtype.np_dtype)}, [y, dx], backend=backend)
    return r[y], r[dx]


# (source shape, kernel, strides, dilations, paddings, ceil_mode, include_pad)
GEOMETRIES_4D = {
    "plain": ((2, 4, 5, 4, 5), (2, 2, 2, 2), (2, 2, 2, 2), (1, 1, 1, 1), (0,) * 8, False, False),
    "pad_dilated": ((3, 5, 4, 6), (2, 3, 1, 2), (1, 2, 1, 2), (2, 1, 1, 2), (1, 0, 1, 1, 0, 0, 0, 1), False, False),
    "ceil_incl": ((2, 1, 4, 5, 6), (1, 2, 3, 2), (1, 2, 2, 3), (1, 1, 1, 1), (0, 0, 1, 0, 0, 1, 1, 0), True, True),
    "stride_gt_kernel": ((2, 5, 3, 7), (1, 2, 1, 2), (1, 3, 2, 3), (1, 1, 1, 1), (0, 0, 0, 1, 0, 0, 1, 0), False, True),
}


@pytest.mark.parametrize("kind", ["max", "avg", "l2_norm"])
@pytest.mark.parametrize("geo", list(GEOMETRIES_4D))
def test_pooling_4d_matches_naive_loops(backend, kind, geo):
    shape, k, s, d, p, ceil_mode, incl = GEOMETRIES_4D[geo]
    rng = np.random.default_rng(abs(hash((kind, geo))) % 2**32)
    x = rng.standard_normal(shape)
    desc = P4(kernel_sizes=k, strides=s, dilation_rates=d, padding_values=p, ceil_mode=ceil_mode,
              include_zero_pad_to_average=incl)
    y_ref, _, _ = naive4(kind[:3], x, k, s, d, p, ceil_mode, incl)
    dy = rng.standard_normal(y_ref.shape)
    _, _, dx_ref = naive4(kind[:3], x, k, s, d, p, ceil_mode, incl, dy)
    y, dx = run4(kind, x, dy, desc, backend)
    tol = precision(backend)[1]
    np.testing.assert_allclose(y, y_ref, **tol)
    np.testing.assert_allclose(dx, dx_ref, **tol)


@pytest.mark.parametrize("style", STYLES)
def test_pooling_4d_padding_styles_match_the_2d_ops(backend, style):
    """A window of 1 on N and C is the 2-D op: sizes, SAME paddings and values agree."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 3, 7, 8))
    d2 = make_desc((3, 2), (2, 3), (1, 2), (1, 0, 2, 1), style=style, ceil_mode=style == "EXPLICIT")
    d4 = P4(kernel_sizes=(1, 1, 3, 2), strides=(1, 1, 2, 3), dilation_rates=(1, 1, 1, 2),
            padding_values=(0, 0, 0, 0, 1, 0, 2, 1), padding_style=style, ceil_mode=style == "EXPLICIT")
    dtype = precision(backend)[0]
    for kind in ("max", "avg"):
        g = mg.Graph()
        xp = g.placeholder(x.shape, dtype)
        a, b = getattr(g, f"{kind}_pooling_2d")(xp, d2), getattr(g, f"{kind}_pooling_4d")(xp, d4)
        r = g.run({xp: x.astype(dtype.np_dtype)}, [a, b], backend=backend)
        np.testing.assert_allclose(r[b], r[a], **precision(backend)[1])


@pytest.mark.parametrize("ceil_mode", [False, True])
def test_pooling_4d_against_pytorch_3d(backend, ceil_mode):
    """A 5-D NCDHW source with the window [1, kD, kH, kW] is PyTorch's 3-D pooling; LOCAL and
    GLOBAL_FLATTEN_3D indices; gradients through autograd."""
    torch = pytest.importorskip("torch", reason="needs torch, in the oracles extra: pip install -e '.[oracles]'")
    F = torch.nn.functional
    rng = np.random.default_rng(23)
    x = rng.standard_normal((2, 3, 6, 7, 8))
    k, s, pad, dil = (2, 3, 2), (2, 2, 3), (1, 1, 0), (1, 1, 2)
    desc = P4(kernel_sizes=(1,) + k, strides=(1,) + s, dilation_rates=(1,) + dil,
              padding_values=(0, 0) + sum(((q, q) for q in pad), ()), ceil_mode=ceil_mode,
              return_indices_mode=M.GLOBAL_FLATTEN_3D)
    tol = precision(backend)[1]
    tx = torch.tensor(x, requires_grad=True)
    ty, ti = F.max_pool3d(tx, k, s, pad, dil, ceil_mode=ceil_mode, return_indices=True)
    dy = rng.standard_normal(tuple(ty.shape))
    ty.backward(torch.tensor(dy))
    y, dx = run4("max", x, dy, desc, backend)
    np.testing.assert_allclose(y, ty.detach().numpy(), **tol)
    np.testing.assert_allclose(dx, tx.grad.numpy(), **tol)
    g = mg.Graph()
    dtype = precision(backend)[0]
    xp, dyp = g.placeholder(x.shape, dtype), g.placeholder(dy.shape, dtype)
    v, i = g.max_pooling_4d_return_indices(xp, desc)
    dxi = g.max_pooling_4d_gradient_with_indices(dyp, i, x.shape, desc)
    r = g.run({xp: x.astype(dtype.np_dtype), dyp: dy.astype(dtype.np_dtype)}, [v, i, dxi], backend=backend)
    assert r[i].dtype == np.int32
    np.testing.assert_array_equal(r[i], ti.numpy())
    np.testing.assert_allclose(r[dxi], tx.grad.numpy(), **tol)
    for incl in (False, True):
        d = P4(kernel_sizes=(1,) + k, strides=(1,) + s, padding_values=(0, 0) + sum(((q, q) for q in pad), ()),
               ceil_mode=ceil_mode, include_zero_pad_to_average=incl)
        tx = torch.tensor(x, requires_grad=True)
        ty = F.avg_pool3d(tx, k, s, pad, ceil_mode=ceil_mode, count_include_pad=incl)
        dy2 = rng.standard_normal(tuple(ty.shape))
        ty.backward(torch.tensor(dy2))
        y, dx = run4("avg", x, dy2, d, backend)
        np.testing.assert_allclose(y, ty.detach().numpy(), **tol)
        np.testing.assert_allclose(dx, tx.grad.numpy(), **tol)


def test_l2_norm_pooling_4d_against_pytorch_lp_pool(backend):
    """PyTorch's lp_pool3d with p=2 (no padding: lp_pool has none; no ceil mode: its divisor differs)."""
    torch = pytest.importorskip("torch", reason="needs torch, in the oracles extra: pip install -e '.[oracles]'")
    rng = np.random.default_rng(29)
    x = rng.standard_normal((2, 3, 5, 7, 6))
    tx = torch.tensor(x, requires_grad=True)
    ty = torch.nn.functional.lp_pool3d(tx, 2, (2, 3, 2), (1, 2, 2))
    dy = rng.standard_normal(tuple(ty.shape))
    ty.backward(torch.tensor(dy))
    y, dx = run4("l2_norm", x, dy, P4(kernel_sizes=(1, 2, 3, 2), strides=(1, 1, 2, 2)), backend)
    tol = precision(backend)[1]
    np.testing.assert_allclose(y, ty.detach().numpy(), **tol)
    np.testing.assert_allclose(dx, tx.grad.numpy(), **tol)


def test_l2_norm_pooling_zero_window_and_padding(backend):
    """Zeros give a norm of 0 and a gradient of 0 (PyTorch's lp_pool gives NaN there); zero padding
    adds nothing, and a window of padding only is allowed (its norm is 0)."""
    x = np.zeros((1, 1, 1, 4))
    x[..., 2:] = [3.0, 4.0]
    desc = P4(kernel_sizes=(1, 1, 1, 2), strides=(1, 1, 1, 2), padding_values=(0, 0, 0, 0, 0, 0, 2, 0))
    y, dx = run4("l2_norm", x, np.ones((1, 1, 1, 3)), desc, backend)
    np.testing.assert_allclose(y.ravel(), [0, 0, 5], atol=1e-6)
    np.testing.assert_allclose(dx.ravel(), [0, 0, 0.6, 0.8], rtol=1e-6)


def test_max_pooling_2d_return_indices_against_pytorch(backend):
    """NCHW with GLOBAL_FLATTEN_2D is PyTorch's max_pool2d(return_indices=True): h * W + w in the
    unpadded source; with stride = kernel, max_unpool2d is the gradient from the indices."""
    torch = pytest.importorskip("torch", reason="needs torch, in the oracles extra: pip install -e '.[oracles]'")
    F = torch.nn.functional
    rng = np.random.default_rng(31)
    x = rng.standard_normal((2, 3, 9, 8))
    dtype, tol = precision(backend)
    for k, s, pad, dil, ceil_mode in (((3, 2), (2, 3), (1, 1), (2, 1), True), ((2, 2), (2, 2), (0, 0), (1, 1), False)):
        tx = torch.tensor(x, requires_grad=True)
        ty, ti = F.max_pool2d(tx, k, s, pad, dil, ceil_mode=ceil_mode, return_indices=True)
        dy = rng.standard_normal(tuple(ty.shape))
        ty.backward(torch.tensor(dy))
        d = make_desc(k, s, dil, (pad[0], pad[0], pad[1], pad[1]), ceil_mode=ceil_mode)
        d.return_indices_mode = M.GLOBAL_FLATTEN_2D
        g = mg.Graph()
        xp, dyp = g.placeholder(x.shape, dtype), g.placeholder(dy.shape, dtype)
        v, i = g.max_pooling_2d_return_indices(xp, d)
        dxi = g.max_pooling_2d_gradient_with_indices(dyp, i, x.shape, d)
        r = g.run({xp: x.astype(dtype.np_dtype), dyp: dy.astype(dtype.np_dtype)}, [v, i, dxi], backend=backend)
        np.testing.assert_allclose(r[v], ty.detach().numpy(), **tol)
        np.testing.assert_array_equal(r[i], ti.numpy())
        np.testing.assert_allclose(r[dxi], tx.grad.numpy(), **tol)
        if k == s:
            unpool = F.max_unpool2d(torch.tensor(dy), ti, k, s, output_size=x.shape[2:])
            np.testing.assert_allclose(r[dxi], unpool.numpy(), **tol)


def _expected_index(mode, x_shape, kernel, strides, dil, pads, arg):
    """Each window's index of ``mode``, from its flat argmax tap (the formula, one window at a time)."""
    n = covered_axes(mode)
    out = np.zeros(arg.shape, np.int64)
    for o in np.ndindex(*arg.shape):
        tap = np.unravel_index(arg[o], kernel)
        if mode >= M.LOCAL_FLATTEN_1D:
            coords, sizes = tap, kernel
        else:
            coords = [o[a] * strides[a] - pads[2 * a] + tap[a] * dil[a] for a in range(4)]
            sizes = x_shape
        v = 0
        for a in range(4 - n, 4):
            v = v * sizes[a] + coords[a]
        out[o] = v
    return out


def covered_axes(mode):
    return (int(mode) - 1) % 4 + 1


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_every_return_indices_mode(backend, layout):
    """The eight modes, on the 2-D op (both layouts: NHWC GLOBAL_FLATTEN_3D is TensorFlow's
    (h * W + w) * C + c) and the 4-D op; each gradient from indices is the source-based one."""
    rng = np.random.default_rng(37)
    x = np.round(rng.uniform(-3, 3, (2, 3, 6, 7)))  # ties: the first maximal tap wins
    x.reshape(-1)[::17] = np.nan
    nchw = layout == "NCHW"
    xa = x if nchw else x.transpose(0, 2, 3, 1).copy()
    kernel = (1, 1, 3, 2) if nchw else (1, 3, 2, 1)
    strides = (1, 1, 2, 2) if nchw else (1, 2, 2, 1)
    dil = (1, 1, 1, 2) if nchw else (1, 1, 2, 1)
    pads = (0, 0, 0, 0, 1, 1, 1, 0) if nchw else (0, 0, 1, 1, 1, 0, 0, 0)
    _, arg, _ = naive4("max", xa, kernel, strides, dil, pads)
    dtype, tol = precision(backend)
    for mode in list(M)[1:]:
        d2 = make_desc((3, 2), (2, 2), (1, 2), (1, 1, 1, 0), layout=layout)
        d2.return_indices_mode = mode
        d4 = P4(kernel_sizes=kernel, strides=strides, dilation_rates=dil, padding_values=pads, return_indices_mode=mode)
        g = mg.Graph()
        xp = g.placeholder(xa.shape, dtype)
        (v2, i2), (v4, i4) = g.max_pooling_2d_return_indices(xp, d2), g.max_pooling_4d_return_indices(xp, d4)
        dyp = g.placeholder(v2.shape, dtype)
        outs = [v2, i2, v4, i4, g.max_pooling_2d_gradient(dyp, xp, d2)]
        usable = covered_axes(mode) >= (2 if nchw else 3)
        if usable:
            outs += [g.max_pooling_2d_gradient_with_indices(dyp, i2, xa.shape, d2),
                     g.max_pooling_4d_gradient_with_indices(dyp, i4, xa.shape, d4)]
        dy = rng.standard_normal(v2.shape)
        r = g.run({xp: xa.astype(dtype.np_dtype), dyp: dy.astype(dtype.np_dtype)}, outs, backend=backend)
        want = _expected_index(mode, xa.shape, kernel, strides, dil, pads, arg)
        np.testing.assert_array_equal(r[i2], want, err_msg=mode.name)
        np.testing.assert_array_equal(r[i4], want, err_msg=mode.name)
        np.testing.assert_array_equal(r[v2], r[v4])
        if usable:
            np.testing.assert_allclose(r[outs[5]], r[outs[4]], **tol)
            np.testing.assert_allclose(r[outs[6]], r[outs[4]], **tol)
        else:
            with pytest.raises(mg.DescriptorError, match=f"{mode.name} names the {covered_axes(mode)} innermost"):
                g.max_pooling_2d_gradient_with_indices(dyp, i2, xa.shape, d2)


def test_return_indices_nan_and_minus_inf(backend):
    """The first NaN of a window is its maximum and index; a window of -inf and padding picks its
    first -inf element, never the padding."""
    x = np.array([[[[1.0, np.nan, 5.0, np.nan], [-np.inf, -np.inf, 2.0, 3.0]]]])
    d = P4(kernel_sizes=(1, 1, 2, 2), strides=(1, 1, 2, 2), padding_values=(0, 0, 0, 0, 0, 0, 1, 1),
           return_indices_mode=M.GLOBAL_FLATTEN_2D)
    dtype = precision(backend)[0]
    g = mg.Graph()
    xp = g.placeholder(x.shape, dtype)
    v, i = g.max_pooling_4d_return_indices(xp, d)
    grad = g.max_pooling_4d_gradient_with_indices(g.constant(np.ones((1, 1, 1, 3), dtype.np_dtype)), i, x.shape, d)
    r = g.run({xp: x.astype(dtype.np_dtype)}, [v, i, grad], backend=backend)
    np.testing.assert_array_equal(r[v].ravel(), [1.0, np.nan, np.nan])
    np.testing.assert_array_equal(r[i].ravel(), [0, 1, 3])
    np.testing.assert_array_equal(r[grad].ravel(), [1, 1, 0, 1, 0, 0, 0, 0])
    x2 = np.full((1, 1, 1, 3), -np.inf)
    d2 = P4(kernel_sizes=(1, 1, 1, 3), padding_values=(0, 0, 0, 0, 0, 0, 2, 0), return_indices_mode=M.LOCAL_FLATTEN_1D)
    g = mg.Graph()
    xp = g.placeholder(x2.shape, dtype)
    v, i = g.max_pooling_4d_return_indices(xp, d2)
    r = g.run({xp: x2.astype(dtype.np_dtype)}, [v, i], backend=backend)
    np.testing.assert_array_equal(r[i].ravel(), [2, 1, 0])
    assert np.all(np.isneginf(r[v]))


def test_gradient_with_indices_drops_indices_outside_their_window(backend):
    """An index naming an element outside its own window (or the source) adds nothing."""
    d = P4(kernel_sizes=(1, 1, 1, 2), strides=(1, 1, 1, 2), return_indices_mode=M.GLOBAL_FLATTEN_1D)
    dtype = precision(backend)[0]
    g = mg.Graph()
    idx = g.constant(np.array([1, 0, 5, -1, 9, 12], np.int32).reshape(1, 1, 1, 6))  # windows [0,1], [2,3], ...
    dy = g.constant(np.arange(1, 7, dtype=dtype.np_dtype).reshape(1, 1, 1, 6))
    dx = g.max_pooling_4d_gradient_with_indices(dy, idx, (1, 1, 1, 12), d)
    r = g.run({}, [dx], backend=backend)
    np.testing.assert_array_equal(r[dx].ravel(), [0, 1, 0, 0, 0, 3, 0, 0, 0, 5, 0, 0])


def test_return_indices_gradient_rule_uses_the_indices(backend):
    """Autodiff through the values of max_pooling_*_return_indices emits the gradient from indices
    when the mode names the whole window, the source-based gradient otherwise; both equal PyTorch's
    tie rule (first maximal element)."""
    rng = np.random.default_rng(41)
    x = np.round(rng.uniform(-2, 2, (2, 2, 5, 6)))
    dtype, tol = precision(backend)
    results = []
    for mode, op in ((M.LOCAL_FLATTEN_2D, "max_pooling_2d_gradient_with_indices"),
                     (M.GLOBAL_FLATTEN_1D, "max_pooling_2d_gradient")):
        d = make_desc((2, 3), (1, 2), pads=(0, 1, 1, 1))
        d.return_indices_mode = mode
        g = mg.Graph()
        xp = g.placeholder(x.shape, dtype)
        v, _ = g.max_pooling_2d_return_indices(xp, d)
        loss = g.reduction_sum(g.square(v), axes=None)
        gx = g.gradients(loss, [xp])[xp]
        assert any(o.type == op for o in g.operations), op
        results.append(g.run({xp: x.astype(dtype.np_dtype)}, [gx], backend=backend)[gx])
    np.testing.assert_allclose(results[0], results[1], **tol)


@pytest.mark.parametrize("kind", ["max", "avg", "l2_norm"])
def test_pooling_4d_float16_close_to_float32(backend, kind):
    rng = np.random.default_rng(43)
    x = rng.uniform(-2, 2, (2, 3, 4, 5, 6))
    desc = P4(kernel_sizes=(1, 2, 2, 3), strides=(1, 1, 2, 2), padding_values=(0, 0, 1, 0, 0, 1, 1, 1))
    g = mg.Graph()
    ys = g.max_pooling_4d(g.placeholder(x.shape), desc).shape
    dy = rng.uniform(-1, 1, ys)
    y16, dx16 = run4(kind, x, dy, desc, backend, mg.float16)
    y32, dx32 = run4(kind, x, dy, desc, backend, mg.float32)
    assert y16.dtype == np.float16 and dx16.dtype == np.float16
    np.testing.assert_allclose(y16.astype(np.float32), y32, rtol=2e-2, atol=2e-2)
    np.testing.assert_allclose(dx16.astype(np.float32), dx32, rtol=2e-2, atol=2e-2)


def test_pooling_4d_descriptor_defaults_and_copy():
    d = P4(kernel_sizes=[1, 1, 2, 2])
    assert d.strides == (1, 1, 1, 1) and d.padding_values == (0,) * 8 and d.padding_style == P.EXPLICIT
    assert d.return_indices_mode == M.NONE and not d.ceil_mode and not d.include_zero_pad_to_average
    assert [m.value for m in M] == list(range(9))
    assert P2().return_indices_mode == M.NONE and P2().return_indices_data_type == mg.int32
    g = mg.Graph()
    x = g.constant(np.arange(16.).reshape(1, 1, 4, 4))
    y = g.max_pooling_4d(x, d)
    d.kernel_sizes = (1, 1, 1, 1)
    assert y.shape == (1, 1, 3, 3)


def _p4(op, shape, desc, dtype=mg.float32):
    g = mg.Graph()
    return getattr(g, op)(g.placeholder(shape, dtype), desc, name="bad")


def _gi(shape, desc, dy_shape, idx_dtype=mg.int32, op="max_pooling_4d_gradient_with_indices"):
    g = mg.Graph()
    return getattr(g, op)(g.placeholder(dy_shape), g.placeholder(dy_shape, idx_dtype), shape, desc, name="bad")


K4 = P4(kernel_sizes=(1, 1, 2, 2), strides=(1, 1, 2, 2), return_indices_mode=M.GLOBAL_FLATTEN_2D)
ERRORS_4D = [
    ("rank3", "max_pooling_4d", lambda: _p4("max_pooling_4d", [4, 4, 4], K4), mg.ShapeError, ["rank >= 4", "(4, 4, 4)"]),
    ("int_dtype", "l2_norm_pooling_4d", lambda: _p4("l2_norm_pooling_4d", [1, 1, 4, 4], K4, mg.int32), mg.DTypeError,
     ["int32"]),
    ("kernel_len", "avg_pooling_4d", lambda: _p4("avg_pooling_4d", [1, 1, 4, 4], P4(kernel_sizes=(2, 2))),
     mg.DescriptorError, ["kernel_sizes must have 4 values"]),
    ("padding_len", "avg_pooling_4d", lambda: _p4("avg_pooling_4d", [1, 1, 4, 4], P4(padding_values=(1,) * 6)),
     mg.DescriptorError, ["padding_values must have 8 values"]),
    ("stride_zero", "max_pooling_4d", lambda: _p4("max_pooling_4d", [1, 1, 4, 4], P4(strides=(1, 0, 1, 1))),
     mg.DescriptorError, ["strides[1]=0"]),
    ("wrong_class", "max_pooling_4d", lambda: _p4("max_pooling_4d", [1, 1, 4, 4], P2()), mg.DescriptorError,
     ["Pooling4DOpDescriptor"]),
    ("only_padding", "max_pooling_4d", lambda: _p4("max_pooling_4d", [1, 1, 4, 4], P4(
        kernel_sizes=(1, 1, 2, 1), padding_values=(0, 0, 0, 0, 2, 0, 0, 0))), mg.ShapeError, ["axis 2", "window 0"]),
    ("indices_none", "max_pooling_4d_return_indices", lambda: _p4("max_pooling_4d_return_indices", [1, 1, 4, 4],
                                                                  P4(kernel_sizes=(1, 1, 2, 2))),
     mg.DescriptorError, ["return_indices_mode is NONE"]),
    ("indices_dtype", "max_pooling_4d", lambda: _p4("max_pooling_4d", [1, 1, 4, 4], P4(return_indices_data_type=mg.int64)),
     mg.DescriptorError, ["int32 indices only"]),
    ("mode_too_narrow", "max_pooling_4d_gradient_with_indices", lambda: _gi((1, 1, 4, 4), P4(
        kernel_sizes=(1, 1, 2, 2), strides=(1, 1, 2, 2), return_indices_mode=M.LOCAL_FLATTEN_1D), (1, 1, 2, 2)),
     mg.DescriptorError, ["LOCAL_FLATTEN_1D", "LOCAL_FLATTEN_2D"]),
    ("indices_wrong_type", "max_pooling_4d_gradient_with_indices", lambda: _gi((1, 1, 4, 4), K4, (1, 1, 2, 2), mg.float32),
     mg.DTypeError, ["float32", "int32"]),
    ("grad_shape", "max_pooling_2d_gradient_with_indices", lambda: _gi((1, 1, 4, 4), make_desc((2, 2), (2, 2)), (1, 1, 3, 2),
                                                                       op="max_pooling_2d_gradient_with_indices"),
     mg.DescriptorError, ["NONE"]),
    ("grad_shape_4d", "max_pooling_4d_gradient_with_indices", lambda: _gi((1, 1, 4, 4), K4, (1, 1, 3, 2)),
     mg.ShapeError, ["(1, 1, 3, 2)", "(1, 1, 2, 2)"]),
    ("output_shape_rank", "max_pooling_2d_gradient_with_indices", lambda: _gi((1, 4, 4), make_desc((2, 2)), (1, 2, 2),
                                                                              op="max_pooling_2d_gradient_with_indices"),
     mg.ShapeError, ["output_shape"]),
]


@pytest.mark.parametrize("op_type,build,err,parts", [e[1:] for e in ERRORS_4D], ids=[e[0] for e in ERRORS_4D])
def test_pooling_4d_validation_errors(op_type, build, err, parts):
    with pytest.raises(err) as info:
        build()
    msg = str(info.value)
    assert f"{op_type} op 'bad'" in msg, msg
    for p in parts:
        assert p in msg, (p, msg)
