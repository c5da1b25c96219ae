"""minigraph: build, compile and run graphs with the semantics of Apple's MPSGraph, anywhere."""
from .backends import available_backends, get_backend, register_backend
from .backends.numpy.threads import ThreadCountError, get_num_threads, set_num_threads
from .compare import compare_backends
from .descriptors import (CompilationDescriptor, Convolution2DOpDescriptor, Convolution3DOpDescriptor,
                          DepthwiseConvolution2DOpDescriptor,
                          DepthwiseConvolution3DOpDescriptor, FFTDescriptor, FFTScalingMode, ImToColOpDescriptor, OptimizationLevel, PaddingMode, PaddingStyle, Pooling2DOpDescriptor,
                          Pooling4DOpDescriptor, PoolingReturnIndicesMode,
                          RandomDistribution, RandomNormalSamplingMethod, RandomOpDescriptor, ResizeMode,
                          ResizeNearestRoundingMode, SDPADescriptor,
                          ScatterMode, TensorNamedDataLayout)
from .descriptors import GRUDescriptor, LSTMDescriptor, RNNActivation, SingleGateRNNDescriptor
from .descriptors import (CreateSparseOpDescriptor, NonMaximumSuppressionCoordinateMode, ReductionMode,
                          SparseStorageType, StencilOpDescriptor)
from .errors import (AmbiguousNameError, AxisError, BackendUnavailableError, DescriptorError, DTypeError,
                     ExecutionError, FeedDTypeError, FeedError, GraphMismatchError, GraphvizNotFoundError,
                     KernelMissingError, MiniGraphError, MissingFeedError, ModelImportError, NameLookupError, NotDifferentiableError,
                     PlanError, RegistrationError, RenderError, ResourceLimitError, SerializationError, ShapeError,
                     SwiftExportError, SymbolicValueError, TargetError, UnknownBackendError, UnknownDTypeError,
                     UnsupportedDTypeError)
from .executable import Executable
from .profiling import OpRecord, Profile
from .tensor_data import TensorData
from .graph import Graph, load
from .onnx_import import from_onnx
from .ir import Operation, Tensor
from .version import __version__
from .types import (DataType, ShapedType, as_dtype, bool_, complex32, complex64, complex128, float16, float32, float64, int4, int8, int16, int32,
                    int64, uint4, uint8, uint16, uint32, uint64)

bool = bool_  # noqa: A001  mg.bool mirrors MPSDataType.bool


__all__ = [
    "AmbiguousNameError", "AxisError", "BackendUnavailableError", "CompilationDescriptor", "Convolution2DOpDescriptor",
    "Convolution3DOpDescriptor", "DTypeError",
    "DataType", "DepthwiseConvolution2DOpDescriptor", "DepthwiseConvolution3DOpDescriptor", "DescriptorError",
    "Executable", "ExecutionError", "FeedDTypeError", "FeedError", "Graph", "GraphMismatchError",
    "GraphvizNotFoundError", "KernelMissingError", "MiniGraphError", "MissingFeedError", "ModelImportError", "NameLookupError",
    "NotDifferentiableError", "ImToColOpDescriptor", "OpRecord", "Operation", "OptimizationLevel", "PaddingMode", "PaddingStyle", "PlanError", "Pooling2DOpDescriptor", "Pooling4DOpDescriptor", "PoolingReturnIndicesMode", "Profile", "RegistrationError",
    "RandomDistribution", "RandomNormalSamplingMethod", "RandomOpDescriptor", "SDPADescriptor", "RenderError", "ResizeMode", "ResizeNearestRoundingMode", "ResourceLimitError", "ScatterMode", "SerializationError", "ShapeError", "ShapedType", "SwiftExportError",
    "SymbolicValueError", "TargetError", "Tensor", "TensorData", "ThreadCountError", "TensorNamedDataLayout", "UnknownBackendError",
    "UnknownDTypeError", "UnsupportedDTypeError", "as_dtype", "available_backends", "bool", "bool_",
    "compare_backends", "float16", "from_onnx", "float32", "float64", "get_backend", "int16", "int32", "int64", "int8",
    "get_num_threads", "load", "register_backend", "set_num_threads", "uint16", "uint32", "uint64", "uint8", "__version__",
    "GRUDescriptor", "LSTMDescriptor", "RNNActivation", "SingleGateRNNDescriptor",
    "FFTDescriptor", "FFTScalingMode", "complex32", "complex64", "complex128", "int4", "uint4",
    "CreateSparseOpDescriptor", "NonMaximumSuppressionCoordinateMode", "ReductionMode", "SparseStorageType",
    "StencilOpDescriptor",
]
