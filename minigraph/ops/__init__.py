"""Op declarations, one module per family. Importing this package declares every op."""
from ..ir import OPS, OpDef
from . import (attention, control_flow, convolution, convolution_transpose, cumulative, depthwise, depthwise3d, elementwise, gather, linalg, matmul, memory,  # noqa: F401
               movement, normalization, optimizer, padding, pooling, random, reduction, resize, rnn, shape, sort)
from .registry import defop, gradient

__all__ = ["OPS", "OpDef", "defop", "gradient"]
