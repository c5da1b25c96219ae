"""The webgpu backend: minigraph's own WGSL compute kernels run through wgpu-py.

On macOS wgpu runs them on Metal (also registered as the ``"metal"`` backend), on Linux on
Vulkan (a GPU, or Mesa's lavapipe on a CPU), on Windows on D3D12 or Vulkan.
"""
from . import attention, control_flow, convolution, elementwise, fft, gather, image, linalg, matmul, movement, nms, non_zero, normalization, pooling, pooling_4d, quantization, random, reduction, resize, rnn, sample_grid, scan, shape, sort, sparse, stencil  # noqa: F401  (register their kernels)
from .backend import WebGPUBackend
from .kernel_builder import SUPPORTED_DTYPES
from .registry import KERNELS, webgpu_kernel

__all__ = ["WebGPUBackend", "KERNELS", "SUPPORTED_DTYPES", "webgpu_kernel"]
