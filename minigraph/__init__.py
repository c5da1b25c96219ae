"""minigraph: build, compile and run graphs with the semantics of Apple's MPSGraph, anywhere."""
from .backends import available_backends, get_backend, register_backend
from .descriptors import (Convolution2DOpDescriptor, DepthwiseConvolution2DOpDescriptor,
                          DepthwiseConvolution3DOpDescriptor, PaddingStyle, Pooling2DOpDescriptor,
                          TensorNamedDataLayout)
from .errors import (AxisError, BackendUnavailableError, DescriptorError, DTypeError, ExecutionError,
                     FeedDTypeError, FeedError, GraphMismatchError, KernelMissingError, MiniGraphError,
                     MissingFeedError, NameLookupError, NotDifferentiableError, ResourceLimitError,
                     SerializationError, ShapeError, TargetError, UnknownBackendError, UnknownDTypeError)
from .executable import Executable
from .graph import AmbiguousNameError, Graph
from .tensor import Operation, Tensor
from .types import (DataType, ShapedType, as_dtype, bool_, float16, float32, float64, int8, int16,
                    int32, int64, uint8, uint16, uint32, uint64)
from . import ops  # noqa: E402,F401  (registers every op and attaches the builders to Graph)
from . import autodiff, optimizers  # noqa: E402,F401
from . import listing, visualize, serialize, compare, swift  # noqa: E402,F401  (attach g.describe, g.save, ...)
from .compare import compare_backends  # noqa: E402
from .serialize import load  # noqa: E402
from .swift import SwiftExportError  # noqa: E402
from .visualize import GraphvizNotFoundError, RenderError  # noqa: E402

bool = bool_  # noqa: A001  mg.bool mirrors MPSDataType.bool

__version__ = "0.1.0"
