"""Normalization ops (variance, normalize, MPSGraph's three normalization gradient ops) and the
adam op: results against references written here (NumPy loops, the formulas, PyTorch), the
batch-norm gradient that autodiff builds from them against torch.autograd, finite differences,
errors that name the op, and Swift export of nil operands."""
import collections
import itertools

import numpy as np
import pytest

import minigraph as mg

from gradcheck import check_gradients

torch = pytest.importorskip("torch", reason="needs torch, in the oracles extra: pip install -e '.[oracles]'")

LAYOUTS = {"NCHW": ([0, 2, 3], (1, 3, 1, 1)), "NHWC": ([0, 1, 2], (3,))}
GRADIENT_OPS = {"normalization_gradient", "normalization_gamma_gradient", "normalization_beta_gradient"}


def _tol(backend):
    return dict(rtol=1e-4, atol=1e-5) if backend == "numpy" else dict(rtol=5e-4, atol=5e-5)


# ---------------------------------------------------------------------------------------- variance
def _naive_variance(x, axes):
    """Population variance by explicit loops over the kept positions."""
    axes = sorted(a % x.ndim for a in axes)
    kept = [i for i in range(x.ndim) if i not in axes]
    out = np.zeros([1 if i in axes else d for i, d in enumerate(x.shape)])
    for pos in itertools.product(*[range(x.shape[i]) for i in kept]):
        vals = []
        for red in itertools.product(*[range(x.shape[i]) for i in axes]):
            idx = [0] * x.ndim
            for i, p in zip(kept, pos):
                idx[i] = p
            for i, r in zip(axes, red):
                idx[i] = r
            vals.append(float(x[tuple(idx)]))
        mu = sum(vals) / len(vals)
        o = [0] * x.ndim
        for i, p in zip(kept, pos):
            o[i] = p
        out[tuple(o)] = sum((v - mu) ** 2 for v in vals) / len(vals)
    return out


@pytest.mark.parametrize("shape,axes", [((3, 4, 5), [1]), ((3, 4, 5), [0, 2]), ((2, 3, 2, 2), [0, 2, 3]),
                                        ((6,), [-1])])
def test_variance_is_the_population_variance_with_kept_axes(backend, rng, shape, axes):
    xv = (rng.standard_normal(shape) * 3 + 1).astype(np.float32)
    g = mg.Graph()
    x = g.placeholder(list(shape), mg.float32)
    v = g.variance(x, axes)
    want = _naive_variance(xv, axes)
    assert v.shape == want.shape
    np.testing.assert_allclose(g.run({x: xv}, [v], backend=backend)[v], want, **_tol(backend))
    np.testing.assert_allclose(want, np.var(xv.astype(np.float64), axis=tuple(axes), keepdims=True), rtol=1e-9)


def test_variance_of_all_axes_nan_and_empty():
    g = mg.Graph()
    x = g.placeholder([2, 3], mg.float32)
    e = g.placeholder([3, 0], mg.float32)
    v_all, v_e = g.variance(x), g.variance(e, [1])
    xv = np.array([[1, 2, 3], [4, np.nan, 6]], np.float32)
    out = g.run({x: xv, e: np.zeros((3, 0), np.float32)}, [v_all, v_e])
    assert out[v_all].shape == (1, 1) and np.isnan(out[v_all]).all()
    assert out[v_e].shape == (3, 1) and np.isnan(out[v_e]).all()


def test_variance_refuses_integers_naming_the_op():
    g = mg.Graph()
    with pytest.raises(mg.DTypeError, match="variance op 'spread'.*int32"):
        g.variance(g.constant(np.arange(4, dtype=np.int32)), [0], name="spread")


@pytest.mark.parametrize("shape,axes,mshape", [((3, 4, 5), [1], (3, 1, 5)), ((3, 4, 5), [0, 2], (1, 4, 1)),
                                               ((2, 3), [0, 1], ()), ((6,), [-1], (1,))])
def test_variance_with_a_given_mean_is_the_mean_squared_deviation_from_it(backend, rng, shape, axes, mshape):
    """variance(of:mean:axes:): mean((x - m)^2) with the mean given, here both the true mean
    (then equal to the plain variance) and an arbitrary one (a shifted second moment)."""
    xv = (rng.standard_normal(shape) * 2 + 1).astype(np.float32)
    mv = rng.standard_normal(mshape).astype(np.float32)
    g = mg.Graph()
    x, m = g.placeholder(list(shape), mg.float32), g.placeholder(list(mshape), mg.float32)
    v_given = g.variance(x, axes, mean=m)
    v_true = g.variance(x, axes, mean=g.mean(x, axes))
    out = g.run({x: xv, m: mv}, [v_given, v_true], backend=backend)
    x64 = xv.astype(np.float64)
    want = np.mean((x64 - mv) ** 2, axis=tuple(axes), keepdims=True)
    assert v_given.shape == want.shape
    np.testing.assert_allclose(out[v_given], want, **_tol(backend))
    np.testing.assert_allclose(out[v_true], _naive_variance(xv, axes), **_tol(backend))


def test_variance_with_a_mean_has_gradients_toward_tensor_and_mean(rng):
    vals = [rng.standard_normal((4, 3)), rng.standard_normal((1, 3))]
    check_gradients(lambda g, x, m: g.variance(x, [0], mean=m), vals, rng, rtol=1e-5, atol=1e-6)


def test_variance_with_a_mean_errors_name_the_op():
    g = mg.Graph()
    x = g.placeholder([3, 4], mg.float32)
    with pytest.raises(mg.ShapeError, match=r"variance op 'v'.*\(1, 5\)"):
        g.variance(x, [1], mean=g.constant(np.zeros((1, 5), np.float32)), name="v")
    with pytest.raises(mg.ShapeError, match=r"variance op 'v'.*\(2, 3, 4\).*without growing it.*\(3, 1\)"):
        g.variance(x, [1], mean=g.constant(np.zeros((2, 3, 4), np.float32)), name="v")
    with pytest.raises(mg.DTypeError, match="variance op 'v'.*float16"):
        g.variance(x, [1], mean=g.constant(np.zeros((3, 1), np.float16)), name="v")
    with pytest.raises(mg.ShapeError, match="variance op 'v'.*axis 5"):
        g.variance(x, [5], mean=g.mean(x, [1]), name="v")

# --------------------------------------------------------------------------------------- normalize
def test_normalize_is_the_formula_with_broadcasting_and_nil_operands(backend, rng):
    xv = rng.standard_normal((2, 3, 4)).astype(np.float32)
    mv, vv = rng.standard_normal((3, 1)).astype(np.float32), rng.uniform(0.5, 2, (1, 4)).astype(np.float32)
    gv, bv = rng.standard_normal((4,)).astype(np.float32), rng.standard_normal((2, 1, 1)).astype(np.float32)
    g = mg.Graph()
    x, m, v, ga, be = (g.placeholder(list(a.shape), mg.float32) for a in (xv, mv, vv, gv, bv))
    y = g.normalize(x, m, v, ga, be, 0.01)
    y_plain = g.normalize(x, m, v, None, None, 0.01)
    y_scale = g.normalize(x, m, v, ga, None, 0.01)
    out = g.run({x: xv, m: mv, v: vv, ga: gv, be: bv}, [y, y_plain, y_scale], backend=backend)
    xhat = (xv.astype(np.float64) - mv) / np.sqrt(vv.astype(np.float64) + 0.01)
    np.testing.assert_allclose(out[y], xhat * gv + bv, **_tol(backend))
    np.testing.assert_allclose(out[y_plain], xhat, **_tol(backend))
    np.testing.assert_allclose(out[y_scale], xhat * gv, **_tol(backend))


@pytest.mark.parametrize("layout", LAYOUTS)
def test_batch_norm_forward_matches_torch(backend, rng, layout):
    axes, pshape = LAYOUTS[layout]
    g, x, ga, be, y = _batch_norm_graph(layout)
    xv, gv, bv = _bn_data(rng, layout)
    out = g.run({x: xv, ga: gv, be: bv}, [y], backend=backend)[y]
    want = _torch_bn(xv, gv, bv, layout)[0]
    np.testing.assert_allclose(out, want, **_tol(backend))


def test_normalize_errors_name_the_op():
    g = mg.Graph()
    x = g.placeholder([2, 3], mg.float32)
    with pytest.raises(mg.ShapeError, match=r"normalize op 'bn'.*\(4,\)"):
        g.normalize(x, g.constant(np.zeros(4, np.float32)), 1.0, None, None, 1e-5, name="bn")
    with pytest.raises(mg.DTypeError, match=r"normalize op 'bn'.*float16"):
        g.normalize(x, g.constant(np.zeros(3, np.float16)), 1.0, None, None, 1e-5, name="bn")
    with pytest.raises(mg.ShapeError, match=r"normalization_gradient op 'ng'.*incoming_gradient \(3,\)"):
        g.normalization_gradient(g.placeholder([3], mg.float32), x, 0.0, 1.0, None, None, None, [0], 1e-5,
                                 name="ng")
    with pytest.raises(mg.MiniGraphError, match=r"normalization_beta_gradient op 'bg'.*axis 2"):
        g.normalization_beta_gradient(x, x, [2], name="bg")


# -------------------------------------------------------------------------- the three gradient ops
def _bn_data(rng, layout, n=2, c=3, h=4, w=5):
    shape = (n, c, h, w) if layout == "NCHW" else (n, h, w, c)
    pshape = LAYOUTS[layout][1]
    return ((rng.standard_normal(shape) * 2 + 0.5).astype(np.float32),
            rng.uniform(0.5, 1.5, pshape).astype(np.float32), rng.standard_normal(pshape).astype(np.float32))


def _torch_bn(xv, gv, bv, layout, dyv=None, eps=1e-5):
    """torch.nn.functional.batch_norm in training mode, float64: (y, dx, dgamma, dbeta) for
    sum(y * dy) (dy = ones when not given)."""
    tx = torch.tensor(xv, dtype=torch.float64, requires_grad=True)
    tg = torch.tensor(gv.reshape(-1), dtype=torch.float64, requires_grad=True)
    tb = torch.tensor(bv.reshape(-1), dtype=torch.float64, requires_grad=True)
    xin = tx if layout == "NCHW" else tx.permute(0, 3, 1, 2)
    ty = torch.nn.functional.batch_norm(xin, None, None, tg, tb, training=True, eps=eps)
    if layout == "NHWC":
        ty = ty.permute(0, 2, 3, 1)
    dy = torch.ones_like(ty) if dyv is None else torch.tensor(dyv, dtype=torch.float64)
    (ty * dy).sum().backward()
    pshape = gv.shape
    return (ty.detach().numpy(), tx.grad.numpy(), tg.grad.numpy().reshape(pshape), tb.grad.numpy().reshape(pshape))


@pytest.mark.parametrize("layout", LAYOUTS)
def test_gradient_ops_match_torch_batch_norm_backward(backend, rng, layout):
    axes, pshape = LAYOUTS[layout]
    xv, gv, bv = _bn_data(rng, layout)
    dyv = rng.standard_normal(xv.shape).astype(np.float32)
    g = mg.Graph()
    x, dy = g.placeholder(list(xv.shape), mg.float32), g.placeholder(list(xv.shape), mg.float32)
    ga = g.placeholder(list(pshape), mg.float32)
    mean, var = g.mean(x, axes), g.variance(x, axes)
    gg = g.normalization_gamma_gradient(dy, x, mean, var, axes, 1e-5)
    bg = g.normalization_beta_gradient(dy, x, axes)
    dx = g.normalization_gradient(dy, x, mean, var, ga, gg, bg, axes, 1e-5)
    dx_nil = g.normalization_gradient(dy, x, mean, var, None, None, None, axes, 1e-5)
    out = g.run({x: xv, dy: dyv, ga: gv}, [gg, bg, dx, dx_nil], backend=backend)
    _, tdx, tdg, tdb = _torch_bn(xv, gv, bv, layout, dyv)
    kept = tuple(1 if i in axes else d for i, d in enumerate(xv.shape))
    assert out[gg].shape == kept and out[bg].shape == kept
    np.testing.assert_allclose(out[gg].reshape(pshape), tdg, **_tol(backend))
    np.testing.assert_allclose(out[bg].reshape(pshape), tdb, **_tol(backend))
    np.testing.assert_allclose(out[dx], tdx, **_tol(backend))
    _, tdx1, _, _ = _torch_bn(xv, np.ones_like(gv), bv, layout, dyv)  # gamma nil: a scale of 1
    np.testing.assert_allclose(out[dx_nil], tdx1, **_tol(backend))


def test_gradient_ops_worked_numbers():
    """The numbers of docs/normalization.md: x = [1, 2, 3, 6] over axis 0, dy = [1, 0, 0, 1], eps 0."""
    g = mg.Graph()
    x = g.constant(np.array([1.0, 2.0, 3.0, 6.0]))
    dy = g.constant(np.array([1.0, 0.0, 0.0, 1.0]))
    mean, var = g.mean(x, [0]), g.variance(x, [0])
    gg = g.normalization_gamma_gradient(dy, x, mean, var, [0], 0.0)
    bg = g.normalization_beta_gradient(dy, x, [0])
    dx = g.normalization_gradient(dy, x, mean, var, None, gg, bg, [0], 0.0)
    out = g.run({}, [mean, var, gg, bg, dx])
    assert out[mean].tolist() == [3.0] and out[var].tolist() == [3.5]
    xhat = (np.array([1.0, 2.0, 3.0, 6.0]) - 3) / np.sqrt(3.5)
    np.testing.assert_allclose(out[gg], [xhat[0] + xhat[3]], rtol=1e-12)
    assert out[bg].tolist() == [2.0]
    np.testing.assert_allclose(out[dx], (np.array([1.0, 0, 0, 1]) - 0.5 - xhat * (xhat[0] + xhat[3]) / 4)
                               / np.sqrt(3.5), rtol=1e-12)


# ------------------------------------------------------------------------------ autodiff of a batch norm
def _batch_norm_graph(layout, dtype=mg.float32, gamma=True, beta=True):
    axes, pshape = LAYOUTS[layout]
    shape = [2, 3, 4, 5] if layout == "NCHW" else [2, 4, 5, 3]
    g = mg.Graph()
    x = g.placeholder(shape, dtype, name="x")
    ga = g.placeholder(list(pshape), dtype, name="gamma")
    be = g.placeholder(list(pshape), dtype, name="beta")
    y = g.normalize(x, g.mean(x, axes), g.variance(x, axes), ga if gamma else None, be if beta else None, 1e-5,
                    name="bn")
    return g, x, ga, be, y


@pytest.mark.parametrize("layout", LAYOUTS)
def test_autodiff_of_a_batch_norm_inserts_the_three_ops_and_matches_torch(backend, rng, layout):
    g, x, ga, be, y = _batch_norm_graph(layout)
    xv, gv, bv = _bn_data(rng, layout)
    dyv = rng.standard_normal(xv.shape).astype(np.float32)
    r = g.constant(dyv)
    grads = g.gradients(g.reduction_sum(g.multiplication(y, r)), [x, ga, be])
    types = {op.type for op in g.operations}
    assert GRADIENT_OPS <= types
    assert grads[x].operation.type == "normalization_gradient"
    out = g.run({x: xv, ga: gv, be: bv}, [grads[x], grads[ga], grads[be]], backend=backend)
    _, tdx, tdg, tdb = _torch_bn(xv, gv, bv, layout, dyv)
    np.testing.assert_allclose(out[grads[x]], tdx, **_tol(backend))
    np.testing.assert_allclose(out[grads[ga]], tdg, **_tol(backend))
    np.testing.assert_allclose(out[grads[be]], tdb, **_tol(backend))


def test_normalize_with_other_statistics_takes_the_elementwise_gradient(rng):
    """Running statistics (placeholders), or the mean of another tensor: no normalization gradient op."""
    g = mg.Graph()
    x, z = g.placeholder([4, 3], mg.float64), g.placeholder([4, 3], mg.float64)
    m, v = g.placeholder([1, 3], mg.float64), g.placeholder([1, 3], mg.float64)
    y1 = g.normalize(x, m, v, None, None, 1e-3)
    y2 = g.normalize(x, g.mean(z, [0]), g.variance(x, [0]), None, None, 1e-3)
    y3 = g.normalize(x, g.mean(x, [0]), g.variance(x, [0, 1]), None, None, 1e-3)
    g.gradients(g.reduction_sum(g.addition(g.addition(y1, y2), y3)), [x, m, v, z])
    assert not GRADIENT_OPS & {op.type for op in g.operations}


def _fd_gradients(build, vals, rng):
    return check_gradients(build, vals, rng, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("axes,pshape", [([0, 2], (1, 3, 1)), ([0], (3, 1))])
def test_batch_norm_gradient_matches_finite_differences(rng, axes, pshape):
    vals = [rng.standard_normal((4, 3, 2)), rng.uniform(0.5, 1.5, pshape), rng.standard_normal(pshape)]

    def build(g, x, ga, be):
        return g.normalize(x, g.mean(x, axes), g.variance(x, axes), ga, be, 1e-3)
    g = _fd_gradients(build, vals, rng)
    assert GRADIENT_OPS <= {op.type for op in g.operations}


def test_batch_norm_gradient_with_nil_gamma_beta_and_statistics_used_elsewhere(rng):
    """The mean also feeds the loss directly: its gradient reaches x through the mean's own rule."""
    def build(g, x):
        m = g.mean(x, [0])
        y = g.normalize(x, m, g.variance(x, [0]), None, None, 1e-3)
        return g.addition(y, g.multiplication(m, 3.0))
    _fd_gradients(build, [rng.standard_normal((5, 2))], rng)


def test_normalization_gradient_ops_are_not_differentiable_but_beta_gradient_is():
    assert not mg.ops.OPS["normalization_gradient"].differentiable
    assert not mg.ops.OPS["normalization_gamma_gradient"].differentiable
    assert mg.ops.OPS["normalization_beta_gradient"].differentiable
    assert mg.ops.OPS["normalization_gamma_gradient"].family == "normalization"


# ----------------------------------------------------------------------------------------- Swift
def test_swift_export_writes_nil_for_none_operands():
    g, x, ga, be, y = _batch_norm_graph("NHWC", gamma=False, beta=False)
    g.gradients(g.reduction_sum(y), [x])
    w = g.placeholder([3], mg.float32, name="w")
    outs = g.adam(0.1, 0.9, 0.999, 1e-8, 0.9, 0.999, w, w, w, None, w, name="step")
    src = g.to_swift(target_tensors=[y, *outs])
    assert "graph.normalize(x, mean: " in src and "gamma: nil, beta: nil, epsilon: 1e-05" in src
    assert "graph.variance(of: x, axes: [0, 1, 2]" in src
    assert "normalizationGradient(withIncomingGradientTensor: " in src and "gammaTensor: nil" in src
    assert "maximumVelocity: nil, gradient: w" in src and "step[0]" in src


# ------------------------------------------------------------------------------------------- adam
def adam_reference(lr, b1, b2, eps, p1, p2, w, m, v, vmax, grad):
    """Apple's documented formula, in float64."""
    lr_t = lr * np.sqrt(1 - p2) / (1 - p1)
    m = b1 * m + (1 - b1) * grad
    v = b2 * v + (1 - b2) * grad * grad
    if vmax is None:
        return [w - lr_t * m / (np.sqrt(v) + eps), m, v]
    vmax = np.maximum(vmax, v)
    return [w - lr_t * m / (np.sqrt(vmax) + eps), m, v, vmax]


@pytest.mark.parametrize("amsgrad", [False, True])
@pytest.mark.parametrize("scalars", ["numbers", "tensors"])
def test_adam_op_is_apples_formula(backend, rng, amsgrad, scalars):
    shape = (4, 3)
    w, grad = rng.standard_normal(shape), rng.standard_normal(shape)
    m, v, vmax = rng.standard_normal(shape) * 0.1, rng.uniform(0, 0.05, shape), rng.uniform(0, 0.05, shape)
    params = (0.01, 0.9, 0.999, 1e-3, 0.9 ** 2, 0.999 ** 2)
    g = mg.Graph()
    ph = {k: g.placeholder(list(shape), mg.float32) for k in ("w", "m", "v", "vmax", "grad")}
    sc = params if scalars == "numbers" else [g.constant(np.float32(p)) for p in params]
    outs = g.adam(*sc, ph["w"], ph["m"], ph["v"], ph["vmax"] if amsgrad else None, ph["grad"])
    assert len(outs) == (4 if amsgrad else 3)
    feeds = {ph[k]: a.astype(np.float32) for k, a in dict(w=w, m=m, v=v, vmax=vmax, grad=grad).items()}
    got = g.run(feeds, outs, backend=backend)
    want = adam_reference(*params, w, m, v, vmax if amsgrad else None, grad)
    for t, ref in zip(outs, want):
        np.testing.assert_allclose(got[t], ref, rtol=1e-5, atol=1e-6)
    if amsgrad:
        assert (got[outs[3]] >= feeds[ph["vmax"]]).all()


def test_adam_errors_and_not_differentiable():
    g = mg.Graph()
    w = g.placeholder([3], mg.float32)
    with pytest.raises(mg.ShapeError, match=r"adam op 'a'.*momentum.*\(2,\)"):
        g.adam(0.1, 0.9, 0.999, 1e-8, 0.9, 0.999, w, np.zeros(2, np.float32), w, None, w, name="a")
    with pytest.raises(mg.ShapeError, match=r"adam op 'a'.*learning_rate"):
        g.adam(np.ones(2, np.float32), 0.9, 0.999, 1e-8, 0.9, 0.999, w, w, w, None, w, name="a")
    with pytest.raises(mg.DTypeError, match=r"adam op 'a'"):
        g.adam(0.1, 0.9, 0.999, 1e-8, 0.9, 0.999, w, w, w, None, g.placeholder([3], mg.float16), name="a")
    outs = g.adam(0.1, 0.9, 0.999, 1e-8, 0.9, 0.999, w, w, w, None, w, name="b")
    with pytest.raises(mg.NotDifferentiableError, match="adam"):
        g.gradients(g.reduction_sum(outs[0]), [w])


@pytest.mark.parametrize("amsgrad", [False, True])
def test_adam_with_the_current_learning_rate_skips_the_bias_correction(backend, rng, amsgrad):
    """adam(currentLearningRate:...): lr[t] given, so the step is Apple's formula with lr[t] in
    place of learningRate * sqrt(1 - beta2^t) / (1 - beta1^t); equal to the full form's step."""
    shape = (4, 3)
    w, grad = rng.standard_normal(shape), rng.standard_normal(shape)
    m, v, vmax = rng.standard_normal(shape) * 0.1, rng.uniform(0, 0.05, shape), rng.uniform(0, 0.05, shape)
    b1, b2, eps, t = 0.9, 0.999, 1e-3, 3
    lr_t = 0.01 * np.sqrt(1 - b2 ** t) / (1 - b1 ** t)
    g = mg.Graph()
    ph = {k: g.placeholder(list(shape), mg.float32) for k in ("w", "m", "v", "vmax", "grad")}
    vm = ph["vmax"] if amsgrad else None
    cur = g.adam(lr_t, b1, b2, eps, None, None, ph["w"], ph["m"], ph["v"], vm, ph["grad"], name="current")
    full = g.adam(0.01, b1, b2, eps, b1 ** t, b2 ** t, ph["w"], ph["m"], ph["v"], vm, ph["grad"], name="full")
    assert len(cur) == len(full) == (4 if amsgrad else 3)
    feeds = {ph[k]: a.astype(np.float32) for k, a in dict(w=w, m=m, v=v, vmax=vmax, grad=grad).items()}
    got = g.run(feeds, cur + full, backend=backend)
    want = adam_reference(lr_t, b1, b2, eps, 0.0, 0.0, w, m, v, vmax if amsgrad else None, grad)
    for a, b, ref in zip(cur, full, want):
        np.testing.assert_allclose(got[a], ref, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(got[a], got[b], rtol=1e-6, atol=1e-7)
    src = g.to_swift(target_tensors=cur)
    lines = {x.split(" = ")[0]: x for x in src.splitlines() if "graph.adam(" in x}
    assert "graph.adam(currentLearningRate: " in lines["let current"] and "beta1Power" not in lines["let current"]
    assert "graph.adam(learningRate: " in lines["let full"] and "beta1Power: " in lines["let full"]


def test_adam_with_one_power_none_is_refused():
    g = mg.Graph()
    w = g.placeholder([3], mg.float32)
    with pytest.raises(mg.DescriptorError, match=r"adam op 'a'.*both beta1_power and beta2_power"):
        g.adam(0.1, 0.9, 0.999, 1e-8, None, 0.999, w, w, w, None, w, name="a")


# ------------------------------------------------------- webgpu: the statistics in one pass each
def _f64_statistics(xv, dyv, axes, eps):
    """mean, variance, gamma gradient, beta gradient and dx (gamma 1) in float64, from the formulas."""
    x, dy = xv.astype(np.float64), dyv.astype(np.float64)
    ax = tuple(axes)
    n = np.prod([x.shape[a] for a in ax])
    mean = x.mean(axis=ax, keepdims=True)
    var = np.square(x - mean).mean(axis=ax, keepdims=True)
    xhat = (x - mean) / np.sqrt(var + eps)
    gg, bg = (dy * xhat).sum(axis=ax, keepdims=True), dy.sum(axis=ax, keepdims=True)
    dx = (dy - bg / n - xhat * gg / n) / np.sqrt(var + eps)
    return mean, var, gg, bg, dx


def _close_to_float32_rounding(got, want, length, what):
    """Within float32 rounding of a sum of ``length`` terms: rtol 8 u sqrt(K), atol rtol * max|want|
    (the rule of mg.compare_backends)."""
    rtol = max(1e-5, 8 * 2.0 ** -24 * np.sqrt(length))
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * float(np.abs(want).max()), err_msg=what)


STAT_CASES = [((2, 3, 4, 5), [0, 2, 3]),  # NCHW
              ((2, 4, 5, 3), [0, 1, 2]),  # NHWC
              ((2, 5, 300, 250), [0, 2, 3]),  # NCHW, 150,000 elements per channel: the records of chunks merged
              ((2, 160, 250, 37), [0, 1, 2]),  # NHWC, 80,000 per channel, 37 channels (blocks of 32)
              ((4, 2, 2, 300), [0, 1, 2]),  # NHWC, short reductions, many channels
              ((4, 1280, 1, 1), [0, 2, 3]),  # NCHW at 1 x 1: channels contiguous
              ((7,), [0])]


@pytest.mark.parametrize("shape,axes", STAT_CASES)
def test_webgpu_batch_norm_statistics_take_one_pass_and_match_float64(webgpu, rng, shape, axes):
    """Mean with variance, and beta with gamma gradient, are one fused_siblings step each (one
    dispatch: one pass over the data when a channel fits one chunk); all five results within
    float32 rounding of the float64 formulas, the same bits run after run and the same as the
    plan without fusion."""
    xv = (rng.standard_normal(shape) * 3 + 5).astype(np.float32)
    dyv = rng.standard_normal(shape).astype(np.float32)
    g = mg.Graph()
    x, dy = g.placeholder(list(shape), name="x"), g.placeholder(list(shape), name="dy")
    mean, var = g.mean(x, axes), g.variance(x, axes)
    gg = g.normalization_gamma_gradient(dy, x, mean, var, axes, 1e-5)
    bg = g.normalization_beta_gradient(dy, x, axes)
    dx = g.normalization_gradient(dy, x, mean, var, None, gg, bg, axes, 1e-5)
    dx_nil = g.normalization_gradient(dy, x, mean, var, None, None, None, axes, 1e-5)
    targets = [mean, var, gg, bg, dx, dx_nil]
    types = {x: mg.ShapedType(shape), dy: mg.ShapedType(shape)}
    exe = g.compile(types, targets, backend=webgpu)
    assert [s.kernel for s in exe.steps if s.type == "fused_siblings"] == [
        "fused_siblings(mean+variance)", "fused_siblings(normalization_beta_gradient+normalization_gamma_gradient)"]
    count = int(np.prod([shape[a] for a in axes]))
    unfused = g.compile(types, targets, backend=webgpu, compilation_descriptor=mg.CompilationDescriptor(fusion=False))
    feeds = {x: xv, dy: dyv}
    got, again, plain = exe.run(feeds), exe.run(feeds), unfused.run(feeds)
    # the mean and the beta gradient take no dispatch of their own: they come with their siblings'
    # (as many as the variance or gamma gradient alone takes); short reductions: statistics,
    # gradient sums, dx, and dx with its own sums (two)
    by_op = [collections.Counter(d.op.type for d in e._runner.dispatches) for e in (exe, unfused)]
    assert by_op[0]["mean"] == by_op[0]["normalization_beta_gradient"] == 0
    assert by_op[1]["mean"] >= 1 and by_op[1]["normalization_beta_gradient"] >= 1
    for t in ("variance", "normalization_gamma_gradient", "normalization_gradient"):
        assert by_op[0][t] == by_op[1][t], t
    if count <= 64:
        assert len(exe._runner.dispatches) == 5
    assert mg.compare_backends(g, feeds, targets, backends=("numpy", webgpu)).first_failure is None
    want = _f64_statistics(xv, dyv, axes, 1e-5)
    for name, a, b, p, w in zip(["mean", "variance", "gamma gradient", "beta gradient", "dx", "dx (nil)"],
                                got, again, plain, want + (want[-1],)):
        assert np.array_equal(a, b), name
        assert np.array_equal(a, p), name
        _close_to_float32_rounding(a, w, count, name)


def test_webgpu_variance_has_no_cancellation_far_from_zero(webgpu, rng):
    """Values 1000 + 0.01 * noise: sum(x^2) / n - mean^2 would lose every digit in float32; the
    merged (count, mean, M2) records keep the variance within float32 rounding of the data."""
    xv = (1000 + 0.01 * rng.standard_normal((4, 3, 64, 64))).astype(np.float32)
    g = mg.Graph()
    x = g.placeholder(list(xv.shape))
    v = g.variance(x, [0, 2, 3])
    got = g.run({x: xv}, [v], backend=webgpu)[v]
    want = np.var(xv.astype(np.float64), axis=(0, 2, 3), keepdims=True)
    np.testing.assert_allclose(got, want, rtol=1e-3)


@pytest.mark.parametrize("fused", [True, False])
def test_webgpu_statistics_of_values_that_are_not_finite_follow_numpy(webgpu, fused):
    """A channel with +inf, -inf, both, NaN, or 10^7 values of 0.1: the mean and variance (one
    fused_siblings step, or each alone) are NumPy's: inf where the mean is, NaN for the variance
    of a channel with an infinity (inf - inf in its deviations) and for NaN; 0.1 stays 0.1 within
    float32 rounding (a running mean, where sum / count would drift)."""
    rows = np.array([[1.0, np.inf, 2.0, 3.0], [1.0, -np.inf, 2.0, 3.0], [np.inf, -np.inf, 0.0, 1.0],
                     [1.0, np.nan, 2.0, 3.0], [4.0, 4.0, 4.0, 4.0], [-1.0, 1.0, -1.0, 1.0]], np.float32)
    big = np.full((1, 10 ** 6), 0.1, np.float32)
    g = mg.Graph()
    x, y = g.placeholder(list(rows.shape)), g.placeholder(list(big.shape))
    outs = [g.mean(x, [1]), g.variance(x, [1]), g.mean(y, [1]), g.variance(y, [1])]
    desc = mg.CompilationDescriptor(fusion=fused)
    got = g.run({x: rows, y: big}, outs, backend=webgpu, compilation_descriptor=desc)
    r = rows.astype(np.float64)
    with np.errstate(invalid="ignore"):
        want = [r.mean(1, keepdims=True), r.var(1, keepdims=True)]
    for t, w in zip(outs[:2], want):
        np.testing.assert_array_equal(np.isnan(got[t]), np.isnan(w))
        np.testing.assert_array_equal(got[t][~np.isnan(w)], w[~np.isnan(w)].astype(np.float32))
    assert abs(float(got[outs[2]][0, 0]) - float(np.float32(0.1))) <= 2e-8
    assert abs(float(got[outs[3]][0, 0])) <= 1e-12


@pytest.mark.parametrize("layout", LAYOUTS)
def test_webgpu_mobilenet_like_block_through_autodiff_matches_numpy(webgpu, rng, layout):
    """conv 1x1 -> batch norm -> relu6 -> depthwise 3x3 -> batch norm, a loss and its gradients:
    each batch norm's statistics and gradient sums are fused_siblings steps on webgpu, and the
    gradients agree with the numpy backend's (and with the plan without fusion) within float32
    rounding of the reduction length."""
    axes, pshape = LAYOUTS[layout]
    c = 6
    pshape = (1, c, 1, 1) if layout == "NCHW" else (c,)
    shape = (2, 3, 12, 12) if layout == "NCHW" else (2, 12, 12, 3)
    conv_layout = dict(data_layout=mg.TensorNamedDataLayout.NCHW if layout == "NCHW" else mg.TensorNamedDataLayout.NHWC,
                       weights_layout=mg.TensorNamedDataLayout.OIHW)
    g = mg.Graph()
    x = g.placeholder(list(shape), name="x")
    w1 = g.variable(rng.standard_normal((c, 3, 1, 1)).astype(np.float32), name="w1")
    wd = g.variable(rng.standard_normal((1, c, 3, 3)).astype(np.float32), name="wd")  # [M, C, kH, kW]
    params = [w1, wd]

    def bn(h, k):
        gamma = g.variable(rng.uniform(0.5, 1.5, pshape).astype(np.float32), name=f"gamma{k}")
        beta = g.variable(rng.standard_normal(pshape).astype(np.float32), name=f"beta{k}")
        params.extend([gamma, beta])
        return g.normalize(h, g.mean(h, axes), g.variance(h, axes), gamma, beta, 1e-5, name=f"bn{k}")
    h = g.convolution_2d(x, w1, mg.Convolution2DOpDescriptor(**conv_layout))
    h = g.clamp(bn(h, 1), g.constant(np.float32(0)), g.constant(np.float32(6)))
    h = g.depthwise_convolution_2d(h, wd, mg.DepthwiseConvolution2DOpDescriptor(
        padding_left=1, padding_right=1, padding_top=1, padding_bottom=1,
        data_layout=conv_layout["data_layout"], weights_layout=mg.TensorNamedDataLayout.OIHW))
    y = bn(h, 2)
    target = g.constant(rng.standard_normal(y.shape).astype(np.float32))
    loss = g.reduction_sum(g.square(g.subtraction(y, target)))
    grads = g.gradients(loss, params)
    ts = [loss] + [grads[p] for p in params]
    feeds = {x: rng.standard_normal(shape).astype(np.float32)}
    types = {x: mg.ShapedType(shape)}
    exe = g.compile(types, ts, backend=webgpu)
    kernels = [s.kernel for s in exe.steps if s.type == "fused_siblings"]
    assert kernels.count("fused_siblings(mean+variance)") == 2
    assert kernels.count("fused_siblings(normalization_beta_gradient+normalization_gamma_gradient)") == 2
    got = exe.run(feeds)
    ref = g.compile(types, ts, backend="numpy").run(feeds)
    plain = g.compile(types, ts, backend=webgpu, compilation_descriptor=mg.CompilationDescriptor(fusion=False)).run(feeds)
    length = 2 * 12 * 12 * 9  # the longest sums: the weights gradients'
    for a, b, p, t in zip(got, ref, plain, ts):
        _close_to_float32_rounding(a, b, length, t.name)
        _close_to_float32_rounding(p, b, length, t.name)
