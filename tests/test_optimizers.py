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


def test_adam_matches_reference(rng):
    g = mg.Graph()
    w0 = rng.standard_normal(3)
    w = g.variable(w0, name="w")
    loss = g.reduction_sum(g.square(w - 1.0))
    (gw,) = g.gradients(loss, [w]).values()
    step = g.apply_adam(w, gw, learning_rate=0.1)
    ref, m, s = w0.copy(), np.zeros(3), np.zeros(3)
    for t in range(1, 4):
        g.run(target_operations=[step])
        grad = 2 * (ref - 1)
        m = 0.9 * m + 0.1 * grad
        s = 0.999 * s + 0.001 * grad ** 2
        ref = ref - 0.1 * (m / (1 - 0.9 ** t)) / (np.sqrt(s / (1 - 0.999 ** t)) + 1e-8)
        np.testing.assert_allclose(g.value_of(w), ref, rtol=1e-10)
