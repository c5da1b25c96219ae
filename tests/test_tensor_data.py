"""mg.TensorData: feeds held on a backend's device (MPSGraphTensorData).

Every run fed a TensorData gives what the same run fed the array gives, on every backend; on
webgpu a TensorData of the device is copied there, not uploaded (``resident.TRANSFERS``); the
value never changes, whatever the runs do; errors name the placeholder as for arrays.
"""
import numpy as np
import pytest

import minigraph as mg
from minigraph.backends.webgpu import resident

ALL = ("numpy", "webgpu", "cpu")


def _values(rng, shape):
    return {"float32": rng.standard_normal(shape).astype(np.float32),
            "int32": rng.integers(-1000, 1000, shape).astype(np.int32),
            "bool": rng.random(shape) < 0.5}


def _graph(shape):
    """y = x*2 + 1 (float32), m = i*3 - 7 (int32), n = not b (bool), and the feeds themselves."""
    g = mg.Graph()
    x = g.placeholder(shape, mg.float32, name="x")
    i = g.placeholder(shape, mg.int32, name="i")
    b = g.placeholder(shape, mg.bool, name="b")
    y = g.addition(g.multiplication(x, 2.0), 1.0, name="y")
    m = g.subtraction(g.multiplication(i, 3), 7, name="m")
    n = g.logical_not(b, name="n")
    return g, (x, i, b), [y, m, n, g.identity(x, name="xi"), g.identity(b, name="bi")]


@pytest.mark.parametrize("shape", [(7,), (3, 5), (2, 3, 4), (1,)])
def test_runs_fed_tensor_data_equal_runs_fed_arrays(backend, rng, shape):
    g, (x, i, b), targets = _graph(shape)
    vals = _values(rng, shape)
    arrays = {x: vals["float32"], i: vals["int32"], b: vals["bool"]}
    held = {t: mg.TensorData(a, backend=backend) for t, a in arrays.items()}
    want = g.run(arrays, targets, backend=backend)
    for _ in range(2):
        got = g.run(held, targets, backend=backend)
        for t in targets:
            assert got[t].dtype == want[t].dtype and got[t].shape == want[t].shape
            np.testing.assert_array_equal(got[t], want[t])
    # and both are the formulas, computed here
    np.testing.assert_allclose(got[targets[0]], vals["float32"] * np.float32(2) + np.float32(1), rtol=1e-6)
    np.testing.assert_array_equal(got[targets[1]], vals["int32"] * 3 - 7)
    np.testing.assert_array_equal(got[targets[2]], ~vals["bool"])
    np.testing.assert_array_equal(got[targets[3]], vals["float32"])


def test_an_executable_takes_tensor_data_in_a_list_and_a_dict(backend, rng):
    g, feeds, targets = _graph((4, 3))
    vals = _values(rng, (4, 3))
    exe = g.compile({t: mg.ShapedType([4, 3], t.dtype) for t in feeds}, targets[:3], backend=backend)
    held = [mg.TensorData(vals[t.dtype.name], backend=backend) for t in exe.feed_tensors]
    want = exe.run([vals[t.dtype.name] for t in exe.feed_tensors])
    for got in (exe.run(held), exe.run(dict(zip(exe.feed_tensors, held)))):
        for w, r in zip(want, got):
            np.testing.assert_array_equal(r, w)


def test_a_device_tensor_data_is_not_uploaded(webgpu, rng):
    g = mg.Graph()
    x = g.placeholder([64, 32], name="x")
    w = g.placeholder([32], name="w")
    y = g.reduction_sum(g.multiplication(x, w), axes=[1], name="y")
    xv, wv = rng.standard_normal((64, 32)).astype(np.float32), rng.standard_normal(32).astype(np.float32)
    before = dict(resident.TRANSFERS)
    tx = mg.TensorData(xv, backend="webgpu")
    assert resident.TRANSFERS["uploads"] == before["uploads"] + 1  # put on the device once
    assert resident.TRANSFERS["upload_bytes"] == before["upload_bytes"] + xv.nbytes
    exe = g.compile({x: tx, w: wv}, [y], backend="webgpu")
    want = g.run({x: xv, w: wv}, [y], backend="numpy")[y]
    for _ in range(3):
        before = dict(resident.TRANSFERS)
        (got,) = exe.run({x: tx, w: wv})
        # only w went up; x was copied on the device
        assert resident.TRANSFERS["uploads"] - before["uploads"] == 1
        assert resident.TRANSFERS["upload_bytes"] - before["upload_bytes"] == wv.nbytes
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    tw = mg.TensorData(wv, backend="webgpu")
    before = dict(resident.TRANSFERS)
    (got,) = exe.run({x: tx, w: tw})
    assert resident.TRANSFERS["uploads"] == before["uploads"] and exe._runner.upload_bytes == 0
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_the_value_never_changes(backend, rng):
    """Runs that return the feed, compute from it in place where they may, assign variables from
    it, and fail after the work was done: the TensorData, and the array it came from, stay as made."""
    xv = rng.standard_normal((5, 4)).astype(np.float32)
    keep = xv.copy()
    tx = mg.TensorData(xv, backend=backend)
    g = mg.Graph()
    x = g.placeholder([5, 4], name="x")
    v = g.variable(np.zeros((5, 4), np.float32), name="v")
    step = g.assign(v, g.addition(g.read(v), g.relu(g.negative(x))), name="step")
    ident = g.identity(x, name="ident")
    y = g.multiplication(g.addition(x, 1.0), 3.0, name="y")
    exe = g.compile({x: tx}, [ident, y], [step], backend=backend)
    for k in range(1, 4):
        out_ident, out_y = exe.run({x: tx})
        out_ident[...] = 99.0  # results are the caller's own
        assert out_y.flags.writeable
        np.testing.assert_array_equal(tx.numpy(), keep)
        np.testing.assert_allclose(g.value_of(v), k * np.maximum(-keep, 0), rtol=1e-6)
    real = exe._runner

    def failing(feed_values, variables):
        real(feed_values, variables)  # the work is done, then the run fails
        raise RuntimeError("injected failure")
    exe._runner = failing
    with pytest.raises(mg.ExecutionError, match="injected failure"):
        exe.run({x: tx})
    exe._runner = real
    np.testing.assert_allclose(g.value_of(v), 3 * np.maximum(-keep, 0), rtol=1e-6)  # nothing committed
    np.testing.assert_array_equal(g.run({x: tx}, [ident], backend="numpy")[ident], keep)
    np.testing.assert_array_equal(tx.numpy(), keep)
    np.testing.assert_array_equal(xv, keep)
    assert not tx.numpy().flags.writeable


def test_wrong_shape_and_dtype_are_feed_errors_naming_the_placeholder(backend):
    g = mg.Graph()
    x = g.placeholder([2, 3], name="img")
    y = g.negative(x)
    exe = g.compile({x: mg.ShapedType([2, 3], mg.float32)}, [y], backend=backend)
    wrong_shape = mg.TensorData(np.zeros((3, 2), np.float32), backend=backend)
    wrong_dtype = mg.TensorData(np.zeros((2, 3), np.int32), backend=backend)
    with pytest.raises(mg.FeedError, match=r"'img'.*TensorData of shape \(3, 2\)") as e:
        exe.run({x: wrong_shape})
    assert not isinstance(e.value, mg.FeedDTypeError)
    with pytest.raises(mg.FeedDTypeError, match="'img'.*int32.*float32"):
        exe.run({x: wrong_dtype})
    with pytest.raises(mg.FeedError, match="img"):
        g.run({x: wrong_shape}, [y], backend=backend)
    with pytest.raises(mg.FeedDTypeError, match="img"):
        g.run({x: wrong_dtype}, [y], backend=backend)


def test_tensor_data_of_another_backend_is_read_on_the_host(rng):
    avail = mg.available_backends()
    xv = rng.standard_normal((3, 4)).astype(np.float32)
    g = mg.Graph()
    x = g.placeholder([3, 4], name="x")
    y = g.exponent(x, name="y")
    want = np.exp(xv.astype(np.float64))
    tried = 0
    for made in ALL:
        if made not in avail:
            continue
        td = mg.TensorData(xv, backend=made)
        for ran in ALL:
            if ran not in avail:
                continue
            np.testing.assert_allclose(g.run({x: td}, [y], backend=ran)[y], want, rtol=2e-6)
            tried += 1
    assert tried >= 1


def test_a_device_tensor_data_is_read_back_once_for_another_backend(webgpu, rng):
    xv = rng.standard_normal(10).astype(np.float32)
    td = mg.TensorData(xv, backend="webgpu")
    g = mg.Graph()
    x = g.placeholder([10], name="x")
    y = g.square(x, name="y")
    before = resident.TRANSFERS["readbacks"]
    for _ in range(3):
        np.testing.assert_allclose(g.run({x: td}, [y], backend="numpy")[y], xv * xv, rtol=1e-6)
    assert resident.TRANSFERS["readbacks"] == before + 1
    before = dict(resident.TRANSFERS)
    host = mg.TensorData(xv)  # a numpy one fed to webgpu is uploaded as an array
    np.testing.assert_allclose(g.run({x: host}, [y], backend="webgpu")[y], xv * xv, rtol=1e-6)
    assert resident.TRANSFERS["upload_bytes"] - before["upload_bytes"] == xv.nbytes


def test_dynamic_shapes_specialise_on_the_tensor_data_shape(backend, rng):
    g = mg.Graph()
    x = g.placeholder([-1, 3], name="x")
    y = g.reduction_sum(g.multiplication(x, x), axes=[1], name="y")
    exe = g.compile({x: mg.ShapedType([-1, 3], mg.float32)}, [y], backend=backend)
    for n in (2, 5, 2, 1):
        xv = rng.standard_normal((n, 3)).astype(np.float32)
        (got,) = exe.run({x: mg.TensorData(xv, backend=backend)})
        np.testing.assert_allclose(got, np.sum(xv.astype(np.float64) ** 2, axis=1, keepdims=True), rtol=1e-5)
        assert got.shape == (n, 1)
    assert exe.compile_count == 3
    with pytest.raises(mg.FeedError, match="'x'"):
        exe.run({x: mg.TensorData(np.zeros((2, 4), np.float32), backend=backend)})
    with pytest.raises(mg.FeedDTypeError, match="'x'"):
        exe.run({x: mg.TensorData(np.zeros((2, 3), np.int32), backend=backend)})
    got = g.run({x: mg.TensorData(np.ones((4, 3), np.float32), backend=backend)}, [y], backend=backend)[y]
    np.testing.assert_array_equal(got, np.full((4, 1), 3.0, np.float32))


@pytest.mark.parametrize("dtype", ["float32", "float16", "int32", "uint32", "bool", "int8", "uint8"])
def test_numpy_reads_the_value_back(backend, rng, dtype):
    if backend == "webgpu" and dtype == "float16" and not mg.get_backend("webgpu").context.has_f16:
        pytest.skip("the adapter has no shader-f16")
    a = (rng.random((3, 5)) < 0.5) if dtype == "bool" else rng.integers(-100, 100, (3, 5)).astype(dtype)
    if dtype == "uint8" or dtype == "uint32":
        a = rng.integers(0, 250, (3, 5)).astype(dtype)
    td = mg.TensorData(a, backend=backend)
    assert td.shape == (3, 5) and td.dtype == mg.as_dtype(dtype) and td.backend == backend
    assert td.nbytes == a.nbytes
    host = td.numpy()
    assert host.dtype == a.dtype and host.shape == a.shape and not host.flags.writeable
    np.testing.assert_array_equal(host, a)
    assert td.numpy() is host  # read once, kept
    np.testing.assert_array_equal(np.asarray(td), a)
    assert np.asarray(td, dtype=np.float64).dtype == np.float64
    a[...] = 0  # the TensorData holds a copy
    np.testing.assert_array_equal(mg.TensorData(td, backend=backend).numpy(), host)
    assert repr(td) == f"<TensorData {dtype}[3, 5] on {backend!r}>"


def test_one_tensor_data_fed_to_two_placeholders(backend, rng):
    xv = rng.standard_normal(6).astype(np.float32)
    td = mg.TensorData(xv, backend=backend)
    g = mg.Graph()
    a = g.placeholder([6], name="a")
    b = g.placeholder([6], name="b")
    d, p = g.subtraction(a, b, name="d"), g.multiplication(a, b, name="p")
    got = g.run({a: td, b: td}, [d, p], backend=backend)
    np.testing.assert_array_equal(got[d], np.zeros(6, np.float32))
    np.testing.assert_allclose(got[p], xv * xv, rtol=1e-6)
    other = rng.standard_normal(6).astype(np.float32)
    got = g.run({a: td, b: other}, [d], backend=backend)[d]
    np.testing.assert_allclose(got, xv - other, rtol=1e-6)


def test_profile_and_run_async_take_tensor_data(backend, rng):
    xv = rng.standard_normal((4, 4)).astype(np.float32)
    td = mg.TensorData(xv, backend=backend)
    g = mg.Graph()
    x = g.placeholder([4, 4], name="x")
    y = g.tanh(x, name="y")
    exe = g.compile({x: td}, [y], backend=backend)
    prof = exe.profile({x: td}, repeats=2)
    assert any(r.type == "tanh" for r in prof.records)
    got = g.run_async({x: td}, [y], backend=backend).result()[y]
    np.testing.assert_allclose(got, np.tanh(xv.astype(np.float64)), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(td.numpy(), xv)


def test_four_bit_placeholders_take_an_int8_tensor_data_in_range(backend):
    g = mg.Graph()
    q = g.placeholder([4], mg.int4, name="q")
    y = g.dequantize(q, scale=1.0, zero_point=0.0, dtype=mg.float32, name="y")
    fits = np.array([-8, -1, 0, 7], np.int8)
    got = g.run({q: mg.TensorData(fits, backend=backend)}, [y], backend=backend)[y]
    np.testing.assert_array_equal(got, fits.astype(np.float32))
    got = g.run({q: mg.TensorData(fits, backend=backend, dtype=mg.int4)}, [y], backend=backend)[y]
    np.testing.assert_array_equal(got, fits.astype(np.float32))
    with pytest.raises(mg.FeedDTypeError, match=r"'q'.*-8\.\.7"):
        g.run({q: mg.TensorData(np.array([0, 8, 1, 2], np.int8), backend=backend)}, [y], backend=backend)
    with pytest.raises(mg.DTypeError, match="int4 holds the whole numbers -8 to 7"):
        mg.TensorData(np.array([0, 8, 1, 2], np.int8), backend=backend, dtype=mg.int4)


def test_python_values_take_the_default_or_given_dtype():
    assert mg.TensorData([[1.5, 2.0]]).dtype == mg.float32
    assert mg.TensorData([1, 2, 3]).dtype == mg.int32
    assert mg.TensorData([1, 2, 3], dtype=mg.float16).numpy().dtype == np.float16
    with pytest.raises(mg.DTypeError, match="TensorData.*does not fit int8"):
        mg.TensorData([300], dtype=mg.int8)


def test_bad_values_are_refused():
    with pytest.raises(mg.DTypeError, match="TensorData.*float64 for dtype float32.*astype"):
        mg.TensorData(np.zeros(3), dtype=mg.float32)  # no silent casts of arrays
    with pytest.raises(mg.DTypeError, match="TensorData"):
        mg.TensorData(None)
    with pytest.raises(mg.DTypeError, match="masked"):
        mg.TensorData(np.ma.masked_array([1.0, 2.0], mask=[True, False]))
    with pytest.raises(mg.DTypeError, match="TensorData"):
        mg.TensorData(np.array(["a", "b"]))
    with pytest.raises(mg.UnknownBackendError, match="nowhere"):
        mg.TensorData(np.zeros(3, np.float32), backend="nowhere")


def test_webgpu_refuses_dtypes_it_cannot_hold(webgpu):
    for a in (np.zeros(3), np.zeros(3, np.int64), np.zeros(3, np.complex128)):
        with pytest.raises(mg.UnsupportedDTypeError, match=f"TensorData.*{a.dtype}.*float32, float16"):
            mg.TensorData(a, backend="webgpu")
    td = mg.TensorData(np.zeros(3), backend="numpy")  # the numpy backend holds float64
    assert td.dtype == mg.float64


def test_a_backend_hook_that_fails_is_an_execution_error():
    class Failing:
        name = "failing_hold"

        def available(self):
            return True, "test"

        def prepare(self, plan):
            raise mg.KernelMissingError("nothing")

        def tensor_data(self, array, dtype):
            raise RuntimeError("out of device memory")

    mg.register_backend("failing_hold", Failing)
    with pytest.raises(mg.ExecutionError, match="'failing_hold' could not hold float32\\[2\\].*out of device memory"):
        mg.TensorData(np.zeros(2, np.float32), backend="failing_hold")


def test_array_feeds_beside_tensor_data_cross_staging_pieces(webgpu, rng, monkeypatch):
    """Feeds laid over several staging buffers, some of them TensorData in between: only the
    arrays' pieces are written, every run's values arrive whole."""
    from minigraph.backends.webgpu import uploads

    monkeypatch.setattr(uploads, "PIECE", 1024)
    g = mg.Graph()
    ps = [g.placeholder([n], name=f"p{k}") for k, n in enumerate((700, 300, 900, 5))]
    total = g.addition(g.addition(g.reduction_sum(ps[0], axes=[0]), g.reduction_sum(ps[1], axes=[0])),
                       g.addition(g.reduction_sum(ps[2], axes=[0]), g.reduction_sum(ps[3], axes=[0])))
    outs = [g.identity(p) for p in ps] + [total]
    exe = g.compile({p: mg.ShapedType(p.shape, mg.float32) for p in ps}, outs, backend="webgpu")
    for held in ({1, 2}, {0, 3}, set(), {0, 1, 2, 3}):
        vals = [rng.standard_normal(p.shape[0]).astype(np.float32) for p in ps]
        feeds = {p: (mg.TensorData(v, backend="webgpu") if k in held else v) for k, (p, v) in enumerate(zip(ps, vals))}
        before = resident.TRANSFERS["upload_bytes"]
        got = exe.run(feeds)
        assert resident.TRANSFERS["upload_bytes"] - before == sum(v.nbytes for k, v in enumerate(vals) if k not in held)
        for v, r in zip(vals, got):
            np.testing.assert_array_equal(r, v)
        np.testing.assert_allclose(got[-1], [sum(v.astype(np.float64).sum() for v in vals)], rtol=1e-4, atol=1e-4)
