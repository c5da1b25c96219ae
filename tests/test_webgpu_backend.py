"""The webgpu backend itself: availability and the metal name, dtype errors, no silent fallback,
the buffer plan (reuse, aliases, read-back of targets only), the pipeline cache, large dispatch
grids, threads, and the H200 benchmark script at tiny sizes. Op semantics are in
test_conformance.py; the backend registry and third-party backends in test_backends.py."""
from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

import minigraph as mg
from minigraph.backends.webgpu import KERNELS, WebGPUBackend
from minigraph.errors import UnsupportedDTypeError

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def gpu():
    """The registry's webgpu backend (shared, so pipelines are cached across tests)."""
    avail = mg.available_backends()
    if "webgpu" not in avail:
        if "webgpu" in {b for b in __import__("os").environ.get("MINIGRAPH_REQUIRE_BACKENDS", "").split(",")}:
            pytest.fail(f"webgpu required but unavailable: {avail.unavailable.get('webgpu')}")
        pytest.skip(f"webgpu unavailable: {avail.unavailable.get('webgpu')}")
    return mg.get_backend("webgpu")


def _compile(g, feeds, targets, ops=()):
    return g.compile({k: mg.ShapedType(v.shape, v.dtype) for k, v in feeds.items()}, targets, list(ops),
                     backend="webgpu")


# ----------------------------------------------------------------------------- availability
def test_available_reports_the_adapter(gpu):
    ok, why = gpu.available()
    assert ok and "wgpu adapter" in why and gpu.context.description in why
    assert "webgpu" in mg.available_backends()


def test_metal_needs_a_metal_adapter():
    if sys.platform == "darwin":
        pytest.skip("this machine may have Metal")
    ok, why = WebGPUBackend(metal_only=True).available()
    assert not ok and "Metal needs macOS" in why and "'webgpu'" in why
    with pytest.raises(mg.BackendUnavailableError, match="Metal needs macOS.*webgpu"):
        mg.get_backend("metal")
    assert "metal" in mg.available_backends().unavailable


def test_missing_wgpu_is_a_reason_not_a_crash(monkeypatch):
    monkeypatch.setitem(sys.modules, "wgpu", None)  # makes `import wgpu` raise ImportError
    ok, why = WebGPUBackend().available()
    assert not ok and "wgpu is not installed" in why and "pip install wgpu" in why


# ----------------------------------------------------------------------------- errors at compile time
@pytest.mark.parametrize("dtype", [mg.float64, mg.int64, mg.int8, mg.uint16])
def test_unsupported_dtypes_fail_at_compile_time(gpu, dtype):
    g = mg.Graph()
    x = g.placeholder([2, 3], dtype, name="x")
    y = g.addition(x, x, name="sum")
    first = "'sum'" if dtype in (mg.int8, mg.uint8) else "'x'"  # int8 feeds run: the quantization ops read them
    with pytest.raises(UnsupportedDTypeError, match=f"{first}.*{dtype.name}.*float32, float16, int32, uint32, bool"):
        g.compile({x: mg.ShapedType([2, 3], dtype)}, [y], backend="webgpu")
    assert issubclass(UnsupportedDTypeError, mg.KernelMissingError) and issubclass(UnsupportedDTypeError, mg.DTypeError)
    with pytest.raises(mg.MiniGraphError) as ei:  # whatever op reads it
        g.compile({x: mg.ShapedType([2, 3], dtype)}, [g.relu(x, name="r")], backend="webgpu")
    assert dtype.name in str(ei.value) and ("'r'" in str(ei.value) or "'x'" in str(ei.value))
    g2 = mg.Graph()
    p = g2.placeholder([2], mg.float32, name="p")
    c = g2.cast(p, mg.float64, name="widen")
    with pytest.raises(mg.DTypeError, match="cast op 'widen'.*float64"):
        g2.compile({p: mg.ShapedType([2])}, [c], backend="webgpu")


def test_float16_needs_shader_f16(gpu, monkeypatch):
    monkeypatch.setattr(gpu.context, "has_f16", False)
    g = mg.Graph()
    x = g.placeholder([4], mg.float16, name="h")
    with pytest.raises(UnsupportedDTypeError, match="'h'.*shader-f16"):
        g.compile({x: mg.ShapedType([4], mg.float16)}, [g.exponent(x)], backend="webgpu")


def test_float16_runs_or_says_shader_f16(gpu, rng):
    g = mg.Graph()
    x = g.placeholder(shape=(4, 3), dtype=mg.float16, name="h")
    y = g.multiplication(x, x, name="sq")
    xv = rng.standard_normal((4, 3)).astype(np.float32).astype(np.float16)
    try:
        r = g.run({x: xv}, [y], backend="webgpu")
    except mg.MiniGraphError as e:
        assert "shader-f16" in str(e)
    else:
        assert r[y].dtype == np.float16
        np.testing.assert_allclose(r[y].astype(np.float32), (xv * xv).astype(np.float32), rtol=2e-3)


def test_no_silent_fallback(gpu, monkeypatch, replace_kernel):
    replace_kernel(KERNELS, "softmax", None)
    g = mg.Graph()
    x = g.placeholder([2, 3], name="x")
    with pytest.raises(mg.KernelMissingError, match=r"no kernel for op type\(s\) \['softmax'\].*numpy"):
        g.compile({x: mg.ShapedType([2, 3])}, [g.softmax(x)], backend="webgpu")


def test_too_large_for_the_adapter_is_a_resource_error(gpu, monkeypatch):
    monkeypatch.setattr(gpu.context, "max_binding", 1024)
    g = mg.Graph()
    x = g.placeholder([64, 64], name="x")
    with pytest.raises(mg.ResourceLimitError, match="'x'.*16384-byte.*max-storage-buffer-binding-size 1024"):
        g.compile({x: mg.ShapedType([64, 64])}, [g.negative(x)], backend="webgpu")


# ----------------------------------------------------------------------------- buffer plan
def test_intermediates_reuse_buffers_and_views_cost_nothing(gpu, rng):
    g = mg.Graph()
    x = g.placeholder([64, 32], name="x")
    y = x
    for k in range(12):  # a chain: each intermediate dies after the next step
        y = g.tanh(g.multiplication(y, 0.9))
    y = g.reshape(g.identity(y), [32, 64])
    xv = rng.uniform(-1, 1, (64, 32)).astype(np.float32)
    exe = g.compile({x: mg.ShapedType(xv.shape, xv.dtype)}, [y], backend="webgpu",
                    compilation_descriptor=mg.CompilationDescriptor(fusion=False))  # one step per op
    runner = exe._runner
    assert runner.pool_hits >= 20  # 24 computed tensors share a handful of buffers
    assert runner.allocated_bytes <= 8 * 64 * 32 * 4
    assert len(runner.dispatches) == 24  # reshape and identity alias their input
    assert len(runner.reads) == 1  # only the target comes back
    want = g.run({x: xv}, [y], backend="numpy")[y]
    np.testing.assert_allclose(exe.run({x: xv})[0], want, rtol=1e-5, atol=1e-6)


def test_the_runner_does_what_each_steps_memory_action_says(gpu, rng):
    """The runner follows ``Step.memory`` (compiler/buffers.py) and decides nothing itself: a cast
    to the dtype it has is a view in the plan, so the runner aliases its input (no dispatch), and
    a step with a memory action it does not know is refused, naming the step."""
    g = mg.Graph()
    x = g.placeholder([4, 8], name="x")
    y = g.negative(g.cast(x, mg.float32, name="same"), name="neg")
    exe = g.compile({x: mg.ShapedType([4, 8])}, [y], backend="webgpu",
                    compilation_descriptor=mg.CompilationDescriptor(fusion=False))
    assert [s.memory for s in exe.plan.steps] == ["feed", "view", "kernel"]
    assert len(exe._runner.dispatches) == 1  # the negation only
    xv = rng.standard_normal((4, 8)).astype(np.float32)
    np.testing.assert_array_equal(exe.run({x: xv})[0], -xv)
    plan = g.compile({x: mg.ShapedType([4, 8])}, [y], backend="numpy",
                     compilation_descriptor=mg.CompilationDescriptor(fusion=False)).plan
    plan.steps[1].memory = "teleport"
    with pytest.raises(mg.PlanError, match="cast op 'same'.*'teleport'"):
        gpu.prepare(plan)

def test_pipelines_are_cached_across_executables_and_shapes(gpu, rng):
    def build(shape):
        g = mg.Graph()
        x = g.placeholder(shape, name="x")
        return g, x, g.sigmoid(g.addition(x, x))
    g, x, y = build([3, 5])
    _compile(g, {x: np.ones((3, 5), np.float32)}, [y])
    before = gpu.context.compiled
    for shape in ([3, 5], [7, 2], [1000]):  # elementwise kernels take their sizes as parameters
        g, x, y = build(shape)
        v = rng.uniform(-1, 1, shape).astype(np.float32)
        np.testing.assert_allclose(g.run({x: v}, [y], backend="webgpu")[y], 1 / (1 + np.exp(-2 * v)), rtol=1e-5)
    assert gpu.context.compiled == before


def test_matmul_pipelines_are_shared_across_batch_sizes(gpu, rng):
    """Only K is baked into the matmul kernel (for lavapipe's sake): a new M, N or batch count
    reuses the pipeline."""
    def run(m, n, batch):
        g = mg.Graph()
        a = g.placeholder([batch, m, 24], name="a")
        b = g.placeholder([24, n], name="b")
        c = g.matrix_multiplication(a, b)
        av = rng.standard_normal((batch, m, 24)).astype(np.float32)
        bv = rng.standard_normal((24, n)).astype(np.float32)
        np.testing.assert_allclose(g.run({a: av, b: bv}, [c], backend="webgpu")[c], av @ bv, rtol=1e-5, atol=1e-5)
    run(5, 7, 2)
    before = gpu.context.compiled
    for m, n, batch in ((17, 7, 2), (64, 64, 3), (1, 130, 1)):
        run(m, n, batch)
    assert gpu.context.compiled == before


def test_large_grids_wrap_into_two_dimensions(gpu, rng, monkeypatch):
    """More workgroups than the per-dimension limit: every kernel family linearises a 2D grid."""
    monkeypatch.setattr(gpu.context, "max_groups", 8)
    g = mg.Graph()
    x = g.placeholder([40, 300], name="x")
    w = g.placeholder([1, 40, 3, 3], name="w")
    img = g.reshape(x, [1, 40, 15, 20])
    d = mg.DepthwiseConvolution2DOpDescriptor(padding_style=mg.PaddingStyle.TF_SAME)
    outs = [g.exponent(x), g.reduction_sum(x, axes=[1]), g.softmax(x, axis=1), g.softmax(x, axis=0),
            g.transpose(x, 0, 1), g.depthwise_convolution_2d(img, w, d),
            g.depthwise_convolution_2d_weights_gradient(img, img, [1, 40, 3, 3], d)]
    feeds = {x: rng.uniform(-1, 1, (40, 300)).astype(np.float32), w: rng.uniform(-1, 1, (1, 40, 3, 3)).astype(np.float32)}
    want = g.run(feeds, outs, backend="numpy")
    got = g.run(feeds, outs, backend="webgpu")
    for t in outs:
        np.testing.assert_allclose(got[t], want[t], rtol=1e-5, atol=1e-4 * np.abs(want[t]).max(), err_msg=t.name)


def test_threads_share_one_executable(gpu, rng):
    g = mg.Graph()
    x = g.placeholder([50], name="x")
    y = g.reduction_sum(g.square(x), axes=None)
    exe = _compile(g, {x: np.ones(50, np.float32)}, [y])
    vals = [rng.uniform(-1, 1, 50).astype(np.float32) for _ in range(8)]
    out = [None] * 8

    def work(k):
        for _ in range(5):
            out[k] = exe.run({x: vals[k]})[0]
    ts = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    for k in range(8):
        np.testing.assert_allclose(out[k], [np.sum(vals[k] ** 2)], rtol=1e-5)


def test_variables_upload_only_when_changed(gpu):
    g = mg.Graph()
    v = g.variable(np.arange(4, dtype=np.float32), name="v")
    inc = g.assign(v, g.addition(g.read(v), 1.0), name="inc")
    exe = g.compile({}, [v], [inc], backend="webgpu")
    for k in range(3):
        (cur,) = exe.run()
        np.testing.assert_array_equal(cur, np.arange(4) + k)  # the value before this run's assignment
    np.testing.assert_array_equal(g.value_of(v), np.arange(4) + 3)


def test_feeds_are_not_mutated_and_results_are_owned(gpu, rng):
    g = mg.Graph()
    x = g.placeholder([3], mg.bool, name="b")
    y = g.identity(x)
    xv = np.array([True, False, True])
    r = g.run({x: xv}, [y, y], backend="webgpu")[y]
    r[0] = False
    assert xv[0] and r.flags.writeable


def test_feeds_cross_staging_pieces_and_runs(gpu, rng, monkeypatch):
    """Feeds laid across several staging buffers (a feed larger than one, float16 and bool, odd
    sizes), written again each run: every run's values arrive whole, the feeds untouched."""
    from minigraph.backends.webgpu import uploads

    monkeypatch.setattr(uploads, "PIECE", 1024)
    monkeypatch.setattr(uploads, "MIN_THREAD_BYTES", 256)
    specs = [((1001,), np.float32), ((3, 5), np.float16), ((7,), np.bool_), ((300,), np.int32)]
    g = mg.Graph()
    ps = [g.placeholder(s, np.dtype(d).name) for s, d in specs]
    outs = [g.identity(p) for p in ps]
    exe = g.compile({p: mg.ShapedType(s, np.dtype(d).name) for p, (s, d) in zip(ps, specs)}, outs, backend="webgpu")
    assert len(exe._runner.uploads.pieces) > 4
    for _ in range(3):
        vals = [rng.random(s) > 0.5 if d is np.bool_ else (rng.random(s) * 100).astype(d) for s, d in specs]
        before = [v.copy() for v in vals]
        got = exe.run(dict(zip(ps, vals)))
        for r, v, b in zip(got, vals, before):
            np.testing.assert_array_equal(r, v)
            np.testing.assert_array_equal(v, b)
    assert exe._runner.upload_bytes == 1001 * 4 + 32 + 28 + 1200




# ----------------------------------------------------------------------------- bounded loops
# llvmpipe (lavapipe) stops a shader loop after 65,535 iterations without an error, so no kernel
# loop may grow with the data: these sizes overran the old single-pass kernels.
def test_mean_of_a_large_batch_is_exact(gpu):
    g = mg.Graph()
    x = g.placeholder([128, 3, 224, 224], name="x")
    y = g.mean(g.square(x), axes=None)
    r = g.run({x: np.ones((128, 3, 224, 224), np.float32)}, [y], backend="webgpu")[y]
    assert r.shape == (1, 1, 1, 1) and r.item() == 1.0


def test_sum_of_2_to_the_24_ones_is_exact(gpu):
    n = (1 << 24) - 256
    g = mg.Graph()
    x = g.placeholder([n], name="x")
    y = g.reduction_sum(x, axes=[0])
    assert g.run({x: np.ones(n, np.float32)}, [y], backend="webgpu")[y].item() == n


def test_long_float_sums_are_pairwise(gpu):
    """10^7 x float32(0.1): a sequential float32 sum drifts to 1,000,374; the exact value is
    1,000,000.0149 and NumPy's pairwise sum gives 1,000,000.125 (float32 ulps are 0.0625 there)."""
    n = 10 ** 7
    g = mg.Graph()
    x = g.placeholder([n], name="x")
    s, m = g.reduction_sum(x, axes=None), g.mean(x, axes=None)
    r = g.run({x: np.full(n, 0.1, np.float32)}, [s, m], backend="webgpu")
    exact = float(np.float32(0.1)) * n
    assert abs(float(r[s][0]) - exact) <= 0.25
    assert abs(float(r[m][0]) - exact / n) <= 2e-8


def test_matmul_with_a_long_inner_axis(gpu):
    k = 1 << 20
    g = mg.Graph()
    a = g.placeholder([1, k], name="a")
    b = g.placeholder([k, 1], name="b")
    c = g.matrix_multiplication(a, b)
    r = g.run({a: np.ones((1, k), np.float32), b: np.ones((k, 1), np.float32)}, [c], backend="webgpu")[c]
    assert r.shape == (1, 1) and r.item() == k


def test_softmax_and_cross_entropy_of_a_long_row(gpu):
    n = 1 << 24
    g = mg.Graph()
    x = g.placeholder([1, n], name="x")
    lab = g.placeholder([1, n], name="labels")
    y = g.softmax(x, axis=1)
    loss = g.softmax_cross_entropy(x, lab, axis=1, reduction="none")
    labels = np.zeros((1, n), np.float32)
    labels[0, -1] = 1.0
    r = g.run({x: np.zeros((1, n), np.float32), lab: labels}, [y, loss], backend="webgpu")
    assert np.all(r[y] == np.float32(2.0 ** -24))  # so the row sums to 1 exactly
    np.testing.assert_allclose(r[loss], [[24 * np.log(2)]], rtol=1e-6)


@pytest.fixture
def small_chunks(monkeypatch):
    """The multi-pass paths at small sizes: chunks of 2048 elements, softmax rows over 1024 in
    chunks of 1024, matmul K in pieces of 32."""
    from minigraph.backends.webgpu import matmul, reduction
    monkeypatch.setattr(reduction, "_PER", 8)
    monkeypatch.setattr(reduction, "_CHUNK", 256 * 8)
    monkeypatch.setattr(reduction, "_ROW_PER", 4)
    monkeypatch.setattr(reduction, "_ROW_MAX", 256 * 4)
    monkeypatch.setattr(matmul, "_KCH", 32)


def _np_reduce(x, fn, axes, initial=None):
    kw = {} if initial is None else {"initial": initial}
    return fn(x, axis=None if axes is None else tuple(axes), keepdims=True, **kw)


@pytest.mark.parametrize("axes", [[1], [0, 2], None])
def test_chunked_reductions_match_float64(gpu, rng, small_chunks, axes):
    x = rng.standard_normal((3, 2500, 7)).astype(np.float32)
    x[0, 5, :] = np.nan
    x[1, :, 0] = np.nan  # a whole slice of NaN along axis 1
    big = rng.uniform(0, 1, 600_000).astype(np.float32)  # 293 partials: a second chunked pass
    ints = rng.integers(-2 ** 31, 2 ** 31, (3, 2500, 7)).astype(np.int32)
    uints = rng.integers(0, 2 ** 32, (3, 2500, 7)).astype(np.uint32)
    wrapped = _np_reduce(ints.astype(np.int64), np.sum, axes).astype(np.int32).astype(np.int64)
    count = x.size // wrapped.size
    g = mg.Graph()
    xp = g.placeholder(list(x.shape), name="x")
    bp = g.placeholder([600_000], name="big")
    ip = g.placeholder(list(x.shape), mg.int32, name="ints")
    up = g.placeholder(list(x.shape), mg.uint32, name="uints")
    clean = g.select(g.not_equal(xp, xp), 0.5, xp)
    cases = {
        g.reduction_sum(clean, axes=axes): _np_reduce(np.where(np.isnan(x), 0.5, x).astype(np.float64), np.sum, axes),
        g.mean(clean, axes=axes): _np_reduce(np.where(np.isnan(x), 0.5, x).astype(np.float64), np.mean, axes),
        g.reduction_maximum(xp, axes=axes): _np_reduce(x, np.fmax.reduce, axes, -np.inf),
        g.reduction_minimum(xp, axes=axes): _np_reduce(x, np.fmin.reduce, axes, np.inf),
        g.reduction_maximum_propagate_nan(xp, axes=axes): _np_reduce(x, np.maximum.reduce, axes, -np.inf),
        g.reduction_minimum_propagate_nan(xp, axes=axes): _np_reduce(x, np.minimum.reduce, axes, np.inf),
        g.reduction_sum(bp, axes=[0]): np.sum(big.astype(np.float64), keepdims=True),
        g.reduction_sum(ip, axes=axes): wrapped.astype(np.int32),  # wraps, as NumPy's int32 sum
        g.mean(ip, axes=axes): (np.sign(wrapped) * (np.abs(wrapped) // count)).astype(np.int32),  # truncated
        g.reduction_maximum(ip, axes=axes): _np_reduce(ints, np.max, axes),
        g.reduction_sum(up, axes=axes): _np_reduce(uints.astype(np.uint64), np.sum, axes).astype(np.uint32),
        g.reduction_minimum(up, axes=axes): _np_reduce(uints, np.min, axes),
        g.reduction_sum(g.greater_than(xp, 0.0), axes=axes): _np_reduce(x > 0, np.sum, axes),
    }
    got = g.run({xp: x, bp: big, ip: ints, up: uints}, list(cases), backend="webgpu")
    for t, want in cases.items():
        if want.dtype.kind == "f":
            np.testing.assert_allclose(got[t], want, rtol=2e-6, atol=1e-4, err_msg=t.name)  # sums cancel
        else:
            np.testing.assert_array_equal(got[t], want, err_msg=t.name)


def _softmax64(x, axis):
    x = x.astype(np.float64)
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@pytest.mark.parametrize("dtype", [mg.float32, mg.float16])
def test_chunked_softmax_and_cross_entropy_match_float64(gpu, rng, small_chunks, dtype):
    if dtype == mg.float16 and not gpu.context.has_f16:
        pytest.skip("the adapter has no shader-f16")
    npdt = dtype.np_dtype
    x = (rng.standard_normal((2, 3000, 3)) * 4).astype(npdt)
    x[0, :1500, 1] = -np.inf  # half a row of -inf: exp gives 0 there
    lab = _softmax64(rng.standard_normal((2, 3000, 3)), 1).astype(npdt)
    g = mg.Graph()
    xp = g.placeholder(list(x.shape), dtype, name="x")
    lp = g.placeholder(list(x.shape), dtype, name="labels")
    y = g.softmax(xp, axis=1)
    losses = {red: g.softmax_cross_entropy(xp, lp, axis=1, reduction=red) for red in ("none", "sum", "mean")}
    x64 = x.astype(np.float64)
    lse = np.log(np.exp(x64 - np.max(x64, 1, keepdims=True)).sum(1, keepdims=True)) + np.max(x64, 1, keepdims=True)
    per_row = -np.where(lab == 0, 0.0, lab.astype(np.float64) * (x64 - lse)).sum(axis=1, keepdims=True)
    tol = 1e-5 if dtype == mg.float32 else 1e-3
    got = g.run({xp: x, lp: lab}, [y, *losses.values()], backend="webgpu")
    assert got[y].dtype == npdt
    np.testing.assert_allclose(got[y].astype(np.float64), _softmax64(x, 1), rtol=tol, atol=tol * 1e-2)
    np.testing.assert_allclose(got[losses["none"]].astype(np.float64), per_row, rtol=tol)
    np.testing.assert_allclose(got[losses["sum"]], per_row.sum(), rtol=tol)
    np.testing.assert_allclose(got[losses["mean"]], per_row.mean(), rtol=tol)
    x[1, 7, 2] = np.nan  # a NaN makes its row NaN, and the total
    got = g.run({xp: x, lp: lab}, [y, losses["sum"]], backend="webgpu")
    assert np.isnan(got[y][1, :, 2]).all() and not np.isnan(got[y][:, :, :2]).any()
    assert np.isnan(got[losses["sum"]]).all()


def test_float16_softmax_is_rounded_once(gpu, rng):
    """float16 rows are accumulated in float32: the result is the float64 softmax rounded to
    float16, up to one ulp (a float16 accumulation is off by up to 7)."""
    if not gpu.context.has_f16:
        pytest.skip("the adapter has no shader-f16")
    x = (rng.standard_normal((4, 5000)) * 3).astype(np.float16)
    g = mg.Graph()
    xp = g.placeholder([4, 5000], mg.float16, name="x")
    y = g.softmax(xp, axis=1)
    got = g.run({xp: x}, [y], backend="webgpu")[y]
    want = _softmax64(x, 1)
    ulp = np.spacing(want.astype(np.float16)).astype(np.float64)
    assert np.max(np.abs(got.astype(np.float64) - want) / ulp) <= 1.0


@pytest.mark.parametrize("dtype", [mg.float32, mg.float16, mg.int32])
def test_matmul_in_pieces_matches_float64(gpu, rng, small_chunks, dtype):
    if dtype == mg.float16 and not gpu.context.has_f16:
        pytest.skip("the adapter has no shader-f16")
    npdt = dtype.np_dtype
    if dtype == mg.int32:
        a = rng.integers(-2 ** 20, 2 ** 20, (2, 1, 5, 100)).astype(npdt)
        b = rng.integers(-2 ** 20, 2 ** 20, (3, 100, 7)).astype(npdt)
    else:
        a = rng.standard_normal((2, 1, 5, 100)).astype(npdt)
        b = rng.standard_normal((3, 100, 7)).astype(npdt)
    g = mg.Graph()
    ap = g.placeholder(list(a.shape), dtype, name="a")
    bp = g.placeholder(list(b.shape), dtype, name="b")
    c = g.matrix_multiplication(ap, bp)
    got = g.run({ap: a, bp: b}, [c], backend="webgpu")[c]
    assert got.shape == (2, 3, 5, 7) and got.dtype == npdt
    if dtype == mg.int32:
        want = np.matmul(a.astype(np.int64), b.astype(np.int64)).astype(np.int32)  # wraps, as NumPy's int32
        np.testing.assert_array_equal(got, want)
    else:
        want = np.matmul(a.astype(np.float64), b.astype(np.float64))
        np.testing.assert_allclose(got.astype(np.float64), want, rtol=0, atol=1e-4 if dtype == mg.float32 else 0.03)


# ----------------------------------------------------------------------------- NaN and empty slices
@pytest.mark.parametrize("n", [5, 300, 40_000])  # one thread per output, a workgroup, chunks
def test_extrema_skip_nan_or_propagate_it(backend, rng, n):
    x = rng.standard_normal((4, n)).astype(np.float32)
    x[0, n // 2] = np.nan  # one NaN
    x[1, :] = np.nan  # only NaN
    x[2, -1] = 100.0  # the extreme in the tail
    x[2, 0] = -100.0
    g = mg.Graph()
    xp = g.placeholder([4, n], name="x")
    ops = {"max": g.reduction_maximum(xp, axes=[1]), "min": g.reduction_minimum(xp, axes=[1]),
           "maxp": g.reduction_maximum_propagate_nan(xp, axes=[1]),
           "minp": g.reduction_minimum_propagate_nan(xp, axes=[1])}
    r = g.run({xp: x}, list(ops.values()), backend=backend)
    clean = np.where(np.isnan(x), np.float32(np.nan), x)
    np.testing.assert_array_equal(r[ops["max"]][:, 0], [np.nanmax(clean[0]), -np.inf, 100.0, np.max(x[3])])
    np.testing.assert_array_equal(r[ops["min"]][:, 0], [np.nanmin(clean[0]), np.inf, -100.0, np.min(x[3])])
    np.testing.assert_array_equal(r[ops["maxp"]][:, 0], [np.nan, np.nan, 100.0, np.max(x[3])])
    np.testing.assert_array_equal(r[ops["minp"]][:, 0], [np.nan, np.nan, -100.0, np.min(x[3])])


@pytest.mark.parametrize("dtype, lo, hi", [(mg.float32, -np.inf, np.inf), (mg.int32, -2 ** 31, 2 ** 31 - 1),
                                           (mg.uint32, 0, 2 ** 32 - 1)])
def test_extrema_over_an_empty_axis_give_the_identity(backend, dtype, lo, hi):
    g = mg.Graph()
    x = g.placeholder([3, 0], dtype, name="x")
    ops = [g.reduction_maximum(x, axes=[1]), g.reduction_minimum(x, axes=[1]),
           g.reduction_maximum_propagate_nan(x, axes=[1]), g.reduction_minimum_propagate_nan(x, axes=[1])]
    r = g.run({x: np.zeros((3, 0), dtype.np_dtype)}, ops, backend=backend)
    for t, want in zip(ops, (lo, hi, lo, hi)):
        assert r[t].shape == (3, 1) and r[t].dtype == dtype.np_dtype
        np.testing.assert_array_equal(r[t], np.full((3, 1), want, dtype.np_dtype))


def test_softmax_over_an_empty_axis(backend):
    g = mg.Graph()
    x = g.placeholder([3, 0], name="x")
    lab = g.placeholder([3, 0], name="labels")
    y = g.softmax(x, axis=1)
    losses = [g.softmax_cross_entropy(x, lab, axis=1, reduction=red) for red in ("none", "sum", "mean")]
    z = np.zeros((3, 0), np.float32)
    r = g.run({x: z, lab: z}, [y, *losses], backend=backend)
    assert r[y].shape == (3, 0)
    np.testing.assert_array_equal(r[losses[0]], np.zeros((3, 1)))
    np.testing.assert_array_equal(r[losses[1]], 0.0)
    np.testing.assert_array_equal(r[losses[2]], 0.0)


# ----------------------------------------------------------------------------- interrupts, driver memory
_INTERRUPTS = r"""
import _thread, random, threading, time
import numpy as np, wgpu
import minigraph as mg

g = mg.Graph()
x = g.placeholder([64, 64], name="x")
y = g.reduction_sum(g.matrix_multiplication(g.tanh(x), x), axes=[1])
exe = g.compile({x: mg.ShapedType([64, 64])}, [y], backend="webgpu")
xv = np.random.default_rng(0).uniform(-1, 1, (64, 64)).astype(np.float32)
want = exe.run({x: xv})[0]

# Ctrl-C at random points of many runs
t0 = time.perf_counter()
exe.run({x: xv})
dur = time.perf_counter() - t0
rng = random.Random(0)
for i in range(150):
    timer = threading.Timer(rng.uniform(0, 1.5 * dur), _thread.interrupt_main)
    try:
        try:
            timer.start()
            exe.run({x: xv})
        finally:
            timer.join()
    except KeyboardInterrupt:
        pass

# Ctrl-C while the read-back map is pending, and while the buffer is mapped
orig_map, orig_read = wgpu.GPUBuffer.map_sync, wgpu.GPUBuffer.read_mapped

def pending(self, mode, offset=0, size=None):
    self.map_async(mode, offset, size)
    raise KeyboardInterrupt

def mapped(self, *a, **k):
    raise KeyboardInterrupt

for attr, fake in [("map_sync", pending), ("read_mapped", mapped)] * 3:
    setattr(wgpu.GPUBuffer, attr, fake)
    try:
        exe.run({x: xv})
    except KeyboardInterrupt:
        pass
    finally:
        wgpu.GPUBuffer.map_sync, wgpu.GPUBuffer.read_mapped = orig_map, orig_read
    np.testing.assert_allclose(exe.run({x: xv})[0], want, rtol=1e-6)
np.testing.assert_allclose(g.run({x: xv}, [y], backend="webgpu")[y], want, rtol=1e-6)
print("survived")
"""


def test_interrupted_runs_leave_the_backend_usable(gpu, run_python):
    """Ctrl-C during a run, then another run: the read-back buffer must not be left mapped (that
    aborts the process inside wgpu-native). In a subprocess, so an abort fails only this test."""
    r = run_python("-c", _INTERRUPTS, timeout=300)
    assert r.returncode == 0 and "survived" in r.stdout, (r.returncode, r.stderr[-3000:])


_DRIVER_MEMORY = r"""
import os
import numpy as np
import minigraph as mg

def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

for n, runs in ((64, 500), (128, 150)):
    g = mg.Graph()
    a = g.placeholder([n, n], name="a")
    c = g.matrix_multiplication(a, a)
    exe = g.compile({a: mg.ShapedType([n, n])}, [c], backend="webgpu")
    av = np.ones((n, n), np.float32)
    for _ in range(20):
        exe.run({a: av})
    before = rss()
    for _ in range(runs):
        out = exe.run({a: av})[0]
    assert out[0, 0] == n
    print(n, (rss() - before) / 2 ** 20)
"""


def test_matmul_runs_do_not_grow_memory(gpu, run_python):
    """On lavapipe a 64x64 or 128x128 matmul reading K from a uniform leaked about 270 KiB per
    run inside the driver (130 MiB over 500 runs, 40 MiB over 150)."""
    if not sys.platform.startswith("linux"):
        pytest.skip("reads /proc/self/statm")
    r = run_python("-c", _DRIVER_MEMORY, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    growth = {int(n): float(mib) for n, mib in (line.split() for line in r.stdout.split("\n") if line.strip())}
    assert set(growth) == {64, 128} and max(growth.values()) < 16, growth


# ----------------------------------------------------------------------------- the H200 benchmark
def test_gpu_benchmark_runs_tiny(gpu, tmp_path):
    """benchmarks/gpu_depthwise.py --tiny: runs, checks itself against NumPy, writes its JSON."""
    env = dict(__import__("os").environ, OUT=str(tmp_path))  # keep PYTHONPATH: wgpu may live there
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "gpu_depthwise.py"), "--tiny", "--reps", "2",
                        "--no-torch"], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "geometric mean" in r.stdout and "WGSL copy kernel" in r.stdout and "WARNING" not in r.stdout
    data = json.loads((tmp_path / "gpu_depthwise.json").read_text())
    assert len(data["layers"]) == 3 and data["copy_gbps"] > 0
    for row in data["layers"]:
        assert row["ms_ours"] > 0 and row["max_rel_err_vs_numpy"] < 1e-5 and row["gbps_ours"] > 0
    assert data["torch"].startswith("skipped")


def test_gpu_benchmark_timers_agree_on_what_they_time(gpu):
    """Timestamp queries and wall time both give positive times for the same dispatches."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import gpu_depthwise as bench
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    rng = np.random.default_rng(0)
    for wall in (False, True):
        timer = bench.GPUTimer(gpu.context, 2, wall=wall)
        ms, err, got, _, plan = bench.ours((3, 8, 8, 3, 1), 2, rng, timer)
        assert ms > 0 and err < 1e-5 and got.shape == (1, 3, 3, 3) and plan["CHUNKS"] >= 1
        assert timer.method.startswith("wall" if wall or not gpu.context.has_timestamps else "timestamp")
    assert bench.copy_bandwidth(gpu.context, bench.GPUTimer(gpu.context, 2), 1 << 16) > 0


def test_gpu_run_script_is_wired(tmp_path):
    text = (ROOT / "benchmarks" / "gpu_run.sh").read_text()
    for needle in ("MINIGRAPH_REQUIRE_BACKENDS=numpy,webgpu", "tests/test_conformance.py",
                   "tests/test_webgpu_backend.py", "benchmarks/gpu_depthwise.py", "request_adapter_sync"):
        assert needle in text
    r = subprocess.run(["bash", "-n", str(ROOT / "benchmarks" / "gpu_run.sh")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


# ----------------------------------------------------------------------------- bounded loops: convolution, pooling
# The convolution and pooling kernels looped over a whole window (or every input channel) per
# output: past 65,535 iterations llvmpipe stopped them, so these sums came back as 65,535.
def _both(g, feeds, targets):
    """Run on webgpu and on the NumPy backend."""
    return g.run(feeds, targets, backend="webgpu"), g.run(feeds, targets, backend="numpy")


def test_average_pooling_over_a_window_of_70000(gpu):
    from minigraph.descriptors import Pooling2DOpDescriptor
    g = mg.Graph()
    x = g.placeholder([1, 1, 1, 70_000], name="x")
    y = g.avg_pooling_2d(x, Pooling2DOpDescriptor(kernel_width=70_000, kernel_height=1))
    gpu_r, np_r = _both(g, {x: np.ones((1, 1, 1, 70_000), np.float32)}, [y])
    assert gpu_r[y].ravel().tolist() == np_r[y].ravel().tolist() == [1.0]


def test_convolution_over_70000_channels_and_its_data_gradient(gpu):
    from minigraph.descriptors import Convolution2DOpDescriptor
    n = 70_000
    g = mg.Graph()
    x = g.placeholder([1, n, 1, 1], name="x")
    w = g.placeholder([1, n, 1, 1], name="w")
    dy = g.placeholder([1, n, 1, 1], name="dy")
    wt = g.placeholder([n, 1, 1, 1], name="wt")
    y = g.convolution_2d(x, w, Convolution2DOpDescriptor())
    dx = g.convolution_2d_data_gradient(dy, wt, [1, 1, 1, 1], Convolution2DOpDescriptor())
    ones = np.ones((1, n, 1, 1), np.float32)
    gpu_r, np_r = _both(g, {x: ones, w: ones, dy: ones, wt: ones.reshape(n, 1, 1, 1)}, [y, dx])
    for t in (y, dx):
        assert gpu_r[t].ravel().tolist() == np_r[t].ravel().tolist() == [float(n)]


@pytest.mark.parametrize("kind", ["avg", "max"])
def test_global_pooling_over_256x256_and_its_gradient(gpu, rng, kind):
    """65,536 taps per output; the gradient gathers from every window holding an element."""
    from minigraph.descriptors import Pooling2DOpDescriptor
    d = Pooling2DOpDescriptor(kernel_width=256, kernel_height=256)
    g = mg.Graph()
    x = g.placeholder([1, 2, 256, 256], name="x")
    dy = g.placeholder([1, 2, 1, 1], name="dy")
    pool, grad = ((g.avg_pooling_2d, g.avg_pooling_2d_gradient) if kind == "avg"
                  else (g.max_pooling_2d, g.max_pooling_2d_gradient))
    y, dx = pool(x, d), grad(dy, x, d)
    xv = rng.standard_normal((1, 2, 256, 256)).astype(np.float32)
    xv[0, 0, 255, 200] = 9.0  # the maximum in the last row of the window: the taps a truncated loop loses
    xv[0, 1] = np.round(xv[0, 1])  # ties: the first maximum in row-major order takes the gradient
    dyv = rng.standard_normal((1, 2, 1, 1)).astype(np.float32)
    gpu_r, np_r = _both(g, {x: xv, dy: dyv}, [y, dx])
    np.testing.assert_allclose(gpu_r[y], np_r[y], rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(gpu_r[dx], np_r[dx], rtol=1e-6, atol=1e-12)
    if kind == "max":
        assert np.count_nonzero(gpu_r[dx]) == 2


@pytest.fixture
def small_taps(monkeypatch):
    """The convolution and pooling kernels' multi-pass paths at small sizes: more than 4 loop
    iterations per output take it, in chunks of 8 taps; argmaxes combined 2 at a time; the
    weights gradient one strip per thread, and more than one chunk reduced by reduce_dispatch.
    Counts the multi-pass kernels recorded."""
    from minigraph.backends.webgpu import convolution, pooling
    monkeypatch.setattr(convolution, "_LOOP_MAX", 4)
    monkeypatch.setattr(convolution, "_CHUNK", 8)
    monkeypatch.setattr(convolution, "_WGRAD_STEPS", 1)
    monkeypatch.setattr(convolution, "_WGRAD_CHUNKS", 1)
    monkeypatch.setattr(pooling, "_ARG_GROUP", 2)
    seen = []
    real = convolution.part_source
    monkeypatch.setattr(pooling, "part_source", lambda *a, **k: seen.append(a) or real(*a, **k))
    monkeypatch.setattr(convolution, "part_source", lambda *a, **k: seen.append(a) or real(*a, **k))
    return seen


def _check_close(gpu_r, np_r, dtype, err_msg):
    a, b = gpu_r.astype(np.float64), np_r.astype(np.float64)
    tol = 1e-5 if dtype == mg.float32 else 1e-2
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol * max(1.0, float(np.max(np.abs(b), initial=0))),
                               err_msg=err_msg)


def _conv_cases(g, dtype):
    """(x, w, forward) per convolution family: grouped NHWC with stride, dilation and padding;
    depthwise 2D; depthwise 3D with channels last."""
    from minigraph.descriptors import (Convolution2DOpDescriptor, DepthwiseConvolution2DOpDescriptor,
                                       DepthwiseConvolution3DOpDescriptor, TensorNamedDataLayout)
    cases = []
    d = Convolution2DOpDescriptor(stride_in_x=2, dilation_rate_in_y=2, groups=2,
                                  data_layout=TensorNamedDataLayout.NHWC, weights_layout=TensorNamedDataLayout.HWIO)
    d.set_explicit_padding(1, 2, 1, 0)
    x, w = g.placeholder([2, 9, 11, 6], dtype, name="cx"), g.placeholder([3, 3, 3, 4], dtype, name="cw")
    cases.append((x, w, g.convolution_2d(x, w, d)))
    x, w = g.placeholder([2, 3, 21, 20], dtype, name="dx2"), g.placeholder([2, 3, 4, 3], dtype, name="dw2")
    cases.append((x, w, g.depthwise_convolution_2d(x, w, DepthwiseConvolution2DOpDescriptor(stride_in_y=2))))
    x, w = g.placeholder([1, 5, 6, 7, 3], dtype, name="dx3"), g.placeholder([2, 3, 3, 3], dtype, name="dw3")
    d3 = DepthwiseConvolution3DOpDescriptor(padding_values=(1, 0, 0, 1, 2, 2), channel_dimension_index=-1)
    cases.append((x, w, g.depthwise_convolution_3d(x, w, d3)))
    return cases


@pytest.mark.parametrize("dtype", [mg.float32, mg.float16])
def test_convolutions_in_chunks_match_numpy(gpu, rng, small_taps, dtype):
    """Forward, data and weights gradients of every convolution family through the multi-pass path."""
    if dtype == mg.float16 and not gpu.context.has_f16:
        pytest.skip("the adapter has no shader-f16")
    g = mg.Graph()
    feeds, targets = {}, []
    for x, w, y in _conv_cases(g, dtype):
        r = g.placeholder(list(y.shape), dtype, name=y.name + "_r")
        grads = g.gradients(g.reduction_sum(g.multiplication(y, r), axes=None), [x, w])
        targets += [y, grads[x], grads[w]]
        for p in (x, w, r):
            feeds[p] = rng.standard_normal(p.shape).astype(dtype.np_dtype)
    gpu_r, np_r = _both(g, feeds, targets)
    for t in targets:
        _check_close(gpu_r[t], np_r[t], dtype, t.name)
    assert len(small_taps) >= 6  # forward and data gradient of each family took the multi-pass path


@pytest.mark.parametrize("dtype", [mg.float32, mg.float16])
def test_pooling_in_chunks_matches_numpy(gpu, rng, small_taps, dtype):
    """Max and average pooling and their gradients through the multi-pass path: ties go to the
    first maximal tap in row-major order and a NaN wins, as in one pass."""
    if dtype == mg.float16 and not gpu.context.has_f16:
        pytest.skip("the adapter has no shader-f16")
    from minigraph.descriptors import Pooling2DOpDescriptor
    d = Pooling2DOpDescriptor(kernel_width=5, kernel_height=4, stride_in_x=2, dilation_rate_in_y=2,
                              include_zero_pad_to_average=True)
    d.padding_left, d.padding_right, d.padding_top = 2, 1, 3
    g = mg.Graph()
    x = g.placeholder([2, 3, 13, 12], dtype, name="x")
    y_max, y_avg = g.max_pooling_2d(x, d), g.avg_pooling_2d(x, d)
    dy = g.placeholder(list(y_max.shape), dtype, name="dy")
    targets = [y_max, y_avg, g.max_pooling_2d_gradient(dy, x, d), g.avg_pooling_2d_gradient(dy, x, d)]
    xv = rng.integers(-2, 3, (2, 3, 13, 12)).astype(dtype.np_dtype)  # many ties
    xv[1, 2] = rng.standard_normal((13, 12))
    xv[1, 2, 5, 4] = xv[1, 2, 9, 6] = np.nan
    dyv = rng.standard_normal(y_max.shape).astype(dtype.np_dtype)
    gpu_r, np_r = _both(g, {x: xv, dy: dyv}, targets)
    for t in targets:
        _check_close(gpu_r[t], np_r[t], dtype, t.name)
    np.testing.assert_array_equal(np.isnan(gpu_r[y_max]), np.isnan(np_r[y_max]))
    assert len(small_taps) >= 4


# ----------------------------------------------------------------------------- interrupted runs
def test_an_upload_interrupted_by_ctrl_c_leaves_no_stale_resident_value(gpu, monkeypatch):
    """Ctrl-C while a run uploads a host variable, after the run has queued the device copy of a
    resident one: the next run of that executable copies (and uploads) again, as if the
    interrupted run had never started, instead of computing with the value from before."""
    from minigraph.backends.webgpu import runner as wr

    g = mg.Graph()
    w = g.variable(np.array([1.0], np.float32), name="w")
    table = g.variable(np.array([0.0], np.float32), name="table")
    y = g.addition(w, table)
    setter = g.compile({}, [], [g.assign(w, g.constant(np.array([3.0], np.float32)))], backend="webgpu")
    setter.run({})  # w's value now lives on the device (a DeviceValue), 3; table's on the host
    exe = g.compile({}, [y], backend="webgpu")  # its first run copies w on the device, uploads table
    real, calls = wr.Runner._upload, []

    def interrupted(self, ref, arr, dtype):
        calls.append(1)
        if len(calls) == 1:
            raise KeyboardInterrupt
        return real(self, ref, arr, dtype)
    monkeypatch.setattr(wr.Runner, "_upload", interrupted)
    with pytest.raises(KeyboardInterrupt):
        exe.run({})
    assert exe.run({})[0].tolist() == [3.0]
    assert g.value_of(w).tolist() == [3.0] and g.value_of(table).tolist() == [0.0]


def test_a_probe_interrupted_by_ctrl_c_is_no_verdict(gpu, monkeypatch):
    """Ctrl-C during a process's first webgpu use: the interrupted probe caches nothing, and a
    failure right after it (a module the interruption left half imported fails the next import)
    is not cached either, so webgpu becomes available once a probe gets through."""
    from minigraph.backends.webgpu import backend as wb

    real, calls = wb.get_context, []

    def flaky(metal_only=False):
        calls.append(1)
        if len(calls) == 1:
            raise KeyboardInterrupt
        if len(calls) == 2:
            raise AttributeError("module 'pycparser' has no attribute 'c_ast'")
        return real(metal_only)
    monkeypatch.setattr(wb, "get_context", flaky)
    b = WebGPUBackend()
    with pytest.raises(KeyboardInterrupt):
        b.available()
    ok, why = b.available()
    assert not ok and "c_ast" in why
    ok, why = b.available()
    assert ok and "wgpu adapter" in why and len(calls) == 3
    assert b.available() == (ok, why) and len(calls) == 3  # a verdict now: probed no more
    c = WebGPUBackend()  # without an interruption, a failure is the verdict
    calls[:] = [1]
    assert not c.available()[0] and not c.available()[0] and len(calls) == 2


def test_a_ctrl_c_during_a_run_waits_for_its_end_and_leaves_variables_as_they_were(gpu):
    """A SIGINT while a run talks to the device is raised when the run has finished (a
    KeyboardInterrupt inside wgpu can abort the process); the run's assigns are not committed."""
    import _thread

    from minigraph.backends.webgpu import runner as webgpu_runner

    g = mg.Graph()
    v = g.variable(np.zeros(4, np.float32), name="v")
    step = g.assign(v, g.read(v) + 1.0)
    exe = g.compile({}, [g.read(v)], [step], backend="webgpu")
    exe.run({})
    real = webgpu_runner.Runner._run

    def interrupted(self, *a, **k):
        _thread.interrupt_main()  # lands in the middle of the run: noted, raised at its end
        out = real(self, *a, **k)
        interrupted.finished = True
        return out

    interrupted.finished = False
    webgpu_runner.Runner._run = interrupted
    try:
        with pytest.raises(KeyboardInterrupt):
            exe.run({})
    finally:
        webgpu_runner.Runner._run = real
    assert interrupted.finished
    np.testing.assert_array_equal(g.value_of(v), [1.0] * 4)  # the interrupted run's assign is not kept
    exe.run({})
    np.testing.assert_array_equal(g.value_of(v), [2.0] * 4)
