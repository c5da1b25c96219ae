"""mg.compare_backends: per-tensor errors in topological order and the first tensor over tolerance.

A deliberately broken backend (a tiny NumPy evaluator written here, registered through
``mg.register_backend``) makes the "first failure" tests independent of which real backends
exist; the real webgpu backend is compared with numpy when it is available.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

import minigraph as mg
from minigraph import backends as _registry

_FNS = {"addition": np.add, "subtraction": np.subtract, "multiplication": np.multiply,
        "tanh": np.tanh, "square": np.square, "negative": np.negative, "sin": np.sin,
        "matrix_multiplication": np.matmul, "division": np.divide, "logarithm": np.log}


class FakeBackend:
    """Evaluates a plan with plain NumPy, then lets ``tamper(op, value)`` change each result."""

    def __init__(self, name, tamper=None):
        self.name = name
        self.tamper = tamper or (lambda op, v: v)

    def available(self):
        return True, "test double"

    def prepare(self, plan):
        special = ("placeholder", "constant", "variable", "read", "assign", "reduction_sum")
        missing = sorted({s.op.type for s in plan.steps if s.op.type not in _FNS and s.op.type not in special})
        if missing:
            raise mg.KernelMissingError(f"{self.name} backend has no kernel for {missing}")

        def runner(feed_values, variables):
            env = {slot: v for (_, slot, _), v in zip(plan.feeds, feed_values)}
            assigned = {}
            for st in plan.steps:
                op = st.op
                ins = [env[s] for s in st.inputs]
                if op.type == "placeholder":
                    continue
                if op.type == "assign":
                    assigned[op.inputs[0].operation] = ins[1]
                    continue
                if op.type == "constant":
                    out = op.attrs["value"]
                elif op.type == "variable":
                    out = variables[op]
                elif op.type == "read":
                    out = assigned.get(op.inputs[0].operation, ins[0])
                elif op.type == "reduction_sum":
                    axes = op.attrs["axes"]
                    axes = tuple(range(ins[0].ndim)) if axes is None else tuple(np.atleast_1d(axes))
                    out = np.sum(ins[0], axis=axes, keepdims=True)
                else:
                    with np.errstate(all="ignore"):
                        out = _FNS[op.type](*ins)
                out = np.asarray(out, dtype=st.out_types[0].dtype.np_dtype)
                env[st.outputs[0]] = self.tamper(op, out)
            return [env[s] for _, s in plan.targets], assigned

        return runner


@pytest.fixture
def fake():
    """Register fake backends by name for one test, and remove them afterwards."""
    names = []

    def make(name, tamper=None):
        mg.register_backend(name, lambda: FakeBackend(name, tamper))
        names.append(name)
        return name

    yield make
    for n in names:
        _registry._FACTORIES.pop(n, None)
        _registry._INSTANCES.pop(n, None)


def build(rng):
    g = mg.Graph()
    x = g.placeholder([4, 5], name="x")
    w = g.constant(rng.uniform(-1, 1, (5, 3)).astype(np.float32), name="w")
    with g.name_scope("layer"):
        h = g.matrix_multiplication(x, w, name="mm")
        a = g.tanh(h, name="act")
        s = g.square(a, name="sq")
    loss = g.reduction_sum(s, name="loss")
    feeds = {x: rng.uniform(-2, 2, (4, 5)).astype(np.float32)}
    return g, feeds, loss


def test_identical_backends_agree_exactly(fake, rng):
    g, feeds, loss = build(rng)
    exact = fake("exact_copy")
    r = mg.compare_backends(g, feeds, [loss], backends=("numpy", exact))
    assert r.ok and r.first_failure is None
    assert [d.tensor for d in r.diffs] == ["x", "w", "layer/mm", "layer/act", "layer/sq", "loss"]
    for d in r.diffs:
        assert d.backend == exact and d.ok
        assert d.max_abs <= 1e-6  # NumPy vs NumPy: same ufuncs; only summation order may differ
    assert "all tensors agree within tolerance" in str(r)
    np.testing.assert_allclose(r.results[exact]["layer/act"], np.tanh(feeds[g.tensor("x")] @ g.operation("w").attrs["value"]),
                               rtol=1e-6)


def test_first_tensor_over_tolerance_is_named(fake, rng):
    g, feeds, loss = build(rng)
    bad = fake("broken_tanh", lambda op, v: v + np.float32(1e-3) if op.type == "tanh" else v)
    r = mg.compare_backends(g, feeds, [loss], backends=("numpy", bad))
    assert not r.ok
    f = r.first_failure
    assert (f.tensor, f.op_type, f.backend) == ("layer/act", "tanh", bad)
    assert abs(f.max_abs - 1e-3) < 1e-6
    ref = np.abs(r.results["numpy"]["layer/act"])
    assert f.max_rel == pytest.approx(np.max(1e-3 / ref[ref != 0]), rel=1e-3)
    # everything before it agrees; everything after inherits the error
    by = {d.tensor: d for d in r.diffs}
    assert by["x"].ok and by["w"].ok and by["layer/mm"].ok
    assert not by["layer/sq"].ok and not by["loss"].ok
    text = str(r)
    assert "first over tolerance: 'layer/act' (tanh) on broken_tanh" in text
    assert "3 over tolerance" in text.splitlines()[0]
    row = next(ln for ln in text.splitlines() if " layer/act " in ln)
    assert "FAIL" in row and "1.00e-03" in row


def test_rtol_and_atol_decide(fake, rng):
    g, feeds, loss = build(rng)
    scaled = fake("scaled", lambda op, v: (v * np.float32(1 + 1e-4)).astype(v.dtype) if op.type == "matrix_multiplication" else v)
    strict = mg.compare_backends(g, feeds, [loss], backends=("numpy", scaled), rtol=1e-5, atol=0)
    assert strict.first_failure.tensor == "layer/mm"
    loose = mg.compare_backends(g, feeds, [loss], backends=("numpy", scaled), rtol=1e-3, atol=0)
    assert loose.ok
    by_atol = mg.compare_backends(g, feeds, [loss], backends=("numpy", scaled), rtol=0, atol=1.0)
    assert by_atol.ok


def test_nan_shape_and_dtype_mismatches(fake, rng):
    g, feeds, loss = build(rng)

    def nan_once(op, v):
        if op.type == "square":
            v = v.copy()
            v[0, 0] = np.nan
        return v

    r = mg.compare_backends(g, feeds, [loss], backends=("numpy", fake("nan_sq", nan_once)))
    f = r.first_failure
    assert f.tensor == "layer/sq" and "NaN in 1 places on one side only" in f.note
    # a backend that returns another shape or dtype than the plan computes is stopped by the
    # executor, which names the backend and the tensor (nothing reaches the comparison)
    with pytest.raises(mg.ExecutionError, match=r"backend 'wrong_shape' returned for target 'layer/act'.*float32\[3, 4\]"):
        mg.compare_backends(g, feeds, [loss], backends=("numpy", fake("wrong_shape",
                            lambda op, v: v.T if op.type == "tanh" else v)))
    with pytest.raises(mg.ExecutionError, match=r"backend 'wrong_dtype' returned for target 'layer/act'.*float64"):
        mg.compare_backends(g, feeds, [loss], backends=("numpy", fake("wrong_dtype",
                            lambda op, v: v.astype(np.float64) if op.type == "tanh" else v)))
    # NaN on both sides at the same places agrees
    g2 = mg.Graph()
    x = g2.placeholder([3], name="x")
    y = g2.logarithm(x, name="log")
    r = mg.compare_backends(g2, {x: np.array([-1, 1, 2], np.float32)}, [y], backends=("numpy", fake("same")))
    assert r.ok and r.diff("log").max_abs == 0


def test_three_backends_and_variables_left_alone(fake, rng):
    g = mg.Graph()
    v = g.variable(np.array([1.0, 2.0], np.float32), name="v")
    upd = g.assign(v, g.multiplication(g.read(v), 3.0), name="triple")
    with g.control_dependencies([upd]):
        after = g.read(v, name="after")
    y = g.tanh(after, name="y")
    bad = fake("bad_sin", lambda op, v: v)
    off = fake("off_tanh", lambda op, v: v - np.float32(0.5) if op.type == "tanh" else v)
    r = mg.compare_backends(g, {}, [y], backends=("numpy", bad, off))
    assert r.first_failure.tensor == "y" and r.first_failure.backend == off
    assert r.diff("y", bad).ok and not r.diff("y", off).ok
    np.testing.assert_allclose(r.results["numpy"]["y"], np.tanh([3.0, 6.0]), rtol=1e-6)
    np.testing.assert_array_equal(g.value_of(v), [1.0, 2.0])  # the assign ran three times, committed never


def test_argument_errors(fake, rng):
    g, feeds, loss = build(rng)
    with pytest.raises(mg.TargetError, match="two distinct backends"):
        mg.compare_backends(g, feeds, [loss], backends=("numpy",))
    with pytest.raises(mg.TargetError, match="two distinct backends"):
        mg.compare_backends(g, feeds, [loss], backends=("numpy", "numpy"))
    with pytest.raises(mg.TargetError, match="needs target tensors"):
        mg.compare_backends(g, feeds, [], backends=("numpy", fake("a")))
    with pytest.raises(mg.BackendUnavailableError, match="no_such_backend"):
        mg.compare_backends(g, feeds, [loss], backends=("numpy", "no_such_backend"))
    g2 = mg.Graph()
    x = g2.placeholder([2, 2], name="x")
    y = g2.reduction_maximum(x)
    with pytest.raises(mg.KernelMissingError, match="reduction_maximum"):
        mg.compare_backends(g2, {x: np.ones((2, 2), np.float32)}, [y], backends=("numpy", fake("b")))


def _compare_graph():
    g = mg.Graph()
    x = g.placeholder(shape=(2, 3, 6, 6), dtype=mg.float32, name="x")
    w = g.constant(np.random.default_rng(3).standard_normal((1, 3, 3, 3)).astype(np.float32), name="w")
    y = g.depthwise_convolution_2d(x, w, mg.DepthwiseConvolution2DOpDescriptor(
        padding_style=mg.PaddingStyle.TF_SAME), name="dw")
    r = g.relu(y, name="act")
    out = g.reduction_sum(g.exponent(r, name="ex"), axes=None, name="out")
    return g, x, out


class _BuggyExp:
    """numpy semantics for what the compare graph needs, with a wrong exponent."""

    name = "buggy_exp"

    def __init__(self):
        self._np = mg.get_backend("numpy")

    def available(self):
        return True, ""

    def prepare(self, plan):
        inner = self._np.prepare(plan)
        ex_slots = [st.outputs[0] for st in plan.steps if st.op.type == "exponent"]
        tgt = [s for _, s in plan.targets]

        def runner(feeds, variables):
            res, assigned = inner(feeds, variables)
            res = [np.asarray(r) * (1.5 if s in ex_slots else 1.0) for r, s in zip(res, tgt)]
            return res, assigned

        return runner


def test_compare_backends_names_the_first_node_over_tolerance(rng):
    mg.register_backend("buggy_exp", _BuggyExp)
    g, x, out = _compare_graph()
    feeds = {x: rng.standard_normal((2, 3, 6, 6)).astype(np.float32)}
    rep = mg.compare_backends(g, feeds, [out], ("numpy", "buggy_exp"))
    first = rep.first_failure
    assert first is not None
    assert first.tensor == "ex"
    assert first.name == "ex" and first != "ex"  # a TensorDiff never equals a string; compare .tensor
    assert first.max_abs > 0 and first.max_rel == pytest.approx(0.5, rel=1e-6)
    with pytest.warns(DeprecationWarning, match="use max_abs"):
        assert first.max_abs_error == first.max_abs
    ok = [d for d in rep.diffs if d.tensor in ("dw", "act")]
    assert ok and all(d.ok and d.max_abs == 0 for d in ok)
    assert "ex" in str(rep)
    assert [d.tensor for d in rep] == [d.tensor for d in rep.diffs]


def test_webgpu_agrees_with_numpy(webgpu, rng):
    g = mg.Graph()
    x = g.placeholder([8, 16], name="x")
    w = g.constant(rng.uniform(-0.5, 0.5, (16, 4)).astype(np.float32), name="w")
    with g.name_scope("net"):
        h = g.tanh(g.matrix_multiplication(x, w))
        p = g.softmax(g.addition(h, 0.5), axis=-1)
    loss = g.mean(g.square(p), name="loss")
    r = mg.compare_backends(g, {x: rng.uniform(-2, 2, (8, 16)).astype(np.float32)}, [loss],
                            backends=("numpy", webgpu), rtol=1e-4, atol=1e-5)
    assert r.ok, str(r)
    assert len(r.diffs) == len([op for op in g.operations])
    # a depthwise graph: every node is reported, in topological order
    g, x, out = _compare_graph()
    feeds = {x: rng.standard_normal((2, 3, 6, 6)).astype(np.float32)}
    rep = mg.compare_backends(g, feeds, [out], backends=("numpy", webgpu))
    names = [d.tensor for d in rep.diffs]
    for n in ("x", "w", "dw", "act", "ex", "out"):
        assert n in names
    assert names.index("dw") < names.index("act") < names.index("ex") < names.index("out")
    for d in rep.diffs:
        assert d.max_abs >= 0 and d.max_rel >= 0
    assert rep.first_failure is None
    assert "dw" in str(rep)


# ---------------------------------------------------------------------------------------------- default tolerances
def test_reduction_length_of_each_kind_of_op():
    from minigraph.compare import reduction_length

    g = mg.Graph()
    x = g.placeholder([8, 64, 7, 7], name="x")
    e = g.tanh(x)
    s = g.reduction_sum(x, axes=[1, 2, 3])
    mm = g.matrix_multiplication(g.placeholder([5, 300]), g.placeholder([300, 2]))
    pw = g.convolution_2d(x, g.placeholder([32, 64, 1, 1]), descriptor=mg.Convolution2DOpDescriptor())
    assert reduction_length(e.operation) == 1
    assert reduction_length(s.operation) == 64 * 49
    assert reduction_length(mm.operation) == 300
    assert reduction_length(pw.operation) >= 64  # an upper estimate: never below the true 64
    assert reduction_length(x.operation) == 1


def test_default_tolerance_scales_with_the_reduction_and_dtype():
    from minigraph.compare import default_tolerance

    g = mg.Graph()
    a, b = g.placeholder([4, 10000]), g.placeholder([10000, 4])
    mm = g.matrix_multiplication(a, b)
    ew = g.tanh(a)
    ref = np.full((4, 4), 2.0, np.float32)
    rtol_mm, atol_mm = default_tolerance(mm.operation, mm.dtype, ref)
    rtol_ew, atol_ew = default_tolerance(ew.operation, ew.dtype, ref)
    assert rtol_ew == 1e-5 and rtol_mm == pytest.approx(8 * 2.0 ** -24 * 100)
    assert atol_mm == pytest.approx(2 * rtol_mm)  # rtol times the tensor's scale
    h = g.placeholder([4], mg.float16)
    assert default_tolerance(g.tanh(h).operation, mg.float16, np.ones(4, np.float16))[0] == 8 * 2.0 ** -11
    i = g.placeholder([4], mg.int32)
    assert default_tolerance(g.absolute(i).operation, mg.int32, np.ones(4, np.int32)) == (0.0, 0.0)


def test_summation_order_passes_by_default_and_a_real_error_fails(fake):
    """Two backends that sum a long matmul in two orders (float32) pass the defaults, which the
    old fixed rtol=1e-5, atol=1e-6 failed; a wrong value of 1e-3 relative fails; the report says
    how much of its tolerance each tensor used.

    Both orders are carried out here, one float32 addition at a time, not left to BLAS, on terms
    whose sum rounds by construction: 1 followed by 1000 terms of 2**-25 (a quarter ulp of 1).
    Forward, each small term is rounded away (1 + 2**-25 is 1); reversed, they add up exactly
    first, so the two sums differ by 1000 * 2**-25 = 2.98e-5, three times the old tolerance and
    half the default one (8 ulps * sqrt(4096) relative, on the tensor's scale)."""
    def summed_in_order(reverse):
        def tamper(op, v):
            if op.type != "matrix_multiplication":
                return v
            terms = np.asarray(feeds[x])[:, :, None] * w_value[None, :, :]   # [16, K, 8], exact
            out = np.zeros((16, 8), np.float32)
            for k in (range(terms.shape[1] - 1, -1, -1) if reverse else range(terms.shape[1])):
                out = out + terms[:, k]
            return out
        return tamper

    g = mg.Graph()
    x = g.placeholder([16, 4096], name="x")
    w_value = np.ones((4096, 8), np.float32)
    y = g.matrix_multiplication(x, g.constant(w_value, name="w"), name="mm")
    out = g.tanh(y, name="act")
    x_value = np.zeros((16, 4096), np.float32)
    x_value[:, 0], x_value[:, 1:1001] = 1.0, 2.0 ** -25
    feeds = {x: x_value}
    first, other = fake("forward", summed_in_order(False)), fake("reversed", summed_in_order(True))
    old = mg.compare_backends(g, feeds, [out], backends=(first, other), rtol=1e-5, atol=1e-6)
    rep = mg.compare_backends(g, feeds, [out], backends=(first, other))
    d = rep.diff("mm", other)
    assert d.max_abs == pytest.approx(1000 * 2.0 ** -25, rel=1e-2) and d.reduction_length == 4096
    assert not old.ok and old.first_failure.tensor == "mm"  # the false alarm of the fixed default
    assert rep.ok, str(rep)
    assert 0 < d.tolerance_used < 1 and d.rtol == pytest.approx(8 * 2.0 ** -24 * 64)
    text = str(rep)
    assert "tol used" in text and "default tolerances" in text and "closest: " in text
    broken = fake("broken_mm", lambda op, v: (v * np.float32(1.001)).astype(v.dtype)
                  if op.type == "matrix_multiplication" else v)
    bad = mg.compare_backends(g, feeds, [out], backends=("numpy", broken))
    assert bad.first_failure.tensor == "mm" and bad.first_failure.tolerance_used > 1
    assert re.search(r"mm .* FAIL", str(bad))


def test_pointwise_convolution_on_webgpu_within_default_tolerance(webgpu, rng):
    g = mg.Graph()
    x = g.placeholder([4, 256, 14, 14], name="x")
    w = g.constant((rng.standard_normal((256, 256, 1, 1)) / 16).astype(np.float32), name="w")
    y = g.convolution_2d(x, w, descriptor=mg.Convolution2DOpDescriptor(), name="pointwise")
    rep = mg.compare_backends(g, {x: rng.standard_normal((4, 256, 14, 14)).astype(np.float32)}, [y],
                              backends=("numpy", webgpu))
    assert rep.ok, str(rep)
    assert rep.diff("pointwise").tolerance_used < 0.5
