"""The quantization ops against hand-computed values, loops from Apple's formulas, ONNX's reference
QuantizeLinear / DequantizeLinear, PyTorch's quantize_per_tensor / per_channel, and Core ML's
blockwise and LUT layouts; NaN/inf, ties, empty tensors, errors, webgpu, save/load and Swift."""
from __future__ import annotations

import zlib

import numpy as np
import pytest

import minigraph as mg

F32, F16 = np.float32, np.float16
QTYPES = {"int8": (np.int8, -128, 127), "uint8": (np.uint8, 0, 255)}


def _run(fn, arrays, backend="numpy"):
    g = mg.Graph()
    ps = [g.placeholder(a.shape, dtype=a.dtype) for a in arrays]
    outs = fn(g, *ps)
    outs = outs if isinstance(outs, list) else [outs]
    res = g.run(dict(zip(ps, arrays)), outs, backend=backend)
    return [np.asarray(res[o]) for o in outs]


def _rng(*key):
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


def _quantize_loop(x, scale, zp, dt, axis=None):
    """Apple's round(x / scale) + zeroPoint, element by element in float64, half to even, saturated."""
    npdt, lo, hi = QTYPES[dt]
    out = np.empty(x.shape, npdt)
    for idx in np.ndindex(*x.shape):
        s = scale if axis is None else np.ravel(scale)[idx[axis] if np.size(scale) > 1 else 0]
        z = zp if axis is None or np.ndim(zp) == 0 else np.ravel(zp)[idx[axis] if np.size(zp) > 1 else 0]
        v = float(np.float32(x[idx]) / np.float32(s))
        r = 0.0 if np.isnan(v) else float(np.rint(v))
        out[idx] = int(min(max(r + int(z), lo), hi))
    return out


def _dequantize_loop(q, scale, zp, dt, axis=None):
    out = np.empty(q.shape, dt)
    for idx in np.ndindex(*q.shape):
        s = scale if axis is None else np.ravel(scale)[idx[axis] if np.size(scale) > 1 else 0]
        z = zp if axis is None or np.ndim(zp) == 0 else np.ravel(zp)[idx[axis] if np.size(zp) > 1 else 0]
        out[idx] = dt(float(dt(s)) * (int(q[idx]) - int(z)))
    return out


# ----------------------------------------------------------------------------- hand-computed values
def test_quantize_hand_values_ties_to_even_saturation_nan_inf():
    x = np.array([1.25, -0.75, 0.25, 0.75, np.nan, np.inf, -np.inf, 300.0, -300.0, -0.0], F32)
    (q,) = _run(lambda g, a: g.quantize(a, 0.5, 3, mg.int8), [x])
    # 2.5 -> 2, -1.5 -> -2, 0.5 -> 0, 1.5 -> 2 (half to even), NaN -> the zero point, +-inf saturate
    np.testing.assert_array_equal(q, np.array([5, 1, 3, 5, 3, 127, -128, 127, -128, 3], np.int8))
    assert q.dtype == np.int8
    (u,) = _run(lambda g, a: g.quantize(a, 0.5, 10, mg.uint8), [x])
    np.testing.assert_array_equal(u, np.array([12, 8, 10, 12, 10, 255, 0, 255, 0, 10], np.uint8))


def test_dequantize_hand_values():
    q = np.array([-128, -1, 0, 3, 127], np.int8)
    (y,) = _run(lambda g, a: g.dequantize(a, 0.25, 3, mg.float32), [q])
    np.testing.assert_array_equal(y, np.array([-32.75, -1.0, -0.75, 0.0, 31.0], F32))
    u = np.array([0, 128, 255], np.uint8)
    (h,) = _run(lambda g, a: g.dequantize(a, 0.1, 128, mg.float16), [u])
    assert h.dtype == np.float16
    np.testing.assert_array_equal(h, (np.float16(0.1).astype(F32) * np.array([-128, 0, 127], F32)).astype(F16))


def test_per_axis_hand_values():
    x = np.array([[1.0, 2.0, 3.0], [-1.0, -2.0, -3.0]], F32)
    s = np.array([0.5, 1.0, 2.0], F32)
    z = np.array([1, 2, 3], np.uint8)
    q, d = _run(lambda g, a, b, c: [g.quantize_with_tensors(a, b, c, mg.uint8, 1),
                                    g.dequantize_with_tensors(g.quantize_with_tensors(a, b, c, mg.uint8, 1), b, c,
                                                              mg.float32, 1)], [x, s, z])
    np.testing.assert_array_equal(q, np.array([[3, 4, 5], [0, 0, 1]], np.uint8))  # 1.5 and -1.5 round to 2, -2
    np.testing.assert_array_equal(d, np.array([[1.0, 2.0, 4.0], [-0.5, -2.0, -4.0]], F32))


def test_round_trip_is_within_half_a_step():
    rng = _rng("round trip")
    x = rng.uniform(-5, 5, (4, 7)).astype(F32)
    (y,) = _run(lambda g, a: g.dequantize(g.quantize(a, 0.05, -3, mg.int8), 0.05, -3, mg.float32), [x])
    assert np.all(np.abs(y - x) <= 0.025 + 1e-6)


# ----------------------------------------------------------------------------- against loops
@pytest.mark.parametrize("dt", ["int8", "uint8"])
@pytest.mark.parametrize("shape", [(7,), (3, 4), (2, 3, 5), ()])
def test_quantize_and_dequantize_match_loops(dt, shape):
    rng = _rng("loops", dt, shape)
    x = (rng.standard_normal(shape) * 40).astype(F32)
    zp = 5 if dt == "int8" else 128
    (q,) = _run(lambda g, a: g.quantize(a, 0.37, zp, dt), [x])
    np.testing.assert_array_equal(q, _quantize_loop(x, 0.37, zp, dt))
    (y,) = _run(lambda g, a: g.dequantize(a, 0.37, zp, mg.float32), [q])
    np.testing.assert_array_equal(y, _dequantize_loop(q, 0.37, zp, F32))


@pytest.mark.parametrize("axis", [0, 1, 2, -1, -3])
def test_per_axis_forms_match_loops_on_several_axes(axis):
    rng = _rng("axes", axis)
    shape = (3, 4, 5)
    n = shape[axis]
    x = (rng.standard_normal(shape) * 30).astype(F32)
    s = rng.uniform(0.05, 0.5, n).astype(F32)
    z = rng.integers(-20, 20, n).astype(np.int8)
    q1, q2 = _run(lambda g, a, b, c: [g.quantize_with_scale_tensor(a, b, -4, mg.int8, axis),
                                      g.quantize_with_tensors(a, b, c, mg.int8, axis)], [x, s, z])
    np.testing.assert_array_equal(q1, _quantize_loop(x, s, -4, "int8", axis % 3))
    np.testing.assert_array_equal(q2, _quantize_loop(x, s, z, "int8", axis % 3))
    d1, d2 = _run(lambda g, a, b, c: [g.dequantize_with_scale_tensor(a, b, -4, mg.float32, axis),
                                      g.dequantize_with_tensors(a, b, c, mg.float32, axis)], [q2, s, z])
    np.testing.assert_array_equal(d1, _dequantize_loop(q2, s, -4, F32, axis % 3))
    np.testing.assert_array_equal(d2, _dequantize_loop(q2, s, z, F32, axis % 3))


def test_one_element_and_scalar_parameters_act_per_tensor():
    rng = _rng("scalar params")
    x = (rng.standard_normal((3, 4)) * 10).astype(F32)
    want = _quantize_loop(x, 0.25, 7, "uint8")
    for s, z in [(np.array(0.25, F32), np.array(7, np.uint8)), (np.array([0.25], F32), np.array([7], np.uint8))]:
        (q,) = _run(lambda g, a, b, c: g.quantize_with_tensors(a, b, c, mg.uint8, 1), [x, s, z])
        np.testing.assert_array_equal(q, want)
    (q,) = _run(lambda g, a: g.quantize_with_scale_tensor(a, 0.25, 7, mg.uint8, 0), [x])
    np.testing.assert_array_equal(q, want)


def test_float16_inputs_and_results():
    rng = _rng("f16")
    x = (rng.standard_normal((5, 6)) * 8).astype(F16)
    s = rng.uniform(0.05, 0.2, 6).astype(F16)
    (q,) = _run(lambda g, a, b: g.quantize_with_scale_tensor(a, b, 0, mg.int8, 1), [x, s])
    np.testing.assert_array_equal(q, _quantize_loop(x, s, 0, "int8", 1))
    (y,) = _run(lambda g, a, b: g.dequantize_with_scale_tensor(a, b, 2, mg.float16, 1), [q, s])
    np.testing.assert_array_equal(y, _dequantize_loop(q, s, 2, F16, 1))


def test_empty_tensors():
    for shape in [(0,), (2, 0, 3)]:
        x = np.zeros(shape, F32)
        q, y = _run(lambda g, a: [g.quantize(a, 0.5, 1, mg.int8), g.dequantize(g.quantize(a, 0.5, 1, mg.int8),
                                                                                0.5, 1, mg.float32)], [x])
        assert q.shape == shape and q.dtype == np.int8 and y.shape == shape and y.dtype == F32
    x = np.zeros((2, 0, 3), F32)
    (q,) = _run(lambda g, a, b: g.quantize_with_scale_tensor(a, b, 0, mg.uint8, 1), [x, np.zeros(0, F32)])
    assert q.shape == (2, 0, 3)


# ----------------------------------------------------------------------------- against ONNX's reference
def _onnx_eval(op, inputs, out_type, axis=None):
    pytest.importorskip("onnx", reason="needs the 'onnx' extra")
    from onnx import helper
    from onnx.reference import ReferenceEvaluator
    names = ["x", "s", "z"][:len(inputs)]
    kw = {} if axis is None else {"axis": axis}
    node = helper.make_node(op, names, ["y"], **kw)
    vi = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
          for n, a in zip(names, inputs)]
    graph = helper.make_graph([node], "g", vi, [helper.make_tensor_value_info("y", out_type, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    return ReferenceEvaluator(model).run(None, dict(zip(names, inputs)))[0]


@pytest.mark.parametrize("dt", ["int8", "uint8"])
@pytest.mark.parametrize("axis", [None, 0, 1, 2])
def test_against_onnx_quantize_linear_and_dequantize_linear(dt, axis):
    """Finite inputs (ONNX's evaluator casts NaN and inf through int32, a platform artifact)."""
    pytest.importorskip("onnx", reason="needs the 'onnx' extra")
    from onnx import TensorProto
    rng = _rng("onnx", dt, axis)
    npdt, lo, hi = QTYPES[dt]
    shape = (3, 4, 5)
    x = (rng.standard_normal(shape) * 50).astype(F32)
    n = 1 if axis is None else shape[axis]
    s = rng.uniform(0.1, 0.6, n).astype(F32)
    z = rng.integers(lo // 2, hi // 2 + 1, n).astype(npdt)
    if axis is None:
        s, z = s.reshape(()), z.reshape(())
    ot = TensorProto.INT8 if dt == "int8" else TensorProto.UINT8
    want_q = _onnx_eval("QuantizeLinear", [x, s, z], ot, axis if axis is not None else 1)
    ax = 0 if axis is None else axis
    (q,) = _run(lambda g, a, b, c: g.quantize_with_tensors(a, b, c, dt, ax), [x, s, z])
    np.testing.assert_array_equal(q, want_q)
    want_y = _onnx_eval("DequantizeLinear", [q, s, z], TensorProto.FLOAT, axis if axis is not None else 1)
    (y,) = _run(lambda g, a, b, c: g.dequantize_with_tensors(a, b, c, mg.float32, ax), [q, s, z])
    np.testing.assert_array_equal(y, want_y)
    if axis is None:
        (q2,) = _run(lambda g, a: g.quantize(a, float(s), int(z), dt), [x])
        np.testing.assert_array_equal(q2, want_q)
        (y2,) = _run(lambda g, a: g.dequantize(a, float(s), int(z), mg.float32), [q])
        np.testing.assert_array_equal(y2, want_y)


def test_against_torch_quantize_per_tensor_and_per_channel():
    torch = pytest.importorskip("torch", reason="the 'oracles' extra (torch) is not installed")
    rng = _rng("torch")
    x = (rng.standard_normal((4, 6)) * 20).astype(F32)
    qt = torch.quantize_per_tensor(torch.from_numpy(x), 0.3, 120, torch.quint8)
    (q,) = _run(lambda g, a: g.quantize(a, 0.3, 120, mg.uint8), [x])
    np.testing.assert_array_equal(q, qt.int_repr().numpy())
    (y,) = _run(lambda g, a: g.dequantize(a, 0.3, 120, mg.float32), [q])
    np.testing.assert_allclose(y, qt.dequantize().numpy(), rtol=1e-6, atol=0)
    s = rng.uniform(0.1, 0.5, 6)
    zs = rng.integers(-10, 10, 6)
    qc = torch.quantize_per_channel(torch.from_numpy(x), torch.from_numpy(s), torch.from_numpy(zs), 1, torch.qint8)
    (q,) = _run(lambda g, a, b, c: g.quantize_with_tensors(a, b, c, mg.int8, 1),
                [x, s.astype(F32), zs.astype(np.int8)])
    # torch divides in float64 by the float64 scale; ties agree here (no x / s lands on a .5 in both)
    np.testing.assert_array_equal(q, qc.int_repr().numpy())


# ----------------------------------------------------------------------------- blockwise
def _blockwise_loop(q, s, z, dt):
    k, nb = q.shape[-1], s.shape[-1]
    b = k // nb
    out = np.empty(q.shape, dt)
    for idx in np.ndindex(*q.shape):
        p = idx[:-1] + (idx[-1] // b,)
        out[idx] = dt(float(dt(s[p])) * (int(q[idx]) - (int(z[p]) if z is not None else 0)))
    return out


@pytest.mark.parametrize("shape, nb", [((4, 8), 2), ((2, 3, 6), 3), ((5,), 1), ((3, 4), 4)])
def test_blockwise_dequantize_matches_core_ml_layout(shape, nb):
    rng = _rng("blockwise", shape, nb)
    q = rng.integers(-128, 128, shape).astype(np.int8)
    s = rng.uniform(0.01, 1.0, shape[:-1] + (nb,)).astype(F32)
    z = rng.integers(-10, 10, shape[:-1] + (nb,)).astype(np.int8)
    y, y0 = _run(lambda g, a, b, c: [g.dequantize_blockwise(a, b, c, mg.float32),
                                     g.dequantize_blockwise_symmetric(a, b, mg.float32)], [q, s, z])
    np.testing.assert_array_equal(y, _blockwise_loop(q, s, z, F32))
    np.testing.assert_array_equal(y0, _blockwise_loop(q, s, None, F32))
    # coremltools' constexpr_blockwise_shift_scale.decompress: repeat the parameters, then scale * (data - offset)
    rep = shape[-1] // nb
    want = np.repeat(s, rep, -1) * (q.astype(F32) - np.repeat(z, rep, -1).astype(F32))
    np.testing.assert_array_equal(y, want)


# ----------------------------------------------------------------------------- lookup tables
def _lut_loop(q, lut):
    k = lut.ndim - 1
    out = np.empty(q.shape, lut.dtype)
    for idx in np.ndindex(*q.shape):
        tail = idx[len(idx) - k:] if k else ()
        g = tuple(i // (n // G) for i, n, G in zip(tail, q.shape[q.ndim - k:], lut.shape[:k]))
        out[idx] = lut[g + (q[idx],)]
    return out


def _vector_lut_loop(q, lut, axis):
    k, v = lut.ndim - 2, lut.shape[-1]
    shape = list(q.shape)
    shape[axis] *= v
    out = np.empty(shape, lut.dtype)
    for idx in np.ndindex(*shape):
        src = list(idx)
        src[axis] //= v
        src = tuple(src)
        tail = src[len(src) - k:] if k else ()
        g = tuple(i // (n // G) for i, n, G in zip(tail, q.shape[q.ndim - k:], lut.shape[:k]))
        out[idx] = lut[g + (q[src], idx[axis] % v)]
    return out


def _lut_graph(q, lut, vector_axis=None, backend="numpy"):
    g = mg.Graph()
    t = g.constant(q)
    p = g.placeholder(lut.shape, dtype=lut.dtype)  # a fed LUT: nothing is folded at compile time
    y = g.dequantize_lut(t, p) if vector_axis is None else g.dequantize_vector_lut(t, p, vector_axis)
    return np.asarray(g.run({p: lut}, [y], backend=backend)[y])


@pytest.mark.parametrize("shape, groups", [((4, 5), ()), ((4, 6), (2,)), ((6, 4), (3, 2)), ((2, 4, 6), (2, 2, 3)),
                                           ((3, 2, 4, 6), (1, 2, 3)), ((), ())])
def test_scalar_lut_matches_loop(shape, groups):
    rng = _rng("lut", shape, groups)
    q = rng.integers(0, 256, shape).astype(np.uint8)
    lut = rng.standard_normal(groups + (256,)).astype(F32)
    np.testing.assert_array_equal(_lut_graph(q, lut), _lut_loop(q, lut))


def test_lut_of_int8_and_float16_keeps_the_lut_dtype():
    rng = _rng("lut dtypes")
    q = rng.integers(0, 256, (3, 5)).astype(np.uint8)
    for lut in (rng.integers(-128, 128, (256,)).astype(np.int8), rng.standard_normal((5, 256)).astype(F16)):
        y = _lut_graph(q, lut)
        assert y.dtype == lut.dtype
        np.testing.assert_array_equal(y, _lut_loop(q, lut))


def test_lut_against_core_ml_case_1():
    """coremltools' constexpr_lut_to_dense 'Case 1' (2-bit indices, here as uint8 into a 256-entry table)."""
    q = np.array([2, 3, 3, 0, 1, 0, 3, 0, 2, 1, 0, 3], np.uint8).reshape(6, 2)
    lut = np.zeros((2, 1, 256), F32)
    lut[0, 0, :4] = [1.0, 5.0, 9.0, 13.0]
    lut[1, 0, :4] = [2.0, 10.0, 18.0, 26.0]
    want = np.array([[9, 13], [13, 1], [5, 1], [26, 2], [18, 10], [2, 26]], F32)
    np.testing.assert_array_equal(_lut_graph(q, lut), want)


@pytest.mark.parametrize("shape, groups, v, axis", [((2, 2, 2), (), 3, 1), ((2, 2, 2), (), 3, 2), ((3, 4), (2,), 2, 0),
                                                   ((4, 6), (2, 3), 4, 1), ((2, 3, 4), (3, 2), 2, -3), ((5,), (), 1, 0)])
def test_vector_lut_matches_loop(shape, groups, v, axis):
    rng = _rng("vlut", shape, groups, v, axis)
    q = rng.integers(0, 256, shape).astype(np.uint8)
    lut = rng.standard_normal(groups + (256, v)).astype(F32)
    np.testing.assert_array_equal(_lut_graph(q, lut, axis), _vector_lut_loop(q, lut, axis % len(shape)))


def test_vector_lut_against_core_ml_case_2():
    """coremltools' 'Case 2': 1-bit vectors of 3 filled along axis 1, then along axis 2."""
    q = np.array([[[0, 0], [1, 0]], [[1, 1], [0, 0]]], np.uint8)
    lut = np.zeros((256, 3), F32)
    lut[0], lut[1] = [10, 11, 12], [20, 21, 22]
    a0, a1, a2, b0, b1, b2 = 10, 11, 12, 20, 21, 22
    want1 = np.array([[[a0, a0], [a1, a1], [a2, a2], [b0, a0], [b1, a1], [b2, a2]],
                      [[b0, b0], [b1, b1], [b2, b2], [a0, a0], [a1, a1], [a2, a2]]], F32)
    want2 = np.array([[[a0, a1, a2, a0, a1, a2], [b0, b1, b2, a0, a1, a2]],
                      [[b0, b1, b2, b0, b1, b2], [a0, a1, a2, a0, a1, a2]]], F32)
    np.testing.assert_array_equal(_lut_graph(q, lut, 1), want1)
    np.testing.assert_array_equal(_lut_graph(q, lut, 2), want2)


def test_empty_lut_indices():
    assert _lut_graph(np.zeros((0, 3), np.uint8), np.ones(256, F32)).shape == (0, 3)
    assert _lut_graph(np.zeros((2, 0), np.uint8), np.ones((256, 2), F32), 1).shape == (2, 0)


# ----------------------------------------------------------------------------- webgpu
def _forms(g, x, s, z, q, sq, zq, bs, bz):
    return [g.quantize(x, 0.125, -3, mg.int8), g.quantize(x, 0.3, 200, mg.uint8),
            g.quantize_with_scale_tensor(x, s, 4, mg.int8, 1), g.quantize_with_tensors(x, s, z, mg.uint8, -1),
            g.dequantize(q, 0.37, -5, mg.float32), g.dequantize(q, 0.37, 7, mg.float16),
            g.dequantize_with_scale_tensor(q, sq, 3, mg.float32, 0),
            g.dequantize_with_tensors(q, sq, zq, mg.float32, 0),
            g.dequantize_blockwise(q, bs, bz, mg.float32), g.dequantize_blockwise_symmetric(q, bs, mg.float32),
            g.dequantize(g.quantize(x, 0.05, 0, mg.int8), 0.05, 0, mg.float32)]


def test_webgpu_matches_numpy_on_every_form(webgpu):
    rng = _rng("webgpu")
    x = (rng.standard_normal((4, 6)) * 30).astype(F32)
    x.reshape(-1)[::7] = np.nan
    x[0, :3] = [np.inf, -np.inf, 2.5 * 0.125]  # a tie
    x[1, :2] = [-0.0, 0.0625]
    args = [x, rng.uniform(0.1, 1.0, 6).astype(F32), rng.integers(0, 256, 6).astype(np.uint8),
            rng.integers(-128, 128, (4, 6)).astype(np.int8), rng.uniform(0.1, 1.0, 4).astype(F32),
            rng.integers(-128, 128, 4).astype(np.int8), rng.uniform(0.1, 1.0, (4, 3)).astype(F32),
            rng.integers(-128, 128, (4, 3)).astype(np.int8)]
    for want, got in zip(_run(_forms, args), _run(_forms, args, webgpu)):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


def test_webgpu_quantize_ties_and_float16(webgpu):
    k = np.arange(-300, 300, dtype=F32)
    x = np.concatenate([(k + 0.5) * 0.25, k * 0.25 + 0.1]).astype(F32)  # exact ties, then no ties
    h = (np.random.default_rng(3).standard_normal((3, 8)) * 10).astype(F16)
    hs = np.array([0.1, 0.2, 0.3], F16)
    fn = lambda g, a, b, c: [g.quantize(a, 0.25, 0, mg.int8), g.quantize(a, 0.25, 100, mg.uint8),  # noqa: E731
                             g.quantize_with_scale_tensor(b, c, 0, mg.int8, 0),
                             g.dequantize_with_scale_tensor(g.quantize_with_scale_tensor(b, c, 0, mg.int8, 0), c, 0,
                                                            mg.float16, 0)]
    for want, got in zip(_run(fn, [x, h, hs]), _run(fn, [x, h, hs], webgpu)):
        np.testing.assert_array_equal(got, want)


def test_webgpu_luts_match_numpy(webgpu):
    rng = _rng("webgpu lut")
    for shape, groups, v, axis, dt in [((4, 6), (2, 3), 1, None, F32), ((2, 4, 6), (2, 2, 3), 1, None, F16),
                                       ((3, 5), (), 1, None, np.int8), ((4, 6), (2, 3), 4, 1, F32),
                                       ((2, 3, 4), (3, 2), 2, 0, F32), ((3, 4), (), 3, -1, F16)]:
        q = rng.integers(0, 256, shape).astype(np.uint8)
        tail = (256,) if axis is None else (256, v)
        lut = (rng.standard_normal(groups + tail) * 50).astype(dt)
        np.testing.assert_array_equal(_lut_graph(q, lut, axis, webgpu), _lut_graph(q, lut, axis))


def test_webgpu_refuses_other_int8_ops(webgpu):
    g = mg.Graph()
    x = g.placeholder([3], dtype=mg.int8)
    y = g.addition(x, x)
    with pytest.raises(mg.UnsupportedDTypeError, match="int8"):
        g.run({x: np.ones(3, np.int8)}, [y], backend=webgpu)


# ----------------------------------------------------------------------------- errors, gradients, tools
@pytest.mark.parametrize("build, err, match", [
    (lambda g, x, q: g.quantize(x, 0.0, 0, mg.int8), mg.DescriptorError, "scale must be finite and nonzero"),
    (lambda g, x, q: g.quantize(x, float("nan"), 0, mg.int8), mg.DescriptorError, "scale"),
    (lambda g, x, q: g.quantize(x, 0.5, 0.5, mg.int8), mg.DescriptorError, "zero_point must be an integer"),
    (lambda g, x, q: g.quantize(x, 0.5, 300, mg.uint8), mg.DescriptorError, r"\[0, 255\]"),
    (lambda g, x, q: g.quantize(x, 0.5, 0, mg.int32), mg.DTypeError, "int8, uint8"),
    (lambda g, x, q: g.quantize(q, 0.5, 0, mg.int8), mg.DTypeError, "float16 or float32"),
    (lambda g, x, q: g.dequantize(x, 0.5, 0, mg.float32), mg.DTypeError, "int8 or uint8"),
    (lambda g, x, q: g.dequantize(q, 0.5, 0, mg.int32), mg.DTypeError, "float16, float32"),
    (lambda g, x, q: g.dequantize(q, 0.5, 200, mg.float32), mg.DescriptorError, r"\[-128, 127\]"),
    (lambda g, x, q: g.quantize_with_scale_tensor(x, np.ones(3, F32), 0, mg.int8, 1), mg.ShapeError, "size"),
    (lambda g, x, q: g.quantize_with_scale_tensor(x, np.ones(4, F32), 0, mg.int8, 2), mg.AxisError, "axis 2"),
    (lambda g, x, q: g.quantize_with_scale_tensor(x, np.ones((2, 2), F32), 0, mg.int8, 1), mg.ShapeError, "1-D"),
    (lambda g, x, q: g.quantize_with_tensors(x, np.ones(4, F32), g.constant(np.ones(4, np.uint8)), mg.int8, 1),
     mg.DTypeError, "zero_point_tensor"),
    (lambda g, x, q: g.dequantize_with_scale_tensor(q, g.constant(np.ones(4, F16)), 0, mg.float32, 1),
     mg.DTypeError, "must match the result dtype"),
    (lambda g, x, q: g.dequantize_blockwise_symmetric(q, np.ones((3, 3), F32), mg.float32), mg.ShapeError, "blocks"),
    (lambda g, x, q: g.dequantize_blockwise_symmetric(q, np.ones((2, 2), F32), mg.float32), mg.ShapeError,
     "last axis divided"),
    (lambda g, x, q: g.dequantize_lut(q, np.ones(256, F32)), mg.DTypeError, "graph constant"),
    (lambda g, x, q: g.dequantize_lut(g.constant(np.ones((3, 4), np.int8)), np.ones(256, F32)), mg.DTypeError,
     "uint8"),
    (lambda g, x, q: g.dequantize_lut(g.constant(np.ones((3, 4), np.uint8)), np.ones(16, F32)), mg.ShapeError,
     "256 entries"),
    (lambda g, x, q: g.dequantize_lut(g.constant(np.ones((3, 4), np.uint8)), np.ones((3, 256), F32)), mg.ShapeError,
     "divide"),
    (lambda g, x, q: g.dequantize_lut(g.constant(np.ones((2, 2, 2, 2), np.uint8)), np.ones((1, 1, 1, 1, 256), F32)),
     mg.ShapeError, "at most 3"),
    (lambda g, x, q: g.dequantize_vector_lut(g.constant(np.ones((3, 4), np.uint8)), np.ones(256, F32), 0),
     mg.ShapeError, "second-to-last"),
    (lambda g, x, q: g.dequantize_vector_lut(g.constant(np.ones((3, 4), np.uint8)), np.ones((256, 2), F32), 2),
     mg.AxisError, "axis 2"),
])
def test_errors_name_the_op(build, err, match):
    g = mg.Graph()
    x = g.placeholder((3, 4))
    q = g.placeholder((3, 4), dtype=mg.int8)
    with pytest.raises(err, match=match) as e:
        build(g, x, q)
    assert "quantize" in str(e.value)


def test_gradients_zero_through_the_integer_result_and_none_toward_scales():
    """quantize's result is an integer tensor, which carries no gradient (no straight-through
    estimator); a path from a float scale through dequantize is refused."""
    g = mg.Graph()
    x = g.placeholder((3,))
    y = g.dequantize(g.quantize(x, 0.5, 0, mg.int8), 0.5, 0, mg.float32)
    dx = g.gradients(g.reduction_sum(y), [x])[x]
    np.testing.assert_array_equal(g.run({x: np.ones(3, F32)}, [dx])[dx], np.zeros(3, F32))
    s = g.placeholder((3,))
    q = g.placeholder((3,), dtype=mg.int8)
    for y in (g.dequantize_with_scale_tensor(q, s, 0, mg.float32, 0), g.dequantize_blockwise_symmetric(q, s, mg.float32)):
        with pytest.raises(mg.NotDifferentiableError, match="dequantize"):
            g.gradients(g.reduction_sum(y), [s])
    ste = g.addition(x, g.stop_gradient(g.subtraction(y := g.dequantize(g.quantize(x, 0.5, 0, mg.int8), 0.5, 0,
                                                                          mg.float32), x)))
    dste = g.gradients(g.reduction_sum(ste), [x])[x]
    r = g.run({x: np.array([0.3, -1.2, 7.0], F32)}, [ste, dste, y])
    np.testing.assert_array_equal(r[ste], r[y])
    np.testing.assert_array_equal(r[dste], np.ones(3, F32))


def _tool_graph():
    g = mg.Graph()
    x = g.placeholder((3, 4), name="x")
    s = g.constant(np.array([0.5, 0.25, 1.0, 2.0], F32), name="s")
    z = g.constant(np.array([1, -2, 3, 0], np.int8), name="z")
    q = g.quantize_with_tensors(x, s, z, mg.int8, -1, name="q")
    outs = [g.quantize(x, 0.1, 3, mg.uint8, name="qs"), g.quantize_with_scale_tensor(x, s, 2, mg.int8, 1, name="qst"),
            g.dequantize(q, 0.1, -1, mg.float16, name="ds"), g.dequantize_with_scale_tensor(q, s, 0, mg.float32, 1,
                                                                                            name="dst"),
            g.dequantize_with_tensors(q, s, z, mg.float32, 1, name="dt"),
            g.dequantize_blockwise(q, g.constant(np.ones((3, 2), F32)), g.constant(np.ones((3, 2), np.int8)),
                                   mg.float32, name="db"),
            g.dequantize_blockwise_symmetric(q, g.constant(np.ones((3, 1), F32)), mg.float32, name="dbs"),
            g.dequantize_lut(g.constant(np.arange(12, dtype=np.uint8).reshape(3, 4)),
                             g.constant(np.linspace(0, 1, 256).astype(F32)), name="lut"),
            g.dequantize_vector_lut(g.constant(np.arange(12, dtype=np.uint8).reshape(3, 4)),
                                    g.constant(np.ones((256, 2), F16)), 0, name="vlut")]
    feeds = {x: np.random.default_rng(0).standard_normal((3, 4)).astype(F32)}
    return g, x, feeds, outs


def test_save_load_round_trip_is_exact(tmp_path):
    g, x, feeds, outs = _tool_graph()
    want = g.run(feeds, outs)
    g2 = mg.load(g.save(str(tmp_path / "quant.mpsg")))
    by = {t.name: t for op in g2.operations for t in op.outputs}
    got = g2.run({by["x"]: feeds[x]}, [by[t.name] for t in outs])
    for t in outs:
        np.testing.assert_array_equal(got[by[t.name]], want[t])
        assert by[t.name].operation.attrs == t.operation.attrs


def test_swift_export_writes_apples_calls():
    g, _, feeds, outs = _tool_graph()
    swift = g.to_swift(feeds=feeds, target_tensors=outs)
    assert "Needs macOS 15.0 / iOS 18.0" in swift
    assert 'graph.quantize(x, scaleTensor: s, zeroPointTensor: z, dataType: .int8, axis: 1, name: "q")' in swift
    assert 'graph.quantize(x, scale: 0.1, zeroPoint: 3, dataType: .uInt8, name: "qs")' in swift
    assert 'graph.quantize(x, scaleTensor: s, zeroPoint: 2, dataType: .int8, axis: 1, name: "qst")' in swift
    assert 'graph.dequantize(q, scale: 0.1, zeroPoint: -1, dataType: .float16, name: "ds")' in swift
    assert "graph.dequantize(q, scaleTensor: s, zeroPointTensor: z, dataType: .float32, axis: 1" in swift
    assert ", dataType: .float32, name: \"db\")" in swift and "zeroPointTensor:" in swift
    assert "LUTTensor:" in swift and "axis: 0, name: \"vlut\")" in swift


# ----------------------------------------------------------------------------- int4 / uint4
Q4 = {"int4": (np.int8, -8, 7), "uint4": (np.uint8, 0, 15)}


def _run4(fn, arrays, dtypes, backend="numpy"):
    """Like _run, with each placeholder's dtype given (int4 / uint4 placeholders take int8 / uint8 arrays)."""
    g = mg.Graph()
    ps = [g.placeholder(a.shape, dtype=d) for a, d in zip(arrays, dtypes)]
    outs = fn(g, *ps)
    outs = outs if isinstance(outs, list) else [outs]
    res = g.run(dict(zip(ps, arrays)), outs, backend=backend)
    return [np.asarray(res[o]) for o in outs]


def test_four_bit_types_mirror_mpsdatatype():
    assert mg.int4.mps_value == 0x20000004 and mg.uint4.mps_value == 0x00000004  # SignedBit | 4, and 4
    assert mg.int4.np_dtype == np.int8 and mg.uint4.np_dtype == np.uint8
    assert mg.int4.is_integer and mg.uint4.is_integer and mg.int4 != mg.int8 and mg.uint4 != "uint8"
    assert mg.as_dtype("int4") is mg.int4 and mg.as_dtype(np.int8) is mg.int8  # NumPy's int8 stays int8


def test_quantize_to_four_bits_hand_values():
    x = np.array([1.25, -0.75, 0.25, 0.75, np.nan, np.inf, -np.inf, 30.0, -30.0, -0.0, 3.5, -4.5], F32)
    (q, u) = _run(lambda g, a: [g.quantize(a, 0.5, 1, mg.int4), g.quantize(a, 0.5, 8, mg.uint4)], [x])
    # 2.5 -> 2, -1.5 -> -2, 0.5 -> 0, 1.5 -> 2 (half to even), NaN -> the zero point, saturated to 4 bits
    np.testing.assert_array_equal(q, np.array([3, -1, 1, 3, 1, 7, -8, 7, -8, 1, 7, -8], np.int8))
    np.testing.assert_array_equal(u, np.array([10, 6, 8, 10, 8, 15, 0, 15, 0, 8, 15, 0], np.uint8))
    assert q.dtype == np.int8 and u.dtype == np.uint8


def test_dequantize_from_four_bits_hand_values():
    q = np.array([-8, -1, 0, 7], np.int8)
    u = np.array([0, 3, 9, 15], np.uint8)
    (a, b) = _run4(lambda g, x, y: [g.dequantize(x, 0.5, -2, mg.float32), g.dequantize(y, 0.25, 8, mg.float16)],
                   [q, u], [mg.int4, mg.uint4])
    np.testing.assert_array_equal(a, np.array([-3.0, 0.5, 1.0, 4.5], F32))
    np.testing.assert_array_equal(b, np.array([-2.0, -1.25, 0.25, 1.75], F16))


def _onnx_eval4(op, x, s, z, ztype, out_type, axis):
    """ONNX's reference QuantizeLinear / DequantizeLinear with an INT4 / UINT4 zero point (an initializer:
    NumPy has no 4-bit arrays), opset 21."""
    from onnx import TensorProto, helper
    from onnx.reference import ReferenceEvaluator
    inits = [helper.make_tensor("z", ztype, list(z.shape), z.reshape(-1).tolist())]
    if op == "DequantizeLinear":  # the 4-bit input is an initializer too
        inits.append(helper.make_tensor("x", ztype, list(x.shape), x.reshape(-1).tolist()))
        inputs = []
    else:
        inputs = [helper.make_tensor_value_info("x", helper.np_dtype_to_tensor_dtype(x.dtype), x.shape)]
    inits.append(helper.make_tensor("s", TensorProto.FLOAT, list(s.shape), s.reshape(-1).tolist()))
    node = helper.make_node(op, ["x", "s", "z"], ["y"], axis=axis)
    graph = helper.make_graph([node], "g", inputs, [helper.make_tensor_value_info("y", out_type, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    return ReferenceEvaluator(model).run(None, {} if op == "DequantizeLinear" else {"x": x})[0]


@pytest.mark.parametrize("dt", ["int4", "uint4"])
@pytest.mark.parametrize("axis", [None, 0, 2])
def test_four_bits_against_onnx_quantize_linear_and_dequantize_linear(dt, axis):
    pytest.importorskip("onnx", reason="needs the 'onnx' extra")
    from onnx import TensorProto
    rng = _rng("onnx4", dt, axis)
    npdt, lo, hi = Q4[dt]
    shape = (3, 4, 5)
    x = (rng.standard_normal(shape) * 5).astype(F32)
    x.reshape(-1)[:6] = [0.25, 0.75, -0.25, 100.0, -100.0, 0.0]  # ties and saturation
    n = 1 if axis is None else shape[axis]
    s = rng.uniform(0.1, 0.6, n).astype(F32)
    z = rng.integers(lo // 2, hi // 2 + 1, n).astype(npdt)
    if axis is None:
        s, z = s.reshape(()), z.reshape(())
    ztype = TensorProto.INT4 if dt == "int4" else TensorProto.UINT4
    ax = 0 if axis is None else axis
    want_q = _onnx_eval4("QuantizeLinear", x, s, z, ztype, ztype, ax).astype(npdt)
    dtype = mg.as_dtype(dt)
    (q,) = _run4(lambda g, a, b, c: g.quantize_with_tensors(a, b, c, dtype, ax), [x, s, z], [mg.float32, mg.float32, dtype])
    np.testing.assert_array_equal(q, want_q)
    assert q.dtype == npdt and q.min() >= lo and q.max() <= hi
    want_y = _onnx_eval4("DequantizeLinear", q, s, z, ztype, TensorProto.FLOAT, ax)
    (y,) = _run4(lambda g, a, b, c: g.dequantize_with_tensors(a, b, c, mg.float32, ax), [q, s, z], [dtype, mg.float32, dtype])
    np.testing.assert_array_equal(y, want_y)
    if axis is None:
        (q2,) = _run(lambda g, a: g.quantize(a, float(s), int(z), dtype), [x])
        np.testing.assert_array_equal(q2, want_q)
        (y2,) = _run4(lambda g, a: g.dequantize(a, float(s), int(z), mg.float32), [q], [dtype])
        np.testing.assert_array_equal(y2, want_y)
    else:
        (q3,) = _run(lambda g, a, b: g.quantize_with_scale_tensor(a, b, 1, dtype, ax), [x, s])
        np.testing.assert_array_equal(q3, _quantize_loop4(x, s, 1, dt, ax))


def _quantize_loop4(x, scale, zp, dt, axis):
    npdt, lo, hi = Q4[dt]
    out = np.empty(x.shape, npdt)
    for idx in np.ndindex(*x.shape):
        v = float(np.float32(x[idx]) / np.float32(scale[idx[axis]]))
        r = 0.0 if np.isnan(v) else float(np.rint(v))
        out[idx] = int(min(max(r + zp, lo), hi))
    return out


@pytest.mark.parametrize("dt", ["int4", "uint4"])
def test_four_bit_blockwise_and_per_axis_dequantize_match_loops(dt):
    rng = _rng("blockwise4", dt)
    npdt, lo, hi = Q4[dt]
    dtype = mg.as_dtype(dt)
    q = rng.integers(lo, hi + 1, (3, 8)).astype(npdt)
    s = rng.uniform(0.1, 1.0, (3, 2)).astype(F32)
    z = rng.integers(lo, hi + 1, (3, 2)).astype(npdt)
    sa = rng.uniform(0.1, 1.0, 8).astype(F32)
    got = _run4(lambda g, a, b, c, d: [g.dequantize_blockwise(a, b, c, mg.float32),
                                       g.dequantize_blockwise_symmetric(a, b, mg.float32),
                                       g.dequantize_with_scale_tensor(a, d, 2, mg.float32, 1)],
                [q, s, z, sa], [dtype, mg.float32, dtype, mg.float32])
    np.testing.assert_array_equal(got[0], _blockwise_loop(q, s, z, F32))
    np.testing.assert_array_equal(got[1], _blockwise_loop(q, s, np.zeros_like(z), F32))
    np.testing.assert_array_equal(got[2], _dequantize_loop(q, sa, 2, F32, axis=1))


def _lut4(q, lut, vector_axis=None, backend="numpy"):
    g = mg.Graph()
    qc = g.constant(q, mg.uint4)
    lc = g.constant(lut)
    out = g.dequantize_lut(qc, lc) if vector_axis is None else g.dequantize_vector_lut(qc, lc, vector_axis)
    return np.asarray(g.run({}, [out], backend=backend)[out])


def test_uint4_lookup_tables_have_16_entries():
    rng = _rng("lut4")
    q = rng.integers(0, 16, (4, 6)).astype(np.uint8)
    lut = (rng.standard_normal((2, 3, 16)) * 10).astype(F32)
    np.testing.assert_array_equal(_lut4(q, lut), _lut_loop(q, lut))
    vlut = (rng.standard_normal((2, 16, 3)) * 10).astype(F16)
    np.testing.assert_array_equal(_lut4(q, vlut, 1), _vector_lut_loop(q, vlut, 1))
    np.testing.assert_array_equal(_lut4(np.array([[0, 15]], np.uint8), np.arange(16, dtype=F32)), [[0.0, 15.0]])
    g = mg.Graph()
    with pytest.raises(mg.ShapeError, match="16 entries"):
        g.dequantize_lut(g.constant(q, mg.uint4), np.ones(256, F32))
    with pytest.raises(mg.DTypeError, match="uint4"):
        g.dequantize_lut(g.constant((q // 2).astype(np.int8), mg.int4), np.ones(16, F32))


def test_four_bit_feeds_must_be_in_range():
    g = mg.Graph()
    p = g.placeholder([3], mg.int4, name="codes")
    u = g.placeholder([2], mg.uint4, name="ucodes")
    y = g.dequantize(p, 1.0, 0, mg.float32)
    v = g.dequantize(u, 1.0, 0, mg.float32)
    r = g.run({p: np.array([-8, 0, 7], np.int8), u: [0, 15]}, [y, v])  # a list takes the holding dtype
    np.testing.assert_array_equal(r[y], [-8.0, 0.0, 7.0])
    np.testing.assert_array_equal(r[v], [0.0, 15.0])
    with pytest.raises(mg.FeedError, match=r"'codes'.*-8 to 7.*\[8\]"):
        g.run({p: np.array([8, 0, 7], np.int8), u: [0, 1]}, [y, v])
    with pytest.raises(mg.FeedError, match=r"'ucodes'.*0 to 15"):
        g.run({p: np.zeros(3, np.int8), u: [16, 1]}, [y, v])
    with pytest.raises(mg.FeedError, match="codes"):  # an int32 array is no int4 feed: no silent casts
        g.run({p: np.zeros(3, np.int32), u: [0, 1]}, [y, v])
    exe = g.compile({p: mg.ShapedType([3], mg.int4), u: mg.ShapedType([2], mg.uint4)}, [y])
    np.testing.assert_array_equal(exe.run({p: np.array([1, 2, 3], np.int8), u: np.array([0, 1], np.uint8)})[0],
                                  [1.0, 2.0, 3.0])
    with pytest.raises(mg.FeedError, match="codes"):
        exe.run({p: np.array([1, 2, -9], np.int8), u: np.array([0, 1], np.uint8)})


def test_four_bit_constants_must_be_in_range():
    g = mg.Graph()
    c = g.constant([-8, 7], mg.int4)
    assert c.dtype == mg.int4
    f = g.constant(15, mg.uint4, shape=[3])
    np.testing.assert_array_equal(g.run({}, [g.dequantize(f, 1.0, 0, mg.float32)]).popitem()[1], [15.0, 15.0, 15.0])
    with pytest.raises(mg.DTypeError, match="constant.*-8 to 7"):
        g.constant([1, 9], mg.int4)
    with pytest.raises(mg.DTypeError, match="constant.*0 to 15"):
        g.constant(np.array([16], np.uint8), mg.uint4)
    with pytest.raises(mg.DescriptorError, match=r"\[-8, 7\]"):
        g.quantize(g.placeholder([2]), 0.5, 8, mg.int4)
    with pytest.raises(mg.DescriptorError, match=r"\[0, 15\]"):
        g.dequantize(f, 0.5, 16, mg.float32)


def test_cast_to_four_bits_keeps_the_low_bits_and_from_them_is_exact():
    """A cast to int4 / uint4 keeps the integer's low 4 bits (two's complement), as a cast to int8
    keeps 8 in NumPy; floats are truncated toward zero first."""
    i = np.array([7, 8, -8, -9, 16, -1, 23, 1000], np.int32)
    f = np.array([2.9, -2.9, 7.5, 8.0, -8.5, 15.99, -0.5, 0.0], F32)
    b = np.array([True, False, True, False, True, False, True, False])
    got = _run(lambda g, a, c, d: [g.cast(a, mg.int4), g.cast(a, mg.uint4), g.cast(c, mg.int4), g.cast(c, mg.uint4),
                                   g.cast(d, mg.int4)], [i, f, b])
    np.testing.assert_array_equal(got[0], np.array([7, -8, -8, 7, 0, -1, 7, -8], np.int8))
    np.testing.assert_array_equal(got[1], np.array([7, 8, 8, 7, 0, 15, 7, 8], np.uint8))
    np.testing.assert_array_equal(got[2], np.array([2, -2, 7, -8, -8, -1, 0, 0], np.int8))
    np.testing.assert_array_equal(got[3], np.array([2, 14, 7, 8, 8, 15, 0, 0], np.uint8))
    np.testing.assert_array_equal(got[4], b.astype(np.int8))
    assert got[0].dtype == np.int8 and got[1].dtype == np.uint8
    q = np.arange(-8, 8, dtype=np.int8)
    back = _run4(lambda g, a: [g.cast(a, mg.int32), g.cast(a, mg.float16), g.cast(a, mg.uint4), g.cast(a, mg.int8)],
                 [q], [mg.int4])
    np.testing.assert_array_equal(back[0], q.astype(np.int32))
    np.testing.assert_array_equal(back[1], q.astype(F16))
    np.testing.assert_array_equal(back[2], (q.astype(np.int32) & 15).astype(np.uint8))
    np.testing.assert_array_equal(back[3], q)


@pytest.mark.parametrize("build", [lambda g, q: g.addition(q, q), lambda g, q: g.reduction_sum(q, axes=[0]),
                                   lambda g, q: g.transpose(q, 0, 1), lambda g, q: g.bitwise_and(q, q),
                                   lambda g, q: g.maximum(q, q)])
def test_other_ops_refuse_four_bits(build):
    g = mg.Graph()
    q = g.placeholder([2, 2], mg.int4)
    with pytest.raises(mg.DTypeError, match="takes no int4") as e:
        build(g, q)
    assert " op " in str(e.value)
    r = g.reshape(g.identity(q), [4])  # ops that only move values take them
    assert r.dtype == mg.int4


def test_four_bits_on_cpu_and_webgpu_match_numpy(backend):
    rng = _rng("four bits", backend)
    x = (rng.standard_normal((4, 6)) * 3).astype(F32)
    x[0, :4] = [np.nan, np.inf, -np.inf, 0.25]
    q = rng.integers(-8, 8, (4, 6)).astype(np.int8)
    u = rng.integers(0, 16, (4, 6)).astype(np.uint8)
    s = rng.uniform(0.1, 1.0, (4, 3)).astype(F32)
    z = rng.integers(-8, 8, (4, 3)).astype(np.int8)

    def fn(g, a, b, c, d, e):
        lut = g.constant(np.linspace(-1, 1, 2 * 16).astype(F32).reshape(2, 16))
        return [g.quantize(a, 0.5, 1, mg.int4), g.quantize(a, 0.25, 8, mg.uint4),
                g.dequantize(b, 0.5, -1, mg.float32), g.dequantize(c, 0.125, 8, mg.float32),
                g.dequantize_blockwise(b, d, e, mg.float32), g.dequantize_blockwise_symmetric(b, d, mg.float32),
                g.dequantize_lut(g.constant(u, mg.uint4), lut), g.dequantize(g.quantize(a, 0.5, 0, mg.int4), 0.5, 0,
                                                                             mg.float32)]
    dts = [mg.float32, mg.int4, mg.uint4, mg.float32, mg.int4]
    for want, got in zip(_run4(fn, [x, q, u, s, z], dts), _run4(fn, [x, q, u, s, z], dts, backend)):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


def _tool_graph4():
    g = mg.Graph()
    x = g.placeholder((3, 4), name="x")
    p = g.placeholder((3, 4), mg.uint4, name="p")
    c = g.constant(np.array([1, -8, 7], np.int8), mg.int4, name="c")
    outs = [g.quantize(x, 0.5, -1, mg.int4, name="q4"), g.quantize(x, 0.5, 8, mg.uint4, name="qu4"),
            g.dequantize(p, 0.5, 8, mg.float32, name="d4"), g.dequantize(c, 0.5, 0, mg.float32, name="dc"),
            g.dequantize(g.constant(5, mg.int4, shape=[2], name="fill"), 1.0, 0, mg.float32, name="df"),
            g.dequantize_lut(g.constant(np.arange(12, dtype=np.uint8).reshape(3, 4), mg.uint4, name="idx"),
                             g.constant(np.linspace(0, 1, 16).astype(F32)), name="lut4")]
    feeds = {x: np.random.default_rng(0).standard_normal((3, 4)).astype(F32),
             p: np.arange(12, dtype=np.uint8).reshape(3, 4)}
    return g, feeds, outs


def test_four_bit_save_load_round_trip_is_exact(tmp_path):
    g, feeds, outs = _tool_graph4()
    want = g.run(feeds, outs)
    g2 = mg.load(g.save(str(tmp_path / "quant4.mpsg")))
    by = {t.name: t for op in g2.operations for t in op.outputs}
    assert by["p"].dtype == mg.uint4 and by["c"].dtype == mg.int4 and by["q4"].dtype == mg.int4
    got = g2.run({by[t.name]: v for t, v in feeds.items()}, [by[t.name] for t in outs])
    for t in outs:
        np.testing.assert_array_equal(got[by[t.name]], want[t])


def test_four_bit_swift_export_uses_int4_and_packs_constants():
    g, feeds, outs = _tool_graph4()
    swift = g.to_swift(feeds=feeds, target_tensors=outs)
    assert 'graph.quantize(x, scale: 0.5, zeroPoint: -1, dataType: .int4, name: "q4")' in swift
    assert 'graph.quantize(x, scale: 0.5, zeroPoint: 8, dataType: .uInt4, name: "qu4")' in swift
    assert 'graph.placeholder(shape: [3, 4], dataType: .uInt4, name: "p")' in swift
    assert "Needs macOS 15.0 / iOS 18.0 or later (" in swift and "dataType .int4" in swift
    # [1, -8, 7] packed two per byte, the first in the low bits: 0x81, 0x07
    assert 'graph.constant(Data(base64Encoded: "gQc=")!, shape: [3], dataType: .int4)' in swift


def test_int8_arrays_stand_for_four_bit_zero_points():
    """NumPy has no int4: an int8 (uint8) array given as the zero points of an int4 (uint4) tensor
    becomes an int4 (uint4) constant, checked to be in range."""
    g = mg.Graph()
    q = g.placeholder([2, 4], mg.int4)
    y = g.dequantize_with_tensors(q, np.array([0.5, 1, 2, 4], F32), np.array([1, -1, 0, 7], np.int8), mg.float32, 1)
    b = g.dequantize_blockwise(q, np.ones((2, 2), F32), np.array([[1, -1], [0, 7]], np.int8), mg.float32)
    assert y.operation.inputs[2].dtype == mg.int4 and b.operation.inputs[2].dtype == mg.int4
    r = g.run({q: np.array([[0, 1, 2, -8]] * 2, np.int8)}, [y, b])
    np.testing.assert_array_equal(r[y], [[-0.5, 2.0, 4.0, -60.0]] * 2)
    np.testing.assert_array_equal(r[b], [[-1.0, 0.0, 3.0, -7.0], [0.0, 1.0, -5.0, -15.0]])
    with pytest.raises(mg.DTypeError, match="dequantize_with_tensors.*-8 to 7"):
        g.dequantize_with_tensors(q, np.ones(4, F32), np.array([1, -1, 0, 9], np.int8), mg.float32, 1)


def test_loading_refuses_four_bit_constants_out_of_range(tmp_path):
    import hashlib
    import json
    g = mg.Graph()
    g.dequantize(g.constant(np.array([1, -8, 7], np.int8), mg.int4, name="c"), 1.0, 0, mg.float32)
    path = g.save(str(tmp_path / "q4.mpsg"))
    npz = str(tmp_path / "q4.npz")
    with np.load(npz) as z:
        arrays = {k: z[k] for k in z.files}
    (key,) = arrays
    arrays[key] = np.array([1, -8, 9], np.int8)  # 9 is no int4
    np.savez(npz, **arrays)
    doc = json.loads(open(path).read())
    doc["npz_sha256"] = hashlib.sha256(open(npz, "rb").read()).hexdigest()
    open(path, "w").write(json.dumps(doc))
    with pytest.raises(mg.SerializationError, match="-8 to 7"):
        mg.load(path)
