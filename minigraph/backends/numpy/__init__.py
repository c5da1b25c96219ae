"""The NumPy backend: the executable definition of minigraph's semantics."""
from . import attention, control_flow, conv, depthwise, fft, gather, image, kernels, linalg, movement, nms, non_zero, normalization, pooling, pooling_4d, quantization, random, reductions, resize, rnn, sample_grid, sparse, stencil  # noqa: F401  (register their kernels)
from .backend import NumpyBackend
from .registry import KERNELS, numpy_kernel

__all__ = ["NumpyBackend", "KERNELS", "numpy_kernel"]
