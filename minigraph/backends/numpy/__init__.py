"""The NumPy backend: the executable definition of minigraph's semantics."""
from .backend import NumpyBackend
from .registry import KERNELS, numpy_kernel

__all__ = ["NumpyBackend", "KERNELS", "numpy_kernel"]
