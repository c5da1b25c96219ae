"""The transcendental elementwise ops against float64 references (NumPy, PyTorch), on every backend.

Inputs are random over every magnitude (uniform over the bit patterns of the finite floats) plus
the edge values: ±0, subnormals, the largest floats, ±inf, NaN. Errors are counted in ulps of the
result's dtype at the exact value (a subnormal result's ulp is the smallest subnormal), and the
bounds are those docs/backends.md states.
"""
import numpy as np
import pytest

import minigraph as mg

F32 = np.float32
F32_MAX = float(np.finfo(F32).max)
SUBNORMALS = [1e-45, 1e-44, 1e-40, 5.9e-39, 1.1754942e-38]  # 1.1754942e-38: the largest subnormal
EDGES = [0.0, -0.0, *SUBNORMALS, *(-s for s in SUBNORMALS), 1.1754944e-38, -1.1754944e-38, F32_MAX, -F32_MAX,
         np.inf, -np.inf, np.nan]
# the float32 closest to a multiple of pi/2: 16367173 * 2^72 is 1.6e-9 (2^-29.2) away from one
HARD_TRIG = [16367173 * 2.0 ** 72, 1e9, 4e9, 3.4e38, 8192.0, 1e5, 0.7853982, 1.5707964, 3.1415927, 6.2831855]


def run(backend, op, *arrays):
    g = mg.Graph()
    xs = [g.placeholder(list(a.shape), a.dtype, name=f"x{k}") for k, a in enumerate(arrays)]
    y = getattr(g, op)(*xs, name="y")
    try:
        return g.run(dict(zip(xs, arrays)), [y], backend=backend)[y]
    except mg.KernelMissingError as e:  # an adapter without float16 support says so; that is documented
        if "shader-f16" in str(e):
            pytest.skip(str(e))
        raise


_FLUSHES: dict = {}


def flushes_subnormals(backend):
    """Whether the backend's arithmetic flushes subnormal results to zero (GPUs may; lavapipe and
    NumPy do not): e^-100 is 3.7e-44 exactly computed, 0 flushed."""
    if backend not in _FLUSHES:
        _FLUSHES[backend] = bool(run(backend, "exponent", np.array([-100.0], F32))[0] == 0)
    return _FLUSHES[backend]


def every_magnitude(rng, n, dtype=F32, positive=False):
    """n finite values, uniform over the bit patterns: every exponent equally often."""
    bits = np.dtype(dtype).itemsize * 8
    u = np.dtype(f"u{bits // 8}")
    x = rng.integers(0, 2 ** bits, n, dtype=np.uint64).astype(u).view(dtype)
    x = x[np.isfinite(x)]
    return np.abs(x) if positive else x


def ulp_error(got, ref, dtype):
    """|got - ref| in ulps of dtype at the exact value ref (float64)."""
    fi = np.finfo(dtype)
    e = np.floor(np.log2(np.maximum(np.abs(ref), float(fi.smallest_subnormal))))
    e = np.maximum(e, fi.minexp)
    return np.abs(got.astype(np.float64) - ref) / np.exp2(e - fi.nmant)


def assert_ulps(x, got, ref, bound, what, backend=None):
    """Within ``bound`` ulps of ``ref`` where ``ref`` rounds to a finite value; the same NaN, ±inf
    and signed zero where it does not or is zero. On a backend that flushes subnormal results, a
    zero of the right sign is accepted for a subnormal ``ref``."""
    dtype = got.dtype
    if backend is not None and flushes_subnormals(backend):
        keep = ~((np.abs(ref) < float(np.finfo(dtype).tiny)) & (got == 0) & (np.signbit(got) == np.signbit(ref)))
        x, got, ref = x[keep], got[keep], ref[keep]
    with np.errstate(over="ignore"):
        want = ref.astype(dtype)
    exact = ~np.isfinite(want) | (want == 0)
    np.testing.assert_array_equal(got[exact], want[exact], err_msg=f"{what}: special values")
    signed = exact & ~np.isnan(want)
    assert np.array_equal(np.signbit(got[signed]), np.signbit(want[signed])), f"{what}: signs of zeros/infinities"
    err = ulp_error(got[~exact], ref[~exact], dtype)
    if err.size:
        k = int(np.argmax(err))
        assert err[k] <= bound, (f"{what}: {err[k]:.2f} ulp at x = {x[~exact][k]!r}: "
                                 f"got {got[~exact][k]!r}, want {ref[~exact][k]!r}")


def sigmoid64(x):
    torch = pytest.importorskip("torch")
    return torch.sigmoid(torch.from_numpy(x.astype(np.float64))).numpy()


# --- sigmoid ------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype, bound", [(np.float32, 3.0), (np.float16, 1.0)])
def test_sigmoid_every_magnitude_and_edges(backend, rng, dtype, bound):
    x = np.concatenate([rng.uniform(-120, 40, 20000), rng.uniform(-20, 20, 20000)]).astype(dtype)
    with np.errstate(over="ignore"):  # the largest float32 is inf in float16
        x = np.concatenate([x, every_magnitude(rng, 20000, dtype), np.array(EDGES, F32).astype(dtype)])
    got = run(backend, "sigmoid", x)
    assert got.dtype == dtype
    assert_ulps(x, got, sigmoid64(x), bound, f"sigmoid {np.dtype(dtype).name} on {backend}", backend)
    edges = np.array([0.0, -0.0, np.inf, -np.inf, np.nan], dtype)
    np.testing.assert_array_equal(run(backend, "sigmoid", edges), np.array([0.5, 0.5, 1.0, 0.0, np.nan], dtype))


def test_sigmoid_float64_numpy(rng):
    """Against 80-digit mpmath, down to subnormal results (PyTorch's float64 sigmoid flushes to 0
    below x = -709)."""
    mpmath = pytest.importorskip("mpmath")
    x = np.concatenate([rng.uniform(-760, 60, 3000), every_magnitude(rng, 3000, np.float64)])
    with mpmath.workdps(80):
        ref = np.array([float(1 / (1 + mpmath.exp(-mpmath.mpf(float(v))))) for v in x])
    assert_ulps(x, run("numpy", "sigmoid", x), ref, 3.0, "sigmoid float64")


def test_log_sigmoid_finite_down_to_minus_80(backend):
    """log(sigmoid(x)) and its gradient 1 - sigmoid(x), against PyTorch's logsigmoid in float64."""
    torch = pytest.importorskip("torch")
    xv = np.concatenate([np.linspace(-80, 10, 901), [-20.0, -50.0, -87.0]]).astype(F32)
    g = mg.Graph()
    x = g.placeholder([xv.size], mg.float32, name="x")
    y = g.logarithm(g.sigmoid(x))
    dx = g.gradients(g.reduction_sum(y, axes=None), [x])[x]
    got, grad = (g.run({x: xv}, [y, dx], backend=backend)[t] for t in (y, dx))
    xt = torch.tensor(xv.astype(np.float64), requires_grad=True)
    want = torch.nn.functional.logsigmoid(xt)
    want.sum().backward()
    assert np.all(np.isfinite(got)) and np.all(np.isfinite(grad))
    np.testing.assert_allclose(got, want.detach().numpy(), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(grad, xt.grad.numpy(), rtol=1e-6, atol=1e-6)
    assert got[-3] == np.float32(-20.0) and got[-2] == np.float32(-50.0) and grad[-3] == 1.0


# --- sin, cos -----------------------------------------------------------------------------------

@pytest.mark.parametrize("op", ["sin", "cos"])
def test_sin_cos_every_magnitude(backend, rng, op):
    """Bounded and accurate for every finite float32, up to 3.4e38 (NumPy float64 as reference)."""
    x = np.concatenate([every_magnitude(rng, 100000), rng.uniform(-1e4, 1e4, 20000),
                        np.array(HARD_TRIG + [-v for v in HARD_TRIG] + EDGES, np.float64)]).astype(F32)
    got = run(backend, op, x)
    finite = np.isfinite(x)
    assert np.all(np.abs(got[finite]) <= 1.0), f"{op} outside [-1, 1]"
    assert np.all(np.isnan(got[~finite])), f"{op} of ±inf and NaN is NaN"
    with np.errstate(invalid="ignore"):
        ref = getattr(np, op)(x.astype(np.float64))
    assert_ulps(x, got, ref, 2.5, f"{op} on {backend}")


def test_sin_cos_large_arguments(backend):
    x = np.array([1e9, 4e9, 16367173 * 2.0 ** 72, F32_MAX], F32)
    for op in ("sin", "cos"):
        want = getattr(np, op)(x.astype(np.float64))
        np.testing.assert_allclose(run(backend, op, x), want, rtol=3e-7)
    # near a multiple of pi/2 the result keeps its relative precision
    assert abs(run(backend, "cos", x[2:3])[0] / np.cos(float(x[2])) - 1) < 3e-7


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_sin_tanh_keep_the_sign_of_zero(backend, dtype):
    x = np.array([-0.0, 0.0, -1e-45, 1e-40, -2e-4, 2e-4], F32).astype(dtype)
    for op in ("sin", "tanh"):
        got = run(backend, op, x)
        np.testing.assert_array_equal(got, x, err_msg=op)  # sin(x) and tanh(x) round to x here
        assert np.array_equal(np.signbit(got), np.signbit(x)), f"{op}(-0.0) must be -0.0"
    np.testing.assert_array_equal(run(backend, "cos", x), np.ones_like(x))


# --- tanh, exponent, logarithm ------------------------------------------------------------------

def test_tanh_every_magnitude(backend, rng):
    x = np.concatenate([every_magnitude(rng, 50000), rng.uniform(-12, 12, 50000).astype(F32),
                        np.array(EDGES, F32)])
    with np.errstate(invalid="ignore"):
        ref = np.tanh(x.astype(np.float64))
    assert_ulps(x, run(backend, "tanh", x), ref, 2.0, f"tanh on {backend}")


def test_exponent_every_magnitude(backend, rng):
    """Including results in the subnormal range (x < -87.3) and overflow to inf (x > 88.72)."""
    x = np.concatenate([rng.uniform(-110, 90, 50000).astype(F32), every_magnitude(rng, 20000),
                        np.array(EDGES, F32)])
    with np.errstate(over="ignore", invalid="ignore"):
        ref = np.exp(x.astype(np.float64))
    assert_ulps(x, run(backend, "exponent", x), ref, 3.0, f"exponent on {backend}", backend)


def test_logarithm_every_magnitude_and_subnormals(backend, rng):
    x = np.concatenate([every_magnitude(rng, 100000, positive=True),
                        rng.integers(1, 1 << 23, 20000).astype(np.uint32).view(F32),  # every subnormal exponent
                        np.array(EDGES, F32)])
    with np.errstate(divide="ignore", invalid="ignore"):
        ref = np.log(x.astype(np.float64))
    got = run(backend, "logarithm", x)
    assert_ulps(x, got, ref, 4.0, f"logarithm on {backend}")
    np.testing.assert_allclose(run(backend, "logarithm", np.array([1e-40, 1e-45], F32)), [-92.103404, -103.27893], rtol=1e-7)


# --- power --------------------------------------------------------------------------------------

POW_BASES = [-np.inf, -3.0, -2.0, -1.0, -0.5, -1e-40, -0.0, 0.0, 1e-40, 0.5, 1.0, 2.0, 3.0, np.inf, np.nan]
POW_EXPONENTS = [-np.inf, -3.0, -2.5, -2.0, -1.0, -0.5, -0.0, 0.0, 0.5, 1.0, 2.0, 2.5, 3.0,
                 16777215.0, -16777215.0, 16777216.0, 3e38, np.inf, np.nan]


def test_power_special_values(backend):
    """Every pair of special bases and exponents as C99 Annex F's pow (NumPy's float64 power)."""
    a, b = (np.array(v, F32) for v in zip(*[(p, q) for p in POW_BASES for q in POW_EXPONENTS]))
    got = run(backend, "power", a, b)
    with np.errstate(all="ignore"):
        ref = np.power(a.astype(np.float64), b.astype(np.float64))
    assert_ulps(a, got, ref, 200.0, f"power on {backend}", backend)
    # the cases named by IEEE 754's pow
    cases = {(-np.inf, 2.5): np.inf, (-np.inf, -2.5): 0.0, (-np.inf, 3.0): -np.inf, (-np.inf, -3.0): -0.0,
             (-0.0, -1.0): -np.inf, (-0.0, -3.0): -np.inf, (-0.0, -2.0): np.inf, (-0.0, 3.0): -0.0,
             (-0.0, -np.inf): np.inf, (0.0, np.inf): 0.0, (-1.0, np.inf): 1.0, (-1.0, -np.inf): 1.0,
             (1.0, np.nan): 1.0, (np.nan, 0.0): 1.0, (-2.0, 0.5): np.nan, (0.5, -np.inf): np.inf,
             (2.0, -np.inf): 0.0}
    ca, cb = (np.array(v, F32) for v in zip(*cases))
    got = run(backend, "power", ca, cb)
    want = np.array(list(cases.values()), F32)
    np.testing.assert_array_equal(got, want)
    assert np.array_equal(np.signbit(got[~np.isnan(want)]), np.signbit(want[~np.isnan(want)]))


def test_power_subnormal_bases(backend, rng):
    a = np.concatenate([np.array(SUBNORMALS, F32), rng.integers(1, 1 << 23, 2000).astype(np.uint32).view(F32)])
    b = rng.uniform(-0.8, 0.8, a.size).astype(F32)
    b[: len(SUBNORMALS)] = 0.5
    got = run(backend, "power", a, b)
    np.testing.assert_allclose(got, np.power(a.astype(np.float64), b.astype(np.float64)), rtol=2e-5)
    np.testing.assert_allclose(got[2], 1e-20, rtol=1e-5)  # 1e-40 ** 0.5


def test_power_every_magnitude(backend, rng):
    """Positive bases of every magnitude with exponents that keep the result in float32's range:
    exp(b * log(a)) in float32 loses about |b * log(a)| * 2^-24 (docs/backends.md)."""
    a = every_magnitude(rng, 50000, positive=True)
    a = a[(a != 0) & (a != 1)]
    b = (rng.uniform(-80, 80, a.size) / np.log(a.astype(np.float64))).astype(F32)
    ref = np.power(a.astype(np.float64), b.astype(np.float64))
    assert_ulps(a, run(backend, "power", a, b), ref, 200.0, f"power on {backend}", backend)


# --- clamp --------------------------------------------------------------------------------------

def test_clamp_relu6_and_tensor_bounds(backend, rng):
    """Against a Python loop of Metal's clamp (fmin(fmax(x, lo), hi)): NaN gives the lower bound,
    crossed bounds give the upper one; ReLU6 with Python-number bounds keeps the dtype."""
    x = np.concatenate([rng.uniform(-9, 9, 40), [np.nan, np.inf, -np.inf, 0.0, -0.0, 6.0, 0.0]]).astype(F32)
    lo = rng.uniform(-2, 1, x.size).astype(F32)
    hi = rng.uniform(-1, 7, x.size).astype(F32)
    lo[-3:] = [np.nan, 1.0, 2.0]
    hi[-3:] = [3.0, np.nan, -2.0]

    def ref(v, a, b):
        m = a if np.isnan(v) else (v if np.isnan(a) else max(v, a))
        return b if np.isnan(m) else (m if np.isnan(b) else min(m, b))
    want = np.array([ref(*t) for t in zip(x.tolist(), lo.tolist(), hi.tolist())], F32)
    np.testing.assert_array_equal(run(backend, "clamp", x, lo, hi), want)
    g = mg.Graph()
    xp = g.placeholder([x.size], mg.float32, name="x")
    y = g.clamp(xp, 0, 6)
    assert y.dtype == mg.float32
    got = g.run({xp: x}, [y], backend=backend)[y]
    np.testing.assert_array_equal(got, np.array([ref(v, 0.0, 6.0) for v in x.tolist()], F32))
    assert got[-7] == 0.0 and got[-6] == 6.0 and got[-5] == 0.0  # clamp(NaN, 0, 6) = 0 as Metal's fmax


def test_clamp_gradients_match_torch(backend, rng):
    """d/dx, d/dmin and d/dmax of clamp with broadcast tensor bounds, against torch.clamp's autograd
    (ties included: x == max sends the gradient to x)."""
    torch = pytest.importorskip("torch")
    xv = rng.uniform(-3, 3, (4, 5)).astype(F32)
    lov = rng.uniform(-1.5, 0, (5,)).astype(F32)
    hiv = rng.uniform(0.2, 1.5, (4, 1)).astype(F32)
    xv[0, 0] = hiv[0, 0]
    xv[1, 1] = lov[1]
    dyv = rng.uniform(0.5, 1.5, (4, 5)).astype(F32)
    g = mg.Graph()
    x, lo, hi, dy = (g.placeholder(list(v.shape), mg.float32, name=n) for v, n in
                     ((xv, "x"), (lov, "lo"), (hiv, "hi"), (dyv, "dy")))
    y = g.clamp(x, lo, hi)
    grads = g.gradients(g.reduction_sum(g.multiplication(y, dy), axes=None), [x, lo, hi])
    out = g.run({x: xv, lo: lov, hi: hiv, dy: dyv}, [y] + [grads[t] for t in (x, lo, hi)], backend=backend)
    tx, tlo, thi = (torch.tensor(v, requires_grad=True) for v in (xv, lov, hiv))
    ty = torch.clamp(tx, tlo, thi)
    (ty * torch.from_numpy(dyv)).sum().backward()
    np.testing.assert_array_equal(out[y], ty.detach().numpy())
    for t, tt in ((x, tx), (lo, tlo), (hi, thi)):
        np.testing.assert_allclose(out[grads[t]], tt.grad.numpy(), rtol=1e-6, err_msg=t.name)
    assert out[grads[x]][0, 0] == dyv[0, 0] and out[grads[x]][1, 1] == dyv[1, 1]


def test_clamp_errors():
    g = mg.Graph()
    x = g.placeholder([3], mg.float32, name="x")
    with pytest.raises(mg.DTypeError, match="clamp"):
        g.clamp(x, g.placeholder([3], mg.int32, name="lo"), 6)
    with pytest.raises(mg.ShapeError, match="clamp"):
        g.clamp(x, g.placeholder([2], mg.float32, name="lo2"), 6)
    with pytest.raises(mg.DTypeError, match="clamp"):
        g.clamp(g.placeholder([3], mg.bool, name="b"), 0, 1)
