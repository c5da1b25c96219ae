"""The one Numba decorator every kernel of the cpu backend uses, imported only once numba is known
to be installed (backend.py checks).

``nogil``: the caller's thread lets go of the GIL for the whole kernel. ``cache``: the machine
code is kept on disk next to the module (or in Numba's user cache when that is read-only), so
only the first process ever compiles it. ``error_model="numpy"``: a float division by zero gives
inf or NaN, as NumPy's, instead of raising.
"""
from __future__ import annotations

import types

from numba import njit, prange

__all__ = ["kernel", "njit_inline", "parallel_kernel", "prange", "serial_and_parallel"]


def kernel(fn):
    """A serial compiled kernel (small problems: a parallel launch costs more than it saves)."""
    return njit(nogil=True, cache=True, error_model="numpy")(fn)


def parallel_kernel(fn):
    """A compiled kernel whose ``prange`` loops split over Numba's threads (``numba.set_num_threads``)."""
    return njit(nogil=True, cache=True, parallel=True, error_model="numpy")(fn)


def njit_inline(fn):
    """A helper the kernels call, inlined into them."""
    return njit(nogil=True, cache=True, inline="always", error_model="numpy")(fn)


def serial_and_parallel(fn):
    """``(serial, parallel)``: ``fn``, whose loops use ``prange``, compiled both ways (the caller
    picks by the size of the problem: below a few hundred thousand elements a parallel launch
    costs more than it saves). The serial one compiles a copy of ``fn`` under the name
    ``<name>_serial``: Numba's disk cache names its files after the function, and would otherwise
    hand one variant's machine code to the other."""
    twin = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__ + "_serial", fn.__defaults__, fn.__closure__)
    twin.__qualname__ = fn.__qualname__ + "_serial"
    twin.__doc__ = fn.__doc__
    return kernel(twin), parallel_kernel(fn)
