"""Elementwise arithmetic, unary math, comparisons, select, cast, identity (MPSGraphArithmeticOps)."""
from __future__ import annotations

import math
from typing import Optional

import numpy as np

from ..errors import DescriptorError, DTypeError, ShapeError
from ..types import ShapedType, as_dtype, bool_
from ._util import broadcast_shapes, same_dtype, unbroadcast
from .registry import defop, gradient, renamed


def _numeric(t: ShapedType, what: str) -> None:
    if t.dtype.is_bool:
        raise DTypeError(f"{what} is not defined for bool tensors; cast to a number type first")


def _floating(t: ShapedType, what: str) -> None:
    if not (t.dtype.is_floating or t.dtype.is_complex):
        raise DTypeError(f"{what} needs a floating-point tensor (float32, float16), got {t.dtype.name}; "
                         "cast it first")


def _logical(t: ShapedType, what: str) -> None:
    if not t.dtype.is_bool:
        raise DTypeError(f"{what} takes bool tensors, got {t.dtype.name}; compare first (g.not_equal(x, 0)) "
                         "or cast with g.cast(x, mg.bool)")


def _integer(t: ShapedType, what: str) -> None:
    if not t.dtype.is_integer:
        hint = ("; for bool tensors use the logical ops (logical_and, logical_or, logical_xor, logical_not)"
                if t.dtype.is_bool else "; cast it first (g.cast(x, mg.int32))")
        raise DTypeError(f"{what} takes integer tensors (int8 to int64, uint8 to uint64), got {t.dtype.name}{hint}")


def _check(kind: str, t: ShapedType, what: str) -> None:
    """``float``: float dtypes only; ``numeric`` and ``predicate``: no bool; ``logical``: bool only;
    ``integer``: the integer dtypes only (the bitwise ops)."""
    if kind == "float":
        _floating(t, what)
    elif kind in ("numeric", "predicate"):
        _numeric(t, what)
    elif kind == "logical":
        _logical(t, what)
    elif kind == "integer":
        _integer(t, what)


# the elementwise ops that take complex64 / complex32 operands (docs/complex-fft.md)
COMPLEX_OPS = frozenset({"addition", "subtraction", "multiplication", "division", "negative", "equal",
                         "not_equal", "exponent", "square"})


def _complex_check(type: str, in_types) -> None:
    if type not in COMPLEX_OPS and any(t.dtype.is_complex for t in in_types):
        dt = next(t.dtype.name for t in in_types if t.dtype.is_complex)
        raise DTypeError(f"{type} does not take complex tensors (got {dt}); the elementwise ops that do: "
                         f"{', '.join(sorted(COMPLEX_OPS))}; take the parts with real_part_of_tensor / "
                         "imaginary_part_of_tensor")


def _infer_binary(kind: str, type: str = ""):
    def infer(in_types, attrs):
        _complex_check(type, in_types)
        if kind == "logical":  # a float operand of a logical op: say bool is needed, not "same dtype"
            for t in in_types:
                _logical(t, "this op")
        same_dtype(in_types)
        for t in in_types:
            _check(kind, t, "arithmetic" if kind == "numeric" else "this op")
        shape = broadcast_shapes(in_types[0].shape, in_types[1].shape)
        return [ShapedType(shape, bool_ if kind == "compare" else in_types[0].dtype)]
    return infer


def _infer_unary(kind: str, type: str = ""):
    def infer(in_types, attrs):
        _complex_check(type, in_types)
        t = in_types[0]
        _check(kind, t, "this op")
        return [ShapedType(t.shape, bool_) if kind == "predicate" else t]
    return infer


def _binary(type: str, swift: str, objc: str, kind: str, doc: str, since: tuple = ("11.0", "14.0")):
    def builder(g, primary, secondary, name: Optional[str] = None):
        label = f"{type} op {name or type!r}"
        if _is_py(primary) and not _is_py(secondary):  # a scalar takes the tensor's dtype
            secondary = g.as_tensor(secondary, label)
            primary = g.as_tensor(primary, label, like=secondary)
        else:
            primary = g.as_tensor(primary, label)
            secondary = g.as_tensor(secondary, label, like=primary)
        return g.add_op(type, [primary, secondary], {}, name).output

    builder.__name__ = builder.__qualname__ = type
    builder.__doc__ = f"{doc} (MPSGraph ``{swift}``). Broadcasts as NumPy; operands need one dtype."
    defop(type, swift=swift, objc=objc, inputs=("primary", "secondary"), infer=_infer_binary(kind, type),
          family="comparison" if kind == "compare" else "arithmetic", since=since,
          differentiable=kind not in ("logical", "integer"), elementwise=True)(builder)
    return builder


def _is_py(x) -> bool:
    return not hasattr(x, "graph")


def _unary(type: str, swift: str, objc: str, kind: str, doc: str, since: tuple = ("11.0", "14.0")):
    def builder(g, tensor, name: Optional[str] = None):
        tensor = g.as_tensor(tensor, f"{type} op {name or type!r}")
        return g.add_op(type, [tensor], {}, name).output

    builder.__name__ = builder.__qualname__ = type
    builder.__doc__ = f"{doc} (MPSGraph ``{swift}``)."
    defop(type, swift=swift, objc=objc, inputs=("tensor",), infer=_infer_unary(kind, type),
          family="arithmetic", since=since, differentiable=kind not in ("predicate", "logical", "integer"),
          elementwise=True)(builder)
    return builder


_BINARY: list = [
    ("addition", "addition(_:_:name:)", "additionWithPrimaryTensor:secondaryTensor:name:", "numeric", "Elementwise a + b"),
    ("subtraction", "subtraction(_:_:name:)", "subtractionWithPrimaryTensor:secondaryTensor:name:", "numeric", "Elementwise a - b"),
    ("multiplication", "multiplication(_:_:name:)", "multiplicationWithPrimaryTensor:secondaryTensor:name:", "numeric", "Elementwise a * b"),
    ("division", "division(_:_:name:)", "divisionWithPrimaryTensor:secondaryTensor:name:", "float", "Elementwise a / b (floating point only)"),
    ("maximum", "maximum(_:_:name:)", "maximumWithPrimaryTensor:secondaryTensor:name:", "numeric",
     "Elementwise max ignoring NaN: max(NaN, 1) = 1, NaN only where both are NaN"),
    ("minimum", "minimum(_:_:name:)", "minimumWithPrimaryTensor:secondaryTensor:name:", "numeric",
     "Elementwise min ignoring NaN: min(NaN, 1) = 1, NaN only where both are NaN"),
    ("maximum_with_nan_propagation", "maximumWithNaNPropagation(_:_:name:)",
     "maximumWithNaNPropagationWithPrimaryTensor:secondaryTensor:name:", "numeric",
     "Elementwise max, NaN where either operand is NaN", ("12.0", "15.0")),
    ("minimum_with_nan_propagation", "minimumWithNaNPropagation(_:_:name:)",
     "minimumWithNaNPropagationWithPrimaryTensor:secondaryTensor:name:", "numeric",
     "Elementwise min, NaN where either operand is NaN", ("12.0", "15.0")),
    ("power", "power(_:_:name:)", "powerWithPrimaryTensor:secondaryTensor:name:", "float", "Elementwise a ** b"),
    ("equal", "equal(_:_:name:)", "equalWithPrimaryTensor:secondaryTensor:name:", "compare", "Elementwise a == b, a bool tensor"),
    ("not_equal", "notEqual(_:_:name:)", "notEqualWithPrimaryTensor:secondaryTensor:name:", "compare", "Elementwise a != b, a bool tensor"),
    ("less_than", "lessThan(_:_:name:)", "lessThanWithPrimaryTensor:secondaryTensor:name:", "compare", "Elementwise a < b, a bool tensor"),
    ("less_than_or_equal_to", "lessThanOrEqualTo(_:_:name:)", "lessThanOrEqualToWithPrimaryTensor:secondaryTensor:name:", "compare", "Elementwise a <= b, a bool tensor"),
    ("greater_than", "greaterThan(_:_:name:)", "greaterThanWithPrimaryTensor:secondaryTensor:name:", "compare", "Elementwise a > b, a bool tensor"),
    ("greater_than_or_equal_to", "greaterThanOrEqualTo(_:_:name:)", "greaterThanOrEqualToWithPrimaryTensor:secondaryTensor:name:", "compare", "Elementwise a >= b, a bool tensor"),
    ("modulo", "modulo(_:_:name:)", "moduloWithPrimaryTensor:secondaryTensor:name:", "numeric",
     "Elementwise remainder of a / b truncated toward zero, with the sign of a (C's fmod and ``%``: "
     "-7 modulo 3 = -1); a zero divisor gives NaN for floats and 0 for integers"),
    ("floor_modulo", "floorModulo(_:_:name:)", "floorModuloWithPrimaryTensor:secondaryTensor:name:", "numeric",
     "Elementwise a - floor(a / b) * b, with the sign of b (Python's ``%``: -7 floor_modulo 3 = 2); "
     "a zero divisor gives 0, as Apple documents"),
    ("atan2", "atan2(withPrimaryTensor:secondaryTensor:name:)", "atan2WithPrimaryTensor:secondaryTensor:name:",
     "float", "Elementwise two-argument arctangent of a (y) over b (x), in [-pi, pi], as C99's atan2"),
    ("logical_and", "logicalAND(_:_:name:)", "logicalANDWithPrimaryTensor:secondaryTensor:name:", "logical",
     "Elementwise a AND b of bool tensors"),
    ("logical_or", "logicalOR(_:_:name:)", "logicalORWithPrimaryTensor:secondaryTensor:name:", "logical",
     "Elementwise a OR b of bool tensors"),
    ("logical_xor", "logicalXOR(_:_:name:)", "logicalXORWithPrimaryTensor:secondaryTensor:name:", "logical",
     "Elementwise a XOR b of bool tensors (true where exactly one is true)"),
    ("logical_nand", "logicalNAND(_:_:name:)", "logicalNANDWithPrimaryTensor:secondaryTensor:name:", "logical",
     "Elementwise NOT (a AND b) of bool tensors"),
    ("logical_nor", "logicalNOR(_:_:name:)", "logicalNORWithPrimaryTensor:secondaryTensor:name:", "logical",
     "Elementwise NOT (a OR b) of bool tensors"),
    ("logical_xnor", "logicalXNOR(_:_:name:)", "logicalXNORWithPrimaryTensor:secondaryTensor:name:", "logical",
     "Elementwise NOT (a XOR b) of bool tensors (true where both are true or both false)"),
    ("division_no_nan", "divisionNoNaN(_:_:name:)", "divisionNoNaNWithPrimaryTensor:secondaryTensor:name:", "float",
     "Elementwise a / b, and 0 where b == 0 (Apple's ``select(secondaryTensor, primaryTensor / "
     "secondaryTensor, 0)``: 0 / 0, NaN / 0 and inf / 0 are 0; a NaN divisor is not 0, so it gives NaN); "
     "floating point only, as division"),
    ("bitwise_and", "bitwiseAND(_:_:name:)", "bitwiseANDWithPrimaryTensor:secondaryTensor:name:", "integer",
     "Elementwise a & b of integer tensors (bool is refused: use logical_and)", ("13.0", "16.1")),
    ("bitwise_or", "bitwiseOR(_:_:name:)", "bitwiseORWithPrimaryTensor:secondaryTensor:name:", "integer",
     "Elementwise a | b of integer tensors (bool is refused: use logical_or)", ("13.0", "16.1")),
    ("bitwise_xor", "bitwiseXOR(_:_:name:)", "bitwiseXORWithPrimaryTensor:secondaryTensor:name:", "integer",
     "Elementwise a ^ b of integer tensors (bool is refused: use logical_xor)", ("13.0", "16.1")),
    ("bitwise_left_shift", "bitwiseLeftShift(_:_:name:)", "bitwiseLeftShiftWithPrimaryTensor:secondaryTensor:name:",
     "integer",
     "Elementwise a << b of integer tensors, the bits shifted out dropped (two's complement wrap-around). "
     "Apple's page does not say what a count past the width does; minigraph reads the count as unsigned, "
     "so a count >= the width (a negative count included) gives 0, as NumPy's left_shift", ("13.0", "16.1")),
    ("bitwise_right_shift", "bitwiseRightShift(_:_:name:)",
     "bitwiseRightShiftWithPrimaryTensor:secondaryTensor:name:", "integer",
     "Elementwise a >> b of integer tensors: arithmetic (sign-filling) for signed types, logical for unsigned. "
     "Apple's page does not say what a count past the width does; minigraph reads the count as unsigned, "
     "so a count >= the width (a negative count included) gives 0, or -1 for a negative signed a, as "
     "NumPy's right_shift", ("13.0", "16.1")),
]
for _row in _BINARY:
    _binary(*_row)

_UNARY: list = [
    ("negative", "negative(with:name:)", "negativeWithTensor:name:", "numeric", "Elementwise -x"),
    ("absolute", "absolute(with:name:)", "absoluteWithTensor:name:", "numeric", "Elementwise |x|"),
    ("sign", "sign(with:name:)", "signWithTensor:name:", "numeric",
     "Elementwise sign: -1, 1, a zero keeps its sign, and NaN gives 0"),
    ("exponent", "exponent(with:name:)", "exponentWithTensor:name:", "float", "Elementwise e ** x"),
    ("logarithm", "logarithm(with:name:)", "logarithmWithTensor:name:", "float", "Elementwise natural log"),
    ("square", "square(with:name:)", "squareWithTensor:name:", "numeric", "Elementwise x * x"),
    ("square_root", "squareRoot(with:name:)", "squareRootWithTensor:name:", "float", "Elementwise sqrt(x)"),
    ("reciprocal", "reciprocal(with:name:)", "reciprocalWithTensor:name:", "float", "Elementwise 1 / x"),
    ("tanh", "tanh(with:name:)", "tanhWithTensor:name:", "float", "Elementwise tanh(x)"),
    ("sigmoid", "sigmoid(with:name:)", "sigmoidWithTensor:name:", "float", "Elementwise 1 / (1 + e ** -x)"),
    ("relu", "reLU(with:name:)", "reLUWithTensor:name:", "numeric",
     "Elementwise max(x, 0) with the NaN-ignoring maximum, so relu(NaN) = 0"),
    ("sin", "sin(with:name:)", "sinWithTensor:name:", "float", "Elementwise sin(x)"),
    ("cos", "cos(with:name:)", "cosWithTensor:name:", "float", "Elementwise cos(x)"),
    ("erf", "erf(with:name:)", "erfWithTensor:name:", "float", "Elementwise error function erf(x)"),
    ("floor", "floor(with:name:)", "floorWithTensor:name:", "numeric",
     "Elementwise largest integer <= x (integers unchanged)"),
    ("ceil", "ceil(with:name:)", "ceilWithTensor:name:", "numeric",
     "Elementwise smallest integer >= x (integers unchanged)"),
    ("round", "round(with:name:)", "roundWithTensor:name:", "numeric",
     "Elementwise nearest integer, halfway cases away from zero as Metal's round: 2.5 -> 3, -0.5 -> -1 "
     "(integers unchanged)"),
    ("rint", "rint(with:name:)", "rintWithTensor:name:", "numeric",
     "Elementwise nearest integer, halfway cases to even as Metal's rint: 2.5 -> 2, -1.5 -> -2 "
     "(integers unchanged)"),
    ("reverse_square_root", "reverseSquareRoot(with:name:)", "reverseSquareRootWithTensor:name:", "float",
     "Elementwise 1 / sqrt(x); Apple deprecates it from macOS 15 / iOS 18 in favour of reciprocalSquareRoot, "
     "the same function"),
    ("exponent_base2", "exponentBase2(with:name:)", "exponentBase2WithTensor:name:", "float", "Elementwise 2 ** x"),
    ("logarithm_base2", "logarithmBase2(with:name:)", "logarithmBase2WithTensor:name:", "float",
     "Elementwise log2(x)"),
    ("is_nan", "isNaN(with:name:)", "isNaNWithTensor:name:", "predicate",
     "Elementwise x is NaN, a bool tensor (false for integers)"),
    ("is_infinite", "isInfinite(with:name:)", "isInfiniteWithTensor:name:", "predicate",
     "Elementwise x is +inf or -inf, a bool tensor (false for integers)"),
    ("is_finite", "isFinite(with:name:)", "isFiniteWithTensor:name:", "predicate",
     "Elementwise x is neither NaN nor infinite, a bool tensor (true for integers)"),
    ("logical_not", "not(with:name:)", "notWithTensor:name:", "logical", "Elementwise NOT of a bool tensor"),
    ("tan", "tan(with:name:)", "tanWithTensor:name:", "float",
     "Elementwise tan(x); webgpu: sin and cos's Payne-Hanek reduction, Cephes' tanf polynomial, -1/tan in "
     "odd quadrants: 2.5 ulp from float64 at most over every finite float32 (docs/arithmetic.md)"),
    ("sinh", "sinh(with:name:)", "sinhWithTensor:name:", "float",
     "Elementwise sinh(x); webgpu: an odd polynomial below 1 (no e^x - e^-x cancellation near 0), "
     "E - 1/(4E) with E = e^|x| / 2 beyond (x log2(e) an exact product, finite up to 89.4): 1.6 ulp at most"),
    ("cosh", "cosh(with:name:)", "coshWithTensor:name:", "float",
     "Elementwise cosh(x); webgpu: E + 1/(4E) with E = e^|x| / 2 (x log2(e) an exact product, finite up to "
     "89.4): 1.5 ulp at most"),
    ("asin", "asin(with:name:)", "asinWithTensor:name:", "float",
     "Elementwise arcsine, in [-pi/2, pi/2]; NaN outside [-1, 1]; webgpu: Cephes' asinf (x + x^3 P(x^2) "
     "to 0.5, pi/2 - 2 asin(sqrt((1 - |x|) / 2)) above): 2.3 ulp at most"),
    ("acos", "acos(with:name:)", "acosWithTensor:name:", "float",
     "Elementwise arccosine, in [0, pi]; NaN outside [-1, 1]; webgpu: Cephes' acosf "
     "(2 asin(sqrt((1 - |x|) / 2)) near ±1, pi/2 - asin(x) between): 1.3 ulp at most"),
    ("atan", "atan(with:name:)", "atanWithTensor:name:", "float",
     "Elementwise arctangent, in [-pi/2, pi/2]; webgpu: Cephes' atanf (atan2's reduction): 2.0 ulp at most"),
    ("asinh", "asinh(with:name:)", "asinhWithTensor:name:", "float",
     "Elementwise inverse hyperbolic sine; webgpu: an odd polynomial below 0.5, "
     "log(|x| + sqrt(x^2 + 1)) written as a log1p to 2^12, log(|x|) + log(2) beyond (x^2 would overflow): "
     "2.5 ulp at most"),
    ("acosh", "acosh(with:name:)", "acoshWithTensor:name:", "float",
     "Elementwise inverse hyperbolic cosine, NaN below 1; webgpu: sqrt(x - 1) P(x - 1) below 1.5 (no "
     "log(1 + tiny) near 1), log(x + sqrt((x - 1)(x + 1))) to 2^12, log(x) + log(2) beyond: 2.2 ulp at most"),
    ("atanh", "atanh(with:name:)", "atanhWithTensor:name:", "float",
     "Elementwise inverse hyperbolic tangent, ±inf at ±1, NaN outside [-1, 1]; webgpu: an odd polynomial "
     "below 0.5 (no log(1 + tiny) near 0), log((1 + x) / (1 - x)) / 2 above: 1.3 ulp at most"),
    ("exponent_base10", "exponentBase10(with:name:)", "exponentBase10WithTensor:name:", "float",
     "Elementwise 10 ** x; webgpu: 2^(x log2(10)) with x log2(10) carried as an exact product (Dekker's), "
     "so large |x| loses nothing: 1.2 ulp at most, subnormal results down to 1e-45"),
    ("logarithm_base10", "logarithmBase10(with:name:)", "logarithmBase10WithTensor:name:", "float",
     "Elementwise log10(x); webgpu: the reduction of logarithm, times log10(e) and log10(2) split in two "
     "parts (Cephes' log10f): 1.8 ulp at most"),
    ("truncate", "truncate(_:name:)", "truncateWithTensor:name:", "numeric",
     "Elementwise rounding toward zero (Apple: floor for positive inputs, ceil for negative ones): "
     "-2.7 -> -2, -0.5 -> -0 (integers unchanged)", ("13.0", "16.0")),
    ("signbit", "signbit(with:name:)", "signbitWithTensor:name:", "predicate",
     "Elementwise sign bit of x, a bool tensor: true for -0.0, -inf and a NaN with its sign bit set; "
     "x < 0 for signed integers, false for unsigned"),
    ("bitwise_not", "bitwiseNOT(_:name:)", "bitwiseNOTWithTensor:name:", "integer",
     "Elementwise ~x of an integer tensor (bool is refused: use logical_not)", ("13.0", "16.1")),
    ("bitwise_population_count", "bitwisePopulationCount(_:name:)", "bitwisePopulationCountWithTensor:name:",
     "integer",
     "Elementwise number of bits set in x, of x's dtype; a negative signed x counts its two's complement "
     "bits (-1 as int32 gives 32)", ("13.0", "16.1")),
]
for _row in _UNARY:
    _unary(*_row)


@defop("identity", four_bit=True, swift="identity(with:name:)", objc="identityWithTensor:name:", inputs=("tensor",),
       infer=lambda ts, a: [ts[0]], family="arithmetic", kind="view")
def identity(g, tensor, name: Optional[str] = None):
    """The same values as ``tensor`` (MPSGraph ``identity(with:name:)``)."""
    return g.add_op("identity", [g.as_tensor(tensor, f"identity op {name or 'identity'!r}")], {}, name).output


@defop("stop_gradient", swift="identity(with:name:)", objc="identityWithTensor:name:",
       inputs=("tensor",), infer=lambda ts, a: [ts[0]], family="arithmetic", kind="view")
def stop_gradient(g, tensor, name: Optional[str] = None):
    """Identity in the forward pass that blocks gradients.

    MPSGraph has no public op for this, only a private ``stopGradient`` flag on operations; the
    forward pass is ``identity(with:name:)``, so that is the Swift name shown in the reference.
    """
    return g.add_op("stop_gradient", [g.as_tensor(tensor, f"stop_gradient op {name or 'stop_gradient'!r}")], {}, name).output


def _infer_select(in_types, attrs):
    p, a, b = in_types
    same_dtype([a, b], "true and false tensors")
    return [ShapedType(broadcast_shapes(p.shape, a.shape, b.shape), a.dtype)]


@defop("select", swift="select(predicate:trueTensor:falseTensor:name:)",
       objc="selectWithPredicateTensor:truePredicateTensor:falsePredicateTensor:name:",
       inputs=("predicate", "true_tensor", "false_tensor"), infer=_infer_select, family="arithmetic",
       elementwise=True)
def select(g, predicate, true_tensor, false_tensor, name: Optional[str] = None):
    """``true_tensor`` where ``predicate`` is true (non-zero), else ``false_tensor``, broadcast
    (MPSGraph ``select(predicate:trueTensor:falseTensor:name:)``)."""
    label = f"select op {name or 'select'!r}"
    predicate = g.as_tensor(predicate, label, dtype=None if hasattr(predicate, "graph") else bool_)
    like = true_tensor if hasattr(true_tensor, "graph") else false_tensor if hasattr(false_tensor, "graph") else None
    true_tensor = g.as_tensor(true_tensor, label, like=like)
    false_tensor = g.as_tensor(false_tensor, label, like=true_tensor)
    return g.add_op("select", [predicate, true_tensor, false_tensor], {}, name).output


def _infer_clamp(in_types, attrs):
    t, lo, hi = in_types
    same_dtype(in_types, "tensor, min_value and max_value")
    _numeric(t, "clamp")
    return [ShapedType(broadcast_shapes(t.shape, lo.shape, hi.shape), t.dtype)]


@defop("clamp", swift="clamp(_:min:max:name:)", objc="clampWithTensor:minValueTensor:maxValueTensor:name:",
       inputs=("tensor", "min_value", "max_value"), infer=_infer_clamp, family="arithmetic",
       elementwise=True)
def clamp(g, tensor, min_value, max_value, name: Optional[str] = None):
    """``tensor`` limited to ``[min_value, max_value]``, broadcast (MPSGraph ``clamp(_:min:max:name:)``).

    As Metal's ``clamp``: ``minimum(maximum(tensor, min_value), max_value)`` with MPSGraph's
    NaN-ignoring minimum and maximum, so a NaN element gives ``min_value`` and where
    ``min_value > max_value`` the result is ``max_value``. ``min_value`` and ``max_value`` may be
    tensors or Python numbers (which take the tensor's dtype); ReLU6 is ``g.clamp(x, 0, 6)``.
    """
    label = f"clamp op {name or 'clamp'!r}"
    tensor = g.as_tensor(tensor, label)
    min_value = g.as_tensor(min_value, label, like=tensor)
    max_value = g.as_tensor(max_value, label, like=tensor)
    return g.add_op("clamp", [tensor, min_value, max_value], {}, name).output


def _infer_leaky_relu(in_types, attrs):
    _floating(in_types[0], "leaky_relu")
    return [in_types[0]]


@defop("leaky_relu", swift="leakyReLU(with:alpha:name:)", objc="leakyReLUWithTensor:alpha:name:",
       inputs=("tensor",), infer=_infer_leaky_relu, family="activation", attrs=("alpha",),
       since=("12.0", "15.0"), elementwise=True)
def leaky_relu(g, tensor, alpha, name: Optional[str] = None):
    """``tensor`` where it is >= 0, else ``alpha * tensor`` (MPSGraph ``leakyReLU(with:alpha:name:)``).

    Apple's page writes the function as ``max(x, alpha)``; the op is the leaky ReLU
    ``max(x, alpha * x)`` for ``0 <= alpha <= 1``, and minigraph defines it for any ``alpha`` as
    ``x >= 0 ? x : alpha * x`` (as PyTorch's ``leaky_relu``), so NaN stays NaN. ``alpha`` is a
    Python number, rounded to the tensor's dtype.
    """
    label = f"leaky_relu op {name or 'leaky_relu'!r}"
    tensor = g.as_tensor(tensor, label)
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float, np.integer, np.floating)) \
            or not math.isfinite(float(alpha)):
        raise DescriptorError(f"{label}: alpha must be a finite number, got {alpha!r}")
    return g.add_op("leaky_relu", [tensor], {"alpha": float(alpha)}, name).output


def _infer_leaky_relu_gradient(in_types, attrs):
    dy, x, alpha = in_types
    same_dtype(in_types, "incoming_gradient, source and alpha_tensor")
    _floating(x, "leaky_relu_gradient")
    shape = broadcast_shapes(dy.shape, x.shape, alpha.shape)
    if shape != tuple(x.shape):
        raise ShapeError(f"the gradient has the source's shape {list(x.shape)}, but incoming_gradient "
                         f"{list(dy.shape)} and alpha_tensor {list(alpha.shape)} broadcast with it to {list(shape)}")
    return [x]


@defop("leaky_relu_gradient",
       swift="leakyReLUGradient(withIncomingGradient:sourceTensor:alphaTensor:name:)",
       objc="leakyReLUGradientWithIncomingGradient:sourceTensor:alphaTensor:name:",
       inputs=("incoming_gradient", "source", "alpha_tensor"), infer=_infer_leaky_relu_gradient,
       family="activation", role="data_gradient", forward="leaky_relu", since=("12.0", "15.0"),
       elementwise=True)
def leaky_relu_gradient(g, incoming_gradient, source, alpha_tensor, name: Optional[str] = None):
    """The gradient of ``leaky_relu`` toward its input: ``incoming_gradient`` where
    ``source >= 0``, else ``alpha_tensor * incoming_gradient`` (MPSGraph
    ``leakyReLUGradient(withIncomingGradient:sourceTensor:alphaTensor:name:)``, which
    ``g.gradients`` inserts for a ``leaky_relu``). ``alpha_tensor`` broadcasts (a number is made
    a constant of the source's dtype); the result has the source's shape."""
    label = f"leaky_relu_gradient op {name or 'leaky_relu_gradient'!r}"
    source = g.as_tensor(source, label)
    incoming_gradient = g.as_tensor(incoming_gradient, label, like=source)
    alpha_tensor = g.as_tensor(alpha_tensor, label, like=source)
    return g.add_op("leaky_relu_gradient", [incoming_gradient, source, alpha_tensor], {}, name).output


def _infer_activation_gradient(op_type: str):
    def infer(in_types, attrs):
        dy, x = in_types
        same_dtype(in_types, "incoming_gradient and source")
        _floating(x, op_type)
        shape = broadcast_shapes(dy.shape, x.shape)
        if shape != tuple(x.shape):
            raise ShapeError(f"the gradient has the source's shape {list(x.shape)}, but incoming_gradient "
                             f"{list(dy.shape)} broadcasts with it to {list(shape)}")
        return [x]
    return infer


@defop("relu_gradient", swift="reLUGradient(withIncomingGradient:sourceTensor:name:)",
       objc="reLUGradientWithIncomingGradient:sourceTensor:name:", inputs=("incoming_gradient", "source"),
       infer=_infer_activation_gradient("relu_gradient"), family="activation", role="data_gradient",
       forward="relu", elementwise=True)
def relu_gradient(g, incoming_gradient, source, name: Optional[str] = None):
    """The gradient of ``relu`` toward its input: ``incoming_gradient`` where ``source > 0``, else
    0 (NaN and -0 included) (MPSGraph ``reLUGradient(withIncomingGradient:sourceTensor:name:)``,
    https://learn.microsoft.com/en-us/dotnet/api/metalperformanceshadersgraph.mpsgraph_mpsgraphactivationops.relugradient).
    ``source`` may be relu's input or its result: ``relu(x) > 0`` exactly where ``x > 0``, and
    ``g.gradients`` passes the result, so the input can die at the relu."""
    label = f"relu_gradient op {name or 'relu_gradient'!r}"
    source = g.as_tensor(source, label)
    incoming_gradient = g.as_tensor(incoming_gradient, label, like=source)
    return g.add_op("relu_gradient", [incoming_gradient, source], {}, name).output


@defop("sigmoid_gradient", swift="sigmoidGradient(withIncomingGradient:sourceTensor:name:)",
       objc="sigmoidGradientWithIncomingGradient:sourceTensor:name:", inputs=("incoming_gradient", "source"),
       infer=_infer_activation_gradient("sigmoid_gradient"), family="activation", role="data_gradient",
       forward="sigmoid", elementwise=True)
def sigmoid_gradient(g, incoming_gradient, source, name: Optional[str] = None):
    """The gradient of ``sigmoid`` toward its input ``source`` (Apple: "the input tensor"):
    ``incoming_gradient * (s * (1 - s))`` with ``s = sigmoid(source)`` rounded to the type, as
    the forward op's result is (MPSGraph ``sigmoidGradient(withIncomingGradient:sourceTensor:name:)``,
    https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraph/sigmoidgradient(withincominggradient:sourcetensor:name:))."""
    label = f"sigmoid_gradient op {name or 'sigmoid_gradient'!r}"
    source = g.as_tensor(source, label)
    incoming_gradient = g.as_tensor(incoming_gradient, label, like=source)
    return g.add_op("sigmoid_gradient", [incoming_gradient, source], {}, name).output


def _infer_cast(in_types, attrs):
    return [ShapedType(in_types[0].shape, attrs["to_type"])]


@defop("cast", four_bit=True, swift="cast(_:to:name:)", objc="castTensor:toType:name:", inputs=("tensor",),
       infer=_infer_cast, family="arithmetic", attrs=("to_type",), since=("12.0", "15.0"),
       elementwise=True)
def cast(g, tensor, to_type=None, name: Optional[str] = None, *, to=None, dtype=None):
    """Convert to another dtype (MPSGraph ``cast(_:to:name:)``, Objective-C ``castTensor:toType:name:``).
    Float to int truncates toward zero; NaN, Inf and out-of-range values give unspecified
    integers (as on the GPU). To int4 / uint4 the integer's low 4 bits are kept, as int8 keeps 8
    (docs/quantization.md)."""
    label = f"cast op {name or 'cast'!r}"
    tensor = g.as_tensor(tensor, label)
    to_type = renamed(label, "dtype", "to_type", dtype, renamed(label, "to", "to_type", to, to_type, DTypeError), DTypeError)
    if to_type is None:
        raise DTypeError(f"{label}: give the target dtype, to_type=")
    try:
        dt = as_dtype(to_type)
    except DTypeError as e:
        raise type(e)(f"cast op {name or 'cast'!r}: {e}") from None
    return g.add_op("cast", [tensor], {"to_type": dt}, name).output


def _infer_reinterpret_cast(in_types, attrs):
    t, to = in_types[0], attrs["to_type"]
    if t.dtype.is_bool or to.is_bool:
        raise DTypeError(f"reinterprets bits, and bool has no bit pattern of its own (1 byte in NumPy, a 32-bit "
                         f"word on the GPU); got {t.dtype.name} to {to.name}: use cast for bool")
    a, b = t.dtype.np_dtype.itemsize, to.np_dtype.itemsize
    if a == b:
        return [ShapedType(t.shape, to)]
    if not t.shape:
        raise ShapeError(f"{t.dtype.name} ({a} bytes) to {to.name} ({b} bytes) scales the last dimension, and a "
                         "scalar has none")
    last = t.shape[-1]
    if last != -1 and (last * a) % b:
        raise ShapeError(f"the last dimension {last} of {t.dtype.name} ({last * a} bytes) does not hold a whole "
                         f"number of {to.name} ({b} bytes each)")
    return [ShapedType(tuple(t.shape[:-1]) + (-1 if last == -1 else last * a // b,), to)]


@defop("reinterpret_cast", swift="reinterpretCast(_:to:name:)", objc="reinterpretCastTensor:toType:name:",
       inputs=("tensor",), infer=_infer_reinterpret_cast, family="arithmetic", attrs=("to_type",),
       differentiable=False, since=("13.2", "16.3"))
def reinterpret_cast(g, tensor, to_type, name: Optional[str] = None):
    """The same bytes read as ``to_type`` (MPSGraph ``reinterpretCast(_:to:name:)``): "the last
    dimension scaled by sizeof(tensor_type) / sizeof(type)", little-endian as the host;
    ``float32`` 1.0 reads as ``int32`` 1065353216. Bool is refused (its bits differ by backend).
    https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraph/reinterpretcast(_:to:name:)
    """
    label = f"reinterpret_cast op {name or 'reinterpret_cast'!r}"
    tensor = g.as_tensor(tensor, label)
    try:
        dt = as_dtype(to_type)
    except DTypeError as e:
        raise type(e)(f"{label}: {e}") from None
    return g.add_op("reinterpret_cast", [tensor], {"to_type": dt}, name).output


# ------------------------------------------------------------------ gradient rules
def _ub(g, op, wanted, *makers):
    """Each wanted input's gradient, built by its maker and reduced to the input's shape."""
    return [unbroadcast(g, make(), t.shape) if want and make is not None else None
            for make, want, t in zip(makers, wanted, op.inputs)]


@gradient("addition")
def _addition_gradient(g, op, dy, wanted):
    return _ub(g, op, wanted, lambda: dy, lambda: dy)


@gradient("subtraction")
def _subtraction_gradient(g, op, dy, wanted):
    return _ub(g, op, wanted, lambda: dy, lambda: g.negative(dy))


@gradient("multiplication")
def _multiplication_gradient(g, op, dy, wanted):
    a, b = op.inputs
    return _ub(g, op, wanted, lambda: g.multiplication(dy, b), lambda: g.multiplication(dy, a))


@gradient("division")
def _division_gradient(g, op, dy, wanted):
    a, b = op.inputs
    return _ub(g, op, wanted, lambda: g.division(dy, b),
               lambda: g.negative(g.division(g.multiplication(g.division(dy, b), a), b)))


def _minmax(pick_first):
    def rule(g, op, dy, wanted):
        a, b = op.inputs
        mask = pick_first(g, a, b)
        zero = g.constant(0, dtype=dy.dtype)
        return _ub(g, op, wanted, lambda: g.select(mask, dy, zero), lambda: g.select(mask, zero, dy))
    return rule


def _picked_first(g, op):
    """Where the result is the first operand: the NaN-ignoring ops pick the one that is not NaN."""
    return g.equal(op.inputs[0], op.outputs[0])


def _minmax_gradient(g, op, dy, wanted):
    """The whole gradient goes to the operand the result came from; at a tie, to the first."""
    mask = _picked_first(g, op)
    zero = g.constant(0, dtype=dy.dtype)
    return _ub(g, op, wanted, lambda: g.select(mask, dy, zero), lambda: g.select(mask, zero, dy))


gradient("maximum")(_minmax_gradient)
gradient("minimum")(_minmax_gradient)
gradient("maximum_with_nan_propagation")(_minmax(lambda g, a, b: g.greater_than_or_equal_to(a, b)))
gradient("minimum_with_nan_propagation")(_minmax(lambda g, a, b: g.less_than_or_equal_to(a, b)))


@gradient("power")
def _power_gradient(g, op, dy, wanted):
    a, b = op.inputs
    y = op.outputs[0]

    def db():
        zero = g.constant(0, dtype=a.dtype)
        safe_log = g.select(g.greater_than(a, zero), g.logarithm(g.select(g.greater_than(a, zero), a, 1.0)), zero)
        return g.multiplication(dy, g.multiplication(y, safe_log))

    return _ub(g, op, wanted, lambda: g.multiplication(dy, g.multiplication(b, g.power(a, g.subtraction(b, 1.0)))), db)


for _cmp in ("equal", "not_equal", "less_than", "less_than_or_equal_to", "greater_than",
             "greater_than_or_equal_to"):
    gradient(_cmp)(lambda g, op, dy, wanted: [None, None])


@gradient("negative")
def _negative_gradient(g, op, dy, wanted):
    return [g.negative(dy)]


@gradient("absolute")
def _absolute_gradient(g, op, dy, wanted):
    return [g.multiplication(dy, g.sign(op.inputs[0]))]


@gradient("sign")
def _sign_gradient(g, op, dy, wanted):
    return [g.multiplication(dy, g.constant(0, dtype=dy.dtype))]


@gradient("exponent")
def _exponent_gradient(g, op, dy, wanted):
    return [g.multiplication(dy, op.outputs[0])]


@gradient("logarithm")
def _logarithm_gradient(g, op, dy, wanted):
    return [g.division(dy, op.inputs[0])]


@gradient("square")
def _square_gradient(g, op, dy, wanted):
    return [g.multiplication(dy, g.multiplication(op.inputs[0], 2.0))]


@gradient("square_root")
def _square_root_gradient(g, op, dy, wanted):
    return [g.division(dy, g.multiplication(op.outputs[0], 2.0))]


@gradient("reciprocal")
def _reciprocal_gradient(g, op, dy, wanted):
    y = op.outputs[0]
    return [g.negative(g.multiplication(dy, g.square(y)))]


@gradient("tanh")
def _tanh_gradient(g, op, dy, wanted):
    y = op.outputs[0]
    return [g.multiplication(dy, g.subtraction(1.0, g.square(y)))]


@gradient("sigmoid")
def _sigmoid_gradient(g, op, dy, wanted):
    """MPSGraph's own gradient op, of the input."""
    return [g.sigmoid_gradient(dy, op.inputs[0])]


@gradient("sigmoid_gradient")
def _sigmoid_gradient_gradient(g, op, ddx, wanted):
    """Linear in incoming_gradient; toward source, d/dx of s (1 - s) is s (1 - s) (1 - 2 s)."""
    dy, x = op.inputs

    def toward_source():
        s = g.sigmoid(x)
        return g.sigmoid_gradient(g.multiplication(ddx, g.multiplication(dy, g.subtraction(1.0, g.multiplication(2.0, s)))), x)
    return _ub(g, op, wanted, lambda: g.sigmoid_gradient(ddx, x), toward_source)


@gradient("relu")
def _relu_gradient(g, op, dy, wanted):
    # MPSGraph's own gradient op, given the result (relu(x) > 0 exactly where x > 0, NaN and -0
    # included), as PyTorch's threshold_backward does: the input then dies at the relu, which can
    # be its producer's epilogue (docs/compiler.md)
    return [g.relu_gradient(dy, op.outputs[0])]


@gradient("relu_gradient")
def _relu_gradient_gradient(g, op, ddx, wanted):
    """Linear in incoming_gradient (the same op again); flat in source (its kink has no derivative)."""
    dy, x = op.inputs
    zero = g.constant(0, dtype=x.dtype)
    return _ub(g, op, wanted, lambda: g.relu_gradient(ddx, x), lambda: g.multiplication(ddx, zero))


@gradient("sin")
def _sin_gradient(g, op, dy, wanted):
    return [g.multiplication(dy, g.cos(op.inputs[0]))]


@gradient("cos")
def _cos_gradient(g, op, dy, wanted):
    return [g.negative(g.multiplication(dy, g.sin(op.inputs[0])))]


@gradient("identity")
def _identity_gradient(g, op, dy, wanted):
    return [dy]


@gradient("stop_gradient")
def _stop_gradient_gradient(g, op, dy, wanted):
    return [None]


@gradient("select")
def _select_gradient(g, op, dy, wanted):
    p, a, b = op.inputs
    zero = g.constant(0, dtype=dy.dtype)
    return _ub(g, op, wanted, None, lambda: g.select(p, dy, zero), lambda: g.select(p, zero, dy))


@gradient("clamp")
def _clamp_gradient(g, op, dy, wanted):
    """dy goes to whichever input the result came from, by the forward's own rule
    ``fmin(fmax(tensor, min_value), max_value)`` with NaN-ignoring fmin/fmax: the inner step takes
    ``tensor`` where ``tensor >= min_value`` (ties included) or ``min_value`` is NaN, else
    ``min_value``; the outer keeps that where it is ``<= max_value`` (ties included) or
    ``max_value`` is NaN, else takes ``max_value``. So ``tensor`` gets dy where
    ``min_value <= tensor <= max_value`` and also past a NaN bound, ``min_value`` where the tensor
    is below it (or NaN), ``max_value`` where the tensor is above it or the bounds cross."""
    x, lo, hi = op.inputs
    zero = g.constant(0, dtype=dy.dtype)
    from_x = g.logical_or(g.greater_than_or_equal_to(x, lo), g.is_nan(lo))
    kept = g.logical_or(g.less_than_or_equal_to(g.maximum(x, lo), hi), g.is_nan(hi))
    return _ub(g, op, wanted,
               lambda: g.select(g.logical_and(kept, from_x), dy, zero),
               lambda: g.select(g.logical_and(kept, g.logical_not(from_x)), dy, zero),
               lambda: g.select(kept, zero, dy))


_LN2 = math.log(2.0)


@gradient("erf")
def _erf_gradient(g, op, dy, wanted):
    x = op.inputs[0]
    return [g.multiplication(dy, g.multiplication(g.exponent(g.negative(g.square(x))), 2.0 / math.sqrt(math.pi)))]


def _zero_gradient(g, op, dy, wanted):
    """The rounding ops are flat between integers: zero (their jumps have no derivative)."""
    return [g.multiplication(dy, g.constant(0, dtype=dy.dtype))]


for _rounding in ("floor", "ceil", "round", "rint"):
    gradient(_rounding)(_zero_gradient)


@gradient("reverse_square_root")
def _reverse_square_root_gradient(g, op, dy, wanted):
    y = op.outputs[0]
    return [g.multiplication(dy, g.multiplication(g.multiplication(y, g.square(y)), -0.5))]


@gradient("exponent_base2")
def _exponent_base2_gradient(g, op, dy, wanted):
    return [g.multiplication(dy, g.multiplication(op.outputs[0], _LN2))]


@gradient("logarithm_base2")
def _logarithm_base2_gradient(g, op, dy, wanted):
    return [g.division(dy, g.multiplication(op.inputs[0], _LN2))]


@gradient("atan2")
def _atan2_gradient(g, op, dy, wanted):
    """d/da atan2(a, b) = b / (a^2 + b^2), d/db = -a / (a^2 + b^2)."""
    a, b = op.inputs
    scale = g.division(dy, g.addition(g.square(a), g.square(b)))
    return _ub(g, op, wanted, lambda: g.multiplication(scale, b), lambda: g.negative(g.multiplication(scale, a)))


_LN10 = math.log(10.0)


@gradient("tan")
def _tan_gradient(g, op, dy, wanted):
    """tan' = 1 + tan^2."""
    return [g.multiplication(dy, g.addition(g.square(op.outputs[0]), 1.0))]


@gradient("sinh")
def _sinh_gradient(g, op, dy, wanted):
    return [g.multiplication(dy, g.cosh(op.inputs[0]))]


@gradient("cosh")
def _cosh_gradient(g, op, dy, wanted):
    return [g.multiplication(dy, g.sinh(op.inputs[0]))]


def _one_minus_square(g, x):
    """1 - x^2 as (1 - x)(1 + x): no cancellation near |x| = 1."""
    return g.multiplication(g.subtraction(1.0, x), g.addition(x, 1.0))


@gradient("asin")
def _asin_gradient(g, op, dy, wanted):
    """asin' = 1 / sqrt(1 - x^2)."""
    return [g.division(dy, g.square_root(_one_minus_square(g, op.inputs[0])))]


@gradient("acos")
def _acos_gradient(g, op, dy, wanted):
    """acos' = -1 / sqrt(1 - x^2)."""
    return [g.negative(g.division(dy, g.square_root(_one_minus_square(g, op.inputs[0]))))]


@gradient("atan")
def _atan_gradient(g, op, dy, wanted):
    """atan' = 1 / (1 + x^2)."""
    return [g.division(dy, g.addition(g.square(op.inputs[0]), 1.0))]


@gradient("asinh")
def _asinh_gradient(g, op, dy, wanted):
    """asinh' = 1 / sqrt(x^2 + 1)."""
    return [g.division(dy, g.square_root(g.addition(g.square(op.inputs[0]), 1.0)))]


@gradient("acosh")
def _acosh_gradient(g, op, dy, wanted):
    """acosh' = 1 / sqrt((x - 1)(x + 1))."""
    x = op.inputs[0]
    return [g.division(dy, g.square_root(g.multiplication(g.subtraction(x, 1.0), g.addition(x, 1.0))))]


@gradient("atanh")
def _atanh_gradient(g, op, dy, wanted):
    """atanh' = 1 / (1 - x^2)."""
    return [g.division(dy, _one_minus_square(g, op.inputs[0]))]


@gradient("exponent_base10")
def _exponent_base10_gradient(g, op, dy, wanted):
    return [g.multiplication(dy, g.multiplication(op.outputs[0], _LN10))]


@gradient("logarithm_base10")
def _logarithm_base10_gradient(g, op, dy, wanted):
    return [g.division(dy, g.multiplication(op.inputs[0], _LN10))]


gradient("truncate")(_zero_gradient)


@gradient("division_no_nan")
def _division_no_nan_gradient(g, op, dy, wanted):
    """As division's where b != 0 and zero where b == 0 (the result is the constant 0 there), written
    with division_no_nan itself: d/da = dy /0 b, d/db = -((dy * a) /0 b) /0 b."""
    a, b = op.inputs
    return _ub(g, op, wanted, lambda: g.division_no_nan(dy, b),
               lambda: g.negative(g.division_no_nan(g.division_no_nan(g.multiplication(dy, a), b), b)))


def _modulo_gradient(g, op, dy, wanted):
    """r = a - q * b with q = trunc(a / b) (modulo) or floor(a / b) (floor_modulo), constant
    between jumps: dr/da = 1, dr/db = -q, and q = (a - r) / b."""
    a, b = op.inputs
    q = g.division(g.subtraction(a, op.outputs[0]), b)
    return _ub(g, op, wanted, lambda: dy, lambda: g.negative(g.multiplication(dy, q)))


gradient("modulo")(_modulo_gradient)
gradient("floor_modulo")(_modulo_gradient)


@gradient("leaky_relu")
def _leaky_relu_gradient(g, op, dy, wanted):
    """MPSGraph's own gradient op, with alpha as a scalar constant."""
    return [g.leaky_relu_gradient(dy, op.inputs[0], op.attrs["alpha"])]


@gradient("leaky_relu_gradient")
def _leaky_relu_gradient_gradient(g, op, ddx, wanted):
    """Linear in incoming_gradient (the same op again) and in alpha_tensor (where source < 0);
    flat in source (its kink at 0 has no derivative)."""
    dy, x, alpha = op.inputs
    zero = g.constant(0, dtype=x.dtype)
    return _ub(g, op, wanted, lambda: g.leaky_relu_gradient(ddx, x, alpha),
               lambda: g.multiplication(ddx, zero),
               lambda: g.select(g.less_than(x, zero), g.multiplication(ddx, dy), zero))


@gradient("cast")
def _cast_gradient(g, op, dy, wanted):
    src = op.inputs[0]
    if not (src.dtype.is_floating and op.outputs[0].dtype.is_floating):
        return [None]
    return [g.cast(dy, src.dtype)]
