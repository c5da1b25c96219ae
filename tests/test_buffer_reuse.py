"""The planner lets an elementwise step write its result into an input buffer that dies at that
step (``Step.reuse``), and only where that is safe: never a feed, a constant, a variable's value,
a target, a buffer another step may still see through a view, or one an assign keeps."""
from __future__ import annotations

import numpy as np
import pytest

import minigraph as mg
from minigraph.backends.numpy import threads
from minigraph.backends.numpy.registry import KERNELS


# one step per op: with fusion a chain of elementwise ops is one fused step, which makes its own output
UNFUSED = mg.CompilationDescriptor(fusion=False)


def _compile(g, feeds, targets, ops=()):
    types = {t: mg.ShapedType(v.shape, mg.as_dtype(v.dtype)) for t, v in feeds.items()}
    return g.compile(types, targets, target_operations=list(ops), compilation_descriptor=UNFUSED) if ops else \
        g.compile(types, targets, compilation_descriptor=UNFUSED)


def _reuse(exe) -> dict:
    """{op name: reused input position} of the plan's steps."""
    return {s.op.name: s.reuse for s in exe.plan.steps if s.reuse is not None}


def _conv(g, x, w):
    return g.convolution_2d(x, w, mg.Convolution2DOpDescriptor(padding_style=mg.PaddingStyle.TF_SAME))


@pytest.mark.parametrize("big", [False, True])
def test_an_elementwise_step_takes_a_dying_convolution_result(rng, monkeypatch, big):
    """conv -> add -> multiply -> exp: each elementwise step writes into the buffer that dies at
    it; the results equal a NumPy reference (and the split path, with ``big``, too)."""
    if big:
        monkeypatch.setattr(threads, "ELEMENTWISE_THRESHOLD", 1)
        monkeypatch.setattr(threads, "MIN_TASK_WORK", 1)
        monkeypatch.setattr(threads, "_explicit", 2)
    g = mg.Graph()
    x, w, b = g.placeholder((2, 3, 6, 6), name="x"), g.placeholder((4, 3, 3, 3), name="w"), g.placeholder((1, 4, 1, 1), name="b")
    y = _conv(g, x, w)
    s = g.addition(y, b, name="add")
    m = g.multiplication(s, g.constant(0.5), name="mul")
    e = g.exponent(m, name="exp")
    feeds = {x: rng.standard_normal(x.shape).astype(np.float32), w: rng.standard_normal(w.shape).astype(np.float32),
             b: rng.standard_normal(b.shape).astype(np.float32)}
    kept = {k: v.copy() for k, v in feeds.items()}
    exe = _compile(g, feeds, [e])
    assert _reuse(exe) == {"add": 0, "mul": 0, "exp": 0}
    got = exe.run(feeds)[0]
    torch = pytest.importorskip("torch", reason="needs torch, in the oracles extra: pip install -e '.[oracles]'")
    ref = torch.nn.functional.conv2d(torch.tensor(feeds[x]), torch.tensor(feeds[w]), padding=1).numpy()
    np.testing.assert_allclose(got, np.exp((ref + feeds[b]) * 0.5), rtol=1e-5, atol=1e-5)
    for k in feeds:  # feeds never change
        np.testing.assert_array_equal(feeds[k], kept[k])
    np.testing.assert_array_equal(exe.run(feeds)[0], got)


def test_feeds_constants_variables_and_targets_are_never_written(rng):
    g = mg.Graph()
    x = g.placeholder((4, 5), name="x")
    c = g.constant(rng.standard_normal((4, 5)).astype(np.float32), name="c")
    v = g.variable(np.ones((4, 5), np.float32), name="v")
    a = g.addition(x, c, name="feed_plus_const")
    r = g.multiplication(v, g.constant(2.0), name="var_times_2")
    t = g.matrix_multiplication(x, g.constant(np.ones((5, 5), np.float32)), name="mm")
    u = g.negative(t, name="neg_of_target")
    feeds = {x: rng.standard_normal((4, 5)).astype(np.float32)}
    exe = _compile(g, feeds, [a, r, t, u])
    assert _reuse(exe) == {}  # x is a feed, c a constant, v a variable, t a target
    before = (feeds[x].copy(), np.asarray(g.value_of(v)).copy())
    out = exe.run(feeds)
    np.testing.assert_array_equal(feeds[x], before[0])
    np.testing.assert_array_equal(g.value_of(v), before[1])
    np.testing.assert_array_equal(out[3], -out[2])


def test_a_buffer_seen_through_a_view_or_kept_by_an_assign_is_not_taken(rng):
    g = mg.Graph()
    x = g.placeholder((2, 3, 4, 4), name="x")
    w = g.placeholder((3, 3, 3, 3), name="w")
    y = _conv(g, x, w)
    view = g.reshape(y, (2, 48), name="view")  # a view of y's buffer, read after the add
    s = g.addition(y, y, name="add_after_view")
    later = g.reduction_sum(g.multiplication(view, g.constant(1.0)), axes=None, name="later")
    v = g.variable(np.zeros((2, 3, 4, 4), np.float32), name="v")
    y2 = _conv(g, x, w)
    keep = g.assign(v, y2)  # y2 becomes the variable's value
    s2 = g.subtraction(y2, g.constant(1.0), name="sub_of_assigned")
    feeds = {x: rng.standard_normal(x.shape).astype(np.float32), w: rng.standard_normal(w.shape).astype(np.float32)}
    exe = _compile(g, feeds, [s, later, s2], [keep])
    names = _reuse(exe)
    assert "add_after_view" not in names and "sub_of_assigned" not in names
    got = exe.run(feeds)
    np.testing.assert_allclose(got[1], got[0].sum() / 2, rtol=1e-5)
    np.testing.assert_allclose(g.value_of(v), got[2] + 1, rtol=1e-6)


def test_reuse_needs_the_results_type():
    """A comparison (bool result) or a broadcast input (another shape) keeps a new buffer."""
    g = mg.Graph()
    x, w = g.placeholder((1, 2, 3, 3), name="x"), g.placeholder((2, 2, 1, 1), name="w")
    y = g.convolution_2d(x, w)
    gt = g.greater_than(y, g.constant(0.0), name="gt")
    small = g.reduction_sum(y, axes=[2, 3])
    wide = g.addition(small, g.placeholder((1, 2, 3, 3), name="z"), name="wide")
    exe = g.compile({t: mg.ShapedType(t.shape, mg.float32) for t in g.placeholders}, [gt, wide])
    assert "gt" not in _reuse(exe) and "wide" not in _reuse(exe)
    assert "greater_than" in KERNELS.memory_facts().in_place  # the ufunc kernel could, the bool result cannot


def test_reuse_follows_the_kernels_declarations():
    """The compiler knows no op names: reuse comes from what the backend's kernels declared when
    they registered; a backend that declares nothing gets plans without reuse, and the same
    results."""
    from minigraph.compiler.plan import build_plan
    from minigraph.ir import KernelTable, MemoryFacts

    g = mg.Graph()
    x, w = g.placeholder((1, 2, 4, 4), name="x"), g.placeholder((2, 2, 1, 1), name="w")
    e = g.exponent(g.addition(g.convolution_2d(x, w), g.constant(1.0), name="add"), name="exp")
    types = {x: mg.ShapedType(x.shape), w: mg.ShapedType(w.shape)}

    def reuse(facts):
        plan = build_plan(g, types, [e], [], memory_facts=facts, fusion=False)
        plan.check()
        return {s.op.name: s.reuse for s in plan.steps if s.reuse is not None}

    assert reuse(KERNELS.memory_facts()) == {"add": 0, "exp": 0}
    assert reuse(MemoryFacts()) == {}
    # a convolution not declared fresh: its result might be a view of a feed, so nothing takes it
    facts = KERNELS.memory_facts()
    assert reuse(MemoryFacts(facts.in_place, facts.fresh - {"convolution_2d"}, facts.reads_only)) == {"exp": 0}

    table = KernelTable("test-declarations")
    table.register("addition", in_place=True)(lambda step: None)
    table.register("exponent")(lambda step: None)
    table.register("softmax", reads_only=True)(lambda step: None)
    got = table.memory_facts()
    assert got.in_place == {"addition"} and got.fresh == {"addition"} and got.reads_only == {"addition", "softmax"}
    table.unregister("addition")
    assert table.memory_facts() == MemoryFacts(frozenset(), frozenset(), frozenset({"softmax"}))


def test_a_backend_without_declarations_runs_without_reuse(rng):
    """The plan-following example backend with no memory facts: no step reuses, results equal numpy's."""
    from example_backend import PlanFollowingBackend

    g = mg.Graph()
    x = g.placeholder((3, 5), name="x")
    y = g.tanh(g.multiplication(g.exponent(x), x, name="mul"), name="tanh")
    feeds = {x: rng.standard_normal((3, 5)).astype(np.float32)}
    types = {x: mg.ShapedType((3, 5))}
    backend = PlanFollowingBackend()
    backend.memory_facts = None
    mg.register_backend("follower-no-facts", lambda: backend)  # (conftest restores the registry)
    exe = g.compile(types, [y], backend="follower-no-facts", compilation_descriptor=UNFUSED)
    assert _reuse(exe) == {}
    assert _reuse(g.compile(types, [y], compilation_descriptor=UNFUSED)) == {"mul": 0, "tanh": 0}
    np.testing.assert_array_equal(exe.run(feeds)[0], g.run(feeds, [y])[y])
