"""Complex numbers and Fourier transforms: the complex ops, complex arithmetic and cast, the three
transforms against numpy.fft (every axis set, odd and even sizes, inverse, scaling modes,
round_to_odd_hermitean), complex32, the webgpu kernels against numpy (and their long-loop
passes), JAX-convention gradients against finite differences, save/load, errors."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import minigraph as mg
from minigraph.backends.webgpu import loops
from minigraph.descriptors import FFTDescriptor, FFTScalingMode

SCALES = {FFTScalingMode.NONE: lambda n: 1.0, FFTScalingMode.SIZE: lambda n: 1.0 / n,
          FFTScalingMode.UNITARY: lambda n: 1.0 / np.sqrt(n)}


def cplx(rng, shape, dt=np.complex64):
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dt)


def naive_dft(x, axes, sign, scale):
    """The transform from the formula, one axis at a time, in complex128."""
    y = x.astype(np.complex128)
    for a in axes:
        n = y.shape[a]
        m = np.arange(n)
        w = np.exp(sign * 2j * np.pi * np.outer(m, m) / n)
        y = np.moveaxis(np.tensordot(np.moveaxis(y, a, -1), w, axes=([-1], [0])), -1, a)
    return y * scale


def _axes_sets(rank):
    return [list(c) for r in range(1, rank + 1) for c in itertools.combinations(range(rank), r)]


@pytest.mark.parametrize("axes", _axes_sets(3))
@pytest.mark.parametrize("inverse", [False, True])
@pytest.mark.parametrize("mode", list(FFTScalingMode))
def test_fft_matches_the_formula_and_numpy(axes, inverse, mode, rng):
    x = cplx(rng, (3, 4, 5))
    g = mg.Graph()
    p = g.placeholder(x.shape, mg.complex64)
    y = g.fast_fourier_transform(p, axes, FFTDescriptor(inverse=inverse, scaling_mode=mode))
    got = g.run({p: x}, [y])[y]
    n = int(np.prod([x.shape[a] for a in axes]))
    want = naive_dft(x, axes, 1 if inverse else -1, SCALES[mode](n))
    assert got.dtype == np.complex64 and got.shape == x.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())
    if inverse and mode == FFTScalingMode.SIZE:
        np.testing.assert_allclose(got, np.fft.ifftn(x, axes=axes), rtol=1e-5, atol=1e-6)
    if not inverse and mode == FFTScalingMode.NONE:
        np.testing.assert_allclose(got, np.fft.fftn(x, axes=axes), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shape", [(4, 6), (5, 7), (2, 3, 1), (1, 8)])
@pytest.mark.parametrize("inverse", [False, True])
def test_real_to_hermitean_and_back(shape, inverse, rng):
    x = rng.standard_normal(shape).astype(np.float32)
    axes = list(range(len(shape)))[-2:]
    g = mg.Graph()
    p = g.placeholder(shape)
    d = FFTDescriptor(inverse=inverse)
    h = g.real_to_hermitean_fft(p, axes, d)
    odd = shape[axes[-1]] % 2 == 1
    back = g.hermitean_to_real_fft(h, axes, FFTDescriptor(inverse=not inverse, scaling_mode="size",
                                                          round_to_odd_hermitean=odd))
    out = g.run({p: x}, [h, back])
    assert h.shape[axes[-1]] == shape[axes[-1]] // 2 + 1 and h.dtype == mg.complex64
    want = np.fft.rfftn(x, axes=axes)
    if inverse:
        want = np.conj(want)  # exp(+i ...) of a real signal
    np.testing.assert_allclose(out[h], want, rtol=1e-5, atol=1e-5 * np.abs(want).max())
    assert back.shape == shape
    np.testing.assert_allclose(out[back], x, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("h, odd, n", [(5, False, 8), (5, True, 9), (1, True, 1), (2, False, 2)])
def test_hermitean_to_real_lengths_and_numpy_irfft(h, odd, n, rng):
    z = cplx(rng, (3, h))
    g = mg.Graph()
    p = g.placeholder(z.shape, mg.complex64)
    y = g.hermitean_to_real_fft(p, [1], FFTDescriptor(inverse=True, scaling_mode=FFTScalingMode.SIZE,
                                                     round_to_odd_hermitean=odd))
    assert y.shape == (3, n) and y.dtype == mg.float32
    np.testing.assert_allclose(g.run({p: z}, [y])[y], np.fft.irfft(z, n=n, axis=1), rtol=1e-5, atol=1e-6)


def test_hermitean_to_real_of_one_entry_without_rounding_to_odd_is_refused():
    g = mg.Graph()
    with pytest.raises(mg.ShapeError, match="hermitean_to_real_fft.*round_to_odd_hermitean"):
        g.hermitean_to_real_fft(g.placeholder([2, 1], mg.complex64), [1])


def test_fft_of_a_real_tensor_and_of_float16_is_complex(rng):
    x = rng.standard_normal((4, 6)).astype(np.float32)
    g = mg.Graph()
    p = g.placeholder(x.shape)
    y = g.fast_fourier_transform(p, [0, 1])
    h16 = g.real_to_hermitean_fft(g.cast(p, mg.float16), [1])
    out = g.run({p: x}, [y, h16])
    assert y.dtype == mg.complex64 and h16.dtype == mg.complex32
    np.testing.assert_allclose(out[y], np.fft.fft2(x), rtol=1e-5, atol=1e-5)
    want = np.fft.rfft(x.astype(np.float16).astype(np.float64), axis=1)
    np.testing.assert_allclose(out[h16], want, rtol=2e-3, atol=2e-3 * np.abs(want).max())
    assert np.array_equal(out[h16].real, out[h16].real.astype(np.float16).astype(np.float32))  # float16 parts


def test_complex_parts_and_arithmetic(rng):
    a, b = cplx(rng, (3, 4)), cplx(rng, (4,))
    g = mg.Graph()
    pa, pb = g.placeholder(a.shape, mg.complex64), g.placeholder(b.shape, mg.complex64)
    re, im = g.real_part_of_tensor(pa), g.imaginary_part_of_tensor(pa)
    outs = {"re": re, "im": im, "conj": g.conjugate(pa), "abs2": g.absolute_square(pa),
            "planar": g.planar_tensor(pa), "rebuilt": g.complex_tensor(re, im),
            "add": g.addition(pa, pb), "sub": g.subtraction(pa, pb), "mul": g.multiplication(pa, pb),
            "div": g.division(pa, pb), "neg": g.negative(pa), "exp": g.exponent(pa), "sq": g.square(pa),
            "eq": g.equal(pa, pa), "ne": g.not_equal(pa, pb),
            "to_real": g.cast(pa, mg.float32), "to_bool": g.cast(pa, mg.bool),
            "from_real": g.cast(re, mg.complex64), "c": g.complex_constant(1.5, -2.0, shape=[2])}
    r = g.run({pa: a, pb: b}, list(outs.values()))
    got = {k: r[t] for k, t in outs.items()}
    want = {"re": a.real, "im": a.imag, "conj": np.conj(a), "abs2": np.abs(a) ** 2,
            "planar": np.concatenate([a.real, a.imag], -1), "rebuilt": a, "add": a + b, "sub": a - b,
            "mul": a * b, "div": a / b, "neg": -a, "exp": np.exp(a), "sq": a * a, "eq": np.ones(a.shape, bool),
            "ne": a != b, "to_real": a.real, "to_bool": a != 0, "from_real": a.real.astype(np.complex64),
            "c": np.full(2, 1.5 - 2j, np.complex64)}
    for k in want:
        assert got[k].shape == np.shape(want[k]) and got[k].dtype == np.asarray(want[k]).dtype, k
        np.testing.assert_allclose(got[k], want[k], rtol=1e-5, atol=1e-6, err_msg=k)
    assert outs["planar"].shape == (3, 8) and outs["abs2"].dtype == mg.float32


def test_complex32_is_fed_through_a_cast(rng):
    z = cplx(rng, (5,))
    g = mg.Graph()
    p = g.placeholder([5], mg.complex64)
    half = g.cast(p, mg.complex32)
    y = g.multiplication(half, half)
    out = g.run({p: z}, [half, y])
    z16 = (z.real.astype(np.float16) + 1j * z.imag.astype(np.float16)).astype(np.complex64)
    assert y.dtype == mg.complex32 and out[y].dtype == np.complex64
    np.testing.assert_array_equal(out[half], z16)
    np.testing.assert_allclose(out[y], z16 * z16, rtol=2e-3, atol=2e-3)
    assert np.array_equal(out[y].imag, out[y].imag.astype(np.float16).astype(np.float32))
    q = g.placeholder([5], mg.complex32)
    with pytest.raises(mg.FeedDTypeError, match="NumPy has no complex32"):
        g.run({q: z}, [g.conjugate(q)])


def test_complex_ops_of_real_tensors_and_refused_dtypes():
    g = mg.Graph()
    x = g.constant(np.array([-1.5, 2.0], np.float32))
    r = g.run({}, [g.real_part_of_tensor(x), g.imaginary_part_of_tensor(x), g.conjugate(x), g.absolute_square(x)])
    assert [list(v) for v in r.values()] == [[-1.5, 2.0], [0.0, 0.0], [-1.5, 2.0], [2.25, 4.0]]
    z = g.complex_constant(1.0, 2.0, shape=[2])
    for bad in (lambda: g.maximum(z, z), lambda: g.less_than(z, z), lambda: g.sin(z), lambda: g.relu(z)):
        with pytest.raises(mg.DTypeError, match="complex"):
            bad()
    with pytest.raises(mg.DTypeError, match="complex_tensor"):
        g.complex_tensor(g.constant(np.int32(1)), g.constant(np.int32(2)))
    with pytest.raises(mg.DTypeError, match="planar_tensor"):
        g.planar_tensor(x)
    with pytest.raises(mg.DTypeError, match="hermitean_to_real_fft"):
        g.hermitean_to_real_fft(x, [0])
    with pytest.raises(mg.DTypeError, match="real_to_hermitean_fft"):
        g.real_to_hermitean_fft(z, [0])
    with pytest.raises(mg.DTypeError, match="complex_constant"):
        g.complex_constant(1.0, 2.0, mg.float32)


def test_fft_axes_and_descriptor_errors():
    g = mg.Graph()
    z = g.placeholder([2, 2, 2, 2, 2], mg.complex64)
    with pytest.raises(mg.ShapeError, match="fast_fourier_transform.*last four"):
        g.fast_fourier_transform(z, [0])
    with pytest.raises(mg.MiniGraphError, match="fast_fourier_transform"):
        g.fast_fourier_transform(z, [7])
    with pytest.raises(mg.ShapeError, match="fast_fourier_transform.*must not be empty"):
        g.fast_fourier_transform(z, [])
    with pytest.raises(mg.DescriptorError, match="scaling_mode"):
        g.fast_fourier_transform(z, [1], FFTDescriptor(scaling_mode=7))
    with pytest.raises(mg.DescriptorError, match="inverse"):
        g.fast_fourier_transform(z, [1], FFTDescriptor(inverse=1))
    assert [m.value for m in FFTScalingMode] == [0, 1, 2]
    assert FFTDescriptor() == FFTDescriptor(False, FFTScalingMode.NONE, False)


def test_descriptor_is_copied_and_graph_round_trips(tmp_path, rng):
    d = FFTDescriptor(inverse=True, scaling_mode="unitary")
    g = mg.Graph()
    p = g.placeholder([3, 4], mg.complex64, name="z")
    y = g.fast_fourier_transform(p, [-1], d, name="f")
    c = g.hermitean_to_real_fft(g.addition(y, g.complex_constant(0.5, 0.25, mg.complex32 if False else mg.complex64)),
                                [0, 1], FFTDescriptor(round_to_odd_hermitean=True), name="c2r")
    d.inverse = False  # the op kept its own copy
    z = cplx(rng, (3, 4))
    want = g.run({p: z}, [y, c])
    g.save(str(tmp_path / "g.json"))
    g2 = mg.load(str(tmp_path / "g.json"))
    got = g2.run({g2.tensor("z"): z}, [g2.tensor("f"), g2.tensor("c2r")])
    np.testing.assert_array_equal(got[g2.tensor("f")], want[y])
    np.testing.assert_array_equal(got[g2.tensor("c2r")], want[c])
    assert g2.tensor("f").operation.attrs["descriptor"] == FFTDescriptor(True, FFTScalingMode.UNITARY)
    np.testing.assert_allclose(want[y], np.fft.ifft(z, axis=1, norm="ortho"), rtol=1e-5, atol=1e-6)


def _fd_grad(build, shape, rng, eps=1e-6):
    g = mg.Graph()
    x = g.placeholder(shape, mg.float64)
    y = build(g, x)
    w = g.constant(rng.uniform(0.5, 1.5, y.shape))
    loss = g.reduction_sum(g.multiplication(y, w), axes=None)
    dx = g.gradients(loss, [x])[x]
    xv = rng.standard_normal(shape)
    got = g.run({x: xv}, [dx])[dx]
    num = np.zeros(shape)
    for i in np.ndindex(*shape):
        xp, xm = xv.copy(), xv.copy()
        xp[i] += eps
        xm[i] -= eps
        num[i] = (g.run({x: xp}, [loss])[loss].sum() - g.run({x: xm}, [loss])[loss].sum()) / (2 * eps)
    np.testing.assert_allclose(got, num, rtol=1e-5, atol=1e-6)


def _z(g, x):
    """A complex tensor both of whose parts depend on x."""
    return g.complex_tensor(g.sin(x), g.multiplication(x, x))


@pytest.mark.parametrize("which", ["fft", "fft_real_in", "r2c_even", "r2c_odd", "c2r_even", "c2r_odd", "c2r_inverse",
                                   "parts", "abs2", "planar", "arith"])
def test_gradients_match_finite_differences(which, rng):
    d = FFTDescriptor(scaling_mode="unitary")
    builds = {
        "fft": (lambda g, x: g.real_part_of_tensor(g.fast_fourier_transform(_z(g, x), [0, 1], d)), (3, 4)),
        "fft_real_in": (lambda g, x: g.imaginary_part_of_tensor(g.fast_fourier_transform(x, [1], d)), (2, 5)),
        "r2c_even": (lambda g, x: g.planar_tensor(g.real_to_hermitean_fft(x, [0, 1], d)), (3, 6)),
        "r2c_odd": (lambda g, x: g.absolute_square(g.real_to_hermitean_fft(x, [1], d)), (2, 5)),
        "c2r_even": (lambda g, x: g.hermitean_to_real_fft(_z(g, x), [0, 1], d), (3, 4)),
        "c2r_odd": (lambda g, x: g.hermitean_to_real_fft(_z(g, x), [1], FFTDescriptor(round_to_odd_hermitean=True)),
                    (2, 4)),
        "c2r_inverse": (lambda g, x: g.hermitean_to_real_fft(_z(g, x), [1], FFTDescriptor(True, "size")), (2, 3)),
        "parts": (lambda g, x: g.addition(g.imaginary_part_of_tensor(g.conjugate(_z(g, x))),
                                          g.real_part_of_tensor(_z(g, x))), (3,)),
        "abs2": (lambda g, x: g.absolute_square(_z(g, x)), (4,)),
        "planar": (lambda g, x: g.planar_tensor(_z(g, x)), (2, 3)),
        "arith": (lambda g, x: g.real_part_of_tensor(g.division(g.multiplication(_z(g, x), g.exponent(_z(g, x))),
                                                                g.addition(_z(g, x), g.complex_constant(
                                                                    3.0, 1.0, "complex128")))), (4,)),
    }
    build, shape = builds[which]
    _fd_grad(build, shape, rng)


# ----------------------------------------------------------------------------- webgpu
def _both(g, feeds, targets):
    return g.run(feeds, targets), g.run(feeds, targets, backend="webgpu")


@pytest.mark.parametrize("inverse, mode", [(False, "none"), (True, "size"), (False, "unitary")])
def test_webgpu_transforms_match_numpy(webgpu, inverse, mode, rng):
    d = FFTDescriptor(inverse=inverse, scaling_mode=mode)
    g = mg.Graph()
    z = g.placeholder([2, 5, 8], mg.complex64)
    x = g.placeholder([3, 7, 6])
    ts = [g.fast_fourier_transform(z, [0, 2], d), g.fast_fourier_transform(x, [1], d),
          g.real_to_hermitean_fft(x, [1, 2], d), g.hermitean_to_real_fft(z, [1, 2], d),
          g.hermitean_to_real_fft(z, [2], FFTDescriptor(inverse, mode, True))]
    feeds = {z: cplx(rng, (2, 5, 8)), x: rng.standard_normal((3, 7, 6)).astype(np.float32)}
    want, got = _both(g, feeds, ts)
    for t in ts:
        assert got[t].dtype == want[t].dtype and got[t].shape == want[t].shape
        np.testing.assert_allclose(got[t], want[t], rtol=1e-5, atol=1e-6 * np.abs(want[t]).max() * 4)


def test_webgpu_complex_ops_match_numpy(webgpu, rng):
    g = mg.Graph()
    z = g.placeholder([3, 4], mg.complex64)
    r = g.placeholder([1, 4])
    ts = [g.real_part_of_tensor(z), g.imaginary_part_of_tensor(z), g.conjugate(z), g.absolute_square(z),
          g.planar_tensor(z), g.complex_tensor(g.imaginary_part_of_tensor(z), r), g.real_part_of_tensor(r),
          g.imaginary_part_of_tensor(r), g.conjugate(r), g.absolute_square(r), g.complex_constant(1.0, -1.0, shape=[2])]
    want, got = _both(g, {z: cplx(rng, (3, 4)), r: rng.standard_normal((1, 4)).astype(np.float32)}, ts)
    for t in ts:
        np.testing.assert_allclose(got[t], want[t], rtol=1e-6, atol=1e-7)


def test_webgpu_gradient_of_a_transform_runs_there(webgpu, rng):
    g = mg.Graph()
    x = g.placeholder([4, 6])
    loss = g.reduction_sum(g.absolute_square(g.real_to_hermitean_fft(x, [0, 1])), axes=None)
    dx = g.gradients(loss, [x])[x]
    want, got = _both(g, {x: rng.standard_normal((4, 6)).astype(np.float32)}, [dx])
    np.testing.assert_allclose(got[dx], want[dx], rtol=1e-4, atol=1e-4 * np.abs(want[dx]).max())


@pytest.mark.parametrize("loop_max, n", [(3, 11), (50, 150)])
def test_webgpu_transform_in_many_passes(webgpu, monkeypatch, rng, loop_max, n):
    """Passes of 3 (dozens per sum) and of 50 over 150 terms (the blocks of 64 straddle passes)."""
    monkeypatch.setattr(loops, "LOOP_MAX", loop_max)
    g = mg.Graph()
    z = g.placeholder([3, n], mg.complex64)
    x = g.placeholder([2, n])
    ts = [g.fast_fourier_transform(z, [0, 1], FFTDescriptor(True, "size")), g.hermitean_to_real_fft(z, [1]),
          g.real_to_hermitean_fft(x, [1], FFTDescriptor(scaling_mode="unitary"))]
    want, got = _both(g, {z: cplx(rng, (3, n)), x: rng.standard_normal((2, n)).astype(np.float32)}, ts)
    for t in ts:
        np.testing.assert_allclose(got[t], want[t], rtol=1e-5, atol=1e-5 * np.abs(want[t]).max())


def test_webgpu_refuses_long_axes_and_complex32(webgpu):
    from minigraph.backends.webgpu.fft import MAX_AXIS
    g = mg.Graph()
    z = g.placeholder([MAX_AXIS + 1], mg.complex64)
    y = g.fast_fourier_transform(z, [0])
    with pytest.raises(mg.ResourceLimitError, match="fast_fourier_transform.*32768"):
        g.compile({z: mg.ShapedType([MAX_AXIS + 1], mg.complex64)}, [y], backend="webgpu")
    c = g.complex_constant(1.0, 2.0, mg.complex32, shape=[2])
    with pytest.raises(mg.UnsupportedDTypeError, match="complex32"):
        g.run({}, [g.conjugate(c)], backend="webgpu")
    w = g.placeholder([2, 3], mg.complex64)
    with pytest.raises(mg.UnsupportedDTypeError, match="reduction_sum.*complex64"):
        g.run({w: np.ones((2, 3), np.complex64)}, [g.reduction_sum(w, axes=[0])], backend="webgpu")


def test_webgpu_complex_arithmetic_matches_numpy(webgpu, rng):
    g = mg.Graph()
    a, b = g.placeholder([3, 4], mg.complex64), g.placeholder([4], mg.complex64)
    r = g.placeholder([3, 4])
    ts = [g.addition(a, b), g.subtraction(a, b), g.multiplication(a, b), g.division(a, b), g.negative(a),
          g.square(a), g.exponent(a), g.equal(a, a), g.not_equal(a, b), g.cast(a, mg.float32), g.cast(a, mg.bool),
          g.cast(r, mg.complex64), g.cast(a, mg.int32), g.addition(g.multiplication(a, a), g.negative(b))]
    feeds = {a: cplx(rng, (3, 4)), b: cplx(rng, (4,)), r: rng.standard_normal((3, 4)).astype(np.float32)}
    want, got = _both(g, feeds, ts)
    for t in ts:
        assert got[t].dtype == want[t].dtype, t.operation.type
        np.testing.assert_allclose(got[t], want[t], rtol=1e-6, atol=1e-6, err_msg=t.operation.type)


@pytest.mark.parametrize("axes", _axes_sets(3))
@pytest.mark.parametrize("mode", list(FFTScalingMode))
def test_hermitean_transforms_over_every_axis_set(axes, mode, rng):
    x = rng.standard_normal((4, 5, 3)).astype(np.float32)
    n = int(np.prod([x.shape[a] for a in axes]))
    c = SCALES[mode](n)
    g = mg.Graph()
    p = g.placeholder(x.shape)
    h = g.real_to_hermitean_fft(p, axes, FFTDescriptor(scaling_mode=mode))
    z = g.placeholder(h.shape, mg.complex64)
    odd = x.shape[axes[-1]] % 2 == 1
    y = g.hermitean_to_real_fft(z, axes, FFTDescriptor(inverse=True, scaling_mode=mode, round_to_odd_hermitean=odd))
    zv = cplx(rng, tuple(h.shape))
    out = g.run({p: x, z: zv}, [h, y])
    want_h = np.fft.rfftn(x, axes=axes) * c
    np.testing.assert_allclose(out[h], want_h, rtol=1e-5, atol=1e-5 * np.abs(want_h).max())
    want_y = np.fft.irfftn(zv, s=[x.shape[a] for a in axes], axes=axes, norm="forward") * c
    assert y.shape == x.shape
    np.testing.assert_allclose(out[y], want_y, rtol=1e-5, atol=1e-5 * np.abs(want_y).max())


def test_nan_inf_and_empty_axes(backend, rng):
    z = cplx(rng, (2, 6))
    z[0, 2] = np.nan
    z[1, 3] = np.inf
    g = mg.Graph()
    p = g.placeholder(z.shape, mg.complex64)
    e = g.placeholder([0, 4], mg.complex64)
    f, fe = g.fast_fourier_transform(p, [1]), g.fast_fourier_transform(e, [1])
    out = g.run({p: z, e: np.zeros((0, 4), np.complex64)}, [f, fe], backend=backend)
    assert np.isnan(out[f][0]).all()  # one NaN reaches every frequency of its row
    assert not np.isfinite(out[f][1]).all()
    assert out[fe].shape == (0, 4) and out[fe].dtype == np.complex64
    with pytest.raises(mg.ShapeError, match="real_to_hermitean_fft needs at least one entry"):
        g.real_to_hermitean_fft(g.placeholder([3, 0]), [1])


def test_compare_backends_reads_both_parts(webgpu, rng):
    g = mg.Graph()
    z = g.placeholder([3, 16], mg.complex64)
    y = g.fast_fourier_transform(z, [1])
    report = mg.compare_backends(g, {z: cplx(rng, (3, 16))}, [y])
    assert "0 over tolerance" in str(report)
