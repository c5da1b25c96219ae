"""MPSGraph's explicit gradient ops relu_gradient, sigmoid_gradient, softmax_gradient and
softmax_cross_entropy_gradient on both backends: against the formulas in float64, PyTorch's
autograd and finite differences; autodiff inserts them and gives the bits the elementwise formulas
gave before (float32).
"""
from __future__ import annotations


import numpy as np
import pytest

import minigraph as mg

from gradcheck import central_differences

F32 = np.float32


def _run(g, feeds, outs, backend):
    res = g.run(feeds, outs, backend=backend)
    return [res[t] for t in outs]


def _softmax64(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def test_relu_and_sigmoid_gradients_match_the_formulas(backend, rng):
    x = rng.uniform(-6, 6, (4, 7)).astype(F32)
    x[0, :5] = [0.0, -0.0, np.nan, np.inf, -np.inf]
    dy = rng.standard_normal((4, 7)).astype(F32)
    g = mg.Graph()
    p, q, r = g.placeholder(x.shape), g.placeholder(x.shape), g.placeholder([7])
    got = _run(g, {p: x, q: dy, r: dy[1]}, [g.relu_gradient(q, p), g.sigmoid_gradient(q, p), g.relu_gradient(r, p)],
               backend)
    np.testing.assert_array_equal(got[0], np.where(x > 0, dy, 0))
    np.testing.assert_array_equal(got[2], np.where(x > 0, dy[1], 0))  # the incoming gradient broadcasts
    s = 1 / (1 + np.exp(-x.astype(np.float64)))
    np.testing.assert_allclose(got[1], dy * s * (1 - s), rtol=1e-5, atol=1e-7)
    assert np.isnan(got[1][0, 2]) and got[1][0, 3] == 0 and got[1][0, 4] == 0


@pytest.mark.parametrize("shape,axis", [((3, 5), 1), ((4, 3, 6), 0), ((2, 300), -1)])
def test_softmax_gradient_matches_the_formula(backend, rng, shape, axis):
    x = rng.uniform(-5, 5, shape).astype(F32)
    dy = rng.standard_normal(shape).astype(F32)
    g = mg.Graph()
    p, q = g.placeholder(list(shape)), g.placeholder(list(shape))
    (got,) = _run(g, {p: x, q: dy}, [g.softmax_gradient(q, p, axis)], backend)
    y = _softmax64(x.astype(np.float64), axis)
    want = y * (dy - (dy * y).sum(axis=axis, keepdims=True))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
def test_softmax_cross_entropy_gradient_matches_torch(backend, rng, reduction):
    torch = pytest.importorskip("torch", reason="needs torch, in the oracles extra: pip install -e '.[oracles]'")
    x = rng.uniform(-4, 4, (5, 6))
    lab = rng.uniform(0.1, 1, (5, 6))  # not normalized: the sum of the labels enters the gradient
    dy = rng.uniform(0.5, 2, (5, 1) if reduction == "none" else (1, 1))
    g = mg.Graph()
    p, q, d = g.placeholder([5, 6]), g.placeholder([5, 6]), g.placeholder(list(dy.shape))
    (got,) = _run(g, {p: x.astype(F32), q: lab.astype(F32), d: dy.astype(F32)},
                  [g.softmax_cross_entropy_gradient(d, p, q, 1, reduction)], backend)
    t = torch.tensor(x, requires_grad=True)
    rows = -(torch.tensor(lab) * torch.log_softmax(t, 1)).sum(1, keepdim=True)
    loss = {"none": rows, "sum": rows.sum().reshape(1, 1), "mean": rows.mean().reshape(1, 1)}[reduction]
    loss.backward(torch.tensor(dy))
    np.testing.assert_allclose(got, t.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_gradients_of_the_forward_ops_match_torch(backend, rng):
    torch = pytest.importorskip("torch", reason="needs torch, in the oracles extra: pip install -e '.[oracles]'")
    x = rng.uniform(-3, 3, (4, 5))
    lab = rng.uniform(0, 1, (4, 5))
    g = mg.Graph()
    p, q = g.placeholder([4, 5]), g.placeholder([4, 5])
    h = g.multiplication(g.relu(p), g.sigmoid(p))
    loss = g.addition(g.reduction_sum(g.multiplication(g.softmax(h, axis=0), g.constant(lab.astype(F32)))),
                      g.softmax_cross_entropy(h, q, axis=1, reduction="mean"))
    dx = g.gradients(loss, [p])[p]
    types = {o.type for o in g.operations}
    assert {"relu_gradient", "sigmoid_gradient", "softmax_gradient", "softmax_cross_entropy_gradient"} <= types
    assert not {"greater_than", "select"} & types
    (got,) = _run(g, {p: x.astype(F32), q: lab.astype(F32)}, [dx], backend)
    t = torch.tensor(x, requires_grad=True)
    ht = torch.relu(t) * torch.sigmoid(t)
    tl = torch.tensor(lab)
    lt = (torch.softmax(ht, 0) * tl).sum() + (-(tl * torch.log_softmax(ht, 1)).sum(1)).mean()
    lt.backward()
    np.testing.assert_allclose(got, t.grad.numpy(), rtol=1e-5, atol=1e-6)


def _old_rules(g, op_type, x, dy, lab=None, axis=1, red="mean"):
    """The elementwise formulas autodiff built before it inserted the gradient ops."""
    if op_type == "relu":
        y = g.relu(x)
        zero = g.constant(0, dtype=y.dtype)
        return g.select(g.greater_than(y, zero), dy, zero)
    if op_type == "sigmoid":
        y = g.sigmoid(x)
        return g.multiplication(dy, g.multiplication(y, g.subtraction(1.0, y)))
    if op_type == "softmax":
        y = g.softmax(x, axis=axis)
        return g.multiplication(y, g.subtraction(dy, g.reduction_sum(g.multiplication(dy, y), axes=[axis])))
    scale = g.division(dy, float(x.shape[0])) if red == "mean" else dy
    p = g.softmax(x, axis=axis)
    return g.multiplication(g.subtraction(g.multiplication(p, g.reduction_sum(lab, axes=[axis])), lab), scale)


@pytest.mark.parametrize("op_type", ["relu", "sigmoid", "softmax", "softmax_cross_entropy"])
def test_autodiff_results_have_the_former_formulas_bits(backend, rng, op_type):
    x = rng.uniform(-6, 6, (6, 40)).astype(F32)
    x[0, :3] = [0.0, -0.0, np.nan]
    dy = rng.standard_normal((6, 40)).astype(F32)
    lab = rng.uniform(0, 1, (6, 40)).astype(F32)
    for red in (("none", "sum", "mean") if op_type == "softmax_cross_entropy" else ("-",)):
        g = mg.Graph()
        p, q, lb = g.placeholder([6, 40]), g.placeholder([6, 40]), g.placeholder([6, 40])
        if op_type == "softmax_cross_entropy":
            d = g.placeholder([6, 1] if red == "none" else [1, 1])
            dv = dy[:, :1] if red == "none" else dy[:1, :1]
            new = g.softmax_cross_entropy_gradient(d, p, lb, 1, red)
            old = _old_rules(g, op_type, p, d, lb, 1, red)
            feeds = {p: x, lb: lab, d: dv}
        else:
            fwd = {"relu": g.relu, "sigmoid": g.sigmoid, "softmax": lambda t: g.softmax(t, axis=1)}[op_type](p)
            new = g.gradients(g.reduction_sum(g.multiplication(fwd, q)), [p])[p]
            old = _old_rules(g, op_type, p, q)
            feeds = {p: x, q: dy}
        a, b = _run(g, feeds, [new, old], backend)
        np.testing.assert_array_equal(a, b, err_msg=f"{op_type} {red}")


@pytest.mark.parametrize("op", ["relu_gradient", "sigmoid_gradient", "softmax_gradient",
                                "softmax_cross_entropy_gradient"])
def test_second_order_gradients_match_finite_differences(rng, op):
    x = rng.uniform(-2, 2, (3, 4))
    x[np.abs(x) < 0.1] = 0.5  # away from relu's kink
    dy = rng.uniform(-1, 1, (3, 4))
    lab = rng.uniform(0.1, 1, (3, 4))
    g = mg.Graph()
    p, q, lb = (g.placeholder([3, 4], mg.float64) for _ in range(3))
    if op == "softmax_cross_entropy_gradient":
        out = g.addition(g.softmax_cross_entropy_gradient(g.reduction_sum(q, axes=None), p, lb, 1, "sum"),
                         g.softmax_cross_entropy_gradient(g.reduction_sum(q, axes=[1]), p, lb, 1, "none"))
    elif op == "softmax_gradient":
        out = g.softmax_gradient(q, p, 1)
    else:
        out = getattr(g, op)(q, p)
    r = rng.uniform(0.5, 1.5, (3, 4))
    loss = g.reduction_sum(g.multiplication(out, g.constant(r)))
    feeds = {p: x, q: dy, lb: lab}
    wrt = [p, q, lb] if op == "softmax_cross_entropy_gradient" else [p, q]
    grads = g.gradients(loss, wrt)
    got = g.run(feeds, [grads[t] for t in wrt])
    fds = central_differences(g, loss, feeds, wrt)
    for t, fd in zip(wrt, fds):
        np.testing.assert_allclose(got[grads[t]], fd, rtol=1e-6, atol=1e-7, err_msg=f"{op} d/{t.name}")


def test_errors_name_the_op_and_the_shapes():
    g = mg.Graph()
    p = g.placeholder([3, 4])
    with pytest.raises(mg.ShapeError, match=r"relu_gradient.*\(2, 4\).*\(3, 4\)"):
        g.relu_gradient(g.placeholder([2, 4]), p)
    with pytest.raises(mg.DTypeError, match="sigmoid_gradient"):
        g.sigmoid_gradient(g.placeholder([3, 4], mg.int32), g.placeholder([3, 4], mg.int32))
    with pytest.raises(mg.ShapeError, match=r"softmax_gradient.*\(3, 1\).*\(3, 4\)"):
        g.softmax_gradient(g.placeholder([3, 1]), p, 1)
    with pytest.raises(mg.ShapeError, match=r"softmax_cross_entropy_gradient.*\(3, 1\).*'mean'.*\(1, 1\)"):
        g.softmax_cross_entropy_gradient(g.placeholder([3, 1]), p, p, 1, "mean")
    with pytest.raises(mg.ShapeError, match="softmax_cross_entropy_gradient.*reduction"):
        g.softmax_cross_entropy_gradient(g.placeholder([1, 1]), p, p, 1, "max")


def test_swift_export_uses_apples_gradient_names():
    g = mg.Graph()
    p, q = g.placeholder([2, 3], name="p"), g.placeholder([2, 3], name="q")
    one = g.constant(np.ones((1, 1), F32))
    src = g.to_swift(target_tensors=[g.relu_gradient(q, p), g.sigmoid_gradient(q, p), g.softmax_gradient(q, p, 1),
                                     g.softmax_cross_entropy_gradient(one, p, q, 1, "mean")])
    for want in ("reLUGradient(withIncomingGradient:", "sigmoidGradient(withIncomingGradient:",
                 "softMaxGradient(withIncomingGradient:", "softMaxCrossEntropyGradient(", "reuctionType: .mean"):
        assert want in src, want


def test_empty_and_float16(backend, rng):
    g = mg.Graph()
    e = g.placeholder([3, 0])
    h = g.placeholder([2, 9], mg.float16)
    hv = rng.uniform(-3, 3, (2, 9)).astype(np.float16)
    outs = [g.softmax_gradient(e, e, 1), g.softmax_gradient(h, h, 1), g.sigmoid_gradient(h, h), g.relu_gradient(h, h)]
    got = _run(g, {e: np.zeros((3, 0), F32), h: hv}, outs, backend)
    assert got[0].shape == (3, 0)
    x = hv.astype(np.float64)
    y = _softmax64(x, 1)
    s = 1 / (1 + np.exp(-x))
    for res, want in zip(got[1:], [y * (x - (x * y).sum(1, keepdims=True)), x * s * (1 - s), np.where(x > 0, x, 0)]):
        assert res.dtype == np.float16
        np.testing.assert_allclose(res.astype(np.float64), want, rtol=1e-2, atol=2e-3)


