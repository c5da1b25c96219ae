"""The ``cpu`` backend: the plan's heavy steps as Numba-compiled kernels that run without the GIL
on Numba's thread pool; every other step runs the NumPy backend's kernel (backend.py)."""
from .backend import CpuBackend, EXTRA_HINT

__all__ = ["CpuBackend", "EXTRA_HINT"]
