"""The cpu backend (Numba kernels without the GIL): its compiled kernels against naive loops and
the NumPy backend, bits that do not depend on the thread count, fused steps with the NumPy
backend's exact bits, the six-block training step, the command line's ``--backend cpu``, and the
error without the 'cpu' extra.

Every op case of the conformance tables runs on it too (tests/test_conformance.py loops over
every registered backend), and so does every test that takes the ``backend`` fixture (the
gradient checks, the networks); these tests check what those cannot: that the compiled kernels,
not the NumPy ones, ran.
"""
from __future__ import annotations

import sys

import numpy as np
import pytest

import minigraph as mg
from minigraph.descriptors import DepthwiseConvolution2DOpDescriptor, PaddingStyle, TensorNamedDataLayout

import naive_conv


@pytest.fixture
def numba():
    return pytest.importorskip("numba", reason="needs the 'cpu' extra")


@pytest.fixture
def threads_restored():
    before = mg.get_num_threads()
    yield
    mg.set_num_threads(before)


def _compile(g, feeds, targets, backend, **kw):
    return g.compile({p: mg.ShapedType(a.shape, mg.as_dtype(a.dtype)) for p, a in feeds.items()},
                     targets, backend=backend, **kw)


def _run(g, feeds, targets, backend, **kw):
    exe = _compile(g, feeds, targets, backend, **kw)
    return [np.asarray(r) for r in exe.run(feeds)], exe


# (stride, dilation, padding style, explicit pads (top, bottom, left, right), multiplier, layout)
DEPTHWISE = [
    ((1, 1), (1, 1), "EXPLICIT", (1, 1, 1, 1), 1, "NCHW"),
    ((2, 2), (1, 1), "EXPLICIT", (1, 1, 1, 1), 1, "NCHW"),
    ((2, 1), (1, 2), "TF_SAME", (0, 0, 0, 0), 2, "NCHW"),
    ((1, 2), (2, 1), "TF_VALID", (0, 0, 0, 0), 3, "NHWC"),
    ((1, 1), (1, 1), "ONNX_SAME_LOWER", (0, 0, 0, 0), 1, "NHWC"),
    ((3, 2), (1, 1), "EXPLICIT", (0, 2, 3, 1), 2, "NCHW"),
]


@pytest.mark.parametrize("stride,dilation,style,pads,mult,layout", DEPTHWISE)
def test_depthwise_trio_matches_naive_loops(numba, rng, stride, dilation, style, pads, mult, layout):
    n, c, h, w, k = 2, 3, 9, 8, (3, 2)
    desc = DepthwiseConvolution2DOpDescriptor(
        stride_in_y=stride[0], stride_in_x=stride[1], dilation_rate_in_y=dilation[0],
        dilation_rate_in_x=dilation[1], padding_top=pads[0], padding_bottom=pads[1], padding_left=pads[2],
        padding_right=pads[3], padding_style=PaddingStyle[style], data_layout=TensorNamedDataLayout[layout],
        weights_layout=TensorNamedDataLayout.OIHW if layout == "NCHW" else TensorNamedDataLayout.HWIO)
    ph = naive_conv.pads_for(style, h, k[0], stride[0], dilation[0], pads[0], pads[1])
    pw = naive_conv.pads_for(style, w, k[1], stride[1], dilation[1], pads[2], pads[3])
    canon_pads = (ph[0], ph[1], pw[0], pw[1])
    x = rng.standard_normal((n, c, h, w)).astype(np.float32)
    wt = rng.standard_normal((mult, c) + k).astype(np.float32)
    dy = rng.standard_normal((n, c * mult, ph[2], pw[2])).astype(np.float32)
    nhwc = layout == "NHWC"
    xl, dyl = (a.transpose(0, 2, 3, 1).copy() if nhwc else a for a in (x, dy))
    wl = wt.transpose(2, 3, 1, 0).copy() if nhwc else wt
    g = mg.Graph()
    px, pwt, pdy = g.placeholder(xl.shape), g.placeholder(wl.shape), g.placeholder(dyl.shape)
    targets = [g.depthwise_convolution_2d(px, pwt, desc),
               g.depthwise_convolution_2d_data_gradient(pdy, pwt, list(xl.shape), desc),
               g.depthwise_convolution_2d_weights_gradient(pdy, px, list(wl.shape), desc)]
    feeds = {px: xl, pwt: wl, pdy: dyl}
    (y, dx, dw), exe = _run(g, feeds, targets, "cpu")
    assert {"depthwise_convolution_2d", "depthwise_convolution_2d_data_gradient",
            "depthwise_convolution_2d_weights_gradient"} <= set(exe._runner.compiled)
    if nhwc:
        y, dx = y.transpose(0, 3, 1, 2), dx.transpose(0, 3, 1, 2)
        dw = dw.transpose(3, 2, 0, 1)
    ref = [naive_conv.depthwise_forward(x, wt, stride, dilation, canon_pads),
           naive_conv.depthwise_data_grad(dy, wt, x.shape, stride, dilation, canon_pads),
           naive_conv.depthwise_weights_grad(dy, x, wt.shape, stride, dilation, canon_pads)]
    for got, want in zip((y, dx, dw), ref):
        assert got.shape == want.shape and got.dtype == np.float32
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())
    numpy_results, _ = _run(g, feeds, targets, "numpy")
    for got, want in zip(_run(g, feeds, targets, "cpu")[0], numpy_results):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())


@pytest.mark.parametrize("dtype", [np.float16, np.float64])
def test_depthwise_other_float_dtypes_match_numpy(numba, rng, dtype):
    desc = DepthwiseConvolution2DOpDescriptor(padding_style=PaddingStyle.TF_SAME, stride_in_x=2, stride_in_y=2)
    x = rng.standard_normal((2, 4, 7, 6)).astype(dtype)
    wt = rng.standard_normal((1, 4, 3, 3)).astype(dtype)
    g = mg.Graph()
    px, pw = g.placeholder(x.shape, dtype=x.dtype), g.placeholder(wt.shape, dtype=wt.dtype)
    y = g.depthwise_convolution_2d(px, pw, desc)
    loss = g.reduction_sum(g.multiplication(y, y), None)
    targets = [y, *g.gradients(loss, [px, pw]).values()]
    (got, *grads), exe = _run(g, {px: x, pw: wt}, targets, "cpu")
    want, *wgrads = _run(g, {px: x, pw: wt}, targets, "numpy")[0]
    assert "depthwise_convolution_2d" in " ".join(exe._runner.compiled)
    tol = 4e-3 if dtype == np.float16 else 1e-12
    for a, b in zip([got, *grads], [want, *wgrads]):
        assert a.dtype == b.dtype == dtype
        np.testing.assert_allclose(a.astype(np.float64), b.astype(np.float64), rtol=tol,
                                   atol=tol * float(np.abs(b.astype(np.float64)).max()))


def test_depthwise_bits_do_not_depend_on_the_thread_count(numba, rng, threads_restored):
    desc = DepthwiseConvolution2DOpDescriptor(padding_left=1, padding_right=1, padding_top=1, padding_bottom=1)
    x = rng.standard_normal((4, 16, 20, 20)).astype(np.float32)
    wt = rng.standard_normal((2, 16, 3, 3)).astype(np.float32)
    g = mg.Graph()
    px, pw = g.placeholder(x.shape), g.placeholder(wt.shape)
    y = g.depthwise_convolution_2d(px, pw, desc)
    targets = [y, *g.gradients(g.reduction_sum(g.relu(y), None), [px, pw]).values()]
    exe = _compile(g, {px: x, pw: wt}, targets, "cpu")
    runs = []
    for t in (1, 2, 1, 2):
        mg.set_num_threads(t)
        runs.append([np.asarray(r).copy() for r in exe.run({px: x, pw: wt})])
        assert numba.get_num_threads() == min(t, numba.config.NUMBA_NUM_THREADS)
    for other in runs[1:]:
        for a, b in zip(runs[0], other):
            assert np.array_equal(a, b)


SPECIAL = np.array([np.nan, -0.0, 0.0, np.inf, -np.inf, 1e-38, -1e-38, 3.5, -2.25, 7.0], np.float32)


def _bits(a):
    a = np.ascontiguousarray(a)
    return a.view(np.uint8) if a.dtype != np.bool_ else a


@pytest.mark.parametrize("size", [10, 40_000])  # the serial and the parallel loop
def test_fused_elementwise_steps_have_numpy_bits(numba, rng, size):
    a = np.resize(SPECIAL, size) * rng.choice(np.float32([1, -1]), size)
    b = rng.standard_normal(size).astype(np.float32)
    g = mg.Graph()
    pa, pb = g.placeholder(a.shape), g.placeholder(b.shape)
    two = g.constant(np.float32(2.0))
    fused = g.relu(g.subtraction(g.multiplication(pa, two), pb))          # relu(a * 2 - b)
    masked = g.select(g.greater_than(pa, pb), pb, g.division(pa, pb))    # the relu-gradient shape
    alone = g.relu(pa)
    feeds = {pa: a, pb: b}
    got, exe = _run(g, feeds, [fused, masked, alone], "cpu")
    want, _ = _run(g, feeds, [fused, masked, alone], "numpy")
    assert any(k.startswith("fused_elementwise") for k in exe._runner.compiled)
    for x, y in zip(got, want):
        assert x.dtype == y.dtype and np.array_equal(_bits(x), _bits(y))
    assert not np.signbit(got[2][a == 0]).any() and (got[2][np.isnan(a)] == 0).all()  # relu(-0) = +0, relu(NaN) = 0


def test_integer_elementwise_wraps_as_numpy(numba, rng):
    a = rng.integers(-(2 ** 31), 2 ** 31 - 1, 1000, dtype=np.int64).astype(np.int32)
    b = rng.integers(-(2 ** 31), 2 ** 31 - 1, 1000, dtype=np.int64).astype(np.int32)
    g = mg.Graph()
    pa, pb = g.placeholder(a.shape, dtype=mg.int32), g.placeholder(b.shape, dtype=mg.int32)
    outs = [g.relu(g.multiplication(g.addition(pa, pb), pb)), g.less_than(pa, pb)]
    got, exe = _run(g, {pa: a, pb: b}, outs, "cpu")
    want, _ = _run(g, {pa: a, pb: b}, outs, "numpy")
    assert exe._runner.compiled
    for x, y in zip(got, want):
        assert x.dtype == y.dtype and np.array_equal(x, y)


def test_sixblock_training_step_matches_numpy(numba):
    from minigraph import sixblock

    x, labels = sixblock.data(2, 16, width=0.25)
    losses, weights = {}, {}
    for backend in ("numpy", "cpu"):
        g, feeds, loss, steps = sixblock.build(x, labels, width=0.25)
        exe = g.compile({t: mg.ShapedType(a.shape, mg.float32) for t, a in feeds.items()}, [loss],
                        target_operations=steps, backend=backend)
        losses[backend] = [float(np.asarray(exe.run(feeds)[0]).reshape(-1)[0]) for _ in range(3)]
        weights[backend] = [np.asarray(v) for v in g.compile({}, g.variables, backend="numpy").run({})]
        if backend == "cpu":
            kinds = " ".join(exe._runner.compiled)
            for k in ("depthwise_convolution_2d+relu", "depthwise_convolution_2d_data_gradient+relu_gradient",
                      "depthwise_convolution_2d_weights_gradient+multiplication+subtraction",
                      "convolution_2d+relu"):
                assert k in kinds
    np.testing.assert_allclose(losses["cpu"], losses["numpy"], rtol=1e-5)
    assert losses["cpu"][2] < losses["cpu"][0]  # it trains
    assert len(weights["cpu"]) == 13
    for a, b in zip(weights["cpu"], weights["numpy"]):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5 * np.abs(b).max())


def test_available_backends_lists_cpu_with_its_threads(numba):
    status = mg.available_backends()["cpu"]
    assert status.available and "threads" in status.reason and numba.__version__ in status.reason


def test_without_numba_cpu_is_unavailable_and_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "numba", None)  # import numba raises ImportError
    status = mg.available_backends()["cpu"]
    assert not status.available and ".[cpu]" in status.reason
    g = mg.Graph()
    p = g.placeholder((3,))
    with pytest.raises(mg.BackendUnavailableError, match=r"\.\[cpu\]"):
        g.compile({p: mg.ShapedType((3,), mg.float32)}, [g.relu(p)], backend="cpu")
    with pytest.raises(mg.BackendUnavailableError, match=r"\.\[cpu\]"):
        mg.get_backend("cpu")


@pytest.mark.parametrize("model", ["small", "mobilenet_v2"])
def test_demo_models_fused_equal_unfused_and_match_numpy(numba, model):
    """An epilogue whose tail has no compiled loop still runs the compiled anchor: fused and unfused
    plans compute each anchor with the same kernel (batch norm over 4 images amplifies any
    difference between two kernels' rounding far past the tolerance)."""
    from minigraph import demo

    rng = np.random.default_rng(0)
    g, xp, lp, _, logits, loss, steps = demo.training_graph(model, demo.MODELS[model][1](rng))
    xv, yv, _ = demo.make_data(rng, 4, demo.MODELS[model][2])
    feeds = {xp: xv.astype(np.float32), lp: yv.astype(np.float32)}
    saved = g.variable_store.values
    out = {}
    for backend, desc in (("cpu", mg.CompilationDescriptor()),
                          ("cpu", mg.CompilationDescriptor(mg.OptimizationLevel.LEVEL0, fusion=False)),
                          ("numpy", mg.CompilationDescriptor())):
        g.variable_store.restore(saved)
        exe = _compile(g, feeds, [logits, loss], backend, target_operations=steps, compilation_descriptor=desc)
        res = [np.asarray(r) for r in exe.run(feeds)]
        out[backend, desc.fusion] = res + [np.asarray(g.variable_store.values[v]) for v in
                                           sorted(g.variable_store.values, key=lambda o: o.index)]
        if backend == "cpu" and desc.fusion:
            assert any("depthwise" in k for k in exe._runner.compiled) or model == "small"
    g.variable_store.restore(saved)
    for a, b in zip(out["cpu", True], out["cpu", False]):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5 * max(1.0, float(np.abs(b).max())))
    np.testing.assert_allclose(out["cpu", True][1], out["numpy", True][1], rtol=1e-3)  # the loss


def test_command_line_takes_backend_cpu(numba, run_python, capsys, threads_restored):
    """``backends`` lists cpu with its threads; the demo, ``profile`` and ``bench network`` run on it."""
    from benchmarks import network_step

    from minigraph import demo
    from minigraph.__main__ import main

    p = run_python("-m", "minigraph", "backends")
    assert p.returncode == 0, p.stderr
    (line,) = [ln for ln in p.stdout.splitlines() if ln.startswith("cpu ")]
    assert "available" in line and "unavailable" not in line and " threads (of " in line, line

    assert main(["profile", "--tiny", "--backend", "cpu", "--repeats", "1", "--top", "3", "--threads", "1"]) == 0
    out = capsys.readouterr().out
    assert "channels / 8, 1 cpu threads" in out and "cpu backend" in out and "total (" in out

    assert demo.main(["--backend", "cpu", "--steps", "5", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "backend 'cpu'" in out and "float32 on 'cpu' vs central differences" in out
    assert "Gradient check passed" in out

    res = network_step.run(nets=("sixblock",), backend="cpu", peers=("minigraph",), threads=(1,), tiny=True,
                           log=lambda *a: None)
    (row,) = res["results"]
    assert row["backend"] == "cpu" and row["peers"]["minigraph"]["median_ms"] > 0
    assert (row["batch"], row["size"]) == (2, 16)  # the host sizes, not the GPU's
    assert network_step.main(["--backend", "cpu", "--tiny", "--nets", "sixblock", "--peers", "minigraph",
                              "--repeats", "1"]) == 0
    assert "cpu" in capsys.readouterr().out


def test_command_line_without_numba_names_the_extra(monkeypatch, capsys):
    from minigraph import demo
    from minigraph.__main__ import main

    monkeypatch.setitem(sys.modules, "numba", None)
    assert main(["backends"]) == 0
    (line,) = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("cpu ")]
    assert "unavailable" in line and ".[cpu]" in line
    assert main(["profile", "--tiny", "--backend", "cpu"]) == 2  # a usage error
    assert ".[cpu]" in capsys.readouterr().err
    assert demo.main(["--backend", "cpu", "--steps", "1", "--quiet"]) == 2
    assert ".[cpu]" in capsys.readouterr().err


def test_numba_threads_wait_passively_unless_the_user_chose(run_python):
    """Before Numba starts its OpenMP threads the backend sets OMP_WAIT_POLICY=PASSIVE (spinning
    threads took the cores from BLAS and the NumPy pool); a value the user set is kept."""
    pytest.importorskip("numba", reason="needs Numba, the 'cpu' extra: pip install -e '.[cpu]'")
    code = ("import os; {}; import minigraph as mg; mg.available_backends(); "
            "print(os.environ.get('OMP_WAIT_POLICY'))")
    unset = run_python("-c", code.format("os.environ.pop('OMP_WAIT_POLICY', None)"))
    assert unset.stdout.strip() == "PASSIVE", unset.stderr
    chosen = run_python("-c", code.format("os.environ['OMP_WAIT_POLICY'] = 'ACTIVE'"))
    assert chosen.stdout.strip() == "ACTIVE", chosen.stderr


def test_an_openmp_runtime_loaded_first_puts_numba_on_workqueue(run_python):
    """An OpenMP runtime loaded before the backend could set the wait policy (PyTorch imported
    first) keeps its spinning threads: the backend then asks Numba for its workqueue layer (runs
    serialised) and gets the same bits; otherwise, or where the user chose a layer, Numba's default."""
    pytest.importorskip("numba", reason="needs Numba, the 'cpu' extra: pip install -e '.[cpu]'")
    import ctypes.util

    gomp = ctypes.util.find_library("gomp")
    if gomp is None:
        pytest.skip("no libgomp on this machine")
    code = ("import os, ctypes, numpy as np; {pre}; import minigraph as mg; "
            "from minigraph.backends.cpu import backend as cb; import numba; "
            "g = mg.Graph(); x = g.placeholder((3, 70000)); y = g.relu(g.multiplication(x, x)); "
            "v = np.linspace(-1, 1, 210000, dtype=np.float32).reshape(3, 70000); "
            "r = g.run({{x: v}}, [y], backend='cpu')[y]; "
            "assert np.array_equal(r, np.maximum(v * v, 0)); "
            "print(cb.threading_layer(), numba.threading_layer())")
    env = {"OMP_WAIT_POLICY": ""}
    first = run_python("-c", code.format(pre=f"os.environ.pop('OMP_WAIT_POLICY'); ctypes.CDLL({gomp!r})"), env=env)
    assert first.stdout.split() == ["workqueue", "workqueue"], first.stderr[-2000:]
    plain = run_python("-c", code.format(pre="os.environ.pop('OMP_WAIT_POLICY')"), env=env)
    assert plain.stdout.split()[0] == "default", plain.stderr[-2000:]
    chosen = run_python("-c", code.format(pre=f"os.environ.pop('OMP_WAIT_POLICY'); ctypes.CDLL({gomp!r})"),
                        env={**env, "NUMBA_THREADING_LAYER": "omp"})
    assert chosen.stdout.split()[0] == "omp", chosen.stderr[-2000:]
