"""Linear algebra (MPSGraphLinearAlgebraOps): band_part; inverse (MPSGraphMatrixInverseOps); and
hamming_distance.

``band_part`` keeps, in each matrix of the last two axes, the elements ``[..., i, j]`` with
``(num_lower < 0 or i - j <= num_lower) and (num_upper < 0 or j - i <= num_upper)`` and sets the
others to 0, as ``tf.linalg.band_part``; the axes before the last two are batch axes
(https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraph/bandpart(_:numlower:numupper:name:)).
Apple also has a form taking ``numLower``/``numUpper`` as tensors
(``bandPartWithTensor:numLowerTensor:numUpperTensor:name:``); here they are ints fixed when the
graph is built.

``inverse`` inverts each square matrix in the last two axes (the axes before them are batch
axes), by Gauss-Jordan elimination with partial pivoting. Apple computes it by LU
decomposition and says "results are undefined for ill conditioned matrices"
(https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraph/inverse(input:name:)).
A graph runs lazily, so a singular input cannot be refused when the graph is built; minigraph
gives NaN for every element of a matrix whose elimination meets an exact zero pivot (an
exactly singular matrix, e.g. a zero row or two equal rows), on every backend, and otherwise
whatever the elimination gives. float16 is computed in float32 and rounded once.

``hamming_distance`` (Apple declares it with the matrix multiplications, in
MPSGraphMatrixMultiplicationOps.h) treats the last axis of each input as a vector of integers:
primary ``[..., M, K]`` and secondary ``[..., N, K]`` give ``[..., M, N]`` with the batch axes
broadcast, ``result[..., m, n]`` = the number of bits that differ between ``primary[..., m, :]``
and ``secondary[..., n, :]`` (popcount of the XOR, summed over K); the result is uint32 or uint16
(https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraph/hammingdistance(primary:secondary:resultdatatype:name:)).
Apple does not say which input dtypes it takes; here both inputs must be integers of the same
dtype, and the bits counted are those of that dtype's width (a negative int32 is its two's
complement).
"""
from __future__ import annotations

from typing import Optional

from typing import Any

from ..errors import DTypeError, ShapeError
from ..types import ShapedType, as_dtype
from ._util import broadcast_shapes
from .registry import defop, gradient
from .shape import _int

_FAMILY = "linear_algebra"


def _label(type: str, name) -> str:
    return f"{type} {name!r}" if name else type


def _infer_band_part(in_types, attrs) -> list:
    (t,) = in_types
    if len(t.shape) < 2:
        raise ShapeError(f"band_part: the input must have rank >= 2 (a matrix in the last two axes), "
                         f"got shape {tuple(t.shape)}")
    return [ShapedType(t.shape, t.dtype)]


@defop("band_part", swift="bandPart(_:numLower:numUpper:name:)",
       objc="bandPartWithTensor:numLower:numUpper:name:", inputs=("tensor",), infer=_infer_band_part,
       family=_FAMILY, attrs=("num_lower", "num_upper"), since=("12.3", "15.4"))
def band_part(g, tensor, num_lower: int, num_upper: int, name: Optional[str] = None):
    """The band of each matrix in the last two axes: ``num_lower`` diagonals below the main one and
    ``num_upper`` above it (negative: all of them); everything else 0, as ``tf.linalg.band_part``
    (MPSGraph ``bandPart(_:numLower:numUpper:name:)``)."""
    label = _label("band_part", name)
    t = g.as_tensor(tensor, label)
    lo, up = _int(num_lower, "num_lower", label), _int(num_upper, "num_upper", label)
    if t.rank < 2:
        raise ShapeError(f"{label}: the input must have rank >= 2 (a matrix in the last two axes), "
                         f"got shape {tuple(t.shape)}")
    return g.add_op("band_part", [t], {"num_lower": lo, "num_upper": up}, name).output


@gradient("band_part")
def _band_part_gradient(g, op, dy, wanted):
    return [g.band_part(dy, op.attrs["num_lower"], op.attrs["num_upper"])]


# ----------------------------------------------------------------------------- hamming distance
_HAMMING_RESULTS = ("uint32", "uint16")


def _infer_hamming(in_types, attrs) -> list:
    a, b = in_types
    if a.dtype != b.dtype or not a.dtype.is_integer:
        raise DTypeError(f"hamming_distance: primary and secondary must be integer tensors of one dtype, "
                         f"got {a.dtype.name} and {b.dtype.name}")
    if len(a.shape) < 2 or len(b.shape) < 2:
        raise ShapeError(f"hamming_distance: primary [..., M, K] and secondary [..., N, K] need rank >= 2, "
                         f"got shapes {tuple(a.shape)} and {tuple(b.shape)}")
    if a.shape[-1] != b.shape[-1] and -1 not in (a.shape[-1], b.shape[-1]):
        raise ShapeError(f"hamming_distance: the vectors (last axes) must have one length K, got "
                         f"{a.shape[-1]} (primary {tuple(a.shape)}) and {b.shape[-1]} (secondary {tuple(b.shape)})")
    try:
        batch = broadcast_shapes(a.shape[:-2], b.shape[:-2])
    except ShapeError as e:
        raise ShapeError(f"hamming_distance: batch axes: {e}") from None
    return [ShapedType(tuple(batch) + (a.shape[-2], b.shape[-2]), attrs["result_data_type"])]


@defop("hamming_distance", swift="HammingDistance(primary:secondary:resultDataType:name:)",
       objc="HammingDistanceWithPrimaryTensor:secondaryTensor:resultDataType:name:",
       inputs=("primary", "secondary"), infer=_infer_hamming, family=_FAMILY, differentiable=False,
       attrs=("result_data_type",), since=("13.0", "16.0"))
def hamming_distance(g, primary, secondary, result_data_type: Any, name: Optional[str] = None):
    """The number of differing bits between each row of ``primary`` ``[..., M, K]`` and each row of
    ``secondary`` ``[..., N, K]``: ``[..., M, N]``, batch axes broadcast, as ``result_data_type``
    (uint32 or uint16) (MPSGraph ``HammingDistance(primary:secondary:resultDataType:name:)``).
    Not differentiable (integer inputs and result)."""
    label = _label("hamming_distance", name)
    a, b = g.as_tensor(primary, label), g.as_tensor(secondary, label)
    try:
        dt = as_dtype(result_data_type)
    except Exception:
        raise DTypeError(f"{label}: result_data_type must be uint32 or uint16, got {result_data_type!r}") from None
    if dt.name not in _HAMMING_RESULTS:
        raise DTypeError(f"{label}: result_data_type must be uint32 or uint16 (Apple's two), got {dt.name}")
    return g.add_op("hamming_distance", [a, b], {"result_data_type": dt}, name).output


# ----------------------------------------------------------------------------- inverse
def _infer_inverse(in_types, attrs) -> list:
    (t,) = in_types
    if len(t.shape) < 2 or (t.shape[-1] != t.shape[-2] and -1 not in t.shape[-2:]):
        raise ShapeError(f"inverse: the input must hold square matrices in its last two axes [..., N, N], "
                         f"got shape {tuple(t.shape)}")
    if not t.dtype.is_floating:
        raise DTypeError(f"inverse: the input must have a floating-point dtype (float32, float16), got {t.dtype.name}")
    return [ShapedType(t.shape, t.dtype)]


@defop("inverse", swift="inverse(input:name:)", objc="inverseOfTensor:name:", inputs=("input",),
       infer=_infer_inverse, family=_FAMILY, since=("13.0", "16.1"))
def inverse(g, input, name: Optional[str] = None):  # noqa: A002  (MPSGraph's label)
    """The inverse of each square matrix in the last two axes, batch axes before them; an exactly
    singular matrix gives NaN (MPSGraph ``inverse(input:name:)``)."""
    label = _label("inverse", name)
    t = g.as_tensor(input, label)
    return g.add_op("inverse", [t], {}, name).output


@gradient("inverse")
def _inverse_gradient(g, op, dy, wanted):
    """d(A^-1) = -A^-T dY A^-T, with A^-1 the forward result."""
    y = op.outputs[0]
    yt = g.transpose(y, -1, -2)
    return [g.negative(g.matrix_multiplication(g.matrix_multiplication(yt, dy), yt))]
