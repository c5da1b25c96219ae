"""``mg.TensorData`` on the webgpu backend: a value put in a device buffer of its own once, which
runs copy on the device into their feed buffers (runner.py) instead of uploading it.

The buffer is a ``resident.DeviceArray``: nothing writes it after its upload, and its host value
is read back once, when asked for.
"""
from __future__ import annotations

import numpy as np

from ...errors import UnsupportedDTypeError
from . import resident
from .buffers import Pool, device_nbytes, to_device
from .device import GPU_LOCK
from .wgsl import HOST


def hold(ctx, array: np.ndarray, dtype) -> resident.DeviceArray:
    """``array`` uploaded into a new device buffer of ``ctx``'s device.

    Args:
        ctx: The backend's device context.
        array: The value, a checked native-order ndarray.
        dtype: Its minigraph dtype (``int4`` / ``uint4`` for their holding int8 / uint8 arrays).
    """
    name = dtype.name
    if name not in HOST:
        raise UnsupportedDTypeError(f"TensorData: the webgpu backend cannot hold dtype {name} on its device (it holds "
                                    f"{', '.join(HOST)}); cast the array first, or use backend='numpy'")
    nbytes = device_nbytes(array.shape, name)
    label = f"TensorData {name}{list(array.shape)}"
    with GPU_LOCK:
        buffer = Pool(ctx).new(nbytes, label)
        data = to_device(array, name)
        if data.nbytes:
            ctx.device.queue.write_buffer(buffer, 0, data)
            resident.count("upload", data.nbytes)
    return resident.DeviceArray(ctx, buffer, nbytes, array.shape, name)
