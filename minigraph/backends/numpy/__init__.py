"""The NumPy backend: the executable definition of minigraph's semantics."""
from . import attention, control_flow, conv, depthwise, depthwise3d, gather, image, kernels, linalg, movement, nms, normalization, pooling, quantization, random, reductions, resize, rnn, sparse, stencil  # noqa: F401  (register their kernels)
from .backend import NumpyBackend
from .registry import KERNELS, numpy_kernel

__all__ = ["NumpyBackend", "KERNELS", "numpy_kernel"]
