"""The feeds' upload: one staging buffer of the plan's, written by the host while it is mapped
and copied into the feeds' buffers on the device at the start of each run.

``queue.write_buffer`` copies each feed into a staging buffer of wgpu's own, on the calling
thread, before the device copies it; here the staging buffer is kept across runs (mapped for
writing between them), the host writes each feed straight into it, large feeds in blocks on the
thread pool (NumPy's copy releases the GIL), and one command buffer of copies moves them to the
feeds' buffers, ahead of the run's dispatches in queue order. ``bytes`` and ``seconds`` say what
the last run's upload moved and how long the host took, from mapping to the submitted copies.
"""
from __future__ import annotations

import time

import numpy as np

from ..numpy.threads import parallel, split
from .buffers import to_device

ALIGN = 256  # each feed's offset in the staging buffer
BLOCK = 1 << 21  # bytes of one copy task on the host (a block per thread, at least this big)


class Uploads:
    """The staging buffer for ``feeds`` (``[(Ref, dtype name, shape)]``), made at the first run."""

    def __init__(self, ctx, feeds: list) -> None:
        self.ctx = ctx
        self.feeds = feeds
        self.offsets: list = []
        off = 0
        for ref, _dtype, _shape in feeds:
            self.offsets.append(off)
            off += (ref.nbytes + ALIGN - 1) // ALIGN * ALIGN
        self.size = off
        self.buffer = None
        self.bytes = 0
        self.seconds = 0.0

    def _mapped(self):
        """The staging buffer, mapped for writing (made mapped; mapped again after a run)."""
        import wgpu

        buf = self.buffer
        if buf is not None and buf.map_state == "pending":  # an interrupted map cannot be undone
            buf.destroy()
            buf = self.buffer = None
        if buf is None:
            buf = self.buffer = self.ctx.device.create_buffer(
                size=self.size, usage=wgpu.BufferUsage.MAP_WRITE | wgpu.BufferUsage.COPY_SRC, mapped_at_creation=True)
        elif buf.map_state == "unmapped":
            buf.map_sync(wgpu.MapMode.WRITE)
        return buf

    def write(self, feed_values) -> list:
        """Write the feeds into the staging buffer and submit their copies to the device; the
        bytes of each feed copied."""
        if not self.size:
            return []
        t0 = time.perf_counter()
        buf = self._mapped()
        copies = []
        try:
            window = _window(buf, self.size)
            for (ref, dtype, _shape), arr, off in zip(self.feeds, feed_values, self.offsets):
                data = to_device(arr, dtype).view(np.uint8)
                if data.nbytes:
                    _write(window, buf, off, data)
                    copies.append((off, ref, data.nbytes))
        finally:
            buf.unmap()
        enc = self.ctx.device.create_command_encoder()
        for off, ref, n in copies:
            enc.copy_buffer_to_buffer(buf, off, ref.buffer, 0, n)
        self.ctx.device.queue.submit([enc.finish()])
        self.bytes = sum(n for _, _, n in copies)
        self.seconds = time.perf_counter() - t0
        return [n for _, _, n in copies]


def _window(buf, size: int):
    """The mapped bytes as a writable NumPy array, where wgpu-py gives a view of them (its
    ``_experimental_get_mapped_range``); None otherwise (each feed then goes through ``write_mapped``)."""
    get = getattr(buf, "_experimental_get_mapped_range", None)
    if get is None:
        return None
    try:
        return np.frombuffer(get(0, size), dtype=np.uint8)
    except Exception:
        return None


def _write(window, buf, off: int, data: np.ndarray) -> None:
    n = data.nbytes
    if window is None:
        buf.write_mapped(data, off)
        return
    dst = window[off:off + n]

    def block(a: int, b: int) -> None:
        np.copyto(dst[a * BLOCK:b * BLOCK], data[a * BLOCK:b * BLOCK])

    parallel(block, split(-(-n // BLOCK), min_work=1))
