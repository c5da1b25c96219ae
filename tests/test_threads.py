"""The NumPy backend's thread pool: mg.set_num_threads / mg.get_num_threads and
MINIGRAPH_NUM_THREADS, BLAS kept at one thread per task, and every threaded kernel family giving
at 2 and 3 threads exactly the results of 1 thread (docs/performance.md, "Threads"), run after run.
"""
from __future__ import annotations

import os
import threading

import numpy as np
import pytest

import minigraph as mg
from minigraph.backends.numpy import threads
from minigraph.backends.numpy.depthwise_fast import forward as dw_forward
from minigraph.backends.numpy.depthwise_fast import weights_gradient as dw_weights
from minigraph.backends.numpy.depthwise_fast import WeightsGradientPlan, choose_algorithm
from minigraph.backends.numpy.registry import KERNELS
from minigraph.ops.geometry import ConvGeometry

P = mg.PaddingStyle


@pytest.fixture(autouse=True)
def _restore_threads(monkeypatch):
    """Every test leaves the thread count (and BLAS's) as it found them."""
    before, blas = threads._explicit, threads.blas_threads()
    monkeypatch.delenv(threads.ENV, raising=False)
    yield
    threads._explicit = before
    if blas is not None:
        threads._blas.set(blas)


@pytest.fixture
def small_blocks(monkeypatch):
    """Split even small test problems: one element of work is enough for a task of its own."""
    monkeypatch.setattr(threads, "MIN_TASK_WORK", 1)
    monkeypatch.setattr(threads, "ELEMENTWISE_THRESHOLD", 1)
    monkeypatch.setattr(threads, "MATMUL_THRESHOLD", 1)
    monkeypatch.setattr(dw_forward, "FAST_TASK_WORK", 1)
    monkeypatch.setattr(dw_weights, "WGRAD_TASK_WORK", 1)


# ----------------------------------------------------------------------------- set / get / env
def test_set_and_get_num_threads():
    mg.set_num_threads(3)
    assert mg.get_num_threads() == 3
    mg.set_num_threads(np.int64(1))
    assert mg.get_num_threads() == 1 and type(mg.get_num_threads()) is int


@pytest.mark.parametrize("bad", [0, -2, 1.5, 2.0, "2", None, True])
def test_set_num_threads_refuses_what_is_not_an_integer_of_at_least_1(bad):
    mg.set_num_threads(2)
    with pytest.raises(mg.ThreadCountError, match="integer >= 1") as e:
        mg.set_num_threads(bad)
    assert isinstance(e.value, mg.MiniGraphError) and isinstance(e.value, ValueError)
    assert mg.get_num_threads() == 2  # unchanged


def test_default_is_the_usable_cores_and_the_environment_overrides_it(monkeypatch):
    threads._explicit = None
    assert mg.get_num_threads() == len(os.sched_getaffinity(0))
    monkeypatch.setenv("MINIGRAPH_NUM_THREADS", "3")
    assert mg.get_num_threads() == 3
    mg.set_num_threads(2)  # an explicit count wins over the environment
    assert mg.get_num_threads() == 2


@pytest.mark.parametrize("value", ["0", "-1", "two", "1.5"])
def test_a_bad_environment_value_is_a_clear_error(monkeypatch, value):
    threads._explicit = None
    monkeypatch.setenv("MINIGRAPH_NUM_THREADS", value)
    with pytest.raises(mg.ThreadCountError, match="MINIGRAPH_NUM_THREADS"):
        mg.get_num_threads()


def test_blocks_cover_the_range_once_in_order():
    for n in range(0, 12):
        for parts in range(1, 6):
            b = threads.blocks(n, parts)
            assert [i for a, z in b for i in range(a, z)] == list(range(n))
            assert len(b) == min(parts, n) and all(z > a for a, z in b)


def test_blas_follows_the_count_and_runs_one_thread_per_task():
    """threadpoolctl is a core dependency: with the core install alone BLAS is held (NumPy's
    wheels bring OpenBLAS, which it controls), so BLAS threads never fight the pool's."""
    assert threads._blas.controlled, "threadpoolctl found no BLAS to control"
    mg.set_num_threads(2)
    assert threads.blas_threads() == 2
    seen = []
    threads.parallel(lambda a, b: seen.append(threads.blas_threads()), [(0, 1), (1, 2)])
    assert seen == [1, 1] and threads.blas_threads() == 2
    mg.set_num_threads(1)
    assert threads.blas_threads() == 1


def test_parallel_uses_the_pool_and_raises_a_workers_error():
    mg.set_num_threads(2)
    names, start = [], threads.tasks_run()
    threads.parallel(lambda a, b: names.append(threading.current_thread().name), [(0, 1), (1, 2), (2, 3)])
    assert threads.tasks_run() - start == 2
    assert sum(n.startswith("minigraph-worker") for n in names) == 2

    def fail(a, b):
        if a == 1:
            raise RuntimeError("block 1 failed")
    with pytest.raises(RuntimeError, match="block 1 failed"):
        threads.parallel(fail, [(0, 1), (1, 2)])


# ----------------------------------------------------------------------------- kernel families
def _run_at(exe, feeds, counts=(1, 2, 3)):
    """{threads: results}, and the pool tasks each count handed out."""
    out, tasks = {}, {}
    for t in counts:
        mg.set_num_threads(t)
        start = threads.tasks_run()
        out[t] = exe.run(feeds)
        tasks[t] = threads.tasks_run() - start
    return out, tasks


def _same(a, b, msg=""):
    """Bit-identical; within float32 rounding where BLAS's threads cannot be held at one (no
    threadpoolctl: docs/performance.md says the ops that call BLAS may then differ in the last bits)."""
    if threads._blas.controlled:
        np.testing.assert_array_equal(a, b, err_msg=msg)
    else:  # pragma: no cover - depends on the environment
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5, err_msg=msg)


def _check_exact(exe, feeds, reference=None, tol=None, split=True):
    """Results at 2 and 3 threads bit-identical to 1 thread's, the pool used at 2 (where ``split``),
    a second run at 2 threads bit-identical to the first; ``reference(feeds) -> [arrays]`` checks
    the values."""
    got, tasks = _run_at(exe, feeds)
    for t in (2, 3):
        for a, b in zip(got[1], got[t]):
            _same(a, b, f"{t} threads")
    assert tasks[1] == 0 and (tasks[2] > 0) == split, tasks
    mg.set_num_threads(2)
    for a, b in zip(exe.run(feeds), got[2]):
        np.testing.assert_array_equal(a, b)
    if reference is not None:
        for a, r in zip(got[1], reference(feeds)):
            np.testing.assert_allclose(a, r, **(tol or dict(rtol=1e-4, atol=1e-4)))
    return got[1]


def _with_gradients(g, y, inputs, rng):
    """y and the gradients of sum(y * r) toward ``inputs`` (r a fixed random tensor)."""
    r = g.constant(rng.standard_normal(y.shape).astype(np.float32))
    grads = g.gradients(g.reduction_sum(g.multiplication(y, r), axes=None), inputs)
    return [y] + [grads[t] for t in inputs]


def _conv_net(x_shape, w_shape, desc, rng, depthwise=False):
    g = mg.Graph()
    x, w = g.placeholder(x_shape, mg.float32, name="x"), g.placeholder(w_shape, mg.float32, name="w")
    op = g.depthwise_convolution_2d if depthwise else g.convolution_2d
    targets = _with_gradients(g, op(x, w, desc), [x, w], rng)
    feeds = {x: rng.standard_normal(x_shape).astype(np.float32), w: rng.standard_normal(w_shape).astype(np.float32)}
    return g.compile({t: mg.ShapedType(v.shape, mg.float32) for t, v in feeds.items()}, targets), feeds


def _torch_conv(feeds, stride, pad, groups, dilation=1):
    torch = pytest.importorskip("torch", reason="needs torch, in the oracles extra: pip install -e '.[oracles]'")
    x, w = (torch.tensor(v, requires_grad=True) for v in feeds.values())
    y = torch.nn.functional.conv2d(x, w, stride=stride, padding=pad, groups=groups, dilation=dilation)
    return y, x, w


@pytest.mark.parametrize("batch", [1, 2, 5])
@pytest.mark.parametrize("case", ["pointwise", "pointwise_groups", "3x3_pad_stride2", "grouped_3x3", "5x5_nopad"])
def test_convolution_2d_and_its_gradients(small_blocks, rng, batch, case):
    c, o, k, stride, pad, groups = {"pointwise": (8, 12, 1, 1, 0, 1), "pointwise_groups": (8, 12, 1, 1, 0, 2),
                                    "3x3_pad_stride2": (6, 8, 3, 2, 1, 1), "grouped_3x3": (6, 9, 3, 1, 1, 3),
                                    "5x5_nopad": (4, 6, 5, 1, 0, 1)}[case]
    desc = mg.Convolution2DOpDescriptor(stride_in_x=stride, stride_in_y=stride, padding_left=pad,
                                        padding_right=pad, padding_top=pad, padding_bottom=pad, groups=groups)
    exe, feeds = _conv_net((batch, c, 11, 10), (o, c // groups, k, k), desc, rng)

    def reference(feeds):
        y, x, w = _torch_conv(feeds, stride, pad, groups)
        y.backward(torch_r(y, exe, feeds))
        return [y.detach().numpy(), x.grad.numpy(), w.grad.numpy()]
    # one image of 110 positions and one kernel tap leave a pointwise layer nothing to split
    _check_exact(exe, feeds, reference, split=not (batch == 1 and case.startswith("pointwise")))


def torch_r(y, exe, feeds):
    """The fixed random tensor ``r`` of ``_with_gradients`` (the gradient of sum(y * r) toward y)."""
    torch = pytest.importorskip("torch", reason="needs torch, in the oracles extra: pip install -e '.[oracles]'")
    const = [s.op for s in exe.plan.steps if s.op.type == "constant" and tuple(s.op.attrs["value"].shape) == tuple(y.shape)]
    return torch.tensor(np.asarray(const[0].attrs["value"]))


def test_a_single_image_pointwise_layer_splits_by_columns(small_blocks, rng):
    _check_exact(*_conv_net((1, 8, 40, 40), (12, 8, 1, 1), mg.Convolution2DOpDescriptor(), rng))


def test_convolution_2d_nhwc_hwio(small_blocks, rng):
    desc = mg.Convolution2DOpDescriptor(padding_style=P.TF_SAME, data_layout=mg.TensorNamedDataLayout.NHWC,
                                        weights_layout=mg.TensorNamedDataLayout.HWIO)
    _check_exact(*_conv_net((3, 9, 8, 6), (3, 3, 6, 4), desc, rng))
    pointwise = mg.Convolution2DOpDescriptor(data_layout=mg.TensorNamedDataLayout.NHWC,
                                             weights_layout=mg.TensorNamedDataLayout.HWIO)
    _check_exact(*_conv_net((3, 9, 8, 6), (1, 1, 6, 4), pointwise, rng))


def test_convolution_2d_float16_is_exact_across_counts(small_blocks, rng):
    g = mg.Graph()
    x = g.placeholder((3, 4, 9, 9), mg.float16)
    w = g.placeholder((5, 4, 3, 3), mg.float16)
    y = g.convolution_2d(x, w, mg.Convolution2DOpDescriptor(padding_style=P.TF_SAME))
    feeds = {x: rng.standard_normal((3, 4, 9, 9)).astype(np.float16), w: rng.standard_normal((5, 4, 3, 3)).astype(np.float16)}
    _check_exact(g.compile({x: mg.ShapedType(x.shape, mg.float16), w: mg.ShapedType(w.shape, mg.float16)}, [y]), feeds)


def test_pointwise_convolution_without_a_small_threshold_splits_by_images(rng):
    """The default thresholds: a pointwise layer of 3 images of 64 channels at 32x32 is split."""
    exe, feeds = _conv_net((3, 64, 32, 32), (64, 64, 1, 1), mg.Convolution2DOpDescriptor(), rng)
    _check_exact(exe, feeds)


@pytest.mark.parametrize("batch", [1, 3])
def test_convolution_transpose_2d_and_its_gradients(small_blocks, rng, batch):
    g = mg.Graph()
    x = g.placeholder((batch, 6, 5, 4), mg.float32)
    w = g.placeholder((6, 4, 3, 3), mg.float32)  # [Cout of the forward conv, Cin, kH, kW]
    desc = mg.Convolution2DOpDescriptor(stride_in_x=2, stride_in_y=2, padding_left=1, padding_right=1,
                                        padding_top=1, padding_bottom=1)
    y = g.convolution_transpose_2d(x, w, (batch, 4, 9, 7), desc)
    targets = _with_gradients(g, y, [x, w], rng)
    feeds = {x: rng.standard_normal(x.shape).astype(np.float32), w: rng.standard_normal(w.shape).astype(np.float32)}
    exe = g.compile({t: mg.ShapedType(v.shape, mg.float32) for t, v in feeds.items()}, targets)

    def reference(feeds):
        torch = pytest.importorskip("torch", reason="needs torch, in the oracles extra: pip install -e '.[oracles]'")
        xt, wt = (torch.tensor(v) for v in feeds.values())
        return [torch.nn.functional.conv_transpose2d(xt, wt, stride=2, padding=1).numpy()]
    _check_exact(exe, feeds, reference)


@pytest.mark.parametrize("batch", [1, 4, 5])
@pytest.mark.parametrize("case", ["same_3x3", "stride2_same", "valid_m2", "tiny_direct"])
def test_depthwise_2d_and_its_gradients(small_blocks, rng, batch, case):
    """The fast plans ("same"-like layers) and the exact loops (other geometry, tiny problems)."""
    c, m, size, stride, style = {"same_3x3": (16, 1, 14, 1, P.TF_SAME), "stride2_same": (12, 1, 15, 2, P.TF_SAME),
                                 "valid_m2": (6, 2, 9, 1, P.TF_VALID), "tiny_direct": (3, 1, 5, 1, P.TF_VALID)}[case]
    desc = mg.DepthwiseConvolution2DOpDescriptor(stride_in_x=stride, stride_in_y=stride, padding_style=style)
    exe, feeds = _conv_net((batch, c, size, size), (m, c, 3, 3), desc, rng, depthwise=True)
    start = threads.tasks_run()
    got, tasks = _run_at(exe, feeds)
    for t in (2, 3):
        for a, b in zip(got[1], got[t]):
            _same(a, b)
    assert tasks[2] > 0 and threads.tasks_run() > start
    for a, b in zip(exe.run(feeds), got[3]):
        np.testing.assert_array_equal(a, b)
    torch = pytest.importorskip("torch", reason="needs torch, in the oracles extra: pip install -e '.[oracles]'")
    x, w = (torch.tensor(v) for v in feeds.values())
    ref = torch.nn.functional.conv2d(x, w.reshape(m, c, 3, 3).permute(1, 0, 2, 3).reshape(c * m, 1, 3, 3),
                                     stride=stride, groups=c,
                                     padding=1 if style == P.TF_SAME and stride == 1 else 0)
    if not (style == P.TF_SAME and stride == 2):
        np.testing.assert_allclose(got[1][0], ref.numpy(), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("channel_last", [False, True])
@pytest.mark.parametrize("batch", [1, 3])
def test_depthwise_3d_and_its_gradients(small_blocks, rng, batch, channel_last):
    """Channel-last data with several images included: the weights gradient runs the generic
    kernel, whose sums do not depend on the thread count either."""
    g = mg.Graph()
    x = g.placeholder((batch, 5, 6, 7, 4) if channel_last else (batch, 4, 5, 6, 7), mg.float32)
    w = g.placeholder((3, 3, 3, 8) if channel_last else (8, 3, 3, 3), mg.float32)  # C*M = 8, M = 2
    desc = mg.DepthwiseConvolution3DOpDescriptor(padding_values=(1, 1, 1, 1, 0, 1),
                                                 channel_dimension_index=-1 if channel_last else -4)
    targets = _with_gradients(g, g.depthwise_convolution_3d(x, w, desc), [x, w], rng)
    feeds = {x: rng.standard_normal(x.shape).astype(np.float32), w: rng.standard_normal(w.shape).astype(np.float32)}
    _check_exact(g.compile({t: mg.ShapedType(v.shape, mg.float32) for t, v in feeds.items()}, targets), feeds)


@pytest.mark.parametrize("batch", [1, 3])
def test_convolution_3d_and_its_gradients(small_blocks, rng, batch):
    torch = pytest.importorskip("torch", reason="needs torch, in the oracles extra: pip install -e '.[oracles]'")
    g = mg.Graph()
    x = g.placeholder((batch, 4, 5, 6, 7), mg.float32, name="x")
    w = g.placeholder((6, 2, 3, 2, 3), mg.float32, name="w")  # OIDHW, groups = 2
    desc = mg.Convolution3DOpDescriptor(stride_in_y=2, padding_front=1, padding_back=1, padding_left=1, groups=2)
    targets = _with_gradients(g, g.convolution_3d(x, w, desc), [x, w], rng)
    feeds = {x: rng.standard_normal(x.shape).astype(np.float32), w: rng.standard_normal(w.shape).astype(np.float32)}
    exe = g.compile({t: mg.ShapedType(v.shape, mg.float32) for t, v in feeds.items()}, targets)

    def reference(feeds):
        xt, wt = (torch.tensor(v, requires_grad=True) for v in feeds.values())
        y = torch.nn.functional.conv3d(torch.nn.functional.pad(xt, (1, 0, 0, 0, 1, 1)), wt, stride=(1, 2, 1), groups=2)
        y.backward(torch_r(y, exe, feeds))
        return [y.detach().numpy(), xt.grad.numpy(), wt.grad.numpy()]
    _check_exact(exe, feeds, reference)


@pytest.mark.parametrize("batch", [1, 5])
@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize("padded", [False, True])
def test_pooling_and_its_gradients(small_blocks, rng, batch, kind, padded):
    g = mg.Graph()
    x = g.placeholder((batch, 3, 9, 8), mg.float32)
    desc = mg.Pooling2DOpDescriptor(kernel_width=3, kernel_height=3, stride_in_x=2, stride_in_y=2,
                                    padding_style=P.TF_SAME if padded else P.TF_VALID)
    y = (g.max_pooling_2d if kind == "max" else g.avg_pooling_2d)(x, desc)
    targets = _with_gradients(g, y, [x], rng)
    feeds = {x: rng.standard_normal(x.shape).astype(np.float32)}

    def reference(feeds):
        torch = pytest.importorskip("torch", reason="needs torch, in the oracles extra: pip install -e '.[oracles]'")
        xt = torch.tensor(feeds[x])
        if padded:
            return []
        fn = torch.nn.functional.max_pool2d if kind == "max" else torch.nn.functional.avg_pool2d
        return [fn(xt, 3, 2).numpy()]
    _check_exact(g.compile({x: mg.ShapedType(x.shape, mg.float32)}, targets), feeds, reference, split=batch > 1)


@pytest.mark.parametrize("shapes", [((5, 7, 6), (5, 6, 9)), ((1, 7, 6), (6, 9)), ((13, 6), (6, 4)),
                                    ((3, 20), (20, 3)), ((2, 3, 4, 5), (1, 3, 5, 6))])
def test_matrix_multiplication_and_its_gradients(small_blocks, rng, shapes):
    g = mg.Graph()
    a, b = (g.placeholder(s, mg.float32) for s in shapes)
    targets = _with_gradients(g, g.matrix_multiplication(a, b), [a, b], rng)
    feeds = {a: rng.standard_normal(shapes[0]).astype(np.float32), b: rng.standard_normal(shapes[1]).astype(np.float32)}
    # level 0: at level 1 the gradient toward y, ones * r, is folded to a constant at compile time,
    # and a rank-2 product alone is not split
    exe = g.compile({t: mg.ShapedType(v.shape, mg.float32) for t, v in feeds.items()}, targets,
                    compilation_descriptor=mg.CompilationDescriptor(mg.OptimizationLevel.LEVEL0))
    _check_exact(exe, feeds, lambda f: [np.matmul(f[a].astype(np.float64), f[b].astype(np.float64))])


def test_elementwise_ops_split_in_blocks(small_blocks, rng):
    """Same-shape contiguous operands (flat blocks), broadcast ones (leading-axis blocks), and a
    leading axis of 1."""
    g = mg.Graph()
    x = g.placeholder((5, 6, 7), mg.float32)
    v = g.placeholder((6, 1), mg.float32)
    one = g.placeholder((1, 6, 7), mg.float32)
    s = g.addition(x, x)
    ys = [s, g.multiplication(x, v), g.relu(x), g.select(g.greater_than(x, g.constant(0.0)), x, v),
          g.exponent(x), g.sigmoid(x), g.subtraction(one, x), g.cast(x, mg.float16), g.square_root(g.absolute(one)),
          g.clamp(x, g.constant(-0.5), g.constant(0.5))]
    feeds = {x: rng.standard_normal(x.shape).astype(np.float32), v: rng.standard_normal(v.shape).astype(np.float32),
             one: rng.standard_normal(one.shape).astype(np.float32)}
    exe = g.compile({t: mg.ShapedType(a.shape, mg.float32) for t, a in feeds.items()}, ys)

    def reference(f):
        xv, vv, ov = f[x], f[v], f[one]
        return [xv + xv, xv * vv, np.maximum(xv, 0), np.where(xv > 0, xv, vv), np.exp(xv), 1 / (1 + np.exp(-xv)),
                ov - xv, xv.astype(np.float16), np.sqrt(np.abs(ov)), np.clip(xv, -0.5, 0.5)]
    _check_exact(exe, feeds, reference, dict(rtol=2e-6, atol=1e-6))


@pytest.mark.parametrize("axes", [(0,), (1,), (0, 2, 3), (1, 2), (3,)])
def test_reductions_and_softmax_split_along_an_axis_they_keep(small_blocks, rng, axes):
    g = mg.Graph()
    x = g.placeholder((5, 6, 7, 9), mg.float32)
    ys = [g.reduction_sum(x, axes=list(axes)), g.mean(x, axes=list(axes)), g.reduction_maximum(x, axes=list(axes)),
          g.softmax(x, axis=axes[-1])]
    xv = rng.standard_normal(x.shape).astype(np.float32)
    exe = g.compile({x: mg.ShapedType(x.shape, mg.float32)}, ys)

    def reference(f):
        v = f[x].astype(np.float64)
        e = np.exp(v - v.max(axis=axes[-1], keepdims=True))
        return [v.sum(axis=axes, keepdims=True), v.mean(axis=axes, keepdims=True), v.max(axis=axes, keepdims=True),
                e / e.sum(axis=axes[-1], keepdims=True)]
    _check_exact(exe, {x: xv}, reference, dict(rtol=1e-5, atol=1e-5))


def test_a_reduction_over_every_axis_is_not_split(small_blocks, rng):
    g = mg.Graph()
    x = g.placeholder((64, 64), mg.float32)
    exe = g.compile({x: mg.ShapedType(x.shape, mg.float32)}, [g.reduction_sum(x, axes=None)])
    mg.set_num_threads(2)
    start = threads.tasks_run()
    exe.run({x: rng.standard_normal((64, 64)).astype(np.float32)})
    assert threads.tasks_run() == start


def test_small_results_are_not_split_at_the_default_thresholds(rng):
    g = mg.Graph()
    x = g.placeholder((8, 8), mg.float32)
    exe = g.compile({x: mg.ShapedType(x.shape, mg.float32)}, [g.exponent(g.matrix_multiplication(x, x))])
    mg.set_num_threads(2)
    start = threads.tasks_run()
    exe.run({x: rng.standard_normal((8, 8)).astype(np.float32)})
    assert threads.tasks_run() == start


def test_every_kernel_family_the_page_lists_is_registered():
    """The op types docs/performance.md promises threads for have numpy kernels."""
    for t in ("convolution_2d", "convolution_2d_data_gradient", "convolution_2d_weights_gradient",
              "convolution_transpose_2d", "depthwise_convolution_2d", "depthwise_convolution_3d_weights_gradient",
              "max_pooling_2d_gradient", "avg_pooling_2d", "matrix_multiplication", "reduction_sum", "softmax"):
        assert t in KERNELS


@pytest.mark.parametrize("size, stride", [(48, 2), (30, 1), (40, 2)])
def test_fast_depthwise_weights_gradient_repeats_its_first_call_exactly(small_blocks, rng, size, stride):
    """The dot algorithms read a few values of the neighbouring channels' frames: the first call
    (fresh, zero frames) and later calls (frames left by the previous call) give the same bits,
    at every thread count."""
    desc = mg.DepthwiseConvolution2DOpDescriptor(stride_in_x=stride, stride_in_y=stride, padding_style=P.TF_SAME)
    geo = ConvGeometry.for_depthwise_2d(desc, (3, 10, size, size), (1, 10, 3, 3))
    assert choose_algorithm(geo) in ("dot_nc", "dot_cn")
    x = rng.standard_normal((3, 10, size, size)).astype(np.float32)
    dy = rng.standard_normal((3, 10, 1) + geo.output_size).astype(np.float32)
    first = None
    for t in (1, 2, 3):
        mg.set_num_threads(t)
        plan = WeightsGradientPlan(geo, np.float32, choose_algorithm(geo))
        got = [plan(dy, x) for _ in range(3)]
        first = got[0] if first is None else first
        for g in got:
            _same(g, first)


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_batch_norm_and_its_gradient_ops_split_by_channels(small_blocks, rng, layout):
    """variance, normalize and the three normalization gradient ops run in blocks of channels:
    the same bits at 1, 2 and 3 threads."""
    shape, axes = ((3, 5, 4, 6), [0, 2, 3]) if layout == "NCHW" else ((3, 4, 6, 5), [0, 1, 2])
    kept = [1 if i in axes else d for i, d in enumerate(shape)]
    g = mg.Graph()
    x = g.placeholder(shape, mg.float32, name="x")
    gamma = g.constant(rng.uniform(0.5, 1.5, kept).astype(np.float32))
    beta = g.constant(rng.uniform(-1, 1, kept).astype(np.float32))
    y = g.normalize(x, g.mean(x, axes), g.variance(x, axes), gamma, beta, 1e-5)
    outs = _with_gradients(g, y, [x], rng)
    kinds = {op.type for op in g.operations}
    assert {"normalization_gradient", "normalization_gamma_gradient", "normalization_beta_gradient"} <= kinds
    feeds = {x: rng.standard_normal(shape).astype(np.float32) * 2 + 1}
    exe = g.compile({x: mg.ShapedType(shape, mg.float32)}, outs)
    _check_exact(exe, feeds)


# ----------------------------------------------------------------------------- fork, changes under load
_FORK_CHILD = r"""
import multiprocessing
import os
import sys
import time

import numpy as np

import minigraph as mg
from minigraph.backends.numpy import threads

mg.set_num_threads(2)
g = mg.Graph()
x = g.placeholder((1 << 19,), name="x")
y = g.exponent(x)
exe = g.compile({x: mg.ShapedType((1 << 19,), mg.float32)}, [y])
xv = np.linspace(-1, 1, 1 << 19, dtype=np.float32)
want = exe.run({x: xv})[0]  # the pool has run: its workers exist in this process only
start = threads.tasks_run()


def work():
    got = exe.run({x: xv})[0]
    seen = []
    threads.parallel(lambda a, b: seen.append(a), [(0, 1), (1, 2)])
    os._exit(0 if np.array_equal(got, want) and sorted(seen) == [0, 1] and threads.tasks_run() > start else 3)


def wait(pid, what):
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            code = os.waitstatus_to_exitcode(status)
            if code != 0:
                sys.exit(f"{what}: the child exited with {code}")
            return
        time.sleep(0.05)
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    sys.exit(f"{what}: the child hung on its first pooled kernel")


pid = os.fork()
if pid == 0:
    work()
wait(pid, "os.fork")
p = multiprocessing.get_context("fork").Process(target=work)
p.start()
wait(p.pid, "multiprocessing (fork)")
print("ok")
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_runs_pooled_kernels(run_python):
    """After the pool has run, a child made by os.fork or by multiprocessing's fork start method
    gets a pool of its own (its parent's workers do not exist in it) instead of hanging."""
    r = run_python("-c", _FORK_CHILD, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stdout + r.stderr


def test_changing_the_thread_count_while_other_threads_run(rng):
    """Runs in flight keep the pool they started with: raising the count (a larger pool) while
    four threads run a pooled graph fails none of their runs and changes none of their bits."""
    n = 1 << 19
    g = mg.Graph()
    x = g.placeholder((n,), name="x")
    y = g.exponent(g.multiplication(x, x))
    exe = g.compile({x: mg.ShapedType((n,), mg.float32)}, [y])
    xv = rng.standard_normal(n).astype(np.float32)
    mg.set_num_threads(1)
    want = exe.run({x: xv})[0]
    mg.set_num_threads(2)
    stop, errors, runs = threading.Event(), [], []

    def runner():
        try:
            while not stop.is_set():
                got = exe.run({x: xv})[0]
                runs.append(np.array_equal(got, want))
        except Exception as e:  # noqa: BLE001 - any failure is the finding
            errors.append(e)
            stop.set()

    workers = [threading.Thread(target=runner) for _ in range(4)]
    for t in workers:
        t.start()
    try:
        base = max(threads.pool_size(), threads.get_num_threads()) + 1
        for k in range(base, base + 40):  # each count needs a larger pool than the last
            mg.set_num_threads(k)
            deadline = len(runs) + 2
            while len(runs) < deadline and not stop.is_set():
                stop.wait(0.001)
    finally:
        stop.set()
        for t in workers:
            t.join(60)
    assert not errors, errors[:3]
    assert runs and all(runs)
