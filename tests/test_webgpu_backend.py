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
    assert not ok and "wgpu is not installed" in why and "minigraph[webgpu]" in why


# ----------------------------------------------------------------------------- errors at compile time
@pytest.mark.parametrize("dtype", [mg.float64, mg.int64, mg.int8, mg.uint16])
def test_unsupported_dtypes_fail_at_compile_time(gpu, dtype):
    g = mg.Graph()
    x = g.placeholder([2, 3], dtype, name="x")
    y = g.addition(x, x, name="sum")
    with pytest.raises(UnsupportedDTypeError, match=f"'x'.*{dtype.name}.*float32, float16, int32, uint32, bool"):
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


def test_empty_max_reduction_is_an_error_on_both_backends(gpu):
    g = mg.Graph()
    x = g.placeholder([3, 0], name="x")
    y = g.reduction_maximum(x, axes=[1], name="m")
    for be in ("numpy", "webgpu"):
        with pytest.raises(mg.MiniGraphError, match="'m'"):
            g.run({x: np.zeros((3, 0), np.float32)}, [y], backend=be)


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
    exe = _compile(g, {x: xv}, [y])
    runner = exe._runner
    assert runner.pool_hits >= 20  # 24 computed tensors share a handful of buffers
    assert runner.allocated_bytes <= 8 * 64 * 32 * 4
    assert len(runner.dispatches) == 24  # reshape and identity alias their input
    assert len(runner.reads) == 1  # only the target comes back
    want = g.run({x: xv}, [y], backend="numpy")[y]
    np.testing.assert_allclose(exe.run({x: xv})[0], want, rtol=1e-5, atol=1e-6)


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
