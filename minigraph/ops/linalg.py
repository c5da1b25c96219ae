"""Linear algebra (MPSGraphLinearAlgebraOps): band_part.

``band_part`` keeps, in each matrix of the last two axes, the elements ``[..., i, j]`` with
``(num_lower < 0 or i - j <= num_lower) and (num_upper < 0 or j - i <= num_upper)`` and sets the
others to 0, as ``tf.linalg.band_part``; the axes before the last two are batch axes
(https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraph/bandpart(_:numlower:numupper:name:)).
Apple also has a form taking ``numLower``/``numUpper`` as tensors
(``bandPartWithTensor:numLowerTensor:numUpperTensor:name:``); here they are ints fixed when the
graph is built.
"""
from __future__ import annotations

from typing import Optional

from ..errors import ShapeError
from ..types import ShapedType
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
