"""The feeds' upload: staging buffers of the plan's, written by the host while they are mapped
and copied into the feeds' buffers on the device at the start of each run.

``queue.write_buffer`` copies each feed into a staging buffer of wgpu's own, on the calling
thread, and the device copies it only after. Here the feeds' bytes are laid out in a few staging
buffers of at most ``PIECE`` bytes, kept across runs and mapped for writing between them; the host
writes a piece (a large piece on two threads: NumPy's copy releases the GIL), unmaps it and
submits its copies, so the device copies one piece while the host writes the next, ahead of the
run's dispatches in queue order. ``bytes`` and ``seconds`` say what the last run's upload moved
and how long the host took, from mapping to the last submitted copy.
"""
from __future__ import annotations

import time

import numpy as np

from ..numpy.threads import blocks, get_num_threads, parallel
from .buffers import to_device

ALIGN = 256  # each feed's offset in the staging bytes
PIECE = 4 << 20  # bytes of one staging buffer (the device copies one while the host writes the next)
COPY_THREADS = 2  # host threads writing one piece: the H200 machine's host wrote mapped memory
# at 14.5 GB/s on one thread, 26.6 on two, 23.1 on four, 19.1 on sixteen (benchmarks/upload_rate.py)
MIN_THREAD_BYTES = 1 << 20


class Uploads:
    """The staging buffers for ``feeds`` (``[(Ref, dtype name, shape)]``), made at the first run."""

    def __init__(self, ctx, feeds: list) -> None:
        self.ctx = ctx
        self.feeds = feeds
        self.offsets: list = []  # each feed's offset in the staging bytes
        off = 0
        for ref, _dtype, _shape in feeds:
            self.offsets.append(off)
            off += (ref.nbytes + ALIGN - 1) // ALIGN * ALIGN
        self.size = off
        self.pieces: list = [None] * (-(-off // PIECE))
        self.bytes = 0
        self.seconds = 0.0

    def _mapped(self, i: int):
        """Staging buffer ``i``, mapped for writing (made mapped; mapped again after a run)."""
        import wgpu

        buf = self.pieces[i]
        if buf is not None and buf.map_state == "pending":  # an interrupted map cannot be undone
            buf.destroy()
            buf = None
        if buf is None:
            size = min(PIECE, self.size - i * PIECE)
            buf = self.pieces[i] = self.ctx.device.create_buffer(
                size=size, usage=wgpu.BufferUsage.MAP_WRITE | wgpu.BufferUsage.COPY_SRC, mapped_at_creation=True)
        elif buf.map_state == "unmapped":
            buf.map_sync(wgpu.MapMode.WRITE)
        return buf

    def write(self, feed_values) -> list:
        """Write the feeds into the staging buffers and submit their copies to the device; the
        bytes of each feed copied."""
        if not self.size:
            return []
        t0 = time.perf_counter()
        datas = [to_device(arr, dtype).view(np.uint8) for (_, dtype, _), arr in zip(self.feeds, feed_values)]
        mapped = [self._mapped(i) for i in range(len(self.pieces))]
        device = self.ctx.device
        for i, buf in enumerate(mapped):
            lo, hi = i * PIECE, i * PIECE + buf.size
            parts = []  # (data, its first byte, bytes, offset in this piece, destination Ref)
            for (ref, _, _), data, off in zip(self.feeds, datas, self.offsets):
                a, b = max(lo, off), min(hi, off + data.nbytes)
                if a < b:
                    parts.append((data, a - off, b - a, a - lo, ref))
            try:
                _write(buf, parts)
            finally:
                buf.unmap()
            enc = device.create_command_encoder()
            for _data, start, n, at, ref in parts:
                enc.copy_buffer_to_buffer(buf, at, ref.buffer, start, n)
            device.queue.submit([enc.finish()])
        self.bytes = sum(d.nbytes for d in datas)
        self.seconds = time.perf_counter() - t0
        return [d.nbytes for d in datas]


def _write(buf, parts: list) -> None:
    """Copy each part's bytes into the mapped piece: through a writable view of the mapped bytes
    where wgpu-py gives one (``_experimental_get_mapped_range``), on up to ``COPY_THREADS``
    threads; else with ``write_mapped``."""
    get = getattr(buf, "_experimental_get_mapped_range", None)
    window = None
    if get is not None:
        try:
            window = np.frombuffer(get(0, buf.size), dtype=np.uint8)
        except Exception:
            window = None
    if window is None or not window.flags.writeable:
        for data, start, n, at, _ref in parts:
            buf.write_mapped(data[start:start + n], at)
        return
    for data, start, n, at, _ref in parts:
        dst, src = window[at:at + n], data[start:start + n]
        threads = max(1, min(COPY_THREADS, get_num_threads(), n // MIN_THREAD_BYTES))

        def block(a: int, b: int, dst=dst, src=src, k=-(-n // threads)) -> None:
            np.copyto(dst[a * k:b * k], src[a * k:b * k])

        parallel(block, blocks(threads, threads))
