"""Op declarations, one module per family. Importing this package declares every op."""
from ..ir import OPS, OpDef
from . import (convolution, depthwise, depthwise3d, elementwise, matmul, memory, pooling,  # noqa: F401
               reduction, shape)
from .registry import defop, gradient

__all__ = ["OPS", "OpDef", "defop", "gradient"]
