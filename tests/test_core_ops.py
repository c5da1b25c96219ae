"""Every core op against NumPy written independently here, on every backend."""
import numpy as np
import pytest

import minigraph as mg

RTOL = 1e-5


def run1(g, t, feeds, backend):
    return g.run(feeds, [t], backend=backend)[t]


def rand(rng, *shape, lo=-2.0, hi=2.0, dtype=np.float32):
    return rng.uniform(lo, hi, shape).astype(dtype)


def f32(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


BINARY = {
    "addition": lambda a, b: a + b,
    "subtraction": lambda a, b: a - b,
    "multiplication": lambda a, b: a * b,
    "division": lambda a, b: a / b,
    "maximum": np.maximum,
    "minimum": np.minimum,
}
SHAPES = [((3, 4), (3, 4)), ((2, 3, 4), (4,)), ((2, 1, 4), (3, 1)), ((), (5,)), ((1, 5), (4, 1))]


@pytest.mark.parametrize("op", list(BINARY))
@pytest.mark.parametrize("sa,sb", SHAPES)
def test_binary_broadcasting(op, sa, sb, backend, rng):
    g = mg.Graph()
    a, b = g.placeholder(sa, name="a"), g.placeholder(sb, name="b")
    y = getattr(g, op)(a, b)
    assert y.operation.type == op
    av, bv = rand(rng, *sa), rand(rng, *sb, lo=0.5, hi=2.0)
    got = run1(g, y, {a: av, b: bv}, backend)
    want = BINARY[op](av, bv)
    assert got.shape == np.broadcast_shapes(sa, sb) and got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=1e-6)


def test_power(backend, rng):
    g = mg.Graph()
    a, b = g.placeholder([3, 4]), g.placeholder([4])
    av, bv = rand(rng, 3, 4, lo=0.1, hi=3), rand(rng, 4, lo=-2, hi=2)
    got = run1(g, g.power(a, b), {a: av, b: bv}, backend)
    np.testing.assert_allclose(got, av.astype(np.float64) ** bv, rtol=1e-4)
    # both operands broadcast: [2, 1, 4] ** [3, 1]
    a, b = g.placeholder([2, 1, 4], name="a"), g.placeholder([3, 1], name="b")
    av, bv = np.abs(f32(rng, 2, 1, 4)) + 0.5, f32(rng, 3, 1)
    y = g.power(a, b)
    assert y.shape == (2, 3, 4)
    np.testing.assert_allclose(run1(g, y, {a: av, b: bv}, backend), np.power(av, bv), rtol=2e-5, atol=1e-6)


UNARY = {
    "negative": (lambda x: -x, (-3, 3)), "absolute": (np.abs, (-3, 3)), "exponent": (np.exp, (-3, 3)),
    "logarithm": (np.log, (0.1, 5)), "square": (np.square, (-3, 3)), "square_root": (np.sqrt, (0.1, 5)),
    "reciprocal": (lambda x: 1 / x, (0.2, 5)), "tanh": (np.tanh, (-3, 3)),
    "sigmoid": (lambda x: 1 / (1 + np.exp(-x)), (-6, 6)), "relu": (lambda x: np.where(x > 0, x, 0), (-3, 3)),
    "sin": (np.sin, (-3, 3)), "cos": (np.cos, (-3, 3)), "sign": (np.sign, (-3, 3)),
    "identity": (lambda x: x, (-3, 3)), "stop_gradient": (lambda x: x, (-3, 3)),
}


@pytest.mark.parametrize("op", list(UNARY))
@pytest.mark.parametrize("shape", [(7,), (2, 3, 5), ()])
def test_unary(op, shape, backend, rng):
    fn, (lo, hi) = UNARY[op]
    g = mg.Graph()
    x = g.placeholder(shape)
    xv = rand(rng, *shape, lo=lo, hi=hi)
    y = getattr(g, op)(x, name="y")
    assert y.operation.type == op and y.shape == shape and y.dtype == mg.float32
    got = run1(g, y, {x: xv}, backend)
    np.testing.assert_allclose(got, fn(xv.astype(np.float64)), rtol=1e-5, atol=1e-6)
    assert got.shape == shape


CMP = {"equal": np.equal, "not_equal": np.not_equal, "less_than": np.less,
       "less_than_or_equal_to": np.less_equal, "greater_than": np.greater,
       "greater_than_or_equal_to": np.greater_equal}


@pytest.mark.parametrize("op", list(CMP))
def test_comparisons_return_bool(op, backend, rng):
    g = mg.Graph()
    a, b = g.placeholder([4, 5]), g.placeholder([5])
    av = rng.integers(-2, 3, (4, 5)).astype(np.float32)
    bv = rng.integers(-2, 3, (5,)).astype(np.float32)
    y = getattr(g, op)(a, b)
    assert y.dtype == mg.bool
    got = run1(g, y, {a: av, b: bv}, backend)
    assert got.dtype == np.bool_
    np.testing.assert_array_equal(got, CMP[op](av, bv))
    # both operands broadcast: [2, 1, 4] vs [3, 1], with a tie
    a, b = g.placeholder([2, 1, 4], name="a"), g.placeholder([3, 1], name="b")
    av, bv = f32(rng, 2, 1, 4), f32(rng, 3, 1)
    av[0, 0, 0] = bv[0, 0]
    y = getattr(g, op)(a, b)
    assert y.shape == (2, 3, 4)
    r = run1(g, y, {a: av, b: bv}, backend)
    assert y.dtype == mg.bool and r.dtype == np.bool_
    np.testing.assert_array_equal(r, CMP[op](av, bv))


OVERLOADS = [
    (lambda a, b: a + b, "addition"), (lambda a, b: a - b, "subtraction"),
    (lambda a, b: a * b, "multiplication"), (lambda a, b: a / b, "division"), (lambda a, b: -a, "negative"),
    (lambda a, b: a < b, "less_than"), (lambda a, b: a <= b, "less_than_or_equal_to"),
    (lambda a, b: a > b, "greater_than"), (lambda a, b: a >= b, "greater_than_or_equal_to"),
    (lambda a, b: a == b, "equal"), (lambda a, b: a != b, "not_equal"),
]


def test_operator_overloads(backend, rng):
    """Each Python operator builds its op (broadcasting, with ties for the comparisons) on every
    backend; then every operator, reflected forms with Python scalars and abs() at once."""
    g = mg.Graph()
    a = g.placeholder(shape=[3, 4], dtype=mg.float32, name="a")
    b = g.placeholder(shape=[4], dtype=mg.float32, name="b")
    av, bv = f32(rng, 3, 4), f32(rng, 4)
    av[0, :2] = bv[:2]  # some ties for the comparisons
    for expr, optype in OVERLOADS:
        t = expr(a, b)
        assert t.operation.type == optype
        r = g.run(feeds={a: av, b: bv}, target_tensors=[t], backend=backend)[t]
        want = expr(av, bv)  # the same operator on the NumPy arrays
        if want.dtype == bool:
            assert t.dtype == mg.bool and r.dtype == np.bool_
            np.testing.assert_array_equal(r, want, err_msg=optype)
        else:
            np.testing.assert_allclose(r, want, rtol=1e-5, err_msg=optype)
    if backend != "numpy":
        return
    g = mg.Graph()
    a, b = g.placeholder([3, 3], name="a"), g.placeholder([3, 3], name="b")
    av, bv = rand(rng, 3, 3), rand(rng, 3, 3, lo=0.5)
    exprs = {a + b: av + bv, a - b: av - bv, a * b: av * bv, a / b: av / bv, -a: -av, a @ b: av @ bv,
             a < b: av < bv, a <= b: av <= bv, a > b: av > bv, a >= b: av >= bv, a == b: av == bv,
             a != b: av != bv, 2 * a: 2 * av, a + 1: av + 1, 1 - a: 1 - av, 3 / b: 3 / bv, abs(a): abs(av)}
    out = g.run({a: av, b: bv}, list(exprs))
    for t, want in exprs.items():
        np.testing.assert_allclose(out[t], want, rtol=1e-6)
    assert {t.operation.type for t in exprs} >= {"addition", "matrix_multiplication", "less_than", "equal"}
    with pytest.raises(TypeError):
        bool(a)


def test_matmul_operator_and_python_scalar_operands(backend, rng):
    g = mg.Graph()
    a = g.placeholder([2, 3], mg.float32, name="a")
    b = g.placeholder([3, 4], mg.float32, name="b")
    h = g.placeholder([2, 3], mg.float16, name="h")
    mm = a @ b
    s = 2.0 * a + 1
    hs = h * 3.0 - 1
    q = 1.0 / (a * a + 1.0)
    assert mm.operation.type == "matrix_multiplication" and mm.shape == (2, 4)
    assert s.dtype == mg.float32 and hs.dtype == mg.float16 and q.dtype == mg.float32
    av, bv = f32(rng, 2, 3), f32(rng, 3, 4)
    hv = rng.standard_normal((2, 3)).astype(np.float16)
    r = g.run(feeds={a: av, b: bv, h: hv}, target_tensors=[mm, s, hs, q], backend=backend)
    np.testing.assert_allclose(r[mm], av @ bv, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(r[s], 2 * av + 1, rtol=1e-6)
    assert r[hs].dtype == np.float16
    np.testing.assert_allclose(r[hs], hv.astype(np.float32) * 3 - 1, rtol=1e-2, atol=1e-2)
    np.testing.assert_allclose(r[q], 1 / (av * av + 1), rtol=1e-5)


def test_python_scalars_take_the_tensor_dtype():
    g = mg.Graph()
    h = g.placeholder([2], mg.float16)
    assert (h * 2.5).dtype == mg.float16 and (1 + h).dtype == mg.float16
    i = g.placeholder([2], "int32")
    assert (i + 3).dtype == mg.int32
    i = g.placeholder([3], mg.int32, name="i")
    j = i * 2 + 1
    assert j.dtype == mg.int32
    r = g.run({i: np.array([1, 2, 3], np.int32)}, [j])[j]
    assert r.dtype == np.int32
    np.testing.assert_array_equal(r, [3, 5, 7])


def test_no_implicit_promotion_names_both_dtypes():
    g = mg.Graph()
    a, b = g.placeholder([2], mg.float32), g.placeholder([2], mg.float16)
    with pytest.raises(mg.DTypeError) as e:
        g.addition(a, b, name="mix")
    msg = str(e.value)
    assert "float32" in msg and "float16" in msg and "addition" in msg and "'mix'" in msg
    assert isinstance(e.value, TypeError)
    with pytest.raises(TypeError):
        a * b


def test_broadcasting_checked_at_build_time(backend, rng):
    g = mg.Graph()
    a, b = g.placeholder([2, 3]), g.placeholder([4])
    with pytest.raises(mg.ShapeError, match=r"multiplication op 'm'.*\(2, 3\).*\(4,\)"):
        g.multiplication(a, b, name="m")
    g = mg.Graph()
    a = g.placeholder([2, 3, 4], mg.float32, name="a")
    b = g.placeholder([3, 1], mg.float32, name="b")
    c = g.placeholder([5], mg.float32, name="c")
    s = g.addition(a, b)
    assert s.shape == (2, 3, 4)
    with pytest.raises(mg.MiniGraphError) as ei:
        g.multiplication(a, c, name="bad")
    assert isinstance(ei.value, ValueError)
    msg = str(ei.value)
    assert "bad" in msg and "multiplication" in msg and "5" in msg and "4" in msg
    av, bv = f32(rng, 2, 3, 4), f32(rng, 3, 1)
    np.testing.assert_allclose(g.run({a: av, b: bv}, [s], backend=backend)[s], av + bv, rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32, np.uint32])
def test_select_with_a_rank_0_predicate(backend, rng, dtype):
    """A scalar predicate (a constant True, a rank-0 placeholder) broadcasts over both branches."""
    av, bv = (rand(rng, 3, 4, lo=0, hi=50).astype(dtype) for _ in range(2))
    g = mg.Graph()
    a, b = g.placeholder([3, 4], dtype, name="a"), g.placeholder([3, 4], dtype, name="b")
    p = g.placeholder([], mg.bool, name="p")
    outs = [g.select(g.constant(True), a, b), g.select(g.constant(False), a, b), g.select(p, a, b),
            g.select(p, a, 0)]
    for pv in (True, False):
        r = g.run({a: av, b: bv, p: np.array(pv)}, outs, backend=backend)
        np.testing.assert_array_equal(r[outs[0]], av)
        np.testing.assert_array_equal(r[outs[1]], bv)
        np.testing.assert_array_equal(r[outs[2]], av if pv else bv)
        np.testing.assert_array_equal(r[outs[3]], av if pv else np.zeros_like(av))
        assert all(r[t].dtype == dtype for t in outs)


def test_select_and_cast(backend, rng):
    g = mg.Graph()
    p, a, b = g.placeholder([3, 4], mg.bool), g.placeholder([3, 4]), g.placeholder([4])
    pv = rng.random((3, 4)) > 0.5
    av, bv = rand(rng, 3, 4), rand(rng, 4)
    s = g.select(p, a, b)
    c = g.cast(a * 10.0, mg.int32)
    out = g.run({p: pv, a: av, b: bv}, [s, c], backend=backend)
    np.testing.assert_allclose(out[s], np.where(pv, av, bv))
    np.testing.assert_array_equal(out[c], (av * 10).astype(np.int32))
    assert out[c].dtype == np.int32
    # a predicate computed in the graph, a cast from bool by name, and identity
    g = mg.Graph()
    x = g.placeholder([4, 3], mg.float32, name="x")
    v = f32(rng, 4, 3) * 3
    pred = g.greater_than(x, 0.0)
    s = g.select(pred, x, g.negative(x))
    c = g.cast(x, mg.int32)
    c2 = g.cast(pred, "float32")
    i = g.identity(x)
    r = g.run({x: v}, [s, c, c2, i], backend=backend)
    np.testing.assert_allclose(r[s], np.abs(v), rtol=1e-6)
    assert r[c].dtype == np.int32 and c.dtype == mg.int32
    np.testing.assert_array_equal(r[c], v.astype(np.int32))
    np.testing.assert_array_equal(r[c2], (v > 0).astype(np.float32))
    np.testing.assert_array_equal(r[i], v)


@pytest.mark.parametrize("op,fn", [("reduction_sum", np.sum), ("reduction_maximum", np.max),
                                   ("reduction_minimum", np.min), ("mean", np.mean)])
@pytest.mark.parametrize("axes", [[0], [1, 2], -1, None, [0, 2], [0, 1], [1], 2, (0, 2), [-1]])
def test_reductions_keep_dims(op, fn, axes, backend, rng):
    g = mg.Graph()
    x = g.placeholder([3, 4, 5])
    xv = rand(rng, 3, 4, 5)
    y = getattr(g, op)(x, axes=axes)
    ax = tuple(range(3)) if axes is None else tuple(a % 3 for a in np.atleast_1d(axes).tolist())
    want = fn(xv.astype(np.float64), axis=ax, keepdims=True)
    assert y.shape == want.shape
    np.testing.assert_allclose(run1(g, y, {x: xv}, backend), want, rtol=1e-5, atol=1e-6)


def test_reduction_sum_of_bool_is_int32(rng):
    g = mg.Graph()
    x = g.placeholder([6])
    s = g.reduction_sum(x > 0.0, axes=0)
    assert s.dtype == mg.int32
    xv = rand(rng, 6)
    assert run1(g, s, {x: xv}, "numpy")[0] == int((xv > 0).sum())


def test_bad_axes_errors():
    g = mg.Graph()
    x = g.placeholder([2, 3])
    with pytest.raises(mg.ShapeError, match="reduction_sum op 'r'.*axis 2 is out of range"):
        g.reduction_sum(x, axes=[2], name="r")
    with pytest.raises(mg.MiniGraphError) as ei:
        g.reduction_sum(x, axes=[2], name="s")
    assert isinstance(ei.value, ValueError)
    assert "reduction_sum" in str(ei.value) and "'s'" in str(ei.value) and "2" in str(ei.value)


@pytest.mark.parametrize("axes", [np.int64(1), np.array([0, 1]), [np.int32(0)], (1,)])
def test_reduction_axes_numpy_integers(rng, axes):
    g = mg.Graph()
    x = g.placeholder([2, 3], mg.float32, name="x")
    y = g.mean(x, axes=axes)
    v = f32(rng, 2, 3)
    want = v.mean(axis=tuple(np.atleast_1d(axes).tolist()), keepdims=True)
    np.testing.assert_allclose(g.run({x: v}, [y])[y], want, rtol=1e-6)


@pytest.mark.parametrize("sa,sb", [((3, 4), (4, 5)), ((2, 3, 4), (4, 2)), ((2, 1, 3, 4), (5, 4, 6)), ((1, 4), (3, 4, 2))])
def test_matmul_batch_broadcast(sa, sb, backend, rng):
    g = mg.Graph()
    a, b = g.placeholder(sa), g.placeholder(sb)
    av, bv = rand(rng, *sa), rand(rng, *sb)
    got = run1(g, g.matrix_multiplication(a, b), {a: av, b: bv}, backend)
    want = np.einsum("...ij,...jk->...ik", av.astype(np.float64), bv)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_matmul_errors():
    g = mg.Graph()
    with pytest.raises(mg.ShapeError, match=r"matrix_multiplication op 'mm'.*inner dimensions"):
        g.matrix_multiplication(g.placeholder([2, 3]), g.placeholder([4, 5]), name="mm")
    with pytest.raises(mg.ShapeError, match="rank >= 2"):
        g.matrix_multiplication(g.placeholder([3]), g.placeholder([3, 2]))


def test_matmul_broadcasts_batch_dimensions_at_build_time(backend, rng):
    g = mg.Graph()
    a = g.placeholder([2, 1, 3, 4], mg.float32, name="a")
    b = g.placeholder([5, 4, 2], mg.float32, name="b")
    y = g.matrix_multiplication(a, b)
    assert y.shape == (2, 5, 3, 2)
    av, bv = f32(rng, 2, 1, 3, 4), f32(rng, 5, 4, 2)
    np.testing.assert_allclose(g.run({a: av, b: bv}, [y], backend=backend)[y], av @ bv, rtol=1e-5, atol=1e-5)
    c = g.placeholder([3, 3], mg.float32, name="c")
    with pytest.raises(mg.MiniGraphError) as ei:
        g.matrix_multiplication(a, c, name="mm")
    assert isinstance(ei.value, ValueError) and "mm" in str(ei.value)


def test_shape_ops(backend, rng):
    g = mg.Graph()
    x = g.placeholder([2, 3, 4], name="x")
    xv = rand(rng, 2, 3, 4)
    ops = {
        g.reshape(x, [-1, 4]): xv.reshape(-1, 4),
        g.reshape(x, [4, 6]): xv.reshape(4, 6),
        g.transpose(x, 0, 2): np.swapaxes(xv, 0, 2),
        g.permute(x, [1, 2, 0]): np.transpose(xv, (1, 2, 0)),
        g.slice(x, 2, 1, 2): xv[:, :, 1:3],
        g.slice(x, 1, -2, 2): xv[:, 1:3, :],
        g.concat([x, x * 2.0], 1): np.concatenate([xv, xv * 2], 1),
        g.broadcast(g.slice(x, 0, 0, 1), [3, 2, 3, 4]): np.broadcast_to(xv[:1], (3, 2, 3, 4)),
        g.expand_dims(x, 1): xv[:, None],
        g.expand_dims(x, [0, -1]): xv[None, ..., None],
        g.squeeze(g.expand_dims(x, 0)): xv,
        g.squeeze(g.reshape(x, [2, 1, 12, 1]), axes=[1]): xv.reshape(2, 12, 1),
        g.slice_gradient(g.slice(x, 2, 1, 2), [2, 3, 4], 2, 1, 2): np.pad(xv[:, :, 1:3], ((0, 0), (0, 0), (1, 1))),
    }
    out = g.run({x: xv}, list(ops), backend=backend)
    for t, want in ops.items():
        assert t.shape == want.shape, t.name
        np.testing.assert_array_equal(out[t], want, err_msg=t.name)
    # positional and keyword spellings; softmax
    g = mg.Graph()
    x = g.placeholder([2, 3, 4], mg.float32, name="x")
    v = f32(rng, 2, 3, 4)
    outs = {
        "reshape": (g.reshape(x, [4, -1]), v.reshape(4, -1)),
        "reshape2": (g.reshape(x, shape=[-1]), v.reshape(-1)),
        "transpose": (g.transpose(x, 0, 2), np.swapaxes(v, 0, 2)),
        "transpose_kw": (g.transpose(x, dimension=1, with_dimension=2), np.swapaxes(v, 1, 2)),
        "permute": (g.permute(x, [2, 0, 1]), np.transpose(v, [2, 0, 1])),
        "permute_kw": (g.permute(x, permutation=[1, 2, 0]), np.transpose(v, [1, 2, 0])),
        "slice": (g.slice(x, dimension=1, start=1, length=2), v[:, 1:3]),
        "slice_pos": (g.slice(x, 2, 0, 3), v[:, :, 0:3]),
        "concat": (g.concat([x, x], dimension=1), np.concatenate([v, v], 1)),
        "broadcast": (g.broadcast(g.slice(x, 0, 0, 1), [5, 3, 4]), np.broadcast_to(v[:1], (5, 3, 4))),
        "expand_dims": (g.expand_dims(x, axes=1), v[:, None]),
        "squeeze": (g.squeeze(g.expand_dims(x, axes=0)), v),
        "squeeze_axes": (g.squeeze(g.slice(x, 1, 0, 1), axes=[1]), v[:, 0]),
        "softmax": (g.softmax(x, axis=-1), np.exp(v) / np.exp(v).sum(-1, keepdims=True)),
        "softmax1": (g.softmax(x, axis=1), np.exp(v) / np.exp(v).sum(1, keepdims=True)),
    }
    r = g.run({x: v}, [t for t, _ in outs.values()], backend=backend)
    for k, (t, want) in outs.items():
        assert t.shape == want.shape, k
        np.testing.assert_allclose(r[t], want, rtol=1e-5, atol=1e-6, err_msg=k)


def test_shape_op_errors():
    g = mg.Graph()
    x = g.placeholder([2, 3, 4])
    with pytest.raises(mg.ShapeError, match="reshape op 'r'.*24 elements.*5"):
        g.reshape(x, [5, -1], name="r")
    with pytest.raises(mg.ShapeError, match="more than one -1"):
        g.reshape(x, [-1, -1])
    with pytest.raises(mg.ShapeError, match="permutation"):
        g.permute(x, [0, 0, 1])
    with pytest.raises(mg.ShapeError, match="outside dimension"):
        g.slice(x, 1, 2, 5)
    with pytest.raises(mg.ShapeError, match="differ outside"):
        g.concat([x, g.placeholder([2, 4, 4])], 2)
    with pytest.raises(mg.ShapeError, match="cannot broadcast"):
        g.broadcast(x, [2, 5, 4])
    with pytest.raises(mg.ShapeError, match="not 1"):
        g.squeeze(x, axes=[0])
    x = g.placeholder([2, 3], mg.float32, name="x")
    with pytest.raises(mg.MiniGraphError) as ei:
        g.reshape(x, [4, 2], name="rs")
    assert isinstance(ei.value, ValueError)
    m = str(ei.value)
    assert "reshape" in m and "rs" in m and "(2, 3)" in m.replace("[2, 3]", "(2, 3)")
    with pytest.raises(ValueError):
        g.reshape(x, [-1, -1])
    with pytest.raises(ValueError):
        g.transpose(x, 0, 2)
    with pytest.raises(ValueError):
        g.permute(x, [0, 0])
    with pytest.raises(ValueError):
        g.slice(x, 1, 2, 5)
    with pytest.raises(ValueError):
        g.concat([x, g.placeholder([3, 3], mg.float32)], dimension=1)
    with pytest.raises(ValueError):
        g.broadcast(x, [2, 4])
    with pytest.raises(ValueError):
        g.squeeze(x, axes=[0])


@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_softmax(axis, backend, rng):
    g = mg.Graph()
    x = g.placeholder([3, 5])
    xv = rand(rng, 3, 5, lo=-10, hi=10)
    e = np.exp(xv.astype(np.float64) - xv.max(axis, keepdims=True))
    np.testing.assert_allclose(run1(g, g.softmax(x, axis=axis), {x: xv}, backend),
                               e / e.sum(axis, keepdims=True), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
def test_softmax_cross_entropy(reduction, backend, rng):
    g = mg.Graph()
    x, l = g.placeholder([4, 6]), g.placeholder([4, 6])
    xv = rand(rng, 4, 6, lo=-4, hi=4)
    lv = rng.dirichlet(np.ones(6), 4).astype(np.float32)
    y = g.softmax_cross_entropy(x, l, axis=1, reduction=reduction)
    x64 = xv.astype(np.float64)
    lsm = x64 - np.log(np.exp(x64).sum(1, keepdims=True))
    rows = -(lv * lsm).sum(1, keepdims=True)
    want = {"none": rows, "sum": rows.sum().reshape(1, 1), "mean": rows.mean().reshape(1, 1)}[reduction]
    np.testing.assert_allclose(run1(g, y, {x: xv, l: lv}, backend), want, rtol=1e-5)


def test_one_spelling_per_parameter_old_ones_warn():
    """MPSGraph's spellings (axes, to_type); the old keywords work for one release with a DeprecationWarning."""
    g = mg.Graph()
    x = g.placeholder([2, 3])
    assert g.reduction_sum(x, axes=1).shape == (2, 1) and g.mean(x, 0).shape == (1, 3)
    assert g.expand_dims(x, axes=[0, 3]).shape == (1, 2, 3, 1) and g.expand_dims(x, 1).shape == (2, 1, 3)
    assert g.squeeze(g.expand_dims(x, 0), axes=0).shape == (2, 3)
    assert g.cast(x, mg.int32).dtype == mg.int32
    with pytest.warns(DeprecationWarning, match="axis= is deprecated; use axes="):
        assert g.reduction_sum(x, axis=1).shape == (2, 1)
    with pytest.warns(DeprecationWarning, match="axis= is deprecated; use axes="):
        assert g.squeeze(g.expand_dims(x, 0), axis=0).shape == (2, 3)
    with pytest.warns(DeprecationWarning, match="axis= is deprecated; use axes="):
        assert g.expand_dims(x, axis=1).shape == (2, 1, 3)
    with pytest.warns(DeprecationWarning, match="to= is deprecated; use to_type="):
        assert g.cast(x, to=mg.int32).dtype == mg.int32
    with pytest.warns(DeprecationWarning, match="dtype= is deprecated; use to_type="):
        assert g.cast(x, dtype="float16").dtype == mg.float16
    with pytest.warns(DeprecationWarning, match="set_cache_size"):
        g.set_cache_size(3)
    assert g.cache_size == 3
    with pytest.warns(DeprecationWarning, match="placeholders"):
        assert g.placeholder_tensors == g.placeholders
    with pytest.raises(mg.ShapeError, match="reduction_sum op 'r': give axes once"), pytest.warns(DeprecationWarning):
        g.reduction_sum(x, axes=[0], axis=1, name="r")
    with pytest.raises(mg.DTypeError, match="cast op"):
        g.cast(x)


def test_integer_and_bool_ops_on_every_backend(backend, rng):
    g = mg.Graph()
    a = g.placeholder(shape=(5,), dtype=mg.int32, name="a")
    b = g.placeholder(shape=(5,), dtype=mg.int32, name="b")
    s = g.addition(a, b, name="s")
    p = g.greater_than(a, b, name="p")
    sel = g.select(p, a, b, name="sel")
    av = rng.integers(-50, 50, 5).astype(np.int32)
    bv = rng.integers(-50, 50, 5).astype(np.int32)
    r = g.run({a: av, b: bv}, [s, p, sel], backend=backend)
    np.testing.assert_array_equal(r[s], av + bv)
    assert r[s].dtype == np.int32
    np.testing.assert_array_equal(r[p], av > bv)
    assert r[p].dtype == np.bool_
    np.testing.assert_array_equal(r[sel], np.maximum(av, bv))
    u = g.placeholder(shape=(4,), dtype=mg.uint32, name="u")
    us = g.addition(u, u, name="us")
    uv = rng.integers(0, 1 << 20, 4).astype(np.uint32)
    got = g.run({u: uv}, [us], backend=backend)[us]
    assert got.dtype == np.uint32
    np.testing.assert_array_equal(got, uv + uv)


# ----------------------------------------------------------------------- NaN in maximum and minimum
# MPSGraph's maximum/minimum and reductionMaximum/Minimum skip NaN; the *WithNaNPropagation /
# *PropagateNaN ops propagate it (docs/mpsgraph-spec.md §15.1). References: torch (fmax/fmin for the
# plain ops, maximum/minimum/amax/amin for the propagating ones) and NumPy in float64.
NAN_EDGES = np.array([np.nan, np.nan, 1.0, np.nan, -np.inf, np.inf, 0.5, -2.0, 3.0, np.inf], np.float32)


def _torch():
    return pytest.importorskip("torch", reason="needs torch, in the oracles extra: pip install -e '.[oracles]'")


@pytest.mark.parametrize("op,ref", [("maximum", "fmax"), ("minimum", "fmin"),
                                    ("maximum_with_nan_propagation", "maximum"),
                                    ("minimum_with_nan_propagation", "minimum")])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_minimum_maximum_nan_rules(op, ref, dtype, backend, rng):
    torch = _torch()
    g = mg.Graph()
    av = np.concatenate([NAN_EDGES, rand(rng, 20)]).astype(dtype)
    bv = np.concatenate([NAN_EDGES[::-1], rand(rng, 20)]).astype(dtype)
    a, b = g.placeholder(av.shape, dtype, name="a"), g.placeholder(bv.shape, dtype, name="b")
    ys = [getattr(g, op)(a, b), getattr(g, op)(b, a), getattr(g, op)(a, 1.0)]
    out = g.run({a: av, b: bv}, ys, backend=backend)
    ta, tb = torch.from_numpy(av.astype(np.float64)), torch.from_numpy(bv.astype(np.float64))
    fn = getattr(torch, ref)
    for y, want in zip(ys, [fn(ta, tb), fn(tb, ta), fn(ta, torch.ones_like(ta))]):
        np.testing.assert_array_equal(out[y], want.numpy().astype(dtype), err_msg=op)
    if op == "maximum":
        assert out[ys[2]][0] == 1.0  # max(NaN, 1) = 1


def _skip_nan(x, axes, highest):
    """The NaN-ignoring extremum in float64: NaN replaced by the seed (-inf for a maximum, +inf for
    a minimum, ``highest``), which an empty or all-NaN slice gives."""
    seed = np.inf if highest else -np.inf
    w = np.where(np.isnan(x), seed, x).astype(np.float64)
    fn = np.min if highest else np.max
    return fn(w, axis=axes, keepdims=True, initial=seed)


@pytest.mark.parametrize("op", ["reduction_maximum", "reduction_minimum",
                                "reduction_maximum_propagate_nan", "reduction_minimum_propagate_nan"])
def test_extremum_reductions_nan_all_nan_and_empty(op, backend, rng):
    torch = _torch()
    g = mg.Graph()
    xv = rand(rng, 4, 6)
    xv[0, 2] = xv[2, ::2] = np.nan
    xv[1] = np.nan
    x = g.placeholder(xv.shape, name="x")
    e = g.placeholder([3, 0, 2], name="e")
    ys = [getattr(g, op)(x, axes=[1]), getattr(g, op)(x, axes=[0]), getattr(g, op)(x),
          getattr(g, op)(e, axes=[1]), getattr(g, op)(e)]
    out = g.run({x: xv, e: np.zeros((3, 0, 2), np.float32)}, ys, backend=backend)
    highest = "minimum" in op  # the minimum's seed is +inf
    seed = np.inf if highest else -np.inf
    for y, axes in zip(ys[:3], [1, 0, (0, 1)]):
        if "propagate" in op:
            fn = torch.amin if highest else torch.amax
            want = fn(torch.from_numpy(xv.astype(np.float64)), dim=axes, keepdim=True).numpy()
        else:
            want = _skip_nan(xv, axes, highest)
        np.testing.assert_array_equal(out[y], want.astype(np.float32), err_msg=f"{op} axes={axes}")
    if "propagate" not in op:
        assert out[ys[0]][1, 0] == seed  # a row of only NaN gives the seed, not NaN
    np.testing.assert_array_equal(out[ys[3]], np.full((3, 1, 2), seed, np.float32))
    np.testing.assert_array_equal(out[ys[4]], np.full((1, 1, 1), seed, np.float32))


@pytest.mark.parametrize("op", ["reduction_maximum", "reduction_minimum_propagate_nan"])
def test_integer_extremum_over_an_empty_axis_is_the_type_extreme(op, backend):
    g = mg.Graph()
    i = g.placeholder([0, 3], mg.int32, name="i")
    u = g.placeholder([2, 0], mg.uint32, name="u")
    out = g.run({i: np.zeros((0, 3), np.int32), u: np.zeros((2, 0), np.uint32)},
                [getattr(g, op)(i, axes=0), getattr(g, op)(u, axes=[1])], backend=backend)
    ri, ru = out.values()
    lo = "maximum" in op
    np.testing.assert_array_equal(ri, np.full((1, 3), -2 ** 31 if lo else 2 ** 31 - 1, np.int32))
    np.testing.assert_array_equal(ru, np.full((2, 1), 0 if lo else 2 ** 32 - 1, np.uint32))


def test_relu_and_sign_of_nan_and_signed_zero(backend):
    """relu is max(x, 0) with the NaN-ignoring maximum, so relu(NaN) = 0; sign(NaN) = 0 and a
    zero keeps its sign (Apple's header for signWithTensor)."""
    g = mg.Graph()
    xv = np.array([np.nan, -np.nan, 0.0, -0.0, np.inf, -np.inf, 2.5, -2.5, 1e-40, -1e-40], np.float32)
    x = g.placeholder(xv.shape, name="x")
    h = g.placeholder(xv.shape, mg.float16, name="h")
    ys = [g.relu(x), g.sign(x), g.relu(h), g.sign(h)]
    out = g.run({x: xv, h: xv.astype(np.float16)}, ys, backend=backend)
    relu = np.array([0, 0, 0, 0, np.inf, 0, 2.5, 0, 1e-40, 0], np.float64)
    sign = np.array([0, 0, 0.0, -0.0, 1, -1, 1, -1, 1, -1], np.float64)
    np.testing.assert_array_equal(out[ys[0]], relu.astype(np.float32))
    np.testing.assert_array_equal(out[ys[1]], sign.astype(np.float32))
    assert list(np.signbit(out[ys[1]][2:4])) == [False, True]
    np.testing.assert_array_equal(out[ys[2]], relu.astype(np.float16))
    sign16 = sign.copy()
    sign16[8:] = 0.0, -0.0  # 1e-40 is 0 in float16
    np.testing.assert_array_equal(out[ys[3]], sign16.astype(np.float16))


# ----------------------------------------------------------------------- reductions as MPSGraph has them
@pytest.mark.parametrize("op,fn", [("reduction_sum", np.sum), ("reduction_maximum", np.max),
                                   ("mean", np.mean), ("reduction_minimum_propagate_nan", np.min)])
def test_reduction_axes_are_a_set(op, fn, backend, rng):
    g = mg.Graph()
    xv = rand(rng, 3, 4, 5)
    x = g.placeholder(xv.shape, name="x")
    ys = [getattr(g, op)(x, axes=[0, 0]), getattr(g, op)(x, axes=[1, -2, 1]), getattr(g, op)(x, axes=(2, 0, -1))]
    out = g.run({x: xv}, ys, backend=backend)
    for y, axes in zip(ys, [(0,), (1,), (0, 2)]):
        want = fn(xv.astype(np.float64), axis=axes, keepdims=True)
        assert y.shape == want.shape
        np.testing.assert_allclose(out[y], want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", [np.int32, np.uint32])
def test_mean_of_integers_is_the_truncated_quotient(dtype, backend, rng):
    torch = _torch()
    g = mg.Graph()
    lo = 0 if dtype == np.uint32 else -1000
    xv = rng.integers(lo, 1000, (5, 7)).astype(dtype)
    if dtype == np.int32:
        xv[0] = [-1, -2, -4, 0, 0, 0, 0]  # -7 / 7 = -1; row 1: a negative quotient with a remainder
        xv[1] = [-1, -1, -1, 0, 0, 0, 0]  # -3 / 7 truncates to 0 (floor would be -1)
    x = g.placeholder(xv.shape, dtype, name="x")
    ys = [g.mean(x, axes=[1]), g.mean(x, axes=0), g.mean(x)]
    assert all(y.dtype == mg.as_dtype(dtype) for y in ys)
    out = g.run({x: xv}, ys, backend=backend)
    t = torch.from_numpy(xv.astype(np.int64))
    for y, dims in zip(ys, [(1,), (0,), (0, 1)]):
        n = int(np.prod([xv.shape[d] for d in dims]))
        want = torch.div(t.sum(dim=dims, keepdim=True), n, rounding_mode="trunc").numpy().astype(dtype)
        np.testing.assert_array_equal(out[y], want)
    with pytest.raises(mg.DTypeError, match="mean"):
        g.mean(g.placeholder([3], mg.bool_))


def test_softmax_and_cross_entropy_over_a_zero_length_axis_match_jax(backend):
    jax = pytest.importorskip("jax", reason="needs jax, in the oracles extra: pip install -e '.[oracles]'")
    jnp = jax.numpy
    g = mg.Graph()
    x = g.placeholder([3, 0], name="x")
    xv = np.zeros((3, 0), np.float32)
    s = g.softmax(x, axis=1)
    ces = [g.softmax_cross_entropy(x, x, axis=1, reduction=r) for r in ("none", "sum", "mean")]
    out = g.run({x: xv}, [s] + ces, backend=backend)
    want_s = np.asarray(jax.nn.softmax(jnp.asarray(xv), axis=1))
    rows = np.asarray(-jnp.sum(jnp.asarray(xv) * jax.nn.log_softmax(jnp.asarray(xv), axis=1), axis=1, keepdims=True))
    assert out[s].shape == want_s.shape == (3, 0)
    np.testing.assert_array_equal(out[ces[0]], rows)
    np.testing.assert_array_equal(out[ces[1]], rows.sum().reshape(1, 1))
    np.testing.assert_array_equal(out[ces[2]], rows.mean().reshape(1, 1))


def test_float16_softmax_rounds_once(backend, rng):
    """float16 softmax accumulates in float32: within one ulp of the float64 result."""
    g = mg.Graph()
    xv = rng.uniform(-3, 3, (4, 2000)).astype(np.float16)
    x = g.placeholder(xv.shape, mg.float16, name="x")
    lv = rng.dirichlet(np.ones(2000), 4).astype(np.float16)
    lab = g.placeholder(lv.shape, mg.float16, name="l")
    s, ce = g.softmax(x, axis=1), g.softmax_cross_entropy(x, lab, axis=1, reduction="none")
    out = g.run({x: xv, lab: lv}, [s, ce], backend=backend)
    w = xv.astype(np.float64)
    e = np.exp(w - w.max(1, keepdims=True))
    want = e / e.sum(1, keepdims=True)
    ulps = np.abs(out[s].astype(np.float64) - want) / np.spacing(want.astype(np.float16)).astype(np.float64)
    assert out[s].dtype == np.float16 and ulps.max() <= 1.0, ulps.max()
    lsm = w - w.max(1, keepdims=True) - np.log(e.sum(1, keepdims=True))
    rows = -(lv.astype(np.float64) * lsm).sum(1, keepdims=True)
    ulps = np.abs(out[ce].astype(np.float64) - rows) / np.spacing(rows.astype(np.float16)).astype(np.float64)
    assert ulps.max() <= 1.0, ulps.max()


# ----------------------------------------------------------------------------- reinterpret_cast
@pytest.mark.parametrize("src, dst", [("float32", "int32"), ("int32", "float32"), ("float32", "uint32"),
                                      ("float32", "float16"), ("float16", "float32"), ("float16", "int32"),
                                      ("uint32", "float16"), ("float16", "float16")])
def test_reinterpret_cast_is_numpys_view(src, dst, backend):
    """The bytes of the input read as another type (Apple: the last dimension scales by the
    sizes' ratio), bit for bit: NaN payloads, -0.0, infinities and subnormals kept."""
    rng = np.random.default_rng(0)
    words = rng.integers(0, 2 ** 32, (2, 3, 4), dtype=np.uint64).astype(np.uint32)
    words[0, 0, :4] = np.array([0x7FC00001, 0x80000000, 0x7F800000, 0x00000001], np.uint32)
    x = words.view(np.uint16).view(np.float16) if src == "float16" else words.view(np.dtype(src))
    g = mg.Graph()
    p = g.placeholder(x.shape, mg.as_dtype(src), name="x")
    y = g.reinterpret_cast(p, dst)
    want = x.view(np.dtype(dst))
    assert y.shape == want.shape and y.dtype.name == dst
    got = run1(g, y, {p: x}, backend)
    np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))


def test_reinterpret_cast_worked_values_and_errors():
    g = mg.Graph()
    one = g.constant(np.array([1.0, -2.0], np.float32))
    r = g.run({}, [g.reinterpret_cast(one, mg.int32), g.reinterpret_cast(one, mg.float16)])
    a, b = r.values()
    assert a.tolist() == [1065353216, -1073741824]
    assert b.tolist() == [0.0, 1.875, 0.0, -2.0]  # float32 1.0 is 0x3F800000: halves 0x0000, 0x3F80
    with pytest.raises(mg.ShapeError, match="reinterpret_cast op 'reinterpret_cast'.*does not hold a whole number"):
        g.reinterpret_cast(g.constant(np.ones(3, np.float16)), mg.float32)
    with pytest.raises(mg.ShapeError, match="a scalar has none"):
        g.reinterpret_cast(g.constant(np.float32(1)), mg.float16)
    with pytest.raises(mg.DTypeError, match="bool has no bit pattern"):
        g.reinterpret_cast(g.constant(np.ones(4, bool)), mg.uint32)
    x = g.placeholder([2], name="x")
    with pytest.raises(mg.NotDifferentiableError):
        g.gradients(g.reduction_sum(g.reinterpret_cast(x, mg.float16)), [x])
