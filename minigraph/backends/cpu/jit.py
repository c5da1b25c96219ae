"""The one Numba decorator every kernel of the cpu backend uses, imported only once numba is known
to be installed (backend.py checks).

``nogil``: the caller's thread lets go of the GIL for the whole kernel. ``cache``: the machine
code is kept on disk next to the module (or in Numba's user cache when that is read-only), so
only the first process ever compiles it. ``error_model="numpy"``: a float division by zero gives
inf or NaN, as NumPy's, instead of raising.
"""
from __future__ import annotations

from numba import njit, prange

__all__ = ["kernel", "njit_inline", "parallel_kernel", "prange"]


def kernel(fn):
    """A serial compiled kernel (small problems: a parallel launch costs more than it saves)."""
    return njit(nogil=True, cache=True, error_model="numpy")(fn)


def parallel_kernel(fn):
    """A compiled kernel whose ``prange`` loops split over Numba's threads (``numba.set_num_threads``)."""
    return njit(nogil=True, cache=True, parallel=True, error_model="numpy")(fn)


def njit_inline(fn):
    """A helper the kernels call, inlined into them."""
    return njit(nogil=True, cache=True, inline="always", error_model="numpy")(fn)
