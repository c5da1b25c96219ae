"""Control flow (MPSGraph if/while/for) and call: each op against plain Python loops on the numpy
and webgpu backends, nesting and captures, the errors (naming the block and the user's line),
gradients through if_then_else and for_loop against finite differences and unrolled graphs,
while_loop refusing gradients, call through CompilationDescriptor.callables, what webgpu reads
back, and the listings, Swift export and save/load of blocks."""
import os
import re

import numpy as np
import pytest

import minigraph as mg
from conftest import _usable
from gradcheck import central_differences

F32 = np.float32
BACKENDS = ["numpy", "webgpu"]


@pytest.fixture(params=BACKENDS)
def backend(request):
    """numpy and webgpu (the backends with control-flow kernels); a skip where webgpu is missing."""
    return _usable(request.param)


def _run(g, feeds, targets, backend):
    if backend == "webgpu":
        ok, why = mg.get_backend("webgpu").available()
        if not ok:
            pytest.skip(why)
    return g.run(feeds, targets, backend=backend)


def _tol(backend):
    return dict(rtol=1e-5, atol=1e-6) if backend == "numpy" else dict(rtol=1e-4, atol=1e-5)


# ----------------------------------------------------------------------------- if_then_else
@pytest.mark.parametrize("shape", [(3, 4), (), (2, 0)])
def test_if_then_else_runs_only_the_taken_branch(backend, shape):
    rng = np.random.default_rng(1)
    g = mg.Graph()
    x = g.placeholder(list(shape), name="x")
    p = g.placeholder([], mg.bool, name="p")
    outs = g.if_then_else(p, lambda: [g.exponent(x), g.reduction_sum(x, axes=None)],
                          lambda: [x * 3.0 - 1.0, g.reduction_maximum(g.absolute(x), axes=None)], name="branch")
    xv = rng.uniform(-1, 1, shape).astype(F32)
    for pred in (True, False):
        got = _run(g, {x: xv, p: np.array(pred)}, outs, backend)
        if pred:
            want = [np.exp(xv), xv.sum(keepdims=True).reshape(outs[1].shape)]
        else:
            want = [xv * 3 - 1, (np.abs(xv).max(keepdims=True) if xv.size else np.full((1,) * len(shape), -np.inf,
                                                                                        F32)).reshape(outs[1].shape)]
        for t, w in zip(outs, want):
            np.testing.assert_allclose(got[t], w, **_tol(backend))


def test_if_then_else_predicate_of_numbers_and_constants(backend):
    g = mg.Graph()
    x = g.placeholder([2], name="x")
    c = g.placeholder([], mg.float32, name="c")
    (a,) = g.if_then_else(c, lambda: [x + 1.0], lambda: [x - 1.0])  # non-zero is true
    (b,) = g.if_then_else(g.constant(False), lambda: [x * 2.0], lambda: [x * 4.0])  # decided at prepare time
    xv = np.array([1.0, 2.0], F32)
    for cv, want in ((0.0, xv - 1), (-2.5, xv + 1)):
        got = _run(g, {x: xv, c: np.array(cv, F32)}, [a, b], backend)
        np.testing.assert_allclose(got[a], want)
        np.testing.assert_allclose(got[b], xv * 4)


def test_if_without_else_returns_nothing_and_its_ops_live_in_a_scope():
    g = mg.Graph()
    x = g.placeholder([2], name="x")
    assert g.if_then_else(g.constant(True), lambda: [], name="noop") == []
    (y,) = g.if_then_else(g.greater_than(g.squeeze(g.reduction_sum(x, axes=None)), 0.0),
                          lambda: [g.negative(x, name="neg")], lambda: [x], name="sel")
    assert g.operation("sel/then/neg").block.label == "the then block of if_then_else op 'sel'"
    assert g.operation("sel").blocks[1].results == (x,)  # a branch may return an outer tensor
    np.testing.assert_array_equal(g.run({x: np.array([1, 2], F32)}, [y])[y], [-1, -2])
    np.testing.assert_array_equal(g.run({x: np.array([-1, -2], F32)}, [y])[y], [-1, -2])


# ----------------------------------------------------------------------------- for_loop
def _python_for(xv, wv, indices):
    a, s = xv.astype(np.float64), 0.0
    for i in indices:
        a = np.tanh(a @ wv) + i
        s = s + i * 0.5
    return a, s


@pytest.mark.parametrize("count", [0, 1, 5])
def test_for_loop_with_a_count_matches_a_python_loop(backend, count):
    rng = np.random.default_rng(count)
    g = mg.Graph()
    x = g.placeholder([2, 3], name="x")
    w = g.placeholder([3, 3], name="w")
    out = g.for_loop(count, [x, g.constant(0.0)],
                     lambda i, a: [g.tanh(g.matrix_multiplication(a[0], w)) + g.cast(i, mg.float32),
                                   a[1] + g.cast(i, mg.float32) * 0.5], name="loop")
    xv, wv = rng.standard_normal((2, 3)).astype(F32), rng.uniform(-0.5, 0.5, (3, 3)).astype(F32)
    got = _run(g, {x: xv, w: wv}, out, backend)
    want = _python_for(xv, wv, range(count))
    for t, v in zip(out, want):
        np.testing.assert_allclose(got[t], v, **_tol(backend))


def test_apples_bounds_form_of_for_is_counted_as_a_form_of_for_loop():
    """for(lowerBound:upperBound:step:...) is for_loop with lower_bound=/upper_bound=/step=."""
    from minigraph import apple_methods as am
    sel = am.read_method_list(os.path.join(os.path.dirname(__file__), "..", "docs", "apple-mpsgraph-methods.txt"))
    rows = am.table(sel)
    row = rows["for(lowerBound:upperBound:step:initialBodyArguments:body:name:)"]
    assert (row.name, row.kind) == ("for_loop", "form") and "lower_bound=" in row.reason
    assert rows["for(numberOfIterations:initialBodyArguments:body:name:)"].kind == "op"

@pytest.mark.parametrize("lo,hi,step", [(2, 9, 3), (-3, 4, 2), (5, 5, 1), (7, 2, 1)])
def test_for_loop_with_bounds_matches_pythons_range(backend, lo, hi, step):
    g = mg.Graph()
    x = g.placeholder([3], name="x")
    lo_t = g.placeholder([], mg.int32, name="lo")  # run-time bounds (webgpu reads them back once)
    (a,) = g.for_loop(None, [x], lambda i, s: [s[0] * 0.5 + g.cast(i, mg.float32)],
                      lower_bound=lo_t, upper_bound=hi, step=step)
    (b,) = g.for_loop(None, [x], lambda i, s: [s[0] - g.cast(i, mg.float32)], lower_bound=lo, upper_bound=hi,
                      step=step)
    xv = np.array([1.0, -2.0, 4.0], F32)
    got = _run(g, {x: xv, lo_t: np.array(lo, np.int32)}, [a, b], backend)
    wa, wb = xv.astype(np.float64), xv.astype(np.float64)
    for i in range(lo, hi, step):
        wa, wb = wa * 0.5 + i, wb - i
    np.testing.assert_allclose(got[a], wa, **_tol(backend))
    np.testing.assert_allclose(got[b], wb, **_tol(backend))


def test_for_loop_carries_swapped_and_unchanged_arguments(backend):
    g = mg.Graph()
    x = g.placeholder([3], name="x")
    n = g.placeholder([], mg.int32, name="n")
    out = g.for_loop(n, [x, x * 10.0, x], lambda i, a: [a[1], a[0], a[2]], name="swap")
    xv = np.arange(3, dtype=F32)
    for k in range(4):
        got = _run(g, {x: xv, n: np.array(k, np.int32)}, out, backend)
        first, second = (xv * 10, xv) if k % 2 else (xv, xv * 10)
        np.testing.assert_array_equal(got[out[0]], first)
        np.testing.assert_array_equal(got[out[1]], second)
        np.testing.assert_array_equal(got[out[2]], xv)


def test_nested_loops_and_branches_read_the_tensors_around_them(backend):
    g = mg.Graph()
    x = g.placeholder([4], name="x")
    w = g.constant(np.array([0.5, -1.0, 2.0, 0.25], F32), name="w")

    def outer(i, a):
        fi = g.cast(i, mg.float32)
        (inner,) = g.for_loop(3, [a[0]], lambda j, b: [b[0] * w + fi + g.cast(j, mg.float32)], name="inner")
        (picked,) = g.if_then_else(g.equal(g.floor_modulo(i, 2), 0), lambda: [g.sin(inner)], lambda: [inner * 0.1])
        return [picked]
    (y,) = g.for_loop(4, [x], outer, name="outer")
    xv = np.array([0.1, 0.2, -0.3, 0.4], F32)
    want = xv.astype(np.float64)
    wv = np.array([0.5, -1.0, 2.0, 0.25])
    for i in range(4):
        for j in range(3):
            want = want * wv + i + j
        want = np.sin(want) if i % 2 == 0 else want * 0.1
    np.testing.assert_allclose(_run(g, {x: xv}, [y], backend)[y], want, **_tol(backend))


# ----------------------------------------------------------------------------- while_loop
@pytest.mark.parametrize("start", [0.5, 9.0, 1e4])
def test_while_loop_counts_its_halvings(backend, start):
    g = mg.Graph()
    x = g.placeholder([], name="x")

    def before(ins, results):
        results.extend([ins[0] * 1.0, ins[1]])
        return g.greater_than(ins[0], 1.0)
    value, count = g.while_loop([x, g.constant(0, dtype=mg.int32)], before, lambda a: [a[0] * 0.5, a[1] + 1],
                                name="halve")
    got = _run(g, {x: np.array(start, F32)}, [value, count], backend)
    v, k = start, 0
    while v > 1.0:
        v, k = v * 0.5, k + 1
    assert int(got[count]) == k
    np.testing.assert_allclose(got[value], v, rtol=1e-6)


def test_while_loop_passes_other_values_than_its_inputs(backend):
    """before's results (what after gets and the loop returns) need not be its inputs."""
    g = mg.Graph()
    x = g.placeholder([3], name="x")

    def before(ins, results):
        results.append(g.reduction_sum(ins[0], axes=None))  # a [1] tensor, not the input's [3]
        results.append(ins[0])
        return g.less_than(g.squeeze(results[0]), 100.0)
    total, last = g.while_loop([x], before, lambda a: [a[1] * 2.0], name="grow")
    xv = np.array([1.0, 2.0, 3.0], F32)
    got = _run(g, {x: xv}, [total, last], backend)
    v = xv.copy()
    while v.sum() < 100:
        v = v * 2
    np.testing.assert_allclose(got[total], [v.sum()])
    np.testing.assert_allclose(got[last], v)


# ----------------------------------------------------------------------------- errors
def test_a_predicate_must_be_rank_0():
    g = mg.Graph()
    x = g.placeholder([2], name="x")
    with pytest.raises(mg.ShapeError, match=r"if_then_else op 'bad'.*rank-0.*\[2\]"):
        g.if_then_else(g.greater_than(x, 0.0), lambda: [x], lambda: [x], name="bad")
    with pytest.raises(mg.ShapeError, match=r"while_loop op 'w'.*predicate.*rank-0"):
        g.while_loop([x], lambda ins, res: (res.extend(ins), g.greater_than(ins[0], 0.0))[1], lambda a: a, name="w")


def test_branches_of_other_types_name_the_block_and_the_users_line():
    g = mg.Graph()
    x = g.placeholder([2, 3], name="x")
    line = f"{os.path.basename(__file__)}:"
    with pytest.raises(mg.ShapeError, match=r"the else block of if_then_else op 'b'.*" + re.escape(line)
                       + r".*float32\[3\].*float32\[2, 3\]"):
        g.if_then_else(g.constant(True), lambda: [x], lambda: [g.slice(x, 0, 0, 1)[0]], name="b")
    with pytest.raises(mg.DTypeError, match=r"else block.*int32\[2, 3\].*float32\[2, 3\]"):
        g.if_then_else(g.constant(True), lambda: [x], lambda: [g.cast(x, mg.int32)], name="b")
    with pytest.raises(mg.TargetError, match=r"returns 1 tensors but there is no else block"):
        g.if_then_else(g.constant(True), lambda: [x])


def test_blocks_that_return_nothing_or_the_wrong_types_are_refused():
    g = mg.Graph()
    x = g.placeholder([3], name="x")
    with pytest.raises(mg.TargetError, match=r"the body block of for_loop op 'f'.*returned nothing"):
        g.for_loop(2, [x], lambda i, a: None, name="f")
    with pytest.raises(mg.TargetError, match=r"body block.*returned 2 tensors; it must return 1"):
        g.for_loop(2, [x], lambda i, a: [a[0], a[0]], name="f")
    with pytest.raises(mg.ShapeError, match=r"body block.*float32\[1\].*initial body argument is float32\[3\]"):
        g.for_loop(2, [x], lambda i, a: [g.reduction_sum(a[0], axes=None)], name="f")
    with pytest.raises(mg.DTypeError, match=r"the after block of while_loop op 'w'.*int32\[3\]"):
        g.while_loop([x], lambda ins, res: (res.extend(ins), g.constant(False))[1], lambda a: [g.cast(a[0], mg.int32)],
                     name="w")
    with pytest.raises(mg.TargetError, match=r"the before block.*returned nothing"):
        g.while_loop([x], lambda ins, res: None, lambda a: a, name="w")
    with pytest.raises(mg.TargetError, match=r"then block must be a callable"):
        g.if_then_else(g.constant(True), [x], lambda: [x])


def test_a_blocks_tensors_are_not_visible_outside_it():
    g = mg.Graph()
    x = g.placeholder([3], name="x")
    inside = []
    g.for_loop(2, [x], lambda i, a: inside.append(a[0] * 2.0) or [inside[-1]], name="loop")
    with pytest.raises(mg.TargetError, match=r"reads 'loop/body/multiplication', a tensor built inside the body "
                                             r"block of for_loop op 'loop'"):
        g.addition(inside[0], x)
    with pytest.raises(mg.TargetError, match=r"target 'loop/body/multiplication' was built inside the body block"):
        g.run({x: np.zeros(3, F32)}, [inside[0]])
    with pytest.raises(mg.TargetError, match="cannot be built inside the body block"):
        g.for_loop(2, [x], lambda i, a: [a[0] + g.variable(np.zeros(3, F32))])


def test_bad_counts_and_bounds():
    g = mg.Graph()
    x = g.placeholder([3], name="x")
    with pytest.raises(mg.DTypeError, match="number_of_iterations must be int32"):
        g.for_loop(g.constant(2.0), [x], lambda i, a: a)
    with pytest.raises(mg.ShapeError, match="number_of_iterations must be a rank-0"):
        g.for_loop(g.constant([2], dtype=mg.int32), [x], lambda i, a: a)
    with pytest.raises(mg.TargetError, match="not both"):
        g.for_loop(2, [x], lambda i, a: a, lower_bound=0, upper_bound=2, step=1)
    with pytest.raises(mg.TargetError, match="all of lower_bound, upper_bound and step"):
        g.for_loop(None, [x], lambda i, a: a, lower_bound=0)
    step = g.placeholder([], mg.int32, name="step")
    (y,) = g.for_loop(None, [x], lambda i, a: a, lower_bound=0, upper_bound=3, step=step, name="f")
    for backend in BACKENDS:
        if backend not in mg.available_backends():
            continue
        with pytest.raises(mg.ExecutionError, match="for_loop op 'f'.*step is 0"):
            g.run({x: np.zeros(3, F32), step: np.array(0, np.int32)}, [y], backend=backend)


# ----------------------------------------------------------------------------- gradients
def _fd(g, loss, feeds, wrt):
    return central_differences(g, loss, feeds, wrt, 1e-6)


@pytest.mark.parametrize("pred", [True, False])
def test_if_then_else_gradient_matches_finite_differences_and_select(pred):
    rng = np.random.default_rng(3)
    g = mg.Graph()
    a = g.placeholder([2, 3], mg.float64, name="a")
    b = g.placeholder([3], mg.float64, name="b")
    p = g.placeholder([], mg.float64, name="p")  # non-zero is true (float64: the difference harness feeds float64)
    y, z = g.if_then_else(p, lambda: [g.sin(a) * b, g.reduction_sum(a * a, axes=[1])],
                          lambda: [g.exponent(a) - b, g.reduction_sum(a, axes=[1]) * 3.0])
    loss = g.reduction_sum(y * y, axes=None) + g.reduction_sum(z, axes=None)
    grads = g.gradients(loss, [a, b])
    feeds = {a: rng.uniform(-1, 1, (2, 3)), b: rng.uniform(-1, 1, 3), p: np.array(float(pred))}
    got = g.run(feeds, [grads[a], grads[b]])
    for t, fd in zip((a, b), _fd(g, loss, feeds, [a, b])):
        np.testing.assert_allclose(got[grads[t]], fd, rtol=1e-6, atol=1e-8)
    # the same function without control flow
    h = mg.Graph()
    ha, hb = h.placeholder([2, 3], mg.float64), h.placeholder([3], mg.float64)
    hy, hz = ((h.sin(ha) * hb, h.reduction_sum(ha * ha, axes=[1])) if pred else
              (h.exponent(ha) - hb, h.reduction_sum(ha, axes=[1]) * 3.0))
    hg = h.gradients(h.reduction_sum(hy * hy, axes=None) + h.reduction_sum(hz, axes=None), [ha, hb])
    want = h.run({ha: feeds[a], hb: feeds[b]}, [hg[ha], hg[hb]])
    np.testing.assert_allclose(got[grads[a]], want[hg[ha]], rtol=1e-12)
    np.testing.assert_allclose(got[grads[b]], want[hg[hb]], rtol=1e-12)


@pytest.mark.parametrize("form", ["count", "range"])
def test_for_loop_gradient_matches_finite_differences_and_the_unrolled_loop(form):
    rng = np.random.default_rng(4)
    g = mg.Graph()
    x = g.placeholder([2, 3], mg.float64, name="x")
    w = g.placeholder([3, 3], mg.float64, name="w")
    c = g.placeholder([3], mg.float64, name="c")
    indices = range(4) if form == "count" else range(1, 8, 3)

    def body(i, a):
        return [g.tanh(g.matrix_multiplication(a[0], w)) * g.cast(i, mg.float64) + c, a[1] + g.reshape(g.reduction_sum(a[0], axes=None), [1])]
    kw = dict(lower_bound=1, upper_bound=8, step=3) if form == "range" else {}
    out = g.for_loop(4 if form == "count" else None, [x, g.constant(np.zeros(1))], body, **kw)
    loss = g.reduction_sum(out[0] * out[0], axes=None) + g.reduction_sum(out[1], axes=None)
    grads = g.gradients(loss, [x, w, c])
    feeds = {x: rng.uniform(-1, 1, (2, 3)), w: rng.uniform(-0.7, 0.7, (3, 3)), c: rng.uniform(-1, 1, 3)}
    got = g.run(feeds, [grads[t] for t in (x, w, c)])
    for t, fd in zip((x, w, c), _fd(g, loss, feeds, [x, w, c])):
        np.testing.assert_allclose(got[grads[t]], fd, rtol=1e-6, atol=1e-8, err_msg=t.name)
    h = mg.Graph()
    hx, hw, hc = (h.placeholder(list(s), mg.float64) for s in ((2, 3), (3, 3), (3,)))
    a0, a1 = hx, h.constant(np.zeros(1))
    for i in indices:
        a0, a1 = (h.tanh(h.matrix_multiplication(a0, hw)) * float(i) + hc,
                  a1 + h.reshape(h.reduction_sum(a0, axes=None), [1]))
    hl = h.reduction_sum(a0 * a0, axes=None) + h.reduction_sum(a1, axes=None)
    hg = h.gradients(hl, [hx, hw, hc])
    want = h.run({hx: feeds[x], hw: feeds[w], hc: feeds[c]}, [hg[t] for t in (hx, hw, hc)])
    for t, ht in zip((x, w, c), (hx, hw, hc)):
        np.testing.assert_allclose(got[grads[t]], want[hg[ht]], rtol=1e-10, atol=1e-12)


def test_gradients_through_control_flow_run_on_every_backend(backend):
    rng = np.random.default_rng(5)
    g = mg.Graph()
    x = g.placeholder([4], name="x")
    p = g.placeholder([], mg.bool, name="p")
    (y,) = g.for_loop(3, [x], lambda i, a: [g.sin(a[0]) * 1.5])
    (z,) = g.if_then_else(p, lambda: [y * y], lambda: [g.tanh(y)])
    gx = g.gradients(g.reduction_sum(z, axes=None), [x])[x]
    xv = rng.uniform(-1, 1, 4).astype(F32)
    for pred in (True, False):
        got = _run(g, {x: xv, p: np.array(pred)}, [gx], backend)[gx]
        ref = g.run({x: xv, p: np.array(pred)}, [gx])[gx]
        np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-6)


def test_while_loop_and_run_time_counts_are_not_differentiable():
    g = mg.Graph()
    x = g.placeholder([], name="x")
    (v,) = g.while_loop([x], lambda ins, res: (res.extend(ins), g.less_than(ins[0], 10.0))[1],
                        lambda a: [a[0] * 2.0], name="doubling")
    with pytest.raises(mg.NotDifferentiableError, match=r"while_loop op 'doubling'.*not differentiable"):
        g.gradients(v, [x])
    n = g.placeholder([], mg.int32, name="n")
    (f,) = g.for_loop(n, [x], lambda i, a: [a[0] * 2.0], name="counted")
    with pytest.raises(mg.NotDifferentiableError, match=r"for_loop op 'counted'.*constants"):
        g.gradients(f, [x])


# ----------------------------------------------------------------------------- call
def test_call_runs_the_callable_of_the_descriptor(backend):
    if backend == "webgpu" and not mg.get_backend("webgpu").available()[0]:
        pytest.skip("no webgpu")
    f = mg.Graph()
    u = f.placeholder([2, 3], name="u")
    callee = f.compile({u: mg.ShapedType([2, 3], mg.float32)}, [f.tanh(u) * 2.0, f.reduction_sum(u, axes=[1])],
                       backend=backend)
    g = mg.Graph()
    x = g.placeholder([2, 3], name="x")
    y, s = g.call("helper", [x + 1.0], [mg.ShapedType([2, 3], mg.float32), ([2, 1], mg.float32)], name="c")
    out = g.negative(y)
    xv = np.arange(6, dtype=F32).reshape(2, 3) / 10
    desc = mg.CompilationDescriptor(callables={"helper": callee})
    got = g.run({x: xv}, [out, s], backend=backend, compilation_descriptor=desc)
    np.testing.assert_allclose(got[out], -np.tanh(xv + 1) * 2, rtol=1e-5)
    np.testing.assert_allclose(got[s], (xv + 1).sum(1, keepdims=True), rtol=1e-5)
    other = f.compile({u: mg.ShapedType([2, 3], mg.float32)}, [f.square(u), f.reduction_sum(u, axes=[1])])
    again = g.run({x: xv}, [out], backend=backend,
                  compilation_descriptor=mg.CompilationDescriptor(callables={"helper": other}))
    np.testing.assert_allclose(again[out], -np.square(xv + 1), rtol=1e-5)  # callables are part of the cache key


def test_a_missing_or_mistyped_callable_fails_at_compile_time_naming_the_symbol():
    f = mg.Graph()
    u = f.placeholder([3], name="u")
    callee = f.compile({u: mg.ShapedType([3], mg.float32)}, [f.exponent(u)])
    g = mg.Graph()
    x = g.placeholder([3], name="x")
    (y,) = g.call("expo", [x], [mg.ShapedType([3], mg.float32)], name="c")
    (z,) = g.call("expo", [x], [mg.ShapedType([4], mg.float32)], name="bad")
    with pytest.raises(mg.PlanError, match=r"call op 'c'.*no executable for symbol 'expo'"):
        g.compile({x: mg.ShapedType([3], mg.float32)}, [y])
    desc = mg.CompilationDescriptor(callables={"expo": callee})
    with pytest.raises(mg.PlanError, match=r"call op 'bad'.*symbol 'expo' returns.*float32\[4\]"):
        g.compile({x: mg.ShapedType([3], mg.float32)}, [z], compilation_descriptor=desc)
    (w,) = g.call("expo", [g.cast(x, mg.int32)], [mg.ShapedType([3], mg.float32)], name="ints")
    with pytest.raises(mg.PlanError, match=r"symbol 'expo' takes.*but the op passes"):
        g.compile({x: mg.ShapedType([3], mg.float32)}, [w], compilation_descriptor=desc)
    with pytest.raises(mg.DescriptorError, match="callables"):
        mg.CompilationDescriptor(callables={"expo": 3})
    np.testing.assert_allclose(g.run({x: np.ones(3, F32)}, [y], compilation_descriptor=desc)[y], np.e * np.ones(3),
                               rtol=1e-6)


# ----------------------------------------------------------------------------- webgpu: what reads back
def test_webgpu_reads_back_only_what_the_host_must_decide(webgpu):
    g = mg.Graph()
    x = g.placeholder([3], name="x")
    (a,) = g.for_loop(6, [x], lambda i, s: [s[0] * 0.5 + g.cast(i, mg.float32)], name="constant_count")
    feeds = {x: mg.ShapedType([3], mg.float32)}
    xv = np.ones(3, F32)
    exe = g.compile(feeds, [a], backend="webgpu")
    exe.run([xv])
    assert exe._runner.readbacks == 0  # a constant count: the body encoded 6 times, nothing read back
    n = g.placeholder([], mg.int32, name="n")
    (b,) = g.for_loop(n, [x], lambda i, s: [s[0] + 1.0], name="fed_count")
    exe = g.compile({**feeds, n: mg.ShapedType([], mg.int32)}, [b], backend="webgpu")
    np.testing.assert_array_equal(exe.run([xv, np.array(5, np.int32)])[0], xv + 5)
    assert exe._runner.readbacks == 1  # the count, once
    (c,) = g.while_loop([x], lambda ins, res: (res.extend(ins), g.less_than(g.squeeze(g.reduction_sum(ins[0], axes=None)),
                                                                           20.0))[1], lambda s: [s[0] * 2.0])
    exe = g.compile(feeds, [c], backend="webgpu")
    np.testing.assert_array_equal(exe.run([xv])[0], xv * 8)
    assert exe._runner.readbacks == 4  # the predicate per iteration: 3, 6, 12, 24
    p = g.placeholder([], mg.bool, name="p")
    (d,) = g.if_then_else(p, lambda: [x + 1.0], lambda: [x - 1.0])
    exe = g.compile({**feeds, p: mg.ShapedType([], mg.bool)}, [d], backend="webgpu")
    np.testing.assert_array_equal(exe.run([xv, np.array(False)])[0], xv - 1)
    assert exe._runner.readbacks == 1


# ----------------------------------------------------------------------------- tools
def _sample():
    g = mg.Graph()
    x = g.placeholder([3], name="x")
    (a,) = g.for_loop(3, [x], lambda i, s: [g.sin(s[0]) + g.cast(i, mg.float32)], name="loop")
    (b,) = g.if_then_else(g.greater_than(g.squeeze(g.reduction_sum(a, axes=None)), 0.0),
                          lambda: [a * 2.0], lambda: [x], name="branch")
    (c,) = g.while_loop([x], lambda ins, res: (res.extend(ins), g.less_than(g.squeeze(g.reduction_maximum(ins[0], axes=None)),
                                                                           5.0))[1], lambda s: [s[0] + 1.0], name="count_up")
    return g, x, [a, b, c]


def test_save_and_load_keep_the_blocks(tmp_path):
    g, x, outs = _sample()
    path = g.save(str(tmp_path / "cf"))
    h = mg.load(path)
    xv = np.array([0.5, -1.0, 2.0], F32)
    want = g.run({x: xv}, outs)
    got = h.run({h.tensor("x"): xv}, [h.tensor(t.name) for t in outs])
    for t in outs:
        np.testing.assert_array_equal(got[h.tensor(t.name)], want[t])
    loop = h.operation("loop")
    assert [b.name for b in loop.blocks] == ["body"]
    assert h.operation("loop/body/sin").block is loop.blocks[0]
    assert [b.name for b in h.operation("count_up").blocks] == ["before", "after"]
    assert h.to_swift() == g.to_swift()


def test_swift_writes_each_block_as_a_closure():
    g, x, outs = _sample()
    text = g.to_swift()
    assert "let loop_body = { (loop_index: MPSGraphTensor, loop_args: [MPSGraphTensor]) -> [MPSGraphTensor] in" in text
    assert re.search(r"graph\.for\(numberOfIterations: \w+, initialBodyArguments: \[x\], body: loop_body, "
                     r"name: \"loop\"\)", text)
    assert "graph.if(" in text and "then: branch_then, else: branch_else" in text
    assert "count_up_results.addObjects(from: [count_up_inputs[0]])" in text
    assert "graph.while(initialInputs: [x], before: count_up_before, after: count_up_after" in text
    assert "// Needs macOS 12.3 / iOS 15.4 or later (cast, for, if, squeeze, while)." in text  # for/if/while: 12.0
    g2 = mg.Graph()
    x2 = g2.placeholder([3], name="x")
    (r,) = g2.call("f", [x2], [mg.ShapedType([3], mg.float32)], name="c")
    assert ('graph.call(symbolName: "f", inputTensors: [x], outputTypes: [MPSGraphShapedType(shape: [3], '
            'dataType: .float32)], name: "c")') in g2.to_swift(target_tensors=[r])


def test_listings_show_the_blocks():
    g, x, outs = _sample()
    listing = g.describe()
    assert "loop/body/arg1" in listing and "loop/body/sin" in listing and "count_up/before/" in listing
    exe = g.compile({x: mg.ShapedType([3], mg.float32)}, outs)
    text = exe.describe()
    assert "step 2 runs the body block of for_loop op 'loop':" in text
    assert "runs the then block of if_then_else op 'branch'" in text
    assert "runs the before block of while_loop op 'count_up'" in text
    assert "loop/body/sin" in text
    assert "cluster" in g.to_dot() and "block_argument" in g.to_dot()


def test_profiling_a_plan_with_control_flow(webgpu):
    g = mg.Graph()
    x = g.placeholder([3], name="x")
    (y,) = g.for_loop(2, [x], lambda i, a: [a[0] + 1.0])
    feeds = {x: np.zeros(3, F32)}
    prof = g.compile({x: mg.ShapedType([3], mg.float32)}, [y]).profile(feeds, repeats=1)
    assert any(r.type == "for_loop" for r in prof.records)
    exe = g.compile({x: mg.ShapedType([3], mg.float32)}, [y], backend="webgpu")
    with pytest.raises(mg.BackendUnavailableError, match="no fixed dispatches"):
        exe.profile(feeds, repeats=1)


def test_a_graph_saves_after_a_control_flow_op_failed_to_build(tmp_path):
    g = mg.Graph()
    x = g.placeholder([3], name="x")
    with pytest.raises(mg.ShapeError):
        g.for_loop(2, [x], lambda i, a: [g.reduction_sum(g.sin(a[0]), axes=None)], name="bad")
    (y,) = g.for_loop(2, [x], lambda i, a: [g.sin(a[0])], name="good")
    with g.name_scope("outer"):
        (z,) = g.if_then_else(g.constant(True), lambda: [y], lambda: [x], name="pick")
    assert g.operation("outer/pick").name == "outer/pick" and g.operation("good").name == "good"
    h = mg.load(g.save(str(tmp_path / "g")))
    assert "bad/body/sin" not in [o.name for o in h.operations]
    xv = np.array([0.1, 0.2, 0.3], F32)
    np.testing.assert_allclose(h.run({h.tensor("x"): xv}, [h.tensor("outer/pick")])[h.tensor("outer/pick")],
                               np.sin(np.sin(xv)), rtol=1e-6)


def test_random_ops_inside_a_block_draw_per_run():
    g = mg.Graph()
    g.random_seed = 7
    (y,) = g.for_loop(2, [g.constant(np.zeros(4, F32))],
                      lambda i, a: [a[0] + g.random_uniform_tensor([4], seed=None)], name="noise")
    exe = g.compile({}, [y])
    first, second = exe.run()[0], exe.run()[0]
    assert first.shape == (4,) and not np.array_equal(first, second)


def _nested(g, x, w):
    def outer(i, a):
        (inner,) = g.for_loop(2, [a[0]], lambda j, b: [g.sin(b[0] * w) + g.cast(j, mg.float64) * 0.1], name="inner")
        (p,) = g.if_then_else(g.equal(g.floor_modulo(i, 2), 0), lambda: [inner * w], lambda: [g.tanh(inner)])
        return [p]
    return g.for_loop(3, [x], outer, name="outer")[0]


def _dependent_captures(g, x, w):
    """Captures computed from each other (``s`` from ``w``): each gets its partial derivative once."""
    s = g.sin(x * w)
    (a,) = g.if_then_else(g.constant(True), lambda: [s * w], lambda: [s])
    return g.for_loop(2, [a], lambda i, v: [v[0] * s + w])[0]


@pytest.mark.parametrize("build", [_nested, _dependent_captures], ids=["nested", "dependent-captures"])
def test_gradients_through_nested_blocks_and_dependent_captures(build):
    rng = np.random.default_rng(6)
    g = mg.Graph()
    x = g.placeholder([3], mg.float64, name="x")
    w = g.placeholder([3], mg.float64, name="w")
    y = build(g, x, w)
    loss = g.reduction_sum(y * y, axes=None)
    grads = g.gradients(loss, [x, w])
    feeds = {x: rng.uniform(-1, 1, 3), w: rng.uniform(-1, 1, 3)}
    got = g.run(feeds, [grads[x], grads[w]])
    for t, fd in zip((x, w), _fd(g, loss, feeds, [x, w])):
        np.testing.assert_allclose(got[grads[t]], fd, rtol=1e-6, atol=1e-8, err_msg=t.name)


def test_webgpu_knows_a_captured_constant_count(webgpu):
    g = mg.Graph()
    x = g.placeholder([3], name="x")
    n = g.constant(3, dtype=mg.int32, name="n")  # built outside, read inside the outer body
    (y,) = g.for_loop(2, [x], lambda i, a: [g.for_loop(n, [a[0]], lambda j, b: [b[0] + 1.0])[0] * 2.0])
    exe = g.compile({x: mg.ShapedType([3], mg.float32)}, [y], backend="webgpu")
    np.testing.assert_array_equal(exe.run([np.zeros(3, F32)])[0], np.full(3, 18.0))
    assert exe._runner.readbacks == 0


def test_call_of_an_executable_with_a_dynamic_batch():
    f = mg.Graph()
    u = f.placeholder([-1, 2], name="u")
    callee = f.compile({u: mg.ShapedType([-1, 2], mg.float32)}, [f.square(u)])
    g = mg.Graph()
    x = g.placeholder([3, 2], name="x")
    (y,) = g.call("sq", [x], [mg.ShapedType([3, 2], mg.float32)])
    xv = np.arange(6, dtype=F32).reshape(3, 2)
    got = g.run({x: xv}, [y], compilation_descriptor=mg.CompilationDescriptor(callables={"sq": callee}))
    np.testing.assert_array_equal(got[y], xv * xv)


@pytest.mark.parametrize("edit,match", [
    (lambda ops: ops[3].update(block=5), "block must be"),
    (lambda ops: ops[-1]["blocks"][0].update(results=[["nowhere", 0]]), "not earlier ops of the block"),
    (lambda ops: ops[-1]["blocks"][0].update(arguments=["x"]), "block_argument ops built in it"),
], ids=["bad-block-key", "dangling-result", "argument-not-in-block"])
def test_a_file_with_broken_blocks_is_refused(tmp_path, edit, match):
    import json

    g = mg.Graph()
    x = g.placeholder([3], name="x")
    g.for_loop(2, [x], lambda i, a: [g.sin(a[0])], name="loop")
    path = g.save(str(tmp_path / "g"))
    doc = json.loads(open(path).read())
    assert [o["name"] for o in doc["ops"]][:4] == ["x", "constant", "loop/body/arg0", "loop/body/arg1"]
    edit(doc["ops"])
    with open(path, "w") as f:
        json.dump(doc, f)
    with pytest.raises(mg.SerializationError, match=match):
        mg.load(path)
