"""Optimizer ops: apply_stochastic_gradient_descent and apply_adam (their arguments, their updates
against a reference written here), and a training loop that compiles once."""
import numpy as np
import pytest

import minigraph as mg


def f32(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


# --------------------------------------------------------------------------------------------- SGD
@pytest.mark.parametrize("lr", [0.05, np.float32(0.05), np.float64(0.05), 1])
def test_sgd_learning_rate_forms(lr):
    g = mg.Graph()
    w = g.variable(np.array([1.0, -2.0], np.float32), name="w")
    loss = g.reduction_sum(g.square(w), axes=[0])
    grads = g.gradients(loss, [w])
    step = g.apply_stochastic_gradient_descent(lr, w, grads[w])
    g.run(feeds={}, target_tensors=[], target_operations=[step])
    np.testing.assert_allclose(g.value_of(w), np.array([1.0, -2.0]) * (1 - 2 * float(lr)), rtol=1e-6)


def test_sgd_learning_rate_keyword_and_tensor():
    g = mg.Graph()
    w = g.variable(np.array([1.0, -2.0], np.float32), name="w")
    loss = g.reduction_sum(g.square(w), axes=[0])
    gw = g.gradients(loss, [w])[w]
    lr = g.constant(0.25, dtype=mg.float32)
    step = g.apply_stochastic_gradient_descent(learning_rate=lr, variable=w, gradient=gw)
    g.run(target_operations=[step])
    np.testing.assert_allclose(g.value_of(w), [0.5, -1.0], rtol=1e-6)


def test_sgd_rejects_a_gradient_of_another_shape_or_dtype():
    g = mg.Graph()
    w = g.variable(np.ones((2, 3), np.float32), name="w")
    with pytest.raises(mg.MiniGraphError) as ei:
        g.apply_stochastic_gradient_descent(0.1, w, g.constant(np.ones(3, np.float32)))
    assert isinstance(ei.value, ValueError) and "(3,)" in str(ei.value) and "(2, 3)" in str(ei.value)
    with pytest.raises(TypeError):
        g.apply_stochastic_gradient_descent(0.1, w, g.constant(np.ones((2, 3), np.float16)))


def test_training_loop_one_executable_no_recompiles(backend, rng, monkeypatch):
    """Linear regression by SGD: one executable runs every step; g.run reuses its cached one."""
    g = mg.Graph()
    x = g.placeholder([8, 3], mg.float32, name="x")
    t = g.placeholder([8, 1], mg.float32, name="t")
    w = g.variable(np.zeros((3, 1), np.float32), name="w")
    loss = g.mean(g.square(g.matrix_multiplication(x, w) - t), axes=None)
    grads = g.gradients(loss, [w])
    step = g.apply_stochastic_gradient_descent(0.1, w, grads[w])
    exe = g.compile(feeds={x: mg.ShapedType([8, 3], mg.float32), t: mg.ShapedType([8, 1], mg.float32)},
                    target_tensors=[loss], target_operations=[step], backend=backend)
    true_w = np.array([[1.0], [-2.0], [0.5]], np.float32)
    calls = []
    orig = mg.Graph.compile

    def counting(self, *a, **k):
        calls.append(1)
        return orig(self, *a, **k)

    monkeypatch.setattr(mg.Graph, "compile", counting)
    losses = []
    for _ in range(60):
        xv = f32(rng, 8, 3)
        (lv,) = exe.run({x: xv, t: xv @ true_w})
        losses.append(float(np.asarray(lv).reshape(-1)[0]))
    for _ in range(3):  # g.run with the same types reuses its cached executable
        xv = f32(rng, 8, 3)
        g.run({x: xv, t: xv @ true_w}, [loss], [step], backend=backend)
    monkeypatch.undo()
    assert losses[-1] < 0.05 * losses[0]
    assert len(calls) <= 1
    assert exe.compile_count == 1


# -------------------------------------------------------------------------------------------- Adam
def test_adam_takes_one_argument_order_and_trains():
    """apply_adam(variable, gradient, learning_rate): the SGD order is an error naming the mistake,
    not a guess; the right order trains."""
    g = mg.Graph()
    w = g.variable(np.array([3.0, -1.0], np.float32), name="w")
    grad = g.gradients(g.reduction_sum(g.square(w), axes=None), [w])[w]
    with pytest.raises(mg.TargetError, match="apply_adam: expected a variable tensor"):
        g.apply_adam(0.1, w, grad)
    step = g.apply_adam(w, grad, learning_rate=0.1)
    assert isinstance(step, mg.Operation)
    for _ in range(50):
        g.run(target_operations=[step])
    assert np.abs(g.value_of(w)).max() < 1.0


def adam_mpsgraph(w, grad_fn, steps, lr, beta1=0.9, beta2=0.999, eps=1e-8):
    """MPSGraph's documented Adam in float64: lr_t = lr * sqrt(1 - beta2^t) / (1 - beta1^t),
    w -= lr_t * m / (sqrt(v) + eps); the value after each step."""
    w, m, v, out = np.array(w, np.float64), 0.0, 0.0, []
    for t in range(1, steps + 1):
        g = grad_fn(w)
        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g * g
        w = w - lr * np.sqrt(1 - beta2 ** t) / (1 - beta1 ** t) * m / (np.sqrt(v) + eps)
        out.append(w)
    return out


def adam_kingma_ba(w, grad_fn, steps, lr, beta1=0.9, beta2=0.999, eps=1e-8):
    """Kingma & Ba's Adam (PyTorch's placement of eps): w -= lr * m_hat / (sqrt(v_hat) + eps)."""
    w, m, v, out = np.array(w, np.float64), 0.0, 0.0, []
    for t in range(1, steps + 1):
        g = grad_fn(w)
        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g * g
        w = w - lr * (m / (1 - beta1 ** t)) / (np.sqrt(v / (1 - beta2 ** t)) + eps)
        out.append(w)
    return out


def _adam_tolerance(backend):
    return (mg.float64, 1e-12) if backend == "numpy" else (mg.float32, 2e-6)


def test_adam_one_step_is_mpsgraphs_formula(backend):
    """w = 1, g = 1e-4, lr = 0.1, eps = 1e-3: 0.999685 by MPSGraph's formula (Kingma & Ba: 0.990909)."""
    dtype, rtol = _adam_tolerance(backend)
    g = mg.Graph()
    w = g.variable(np.ones(1, dtype.np_dtype), name="w")
    step = g.apply_adam(w, g.constant(np.full(1, 1e-4, dtype.np_dtype)), learning_rate=0.1, epsilon=1e-3)
    g.run(target_operations=[step], backend=backend)
    (want,) = adam_mpsgraph(1.0, lambda _: 1e-4, 1, lr=0.1, eps=1e-3)
    (kingma_ba,) = adam_kingma_ba(1.0, lambda _: 1e-4, 1, lr=0.1, eps=1e-3)
    assert round(float(want[()]), 6) == 0.999685 and round(float(kingma_ba[()]), 6) == 0.990909
    np.testing.assert_allclose(g.value_of(w), [want], rtol=rtol)


@pytest.mark.parametrize("lr_kind", ["number", "tensor"])
def test_adam_matches_mpsgraphs_formula_over_several_steps(backend, rng, lr_kind):
    """Random start, a quadratic loss, eps large enough against sqrt(v) that the placement of
    eps matters: every step matches MPSGraph's formula, and not Kingma & Ba's."""
    dtype, rtol = _adam_tolerance(backend)
    w0 = rng.standard_normal(6) * 1e-3
    target = rng.standard_normal(6) * 1e-3
    scale = np.linspace(0.5, 2.0, 6)
    lr, eps, b1, b2 = 0.01, 1e-3, 0.8, 0.95
    g = mg.Graph()
    w = g.variable(w0.astype(dtype.np_dtype), name="w")
    loss = g.reduction_sum(g.multiplication(g.constant(scale.astype(dtype.np_dtype)), g.square(w - target.astype(dtype.np_dtype))))
    (gw,) = g.gradients(loss, [w]).values()
    lr_arg = lr if lr_kind == "number" else g.constant(lr, dtype=dtype)
    step = g.apply_adam(w, gw, learning_rate=lr_arg, beta1=b1, beta2=b2, epsilon=eps)
    grad_fn = lambda x: 2 * scale * (x - target)  # noqa: E731
    want = adam_mpsgraph(w0, grad_fn, 6, lr, b1, b2, eps)
    other = adam_kingma_ba(w0, grad_fn, 6, lr, b1, b2, eps)
    for ref, kb in zip(want, other):
        g.run(target_operations=[step], backend=backend)
        np.testing.assert_allclose(g.value_of(w), ref, rtol=rtol, atol=rtol * np.max(np.abs(ref)))
        assert np.max(np.abs(ref - kb)) > 100 * rtol * np.max(np.abs(ref))  # the two formulas differ here


def test_adam_with_zero_epsilon_matches_pytorch(rng):
    """With eps = 0 the two placements of eps coincide, so torch.optim.Adam is an oracle."""
    torch = pytest.importorskip("torch", reason="needs torch, in the oracles extra: pip install -e '.[oracles]'")
    w0 = rng.standard_normal(5)
    g = mg.Graph()
    w = g.variable(w0, name="w")
    (gw,) = g.gradients(g.reduction_sum(g.square(w - 1.0)), [w]).values()
    step = g.apply_adam(w, gw, learning_rate=0.05, epsilon=0.0)
    tw = torch.tensor(w0, requires_grad=True)
    opt = torch.optim.Adam([tw], lr=0.05, eps=0.0)
    for _ in range(5):
        opt.zero_grad()
        ((tw - 1.0) ** 2).sum().backward()
        opt.step()
        g.run(target_operations=[step])
        np.testing.assert_allclose(g.value_of(w), tw.detach().numpy(), rtol=1e-12)


def test_stochastic_gradient_descent_op_is_values_minus_rate_times_gradient(backend):
    """MPSGraph's stochasticGradientDescent: a new tensor (no variable is written), the product
    rounded in the values' type, then the difference; the rate broadcasts; no gradient."""
    rng = np.random.default_rng(3)
    w, grad = (rng.standard_normal((4, 3)).astype(np.float32) for _ in range(2))
    g = mg.Graph()
    wp, gp = g.placeholder(w.shape, name="w"), g.placeholder(grad.shape, name="g")
    rate = g.constant(np.array([0.5, 0.25, 0.125], np.float32))
    a = g.stochastic_gradient_descent(0.1, wp, gp)
    b = g.stochastic_gradient_descent(rate, wp, gp)
    r = g.run({wp: w, gp: grad}, [a, b], backend=backend)
    np.testing.assert_allclose(r[a], w - np.float32(0.1) * grad, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(r[b], w - np.array([0.5, 0.25, 0.125], np.float32) * grad, rtol=1e-6, atol=1e-7)
    with pytest.raises(mg.NotDifferentiableError):
        g.gradients(g.reduction_sum(a, axes=None), [wp])
    with pytest.raises(mg.ShapeError, match="stochastic_gradient_descent op.*gradient has shape"):
        g.stochastic_gradient_descent(0.1, wp, g.placeholder([3], name="short"))
    with pytest.raises(mg.DTypeError, match="stochastic_gradient_descent op.*floating-point"):
        g.stochastic_gradient_descent(1, g.constant(np.ones(2, np.int32)), g.constant(np.ones(2, np.int32)))
