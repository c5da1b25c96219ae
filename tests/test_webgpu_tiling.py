"""The webgpu backend's tiled kernels and resident variables (docs/backends.md#tiled-kernels-and-resident-variables).

Each kernel path is forced (``gemm.TILING``, ``tiled_conv.TILING``) and compared with
references written here in NumPy (einsum, naive loops) on awkward shapes: sizes that are not
multiples of the tile, 1-pixel images, long K, batch 1, float16. Resident variables: a
training loop gives the values NumPy gives and, bit for bit, the values it gave when every
assigned value was read back; only the feeds travel on later runs; a failed run changes nothing.
"""
from __future__ import annotations

import numpy as np
import pytest

import minigraph as mg
from minigraph.backends.webgpu import runner as wr
from minigraph.backends.webgpu import gemm, tiled_conv
from minigraph.backends.webgpu import resident as res
from minigraph.descriptors import (Convolution2DOpDescriptor, DepthwiseConvolution2DOpDescriptor, PaddingStyle,
                                   TensorNamedDataLayout)
from minigraph.ops.geometry import ConvGeometry

import naive_conv as nv

L = TensorNamedDataLayout


@pytest.fixture
def gpu(webgpu):
    return mg.get_backend(webgpu)


@pytest.fixture
def force(monkeypatch):
    """Force the tiled GEMM (``"always"``) or the untiled kernels (``"never"``) for one test."""
    def set_mode(mode):
        monkeypatch.setitem(gemm.TILING, "mode", mode)
    return set_mode


def _recorded():
    return gemm.RECORDED["gemm"]


def _tol(dtype):
    return dict(rtol=2e-2, atol=2e-2) if dtype == "float16" else dict(rtol=1e-5, atol=1e-4)


def _values(rng, shape, dtype):
    if dtype == "int32":
        return rng.integers(-4, 5, shape).astype(np.int32)
    return rng.standard_normal(shape).astype(dtype)


# ----------------------------------------------------------------------------- matmul
MATMULS = [((70, 33), (33, 90)), ((1, 1), (1, 1)), ((3, 1, 65, 17), (2, 17, 130)), ((5, 20000), (20000, 3)),
           ((64, 64), (64, 64)), ((129, 1), (1, 63)), ((1, 200, 40), (40, 1))]


TILES = ["auto", (4, 4), (8, 4), (4, 8), (8, 8), (1, 4), (2, 1), (1, 1)]  # outputs per thread along M and N (gemm.TILING["tile"])


@pytest.mark.parametrize("tile", TILES)
@pytest.mark.parametrize("dtype", ["float32", "float16", "int32"])
@pytest.mark.parametrize("ashape,bshape", MATMULS)
def test_tiled_matmul_matches_numpy(gpu, force, monkeypatch, rng, ashape, bshape, dtype, tile):
    force("always")
    monkeypatch.setitem(gemm.TILING, "tile", tile)
    g = mg.Graph()
    a = g.placeholder(list(ashape), dtype=dtype, name="a")
    b = g.placeholder(list(bshape), dtype=dtype, name="b")
    c = g.matrix_multiplication(a, b)
    av, bv = _values(rng, ashape, dtype), _values(rng, bshape, dtype)
    before = _recorded()
    got = g.run({a: av, b: bv}, [c], backend="webgpu")[c]
    assert _recorded() == before + 1  # the tiled kernel ran
    want = np.matmul(av.astype(np.float64), bv.astype(np.float64))
    if dtype == "int32":
        np.testing.assert_array_equal(got, want.astype(np.int32))
    else:
        scale = max(1.0, float(np.sqrt(ashape[-1])))
        np.testing.assert_allclose(got.astype(np.float64), want, rtol=_tol(dtype)["rtol"] * scale,
                                   atol=_tol(dtype)["atol"] * scale)


def test_matmul_chooses_the_tiled_kernel_for_large_products_only(gpu, rng):
    for (m, k, n), tiled in (((256, 40, 96), True), ((8, 300, 8), False), ((20, 10, 4000), True),
                                ((4, 10, 4000), False)):
        g = mg.Graph()
        a, b = g.placeholder([m, k], name="a"), g.placeholder([k, n], name="b")
        c = g.matrix_multiplication(a, b)
        av, bv = _values(rng, (m, k), "float32"), _values(rng, (k, n), "float32")
        before = _recorded()
        np.testing.assert_allclose(g.run({a: av, b: bv}, [c], backend="webgpu")[c], av @ bv, rtol=1e-4, atol=1e-4)
        assert (_recorded() > before) == tiled, (m, k, n)


def test_tiled_matmul_pipeline_is_shared_across_sizes(gpu, force, monkeypatch, rng):
    """M, N and the batch sizes are parameters of the tiled kernel: only K (and the tile, which
    ``"auto"`` picks from M and N) compiles anew."""
    force("always")
    monkeypatch.setitem(gemm.TILING, "tile", (4, 4))

    def run(m, n, batch):
        g = mg.Graph()
        a, b = g.placeholder([batch, m, 24], name="a"), g.placeholder([24, n], name="b")
        c = g.matrix_multiplication(a, b)
        av, bv = _values(rng, (batch, m, 24), "float32"), _values(rng, (24, n), "float32")
        np.testing.assert_allclose(g.run({a: av, b: bv}, [c], backend="webgpu")[c], av @ bv, rtol=1e-5, atol=1e-5)
    run(70, 70, 2)
    before = gpu.context.compiled
    for m, n, batch in ((17, 7, 2), (64, 64, 3), (1, 130, 1)):
        run(m, n, batch)
    assert gpu.context.compiled == before


# ----------------------------------------------------------------------------- pointwise convolutions
def _pointwise_ref(x, w, groups):
    """NCHW x [N, C, H, W], OIHW w [O, C/groups, 1, 1]: the three products, written per group."""
    n, c, h, wd = x.shape
    o = w.shape[0]
    ci, og = c // groups, o // groups
    x64, w64 = x.astype(np.float64), w[:, :, 0, 0].astype(np.float64)

    def fwd(xx):
        return np.concatenate([np.einsum("oc,nchw->nohw", w64[k * og:(k + 1) * og], xx[:, k * ci:(k + 1) * ci])
                               for k in range(groups)], axis=1)

    def dgrad(dy):
        return np.concatenate([np.einsum("oc,nohw->nchw", w64[k * og:(k + 1) * og], dy[:, k * og:(k + 1) * og])
                               for k in range(groups)], axis=1)

    def wgrad(dy):
        return np.concatenate([np.einsum("nohw,nchw->oc", dy[:, k * og:(k + 1) * og], x64[:, k * ci:(k + 1) * ci])
                               for k in range(groups)], axis=0)[:, :, None, None]
    return fwd, dgrad, wgrad


POINTWISE = [(2, 6, 9, 5, 7, 3), (1, 70, 33, 1, 1, 1), (3, 17, 40, 9, 4, 1), (1, 40, 72, 13, 11, 1),
             (2, 8, 8, 100, 90, 2)]  # N, C, O, H, W, groups; the last has N*H*W > one K piece


# float16 only where its sums stay short (longer ones leave float16's range of exact rounding)
POINTWISE_CASES = [(sizes, dtype) for sizes in POINTWISE for dtype in ("float32", "float16")
                   if dtype == "float32" or sizes[3] * sizes[4] <= 1000]


@pytest.mark.parametrize("tile", ["auto", (4, 4), (8, 8), (1, 2)])
@pytest.mark.parametrize("layouts", [("NCHW", "OIHW"), ("NHWC", "HWIO"), ("NCHW", "HWIO"), ("NHWC", "OIHW")])
@pytest.mark.parametrize("sizes,dtype", POINTWISE_CASES)
def test_pointwise_convolutions_run_as_tiled_gemms(gpu, force, monkeypatch, rng, sizes, layouts, dtype, tile):
    force("always")
    monkeypatch.setitem(gemm.TILING, "tile", tile)
    N, C, O, H, W, G = sizes
    dl, wl = layouts
    d = Convolution2DOpDescriptor(data_layout=L[dl], weights_layout=L[wl], groups=G)
    x_nchw, w_oihw = _values(rng, (N, C, H, W), dtype), _values(rng, (O, C // G, 1, 1), dtype)
    dy_nchw = _values(rng, (N, O, H, W), dtype)
    data = (lambda a: a) if dl == "NCHW" else (lambda a: np.ascontiguousarray(a.transpose(0, 2, 3, 1)))
    undata = (lambda a: a) if dl == "NCHW" else (lambda a: a.transpose(0, 3, 1, 2))
    wts = (lambda a: a) if wl == "OIHW" else (lambda a: np.ascontiguousarray(a.transpose(2, 3, 1, 0)))
    unwts = (lambda a: a) if wl == "OIHW" else (lambda a: a.transpose(3, 2, 0, 1))
    g = mg.Graph()
    x = g.placeholder(list(data(x_nchw).shape), dtype=dtype, name="x")
    w = g.placeholder(list(wts(w_oihw).shape), dtype=dtype, name="w")
    dy = g.placeholder(list(data(dy_nchw).shape), dtype=dtype, name="dy")
    y = g.convolution_2d(x, w, d)
    dx = g.convolution_2d_data_gradient(dy, w, list(data(x_nchw).shape), d)
    dw = g.convolution_2d_weights_gradient(dy, x, list(wts(w_oihw).shape), d)
    before = _recorded()
    got = g.run({x: data(x_nchw), w: wts(w_oihw), dy: data(dy_nchw)}, [y, dx, dw], backend="webgpu")
    assert _recorded() == before + 3
    fwd, dgrad, wgrad = _pointwise_ref(x_nchw, w_oihw, G)
    scale = np.sqrt(max(C, O, N * H * W) / 8)
    tol = {k: v * max(1.0, scale) for k, v in _tol(dtype).items()}
    np.testing.assert_allclose(undata(got[y]).astype(np.float64), fwd(x_nchw.astype(np.float64)), **tol)
    np.testing.assert_allclose(undata(got[dx]).astype(np.float64), dgrad(dy_nchw.astype(np.float64)), **tol)
    np.testing.assert_allclose(unwts(got[dw]).astype(np.float64), wgrad(dy_nchw.astype(np.float64)), **tol)


def test_convolutions_that_are_not_pointwise_keep_their_kernels(gpu, force, rng):
    force("always")
    for d, wshape in ((Convolution2DOpDescriptor(stride_in_x=2), (8, 4, 1, 1)),
                      (Convolution2DOpDescriptor(padding_left=1), (8, 4, 1, 1)),
                      (Convolution2DOpDescriptor(), (8, 4, 3, 3))):
        g = mg.Graph()
        x = g.placeholder([1, 4, 6, 6], name="x")
        y = g.convolution_2d(x, g.constant(_values(rng, wshape, "float32")), d)
        xv = _values(rng, (1, 4, 6, 6), "float32")
        before = _recorded()
        np.testing.assert_allclose(g.run({x: xv}, [y], backend="webgpu")[y], g.run({x: xv}, [y])[y],
                                   rtol=1e-5, atol=1e-5)
        assert _recorded() == before


# ----------------------------------------------------------------------------- tiled convolutions
# (kind, N, C, O (depthwise: the multiplier M), H, W, kernel, groups, stride, dilation, style, explicit pads)
TILED = [("conv", 2, 4, 6, 9, 11, (3, 3), 2, (1, 1), (1, 1), "EXPLICIT", (1, 1, 1, 1)),
         ("conv", 1, 3, 5, 1, 1, (1, 1), 1, (2, 2), (1, 1), "TF_VALID", (0, 0, 0, 0)),  # a 1-pixel image
         ("conv", 1, 6, 4, 13, 10, (3, 2), 1, (2, 1), (1, 1), "TF_SAME", (0, 0, 0, 0)),
         ("conv", 1, 4, 4, 17, 19, (3, 3), 4, (2, 2), (2, 2), "ONNX_SAME_LOWER", (0, 0, 0, 0)),
         ("conv", 1, 2, 3, 40, 37, (5, 3), 1, (3, 2), (1, 1), "EXPLICIT", (2, 0, 1, 3)),
         ("conv", 1, 20, 3, 6, 9, (2, 2), 1, (1, 1), (3, 2), "TF_SAME", (0, 0, 0, 0)),  # several channel chunks
         ("conv", 1, 3, 4, 16, 15, (7, 6), 1, (2, 2), (1, 1), "TF_SAME", (0, 0, 0, 0)),  # tap loops not unrolled
         ("depthwise", 2, 3, 1, 35, 33, (3, 3), 3, (1, 1), (1, 1), "TF_SAME", (0, 0, 0, 0)),
         ("depthwise", 1, 2, 3, 12, 9, (3, 3), 2, (2, 2), (1, 1), "EXPLICIT", (1, 0, 0, 2)),
         ("depthwise", 1, 4, 1, 1, 1, (3, 3), 4, (1, 1), (1, 1), "TF_SAME", (0, 0, 0, 0)),
         ("depthwise", 1, 2, 2, 16, 18, (3, 3), 2, (2, 1), (2, 3), "ONNX_SAME_LOWER", (0, 0, 0, 0)),
         ("depthwise", 1, 2, 1, 70, 9, (5, 5), 2, (1, 1), (1, 1), "TF_VALID", (0, 0, 0, 0)),
         # data gradients whose unrolled taps depend on the strides (rows 4 and 3 per thread)
         ("depthwise", 2, 2, 1, 56, 36, (3, 3), 2, (2, 2), (1, 1), "EXPLICIT", (1, 1, 1, 1)),
         ("conv", 1, 4, 4, 20, 30, (3, 3), 2, (3, 2), (2, 1), "EXPLICIT", (2, 1, 0, 3))]


def _nchw(a, layout):
    return np.ascontiguousarray(a if layout == "NCHW" else a.transpose(0, 2, 3, 1))


def _from_nchw(a, layout):
    return a if layout == "NCHW" else a.transpose(0, 3, 1, 2)


@pytest.mark.parametrize("prefetch,unroll,rows", [(True, True, "least"), (False, False, "largest"), (True, False, "least")],
                         ids=["prefetch-unrolled", "in-order-looped", "prefetch-looped"])
@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("layouts", [("NCHW", "OIHW"), ("NHWC", "HWIO"), ("NHWC", "OIHW")])
@pytest.mark.parametrize("case", TILED, ids=[f"{c[0]}-{i}" for i, c in enumerate(TILED)])
def test_tiled_convolutions_match_naive_loops(gpu, monkeypatch, rng, case, layouts, dtype, prefetch, unroll, rows):
    """Every staging (``TILING["prefetch"]``), data-gradient tap form (``"unroll_data_gradient"``)
    and choice of rows per thread (``"rows"``)."""
    monkeypatch.setitem(tiled_conv.TILING, "mode", "always")
    monkeypatch.setitem(tiled_conv.TILING, "prefetch", prefetch)
    monkeypatch.setitem(tiled_conv.TILING, "unroll_data_gradient", unroll)
    monkeypatch.setitem(tiled_conv.TILING, "rows", rows)
    kind, N, C, O, H, W, (kh, kw), G, stride, dilation, style, pads = case
    dl, wl = layouts
    t, b, lp, rp = pads
    pt, pb, oh = nv.pads_for(style, H, kh, stride[0], dilation[0], t, b)
    pl, pr, ow = nv.pads_for(style, W, kw, stride[1], dilation[1], lp, rp)
    fields = dict(stride_in_y=stride[0], stride_in_x=stride[1], dilation_rate_in_y=dilation[0],
                  dilation_rate_in_x=dilation[1], padding_top=t, padding_bottom=b, padding_left=lp,
                  padding_right=rp, padding_style=PaddingStyle[style], data_layout=L[dl], weights_layout=L[wl])
    x_nchw = _values(rng, (N, C, H, W), dtype)
    if kind == "depthwise":
        desc = DepthwiseConvolution2DOpDescriptor(**fields)
        w_ref = _values(rng, (O, C, kh, kw), dtype)  # OIHW [M, C, kH, kW]; HWIO [kH, kW, C, M]
        w_feed = w_ref if wl == "OIHW" else np.ascontiguousarray(w_ref.transpose(2, 3, 1, 0))
        cout = C * O
    else:
        desc = Convolution2DOpDescriptor(groups=G, **fields)
        w_ref = _values(rng, (O, C // G, kh, kw), dtype)
        w_feed = w_ref if wl == "OIHW" else np.ascontiguousarray(w_ref.transpose(2, 3, 1, 0))
        cout = O
    dy_nchw = _values(rng, (N, cout, oh, ow), dtype)
    g = mg.Graph()
    x = g.placeholder(list(_nchw(x_nchw, dl).shape), dtype=dtype, name="x")
    w = g.placeholder(list(w_feed.shape), dtype=dtype, name="w")
    dy = g.placeholder(list(_nchw(dy_nchw, dl).shape), dtype=dtype, name="dy")
    if kind == "depthwise":
        y = g.depthwise_convolution_2d(x, w, desc)
        dx = g.depthwise_convolution_2d_data_gradient(dy, w, list(x.shape), desc)
    else:
        y = g.convolution_2d(x, w, desc)
        dx = g.convolution_2d_data_gradient(dy, w, list(x.shape), desc)
    before = dict(tiled_conv.RECORDED)
    got = g.run({x: _nchw(x_nchw, dl), w: w_feed, dy: _nchw(dy_nchw, dl)}, [y, dx], backend="webgpu")
    assert tiled_conv.RECORDED["forward"] == before["forward"] + 1
    assert tiled_conv.RECORDED["data_gradient"] == before["data_gradient"] + 1
    padding = (pt, pb, pl, pr)
    x64, w64, dy64 = x_nchw.astype(np.float64), w_ref.astype(np.float64), dy_nchw.astype(np.float64)
    if kind == "depthwise":
        want_y = nv.depthwise_forward(x64, w64, stride, dilation, padding)
        want_dx = nv.depthwise_data_grad(dy64, w64, x64.shape, stride, dilation, padding)
    else:
        want_y = nv.conv2d_forward(x64, w64, stride, dilation, padding, G)
        want_dx = nv.conv2d_data_grad(dy64, w64, x64.shape, stride, dilation, padding, G)
    tol = dict(rtol=2e-2, atol=5e-2) if dtype == "float16" else dict(rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(_from_nchw(got[y], dl).astype(np.float64), want_y, **tol)
    np.testing.assert_allclose(_from_nchw(got[dx], dl).astype(np.float64), want_dx, **tol)


def test_tiled_convolutions_are_chosen_for_images_large_enough(gpu, rng):
    same = dict(padding_style=PaddingStyle.TF_SAME)
    cases = [("depthwise", (1, 8, 20, 20), (1, 8, 3, 3), True), ("depthwise", (2, 16, 7, 7), (1, 16, 3, 3), True),
             ("depthwise", (1, 8, 3, 3), (1, 8, 3, 3), False), ("conv", (1, 8, 20, 20), (4, 8, 3, 3), True),
             ("conv", (1, 8, 7, 7), (4, 8, 3, 3), False)]
    for kind, xshape, wshape, tiled in cases:
        g = mg.Graph()
        x = g.placeholder(list(xshape), name="x")
        w = g.constant(_values(rng, wshape, "float32"))
        y = (g.depthwise_convolution_2d(x, w, DepthwiseConvolution2DOpDescriptor(**same)) if kind == "depthwise"
             else g.convolution_2d(x, w, Convolution2DOpDescriptor(**same)))
        xv = _values(rng, xshape, "float32")
        before = tiled_conv.RECORDED["forward"]
        got = g.run({x: xv}, [y], backend="webgpu")[y]
        assert (tiled_conv.RECORDED["forward"] > before) == tiled, (kind, xshape)
        np.testing.assert_allclose(got, g.run({x: xv}, [y])[y], rtol=1e-5, atol=1e-5)


def test_tiled_convolution_tiles_fit_the_workgroup_memory_budget():

    for stride, dil, k in (((1, 1), (1, 1), 3), ((2, 2), (1, 1), 3), ((3, 3), (4, 4), 7), ((1, 1), (1, 1), 11)):
        desc = Convolution2DOpDescriptor(stride_in_y=stride[0], stride_in_x=stride[1], dilation_rate_in_y=dil[0],
                                         dilation_rate_in_x=dil[1], padding_style=PaddingStyle.TF_SAME)
        geo = ConvGeometry.of(desc, (2, 64, 200, 200), (32, 64, k, k))
        for mode in ("forward", "data_gradient"):
            p = tiled_conv.plan(geo, mode)
            if p is None:  # a source tile with its halo too large for the budget: the general kernel runs
                assert k == 7 and mode == "forward"
                continue
            assert 4 * (p["RB"] * p["SRH"] * p["SRW"] + p["OB"] * p["RB"] * k * k) <= 16384
            assert p["TX"] * p["TY"] == 256 and p["VH"] * p["OB"] <= 16


def test_tiled_convolution_rows_per_thread_stage_fewer_rows_where_that_saves(monkeypatch):
    """28 output rows at stride 2 (the six-block step's second depthwise forward): 3 rows per
    thread make 2 tiles of 24 rows, staging 98 source rows; 2 per thread 2 tiles of 16, staging 66.
    Where the largest rows per thread stage about as few (stride 1), they stay."""
    desc = DepthwiseConvolution2DOpDescriptor(stride_in_x=2, stride_in_y=2, padding_left=1, padding_right=1,
                                              padding_top=1, padding_bottom=1)
    geo = ConvGeometry.of(desc, (32, 64, 56, 56), (1, 64, 3, 3))
    got = {}
    for rows in ("largest", "least"):
        monkeypatch.setitem(tiled_conv.TILING, "rows", rows)
        p = tiled_conv.plan(geo, "forward")
        got[rows] = (p["VH"], -(-p["OUT_H"] // p["TOH"]) * p["SRH"])
    assert got == {"largest": (3, 98), "least": (2, 66)}
    same = ConvGeometry.of(DepthwiseConvolution2DOpDescriptor(padding_style=PaddingStyle.TF_SAME), (32, 32, 56, 56),
                           (1, 32, 3, 3))
    assert tiled_conv.plan(same, "forward")["VH"] == 4


# ----------------------------------------------------------------------------- resident variables
def _training(seed=0):
    """A two-layer regression with an SGD step as assign ops: (graph, x, y, loss, [w1, w2], steps)."""
    r = np.random.default_rng(seed)
    g = mg.Graph()
    x, y = g.placeholder([16, 5], name="x"), g.placeholder([16, 3], name="y")
    w1 = g.variable(r.standard_normal((5, 40)).astype(np.float32) * 0.3, name="w1")
    w2 = g.variable(r.standard_normal((40, 3)).astype(np.float32) * 0.3, name="w2")
    h = g.relu(g.matrix_multiplication(x, w1))
    d = g.subtraction(g.matrix_multiplication(h, w2), y)
    loss = g.reduction_sum(g.multiplication(d, d), axes=[0, 1], name="loss")
    grads = g.gradients(loss, [w1, w2])
    lr = g.constant(0.01, dtype="float32")
    steps = [g.assign(v, g.subtraction(v, g.multiplication(lr, grads[v]))) for v in (w1, w2)]
    return g, x, y, loss, [w1, w2], steps


def _data():
    r = np.random.default_rng(7)
    return r.standard_normal((16, 5)).astype(np.float32), r.standard_normal((16, 3)).astype(np.float32)


def _train(backend, steps=6, resident=True, monkeypatch=None):
    if monkeypatch is not None:
        monkeypatch.setitem(res.RESIDENT, "enabled", resident)
    g, x, y, loss, ws, ops = _training()
    X, Y = _data()
    exe = g.compile({x: mg.ShapedType([16, 5], mg.float32), y: mg.ShapedType([16, 3], mg.float32)}, [loss], ops,
                    backend=backend)
    losses = [exe.run({x: X, y: Y})[0].item() for _ in range(steps)]
    return losses, [g.value_of(w) for w in ws]


def _transfers():
    return dict(res.TRANSFERS)


def test_training_with_resident_variables_matches_numpy_and_the_read_back_path(gpu, monkeypatch):
    losses, values = _train("webgpu", monkeypatch=monkeypatch)
    ref_losses, ref_values = _train("numpy")
    np.testing.assert_allclose(losses, ref_losses, rtol=1e-4)
    for got, want in zip(values, ref_values):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    old_losses, old_values = _train("webgpu", resident=False, monkeypatch=monkeypatch)
    assert losses == old_losses  # the same kernels in the same order: the same bits
    for got, want in zip(values, old_values):
        np.testing.assert_array_equal(got, want)
    assert losses[-1] < losses[0]


def test_only_the_feeds_travel_after_the_first_run(gpu):
    g, x, y, loss, ws, ops = _training()
    X, Y = _data()
    exe = g.compile({x: mg.ShapedType([16, 5], mg.float32), y: mg.ShapedType([16, 3], mg.float32)}, [loss], ops,
                    backend="webgpu")
    exe.run({x: X, y: Y})
    for _ in range(3):
        before = _transfers()
        exe.run({x: X, y: Y})
        after = _transfers()
        assert after["uploads"] - before["uploads"] == 2  # x and y
        assert after["upload_bytes"] - before["upload_bytes"] == X.nbytes + Y.nbytes
        assert after["readbacks"] - before["readbacks"] == 1  # the loss, not the variables
    # a run without targets reads nothing back
    train_only = g.compile({x: mg.ShapedType([16, 5], mg.float32), y: mg.ShapedType([16, 3], mg.float32)}, [], ops,
                           backend="webgpu")
    train_only.run({x: X, y: Y})
    before = _transfers()
    train_only.run({x: X, y: Y})
    after = _transfers()
    assert after["readbacks"] == before["readbacks"] and after["uploads"] - before["uploads"] == 2
    # value_of reads the variable back once
    v = g.value_of(ws[0])
    assert _transfers()["readbacks"] == after["readbacks"] + 1
    np.testing.assert_array_equal(g.value_of(ws[0]), v)
    assert _transfers()["readbacks"] == after["readbacks"] + 1


def test_value_of_set_value_and_reads_see_resident_values(gpu):
    g = mg.Graph()
    v = g.variable(np.arange(4, dtype=np.float32), name="v")
    step = g.assign(v, g.addition(v, 1.0), name="step")
    read = g.read(v, name="r")
    for k in range(1, 4):
        g.run({}, [], [step], backend="webgpu")
        np.testing.assert_array_equal(g.value_of(v), np.arange(4) + k)
    np.testing.assert_array_equal(g.run({}, [read], backend="webgpu")[read], np.arange(4) + 3)
    np.testing.assert_array_equal(g.run({}, [read], backend="numpy")[read], np.arange(4) + 3)
    g.set_value(v, np.full(4, 10, np.float32))  # a host value replaces the device one
    g.run({}, [], [step], backend="webgpu")
    np.testing.assert_array_equal(g.value_of(v), np.full(4, 11))
    g.run({}, [], [step], backend="numpy")  # another backend reads and commits on the host
    g.run({}, [], [step], backend="webgpu")
    np.testing.assert_array_equal(g.value_of(v), np.full(4, 13))
    value = g.value_of(v)
    value[0] = -1  # a copy
    np.testing.assert_array_equal(g.value_of(v), np.full(4, 13))


def test_two_executables_share_a_resident_variable(gpu):
    g = mg.Graph()
    v = g.variable(np.zeros(3, np.float32), name="v")
    bump = g.assign(v, g.addition(v, 2.0), name="bump")
    double = g.assign(v, g.multiplication(v, 2.0), name="double")
    a = g.compile({}, [], [bump], backend="webgpu")
    b = g.compile({}, [], [double], backend="webgpu")
    for _ in range(2):
        a.run({})
        b.run({})
    np.testing.assert_array_equal(g.value_of(v), np.full(3, 12.0))  # ((0 + 2) * 2 + 2) * 2


def test_saving_reads_resident_values(gpu, tmp_path):
    g = mg.Graph()
    v = g.variable(np.ones((2, 2), np.float32), name="v")
    g.run({}, [], [g.assign(v, g.multiplication(v, 3.0))], backend="webgpu")
    path = g.save_variables(tmp_path / "v.safetensors")
    h = mg.Graph()
    w = h.variable(np.zeros((2, 2), np.float32), name="v")
    h.load_variables(path)
    np.testing.assert_array_equal(h.value_of(w), np.full((2, 2), 3.0))


@pytest.mark.parametrize("where", ["after the GPU ran", "before the dispatches"])
def test_a_failed_run_leaves_resident_variables_unchanged(gpu, monkeypatch, where):
    g = mg.Graph()
    v = g.variable(np.zeros(3, np.float32), name="v")
    step = g.assign(v, g.addition(v, 1.0), name="step")
    exe = g.compile({}, [], [step], backend="webgpu")
    exe.run({})
    exe.run({})  # the value is resident now
    name = "_finish" if where == "after the GPU ran" else "_begin"
    real = getattr(wr.Runner, name)

    def failing(self, *args):
        real(self, *args)  # the work happens, then the run fails
        raise RuntimeError("injected failure")
    monkeypatch.setattr(wr.Runner, name, failing)
    for _ in range(2):
        with pytest.raises(mg.ExecutionError):
            exe.run({})
        np.testing.assert_array_equal(g.value_of(v), np.full(3, 2.0))
    monkeypatch.setattr(wr.Runner, name, real)
    exe.run({})
    np.testing.assert_array_equal(g.value_of(v), np.full(3, 3.0))


def test_a_failed_run_after_resident_runs_keeps_the_unread_value(gpu, monkeypatch):
    """The value kept by the last good run is read back only after later runs failed (its buffer
    was never written again)."""
    g = mg.Graph()
    v = g.variable(np.zeros(5, np.float32), name="v")
    step = g.assign(v, g.addition(v, 1.0), name="step")
    exe = g.compile({}, [], [step], backend="webgpu")
    for _ in range(3):
        exe.run({})
    real = wr.Runner._finish

    def failing(self, enc):
        real(self, enc)
        raise RuntimeError("injected failure")
    monkeypatch.setattr(wr.Runner, "_finish", failing)
    for _ in range(3):
        with pytest.raises(mg.ExecutionError):
            exe.run({})
    np.testing.assert_array_equal(g.value_of(v), np.full(5, 3.0))


def test_resident_values_of_every_dtype(gpu):
    g = mg.Graph()
    vals = {"float32": np.arange(3, dtype=np.float32), "float16": np.arange(3, dtype=np.float16),
            "int32": np.arange(3, dtype=np.int32), "bool": np.array([True, False, True])}
    for dt, init in vals.items():
        v = g.variable(init, name=f"v_{dt}")
        new = g.logical_not(v) if dt == "bool" else g.addition(v, g.constant(1, dtype=dt))
        g.run({}, [], [g.assign(v, new)], backend="webgpu")
        want = ~init if dt == "bool" else init + 1
        got = g.value_of(v)
        assert got.dtype == init.dtype
        np.testing.assert_array_equal(got, want)


def test_resident_values_reuse_their_buffers(gpu):
    """Each run keeps its assigned values in buffers of their own; superseded ones are reused, so
    a training loop allocates nothing after its first runs."""
    g, x, y, loss, ws, ops = _training()
    X, Y = _data()
    exe = g.compile({x: mg.ShapedType([16, 5], mg.float32), y: mg.ShapedType([16, 3], mg.float32)}, [], ops,
                    backend="webgpu")
    for _ in range(3):
        exe.run({x: X, y: Y})
    allocated = exe._runner.allocated_bytes
    for _ in range(10):
        exe.run({x: X, y: Y})
    assert exe._runner.allocated_bytes == allocated
    _, want = _train("numpy", steps=13)
    for w, v in zip(ws, want):
        np.testing.assert_allclose(g.value_of(w), v, rtol=1e-4, atol=1e-5)
