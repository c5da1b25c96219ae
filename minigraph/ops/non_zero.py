"""The indices of a tensor's non-zero elements (MPSGraphNonZeroOps): non_zero_indices.

The result is int32 ``[count, rank]``: one row per non-zero element, its index along every axis,
rows in row-major order of the elements (NumPy's ``argwhere``, PyTorch's ``nonzero``). ``count``
is known only once the input's values are: the op is *data-dependent-shape*
(``data_dependent_shape=True``); its build-time type is ``[-1, rank]``, the executable sizes the
result when it runs, and the result may only be a target of compile/run, never the input of
another op (the compiler refuses that with a PlanError naming both ops). NaN counts as non-zero,
-0.0 as zero (``x != 0``); a complex element is non-zero when either part is; a rank-0 input
gives ``[1, 0]`` or ``[0, 0]``. Not differentiable (integer indices).
"""
from __future__ import annotations

from typing import Optional

from ..types import ShapedType, int32
from .registry import defop


def _infer(in_types, attrs):
    (x,) = in_types
    return [ShapedType((-1, len(x.shape)), int32)]


@defop("non_zero_indices", swift="nonZeroIndices(_:name:)", objc="nonZeroIndicesOfTensor:name:",
       inputs=("tensor",), infer=_infer, family="non_zero", differentiable=False, since=("14.0", "17.0"),
       data_dependent_shape=True)
def non_zero_indices(g, tensor, name: Optional[str] = None):
    """The int32 ``[count, rank]`` indices of ``tensor``'s non-zero elements, in row-major order
    (MPSGraph ``nonZeroIndices(_:name:)``). ``count`` depends on the data: the result is ``[-1,
    rank]`` until it runs, and may only be a target of compile/run (module docstring).
    https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraph/nonzeroindices(_:name:)

    Args:
        tensor: A tensor of this graph, of any dtype and rank.
        name: The op's name (MPSGraph's ``name:``).
    """
    x = g.as_tensor(tensor, f"non_zero_indices op {name or 'non_zero_indices'!r}")
    return g.add_op("non_zero_indices", [x], {}, name).output
