"""Matrix multiplication with batch broadcasting (MPSGraph ``matrixMultiplication``)."""
from __future__ import annotations

from typing import Optional

from ..errors import ShapeError
from ..types import ShapedType
from ._util import broadcast_shapes, same_dtype, unbroadcast
from .elementwise import _numeric
from .registry import defop, gradient


def _infer_matmul(in_types, attrs):
    a, b = in_types
    same_dtype(in_types)
    _numeric(a, "matrix_multiplication")
    if len(a.shape) < 2 or len(b.shape) < 2:
        raise ShapeError(f"needs tensors of rank >= 2, got shapes {a.shape} and {b.shape}; "
                         "use g.expand_dims to make a vector a matrix")
    k1, k2 = a.shape[-1], b.shape[-2]
    if k1 != k2 and -1 not in (k1, k2):
        raise ShapeError(f"inner dimensions differ: {a.shape} @ {b.shape} needs "
                         f"primary.shape[-1] ({k1}) == secondary.shape[-2] ({k2})")
    try:
        batch = broadcast_shapes(a.shape[:-2], b.shape[:-2])
    except ShapeError as e:
        raise ShapeError(f"batch dimensions of {a.shape} and {b.shape} do not broadcast: {e}") from None
    return [ShapedType(batch + (a.shape[-2], b.shape[-1]), a.dtype)]


@defop("matrix_multiplication", swift="matrixMultiplication(primary:secondary:name:)",
       objc="matrixMultiplicationWithPrimaryTensor:secondaryTensor:name:",
       inputs=("primary", "secondary"), infer=_infer_matmul, family="matmul")
def matrix_multiplication(g, primary, secondary, name: Optional[str] = None):
    """Batched ``primary @ secondary`` over the last two axes; batch axes broadcast
    (MPSGraph ``matrixMultiplication(primary:secondary:name:)``)."""
    label = f"matrix_multiplication op {name or 'matrix_multiplication'!r}"
    primary = g.as_tensor(primary, label)
    secondary = g.as_tensor(secondary, label, like=primary)
    return g.add_op("matrix_multiplication", [primary, secondary], {}, name).output


@gradient("matrix_multiplication")
def _matrix_multiplication_gradient(g, op, dy, wanted):
    a, b = op.inputs
    da = unbroadcast(g, g.matrix_multiplication(dy, g.transpose(b, -1, -2)), a.shape) if wanted[0] else None
    db = unbroadcast(g, g.matrix_multiplication(g.transpose(a, -1, -2), dy), b.shape) if wanted[1] else None
    return [da, db]
