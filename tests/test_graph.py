"""Graph building, names, variables, control dependencies, compile/run, errors (issue 2)."""

import numpy as np
import pytest

import minigraph as mg


def test_readme_walkthrough(backend, rng):
    g = mg.Graph()
    x = g.placeholder(shape=[2, 3, 8, 8], dtype=mg.float32, name="x")
    w = g.variable(rng.random((3, 3)).astype(np.float32), name="w")
    c = g.constant(2.0, dtype=mg.float32)
    ones = np.ones((8, 3), np.float32)
    y = g.matrix_multiplication(g.reshape(x, [-1, 8]), g.constant(ones), name="mm")
    z = g.reduction_sum(g.relu(y) * c, axes=[0, 1], name="total")
    xv = rng.standard_normal((2, 3, 8, 8)).astype(np.float32)
    out = g.run(feeds={x: xv}, target_tensors=[z, y], backend=backend)
    y_ref = xv.reshape(-1, 8) @ ones
    np.testing.assert_allclose(out[y], y_ref, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out[z], (np.maximum(y_ref, 0) * 2).sum(keepdims=True), rtol=1e-5)
    exe = g.compile(feeds={x: mg.ShapedType([2, 3, 8, 8], mg.float32)}, target_tensors=[z], backend=backend)
    (zv,) = exe.run({x: xv})
    np.testing.assert_allclose(zv, out[z], rtol=1e-6)
    assert exe.target_tensors == [z] and exe.feed_tensors == [x]
    assert w.shape == (3, 3) and w.dtype == mg.float32


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
            deep = g.exp if False else g.exponent(a)
    assert conv.name == "block1/conv" and deep.name == "block1/inner/exponent"
    assert g.operation("block1/conv") is conv.operation
    assert g.tensor("block1/conv") is conv


def test_lookup_errors_name_close_matches():
    g = mg.Graph()
    with g.name_scope("block1"):
        g.negative(g.placeholder([1], name="x"), name="conv")
    with pytest.raises(mg.NameLookupError, match=r"block1/cnv.*did you mean 'block1/conv'"):
        g.operation("block1/cnv")
    with pytest.raises(KeyError):
        g.tensor("nothing")


def test_duplicate_explicit_name_is_ambiguous_on_lookup():
    g = mg.Graph()
    x = g.placeholder([1], name="x")
    g.negative(x, name="conv")
    g.negative(x, name="conv")
    with pytest.raises(mg.AmbiguousNameError, match=r"'conv'.*2 ops.*'conv', 'conv_1'"):
        g.operation("conv")
    assert g.operation("conv_1").name == "conv_1"


def test_dtype_accepts_object_name_and_numpy():
    g = mg.Graph()
    for d in (mg.float16, "float16", np.float16, np.dtype("float16")):
        assert g.placeholder([1], d).dtype is mg.float16
    with pytest.raises(mg.DTypeError, match="unknown dtype"):
        g.placeholder([1], "float8")
    assert mg.float32.mps_value == 0x10000020 and mg.bool.mps_value == 0x80000008


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


def test_read_after_assign_in_one_run_sees_the_new_value():
    g = mg.Graph()
    v = g.variable(np.float32(1.0), name="v")
    a = g.assign(v, g.constant(5.0))
    with g.control_dependencies([a]):
        r = g.read(v)
    assert g.run(target_tensors=[r])[r] == 5.0


def test_assign_errors():
    g = mg.Graph()
    v = g.variable(np.zeros((2, 2), np.float32), name="v")
    with pytest.raises(mg.ShapeError, match=r"assign op 'a'.*\(3,\).*\(2, 2\)"):
        g.assign(v, g.placeholder([3]), name="a")
    with pytest.raises(mg.DTypeError, match="int32.*float32"):
        g.assign(v, g.placeholder([2, 2], mg.int32))
    with pytest.raises(mg.TargetError, match="variable"):
        g.assign(g.placeholder([2, 2]), g.placeholder([2, 2]))


def test_control_dependencies_run_first():
    g = mg.Graph()
    v = g.variable(np.float32(0.0), name="v")
    bump = g.assign(v, g.read(v) + 10.0, name="bump")
    with g.control_dependencies([bump]):
        y = g.identity(g.constant(1.0), name="after")
    assert y.operation.control_dependencies == (bump,)
    g.run(target_tensors=[y])
    assert g.value_of(v) == 10.0


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


def test_feed_errors():
    g = mg.Graph()
    x = g.placeholder([2, 3], name="x")
    y = g.negative(x, name="y")
    with pytest.raises(mg.FeedError, match="missing feed for placeholder 'x'"):
        g.run({}, [y])
    with pytest.raises(mg.FeedError, match=r"'x'.*\(3, 3\).*\(2, 3\)"):
        g.run({x: np.ones((3, 3), np.float32)}, [y])
    with pytest.raises(mg.FeedError, match="float64.*float32"):
        g.run({x: np.ones((2, 3))}, [y])
    with pytest.raises(mg.FeedError, match="only placeholders"):
        g.run({x: np.ones((2, 3), np.float32), y: np.ones((2, 3), np.float32)}, [y])
    with pytest.raises(mg.TargetError):
        g.run({x: np.ones((2, 3), np.float32)}, [])
    with pytest.raises(mg.TargetError, match="target_operations"):
        g.run({x: np.ones((2, 3), np.float32)}, [y.operation])
    other = mg.Graph()
    with pytest.raises(mg.GraphMismatchError, match="another graph"):
        g.negative(other.placeholder([1]))
    with pytest.raises(mg.GraphMismatchError):
        g.run({x: np.ones((2, 3), np.float32)}, [other.placeholder([1])])


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


def test_executable_reuse_and_run_cache():
    g = mg.Graph()
    x = g.placeholder([-1, 2], name="x")
    y = g.square(x)
    for _ in range(3):
        g.run({x: np.ones((2, 2), np.float32)}, [y])
    info = g.cache_info()
    assert (info.hits, info.misses, info.compiles) == (2, 1, 1)
    g.run({x: np.ones((4, 2), np.float32)}, [y])
    assert "new feed shape for 'x': (2, 2) -> (4, 2)" in g.last_compile_reason
    g.set_cache_size(1)
    assert g.cache_info().currsize == 1


def test_executable_takes_a_list_in_feed_order():
    g = mg.Graph()
    a, b = g.placeholder([2], name="a"), g.placeholder([2], name="b")
    exe = g.compile({a: mg.ShapedType([2], mg.float32), b: mg.ShapedType([2], mg.float32)}, [a - b])
    assert exe.feed_tensors == [a, b]
    np.testing.assert_allclose(exe.run([np.ones(2, np.float32), np.full(2, 3, np.float32)])[0], [-2, -2])


def test_feeds_not_mutated_results_not_aliased():
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


def test_errors_are_minigraph_errors_and_builtins():
    assert issubclass(mg.ShapeError, ValueError) and issubclass(mg.DTypeError, TypeError)
    assert issubclass(mg.NameLookupError, KeyError) and issubclass(mg.FeedError, mg.MiniGraphError)


