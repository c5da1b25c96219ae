"""Op declarations, one module per family. Importing this package declares every op."""
from ..ir import OPS, OpDef
from . import (attention, complex, control_flow, convolution, convolution3d, convolution_transpose, cumulative, depthwise, depthwise3d, elementwise, fft, gather, linalg,  # noqa: F401
               image, matmul, memory, movement, normalization, optimizer, padding, pooling, pooling_4d, quantization, random, reduction,
               nms, non_zero, resize, rnn, sample_grid, shape, sort, space, sparse, stencil)
from .registry import defop, gradient

__all__ = ["OPS", "OpDef", "defop", "gradient"]
