"""Graph building, names, dtypes, variables, control dependencies, compile/run, feeds and the error
hierarchy."""
import numpy as np
import pytest

import minigraph as mg
from minigraph.compiler import plan
from minigraph.ops import memory


def f32(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def test_readme_walkthrough(backend, rng):
    """The README's example: build, run by feeds and targets, compile once and run the executable."""
    g = mg.Graph()
    x = g.placeholder(shape=[2, 3, 8, 8], dtype=mg.float32, name="x")
    w = g.variable(rng.random((3, 3)).astype(np.float32), name="w")
    c = g.constant(2.0, dtype=mg.float32)
    ones = np.ones((8, 3), np.float32)
    y = g.matrix_multiplication(g.reshape(x, [-1, 8]), g.constant(ones), name="mm")
    z = g.reduction_sum(g.relu(y) * c, axes=[0, 1], name="total")
    xv = rng.standard_normal((2, 3, 8, 8)).astype(np.float32)
    out = g.run(feeds={x: xv}, target_tensors=[z, y], backend=backend)
    assert isinstance(out, dict) and set(out) == {z, y}
    y_ref = xv.reshape(-1, 8) @ ones
    assert out[y].shape == (48, 3) and y.shape == (48, 3)
    np.testing.assert_allclose(out[y], y_ref, rtol=1e-5, atol=1e-5)
    assert out[z].shape == (1, 1) and z.shape == (1, 1)
    np.testing.assert_allclose(out[z], (np.maximum(y_ref, 0) * 2).sum(keepdims=True), rtol=1e-5)
    exe = g.compile(feeds={x: mg.ShapedType([2, 3, 8, 8], mg.float32)}, target_tensors=[z], backend=backend)
    res = exe.run({x: xv})
    assert isinstance(res, list) and len(res) == 1
    (zv,) = res
    np.testing.assert_allclose(zv, out[z], rtol=1e-6)
    assert exe.target_tensors == [z] and exe.feed_tensors == [x]
    assert w.shape == (3, 3) and w.dtype == mg.float32 and w.name == "w"
    assert c.dtype == mg.float32 and c.shape == ()


def test_executable_results_in_target_order():
    g = mg.Graph()
    x = g.placeholder(shape=[3], dtype=mg.float32, name="x")
    a, b = g.exponent(x), g.negative(x)
    exe = g.compile(feeds={x: mg.ShapedType([3], mg.float32)}, target_tensors=[b, a])
    v = np.array([0.5, -1.0, 2.0], np.float32)
    rb, ra = exe.run({x: v})
    np.testing.assert_allclose(rb, -v)
    np.testing.assert_allclose(ra, np.exp(v), rtol=1e-6)
    assert list(exe.target_tensors) == [b, a]


def test_executable_run_takes_inputs_and_the_deprecated_feeds_keyword(rng):
    g = mg.Graph()
    x = g.placeholder(shape=[3], dtype=mg.float32, name="x")
    y = g.square(x)
    exe = g.compile(feeds={x: mg.ShapedType([3], mg.float32)}, target_tensors=[y])
    v = f32(rng, 3)
    with pytest.warns(DeprecationWarning, match="feeds= is deprecated; use inputs="):
        (a,) = exe.run(feeds={x: v})
    (b,) = exe.run(inputs={x: v})
    np.testing.assert_allclose(a, v * v, rtol=1e-6)
    np.testing.assert_array_equal(a, b)


def test_tensor_and_operation_attributes():
    g = mg.Graph()
    x = g.placeholder([2, -1], name="x")
    y = g.exponent(x, name="e")
    assert y.shape == (2, -1) and y.dtype == mg.float32 and y.graph is g and y.name == "e"
    op = y.operation
    assert op.name == "e" and op.type == "exponent" and op.inputs == (x,) and op.outputs == (y,)
    assert op.control_dependencies == ()
    assert g.operations == [x.operation, op] and g.placeholders == [x]
    assert len({x, y}) == 2 and {x: 1}[x] == 1
    # shapes are tuples; tensors and operations are the public classes; tensors hash by identity
    g = mg.Graph()
    x = g.placeholder(shape=[2, -1], dtype=mg.float32, name="x")
    y = g.sigmoid(x, name="s")
    assert isinstance(x.shape, tuple) and x.shape == (2, -1)
    assert y.dtype is mg.float32 or y.dtype == mg.float32
    assert y.operation.type == "sigmoid" and y.name == "s" and y.graph is g
    assert isinstance(y, mg.Tensor) and isinstance(y.operation, mg.Operation)
    d = {x: 1, y: 2}
    assert d[x] == 1 and d[y] == 2 and hash(x) != hash(y)
    # an op with two inputs; the graph lists operations and placeholders in creation order
    g = mg.Graph()
    x = g.placeholder([2], mg.float32, name="x")
    p = g.placeholder([2], mg.float32, name="p")
    s = g.addition(x, p, name="s")
    op = s.operation
    assert op.name == "s" and op.type == "addition"
    assert list(op.inputs) == [x, p] and list(op.outputs) == [s]
    assert list(op.control_dependencies) == []
    assert list(g.operations) == [x.operation, p.operation, op]
    assert list(g.placeholders) == [x, p]


# ---------------------------------------------------------------------------------------- names
def test_names_unique_tf1_rule_and_scopes():
    g = mg.Graph()
    a = g.placeholder([1], name="a")
    b = g.placeholder([1], name="a")
    c = g.placeholder([1], name="a")
    assert (a.name, b.name, c.name) == ("a", "a_1", "a_2")
    s1, s2 = g.addition(a, b), g.addition(a, b)
    assert (s1.name, s2.name) == ("addition", "addition_1")
    with g.name_scope("block1"):
        conv = g.negative(a, name="conv")
        with g.name_scope("inner"):
            deep = g.exponent(a)
    assert conv.name == "block1/conv" and deep.name == "block1/inner/exponent"
    assert g.operation("block1/conv") is conv.operation
    assert g.tensor("block1/conv") is conv
    # unnamed ops are named after their type; scopes end with their `with` block
    g = mg.Graph()
    x = g.placeholder([1], mg.float32)
    assert x.name == "placeholder"
    a, b, c = g.exponent(x), g.exponent(x), g.exponent(x)
    assert (a.name, b.name, c.name) == ("exponent", "exponent_1", "exponent_2")
    n1 = g.negative(x, name="n")
    n2 = g.negative(x, name="n")
    assert n1.name == "n" and n2.name == "n_1"
    with g.name_scope("block1"):
        conv = g.tanh(x, name="conv")
        unnamed = g.tanh(x)
        with g.name_scope("inner"):
            deep = g.sin(x, name="deep")
    after = g.cos(x, name="conv")
    assert conv.name == "block1/conv" and unnamed.name == "block1/tanh"
    assert deep.name == "block1/inner/deep" and after.name == "conv"
    assert g.operation("block1/conv") is conv.operation
    assert g.tensor("block1/conv") is conv
    assert g.tensor("block1/inner/deep") is deep
    names = [o.name for o in g.operations]
    assert len(names) == len(set(names))


def test_lookup_errors_name_close_matches():
    g = mg.Graph()
    with g.name_scope("block1"):
        g.negative(g.placeholder([1], name="x"), name="conv")
    with pytest.raises(mg.NameLookupError, match=r"block1/cnv.*did you mean 'block1/conv'"):
        g.operation("block1/cnv")
    with pytest.raises(KeyError):
        g.tensor("nothing")
    with pytest.raises(mg.MiniGraphError) as ei:
        g.operation("block1/cnov")
    assert isinstance(ei.value, KeyError)
    assert "block1/conv" in str(ei.value)
    with pytest.raises(KeyError) as ei:
        g.tensor("block1/con")
    assert "block1/conv" in str(ei.value)


def test_duplicate_explicit_name_is_ambiguous_on_lookup():
    g = mg.Graph()
    x = g.placeholder([1], name="x")
    g.negative(x, name="conv")
    g.negative(x, name="conv")
    with pytest.raises(mg.AmbiguousNameError, match=r"'conv'.*2 ops.*'conv', 'conv_1'"):
        g.operation("conv")
    assert g.operation("conv_1").name == "conv_1"
    g.relu(x, name="r")
    g.relu(x, name="r")
    with pytest.raises(mg.MiniGraphError) as ei:
        g.operation("r")
    assert "r_1" in str(ei.value)


class _CountingDict(dict):
    """A name table that counts whole-table walks (a walk per built op makes gradients quadratic)."""

    walks = 0

    def _walk(self):
        type(self).walks += 1

    def __iter__(self):
        self._walk()
        return super().__iter__()

    def items(self):
        self._walk()
        return super().items()

    def keys(self):
        self._walk()
        return super().keys()

    def values(self):
        self._walk()
        return super().values()


@pytest.mark.parametrize("named", [True, False])
def test_gradients_cost_does_not_grow_with_user_named_ops(named, monkeypatch):
    """Gradients of a chain of user-named ops never walk the name tables (an earlier version walked
    them once per gradient op: 10,000 named ops took minutes); the gradient has as many ops for
    named and unnamed chains, so its cost is linear in the graph, named or not."""
    sizes = {}
    for n in (250, 1000):
        g = mg.Graph()
        x = g.placeholder([3], name="x")
        t = x
        for i in range(n):
            t = g.tanh(g.multiplication(t, 1.0, name=f"m{i}" if named else None), name=f"t{i}" if named else None)
        loss = g.reduction_sum(t, name="loss")
        for attr in ("_by_name", "_requested", "_user_names"):
            monkeypatch.setattr(g, attr, _CountingDict(getattr(g, attr)))
        monkeypatch.setattr(_CountingDict, "walks", 0)
        before = len(g.operations)
        (dx,) = g.gradients(loss, [x]).values()
        assert _CountingDict.walks == 0
        sizes[n] = len(g.operations) - before
        feed = np.array([0.3, -0.2, 1.0], np.float32)
        v, want = feed.astype(np.float64), np.ones(3)
        for _ in range(n):  # the chain rule in float64: d tanh(v) = 1 - tanh(v)^2
            v = np.tanh(v)
            want *= 1 - v ** 2
        np.testing.assert_allclose(g.run({x: feed}, [dx])[dx], want, rtol=1e-3)
    assert sizes[1000] <= 4 * sizes[250] + 8
    assert g.user_name_of(dx.operation) is None  # autodiff's own names are not recorded as the user's


# ---------------------------------------------------------------------------------------- dtypes
ALL_DTYPES = ["float32", "float16", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
              "uint64", "bool"]


def test_dtype_accepts_object_name_and_numpy_and_rejects_unknown_ones():
    g = mg.Graph()
    for d in (mg.float16, "float16", np.float16, np.dtype("float16")):
        assert g.placeholder([1], d).dtype is mg.float16
    with pytest.raises(mg.DTypeError, match="unknown dtype"):
        g.placeholder([1], "float8")
    assert mg.float32.mps_value == 0x10000020 and mg.bool.mps_value == 0x80000008
    with pytest.raises(mg.MiniGraphError) as ei:
        g.placeholder(shape=[2], dtype="float8")
    assert isinstance(ei.value, (TypeError, ValueError))
    assert "float8" in str(ei.value)
    with pytest.raises(mg.MiniGraphError):
        g.placeholder(shape=[2], dtype=np.clongdouble)  # complex64 and complex32 exist; not this one


@pytest.mark.parametrize("name", ALL_DTYPES + ["float64"])
def test_dtypes_exist_and_are_accepted_as_object_name_or_numpy(name):
    dt = getattr(mg, name)
    npd = np.dtype(name)
    g = mg.Graph()
    for spec in (dt, name, npd, npd.type):
        p = g.placeholder(shape=[2], dtype=spec)
        assert p.dtype == dt
    c = g.constant(np.zeros(2, npd), dtype=name)
    assert c.dtype == dt
    if name != "bool":
        src = g.placeholder([2], mg.float32)
        for spec in (dt, name, npd):
            assert g.cast(src, spec).dtype == dt


def test_dtype_compares_equal_to_its_name_and_numpy_dtype():
    g = mg.Graph()
    x = g.placeholder([2], dtype="float16")
    assert x.dtype == mg.float16 and x.dtype == "float16" and x.dtype == np.float16
    assert x.dtype == np.dtype("float16") and x.dtype != mg.float32 and x.dtype != "float32"
    assert np.zeros(2, dtype=mg.int8).dtype == np.int8 and np.dtype(mg.uint16) == np.uint16


def test_constant_dtype_one_rule_python_values_default_numpy_values_keep_theirs():
    """Python numbers and lists default to float32 / int32 (MPSGraph has no float64); NumPy scalars,
    0-d and n-d arrays and other array-likes keep their own dtype, whatever their rank. A Python
    value the default dtype cannot hold exactly is refused, not wrapped or turned into inf."""
    torch = pytest.importorskip("torch", reason="needs torch, in the oracles extra: pip install -e '.[oracles]'")
    g = mg.Graph()
    cases = [(1.5, mg.float32), (3, mg.int32), (True, mg.bool), ([1.5, 2], mg.float32), ([[1, 2]], mg.int32),
             ((0.5,), mg.float32), (np.float64(1.5), mg.float64), (np.array(1.5), mg.float64),
             (np.array([1.5]), mg.float64), (np.float32(1.5), mg.float32), (np.float16(1.5), mg.float16),
             (np.int64(3), mg.int64), (np.array(3), mg.int64), (np.int16(3), mg.int16), (np.uint8(3), mg.uint8),
             (np.bool_(True), mg.bool), (torch.tensor(1.5, dtype=torch.float64), mg.float64),
             (torch.tensor([1, 2], dtype=torch.int16), mg.int16), (memoryview(np.ones(2, np.float16)), mg.float16)]
    for value, dtype in cases:
        c = g.constant(value)
        assert c.dtype == dtype, (value, c.dtype)
        np.testing.assert_array_equal(c.operation.attrs["value"], np.asarray(value))
    assert g.constant(np.float64(1.5)).dtype == g.constant(np.array(1.5)).dtype == mg.float64
    for value in (2 ** 31, -2 ** 31 - 1, [1, 2 ** 40], 1e39, [0.5, -1e39]):
        with pytest.raises(mg.DTypeError, match="constant op 'c'"):
            g.constant(value, name="c")
    assert g.constant(2 ** 31 - 1).dtype == mg.int32 and g.constant(2 ** 40, dtype=mg.int64).dtype == mg.int64
    # an explicit dtype casts an array (as NumPy's astype) but takes a number only exactly
    assert g.constant(np.array([1.7, 300.0]), dtype=mg.float16).dtype == mg.float16
    for value, dtype in ((np.float64(1.5), mg.int32), (np.int64(300), mg.int8), (70000, mg.float16), (2, mg.bool)):
        with pytest.raises(mg.DTypeError, match="constant op 'c'"):
            g.constant(value, dtype=dtype, name="c")


# ---------------------------------------------------------------------------------------- variables
def test_variables_persist_across_runs_and_executables(backend):
    g = mg.Graph()
    v = g.variable(np.array([1.0, 2.0], np.float32), name="v")
    inc = g.assign(v, g.read(v) + 1.0, name="inc")
    assert isinstance(inc, mg.Operation) and inc.type == "assign"
    g.run(target_operations=[inc], backend=backend)
    np.testing.assert_allclose(g.value_of(v), [2, 3])
    exe = g.compile({}, [v], [inc], backend=backend)
    (before,) = exe.run({})
    np.testing.assert_allclose(before, [2, 3])  # the target sees the value at the start
    exe.run({})
    np.testing.assert_allclose(g.value_of(v), [4, 5])
    # an assign that is not a target does not run
    g.run(target_tensors=[g.read(v)], backend=backend)
    np.testing.assert_allclose(g.value_of(v), [4, 5])
    # read + assign as separate ops; every way of running it shares the variable's value
    g = mg.Graph()
    w = g.variable(np.array([1.0, 2.0], np.float32), name="w")
    assert w.shape == (2,) and w.dtype == mg.float32
    r = g.read(w)
    op = g.assign(w, g.addition(r, 1.0))
    assert isinstance(op, mg.Operation) and op.type == "assign"
    g.run(feeds={}, target_tensors=[r], backend=backend)  # not run unless targeted
    np.testing.assert_array_equal(g.value_of(w), [1, 2])
    g.run(feeds={}, target_tensors=[], target_operations=[op], backend=backend)
    np.testing.assert_array_equal(g.value_of(w), [2, 3])
    g.run(target_operations=[op], backend=backend)
    np.testing.assert_array_equal(g.value_of(w), [3, 4])
    exe = g.compile(feeds={}, target_tensors=[], target_operations=[op], backend=backend)
    exe.run({})
    exe.run({})
    np.testing.assert_array_equal(g.value_of(w), [5, 6])
    # the graph's own run sees the executable's updates
    np.testing.assert_array_equal(g.run({}, [r], backend=backend)[r], [5, 6])


def test_read_after_assign_in_one_run_sees_the_new_value():
    g = mg.Graph()
    v = g.variable(np.float32(1.0), name="v")
    a = g.assign(v, g.constant(5.0))
    with g.control_dependencies([a]):
        r = g.read(v)
    assert g.run(target_tensors=[r])[r] == 5.0
    # an assign runs when an op depends on it, without being a target itself
    g = mg.Graph()
    w = g.variable(np.zeros(3, np.float32), name="w")
    op = g.assign(w, g.constant(np.ones(3, np.float32)))
    with g.control_dependencies([op]):
        y = g.read(w, name="after")
    out = g.run({}, [y])[y]
    np.testing.assert_array_equal(out, np.ones(3))
    np.testing.assert_array_equal(g.value_of(w), np.ones(3))
    assert op in y.operation.control_dependencies


def test_assign_errors():
    g = mg.Graph()
    v = g.variable(np.zeros((2, 2), np.float32), name="v")
    with pytest.raises(mg.ShapeError, match=r"assign op 'a'.*\(3,\).*\(2, 2\)"):
        g.assign(v, g.placeholder([3]), name="a")
    with pytest.raises(mg.DTypeError, match="int32.*float32"):
        g.assign(v, g.placeholder([2, 2], mg.int32))
    with pytest.raises(mg.TargetError, match="variable"):
        g.assign(g.placeholder([2, 2]), g.placeholder([2, 2]))
    w = g.variable(np.zeros((2, 3), np.float32), name="w")
    with pytest.raises(mg.MiniGraphError) as ei:
        g.assign(w, g.constant(np.zeros((3, 2), np.float32)), name="bad_assign")
    assert isinstance(ei.value, ValueError)
    assert "(3, 2)" in str(ei.value) or "[3, 2]" in str(ei.value)
    assert "assign" in str(ei.value) and "bad_assign" in str(ei.value)
    with pytest.raises(mg.MiniGraphError) as ei:
        g.assign(w, g.constant(np.zeros((2, 3), np.float16)))
    assert isinstance(ei.value, TypeError)
    assert "float16" in str(ei.value) and "float32" in str(ei.value)


def test_control_dependencies_run_first_and_apply_to_every_op_inside():
    g = mg.Graph()
    v = g.variable(np.float32(0.0), name="v")
    bump = g.assign(v, g.read(v) + 10.0, name="bump")
    with g.control_dependencies([bump]):
        y = g.identity(g.constant(1.0), name="after")
    assert y.operation.control_dependencies == (bump,)
    g.run(target_tensors=[y])
    assert g.value_of(v) == 10.0
    # every op built inside the block gets the dependency, none outside it
    g = mg.Graph()
    x = g.placeholder([1], mg.float32, name="x")
    w = g.variable(np.zeros(1, np.float32), name="w")
    a = g.assign(w, g.constant(np.ones(1, np.float32)))
    with g.control_dependencies([a]):
        y1 = g.exponent(x)
        y2 = g.negative(y1)
    y3 = g.negative(x)
    assert a in y1.operation.control_dependencies and a in y2.operation.control_dependencies
    assert a not in y3.operation.control_dependencies
    g.run({x: np.zeros(1, np.float32)}, [y3])
    assert g.value_of(w)[0] == 0
    g.run({x: np.zeros(1, np.float32)}, [y2])
    assert g.value_of(w)[0] == 1


# ---------------------------------------------------------------------------------------- compile and run
def test_pruning_unneeded_ops_do_not_run():
    g = mg.Graph()
    x = g.placeholder([3], name="x")
    bad = g.variable(np.float32(0.0), name="counter")
    g.assign(bad, g.read(bad) + 1.0, name="never")
    side = g.logarithm(x, name="unused")
    y = g.negative(x, name="y")
    exe = g.compile({x: mg.ShapedType([3], mg.float32)}, [y])
    ran = {s.op.name for s in exe.plan.steps}
    assert "unused" not in ran and "never" not in ran and {"x", "y"} <= ran
    assert side.operation in exe.plan.pruned
    exe.run({x: np.ones(3, np.float32)})
    assert g.value_of(bad) == 0.0
    # an unfed placeholder and an untargeted assign on a side branch do not matter either
    g = mg.Graph()
    x = g.placeholder([2], mg.float32, name="x")
    unused = g.placeholder([2], mg.float32, name="unused")
    w = g.variable(np.zeros(2, np.float32), name="w")
    g.assign(w, g.addition(g.read(w), unused))
    y = g.exponent(x)
    g.logarithm(unused)
    out = g.run(feeds={x: np.zeros(2, np.float32)}, target_tensors=[y])
    np.testing.assert_allclose(out[y], [1, 1])
    np.testing.assert_array_equal(g.value_of(w), [0, 0])


class TestFeedErrors:
    """Wrong feeds and targets are errors that name the placeholder or tensor."""

    def setup_method(self):
        self.g = g = mg.Graph()
        self.x = g.placeholder(shape=[2, 3], dtype=mg.float32, name="x")
        self.y = g.exponent(self.x, name="y")

    def test_missing_feed(self):
        with pytest.raises(mg.MiniGraphError) as ei:
            self.g.run(feeds={}, target_tensors=[self.y])
        assert isinstance(ei.value, ValueError) and "x" in str(ei.value)
        with pytest.raises(mg.FeedError, match="missing feed for placeholder 'x'"):
            self.g.run({}, [self.y])

    def test_wrong_shape(self):
        with pytest.raises(mg.MiniGraphError) as ei:
            self.g.run(feeds={self.x: np.zeros((3, 2), np.float32)}, target_tensors=[self.y])
        assert isinstance(ei.value, ValueError)
        m = str(ei.value)
        assert "'x'" in m and ("(3, 2)" in m or "[3, 2]" in m) and ("(2, 3)" in m or "[2, 3]" in m)
        with pytest.raises(mg.FeedError, match=r"'x'.*\(3, 3\).*\(2, 3\)"):
            self.g.run({self.x: np.ones((3, 3), np.float32)}, [self.y])

    def test_wrong_dtype(self):
        with pytest.raises(mg.MiniGraphError) as ei:
            self.g.run(feeds={self.x: np.zeros((2, 3), np.float64)}, target_tensors=[self.y])
        m = str(ei.value)
        assert "float64" in m and "float32" in m and "x" in m
        with pytest.raises(mg.FeedError, match="float64.*float32"):
            self.g.run({self.x: np.ones((2, 3))}, [self.y])

    def test_wrong_shape_on_executable(self):
        exe = self.g.compile(feeds={self.x: mg.ShapedType([2, 3], mg.float32)}, target_tensors=[self.y])
        with pytest.raises(mg.MiniGraphError):
            exe.run({self.x: np.zeros((2, 4), np.float32)})
        with pytest.raises(mg.MiniGraphError):
            exe.run({})

    def test_compile_feed_type_mismatch(self):
        with pytest.raises(mg.MiniGraphError) as ei:
            self.g.compile(feeds={self.x: mg.ShapedType([2, 4], mg.float32)}, target_tensors=[self.y])
        assert isinstance(ei.value, ValueError)

    def test_feeding_a_non_placeholder(self):
        with pytest.raises(mg.MiniGraphError) as ei:
            self.g.run(feeds={self.x: np.zeros((2, 3), np.float32), self.y: np.zeros((2, 3), np.float32)},
                       target_tensors=[self.y])
        assert isinstance(ei.value, ValueError) and "y" in str(ei.value)
        with pytest.raises(mg.FeedError, match="only placeholders"):
            self.g.run({self.x: np.ones((2, 3), np.float32), self.y: np.ones((2, 3), np.float32)}, [self.y])

    def test_unknown_target(self):
        with pytest.raises(mg.MiniGraphError):
            self.g.run(feeds={self.x: np.zeros((2, 3), np.float32)}, target_tensors=["y"])
        with pytest.raises(mg.MiniGraphError):
            self.g.run(feeds={self.x: np.zeros((2, 3), np.float32)}, target_tensors=[42])
        with pytest.raises(mg.TargetError):
            self.g.run({self.x: np.ones((2, 3), np.float32)}, [])
        with pytest.raises(mg.TargetError, match="target_operations"):
            self.g.run({self.x: np.ones((2, 3), np.float32)}, [self.y.operation])

    def test_tensor_from_another_graph(self):
        other = mg.Graph()
        z = other.placeholder([2, 3], mg.float32, name="z")
        with pytest.raises(mg.MiniGraphError) as ei:
            self.g.addition(self.x, z, name="cross")
        assert isinstance(ei.value, ValueError) and "cross" in str(ei.value)
        with pytest.raises(mg.MiniGraphError):
            self.g.run(feeds={self.x: np.zeros((2, 3), np.float32)}, target_tensors=[z])
        with pytest.raises(mg.MiniGraphError):
            self.g.run(feeds={z: np.zeros((2, 3), np.float32)}, target_tensors=[self.y])
        with pytest.raises(mg.GraphMismatchError, match="another graph"):
            self.g.negative(other.placeholder([1]))
        with pytest.raises(mg.GraphMismatchError):
            self.g.run({self.x: np.ones((2, 3), np.float32)}, [other.placeholder([1])])


def test_feed_list_and_scalar_are_converted():
    g = mg.Graph()
    x = g.placeholder([3], mg.float32, name="x")
    y = g.multiplication(x, 2.0)
    r = g.run({x: [1, 2, 3]}, [y])[y]
    assert r.dtype == np.float32
    np.testing.assert_allclose(r, [2, 4, 6])


def test_dynamic_dimensions_resolve_at_run(backend, rng):
    g = mg.Graph()
    x = g.placeholder([-1, 4], name="x")
    y = g.reduction_sum(x * 2.0, axes=[1])
    assert y.shape == (-1, 1)
    exe = g.compile({x: mg.ShapedType([-1, 4], mg.float32)}, [y], backend=backend)
    for n in (1, 3, 5):
        xv = rng.random((n, 4)).astype(np.float32)
        np.testing.assert_allclose(exe.run({x: xv})[0], (xv * 2).sum(1, keepdims=True), rtol=1e-5)
    assert exe.compile_count == 3
    with pytest.raises(mg.FeedError):
        exe.run({x: np.ones((2, 5), np.float32)})
    # g.run resolves them too, one executable per concrete shape
    g = mg.Graph()
    x = g.placeholder(shape=[-1, 3], dtype=mg.float32, name="x")
    y = g.reduction_sum(x, axes=[1])
    assert x.shape == (-1, 3) and y.shape == (-1, 1)
    for n in (1, 4):
        v = f32(rng, n, 3)
        np.testing.assert_allclose(g.run({x: v}, [y], backend=backend)[y], v.sum(1, keepdims=True), rtol=1e-5)
    exe = g.compile(feeds={x: mg.ShapedType([-1, 3], mg.float32)}, target_tensors=[y], backend=backend)
    v = f32(rng, 5, 3)
    np.testing.assert_allclose(exe.run({x: v})[0], v.sum(1, keepdims=True), rtol=1e-5)


def test_executable_reuse_and_run_cache(rng):
    g = mg.Graph()
    x = g.placeholder([-1, 2], name="x")
    y = g.square(x)
    for _ in range(3):
        g.run({x: np.ones((2, 2), np.float32)}, [y])
    info = g.cache_info()
    assert (info.hits, info.misses, info.compiles) == (2, 1, 1)
    g.run({x: np.ones((4, 2), np.float32)}, [y])
    assert "new feed shape for 'x': (2, 2) -> (4, 2)" in g.last_compile_reason
    g.cache_size = 1
    assert g.cache_info().currsize == 1
    # one compile for repeated runs; other targets compile once more
    g = mg.Graph()
    x = g.placeholder([3], mg.float32, name="x")
    y = g.exponent(x)
    before = g.compile_count
    for _ in range(4):
        g.run({x: np.ones(3, np.float32)}, [y])
    assert g.compile_count == before + 1
    g.run({x: np.ones(3, np.float32)}, [y, x])  # other targets: one more
    assert g.compile_count == before + 2
    # a cached run gives the results of the run that compiled
    g = mg.Graph()
    x = g.placeholder([3], mg.float32, name="x")
    y = g.exponent(x)
    v = f32(rng, 3)
    a = g.run({x: v}, [y])[y]
    b = g.run({x: v}, [y])[y]
    np.testing.assert_array_equal(a, b)


def test_executable_takes_a_list_in_feed_order():
    g = mg.Graph()
    a, b = g.placeholder([2], name="a"), g.placeholder([2], name="b")
    exe = g.compile({a: mg.ShapedType([2], mg.float32), b: mg.ShapedType([2], mg.float32)}, [a - b])
    assert exe.feed_tensors == [a, b]
    np.testing.assert_allclose(exe.run([np.ones(2, np.float32), np.full(2, 3, np.float32)])[0], [-2, -2])


def test_feeds_not_mutated_results_not_aliased(rng):
    g = mg.Graph()
    x = g.placeholder([3], name="x")
    c = g.constant(np.arange(3, dtype=np.float32))
    ident, view = g.identity(x), g.reshape(c, [3])
    xv = np.array([1, 2, 3], np.float32)
    xv.setflags(write=False)
    out = g.run({x: xv}, [ident, view, c])
    assert not np.shares_memory(out[ident], xv)
    out[view][:] = 99
    out[c][:] = 99
    again = g.run({x: xv}, [view])
    np.testing.assert_array_equal(again[view], [0, 1, 2])
    # a writeable feed is not changed by a run that also assigns, nor by writing into a result
    g = mg.Graph()
    x = g.placeholder([4], mg.float32, name="x")
    w = g.variable(np.ones(4, np.float32), name="w")
    y = g.identity(x)
    step = g.assign(w, g.addition(x, 1.0))
    v = f32(rng, 4)
    keep = v.copy()
    out = g.run({x: v}, [y], [step])[y]
    out[:] = 99
    np.testing.assert_array_equal(v, keep)


# ---------------------------------------------------------------------------------------- errors
def test_errors_are_minigraph_errors_and_builtins():
    assert issubclass(mg.ShapeError, ValueError) and issubclass(mg.DTypeError, TypeError)
    assert issubclass(mg.NameLookupError, KeyError) and issubclass(mg.FeedError, mg.MiniGraphError)
    for cls in (mg.ShapeError, mg.DTypeError, mg.DescriptorError, mg.FeedError, mg.TargetError,
                mg.NotDifferentiableError, mg.BackendUnavailableError):
        assert issubclass(cls, mg.MiniGraphError)
    assert issubclass(mg.FeedError, ValueError)


def _builtin_cases():
    g = mg.Graph()
    x = g.placeholder(shape=[2, 3], dtype=mg.float32, name="x")
    y = g.exponent(x, name="y")
    w = g.variable(np.zeros((2, 3), np.float32), name="w")
    g.relu(x, name="r")
    g.relu(x, name="r")
    v = np.zeros((2, 3), np.float32)
    exe = g.compile(feeds={x: mg.ShapedType([2, 3], mg.float32)}, target_tensors=[y])
    return [
        ("missing feed", lambda: g.run(feeds={}, target_tensors=[y]), (ValueError, KeyError)),
        ("missing feed (executable)", lambda: exe.run({}), (ValueError, KeyError)),
        ("feed wrong shape", lambda: g.run({x: np.zeros((3, 2), np.float32)}, [y]), (ValueError,)),
        ("feed wrong dtype", lambda: g.run({x: v.astype(np.float64)}, [y]), (ValueError, TypeError)),
        ("feed wrong dtype (executable)", lambda: exe.run({x: v.astype(np.float16)}), (ValueError, TypeError)),
        ("feed by name string", lambda: g.run({"x": v}, [y]), (ValueError, TypeError)),
        ("feed a non-placeholder", lambda: g.run({x: v, y: v}, [y]), (ValueError,)),
        ("bad axes", lambda: g.reduction_sum(x, axes=[3]), (ValueError, IndexError)),
        ("bad reshape", lambda: g.reshape(x, [4]), (ValueError,)),
        ("unknown dtype", lambda: g.placeholder([1], dtype="float8"), (TypeError, ValueError)),
        ("unknown dtype in cast", lambda: g.cast(x, "float8"), (TypeError, ValueError)),
        ("duplicate name lookup", lambda: g.operation("r"), (KeyError, ValueError)),
        ("unknown name lookup", lambda: g.tensor("nothing"), (KeyError,)),
        ("assign wrong shape", lambda: g.assign(w, g.constant(np.zeros((3, 2), np.float32))), (ValueError,)),
        ("assign wrong dtype", lambda: g.assign(w, g.constant(np.zeros((2, 3), np.int32))), (TypeError,)),
        ("unknown backend", lambda: g.run({x: v}, [y], backend="cuda"), (ValueError, RuntimeError)),
        ("promotion", lambda: g.addition(x, g.placeholder([2, 3], mg.float16)), (TypeError,)),
    ]


@pytest.mark.parametrize("case", range(17))
def test_errors_also_subclass_the_builtins_one_may_expect(case):
    label, fn, builtins = _builtin_cases()[case]
    with pytest.raises(mg.MiniGraphError) as ei:
        fn()
    for b in builtins:
        assert isinstance(ei.value, b), (label, type(ei.value).__mro__, b)


# ---------------------------------------------------------------------- constants filled from a scalar
def _span(a):
    """Bytes between the first and last byte an array can reach (its memory, for a view)."""
    byte_bounds = getattr(np, "byte_bounds", None) or np.lib.array_utils.byte_bounds  # NumPy 1 / 2
    lo, hi = byte_bounds(a)
    return hi - lo


@pytest.mark.parametrize("value, dtype, shape", [
    (1.5, mg.float32, [3, 5]), (-0.0, mg.float32, [2, 2, 2]), (np.nan, mg.float32, [9]), (-np.inf, mg.float16, [4, 3]),
    (7, mg.int32, [6]), (-128, mg.int8, [5]), (True, mg.bool, [3, 3]), (4_000_000_000, mg.uint32, [7]),
    (1e-45, mg.float32, [8]),  # a subnormal
    (2.5, mg.float32, [(1 << 20) + 3]), (-1.0, mg.float16, [(1 << 20) + 1]), (False, mg.bool, [(1 << 20) + 5]),
])
def test_a_filled_constant_runs_as_its_full_array(backend, value, dtype, shape):
    g = mg.Graph()
    c = g.constant(value, dtype=dtype, shape=shape, name="c")
    assert _span(c.operation.attrs["value"]) == dtype.itemsize  # one element until a run fills it
    y = g.identity(c, name="y")
    try:
        out = g.run({}, [c, y], backend=backend)
    except mg.UnsupportedDTypeError:
        pytest.skip(f"{backend} has no {dtype.name}")
    expect = np.full(shape, value, dtype.np_dtype)
    for t in (c, y):
        r = out[t]
        assert r.dtype == expect.dtype and r.shape == expect.shape and r.flags.writeable
        np.testing.assert_array_equal(r, expect)
        assert np.array_equal(np.signbit(r), np.signbit(expect)) if r.dtype.kind == "f" else True
        r[...] = 0  # results are the caller's: the constant keeps its value
    np.testing.assert_array_equal(g.run({}, [y], backend=backend)[y], expect)


def test_huge_filled_constants_and_gradient_seeds_cost_one_element(monkeypatch):
    g = mg.Graph()
    c = g.constant(1.0, shape=[2 ** 33])  # 32 GiB if it were filled now
    assert c.shape == (2 ** 33,) and _span(c.operation.attrs["value"]) == 4
    x = g.placeholder([2 ** 17, 2 ** 17], name="x")  # 64 GiB of float32
    dx = g.gradients(g.square(x), [x, c], name="grad")
    seed = g.operation("grad/square/seed").attrs["value"]
    zeros = dx[c].operation.attrs["value"]
    assert seed.shape == (2 ** 17, 2 ** 17) and _span(seed) == 4 and not seed.flags.writeable
    assert zeros.shape == (2 ** 33,) and _span(zeros) == 4 and float(zeros[0]) == 0.0
    monkeypatch.setattr(plan, "MAX_BYTES", 1 << 30)
    with pytest.raises(mg.ResourceLimitError, match="constant"):
        g.compile({}, [c])
    with pytest.raises(mg.ResourceLimitError):
        g.constant(1.0, shape=[2 ** 35])  # beyond the element limit: a shape mistake


def test_the_gradient_of_a_large_activation_stores_no_array_of_ones(backend, rng):
    g = mg.Graph()
    x = g.placeholder([1 << 28], name="x")  # a 1 GiB activation
    (dx,) = g.gradients(g.tanh(x), [x]).values()
    consts = [op for op in g.operations if op.type == "constant"]
    assert sum(_span(op.attrs["value"]) for op in consts) < 64
    # the same graph at a size that runs: the seed's ones reach the result
    g = mg.Graph()
    x = g.placeholder([3, 4], name="x")
    y = g.tanh(x)
    dx = g.gradients(y, [x])[x]
    xv = rng.standard_normal((3, 4)).astype(np.float32)
    np.testing.assert_allclose(g.run({x: xv}, [dx], backend=backend)[dx], 1 - np.tanh(xv.astype(np.float64)) ** 2,
                               rtol=1e-5, atol=1e-6)


def test_filling_a_constant_from_an_array_respects_the_memory_limit(monkeypatch):
    monkeypatch.setattr(memory, "MAX_BYTES", 1 << 20)
    g = mg.Graph()
    c = g.constant(np.array([1.0, 2.0], np.float32), shape=[3, 2])  # a row, repeated: copied
    np.testing.assert_array_equal(c.operation.attrs["value"], [[1, 2]] * 3)
    with pytest.raises(mg.ResourceLimitError, match="more than this machine's memory"):
        g.constant(np.array([1.0, 2.0], np.float32), shape=[1 << 18, 2])  # 2 MiB


# ---------------------------------------------------------------------------------------------- tensor conveniences
INDEXES = ["[1:3, :, ::2]", "[0]", "[-1, 2]", "[..., None]", "[None, 1:, ::-1, -2]", "[::3, 4:0:-2]",
           "[:, :, 5:1]", "[1:3, ..., ::2]", "[2, ..., 1]", "[:, -4:-1]", "[1::2, None, :2]"]


@pytest.mark.parametrize("index", INDEXES)
def test_indexing_builds_ops_that_match_numpy(index, backend):
    g = mg.Graph()
    x = g.placeholder([4, 5, 6], name="x")
    value = np.arange(120, dtype=np.float32).reshape(4, 5, 6)
    t = eval("x" + index)
    want = eval("value" + index)
    assert t.shape == want.shape
    got = g.run({x: value}, [t], backend=backend)[t]
    np.testing.assert_array_equal(got, want)
    # and the gradient scatters back where the index read (ones where it read, else zeros)
    (dx,) = g.gradients(g.reduction_sum(t, axes=None), [x]).values()
    mask = np.zeros_like(value)
    exec("mask" + index + " = 1")
    np.testing.assert_array_equal(g.run({x: value}, [dx], backend=backend)[dx], mask)


def test_indexing_a_dynamic_batch_and_its_errors():
    g = mg.Graph()
    x = g.placeholder([-1, 5], name="x")
    t = x[:, 1:3]
    assert t.shape == (-1, 2) and x[0:2].shape == (2, 5) and x[0].shape == (5,)
    value = np.arange(15, dtype=np.float32).reshape(3, 5)
    np.testing.assert_array_equal(g.run({x: value}, [t])[t], value[:, 1:3])
    with pytest.raises(mg.SymbolicValueError, match="known only at run time"):
        x[::2]
    with pytest.raises(mg.SymbolicValueError, match="out of range for axis 1 of size 5"):
        x[:, 5]
    with pytest.raises(mg.SymbolicValueError, match="3 indices for a rank-2 tensor"):
        x[0, 1, 2]
    with pytest.raises(mg.SymbolicValueError, match="g.gather"):
        x[x]
    with pytest.raises(mg.SymbolicValueError, match="step cannot be zero"):
        x[:, ::0]


BAD_INDEXES = {
    "int-array": (lambda x: x[np.array([0, 1])], r"index array\(\[0, 1\]\) is an array; .*g\.gather\(t, "),
    "int-list": (lambda x: x[[0, 1]], r"index \[0, 1\] is an array; a tensor takes ints, slices of ints, None"),
    "one-element-array": (lambda x: x[np.array([1])], r"is an array"),
    "mask": (lambda x: x[np.array([True, False, True, False])], r"is an array"),
    "list-on-axis-1": (lambda x: x[0, [1, 2]], r"index \[1, 2\] is an array"),
    "float-start": (lambda x: x[0.5:2], r"slice start 0.5 is not an int; a tensor takes ints, slices of ints, None"),
    "float-stop": (lambda x: x[:, :2.0], r"slice stop 2.0 is not an int"),
    "float-step": (lambda x: x[::1.5], r"slice step 1.5 is not an int"),
    "tensor-bound": (lambda x: x[:x], r"slice stop <Tensor '[xd]'.* is not an int"),
}


@pytest.mark.parametrize("case", list(BAD_INDEXES))
def test_indexing_with_arrays_or_float_bounds_names_what_is_valid(case):
    g = mg.Graph()
    x = g.placeholder([4, 5], name="x")
    d = g.placeholder([-1, 5], name="d")
    index, message = BAD_INDEXES[case]
    for t in (x, d):
        with pytest.raises(mg.SymbolicValueError, match=message) as e:  # a MiniGraphError and a TypeError
            index(t)
        assert isinstance(e.value, TypeError) and f"'{t.name}'[" in str(e.value)
    # NumPy integers, 0-d integer arrays and integer slice bounds of any int type still index
    assert x[np.int64(1)].shape == (5,) and x[np.array(2)].shape == (5,)
    assert x[np.int32(1):np.int64(3), ::np.int8(2)].shape == (2, 3)


def test_a_tensor_of_rank_above_the_limit_is_refused_where_it_is_built():
    from minigraph import limits, serialize
    g = mg.Graph()
    x = g.placeholder([1] * 64, name="x")  # rank 64 builds and runs
    assert g.run({x: np.ones([1] * 64, np.float32)}, [g.negative(x)])[g.operations[-1].output].ndim == 64
    with pytest.raises(mg.ShapeError, match=r"placeholder op 'p': its result would have rank 65, more than the 64"):
        g.placeholder([1] * 65, name="p")
    with pytest.raises(mg.ShapeError, match=r"expand_dims op 'e': its result would have rank 65"):
        g.expand_dims(x, axes=[0], name="e")
    with pytest.raises(mg.ShapeError, match=r"reshape op 'r': its result would have rank 100"):
        g.reshape(g.placeholder([2], name="q"), [2] + [1] * 99, name="r")
    with pytest.raises(mg.ShapeError, match=r"broadcast op 'b': its result would have rank 66"):
        g.broadcast(x, [1, 1] + [1] * 64, name="b")
    with pytest.raises(mg.ShapeError, match=r"random_uniform_tensor op 'u': its result would have rank 65"):
        g.random_uniform_tensor([1] * 65, seed=0, name="u")
    assert [op.name for op in g.operations] == ["x", "negative", "q"]  # nothing refused was added
    assert serialize.MAX_RANK is limits.MAX_RANK == 64  # the loader's limit, the same constant


def test_transpose_reshape_sum_mean_methods(backend):
    g = mg.Graph()
    m = g.placeholder([2, 3], name="m")
    v = np.arange(6, dtype=np.float32).reshape(2, 3)
    outs = {"T": m.T, "reshape": m.reshape(3, 2), "reshape_list": m.reshape([-1]), "sum": m.sum(),
            "sum1": m.sum(1), "sum_list": m.sum([0, 1]), "mean": m.mean(), "mean0": m.mean(0)}
    want = {"T": v.T, "reshape": v.reshape(3, 2), "reshape_list": v.reshape(-1),
            "sum": v.sum(keepdims=True), "sum1": v.sum(1, keepdims=True), "sum_list": v.sum(keepdims=True),
            "mean": v.mean(keepdims=True), "mean0": v.mean(0, keepdims=True)}
    got = g.run({m: v}, list(outs.values()), backend=backend)
    for k, t in outs.items():
        assert t.shape == want[k].shape, k
        np.testing.assert_allclose(got[t], want[k], rtol=1e-6, err_msg=k)
    assert outs["T"].operation.type == "transpose" and outs["sum"].operation.type == "reduction_sum"
    with pytest.raises(mg.SymbolicValueError, match="rank-2"):
        g.placeholder([2, 3, 4]).T
    for name in ("T", "reshape", "sum", "mean", "__getitem__"):
        assert "no MPSGraph counterpart" in (getattr(mg.Tensor, name).__doc__ or ""), name


@pytest.mark.parametrize("use", ["np.asarray", "np.array", "float", "int", "len", "bool", "range"])
def test_a_symbolic_tensor_has_no_values_while_building(use):
    g = mg.Graph()
    t = g.placeholder([2, 3], name="t")
    call = {"np.asarray": np.asarray, "np.array": np.array, "float": float, "int": int, "len": len,
            "bool": bool, "range": range}[use]
    with pytest.raises(mg.SymbolicValueError) as e:
        call(t)
    text = str(e.value)
    assert "'t'" in text and ("run" in text)
    if use in ("np.asarray", "float", "len"):
        assert "symbolic tensor" in text and "g.run(feeds, [t])[t]" in text
    # arithmetic with arrays still builds ops
    assert isinstance(np.ones((2, 3), np.float32) + t, mg.Tensor)
    assert isinstance(np.float32(2) * t, mg.Tensor)


def test_a_float64_feed_says_astype(backend):
    g = mg.Graph()
    x = g.placeholder([2, 3], mg.float32, name="x")
    y = g.square(x)
    with pytest.raises(mg.FeedDTypeError, match=r"float64.*\.astype\(np\.float32\)"):
        g.run({x: np.random.rand(2, 3)}, [y], backend=backend)
    exe = g.compile({x: mg.ShapedType([2, 3], mg.float32)}, [y], backend=backend)
    with pytest.raises(mg.FeedDTypeError, match=r"\.astype\(np\.float32\)"):
        exe.run({x: np.random.rand(2, 3)})
    h = mg.Graph()
    hx = h.placeholder([-1, 3], mg.float32, name="hx")
    exe = h.compile({hx: mg.ShapedType([-1, 3], mg.float32)}, [h.square(hx)])
    with pytest.raises(mg.FeedDTypeError, match=r"\.astype\(np\.float32\)"):
        exe.run({hx: np.random.rand(4, 3)})
    i = mg.Graph()
    ix = i.placeholder([2], mg.int32, name="ix")
    with pytest.raises(mg.FeedDTypeError, match=r"\.astype\(np\.int32\)"):
        i.run({ix: np.array([1, 2], np.int64)}, [i.square(ix)])


# ----------------------------------------------------------------------------- run_async
def test_run_async_returns_a_future_of_runs_results(backend):
    """runAsync(feeds:targetTensors:targetOperations:executionDescriptor:): a Future; the
    completion handler is add_done_callback."""
    import concurrent.futures
    g = mg.Graph()
    x = g.placeholder([3], name="x")
    y = g.multiplication(x, 2.0)
    xv = np.array([1.0, -2.0, 3.5], np.float32)
    fut = g.run_async({x: xv}, [y], backend=backend)
    assert isinstance(fut, concurrent.futures.Future)
    import threading
    done, called = [], threading.Event()
    fut.add_done_callback(lambda f: (done.append(f.result()[y].tolist()), called.set()))
    np.testing.assert_array_equal(fut.result(timeout=60)[y], g.run({x: xv}, [y], backend=backend)[y])
    assert called.wait(60) and done == [[2.0, -4.0, 7.0]]


def test_run_async_runs_in_submission_order_and_copies_feeds():
    g = mg.Graph()
    x = g.placeholder([2], name="x")
    count = g.variable(np.zeros((), np.float32), name="count")
    bump = g.assign(count, g.read(count) + 1.0)
    with g.control_dependencies([bump]):
        seen = g.read(count) + g.reduction_sum(x, axes=None) * 0.0
    xv = np.array([1.0, 2.0], np.float32)
    futs = [g.run_async({x: xv}, [seen], [bump]) for _ in range(8)]
    xv[:] = np.nan  # copied when called: the runs do not see this
    assert [f.result(timeout=60)[seen].item() for f in futs] == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]
    assert float(g.value_of(count)) == 8.0


def test_run_async_errors_arrive_through_the_future_and_bad_targets_at_once():
    import concurrent.futures
    g = mg.Graph()
    x = g.placeholder([2], name="x")
    y = g.addition(x, 1.0)
    fut = g.run_async({}, [y])
    with pytest.raises(mg.FeedError, match="x"):
        fut.result(timeout=60)
    with pytest.raises(mg.TargetError):
        g.run_async({}, "y")
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        outs = [g.run_async({x: np.full(2, i, np.float32)}, [y], executor=pool) for i in range(4)]
        assert [f.result(timeout=60)[y].tolist() for f in outs] == [[i + 1.0] * 2 for i in range(4)]
