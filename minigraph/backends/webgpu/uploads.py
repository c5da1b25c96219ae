"""The feeds' upload: staging buffers of the plan's, written by the host while they are mapped
and copied into the feeds' buffers on the device at the start of each run.

``queue.write_buffer`` copies each feed into a staging buffer of wgpu's own, on the calling
thread, and the device copies it only after. Here the feeds' bytes are laid out in a few staging
buffers of at most ``PIECE`` bytes (one, for any feeds the device can hold in one buffer), kept
across runs and mapped for writing between them; the host writes a piece (on up to
``COPY_THREADS`` threads: NumPy's copy releases the GIL), unmaps it and submits its copies, ahead of
the run's dispatches in queue order. ``bytes`` and ``seconds`` say what the last run's upload moved
and how long the host took, from mapping to the last submitted copy.
"""
from __future__ import annotations

import contextvars
import time

import numpy as np

from ..numpy.threads import blocks, get_num_threads, parallel
from .buffers import to_device

ALIGN = 256  # each feed's offset in the staging bytes
# Bytes of one staging buffer: each piece is mapped on its own (about 0.1 ms each on the H200
# machine), which cost more than overlapping the device's copy of one piece with the host's
# writing of the next gained (12.85 MB: 7.6 GB/s in 4 MiB pieces, 13.3 in one buffer), so a
# plan's feeds share one buffer unless they exceed this.
PIECE = 256 << 20
COPY_THREADS = 4  # host threads writing one piece: 12.85 MB from mapping until the device had it,
# 9.6 GB/s on one thread, 12.7 on two, 13.3 on four; queue.write_buffer 10.9 and PyTorch's
# pageable .cuda() 13.2 in the same run (benchmarks/upload_rate.py --variants; pinned: 51.6)
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
        self.piece = max(ALIGN, min(PIECE, ctx.max_buffer) // ALIGN * ALIGN)
        self.pieces: list = [None] * (-(-off // self.piece))
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
            size = min(self.piece, self.size - i * self.piece)
            buf = self.pieces[i] = self.ctx.device.create_buffer(
                size=size, usage=wgpu.BufferUsage.MAP_WRITE | wgpu.BufferUsage.COPY_SRC, mapped_at_creation=True)
        elif buf.map_state == "unmapped":
            buf.map_sync(wgpu.MapMode.WRITE)
        return buf

    def write(self, feed_values) -> list:
        """Write the feeds into the staging buffers and submit their copies to the device; the
        bytes of each feed copied. A feed given as None is not uploaded (one held on the device,
        which the runner copies there)."""
        todo = [(feed, arr, off) for feed, arr, off in zip(self.feeds, feed_values, self.offsets) if arr is not None]
        if not self.size or not todo:
            self.bytes, self.seconds = 0, 0.0
            return []
        t0 = time.perf_counter()
        datas = [(ref, to_device(arr, dtype).view(np.uint8), off) for (ref, dtype, _), arr, off in todo]
        wanted = sorted({k for _, data, off in datas if data.nbytes  # the pieces these feeds' bytes lie in
                         for k in range(off // self.piece, (off + data.nbytes - 1) // self.piece + 1)})
        device = self.ctx.device
        for i in wanted:
            buf = self._mapped(i)
            lo, hi = i * self.piece, i * self.piece + buf.size
            parts = []  # (data, its first byte, bytes, offset in this piece, destination Ref)
            for ref, data, off in datas:
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
        self.bytes = sum(d.nbytes for _, d, _ in datas)
        self.seconds = time.perf_counter() - t0
        return [d.nbytes for _, d, _ in datas]


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

        # in a context of its own: a profile's recorder times ops, not the upload's blocks
        contextvars.Context().run(parallel, block, blocks(threads, threads))
