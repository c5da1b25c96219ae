"""The webgpu backend: minigraph's own WGSL compute kernels run through wgpu-py.

On macOS wgpu runs them on Metal (also registered as the ``"metal"`` backend), on Linux on
Vulkan (a GPU, or Mesa's lavapipe on a CPU), on Windows on D3D12 or Vulkan.
"""
from .backend import SUPPORTED_DTYPES, UnsupportedDTypeError, WebGPUBackend
from .registry import ALIASES, KERNELS, load_kernels, webgpu_kernel

__all__ = ["WebGPUBackend", "KERNELS", "ALIASES", "SUPPORTED_DTYPES", "UnsupportedDTypeError",
           "webgpu_kernel", "load_kernels"]
