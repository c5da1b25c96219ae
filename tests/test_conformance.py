"""Backend conformance: every op of the registry, on every available backend, against NumPy.

The NumPy backend is the executable definition of minigraph's semantics (docs/backends.md); every other
backend must give the same results: float32 within ~1e-5 relative, float16 within a few ulp,
integers and bools exactly, NaN where NumPy has NaN. ``CASES`` holds small graphs per op type
(several shapes, dtypes, descriptor options, NaN/Inf inputs); a test fails when an op of
``minigraph.ops.OPS`` has no case here or no webgpu kernel, so a new op cannot slip through.

Each case builds its graph once and runs it on both backends; random data, never zeros. The
webgpu backend runs on lavapipe in CI (MINIGRAPH_REQUIRE_BACKENDS=numpy,webgpu), so shapes stay
small and the pipeline cache is shared by all cases.
"""
from __future__ import annotations

import itertools
import os
import sys
import zlib

import numpy as np
import pytest

import minigraph as mg
from minigraph.descriptors import (Convolution2DOpDescriptor, Convolution3DOpDescriptor, DepthwiseConvolution2DOpDescriptor,
                                   DepthwiseConvolution3DOpDescriptor, Pooling2DOpDescriptor, Pooling4DOpDescriptor)
from minigraph.ops import OPS
from minigraph.ops.elementwise import COMPLEX_OPS

from conftest import ALL_BACKENDS
from op_cases import BINARY, BITWISE, COMPARE, ELEMENTWISE, LOGICAL, UNARY, input_domains

F32, F16 = np.float32, np.float16
SPECIAL = {"placeholder", "constant", "variable", "read", "assign",
           "block_argument", "call"}  # block arguments and call (it needs callables): tests/test_control_flow.py
OURS = {"webgpu", "metal"}  # minigraph's own backends: they must have every kernel


def _others():
    """Every registered backend but the reference: built-in ones, and third-party ones found
    through the ``minigraph.backends`` entry points (those may cover only some ops)."""
    avail = mg.available_backends()
    names = [b for b in ALL_BACKENDS if b != "numpy"] + (["metal"] if sys.platform == "darwin" else [])
    return names + [b for b in list(avail) + list(avail.unavailable) if b not in names and b not in ("numpy", "metal")]


OTHERS = _others()
CASES: dict = {}  # op type -> [(case id, build, tolerance)]


def _required():
    return {b for b in os.environ.get("MINIGRAPH_REQUIRE_BACKENDS", "").split(",") if b}


@pytest.fixture(params=OTHERS)
def other(request):
    """A non-reference backend that works here (a required one that does not is a failure)."""
    name = request.param
    avail = mg.available_backends()
    if name not in avail:
        why = avail.unavailable.get(name, "unknown")
        if name in _required():
            pytest.fail(f"backend {name!r} is required (MINIGRAPH_REQUIRE_BACKENDS) but unavailable: {why}")
        pytest.skip(f"backend {name!r} unavailable: {why}")
    return name


# ----------------------------------------------------------------------------- data
def uniform(rng, shape, lo=-2.0, hi=2.0, dtype=F32, nonzero=True):
    a = rng.uniform(lo, hi, shape)
    if nonzero:
        a = np.where(np.abs(a) < 1e-3, 0.5, a)
    return np.asarray(a, dtype=dtype)


def ints(rng, shape, lo=-50, hi=50, dtype=np.int32):
    a = rng.integers(lo, hi, shape, dtype=np.int64)
    return np.where(a == 0, 7, a).astype(dtype)


def with_nan(a, every=5):
    a = a.copy()
    a.reshape(-1)[::every] = np.nan
    return a


def case(op: str, cid: str, tol=(1e-5, 1e-6)):
    """Register ``build(g, rng) -> (targets, feeds)`` as a case of ``op``. ``tol``: (rtol, atol),
    or (rtol, "scaled") for accumulating ops, where atol = rtol * max|reference|."""
    def deco(build):
        CASES.setdefault(op, []).append((f"{op}-{cid}", build, tol))
        return build
    return deco


def feed(g, arr, name=None):
    p = g.placeholder(arr.shape, dtype=arr.dtype, name=name)
    return p, {p: arr}


# ----------------------------------------------------------------------------- elementwise
BIN_SHAPES = [((3, 4), (3, 4)), ((2, 3, 4), (4,)), ((2, 1, 4), (3, 1)), ((), (5,)), ((1, 5), (4, 1))]
MINMAX = ("maximum", "minimum", "maximum_with_nan_propagation", "minimum_with_nan_propagation")
for _op in BINARY:
    for _sa, _sb in BIN_SHAPES:
        def _b(g, rng, op=_op, sa=_sa, sb=_sb):
            (la, ha), (lb, hb) = input_domains(op)
            b = uniform(rng, sb, lb, hb)
            if op == "division":
                b *= rng.choice([-1, 1], size=sb).astype(F32)
            a, fa = feed(g, uniform(rng, sa, la, ha))
            bb, fb = feed(g, b)
            return [getattr(g, op)(a, bb)], {**fa, **fb}
        case(_op, f"f32{_sa}{_sb}", tol=(1e-5, 1e-6) if _op != "power" else (2e-5, 1e-6))(_b)
    if ELEMENTWISE[_op].ints:
        for _dt in (np.int32, np.uint32):
            def _b(g, rng, op=_op, dt=_dt):
                lo = -(2 ** 31) if dt == np.int32 else 0
                a, fa = feed(g, rng.integers(lo, 2 ** 31 - 1, (4, 5), dtype=np.int64).astype(dt))
                b, fb = feed(g, rng.integers(lo, 2 ** 31 - 1, (5,), dtype=np.int64).astype(dt))
                return [getattr(g, op)(a, b)], {**fa, **fb}  # wraps around as NumPy does
            case(_op, np.dtype(_dt).name)(_b)
    if _op in ("addition", "multiplication", "division", "maximum", "power", "minimum_with_nan_propagation"):
        def _b(g, rng, op=_op):
            lo, hi = input_domains(op)[0]
            a, fa = feed(g, uniform(rng, (3, 4), lo, hi, dtype=F16))
            b, fb = feed(g, uniform(rng, (4,), 0.5, 2, dtype=F16))
            return [getattr(g, op)(a, b)], {**fa, **fb}
        case(_op, "f16", tol=(2e-3, 1e-3))(_b)
MINMAX_SPECIALS = np.array([np.nan, np.nan, 1.0, np.nan, -np.inf, np.inf, 0.0, -0.0, -2.0, np.inf], F32)
for _op in MINMAX:
    def _b(g, rng, op=_op):
        a, fa = feed(g, with_nan(uniform(rng, (4, 5)), 3))
        b, fb = feed(g, with_nan(uniform(rng, (4, 5)), 4))
        return [getattr(g, op)(a, b), getattr(g, op)(b, a)], {**fa, **fb}
    case(_op, "nan")(_b)

    def _b(g, rng, op=_op):
        a, fa = feed(g, MINMAX_SPECIALS)
        b, fb = feed(g, MINMAX_SPECIALS[::-1].copy())
        h, fh = feed(g, MINMAX_SPECIALS.astype(F16))
        return [getattr(g, op)(a, b), getattr(g, op)(b, a), getattr(g, op)(h, np.float16(1))], {**fa, **fb, **fh}
    case(_op, "special-values")(_b)


@case("power", "negative-base-integer-exponent")
def _(g, rng):
    a, fa = feed(g, uniform(rng, (3, 6), -3, 3))
    b, fb = feed(g, np.array([-2, -1, 0, 1, 2, 3], F32))
    return [g.power(a, b)], {**fa, **fb}


@case("power", "special")
def _(g, rng):
    a, fa = feed(g, np.array([0, 0, 1, np.nan, -2, 2, np.inf, -np.inf, 0.5, -1.5], F32))
    b, fb = feed(g, np.array([2, -1, np.nan, 0, 0.5, np.inf, -1, 3, -np.inf, 2], F32))
    return [g.power(a, b)], {**fa, **fb}


@case("division", "by-zero")
def _(g, rng):
    a, fa = feed(g, np.array([1, -1, 0, np.inf, 2], F32))
    b, fb = feed(g, np.array([0, 0, 0, 2, np.inf], F32))
    return [g.division(a, b)], {**fa, **fb}


for _op in COMPARE:
    def _b(g, rng, op=_op):
        (la, ha), (lb, hb) = input_domains(op)
        av = np.round(uniform(rng, (4, 5), la, ha))  # rounding makes ties
        a, fa = feed(g, with_nan(av, 7))
        b, fb = feed(g, np.round(uniform(rng, (5,), lb, hb)))
        return [getattr(g, op)(a, b)], {**fa, **fb}
    case(_op, "f32-nan")(_b)
    for _dt in (np.int32, np.uint32, np.bool_):
        def _b(g, rng, op=_op, dt=_dt):
            mk = (lambda s: rng.integers(0, 2, s).astype(bool)) if dt == np.bool_ else \
                (lambda s: rng.integers(0 if dt == np.uint32 else -3, 3, s).astype(dt))
            a, fa = feed(g, mk((3, 4)))
            b, fb = feed(g, mk((3, 1)))
            return [getattr(g, op)(a, b)], {**fa, **fb}
        case(_op, np.dtype(_dt).name)(_b)

SPECIALS = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-30, -1e-30, 88.0, -88.0, 100.0, -100.0, 1e-4, -1e-4,
                     0.6, -0.6, 9.5, -9.5, 1000.0], F32)
for _op in UNARY:
    [(_lo, _hi)] = input_domains(_op)
    for _shape in ((3, 4, 5), ()):
        def _b(g, rng, op=_op, lo=_lo, hi=_hi, shape=_shape):
            x, fx = feed(g, uniform(rng, shape, lo, hi))
            return [getattr(g, op)(x)], fx
        case(_op, f"f32{_shape}")(_b)

    def _b(g, rng, op=_op):
        x, fx = feed(g, SPECIALS)
        return [getattr(g, op)(x)], fx
    case(_op, "special-values", tol=(1e-5, 1e-6))(_b)

    def _b(g, rng, op=_op, lo=_lo, hi=_hi):
        x, fx = feed(g, uniform(rng, (3, 5), max(lo, -8), min(hi, 8), dtype=F16))
        return [getattr(g, op)(x)], fx
    case(_op, "f16", tol=(2e-3, 2e-3))(_b)
    if ELEMENTWISE[_op].ints:
        for _dt in (np.int32, np.uint32):
            def _b(g, rng, op=_op, dt=_dt):
                x, fx = feed(g, ints(rng, (4, 6), 0 if dt == np.uint32 else -40000, 40000, dt))
                return [getattr(g, op)(x)], fx
            case(_op, np.dtype(_dt).name)(_b)


@case("identity", "bool")
def _(g, rng):
    x, fx = feed(g, rng.integers(0, 2, (3, 4)).astype(bool))
    return [g.identity(x)], fx


@case("select", "bool-predicate-broadcast")
def _(g, rng):
    p, fp = feed(g, rng.integers(0, 2, (3, 1)).astype(bool))
    a, fa = feed(g, uniform(rng, (3, 4)))
    b, fb = feed(g, uniform(rng, (4,)))
    return [g.select(p, a, b)], {**fp, **fa, **fb}


@case("select", "float-predicate-with-nan")
def _(g, rng):
    p, fp = feed(g, with_nan(np.round(uniform(rng, (2, 5), -1, 1)), 3))
    a, fa = feed(g, ints(rng, (2, 5)))
    b, fb = feed(g, ints(rng, (2, 5)))
    return [g.select(p, a, b)], {**fp, **fa, **fb}


@case("select", "int-predicate-f16")
def _(g, rng):
    p, fp = feed(g, rng.integers(-2, 2, (4,)).astype(np.int32))
    a, fa = feed(g, uniform(rng, (3, 4), dtype=F16))
    b, fb = feed(g, uniform(rng, (3, 4), dtype=F16))
    return [g.select(p, a, b)], {**fp, **fa, **fb}


def _cast_values(rng, src, dst):
    if src == "bool":
        return rng.integers(0, 2, (3, 4)).astype(bool)
    if src in ("float32", "float16"):
        lo = 0 if dst == "uint32" else -100
        v = uniform(rng, (3, 4), lo, 100, dtype=np.dtype(src))
        if dst in ("float32", "float16", "bool"):
            v = with_nan(v, 5)
        return v
    lo = 0 if src == "uint32" or dst == "float16" else -(2 ** 31)
    hi = 60000 if dst == "float16" else 2 ** 31 - 1
    return rng.integers(lo, hi, (3, 4), dtype=np.int64).astype(src)


for _src, _dst in itertools.product(("float32", "float16", "int32", "uint32", "bool"), repeat=2):
    def _b(g, rng, src=_src, dst=_dst):
        x, fx = feed(g, _cast_values(rng, src, dst))
        return [g.cast(x, dst)], fx
    case("cast", f"{_src}-to-{_dst}", tol=(1e-3, 0) if "float16" in (_src, _dst) else (1e-6, 0))(_b)


for _src, _dst in itertools.product(("float32", "float16", "int32", "uint32"), repeat=2):
    def _b(g, rng, src=_src, dst=_dst):  # every bit pattern: random words, NaN payloads and subnormals included
        bits = rng.integers(0, 2 ** 32, (3, 8), dtype=np.uint64).astype(np.uint32)
        x, fx = feed(g, bits.view(np.uint16).view(np.dtype(src)).reshape(3, 16) if src == "float16"
                     else bits.view(np.dtype(src)))
        return [g.reinterpret_cast(x, dst)], fx
    case("reinterpret_cast", f"{_src}-to-{_dst}", tol=(0, 0))(_b)


# ----------------------------------------------------------------------------- reductions
RED_AXES = [((3, 4, 5), None), ((3, 4, 5), 1), ((3, 4, 5), [0, 2]), ((3, 4, 5), -1), ((2, 600), 1),
            ((700,), None), ((300, 3), 0), ((2, 3), [])]
EXTREMA = ("reduction_maximum", "reduction_minimum", "reduction_maximum_propagate_nan",
           "reduction_minimum_propagate_nan")
for _op in ("reduction_sum", "mean") + EXTREMA:
    for _shape, _axes in RED_AXES:
        def _b(g, rng, op=_op, shape=_shape, axes=_axes):
            x, fx = feed(g, uniform(rng, shape))
            return [getattr(g, op)(x, axes=axes)], fx
        case(_op, f"f32{_shape}-{_axes}", tol=(1e-5, "scaled"))(_b)

    def _b(g, rng, op=_op):
        x, fx = feed(g, with_nan(uniform(rng, (4, 300)), 97))
        return [getattr(g, op)(x, axes=[1]), getattr(g, op)(x, axes=[0])], fx
    case(_op, "nan", tol=(1e-5, "scaled"))(_b)

    def _b(g, rng, op=_op):
        x, fx = feed(g, uniform(rng, (5, 40), dtype=F16))
        return [getattr(g, op)(x, axes=[1])], fx
    case(_op, "f16", tol=(3e-3, "scaled"))(_b)
    for _dt in (np.int32, np.uint32):
        def _b(g, rng, op=_op, dt=_dt):  # a mean of ints is the quotient truncated toward zero
            x, fx = feed(g, ints(rng, (6, 300), 0 if dt == np.uint32 else -1000, 1000, dt))
            return [getattr(g, op)(x, axes=[1]), getattr(g, op)(x, axes=None)], fx
        case(_op, np.dtype(_dt).name)(_b)

    def _b(g, rng, op=_op):  # axes are a set: a repeated axis reduces once
        x, fx = feed(g, uniform(rng, (3, 4, 5)))
        return [getattr(g, op)(x, axes=[1, 1]), getattr(g, op)(x, axes=[2, 0, -1])], fx
    case(_op, "repeated-axes", tol=(1e-5, "scaled"))(_b)


for _op in EXTREMA:
    def _b(g, rng, op=_op):  # rows of only NaN, and zero-length axes: the seed, -inf or +inf
        v = with_nan(uniform(rng, (4, 6)), 5)
        v[1] = np.nan
        x, fx = feed(g, v)
        e, fe = feed(g, np.zeros((3, 0, 2), F32))
        i, fi = feed(g, np.zeros((0, 4), np.int32))
        return [getattr(g, op)(x, axes=[1]), getattr(g, op)(x, axes=[0]), getattr(g, op)(e, axes=[1]),
                getattr(g, op)(e), getattr(g, op)(i, axes=[0])], {**fx, **fe, **fi}
    case(_op, "all-nan-and-empty")(_b)


@case("mean", "int32-negative-quotients")
def _(g, rng):
    x, fx = feed(g, np.array([[1, 2, 4], [-1, -2, -4], [-7, 0, 0], [7, 0, 0]], np.int32))
    return [g.mean(x, axes=[1])], fx


@case("reduction_sum", "bool-counts-as-int32")
def _(g, rng):
    x, fx = feed(g, rng.integers(0, 2, (5, 300)).astype(bool))
    return [g.reduction_sum(x, axes=[1]), g.reduction_sum(x, axes=[0])], fx


@case("reduction_sum", "empty-axis")
def _(g, rng):
    x, fx = feed(g, np.zeros((3, 0), F32))
    return [g.reduction_sum(x, axes=[1])], fx


for _shape, _axis in [((3, 4, 5), -1), ((3, 4, 5), 0), ((3, 4, 5), 1), ((2, 300), 1), ((40, 3), 0)]:
    def _b(g, rng, shape=_shape, axis=_axis):
        x, fx = feed(g, uniform(rng, shape, -5, 5))
        return [g.softmax(x, axis=axis)], fx
    case("softmax", f"{_shape}-{_axis}", tol=(1e-5, 1e-7))(_b)


@case("softmax", "nan")
def _(g, rng):
    x, fx = feed(g, with_nan(uniform(rng, (3, 5)), 7))
    return [g.softmax(x)], fx


@case("softmax", "empty-axis")
def _(g, rng):
    x, fx = feed(g, np.zeros((3, 0), F32))
    return [g.softmax(x, axis=1)], fx


@case("softmax_cross_entropy", "empty-axis")
def _(g, rng):
    x, fx = feed(g, np.zeros((3, 0), F32))
    return [g.softmax_cross_entropy(x, x, axis=1, reduction=r) for r in ("none", "sum", "mean")], fx


@case("softmax", "f16", tol=(3e-3, 1e-4))
def _(g, rng):
    h, fh = feed(g, uniform(rng, (3, 50), dtype=F16))
    return [g.softmax(h)], fh


for _red, (_shape, _axis) in itertools.product(("none", "sum", "mean"), [((4, 7), -1), ((3, 4, 5), 1), ((2, 300), 1)]):
    def _b(g, rng, red=_red, shape=_shape, axis=_axis):
        x, fx = feed(g, uniform(rng, shape, -4, 4))
        lab = rng.uniform(0.1, 1, shape)
        lab = (lab / lab.sum(axis=axis, keepdims=True)).astype(F32)
        l, fl = feed(g, lab)
        return [g.softmax_cross_entropy(x, l, axis=axis, reduction=red)], {**fx, **fl}
    case("softmax_cross_entropy", f"{_red}{_shape}-{_axis}", tol=(1e-5, "scaled"))(_b)


@case("softmax_cross_entropy", "f16", tol=(1e-2, "scaled"))
def _(g, rng):
    x, fx = feed(g, uniform(rng, (4, 9), dtype=F16))
    l, fl = feed(g, uniform(rng, (4, 9), 0.1, 1, dtype=F16))
    return [g.softmax_cross_entropy(x, l, reduction="sum")], {**fx, **fl}


for _shape, _axis in [((3, 4, 5), -1), ((3, 4, 5), 0), ((2, 300), 1)]:
    def _b(g, rng, shape=_shape, axis=_axis):
        x, fx = feed(g, uniform(rng, shape, -5, 5))
        dy, fdy = feed(g, uniform(rng, shape))
        return [g.softmax_gradient(dy, x, axis)], {**fx, **fdy}
    case("softmax_gradient", f"{_shape}-{_axis}", tol=(1e-5, 1e-6))(_b)


@case("softmax_gradient", "f16-nan-empty", tol=(1e-2, 1e-3))
def _(g, rng):
    h, fh = feed(g, uniform(rng, (3, 50), dtype=F16))
    x, fx = feed(g, with_nan(uniform(rng, (3, 5)), 7))
    e, fe = feed(g, np.zeros((3, 0), F32))
    return [g.softmax_gradient(h, h, -1), g.softmax_gradient(x, x, 1), g.softmax_gradient(e, e, 1)], {**fh, **fx, **fe}


for _red, (_shape, _axis) in itertools.product(("none", "sum", "mean"), [((4, 7), -1), ((3, 4, 5), 1), ((2, 300), 1)]):
    def _b(g, rng, red=_red, shape=_shape, axis=_axis):
        x, fx = feed(g, uniform(rng, shape, -4, 4))
        l, fl = feed(g, uniform(rng, shape, 0.1, 1))
        out = [1 if (red != "none" or i == axis % len(shape)) else d for i, d in enumerate(shape)]
        dy, fdy = feed(g, uniform(rng, tuple(out)))
        return [g.softmax_cross_entropy_gradient(dy, x, l, axis, red)], {**fx, **fl, **fdy}
    case("softmax_cross_entropy_gradient", f"{_red}{_shape}-{_axis}", tol=(1e-5, 1e-6))(_b)


@case("softmax_cross_entropy_gradient", "f16-empty", tol=(1e-2, 1e-3))
def _(g, rng):
    x, fx = feed(g, uniform(rng, (4, 9), dtype=F16))
    l, fl = feed(g, uniform(rng, (4, 9), 0.1, 1, dtype=F16))
    e, fe = feed(g, np.zeros((3, 0), F32))
    one = np.ones((1, 1), F16)
    return [g.softmax_cross_entropy_gradient(one, x, l, -1, "mean"),
            g.softmax_cross_entropy_gradient(np.ones((3, 1), F32), e, e, 1, "none")], {**fx, **fl, **fe}


# ----------------------------------------------------------------------------- matmul
for _sa, _sb, _dt in [((3, 4), (4, 5), F32), ((2, 3, 4), (4, 5), F32), ((2, 1, 3, 4), (5, 4, 6), F32),
                      ((33, 70), (70, 17), F32), ((1, 4), (3, 4, 1), F32), ((3, 0), (0, 2), F32),
                      ((2, 5, 6), (6, 3), np.int32), ((4, 3), (3, 5), np.uint32), ((2, 9, 20), (20, 7), F16)]:
    def _b(g, rng, sa=_sa, sb=_sb, dt=_dt):
        mk = (lambda s: ints(rng, s, 0 if dt == np.uint32 else -9, 9, dt)) if np.dtype(dt).kind in "iu" else \
            (lambda s: uniform(rng, s, dtype=dt))
        a, fa = feed(g, mk(sa))
        b, fb = feed(g, mk(sb))
        return [g.matrix_multiplication(a, b)], {**fa, **fb}
    case("matrix_multiplication", f"{_sa}{_sb}-{np.dtype(_dt).name}",
         tol=(2e-3, "scaled") if _dt == F16 else (1e-5, "scaled"))(_b)


# ----------------------------------------------------------------------------- shape ops
SHAPE_DTYPES = {"f32": lambda rng, s: uniform(rng, s), "f16": lambda rng, s: uniform(rng, s, dtype=F16),
                "i32": lambda rng, s: ints(rng, s), "bool": lambda rng, s: rng.integers(0, 2, s).astype(bool)}
SHAPE_OPS = {
    "reshape": [((2, 3, 4), lambda g, x: g.reshape(x, [4, -1])), ((6,), lambda g, x: g.reshape(x, [1, 2, 3]))],
    "expand_dims": [((2, 3), lambda g, x: g.expand_dims(x, [0, -1]))],
    "squeeze": [((1, 3, 1, 2), lambda g, x: g.squeeze(x)), ((1, 3, 1, 2), lambda g, x: g.squeeze(x, [2]))],
    "broadcast": [((3, 1), lambda g, x: g.broadcast(x, [2, 3, 4])), ((), lambda g, x: g.broadcast(x, [3, 2]))],
    "permute": [((2, 3, 4, 5), lambda g, x: g.permute(x, [3, 1, 0, 2])), ((3, 4), lambda g, x: g.permute(x, [1, 0]))],
    "transpose": [((2, 3, 4), lambda g, x: g.transpose(x, 0, -1)), ((5, 7), lambda g, x: g.transpose(x, 1, 0))],
    "slice": [((4, 5, 6), lambda g, x: g.slice(x, 1, 1, 3)), ((4, 5, 6), lambda g, x: g.slice(x, -1, -4, 2))],
    "slice_gradient": [((4, 2, 6), lambda g, x: g.slice_gradient(x, [4, 5, 6], 1, 1, 2)),
                       ((3, 3), lambda g, x: g.slice_gradient(x, [3, 7], -1, -5, 3))],
    "slice_tensor": [((4, 5, 6), lambda g, x: g.slice_tensor(x, [1, -1, 0], [4, 0, 6], [2, -2, 4])),
                     ((4, 5, 6), lambda g, x: g.slice_tensor(x, [-9, 2, 1], [9, 0, 0], [1, 1, -1], start_mask=1,
                                                             end_mask=4, squeeze_mask=2)),
                     ((3, 4), lambda g, x: g.slice_tensor(x, [5], [7], [1]))],
    "slice_gradient_tensor": [((2, 2, 6), lambda g, x: g.slice_gradient_tensor(x, [4, 5, 6], [1, -1, 0], [4, 0, 6],
                                                                              [2, -2, 1])),
                              ((4, 6), lambda g, x: g.slice_gradient_tensor(x, [4, 5, 6], [0, 3], [0, 0], [1, 1],
                                                                           end_mask=1, squeeze_mask=2))],
    "slice_update_data_tensor": [((4, 5, 6), lambda g, x: g.slice_update_data_tensor(
        x, g.slice_tensor(g.reverse(x, [1]), [0, 1], [4, 4], [3, 2]), [0, 1], [4, 4], [3, 2]))],
    "space_to_depth_2d": [((2, 4, 6, 3), lambda g, x: g.space_to_depth_2d(x, 2, 1, 3, 2, True)),
                          ((2, 3, 4, 6), lambda g, x: g.space_to_depth_2d(x, 3, 2, 1, 2, False))],
    "depth_to_space_2d": [((2, 8, 3, 2), lambda g, x: g.depth_to_space_2d(x, 3, 2, 1, 2, True)),
                          ((2, 3, 2, 8), lambda g, x: g.depth_to_space_2d(x, 2, 1, 3, 2, False))],
    "space_to_batch": [((2, 4, 6, 3), lambda g, x: g.space_to_batch(x, [1, 2], 0, [2, 3], False)),
                       ((2, 4, 6, 3), lambda g, x: g.space_to_batch(x, [2, 1], 3, [3, 1], True))],
    "batch_to_space": [((6, 2, 3, 2), lambda g, x: g.batch_to_space(x, [1, 3], 0, [3, 1], False)),
                       ((2, 2, 3, 8), lambda g, x: g.batch_to_space(x, [2, 1], 3, [2, 2], True))],
    "shape_of": [((4, 1, 3), lambda g, x: g.shape_of(x)), ((), lambda g, x: g.shape_of(x))],
    "coordinate_along_axis": [((2,), lambda g, x: g.coordinate_along_axis(1, [3, 4, 2])),
                              ((2,), lambda g, x: g.coordinate_along_axis(-1, [2, 0, 5]))],
    "concat": [((2, 3), lambda g, x: g.concat([x, g.slice(x, 1, 1, 2), x], 1)),
               ((2, 3), lambda g, x: g.concat([x, x], 0)),
               ((2, 3), lambda g, x: g.concat([x, g.negative(x), x], 1, interleave=True)),
               ((2, 3), lambda g, x: g.concat([x, x], -2, interleave=True))],
}
for _op, _variants in SHAPE_OPS.items():
    for _k, (_shape, _fn) in enumerate(_variants):
        for _dn, _mk in SHAPE_DTYPES.items():
            if _k and _dn != "f32":
                continue
            def _b(g, rng, shape=_shape, fn=_fn, mk=_mk):
                x, fx = feed(g, mk(rng, shape))
                return [fn(g, x)], fx
            case(_op, f"{_k}-{_dn}", tol=(0, 0))(_b)


# ----------------------------------------------------------------------------- convolutions
def _dw2d_desc(dl, wl, style, s=(1, 1), d=(1, 1)):
    return DepthwiseConvolution2DOpDescriptor(stride_in_y=s[0], stride_in_x=s[1], dilation_rate_in_y=d[0],
                                              dilation_rate_in_x=d[1], padding_top=1, padding_bottom=2,
                                              padding_left=0, padding_right=1, padding_style=style,
                                              data_layout=dl, weights_layout=wl)


DW2D = [("NCHW", "OIHW", "EXPLICIT", (1, 1), (1, 1), 1), ("NCHW", "HWIO", "TF_SAME", (2, 1), (1, 2), 2),
        ("NHWC", "OIHW", "TF_VALID", (1, 2), (2, 1), 2), ("NHWC", "HWIO", "ONNX_SAME_LOWER", (2, 2), (1, 1), 1),
        ("NCHW", "OIHW", "TF_SAME", (2, 2), (1, 1), 1)]


def _dw2d_shapes(dl, wl, m, n=2, c=3, h=7, w=6, kh=3, kw=2):
    xs = (n, c, h, w) if dl == "NCHW" else (n, h, w, c)
    ws = (m, c, kh, kw) if wl == "OIHW" else (kh, kw, c, m)
    return xs, ws


def _out_shape(fn, *shapes):
    g = mg.Graph()
    return fn(g, *[g.placeholder(s) for s in shapes]).shape


for _dl, _wl, _st, _s, _d, _m in DW2D:
    _desc = _dw2d_desc(_dl, _wl, _st, _s, _d)
    _cid = f"{_dl}-{_wl}-{_st}-s{_s}-d{_d}-m{_m}"

    def _b(g, rng, desc=_desc, dl=_dl, wl=_wl, m=_m):
        xs, ws = _dw2d_shapes(dl, wl, m)
        x, fx = feed(g, uniform(rng, xs))
        w, fw = feed(g, uniform(rng, ws))
        return [g.depthwise_convolution_2d(x, w, desc)], {**fx, **fw}
    case("depthwise_convolution_2d", _cid, tol=(1e-5, "scaled"))(_b)

    def _b(g, rng, desc=_desc, dl=_dl, wl=_wl, m=_m):
        xs, ws = _dw2d_shapes(dl, wl, m)
        ys = _out_shape(lambda g, x, w: g.depthwise_convolution_2d(x, w, desc), xs, ws)
        dy, fd = feed(g, uniform(rng, ys))
        w, fw = feed(g, uniform(rng, ws))
        return [g.depthwise_convolution_2d_data_gradient(dy, w, xs, desc)], {**fd, **fw}
    case("depthwise_convolution_2d_data_gradient", _cid, tol=(1e-5, "scaled"))(_b)

    def _b(g, rng, desc=_desc, dl=_dl, wl=_wl, m=_m):
        xs, ws = _dw2d_shapes(dl, wl, m)
        ys = _out_shape(lambda g, x, w: g.depthwise_convolution_2d(x, w, desc), xs, ws)
        dy, fd = feed(g, uniform(rng, ys))
        x, fx = feed(g, uniform(rng, xs))
        return [g.depthwise_convolution_2d_weights_gradient(dy, x, ws, desc)], {**fd, **fx}
    case("depthwise_convolution_2d_weights_gradient", _cid, tol=(1e-5, "scaled"))(_b)

# the weights gradient's multi-chunk reduction (two passes), channel-innermost lanes, 7x7 taps, float16
for _dl, _wl, _n, _c, _hw, _k, _dt in [("NCHW", "OIHW", 3, 4, 40, 3, F32), ("NHWC", "HWIO", 2, 40, 17, 3, F32),
                                       ("NCHW", "HWIO", 1, 3, 12, 7, F32), ("NHWC", "OIHW", 2, 5, 9, 3, F16)]:
    def _b(g, rng, dl=_dl, wl=_wl, n=_n, c=_c, hw=_hw, k=_k, dt=_dt):
        desc = _dw2d_desc(dl, wl, "TF_SAME")
        xs, ws = _dw2d_shapes(dl, wl, 1, n, c, hw, hw, k, k)
        ys = _out_shape(lambda g, x, w: g.depthwise_convolution_2d(x, w, desc), xs, ws)
        dy, fd = feed(g, uniform(rng, ys, dtype=dt))
        x, fx = feed(g, uniform(rng, xs, dtype=dt))
        return [g.depthwise_convolution_2d_weights_gradient(dy, x, ws, desc)], {**fd, **fx}
    case("depthwise_convolution_2d_weights_gradient", f"large-{_dl}-{_wl}-{_n}x{_c}x{_hw}-k{_k}-{np.dtype(_dt).name}",
         tol=(3e-3 if _dt == F16 else 2e-5, "scaled"))(_b)

CONV2D = [("NCHW", "OIHW", "EXPLICIT", 1), ("NHWC", "HWIO", "TF_SAME", 2), ("NCHW", "HWIO", "TF_VALID", 4),
          ("NHWC", "OIHW", "ONNX_SAME_LOWER", 1)]
for _dl, _wl, _st, _gr in CONV2D:
    _desc = Convolution2DOpDescriptor(stride_in_y=2, stride_in_x=1, dilation_rate_in_y=1, dilation_rate_in_x=2,
                                      padding_top=1, padding_bottom=0, padding_left=2, padding_right=1,
                                      padding_style=_st, data_layout=_dl, weights_layout=_wl, groups=_gr)
    _xs = (2, 4, 7, 6) if _dl == "NCHW" else (2, 7, 6, 4)
    _ws = (8, 4 // _gr, 3, 2) if _wl == "OIHW" else (3, 2, 4 // _gr, 8)
    _cid = f"{_dl}-{_wl}-{_st}-g{_gr}"

    def _b(g, rng, desc=_desc, xs=_xs, ws=_ws):
        x, fx = feed(g, uniform(rng, xs))
        w, fw = feed(g, uniform(rng, ws))
        return [g.convolution_2d(x, w, desc)], {**fx, **fw}
    case("convolution_2d", _cid, tol=(1e-5, "scaled"))(_b)

    def _b(g, rng, desc=_desc, xs=_xs, ws=_ws):
        ys = _out_shape(lambda g, x, w: g.convolution_2d(x, w, desc), xs, ws)
        dy, fd = feed(g, uniform(rng, ys))
        w, fw = feed(g, uniform(rng, ws))
        return [g.convolution_2d_data_gradient(dy, w, xs, desc)], {**fd, **fw}
    case("convolution_2d_data_gradient", _cid, tol=(1e-5, "scaled"))(_b)

    def _b(g, rng, desc=_desc, xs=_xs, ws=_ws):
        ys = _out_shape(lambda g, x, w: g.convolution_2d(x, w, desc), xs, ws)
        dy, fd = feed(g, uniform(rng, ys))
        x, fx = feed(g, uniform(rng, xs))
        return [g.convolution_2d_weights_gradient(dy, x, ws, desc)], {**fd, **fx}
    case("convolution_2d_weights_gradient", _cid, tol=(1e-5, "scaled"))(_b)

CONV3D = [("NCDHW", "OIDHW", "EXPLICIT", 1), ("NDHWC", "DHWIO", "TF_SAME", 2), ("NCDHW", "DHWIO", "TF_VALID", 4),
          ("NDHWC", "OIDHW", "ONNX_SAME_LOWER", 1)]
for _dl, _wl, _st, _gr in CONV3D:
    _desc = Convolution3DOpDescriptor(stride_in_z=1, stride_in_y=2, stride_in_x=1, dilation_rate_in_z=2,
                                      dilation_rate_in_x=2, padding_front=1, padding_back=0, padding_top=1,
                                      padding_bottom=0, padding_left=2, padding_right=1, padding_style=_st,
                                      data_layout=_dl, weights_layout=_wl, groups=_gr)
    _xs = (2, 4, 5, 7, 6) if _dl == "NCDHW" else (2, 5, 7, 6, 4)
    _ws = (8, 4 // _gr, 2, 3, 2) if _wl == "OIDHW" else (2, 3, 2, 4 // _gr, 8)
    _cid = f"{_dl}-{_wl}-{_st}-g{_gr}"

    def _b(g, rng, desc=_desc, xs=_xs, ws=_ws):
        x, fx = feed(g, uniform(rng, xs))
        w, fw = feed(g, uniform(rng, ws))
        return [g.convolution_3d(x, w, desc)], {**fx, **fw}
    case("convolution_3d", _cid, tol=(1e-5, "scaled"))(_b)

    def _b(g, rng, desc=_desc, xs=_xs, ws=_ws):
        ys = _out_shape(lambda g, x, w: g.convolution_3d(x, w, desc), xs, ws)
        dy, fd = feed(g, uniform(rng, ys))
        w, fw = feed(g, uniform(rng, ws))
        return [g.convolution_3d_data_gradient(dy, w, xs, desc)], {**fd, **fw}
    case("convolution_3d_data_gradient", _cid, tol=(1e-5, "scaled"))(_b)

    def _b(g, rng, desc=_desc, xs=_xs, ws=_ws):
        ys = _out_shape(lambda g, x, w: g.convolution_3d(x, w, desc), xs, ws)
        dy, fd = feed(g, uniform(rng, ys))
        x, fx = feed(g, uniform(rng, xs))
        return [g.convolution_3d_weights_gradient(dy, x, ws, desc)], {**fd, **fx}
    case("convolution_3d_weights_gradient", _cid, tol=(1e-5, "scaled"))(_b)

DW3D = [(-4, "EXPLICIT", 1, ()), (-1, "TF_SAME", 2, (2,)), (-3, "TF_VALID", 1, (2, 1)), (-2, "ONNX_SAME_LOWER", 2, ())]
for _cdi, _st, _m, _lead in DW3D:
    _desc = DepthwiseConvolution3DOpDescriptor(strides=(1, 2, 1), dilation_rates=(2, 1, 1),
                                               padding_values=(1, 0, 0, 1, 2, 1), padding_style=_st,
                                               channel_dimension_index=_cdi)
    _last = [5, 6, 4]
    _last.insert(4 + _cdi, 3)
    _xs = tuple(_lead) + tuple(_last)
    _wl = [2, 3, 2]
    _wl.insert(4 + _cdi, 3 * _m)
    _ws = tuple(_wl)
    if len(_xs) < 4:
        _xs = (1,) + _xs
    _cid = f"cdi{_cdi}-{_st}-m{_m}-lead{_lead}"

    def _b(g, rng, desc=_desc, xs=_xs, ws=_ws):
        x, fx = feed(g, uniform(rng, xs))
        w, fw = feed(g, uniform(rng, ws))
        return [g.depthwise_convolution_3d(x, w, desc)], {**fx, **fw}
    case("depthwise_convolution_3d", _cid, tol=(1e-5, "scaled"))(_b)

    def _b(g, rng, desc=_desc, xs=_xs, ws=_ws):
        ys = _out_shape(lambda g, x, w: g.depthwise_convolution_3d(x, w, desc), xs, ws)
        dy, fd = feed(g, uniform(rng, ys))
        w, fw = feed(g, uniform(rng, ws))
        return [g.depthwise_convolution_3d_data_gradient(dy, w, xs, desc)], {**fd, **fw}
    case("depthwise_convolution_3d_data_gradient", _cid, tol=(1e-5, "scaled"))(_b)

    def _b(g, rng, desc=_desc, xs=_xs, ws=_ws):
        ys = _out_shape(lambda g, x, w: g.depthwise_convolution_3d(x, w, desc), xs, ws)
        dy, fd = feed(g, uniform(rng, ys))
        x, fx = feed(g, uniform(rng, xs))
        return [g.depthwise_convolution_3d_weights_gradient(dy, x, ws, desc)], {**fd, **fx}
    case("depthwise_convolution_3d_weights_gradient", _cid, tol=(1e-5, "scaled"))(_b)


# ----------------------------------------------------------------------------- pooling
POOL = [("NCHW", "EXPLICIT", False, False, 3, 2, 1), ("NHWC", "TF_SAME", True, True, 3, 2, 1),
        ("NCHW", "TF_VALID", False, True, 2, 1, 2), ("NHWC", "EXPLICIT", True, False, 3, 3, 1),
        ("NCHW", "ONNX_SAME_LOWER", False, False, 2, 2, 1)]
for _dl, _st, _ceil, _inc, _k, _s, _d in POOL:
    _desc = Pooling2DOpDescriptor(kernel_width=_k, kernel_height=_k, stride_in_x=_s, stride_in_y=_s,
                                  dilation_rate_in_x=_d, dilation_rate_in_y=_d, padding_left=1, padding_right=1,
                                  padding_top=1, padding_bottom=0, padding_style=_st, data_layout=_dl,
                                  ceil_mode=_ceil, include_zero_pad_to_average=_inc)
    _xs = (2, 3, 7, 8) if _dl == "NCHW" else (2, 7, 8, 3)
    _cid = f"{_dl}-{_st}-ceil{int(_ceil)}-inc{int(_inc)}-k{_k}s{_s}d{_d}"

    def _src(rng, xs):
        v = np.round(uniform(rng, xs, -3, 3))  # rounding makes ties inside windows
        return with_nan(v, 11)
    for _kind in ("max", "avg"):
        def _b(g, rng, desc=_desc, xs=_xs, kind=_kind):
            x, fx = feed(g, _src(rng, xs))
            return [getattr(g, f"{kind}_pooling_2d")(x, desc)], fx
        case(f"{_kind}_pooling_2d", _cid, tol=(1e-5, 1e-6))(_b)

        def _b(g, rng, desc=_desc, xs=_xs, kind=_kind):
            ys = _out_shape(lambda g, x: getattr(g, f"{kind}_pooling_2d")(x, desc), xs)
            dy, fd = feed(g, uniform(rng, ys))
            x, fx = feed(g, _src(rng, xs))
            return [getattr(g, f"{kind}_pooling_2d_gradient")(dy, x, desc)], {**fd, **fx}
        case(f"{_kind}_pooling_2d_gradient", _cid, tol=(1e-5, "scaled"))(_b)


# 4-D pooling: the window over the four innermost axes (a batch axis before them), and max pooling
# with indices; the gradients from indices take the forward op's indices
POOL4 = [("k1222-s1212-pad", (1, 2, 2, 2), (1, 2, 1, 2), (1, 1, 1, 1), (0, 0, 1, 0, 0, 1, 1, 1), "EXPLICIT",
          False, False, "GLOBAL_FLATTEN_3D"),
         ("k2223-dil-ceil-incl", (2, 2, 2, 3), (2, 1, 2, 2), (1, 2, 1, 1), (1, 0, 0, 1, 1, 0, 0, 1), "EXPLICIT",
          True, True, "LOCAL_FLATTEN_4D"),
         ("same", (1, 3, 1, 2), (1, 2, 1, 2), (1, 1, 1, 1), (0,) * 8, "TF_SAME", False, False, "GLOBAL_FLATTEN_4D")]
for _cid, _k, _s, _d, _p, _st, _ceil, _inc, _mode in POOL4:
    _desc4 = Pooling4DOpDescriptor(kernel_sizes=_k, strides=_s, dilation_rates=_d, padding_values=_p, padding_style=_st,
                                   ceil_mode=_ceil, include_zero_pad_to_average=_inc, return_indices_mode=_mode)
    _xs4 = (2, 3, 4, 5, 6)

    def _src4(rng, xs):
        return with_nan(np.round(uniform(rng, xs, -3, 3)), 13)
    for _kind in ("max", "avg", "l2_norm"):
        def _b(g, rng, desc=_desc4, kind=_kind):
            x, fx = feed(g, _src4(rng, _xs4) if kind == "max" else uniform(rng, _xs4))
            return [getattr(g, f"{kind}_pooling_4d")(x, desc)], fx
        case(f"{_kind}_pooling_4d", _cid, tol=(1e-5, 1e-6))(_b)

        def _b(g, rng, desc=_desc4, kind=_kind):
            ys = _out_shape(lambda g, x: getattr(g, f"{kind}_pooling_4d")(x, desc), _xs4)
            dy, fd = feed(g, uniform(rng, ys))
            x, fx = feed(g, _src4(rng, _xs4) if kind == "max" else uniform(rng, _xs4))
            return [getattr(g, f"{kind}_pooling_4d_gradient")(dy, x, desc)], {**fd, **fx}
        case(f"{_kind}_pooling_4d_gradient", _cid, tol=(1e-5, "scaled"))(_b)

    def _b(g, rng, desc=_desc4):
        x, fx = feed(g, _src4(rng, (3, 4, 5, 6)))
        y, i = g.max_pooling_4d_return_indices(x, desc)
        dy, fd = feed(g, uniform(rng, y.shape))
        return [y, i, g.max_pooling_4d_gradient_with_indices(dy, i, x.shape, desc)], {**fx, **fd}
    case("max_pooling_4d_return_indices", _cid)(_b)
    case("max_pooling_4d_gradient_with_indices", _cid, tol=(1e-5, "scaled"))(_b)

for _dl, _mode in (("NCHW", "GLOBAL_FLATTEN_2D"), ("NHWC", "GLOBAL_FLATTEN_3D"), ("NCHW", "LOCAL_FLATTEN_2D"),
                   ("NHWC", "LOCAL_FLATTEN_4D")):
    _desc2 = Pooling2DOpDescriptor(kernel_width=3, kernel_height=2, stride_in_x=2, stride_in_y=1, padding_left=1,
                                   padding_right=1, padding_top=1, data_layout=_dl, ceil_mode=True,
                                   return_indices_mode=_mode)

    def _b(g, rng, desc=_desc2, dl=_dl):
        x, fx = feed(g, with_nan(np.round(uniform(rng, (2, 3, 6, 7) if dl == "NCHW" else (2, 6, 7, 3), -3, 3)), 11))
        y, i = g.max_pooling_2d_return_indices(x, desc)
        dy, fd = feed(g, uniform(rng, y.shape))
        return [y, i, g.max_pooling_2d_gradient_with_indices(dy, i, x.shape, desc)], {**fx, **fd}
    case("max_pooling_2d_return_indices", f"{_dl}-{_mode}")(_b)
    case("max_pooling_2d_gradient_with_indices", f"{_dl}-{_mode}", tol=(1e-5, "scaled"))(_b)


@case("max_pooling_2d", "f16")
def _(g, rng):
    x, fx = feed(g, uniform(rng, (1, 2, 6, 6), dtype=F16))
    return [g.max_pooling_2d(x, Pooling2DOpDescriptor(kernel_width=2, kernel_height=2, stride_in_x=2,
                                                        stride_in_y=2))], fx


# ----------------------------------------------------------------------------- memory ops (runner)
@case("variable", "read-assign-constant")
def _(g, rng):
    v = g.variable(uniform(rng, (3, 4)), name="v")
    c = g.constant(uniform(rng, (4,)), name="c")
    x, fx = feed(g, uniform(rng, (3, 4)))
    r1 = g.read(v)
    a = g.assign(v, g.addition(g.multiplication(r1, c), x))
    with g.control_dependencies([a]):
        r2 = g.read(v)  # sees the assignment made earlier in the same run
    return [r1, r2, g.addition(v, c)], fx


# ----------------------------------------------------------------------------- control flow
for _pred in (True, False):
    def _b(g, rng, pred=_pred):
        x, fx = feed(g, uniform(rng, (3, 4)))
        p, fp = feed(g, np.array(pred))
        return g.if_then_else(p, lambda: [g.exponent(x), g.reduction_sum(x, axes=[1])],
                              lambda: [g.tanh(x) * 2.0, g.reduction_maximum(x, axes=[1])]), {**fx, **fp}
    case("if_then_else", f"pred-{_pred}")(_b)


@case("for_loop", "count-and-range")
def _(g, rng):
    x, fx = feed(g, uniform(rng, (2, 3)))
    w, fw = feed(g, uniform(rng, (3, 3), -0.5, 0.5))
    a = g.for_loop(4, [x, g.constant(0.0)], lambda i, s: [g.tanh(g.matrix_multiplication(s[0], w)),
                                                         s[1] + g.cast(i, mg.float32)])
    b = g.for_loop(None, [x], lambda i, s: [s[0] * g.cast(i, mg.float32)], lower_bound=1, upper_bound=8, step=3)
    return a + b, {**fx, **fw}


@case("while_loop", "halve-until-small")
def _(g, rng):
    x, fx = feed(g, uniform(rng, (4,), 1.0, 4.0))

    def before(ins, res):
        res.extend(ins)
        return g.greater_than(g.squeeze(g.reduction_maximum(ins[0], axes=None)), 0.1)
    return g.while_loop([x, g.constant(0, dtype=mg.int32)], before, lambda a: [a[0] * 0.5, a[1] + 1]), fx


# ----------------------------------------------------------------------------- the tests


def test_every_op_has_a_conformance_case():
    covered = set(CASES) | SPECIAL
    missing = sorted(set(OPS) - covered)
    assert not missing, (f"ops without a conformance case in tests/test_conformance.py: {missing} "
                         "(an elementwise op: add its case to ELEMENTWISE in tests/op_cases.py)")


def test_every_op_has_a_webgpu_kernel():
    """No silent fallback: every op in the registry needs a WGSL kernel (no adapter needed)."""
    from minigraph.backends.webgpu import WebGPUBackend

    missing = sorted(set(OPS) - WebGPUBackend().supported_ops())
    assert not missing, f"ops without a webgpu kernel: {missing}"


def _compare(got, want, tol, what):
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} != {want.dtype}"
    rtol, atol = tol
    if want.dtype.kind in "biu" or (rtol == 0 and atol == 0):
        np.testing.assert_array_equal(got, want, err_msg=what)
        return
    wide = np.complex128 if want.dtype.kind == "c" else np.float64
    w = want.astype(wide)
    if atol == "scaled":
        finite = np.abs(w[np.isfinite(w)])
        atol = rtol * (finite.max() if finite.size else 1.0)
    np.testing.assert_allclose(got.astype(wide), w, rtol=rtol, atol=atol, err_msg=what)


def pytest_generate_tests(metafunc):
    """Every case of ``CASES``, those registered further down this file included (collection runs
    after the whole module is imported)."""
    if metafunc.function.__name__ == "test_op_matches_numpy":
        cases = [(op, cid, build, tol) for op, cs in CASES.items() for cid, build, tol in cs]
        metafunc.parametrize("op,cid,build,tol", cases, ids=[c[1] for c in cases])


def test_op_matches_numpy(op, cid, build, tol, other):
    """The case's graph, built twice from one seed, runs on NumPy and on ``other``: same targets,
    same variable values afterwards, feeds untouched."""
    seed = zlib.crc32(cid.encode())
    runs = {}
    for be in ("numpy", other):
        g = mg.Graph()
        targets, feeds = build(g, np.random.default_rng(seed))
        assert op in {o.type for o in g.operations}, f"case {cid} does not build a {op} op"
        before = {k: v.copy() for k, v in feeds.items()}
        try:
            res = g.run(feeds, targets, backend=be)
        except mg.KernelMissingError as e:
            if "shader-f16" in str(e):  # an adapter without float16 support: the error is the documented behaviour
                pytest.skip(str(e))
            if be not in OURS and be != "numpy":  # a third-party backend may run only some ops
                pytest.skip(f"{be} has no kernel: {e}")
            raise
        for k, v in feeds.items():
            np.testing.assert_array_equal(v, before[k], err_msg="a feed was mutated")
        variables = [g.value_of(o) for o in g.operations if o.type == "variable"]
        runs[be] = ([res[t] for t in targets] + variables, [t.name for t in targets] + ["variable"] * len(variables))
    for got, want, name in zip(runs[other][0], runs["numpy"][0], runs["numpy"][1]):
        _compare(got, want, tol, f"{cid} on {other}, {name}")


def test_assignments_match_numpy_across_runs(other):
    """Variables: assignments commit only after a run; the next run sees them (re-uploaded)."""
    results = {}
    for be in ("numpy", other):
        g = mg.Graph()
        v = g.variable(np.arange(6, dtype=F32).reshape(2, 3) + 1, name="v")
        x = g.placeholder([2, 3], name="x")
        step = g.assign(v, g.addition(g.multiplication(g.read(v), 0.5), x), name="step")
        out = []
        for k in range(3):
            try:
                r = g.run({x: np.full((2, 3), k + 1, F32)}, [g.read(v)], [step], backend=be)
            except mg.KernelMissingError as e:
                if be in OURS or be == "numpy":
                    raise
                pytest.skip(f"{be} has no kernel: {e}")
            out.append(next(iter(r.values())))
            out.append(g.value_of(v))
        results[be] = out
    for a, b in zip(results["numpy"], results[other]):
        np.testing.assert_allclose(b, a, rtol=1e-6)


def test_pooling_conv_matmul_reductions_match_numpy_on_every_backend(backend, rng):
    """One graph mixing pooling, grouped convolution, softmax, matmul, reductions and autodiff
    gradients: the same results as the numpy backend, and NumPy's own for max pooling and matmul."""
    g = mg.Graph()
    x = g.placeholder(shape=(2, 4, 6, 6), dtype=mg.float32, name="x")
    k = g.placeholder(shape=(6, 2, 3, 3), dtype=mg.float32, name="k")
    pd = mg.Pooling2DOpDescriptor(kernel_width=2, kernel_height=2, stride_in_x=2, stride_in_y=2)
    mp = g.max_pooling_2d(x, pd, name="mp")
    ap = g.avg_pooling_2d(x, mg.Pooling2DOpDescriptor(kernel_width=3, kernel_height=3, padding_style=mg.PaddingStyle.TF_SAME), name="ap")
    cv = g.convolution_2d(x, k, mg.Convolution2DOpDescriptor(groups=2, padding_style=mg.PaddingStyle.TF_SAME), name="cv")
    sm = g.softmax(g.reshape(cv, shape=(2, -1)), axis=-1, name="sm")
    mm = g.matrix_multiplication(g.reshape(x, shape=(8, 36)), g.transpose(g.reshape(x, shape=(8, 36)), 0, 1), name="mm")
    rs = g.reduction_sum(ap, axes=[1, 3], name="rs")
    loss = g.addition(g.reduction_sum(mp, axes=None), g.reduction_sum(g.multiplication(cv, cv), axes=None))
    gr = g.gradients(loss, [x, k])
    outs = [mp, ap, cv, sm, mm, rs, gr[x], gr[k]]
    feeds = {x: rng.standard_normal((2, 4, 6, 6)).astype(F32), k: rng.standard_normal((6, 2, 3, 3)).astype(F32)}
    got = g.run(feeds, outs, backend=backend)
    ref = g.run(feeds, outs, backend="numpy")
    for t in outs:
        np.testing.assert_allclose(got[t], ref[t], rtol=1e-4, atol=1e-4, err_msg=t.name)
    xv = feeds[x]
    np.testing.assert_allclose(got[mp], xv.reshape(2, 4, 3, 2, 3, 2).max(axis=(3, 5)), rtol=1e-6)
    np.testing.assert_allclose(got[mm], xv.reshape(8, 36) @ xv.reshape(8, 36).T, rtol=1e-4, atol=1e-4)


# ----------------------------------------------------------------------------- clamp, logical ops


@case("clamp", "f32-broadcast-bounds")
def _(g, rng):
    x, fx = feed(g, uniform(rng, (3, 4), -8, 8))
    lo, flo = feed(g, uniform(rng, (4,), -1, 0.5))
    hi, fhi = feed(g, uniform(rng, (3, 1), 0.5, 6))
    return [g.clamp(x, lo, hi)], {**fx, **flo, **fhi}


@case("clamp", "relu6-specials")
def _(g, rng):
    x, fx = feed(g, np.array([np.nan, -np.inf, np.inf, -0.0, 0.0, -1.0, 3.0, 6.0, 7.0, 1e30], F32))
    h, fh = feed(g, np.array([np.nan, -3.0, 8.0, 6.0, 0.0], F16))
    return [g.clamp(x, 0, 6), g.clamp(h, 0, 6)], {**fx, **fh}


@case("clamp", "crossed-bounds-nan-bounds")
def _(g, rng):
    x, fx = feed(g, uniform(rng, (2, 5), -3, 3))
    lo, flo = feed(g, np.array([2.0, np.nan, -1.0, 1.0, np.nan], F32))
    hi, fhi = feed(g, np.array([-2.0, 1.0, np.nan, 1.0, np.nan], F32))
    return [g.clamp(x, lo, hi)], {**fx, **flo, **fhi}


for _dt in (np.int32, np.uint32):
    def _b(g, rng, dt=_dt):
        x, fx = feed(g, ints(rng, (3, 5), 0 if dt == np.uint32 else -50, 50, dt))
        lo, flo = feed(g, np.array([5, 0, 10, 20, 30], dt))
        return [g.clamp(x, lo, 25)], {**fx, **flo}
    case("clamp", np.dtype(_dt).name)(_b)


for _op in LOGICAL:
    def _b(g, rng, op=_op):
        a, fa = feed(g, rng.integers(0, 2, (3, 4)).astype(bool))
        if op == "logical_not":
            return [g.logical_not(a)], fa
        b, fb = feed(g, rng.integers(0, 2, (4,)).astype(bool))
        return [getattr(g, op)(a, b), getattr(g, op)(b, a)], {**fa, **fb}
    case(_op, "bool-broadcast")(_b)


INT_EDGES = {np.int32: [0, 1, -1, 2 ** 31 - 1, -(2 ** 31), 255, -256], np.uint32: [0, 1, 2 ** 32 - 1, 2 ** 31, 255, 2 ** 31 - 1, 65536]}
for _op in BITWISE:
    for _dt in (np.int32, np.uint32):
        def _b(g, rng, op=_op, dt=_dt):
            info = np.iinfo(dt)
            av = np.concatenate([rng.integers(info.min, int(info.max) + 1, 20, dtype=np.int64),
                                 INT_EDGES[dt]]).astype(dt).reshape(3, -1)
            a, fa = feed(g, av)
            if ELEMENTWISE[op].arity == 1:
                return [getattr(g, op)(a)], fa
            if "shift" in op:  # 32 and beyond shift every bit out
                bv = np.array([0, 1, 7, 15, 31, 32, 33, 40, 63], np.int64)
                if dt == np.int32:
                    bv[-2:] = [-1, -(2 ** 31)]  # a negative count is a count past the width
            else:
                bv = rng.integers(info.min, int(info.max) + 1, av.shape[1], dtype=np.int64)
            b, fb = feed(g, bv.astype(dt))
            return [getattr(g, op)(a, b)], {**fa, **fb}  # b broadcasts along a's rows
        case(_op, np.dtype(_dt).name)(_b)


@case("division_no_nan", "zero-divisors-specials-f16")
def _(g, rng):
    a, fa = feed(g, np.array([1, -1, 0, np.inf, np.nan, 2, 3, -0.0, 5], F32))
    b, fb = feed(g, np.array([0, -0.0, 0, 0, 0, np.inf, np.nan, 2, 1e-40], F32))
    h, fh = feed(g, np.array([[1, 0, 3], [2, -1, 0]], F16))
    return [g.division_no_nan(a, b), g.division_no_nan(h, h)], {**fa, **fb, **fh}


@case("signbit", "signed-zeros-nan-ints")
def _(g, rng):
    x, fx = feed(g, np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1e-45, -1e-45, -3.0], F32))
    i, fi = feed(g, np.array([0, -1, 2 ** 31 - 1, -(2 ** 31)], np.int32))
    u, fu = feed(g, np.array([0, 2 ** 32 - 1], np.uint32))
    h, fh = feed(g, np.array([-0.0, 0.0, -2.0], F16))
    return [g.signbit(x), g.signbit(i), g.signbit(u), g.signbit(h)], {**fx, **fi, **fu, **fh}


@case("truncate", "halfway-and-large")
def _(g, rng):
    x, fx = feed(g, np.array([0.5, -0.5, 1.5, -2.7, 2.7, -0.0, 8388607.5, -8388607.5, 1e30, np.inf, np.nan], F32))
    return [g.truncate(x)], fx


for _alpha in (0.2, 0.01, -1.5):
    def _b(g, rng, alpha=_alpha):
        x, fx = feed(g, np.concatenate([uniform(rng, (12,), -4, 4), SPECIALS]).astype(F32))
        h, fh = feed(g, uniform(rng, (3, 5), -4, 4, dtype=F16))
        return [g.leaky_relu(x, alpha), g.leaky_relu(h, alpha)], {**fx, **fh}
    case("leaky_relu", f"alpha{_alpha}")(_b)


@case("leaky_relu_gradient", "broadcast-alpha-f16")
def _(g, rng):
    dy, fdy = feed(g, uniform(rng, (3, 6)))
    x, fx = feed(g, np.concatenate([uniform(rng, (3, 2), -3, 3), np.tile(np.array([0.0, -0.0, np.nan, -np.inf], F32), (3, 1))], 1))
    a, fa = feed(g, uniform(rng, (6,), -1, 1))
    h, fh = feed(g, uniform(rng, (2, 4), -3, 3, dtype=F16))
    return [g.leaky_relu_gradient(dy, x, a), g.leaky_relu_gradient(h, h, 0.3)], {**fdy, **fx, **fa, **fh}


@case("relu_gradient", "broadcast-specials-f16")
def _(g, rng):
    dy, fdy = feed(g, uniform(rng, (6,)))
    x, fx = feed(g, np.concatenate([uniform(rng, (3, 2), -3, 3), np.tile(np.array([0.0, -0.0, np.nan, -np.inf], F32), (3, 1))], 1))
    h, fh = feed(g, uniform(rng, (2, 4), -3, 3, dtype=F16))
    return [g.relu_gradient(dy, x), g.relu_gradient(h, h)], {**fdy, **fx, **fh}


@case("sigmoid_gradient", "broadcast-specials-f16", tol=(2e-3, 1e-3))
def _(g, rng):
    dy, fdy = feed(g, uniform(rng, (3, 1)))
    x, fx = feed(g, np.concatenate([uniform(rng, (3, 4), -8, 8), np.tile(np.array([0.0, -0.0, np.nan, -np.inf, np.inf, 30.0], F32), (3, 1))], 1))
    h, fh = feed(g, uniform(rng, (2, 4), -3, 3, dtype=F16))
    return [g.sigmoid_gradient(dy, x), g.sigmoid_gradient(h, h)], {**fdy, **fx, **fh}


@case("modulo", "signs-zero-divisor-specials")
def _(g, rng):
    a = np.array([7, -7, 7, -7, 0, -0.0, 5, np.inf, np.nan, 5, -5, 1e30, 3e-39], F32)
    b = np.array([3, 3, -3, -3, 2, 2, 0, 2, 2, np.inf, -np.inf, 7, 1e-40], F32)
    x, fx = feed(g, a)
    y, fy = feed(g, b)
    i, fi = feed(g, np.array([7, -7, 7, -7, 5, -2 ** 31], np.int32))
    j, fj = feed(g, np.array([3, 3, -3, -3, 0, -1], np.int32))
    return ([g.modulo(x, y), g.floor_modulo(x, y), g.modulo(i, j), g.floor_modulo(i, j)],
            {**fx, **fy, **fi, **fj})


@case("floor_modulo", "every-magnitude")
def _(g, rng):
    a = rng.integers(0, 2 ** 32, 400, dtype=np.uint64).astype(np.uint32).view(F32)
    b = rng.integers(0, 2 ** 32, 400, dtype=np.uint64).astype(np.uint32).view(F32)
    x, fx = feed(g, np.where(np.isfinite(a), a, 1.0).astype(F32))
    y, fy = feed(g, np.where(np.isfinite(b), b, 3.0).astype(F32))
    return [g.floor_modulo(x, y), g.modulo(x, y)], {**fx, **fy}


@case("atan2", "signed-zeros-infinities")
def _(g, rng):
    sp = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 1e-45], F32)
    ys, xs = (a.ravel().copy() for a in np.meshgrid(sp, sp))
    y, fy = feed(g, ys)
    x, fx = feed(g, xs)
    return [g.atan2(y, x)], {**fy, **fx}


@case("round", "halfway-cases")
def _(g, rng):
    x, fx = feed(g, np.array([0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 0.49999997, -3.5, 8388607.5], F32))
    h, fh = feed(g, np.array([0.5, -0.5, 1.5, -1.5, 2.5, -2.5], F16))
    return [g.round(x), g.rint(x), g.floor(x), g.ceil(x), g.round(h), g.rint(h)], {**fx, **fh}


@case("erf", "every-magnitude")
def _(g, rng):
    x, fx = feed(g, np.concatenate([rng.uniform(-4.5, 4.5, 500), np.geomspace(1e-40, 1e3, 200)]).astype(F32))
    return [g.erf(x), g.erf(g.negative(x))], fx


# ----------------------------------------------------------------------------- normalization, adam
_BN_LAYOUTS = {"nchw": ((2, 3, 4, 5), [0, 2, 3], (1, 3, 1, 1)), "nhwc": ((2, 4, 5, 3), [0, 1, 2], (3,))}


for _shape, _axes in [((3, 4, 5), [1]), ((3, 4, 5), [0, 2]), ((3, 4, 5), None), ((2, 300), [1]), ((40, 3), -2)]:
    def _b(g, rng, shape=_shape, axes=_axes):
        x, fx = feed(g, uniform(rng, shape, -3, 5))
        return [g.variance(x, axes)], fx
    case("variance", f"{_shape}-{_axes}", tol=(1e-5, "scaled"))(_b)


@case("variance", "f16-nan-empty", tol=(3e-3, "scaled"))
def _(g, rng):
    h, fh = feed(g, uniform(rng, (4, 6), -2, 2, dtype=F16))
    n, fn = feed(g, with_nan(uniform(rng, (4, 6)), 7))
    e, fe = feed(g, np.zeros((3, 0), F32))
    return [g.variance(h, [1]), g.variance(n, [1]), g.variance(e, [1])], {**fh, **fn, **fe}


for _lay, (_shape, _axes, _pshape) in _BN_LAYOUTS.items():
    def _b(g, rng, shape=_shape, axes=_axes, pshape=_pshape):
        x, fx = feed(g, uniform(rng, shape, -3, 5))
        gam, fg = feed(g, uniform(rng, pshape))
        bet, fb = feed(g, uniform(rng, pshape))
        y = g.normalize(x, g.mean(x, axes), g.variance(x, axes), gam, bet, 1e-5)
        plain = g.normalize(x, g.mean(x, axes), g.variance(x, axes), None, None, 0.5)
        return [y, plain], {**fx, **fg, **fb}
    case("normalize", f"batch-norm-{_lay}", tol=(1e-4, 1e-5))(_b)


@case("normalize", "broadcast-f16-nan", tol=(4e-3, 4e-3))
def _(g, rng):
    x, fx = feed(g, with_nan(uniform(rng, (3, 4)), 5))
    mean, fm = feed(g, uniform(rng, (4,)))
    var, fv = feed(g, uniform(rng, (3, 1), 0.1, 2))
    h, fh = feed(g, uniform(rng, (3, 4), dtype=F16))
    y = g.normalize(x, mean, var, 2.0, None, 1e-3)
    yh = g.normalize(h, np.float16(0.5), np.float16(1.5), None, np.float16(-1), 1e-3)
    return [y, yh], {**fx, **fm, **fv, **fh}


def _bn_grad_inputs(g, rng, shape, axes):
    x, fx = feed(g, uniform(rng, shape, -3, 5))
    dy, fd = feed(g, uniform(rng, shape))
    return x, dy, g.mean(x, axes), g.variance(x, axes), {**fx, **fd}


for _lay, (_shape, _axes, _pshape) in _BN_LAYOUTS.items():
    def _b(g, rng, shape=_shape, axes=_axes):
        x, dy, mean, var, f = _bn_grad_inputs(g, rng, shape, axes)
        return [g.normalization_beta_gradient(dy, x, axes)], f
    case("normalization_beta_gradient", _lay, tol=(1e-5, "scaled"))(_b)

    def _b(g, rng, shape=_shape, axes=_axes):
        x, dy, mean, var, f = _bn_grad_inputs(g, rng, shape, axes)
        return [g.normalization_gamma_gradient(dy, x, mean, var, axes, 1e-5)], f
    case("normalization_gamma_gradient", _lay, tol=(1e-4, "scaled"))(_b)

    def _b(g, rng, shape=_shape, axes=_axes, pshape=_pshape):
        x, dy, mean, var, f = _bn_grad_inputs(g, rng, shape, axes)
        gam, fg = feed(g, uniform(rng, pshape))
        gg = g.normalization_gamma_gradient(dy, x, mean, var, axes, 1e-5)
        bg = g.normalization_beta_gradient(dy, x, axes)
        return [g.normalization_gradient(dy, x, mean, var, gam, gg, bg, axes, 1e-5),
                g.normalization_gradient(dy, x, mean, var, None, None, None, axes, 1e-2)], {**f, **fg}
    case("normalization_gradient", _lay, tol=(1e-4, "scaled"))(_b)


@case("normalization_gradient", "f16", tol=(1e-2, "scaled"))
def _(g, rng):
    x, fx = feed(g, uniform(rng, (4, 3, 2), dtype=F16))
    dy, fd = feed(g, uniform(rng, (4, 3, 2), dtype=F16))
    mean, var = g.mean(x, [0, 2]), g.variance(x, [0, 2])
    return [g.normalization_gradient(dy, x, mean, var, None, None, None, [0, 2], 1e-3),
            g.normalization_gamma_gradient(dy, x, mean, var, [0, 2], 1e-3),
            g.normalization_beta_gradient(dy, x, [0, 2])], {**fx, **fd}


for _ams in (False, True):
    def _b(g, rng, ams=_ams):
        w, fw = feed(g, uniform(rng, (3, 5)))
        m, fm = feed(g, uniform(rng, (3, 5), -0.1, 0.1))
        v, fv = feed(g, uniform(rng, (3, 5), 0.0, 0.02, nonzero=False))
        vmax, fx = feed(g, uniform(rng, (3, 5), 0.0, 0.02, nonzero=False))
        grad, fg = feed(g, uniform(rng, (3, 5)))
        lr, fl = feed(g, np.array(0.01, F32))
        outs = g.adam(lr, 0.9, 0.999, 1e-8, 0.9 ** 3, 0.999 ** 3, w, m, v, vmax if ams else None, grad)
        return outs, {**fw, **fm, **fv, **fx, **fg, **fl}
    case("adam", "amsgrad" if _ams else "plain", tol=(1e-5, 1e-6))(_b)


@case("stochastic_gradient_descent", "f32-f16-broadcast-rate", tol=(2e-3, "scaled"))
def _(g, rng):
    w, fw = feed(g, with_nan(uniform(rng, (3, 5)), 4))
    grad, fg = feed(g, uniform(rng, (3, 5)))
    rate, fr = feed(g, uniform(rng, (1, 5), 0.01, 0.5))
    h, fh = feed(g, uniform(rng, (7,), dtype=F16))
    hg, fhg = feed(g, uniform(rng, (7,), dtype=F16))
    return [g.stochastic_gradient_descent(0.1, w, grad), g.stochastic_gradient_descent(rate, w, grad),
            g.stochastic_gradient_descent(0.25, h, hg)], {**fw, **fg, **fr, **fh, **fhg}


@case("adam", "f16", tol=(4e-3, 1e-3))
def _(g, rng):
    w, fw = feed(g, uniform(rng, (7,), dtype=F16))
    grad, fg = feed(g, uniform(rng, (7,), dtype=F16))
    z = np.zeros(7, F16)
    return g.adam(0.1, 0.9, 0.999, 1e-3, 0.9, 0.999, w, z, z, z, grad), {**fw, **fg}


@case("normalize", "zero-variance-inf-nan", tol=(1e-5, 1e-6))
def _(g, rng):  # a constant column with epsilon 0 is 0 / 0: NaN, as are columns holding inf or NaN
    x, fx = feed(g, np.array([[1, 1, np.inf, np.nan, 2], [1, -0.0, 2, 3, -2]], F32))
    dy, fd = feed(g, uniform(rng, (2, 5)))
    m, v = g.mean(x, [0]), g.variance(x, [0])
    return [g.normalize(x, m, v, None, None, 0.0), g.normalize(x, m, v, 2.0, 1.0, 1e-3),
            g.normalization_gradient(dy, x, m, v, None, None, None, [0], 0.0),
            g.normalization_gamma_gradient(dy, x, m, v, [0], 0.0)], {**fx, **fd}


# ----------------------------------------------------------------------------- reductions, scans, top-k, sorts


def _ties_and_specials(rng, shape, dtype=F32):
    """Small integers (many ties), with NaN, +-inf and -0.0 sprinkled in."""
    a = rng.integers(-3, 4, shape).astype(dtype)
    flat = a.reshape(-1)
    flat[::7] = np.nan
    flat[3::11] = np.inf
    flat[5::13] = -np.inf
    flat[2::9] = -0.0
    return a


for _op, _kw in (("reduction_product", {}), ("reduction_and", {}), ("reduction_or", {})):
    for _axes in ([1], [0, 2], None, []):
        def _b(g, rng, op=_op, axes=_axes):
            x, fx = feed(g, uniform(rng, (3, 4, 5), -1.5, 1.5))
            z, fz = feed(g, np.array([[0.0, 1.0, np.nan], [0.0, 0.0, 0.0], [2.0, -0.0, 3.0]], F32))
            return [getattr(g, op)(x, axes), getattr(g, op)(z, [1])], {**fx, **fz}
        case(_op, f"f32-axes{_axes}")(_b)
    for _dt in (np.int32, np.uint32, np.float16):
        def _b(g, rng, op=_op, dt=_dt):
            v = rng.integers(0 if dt == np.uint32 else -3, 4, (4, 6)).astype(dt)
            x, fx = feed(g, v)
            return [getattr(g, op)(x, [1]), getattr(g, op)(x, [0])], fx
        case(_op, np.dtype(_dt).name, tol=(2e-3, 1e-3) if _dt == np.float16 else (1e-5, 1e-6))(_b)


@case("reduction_and", "bool-empty-long")
def _(g, rng):
    b, fb = feed(g, rng.random((3, 700)) < 0.999)
    e, fe = feed(g, np.zeros((2, 0), np.bool_))
    return [g.reduction_and(b, [1]), g.reduction_or(b, [1]), g.reduction_and(e, [1]), g.reduction_or(e, [1])], {**fb, **fe}


@case("reduction_product", "long-rows-empty", tol=(1e-3, 1e-6))  # 20000 f32 roundings against float64
def _(g, rng):
    x, fx = feed(g, uniform(rng, (2, 20000), 0.9999, 1.0001))
    e, fe = feed(g, np.zeros((3, 0), F32))
    return [g.reduction_product(x, [1]), g.reduction_product(e, [1])], {**fx, **fe}


for _op in ("reduction_arg_maximum", "reduction_arg_minimum"):
    for _axis in (0, 1, -1):
        def _b(g, rng, op=_op, axis=_axis):
            x, fx = feed(g, _ties_and_specials(rng, (5, 6, 7)))
            i, fi = feed(g, ints(rng, (5, 6, 7), -3, 3))
            return [getattr(g, op)(x, axis), getattr(g, op)(i, axis)], {**fx, **fi}
        case(_op, f"ties-nan-axis{_axis}")(_b)

    def _b(g, rng, op=_op):
        h, fh = feed(g, _ties_and_specials(rng, (4, 9), F16))
        u, fu = feed(g, rng.integers(0, 4, (3, 5000)).astype(np.uint32))
        return [getattr(g, op)(h, 1), getattr(g, op)(u, 1)], {**fh, **fu}
    case(_op, "f16-uint32-long")(_b)

for _exclusive, _reverse in itertools.product((False, True), (False, True)):
    def _b(g, rng, exclusive=_exclusive, reverse=_reverse):
        x, fx = feed(g, uniform(rng, (3, 5, 4)))
        i, fi = feed(g, ints(rng, (4, 6)))
        e, fe = feed(g, np.zeros((2, 0, 3), F32))
        return [g.cumulative_sum(x, 1, exclusive=exclusive, reverse=reverse),
                g.cumulative_sum(x, -1, exclusive=exclusive, reverse=reverse),
                g.cumulative_sum(i, 0, exclusive=exclusive, reverse=reverse),
                g.cumulative_sum(e, 1, exclusive=exclusive, reverse=reverse)], {**fx, **fi, **fe}
    case("cumulative_sum", f"exclusive{_exclusive}-reverse{_reverse}", tol=(1e-5, "scaled"))(_b)


for _op in ("cumulative_product", "cumulative_maximum", "cumulative_minimum"):
    for _exclusive, _reverse in itertools.product((False, True), (False, True)):
        def _b(g, rng, op=_op, exclusive=_exclusive, reverse=_reverse):
            x, fx = feed(g, _ties_and_specials(rng, (3, 5, 4)) if op != "cumulative_product" else uniform(rng, (3, 5, 4)))
            i, fi = feed(g, ints(rng, (4, 6), -3, 3))
            e, fe = feed(g, np.zeros((2, 0, 3), F32))
            h, fh = feed(g, uniform(rng, (2, 9), dtype=F16))
            fn = getattr(g, op)
            return [fn(x, 1, exclusive=exclusive, reverse=reverse), fn(x, -1, exclusive=exclusive, reverse=reverse),
                    fn(i, 0, exclusive=exclusive, reverse=reverse), fn(e, 1, exclusive=exclusive, reverse=reverse),
                    fn(h, 1, exclusive=exclusive, reverse=reverse)], {**fx, **fi, **fe, **fh}
        case(_op, f"exclusive{_exclusive}-reverse{_reverse}", tol=(2e-3, 1e-3))(_b)


@case("cumulative_sum", "f16-nan-inf", tol=(2e-3, 1e-3))
def _(g, rng):
    h, fh = feed(g, uniform(rng, (2, 9), dtype=F16))
    x, fx = feed(g, np.array([[1.0, np.nan, 2.0, 3.0], [np.inf, 1.0, -np.inf, 1.0]], F32))
    return [g.cumulative_sum(h, 1), g.cumulative_sum(x, 1), g.cumulative_sum(x, 1, reverse=True, exclusive=True)], \
        {**fh, **fx}


for _op in ("sort", "arg_sort"):
    for _axis, _desc in itertools.product((0, 1, -1), (False, True)):
        def _b(g, rng, op=_op, axis=_axis, desc=_desc):
            x, fx = feed(g, _ties_and_specials(rng, (5, 7, 3)))
            i, fi = feed(g, ints(rng, (5, 7, 3), -3, 3))
            return [getattr(g, op)(x, axis, descending=desc), getattr(g, op)(i, axis, descending=desc)], {**fx, **fi}
        case(_op, f"ties-nan-axis{_axis}-desc{_desc}")(_b)

    def _b(g, rng, op=_op):
        lengths = [feed(g, uniform(rng, (2, n)))for n in (0, 1, 2, 3, 17, 300)]
        u, fu = feed(g, rng.integers(0, 5, (3, 33)).astype(np.uint32))
        h, fh = feed(g, _ties_and_specials(rng, (3, 10), F16))
        b, fb = feed(g, rng.random((2, 9)) < 0.5)
        outs = [getattr(g, op)(t, 1, descending=True) for t, _ in lengths]
        outs += [getattr(g, op)(t, 1) for t in (u, h, b)]
        feeds = {k: v for _, f in lengths for k, v in f.items()}
        return outs, {**feeds, **fu, **fh, **fb}
    case(_op, "lengths-dtypes")(_b)


for _k in (0, 1, 4, 9):
    def _b(g, rng, k=_k):
        x, fx = feed(g, _ties_and_specials(rng, (3, 4, 9)))
        i, fi = feed(g, ints(rng, (6, 9), -3, 3))
        vx, ix = g.top_k(x, k)
        vi, ii = g.top_k(i, k)
        return [vx, ix, vi, ii], {**fx, **fi}
    case("top_k", f"k{_k}-ties-nan")(_b)


@case("top_k", "f16-long-row")
def _(g, rng):
    h, fh = feed(g, _ties_and_specials(rng, (2, 11), F16))
    x, fx = feed(g, uniform(rng, (1, 5000)))
    return list(g.top_k(h, 3)) + list(g.top_k(x, 5)), {**fh, **fx}


for _k in (0, 2, 7):
    def _b(g, rng, k=_k):
        x, fx = feed(g, _ties_and_specials(rng, (2, 3, 7)))
        dy, fdy = feed(g, uniform(rng, (2, 3, k)))
        return [g.top_k_gradient(dy, x, k)], {**fx, **fdy}
    case("top_k_gradient", f"k{_k}")(_b)


for _op in ("top_k_axis", "bottom_k"):
    for _axis, _k in ((0, 2), (1, 4), (-1, 0), (2, 9)):
        def _b(g, rng, op=_op, axis=_axis, k=_k):
            x, fx = feed(g, _ties_and_specials(rng, (3, 4, 9)))
            i, fi = feed(g, ints(rng, (6, 9, 4), -3, 3))
            h, fh = feed(g, _ties_and_specials(rng, (4, 5, 9), F16))
            kk = min(k, 3) if axis == 0 else k
            return [*getattr(g, op)(x, axis, kk), *getattr(g, op)(i, axis if axis != 2 else 1, kk),
                    *getattr(g, op)(h, axis, kk)], {**fx, **fi, **fh}
        case(_op, f"axis{_axis}-k{_k}-ties-nan")(_b)

    def _b(g, rng, op=_op):
        x, fx = feed(g, uniform(rng, (300, 2)))
        return list(getattr(g, op)(x, 0, 5)), fx
    case(_op, "long-axis0")(_b)

for _op in ("top_k_axis_gradient", "bottom_k_gradient"):
    for _axis, _k in ((0, 2), (1, 3), (-1, 7)):
        def _b(g, rng, op=_op, axis=_axis, k=_k):
            x, fx = feed(g, _ties_and_specials(rng, (2, 3, 7)))
            shape = [2, 3, 7]
            shape[axis] = k
            dy, fdy = feed(g, uniform(rng, tuple(shape)))
            return [getattr(g, op)(dy, x, axis, k)], {**fx, **fdy}
        case(_op, f"axis{_axis}-k{_k}")(_b)


# ----------------------------------------------------------------------------- random
# Every case has explicit seeds (the two graphs of a comparison must draw the same bits): uniform,
# integer and dropout results are bit-identical across backends; normal ones agree to a few ulp.
_RD = mg.RandomDistribution
for _cid, _kw, _shape in [
        ("uniform-f32", dict(distribution=_RD.UNIFORM, dtype=mg.float32), (3, 5, 7)),
        ("uniform-range", dict(distribution=_RD.UNIFORM, dtype=mg.float32, min=-3.0, max=7.5), (1001,)),
        ("uniform-f16", dict(distribution=_RD.UNIFORM, dtype=mg.float16, min=-1.0, max=1.0), (33,)),
        ("uniform-i32", dict(distribution=_RD.UNIFORM, dtype=mg.int32, min_integer=-5, max_integer=9), (257,)),
        ("uniform-i32-full", dict(distribution=_RD.UNIFORM, dtype=mg.int32, min_integer=-2 ** 31,
                                  max_integer=2 ** 31 - 1), (64,)),
        ("normal", dict(distribution=_RD.NORMAL, dtype=mg.float32, mean=1.0, standard_deviation=2.0), (513,)),
        ("normal-box-muller", dict(distribution=_RD.NORMAL, dtype=mg.float32,
                                   sampling_method=mg.RandomNormalSamplingMethod.BOX_MULLER), (515,)),
        ("truncated-normal", dict(distribution=_RD.TRUNCATED_NORMAL, dtype=mg.float32), (2, 300)),
        ("truncated-normal-shifted", dict(distribution=_RD.TRUNCATED_NORMAL, dtype=mg.float32, min=0.0, max=3.0,
                                          mean=1.0, standard_deviation=0.5), (301,)),
        ("truncated-normal-box-muller", dict(distribution=_RD.TRUNCATED_NORMAL, dtype=mg.float32, min=-0.5,
                                             max=2.5, sampling_method=mg.RandomNormalSamplingMethod.BOX_MULLER),
         (2, 301)),
        ("empty", dict(distribution=_RD.NORMAL, dtype=mg.float32), (0, 4))]:
    def _b(g, rng, kw=_kw, shape=_shape):
        return [g.random_tensor(list(shape), mg.RandomOpDescriptor(**kw), seed=12345)], {}
    case("random_tensor", _cid, tol=(1e-5, 2e-6) if "normal" in _cid else (0.0, 0.0))(_b)


@case("random_uniform_tensor", "seeds", tol=(0.0, 0.0))
def _(g, rng):
    return [g.random_uniform_tensor([4, 9], seed=s) for s in (0, 1, 2 ** 64 - 1, -5)], {}


@case("random_philox_state_tensor", "seed-counter-key", tol=(0.0, 0.0))
def _(g, rng):
    return [g.random_philox_state_tensor(seed=2 ** 64 - 1),
            g.random_philox_state_tensor(counter_low=2 ** 63 + 5, counter_high=-1, key=7)], {}


@case("random_uniform_tensor_with_state", "chained-carry", tol=(0.0, 0.0))
def _(g, rng):
    s = g.random_philox_state_tensor(counter_low=2 ** 64 - 2, counter_high=2 ** 64 - 1, key=-3)
    a, s = g.random_uniform_tensor_with_state([5, 3], s)
    b, s = g.random_uniform_tensor_with_state([0], s)
    c, s = g.random_uniform_tensor_with_state([9], s)
    return [a, b, c, s], {}


for _cid, _kw in [("uniform-i32", dict(distribution=_RD.UNIFORM, dtype=mg.int32, min_integer=-5, max_integer=9)),
                  ("uniform-f16", dict(distribution=_RD.UNIFORM, dtype=mg.float16)),
                  ("normal-box-muller", dict(distribution=_RD.NORMAL, dtype=mg.float32,
                                             sampling_method=mg.RandomNormalSamplingMethod.BOX_MULLER)),
                  ("truncated-normal-box-muller", dict(distribution=_RD.TRUNCATED_NORMAL, dtype=mg.float32,
                                                       sampling_method=mg.RandomNormalSamplingMethod.BOX_MULLER))]:
    def _b(g, rng, kw=_kw):
        s = g.placeholder([7], mg.int32)
        state = np.array([1, -1, -1, 4, 0, 12345, 678], np.int32)
        v, s2 = g.random_tensor_with_state([3, 67], mg.RandomOpDescriptor(**kw), s)
        return [v, s2], {s: state}
    case("random_tensor_with_state", _cid, tol=(1e-5, 2e-6) if "normal" in _cid else (0.0, 0.0))(_b)

for _rate in (0.0, 0.1, 0.5, 1.0):
    def _b(g, rng, rate=_rate):
        x, fx = feed(g, uniform(rng, (7, 13)))
        h, fh = feed(g, uniform(rng, (9,), dtype=F16))
        specials, fs = feed(g, np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 1.0, 2.0, 3.0], F32))
        return [g.dropout(x, rate, seed=3), g.dropout(h, rate, seed=4), g.dropout(specials, rate, seed=5)], \
            {**fx, **fh, **fs}
    case("dropout", f"rate{_rate}", tol=(0.0, 0.0))(_b)


# ----------------------------------------------------------------------------- convolution transpose, resize

# (id, data layout, weights layout, style, stride, dilation, pads (t, b, l, r), groups, source NCHW,
#  O, I/groups, kernel, result HW)
_TRANSPOSE = [
    ("nchw-s2-pad", "NCHW", "OIHW", "EXPLICIT", (2, 2), (1, 1), (1, 1, 1, 1), 1, (2, 4, 3, 3), 4, 3, (3, 3), (6, 5)),
    ("nhwc-hwio-dil-groups", "NHWC", "HWIO", "EXPLICIT", (1, 2), (2, 1), (0, 1, 2, 0), 2, (1, 4, 4, 3), 4, 2, (2, 3),
     (5, 6)),
    ("same-s3", "NCHW", "HWIO", "TF_SAME", (3, 2), (1, 1), (0, 0, 0, 0), 1, (1, 2, 3, 4), 2, 3, (3, 2), (8, 8)),
    ("onnx-lower-depthwise", "NHWC", "OIHW", "ONNX_SAME_LOWER", (2, 2), (1, 1), (0, 0, 0, 0), 3,
     (2, 3, 2, 2), 3, 1, (3, 3), (4, 3)),
    ("valid-f16", "NCHW", "OIHW", "TF_VALID", (2, 1), (1, 1), (0, 0, 0, 0), 1, (1, 2, 3, 3), 2, 2, (2, 2), (7, 4)),
]


def _transpose_case(spec):
    cid, dl, wl, style, stride, dil, pads, groups, src, o, i, k, hw = spec
    dt = F16 if "f16" in cid else F32
    desc = Convolution2DOpDescriptor(stride_in_y=stride[0], stride_in_x=stride[1], dilation_rate_in_y=dil[0],
                                     dilation_rate_in_x=dil[1], padding_top=pads[0], padding_bottom=pads[1],
                                     padding_left=pads[2], padding_right=pads[3], padding_style=style,
                                     data_layout=dl, weights_layout=wl, groups=groups)
    n, c, h, w = src
    nhwc = dl == "NHWC"
    src_shape = (n, h, w, c) if nhwc else src
    res_shape = (n, hw[0], hw[1], i * groups) if nhwc else (n, i * groups, hw[0], hw[1])
    w_shape = (o, i) + k if wl == "OIHW" else k + (i, o)
    return cid, dt, desc, src_shape, res_shape, w_shape


for _spec in _TRANSPOSE:
    _cid, _dt, _desc, _tsrc, _tres, _tws = _transpose_case(_spec)

    def _b(g, rng, desc=_desc, src=_tsrc, res=_tres, ws=_tws, dt=_dt):
        x, fx = feed(g, uniform(rng, src, dtype=dt))
        w, fw = feed(g, uniform(rng, ws, dtype=dt))
        return [g.convolution_transpose_2d(x, w, res, desc)], {**fx, **fw}
    case("convolution_transpose_2d", _cid, tol=(2e-3 if _dt == F16 else 1e-5, "scaled"))(_b)

    def _b(g, rng, desc=_desc, src=_tsrc, res=_tres, ws=_tws, dt=_dt):
        dy, fd = feed(g, uniform(rng, res, dtype=dt))
        w, fw = feed(g, uniform(rng, ws, dtype=dt))
        return [g.convolution_transpose_2d_data_gradient(dy, w, src, desc)], {**fd, **fw}
    case("convolution_transpose_2d_data_gradient", _cid, tol=(2e-3 if _dt == F16 else 1e-5, "scaled"))(_b)

    def _b(g, rng, desc=_desc, src=_tsrc, res=_tres, ws=_tws, dt=_dt):
        dy, fd = feed(g, uniform(rng, res, dtype=dt))
        x, fx = feed(g, uniform(rng, src, dtype=dt))
        return [g.convolution_transpose_2d_weights_gradient(dy, x, ws, desc)], {**fd, **fx}
    case("convolution_transpose_2d_weights_gradient", _cid, tol=(2e-3 if _dt == F16 else 1e-5, "scaled"))(_b)

# (id, layout, shape, size, mode, center_result, align_corners)
_RESIZES = [
    ("nchw-up-bilinear-half", "NCHW", (2, 3, 4, 5), (7, 9), "BILINEAR", True, False),
    ("nhwc-down-bilinear-corners", "NHWC", (1, 9, 7, 2), (4, 3), "BILINEAR", False, True),
    ("hw-bilinear-asym", "HW", (5, 4), (8, 3), "BILINEAR", False, False),
    ("chw-nearest-half", "CHW", (2, 4, 4), (7, 7), "NEAREST", True, False),
    ("hwc-nearest-asym", "HWC", (6, 5, 3), (4, 11), "NEAREST", False, False),
    ("nchw-nearest-corners-one", "NCHW", (1, 2, 5, 6), (1, 9), "NEAREST", True, True),
    ("f16-bilinear", "NHWC", (1, 3, 3, 4), (7, 2), "BILINEAR", True, False),
    ("specials", "HW", (3, 4), (7, 7), "BILINEAR", True, False),
]
for _cid, _lay, _shape, _size, _mode, _cr, _ac in _RESIZES:
    _dt = F16 if "f16" in _cid else F32

    def _b(g, rng, lay=_lay, shape=_shape, size=_size, mode=_mode, cr=_cr, ac=_ac, dt=_dt, cid=_cid):
        a = uniform(rng, shape, dtype=dt)
        if cid == "specials":
            a.reshape(-1)[[0, 5, 11]] = [np.nan, np.inf, -np.inf]
        x, fx = feed(g, a)
        return [g.resize(x, size, mode, cr, ac, lay)], fx
    case("resize", _cid, tol=(2e-3, 2e-3) if _dt == F16 else (1e-5, 1e-6))(_b)

    def _b(g, rng, lay=_lay, shape=_shape, size=_size, mode=_mode, cr=_cr, ac=_ac, dt=_dt):
        x, fx = feed(g, uniform(rng, shape, dtype=dt))
        out = list(shape)
        axes = {"NCHW": (2, 3), "NHWC": (1, 2), "CHW": (1, 2), "HWC": (0, 1), "HW": (0, 1)}[lay]
        out[axes[0]], out[axes[1]] = size
        dy, fd = feed(g, uniform(rng, tuple(out), dtype=dt))
        return [g.resize_gradient(dy, x, mode, cr, ac, lay)], {**fx, **fd}
    case("resize_gradient", _cid, tol=(2e-3, 2e-3) if _dt == F16 else (1e-5, "scaled"))(_b)

# the rounding-mode, scale-offset and no-layout forms: (id, shape, size, keywords of resize)
_RN = mg.ResizeNearestRoundingMode
_RESIZE_FORMS = [
    ("nearest-round-to-even", (1, 5, 4, 2), (9, 7), dict(mode="NEAREST", layout="NHWC",
                                                         nearest_rounding_mode=_RN.ROUND_TO_EVEN)),
    ("nearest-floor-half", (2, 3, 4, 5), (7, 3), dict(mode="NEAREST", center_result=True, layout="NCHW",
                                                      nearest_rounding_mode=_RN.FLOOR)),
    ("bilinear-scale-offset", (1, 2, 5, 4), (7, 6), dict(mode="BILINEAR", layout="NCHW", scale=[1.5, 0.75],
                                                         offset=[0.25, -0.1])),
    ("nearest-scale-offset-no-layout", (2, 5, 4), (3, 7, 6), dict(mode="NEAREST", scale=[1.0, 1.25, 2.0],
                                                                  offset=[0.5, 0.0, -0.75],
                                                                  nearest_rounding_mode=_RN.ROUND_TO_ODD)),
    ("bilinear-no-layout", (3, 4, 2), (5, 2, 3), dict(mode="BILINEAR", center_result=True)),
]
for _cid, _shape, _size, _kw in _RESIZE_FORMS:
    def _b(g, rng, shape=_shape, size=_size, kw=_kw):
        x, fx = feed(g, uniform(rng, shape))
        return [g.resize(x, size, **kw)], fx
    case("resize", _cid, tol=(1e-5, 1e-6))(_b)

    def _b(g, rng, shape=_shape, size=_size, kw=_kw):
        x, fx = feed(g, uniform(rng, shape))
        out = list(shape)
        axes = {"NCHW": (2, 3), "NHWC": (1, 2)}[kw["layout"]] if "layout" in kw else tuple(range(len(shape)))
        for a, n in zip(axes, size):
            out[a] = n
        dy, fd = feed(g, uniform(rng, tuple(out)))
        return [g.resize_gradient(dy, x, **kw)], {**fx, **fd}
    case("resize_gradient", _cid, tol=(1e-5, "scaled"))(_b)


# ----------------------------------------------------------------------------- padding, tile, split, stack, flatten_2d, reverse
_PADS = {"CONSTANT": ([2, 0, 3], [1, 2, 4]), "ZERO": ([1, 1, 0], [0, 2, 5]), "CLAMP_TO_EDGE": ([3, 0, 6], [2, 5, 1]),
         "REFLECT": ([2, 3, 4], [1, 3, 1]), "SYMMETRIC": ([3, 4, 5], [3, 1, 2]), "PERIODIC": ([5, 1, 9], [4, 7, 2]),
         "ANTI_PERIODIC": ([4, 0, 11], [6, 3, 1])}
for _mode, (_left, _right) in _PADS.items():
    def _b(g, rng, mode=_mode, left=_left, right=_right):
        x, fx = feed(g, with_nan(uniform(rng, (3, 4, 5)), 7))
        h, fh = feed(g, uniform(rng, (4, 5), dtype=F16))
        i, fi = feed(g, ints(rng, (4, 5)))
        out = [g.pad_tensor(x, mode, left, right, -2.5), g.pad_tensor(h, mode, left[1:], right[1:], 0.3),
               g.pad_tensor(i, mode, left[1:], right[1:], -7.9)]
        if mode in ("CONSTANT", "CLAMP_TO_EDGE"):
            b, fb = feed(g, rng.uniform(size=(2, 3)) > 0.5)
            out.append(g.pad_tensor(b, mode, [1, 0], [0, 2], 1.0))
            fi = {**fi, **fb}
        return out, {**fx, **fh, **fi}
    case("pad_tensor", _mode.lower())(_b)

    def _b(g, rng, mode=_mode, left=_left, right=_right):
        x, fx = feed(g, uniform(rng, (3, 4, 5)))
        shape = tuple(n + a + b for n, a, b in zip((3, 4, 5), left, right))
        dy, fd = feed(g, uniform(rng, shape))
        dh, fh = feed(g, uniform(rng, shape[1:], dtype=F16))
        dz, fz = feed(g, uniform(rng, shape[:1] + (4, 5)))
        return [g.pad_gradient(dy, x, mode, left, right), g.pad_gradient(dh, g.reshape(g.slice(x, 0, 0, 1), [4, 5]),
                                                                         mode, left[1:], right[1:]),
                g.pad_gradient(dz, x, mode, [left[0], 0, 0], [right[0], 0, 0])], {**fx, **fd, **fh, **fz}
    case("pad_gradient", _mode.lower(), tol=(2e-3, "scaled"))(_b)


@case("pad_tensor", "empty-and-scalar")
def _(g, rng):
    e, fe = feed(g, np.zeros((0, 3), F32))
    s, fs = feed(g, np.array(1.5, F32))
    return [g.pad_tensor(e, "constant", [2, 1], [1, 0], 4.0), g.pad_tensor(s, "reflect", [], [])], {**fe, **fs}


@case("tile", "f32-i32-bool-f16")
def _(g, rng):
    x, fx = feed(g, with_nan(uniform(rng, (2, 3, 1)), 4))
    i, fi = feed(g, ints(rng, (3,)))
    b, fb = feed(g, rng.uniform(size=(2, 2)) > 0.5)
    h, fh = feed(g, uniform(rng, (1, 3), dtype=F16))
    return [g.tile(x, [2, 1, 4]), g.tile(i, [3]), g.tile(b, [2, 3]), g.tile(h, [4, 1]), g.tile(x, [1, 0, 2])], \
        {**fx, **fi, **fb, **fh}


@case("tile_gradient", "f32-f16-i32", tol=(2e-3, "scaled"))
def _(g, rng):
    x, fx = feed(g, uniform(rng, (2, 3, 1)))
    dy, fd = feed(g, uniform(rng, (4, 3, 5)))
    dh, fh = feed(g, uniform(rng, (6, 3, 2), dtype=F16))
    di, fi = feed(g, ints(rng, (2, 9, 1)))
    return [g.tile_gradient(dy, x, [2, 1, 5]), g.tile_gradient(dh, g.cast(x, mg.float16), [3, 1, 2]),
            g.tile_gradient(di, g.cast(x, mg.int32), [1, 3, 1])], {**fx, **fd, **fh, **fi}


@case("split", "axes-and-dtypes")
def _(g, rng):
    x, fx = feed(g, with_nan(uniform(rng, (4, 6, 2)), 5))
    b, fb = feed(g, rng.uniform(size=(6,)) > 0.5)
    return [*g.split(x, 3, 1), *g.split(x, 2, 0), *g.split(x, 2, -1), *g.split(b, 6, 0), *g.split(x, 1, 1),
            *g.split(x, [1, 0, 5], 1), *g.split(b, [4, 2], -1)], {**fx, **fb}


@case("stack", "broadcast-axes-dtypes")
def _(g, rng):
    a, fa = feed(g, uniform(rng, (2, 3)))
    b, fb = feed(g, uniform(rng, (3,)))
    i, fi = feed(g, ints(rng, (2, 1)))
    s, fs = feed(g, np.array(2.5, F32))
    return [g.stack([a, b], 0), g.stack([a, b, a], -1), g.stack([a, s], 1), g.stack([i, i], 2),
            g.stack([s, s, s], 0)], {**fa, **fb, **fi, **fs}


@case("flatten_2d", "axes")
def _(g, rng):
    x, fx = feed(g, uniform(rng, (2, 3, 4)))
    return [g.flatten_2d(x, 0), g.flatten_2d(x, 1), g.flatten_2d(x, -1), g.flatten_2d(x, 3)], fx


@case("reverse", "axes-dtypes")
def _(g, rng):
    x, fx = feed(g, with_nan(uniform(rng, (3, 4, 5)), 6))
    h, fh = feed(g, uniform(rng, (5, 3), dtype=F16))
    i, fi = feed(g, ints(rng, (7,)))
    return [g.reverse(x, [0]), g.reverse(x, [1, 2]), g.reverse(x, [-1, 0]), g.reverse(x, None), g.reverse(x, []),
            g.reverse(h, [0]), g.reverse(i, [0])], {**fx, **fh, **fi}


# ----------------------------------------------------------------------------- gather, scatter, one-hot
# Indices with repeats, negatives and out-of-range values (gathers give 0, scatters skip); scatters
# combine collisions in row-major order on both backends, so results are bit-identical.
_SM = mg.ScatterMode


@case("gather", "axis1-2d-indices-out-of-range", tol=(0, 0))
def _(g, rng):
    u, fu = feed(g, uniform(rng, (3, 5, 4)))
    i, fi = feed(g, rng.integers(-7, 7, (2, 3)).astype(np.int32))
    return [g.gather(u, i, 1), g.gather(u, i, -1), g.gather(u, i, 0)], {**fu, **fi}


@case("gather", "batch-dims-f16-uint32-int32-bool", tol=(0, 0))
def _(g, rng):
    u, fu = feed(g, uniform(rng, (2, 3, 4, 5), dtype=F16))
    i, fi = feed(g, rng.integers(0, 6, (2, 3, 7)).astype(np.uint32))
    n, fn = feed(g, ints(rng, (2, 6)))
    b, fb = feed(g, rng.random((2, 6)) > 0.5)
    j, fj = feed(g, rng.integers(-6, 6, ()).astype(np.int32))
    return [g.gather(u, i, 2, batch_dimensions=2), g.gather(u, i, 3, batch_dimensions=1), g.gather(n, j, 1),
            g.gather(b, j, 1), g.gather(u, j, 3)], {**fu, **fi, **fn, **fb, **fj}


@case("gather", "empty", tol=(0, 0))
def _(g, rng):
    u, fu = feed(g, uniform(rng, (3, 0)))
    i, fi = feed(g, np.array([0, -1, 2], np.int32))
    e, fe = feed(g, np.zeros((0,), np.int32))
    return [g.gather(u, i, 1), g.gather(u, e, 0)], {**fu, **fi, **fe}


@case("gather_along_axis", "every-axis-and-dtype", tol=(0, 0))
def _(g, rng):
    u, fu = feed(g, with_nan(uniform(rng, (3, 4, 5))))
    h, fh = feed(g, uniform(rng, (3, 4, 5), dtype=F16))
    n, fn = feed(g, ints(rng, (3, 4, 5)))
    outs, feeds = [], {**fu, **fh, **fn}
    for axis, shape in ((0, (6, 4, 5)), (1, (3, 2, 5)), (2, (3, 4, 9))):
        i, fi = feed(g, rng.integers(-shape[axis] - 2, shape[axis] + 2, shape).astype(np.int32))
        feeds.update(fi)
        outs += [g.gather_along_axis(u, i, axis), g.gather_along_axis(h, i, axis - 3), g.gather_along_axis(n, i, axis)]
    return outs, feeds


@case("gather_nd", "tuples-batch-out-of-range", tol=(0, 0))
def _(g, rng):
    u, fu = feed(g, uniform(rng, (2, 4, 3, 5)))
    i, fi = feed(g, rng.integers(-5, 5, (2, 6, 2)).astype(np.int32))
    k, fk = feed(g, rng.integers(-3, 3, (7, 4)).astype(np.int32))
    one, fo = feed(g, rng.integers(0, 3, (3, 1)).astype(np.uint32))
    return [g.gather_nd(u, i), g.gather_nd(u, i, batch_dimensions=1), g.gather_nd(u, k), g.gather_nd(u, one)], \
        {**fu, **fi, **fk, **fo}


for _mode in _SM:
    @case("scatter_along_axis", f"{_mode.name.lower()}-f32-i32-f16")
    def _(g, rng, mode=_mode):
        d, fd = feed(g, with_nan(uniform(rng, (3, 5, 4), 0.5, 2), 7))
        u, fu = feed(g, uniform(rng, (3, 8, 4), 0.5, 2))
        i, fi = feed(g, rng.integers(-6, 6, (3, 8, 4)).astype(np.int32))
        dh, fdh = feed(g, uniform(rng, (5, 3), 0.5, 2, dtype=F16))
        uh, fuh = feed(g, uniform(rng, (9, 3), 0.5, 2, dtype=F16))
        ih, fih = feed(g, rng.integers(0, 5, (9, 3)).astype(np.uint32))
        outs = [g.scatter_along_axis(u, i, d, 1, mode), g.scatter_along_axis(uh, ih, dh, 0, mode)]
        feeds = {**fd, **fu, **fi, **fdh, **fuh, **fih}
        if mode != _SM.DIV:
            di, fdi = feed(g, ints(rng, (4, 3)))
            ui, fui = feed(g, ints(rng, (4, 6)))
            ii, fii = feed(g, rng.integers(-4, 4, (4, 6)).astype(np.int32))
            outs.append(g.scatter_along_axis(ui, ii, di, -1, mode))
            feeds.update({**fdi, **fui, **fii})
        return outs, feeds

    @case("scatter", f"{_mode.name.lower()}-identity-start")
    def _(g, rng, mode=_mode):
        u, fu = feed(g, uniform(rng, (2, 7, 3), 0.5, 2))
        i, fi = feed(g, rng.integers(-5, 5, (7,)).astype(np.int32))
        ui, fui = feed(g, ints(rng, (6, 2)))
        outs = [g.scatter(u, i, [2, 4, 3], 1, mode)]
        if mode != _SM.DIV:
            outs.append(g.scatter(ui, g.slice(i, 0, 0, 6), [5, 2], 0, mode))
        return outs, {**fu, **fi, **fui}

    @case("scatter_nd", f"{_mode.name.lower()}-batch")
    def _(g, rng, mode=_mode):
        u, fu = feed(g, uniform(rng, (2, 6, 3), 0.5, 2))
        i, fi = feed(g, rng.integers(-4, 4, (2, 6, 2)).astype(np.int32))
        u0, fu0 = feed(g, uniform(rng, (5,), 0.5, 2))
        i0, fi0 = feed(g, rng.integers(-3, 3, (5, 3)).astype(np.int32))
        return [g.scatter_nd(u, i, [2, 3, 3, 3], 1, mode), g.scatter_nd(u0, i0, [2, 2, 2], mode=mode)], \
            {**fu, **fi, **fu0, **fi0}


    @case("scatter_with_data", f"{_mode.name.lower()}-onto-data")
    def _(g, rng, mode=_mode):
        d, fd = feed(g, uniform(rng, (2, 5, 3), 0.5, 2))
        u, fu = feed(g, uniform(rng, (2, 7, 3), 0.5, 2))
        i, fi = feed(g, rng.integers(-6, 6, (7,)).astype(np.int32))
        di, fdi = feed(g, ints(rng, (4, 2)))
        ui, fui = feed(g, ints(rng, (3, 2)))
        outs = [g.scatter_with_data(d, u, i, 1, mode)]
        if mode != _SM.DIV:
            outs.append(g.scatter_with_data(di, ui, g.slice(i, 0, 0, 3), 0, mode))
        return outs, {**fd, **fu, **fi, **fdi, **fui}

    @case("scatter_nd_with_data", f"{_mode.name.lower()}-batch-onto-data")
    def _(g, rng, mode=_mode):
        d, fd = feed(g, uniform(rng, (2, 3, 3, 3), 0.5, 2))
        u, fu = feed(g, uniform(rng, (2, 6, 3), 0.5, 2))
        i, fi = feed(g, rng.integers(-4, 4, (2, 6, 2)).astype(np.int32))
        return [g.scatter_nd_with_data(d, u, i, 1, mode)], {**fd, **fu, **fi}


@case("scatter", "long-collision-chain-multi-pass")
def _(g, rng):
    u, fu = feed(g, uniform(rng, (40000,), -1, 1))
    i, fi = feed(g, rng.integers(0, 3, (40000,)).astype(np.int32))
    return [g.scatter(u, i, [3], 0, _SM.ADD)], {**fu, **fi}


@case("scatter_along_axis", "bool-set", tol=(0, 0))
def _(g, rng):
    d, fd = feed(g, rng.random((3, 4)) > 0.5)
    u, fu = feed(g, rng.random((3, 5)) > 0.5)
    i, fi = feed(g, rng.integers(-4, 4, (3, 5)).astype(np.int32))
    return [g.scatter_along_axis(u, i, d, 1, _SM.SET)], {**fd, **fu, **fi}


for _lay in ("NCHW", "NHWC"):
    @case("im_to_col", f"{_lay.lower()}-stride-dilation-padding-dtypes", tol=(0, 0))
    def _(g, rng, lay=_lay):
        d = mg.ImToColOpDescriptor(kernel_width=2, kernel_height=3, stride_in_x=2, dilation_rate_in_y=2,
                                   padding_left=1, padding_right=2, padding_top=1, data_layout=lay)
        x, fx = feed(g, rng.standard_normal((2, 7, 9, 5)).astype(F32))
        h, fh = feed(g, rng.standard_normal((1, 6, 6, 6)).astype(F16))
        i, fi = feed(g, rng.integers(-9, 9, (1, 5, 5, 3)).astype(np.int32))
        return [g.im_to_col(x, d), g.im_to_col(h, d), g.im_to_col(i, d)], {**fx, **fh, **fi}

    @case("col_to_im", f"{_lay.lower()}-overlapping-windows", tol=(1e-6, "scaled"))
    def _(g, rng, lay=_lay):
        d = mg.ImToColOpDescriptor(kernel_width=3, kernel_height=2, stride_in_y=1, dilation_rate_in_x=2,
                                   padding_left=2, padding_bottom=1, data_layout=lay)
        shape = (2, 6, 7, 6)
        m = mg.Graph()
        cols_shape = m.im_to_col(m.placeholder(shape, name="s"), d).shape
        c, fc = feed(g, rng.standard_normal(cols_shape).astype(F32))
        ci, fci = feed(g, rng.integers(-9, 9, cols_shape).astype(np.int32))
        return [g.col_to_im(c, shape, d), g.col_to_im(ci, shape, d)], {**fc, **fci}


# sample_grid: (id, layout, normalize, relative, align_corners, padding, sampling, rounding)
_PM, _RM = mg.PaddingMode, mg.ResizeMode
_SAMPLE_GRIDS = [
    ("nchw-bilinear-zero", "NCHW", True, False, False, _PM.ZERO, _RM.BILINEAR, None),
    ("nhwc-bilinear-constant-relative", "NHWC", True, True, True, _PM.CONSTANT, _RM.BILINEAR, None),
    ("nchw-bilinear-reflect-pixels", "NCHW", False, False, True, _PM.REFLECT, _RM.BILINEAR, None),
    ("nhwc-bilinear-symmetric", "NHWC", True, False, False, _PM.SYMMETRIC, _RM.BILINEAR, None),
    ("nchw-nearest-clamp-even", "NCHW", True, False, True, _PM.CLAMP_TO_EDGE, _RM.NEAREST,
     mg.ResizeNearestRoundingMode.ROUND_TO_EVEN),
    ("nhwc-nearest-constant-relative-pixels", "NHWC", False, True, False, _PM.CONSTANT, _RM.NEAREST, None),
    ("f16-nhwc-bilinear", "NHWC", True, False, False, _PM.CLAMP_TO_EDGE, _RM.BILINEAR, None),
]
for _cid, _lay, _norm, _rel, _ac, _pad, _sm, _rnd in _SAMPLE_GRIDS:
    _dt = F16 if "f16" in _cid else F32

    def _b(g, rng, lay=_lay, norm=_norm, rel=_rel, ac=_ac, pad=_pad, sm=_sm, rnd=_rnd, dt=_dt):
        s, fs = feed(g, rng.standard_normal((2, 5, 6, 3) if lay == "NHWC" else (2, 3, 5, 6)).astype(dt))
        c, fc = feed(g, (rng.uniform(-1.4, 1.4, (2, 4, 7, 2)) * (1 if norm else 4)).astype(dt))
        kw = {} if rnd is None else {"nearest_rounding_mode": rnd}
        return [g.sample_grid(s, c, lay, norm, rel, ac, pad, sm, 0.75, **kw)], {**fs, **fc}
    case("sample_grid", _cid, tol=(3e-3, 3e-3) if _dt == F16 else (1e-5, 1e-5))(_b)
_ST = mg.StencilOpDescriptor
for _red in mg.ReductionMode:
    @case("stencil", f"{_red.name.lower()}-styles-boundaries", tol=(1e-5, "scaled"))
    def _(g, rng, red=_red):
        x, fx = feed(g, rng.standard_normal((2, 3, 5, 4, 6)).astype(F32))
        w, fw = feed(g, rng.standard_normal((2, 1, 3, 2)).astype(F32))
        h, fh = feed(g, rng.standard_normal((3, 4, 3, 5)).astype(F16))
        wh, fwh = feed(g, rng.standard_normal((1, 2, 2, 2)).astype(F16))
        outs = [g.stencil(x, w, _ST(reduction_mode=red, strides=(1, 1, 2, 1), dilation_rates=(1, 1, 1, 2),
                                    explicit_padding=(1, 0, 0, 1, 1, 1, 0, 2), boundary_mode=mg.PaddingMode.REFLECT)),
                g.stencil(x, w, _ST(reduction_mode=red, padding_style=mg.PaddingStyle.TF_SAME,
                                    boundary_mode=mg.PaddingMode.CONSTANT, padding_constant=0.5)),
                g.stencil(x, w, _ST(reduction_mode=red, padding_style=mg.PaddingStyle.EXPLICIT_OFFSET,
                                    offsets=(0, 1, 0, 1), explicit_padding=(0, 0, 1, 1, 0, 0, 2, 2),
                                    boundary_mode=mg.PaddingMode.CLAMP_TO_EDGE)),
                g.stencil(h, wh, _ST(reduction_mode=red, padding_style=mg.PaddingStyle.ONNX_SAME_LOWER,
                                     boundary_mode=mg.PaddingMode.PERIODIC))]
        return outs, {**fx, **fw, **fh, **fwh}


for _st in ("COO", "CSR", "CSC"):
    @case("sparse_tensor", f"{_st.lower()}-duplicates-out-of-range-dtypes", tol=(1e-6, "scaled"))
    def _(g, rng, st=_st):
        rows, cols, nnz = 5, 4, 12
        if st == "COO":
            i0, i1 = rng.integers(-1, rows + 1, nnz), rng.integers(0, cols, nnz)
        else:
            inner = rng.integers(0, cols if st == "CSR" else rows, nnz)
            starts = np.sort(rng.integers(0, nnz + 1, (rows if st == "CSR" else cols) + 1))
            i0, i1 = inner, starts
        outs, feeds = [], {}
        for dt in (F32, F16, np.int32):
            v, fv = feed(g, (rng.standard_normal(nnz) * 4).astype(dt))
            a, fa = feed(g, i0.astype(np.int32))
            b, fb = feed(g, i1.astype(np.uint32 if dt == np.int32 else np.int32))
            outs.append(g.sparse_tensor(st, [v, a, b], [rows, cols], mg.as_dtype(dt)))
            feeds.update({**fv, **fa, **fb})
        return outs, feeds


@case("non_zero_indices", "ranks-dtypes-nan-negative-zero-empty", tol=(0, 0))
def _(g, rng):
    """A host step on webgpu (the input read back after the kernels before it): every rank 0..4,
    float32 with NaN and -0.0, float16, int32, bool, an all-zero and an empty input."""
    outs, feeds = [], {}
    for shape in ((), (7,), (3, 5), (2, 3, 4), (2, 1, 3, 2)):
        a = rng.standard_normal(shape).astype(F32)
        a = np.where(rng.random(shape) < 0.4, 0.0, a).astype(F32)
        x, fx = feed(g, a)
        outs.append(g.non_zero_indices(g.multiplication(x, 2.0)))  # after a kernel of the device
        feeds.update(fx)
    special = np.array([[np.nan, -0.0, 0.0], [1.0, np.inf, -np.nan]], F32)
    for arr in (special, special.astype(F16), ints(rng, (4, 3)) * (rng.random((4, 3)) < 0.5),
                rng.random((3, 4)) < 0.5, np.zeros((2, 3), F32), np.zeros((0, 3), F32)):
        x, fx = feed(g, np.asarray(arr))
        outs.append(g.non_zero_indices(x))
        feeds.update(fx)
    return outs, feeds


for _mode in mg.NonMaximumSuppressionCoordinateMode:
    @case("non_maximum_suppression", f"{_mode.name.lower()}-per-class", tol=(0, 0))
    def _(g, rng, mode=_mode):
        xy = rng.uniform(0, 10, (3, 30, 2))
        wh = rng.uniform(0.5, 4, (3, 30, 2))
        corner = mode.name.startswith("CORNERS")
        b = np.concatenate([xy, xy + wh] if corner else [xy, wh], -1).astype(F32)
        boxes, fb = feed(g, b)
        scores, fs = feed(g, (rng.permutation(3 * 30 * 4).reshape(3, 30, 4) / 360).astype(F32))
        return [g.non_maximum_suppression(boxes, scores, 0.3, 0.2, per, mode) for per in (False, True)], {**fb, **fs}


@case("non_maximum_suppression_with_class_indices", "per-class", tol=(0, 0))
def _(g, rng):
    xy = rng.uniform(0, 10, (2, 40, 2))
    b = np.concatenate([xy, xy + rng.uniform(0.5, 4, (2, 40, 2))], -1).astype(F32)
    boxes, fb = feed(g, b)
    scores, fs = feed(g, (rng.permutation(80).reshape(2, 40, 1) / 80).astype(F32))
    classes, fc = feed(g, rng.integers(0, 3, (2, 40)).astype(np.int32))
    return [g.non_maximum_suppression_with_class_indices(boxes, scores, classes, 0.4, 0.1, per, "CORNERS_WIDTH_FIRST")
            for per in (False, True)], {**fb, **fs, **fc}


@case("band_part", "bands-batch-dtypes-special", tol=(0, 0))
def _(g, rng):
    a, fa = feed(g, rng.standard_normal((2, 3, 5, 4)).astype(F32))
    s = np.array([[np.nan, np.inf, 1], [-np.inf, 2, np.nan], [3, 4, 5]], F16)
    h, fh = feed(g, s)
    i, fi = feed(g, rng.integers(-9, 9, (4, 6)).astype(np.int32))
    e, fe = feed(g, np.zeros((2, 0, 3), F32))
    return [g.band_part(a, 0, 0), g.band_part(a, 1, -1), g.band_part(a, -1, 2), g.band_part(a, 7, 9),
            g.band_part(h, 0, 1), g.band_part(i, 2, 0), g.band_part(i, -1, -1), g.band_part(e, 0, 0)], \
        {**fa, **fh, **fi, **fe}


@case("inverse", "batch-pivots-singular-float16")
def _(g, rng):
    n = np.eye(4) * 8 * rng.choice([-1, 1], (2, 3, 1, 1))
    a, fa = feed(g, (rng.standard_normal((2, 3, 4, 4)) + n).astype(F32))
    p, fp = feed(g, np.array([[[0, 1, 0], [0, 0, 2], [4, 0, 0]], [[1, 2, 3], [2, 4, 6], [1, 0, 1]]], F32))
    h, fh = feed(g, (rng.standard_normal((3, 3)) + 6 * np.eye(3)).astype(F16))
    e, fe = feed(g, np.zeros((2, 0, 0), F32))
    return [g.inverse(a), g.inverse(p), g.inverse(h), g.inverse(e)], {**fa, **fp, **fh, **fe}


@case("hamming_distance", "batch-broadcast-dtypes-empty", tol=(0, 0))
def _(g, rng):
    a, fa = feed(g, rng.integers(-2**31, 2**31, (2, 1, 3, 5), dtype=np.int64).astype(np.int32))
    b, fb = feed(g, rng.integers(-2**31, 2**31, (4, 2, 5), dtype=np.int64).astype(np.int32))
    u, fu = feed(g, rng.integers(0, 2**32, (3, 7), dtype=np.int64).astype(np.uint32))
    e, fe = feed(g, np.zeros((2, 0), np.int32))
    return [g.hamming_distance(a, b, mg.uint32), g.hamming_distance(u, u, mg.uint32),
            g.hamming_distance(b, a, mg.uint32), g.hamming_distance(e, e, mg.uint32)], {**fa, **fb, **fu, **fe}


def _qdata(rng, shape, dtype=F32, scale=30.0):
    """Quantize inputs: random values, NaN, +-inf, -0.0 and exact ties (2.5 * 0.125)."""
    x = (rng.standard_normal(shape) * scale).astype(dtype).reshape(-1)
    x[:5] = [np.nan, np.inf, -np.inf, -0.0, 2.5 * 0.125][:x.size]
    return x.reshape(shape)


@case("quantize", "dtypes-special-empty", tol=(0, 0))
def _(g, rng):
    x, fx = feed(g, _qdata(rng, (3, 5)))
    h, fh = feed(g, _qdata(rng, (4,), F16))
    e, fe = feed(g, np.zeros((2, 0), F32))
    return [g.quantize(x, 0.125, -3, mg.int8), g.quantize(x, 0.3, 200, mg.uint8), g.quantize(h, 0.5, 0, mg.int8),
            g.quantize(e, 1.0, 0, mg.uint8)], {**fx, **fh, **fe}


@case("quantize_with_scale_tensor", "axes-one-element", tol=(0, 0))
def _(g, rng):
    x, fx = feed(g, _qdata(rng, (2, 3, 4)))
    s0, f0 = feed(g, rng.uniform(0.1, 1.0, 2).astype(F32))
    s2, f2 = feed(g, rng.uniform(0.1, 1.0, 4).astype(F32))
    s1, f1 = feed(g, np.array([0.125], F32))
    return [g.quantize_with_scale_tensor(x, s0, 5, mg.int8, 0), g.quantize_with_scale_tensor(x, s2, 9, mg.uint8, -1),
            g.quantize_with_scale_tensor(x, s1, -1, mg.int8, 1)], {**fx, **f0, **f2, **f1}


@case("quantize_with_tensors", "axes-dtypes", tol=(0, 0))
def _(g, rng):
    x, fx = feed(g, _qdata(rng, (3, 4, 2)))
    h, fh = feed(g, _qdata(rng, (5, 3), F16, 5.0))
    s, fs = feed(g, rng.uniform(0.1, 1.0, 4).astype(F32))
    z, fz = feed(g, rng.integers(0, 256, 4).astype(np.uint8))
    sh, fsh = feed(g, rng.uniform(0.05, 0.5, 3).astype(F16))
    zh, fzh = feed(g, rng.integers(-128, 128, 3).astype(np.int8))
    return [g.quantize_with_tensors(x, s, z, mg.uint8, 1), g.quantize_with_tensors(h, sh, zh, mg.int8, 1)], \
        {**fx, **fh, **fs, **fz, **fsh, **fzh}


@case("dequantize", "dtypes", tol=(0, 0))
def _(g, rng):
    q, fq = feed(g, rng.integers(-128, 128, (3, 5)).astype(np.int8))
    u, fu = feed(g, rng.integers(0, 256, (7,)).astype(np.uint8))
    return [g.dequantize(q, 0.37, -5, mg.float32), g.dequantize(u, 0.1, 128, mg.float32),
            g.dequantize(q, 0.37, 7, mg.float16)], {**fq, **fu}


@case("dequantize_with_scale_tensor", "axes-float16", tol=(0, 0))
def _(g, rng):
    q, fq = feed(g, rng.integers(-128, 128, (2, 3, 4)).astype(np.int8))
    s, fs = feed(g, rng.uniform(0.01, 1.0, 3).astype(F32))
    sh, fsh = feed(g, rng.uniform(0.01, 1.0, 4).astype(F16))
    return [g.dequantize_with_scale_tensor(q, s, 3, mg.float32, 1),
            g.dequantize_with_scale_tensor(q, sh, -2, mg.float16, -1)], {**fq, **fs, **fsh}


@case("dequantize_with_tensors", "axes-dtypes", tol=(0, 0))
def _(g, rng):
    u, fu = feed(g, rng.integers(0, 256, (4, 3)).astype(np.uint8))
    s, fs = feed(g, rng.uniform(0.01, 1.0, 4).astype(F32))
    z, fz = feed(g, rng.integers(0, 256, 4).astype(np.uint8))
    return [g.dequantize_with_tensors(u, s, z, mg.float32, 0)], {**fu, **fs, **fz}


@case("dequantize_blockwise", "blocks", tol=(0, 0))
def _(g, rng):
    q, fq = feed(g, rng.integers(-128, 128, (2, 3, 8)).astype(np.int8))
    s, fs = feed(g, rng.uniform(0.01, 1.0, (2, 3, 4)).astype(F32))
    z, fz = feed(g, rng.integers(-128, 128, (2, 3, 4)).astype(np.int8))
    return [g.dequantize_blockwise(q, s, z, mg.float32)], {**fq, **fs, **fz}


@case("dequantize_blockwise_symmetric", "blocks", tol=(0, 0))
def _(g, rng):
    u, fu = feed(g, rng.integers(0, 256, (3, 6)).astype(np.uint8))
    s, fs = feed(g, rng.uniform(0.01, 1.0, (3, 2)).astype(F32))
    return [g.dequantize_blockwise_symmetric(u, s, mg.float32)], {**fu, **fs}


@case("dequantize_lut", "groups-dtypes", tol=(0, 0))
def _(g, rng):
    t = g.constant(rng.integers(0, 256, (2, 4, 6)).astype(np.uint8))
    lut, fl = feed(g, rng.standard_normal((2, 3, 256)).astype(F32))
    lh, fh = feed(g, rng.standard_normal((256,)).astype(F16))
    return [g.dequantize_lut(t, lut), g.dequantize_lut(t, lh)], {**fl, **fh}


@case("dequantize_vector_lut", "axes-groups", tol=(0, 0))
def _(g, rng):
    t = g.constant(rng.integers(0, 256, (3, 4)).astype(np.uint8))
    lut, fl = feed(g, rng.standard_normal((2, 256, 3)).astype(F32))
    return [g.dequantize_vector_lut(t, lut, 0), g.dequantize_vector_lut(t, lut, 1)], fl


@case("one_hot", "axes-dtypes-out-of-range", tol=(0, 0))
def _(g, rng):
    i, fi = feed(g, rng.integers(-2, 7, (3, 4)).astype(np.int32))
    j, fj = feed(g, rng.integers(0, 7, (5,)).astype(np.uint32))
    return [g.one_hot(i, 5), g.one_hot(i, 5, axis=0, dtype=mg.int32, on_value=-7, off_value=3),
            g.one_hot(i, 6, axis=1, dtype=mg.float16, on_value=0.1, off_value=-np.inf),
            g.one_hot(j, 4, dtype=mg.bool), g.one_hot(j, 0), g.one_hot(j, 3, dtype=mg.uint32, on_value=9)], {**fi, **fj}




# ----------------------------------------------------------------------------- attention
_ATTN_SHAPES = {  # query, key, value, mask (None: the variant without a mask)
    "bhsd": ((2, 2, 3, 4), (2, 2, 5, 4), (2, 2, 5, 4), (2, 2, 3, 5)),
    "shared-kv-head": ((1, 3, 4, 8), (1, 1, 6, 8), (1, 1, 6, 5), (4, 6)),
    "batch-broadcast-key-mask": ((1, 2, 3, 4), (3, 2, 5, 4), (1, 2, 5, 4), (3, 1, 1, 5)),
    "rank2-nomask": ((5, 3), (7, 3), (7, 2), None),
}
for _cid, (_qs, _ks, _vs, _ms) in _ATTN_SHAPES.items():
    def _b(g, rng, qs=_qs, ks=_ks, vs=_vs, ms=_ms):
        q, fq = feed(g, uniform(rng, qs))
        k, fk = feed(g, uniform(rng, ks))
        v, fv = feed(g, uniform(rng, vs))
        if ms is None:
            return [g.scaled_dot_product_attention(q, k, v, scale=0.6)], {**fq, **fk, **fv}
        mk = uniform(rng, ms)
        mk.reshape(-1)[::3] = -np.inf
        m, fm = feed(g, mk)
        return [g.scaled_dot_product_attention(q, k, v, m, scale=1 / np.sqrt(qs[-1]))], {**fq, **fk, **fv, **fm}
    case("scaled_dot_product_attention", _cid, tol=(1e-5, 1e-6))(_b)


@case("scaled_dot_product_attention", "masked-rows-large-logits-nan", tol=(1e-5, 1e-5))
def _(g, rng):  # a fully masked row gives 0; scores near 1e4 stay finite; NaN or +inf makes a row NaN
    q, fq = feed(g, uniform(rng, (2, 5, 4)) * 50)
    k, fk = feed(g, uniform(rng, (2, 6, 4)) * 50)
    v, fv = feed(g, uniform(rng, (2, 6, 3)))
    mk = uniform(rng, (5, 6)) * 1e4
    mk[0] = -np.inf
    mk[1, :5] = -np.inf
    mk[2, 3] = np.nan
    mk[3, 1] = np.inf
    m, fm = feed(g, mk)
    return [g.scaled_dot_product_attention(q, k, v, m, scale=1.0)], {**fq, **fk, **fv, **fm}


@case("scaled_dot_product_attention", "f16", tol=(4e-3, 2e-3))
def _(g, rng):
    q, fq = feed(g, uniform(rng, (1, 2, 3, 8), dtype=F16))
    k, fk = feed(g, uniform(rng, (1, 2, 7, 8), dtype=F16))
    v, fv = feed(g, uniform(rng, (1, 2, 7, 8), dtype=F16))
    m, fm = feed(g, np.where(np.arange(7) > 4, -np.inf, 0.5).astype(F16))
    return [g.scaled_dot_product_attention(q, k, v, m, scale=0.35)], {**fq, **fk, **fv, **fm}


@case("scaled_dot_product_attention", "4096-keys", tol=(2e-5, 2e-6))
def _(g, rng):  # longer than one bounded pass of the webgpu kernel
    q, fq = feed(g, uniform(rng, (1, 2, 3, 16)))
    k, fk = feed(g, uniform(rng, (1, 2, 4096, 16)))
    v, fv = feed(g, uniform(rng, (1, 2, 4096, 4)))
    mk = uniform(rng, (3, 4096))
    mk[1] = -np.inf
    mk[2, 1:] = -np.inf
    m, fm = feed(g, mk)
    return [g.scaled_dot_product_attention(q, k, v, m, scale=0.25)], {**fq, **fk, **fv, **fm}


# ----------------------------------------------------------------------------- recurrent layers
def _rnn_feeds(g, rng, shapes, dtype=F32):
    ts, fs = [], {}
    for s in shapes:
        t, f = feed(g, uniform(rng, s, -1, 1, dtype=dtype))
        ts.append(t)
        fs.update(f)
    return ts, fs


@case("single_gate_rnn", "bidirectional-mask-training")
def _(g, rng):
    (x, r, w, b, h0), fs = _rnn_feeds(g, rng, [(4, 2, 3), (2, 2, 2), (4, 3), (4,), (2, 4)])
    m, fm = feed(g, (rng.random((4, 2, 4)) > 0.3).astype(F32))
    d = mg.SingleGateRNNDescriptor(bidirectional=True, training=True, activation=mg.RNNActivation.TANH)
    return g.single_gate_rnn(x, r, w, b, h0, m, descriptor=d), {**fs, **fm}


@case("single_gate_rnn", "reverse-relu-no-input-weight")
def _(g, rng):
    (x, r), fs = _rnn_feeds(g, rng, [(5, 3, 4), (4, 4)])
    return g.single_gate_rnn(x, r, descriptor=mg.SingleGateRNNDescriptor(reverse=True)), fs


@case("lstm", "peephole-mask-training")
def _(g, rng):
    (x, r, w, b, h0, c0, p), fs = _rnn_feeds(g, rng, [(4, 2, 3), (12, 3), (12, 3), (12,), (2, 3), (2, 3), (12,)])
    m, fm = feed(g, (rng.random((2, 3)) > 0.3).astype(F32))
    return g.lstm(x, r, w, b, h0, c0, m, p, descriptor=mg.LSTMDescriptor(training=True)), {**fs, **fm}


@case("lstm", "bidirectional-forget-last-activations")
def _(g, rng):
    (x, r, w, b), fs = _rnn_feeds(g, rng, [(3, 2, 4), (2, 8, 2), (16, 4), (16,)])
    A = mg.RNNActivation
    d = mg.LSTMDescriptor(bidirectional=True, produce_cell=True, forget_gate_last=True,
                          input_gate_activation=A.HARD_SIGMOID, cell_gate_activation=A.RELU, activation=A.SIGMOID)
    return g.lstm(x, r, w, b, descriptor=d), fs


@case("lstm", "f16", tol=(4e-3, 2e-3))
def _(g, rng):
    (x, r, w, b), fs = _rnn_feeds(g, rng, [(3, 2, 4), (8, 2), (8, 4), (8,)], dtype=F16)
    return g.lstm(x, r, w, b, descriptor=mg.LSTMDescriptor(produce_cell=True)), fs


@case("gru", "reset-after-secondary-bias")
def _(g, rng):
    (x, r, w, b, h0, b2), fs = _rnn_feeds(g, rng, [(4, 2, 3), (9, 3), (9, 3), (9,), (2, 3), (3,)])
    d = mg.GRUDescriptor(reset_after=True, training=True)
    return g.gru(x, r, w, b, h0, None, b2, descriptor=d), fs


@case("gru", "bidirectional-reset-first-flip-mask")
def _(g, rng):
    (x, r, w, b), fs = _rnn_feeds(g, rng, [(3, 2, 4), (2, 6, 2), (12, 4), (12,)])
    m, fm = feed(g, (rng.random((3, 2, 4)) > 0.3).astype(F32))
    d = mg.GRUDescriptor(bidirectional=True, reset_gate_first=True, flip_z=True)
    return g.gru(x, r, w, b, None, m, descriptor=d), {**fs, **fm}


@case("single_gate_rnn_gradients", "state-gradient")
def _(g, rng):
    (x, r, w, b, h0, dy, sg), fs = _rnn_feeds(g, rng, [(4, 2, 3), (2, 2), (2, 3), (2,), (2, 2), (4, 2, 2), (2, 2)])
    d = mg.SingleGateRNNDescriptor(training=True, activation=mg.RNNActivation.SIGMOID)
    h, z = g.single_gate_rnn(x, r, w, b, h0, descriptor=d)
    return g.single_gate_rnn_gradients(x, r, dy, z, sg, w, b, h0, descriptor=d), fs


@case("lstm_gradients", "peephole-cell-gradient")
def _(g, rng):
    (x, r, w, b, h0, c0, p, dy, dc), fs = _rnn_feeds(
        g, rng, [(4, 2, 3), (2, 8, 2), (16, 3), (16,), (2, 4), (2, 4), (2, 8), (4, 2, 4), (2, 4)])
    d = mg.LSTMDescriptor(training=True, bidirectional=True)
    h, c, z = g.lstm(x, r, w, b, h0, c0, None, p, descriptor=d)
    return g.lstm_gradients(x, r, dy, z, c, None, dc, w, b, h0, c0, None, p, descriptor=d), fs


@case("gru_gradients", "reset-after-and-before")
def _(g, rng):
    (x, r, w, b, h0, b2, dy), fs = _rnn_feeds(g, rng, [(3, 2, 3), (6, 2), (6, 3), (6,), (2, 2), (2,), (3, 2, 2)])
    m, fm = feed(g, (rng.random((3, 2, 2)) > 0.3).astype(F32))
    outs = []
    for ra in (True, False):
        d = mg.GRUDescriptor(training=True, reset_after=ra)
        h, z = g.gru(x, r, w, b, h0, m, b2, descriptor=d)
        outs += g.gru_gradients(x, r, dy, z, h, None, w, b, h0, m, b2, descriptor=d)
    return outs, {**fs, **fm}


# ----------------------------------------------------------------------------- complex numbers, Fourier transforms
def _cfeed(g, rng, shape):
    return feed(g, (uniform(rng, shape) + 1j * uniform(rng, shape)).astype(np.complex64))


@case("complex_tensor", "broadcast")
def _(g, rng):
    a, fa = feed(g, uniform(rng, (3, 4)))
    b, fb = feed(g, uniform(rng, (4,)))
    return [g.complex_tensor(a, b)], {**fa, **fb}


for _op in ("real_part_of_tensor", "imaginary_part_of_tensor", "conjugate", "absolute_square", "planar_tensor"):
    @case(_op, "complex64")
    def _(g, rng, op=_op):
        z, fz = _cfeed(g, rng, (2, 3, 4))
        return [getattr(g, op)(z)], fz
    if _op != "planar_tensor":
        @case(_op, "float32")
        def _(g, rng, op=_op):
            x, fx = feed(g, uniform(rng, (5,)))
            return [getattr(g, op)(x)], fx


_FFT_DESCS = [mg.FFTDescriptor(), mg.FFTDescriptor(inverse=True, scaling_mode=mg.FFTScalingMode.SIZE),
              mg.FFTDescriptor(scaling_mode=mg.FFTScalingMode.UNITARY, round_to_odd_hermitean=True)]
for _k, _d in enumerate(_FFT_DESCS):
    @case("fast_fourier_transform", f"desc{_k}", tol=(1e-5, "scaled"))
    def _(g, rng, d=_d):
        z, fz = _cfeed(g, rng, (2, 5, 6))
        x, fx = feed(g, uniform(rng, (3, 7)))
        return [g.fast_fourier_transform(z, [0, 2], d), g.fast_fourier_transform(x, [-1], d)], {**fz, **fx}

    @case("real_to_hermitean_fft", f"desc{_k}", tol=(1e-5, "scaled"))
    def _(g, rng, d=_d):
        x, fx = feed(g, uniform(rng, (2, 5, 6)))
        return [g.real_to_hermitean_fft(x, [1, 2], d), g.real_to_hermitean_fft(x, [1], d)], fx

    @case("hermitean_to_real_fft", f"desc{_k}", tol=(1e-5, "scaled"))
    def _(g, rng, d=_d):
        z, fz = _cfeed(g, rng, (3, 4, 5))
        return [g.hermitean_to_real_fft(z, [0, 2], d), g.hermitean_to_real_fft(z, [1], d)], fz


for _op in sorted(COMPLEX_OPS):
    @case(_op, "complex64")
    def _(g, rng, op=_op):
        a, fa = _cfeed(g, rng, (3, 4))
        b, fb = _cfeed(g, rng, (4,))
        unary = op in ("negative", "exponent", "square")
        return [getattr(g, op)(a) if unary else getattr(g, op)(a, b)], {**fa, **fb}


@case("cast", "complex64")
def _(g, rng):
    z, fz = _cfeed(g, rng, (3, 4))
    x, fx = feed(g, uniform(rng, (4,)))
    return [g.cast(z, mg.float32), g.cast(z, mg.bool), g.cast(z, mg.int32), g.cast(x, mg.complex64)], {**fz, **fx}
