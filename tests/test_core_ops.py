"""Every core op against NumPy written independently here, on every backend."""
import numpy as np
import pytest

import minigraph as mg

RTOL = 1e-5


def run1(g, t, feeds, backend):
    return g.run(feeds, [t], backend=backend)[t]


def rand(rng, *shape, lo=-2.0, hi=2.0, dtype=np.float32):
    return rng.uniform(lo, hi, shape).astype(dtype)


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
    got = run1(g, getattr(g, op)(x), {x: xv}, backend)
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


def test_operator_overloads(rng):
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


def test_python_scalars_take_the_tensor_dtype():
    g = mg.Graph()
    h = g.placeholder([2], mg.float16)
    assert (h * 2.5).dtype == mg.float16 and (1 + h).dtype == mg.float16
    i = g.placeholder([2], "int32")
    assert (i + 3).dtype == mg.int32


def test_no_implicit_promotion_names_both_dtypes():
    g = mg.Graph()
    a, b = g.placeholder([2], mg.float32), g.placeholder([2], mg.float16)
    with pytest.raises(mg.DTypeError) as e:
        g.addition(a, b, name="mix")
    msg = str(e.value)
    assert "float32" in msg and "float16" in msg and "addition" in msg and "'mix'" in msg


def test_broadcast_error_at_build_time():
    g = mg.Graph()
    a, b = g.placeholder([2, 3]), g.placeholder([4])
    with pytest.raises(mg.ShapeError, match=r"multiplication op 'm'.*\(2, 3\).*\(4,\)"):
        g.multiplication(a, b, name="m")


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


@pytest.mark.parametrize("op,fn", [("reduction_sum", np.sum), ("reduction_maximum", np.max),
                                   ("reduction_minimum", np.min), ("mean", np.mean)])
@pytest.mark.parametrize("axes", [[0], [1, 2], -1, None, [0, 2]])
def test_reductions_keep_dims(op, fn, axes, backend, rng):
    g = mg.Graph()
    x = g.placeholder([3, 4, 5])
    xv = rand(rng, 3, 4, 5)
    y = getattr(g, op)(x, axes=axes)
    ax = tuple(range(3)) if axes is None else (tuple(a % 3 for a in axes) if isinstance(axes, list) else (axes % 3,))
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
    with pytest.raises(mg.ShapeError, match="repeat"):
        g.mean(x, axes=[1, -1])


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
