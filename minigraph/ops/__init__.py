"""Op declarations, one module per family. Importing this package declares every op."""
from ..ir import OPS, OpDef
from . import (attention, control_flow, convolution, convolution_transpose, cumulative, depthwise, depthwise3d, elementwise, gather, linalg,  # noqa: F401
               image, matmul, memory, movement, normalization, optimizer, padding, pooling, quantization, random, reduction,
               nms, resize, rnn, shape, sort, space, sparse, stencil)
from .registry import defop, gradient

__all__ = ["OPS", "OpDef", "defop", "gradient"]
