"""The NumPy kernel of non_zero_indices (semantics: ops/non_zero.py): ``argwhere(x != 0)`` as int32;
its result's size is the data's, sized here as it runs (the plan holds ``[-1, rank]``)."""
from __future__ import annotations

import numpy as np

from .registry import numpy_kernel


def non_zero_indices(x) -> np.ndarray:
    """The int32 ``[count, rank]`` row-major indices of the elements of ``x`` that are ``!= 0``
    (NaN counts, -0.0 does not)."""
    a = np.asarray(x)
    return np.ascontiguousarray(np.argwhere(a != 0), dtype=np.int32)


@numpy_kernel("non_zero_indices")
def _non_zero(step):
    return non_zero_indices
