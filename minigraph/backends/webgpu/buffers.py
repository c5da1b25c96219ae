"""Device buffers of the webgpu backend: a binding (``Ref``), the pool that intermediates come
from and go back to, and the bytes of an array as the device stores them.

The plan decides when a slot dies (``Step.free``); the pool only keeps the freed buffers and
hands out the best fit. Sources (feeds, constants, variables) and pending assigned values get
buffers of their own (``dedicated``), never pooled.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ...errors import ResourceLimitError
from ...types import num_elements
from .wgsl import HOST


class _Buf:
    """One device buffer; ``refs`` counts the live slots that use it (aliases share it)."""

    __slots__ = ("buffer", "size", "pooled", "refs")

    def __init__(self, buffer, size, pooled):
        self.buffer, self.size, self.pooled, self.refs = buffer, size, pooled, 0


class Ref(NamedTuple):
    """A binding: a buffer and how many bytes of it the tensor uses."""

    buf: _Buf
    nbytes: int

    @property
    def buffer(self):
        return self.buf.buffer


def device_nbytes(shape, dtype_name: str) -> int:
    """Bytes a tensor takes on the device: bool widened to u32, padded to 4 bytes, at least 4."""
    item = {"float16": 2, "complex64": 8}.get(dtype_name, 4)
    n = num_elements(shape) * item
    return max(4, (n + 3) // 4 * 4)


class Pool:
    """The buffers of one prepared plan: new ones within the adapter's limits, freed pooled ones
    kept and handed out again (best fit). ``allocated_bytes`` and ``hits`` say how it went."""

    def __init__(self, ctx) -> None:
        import wgpu

        self.ctx = ctx
        self._usage = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST
        self.free: list = []  # pooled buffers no live slot uses
        self.allocated_bytes = 0
        self.hits = 0

    def new(self, nbytes: int, label: str):
        """A new device buffer of ``nbytes`` (a wgpu buffer, not pooled)."""
        ctx = self.ctx
        if nbytes > ctx.max_binding or nbytes > ctx.max_buffer:
            raise ResourceLimitError(
                f"{label}: needs a {nbytes}-byte device buffer, more than the adapter's limits "
                f"(max-storage-buffer-binding-size {ctx.max_binding}, max-buffer-size {ctx.max_buffer})")
        try:
            buf = ctx.device.create_buffer(size=nbytes, usage=self._usage)
        except Exception as e:
            raise ResourceLimitError(f"{label}: could not allocate {nbytes} bytes on the device: {e}") from None
        self.allocated_bytes += nbytes
        return buf

    def dedicated(self, ty, label: str) -> Ref:
        """A buffer of its own for a tensor of type ``ty``, never pooled."""
        n = device_nbytes(ty.shape, ty.dtype.name)
        return Ref(_Buf(self.new(n, label), n, pooled=False), n)

    def take(self, nbytes: int, label: str) -> _Buf:
        """Best fit from the pool, else a new pooled buffer."""
        best = None
        for b in self.free:
            if b.size >= nbytes and (best is None or b.size < best.size):
                best = b
        if best is not None:
            self.free.remove(best)
            self.hits += 1
            return best
        return _Buf(self.new(nbytes, label), nbytes, pooled=True)

    def give_back(self, bufs) -> None:
        """Pooled buffers nothing uses any more (a step's scratch space)."""
        self.free.extend(bufs)

    def release(self, buf: _Buf) -> None:
        """One slot using ``buf`` died: a pooled buffer no slot uses goes back to the pool."""
        buf.refs -= 1
        if buf.refs == 0 and buf.pooled:
            self.free.append(buf)


def to_device(arr: np.ndarray, dtype: str) -> np.ndarray:
    """The bytes of ``arr`` as the device stores them (bool as u32), padded to 4 bytes."""
    a = np.ascontiguousarray(arr, dtype=HOST[dtype]).reshape(-1)
    if a.nbytes % 4:
        a = np.concatenate([a, np.zeros(1, a.dtype)])
    return a


def host_dtype(dtype: str) -> np.dtype:
    """The NumPy dtype ``from_device`` gives a tensor of ``dtype`` (bool, the narrow ints as int8 / uint8)."""
    if dtype == "bool":
        return np.dtype(bool)
    if dtype in ("int8", "uint8", "int4", "uint4"):
        return np.dtype(np.int8 if dtype in ("int8", "int4") else np.uint8)
    return np.dtype(HOST[dtype])


def from_device(data, offset: int, shape, dtype: str) -> np.ndarray:
    """The array of ``shape`` at ``offset`` of read-back bytes (u32 back to bool, i32/u32 to int8/uint8)."""
    n = num_elements(shape)
    a = np.frombuffer(data, dtype=HOST[dtype], count=n, offset=offset).reshape(shape)
    if dtype == "bool":
        return a != 0
    if dtype in ("int8", "uint8", "int4", "uint4"):  # stored widened, one element per 4 bytes
        return a.astype(np.int8 if dtype in ("int8", "int4") else np.uint8)
    return a.copy()
