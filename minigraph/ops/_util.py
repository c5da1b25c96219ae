"""Shape helpers of the elementwise, matmul, shape and reduction ops: broadcasting, axes, dtypes."""
from __future__ import annotations

from typing import Any, Sequence

from ..errors import AxisError, DTypeError, ShapeError
from ..types import ShapedType


def broadcast_shapes(*shapes: Sequence[int]) -> tuple:
    """NumPy broadcasting, trailing-aligned; -1 (unknown) broadcasts with 1 and n."""
    rank = max(len(s) for s in shapes)
    out = []
    for i in range(rank):
        dims = [s[len(s) - rank + i] for s in shapes if len(s) - rank + i >= 0]
        known = {d for d in dims if d not in (1, -1)}
        if len(known) > 1:
            raise ShapeError(f"shapes {' and '.join(str(tuple(s)) for s in shapes)} cannot be broadcast "
                             f"(dimension {i - rank} has sizes {sorted(known)}; each pair must be equal or 1)")
        if known:
            out.append(known.pop())
        elif -1 in dims:
            out.append(-1)
        else:
            out.append(1)
    return tuple(out)


def same_dtype(types: Sequence[ShapedType], what: str = "operands") -> None:
    first = types[0].dtype
    for t in types[1:]:
        if t.dtype != first:
            raise DTypeError(f"{what} have different dtypes {first.name} and {t.dtype.name}; minigraph, "
                             "like MPSGraph, does not promote implicitly: cast one with g.cast(...)")


def normalize_axes(axes: Any, rank: int, what: str = "axes", allow_empty: bool = True) -> tuple:
    """Sorted, non-negative, unique axes; negative axes count from the end."""
    if axes is None:
        return tuple(range(rank))
    if hasattr(axes, "__index__") and not isinstance(axes, bool) and getattr(axes, "ndim", 0) == 0:
        axes = [axes]  # an int, a NumPy integer or a 0-d integer array
    try:
        axes = list(axes)
    except TypeError:
        raise ShapeError(f"{what} must be an int or a sequence of ints, got {axes!r}") from None
    out = []
    for a in axes:
        if isinstance(a, bool) or not hasattr(a, "__index__"):
            raise ShapeError(f"{what} must be ints, got {a!r}")
        a = int(a)
        if not -rank <= a < rank:
            raise AxisError(f"axis {a} is out of range for a tensor of rank {rank} "
                             f"(valid: {-rank}..{rank - 1})" if rank else f"axis {a} given for a scalar")
        a %= rank
        if a in out:
            raise ShapeError(f"{what} {axes} repeat axis {a}")
        out.append(a)
    if not out and not allow_empty:
        raise ShapeError(f"{what} must not be empty")
    return tuple(sorted(out))


def broadcast_axes(in_shape: Sequence[int], out_shape: Sequence[int]) -> tuple:
    """Axes of ``out_shape`` over which a tensor of ``in_shape`` was broadcast."""
    lead = len(out_shape) - len(in_shape)
    axes = list(range(lead))
    for i, d in enumerate(in_shape):
        if d == 1 and out_shape[lead + i] != 1:
            axes.append(lead + i)
    return tuple(axes)


def unbroadcast(g, grad, shape: Sequence[int]):
    """Undo broadcasting in a gradient: sum over broadcast axes, then drop the leading ones."""
    shape = tuple(shape)
    if tuple(grad.shape) == shape:
        return grad
    axes = broadcast_axes(shape, grad.shape)
    if axes:
        grad = g.reduction_sum(grad, axes=list(axes))
    if tuple(grad.shape) != shape:
        grad = g.reshape(grad, list(shape) if -1 not in shape else [d if d != -1 else -1 for d in shape])
    return grad
