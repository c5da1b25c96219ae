"""Gather, scatter and one-hot: results against independent references (NumPy's take /
take_along_axis, PyTorch's gather / index_select / scatter_reduce / one_hot, JAX, naive loops) on
every backend; negative and out-of-range indices; collisions; build-time errors; gradients;
Swift export."""
import numpy as np
import pytest

import minigraph as mg

try:  # the oracle of the tests marked needs_torch; the others run without it
    import torch
except ImportError:
    torch = None
needs_torch = pytest.mark.skipif(torch is None, reason="needs torch, in the oracles extra: pip install -e '.[oracles]'")

S = mg.ScatterMode
F32 = np.float32


def run(g, feeds, outs, backend):
    r = g.run(feeds, outs, backend=backend)
    return [r[t] for t in outs]


def ph(g, a, name=None):
    return g.placeholder(a.shape, dtype=a.dtype, name=name)


def naive_gather(u, idx, axis, b=0):
    """Apple's definition, one element at a time; out of range -> 0, negative counts from the end."""
    out_shape = u.shape[:axis] + idx.shape[b:] + u.shape[axis + 1:]
    out = np.zeros(out_shape, u.dtype)
    q = idx.ndim - b
    for pos in np.ndindex(*out_shape):
        k = int(idx[pos[:b] + pos[axis:axis + q]])
        n = u.shape[axis]
        if -n <= k < n:
            out[pos] = u[pos[:axis] + (k % n,) + pos[axis + q:]]
    return out


# ----------------------------------------------------------------------------- gathers
@needs_torch
def test_gather_matches_take_and_index_select(backend, rng):
    u = rng.standard_normal((3, 5, 4)).astype(F32)
    idx = np.array([[4, 0, 2], [1, 1, 3]], np.int32)
    g = mg.Graph()
    U, I = ph(g, u), ph(g, idx)
    outs = [g.gather(U, I, 1), g.gather(U, I, -1), g.gather(U, g.reshape(I, [6]), 0)]
    got = run(g, {U: u, I: idx}, outs, backend)
    np.testing.assert_array_equal(got[0], np.take(u, idx, axis=1))
    ref = torch.index_select(torch.from_numpy(u), 2, torch.from_numpy(idx.reshape(-1).astype(np.int64) % 4))
    inside = (idx < 4)[None, None]  # 4 is out of range on the last axis (size 4): 0
    np.testing.assert_array_equal(got[1], np.where(inside, ref.numpy().reshape(3, 5, 2, 3), 0))
    np.testing.assert_array_equal(got[2], naive_gather(u, idx.reshape(6), 0))


def test_gather_batch_dimensions_pair_the_leading_axes(backend, rng):
    u = rng.standard_normal((2, 3, 5, 4)).astype(F32)
    idx = rng.integers(0, 5, (2, 3, 6)).astype(np.int32)
    g = mg.Graph()
    U, I = ph(g, u), ph(g, idx)
    y = g.gather(U, I, 2, batch_dimensions=2)
    assert y.shape == (2, 3, 6, 4)
    (got,) = run(g, {U: u, I: idx}, [y], backend)
    want = np.stack([np.stack([u[i, j][idx[i, j]] for j in range(3)]) for i in range(2)])
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got, naive_gather(u, idx, 2, b=2))
    jnp = pytest.importorskip("jax.numpy", reason="needs jax, in the oracles extra: pip install -e '.[oracles]'")
    np.testing.assert_array_equal(got, np.asarray(jnp.take_along_axis(u, idx[..., None], axis=2)))


def test_gather_negative_and_out_of_range_indices(backend, rng):
    u = rng.standard_normal((4, 3)).astype(F32) + 10
    idx = np.array([-1, -4, 3, 4, -5, 1000, 0], np.int32)
    g = mg.Graph()
    U, I = ph(g, u), ph(g, idx)
    (got,) = run(g, {U: u, I: idx}, [g.gather(U, I, 0)], backend)
    want = np.stack([u[3], u[0], u[3], np.zeros(3, F32), np.zeros(3, F32), np.zeros(3, F32), u[0]])
    np.testing.assert_array_equal(got, want)


@needs_torch
def test_gather_along_axis_matches_take_along_axis_and_torch_gather(backend, rng):
    u = rng.standard_normal((3, 5, 4)).astype(F32)
    idx = rng.integers(-5, 5, (3, 7, 4)).astype(np.int32)
    g = mg.Graph()
    U, I = ph(g, u), ph(g, idx)
    (got,) = run(g, {U: u, I: idx}, [g.gather_along_axis(U, I, 1)], backend)
    np.testing.assert_array_equal(got, np.take_along_axis(u, idx, axis=1))
    ref = torch.gather(torch.from_numpy(u), 1, torch.from_numpy(idx.astype(np.int64) % 5))
    np.testing.assert_array_equal(got, ref.numpy())


def test_gather_along_axis_out_of_range_gives_zero(backend):
    u = np.arange(1, 7, dtype=F32).reshape(2, 3)
    idx = np.array([[0, 3], [-4, -3]], np.int32)
    g = mg.Graph()
    U, I = ph(g, u), ph(g, idx)
    (got,) = run(g, {U: u, I: idx}, [g.gather_along_axis(U, I, 1)], backend)
    np.testing.assert_array_equal(got, [[1, 0], [0, 4]])


def test_gather_nd_matches_naive_loops_and_jax(backend, rng):
    u = rng.standard_normal((2, 4, 3, 5)).astype(F32)
    idx = np.array([[[1, 2], [3, 0], [-1, -3]], [[0, 0], [4, 1], [2, 2]]], np.int32)  # [2, 3, 2]
    g = mg.Graph()
    U, I = ph(g, u), ph(g, idx)
    plain = g.gather_nd(U, I)
    batched = g.gather_nd(U, I, batch_dimensions=1)
    assert plain.shape == (2, 3, 3, 5) and batched.shape == (2, 3, 5)
    got = run(g, {U: u, I: idx}, [plain, batched], backend)
    want_plain = np.zeros((2, 3, 3, 5), F32)
    want_batched = np.zeros((2, 3, 5), F32)
    for a in range(2):
        for b in range(3):
            i, j = idx[a, b]
            if -2 <= i < 2 and -4 <= j < 4:
                want_plain[a, b] = u[i, j]
            if -4 <= i < 4 and -3 <= j < 3:
                want_batched[a, b] = u[a, i, j]
    np.testing.assert_array_equal(got[0], want_plain)
    np.testing.assert_array_equal(got[1], want_batched)
    jnp = pytest.importorskip("jax.numpy", reason="needs jax, in the oracles extra: pip install -e '.[oracles]'")
    inside = np.array([[1, 2], [0, -1], [-2, -3]], np.int32)
    g2 = mg.Graph()
    U2, I2 = ph(g2, u[0]), ph(g2, inside)
    (got2,) = run(g2, {U2: u[0], I2: inside}, [g2.gather_nd(U2, I2)], backend)
    np.testing.assert_array_equal(got2, np.asarray(jnp.asarray(u[0])[inside[:, 0], inside[:, 1]]))


# ----------------------------------------------------------------------------- scatters
def naive_scatter_along_axis(u, idx, data, axis, mode):
    out = data.astype(np.float64 if data.dtype.kind == "f" else data.dtype).copy()
    n = data.shape[axis]
    for pos in np.ndindex(*u.shape):  # row-major order of the updates
        k = int(idx[pos])
        if not -n <= k < n:
            continue
        t = pos[:axis] + (k % n,) + pos[axis + 1:]
        v = u[pos]
        out[t] = {S.ADD: lambda a: a + v, S.SUB: lambda a: a - v, S.MUL: lambda a: a * v, S.DIV: lambda a: a / v,
                  S.MIN: lambda a: np.minimum(a, v), S.MAX: lambda a: np.maximum(a, v), S.SET: lambda a: v}[mode](out[t])
    return out


@needs_torch
@pytest.mark.parametrize("mode", list(S))
def test_scatter_along_axis_every_mode_against_loops_and_torch(backend, rng, mode):
    d = rng.uniform(0.5, 2, (3, 4, 2)).astype(F32)
    u = rng.uniform(0.5, 2, (3, 6, 2)).astype(F32)
    idx = rng.integers(-5, 5, (3, 6, 2)).astype(np.int32)  # collisions, negatives, -5 out of range
    g = mg.Graph()
    D, U, I = ph(g, d), ph(g, u), ph(g, idx)
    (got,) = run(g, {D: d, U: u, I: idx}, [g.scatter_along_axis(U, I, D, 1, mode)], backend)
    np.testing.assert_allclose(got, naive_scatter_along_axis(u, idx, d, 1, mode), rtol=2e-6)
    reduce = {S.ADD: "sum", S.MUL: "prod", S.MIN: "amin", S.MAX: "amax"}.get(mode)
    if reduce:
        keep = (idx >= -4) & (idx < 4)
        t_idx = torch.from_numpy(np.where(keep, idx % 4, 0).astype(np.int64))
        neutral = {"sum": 0.0, "prod": 1.0, "amin": np.inf, "amax": -np.inf}[reduce]
        t_src = torch.from_numpy(np.where(keep, u, F32(neutral)))
        ref = torch.from_numpy(d.copy()).scatter_reduce(1, t_idx, t_src, reduce=reduce, include_self=True)
        np.testing.assert_allclose(got, ref.numpy(), rtol=2e-6)


@pytest.mark.parametrize("mode", list(S))
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_scatter_along_axis_into_a_shape_starts_from_the_modes_identity(backend, rng, mode, dtype):
    """scatterAlongAxis(_:updates:indices:shape:mode:): a result "initialized with an initial value
    corresponding to mode" (0, 1, +inf / -inf or the int limits), which unreached elements keep."""
    if dtype == np.int32 and mode == S.DIV:
        pytest.skip("DIV is for floating-point types only")
    u = (rng.uniform(0.5, 2, (3, 6, 2)) if dtype == np.float32 else rng.integers(-5, 6, (3, 6, 2))).astype(dtype)
    idx = rng.integers(-6, 6, (3, 6, 2)).astype(np.int32)  # collisions, negatives, -6 and 5 out of range
    g = mg.Graph()
    U, I = ph(g, u), ph(g, idx)
    y = g.scatter_along_axis(U, I, None, 1, mode, shape=[3, 5, 2])
    assert (y.shape, y.dtype) == ((3, 5, 2), mg.as_dtype(dtype))
    (got,) = run(g, {U: u, I: idx}, [y], backend)
    big = np.inf if dtype == np.float32 else np.iinfo(np.int32).max
    ident = {S.MUL: 1, S.DIV: 1, S.MIN: big, S.MAX: -big - (dtype == np.int32)}.get(mode, 0)
    init = np.full((3, 5, 2), ident, dtype)
    want = naive_scatter_along_axis(u, idx, init, 1, mode)
    np.testing.assert_allclose(got, want, rtol=2e-6)
    hit = naive_scatter_along_axis(np.ones(u.shape), idx, np.zeros((3, 5, 2)), 1, S.SET) > 0
    assert not hit.all() and hit.any() and (got[~hit] == ident).all()


def test_scatter_along_axis_into_a_shape_gradient_and_errors():
    c = lambda g, a: g.constant(np.array(a, np.int32))  # noqa: E731
    _fd_gradients(lambda g, u: g.scatter_along_axis(u, c(g, [[1, 3], [0, 0], [2, -1]]), None, 1, S.ADD,
                                                    shape=[3, 4]), [(3, 2)])
    g = mg.Graph()
    u = g.placeholder([2, 3])
    i = g.placeholder([2, 3], mg.int32)
    with pytest.raises(mg.DescriptorError, match="scatter_along_axis op 'sa'.*not both"):
        g.scatter_along_axis(u, i, u, 1, S.ADD, shape=[2, 3], name="sa")
    with pytest.raises(mg.DescriptorError, match="scatter_along_axis op 'sa'.*shape="):
        g.scatter_along_axis(u, i, None, 1, S.ADD, name="sa")
    with pytest.raises(mg.ShapeError, match="scatter_along_axis op 'sa'.*static"):
        g.scatter_along_axis(u, i, None, 1, S.ADD, shape=[-1, 3], name="sa")
    with pytest.raises(mg.ShapeError, match="scatter_along_axis.*axis 0"):
        g.scatter_along_axis(u, i, None, 1, S.ADD, shape=[4, 3], name="sa")

def test_scatter_along_axis_apple_example(backend):
    """The example of Apple's documentation of scatterAlongAxis (ADD)."""
    data = np.array([[0, 0, 0], [1, 1, 1], [2, 2, 2], [3, 3, 3]], np.int32)
    upd = np.array([[1, 2, 3], [4, 5, 6]], np.int32)
    idx = np.array([[2, 1, 0], [1, 3, 2]], np.int32)
    g = mg.Graph()
    D, U, I = ph(g, data), ph(g, upd), ph(g, idx)
    (got,) = run(g, {D: data, U: upd, I: idx}, [g.scatter_along_axis(U, I, D, 0, S.ADD)], backend)
    np.testing.assert_array_equal(got, [[0, 0, 3], [5, 3, 1], [3, 2, 8], [3, 8, 3]])


def test_scatter_add_collisions_accumulate_in_order_bit_for_bit(backend):
    """Many updates on one element: the sum in row-major order of the updates, exactly."""
    u = np.array([1e8, 1.0, -1e8, 1.0, 0.5, 3.25], F32)
    idx = np.zeros(6, np.int32)
    want = F32(0)
    for v in u:
        want = F32(want + v)
    g = mg.Graph()
    U, I = ph(g, u), ph(g, idx)
    got = run(g, {U: u, I: idx}, [g.scatter(U, I, [2], 0, S.ADD), g.scatter(U, I, [1], 0, S.SET)], backend)
    assert got[0][0] == want and got[0][1] == 0
    assert got[1][0] == u[-1]  # SET: the last update wins


def test_scatter_set_last_write_wins_and_nan_propagates_in_min_max(backend):
    d = np.array([[5.0, 5.0, 5.0]], F32)
    u = np.array([[1.0, np.nan, 7.0, 2.0]], F32)
    idx = np.array([[0, 1, 0, 2]], np.int32)
    g = mg.Graph()
    D, U, I = ph(g, d), ph(g, u), ph(g, idx)
    outs = [g.scatter_along_axis(U, I, D, 1, m) for m in (S.SET, S.MIN, S.MAX)]
    got = run(g, {D: d, U: u, I: idx}, outs, backend)
    np.testing.assert_array_equal(got[0], [[7.0, np.nan, 2.0]])
    np.testing.assert_array_equal(got[1], [[1.0, np.nan, 2.0]])
    np.testing.assert_array_equal(got[2], [[7.0, np.nan, 5.0]])


@pytest.mark.parametrize("mode", [S.ADD, S.SUB, S.MUL, S.MIN, S.MAX, S.SET])
def test_scatter_and_scatter_nd_give_0_where_no_update_lands(backend, rng, mode):
    """Apple (MPSGraphScatterNDOps.h): "slices not set by indices are set to 0", in every mode;
    where updates land they combine from the mode's identity (a product of the updates for MUL)."""
    u = rng.integers(-9, 9, (3, 4)).astype(np.int32)
    idx = np.array([0, 2, 0], np.int32)
    nd_idx = np.array([[1, 0], [1, 0], [0, 2]], np.int32)
    g = mg.Graph()
    U, I, J = ph(g, u), ph(g, idx), ph(g, nd_idx)
    outs = [g.scatter(U, I, [4, 4], 0, mode), g.scatter_nd(U, J, [2, 3, 4], mode=mode)]
    got = run(g, {U: u, I: idx, J: nd_idx}, outs, backend)
    info = np.iinfo(np.int32)
    init = {S.ADD: 0, S.SUB: 0, S.SET: 0, S.MUL: 1, S.MIN: info.max, S.MAX: info.min}[mode]
    want = naive_scatter_along_axis(u, np.broadcast_to(idx[:, None], u.shape), np.full((4, 4), init, np.int32), 0, mode)
    want[[1, 3]] = 0  # rows 1 and 3: no index names them
    np.testing.assert_array_equal(got[0], want)
    want_nd = np.zeros((2, 3, 4), np.int32)
    for cell in {(1, 0), (0, 2)}:
        rows = [n for n, t in enumerate(map(tuple, nd_idx)) if t == cell]
        want_nd[cell] = naive_scatter_along_axis(u[rows], np.zeros((len(rows), 4), np.int32),
                                                 np.full((1, 4), init, np.int32), 0, mode)[0]
    np.testing.assert_array_equal(got[1], want_nd)


def test_scatter_into_a_float_result_gives_0_not_inf_where_nothing_lands(backend):
    u = np.array([[3.0, -1.0], [2.0, 5.0]], F32)
    g = mg.Graph()
    U = ph(g, u)
    outs = [g.scatter(U, [1, -1], [3, 2], 0, m) for m in (S.MIN, S.MAX, S.DIV)]
    outs.append(g.scatter_nd(U, [[2], [2]], [4, 2], mode=S.MUL))
    got = run(g, {U: u}, outs, backend)
    np.testing.assert_array_equal(got[0], [[0, 0], [3, -1], [2, 5]])
    np.testing.assert_array_equal(got[1], [[0, 0], [3, -1], [2, 5]])
    np.testing.assert_array_equal(got[2], [[0, 0], [1 / F32(3), -1], [F32(0.5), F32(0.2)]])
    np.testing.assert_array_equal(got[3], [[0, 0], [0, 0], [6, -5], [0, 0]])


def test_float16_scatter_over_several_passes_rounds_once(backend):
    """More updates than one webgpu pass visits (16,384): the running sum stays in float32
    between passes. 2048 + 0.75 rounds to 2048 in float16, so rounding after the first pass
    loses both 0.75s (2048); one rounding of 2049.5 gives 2050, as NumPy does in float32."""
    n = 16384 + 10
    u = np.zeros(n, np.float16)
    u[0], u[1], u[16384] = 2048, 0.75, 0.75
    idx = np.zeros(n, np.int32)
    idx[5::7] = 2  # element 2: updates in both passes; element 1: none (0 even for MUL)
    u[5::7] = 1.0
    u[5], u[16385] = 1.5, -3.0  # the product over element 2's updates: -4.5
    g = mg.Graph()
    U, I = ph(g, u), ph(g, idx)
    outs = [g.scatter(U, I, [3], 0, S.ADD), g.scatter(U, I, [3], 0, S.MUL)]
    got = run(g, {U: u, I: idx}, outs, backend)
    want = np.zeros(3, F32)
    np.add.at(want, idx, u.astype(F32))
    assert want[0] == 2049.5 and got[0][0] == np.float16(2050)
    np.testing.assert_array_equal(got[0], want.astype(np.float16))
    prod = np.ones(3, F32)
    np.multiply.at(prod, idx, u.astype(F32))
    assert prod[2] == -4.5
    prod[1] = 0
    np.testing.assert_array_equal(got[1], prod.astype(np.float16))


def test_scatter_nd_is_the_transpose_of_gather_nd_and_skips_out_of_range(backend, rng):
    upd = rng.standard_normal((2, 3, 5)).astype(F32)
    idx = np.array([[[1], [-1], [7]], [[0], [0], [-4]]], np.int32)  # [2, 3, 1]: 7 is out of range
    g = mg.Graph()
    U, I = ph(g, upd), ph(g, idx)
    y = g.scatter_nd(U, I, [2, 4, 5], batch_dimensions=1)
    (got,) = run(g, {U: upd, I: idx}, [y], backend)
    want = np.zeros((2, 4, 5), F32)
    for b in range(2):
        for n in range(3):
            k = int(idx[b, n, 0])
            if -4 <= k < 4:
                want[b, k % 4] += upd[b, n]
    np.testing.assert_array_equal(got, want)


# ----------------------------------------------------------------------------- one hot
@needs_torch
def test_one_hot_matches_torch_and_keeps_out_of_range_off(backend):
    idx = np.array([[0, 3, -1], [2, 4, 1]], np.int32)
    g = mg.Graph()
    I = ph(g, idx)
    outs = [g.one_hot(I, 4), g.one_hot(I, 4, axis=0, dtype=mg.int32, on_value=5, off_value=-2),
            g.one_hot(I, 4, axis=1, dtype=mg.float16, on_value=0.1, off_value=np.inf)]
    got = run(g, {I: idx}, outs, backend)
    assert got[0].dtype == np.float32 and got[0].shape == (2, 3, 4)
    ok = (idx >= 0) & (idx < 4)
    ref = torch.nn.functional.one_hot(torch.from_numpy(np.where(ok, idx, 0).astype(np.int64)), 4).numpy() * ok[..., None]
    np.testing.assert_array_equal(got[0], ref)
    np.testing.assert_array_equal(got[1], np.moveaxis(np.where(ref == 1, 5, -2), -1, 0))
    np.testing.assert_array_equal(got[2], np.moveaxis(np.where(ref == 1, np.float16(0.1), np.float16(np.inf)), -1, 1))


# ----------------------------------------------------------------------------- errors
def test_constant_indices_out_of_range_are_refused_when_built():
    g = mg.Graph()
    u = g.placeholder([3, 4])
    with pytest.raises(mg.ShapeError, match=r"gather op 'pick'.*holds 7.*-4\.\.3"):
        g.gather(u, g.constant(np.array([0, 7], np.int32)), 1, name="pick")
    with pytest.raises(mg.ShapeError, match=r"gather_along_axis.*holds -4.*-3\.\.2"):
        g.gather_along_axis(u, g.constant(np.full((2, 4), -4, np.int32)), 0)
    with pytest.raises(mg.ShapeError, match=r"gather_nd.*\(1, 1\) holds 4.*-4\.\.3"):
        g.gather_nd(u, g.constant(np.array([[0, 0], [2, 4]], np.int32)))
    with pytest.raises(mg.ShapeError, match=r"scatter_along_axis.*holds 3"):
        g.scatter_along_axis(g.placeholder([1, 2]), g.constant(np.array([[0, 3]], np.int32)), u, 0, S.ADD)
    g.gather(u, g.constant(np.array([-3, 2], np.int32)), 0)  # in range, negative included


def test_shape_and_dtype_errors_name_the_op():
    g = mg.Graph()
    u = g.placeholder([3, 4])
    with pytest.raises(mg.DTypeError, match="integer"):
        g.gather(u, g.placeholder([2]), 0)
    with pytest.raises(mg.ShapeError, match="axis 2 is out of range"):
        g.gather(u, [0], 2)
    with pytest.raises(mg.ShapeError, match="batch"):
        g.gather(u, g.placeholder([4, 2], mg.int32), 1, batch_dimensions=1)
    with pytest.raises(mg.ShapeError, match="except at axis 1"):
        g.gather_along_axis(u, g.placeholder([2, 4], mg.int32), 1)
    with pytest.raises(mg.ShapeError, match="index tuples of length 3"):
        g.gather_nd(u, g.placeholder([2, 3], mg.int32))
    with pytest.raises(mg.DTypeError, match="DIV needs a floating-point"):
        g.scatter(g.placeholder([2, 4], mg.int32), [0, 1], [3, 4], 0, S.DIV)
    with pytest.raises(mg.ShapeError, match="mg.ScatterMode"):
        g.scatter_along_axis(u, g.placeholder([3, 4], mg.int32), u, 0, "average")
    with pytest.raises(mg.ShapeError, match="not a value of int32"):
        g.one_hot(g.placeholder([2], mg.int32), 3, dtype=mg.int32, on_value=0.5)
    with pytest.raises(mg.ShapeError, match="axis 3 is out of range"):
        g.one_hot(g.placeholder([2, 2], mg.int32), 3, axis=3)


def test_int64_indices_on_numpy():
    g = mg.Graph()
    u = np.arange(6, dtype=F32).reshape(2, 3)
    idx = np.array([2, -3, 5], np.int64)
    U, I = ph(g, u), ph(g, idx)
    out = g.run({U: u, I: idx}, [g.gather(U, I, 1), g.one_hot(I, 3)], backend="numpy")
    np.testing.assert_array_equal(list(out.values())[0], [[2, 0, 0], [5, 3, 0]])


def test_feeds_are_not_mutated(backend, rng):
    d = rng.standard_normal((3, 4)).astype(F32)
    u = rng.standard_normal((3, 2)).astype(F32)
    idx = np.array([[0, 0], [1, 3], [2, 2]], np.int32)
    keep = [d.copy(), u.copy(), idx.copy()]
    g = mg.Graph()
    D, U, I = ph(g, d), ph(g, u), ph(g, idx)
    run(g, {D: d, U: u, I: idx}, [g.scatter_along_axis(U, I, D, 1, S.ADD)], backend)
    for a, b in zip([d, u, idx], keep):
        np.testing.assert_array_equal(a, b)


# ----------------------------------------------------------------------------- gradients and Swift
@needs_torch
def test_gather_gradient_is_a_scatter_add_matching_torch(backend, rng):
    u = rng.standard_normal((4, 3)).astype(F32)
    idx = np.array([[0, 2, 2], [3, 0, 0]], np.int32)
    w = rng.standard_normal((2, 3, 3)).astype(F32)
    g = mg.Graph()
    U, I, W = ph(g, u), ph(g, idx), ph(g, w)
    y = g.gather(U, I, 0)
    loss = g.reduction_sum(g.multiplication(y, W), axes=None)
    du = g.gradients(loss, [U])[U]
    assert any(op.type == "scatter" for op in g.operations)
    (got,) = run(g, {U: u, I: idx, W: w}, [du], backend)
    tu = torch.from_numpy(u).requires_grad_()
    (tu[torch.from_numpy(idx.astype(np.int64))] * torch.from_numpy(w)).sum().backward()
    np.testing.assert_allclose(got, tu.grad.numpy(), rtol=1e-6, atol=1e-6)


def test_to_swift_writes_mpsgraph_calls():
    g = mg.Graph()
    u = g.placeholder([3, 4], name="u")
    i = g.placeholder([3, 2], dtype=mg.int32, name="i")
    a = g.gather_along_axis(u, i, -1, name="ga")
    b = g.scatter_along_axis(a, i, u, 1, S.MAX, name="sa")
    c = g.one_hot(i, 5, dtype=mg.float16, name="oh")
    src = g.to_swift(target_tensors=[b, c])
    assert 'graph.gatherAlongAxis(1, updates: u, indices: i, name: "ga")' in src
    assert 'graph.scatterAlongAxis(1, data: u, updates: ga, indices: i, mode: .max, name: "sa")' in src
    assert "graph.oneHot(withIndicesTensor: i, depth: 5, axis: 2, dataType: .float16, onValue: 1.0, offValue: 0.0" in src
    assert "macOS 12.3" in src


def _fd_gradients(build, shapes, seed=0):
    """Gradients of sum(build(...) * r) by g.gradients and by central differences (float64)."""
    rng = np.random.default_rng(seed)
    g = mg.Graph()
    xs = [g.placeholder(s, mg.float64) for s in shapes]
    y = build(g, *xs)
    r = g.placeholder(y.shape, mg.float64)
    loss = g.reduction_sum(g.multiplication(y, r), axes=None)
    grads = g.gradients(loss, xs)
    vals = [rng.uniform(-2, 2, s) for s in shapes]
    feeds = {**dict(zip(xs, vals)), r: rng.uniform(0.5, 1.5, y.shape)}
    got = g.run(feeds, [grads[x] for x in xs])
    for x, v in zip(xs, vals):
        fd = np.zeros_like(v)
        for idx in np.ndindex(*v.shape):
            for sgn in (1, -1):
                p = v.copy()
                p[idx] += sgn * 1e-6
                fd[idx] += sgn * g.run({**feeds, x: p}, [loss])[loss].item() / 2e-6
        np.testing.assert_allclose(got[grads[x]], fd, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("case", ["gather-axis0", "scatter-set", "scatter-along-set", "scatter-nd-sub", "scatter-add"])
def test_more_gradient_rules_match_finite_differences(case):
    c = lambda g, a: g.constant(np.array(a, np.int32))  # noqa: E731
    builds = {
        "gather-axis0": (lambda g, u: g.gather(u, c(g, [[3, 0], [-1, 3]]), 0), [(4, 2)]),
        "scatter-set": (lambda g, u: g.scatter(u, c(g, [2, 0, -1]), [2, 4], 1, S.SET), [(2, 3)]),
        "scatter-along-set": (lambda g, u, d: g.scatter_along_axis(u, c(g, [[1, 3], [0, 2], [2, -1]]), d, 1, S.SET),
                              [(3, 2), (3, 4)]),
        "scatter-nd-sub": (lambda g, u: g.scatter_nd(u, c(g, [[0, 1], [0, 1], [1, 2]]), [2, 3, 2], mode=S.SUB),
                           [(3, 2)]),
        "scatter-add": (lambda g, u: g.scatter(u, c(g, [1, 1, 0]), [2, 3], 0, S.ADD), [(3, 3)]),
    }
    _fd_gradients(*builds[case])


def test_mul_div_min_max_scatters_have_no_gradient():
    g = mg.Graph()
    u = g.placeholder([2, 3])
    y = g.scatter(u, [0, 1], [2, 3], 0, S.MUL)
    with pytest.raises(mg.NotDifferentiableError, match="MUL has no gradient rule"):
        g.gradients(g.reduction_sum(y), [u])


def test_uint32_indices_beyond_int32_are_out_of_range(backend):
    u = np.arange(4, dtype=F32) + 1
    idx = np.array([0xFFFFFFFF, 3, 0x80000000, 1], np.uint32)
    g = mg.Graph()
    U, I = ph(g, u), ph(g, idx)
    got = run(g, {U: u, I: idx}, [g.gather(U, I, 0), g.scatter(U, I, [4], 0, S.ADD), g.one_hot(I, 4)], backend)
    np.testing.assert_array_equal(got[0], [0, 4, 0, 2])
    np.testing.assert_array_equal(got[1], [0, 4, 0, 2])
    np.testing.assert_array_equal(got[2].argmax(axis=1)[[1, 3]], [3, 1])
    assert got[2][[0, 2]].sum() == 0


def test_empty_updates_leave_the_data(backend, rng):
    d = rng.standard_normal((2, 3)).astype(F32)
    g = mg.Graph()
    D = ph(g, d)
    U = g.placeholder([2, 0])
    I = g.placeholder([2, 0], mg.int32)
    got = run(g, {D: d, U: np.zeros((2, 0), F32), I: np.zeros((2, 0), np.int32)},
              [g.scatter_along_axis(U, I, D, 1, S.MUL), g.scatter(g.reshape(U, [0, 2]), g.reshape(I, [0]), [3, 2], 0, S.MIN)],
              backend)
    np.testing.assert_array_equal(got[0], d)
    np.testing.assert_array_equal(got[1], np.zeros((3, 2), F32))  # nothing lands: 0


# ----------------------------------------------------------------------------- scatters onto data
@pytest.mark.parametrize("mode", list(S))
def test_scatter_with_data_is_the_along_axis_scatter_of_broadcast_indices(backend, rng, mode):
    """scatter_with_data's slice k goes to indices[k]: the along-axis scatter with the index
    broadcast over the other axes (a naive loop); slices no index names keep data."""
    d = rng.uniform(0.5, 2, (3, 5, 2)).astype(F32)
    u = rng.uniform(0.5, 2, (3, 7, 2)).astype(F32)
    idx = rng.integers(-6, 6, (7,)).astype(np.int32)  # collisions, negatives, out of range both ways
    keep = d.copy()
    g = mg.Graph()
    D, U, I = ph(g, d), ph(g, u), ph(g, idx)
    (got,) = run(g, {D: d, U: u, I: idx}, [g.scatter_with_data(D, U, I, 1, mode)], backend)
    want = naive_scatter_along_axis(u, np.broadcast_to(idx.reshape(1, 7, 1), u.shape), d, 1, mode)
    np.testing.assert_allclose(got, want, rtol=2e-6)
    np.testing.assert_array_equal(d, keep)


@pytest.mark.parametrize("mode", [S.ADD, S.MAX, S.SET])
def test_scatter_nd_with_data_against_a_loop(backend, rng, mode):
    d = rng.integers(-9, 9, (2, 4, 3)).astype(np.int32)
    u = rng.integers(-9, 9, (2, 5)).astype(np.int32)
    idx = rng.integers(-4, 4, (2, 5, 2)).astype(np.int32)
    g = mg.Graph()
    D, U, I = ph(g, d), ph(g, u), ph(g, idx)
    (got,) = run(g, {D: d, U: u, I: idx}, [g.scatter_nd_with_data(D, U, I, 1, mode)], backend)
    want = d.copy()
    for b in range(2):
        for j in range(5):
            r, c = idx[b, j]
            if -4 <= r < 4 and -3 <= c < 3:
                t = (b, r % 4, c % 3)
                want[t] = {S.ADD: want[t] + u[b, j], S.MAX: max(want[t], u[b, j]), S.SET: u[b, j]}[mode]
    np.testing.assert_array_equal(got, want)


def test_scatter_with_data_gradients(backend, rng):
    """ADD: data's gradient is dy, the updates' dy gathered back; SET: data's gradient is 0 where
    an update overwrote it."""
    d, u, w = (rng.standard_normal(s).astype(F32) for s in ((2, 5), (2, 3), (2, 5)))
    idx = np.array([4, 1, -4], np.int32)
    for mode in (S.ADD, S.SET):
        g = mg.Graph()
        D, U, W = ph(g, d, "d"), ph(g, u, "u"), ph(g, w, "w")
        y = g.scatter_with_data(D, U, g.constant(idx), 1, mode)
        gr = g.gradients(g.reduction_sum(g.multiplication(y, W), axes=None), [D, U])
        got_d, got_u = run(g, {D: d, U: u, W: w}, [gr[D], gr[U]], backend)
        want_d = w.copy()
        if mode == S.SET:
            want_d[:, [4, 1]] = 0
        np.testing.assert_allclose(got_d, want_d)
        np.testing.assert_allclose(got_u, w[:, [4, 1, 1]])


def test_scatters_onto_data_check_their_shapes():
    g = mg.Graph()
    d, u = g.placeholder([3, 4], name="d"), g.placeholder([3, 2], name="u")
    with pytest.raises(mg.ShapeError, match="scatter_with_data op 'scatter_with_data'.*updates"):
        g.scatter_with_data(d, u, g.constant(np.array([0, 1, 2], np.int32)), 1, S.ADD)
    with pytest.raises(mg.DTypeError, match="scatter_nd_with_data"):
        g.scatter_nd_with_data(d, g.placeholder([2], mg.int32, name="ui"), g.constant(np.array([[0, 1], [1, 1]], np.int32)))
