"""The elementwise math ops against independent references (float64 NumPy, Python's math, PyTorch),
on every backend: the transcendental functions (sigmoid, sin, cos, tanh, exp, log, power, erf, exp2,
log2, rsqrt, atan2, tan, the hyperbolic and inverse functions, exp10, log10), the roundings, the
remainders, clamp, leaky ReLU, division_no_nan, the predicates, the logical and the bitwise ops.

Inputs are random over every magnitude (uniform over the bit patterns of the finite floats) plus
the edge values: ±0, subnormals, the largest floats, ±inf, NaN. Errors are counted in ulps of the
result's dtype at the exact value (a subnormal result's ulp is the smallest subnormal), and the
bounds are those docs/backends.md states.
"""
import math

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
    torch = pytest.importorskip("torch", reason="needs torch, in the oracles extra: pip install -e '.[oracles]'")
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
    mpmath = pytest.importorskip("mpmath", reason="needs mpmath, in the oracles extra: pip install -e '.[oracles]'")
    x = np.concatenate([rng.uniform(-760, 60, 3000), every_magnitude(rng, 3000, np.float64)])
    with mpmath.workdps(80):
        ref = np.array([float(1 / (1 + mpmath.exp(-mpmath.mpf(float(v))))) for v in x])
    assert_ulps(x, run("numpy", "sigmoid", x), ref, 3.0, "sigmoid float64")


def test_log_sigmoid_finite_down_to_minus_80(backend):
    """log(sigmoid(x)) and its gradient 1 - sigmoid(x), against PyTorch's logsigmoid in float64."""
    torch = pytest.importorskip("torch", reason="needs torch, in the oracles extra: pip install -e '.[oracles]'")
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
    """Positive bases of every magnitude with exponents that keep the result in float32's range."""
    a = every_magnitude(rng, 50000, positive=True)
    a = a[(a != 0) & (a != 1)]
    b = (rng.uniform(-80, 80, a.size) / np.log(a.astype(np.float64))).astype(F32)
    ref = np.power(a.astype(np.float64), b.astype(np.float64))
    assert_ulps(a, run(backend, "power", a, b), ref, 2.5, f"power on {backend}", backend)


def test_power_within_2_ulp_over_the_whole_float32_range(backend, rng):
    """Against float64 NumPy: results from the subnormals to the overflow (log2 of the result
    uniform in [-152, 130]), bases next to 1 with exponents up to 1e9, negative bases with integer
    exponents, small integer powers. b * log2(a) is carried to about 2^-33 on the webgpu backend:
    in float32 it lost |b * log2(a)| * 2^-24, 34 ulp at 0.5^-104 (docs/arithmetic.md)."""
    a = every_magnitude(rng, 60000, positive=True)
    a = a[(a != 0) & (a != 1)]
    b = (rng.uniform(-152, 130, a.size) / np.log2(a.astype(np.float64))).astype(F32)
    near = (1 + rng.integers(-3000, 3000, 20000) * 2.0 ** -23).astype(F32)
    near = near[near != 1]
    b_near = (rng.uniform(-150, 128, near.size) / np.log2(near.astype(np.float64))).astype(F32)
    neg = -every_magnitude(rng, 30000, positive=True)
    neg = neg[neg != 0]
    b_neg = np.round(rng.uniform(-150, 128, neg.size) / np.log2(-neg.astype(np.float64))).astype(F32)
    small = rng.uniform(0.5, 3, 20000).astype(F32)
    b_small = rng.integers(-60, 60, small.size).astype(F32)
    x = np.concatenate([a, near, neg, small, np.array([0.5, 2.0, 10.0], F32)])
    y = np.concatenate([b, b_near, b_neg, b_small, np.array([-104.0, 127.5, 38.0], F32)])
    got = run(backend, "power", x, y)
    with np.errstate(all="ignore"):
        ref = np.power(x.astype(np.float64), y.astype(np.float64))
    assert_ulps(x, got, ref, 2.0, f"power on {backend}", backend)
    assert got[-3] == F32(2.028241e31)  # 0.5 ** -104 = 2^104 exactly


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
    torch = pytest.importorskip("torch", reason="needs torch, in the oracles extra: pip install -e '.[oracles]'")
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


def test_clamp_gradient_with_nan_operands_follows_the_forward(backend):
    """The gradient goes to the operand the result came from, by the forward's own rule
    (fmin(fmax(x, lo), hi), NaN-ignoring): a NaN bound passes x through, so x gets dy. The
    reference is a central finite difference of that rule in float64, per operand."""
    cases = [(2.0, np.nan, 5.0), (7.0, np.nan, 5.0), (2.0, 0.0, np.nan), (-1.0, 0.0, np.nan),
             (np.nan, 0.0, 5.0), (np.nan, np.nan, 5.0), (2.0, np.nan, np.nan), (np.nan, 1.0, np.nan),
             (3.0, 4.0, 1.0), (0.5, 4.0, 1.0), (-2.0, -1.0, 1.0), (0.25, -1.0, 1.0), (3.0, -1.0, 1.0)]
    xv, lov, hiv = (np.array(c, F32) for c in zip(*cases))

    def fwd(v, a, b):
        m = a if np.isnan(v) else (v if np.isnan(a) else max(v, a))
        return b if np.isnan(m) else (m if np.isnan(b) else min(m, b))

    def fd(k):
        out = []
        for c in cases:
            up, down = list(c), list(c)
            up[k] += 1e-3
            down[k] -= 1e-3
            d = (fwd(*up) - fwd(*down)) / 2e-3
            out.append(0.0 if np.isnan(d) else d)
        return np.array(out, F32)
    g = mg.Graph()
    x, lo, hi = (g.placeholder([len(cases)], mg.float32, name=n) for n in ("x", "lo", "hi"))
    y = g.clamp(x, lo, hi)
    grads = g.gradients(g.reduction_sum(y, axes=None), [x, lo, hi])
    out = g.run({x: xv, lo: lov, hi: hiv}, [y] + [grads[t] for t in (x, lo, hi)], backend=backend)
    np.testing.assert_array_equal(out[y], np.array([fwd(*c) for c in cases], F32))
    for k, t in enumerate((x, lo, hi)):
        np.testing.assert_allclose(out[grads[t]], fd(k), atol=1e-3, err_msg=t.name)
    np.testing.assert_array_equal(out[grads[x]][:2], [1.0, 0.0])  # clamp(2, NaN, 5) = 2: x's gradient


def test_clamp_errors():
    g = mg.Graph()
    x = g.placeholder([3], mg.float32, name="x")
    with pytest.raises(mg.DTypeError, match="clamp"):
        g.clamp(x, g.placeholder([3], mg.int32, name="lo"), 6)
    with pytest.raises(mg.ShapeError, match="clamp"):
        g.clamp(x, g.placeholder([2], mg.float32, name="lo2"), 6)
    with pytest.raises(mg.DTypeError, match="clamp"):
        g.clamp(g.placeholder([3], mg.bool, name="b"), 0, 1)


# --- erf, exponent_base2, logarithm_base2, reverse_square_root, atan2 ---------------------------

def test_erf_every_magnitude(backend, rng):
    """Against Python's float64 math.erf: within 2 ulp in float32 (docs/arithmetic.md), odd,
    erf(±inf) = ±1, and float16 computed in float32 and rounded once."""
    x = np.concatenate([every_magnitude(rng, 30000), rng.uniform(-5, 5, 30000).astype(F32),
                        np.linspace(-4.5, 4.5, 9001, dtype=F32), np.array(EDGES, F32)])
    ref = np.array([math.erf(v) if not np.isnan(v) else np.nan for v in x.astype(np.float64)])
    got = run(backend, "erf", x)
    assert_ulps(x, got, ref, 2.0, f"erf on {backend}", backend)
    np.testing.assert_array_equal(got, -run(backend, "erf", -x))
    h = np.linspace(-4, 4, 801).astype(np.float16)
    href = np.array([math.erf(v) for v in h.astype(np.float64)])
    assert_ulps(h, run(backend, "erf", h), href, 1.0, f"erf float16 on {backend}", backend)


def test_erf_against_torch(backend, rng):
    torch = pytest.importorskip("torch", reason="needs torch, in the oracles extra: pip install -e '.[oracles]'")
    x = rng.uniform(-4, 4, 5000).astype(F32)
    want = torch.special.erf(torch.from_numpy(x.astype(np.float64))).numpy()
    assert_ulps(x, run(backend, "erf", x), want, 2.0, "erf vs torch")


def test_exponent_base2_every_magnitude(backend, rng):
    """Exact powers of two for integers, subnormal results down to 2^-149, inf from 128."""
    x = np.concatenate([rng.uniform(-155, 130, 50000).astype(F32), every_magnitude(rng, 20000),
                        np.arange(-149, 128, dtype=F32), np.array(EDGES, F32)])
    with np.errstate(over="ignore"):
        ref = np.exp2(x.astype(np.float64))
    got = run(backend, "exponent_base2", x)
    assert_ulps(x, got, ref, 2.0, f"exponent_base2 on {backend}", backend)
    ints = np.arange(-126, 128, dtype=F32)
    np.testing.assert_array_equal(run(backend, "exponent_base2", ints), np.exp2(ints.astype(np.float64)).astype(F32))


def test_logarithm_base2_every_magnitude(backend, rng):
    """Exact at powers of two (subnormal ones too); -inf at ±0, NaN below zero."""
    x = np.concatenate([every_magnitude(rng, 100000, positive=True),
                        rng.integers(1, 1 << 23, 20000).astype(np.uint32).view(F32), np.array(EDGES, F32)])
    with np.errstate(divide="ignore", invalid="ignore"):
        ref = np.log2(x.astype(np.float64))
    assert_ulps(x, run(backend, "logarithm_base2", x), ref, 2.0, f"logarithm_base2 on {backend}")
    p = np.exp2(np.arange(-149, 128, dtype=np.float64)).astype(F32)
    np.testing.assert_array_equal(run(backend, "logarithm_base2", p), np.arange(-149, 128, dtype=F32))
    np.testing.assert_array_equal(run(backend, "logarithm_base2", np.array([0.0, -0.0, -1.0, np.inf], F32)),
                                  np.array([-np.inf, -np.inf, np.nan, np.inf], F32))


def test_reverse_square_root_every_magnitude(backend, rng):
    """1 / sqrt(x): +inf at +0 and -inf at -0 (IEEE's rsqrt), 0 at +inf, NaN below zero."""
    x = np.concatenate([every_magnitude(rng, 100000, positive=True), np.array(EDGES, F32)])
    with np.errstate(divide="ignore", invalid="ignore"):
        ref = 1.0 / np.sqrt(x.astype(np.float64))
    assert_ulps(x, run(backend, "reverse_square_root", x), ref, 2.0, f"reverse_square_root on {backend}", backend)
    got = run(backend, "reverse_square_root", np.array([0.0, -0.0, np.inf, -4.0, 4.0], F32))
    np.testing.assert_array_equal(got, np.array([np.inf, -np.inf, 0.0, np.nan, 0.5], F32))


def test_atan2_every_quadrant_and_special_values(backend, rng):
    """C99's atan2 (NumPy's float64 arctan2): every quadrant and magnitude within 2.5 ulp, and the
    signed zeros and infinities exactly."""
    y = np.concatenate([every_magnitude(rng, 40000), rng.uniform(-3, 3, 40000).astype(F32)])
    x = np.concatenate([every_magnitude(rng, 40000), rng.uniform(-3, 3, 40000).astype(F32)])
    n = min(x.size, y.size)
    y, x = y[:n], x[:n]
    sp = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 1e-45, -3e38], F32)
    ys, xs = (a.ravel() for a in np.meshgrid(sp, sp))
    y, x = np.concatenate([y, ys]), np.concatenate([x, xs])
    ref = np.arctan2(y.astype(np.float64), x.astype(np.float64))
    got = run(backend, "atan2", y, x)
    assert_ulps(y, got, ref, 2.5, f"atan2 on {backend}", backend)
    want = np.arctan2(ys.astype(np.float64), xs.astype(np.float64)).astype(F32)
    np.testing.assert_array_equal(got[-ys.size:], want)
    assert np.array_equal(np.signbit(got[-ys.size:]), np.signbit(want))


# --- rounding -----------------------------------------------------------------------------------

HALVES = np.array([0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 3.5, -3.5, 0.49999997, -0.49999997, 8388607.5, -8388607.5], F32)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_round_is_half_away_from_zero_and_rint_half_to_even(backend, dtype):
    """Metal's round (and C's): 0.5 -> 1, 1.5 -> 2, 2.5 -> 3; rint: 0.5 -> 0, 1.5 -> 2, 2.5 -> 2.
    Zero results keep the sign: round(-0.49999997) = rint(-0.5) = -0.0."""
    x = HALVES if dtype == np.float32 else HALVES[:8].astype(dtype)
    got_round, got_rint = run(backend, "round", x), run(backend, "rint", x)
    want_round = np.array([math.copysign(math.floor(abs(v) + 0.5), v) if abs(v) != 0.49999997 else math.copysign(0.0, v)
                           for v in x.astype(np.float64)], dtype)
    want_rint = np.array([math.copysign(float(round(v)), v) for v in x.astype(np.float64)], dtype)  # Python's round: to even
    np.testing.assert_array_equal(got_round, want_round)
    np.testing.assert_array_equal(got_rint, want_rint)
    assert list(got_round[:6]) == [1, -1, 2, -2, 3, -3]
    assert list(got_rint[:6]) == [0, 0, 2, -2, 2, -2]
    assert np.array_equal(np.signbit(got_round), np.signbit(x)) and np.array_equal(np.signbit(got_rint), np.signbit(x))


@pytest.mark.parametrize("op, fn", [("floor", math.floor), ("ceil", math.ceil), ("round", None), ("rint", None)])
def test_rounding_every_magnitude_and_edges(backend, rng, op, fn):
    """Against Python's integer rounding on float64 (math.floor/ceil, Python's round for rint, half away
    for round); NaN, ±inf, ±0 and large floats pass through, integers of int32/uint32 are unchanged."""
    x = np.concatenate([every_magnitude(rng, 20000), rng.uniform(-10, 10, 20000).astype(F32),
                        np.round(rng.uniform(-10, 10, 2000)).astype(F32) + F32(0.5), np.array(EDGES, F32)])
    ref_fn = {"floor": math.floor, "ceil": math.ceil, "rint": round,
              "round": lambda v: math.floor(abs(v) + 0.5) if v >= 0 else -math.floor(abs(v) + 0.5)}[op]
    want = np.array([v if not math.isfinite(v) else math.copysign(float(ref_fn(v)), v) for v in x.astype(np.float64)], F32)
    got = run(backend, op, x)
    np.testing.assert_array_equal(got, want)
    assert np.array_equal(np.signbit(got[~np.isnan(x)]), np.signbit(x[~np.isnan(x)])), f"{op} keeps the sign"
    for dt in (np.int32, np.uint32):
        iv = rng.integers(0 if dt == np.uint32 else -1000, 1000, 50).astype(dt)
        got = run(backend, op, iv)
        assert got.dtype == dt
        np.testing.assert_array_equal(got, iv)


def test_rounding_gradient_is_zero(backend):
    g = mg.Graph()
    x = g.placeholder([4], mg.float32, name="x")
    loss = g.reduction_sum(g.addition(g.addition(g.floor(x), g.ceil(x)), g.addition(g.round(x), g.rint(x))), axes=None)
    dx = g.gradients(loss, [x])[x]
    np.testing.assert_array_equal(g.run({x: np.array([0.3, -1.7, 2.5, 9.0], F32)}, [dx], backend=backend)[dx], np.zeros(4, F32))


# --- modulo, floor_modulo -----------------------------------------------------------------------

def test_modulo_truncates_and_floor_modulo_takes_the_divisor_sign(backend):
    """modulo is C's fmod (sign of the dividend), floor_modulo Python's % (sign of the divisor)."""
    a = np.array([7, -7, 7, -7, 5.5, -5.5, 6, -6, 0, -0.0], F32)
    b = np.array([3, 3, -3, -3, 2, 2, 3, 3, 2, -2], F32)
    got_m, got_f = run(backend, "modulo", a, b), run(backend, "floor_modulo", a, b)
    want_m = np.array([math.fmod(x, y) for x, y in zip(a.tolist(), b.tolist())], F32)
    want_f = np.array([x % y for x, y in zip(a.tolist(), b.tolist())], F32)
    np.testing.assert_array_equal(got_m, want_m)
    np.testing.assert_array_equal(got_f, want_f)
    assert list(got_m[:4]) == [1, -1, 1, -1] and list(got_f[:4]) == [1, 2, -2, -1]
    assert np.array_equal(np.signbit(got_m), np.signbit(want_m)) and np.array_equal(np.signbit(got_f), np.signbit(want_f))
    for dt in (np.int32,):
        ai, bi = a[:8].astype(dt), b[:8].astype(dt)
        np.testing.assert_array_equal(run(backend, "modulo", ai, bi),
                                      np.array([math.fmod(x, y) for x, y in zip(ai.tolist(), bi.tolist())], dt))
        np.testing.assert_array_equal(run(backend, "floor_modulo", ai, bi), np.array([x % y for x, y in zip(ai.tolist(), bi.tolist())], dt))


def test_modulo_every_magnitude_is_exact(backend, rng):
    """The remainder of two floats is a float: both ops are exact, for every magnitude and subnormals."""
    a, b = every_magnitude(rng, 40000), every_magnitude(rng, 40000)
    n = min(a.size, b.size)
    a, b = a[:n], b[:n]
    b = np.where(rng.random(n) < 0.3, b * F32(1e-30), b).astype(F32)
    with np.errstate(all="ignore"):
        want_f = np.where(b == 0, F32(0), np.mod(a, b)).astype(F32)
        want_m = np.fmod(a.astype(np.float64), b.astype(np.float64)).astype(F32)  # float64 fmod is exact too
    got_m, got_f = run(backend, "modulo", a, b), run(backend, "floor_modulo", a, b)
    np.testing.assert_array_equal(got_m, want_m)
    np.testing.assert_array_equal(got_f, want_f)
    assert np.array_equal(np.signbit(got_f), np.signbit(want_f))


def test_modulo_zero_divisor_and_special_values(backend):
    """A zero divisor: NaN for float modulo (fmod), 0 for floor_modulo (Apple: "returns 0 if divisor is
    0") and 0 for integers; fmod(±inf, y) is NaN, fmod(x, ±inf) is x; -5 floor_modulo inf is inf."""
    a = np.array([5, -5, 0, np.inf, 5, -5, np.nan, 5], F32)
    b = np.array([0, -0.0, 0, 2, np.inf, np.inf, 2, np.nan], F32)
    np.testing.assert_array_equal(run(backend, "modulo", a, b), np.array([np.nan, np.nan, np.nan, np.nan, 5, -5, np.nan, np.nan], F32))
    np.testing.assert_array_equal(run(backend, "floor_modulo", a, b), np.array([0, 0, 0, np.nan, 5, np.inf, np.nan, np.nan], F32))
    ai = np.array([5, -5, -2 ** 31, -2 ** 31], np.int32)
    bi = np.array([0, 0, -1, 0], np.int32)
    np.testing.assert_array_equal(run(backend, "modulo", ai, bi), np.zeros(4, np.int32))
    np.testing.assert_array_equal(run(backend, "floor_modulo", ai, bi), np.zeros(4, np.int32))
    ui = np.array([5, 7, 4294967295], np.uint32)
    np.testing.assert_array_equal(run(backend, "modulo", ui, np.array([0, 3, 10], np.uint32)), np.array([0, 1, 5], np.uint32))


def test_modulo_gradients_match_torch(backend, rng):
    """d/da = 1 and d/db = -trunc(a / b) (torch.fmod) or -floor(a / b) (torch.remainder)."""
    torch = pytest.importorskip("torch", reason="needs torch, in the oracles extra: pip install -e '.[oracles]'")
    av = rng.uniform(-6, 6, (3, 4)).astype(F32)
    bv = (rng.uniform(0.7, 2.5, (4,)) * np.array([1, -1, 1, -1])).astype(F32)
    for op, tfn in (("modulo", torch.fmod), ("floor_modulo", torch.remainder)):
        g = mg.Graph()
        a, b = g.placeholder([3, 4], name="a"), g.placeholder([4], name="b")
        y = getattr(g, op)(a, b)
        gr = g.gradients(g.reduction_sum(y, axes=None), [a, b])
        out = g.run({a: av, b: bv}, [y, gr[a], gr[b]], backend=backend)
        ta, tb = torch.tensor(av, requires_grad=True), torch.tensor(bv, requires_grad=True)
        ty = tfn(ta, tb)
        ty.sum().backward()
        np.testing.assert_allclose(out[y], ty.detach().numpy(), rtol=1e-6, atol=1e-6, err_msg=op)
        np.testing.assert_allclose(out[gr[a]], ta.grad.numpy(), err_msg=op)
        np.testing.assert_allclose(out[gr[b]], tb.grad.numpy(), rtol=1e-5, err_msg=op)


# --- is_nan, is_infinite, is_finite, logical ops ------------------------------------------------

def test_predicates_are_bool(backend):
    x = np.array(EDGES + [1.0, -2.5], F32)
    for op, fn in (("is_nan", math.isnan), ("is_infinite", math.isinf), ("is_finite", math.isfinite)):
        got = run(backend, op, x)
        assert got.dtype == np.bool_
        np.testing.assert_array_equal(got, np.array([fn(v) for v in x.tolist()]))
        with np.errstate(over="ignore"):  # the largest float32 is inf in float16
            h = x.astype(np.float16)
        np.testing.assert_array_equal(run(backend, op, h), np.array([fn(v) for v in h.tolist()]))
        got = run(backend, op, np.array([-5, 0, 7], np.int32))
        np.testing.assert_array_equal(got, np.full(3, op == "is_finite"))


def test_logical_ops_truth_tables(backend):
    a = np.array([False, False, True, True])
    b = np.array([False, True, False, True])
    tables = {"logical_and": [0, 0, 0, 1], "logical_or": [0, 1, 1, 1], "logical_xor": [0, 1, 1, 0]}
    for op, want in tables.items():
        got = run(backend, op, a, b)
        assert got.dtype == np.bool_
        np.testing.assert_array_equal(got, np.array(want, bool), err_msg=op)
    np.testing.assert_array_equal(run(backend, "logical_not", a), ~a)
    g = mg.Graph()
    p = g.placeholder([2, 1], mg.bool, name="p")
    q = g.placeholder([3], mg.bool, name="q")
    y = g.logical_xor(p, g.logical_not(q))
    assert y.shape == (2, 3)
    pv, qv = np.array([[True], [False]]), np.array([True, False, True])
    np.testing.assert_array_equal(g.run({p: pv, q: qv}, [y], backend=backend)[y], pv ^ ~qv)


@pytest.mark.parametrize("op", ["logical_and", "logical_or", "logical_xor", "logical_not"])
def test_logical_ops_refuse_non_bool(op):
    g = mg.Graph()
    x = g.placeholder([3], mg.float32, name="x")
    b = g.placeholder([3], mg.bool, name="b")
    args = (x,) if op == "logical_not" else (b, x)
    with pytest.raises(mg.DTypeError, match=r"takes bool tensors, got float32"):
        getattr(g, op)(*args)
    if op != "logical_not":
        with pytest.raises(mg.DTypeError, match=r"takes bool tensors, got int32"):
            getattr(g, op)(g.placeholder([3], mg.int32, name="i"), g.placeholder([3], mg.int32, name="j"))


def test_predicates_and_logical_ops_are_not_differentiable():
    from minigraph.ops import OPS
    for t in ("is_nan", "is_infinite", "is_finite", "logical_and", "logical_or", "logical_xor", "logical_not"):
        assert not OPS[t].differentiable and OPS[t].grad is None, t
    for t in ("floor", "round", "modulo", "atan2", "erf", "leaky_relu", "clamp"):
        assert OPS[t].differentiable and OPS[t].grad is not None, t


# --- leaky_relu ---------------------------------------------------------------------------------

@pytest.mark.parametrize("alpha", [0.2, 0.01, 1.5, -0.5])
def test_leaky_relu_and_gradient_match_torch(backend, rng, alpha):
    torch = pytest.importorskip("torch", reason="needs torch, in the oracles extra: pip install -e '.[oracles]'")
    xv = np.concatenate([rng.uniform(-4, 4, 50), [0.0, -0.0, np.inf, -np.inf, np.nan]]).astype(F32)
    g = mg.Graph()
    x = g.placeholder([xv.size], mg.float32, name="x")
    y = g.leaky_relu(x, alpha)
    dx = g.gradients(g.reduction_sum(y, axes=None), [x])[x]
    out = g.run({x: xv}, [y, dx], backend=backend)
    tx = torch.tensor(xv, requires_grad=True)
    ty = torch.nn.functional.leaky_relu(tx, alpha)
    ty.sum().backward()
    np.testing.assert_array_equal(out[y], ty.detach().numpy())
    fin = np.isfinite(xv) & (xv != 0)  # torch's gradient at 0 is alpha, minigraph's 1 (x >= 0 takes x)
    np.testing.assert_array_equal(out[dx][fin], tx.grad.numpy()[fin])
    assert out[dx][50] == 1.0 and np.isnan(out[y][-1])


@pytest.mark.parametrize("alpha", [0.0, -0.0, 1.0, -1.0, 0.2, 1e-45, 3e38])
@pytest.mark.parametrize("dtype", [F32, np.float16])
def test_leaky_relu_is_x_or_alpha_times_x_bit_for_bit(backend, alpha, dtype):
    """x >= 0 ? x : alpha * x with IEEE products for every alpha, 0 included: NaN stays NaN,
    0 * -inf is NaN, 0 * -3 is -0 (the shader compiler must not fold alpha * x)."""
    xv = np.array([np.nan, -np.inf, np.inf, -3.0, -1e-30, -0.0, 0.0, 2.5, -65504.0, 1e-45], dtype)
    with np.errstate(all="ignore"):
        want = np.where(xv >= 0, xv.astype(F32), F32(alpha) * xv.astype(F32)).astype(dtype)
    g = mg.Graph()
    x = g.placeholder([xv.size], dtype, name="x")
    y = g.leaky_relu(x, alpha)
    got = g.run({x: xv}, [y], backend=backend)[y]
    np.testing.assert_array_equal(got, want)
    num = ~np.isnan(want)
    assert np.array_equal(np.signbit(got[num]), np.signbit(want[num])), (got, want)


def test_leaky_relu_gradient_is_mpsgraphs_op(backend, rng):
    """g.gradients inserts leakyReLUGradient(withIncomingGradient:sourceTensor:alphaTensor:name:);
    called directly, alpha_tensor broadcasts; a loop over the elements is the reference."""
    g = mg.Graph()
    x = g.placeholder([2, 3], mg.float32, name="x")
    dx = g.gradients(g.reduction_sum(g.leaky_relu(x, 0.25)), [x])[x]
    assert dx.operation.type == "leaky_relu_gradient"
    dy = g.placeholder([2, 3], mg.float32, name="dy")
    alpha = g.placeholder([3], mg.float32, name="alpha")
    direct = g.leaky_relu_gradient(dy, x, alpha)
    xv, dyv, av = (rng.uniform(-2, 2, s).astype(F32) for s in ((2, 3), (2, 3), (3,)))
    out = g.run({x: xv, dy: dyv, alpha: av}, [dx, direct], backend=backend)
    np.testing.assert_array_equal(out[dx], np.where(xv >= 0, 1, F32(0.25)).astype(F32))
    want = np.array([[dyv[i, j] if xv[i, j] >= 0 else av[j] * dyv[i, j] for j in range(3)] for i in range(2)], F32)
    np.testing.assert_array_equal(out[direct], want)
    with pytest.raises(mg.ShapeError, match="leaky_relu_gradient"):
        g.leaky_relu_gradient(g.placeholder([4, 2, 3], mg.float32, name="big"), x, 0.1)


def test_leaky_relu_refuses_bad_alpha_and_integers():
    g = mg.Graph()
    x = g.placeholder([3], mg.float32, name="x")
    with pytest.raises(mg.MiniGraphError, match="alpha must be a finite number"):
        g.leaky_relu(x, float("nan"))
    with pytest.raises(mg.MiniGraphError, match="alpha must be a finite number"):
        g.leaky_relu(x, "0.1")
    with pytest.raises(mg.DTypeError, match="leaky_relu"):
        g.leaky_relu(g.placeholder([3], mg.int32, name="i"), 0.1)


# --- tan, the hyperbolic and inverse functions, 10^x, log10 (MPSGraph's further unary math) ------

def _near_one(rng, n, sign=1.0):
    """float32 values within 1e-3 of ±1 and the last few below 1: where asin, acos and atanh bend."""
    return np.concatenate([(sign * (1 - rng.uniform(0, 1e-3, n))),
                           sign * (1 - np.arange(1, 200) * 2.0 ** -24)]).astype(F32)


def _inputs(rng, op):
    n = 40000
    wide = every_magnitude(rng, n)
    if op == "tan":
        return np.concatenate([wide, rng.uniform(-10, 10, n), rng.uniform(-1e4, 1e4, n // 2),
                               HARD_TRIG, [-v for v in HARD_TRIG]]).astype(F32)
    if op in ("asin", "acos", "atanh"):
        return np.concatenate([wide, rng.uniform(-1, 1, n).astype(F32), _near_one(rng, 5000),
                               _near_one(rng, 5000, -1.0)])
    if op == "acosh":
        return np.concatenate([wide, rng.uniform(1, 10, n), 1 + rng.uniform(0, 1e-2, n // 2),
                               1 + np.arange(0, 2000) * 2.0 ** -23]).astype(F32)
    if op == "exponent_base10":
        return np.concatenate([wide, rng.uniform(-46, 39, n), np.arange(-45, 39)]).astype(F32)
    if op == "logarithm_base10":
        return np.concatenate([every_magnitude(rng, n, positive=True), rng.uniform(0.5, 2, n),
                               rng.integers(1, 1 << 23, 5000).astype(np.uint32).view(F32),
                               10.0 ** np.arange(-10, 11)]).astype(F32)
    return np.concatenate([wide, rng.uniform(-90 if op in ("sinh", "cosh") else -10,
                                             90 if op in ("sinh", "cosh") else 10, n)]).astype(F32)


# op -> (float64 reference, the ulp bound the webgpu kernels are held to; docs/arithmetic.md has the
# measured figures)
MORE_MATH = {"tan": (np.tan, 3.0), "sinh": (np.sinh, 2.0), "cosh": (np.cosh, 2.0), "asin": (np.arcsin, 2.5),
             "acos": (np.arccos, 1.5), "atan": (np.arctan, 2.0), "asinh": (np.arcsinh, 3.0),
             "acosh": (np.arccosh, 2.5), "atanh": (np.arctanh, 1.5),
             "exponent_base10": (lambda x: np.power(10.0, x), 1.5), "logarithm_base10": (np.log10, 2.0)}


@pytest.mark.parametrize("op", sorted(MORE_MATH))
def test_more_math_every_magnitude(backend, rng, op):
    """Every float32 magnitude plus the hard places (multiples of pi/2 for tan, ±1 for the inverse
    functions, 1 for acosh, the overflow and the subnormals for 10^x) against float64 NumPy; the
    special values (NaN outside the domain, ±inf, signed zeros) exactly."""
    ref_fn, bound = MORE_MATH[op]
    x = np.concatenate([_inputs(rng, op), np.array(EDGES, F32)])
    with np.errstate(all="ignore"):
        ref = ref_fn(x.astype(np.float64))
    assert_ulps(x, run(backend, op, x), ref, bound, f"{op} on {backend}", backend)


def test_more_math_special_values(backend):
    x = np.array([0.0, -0.0, 1.0, -1.0, 2.0, np.inf, -np.inf, np.nan, 89.0, 89.5, -45.0, 38.6], F32)
    with np.errstate(all="ignore"):
        for op, (ref_fn, _) in MORE_MATH.items():
            want = ref_fn(x.astype(np.float64)).astype(F32)
            got = run(backend, op, x)
            np.testing.assert_allclose(got, want, rtol=4e-7, err_msg=op)
            fin = ~np.isnan(want)
            assert np.array_equal(np.signbit(got[fin]), np.signbit(want[fin])), op
    assert run(backend, "atanh", np.array([1.0, -1.0], F32)).tolist() == [np.inf, -np.inf]
    big = np.array([89.4], F32)  # beyond e^x's overflow
    assert_ulps(big, run(backend, "sinh", big), np.sinh(big.astype(np.float64)), 2.0, "sinh(89.4)")


def test_more_math_gradients_at_a_few_points(backend):
    """The rules against their closed forms (the finite-difference checks are in tests/test_autodiff.py)."""
    xv = np.array([0.3, -0.7, 0.9], F32)
    rules = {"tan": lambda x: 1 / np.cos(x) ** 2, "sinh": np.cosh, "cosh": np.sinh,
             "asin": lambda x: 1 / np.sqrt(1 - x * x), "acos": lambda x: -1 / np.sqrt(1 - x * x),
             "atan": lambda x: 1 / (1 + x * x), "asinh": lambda x: 1 / np.sqrt(x * x + 1),
             "atanh": lambda x: 1 / (1 - x * x), "exponent_base10": lambda x: 10.0 ** x * math.log(10),
             "logarithm_base10": lambda x: 1 / (x * math.log(10)), "acosh": lambda x: 1 / np.sqrt(x * x - 1)}
    for op, d in rules.items():
        v = np.abs(xv) + 1.5 if op == "acosh" else np.abs(xv) if op == "logarithm_base10" else xv
        g = mg.Graph()
        x = g.placeholder([3], mg.float32, name="x")
        dx = g.gradients(g.reduction_sum(getattr(g, op)(x), axes=None), [x])[x]
        got = g.run({x: v}, [dx], backend=backend)[dx]
        np.testing.assert_allclose(got, d(v.astype(np.float64)), rtol=2e-6, err_msg=op)


def test_truncate_signbit_and_division_no_nan(backend):
    x = np.array([2.7, -2.7, 0.5, -0.5, -0.0, 8388607.5, -1e30, np.inf, -np.inf, np.nan], F32)
    got = run(backend, "truncate", x)
    np.testing.assert_array_equal(got, np.trunc(x))
    assert np.array_equal(np.signbit(got), np.signbit(np.trunc(x)))  # truncate(-0.5) = -0
    np.testing.assert_array_equal(run(backend, "truncate", np.array([-7, 7], np.int32)), [-7, 7])
    s = np.array([0.0, -0.0, 1e-45, -1e-45, np.inf, -np.inf, np.nan, -np.nan, -2.0], F32)
    sb = run(backend, "signbit", s)
    assert sb.dtype == np.bool_
    np.testing.assert_array_equal(sb, np.signbit(s))
    np.testing.assert_array_equal(run(backend, "signbit", np.array([-(2 ** 31), -1, 0, 5], np.int32)),
                                  [True, True, False, False])
    np.testing.assert_array_equal(run(backend, "signbit", np.array([0, 2 ** 32 - 1], np.uint32)), [False, False])
    a = np.array([1, -1, 0, np.inf, np.nan, 3, 6, -0.0], F32)
    b = np.array([0, -0.0, 0, 0, 0, np.nan, 4, 2], F32)
    got = run(backend, "division_no_nan", a, b)
    np.testing.assert_array_equal(got, [0, 0, 0, 0, 0, np.nan, 1.5, -0.0])
    assert np.signbit(got[-1])
    # the gradient is division's where b != 0 and 0 where b == 0
    g = mg.Graph()
    pa, pb = g.placeholder([3], name="a"), g.placeholder([3], name="b")
    grads = g.gradients(g.reduction_sum(g.division_no_nan(pa, pb), axes=None), [pa, pb])
    out = g.run({pa: np.array([1, 2, 3], F32), pb: np.array([0, 2, -4], F32)}, [grads[pa], grads[pb]],
                backend=backend)
    np.testing.assert_allclose(out[grads[pa]], [0, 0.5, -0.25])
    np.testing.assert_allclose(out[grads[pb]], [0, -0.5, -3 / 16])


def test_nand_nor_xnor_truth_tables(backend):
    a = np.array([False, False, True, True])
    b = np.array([False, True, False, True])
    for op, want in {"logical_nand": [1, 1, 1, 0], "logical_nor": [1, 0, 0, 0], "logical_xnor": [1, 0, 0, 1]}.items():
        got = run(backend, op, a, b)
        assert got.dtype == np.bool_
        np.testing.assert_array_equal(got, np.array(want, bool), err_msg=op)
        with pytest.raises(mg.DTypeError, match=rf"{op}.*takes bool tensors, got float32"):
            getattr(mg.Graph(), op)(np.ones(2, F32), np.ones(2, F32))


# --- bitwise ops --------------------------------------------------------------------------------

INT_DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]
BIT_REFS = {"bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or, "bitwise_xor": np.bitwise_xor,
            "bitwise_left_shift": np.left_shift, "bitwise_right_shift": np.right_shift,
            "bitwise_not": np.invert,
            "bitwise_population_count": lambda x: np.bitwise_count(x.view(f"u{x.itemsize}")).astype(x.dtype)}


def _int_values(rng, dtype, n):
    info = np.iinfo(dtype)
    edges = [0, 1, info.max, info.min, info.max // 2 + 1] + ([-1, info.min + 1] if info.min < 0 else [])
    return np.concatenate([rng.integers(info.min, int(info.max) + 1, n, dtype=np.int64 if info.min < 0 or
                                        dtype != np.uint64 else np.uint64).astype(dtype), np.array(edges, dtype)])


@pytest.mark.parametrize("op", sorted(BIT_REFS))
def test_bitwise_ops_exact_against_numpy(backend, rng, op):
    """Every integer dtype on the numpy backend, int32 and uint32 (the webgpu backend's) on every one:
    the same bits as NumPy, shift counts past the width and negative counts included."""
    dtypes = INT_DTYPES if backend == "numpy" else [np.int32, np.uint32]
    for dt in dtypes:
        a = _int_values(rng, dt, 300)
        if op in ("bitwise_not", "bitwise_population_count"):
            args = (a,)
        elif "shift" in op:
            width = np.dtype(dt).itemsize * 8
            counts = np.arange(a.size) % (width + 10)  # 0 .. width + 9
            b = counts.astype(dt)
            if np.iinfo(dt).min < 0:
                b[::7] = -(counts[::7] % 3 + 1).astype(dt)  # negative counts: past the width
            args = (a, b)
        else:
            args = (a, _int_values(rng, dt, 300)[::-1].copy())
        got = run(backend, op, *args)
        want = BIT_REFS[op](*args)
        assert got.dtype == dt, (op, dt)
        np.testing.assert_array_equal(got, want, err_msg=f"{op} {np.dtype(dt).name} on {backend}")


def test_shifts_past_the_width_and_negative_counts(backend):
    """The documented choice (Apple's pages say nothing): the count is read as unsigned, so 32 and
    beyond, and any negative count, shift every bit out: 0, or -1 for a negative signed value
    shifted right (arithmetic); unsigned right shifts are logical."""
    a = np.array([1, -1, -8, 5, -(2 ** 31), 12], np.int32)
    c = np.array([31, 32, 3, -1, 40, 2], np.int32)
    np.testing.assert_array_equal(run(backend, "bitwise_left_shift", a, c), [-(2 ** 31), 0, -64, 0, 0, 48])
    np.testing.assert_array_equal(run(backend, "bitwise_right_shift", a, c), [0, -1, -1, 0, -1, 3])
    u = np.array([2 ** 32 - 1, 2 ** 31, 1, 7], np.uint32)
    k = np.array([31, 32, 33, 1], np.uint32)
    np.testing.assert_array_equal(run(backend, "bitwise_right_shift", u, k), [1, 0, 0, 3])
    np.testing.assert_array_equal(run(backend, "bitwise_left_shift", u, k), [2 ** 31, 0, 0, 14])
    np.testing.assert_array_equal(run(backend, "bitwise_population_count", np.array([-1, 0, 255, -(2 ** 31)], np.int32)),
                                  [32, 0, 8, 1])


@pytest.mark.parametrize("op", sorted(BIT_REFS))
def test_bitwise_ops_refuse_bool_and_floats_naming_the_op(op):
    arity = 1 if op in ("bitwise_not", "bitwise_population_count") else 2
    for dtype, hint in ((mg.bool, "got bool; for bool tensors use the logical ops"), (mg.float32, "got float32")):
        g = mg.Graph()
        xs = [g.placeholder([3], dtype, name=f"x{k}") for k in range(arity)]
        with pytest.raises(mg.DTypeError, match=rf"^{op} op '{op}': this op takes integer tensors .*{hint}"):
            getattr(g, op)(*xs)
    from minigraph.ops import OPS
    assert not OPS[op].differentiable and OPS[op].since == ("13.0", "16.1")
